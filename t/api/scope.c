/* wafer — SPDX-License-Identifier: MIT
 *
 * scope.c: wafer_scope_begin, wafer_scope_end, wafer_scope_keep. A loop
 * of 1,000 iterations of a 10-operation chain, a scope per iteration,
 * makes no storage call after the first iteration and peaks where the
 * first did (wafer_memory_usage_get counts the storage calls of the
 * client's memory manager, so the public API is enough here); nested
 * scopes release what is theirs; a retained or kept handle survives, a
 * kept one into the enclosing scope; a handle released or donated inside
 * the scope is not released again, also when its slot went to another
 * thread's handle since; ending a scope that is not the innermost, not
 * open or another thread's is a clean error that changes nothing. Every
 * test ends with no handle alive and no byte in use. On the direct, mutex
 * and mpsc channels, with the pool and buckets strategies for the loop,
 * and chunked where it keeps its free chunks (dealloc = never).
 *
 * Backend-neutral: the default device (WAFER_BACKEND picks another); a
 * backend without some f32 kernel of the chain reports one skip naming
 * it (catalogue.h says which backends must have them all). */
#include "build-config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/ops.h>
#include <wafer/wafer.h>

#include "t/tap.h"
#include "t/client_util.h"
#include "t/log_capture.h"

#define ROWS 16
#define COLS 16
#define N (ROWS * COLS)
#define ITERATIONS 1000

static wafer_runtime *runtime;
static wafer_client *client;
static const char *channel = "default";

static wafer_client *open_client(const char *name, const char *memory)
{
	wafer_client *c;
	wafer_client_options options = {.struct_size = sizeof options,
					 .channel = name, .memory = memory};
	check(wafer_client_open(runtime, "default", &options, &c),
	      "client_open");
	return c;
}

static wafer_memory_usage usage(void)
{
	wafer_memory_usage u = {.struct_size = sizeof u};
	check(wafer_sync(client), "sync");
	check(wafer_memory_usage_get(client, &u), "usage");
	return u;
}

static int alive(wafer_handle h)
{
	size_t size;
	return wafer_handle_size(client, h, &size) == WAFER_OK;
}

static uint32_t refs(wafer_handle h)
{
	uint32_t count = 0;
	wafer_handle_references(client, h, &count);
	return count;
}

static wafer_handle make(size_t bytes)
{
	wafer_handle h;
	check(wafer_empty(client, bytes, &h), "empty");
	return h;
}

static void check_clean(const char *test)
{
	wafer_memory_usage u = usage();
	ok(u.handles_live == 0 && u.bytes_in_use == 0,
	   "[%s] %s: no handle alive, no byte in use (%" PRIu64 ", %" PRIu64
	   ")",
	   channel, test, u.handles_live, u.bytes_in_use);
}

/* needs(test, kernels..., NULL): client_util.h, on the client under
 * this channel. */
#define needs(...) needs_f32_kernels(client, channel, __VA_ARGS__)

/*===----------------------------------------------------------------------===
 * The loop: a scope per iteration reuses the last iteration's memory
 *===----------------------------------------------------------------------===*/

/* Ten operations on x ([16, 16], x[i] = i - 128), every output a new
 * tensor of the scope; the last, a row sum, is [16, 1]:
 *   row r of the result = sum over its x of (relu(5x) + 1) * x - 2. */
static wafer_status chain(const wafer_tensor *x, wafer_tensor *out)
{
	wafer_tensor t[9];
	const wafer_copy_semantics C = WAFER_ALWAYS_COPY;
	wafer_status s = wafer_op_add(client, x, C, x, C, &t[0]); /* 2x */
	if (s == WAFER_OK)
		s = wafer_op_mul_scalar(client, &t[0], C, 3, &t[1]); /* 6x */
	if (s == WAFER_OK)
		s = wafer_op_sub(client, &t[1], C, x, C, &t[2]); /* 5x */
	if (s == WAFER_OK)
		s = wafer_op_relu(client, &t[2], C, &t[3]);
	if (s == WAFER_OK)
		s = wafer_op_add_scalar(client, &t[3], C, 1, &t[4]);
	if (s == WAFER_OK)
		s = wafer_op_neg(client, &t[4], C, &t[5]);
	if (s == WAFER_OK)
		s = wafer_op_abs(client, &t[5], C, &t[6]); /* relu(5x)+1 */
	if (s == WAFER_OK)
		s = wafer_op_mul(client, &t[6], C, x, C, &t[7]);
	if (s == WAFER_OK)
		s = wafer_op_sub_scalar(client, &t[7], C, 2, &t[8]);
	if (s == WAFER_OK)
		s = wafer_op_reduce_sum(client, &t[8], C, out);
	return s;
}

