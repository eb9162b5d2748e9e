/* wafer — SPDX-License-Identifier: MIT
 *
 * interop.c: native handles out and in (interop.h, wafer-interop(7)), on
 * every channel. A handle's native buffer imported as a second handle
 * shares its bytes both ways; on a host-pointer device the bytes are also
 * read and written through the pointer itself. An imported buffer's
 * release callback runs exactly once (counted): after the last release,
 * at close with the handle alive, and after a donation moved the memory
 * to an operation's output, whose native buffer is still the caller's
 * memory. Bad input (wrong kind, size 0, a misaligned address, NULL,
 * struct_size too small) fails naming what is wrong, with no handle left
 * and no callback. The client's native queue has the device's kind, and
 * a client opens on it where the backend has one. A plugin without the
 * interop entries (the "good" test plugin) reports "interop not supported
 * by good".
 *
 * Backend-neutral: the default device (WAFER_BACKEND picks another). A
 * backend whose plugin lacks the interop entries is one skip saying so
 * (its wafer_handle_native says "interop not supported by <plugin>"). */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/interop.h>
#include <wafer/ops.h>
#include <wafer/program.h>
#include <wafer/wafer.h>

#include "t/client_util.h"
#include "t/tap.h"
#include "t/user_kernels/sources.h"

#define N 1024
#define BYTES (N * sizeof(float))

static wafer_runtime *runtime;
static wafer_client *client;
static const char *channel;
static const char *backend;
static wafer_native_kind device_kind;

/* The release callback: counts its calls per counter. */
static void count_release(void *data)
{
	atomic_fetch_add((_Atomic int *)data, 1);
}

static wafer_client *open_client(const char *name, const char *memory)
{
	wafer_client *c;
	wafer_client_options options = {.struct_size = sizeof options,
					 .channel = name,
					 .memory = memory};
	check(wafer_client_open(runtime, "default", &options, &c),
	      "client_open");
	return c;
}

static wafer_memory_usage usage(void)
{
	return usage_now(client);
}

/* A handle of N floats i * scale. */
static wafer_handle make(float scale)
{
	return create_ramp(client, N, scale);
}

/* Whether |h| holds i * scale (first N floats). */
static int holds(wafer_handle h, float scale)
{
	return holds_ramp(client, h, N, scale);
}

static int host_holds(const float *p, float (*f)(int))
{
	for (int i = 0; i < N; i++)
		if (p[i] != f(i))
			return 0;
	return 1;
}

static float minus_half(int i) { return (float)(i - N / 2); }
static float relu_minus_half(int i) { return i > N / 2 ? (float)(i - N / 2) : 0; }

/*===----------------------------------------------------------------------===
 * Out
 *===----------------------------------------------------------------------===*/

static void test_native_out(void)
{
	wafer_handle h = make(1);
	wafer_native_buffer nb = {.struct_size = sizeof nb};
	is_status(wafer_handle_native(client, h, &nb), WAFER_OK,
		  "[%s] handle_native", channel);
	ok(nb.kind == device_kind && nb.backend &&
		   strcmp(nb.backend, backend) == 0 && nb.size == BYTES,
	   "[%s]   ... kind %s, backend %s, size %zu", channel,
	   wafer_native_kind_name(nb.kind), nb.backend ? nb.backend : "NULL",
	   nb.size);
	ok(nb.address || nb.object, "[%s]   ... an address or an object",
	   channel);
	if (nb.kind == WAFER_NATIVE_HOST_POINTER) {
		check(wafer_sync(client), "sync");
		const float *p = (const float *)(uintptr_t)nb.address;
		int same = 1;
		for (int i = 0; i < N; i++)
			same &= p[i] == (float)i;
		ok(same, "[%s]   ... the host pointer holds the handle's bytes",
		   channel);
	}

	/* struct_size: fields past it are left alone. */
	wafer_native_buffer small;
	memset(&small, 0x5a, sizeof small);
	small.struct_size = offsetof(wafer_native_buffer, context);
	is_status(wafer_handle_native(client, h, &small), WAFER_OK,
		  "[%s] handle_native with an older struct", channel);
	unsigned char rest[sizeof small - offsetof(wafer_native_buffer, context)];
	memset(rest, 0x5a, sizeof rest);
	ok(small.size == BYTES &&
		   memcmp((char *)&small + offsetof(wafer_native_buffer,
						    context),
			  rest, sizeof rest) == 0,
	   "[%s]   ... fields past struct_size untouched", channel);

	wafer_native_buffer tiny = {.struct_size = sizeof(size_t)};
	is_status(wafer_handle_native(client, h, &tiny),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] handle_native: struct_size too small", channel);
	like(wafer_last_error(), "struct_size is 8", "[%s]   ... says so",
	     channel);
	is_status(wafer_handle_native(client, h, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] handle_native: out NULL",
		  channel);
	nb = (wafer_native_buffer){.struct_size = sizeof nb, .size = 7};
	is_status(wafer_handle_native(NULL, h, &nb),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] handle_native: client NULL", channel);
	ok(nb.size == 0, "[%s]   ... out zeroed", channel);

	check(wafer_release(client, h), "release");
	is_status(wafer_handle_native(client, h, &nb),
		  WAFER_ERROR_INVALID_HANDLE,
		  "[%s] handle_native of a released handle", channel);
	char want[64];
	snprintf(want, sizeof want, "0x%016" PRIx64, h.bits);
	like(wafer_last_error(), want, "[%s]   ... naming it", channel);
}

