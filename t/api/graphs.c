/* wafer — SPDX-License-Identifier: MIT
 *
 * graphs.c: capture and replay (wafer/graph.h, wafer_graph(3)), on the
 * default device and on each channel:
 *   - a step of operations (temporaries, donation, an output) captured
 *     on a queue and replayed gives the bytes the same step gives eagerly,
 *     bit for bit, replay after replay, on the queue it was captured on
 *     and on another;
 *   - replays read their inputs as they are when they run (a write
 *     between two replays shows), and a captured write writes the bytes
 *     it was given at capture again;
 *   - rebinding an input and an output, and its errors;
 *   - memory: a replay reserves nothing (usage identical after 1 and
 *     after 1,000 replays), the graph keeps the memory of handles
 *     released after capture (held_bytes) and gives it back at release;
 *   - every call a capture cannot record fails at once naming itself,
 *     and the queue goes on capturing;
 *   - host callbacks replay in order; a graph released right after
 *     launches runs them first; a capture left open at client close is
 *     discarded; threads replaying graphs of one client on their own
 *     queues.
 * Where the plugin has native graphs (WAFER_CAP_NATIVE_GRAPHS) the
 * launches are replayed by the device; every point holds either way. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/graph.h>
#include <wafer/ops.h>
#include <wafer/queue.h>
#include <wafer/wafer.h>

#include "t/tap.h"
#include "t/client_util.h"
#include "t/log_capture.h"

static const char *const channels[] = {"direct", "mutex", "mpsc"};

#define N 4096u

/* out = tanh(x * 2 + 1) * x: a multiply, a tanh and a product through
 * temporaries, the first two donated on. */
static void step(wafer_client *c, const wafer_tensor *x, wafer_tensor *out)
{
	wafer_tensor a, b;
	check(wafer_op_binary_scalar(c, WAFER_BINARY_MUL, x, WAFER_ALWAYS_COPY,
				     2.0, 0, &a),
	      "mul");
	check(wafer_op_binary_scalar(c, WAFER_BINARY_ADD, &a,
				     WAFER_DONATE_INPUT, 1.0, 0, &b),
	      "add");
	check(wafer_op_unary(c, WAFER_UNARY_TANH, &b, WAFER_DONATE_INPUT, &a),
	      "tanh");
	check(wafer_op_binary(c, WAFER_BINARY_MUL, &a, WAFER_ALWAYS_COPY, x,
			      WAFER_ALWAYS_COPY, out),
	      "mul x");
	check(wafer_tensor_release(c, &a), "release a");
}

static void input(float *v, float seed)
{
	for (unsigned i = 0; i < N; i++)
		v[i] = seed * (float)((int)(i % 97) - 48) / 16.0f;
}

/* The eager step's bytes for an input of |seed|. */
static float *eager(wafer_client *c, float seed)
{
	float *v = malloc(N * sizeof *v);
	uint64_t shape[1] = {N};
	wafer_tensor x, y;
	input(v, seed);
	x = upload_f32(c, 1, shape, v);
	step(c, &x, &y);
	free(v);
	v = download_f32(c, &y);
	check(wafer_tensor_release(c, &x), "release x");
	check(wafer_tensor_release(c, &y), "release y");
	return v;
}

static int same_bytes(const float *a, const float *b)
{
	return memcmp(a, b, N * sizeof *a) == 0;
}

static wafer_tensor capture_step(wafer_client *c, wafer_queue *q,
				 const wafer_tensor *x, wafer_graph **g)
{
	wafer_tensor y;
	wafer_queue *was = wafer_queue_select(q);
	check(wafer_queue_begin_capture(q), "begin capture");
	step(c, x, &y);
	check(wafer_queue_end_capture(q, g), "end capture");
	wafer_queue_select(was);
	return y;
}

