/* wafer — SPDX-License-Identifier: MIT
 *
 * channels.c: the semantics every channel (direct, mutex, mpsc) must keep,
 * on the default backend (WAFER_BACKEND) and on the `async` test plugin,
 * whose queues run work later on their own threads like a GPU:
 *   - a chain of dependent kernels gives the right answer;
 *   - an error inside queued work is reported once, by the next sync or
 *     read, and the client stays usable;
 *   - memory of a released input is not reused while a queued kernel
 *     still reads it;
 *   - read_async's bytes are there at sync;
 *   - close finishes queued work and reports its failure.
 *   - a failure found after its call returned (deferred) is reported by
 *     the next sync with its full text, however long, and later ones
 *     are counted, once.
 * And for mpsc: calls return before the plugin is called, a failed
 * reservation is reported at the next sync, and bursts far past the
 * channel's node cache (several producers, small and large uploads) keep
 * their order and bytes. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "t/client_util.h"
#include "t/tap.h"

static wafer_runtime *runtime;
static const char *const channels[] = {"direct", "mutex", "mpsc"};
/* NULL: the configured strategy. Strategies that free memory at release
 * (direct) or reap at sync (stream) sync the queue themselves, and a
 * failure found there must still reach the program. */
static const char *memory_strategy;
#define N_CHANNELS 3

static wafer_client *open_on(const char *selector, const char *channel)
{
	wafer_client *client = NULL;
	wafer_client_options options = {.struct_size = sizeof options,
					 .channel = channel,
					 .memory = memory_strategy};
	wafer_status status =
		wafer_client_open(runtime, selector, &options, &client);
	if (status != WAFER_OK) {
		printf("Bail out! client_open(%s, %s): %s\n", selector, channel,
		       wafer_last_error());
		exit(1);
	}
	return client;
}

static wafer_status add(wafer_client *client, wafer_handle out, wafer_handle a,
			wafer_handle b, uint64_t count)
{
	struct wafer_elementwise_params p = {count};
	wafer_handle h[3] = {out, a, b};
	return execute_f32(client, "add", h, 3, &p, sizeof p, count);
}

static wafer_status fill(wafer_client *client, wafer_handle out, uint64_t count,
			 double value)
{
	struct wafer_fill_params p = {count, value};
	return execute_f32(client, "fill", &out, 1, &p, sizeof p, count);
}

static wafer_status fail(wafer_client *client, wafer_handle out)
{
	struct wafer_elementwise_params p = {1};
	return execute_f32(client, "fail", &out, 1, &p, sizeof p, 1);
}

/*===----------------------------------------------------------------------===*/

/* x = 0; one = 1; 500 times x = x + one (in place); read: 500. */
static void test_chain(const char *selector, const char *channel)
{
	wafer_client *c = open_on(selector, channel);
	enum { n = 4099 };
	wafer_handle x, one;
	wafer_empty(c, n * sizeof(float), &x);
	wafer_empty(c, n * sizeof(float), &one);
	fill(c, x, n, 0.0);
	fill(c, one, n, 1.0);
	int errors = 0;
	for (int i = 0; i < 500; i++)
		errors += add(c, x, x, one, n) != WAFER_OK;
	static float out[n];
	is_status(wafer_read(c, x, 0, out, sizeof out), WAFER_OK,
		  "%s/%s: read after chain", selector, channel);
	int wrong = 0;
	for (int i = 0; i < n; i++)
		wrong += out[i] != 500.0f;
	ok(errors == 0 && wrong == 0,
	   "%s/%s: 500 dependent adds give 500 (%d errors, %d wrong)",
	   selector, channel, errors, wrong);

	/* A chain through fresh handles, released as it goes. */
	wafer_handle cur = one;
	wafer_retain(c, cur);
	for (int i = 0; i < 50; i++) {
		wafer_handle next;
		wafer_empty(c, n * sizeof(float), &next);
		add(c, next, cur, one, n);
		wafer_release(c, cur);
		cur = next;
	}
	wafer_read(c, cur, 0, out, sizeof out);
	ok(out[0] == 51.0f && out[n - 1] == 51.0f,
	   "%s/%s: chain through 50 fresh handles", selector, channel);
	wafer_release(c, cur);
	wafer_release(c, x);
	wafer_release(c, one);
	is_status(wafer_client_close(c), WAFER_OK, "%s/%s: close", selector,
		  channel);
}

