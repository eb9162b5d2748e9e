/* wafer — SPDX-License-Identifier: MIT
 *
 * donation.c: the copy semantics of ops.h, rule by rule — ALWAYS_COPY,
 * REUSE_INPUT (in place only for the only reference and a fitting view),
 * DONATE_INPUT (the buffer moves to the output; a shared or unfitting
 * input still gives the caller's reference up, with a debug line saying
 * why) — and the errors: using a donated handle, donating one handle twice
 * in a call, donating a handle the call also reads undonated. Reference
 * counts and bytes in use are checked after every step and are back to
 * zero at the end of every test; the rules run on every channel, and a
 * donation races concurrent retains of the same handle.
 *
 * Backend-neutral: the default device (WAFER_BACKEND picks another). A
 * test whose f32 kernels the backend lacks is reported as one skip naming
 * them (a vendor's plugin with a few kernels still gets a plan). */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wafer/ops.h>
#include <wafer/wafer.h>

#include "t/catalogue.h"
#include "t/client_util.h"
#include "t/tap.h"

#define N 1000
#define BYTES (N * sizeof(float))

static wafer_runtime *runtime;
static wafer_client *client;
static const char *channel = "default";

static wafer_client *open_client(const char *name)
{
	wafer_client *c;
	wafer_client_options options = {.struct_size = sizeof options,
					 .channel = name};
	check(wafer_client_open(runtime, "default", &options, &c),
	      "client_open");
	return c;
}

static uint64_t in_use(void)
{
	wafer_memory_usage usage = {.struct_size = sizeof usage};
	check(wafer_memory_usage_get(client, &usage), "usage");
	return usage.bytes_in_use;
}

static uint64_t live(void)
{
	wafer_memory_usage usage = {.struct_size = sizeof usage};
	check(wafer_memory_usage_get(client, &usage), "usage");
	return usage.handles_live;
}

static uint32_t refs(wafer_handle h)
{
	uint32_t count = 0;
	wafer_handle_references(client, h, &count);
	return count;
}

/* x[i] = i - N/2: relu and neg change half of it. */
static wafer_tensor make(float scale)
{
	float data[N];
	uint64_t n = N;
	wafer_tensor t;
	for (int i = 0; i < N; i++)
		data[i] = (float)(i - N / 2) * scale;
	check(wafer_tensor_create(client, WAFER_DTYPE_F32, 1, &n, data, &t),
	      "create");
	return t;
}

/* Whether |t| holds f(i - N/2) for every i. */
static int holds(const wafer_tensor *t, float (*f)(float))
{
	float data[N];
	if (wafer_tensor_read(client, t, data, sizeof data) != WAFER_OK)
		return 0;
	for (int i = 0; i < N; i++)
		if (data[i] != f((float)(i - N / 2)))
			return 0;
	return 1;
}

static float same(float x) { return x; }
static float relu(float x) { return x > 0 ? x : 0; }
static float twice(float x) { return 2 * x; }
static float relu_twice(float x) { return x > 0 ? 2 * x : 0; }

/* needs(c, test, kernels..., NULL): client_util.h, under this channel. */
#define needs(c, ...) needs_f32_kernels(c, channel, __VA_ARGS__)

static void check_clean(const char *test)
{
	check(wafer_sync(client), "sync");
	ok(live() == 0 && in_use() == 0,
	   "[%s] %s: no handle alive, no byte in use (%" PRIu64 ", %" PRIu64
	   ")",
	   channel, test, live(), in_use());
}

/*===----------------------------------------------------------------------===
 * ALWAYS_COPY and REUSE_INPUT
 *===----------------------------------------------------------------------===*/

static void test_always_copy(void)
{
	if (!needs(client, "always copy", "relu", (char *)NULL))
		return;
	wafer_tensor x = make(1), y;

	check(wafer_op_relu(client, &x, WAFER_ALWAYS_COPY, &y), "relu");
	ok(y.handle.bits != x.handle.bits, "ALWAYS_COPY: a new handle");
	ok(holds(&x, same) && holds(&y, relu), "  ... input kept, output right");
	is_int(refs(x.handle), 1, "  ... input keeps one reference");
	is_int((long long)in_use(), 2 * BYTES, "  ... two buffers in use");
	wafer_tensor_release(client, &x);
	wafer_tensor_release(client, &y);
	check_clean("always copy");
}