/* A pool handle's pages are mapped in a reserved range: its native
 * buffer is a plain pointer into it. */
static void test_native_pool(void)
{
	wafer_client *keep = client;
	wafer_client_options options = {.struct_size = sizeof options,
					 .channel = channel,
					 .memory = "pool"};
	if (wafer_client_open(runtime, "default", &options, &client) !=
	    WAFER_OK) {
		ok(1, "[%s] pool handle # SKIP no pool strategy here: %s",
		   channel, wafer_last_error());
		client = keep;
		return;
	}
	wafer_handle a = make(1), b = make(3);
	wafer_native_buffer na = {.struct_size = sizeof na};
	wafer_native_buffer nb = {.struct_size = sizeof nb};
	check(wafer_handle_native(client, a, &na), "native a");
	check(wafer_handle_native(client, b, &nb), "native b");
	/* Import b's memory: the same bytes. */
	_Atomic int released = 0;
	wafer_handle g;
	is_status(wafer_handle_import(client, &nb, count_release,
				      (void *)&released, &g),
		  WAFER_OK, "[%s] pool: import a pool handle's buffer",
		  channel);
	ok(holds(g, 3), "[%s]   ... reads its bytes", channel);
	if (na.kind == WAFER_NATIVE_HOST_POINTER) {
		const float *p = (const float *)(uintptr_t)nb.address;
		ok(p[N - 1] == 3.0f * (N - 1) && na.address != nb.address,
		   "[%s]   ... host pointers into the range", channel);
	}
	check(wafer_release(client, g), "release g");
	check(wafer_sync(client), "sync");
	is_int(released, 1, "[%s]   ... callback once", channel);
	ok(holds(b, 3), "[%s]   ... the pool handle unharmed", channel);
	check(wafer_release(client, a), "release a");
	check(wafer_release(client, b), "release b");
	check(wafer_client_close(client), "close");
	client = keep;
}

/*===----------------------------------------------------------------------===
 * In
 *===----------------------------------------------------------------------===*/

/* A handle's buffer imported as a second handle: one memory, two names. */
static void test_round_trip(void)
{
	wafer_handle h = make(1);
	wafer_native_buffer nb = {.struct_size = sizeof nb};
	check(wafer_handle_native(client, h, &nb), "native");
	wafer_memory_usage before = usage();

	_Atomic int released = 0;
	wafer_handle g;
	is_status(wafer_handle_import(client, &nb, count_release,
				      (void *)&released, &g),
		  WAFER_OK, "[%s] import the native buffer", channel);
	wafer_memory_usage after = usage();
	ok(after.handles_live == before.handles_live + 1 &&
		   after.bytes_in_use == before.bytes_in_use &&
		   after.bytes_reserved == before.bytes_reserved,
	   "[%s]   ... one more handle, no byte more in use or reserved "
	   "(%" PRIu64 " -> %" PRIu64 ")",
	   channel, before.bytes_in_use, after.bytes_in_use);
	size_t size = 0;
	check(wafer_handle_size(client, g, &size), "size");
	is_int((long long)size, BYTES, "[%s]   ... of the buffer's size",
	       channel);
	ok(holds(g, 1), "[%s]   ... read through the import: the same bytes",
	   channel);

	float v[N];
	for (int i = 0; i < N; i++)
		v[i] = (float)i * 5;
	check(wafer_write(client, g, 0, v, sizeof v), "write g");
	ok(holds(h, 5), "[%s]   ... written through the import, read "
	   "through the handle", channel);
	check(wafer_write(client, h, 0, v, sizeof v / 2), "write h");
	for (int i = 0; i < N / 2; i++)
		v[i] = 0;
	check(wafer_read(client, g, 0, v, sizeof v / 2), "read g");
	ok(v[N / 2 - 1] == 5.0f * (N / 2 - 1),
	   "[%s]   ... and the other way", channel);

	wafer_native_buffer again = {.struct_size = sizeof again};
	check(wafer_handle_native(client, g, &again), "native of import");
	ok(again.kind == nb.kind && again.address == nb.address &&
		   again.object == nb.object && again.offset == nb.offset &&
		   again.size == nb.size,
	   "[%s]   ... its own native buffer is the one imported", channel);

	check(wafer_retain(client, g), "retain");
	check(wafer_release(client, g), "release 1 of 2");
	check(wafer_sync(client), "sync");
	is_int(released, 0, "[%s]   ... no callback while a reference is left",
	       channel);
	check(wafer_release(client, g), "release 2 of 2");
	check(wafer_sync(client), "sync");
	is_int(released, 1, "[%s]   ... the callback after the last release",
	       channel);
	is_status(wafer_read(client, g, 0, v, 4), WAFER_ERROR_INVALID_HANDLE,
		  "[%s]   ... the import's handle is gone", channel);
	ok(holds(h, 5), "[%s]   ... the memory is still the owner's", channel);
	check(wafer_release(client, h), "release h");
	check(wafer_sync(client), "sync");
	is_int(released, 1, "[%s]   ... called exactly once", channel);
	ok_clean(client, "round trip");
}

