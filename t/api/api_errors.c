/* wafer — SPDX-License-Identifier: MIT
 *
 * api_errors.c: documented argument errors of the client API (wafer.h,
 * ops.h) that no other test reaches, each checked as its header comment
 * and man page state it: the status, the outputs the call sets on
 * failure, wafer_last_error() naming the argument, and no effect — no
 * handle made, no byte reserved, no kernel run, no input lost.
 *
 *  - wafer_execute(3): a binding offset that is not a multiple of the
 *    device's alignment (at least 16 bytes, so 4 never is); params NULL
 *    with a non-zero params_size.
 *  - wafer_memory_usage_get(3), wafer_memory_trim(3): a NULL client, a
 *    NULL out_usage, struct_size 0.
 *  - wafer_client_device(3), wafer_runtime_device(3) and the other calls
 *    that fill a caller's struct: a NULL owner or out, struct_size 0, an
 *    index past the count; on failure the fields inside struct_size are
 *    0 (wafer.h: outputs are 0 on failure), nothing past it is written.
 *  - wafer_handle_size(3): stores 0 in *out_size on every failure.
 *  - wafer_ops(3): a NULL client or input, an unknown operation.
 *
 * Backend-neutral: it opens "default" (WAFER_BACKEND picks another). */
#include "build-config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/ops.h>
#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "t/client_util.h"
#include "t/tap.h"

static wafer_runtime *runtime;
static wafer_client *client;

/* The failed calls since |before| made nothing: no handle, no byte in
 * use or reserved, no storage call. */
static void nothing_changed(const wafer_memory_usage *before,
			    const char *what)
{
	wafer_memory_usage now = usage_now(client);
	ok(now.handles_live == before->handles_live &&
		   now.bytes_in_use == before->bytes_in_use &&
		   now.bytes_reserved == before->bytes_reserved &&
		   now.storage_allocs == before->storage_allocs &&
		   now.storage_frees == before->storage_frees,
	   "%s: no handle, byte or storage call more (handles %" PRIu64
	   " -> %" PRIu64 ", in use %" PRIu64 " -> %" PRIu64
	   ", reserved %" PRIu64 " -> %" PRIu64 ")",
	   what, before->handles_live, now.handles_live,
	   before->bytes_in_use, now.bytes_in_use, before->bytes_reserved,
	   now.bytes_reserved);
}