static void test_reuse(void)
{
	if (!needs(client, "reuse", "relu", "mul_scalar", "neg",
		   "mul", "sub_strided", (char *)NULL))
		return;
	wafer_tensor x = make(1), y;

	check(wafer_op_relu(client, &x, WAFER_REUSE_INPUT, &y), "relu");
	ok(y.handle.bits == x.handle.bits,
	   "REUSE_INPUT, only reference: the output is the input's handle");
	is_int(refs(x.handle), 2, "  ... with one more reference");
	is_int((long long)in_use(), BYTES, "  ... one buffer in use");
	ok(holds(&y, relu), "  ... written in place");
	wafer_tensor_release(client, &x);
	is_int(refs(y.handle), 1, "  ... releasing the input leaves the output");
	ok(holds(&y, relu), "  ... which still reads right");

	/* Shared: the input must not change. */
	check(wafer_retain(client, y.handle), "retain");
	wafer_tensor z;
	check(wafer_op_mul_scalar(client, &y, WAFER_REUSE_INPUT, 2.0, &z),
	      "mul_scalar");
	ok(z.handle.bits != y.handle.bits,
	   "REUSE_INPUT, two references: a new buffer");
	ok(holds(&y, relu) && holds(&z, relu_twice),
	   "  ... the shared input is untouched");
	is_int(refs(y.handle), 2, "  ... and keeps both references");
	wafer_release(client, y.handle);
	wafer_release(client, y.handle);
	wafer_tensor_release(client, &z);

	/* A view that does not fit: a slice of the input. */
	x = make(1);
	wafer_tensor half;
	check(wafer_tensor_slice(&x, 0, 0, N / 2, &half), "slice");
	check(wafer_op_neg(client, &half, WAFER_REUSE_INPUT, &z), "neg");
	ok(z.handle.bits != x.handle.bits,
	   "REUSE_INPUT of a slice: a new buffer");
	ok(holds(&x, same), "  ... the input is untouched");
	wafer_tensor_release(client, &z);

	/* The same dense view twice (x * x) may be written in place. */
	check(wafer_op_mul(client, &x, WAFER_REUSE_INPUT, &x,
			   WAFER_REUSE_INPUT, &z),
	      "mul");
	ok(z.handle.bits == x.handle.bits, "x * x with REUSE_INPUT: in place");
	float data[N];
	check(wafer_tensor_read(client, &z, data, sizeof data), "read");
	int good = 1;
	for (int i = 0; i < N; i++)
		good &= data[i] == (float)(i - N / 2) * (float)(i - N / 2);
	ok(good, "  ... and right");
	wafer_tensor_release(client, &z);

	/* A different view of the same handle in the call: no reuse. */
	wafer_tensor rev = x;
	rev.strided = 1;
	rev.strides[0] = 0; /* a broadcast of element 0 */
	check(wafer_op_sub(client, &x, WAFER_REUSE_INPUT, &rev,
			   WAFER_ALWAYS_COPY, &z),
	      "sub");
	ok(z.handle.bits != x.handle.bits,
	   "REUSE_INPUT while another view of the handle is read: a copy");
	wafer_tensor_release(client, &z);
	wafer_tensor_release(client, &x);
	check_clean("reuse");
}

/*===----------------------------------------------------------------------===
 * DONATE_INPUT
 *===----------------------------------------------------------------------===*/