/* On a host-pointer device, the caller's own malloc'd memory. */
static void test_host_buffer(void)
{
	if (device_kind != WAFER_NATIVE_HOST_POINTER)
		return;
	wafer_device_desc d = {.struct_size = sizeof d};
	check(wafer_client_device(client, &d), "device");
	float *mine = aligned_alloc(4096, BYTES);
	for (int i = 0; i < N; i++)
		mine[i] = (float)i;
	wafer_native_buffer nb = {
		.struct_size = sizeof nb,
		.kind = WAFER_NATIVE_HOST_POINTER,
		.address = (uint64_t)(uintptr_t)mine,
		.size = BYTES,
	};
	_Atomic int released = 0;
	wafer_handle g;
	is_status(wafer_handle_import(client, &nb, count_release,
				      (void *)&released, &g),
		  WAFER_OK, "[%s] import a malloc'd host buffer", channel);
	ok(holds(g, 1), "[%s]   ... read by wafer", channel);
	float v[N];
	for (int i = 0; i < N; i++)
		v[i] = (float)i * 2;
	check(wafer_write(client, g, 0, v, sizeof v), "write");
	check(wafer_sync(client), "sync");
	ok(mine[N - 1] == 2.0f * (N - 1) && mine[1] == 2.0f,
	   "[%s]   ... written by wafer into the caller's memory", channel);
	wafer_native_buffer out = {.struct_size = sizeof out};
	check(wafer_handle_native(client, g, &out), "native");
	ok(out.address == nb.address, "[%s]   ... native: the same pointer",
	   channel);
	check(wafer_release(client, g), "release");
	check(wafer_sync(client), "sync");
	is_int(released, 1, "[%s]   ... callback once", channel);
	free(mine);
}

/* The caller's buffer for the tests below: the native buffer of a
 * handle of another client (the caller's "framework"), so that it works
 * on every backend. */
static wafer_client *owner;

static wafer_native_buffer foreign_buffer(wafer_handle *out_owner_handle,
					  const float *init)
{
	wafer_native_buffer nb = {.struct_size = sizeof nb};
	check(wafer_create(owner, init, BYTES, out_owner_handle), "create");
	check(wafer_sync(owner), "sync");
	check(wafer_handle_native(owner, *out_owner_handle, &nb), "native");
	return nb;
}

static void test_close_alive(void)
{
	float init[N] = {0};
	wafer_handle oh;
	wafer_native_buffer nb = foreign_buffer(&oh, init);
	wafer_client *c = open_client(channel, NULL);
	_Atomic int released = 0;
	wafer_handle g;
	check(wafer_handle_import(c, &nb, count_release, (void *)&released,
				  &g),
	      "import");
	check(wafer_retain(c, g), "retain");
	is_status(wafer_client_close(c), WAFER_OK,
		  "[%s] close with an imported handle alive (2 references)",
		  channel);
	is_int(released, 1, "[%s]   ... its callback ran once", channel);
	check(wafer_release(owner, oh), "release owner's");
}

/* A foreign input donated to an operation that reuses it: the output is
 * the caller's memory, and the callback waits for the output's release. */
static void test_donation(void)
{
	if (!needs_f32_kernels(client, channel, "donation", "relu",
			       (char *)NULL))
		return;
	float init[N];
	for (int i = 0; i < N; i++)
		init[i] = minus_half(i);
	wafer_handle oh;
	wafer_native_buffer nb = foreign_buffer(&oh, init);
	_Atomic int released = 0;
	wafer_handle g;
	check(wafer_handle_import(client, &nb, count_release,
				  (void *)&released, &g),
	      "import");
	uint64_t n = N;
	wafer_tensor x = wafer_tensor_view(g, WAFER_DTYPE_F32, 1, &n), y;
	is_status(wafer_op_relu(client, &x, WAFER_DONATE_INPUT, &y), WAFER_OK,
		  "[%s] relu donating an imported input", channel);
	ok(y.handle.bits != g.bits, "[%s]   ... the output has a new handle",
	   channel);
	wafer_native_buffer out = {.struct_size = sizeof out};
	check(wafer_handle_native(client, y.handle, &out), "native of y");
	ok(out.address == nb.address && out.object == nb.object &&
		   out.offset == nb.offset,
	   "[%s]   ... on the caller's memory", channel);
	check(wafer_sync(client), "sync");
	is_int(released, 0, "[%s]   ... no callback: the memory lives on",
	       channel);
	float v[N];
	check(wafer_tensor_read(client, &y, v, sizeof v), "read y");
	ok(host_holds(v, relu_minus_half), "[%s]   ... relu in place", channel);
	check(wafer_read(owner, oh, 0, v, sizeof v), "read owner's");
	ok(host_holds(v, relu_minus_half),
	   "[%s]   ... the owner sees the result", channel);
	is_status(wafer_release(client, g), WAFER_ERROR_DONATED,
		  "[%s]   ... the import's handle was donated", channel);
	check(wafer_release(client, y.handle), "release y");
	check(wafer_sync(client), "sync");
	is_int(released, 1, "[%s]   ... the callback after the output's "
	       "release, once", channel);
	check(wafer_release(owner, oh), "release owner's");
	ok_clean(client, "donation");
}