static void test_errors(const char *channel)
{
	wafer_client *c = open_on("async", channel);
	wafer_handle h, good;
	float v = 0;
	wafer_empty(c, 64, &h);
	wafer_empty(c, 64, &good);

	is_status(fail(c, h), WAFER_OK,
		  "%s: a failing kernel is queued without error", channel);
	wafer_status s = wafer_sync(c);
	is_status(s, WAFER_ERROR_DEVICE, "%s: the next sync reports it",
		  channel);
	like(wafer_last_error(), "fail", "%s: detail names the kernel", channel);
	is_status(wafer_sync(c), WAFER_OK, "%s: reported once only", channel);

	fail(c, h);
	is_status(wafer_read(c, h, 0, &v, sizeof v), WAFER_ERROR_DEVICE,
		  "%s: a read reports queued failure", channel);
	is_status(wafer_read(c, h, 0, &v, sizeof v), WAFER_OK,
		  "%s: the read after it is clean", channel);

	fail(c, h);
	fail(c, h);
	is_status(wafer_sync(c), WAFER_ERROR_DEVICE,
		  "%s: two failures, one report", channel);
	is_status(wafer_sync(c), WAFER_OK, "%s: then clean", channel);

	fill(c, good, 16, 3.0);
	float back[16];
	is_status(wafer_read(c, good, 0, back, sizeof back), WAFER_OK,
		  "%s: client usable after errors", channel);
	ok(back[0] == 3.0f && back[15] == 3.0f, "%s: with right results",
	   channel);

	fail(c, h);
	wafer_release(c, h);
	wafer_release(c, good);
	is_status(wafer_client_close(c), WAFER_ERROR_DEVICE,
		  "%s: close reports unreported queued failure", channel);
}

/* 'fail' with a detail of |chars| characters (a compiler log, say). */
static wafer_status fail_long(wafer_client *client, wafer_handle out,
			      uint64_t chars)
{
	struct wafer_elementwise_params p = {chars};
	return execute_f32(client, "fail", &out, 1, &p, sizeof p, 1);
}

/* The text of a 'fail' of fail_long is all there: its head, its length,
 * its end. */
static void is_whole_log(const char *detail, size_t chars, const char *what)
{
	const char *log = strstr(detail, "kernel 'fail' failed on purpose: ");
	ok(log != NULL, "%s: the text is there", what);
	if (!log)
		return;
	const char *end = strstr(log, "END OF LOG");
	ok(end != NULL, "%s: whole, up to its last characters", what);
	ok(end && (size_t)(end + strlen("END OF LOG") - log) == chars,
	   "%s: all %zu characters of it", what, chars);
}

/* Failures found after the call that caused them returned: here by the
 * syncs that the `direct` memory strategy makes before it frees memory,
 * on every channel. The next sync reports the first with its full text
 * (longer than any fixed buffer) and counts the later one; once. */
static void test_deferred(const char *channel)
{
	enum { chars = 3000 };
	const char *saved = memory_strategy;
	memory_strategy = "direct";
	wafer_client *c = open_on("async", channel);
	memory_strategy = saved;
	wafer_handle a, b;
	wafer_empty(c, 64, &a);
	wafer_empty(c, 64, &b);

	/* Found by the sync itself: its text comes back whole too. */
	is_status(fail_long(c, a, chars), WAFER_OK,
		  "%s: a failing kernel with a long log is queued", channel);
	is_status(wafer_sync(c), WAFER_ERROR_DEVICE,
		  "%s: the sync reports it", channel);
	ok(strlen(wafer_last_error()) > 2000,
	   "%s: wafer_last_error is longer than 2000 characters (%zu)",
	   channel, strlen(wafer_last_error()));
	is_whole_log(wafer_last_error(), chars, channel);

	/* Found by the syncs before each release frees: deferred. */
	fail_long(c, a, chars);
	is_status(wafer_release(c, a), WAFER_OK,
		  "%s: release (its sync fails: deferred)", channel);
	fail(c, b);
	is_status(wafer_release(c, b), WAFER_OK,
		  "%s: another release (a second deferred failure)", channel);
	is_status(wafer_sync(c), WAFER_ERROR_DEVICE,
		  "%s: the next sync reports the deferred failures", channel);
	const char *e = wafer_last_error();
	ok(strlen(e) > 2000, "%s: deferred text longer than 2000 (%zu)",
	   channel, strlen(e));
	is_whole_log(e, chars, channel);
	like(e, "1 later failure", "%s: the later one is counted", channel);
	like(e, "kernel 'fail' failed on purpose)",
	     "%s: with its text", channel);
	is_status(wafer_sync(c), WAFER_OK, "%s: reported once only", channel);
	is_status(wafer_client_close(c), WAFER_OK, "%s: close is clean",
		  channel);
}