static wafer_handle create_floats(size_t n, float first, float step)
{
	float *v = malloc(n * sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = first + step * (float)i;
	wafer_handle h;
	check(wafer_create(client, v, n * sizeof *v, &h), "create");
	free(v);
	return h;
}

/* Every one of |n| floats at |offset| bytes of |h| is |want|. */
static int all_equal(wafer_handle h, size_t offset, size_t n, float want)
{
	float *v = malloc(n * sizeof *v);
	int same = wafer_read(client, h, offset, v, n * sizeof *v) == WAFER_OK;
	for (size_t i = 0; same && i < n; i++)
		same = v[i] == want;
	free(v);
	return same;
}

/*===----------------------------------------------------------------------===
 * wafer_execute
 *===----------------------------------------------------------------------===*/

enum { K64 = 64 << 10, FLOATS = K64 / 4 };

static wafer_status relu(wafer_handle out, size_t out_offset,
			 wafer_handle in, size_t in_offset, uint64_t count,
			 const void *params, size_t params_size)
{
	wafer_buffer_binding bindings[2] = {
		{out, out_offset, count * sizeof(float)},
		{in, in_offset, count * sizeof(float)},
	};
	wafer_execute_args args = execute_args_f32(
		WAFER_KERNEL_RELU, bindings, 2, params, params_size, count);
	return wafer_execute(client, &args);
}

static void test_execute(void)
{
	/* in: -8192, -8191, ...; out: 7 everywhere. Two 64 KiB halves. */
	wafer_handle in = create_floats(2 * FLOATS, -8192.0f, 1.0f);
	wafer_handle out = create_floats(2 * FLOATS, 7.0f, 0.0f);
	struct wafer_elementwise_params params = {.count = 64};
	wafer_memory_usage before = usage_now(client);

	/* The launches below are of relu: without it, one skip. */
	wafer_status first = relu(out, 0, in, 4, 64, &params, sizeof params);
	if (first == WAFER_ERROR_NOT_SUPPORTED) {
		ok(1, "# SKIP execute: %s", wafer_last_error());
		check(wafer_release(client, in), "release");
		check(wafer_release(client, out), "release");
		return;
	}
	is_status(first, WAFER_ERROR_INVALID_ARGUMENT,
		  "execute: input binding at offset 4 (inside the handle)");
	like(wafer_last_error(),
	     "binding 1: offset 4 is not a multiple of the device alignment",
	     "  ... detail names the binding, its offset and the rule");
	is_status(relu(out, 36, in, 0, 64, &params, sizeof params),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "execute: output binding at offset 36");
	like(wafer_last_error(), "binding 0: offset 36 is not a multiple",
	     "  ... detail names binding 0");
	is_status(relu(out, 0, in, 0, 64, NULL, sizeof params),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "execute: params NULL with params_size %zu", sizeof params);
	char want[96];
	snprintf(want, sizeof want, "params is NULL with params_size %zu",
		 sizeof params);
	like(wafer_last_error(), want, "  ... detail says so");
	/* "A call that fails a check has no effect." */
	is_status(wafer_sync(client), WAFER_OK,
		  "  ... the failed calls left no error for the sync");
	ok(all_equal(out, 0, 2 * FLOATS, 7.0f),
	   "  ... and no kernel wrote the output");
	nothing_changed(&before, "failed launches");

	/* The counterpart: 64 KiB is a multiple of any device's alignment;
	 * the kernel reads and writes the second halves only. */
	struct wafer_elementwise_params half = {.count = FLOATS};
	is_status(relu(out, K64, in, K64, FLOATS, &half, sizeof half),
		  WAFER_OK, "execute: both bindings at offset 64 KiB");
	float *got = malloc(2 * K64);
	int right = wafer_read(client, out, 0, got, 2 * K64) == WAFER_OK;
	for (size_t i = 0; right && i < 2 * FLOATS; i++) {
		float x = -8192.0f + (float)i;
		right = got[i] == (i < FLOATS ? 7.0f : x > 0 ? x : 0.0f);
	}
	ok(right, "  ... relu of in[16384:] landed in out[16384:], the first "
		  "half untouched");
	free(got);
	check(wafer_release(client, in), "release");
	check(wafer_release(client, out), "release");
}

/*===----------------------------------------------------------------------===
 * wafer_memory_usage_get, wafer_memory_trim
 *===----------------------------------------------------------------------===*/

static void test_memory_calls(void)
{
	/* Something in use and (with a caching strategy) something cached,
	 * so a trim or a stray write would show. */
	wafer_handle kept = create_floats(1024, 1.0f, 0.0f);
	wafer_handle dropped = create_floats(4096, 1.0f, 0.0f);
	check(wafer_release(client, dropped), "release");
	wafer_memory_usage before = usage_now(client);

	wafer_memory_usage u;
	memset(&u, 0x5a, sizeof u);
	u.struct_size = sizeof u;
	is_status(wafer_memory_usage_get(NULL, &u),
		  WAFER_ERROR_INVALID_ARGUMENT, "memory_usage_get(NULL client)");
	like(wafer_last_error(), "wafer_memory_usage_get: client is NULL",
	     "  ... detail names client");
	/* wafer.h: outputs are set on every path, 0 on failure. */
	wafer_memory_usage zero = {.struct_size = sizeof zero};
	ok(!memcmp(&u, &zero, sizeof u), "  ... every counter stored as 0");
	is_status(wafer_memory_usage_get(client, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "memory_usage_get(NULL out_usage)");
	like(wafer_last_error(), "wafer_memory_usage_get: out_usage is NULL",
	     "  ... detail names out_usage");

	/* struct_size 0: refused, and no field past it (none) written. */
	wafer_memory_usage pattern;
	memset(&u, 0x5a, sizeof u);
	u.struct_size = 0;
	memcpy(&pattern, &u, sizeof u);
	is_status(wafer_memory_usage_get(client, &u),
		  WAFER_ERROR_INVALID_ARGUMENT, "memory_usage_get, struct_size 0");
	like(wafer_last_error(), "struct_size is 0",
	     "  ... detail names struct_size");
	ok(!memcmp(&u, &pattern, sizeof u), "  ... nothing written into it");

	is_status(wafer_memory_trim(NULL), WAFER_ERROR_INVALID_ARGUMENT,
		  "memory_trim(NULL client)");
	like(wafer_last_error(), "wafer_memory_trim: client is NULL",
	     "  ... detail names client");
	nothing_changed(&before, "failed memory calls (nothing trimmed)");

	check(wafer_release(client, kept), "release");
}

/*===----------------------------------------------------------------------===
 * Calls that fill a struct: wafer_client_device, wafer_runtime_device,
 * wafer_runtime_plugin, wafer_runtime_config_source
 *===----------------------------------------------------------------------===*/

enum struct_call { CLIENT_DEVICE, RUNTIME_DEVICE, RUNTIME_PLUGIN,
		   CONFIG_SOURCE };
static const char *const struct_call_names[] = {
	"wafer_client_device", "wafer_runtime_device", "wafer_runtime_plugin",
	"wafer_runtime_config_source"};

/* Calls |which| on |out|, with a NULL owner when |null_owner|. */
static wafer_status call_struct(enum struct_call which, int null_owner,
				size_t index, void *out)
{
	const wafer_runtime *rt = null_owner ? NULL : runtime;
	switch (which) {
	case CLIENT_DEVICE:
		return wafer_client_device(null_owner ? NULL : client, out);
	case RUNTIME_DEVICE: return wafer_runtime_device(rt, index, out);
	case RUNTIME_PLUGIN: return wafer_runtime_plugin(rt, index, out);
	case CONFIG_SOURCE: return wafer_runtime_config_source(rt, index, out);
	}
	return WAFER_ERROR_INTERNAL;
}

/* Bytes [from, to) of |p| all equal |value|. */
static int bytes_are(const unsigned char *p, size_t from, size_t to,
		     unsigned char value)
{
	for (size_t i = from; i < to; i++)
		if (p[i] != value)
			return 0;
	return 1;
}

/* A caller's struct inside a larger buffer: struct_size, then a pattern
 * the call may overwrite only inside struct_size. */
enum { PATTERN = 0x5a, BUFFER = 256 };
static void fill_pattern(unsigned char *buf, size_t struct_size)
{
	memset(buf, PATTERN, BUFFER);
	memcpy(buf, &struct_size, sizeof struct_size);
}

static void test_struct_outputs(void)
{
	/* Owners' counts: an index at the count is out of range. */
	const size_t counts[] = {0, wafer_runtime_device_count(runtime),
				 wafer_runtime_plugin_count(runtime),
				 wafer_runtime_config_source_count(runtime)};
	const size_t sizes[] = {sizeof(wafer_device_desc),
				sizeof(wafer_device_desc),
				sizeof(wafer_plugin_report),
				sizeof(wafer_config_source)};
	/* An older caller's struct: struct_size and one 8-byte field. */
	const size_t short_size = sizeof(size_t) + 8;
	unsigned char buf[BUFFER];
	char want[96];

	for (int c = CLIENT_DEVICE; c <= CONFIG_SOURCE; c++) {
		const char *fn = struct_call_names[c];
		const char *owner = c == CLIENT_DEVICE ? "client" : "runtime";
		size_t size = sizes[c];

		fill_pattern(buf, size);
		is_status(call_struct(c, 1, 0, buf),
			  WAFER_ERROR_INVALID_ARGUMENT, "%s, NULL %s", fn,
			  owner);
		snprintf(want, sizeof want, "%s: %s is NULL", fn, owner);
		like(wafer_last_error(), want, "  ... detail names %s", owner);
		ok(bytes_are(buf, sizeof(size_t), size, 0) &&
			   bytes_are(buf, size, BUFFER, PATTERN),
		   "  ... every field stored as 0, nothing past the struct");

		fill_pattern(buf, short_size);
		is_status(call_struct(c, 1, 0, buf),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "%s, NULL %s, a struct_size of %zu", fn, owner,
			  short_size);
		ok(bytes_are(buf, sizeof(size_t), short_size, 0) &&
			   bytes_are(buf, short_size, BUFFER, PATTERN),
		   "  ... its one field stored as 0, nothing past it");

		is_status(call_struct(c, 0, 0, NULL),
			  WAFER_ERROR_INVALID_ARGUMENT, "%s, NULL out", fn);
		like(wafer_last_error(), fn, "  ... detail names the call");

		fill_pattern(buf, 0);
		is_status(call_struct(c, 0, 0, buf),
			  WAFER_ERROR_INVALID_ARGUMENT, "%s, struct_size 0", fn);
		like(wafer_last_error(), "struct_size is 0",
		     "  ... detail names struct_size");
		ok(bytes_are(buf, sizeof(size_t), BUFFER, PATTERN),
		   "  ... nothing written");

		if (c == CLIENT_DEVICE)
			continue;
		fill_pattern(buf, size);
		is_status(call_struct(c, 0, counts[c], buf),
			  WAFER_ERROR_OUT_OF_RANGE, "%s, index %zu of %zu", fn,
			  counts[c], counts[c]);
		ok(bytes_are(buf, sizeof(size_t), size, 0) &&
			   bytes_are(buf, size, BUFFER, PATTERN),
		   "  ... every field stored as 0, nothing past the struct");
	}
}

/*===----------------------------------------------------------------------===
 * wafer_handle_size: 0 on failure
 *===----------------------------------------------------------------------===*/

static void size_fails(wafer_client *c, wafer_handle h, wafer_status want,
		       const char *detail, const char *name)
{
	size_t size = 12345;
	is_status(wafer_handle_size(c, h, &size), want, "handle_size of %s",
		  name);
	like(wafer_last_error(), detail, "  ... detail: '%s'", detail);
	is_int((long long)size, 0, "  ... *out_size is 0");
}

static void test_handle_size(void)
{
	wafer_handle h = create_floats(16, 1.0f, 1.0f);
	wafer_handle null = WAFER_HANDLE_NULL_INIT;
	char detail[128];

	size_fails(NULL, h, WAFER_ERROR_INVALID_ARGUMENT,
		   "wafer_handle_size: client is NULL", "a NULL client");
	size_fails(client, null, WAFER_ERROR_INVALID_HANDLE, "null handle",
		   "the null handle");

	/* Another client's handle. */
	wafer_client *other;
	check(wafer_client_open(runtime, "default", NULL, &other), "open");
	wafer_handle theirs;
	check(wafer_empty(other, 64, &theirs), "empty");
	size_fails(client, theirs, WAFER_ERROR_INVALID_HANDLE,
		   "belongs to another client", "another client's handle");
	check(wafer_release(other, theirs), "release");
	check(wafer_client_close(other), "close");

	/* Donated to an operation: WAFER_ERROR_DONATED naming it. */
	const uint64_t n = 16;
	wafer_tensor x = wafer_tensor_view(h, WAFER_DTYPE_F32, 1, &n), y;
	wafer_status neg = wafer_op_neg(client, &x, WAFER_DONATE_INPUT, &y);
	if (neg == WAFER_ERROR_NOT_SUPPORTED) {
		/* A device without the kernel: a skip, not the test's end. */
		for (int i = 0; i < 4; i++)
			ok(1, "# SKIP no neg kernel to donate a handle to: %s",
			   wafer_last_error());
		check(wafer_release(client, h), "release");
		y.handle = h;
	} else {
		check(neg, "neg");
		snprintf(detail, sizeof detail,
			 "handle 0x%016" PRIx64 " was donated", h.bits);
		size_fails(client, h, WAFER_ERROR_DONATED, detail,
			   "a handle donated to neg");
		like(wafer_last_error(), "neg", "  ... naming the operation");
		/* Released: use after the last release. */
		check(wafer_tensor_release(client, &y), "release");
	}
	snprintf(detail, sizeof detail,
		 "handle 0x%016" PRIx64 " was released", y.handle.bits);
	size_fails(client, y.handle, WAFER_ERROR_INVALID_HANDLE, detail,
		   "a released handle");

	wafer_handle live = create_floats(3, 0.0f, 0.0f);
	is_status(wafer_handle_size(client, live, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "handle_size with NULL out_size");
	like(wafer_last_error(), "out_size is NULL", "  ... detail names it");
	size_t size = 0;
	is_status(wafer_handle_size(client, live, &size), WAFER_OK,
		  "handle_size of a live handle");
	is_int((long long)size, 3 * sizeof(float), "  ... its size, 12");
	check(wafer_release(client, live), "release");
}

/*===----------------------------------------------------------------------===
 * Operations: NULL client or input, unknown operation
 *===----------------------------------------------------------------------===*/

static const wafer_tensor null_tensor;

static void op_fails(wafer_status status, const wafer_tensor *out,
		     const char *detail, const char *name)
{
	is_status(status, WAFER_ERROR_INVALID_ARGUMENT, "%s", name);
	like(wafer_last_error(), detail, "  ... detail: '%s'", detail);
	ok(!memcmp(out, &null_tensor, sizeof *out),
	   "  ... *out is a null tensor");
}

static void test_ops(void)
{
	const uint64_t shape[2] = {2, 3};
	const float data[6] = {1, -2, 3, -4, 5, -6};
	wafer_tensor a, b, out;
	check(wafer_tensor_create(client, WAFER_DTYPE_F32, 2, shape, data, &a),
	      "create");
	check(wafer_tensor_create(client, WAFER_DTYPE_F32, 2, shape, data, &b),
	      "create");
	wafer_memory_usage before = usage_now(client);

	/* Inputs are offered with DONATE_INPUT where they can be: a failed
	 * call must not take them. */
	memset(&out, 0xa5, sizeof out);
	op_fails(wafer_op_add(NULL, &a, WAFER_DONATE_INPUT, &b,
			      WAFER_ALWAYS_COPY, &out),
		 &out, "add: client is NULL", "add with a NULL client");
	memset(&out, 0xa5, sizeof out);
	op_fails(wafer_op_add(client, &a, WAFER_DONATE_INPUT, NULL,
			      WAFER_ALWAYS_COPY, &out),
		 &out, "add: input b is NULL", "add with a NULL b");
	memset(&out, 0xa5, sizeof out);
	op_fails(wafer_op_matmul(client, NULL, WAFER_ALWAYS_COPY, &b,
				 WAFER_DONATE_INPUT, 0, &out),
		 &out, "matmul: input a is NULL", "matmul with a NULL a");
	memset(&out, 0xa5, sizeof out);
	op_fails(wafer_op_softmax(NULL, &a, WAFER_DONATE_INPUT, &out), &out,
		 "softmax: client is NULL", "softmax with a NULL client");
	memset(&out, 0xa5, sizeof out);
	op_fails(wafer_op_exp(NULL, &a, WAFER_DONATE_INPUT, &out), &out,
		 "exp: client is NULL", "exp with a NULL client");
	memset(&out, 0xa5, sizeof out);
	op_fails(wafer_op_fill(NULL, WAFER_DTYPE_F32, 2, shape, 1.0, &out),
		 &out, "client is NULL", "fill with a NULL client");
	memset(&out, 0xa5, sizeof out);
	op_fails(wafer_op_binary(client, (wafer_binary_op)99, &a,
				 WAFER_DONATE_INPUT, &b, WAFER_ALWAYS_COPY,
				 &out),
		 &out, "wafer_op_binary: unknown operation 99",
		 "wafer_op_binary with operation 99");
	memset(&out, 0xa5, sizeof out);
	/* One past the catalogue's last binary operation and reduction. */
	int past = CATALOGUE_COUNT(catalogue_binary);
	char detail[64], name[96];
	snprintf(detail, sizeof detail, "unknown operation %d", past);
	snprintf(name, sizeof name, "wafer_op_binary_scalar with operation %d",
		 past);
	op_fails(wafer_op_binary_scalar(client, (wafer_binary_op)past, &a,
					WAFER_DONATE_INPUT, 2.0, 0, &out),
		 &out, detail, name);
	memset(&out, 0xa5, sizeof out);
	past = CATALOGUE_COUNT(catalogue_reduce);
	snprintf(detail, sizeof detail, "unknown operation %d", past);
	snprintf(name, sizeof name, "wafer_op_reduce with operation %d", past);
	op_fails(wafer_op_reduce(client, (wafer_reduce_op)past, &a,
				 WAFER_DONATE_INPUT, &out),
		 &out, detail, name);

	/* "A failure found before anything was queued leaves every input
	 * as it was, donated ones included." */
	uint32_t refs_a = 0, refs_b = 0;
	is_status(wafer_handle_references(client, a.handle, &refs_a), WAFER_OK,
		  "a is still live");
	is_status(wafer_handle_references(client, b.handle, &refs_b), WAFER_OK,
		  "b is still live");
	ok(refs_a == 1 && refs_b == 1, "  ... each with its one reference");
	float back[6];
	ok(wafer_tensor_read(client, &a, back, sizeof back) == WAFER_OK &&
		   !memcmp(back, data, sizeof data),
	   "  ... and a's elements unchanged");
	nothing_changed(&before, "failed operations");
	check(wafer_tensor_release(client, &a), "release");
	check(wafer_tensor_release(client, &b), "release");
}

int main(void)
{
	open_default(NULL, &runtime, &client);

	test_execute();
	test_memory_calls();
	test_struct_outputs();
	test_handle_size();
	test_ops();

	ok_clean(client, "at the end");
	close_default(runtime, client);
	done_testing();
	return exit_status();
}