/* An imported handle inside a scope goes at its end. */
static void test_scope(void)
{
	float init[N] = {0};
	wafer_handle oh;
	wafer_native_buffer nb = foreign_buffer(&oh, init);
	_Atomic int released = 0;
	wafer_handle g;
	wafer_scope scope;
	check(wafer_scope_begin(client, &scope), "scope_begin");
	check(wafer_handle_import(client, &nb, count_release,
				  (void *)&released, &g),
	      "import");
	check(wafer_scope_end(client, scope), "scope_end");
	check(wafer_sync(client), "sync");
	is_int(released, 1, "[%s] an import inside a scope: released at its "
	       "end", channel);
	check(wafer_release(owner, oh), "release owner's");
}

struct saxpy_params {
	uint64_t n;
	float a;
	uint32_t reserved;
};

/* A foreign buffer as a program kernel's binding: y = 2 x + y, y imported. */
static void test_program(void)
{
	wafer_program_source all[USER_KERNEL_FORMATS],
		sources[USER_KERNEL_FORMATS];
	void *data[USER_KERNEL_FORMATS];
	size_t count = 0;

	/* The sources of t/user_kernels/ but the host .so: the device takes
	 * the first of its formats. */
	user_kernels_load(all, data);
	for (size_t i = 0; i < USER_KERNEL_FORMATS; i++)
		if (data[i] && all[i].format != WAFER_PROGRAM_HOST_SO)
			sources[count++] = all[i];
	wafer_program *program = NULL;
	const wafer_kernel_ref *saxpy = NULL;
	wafer_status status =
		count ? wafer_program_create(client, sources, count, NULL,
					     &program)
		      : WAFER_ERROR_NOT_FOUND;
	if (status == WAFER_OK)
		status = wafer_program_kernel(program, "wafer_test_saxpy", 2,
					      sizeof(struct saxpy_params),
					      &saxpy);
	for (size_t i = 0; i < USER_KERNEL_FORMATS; i++)
		free(data[i]);
	if (status != WAFER_OK) {
		ok(1, "[%s] imported buffer in a program # SKIP no program "
		   "here: %s", channel, wafer_last_error());
		wafer_program_release(program);
		return;
	}
	float init[N];
	for (int i = 0; i < N; i++)
		init[i] = (float)i;
	wafer_handle oh;
	wafer_native_buffer nb = foreign_buffer(&oh, init);
	_Atomic int released = 0;
	wafer_handle y, x = make(1);
	check(wafer_handle_import(client, &nb, count_release,
				  (void *)&released, &y),
	      "import");
	struct saxpy_params p = {.n = N, .a = 2};
	wafer_buffer_binding b[2] = {{.handle = y}, {.handle = x}};
	wafer_execute_args args =
		execute_args_f32(NULL, b, 2, &p, sizeof p, N);
	args.kernel_ref = saxpy;
	is_status(wafer_execute(client, &args), WAFER_OK,
		  "[%s] a program kernel on an imported buffer", channel);
	check(wafer_release(client, y), "release y");
	check(wafer_sync(client), "sync");
	float v[N];
	check(wafer_read(owner, oh, 0, v, sizeof v), "read owner's");
	int right = 1;
	for (int i = 0; i < N; i++)
		right &= v[i] == 3.0f * (float)i;
	ok(right, "[%s]   ... wrote the caller's memory", channel);
	is_int(released, 1, "[%s]   ... callback once", channel);
	check(wafer_release(client, x), "release x");
	check(wafer_release(owner, oh), "release owner's");
	check(wafer_program_release(program), "program_release");
	ok_clean(client, "program");
}

/* A callback that calls the client: releases another handle, and tries
 * a sync (refused on the mpsc runner, which would wait for itself). */
struct calling {
	wafer_client *client;
	wafer_handle other;
	wafer_status released, synced;
	_Atomic int calls;
};

static void call_client(void *data)
{
	struct calling *k = data;
	k->released = wafer_release(k->client, k->other);
	k->synced = wafer_sync(k->client);
	atomic_fetch_add(&k->calls, 1);
}

