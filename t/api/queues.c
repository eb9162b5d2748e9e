/* wafer — SPDX-License-Identifier: MIT
 *
 * queues.c: several queues on one client (wafer/queue.h,
 * wafer-queue(7)), on the default device and on each channel:
 *   - opening, closing, the limit, the default queue, and which queue
 *     the calling thread's calls go on (wafer_queue_select is per thread
 *     and per client, and a closed queue's threads fall back);
 *   - handles on every queue without events: a write on one queue read on
 *     another gives the written bytes, and memory released after work on
 *     one queue never serves a new handle on another while that work may
 *     still write it (on the CUDA stand-in, whose streams run late, a
 *     missing wait shows as wrong bytes);
 *   - events: record, wait, sync, query, elapsed (>= 0, and additive over
 *     a queue), and their errors;
 *   - host callbacks run in queue order; a failing one is reported by its
 *     own queue's next sync only, and the other queues go on;
 *   - with the events group, two queues run at once: work issued on one
 *     finishes while a host callback holds the other (shown by order,
 *     not by timing; run in turn, it would wait for the callback);
 *   - a queue over a native one (a CUstream, a cl_command_queue) works
 *     like the others and leaves the native queue to its owner;
 *   - many threads, each on a queue of one client, each checking its
 *     bytes.
 * The test judges a backend by what it offers: with the events group
 * (WAFER_CAP_EVENTS) the queues are ordered on the device, without it on
 * the host, and every point above holds either way. */
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <time.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/interop.h>
#include <wafer/queue.h>
#include <wafer/wafer.h>

#include "t/tap.h"
#include "t/client_util.h"

static const char *const channels[] = {"direct", "mutex", "mpsc"};

/* Large enough that a kernel on it takes a while on the stand-in. */
#define N (1u << 16)

static int all_equal(const float *v, size_t n, float want)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] != want)
			return 0;
	return 1;
}

static void test_open_close(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	wafer_queue *q = NULL, *q2 = NULL;
	wafer_queue *def = wafer_client_default_queue(c);

	ok(def != NULL, "%s: the client has a default queue", channel);
	ok(wafer_queue_current(c) == def,
	   "%s: a thread's current queue is the default one at first",
	   channel);
	is_status(wafer_queue_open(c, &q), WAFER_OK, "%s: open a queue",
		  channel);
	is_status(wafer_queue_open(c, &q2), WAFER_OK,
		  "%s: open a second queue", channel);
	ok(q && q2 && q != q2 && q != def, "%s: queues are distinct",
	   channel);
	ok(wafer_queue_select(q) == def,
	   "%s: select returns the queue that was current", channel);
	ok(wafer_queue_current(c) == q, "%s: the selected queue is current",
	   channel);
	ok(wafer_queue_select(q2) == q, "%s: select again returns it",
	   channel);
	is_status(wafer_queue_close(q2), WAFER_OK,
		  "%s: close the current queue", channel);
	ok(wafer_queue_current(c) == def,
	   "%s: after its current queue closed, a thread is on the default "
	   "queue",
	   channel);
	fails_saying(wafer_queue_close(def), WAFER_ERROR_INVALID_ARGUMENT,
		     "wafer_client_close",
		     "%s: the default queue cannot be closed", channel);

	/* The limit, and nothing lost on the way. */
	wafer_queue *many[40];
	int opened = 0;
	wafer_status status = WAFER_OK;
	while (opened < 40 &&
	       (status = wafer_queue_open(c, &many[opened])) == WAFER_OK)
		opened++;
	fails_saying(status, WAFER_ERROR_OUT_OF_RANGE, "at most",
		     "%s: opening past the limit is refused", channel);
	ok(opened >= 8, "%s: at least 8 queues open at once (%d)", channel,
	   opened + 2);
	for (int i = 0; i < opened; i++)
		check(wafer_queue_close(many[i]), "close");
	is_status(wafer_queue_open(c, &many[0]), WAFER_OK,
		  "%s: a queue opens again once others closed", channel);
	/* Left open: the client closes it (a leak would show under ASan). */
	is_status(wafer_client_close(c), WAFER_OK,
		  "%s: close a client with queues still open", channel);
}

