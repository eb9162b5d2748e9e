/* wafer — SPDX-License-Identifier: MIT
 *
 * host.c: registered host memory (wafer_host_register(3)) on the default
 * device and on each channel:
 *   - uploads from and downloads into a registered range give the bytes,
 *     also across queues with no event (an upload on one queue read by a
 *     kernel on another; on the CUDA stand-in, whose streams run late and
 *     read registered memory only when the copy runs, a missing wait
 *     shows as wrong bytes);
 *   - the bytes are read by the time wafer_sync returns: changing them
 *     after that changes nothing on the device;
 *   - a copy only partly inside a range is right too (it is staged);
 *   - errors: NULL, size 0, the end of the address space, overlaps,
 *     unregistering what is not a range's start, twice, while a queue
 *     captures a graph; each leaves the ranges as they were;
 *   - a client closed with ranges registered closes cleanly;
 *   - ranges registered and unregistered on one thread (the list grows)
 *     while another thread uploads from a registered range: each upload
 *     gives the bytes (under ASan/TSan: the lookup never reads a list
 *     being moved).
 * A plugin without the host-memory group (no WAFER_CAP_HOST_REGISTER)
 * stages every copy; every point holds either way. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/graph.h>
#include <wafer/queue.h>
#include <wafer/wafer.h>

#include "t/tap.h"
#include "t/client_util.h"

static const char *const channels[] = {"direct", "mutex", "mpsc"};

/* Several staging chunks' worth on the stand-in, small on the host. */
#define N (1u << 18)