static float element(int i)
{
	return (float)(i - N / 2);
}

static int chain_right(const wafer_tensor *y)
{
	float got[ROWS];
	if (wafer_tensor_read(client, y, got, sizeof got) != WAFER_OK)
		return 0;
	for (int r = 0; r < ROWS; r++) {
		float want = 0;
		for (int c = 0; c < COLS; c++) {
			float v = element(r * COLS + c);
			want += ((5 * v > 0 ? 5 * v : 0) + 1) * v - 2;
		}
		if (got[r] != want) {
			diag("row %d: got %g, want %g", r, got[r], want);
			return 0;
		}
	}
	return 1;
}

static void test_loop(const char *memory)
{
	if (!needs("loop", "add", "mul_scalar", "sub", "relu", "add_scalar",
		   "neg", "abs", "mul", "sub_scalar", "reduce_sum",
		   (char *)NULL))
		return;
	float data[N];
	uint64_t shape[2] = {ROWS, COLS};
	wafer_tensor x;
	for (int i = 0; i < N; i++)
		data[i] = element(i);
	check(wafer_tensor_create(client, WAFER_DTYPE_F32, 2, shape, data, &x),
	      "create");

	wafer_memory_usage first = {0};
	int right = 1, ended = 1;
	for (int it = 0; it < ITERATIONS; it++) {
		wafer_scope scope;
		wafer_tensor y;
		check(wafer_scope_begin(client, &scope), "scope_begin");
		check(chain(&x, &y), "chain");
		if (it == 0 || it == ITERATIONS - 1)
			right &= chain_right(&y);
		ended &= wafer_scope_end(client, scope) == WAFER_OK;
		if (it == 0)
			first = usage();
	}
	wafer_memory_usage last = usage();

	ok(right && ended, "[%s/%s] loop: the chain reads right in the first "
	   "and the last iteration, every scope ends", channel, memory);
	ok(first.storage_allocs > 0,
	   "[%s/%s] loop: the first iteration took memory from storage "
	   "(%" PRIu64 " allocations)", channel, memory, first.storage_allocs);
	ok(last.storage_allocs == first.storage_allocs &&
	   last.storage_frees == first.storage_frees &&
	   last.storage_maps == first.storage_maps &&
	   last.storage_unmaps == first.storage_unmaps,
	   "[%s/%s] loop: no storage call after the first iteration "
	   "(allocs %" PRIu64 " -> %" PRIu64 ", frees %" PRIu64 " -> %" PRIu64
	   ", maps %" PRIu64 " -> %" PRIu64 ", unmaps %" PRIu64 " -> %" PRIu64
	   ")",
	   channel, memory, first.storage_allocs, last.storage_allocs,
	   first.storage_frees, last.storage_frees, first.storage_maps,
	   last.storage_maps, first.storage_unmaps, last.storage_unmaps);
	ok(last.peak_in_use == first.peak_in_use &&
	   last.peak_reserved == first.peak_reserved,
	   "[%s/%s] loop: the peak is one iteration's (in use %" PRIu64
	   " -> %" PRIu64 ", reserved %" PRIu64 " -> %" PRIu64 ")",
	   channel, memory, first.peak_in_use, last.peak_in_use,
	   first.peak_reserved, last.peak_reserved);
	ok(last.bytes_reserved == first.bytes_reserved &&
	   last.bytes_reserved > last.bytes_in_use,
	   "[%s/%s] loop: the end of a scope keeps the memory cached "
	   "(reserved %" PRIu64 ", in use %" PRIu64 ")",
	   channel, memory, last.bytes_reserved, last.bytes_in_use);
	ok(last.handles_live == 1 && last.bytes_in_use == sizeof data,
	   "[%s/%s] loop: only x is left (%" PRIu64 " handles, %" PRIu64
	   " bytes)", channel, memory, last.handles_live, last.bytes_in_use);
	wafer_tensor_release(client, &x);
	check_clean("loop");
}