static void test_donate(void)
{
	if (!needs(client, "donate", "relu", "neg", "fill", (char *)NULL))
		return;
	wafer_tensor x = make(1), y;
	wafer_handle old = x.handle;

	check(wafer_op_relu(client, &x, WAFER_DONATE_INPUT, &y), "relu");
	ok(y.handle.bits != old.bits, "DONATE_INPUT: the output has a new handle");
	is_int((long long)in_use(), BYTES, "  ... on the input's memory");
	is_int(live(), 1, "  ... one handle alive");
	is_int(refs(y.handle), 1, "  ... holding one reference");
	ok(holds(&y, relu), "  ... written in place");

	float v;
	is_status(wafer_read(client, old, 0, &v, sizeof v), WAFER_ERROR_DONATED,
		  "reading the donated handle: WAFER_ERROR_DONATED");
	like(wafer_last_error(), "donated to relu", "  ... naming the operation");
	is_status(wafer_write(client, old, 0, &v, sizeof v),
		  WAFER_ERROR_DONATED, "writing it");
	is_status(wafer_retain(client, old), WAFER_ERROR_DONATED, "retaining it");
	is_status(wafer_release(client, old), WAFER_ERROR_DONATED,
		  "releasing it");
	size_t size;
	is_status(wafer_handle_size(client, old, &size), WAFER_ERROR_DONATED,
		  "asking its size");
	wafer_tensor z;
	is_status(wafer_op_neg(client, &x, WAFER_ALWAYS_COPY, &z),
		  WAFER_ERROR_DONATED, "passing it to an operation");
	like(wafer_last_error(), "donated to relu", "  ... naming relu");
	is_status(wafer_op_neg(client, &x, WAFER_DONATE_INPUT, &z),
		  WAFER_ERROR_DONATED, "donating it again");
	is_status(fill_floats(client, old, N, 1.0), WAFER_ERROR_DONATED,
		  "executing a kernel on it");
	uint32_t count = 7;
	is_status(wafer_handle_references(client, old, &count),
		  WAFER_ERROR_DONATED, "counting its references");
	is_int(count, 0, "  ... count 0");
	ok(holds(&y, relu), "the output is unharmed by all that");

	/* A chain: every step in the same buffer. */
	for (int i = 0; i < 10; i++)
		check(wafer_op_relu(client, &y, WAFER_DONATE_INPUT, &y),
		      "chain");
	is_int((long long)in_use(), BYTES,
	       "ten relu with DONATE_INPUT (out == &in): still one buffer");
	ok(holds(&y, relu), "  ... right");
	/* The first handle, eleven donations back, is still DONATED. */
	is_status(wafer_read(client, old, 0, &v, sizeof v), WAFER_ERROR_DONATED,
		  "after a chain of donations, the first handle: DONATED");
	like(wafer_last_error(), "donated on, last to relu",
	     "  ... saying its result was donated on: %s", wafer_last_error());
	wafer_tensor_release(client, &y);
	is_status(wafer_read(client, old, 0, &v, sizeof v), WAFER_ERROR_DONATED,
		  "  ... and after the last result's release");
	like(wafer_last_error(), "then released", "  ... saying so: %s",
	     wafer_last_error());
	check_clean("donate");
}

/* Output that cannot take the buffer over: the input is still given up,
 * after the work that reads it, and reports the donation. */
static void test_donate_unfit(void)
{
	if (!needs(client, "donate unfit", "reduce_sum", "matmul", (char *)NULL))
		return;
	wafer_tensor x = make(1), s;
	wafer_handle old = x.handle;

	check(wafer_op_reduce_sum(client, &x, WAFER_DONATE_INPUT, &s), "sum");
	is_int(live(), 1, "DONATE_INPUT to a reduction: only the output lives");
	is_int((long long)in_use(), sizeof(float), "  ... 4 bytes in use");
	float v;
	check(wafer_tensor_read(client, &s, &v, sizeof v), "read");
	is_int((long long)v, -N / 2, "  ... and the sum was taken before");
	float w;
	is_status(wafer_read(client, old, 0, &w, sizeof w), WAFER_ERROR_DONATED,
		  "  ... the input reports the donation");
	like(wafer_last_error(), "donated to reduce_sum", "  ... to reduce_sum");
	wafer_tensor_release(client, &s);

	/* matmul never writes over its inputs: both go after the product. */
	uint64_t sa[2] = {20, 50}, sb[2] = {50, 20};
	wafer_tensor a = make(0.01f), b = make(0.01f), c;
	check(wafer_tensor_reshape(&a, 2, sa, &a), "reshape");
	check(wafer_tensor_reshape(&b, 2, sb, &b), "reshape");
	wafer_handle ha = a.handle, hb = b.handle;
	check(wafer_op_matmul(client, &a, WAFER_DONATE_INPUT, &b,
			      WAFER_DONATE_INPUT, 0, &c),
	      "matmul");
	is_int(live(), 1, "DONATE_INPUT to matmul: only the product lives");
	is_int((long long)in_use(), 20 * 20 * sizeof(float),
	       "  ... its bytes in use");
	is_status(wafer_retain(client, ha), WAFER_ERROR_DONATED,
		  "  ... a reports the donation");
	is_status(wafer_retain(client, hb), WAFER_ERROR_DONATED,
		  "  ... b too");
	/* The memory goes to the next reservation; the product must be
	 * untouched by that. */
	wafer_tensor again = make(5), more = make(7);
	float p[400];
	check(wafer_tensor_read(client, &c, p, sizeof p), "read");
	double want = 0;
	for (int k = 0; k < 50; k++)
		want += (double)((k - N / 2) * 0.01f) *
			(double)((k * 20 - N / 2) * 0.01f);
	ok(p[0] > want - 1e-3 && p[0] < want + 1e-3,
	   "  ... product right after the memory was reused (%g, %g)", p[0],
	   want);
	wafer_tensor_release(client, &again);
	wafer_tensor_release(client, &more);
	wafer_tensor_release(client, &c);
	check_clean("donate unfit");
}

