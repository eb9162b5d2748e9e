/* wafer — SPDX-License-Identifier: MIT
 *
 * autotune_errors.c: documented argument errors of autotune.h (see
 * wafer_execute_autotune(3), ERRORS) that t/internal/autotune does not reach —
 *  - a NULL op, for each call that takes one (and a NULL runtime for
 *    wafer_autotune_stats_get);
 *  - a key function that returns more than 8 dimensions
 *    (WAFER_AUTOTUNE_MAX_DIMS), and exactly 8 as the counterpart.
 * Each failure returns WAFER_ERROR_INVALID_ARGUMENT naming the problem,
 * sets the call's outputs (out_result->candidate NULL, *out_count 0, an
 * empty path), runs no candidate and measures or caches nothing: the
 * runtime's statistics stay as they were and a second call fails again.
 *
 * Backend-neutral: the candidates are client-side functions that only
 * count their runs, so any device (WAFER_BACKEND) serves. */
#include "build-config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/autotune.h>
#include <wafer/wafer.h>

#include "t/client_util.h"
#include "t/tap.h"

static wafer_runtime *runtime;
static wafer_client *client;
static int runs;

static wafer_status count_run(wafer_client *c, const void *inputs,
			      const void *data)
{
	runs++;
	return WAFER_OK;
}

/* The inputs: the number of dimensions the key function returns. */
static wafer_status key_of(const void *inputs, wafer_autotune_key *key)
{
	uint32_t dims = *(const uint32_t *)inputs;

	key->dtypes[0] = WAFER_DTYPE_F32;
	key->dim_count = dims;
	/* Only the first WAFER_AUTOTUNE_MAX_DIMS exist in the struct. */
	for (uint32_t i = 0; i < dims && i < WAFER_AUTOTUNE_MAX_DIMS; i++)
		key->dims[i] = 100 + i;
	return WAFER_OK;
}

static const wafer_autotune_candidate candidates[] = {
	{sizeof candidates[0], "first", .run = count_run},
	{sizeof candidates[0], "second", .run = count_run},
};

/* Two candidates: a key that were accepted would be measured. */
static const wafer_tunable op = {
	.struct_size = sizeof op,
	.name = "autotune_errors",
	.candidates = candidates,
	.candidate_count = 2,
	.key = key_of,
	.anchor_level = 1,
};

static wafer_autotune_stats stats_now(void)
{
	wafer_autotune_stats s = {.struct_size = sizeof s};
	check(wafer_autotune_stats_get(runtime, &s), "stats_get");
	return s;
}

static int same_stats(const wafer_autotune_stats *a,
		      const wafer_autotune_stats *b)
{
	return a->keys_tuned == b->keys_tuned &&
	       a->benchmark_runs == b->benchmark_runs &&
	       a->cache_hits == b->cache_hits &&
	       a->disk_hits == b->disk_hits &&
	       a->disqualified == b->disqualified &&
	       a->default_runs == b->default_runs;
}

static void test_too_many_dims(void)
{
	static const uint32_t too_many[] = {9, 64, UINT32_MAX};
	wafer_autotune_stats before = stats_now();

	for (size_t i = 0; i < sizeof too_many / sizeof too_many[0]; i++) {
		for (int attempt = 1; attempt <= 2; attempt++) {
			wafer_autotune_result r = {
				.struct_size = sizeof r,
				.candidate = "stale",
				.best_ns = 77,
			};
			is_status(wafer_execute_autotune(client, &op,
							 &too_many[i], &r),
				  WAFER_ERROR_INVALID_ARGUMENT,
				  "a key of %u dimensions (call %d)",
				  too_many[i], attempt);
			char want[96];
			snprintf(want, sizeof want,
				 "returned %u dimensions, at most 8",
				 too_many[i]);
			like(wafer_last_error(), want,
			     "  ... detail names the operation's key");
			like(wafer_last_error(), "autotune_errors",
			     "  ... and the operation");
			ok(r.candidate == NULL && r.best_ns == 0,
			   "  ... out_result: candidate NULL, best_ns 0");
		}
	}
	is_int(runs, 0, "no candidate ran");
	wafer_autotune_stats after = stats_now();
	ok(same_stats(&before, &after),
	   "nothing was measured, cached or run as a default");

	/* The largest key there is works, and is measured. */
	const uint32_t eight = WAFER_AUTOTUNE_MAX_DIMS;
	wafer_autotune_result r = {.struct_size = sizeof r};
	is_status(wafer_execute_autotune(client, &op, &eight, &r), WAFER_OK,
		  "a key of 8 dimensions");
	ok(r.candidate && (!strcmp(r.candidate, "first") ||
			   !strcmp(r.candidate, "second")),
	   "  ... runs one of the candidates (%s)",
	   r.candidate ? r.candidate : "(null)");
	ok(runs > 0, "  ... which ran (%d runs)", runs);
}