/*===----------------------------------------------------------------------===
 * Nesting, retain and keep
 *===----------------------------------------------------------------------===*/

static void test_nested(void)
{
	wafer_scope outer, inner;
	check(wafer_scope_begin(client, &outer), "begin outer");
	wafer_handle a = make(64);
	check(wafer_scope_begin(client, &inner), "begin inner");
	ok(inner.bits != 0 && inner.bits != outer.bits,
	   "[%s] nested: two scopes, two ids", channel);
	wafer_handle b = make(128), c = make(256);
	is_status(wafer_scope_end(client, inner), WAFER_OK,
		  "[%s] nested: the inner scope ends", channel);
	ok(!alive(b) && !alive(c) && alive(a),
	   "[%s]   ... its handles are gone, the outer scope's is not",
	   channel);
	wafer_handle d = make(64);
	is_status(wafer_scope_end(client, outer), WAFER_OK,
		  "[%s] nested: the outer scope ends", channel);
	ok(!alive(a) && !alive(d),
	   "[%s]   ... with its handles, made before and after the inner "
	   "scope", channel);
	check_clean("nested");
}

static void test_retain_keep(void)
{
	wafer_handle before = make(32);
	wafer_scope scope;
	check(wafer_scope_begin(client, &scope), "begin");
	wafer_handle retained = make(64), kept = make(64), temp = make(64);
	check(wafer_retain(client, retained), "retain");
	is_status(wafer_scope_keep(client, scope, kept), WAFER_OK,
		  "[%s] keep: a handle of the scope", channel);
	is_status(wafer_scope_keep(client, scope, kept),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] keep: the same handle again is refused", channel);
	like(wafer_last_error(), "holds no reference",
	     "[%s]   ... the scope holds no reference of it any more",
	     channel);
	is_status(wafer_scope_keep(client, scope, before),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] keep: a handle made before the scope is refused",
		  channel);
	wafer_handle released = make(16);
	check(wafer_release(client, released), "release");
	is_status(wafer_scope_keep(client, scope, released),
		  WAFER_ERROR_INVALID_HANDLE,
		  "[%s] keep: a released handle is INVALID_HANDLE", channel);
	check(wafer_scope_end(client, scope), "end");
	ok(alive(retained) && refs(retained) == 1,
	   "[%s] retain: the retained handle survives with one reference",
	   channel);
	ok(alive(kept) && refs(kept) == 1,
	   "[%s] keep: the kept handle survives with one reference",
	   channel);
	ok(!alive(temp) && alive(before),
	   "[%s] the other temporary is gone, the handle from before stays",
	   channel);
	check(wafer_release(client, retained), "release");
	check(wafer_release(client, kept), "release");
	check(wafer_release(client, before), "release");

	/* Kept out of an inner scope: into the outer one. */
	wafer_scope outer, inner;
	check(wafer_scope_begin(client, &outer), "begin outer");
	check(wafer_scope_begin(client, &inner), "begin inner");
	wafer_handle up = make(64);
	check(wafer_scope_keep(client, inner, up), "keep");
	check(wafer_scope_end(client, inner), "end inner");
	ok(alive(up), "[%s] keep from an inner scope: alive after it",
	   channel);
	check(wafer_scope_end(client, outer), "end outer");
	ok(!alive(up), "[%s]   ... and released with the outer scope",
	   channel);

	/* A handle of the outer scope kept while an inner one is open. */
	check(wafer_scope_begin(client, &outer), "begin outer");
	wafer_handle o = make(64);
	check(wafer_scope_begin(client, &inner), "begin inner");
	is_status(wafer_scope_keep(client, inner, o),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] keep: the inner scope does not hold the outer's handle",
		  channel);
	is_status(wafer_scope_keep(client, outer, o), WAFER_OK,
		  "[%s] keep: the outer scope does, while the inner is open",
		  channel);
	check(wafer_scope_end(client, inner), "end inner");
	check(wafer_scope_end(client, outer), "end outer");
	ok(alive(o), "[%s]   ... kept out of the outermost: the caller's",
	   channel);
	check(wafer_release(client, o), "release");
	check_clean("retain and keep");
}