/* mpsc runs reservations on its runner with nobody waiting: two that
 * fail are deferred in the bridge, reported once, the second counted. */
static void test_mpsc_deferred_count(void)
{
	wafer_client *c = open_on("async", "mpsc");
	wafer_handle a, b;
	size_t huge = (size_t)7 << 29; /* 3.5 GiB: the plugin refuses it */
	is_status(wafer_empty(c, huge, &a), WAFER_OK,
		  "mpsc: a reservation that will fail returns at once");
	is_status(wafer_empty(c, huge, &b), WAFER_OK,
		  "mpsc: and a second");
	is_status(wafer_sync(c), WAFER_ERROR_OUT_OF_MEMORY,
		  "mpsc: the sync reports the first");
	like(wafer_last_error(), "1 later failure",
	     "mpsc: and counts the second");
	is_status(wafer_sync(c), WAFER_OK, "mpsc: once only");
	wafer_release(c, a);
	wafer_release(c, b);
	is_status(wafer_client_close(c), WAFER_OK, "mpsc: close is clean");
}

/* slow_copy reads |in| long after it was released and its memory handed
 * to a new handle written right away: the copy must still see the old
 * bytes. */
static void test_release_order(const char *selector, const char *channel)
{
	wafer_client *c = open_on(selector, channel);
	enum { n = 1024 };
	static float a[n], b[n], out[n];
	for (int i = 0; i < n; i++) {
		a[i] = (float)i;
		b[i] = -1.0f;
	}
	wafer_handle in, dst, reuse;
	wafer_create(c, a, sizeof a, &in);
	wafer_empty(c, sizeof out, &dst);
	struct wafer_elementwise_params slow = {20000}; /* 20 ms */
	wafer_handle h[2] = {dst, in};
	wafer_status s = execute_f32(c, "slow_copy", h, 2, &slow, sizeof slow, n);
	if (s == WAFER_ERROR_NOT_SUPPORTED) {
		/* The standard catalogue has no slow kernel: copy instead. */
		struct wafer_elementwise_params p = {n};
		s = execute_f32(c, "copy", h, 2, &p, sizeof p, n);
	}
	is_status(s, WAFER_OK, "%s/%s: queued reader of a released input",
		  selector, channel);
	wafer_release(c, in);
	wafer_create(c, b, sizeof b, &reuse); /* same size: reuses in's chunk */
	wafer_read(c, dst, 0, out, sizeof out);
	int wrong = 0;
	for (int i = 0; i < n; i++)
		wrong += out[i] != a[i];
	is_int(wrong, 0, "%s/%s: released input not overwritten before its "
	       "reader ran", selector, channel);

	/* Trimming hands the memory back to the plugin: it must wait too. */
	wafer_create(c, a, sizeof a, &in);
	h[1] = in;
	if (execute_f32(c, "slow_copy", h, 2, &slow, sizeof slow, n) ==
	    WAFER_ERROR_NOT_SUPPORTED) {
		struct wafer_elementwise_params p = {n};
		execute_f32(c, "copy", h, 2, &p, sizeof p, n);
	}
	wafer_release(c, in);
	wafer_memory_trim(c);
	wafer_read(c, dst, 0, out, sizeof out);
	ok(out[n - 1] == a[n - 1], "%s/%s: trim waits for queued readers",
	   selector, channel);
	wafer_release(c, dst);
	wafer_release(c, reuse);
	wafer_client_close(c);
}