/* A write on |a|, then the bytes read on |b|, with no event between. */
static void test_write_then_read(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	wafer_queue *a, *b;
	wafer_handle h;
	float *got = malloc(N * sizeof *got);

	check(wafer_queue_open(c, &a), "open a");
	check(wafer_queue_open(c, &b), "open b");
	check(wafer_empty(c, N * sizeof(float), &h), "empty");
	for (int round = 0; round < 3; round++) {
		float value = 1.5f + (float)round;
		wafer_queue_select(a);
		check(fill_floats(c, h, N, value), "fill on a");
		wafer_queue_select(b);
		memset(got, 0, N * sizeof *got);
		is_status(wafer_read(c, h, 0, got, N * sizeof *got), WAFER_OK,
			  "%s: read on b after a fill on a (round %d)", channel,
			  round);
		ok(all_equal(got, N, value),
		   "%s: b reads what a wrote, no event needed (round %d)",
		   channel, round);
	}
	/* And the other way: the default queue reads what b computed. */
	check(fill_floats(c, h, N, 9.0f), "fill on b");
	wafer_queue_select(wafer_client_default_queue(c));
	check(wafer_read(c, h, 0, got, N * sizeof *got), "read");
	ok(all_equal(got, N, 9.0f), "%s: the default queue reads b's result",
	   channel);
	check(wafer_release(c, h), "release");
	is_status(wafer_client_close(c), WAFER_OK, "%s: close", channel);
	free(got);
}

/* Memory released after work on |a| must not serve a handle written on
 * |b| while that work may still write it. */
static void test_release_then_reserve(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	wafer_queue *a, *b;
	float *host = malloc(N * sizeof *host), *got = malloc(N * sizeof *got);
	int good = 1;

	for (size_t i = 0; i < N; i++)
		host[i] = 2.0f;
	check(wafer_queue_open(c, &a), "open a");
	check(wafer_queue_open(c, &b), "open b");
	for (int round = 0; round < 8; round++) {
		wafer_handle h1, h2;
		wafer_queue_select(a);
		check(wafer_empty(c, N * sizeof(float), &h1), "empty");
		check(fill_floats(c, h1, N, 1.0f), "fill on a");
		check(wafer_release(c, h1), "release on a");
		wafer_queue_select(b);
		check(wafer_create(c, host, N * sizeof *host, &h2), "create");
		check(wafer_read(c, h2, 0, got, N * sizeof *got), "read on b");
		good &= all_equal(got, N, 2.0f);
		check(wafer_release(c, h2), "release h2");
	}
	ok(good, "%s: a new handle on b never holds what a's earlier work "
		 "wrote to released memory",
	   channel);
	wafer_queue_select(wafer_client_default_queue(c));
	is_status(wafer_client_close(c), WAFER_OK, "%s: close", channel);
	free(host);
	free(got);
}