/*===----------------------------------------------------------------------===
 * Errors
 *===----------------------------------------------------------------------===*/

static void test_order_errors(void)
{
	wafer_scope outer, inner;
	check(wafer_scope_begin(client, &outer), "begin outer");
	check(wafer_scope_begin(client, &inner), "begin inner");
	wafer_handle h = make(64);
	is_status(wafer_scope_end(client, outer), WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] ending the outer scope while the inner is open fails",
		  channel);
	like(wafer_last_error(), "is not the innermost",
	     "[%s]   ... saying it is not the innermost", channel);
	ok(alive(h), "[%s]   ... and releases nothing", channel);
	check(wafer_scope_end(client, inner), "end inner");
	ok(!alive(h), "[%s]   ... the inner scope still ends and releases",
	   channel);
	is_status(wafer_scope_end(client, outer), WAFER_OK,
		  "[%s]   ... then the outer one", channel);
	is_status(wafer_scope_end(client, outer), WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] ending a scope twice fails", channel);
	like(wafer_last_error(), "is not open",
	     "[%s]   ... saying it is not open", channel);
	wafer_scope none = {0};
	is_status(wafer_scope_end(client, none), WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] ending scope 0 fails", channel);
	is_status(wafer_scope_end(NULL, outer), WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] a NULL client fails", channel);
	is_status(wafer_scope_begin(client, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] begin without out_scope fails", channel);
	wafer_scope s = {.bits = 7};
	is_status(wafer_scope_begin(NULL, &s), WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] begin with a NULL client fails", channel);
	is_int((long long)s.bits, 0, "[%s]   ... and clears out_scope",
	       channel);

	/* A scope of one client is no scope of another. */
	wafer_client *other = open_client(channel, NULL);
	check(wafer_scope_begin(client, &s), "begin");
	is_status(wafer_scope_end(other, s), WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] ending a scope on another client fails", channel);
	wafer_handle foreign;
	check(wafer_empty(other, 64, &foreign), "empty other");
	check(wafer_scope_end(client, s), "end");
	uint32_t count = 0;
	check(wafer_handle_references(other, foreign, &count), "references");
	is_int(count, 1, "[%s]   ... and this client's scope does not "
	       "release the other's handle", channel);
	check(wafer_release(other, foreign), "release other");
	check(wafer_client_close(other), "close other");
	check_clean("order and errors");
}

/*===----------------------------------------------------------------------===
 * Released and donated inside the scope
 *===----------------------------------------------------------------------===*/

static void test_released_inside(void)
{
	wafer_scope scope;
	check(wafer_scope_begin(client, &scope), "begin");
	wafer_handle a = make(64), b = make(64);
	check(wafer_release(client, a), "release");
	check(wafer_retain(client, b), "retain");
	check(wafer_release(client, b), "release");
	is_status(wafer_scope_end(client, scope), WAFER_OK,
		  "[%s] released inside: the scope ends without error",
		  channel);
	wafer_memory_usage u = usage();
	ok(u.handles_live == 0,
	   "[%s]   ... a released handle is skipped, a retained and released "
	   "one is dropped once", channel);
	check_clean("released inside");
}