static void test_callback_calls_client(void)
{
	float init[N] = {0};
	wafer_handle oh;
	wafer_native_buffer nb = foreign_buffer(&oh, init);
	struct calling k = {.client = client, .other = make(1)};
	wafer_handle g;
	check(wafer_handle_import(client, &nb, call_client, &k, &g), "import");
	check(wafer_release(client, g), "release");
	check(wafer_sync(client), "sync");
	is_int(k.calls, 1, "[%s] a callback that calls the client ran once",
	       channel);
	is_status(k.released, WAFER_OK,
		  "[%s]   ... and released another handle from it", channel);
	is_status(k.synced,
		  strcmp(channel, "mpsc") == 0 ? WAFER_ERROR_INVALID_ARGUMENT
					       : WAFER_OK,
		  "[%s]   ... a sync from it: %s", channel,
		  strcmp(channel, "mpsc") == 0 ? "refused on the runner"
					       : "fine");
	check(wafer_release(owner, oh), "release owner's");
	ok_clean(client, "callback calling the client");
}

/* A callback that closes the client the buffer was imported into. */
struct closing {
	wafer_client *client;
	wafer_status closed;
	_Atomic int calls;
};

static void close_client(void *data)
{
	struct closing *k = data;
	k->closed = wafer_client_close(k->client);
	atomic_fetch_add(&k->calls, 1);
}

/* Closing from a release callback is either a clean close or a refusal
 * that changes nothing: after a release (the callback runs in the
 * caller's thread on direct and mutex, on the runner on mpsc), and
 * during the client's own close (refused: it is closing already). */
static void test_callback_closes_client(void)
{
	float init[N] = {0};
	wafer_handle oh, g, h;
	wafer_native_buffer nb = foreign_buffer(&oh, init);
	struct closing k = {.client = open_client(channel, NULL),
			    .closed = WAFER_ERROR_INTERNAL};
	check(wafer_handle_import(k.client, &nb, close_client, &k, &g),
	      "import");
	check(wafer_release(k.client, g), "release");
	bool mpsc = strcmp(channel, "mpsc") == 0;
	if (mpsc) /* on the runner: refused, so the client is still there */
		check(wafer_sync(k.client), "sync");
	is_int(k.calls, 1, "[%s] a callback that closes its client ran once",
	       channel);
	is_status(k.closed, mpsc ? WAFER_ERROR_INVALID_ARGUMENT : WAFER_OK,
		  "[%s]   ... the close from it: %s", channel,
		  mpsc ? "refused on the runner" : "done");
	if (k.closed != WAFER_OK) {
		check(wafer_empty(k.client, 64, &h), "empty after the refusal");
		check(wafer_sync(k.client), "sync after the refusal");
		is_status(wafer_client_close(k.client), WAFER_OK,
			  "[%s]   ... the refused client closes after", channel);
	}

	/* The callback runs during the client's close: its close is
	 * refused, the outer one completes. */
	k = (struct closing){.client = open_client(channel, NULL),
			     .closed = WAFER_ERROR_INTERNAL};
	check(wafer_handle_import(k.client, &nb, close_client, &k, &g),
	      "import");
	is_status(wafer_client_close(k.client), WAFER_OK,
		  "[%s] close with an import whose callback closes the "
		  "client",
		  channel);
	is_int(k.calls, 1, "[%s]   ... its callback ran once", channel);
	is_status(k.closed, WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s]   ... and its close (the client closing) was refused",
		  channel);
	check(wafer_release(owner, oh), "release owner's");
}

/* One bad import: |status|, an error naming |needle|, no handle, no
 * callback, nothing alive. */
static void bad_import(const wafer_native_buffer *b, wafer_status status,
		       const char *needle, const char *what)
{
	_Atomic int released = 0;
	wafer_handle g = {.bits = 42};
	uint64_t live = usage().handles_live;
	is_status(wafer_handle_import(client, b, count_release,
				      (void *)&released, &g),
		  status, "[%s] import: %s", channel, what);
	like(wafer_last_error(), needle, "[%s]   ... says '%s'", channel,
	     needle);
	check(wafer_sync(client), "sync");
	ok(g.bits == 0 && released == 0 && usage().handles_live == live,
	   "[%s]   ... no handle, no callback, nothing left", channel);
}