static void test_events(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	uint64_t caps = caps_of(c, NULL);
	wafer_queue *a, *b;
	wafer_event *e1, *e2, *e3, *plain;
	wafer_handle h;
	float *got = malloc(N * sizeof *got);
	uint64_t ns12 = 0, ns23 = 0, ns13 = 0;

	check(wafer_queue_open(c, &a), "open a");
	check(wafer_queue_open(c, &b), "open b");
	check(wafer_empty(c, N * sizeof(float), &h), "empty");
	is_status(wafer_event_create(c, WAFER_EVENT_TIMING, &e1), WAFER_OK,
		  "%s: create a timing event", channel);
	check(wafer_event_create(c, WAFER_EVENT_TIMING, &e2), "e2");
	check(wafer_event_create(c, WAFER_EVENT_TIMING, &e3), "e3");
	check(wafer_event_create(c, 0, &plain), "plain");
	is_status(wafer_event_query(plain), WAFER_OK,
		  "%s: an event never recorded is complete", channel);
	is_status(wafer_event_sync(plain), WAFER_OK,
		  "%s: syncing one returns at once", channel);

	wafer_queue_select(a);
	check(wafer_event_record(e1, a), "record e1");
	check(fill_floats(c, h, N, 3.0f), "fill");
	check(wafer_event_record(e2, a), "record e2");
	check(fill_floats(c, h, N, 4.0f), "fill");
	is_status(wafer_event_record(e3, a), WAFER_OK, "%s: record", channel);
	is_status(wafer_event_record(plain, a), WAFER_OK,
		  "%s: record a plain event", channel);
	is_status(wafer_queue_wait(b, plain), WAFER_OK,
		  "%s: b waits on it", channel);
	is_status(wafer_event_sync(e3), WAFER_OK, "%s: sync the last event",
		  channel);
	is_status(wafer_event_query(e3), WAFER_OK,
		  "%s: a synced event queries complete", channel);
	is_status(wafer_event_query(e1), WAFER_OK,
		  "%s: so does an earlier one", channel);
	wafer_queue_select(b);
	check(wafer_read(c, h, 0, got, N * sizeof *got), "read on b");
	ok(all_equal(got, N, 4.0f), "%s: b after the wait sees a's work",
	   channel);

	/* Timing needs device timers and events (without the events group
	 * an event is the core's stand-in, which has no device time). */
	if ((caps & WAFER_CAP_DEVICE_TIMERS) && (caps & WAFER_CAP_EVENTS)) {
		is_status(wafer_event_elapsed(e1, e2, &ns12), WAFER_OK,
			  "%s: elapsed e1..e2", channel);
		check(wafer_event_elapsed(e2, e3, &ns23), "e2..e3");
		check(wafer_event_elapsed(e1, e3, &ns13), "e1..e3");
		ok(ns13 >= ns12 && ns13 >= ns23,
		   "%s: elapsed is ordered: e1..e3 (%llu ns) covers e1..e2 "
		   "(%llu) and e2..e3 (%llu)",
		   channel, (unsigned long long)ns13,
		   (unsigned long long)ns12, (unsigned long long)ns23);
	} else {
		is_status(wafer_event_elapsed(e1, e2, &ns12),
			  WAFER_ERROR_NOT_SUPPORTED,
			  "%s: elapsed without device timers or events is "
			  "refused",
			  channel);
		ok(1, "%s: (no device timers: nothing to order)", channel);
	}
	fails_saying(wafer_event_elapsed(e1, plain, &ns12),
		     WAFER_ERROR_INVALID_ARGUMENT, "WAFER_EVENT_TIMING",
		     "%s: elapsed needs WAFER_EVENT_TIMING on both", channel);
	is_status(wafer_event_create(c, 0x80, &e1),
		  WAFER_ERROR_INVALID_ARGUMENT, "%s: unknown flags refused",
		  channel);

	/* An event and a queue of two clients. */
	wafer_client *other = open_client_on(rt, "default", channel);
	is_status(wafer_event_record(e2, wafer_client_default_queue(other)),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: recording on another client's queue is refused",
		  channel);
	like(wafer_last_error(), "different clients",
	     "%s: the error says why", channel);
	check(wafer_client_close(other), "close other");

	wafer_queue_select(wafer_client_default_queue(c));
	is_status(wafer_event_release(e2), WAFER_OK, "%s: release an event",
		  channel);
	check(wafer_event_release(e3), "release");
	check(wafer_event_release(plain), "release");
	check(wafer_release(c, h), "release h");
	/* e1 is left: the client frees the events still alive at close (a
	 * leak would show under ASan). */
	is_status(wafer_client_close(c), WAFER_OK, "%s: close", channel);
	free(got);
}

struct order {
	pthread_mutex_t lock;
	int seen[8];
	int count;
};

struct step {
	struct order *order;
	int id;
	wafer_status result;
};

static wafer_status note(void *user)
{
	struct step *s = user;
	pthread_mutex_lock(&s->order->lock);
	s->order->seen[s->order->count++] = s->id;
	pthread_mutex_unlock(&s->order->lock);
	return s->result;
}