/* Shared: only the caller's reference goes; the others keep the buffer,
 * untouched. */
static void test_donate_shared(void)
{
	if (!needs(client, "donate shared", "relu", (char *)NULL))
		return;
	wafer_tensor x = make(1), y;

	check(wafer_retain(client, x.handle), "retain"); /* someone else's */
	check(wafer_op_relu(client, &x, WAFER_DONATE_INPUT, &y), "relu");
	ok(y.handle.bits != x.handle.bits, "DONATE_INPUT, shared: a new buffer");
	is_int(refs(x.handle), 1, "  ... the caller's reference was dropped");
	ok(holds(&x, same), "  ... the other holder's data is untouched");
	ok(holds(&y, relu), "  ... the output is right");
	is_int((long long)in_use(), 2 * BYTES, "  ... two buffers in use");
	wafer_tensor_release(client, &x); /* the other holder's */
	wafer_tensor_release(client, &y);
	check_clean("donate shared");
}

/* Binary operations reuse whichever operand is donated and fits. */
static void test_binary_donation(void)
{
	if (!needs(client, "binary donation", "add", "mul_strided", (char *)NULL))
		return;
	wafer_tensor a = make(1), b = make(1), c;
	wafer_handle ha = a.handle, hb = b.handle;

	check(wafer_op_add(client, &a, WAFER_ALWAYS_COPY, &b,
			   WAFER_DONATE_INPUT, &c),
	      "add");
	is_int((long long)in_use(), 2 * BYTES,
	       "add(a, donated b): the output takes b's buffer");
	ok(holds(&a, same) && holds(&c, twice), "  ... a kept, sum right");
	is_status(wafer_retain(client, hb), WAFER_ERROR_DONATED,
		  "  ... b reports the donation");
	like(wafer_last_error(), "donated to add", "  ... to add");
	wafer_tensor_release(client, &c);

	/* Both donated: a's buffer is reused, b is dropped after. */
	b = make(1);
	hb = b.handle;
	check(wafer_op_add(client, &a, WAFER_DONATE_INPUT, &b,
			   WAFER_DONATE_INPUT, &c),
	      "add both");
	is_int(live(), 1, "add(donated a, donated b): one handle left");
	is_int((long long)in_use(), BYTES, "  ... one buffer");
	ok(holds(&c, twice), "  ... right");
	is_status(wafer_retain(client, ha), WAFER_ERROR_DONATED, "  ... a gone");
	is_status(wafer_retain(client, hb), WAFER_ERROR_DONATED, "  ... b gone");
	wafer_tensor_release(client, &c);

	/* Broadcast: the small operand cannot hold the output, the big one
	 * can, whichever side it is on. */
	uint64_t one = 1;
	float two = 2;
	wafer_tensor s;
	check(wafer_tensor_create(client, WAFER_DTYPE_F32, 1, &one, &two, &s),
	      "scalar tensor");
	b = make(1);
	hb = b.handle;
	check(wafer_op_mul(client, &s, WAFER_DONATE_INPUT, &b,
			   WAFER_DONATE_INPUT, &c),
	      "mul broadcast");
	is_int(live(), 1, "mul([1] donated, [N] donated): one handle left");
	is_int((long long)in_use(), BYTES, "  ... b's buffer holds the output");
	ok(holds(&c, twice), "  ... right");
	wafer_tensor_release(client, &c);
	check_clean("binary donation");
}

/* copy launches no kernel when the output may take the buffer (the
 * operation still looks its kernel up first). */
static void test_copy_donation(void)
{
	if (!needs(client, "copy donation", "copy", (char *)NULL))
		return;
	wafer_tensor x = make(1), y;

	check(wafer_op_copy(client, &x, WAFER_DONATE_INPUT, &y), "copy");
	is_int((long long)in_use(), BYTES, "copy with DONATE_INPUT: no new buffer");
	ok(holds(&y, same), "  ... same contents");
	wafer_tensor z;
	check(wafer_op_copy(client, &y, WAFER_REUSE_INPUT, &z), "copy");
	ok(z.handle.bits == y.handle.bits,
	   "copy with REUSE_INPUT: the input's own handle");
	wafer_tensor_release(client, &y);
	wafer_tensor_release(client, &z);
	check_clean("copy donation");
}