static void test_null_op(void)
{
	const uint32_t dims = 1;
	wafer_autotune_stats before = stats_now();
	int runs_before = runs;

	wafer_autotune_result r = {.struct_size = sizeof r,
				   .candidate = "stale"};
	is_status(wafer_execute_autotune(client, NULL, &dims, &r),
		  WAFER_ERROR_INVALID_ARGUMENT, "execute_autotune, NULL op");
	like(wafer_last_error(), "wafer_execute_autotune: op is NULL",
	     "  ... detail names op");
	ok(r.candidate == NULL, "  ... out_result->candidate is NULL");

	is_status(wafer_autotune_execute_candidate(client, NULL, &dims,
						   "first"),
		  WAFER_ERROR_INVALID_ARGUMENT, "execute_candidate, NULL op");
	like(wafer_last_error(), "wafer_autotune_execute_candidate: op is NULL",
	     "  ... detail names op");
	is_status(wafer_autotune_execute_candidate(NULL, &op, &dims, "first"),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "execute_candidate, NULL client");
	like(wafer_last_error(), "client is NULL", "  ... detail names client");

	const char *names[2] = {"stale", "stale"};
	size_t count = 99;
	is_status(wafer_autotune_candidates(client, NULL, names, 2, &count),
		  WAFER_ERROR_INVALID_ARGUMENT, "candidates, NULL op");
	like(wafer_last_error(), "wafer_autotune_candidates: op is NULL",
	     "  ... detail names op");
	is_int((long long)count, 0, "  ... *out_count is 0");
	count = 99;
	is_status(wafer_autotune_candidates(NULL, &op, names, 2, &count),
		  WAFER_ERROR_INVALID_ARGUMENT, "candidates, NULL client");
	is_int((long long)count, 0, "  ... *out_count is 0");

	char path[4096];
	memset(path, 'x', sizeof path);
	is_status(wafer_autotune_cache_file(client, NULL, path, sizeof path),
		  WAFER_ERROR_INVALID_ARGUMENT, "cache_file, NULL op");
	like(wafer_last_error(), "wafer_autotune_cache_file: op is NULL",
	     "  ... detail names op");
	/* wafer.h: outputs are set on every path; a path buffer to "". */
	is_str(path, "", "  ... the path is empty");
	memset(path, 'x', sizeof path);
	is_status(wafer_autotune_cache_file(NULL, &op, path, sizeof path),
		  WAFER_ERROR_INVALID_ARGUMENT, "cache_file, NULL client");
	is_str(path, "", "  ... the path is empty");

	/* wafer.h: outputs are 0 on failure, inside struct_size only. */
	struct {
		wafer_autotune_stats stats;
		uint64_t canary;
	} s;
	memset(&s, 0x5a, sizeof s);
	s.stats.struct_size = sizeof s.stats;
	is_status(wafer_autotune_stats_get(NULL, &s.stats),
		  WAFER_ERROR_INVALID_ARGUMENT, "stats_get, NULL runtime");
	like(wafer_last_error(), "wafer_autotune_stats_get: runtime is NULL",
	     "  ... detail names runtime");
	wafer_autotune_stats zero = {.struct_size = sizeof zero};
	ok(!memcmp(&s.stats, &zero, sizeof zero) &&
		   s.canary == UINT64_C(0x5a5a5a5a5a5a5a5a),
	   "  ... every count stored as 0, nothing past the struct");

	is_int(runs - runs_before, 0, "no candidate ran");
	wafer_autotune_stats after = stats_now();
	ok(same_stats(&before, &after), "the statistics did not change");
}

int main(void)
{
	/* The key of 8 dimensions is measured and its choice written to
	 * the autotune cache: make check points XDG_CACHE_HOME into the
	 * build tree. Without it, keep the run from touching ~/.cache. */
	wafer_option off = {"autotune", "mode", "off"};
	wafer_runtime_options ro = {
		.struct_size = sizeof ro,
		.options = &off,
		.option_count = getenv("XDG_CACHE_HOME") ? 0 : 1,
	};
	open_default(&ro, &runtime, &client);

	test_null_op();
	test_too_many_dims();

	close_default(runtime, client);
	done_testing();
	return exit_status();
}