static void test_bad_input(void)
{
	float init[N] = {0};
	wafer_handle oh;
	const wafer_native_buffer good = foreign_buffer(&oh, init);
	wafer_native_buffer b;
	wafer_device_desc d = {.struct_size = sizeof d};
	check(wafer_client_device(client, &d), "device");

	b = good;
	b.kind = device_kind == WAFER_NATIVE_CUDA_POINTER
			 ? WAFER_NATIVE_HOST_POINTER
			 : WAFER_NATIVE_CUDA_POINTER;
	bad_import(&b, WAFER_ERROR_INVALID_ARGUMENT,
		   wafer_native_kind_name(b.kind), "the wrong kind");
	b.kind = WAFER_NATIVE_NONE;
	bad_import(&b, WAFER_ERROR_INVALID_ARGUMENT, "none", "kind none");
	b.kind = (wafer_native_kind)77;
	bad_import(&b, WAFER_ERROR_INVALID_ARGUMENT, "unknown",
		   "an unknown kind");
	b = good;
	b.size = 0;
	bad_import(&b, WAFER_ERROR_INVALID_ARGUMENT, "size is 0", "size 0");
	b = good;
	if (b.object)
		b.offset += 4;
	else
		b.address += 4;
	bad_import(&b, WAFER_ERROR_INVALID_ARGUMENT, "alignment",
		   "a misaligned buffer");
	b = good;
	if (b.object)
		b.object = NULL;
	else
		b.address = 0;
	bad_import(&b, WAFER_ERROR_INVALID_ARGUMENT,
		   good.object ? "object is NULL" : "address is 0",
		   "no memory");
	/* Once accepted: ordinal 7 on a backend of one device. */
	b = good;
	b.device_ordinal = good.device_ordinal + 7;
	bad_import(&b, WAFER_ERROR_INVALID_ARGUMENT, "device ordinal",
		   "another device's ordinal");
	b = good;
	b.device_ordinal = -1;
	bad_import(&b, WAFER_ERROR_INVALID_ARGUMENT, "device ordinal",
		   "ordinal -1");
	b = good;
	b.struct_size = offsetof(wafer_native_buffer, size);
	bad_import(&b, WAFER_ERROR_INVALID_ARGUMENT, "struct_size",
		   "struct_size too small");
	bad_import(NULL, WAFER_ERROR_INVALID_ARGUMENT, "buffer is NULL",
		   "buffer NULL");

	is_status(wafer_handle_import(client, &good, NULL, NULL, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] import: out_handle NULL",
		  channel);
	wafer_handle g = {.bits = 42};
	is_status(wafer_handle_import(NULL, &good, NULL, NULL, &g),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] import: client NULL",
		  channel);
	ok(g.bits == 0, "[%s]   ... out_handle zeroed", channel);

	/* A release callback may be NULL. */
	is_status(wafer_handle_import(client, &good, NULL, NULL, &g), WAFER_OK,
		  "[%s] import without a callback", channel);
	check(wafer_release(client, g), "release");
	check(wafer_release(owner, oh), "release owner's");
	ok_clean(client, "bad input");
}

/*===----------------------------------------------------------------------===
 * The queue
 *===----------------------------------------------------------------------===*/

static void test_queue(void)
{
	wafer_native_queue q = {.struct_size = sizeof q};
	is_status(wafer_client_native_queue(client, &q), WAFER_OK,
		  "[%s] native_queue", channel);
	ok(q.kind == device_kind && q.backend &&
		   strcmp(q.backend, backend) == 0,
	   "[%s]   ... the device's kind and backend", channel);
	if (device_kind == WAFER_NATIVE_HOST_POINTER)
		ok(q.queue == NULL, "[%s]   ... NULL on a host device", channel);
	wafer_native_queue tiny = {.struct_size = sizeof(size_t)};
	is_status(wafer_client_native_queue(client, &tiny),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] native_queue: struct_size too small", channel);
	is_status(wafer_client_native_queue(client, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] native_queue: out NULL",
		  channel);

	wafer_client *c = NULL;
	int dummy;
	wafer_client_options options = {.struct_size = sizeof options,
					 .channel = channel,
					 .native_queue = q.queue ? q.queue
								 : &dummy};
	wafer_status status = wafer_client_open(runtime, "default", &options,
						&c);
	if (!q.queue) {
		is_status(status, WAFER_ERROR_NOT_SUPPORTED,
			  "[%s] open on a native queue: none on %s", channel,
			  backend);
		like(wafer_last_error(), "native_queue",
		     "[%s]   ... says why", channel);
	} else if (status == WAFER_ERROR_NOT_SUPPORTED &&
		   strstr(wafer_last_error(), "queue_wrap")) {
		/* A plugin that cannot adopt a caller's queue says why
		 * (levelzero: wafer-plugin(7)); its queue_native still
		 * orders the caller's work, as checked above. */
		ok(1, "[%s] open a client on the first one's queue # SKIP %s",
		   channel, wafer_last_error());
	} else {
		is_status(status, WAFER_OK,
			  "[%s] open a client on the first one's queue",
			  channel);
		if (c) {
			wafer_native_queue q2 = {.struct_size = sizeof q2};
			check(wafer_client_native_queue(c, &q2), "queue");
			ok(q2.queue == q.queue, "[%s]   ... its queue is that "
			   "queue", channel);
			float v[N], w[N];
			for (int i = 0; i < N; i++)
				v[i] = (float)i;
			wafer_handle h;
			check(wafer_create(c, v, sizeof v, &h), "create");
			check(wafer_read(c, h, 0, w, sizeof w), "read");
			ok(memcmp(v, w, sizeof v) == 0,
			   "[%s]   ... and works", channel);
			check(wafer_release(c, h), "release");
			check(wafer_client_close(c), "close");
		}
	}
	/* An older options struct has no native_queue: never read. */
	options.struct_size = offsetof(wafer_client_options, native_queue);
	options.native_queue = &dummy;
	is_status(wafer_client_open(runtime, "default", &options, &c),
		  WAFER_OK, "[%s] options without native_queue: opens",
		  channel);
	wafer_client_close(c);
}