/*===----------------------------------------------------------------------===
 * Errors
 *===----------------------------------------------------------------------===*/

static void test_rule_errors(void)
{
	if (!needs(client, "rule errors", "add", "mul", "matmul", (char *)NULL))
		return;
	wafer_tensor x = make(1), out = {.handle = {12345}};

	is_status(wafer_op_add(client, &x, WAFER_DONATE_INPUT, &x,
			       WAFER_DONATE_INPUT, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "donating one handle twice");
	like(wafer_last_error(), "donated twice", "  ... says so");
	ok(wafer_handle_is_null(out.handle), "  ... out is null");
	is_status(wafer_op_add(client, &x, WAFER_DONATE_INPUT, &x,
			       WAFER_ALWAYS_COPY, &out),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "donating a and reading the same handle as b");
	like(wafer_last_error(), "also passed as input b",
	     "  ... names the other input");
	is_status(wafer_op_mul(client, &x, WAFER_REUSE_INPUT, &x,
			       WAFER_DONATE_INPUT, &out),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "donating b and reusing the same handle as a");
	wafer_tensor half;
	check(wafer_tensor_slice(&x, 0, 0, 10, &half), "slice");
	is_status(wafer_op_matmul(client, &x, WAFER_ALWAYS_COPY, &half,
				  WAFER_DONATE_INPUT, 0, &out),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "donating a view whose handle another input reads");
	is_int(refs(x.handle), 1, "after the errors: the reference is intact");
	ok(holds(&x, same), "  ... and the contents");
	is_int(live(), 1, "  ... nothing leaked");

	/* Failures before the launch leave a donated input alone. */
	uint64_t s7 = 7;
	wafer_tensor seven;
	float d7[7] = {0};
	check(wafer_tensor_create(client, WAFER_DTYPE_F32, 1, &s7, d7, &seven),
	      "create");
	is_status(wafer_op_add(client, &x, WAFER_DONATE_INPUT, &seven,
			       WAFER_DONATE_INPUT, &out),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "shapes that do not broadcast, both donated");
	ok(refs(x.handle) == 1 && refs(seven.handle) == 1,
	   "  ... both inputs keep their reference");
	wafer_tensor_release(client, &seven);
	wafer_tensor_release(client, &x);
	check_clean("rule errors");
}

/*===----------------------------------------------------------------------===
 * Order and debug log
 *===----------------------------------------------------------------------===*/

/* On a queueing channel the in-place write must come after the work
 * queued before it that reads the same buffer. */
static void test_order(void)
{
	if (!needs(client, "order", "mul_scalar", "neg", (char *)NULL))
		return;
	int round, right = 1;
	for (round = 0; round < 20 && right; round++) {
		wafer_tensor x = make(1), y, z;
		check(wafer_op_mul_scalar(client, &x, WAFER_ALWAYS_COPY, 2.0,
					  &y),
		      "mul");
		check(wafer_op_neg(client, &x, WAFER_DONATE_INPUT, &z), "neg");
		check(wafer_op_neg(client, &z, WAFER_DONATE_INPUT, &z), "neg");
		right = holds(&y, twice) && holds(&z, same);
		wafer_tensor_release(client, &y);
		wafer_tensor_release(client, &z);
	}
	ok(right, "[%s] queued reads see the input before the in-place "
	   "write (%d of 20 rounds right)", channel, right ? round : round - 1);
	check_clean("order");
}

/* The debug log says why a donation could not be used. */
static void test_debug_log(void)
{
	char path[] = "/tmp/wafer-donation-log.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		ok(0, "debug log: mkstemp %s: %s", path, strerror(errno));
		return;
	}
	wafer_runtime *rt;
	wafer_option option = {"core", "log", "debug"};
	wafer_runtime_options options = {.struct_size = sizeof options,
					 .options = &option,
					 .option_count = 1};
	check(wafer_runtime_open(&options, &rt), "runtime_open debug");
	wafer_client *c;
	check(wafer_client_open(rt, "default", NULL, &c), "client_open");
	if (!needs(c, "debug log", "relu", "reduce_max", (char *)NULL)) {
		wafer_client_close(c);
		wafer_runtime_close(rt);
		close(fd);
		unlink(path);
		return;
	}

	fflush(stderr);
	int saved = dup(2);
	dup2(fd, 2);
	uint64_t n = 4;
	float data[4] = {1, -2, 3, -4};
	wafer_tensor x, y, s;
	check(wafer_tensor_create(c, WAFER_DTYPE_F32, 1, &n, data, &x),
	      "create");
	check(wafer_retain(c, x.handle), "retain");
	check(wafer_op_relu(c, &x, WAFER_DONATE_INPUT, &y), "relu");
	check(wafer_op_reduce_max(c, &y, WAFER_DONATE_INPUT, &s), "max");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);

	char text[4096];
	lseek(fd, 0, SEEK_SET);
	ssize_t got = read(fd, text, sizeof text - 1);
	text[got > 0 ? got : 0] = '\0';
	close(fd);
	unlink(path);
	like(text, "relu: DONATE_INPUT input x", "debug log names op and input");
	like(text, "the handle is shared", "  ... shared: why");
	like(text, "cannot write over this input",
	     "  ... a reduction: why");
	like(text, "released after the operation", "  ... and what happens");
	wafer_release(c, x.handle);
	wafer_release(c, s.handle);
	wafer_memory_usage usage = {.struct_size = sizeof usage};
	wafer_memory_usage_get(c, &usage);
	ok(usage.handles_live == 0 && usage.bytes_in_use == 0,
	   "debug log client: clean");
	wafer_client_close(c);
	wafer_runtime_close(rt);
}