static void test_read_async(const char *selector, const char *channel)
{
	wafer_client *c = open_on(selector, channel);
	float src[300], dst[300];
	for (int i = 0; i < 300; i++)
		src[i] = (float)i * 0.5f;
	memset(dst, 0, sizeof dst);
	wafer_handle h;
	wafer_create(c, src, sizeof src, &h);
	is_status(wafer_read_async(c, h, 100 * sizeof(float), dst,
				   200 * sizeof(float)),
		  WAFER_OK, "%s/%s: read_async", selector, channel);
	is_status(wafer_read_async(c, h, 0, dst, 301 * sizeof(float)),
		  WAFER_ERROR_OUT_OF_RANGE,
		  "%s/%s: read_async range checked at once", selector, channel);
	is_status(wafer_sync(c), WAFER_OK, "%s/%s: sync", selector, channel);
	ok(memcmp(dst, src + 100, 200 * sizeof(float)) == 0,
	   "%s/%s: read_async bytes there at sync", selector, channel);
	wafer_release(c, h);
	wafer_client_close(c);
}

static void test_close_with_queued_work(const char *selector,
					const char *channel)
{
	wafer_client *c = open_on(selector, channel);
	wafer_handle x, one;
	wafer_empty(c, 4096 * sizeof(float), &x);
	wafer_empty(c, 4096 * sizeof(float), &one);
	for (int i = 0; i < 200; i++)
		add(c, x, x, one, 4096);
	/* No sync, handles still live: close finishes and frees all. */
	is_status(wafer_client_close(c), WAFER_OK,
		  "%s/%s: close with 200 queued kernels", selector, channel);
}

/* mpsc only: execute returns although the plugin's launch blocks. */
static void test_mpsc_returns_at_once(void)
{
	wafer_client *c = open_on("async", "mpsc");
	static int gate;
	int *addr = &gate;
	__atomic_store_n(&gate, 0, __ATOMIC_RELEASE);
	is_status(execute_f32(c, "gate", NULL, 0, &addr, sizeof addr, 1), WAFER_OK,
		  "mpsc: execute returned while launch is still blocked");
	wafer_handle h;
	is_status(wafer_empty(c, 64, &h), WAFER_OK,
		  "mpsc: empty returns behind a blocked launch");
	is_status(wafer_release(c, h), WAFER_OK,
		  "mpsc: release returns behind a blocked launch");
	__atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
	is_status(wafer_sync(c), WAFER_OK, "mpsc: sync after the gate opens");

	/* A reservation the device refuses is reported by the next sync. */
	wafer_handle big;
	is_status(wafer_empty(c, (size_t)3 << 30, &big), WAFER_OK,
		  "mpsc: empty of 3 GiB queued");
	is_status(wafer_sync(c), WAFER_ERROR_OUT_OF_MEMORY,
		  "mpsc: its failure comes at sync");
	is_status(wafer_sync(c), WAFER_OK, "mpsc: once");
	float v;
	is_status(wafer_read(c, big, 0, &v, sizeof v),
		  WAFER_ERROR_OUT_OF_MEMORY,
		  "mpsc: using the unbacked handle fails cleanly");
	is_status(wafer_release(c, big), WAFER_OK,
		  "mpsc: releasing it is fine");
	is_status(wafer_client_close(c), WAFER_OK, "mpsc: close");

	wafer_client *d = open_on("async", "direct");
	is_status(wafer_empty(d, (size_t)3 << 30, &big),
		  WAFER_ERROR_OUT_OF_MEMORY,
		  "direct: the same reservation fails at once");
	wafer_client_close(d);
}

/*===----------------------------------------------------------------------===
 * Threads that block, seen without a clock
 *===----------------------------------------------------------------------===*/

/* The scheduler state of thread |tid| of this process, from /proc: 'R'
 * running, 'S' asleep in a wait (a futex: a condition variable, a join),
 * 0 once it has exited. Tests wait for a thread to block instead of
 * sleeping "long enough" and hoping it did; a thread that never blocks
 * hangs the test, and the harness catches that. */
static char thread_state(pid_t tid)
{
	char path[64], buf[512], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* after the name, which may hold spaces */
	if (!p || p[1] != ' ')
		return 0;
	return p[2] == 'Z' || p[2] == 'X' ? 0 : p[2];
}

static pid_t current_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Waits until every other thread of the process is asleep: the channel's
 * runner and the plugin's workers have nothing left to do. */
static void wait_quiescent(void)
{
	pid_t self = current_tid();

	for (;;) {
		DIR *d = opendir("/proc/self/task");
		struct dirent *e;
		int busy = 0;

		if (!d)
			return;
		while (!busy && (e = readdir(d))) {
			pid_t tid = (pid_t)atoi(e->d_name);
			char state;
			if (tid <= 0 || tid == self)
				continue;
			state = thread_state(tid);
			busy = state && state != 'S';
		}
		closedir(d);
		if (!busy)
			return;
		sched_yield();
	}
}