/*===----------------------------------------------------------------------===
 * A plugin without interop
 *===----------------------------------------------------------------------===*/

static void test_not_supported(void)
{
	wafer_runtime *rt = open_test_plugin("good", "plugin without interop");
	if (!rt)
		return;
	wafer_client *c;
	check(wafer_client_open(rt, "good", NULL, &c), "open good");
	wafer_handle h;
	float v[4] = {1, 2, 3, 4};
	check(wafer_create(c, v, sizeof v, &h), "create");
	wafer_native_buffer nb = {.struct_size = sizeof nb};
	is_status(wafer_handle_native(c, h, &nb), WAFER_ERROR_NOT_SUPPORTED,
		  "good plugin: handle_native not supported");
	like(wafer_last_error(), "interop not supported by good",
	     "  ... says so");
	nb = (wafer_native_buffer){.struct_size = sizeof nb,
				   .kind = WAFER_NATIVE_HOST_POINTER,
				   .address = (uint64_t)(uintptr_t)v,
				   .size = sizeof v};
	_Atomic int released = 0;
	wafer_handle g = {.bits = 42};
	is_status(wafer_handle_import(c, &nb, count_release, (void *)&released,
				      &g),
		  WAFER_ERROR_NOT_SUPPORTED, "good plugin: import not supported");
	like(wafer_last_error(), "interop not supported by good",
	     "  ... says so");
	ok(g.bits == 0 && released == 0, "  ... no handle, no callback");
	wafer_native_queue q = {.struct_size = sizeof q};
	is_status(wafer_client_native_queue(c, &q), WAFER_ERROR_NOT_SUPPORTED,
		  "good plugin: native_queue not supported");
	like(wafer_last_error(), "interop not supported by good",
	     "  ... says so");
	check(wafer_release(c, h), "release");
	check(wafer_client_close(c), "close");

	int dummy;
	wafer_client_options options = {.struct_size = sizeof options,
					.native_queue = &dummy};
	c = NULL;
	is_status(wafer_client_open(rt, "good", &options, &c),
		  WAFER_ERROR_NOT_SUPPORTED,
		  "good plugin: open on a native queue not supported");
	like(wafer_last_error(), "interop not supported by good",
	     "  ... says so");
	ok(c == NULL, "  ... no client");
	wafer_runtime_close(rt);

	/* Part of each group of entries is none of it (the loader drops
	 * them): half_interop reads as not supported. */
	rt = open_test_plugin("half_interop", "half_interop plugin");
	check(wafer_client_open(rt, "half_interop", NULL, &c),
	      "open half_interop");
	q = (wafer_native_queue){.struct_size = sizeof q};
	is_status(wafer_client_native_queue(c, &q), WAFER_ERROR_NOT_SUPPORTED,
		  "half_interop plugin: native_queue not supported");
	check(wafer_create(c, v, sizeof v, &h), "create");
	nb = (wafer_native_buffer){.struct_size = sizeof nb};
	is_status(wafer_handle_native(c, h, &nb), WAFER_ERROR_NOT_SUPPORTED,
		  "half_interop plugin: handle_native not supported");
	check(wafer_release(c, h), "release");
	check(wafer_client_close(c), "close");
	wafer_runtime_close(rt);
}

/* A client on the caller's queue, where the plugin wraps one: the full
 * test plugin takes any pointer as a queue. */
static void test_wrap(void)
{
	wafer_runtime *rt = open_test_plugin("full", "client on a native queue");
	if (!rt)
		return;
	static const char *const channels[] = {"direct", "mutex", "mpsc"};
	for (size_t i = 0; i < 3; i++) {
		int callers_queue;
		wafer_client *c = NULL;
		wafer_client_options options = {
			.struct_size = sizeof options,
			.channel = channels[i],
			.native_queue = &callers_queue,
		};
		is_status(wafer_client_open(rt, "full", &options, &c), WAFER_OK,
			  "[%s] full plugin: open on the caller's queue",
			  channels[i]);
		if (!c)
			continue;
		wafer_native_queue q = {.struct_size = sizeof q};
		check(wafer_client_native_queue(c, &q), "native_queue");
		ok(q.queue == &callers_queue && q.kind ==
						    WAFER_NATIVE_HOST_POINTER,
		   "[%s]   ... its native queue is the caller's", channels[i]);
		float v[4] = {1, 2, 3, 4}, w[4] = {0};
		wafer_handle h;
		check(wafer_create(c, v, sizeof v, &h), "create");
		check(wafer_read(c, h, 0, w, sizeof w), "read");
		ok(memcmp(v, w, sizeof v) == 0, "[%s]   ... and works",
		   channels[i]);
		check(wafer_release(c, h), "release");
		is_status(wafer_client_close(c), WAFER_OK, "[%s]   ... closes",
			  channels[i]);
	}
	wafer_runtime_close(rt);
}