/*===----------------------------------------------------------------------===
 * Donation against concurrent retains
 *===----------------------------------------------------------------------===*/

struct race {
	wafer_client *client;
	wafer_handle handle;
	pthread_barrier_t *start;
	wafer_status status;
};

static void *retainer(void *arg)
{
	struct race *r = arg;
	pthread_barrier_wait(r->start);
	r->status = wafer_retain(r->client, r->handle);
	return NULL;
}

static void test_race(void)
{
	if (!needs(client, "race", "relu", (char *)NULL))
		return;
	int retained = 0, donated_first = 0, broken = 0;
	pthread_barrier_t start;

	for (int round = 0; round < 400; round++) {
		wafer_tensor x = make(1), y;
		struct race r = {client, x.handle, &start, WAFER_OK};
		pthread_t thread;
		pthread_barrier_init(&start, NULL, 2);
		pthread_create(&thread, NULL, retainer, &r);
		pthread_barrier_wait(&start);
		wafer_status status =
			wafer_op_relu(client, &x, WAFER_DONATE_INPUT, &y);
		pthread_join(thread, NULL);
		pthread_barrier_destroy(&start);
		if (status != WAFER_OK) {
			broken++;
			continue;
		}
		if (r.status == WAFER_OK) {
			/* The retain came first: the buffer was shared, so
			 * it must be untouched and singly held now. */
			retained++;
			if (y.handle.bits == x.handle.bits ||
			    refs(x.handle) != 1 || !holds(&x, same))
				broken++;
			wafer_release(client, x.handle);
		} else {
			donated_first++;
			if (r.status != WAFER_ERROR_DONATED)
				broken++;
		}
		if (!holds(&y, relu))
			broken++;
		wafer_tensor_release(client, &y);
	}
	ok(broken == 0,
	   "donation vs a concurrent retain: one of them wins, cleanly "
	   "(%d retained first, %d donated first)",
	   retained, donated_first);
	check_clean("race");
}

static void run_all(void)
{
	test_always_copy();
	test_reuse();
	test_donate();
	test_donate_unfit();
	test_donate_shared();
	test_binary_donation();
	test_copy_donation();
	test_rule_errors();
	test_order();
	test_race();
}

int main(void)
{
	static const char *const channels[] = {"direct", "mutex", "mpsc"};

	check(wafer_runtime_open(NULL, &runtime), "runtime_open");
	client = open_client(NULL);
	run_all();
	check(wafer_client_close(client), "close");
	for (size_t i = 0; i < sizeof channels / sizeof channels[0]; i++) {
		channel = channels[i];
		client = open_client(channel);
		if (strcmp(channel, "direct") == 0) {
			/* direct is for one thread: no race test there. */
			test_always_copy();
			test_reuse();
			test_donate();
			test_donate_unfit();
			test_donate_shared();
			test_binary_donation();
			test_copy_donation();
			test_rule_errors();
			test_order();
		} else {
			run_all();
		}
		check(wafer_client_close(client), "close");
	}
	channel = "default";
	test_debug_log();
	wafer_runtime_close(runtime);
	done_testing();
	return exit_status();
}
