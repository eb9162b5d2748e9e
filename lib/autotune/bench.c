/* wafer — SPDX-License-Identifier: MIT
 *
 * bench.c: measuring the candidates of one key.
 *
 *  1. Warm-up: each candidate runs `warmup` times (at least once when
 *     there is a check), then the client syncs. An error from a run or
 *     the sync disqualifies it; so does a check that says the result is
 *     wrong. Warm-up also pays for first-use costs (code paths, caches,
 *     lazily compiled kernels) that a timed run should not see.
 *  2. Rounds: each surviving candidate runs once per round, timed. With
 *     device timers the sample is the device's time between a start and
 *     an end point around the run; without, the client syncs before and
 *     after and the sample is the host clock's time between. Candidates
 *     take turns within a round, so a slow drift of the machine (another
 *     process, clock changes) spreads over all of them.
 *  3. Elimination: a candidate's score is its minimum — the least
 *     disturbed run, which is the best estimate of what it costs — and
 *     after each round one whose minimum is more than eliminate_ratio
 *     times the best minimum is dropped. A hopeless candidate (a 100x
 *     slower fallback) thus costs one timed run, not `samples`.
 *
 * The candidate with the smallest minimum wins. */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/autotune/autotune.h"
#include "lib/client.h"
#include "lib/error.h"
#include "lib/log.h"

/* Tuning longer than this shows progress on a terminal (mode auto). */
#define PROGRESS_AFTER_NS UINT64_C(1000000000)

/* A candidate's reason for failing, as kept for the final message. */
#define WHY_MAX 200

struct candidate_state {
	size_t index;   /* into op->candidates */
	uint64_t best;  /* smallest sample, UINT64_MAX before any */
	unsigned samples;
	bool alive;     /* still measured */
	wafer_status failure; /* WAFER_OK unless disqualified */
	char why[WHY_MAX];
};

struct progress {
	uint64_t start_ns;
	bool tty;
	bool shown;
	unsigned done;
	unsigned total;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) +
	       (uint64_t)ts.tv_nsec;
}

/*===----------------------------------------------------------------------===
 * Progress on stderr
 *===----------------------------------------------------------------------===*/

static bool progress_wanted(const struct wafer__tune_bench *b,
			    struct progress *p)
{
	switch (b->settings->progress) {
	case WAFER_TUNE_PROGRESS_NEVER:
		return false;
	case WAFER_TUNE_PROGRESS_ALWAYS:
		return true;
	case WAFER_TUNE_PROGRESS_AUTO:
		break;
	}
	return p->tty && now_ns() - p->start_ns > PROGRESS_AFTER_NS;
}

/* On a terminal one line is redrawn after each run; elsewhere (progress
 * = always into a file) a line when tuning starts and one when it ends. */
static void progress_step(const struct wafer__tune_bench *b, struct progress *p,
			  const char *candidate)
{
	p->done++;
	if (!progress_wanted(b, p))
		return;
	if (p->tty) {
		fprintf(stderr, "\rwafer autotune: %s %s: run %u of at most %u "
				"(%s)\033[K",
			b->tunable->name, b->key_text, p->done, p->total,
			candidate);
	} else if (!p->shown) {
		fprintf(stderr, "wafer autotune: %s %s: measuring %zu "
				"candidates\n",
			b->tunable->name, b->key_text, b->available_count);
	}
	p->shown = true;
}

static void progress_end(const struct wafer__tune_bench *b, struct progress *p,
			 const char *winner, uint64_t best_ns)
{
	if (!p->shown)
		return;
	double seconds = (double)(now_ns() - p->start_ns) / 1e9;
	if (winner)
		fprintf(stderr, "%swafer autotune: %s %s: %s (%.3g us), "
				"measured in %.1f s%s\n",
			p->tty ? "\r" : "", b->tunable->name, b->key_text,
			winner, (double)best_ns / 1e3, seconds,
			p->tty ? "\033[K" : "");
	else
		fprintf(stderr, "%swafer autotune: %s %s: every candidate "
				"failed%s\n",
			p->tty ? "\r" : "", b->tunable->name, b->key_text,
			p->tty ? "\033[K" : "");
}

/*===----------------------------------------------------------------------===
 * Runs
 *===----------------------------------------------------------------------===*/