static void test_replay(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	uint64_t shape[1] = {N};
	float v[N];
	float *want1 = eager(c, 1.0f), *want2 = eager(c, -0.5f);
	wafer_queue *q, *other;
	wafer_graph *g = NULL;

	check(wafer_queue_open(c, &q), "open");
	check(wafer_queue_open(c, &other), "open other");
	input(v, 1.0f);
	wafer_tensor x = upload_f32(c, 1, shape, v);
	check(wafer_sync(c), "sync");
	wafer_memory_usage before = usage_now(c);
	wafer_tensor y = capture_step(c, q, &x, &g);
	ok(g != NULL, "%s: a capture makes a graph", channel);

	wafer_graph_info info = {.struct_size = sizeof info};
	is_status(wafer_graph_info_get(g, &info), WAFER_OK,
		  "%s: graph info", channel);
	is_int((long long)info.held_bytes, N * sizeof(float),
	       "%s: the graph keeps its temporary's memory", channel);
	if (caps_of(c, NULL) & WAFER_CAP_NATIVE_GRAPHS)
		is_int(info.native_launches, info.launches,
		       "%s: the device replays every launch (native graphs)",
		       channel);
	else
		is_int(info.native_launches, 0,
		       "%s: the core replays the launches (no native graphs)",
		       channel);
	ok(info.launches >= 4 && info.steps == info.launches &&
		   info.handles >= 3,
	   "%s: it holds the step's launches (%u steps, %u launches, %u "
	   "handles, %u native)",
	   channel, info.steps, info.launches, info.handles,
	   info.native_launches);

	/* Capture ran nothing: the output is not written yet, and a replay
	 * writes it. */
	is_status(wafer_graph_launch(g, q), WAFER_OK, "%s: launch", channel);
	check(wafer_queue_sync(q), "sync q");
	float *got = download_f32(c, &y);
	ok(same_bytes(got, want1), "%s: replay = eager, bit for bit",
	   channel);
	free(got);

	/* A new input, written eagerly between replays, is what the next
	 * replay reads; on another queue too. */
	input(v, -0.5f);
	check(wafer_write(c, x.handle, 0, v, sizeof v), "write x");
	is_status(wafer_graph_launch(g, other), WAFER_OK,
		  "%s: launch on another queue", channel);
	check(wafer_queue_sync(other), "sync other");
	got = download_f32(c, &y);
	ok(same_bytes(got, want2),
	   "%s: a replay on another queue reads the input as written",
	   channel);
	free(got);

	/* Many replays: nothing reserved, nothing lost. */
	wafer_memory_usage one = usage_now(c);
	for (int i = 0; i < 1000; i++)
		check(wafer_graph_launch(g, q), "launch");
	wafer_memory_usage many = usage_now(c);
	ok(one.bytes_in_use == many.bytes_in_use &&
		   one.bytes_reserved == many.bytes_reserved &&
		   one.handles_live == many.handles_live,
	   "%s: usage after 1,000 replays equals usage after one (%llu/%llu "
	   "bytes in use, %llu/%llu reserved)",
	   channel, (unsigned long long)one.bytes_in_use,
	   (unsigned long long)many.bytes_in_use,
	   (unsigned long long)one.bytes_reserved,
	   (unsigned long long)many.bytes_reserved);
	ok(many.handles_live == before.handles_live + 1,
	   "%s: the capture's temporaries are no handles (%llu live, one "
	   "output more than before)",
	   channel, (unsigned long long)many.handles_live);
	got = download_f32(c, &y);
	ok(same_bytes(got, want2), "%s: still equal after 1,000 replays",
	   channel);
	free(got);

	/* Rebinding: another input, another output. */
	wafer_tensor x2 = upload_f32(c, 1, shape, v), y2;
	input(v, 1.0f);
	check(wafer_write(c, x2.handle, 0, v, sizeof v), "write x2");
	check(wafer_tensor_empty(c, WAFER_DTYPE_F32, 1, shape, &y2), "y2");
	is_status(wafer_graph_rebind(g, x.handle, x2.handle), WAFER_OK,
		  "%s: rebind the input", channel);
	is_status(wafer_graph_rebind(g, y.handle, y2.handle), WAFER_OK,
		  "%s: rebind the output", channel);
	check(wafer_graph_launch(g, q), "launch rebound");
	check(wafer_queue_sync(q), "sync");
	got = download_f32(c, &y2);
	ok(same_bytes(got, want1), "%s: a rebound replay = eager on x2",
	   channel);
	free(got);
	got = download_f32(c, &y);
	ok(same_bytes(got, want2),
	   "%s: the old output is left as the last replay before wrote it",
	   channel);
	free(got);
	is_status(wafer_graph_rebind(g, x.handle, x2.handle),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: rebinding a handle the graph no longer uses is refused",
		  channel);
	like(wafer_last_error(), "does not use", "%s: ... and says so",
	     channel);
	wafer_handle small;
	check(wafer_empty(c, 64, &small), "small");
	is_status(wafer_graph_rebind(g, x2.handle, small),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: rebinding to a handle of another size is refused",
		  channel);
	like(wafer_last_error(), "64 bytes", "%s: ... naming the sizes",
	     channel);
	check(wafer_release(c, small), "release small");
	is_status(wafer_graph_rebind(g, x2.handle, small),
		  WAFER_ERROR_INVALID_HANDLE,
		  "%s: rebinding to a released handle is refused", channel);

	/* Released handles: the graph keeps their memory. */
	check(wafer_tensor_release(c, &x2), "release x2");
	check(wafer_tensor_release(c, &y2), "release y2");
	check(wafer_graph_info_get(g, &info), "info");
	ok(info.held_bytes == 3ull * N * sizeof(float),
	   "%s: the graph keeps the memory of the two released handles and "
	   "its temporary (%llu bytes)",
	   channel, (unsigned long long)info.held_bytes);
	is_status(wafer_graph_launch(g, q), WAFER_OK,
		  "%s: it launches after its handles were released", channel);
	is_status(wafer_graph_release(g), WAFER_OK, "%s: release", channel);
	check(wafer_tensor_release(c, &x), "release x");
	check(wafer_tensor_release(c, &y), "release y");
	is_status(wafer_queue_sync(q), WAFER_OK,
		  "%s: the launches before the release ran", channel);
	ok_clean(c, channel);
	check(wafer_queue_close(q), "close");
	check(wafer_queue_close(other), "close");
	free(want1);
	free(want2);
	check(wafer_client_close(c), "client close");
}