static void test_callbacks(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	struct order order = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct step steps[4] = {
		{&order, 1, WAFER_OK},
		{&order, 2, WAFER_OK},
		{&order, 3, WAFER_ERROR_DEVICE},
		{&order, 4, WAFER_OK},
	};
	wafer_queue *a, *b;
	wafer_handle h;

	check(wafer_queue_open(c, &a), "open a");
	check(wafer_queue_open(c, &b), "open b");
	check(wafer_empty(c, N * sizeof(float), &h), "empty");
	wafer_queue_select(a);
	check(fill_floats(c, h, N, 1.0f), "fill");
	is_status(wafer_queue_callback(a, note, &steps[0]), WAFER_OK,
		  "%s: queue a host callback", channel);
	check(fill_floats(c, h, N, 2.0f), "fill");
	check(wafer_queue_callback(a, note, &steps[1]), "callback 2");
	check(wafer_queue_callback(a, note, &steps[2]), "callback 3");
	check(wafer_queue_callback(a, note, &steps[3]), "callback 4");
	is_status(wafer_queue_sync(b), WAFER_OK,
		  "%s: another queue's sync does not see a's failing callback",
		  channel);
	fails_saying(wafer_queue_sync(a), WAFER_ERROR_DEVICE, "host callback",
		     "%s: a's sync reports its failing callback", channel);
	is_int(order.count, 4, "%s: every callback ran", channel);
	ok(order.seen[0] == 1 && order.seen[1] == 2 && order.seen[2] == 3 &&
		   order.seen[3] == 4,
	   "%s: in queue order", channel);
	is_status(wafer_queue_sync(a), WAFER_OK,
		  "%s: the failure is reported once", channel);
	is_status(wafer_queue_callback(a, NULL, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "%s: a NULL callback refused",
		  channel);
	wafer_queue_select(wafer_client_default_queue(c));
	check(wafer_release(c, h), "release");
	is_status(wafer_client_close(c), WAFER_OK,
		  "%s: close after a reported failure", channel);
}

/* Queue a is held by a host callback that waits for the test to let it
 * go; work issued on queue b after it must finish meanwhile (its event
 * completes), which queues that run one at a time never do. The test
 * waits |OVERLAP_WAIT_S| at most, then lets a go either way. (Not a
 * callback on b: a driver may run every queue's callbacks on one
 * thread, CUDA's does.) */
#define OVERLAP_WAIT_S 5

static wafer_status hold_until_released(void *user)
{
	atomic_int *released = user;
	struct timespec start, now, nap = {0, 1000000};

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		if (atomic_load(released))
			return WAFER_OK;
		nanosleep(&nap, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < 2 * OVERLAP_WAIT_S);
	return WAFER_OK;
}

static void test_overlap(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	atomic_int released = 0;
	wafer_queue *a, *b, *was;
	wafer_event *e;
	wafer_handle h;
	wafer_status status = WAFER_ERROR_NOT_READY;
	struct timespec start, now, nap = {0, 1000000};

	if (!(caps_of(c, NULL) & WAFER_CAP_EVENTS)) {
		diag("%s: queues ordered on the host do not overlap: "
		     "not tested", channel);
		wafer_client_close(c);
		return;
	}
	check(wafer_queue_open(c, &a), "open a");
	check(wafer_queue_open(c, &b), "open b");
	check(wafer_event_create(c, 0, &e), "event");
	was = wafer_queue_select(b);
	check(wafer_empty(c, N * sizeof(float), &h), "empty");
	check(wafer_queue_sync(b), "sync b");
	check(wafer_queue_callback(a, hold_until_released, &released),
	      "callback on a");
	check(fill_floats(c, h, N, 2.0), "fill on b");
	check(wafer_event_record(e, b), "record on b");
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		status = wafer_event_query(e);
		if (status != WAFER_ERROR_NOT_READY)
			break;
		nanosleep(&nap, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < OVERLAP_WAIT_S);
	bool held = !atomic_load(&released);
	atomic_store(&released, 1);
	ok(status == WAFER_OK && held,
	   "%s: queue b's work finished while queue a was held by a host "
	   "callback: the queues run at once (status %s)",
	   channel, wafer_status_string(status));
	check(wafer_queue_sync(a), "sync a");
	check(wafer_queue_sync(b), "sync b");
	wafer_queue_select(was);
	check(wafer_release(c, h), "release");
	check(wafer_event_release(e), "event release");
	is_status(wafer_client_close(c), WAFER_OK, "%s: close", channel);
}

/* A queue over a native one (here another client's, as a framework's
 * stream would be): used like any queue, closed without destroying it. */
static void test_native(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	wafer_client *owner = open_client_on(rt, "default", channel);
	wafer_native_queue nq = {.struct_size = sizeof nq};
	wafer_queue *q = NULL;
	wafer_handle h, g;
	float *got = malloc(N * sizeof *got);

	is_status(wafer_queue_open_native(c, NULL, &q),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: a NULL native queue is refused", channel);
	wafer_status status = wafer_client_native_queue(owner, &nq);
	if (status != WAFER_OK || !nq.queue) {
		ok(1, "%s: native queues # SKIP the backend has none (%s)",
		   channel, status != WAFER_OK ? wafer_last_error()
					       : "its native queue is NULL");
		goto out;
	}
	status = wafer_queue_open_native(c, nq.queue, &q);
	if (status == WAFER_ERROR_NOT_SUPPORTED) {
		/* What the plugin says of its queue_wrap (Level Zero cannot
		 * adopt a caller's command list). */
		ok(1, "%s: native queues # SKIP %s", channel, wafer_last_error());
		goto out;
	}
	is_status(status, WAFER_OK, "%s: a queue over a native one", channel);
	check(wafer_empty(c, N * sizeof(float), &h), "empty");
	wafer_queue_select(q);
	check(fill_floats(c, h, N, 6.0f), "fill on the native queue");
	check(wafer_empty(c, N * sizeof(float), &g), "empty on it");
	check(fill_floats(c, g, N, 7.0f), "fill");
	wafer_queue_select(wafer_client_default_queue(c));
	check(wafer_read(c, h, 0, got, N * sizeof *got), "read");
	ok(all_equal(got, N, 6.0f),
	   "%s: the default queue reads what the native one computed", channel);
	check(wafer_read(c, g, 0, got, N * sizeof *got), "read");
	ok(all_equal(got, N, 7.0f),
	   "%s: so for a handle reserved while it was current", channel);
	check(wafer_release(c, h), "release");
	check(wafer_release(c, g), "release");
	is_status(wafer_queue_close(q), WAFER_OK,
		  "%s: close the queue over it", channel);
	is_status(wafer_sync(owner), WAFER_OK,
		  "%s: the native queue still works for its owner", channel);
out:
	is_status(wafer_client_close(c), WAFER_OK, "%s: close", channel);
	check(wafer_client_close(owner), "close owner");
	free(got);
}

/* Threads on queues: CLIENTS clients of QUEUES queues each (the default
 * one included), a thread per queue. */
#define CLIENTS 4
#define QUEUES 32
#define THREADS (CLIENTS * QUEUES)
#define ROUNDS 10

struct worker {
	wafer_client *client;
	wafer_queue *queue;
	int id;
	int good;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	float *got = malloc(1024 * sizeof *got);
	w->good = got != NULL;
	wafer_queue_select(w->queue);
	for (int r = 0; r < ROUNDS && got; r++) {
		wafer_handle h;
		float value = (float)(w->id * 100 + r);
		if (wafer_empty(w->client, 1024 * sizeof(float), &h) != WAFER_OK) {
			w->good = 0;
			continue;
		}
		if (fill_floats(w->client, h, 1024, value) != WAFER_OK ||
		    wafer_read(w->client, h, 0, got, 1024 * sizeof *got) !=
			    WAFER_OK ||
		    !all_equal(got, 1024, value))
			w->good = 0;
		wafer_release(w->client, h);
	}
	free(got);
	return NULL;
}

static void test_threads(wafer_runtime *rt, const char *channel)
{
	/* direct is one thread at a time by contract. */
	if (!strcmp(channel, "direct")) {
		ok(1, "%s: (one thread at a time: no stress)", channel);
		return;
	}
	wafer_client *c[CLIENTS];
	struct worker *w = calloc(THREADS, sizeof *w);
	pthread_t *t = calloc(THREADS, sizeof *t);
	int good = 1, started = 0;

	for (int k = 0; k < CLIENTS; k++) {
		c[k] = open_client_on(rt, "default", channel);
		for (int q = 0; q < QUEUES; q++) {
			struct worker *x = &w[k * QUEUES + q];
			*x = (struct worker){.client = c[k], .id = k * QUEUES + q};
			x->queue = wafer_client_default_queue(c[k]);
			if (q > 0)
				check(wafer_queue_open(c[k], &x->queue), "open");
		}
	}
	for (int i = 0; i < THREADS; i++)
		started += pthread_create(&t[i], NULL, work, &w[i]) == 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		good &= w[i].good;
	}
	ok(started == THREADS && good,
	   "%s: %d threads, each on its own queue of one of %d clients, read "
	   "their own bytes",
	   channel, THREADS, CLIENTS);
	for (int k = 0; k < CLIENTS; k++)
		is_status(wafer_client_close(c[k]), WAFER_OK, "%s: close %d",
			  channel, k);
	free(w);
	free(t);
}

int main(void)
{
	wafer_runtime *rt;
	check(wafer_runtime_open(NULL, &rt), "runtime");
	for (size_t i = 0; i < sizeof channels / sizeof *channels; i++) {
		const char *channel = channels[i];
		test_open_close(rt, channel);
		test_write_then_read(rt, channel);
		test_release_then_reserve(rt, channel);
		test_events(rt, channel);
		test_callbacks(rt, channel);
		test_overlap(rt, channel);
		test_native(rt, channel);
		test_threads(rt, channel);
	}
	wafer_runtime_close(rt);
	done_testing();
	return exit_status();
}