/* mpsc only: bursts far past the channel's node cache and its queue
 * bound, queued behind a blocked launch: recycled nodes, producers that
 * wait for one, and uploads too large for a recycled node keep their
 * order and their bytes, round after round, with the cache trimmed in
 * between. */
struct burst_worker {
	wafer_client *client;
	wafer_handle x, one;
	int adds, errors;
};

static void *burst_producer(void *arg)
{
	struct burst_worker *w = arg;
	for (int i = 0; i < w->adds; i++)
		w->errors += add(w->client, w->x, w->x, w->one, 64) != WAFER_OK;
	return NULL;
}

/* Opens the gate once the issuing thread blocks: on the queue's bound
 * (the burst filled it) or in joining its producers. Until then the
 * burst piles up behind the held runner. */
struct gate_opener {
	int *gate;
	pid_t issuer;
};

static void *open_gate_when_blocked(void *arg)
{
	struct gate_opener *o = arg;
	while (thread_state(o->issuer) == 'R')
		sched_yield();
	__atomic_store_n(o->gate, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* mpsc only: uploads too large for a recycled node are copied into
 * allocated nodes, but only up to 64 MiB queued; past that a write waits
 * for the runner instead of piling up memory behind it. */
struct upload_worker {
	wafer_client *client;
	pid_t tid;  /* the producer's thread (atomic) */
	wafer_handle h;
	unsigned char *bytes; /* writes x size bytes, pattern per write */
	int writes;
	int done;   /* writes returned so far (atomic) */
	int errors;
};

enum { UPLOAD_SIZE = 1 << 20 };

static void *upload_producer(void *arg)
{
	struct upload_worker *w = arg;
	__atomic_store_n(&w->tid, current_tid(), __ATOMIC_RELEASE);
	for (int i = 0; i < w->writes; i++) {
		w->errors += wafer_write(w->client, w->h, 0,
					 w->bytes + (size_t)i * UPLOAD_SIZE,
					 UPLOAD_SIZE) != WAFER_OK;
		__atomic_add_fetch(&w->done, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void test_mpsc_upload_bound(void)
{
	enum { writes = 100 };
	wafer_client *c = open_on("async", "mpsc");
	static int gate;
	int *addr = &gate;
	struct upload_worker w = {.client = c, .writes = writes};
	w.bytes = malloc((size_t)writes * UPLOAD_SIZE);
	for (int i = 0; i < writes; i++)
		memset(w.bytes + (size_t)i * UPLOAD_SIZE, i + 1, UPLOAD_SIZE);
	wafer_empty(c, UPLOAD_SIZE, &w.h);

	__atomic_store_n(&gate, 0, __ATOMIC_RELEASE);
	execute_f32(c, "gate", NULL, 0, &addr, sizeof addr, 1);
	pthread_t producer;
	pthread_create(&producer, NULL, upload_producer, &w);
	/* The runner is held by the gate: only what fits in 64 MiB can be
	 * copied and queued (63 uploads with their node headers); the next
	 * write waits. Wait for the 63, then for the producer to block (on
	 * the bound) or to finish (past it, if there were none): no clock,
	 * and a producer that never gets there hangs for the harness. */
	while (__atomic_load_n(&w.done, __ATOMIC_ACQUIRE) < 63)
		sched_yield();
	while (__atomic_load_n(&w.done, __ATOMIC_ACQUIRE) < writes &&
	       thread_state(__atomic_load_n(&w.tid, __ATOMIC_ACQUIRE)) !=
		       'S')
		sched_yield();
	int done = __atomic_load_n(&w.done, __ATOMIC_ACQUIRE);
	ok(done >= 60 && done <= 64,
	   "mpsc: %d of %d 1 MiB uploads returned behind a held runner "
	   "(at most 64 MiB are queued)", done, writes);
	__atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
	pthread_join(producer, NULL);
	is_int(w.errors, 0, "mpsc: every upload succeeded");
	unsigned char *back = malloc(UPLOAD_SIZE);
	is_status(wafer_read(c, w.h, 0, back, UPLOAD_SIZE), WAFER_OK,
		  "mpsc: read after the uploads");
	ok(back[0] == writes && back[UPLOAD_SIZE - 1] == writes,
	   "mpsc: the last upload is the one that stays");
	wafer_release(c, w.h);
	is_status(wafer_client_close(c), WAFER_OK, "mpsc upload bound: close");
	free(back);
	free(w.bytes);
}

static void test_mpsc_burst(void)
{
	wafer_client *c = open_on("async", "mpsc");
	enum { n = 256, adds = 3000, rounds = 3, producers = 4 };
	static const size_t sizes[] = {4, 64, 300, 320, 336, 4096, 32768};
	enum { n_sizes = sizeof sizes / sizeof sizes[0] };
	static unsigned char up[n_sizes][32768], back[32768];
	static int gate;
	int *addr = &gate;
	wafer_handle x, one, w[n_sizes];
	wafer_empty(c, n * sizeof(float), &x);
	wafer_empty(c, n * sizeof(float), &one);
	for (int k = 0; k < n_sizes; k++)
		wafer_empty(c, sizes[k], &w[k]);

	for (int round = 0; round < rounds; round++) {
		__atomic_store_n(&gate, 0, __ATOMIC_RELEASE);
		execute_f32(c, "gate", NULL, 0, &addr, sizeof addr, 1);
		pthread_t opener;
		struct gate_opener o = {&gate, current_tid()};
		pthread_create(&opener, NULL, open_gate_when_blocked, &o);
		fill(c, x, n, 0.0);
		fill(c, one, n, 1.0);
		int errors = 0;
		for (int i = 0; i < adds; i++)
			errors += add(c, x, x, one, n) != WAFER_OK;
		for (int k = 0; k < n_sizes; k++) {
			for (size_t i = 0; i < sizes[k]; i++)
				up[k][i] = (unsigned char)(i * 7 + k + round);
			errors += wafer_write(c, w[k], 0, up[k], sizes[k]) !=
				  WAFER_OK;
		}
		/* Producers racing while the runner is blocked. */
		struct burst_worker workers[producers];
		pthread_t threads[producers];
		for (int t = 0; t < producers; t++) {
			workers[t] = (struct burst_worker){
				.client = c, .one = one, .adds = 1000};
			wafer_empty(c, 64 * sizeof(float), &workers[t].x);
			fill(c, workers[t].x, 64, (double)t);
			pthread_create(&threads[t], NULL, burst_producer,
				       &workers[t]);
		}
		for (int t = 0; t < producers; t++) {
			pthread_join(threads[t], NULL);
			errors += workers[t].errors;
		}
		pthread_join(opener, NULL);

		static float out[n];
		is_status(wafer_read(c, x, 0, out, sizeof out), WAFER_OK,
			  "mpsc burst %d: read", round);
		int wrong = 0;
		for (int i = 0; i < n; i++)
			wrong += out[i] != (float)adds;
		for (int k = 0; k < n_sizes; k++) {
			wafer_read(c, w[k], 0, back, sizes[k]);
			wrong += memcmp(back, up[k], sizes[k]) != 0;
		}
		for (int t = 0; t < producers; t++) {
			float v[64];
			wafer_read(c, workers[t].x, 0, v, sizeof v);
			wrong += v[0] != (float)(t + 1000) ||
				 v[63] != (float)(t + 1000);
			wafer_release(c, workers[t].x);
		}
		ok(errors == 0 && wrong == 0,
		   "mpsc burst %d: %d adds, %zu-byte to %zu-byte writes and "
		   "%d producers in order (%d errors, %d wrong)",
		   round, adds, sizes[0], sizes[n_sizes - 1], producers, errors,
		   wrong);
		/* Idle until the runner sleeps, which trims the nodes past
		 * the cache's bound before the next burst. */
		wait_quiescent();
	}
	for (int k = 0; k < n_sizes; k++)
		wafer_release(c, w[k]);
	wafer_release(c, x);
	wafer_release(c, one);
	is_status(wafer_client_close(c), WAFER_OK, "mpsc burst: close");
}

/* At the handle cap ([core] max_handles), a release followed at once by
 * a reserve must work on every channel: on mpsc the released slot comes
 * back only when the runner reaches the release (once this failed with
 * "no free handle slot"). The async plugin's slow_copy keeps the runner
 * busy so the releases are still queued when the reserves come. */
static void test_handle_cap(const char *path, const char *channel)
{
	enum { CAP = 8 };
	wafer_option options[] = {
		{"core", "plugin_path", path},
		{"core", "backend", "async"},
		{"core", "max_handles", "8"},
	};
	wafer_runtime_options ro = {
		.struct_size = sizeof ro,
		.options = options,
		.option_count = 3,
		.flags = WAFER_RUNTIME_NO_CONFIG_FILES,
	};
	wafer_runtime *rt = NULL;
	wafer_client *c = NULL;
	wafer_client_options co = {.struct_size = sizeof co, .channel = channel};
	wafer_handle h[CAP + 1];
	int failed = 0;

	if (wafer_runtime_open(&ro, &rt) != WAFER_OK ||
	    wafer_client_open(rt, "async", &co, &c) != WAFER_OK) {
		ok(0, "%s: open with max_handles = 8: %s", channel,
		   wafer_last_error());
		wafer_runtime_close(rt);
		return;
	}
	for (int i = 0; i < CAP; i++)
		failed += wafer_empty(c, 64, &h[i]) != WAFER_OK;
	is_status(wafer_empty(c, 64, &h[CAP]), WAFER_ERROR_OUT_OF_MEMORY,
		  "%s: a 9th handle past max_handles = 8", channel);
	like(wafer_last_error(), "no free handle slot", "  ... says why");
	for (int round = 0; round < 200; round++) {
		int i = round % CAP;
		struct wafer_elementwise_params p = {50}; /* 50 us */
		wafer_handle pair[2] = {h[i], h[(i + 1) % CAP]};
		execute_f32(c, "slow_copy", pair, 2, &p, sizeof p, 1);
		failed += wafer_release(c, h[i]) != WAFER_OK;
		failed += wafer_empty(c, 64, &h[i]) != WAFER_OK;
	}
	is_int(failed, 0, "%s: 200 releases each followed at once by a "
	       "reserve, at the cap: none fails", channel);
	for (int i = 0; i < CAP; i++)
		wafer_release(c, h[i]);
	wafer_client_close(c);
	wafer_runtime_close(rt);

	options[2].value = "16777216";
	is_status(wafer_runtime_open(&ro, &rt), WAFER_OK, "runtime");
	is_status(wafer_client_open(rt, "async", &co, &c), WAFER_ERROR_CONFIG,
		  "%s: max_handles past 2^24 - 1", channel);
	like(wafer_last_error(), "max_handles is 16777216",
	     "  ... names the value");
	wafer_runtime_close(rt);
}

int main(void)
{
	char path[4096], backends[256];
	const char *env_path = getenv("WAFER_PLUGIN_PATH");
	const char *builddir = getenv("T_BUILDDIR");
	const char *backend = getenv("WAFER_BACKEND");
	if (!builddir) {
		printf("Bail out! T_BUILDDIR is not set (run through make check)\n");
		return 1;
	}
	snprintf(path, sizeof path, "%s%s%s/plugins/.libs",
		 env_path ? env_path : "", env_path ? ":" : "", builddir);
	snprintf(backends, sizeof backends, "%s, async",
		 backend && *backend ? backend : "cpu");
	runtime = open_runtime_on(backends, path);

	for (int ch = 0; ch < N_CHANNELS; ch++) {
		test_chain("default", channels[ch]);
		test_chain("async", channels[ch]);
		test_errors(channels[ch]);
		test_release_order("default", channels[ch]);
		test_release_order("async", channels[ch]);
		test_read_async("default", channels[ch]);
		test_read_async("async", channels[ch]);
		test_close_with_queued_work("default", channels[ch]);
		test_close_with_queued_work("async", channels[ch]);
	}
	for (int ch = 0; ch < N_CHANNELS; ch++)
		test_deferred(channels[ch]);
	test_mpsc_deferred_count();
	test_mpsc_returns_at_once();
	test_mpsc_upload_bound();
	test_mpsc_burst();

	static const char *const freeing[] = {"direct", "stream"};
	for (int m = 0; m < 2; m++) {
		memory_strategy = freeing[m];
		diag("memory strategy %s", memory_strategy);
		for (int ch = 0; ch < N_CHANNELS; ch++)
			test_errors(channels[ch]);
	}
	memory_strategy = NULL;
	wafer_runtime_close(runtime);
	/* With runtimes of their own, after the shared one is closed: two
	 * runtimes at once would each hand the async plugin, which keeps
	 * the last host table it was queried with, a table of their own. */
	for (int ch = 0; ch < N_CHANNELS; ch++)
		test_handle_cap(path, channels[ch]);
	done_testing();
	return exit_status();
}