static void disqualify(const struct wafer__tune_bench *b,
		       struct candidate_state *s, wafer_status status,
		       const char *what, const char *detail)
{
	s->alive = false;
	s->failure = status;
	snprintf(s->why, sizeof s->why, "%s: %s%s%s", what,
		 wafer_status_string(status), detail[0] ? ": " : "", detail);
	atomic_fetch_add_explicit(&b->stats->disqualified, 1,
				  memory_order_relaxed);
	wafer__log_info("autotune", "%s %s: candidate %s disqualified: %s",
			b->tunable->name, b->key_text,
			b->op->candidates[s->index].name, s->why);
}

static wafer_status run_once(const struct wafer__tune_bench *b,
			     const struct wafer__tune_candidate *c)
{
	atomic_fetch_add_explicit(&b->stats->benchmark_runs, 1,
				  memory_order_relaxed);
	wafer__error_clear();
	return wafer__tune_run(b->client, b->tunable, c, b->inputs);
}

/* Warm-up runs, the sync after them, and the check. */
static void warm_up(const struct wafer__tune_bench *b, struct progress *p,
		    struct candidate_state *s)
{
	const struct wafer__tune_candidate *c = &b->op->candidates[s->index];
	unsigned runs = b->settings->warmup;
	wafer_status status = WAFER_OK;

	if (runs == 0 && WAFER_STRUCT_HAS(b->tunable, wafer_tunable, check) &&
	    b->tunable->check)
		runs = 1;
	for (unsigned i = 0; i < runs && status == WAFER_OK; i++) {
		status = run_once(b, c);
		progress_step(b, p, c->name);
	}
	if (status != WAFER_OK) {
		char detail[WAFER_ERROR_DETAIL_MAX];
		snprintf(detail, sizeof detail, "%s", wafer_last_error());
		wafer_sync(b->client); /* drops what the failure left queued */
		disqualify(b, s, status, "run", detail);
		return;
	}
	status = wafer_sync(b->client);
	if (status != WAFER_OK) {
		disqualify(b, s, status, "sync", wafer_last_error());
		return;
	}
	if (!WAFER_STRUCT_HAS(b->tunable, wafer_tunable, check) ||
	    !b->tunable->check)
		return;
	char why[WHY_MAX] = "";
	status = b->tunable->check(b->client, b->inputs, c->name, why,
				   sizeof why);
	if (status != WAFER_OK)
		disqualify(b, s, status, "wrong result",
			   why[0] ? why : "the check failed");
}

/* One timed run; the time in |*out_ns|. The sync after the run is part of
 * the sample on the host clock and outside it with device timers. */
static wafer_status time_once(const struct wafer__tune_bench *b,
			      const struct wafer__tune_candidate *c,
			      uint64_t *out_ns, const char **out_what)
{
	wafer_status status, end_status, sync_status;

	*out_what = "run";
	if (!b->device_timers) {
		uint64_t start = now_ns();
		status = run_once(b, c);
		if (status != WAFER_OK) {
			*out_what = "run";
			return status;
		}
		status = wafer_sync(b->client);
		*out_ns = now_ns() - start;
		*out_what = "sync";
		return status;
	}

	/* The client keeps the plugin's timer in |timer| between the two
	 * calls; both run on the client's queue in order. */
	void *timer = NULL;
	status = wafer__client_timer_begin(b->client, &timer);
	if (status != WAFER_OK) {
		*out_what = "timer_begin";
		return status;
	}
	status = run_once(b, c);
	char detail[WAFER_ERROR_DETAIL_MAX];
	snprintf(detail, sizeof detail, "%s", wafer_last_error());
	end_status = wafer__client_timer_end(b->client, &timer, out_ns);
	sync_status = wafer_sync(b->client);
	if (status != WAFER_OK)
		return wafer__fail(status, "%s", detail);
	if (sync_status != WAFER_OK) {
		*out_what = "sync";
		return sync_status;
	}
	*out_what = "timer_end";
	return end_status;
}

static void sample(const struct wafer__tune_bench *b, struct progress *p,
		   struct candidate_state *s)
{
	const struct wafer__tune_candidate *c = &b->op->candidates[s->index];
	const char *what;
	uint64_t ns = 0;

	wafer_status status = time_once(b, c, &ns, &what);
	progress_step(b, p, c->name);
	if (status != WAFER_OK) {
		disqualify(b, s, status, what, wafer_last_error());
		return;
	}
	s->samples++;
	if (ns < s->best)
		s->best = ns;
}

/* Drops every candidate whose minimum is past ratio x the best. */
static void eliminate(const struct wafer__tune_bench *b,
		      struct candidate_state *states, size_t n)
{
	uint64_t best = UINT64_MAX;