/* The default queue captures too, and a captured write writes its
 * bytes of capture time again. */
static void test_default_queue_write(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	wafer_queue *def = wafer_client_default_queue(c);
	float ones[N], got[N], twos[N];
	wafer_handle h;
	wafer_graph *g;

	for (unsigned i = 0; i < N; i++) {
		ones[i] = 1.0f;
		twos[i] = 2.0f;
	}
	check(wafer_empty(c, sizeof ones, &h), "empty");
	check(wafer_queue_begin_capture(def), "begin");
	is_status(wafer_write(c, h, 0, ones, sizeof ones), WAFER_OK,
		  "%s: a write is captured", channel);
	memset(ones, 0, sizeof ones); /* the graph has its own copy */
	check(wafer_queue_end_capture(def, &g), "end");
	check(wafer_write(c, h, 0, twos, sizeof twos), "write twos");
	check(wafer_read(c, h, 0, got, sizeof got), "read");
	ok(got[0] == 2.0f && got[N - 1] == 2.0f,
	   "%s: the captured write did not run at capture", channel);
	check(wafer_graph_launch(g, def), "launch");
	check(wafer_read(c, h, 0, got, sizeof got), "read");
	ok(got[0] == 1.0f && got[N - 1] == 1.0f,
	   "%s: a replay writes the bytes given at capture", channel);
	check(wafer_graph_release(g), "release");
	check(wafer_release(c, h), "release h");
	ok_clean(c, channel);
	check(wafer_client_close(c), "client close");
}