static void test_donated_inside(void)
{
	if (!needs("donated inside", "relu", (char *)NULL))
		return;
	uint64_t n = 64;
	wafer_scope scope;
	wafer_tensor x, y, z;

	/* Made in the scope and donated: the output took its buffer. */
	check(wafer_scope_begin(client, &scope), "begin");
	check(wafer_tensor_empty(client, WAFER_DTYPE_F32, 1, &n, &x), "x");
	check(wafer_op_relu(client, &x, WAFER_DONATE_INPUT, &y), "relu");
	ok(y.handle.bits != x.handle.bits && alive(y.handle) && !alive(x.handle),
	   "[%s] donated inside: the output took the input's buffer", channel);
	is_status(wafer_scope_end(client, scope), WAFER_OK,
		  "[%s]   ... the scope ends without error", channel);
	ok(!alive(y.handle), "[%s]   ... and releases the output", channel);
	check_clean("donated in the scope");

	/* Made before the scope, donated inside: the output is the scope's. */
	check(wafer_tensor_empty(client, WAFER_DTYPE_F32, 1, &n, &x), "x");
	check(wafer_scope_begin(client, &scope), "begin");
	check(wafer_op_relu(client, &x, WAFER_DONATE_INPUT, &y), "relu");
	check(wafer_op_relu(client, &y, WAFER_REUSE_INPUT, &z), "relu");
	ok(z.handle.bits == y.handle.bits && refs(y.handle) == 2,
	   "[%s] reused inside: the output is the input's handle, one "
	   "reference more", channel);
	check(wafer_scope_end(client, scope), "end");
	ok(!alive(x.handle) && !alive(y.handle),
	   "[%s] an output that took a buffer over is the scope's: both of "
	   "its references go", channel);
	check_clean("donated from outside");

	/* Reused inside from outside: the caller's reference stays. */
	check(wafer_tensor_empty(client, WAFER_DTYPE_F32, 1, &n, &x), "x");
	check(wafer_scope_begin(client, &scope), "begin");
	check(wafer_op_relu(client, &x, WAFER_REUSE_INPUT, &y), "relu");
	check(wafer_scope_end(client, scope), "end");
	ok(alive(x.handle) && refs(x.handle) == 1,
	   "[%s] reused from outside: the scope drops the output's reference "
	   "only", channel);
	wafer_tensor_release(client, &x);

	/* Shared when donated: the caller's retain and its donation cancel
	 * out, so the scope's reference is the last one. */
	check(wafer_scope_begin(client, &scope), "begin");
	check(wafer_tensor_empty(client, WAFER_DTYPE_F32, 1, &n, &x), "x");
	check(wafer_retain(client, x.handle), "retain");
	check(wafer_op_relu(client, &x, WAFER_DONATE_INPUT, &y), "relu");
	ok(y.handle.bits != x.handle.bits && refs(x.handle) == 1,
	   "[%s] donated while shared: a new output, the input down to one "
	   "reference", channel);
	is_status(wafer_scope_end(client, scope), WAFER_OK,
		  "[%s]   ... the scope ends without error", channel);
	ok(!alive(x.handle) && !alive(y.handle),
	   "[%s]   ... and drops the last reference of each", channel);
	check_clean("donated while shared");

	/* The in-place idiom on a tensor from outside, kept out. */
	check(wafer_tensor_empty(client, WAFER_DTYPE_F32, 1, &n, &x), "x");
	check(wafer_scope_begin(client, &scope), "begin");
	check(wafer_op_relu(client, &x, WAFER_DONATE_INPUT, &x), "relu");
	check(wafer_scope_keep(client, scope, x.handle), "keep");
	check(wafer_scope_end(client, scope), "end");
	ok(alive(x.handle) && refs(x.handle) == 1,
	   "[%s] op(&x, DONATE, &x) in a scope, kept: x lives on", channel);
	wafer_tensor_release(client, &x);
	check_clean("in place, kept");
}

/*===----------------------------------------------------------------------===
 * Threads
 *===----------------------------------------------------------------------===*/

struct other_thread {
	wafer_scope scope;
	wafer_status end;
	wafer_handle made;
	wafer_status make;
};

static void *try_end(void *arg)
{
	struct other_thread *t = arg;
	t->end = wafer_scope_end(client, t->scope);
	t->make = wafer_empty(client, 64, &t->made);
	return NULL;
}

static void test_threads(void)
{
	struct other_thread t = {0};
	pthread_t thread;

	check(wafer_scope_begin(client, &t.scope), "begin");
	wafer_handle mine = make(64);
	check(wafer_release(client, mine), "release");
	check(wafer_sync(client), "sync"); /* its slot is free again */
	if (pthread_create(&thread, NULL, try_end, &t) != 0) {
		ok(0, "[%s] threads: pthread_create", channel);
		return;
	}
	pthread_join(thread, NULL);
	is_status(t.end, WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] threads: another thread cannot end the scope", channel);
	check(t.make, "empty on the other thread");
	wafer_handle ours = make(64);
	check(wafer_scope_end(client, t.scope), "end");
	ok(alive(t.made) && refs(t.made) == 1,
	   "[%s] threads: another thread's handle (in the slot of one the "
	   "scope saw released) is not the scope's", channel);
	ok(!alive(ours), "[%s]   ... while the scope's own goes", channel);
	check(wafer_release(client, t.made), "release");
	check_clean("threads");
}