	for (size_t i = 0; i < n; i++)
		if (states[i].alive && states[i].best < best)
			best = states[i].best;
	double limit = (double)best * b->settings->eliminate_ratio;
	for (size_t i = 0; i < n; i++) {
		if (!states[i].alive || (double)states[i].best <= limit)
			continue;
		states[i].alive = false;
		wafer__log_debug("autotune", "%s %s: %s eliminated (%" PRIu64
			       " ns, best %" PRIu64 " ns)",
			       b->tunable->name, b->key_text,
			       b->op->candidates[states[i].index].name,
			       states[i].best, best);
	}
}

static size_t alive_count(const struct candidate_state *states, size_t n)
{
	size_t alive = 0;

	for (size_t i = 0; i < n; i++)
		alive += states[i].alive;
	return alive;
}

/*===----------------------------------------------------------------------===
 * The result
 *===----------------------------------------------------------------------===*/

/* Every candidate failed: the first one's status, each one's reason. */
static wafer_status all_failed(const struct wafer__tune_bench *b,
			       const struct candidate_state *states, size_t n)
{
	char detail[WAFER_ERROR_DETAIL_MAX];
	size_t used = (size_t)snprintf(detail, sizeof detail,
				       "autotune %s [%s] on %s:%u: every "
				       "candidate failed",
				       b->tunable->name, b->key_text,
				       b->op->device->backend,
				       b->op->device->index);
	for (size_t i = 0; i < n && used < sizeof detail; i++)
		used += (size_t)snprintf(detail + used, sizeof detail - used,
					 "%s %s (%s)", i ? ";" : ":",
					 b->op->candidates[states[i].index].name,
					 states[i].why);
	return wafer__fail(states[0].failure, "%s", detail);
}

static void log_result(const struct wafer__tune_bench *b,
		       const struct candidate_state *states, size_t n,
		       size_t winner)
{
	char line[WAFER_ERROR_DETAIL_MAX];
	size_t used = 0;

	if (!wafer__log_enabled(WAFER_LOG_INFO))
		return;
	line[0] = '\0';
	for (size_t i = 0; i < n && used < sizeof line; i++) {
		const struct candidate_state *s = &states[i];
		const char *name = b->op->candidates[s->index].name;
		if (s->failure != WAFER_OK)
			used += (size_t)snprintf(line + used, sizeof line - used,
						 " %s=failed", name);
		else
			used += (size_t)snprintf(line + used, sizeof line - used,
						 " %s=%.3gus/%u", name,
						 (double)s->best / 1e3,
						 s->samples);
	}
	wafer__log_info("autotune", "%s [%s] on %s:%u: %s wins;%s",
			b->tunable->name, b->key_text, b->op->device->backend,
			b->op->device->index, b->op->candidates[winner].name,
			line);
}

wafer_status wafer__tune_measure(const struct wafer__tune_bench *b,
				 size_t *out_winner, uint64_t *out_best_ns)
{
	size_t n = b->available_count;
	struct candidate_state *states = calloc(n ? n : 1, sizeof *states);
	struct progress p = {
		.start_ns = now_ns(),
		.tty = isatty(STDERR_FILENO) == 1,
		.total = (unsigned)n * (b->settings->warmup + b->settings->samples),
	};

	*out_winner = 0;
	*out_best_ns = 0;
	if (!states)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "autotune: out of host memory");
	for (size_t i = 0; i < n; i++)
		states[i] = (struct candidate_state){
			.index = b->available[i],
			.best = UINT64_MAX,
			.alive = true,
		};

	for (size_t i = 0; i < n; i++)
		warm_up(b, &p, &states[i]);
	for (unsigned round = 0; round < b->settings->samples; round++) {
		if (!alive_count(states, n))
			break;
		for (size_t i = 0; i < n; i++)
			if (states[i].alive)
				sample(b, &p, &states[i]);
		eliminate(b, states, n);
	}

	/* The smallest minimum among those measured; eliminated ones count,
	 * they lost to it anyway. */
	size_t best = n;
	for (size_t i = 0; i < n; i++)
		if (states[i].failure == WAFER_OK && states[i].samples &&
		    (best == n || states[i].best < states[best].best))
			best = i;
	wafer_status status = WAFER_OK;
	if (best == n) {
		progress_end(b, &p, NULL, 0);
		status = n ? all_failed(b, states, n)
			   : wafer__fail(WAFER_ERROR_INTERNAL,
					 "autotune: nothing to measure");
	} else {
		*out_winner = states[best].index;
		*out_best_ns = states[best].best;
		progress_end(b, &p, b->op->candidates[*out_winner].name,
			     *out_best_ns);
		log_result(b, states, n, *out_winner);
	}
	free(states);
	return status;
}