static float *pattern(size_t n, float base)
{
	float *v = aligned_alloc(4096, n * sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = base + (float)(i % 1000);
	return v;
}

static int same(const float *a, const float *b, size_t n)
{
	return memcmp(a, b, n * sizeof *a) == 0;
}

static void test_copies(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	float *up = pattern(N, 1.0f), *down = pattern(N, 0.0f);
	float *want = pattern(N, 1.0f);
	wafer_handle h;

	is_status(wafer_host_register(c, up, N * sizeof *up), WAFER_OK,
		  "%s: register the upload buffer", channel);
	is_status(wafer_host_register(c, down, N * sizeof *down), WAFER_OK,
		  "%s: register the download buffer", channel);
	check(wafer_create(c, up, N * sizeof *up, &h), "create");
	memset(down, 0, N * sizeof *down);
	is_status(wafer_read(c, h, 0, down, N * sizeof *down), WAFER_OK,
		  "%s: read into registered memory", channel);
	ok(same(down, want, N), "%s: create from registered memory, read "
	   "back into registered memory: the bytes", channel);

	/* After wafer_sync the upload has read its bytes. */
	check(wafer_write(c, h, 0, up, N * sizeof *up), "write");
	check(wafer_sync(c), "sync");
	for (size_t i = 0; i < N; i++)
		up[i] = -1.0f;
	memset(down, 0, N * sizeof *down);
	check(wafer_read_async(c, h, 0, down, N * sizeof *down), "read_async");
	is_status(wafer_sync(c), WAFER_OK, "%s: sync after read_async",
		  channel);
	ok(same(down, want, N), "%s: bytes changed after the sync are not "
	   "the device's; read_async into registered memory has them by the "
	   "sync", channel);

	/* Half inside the upload range, half outside: staged, and right. */
	float *outside = pattern(2 * N, 5.0f);
	check(wafer_host_register(c, outside, N * sizeof *outside),
	      "register half");
	check(wafer_write(c, h, 0, outside + N / 2, N * sizeof *outside),
	      "write across the range's end");
	check(wafer_read(c, h, 0, down, N * sizeof *down), "read");
	ok(same(down, outside + N / 2, N), "%s: a write only partly inside "
	   "a registered range gives its bytes", channel);
	is_status(wafer_host_unregister(c, outside), WAFER_OK,
		  "%s: unregister", channel);

	check(wafer_release(c, h), "release");
	is_status(wafer_host_unregister(c, up), WAFER_OK,
		  "%s: unregister the upload buffer", channel);
	/* |down| stays registered: the close unregisters it. */
	is_status(wafer_client_close(c), WAFER_OK,
		  "%s: close with a range still registered", channel);
	free(up);
	free(down);
	free(want);
	free(outside);
}

/* An upload from registered memory on queue a, an add over it on b, no
 * event: b waits for a's copy. Each round changes the bytes after a sync,
 * so a kernel that ran before the copy would see the last round's. */
static void test_queues(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	if (!needs_f32_kernels(c, "host", channel, "add", NULL)) {
		check(wafer_client_close(c), "close");
		return;
	}
	wafer_queue *a, *b;
	float *up = pattern(N, 0.0f), *got = malloc(N * sizeof *got);
	wafer_handle in, out;
	int good = 1;

	check(wafer_queue_open(c, &a), "open a");
	check(wafer_queue_open(c, &b), "open b");
	check(wafer_host_register(c, up, N * sizeof *up), "register");
	check(wafer_empty(c, N * sizeof(float), &in), "empty");
	check(wafer_empty(c, N * sizeof(float), &out), "empty");
	for (int round = 0; round < 4; round++) {
		for (size_t i = 0; i < N; i++)
			up[i] = (float)(round + 1);
		wafer_queue_select(a);
		check(wafer_write(c, in, 0, up, N * sizeof *up), "write on a");
		wafer_queue_select(b);
		struct wafer_elementwise_params p = {N};
		wafer_handle h[3] = {out, in, in};
		check(execute_f32(c, "add", h, 3, &p, sizeof p, N), "add on b");
		check(wafer_read(c, out, 0, got, N * sizeof *got), "read on b");
		check(wafer_queue_sync(a), "sync a");
		for (size_t i = 0; i < N && good; i++)
			good = got[i] == 2.0f * (float)(round + 1);
	}
	ok(good, "%s: a kernel on b reads what a uploaded from registered "
	   "memory, no event needed", channel);
	wafer_queue_select(wafer_client_default_queue(c));
	check(wafer_release(c, in), "release");
	check(wafer_release(c, out), "release");
	check(wafer_host_unregister(c, up), "unregister");
	is_status(wafer_client_close(c), WAFER_OK, "%s: close", channel);
	free(up);
	free(got);
}

static void test_errors(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	char *buf = malloc(1 << 16);

	is_status(wafer_host_register(NULL, buf, 16),
		  WAFER_ERROR_INVALID_ARGUMENT, "%s: NULL client", channel);
	is_status(wafer_host_register(c, NULL, 16),
		  WAFER_ERROR_INVALID_ARGUMENT, "%s: NULL pointer", channel);
	is_status(wafer_host_register(c, buf, 0),
		  WAFER_ERROR_INVALID_ARGUMENT, "%s: size 0", channel);
	is_status(wafer_host_register(c, (void *)(UINTPTR_MAX - 15), 64),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: a range past the end of the address space", channel);
	check(wafer_host_register(c, buf + 4096, 4096), "register");
	is_status(wafer_host_register(c, buf + 4096, 4096),
		  WAFER_ERROR_INVALID_ARGUMENT, "%s: the same range twice",
		  channel);
	ok(strstr(wafer_last_error(), "overlap") != NULL,
	   "%s: the error says it overlaps: %s", channel, wafer_last_error());
	is_status(wafer_host_register(c, buf, 4097),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: a range reaching into it from below", channel);
	is_status(wafer_host_register(c, buf + 8191, 10),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: a range starting in its last byte", channel);
	is_status(wafer_host_register(c, buf, 1 << 16),
		  WAFER_ERROR_INVALID_ARGUMENT, "%s: a range containing it",
		  channel);
	is_status(wafer_host_register(c, buf, 4096), WAFER_OK,
		  "%s: the range just below it", channel);
	is_status(wafer_host_register(c, buf + 8192, 4096), WAFER_OK,
		  "%s: the range just above it", channel);
	is_status(wafer_host_unregister(c, buf + 4097),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: unregister a pointer inside a range", channel);
	ok(strstr(wafer_last_error(), "not the start") != NULL,
	   "%s: the error says so: %s", channel, wafer_last_error());
	is_status(wafer_host_unregister(c, buf + 4096), WAFER_OK,
		  "%s: unregister", channel);
	is_status(wafer_host_unregister(c, buf + 4096),
		  WAFER_ERROR_INVALID_ARGUMENT, "%s: unregister twice", channel);
	is_status(wafer_host_register(c, buf + 4096, 4096), WAFER_OK,
		  "%s: register again after unregistering", channel);

	/* A capture on any queue refuses both (they wait for every queue)
	 * and leaves the ranges as they were. */
	wafer_queue *q;
	wafer_graph *g = NULL;
	check(wafer_queue_open(c, &q), "open");
	check(wafer_queue_begin_capture(q), "begin capture");
	is_status(wafer_host_register(c, buf + 16384, 64),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: register while a queue captures", channel);
	ok(strstr(wafer_last_error(), "captures") != NULL,
	   "%s: the error names the capture: %s", channel, wafer_last_error());
	is_status(wafer_host_unregister(c, buf),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: unregister while a queue captures", channel);
	check(wafer_queue_end_capture(q, &g), "end capture");
	check(wafer_graph_release(g), "graph release");
	is_status(wafer_host_unregister(c, buf), WAFER_OK,
		  "%s: the range is there after the capture", channel);

	/* Another client may register the same memory. */
	wafer_client *c2 = open_client_on(rt, "default", channel);
	is_status(wafer_host_register(c2, buf + 4096, 4096), WAFER_OK,
		  "%s: a second client registers the same range", channel);
	check(wafer_host_unregister(c2, buf + 4096), "unregister on c2");
	check(wafer_client_close(c2), "close c2");
	is_status(wafer_client_close(c), WAFER_OK,
		  "%s: close with ranges registered", channel);
	free(buf);
}

struct registrar {
	wafer_client *client;
	char *base;
	atomic_int done;
	int errors;
};

/* Registers 40 disjoint ranges (the list grows from empty past several
 * capacities) and unregisters them, a few times over. */
static void *registrar_main(void *arg)
{
	struct registrar *r = arg;
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 40; i++)
			r->errors += wafer_host_register(r->client,
							 r->base + i * 8192,
							 4096) != WAFER_OK;
		for (int i = 0; i < 40; i++)
			r->errors += wafer_host_unregister(
					     r->client, r->base + i * 8192) !=
				     WAFER_OK;
	}
	atomic_store(&r->done, 1);
	return NULL;
}

static void test_concurrent_changes(wafer_runtime *rt, const char *channel)
{
	enum { PIECE = 1024 };
	float *up = pattern(PIECE, 7.0f), *got = malloc(PIECE * sizeof *got);
	struct registrar r = {.base = malloc(40 * 8192)};
	int good = 1, uploads = 0;
	wafer_handle h;
	pthread_t thread;

	for (int client = 0; client < 4; client++) {
		r.client = open_client_on(rt, "default", channel);
		atomic_store(&r.done, 0);
		check(wafer_host_register(r.client, up, PIECE * sizeof *up),
		      "register");
		check(wafer_empty(r.client, PIECE * sizeof *up, &h), "empty");
		pthread_create(&thread, NULL, registrar_main, &r);
		do {
			check(wafer_write(r.client, h, 0, up,
					  PIECE * sizeof *up),
			      "write");
			check(wafer_read(r.client, h, 0, got,
					 PIECE * sizeof *got),
			      "read");
			good = good && same(up, got, PIECE);
			uploads++;
		} while (!atomic_load(&r.done));
		pthread_join(thread, NULL);
		check(wafer_release(r.client, h), "release");
		check(wafer_host_unregister(r.client, up), "unregister");
		check(wafer_client_close(r.client), "close");
	}
	is_int(r.errors, 0, "%s: 4 clients x 4 rounds of 40 ranges "
	       "registered and unregistered on a second thread: no errors",
	       channel);
	ok(good, "%s: %d uploads from a registered range meanwhile give "
	   "the bytes", channel, uploads);
	free(r.base);
	free(up);
	free(got);
}

int main(void)
{
	wafer_runtime *rt;
	check(wafer_runtime_open(NULL, &rt), "runtime");
	for (size_t i = 0; i < sizeof channels / sizeof *channels; i++) {
		test_copies(rt, channels[i]);
		test_queues(rt, channels[i]);
		test_errors(rt, channels[i]);
		/* direct is for one thread at a time. */
		if (strcmp(channels[i], "direct") != 0)
			test_concurrent_changes(rt, channels[i]);
	}
	wafer_runtime_close(rt);
	done_testing();
	return exit_status();
}