/* A thread that exits inside a scope leaves it open; the next thread,
 * which glibc usually gives the same pthread_t, once had its handles
 * join that scope and could end it. Now it can do neither, and the exit
 * is reported. */
struct exiting {
	wafer_scope scope;
	pthread_t self;
};

static void *begin_and_exit(void *arg)
{
	struct exiting *e = arg;
	e->self = pthread_self();
	check(wafer_scope_begin(client, &e->scope), "begin");
	return NULL;
}

static void *successor(void *arg)
{
	struct exiting *e = arg;
	struct other_thread *t = (struct other_thread *)(e + 1);
	bool same = pthread_equal(pthread_self(), e->self);
	if (!same)
		diag("[%s] the successor thread got another pthread_t: the "
		     "case is not reproduced this run", channel);
	t->make = wafer_empty(client, 64, &t->made);
	t->end = wafer_scope_end(client, e->scope);
	return NULL;
}

static void test_thread_exits(void)
{
	struct {
		struct exiting e;
		struct other_thread t;
	} both = {0};
	pthread_t thread;
	struct log_capture cap;
	char text[4096] = "";

	if (!log_capture_begin(&cap))
		return;
	if (pthread_create(&thread, NULL, begin_and_exit, &both.e) == 0)
		pthread_join(thread, NULL);
	log_capture_end(&cap, text, sizeof text);
	like(text, "a thread exited with 1 scope(s) open",
	     "[%s] a thread exiting inside a scope is reported", channel);
	if (pthread_create(&thread, NULL, successor, &both.e) == 0)
		pthread_join(thread, NULL);
	check(both.t.make, "empty on the successor");
	is_status(both.t.end, WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s]   ... a later thread cannot end its scope", channel);
	ok(alive(both.t.made) && refs(both.t.made) == 1,
	   "[%s]   ... nor do its handles join it", channel);
	check(wafer_release(client, both.t.made), "release");
}

/* A client closed with scopes open frees them with its handles. */
static void test_close_open(void)
{
	wafer_client *saved = client;
	wafer_scope scope;
	client = open_client(channel, NULL);
	check(wafer_scope_begin(client, &scope), "begin");
	make(64);
	check(wafer_scope_begin(client, &scope), "begin");
	make(64);
	is_status(wafer_client_close(client), WAFER_OK,
		  "[%s] a client closes with two scopes open", channel);
	client = saved;
}

int main(void)
{
	static const char *const channels[] = {"direct", "mutex", "mpsc"};
	/* The strategies that cache freed memory for good; chunked gives
	 * its free chunks back every so many reserves (its own policy, see
	 * wafer-memory(7)), stream lends them to the driver's pool. */
	static const char *const strategies[] = {"pool", "buckets"};

	check(wafer_runtime_open(NULL, &runtime), "runtime_open");
	for (size_t i = 0; i < sizeof channels / sizeof channels[0]; i++) {
		channel = channels[i];
		for (size_t m = 0; m < sizeof strategies / sizeof *strategies;
		     m++) {
			client = open_client(channel, strategies[m]);
			test_loop(strategies[m]);
			check(wafer_client_close(client), "close");
		}
		/* chunked keeps its free chunks with dealloc = never. */
		wafer_runtime *saved = runtime;
		wafer_option never = {"memory.chunked", "dealloc", "never"};
		wafer_runtime_options options = {.struct_size = sizeof options,
						 .options = &never,
						 .option_count = 1};
		check(wafer_runtime_open(&options, &runtime), "runtime_open");
		client = open_client(channel, "chunked");
		test_loop("chunked, dealloc never");
		check(wafer_client_close(client), "close");
		wafer_runtime_close(runtime);
		runtime = saved;

		client = open_client(channel, NULL);
		test_nested();
		test_retain_keep();
		test_order_errors();
		test_released_inside();
		test_donated_inside();
		/* direct is for one thread at a time. */
		if (strcmp(channel, "direct") != 0) {
			test_threads();
			test_thread_exits();
		}
		test_close_open();
		check(wafer_client_close(client), "close");
	}
	wafer_runtime_close(runtime);
	done_testing();
	return exit_status();
}