static void test_refused(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	wafer_queue *q, *other;
	wafer_handle h;
	wafer_event *e;
	wafer_graph *g = NULL, *g2 = NULL;
	float got[N];

	check(wafer_queue_open(c, &q), "open");
	check(wafer_queue_open(c, &other), "open");
	check(wafer_empty(c, sizeof got, &h), "empty");
	check(wafer_event_create(c, 0, &e), "event");
	check(wafer_queue_begin_capture(other), "begin other");
	check(wafer_queue_end_capture(other, &g2), "end other");
	is_status(wafer_queue_end_capture(q, &g), WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: ending a capture never begun is refused", channel);
	ok(g == NULL, "%s: ... with no graph", channel);
	check(wafer_queue_begin_capture(q), "begin");
	fails_saying(wafer_queue_begin_capture(q), WAFER_ERROR_INVALID_ARGUMENT,
		     "capturing already",
		     "%s: a second capture on one queue is refused", channel);
	wafer_queue_select(q);
	check(fill_floats(c, h, N, 3.0), "fill");
	fails_saying(wafer_read(c, h, 0, got, sizeof got),
		     WAFER_ERROR_INVALID_ARGUMENT, "read on queue",
		     "%s: read is refused", channel);
	is_status(wafer_read_async(c, h, 0, got, sizeof got),
		  WAFER_ERROR_INVALID_ARGUMENT, "%s: read_async is refused",
		  channel);
	fails_saying(wafer_sync(c), WAFER_ERROR_INVALID_ARGUMENT,
		     "sync on queue", "%s: sync is refused", channel);
	is_status(wafer_queue_sync(q), WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: queue sync is refused", channel);
	is_status(wafer_event_record(e, q), WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: event record is refused", channel);
	is_status(wafer_queue_wait(q, e), WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: a wait for an event is refused", channel);
	is_status(wafer_graph_launch(g2, q), WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: launching a graph into a capture is refused", channel);
	fails_saying(wafer_queue_close(q), WAFER_ERROR_INVALID_ARGUMENT,
		     "end the capture",
		     "%s: closing the capturing queue is refused", channel);
	/* Other queues run as usual meanwhile. */
	wafer_queue_select(other);
	check(fill_floats(c, h, N, 5.0), "fill other");
	is_status(wafer_read(c, h, 0, got, sizeof got), WAFER_OK,
		  "%s: another queue reads while one captures", channel);
	ok(got[0] == 5.0f, "%s: ... what it wrote (the capture ran nothing)",
	   channel);
	wafer_queue_select(q);
	check(fill_floats(c, h, N, 7.0), "fill after refusals");
	is_status(wafer_queue_end_capture(q, &g), WAFER_OK,
		  "%s: the capture ends after the refusals", channel);
	wafer_graph_info info = {.struct_size = sizeof info};
	check(wafer_graph_info_get(g, &info), "info");
	is_int(info.launches, 2, "%s: it recorded the two fills", channel);
	check(wafer_graph_launch(g, q), "launch");
	check(wafer_read(c, h, 0, got, sizeof got), "read");
	ok(got[0] == 7.0f && got[N - 1] == 7.0f,
	   "%s: the graph replays what it recorded", channel);
	wafer_queue_select(wafer_client_default_queue(c));
	check(wafer_graph_release(g), "release");
	check(wafer_graph_release(g2), "release");
	check(wafer_event_release(e), "event release");
	check(wafer_release(c, h), "release h");
	ok_clean(c, channel);
	check(wafer_client_close(c), "client close");
}

static wafer_status count_up(void *user)
{
	atomic_fetch_add((atomic_int *)user, 1);
	return WAFER_OK;
}

/* Callbacks replay; a graph released after launches still runs them;
 * a capture left open and graphs left alive go with the client. */
static void test_lifetimes(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	wafer_queue *q;
	wafer_handle h;
	wafer_graph *g;
	atomic_int calls = 0;
	float got[N];

	check(wafer_queue_open(c, &q), "open");
	check(wafer_empty(c, sizeof got, &h), "empty");
	check(wafer_queue_begin_capture(q), "begin");
	wafer_queue_select(q);
	check(fill_floats(c, h, N, 9.0), "fill");
	is_status(wafer_queue_callback(q, count_up, &calls), WAFER_OK,
		  "%s: a host callback is captured", channel);
	check(wafer_queue_end_capture(q, &g), "end");
	ok(atomic_load(&calls) == 0, "%s: it did not run at capture",
	   channel);
	for (int i = 0; i < 50; i++)
		check(wafer_graph_launch(g, q), "launch");
	is_status(wafer_graph_release(g), WAFER_OK,
		  "%s: release right after 50 launches", channel);
	is_status(wafer_queue_sync(q), WAFER_OK, "%s: they ran", channel);
	is_int(atomic_load(&calls), 50, "%s: the callback ran once a replay",
	       channel);
	check(wafer_read(c, h, 0, got, sizeof got), "read");
	ok(got[0] == 9.0f, "%s: and so did the fill", channel);

	/* Left for the client's close: a graph, and a capture still open. */
	check(wafer_queue_begin_capture(q), "begin");
	check(fill_floats(c, h, N, 1.0), "fill");
	check(wafer_queue_end_capture(q, &g), "end");
	check(wafer_queue_begin_capture(q), "begin again");
	check(fill_floats(c, h, N, 2.0), "fill");
	wafer_queue_select(wafer_client_default_queue(c));
	struct log_capture cap;
	char text[2048] = "";
	if (log_capture_begin(&cap)) {
		is_status(wafer_client_close(c), WAFER_OK,
			  "%s: a client closes with a graph alive and a "
			  "capture open",
			  channel);
		log_capture_end(&cap, text, sizeof text);
		like(text, "captured a graph: the capture (1 steps) is "
			   "discarded",
		     "%s: ... and says it discarded the open capture",
		     channel);
	}
}

struct worker {
	wafer_client *c;
	int index;
	int good;
};

static void *replayer(void *arg)
{
	struct worker *w = arg;
	wafer_queue *q;
	wafer_handle h;
	wafer_graph *g;
	float got[N];
	float value = (float)(w->index + 1);

	check(wafer_queue_open(w->c, &q), "open");
	wafer_queue_select(q);
	check(wafer_empty(w->c, sizeof got, &h), "empty");
	check(wafer_queue_begin_capture(q), "begin");
	check(fill_floats(w->c, h, N, value), "fill");
	check(wafer_queue_end_capture(q, &g), "end");
	w->good = 1;
	for (int round = 0; round < 20; round++) {
		check(fill_floats(w->c, h, N, 0.0), "clear");
		check(wafer_graph_launch(g, q), "launch");
		check(wafer_read(w->c, h, 0, got, sizeof got), "read");
		if (got[0] != value || got[N - 1] != value)
			w->good = 0;
	}
	check(wafer_graph_release(g), "release");
	check(wafer_release(w->c, h), "release h");
	check(wafer_queue_close(q), "close");
	return NULL;
}

static void test_threads(wafer_runtime *rt, const char *channel)
{
	if (strcmp(channel, "direct") == 0)
		return; /* one thread a client */
	wafer_client *c = open_client_on(rt, "default", channel);
	struct worker w[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){c, i, 0};
		pthread_create(&t[i], NULL, replayer, &w[i]);
	}
	int good = 1;
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		good &= w[i].good;
	}
	ok(good, "%s: four threads capture and replay their own graphs on "
		 "one client",
	   channel);
	ok_clean(c, channel);
	check(wafer_client_close(c), "client close");
}

int main(void)
{
	wafer_runtime *rt;
	check(wafer_runtime_open(NULL, &rt), "runtime");
	/* A plugin without the kernels the steps use (a vendor's
	 * skeleton): one skip naming them. */
	wafer_client *probe = open_client_on(rt, "default", NULL);
	int kernels = needs_f32_kernels(probe, "graphs", "t/api/graphs",
					"fill", "mul_scalar", "add_scalar",
					"tanh", "mul", NULL);
	check(wafer_client_close(probe), "close probe");
	for (size_t i = 0; kernels && i < sizeof channels / sizeof *channels;
	     i++) {
		const char *channel = channels[i];
		test_replay(rt, channel);
		test_default_queue_write(rt, channel);
		test_refused(rt, channel);
		test_lifetimes(rt, channel);
		test_threads(rt, channel);
	}
	wafer_runtime_close(rt);
	done_testing();
	return exit_status();
}