/*===----------------------------------------------------------------------===
 * Main
 *===----------------------------------------------------------------------===*/

/* The direct channel, with one thread inside a call (here, in a release
 * callback run by wafer_sync) while a second calls the client: the second
 * is refused, naming the channel, instead of running beside the first
 * (which once crashed). */
struct second {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	int inside, done;
	wafer_status status;
	char error[512];
};

static void *second_thread(void *arg)
{
	struct second *s = arg;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	pthread_mutex_lock(&s->lock);
	while (!s->inside &&
	       pthread_cond_timedwait(&s->changed, &s->lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&s->lock);
	wafer_handle h = {0};
	s->status = wafer_empty(client, 64, &h);
	snprintf(s->error, sizeof s->error, "%s", wafer_last_error());
	if (s->status == WAFER_OK)
		wafer_release(client, h);
	pthread_mutex_lock(&s->lock);
	s->done = 1;
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void wait_for_second(void *arg)
{
	struct second *s = arg;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	pthread_mutex_lock(&s->lock);
	s->inside = 1;
	pthread_cond_broadcast(&s->changed);
	while (!s->done &&
	       pthread_cond_timedwait(&s->changed, &s->lock, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&s->lock);
}

static void test_direct_second_thread(void)
{
	float init[N] = {0};
	wafer_handle oh, g;
	wafer_native_buffer nb = foreign_buffer(&oh, init);
	struct second s = {.status = WAFER_ERROR_INTERNAL};
	pthread_t thread;

	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.changed, NULL);
	check(wafer_handle_import(client, &nb, wait_for_second, &s, &g),
	      "import");
	if (pthread_create(&thread, NULL, second_thread, &s) != 0) {
		ok(0, "[%s] pthread_create", channel);
		return;
	}
	check(wafer_release(client, g), "release");
	check(wafer_sync(client), "sync");
	pthread_join(thread, NULL);
	ok(s.done, "[%s] a second thread's call returns", channel);
	is_status(s.status, WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s]   ... refused while a thread is inside a call",
		  channel);
	like(s.error, "direct channel called from two threads",
	     "[%s]   ... naming the channel", channel);
	pthread_cond_destroy(&s.changed);
	pthread_mutex_destroy(&s.lock);
	check(wafer_release(owner, oh), "release owner's");
	ok_clean(client, "a second thread on direct");
}

static void run_channel(const char *name)
{
	channel = name;
	client = open_client(name, NULL);
	owner = open_client(name, NULL);
	test_native_out();
	test_native_pool();
	test_round_trip();
	test_host_buffer();
	test_close_alive();
	test_donation();
	test_scope();
	test_callback_calls_client();
	test_callback_closes_client();
	test_program();
	test_bad_input();
	test_queue();
	if (strcmp(name, "direct") == 0)
		test_direct_second_thread();
	check(wafer_client_close(owner), "close owner");
	check(wafer_client_close(client), "close");
}

int main(void)
{
	static const char *const channels[] = {"direct", "mutex", "mpsc"};

	check(wafer_runtime_open(NULL, &runtime), "runtime_open");
	client = open_client(NULL, NULL);
	wafer_device_desc d = {.struct_size = sizeof d};
	check(wafer_client_device(client, &d), "device");
	backend = d.backend;
	diag("backend %s: %s", d.backend, d.name);
	wafer_native_queue q = {.struct_size = sizeof q};
	wafer_status status = wafer_client_native_queue(client, &q);
	if (status == WAFER_ERROR_NOT_SUPPORTED) {
		char why[512];
		snprintf(why, sizeof why, "%s", wafer_last_error());
		char want[128];
		snprintf(want, sizeof want, "interop not supported by %s",
			 backend);
		if (strstr(why, want))
			skip_all(why);
	}
	check(status, "native_queue");
	device_kind = q.kind;
	diag("native kind %s", wafer_native_kind_name(device_kind));
	check(wafer_client_close(client), "close");

	ok(strcmp(wafer_native_kind_name(WAFER_NATIVE_CUDA_POINTER),
		  "cuda-pointer") == 0 &&
		   strcmp(wafer_native_kind_name(WAFER_NATIVE_HOST_POINTER),
			  "host-pointer") == 0 &&
		   strcmp(wafer_native_kind_name(WAFER_NATIVE_OPENCL_MEM),
			  "opencl-mem") == 0 &&
		   strcmp(wafer_native_kind_name(
				  WAFER_NATIVE_LEVELZERO_POINTER),
			  "levelzero-pointer") == 0 &&
		   strcmp(wafer_native_kind_name(WAFER_NATIVE_NONE), "none") ==
			   0 &&
		   strcmp(wafer_native_kind_name((wafer_native_kind)99),
			  "unknown") == 0,
	   "native_kind_name: every kind, none, unknown");

	for (size_t i = 0; i < sizeof channels / sizeof channels[0]; i++)
		run_channel(channels[i]);
	test_not_supported();
	test_wrap();
	wafer_runtime_close(runtime);
	done_testing();
	return exit_status();
}
