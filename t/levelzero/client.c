/* wafer — SPDX-License-Identifier: MIT
 *
 * levelzero_client.c: the levelzero plugin under libwafer, on the test
 * driver (t/standins/levelzero/driver.c) that the real oneAPI loader loads through
 * ZE_ENABLE_ALT_DRIVERS. For every memory strategy compiled into the core
 * and on the direct and mpsc channels, a client uploads, downloads,
 * executes, syncs, releases and trims; the test then reads back from the
 * driver which kernel each execute launched and with which arguments —
 * and, since the driver's device memory is host memory, that each pointer
 * argument points at the bytes of the handle it was bound from. The
 * driver runs each kernel (an emulation of kernels.cl, out of order
 * between barriers, at the host's synchronisation), so the values read
 * back are computed ones: add and fill are checked against the host's.
 * Errors: an unknown kernel, a count past a handle, the device lost
 * during a sync, a device out of memory. Last, every operation of ops.h
 * runs once and must reach the SPIR-V kernel the plugin maps it to (what
 * each computes is checked by t/api/ops itself on this driver:
 * t/levelzero/ops.sh). */
#include "build-config.h"

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <level_zero/ze_api.h>

#include <wafer/ops.h>
#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "lib/memory/memory.h"
#include "t/tap.h"

/* After tap.h: fakeze_bind_or_end uses it. */
#include "t/standins/levelzero/fakeze.h"
#include "t/client_util.h"

static const struct fakeze_api *fz;
static wafer_runtime *runtime;

#define DEVICE_MEMORY ((size_t)64 << 20)

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 37u + seed * 11u + (i >> 9));
}

static size_t show_violations(void)
{
	size_t n = fz->violation_count();
	for (size_t i = 0; i < n && i < 20; i++)
		diag("violation: %s", fz->violation(i));
	return n;
}

/* The pointer argument |i| of the newest launch. */
static const void *pointer_arg(const struct fakeze_launch *l, uint32_t i)
{
	const void *p = NULL;
	if (i < l->arg_count && l->args[i].size == sizeof p)
		memcpy(&p, l->args[i].bytes, sizeof p);
	return p;
}

static int last_launch(struct fakeze_launch *l)
{
	size_t n = fz->launch_count();
	return n > 0 && fz->launch_get(n - 1, l);
}

/* Runs one client on |strategy| and |channel|. */
static void run_client(const char *strategy, const char *channel)
{
	wafer_client_options options = {
		.struct_size = sizeof options,
		.channel = channel,
		.memory = strategy,
	};
	wafer_client *c = NULL;
	wafer_status s;
	char what[96];

	snprintf(what, sizeof what, "%s on %s", strategy, channel);
	fz->clear();
	s = wafer_client_open(runtime, "levelzero", &options, &c);
	if (!is_status(s, WAFER_OK, "%s: client open", what))
		return;

	/* Uploads and downloads of several sizes, at offsets. */
	static const size_t sizes[] = {4, 1000, 65536 + 4, (size_t)3 << 20};
	wafer_handle h[4];
	unsigned char *data[4];
	int round_trips = 1;
	for (int i = 0; i < 4; i++) {
		data[i] = malloc(sizes[i]);
		pattern(data[i], sizes[i], (unsigned)i);
		s = wafer_create(c, data[i], sizes[i], &h[i]);
		if (s != WAFER_OK) {
			is_status(s, WAFER_OK, "%s: create %zu bytes", what,
				  sizes[i]);
			round_trips = 0;
			continue;
		}
	}
	for (int i = 0; i < 4 && round_trips; i++) {
		unsigned char *back = calloc(1, sizes[i]);
		s = wafer_read(c, h[i], 0, back, sizes[i]);
		if (s != WAFER_OK || memcmp(back, data[i], sizes[i]) != 0) {
			diag("handle %d (%zu bytes): %s", i, sizes[i],
			     wafer_status_string(s));
			round_trips = 0;
		}
		free(back);
	}
	ok(round_trips, "%s: create and read back 4 B, 1000 B, 64 KiB + 4, "
			"3 MiB",
	   what);

	unsigned char patch[100], back[300];
	memset(patch, 0x3c, sizeof patch);
	wafer_write(c, h[1], 128, patch, sizeof patch);
	wafer_read(c, h[1], 64, back, sizeof back);
	ok(memcmp(back, data[1] + 64, 64) == 0 &&
		   memcmp(back + 64, patch, 100) == 0 &&
		   memcmp(back + 164, data[1] + 228, 136) == 0,
	   "%s: write and read at offsets", what);
	memcpy(data[1] + 128, patch, sizeof patch);

	memset(back, 0, sizeof back);
	is_status(wafer_read_async(c, h[2], 1000, back, sizeof back), WAFER_OK,
		  "%s: read_async", what);
	is_status(wafer_sync(c), WAFER_OK, "%s: sync", what);
	ok(memcmp(back, data[2] + 1000, sizeof back) == 0,
	   "%s: the read_async bytes are there after sync", what);

	/* add on three handles: the launch's pointers hold the handles'
	 * bytes (b and a were uploaded; out is h[3]). */
	struct wafer_elementwise_params ep = {.count = 1000 / 4};
	wafer_handle add_h[3] = {h[3], h[2], h[1]};
	s = execute_f32(c, "add", add_h, 3, &ep, sizeof ep, ep.count);
	if (s == WAFER_OK)
		s = wafer_sync(c);
	is_status(s, WAFER_OK, "%s: execute add", what);
	struct fakeze_launch l;
	unsigned char seen[1000];
	ok(last_launch(&l) && strcmp(l.kernel, "add_f32") == 0 &&
		   l.arg_count == 4,
	   "%s: add ran add_f32 with 4 arguments", what);
	uint64_t count = 0;
	memcpy(&count, l.args[3].bytes, sizeof count);
	is_int((long long)count, 250, "%s: ... the count argument", what);
	ok(fz->read(pointer_arg(&l, 1), seen, 1000) &&
		   memcmp(seen, data[2], 1000) == 0 &&
		   fz->read(pointer_arg(&l, 2), seen, 1000) &&
		   memcmp(seen, data[1], 1000) == 0,
	   "%s: ... its input pointers hold the bound handles' bytes", what);
	/* The driver ran it: out = a + b, element by element. */
	int sums = fz->read(pointer_arg(&l, 0), seen, 1000);
	for (size_t i = 0; sums && i < 250; i++) {
		float a, b, got;
		memcpy(&a, data[2] + 4 * i, 4);
		memcpy(&b, data[1] + 4 * i, 4);
		memcpy(&got, seen + 4 * i, 4);
		sums = got == a + b || (isnan(got) && isnan(a + b));
		if (!sums)
			diag("element %zu: %g + %g gave %g", i, a, b, got);
	}
	ok(sums, "%s: ... and its output pointer holds a + b", what);
	memset(seen, 0, sizeof seen);
	ok(wafer_read(c, h[3], 0, seen, 1000) == WAFER_OK &&
		   fz->read(pointer_arg(&l, 0), back, 300) &&
		   memcmp(seen, back, 300) == 0,
	   "%s: ... which reading the output handle returns", what);

	struct wafer_fill_params fp = {.count = 1, .value = 2.0};
	s = execute_f32(c, "fill", &h[0], 1, &fp, sizeof fp, 1);
	if (s == WAFER_OK)
		s = wafer_sync(c);
	is_status(s, WAFER_OK, "%s: execute fill", what);
	float two = 0;
	ok(last_launch(&l) && strcmp(l.kernel, "fill_f32") == 0 &&
		   fz->read(pointer_arg(&l, 0), seen, 4) &&
		   wafer_read(c, h[0], 0, &two, 4) == WAFER_OK &&
		   memcmp(seen, &two, 4) == 0 && two == 2.0f,
	   "%s: fill ran fill_f32 on the handle's memory: 2.0", what);

	/* Errors. */
	s = execute_f32(c, "no_such_kernel", &h[0], 1, &fp, sizeof fp, 1);
	if (s == WAFER_OK)
		s = wafer_sync(c);
	is_status(s, WAFER_ERROR_NOT_SUPPORTED, "%s: an unknown kernel", what);
	like(wafer_last_error(), "levelzero", "%s: ... names the plugin",
	     what);
	ep.count = 2000;
	s = execute_f32(c, "add", add_h, 3, &ep, sizeof ep, ep.count);
	if (s == WAFER_OK)
		s = wafer_sync(c);
	is_status(s, WAFER_ERROR_OUT_OF_RANGE, "%s: a count past a handle",
		  what);

	ep.count = 250;
	s = execute_f32(c, "add", add_h, 3, &ep, sizeof ep, ep.count);
	fz->fail("zeEventHostSynchronize", 0, ZE_RESULT_ERROR_DEVICE_LOST);
	if (s == WAFER_OK)
		s = wafer_sync(c);
	is_status(s, WAFER_ERROR_DEVICE, "%s: the device lost during a sync",
		  what);
	like(wafer_last_error(), "ZE_RESULT_ERROR_DEVICE_LOST", "%s: ... %s",
	     what, wafer_last_error());
	is_status(wafer_sync(c), WAFER_OK, "%s: ... reported once", what);

	wafer_handle huge;
	is_status(wafer_empty(c, DEVICE_MEMORY * 2, &huge),
		  WAFER_ERROR_OUT_OF_MEMORY, "%s: more than the device has",
		  what);

	wafer_memory_usage u = {.struct_size = sizeof u};
	wafer_memory_usage_get(c, &u);
	ok(u.storage_allocs > 0 && u.bytes_reserved > 0,
	   "%s: storage calls: %llu allocs, %llu maps, %llu bytes reserved",
	   what, (unsigned long long)u.storage_allocs,
	   (unsigned long long)u.storage_maps,
	   (unsigned long long)u.bytes_reserved);
	if (strcmp(strategy, "pool") == 0)
		ok(u.storage_maps > 0,
		   "%s: the pool grows its segments with Level Zero virtual "
		   "memory",
		   what);

	for (int i = 0; i < 4; i++) {
		wafer_release(c, h[i]);
		free(data[i]);
	}
	is_status(wafer_sync(c), WAFER_OK, "%s: release and sync", what);
	is_status(wafer_memory_trim(c), WAFER_OK, "%s: trim", what);
	wafer_memory_usage_get(c, &u);
	is_int((long long)u.bytes_in_use, 0, "%s: nothing in use", what);
	is_status(wafer_client_close(c), WAFER_OK, "%s: close", what);
	ok(show_violations() == 0,
	   "%s: no call a real driver would refuse", what);
}

/*===----------------------------------------------------------------------===
 * Every operation of ops.h through the plugin
 *===----------------------------------------------------------------------===*/

/* Has the driver recorded a launch of |kernel| since the last clear? */
static int launched(const char *kernel)
{
	struct fakeze_launch l;
	for (size_t i = 0; fz->launch_get(i, &l); i++)
		if (strcmp(l.kernel, kernel) == 0)
			return 1;
	return 0;
}

/* Runs each operation of ops.h once and checks that it reached the SPIR-V
 * kernel the plugin maps it to, with nothing the driver refuses. The
 * values are t/api/ops's to check (t/levelzero/ops.sh runs it here). */
static void test_ops(void)
{
	static const char *const want[] = {
		"fill_f32", "fill_i32", "copy_b32", "copy_strided_b32",
		"cast_f32_f16", "cast_f16_bf16", "cast_bf16_i32", "cast_i32_f32",
		"neg_f32", "abs_f32", "exp_f32", "log_f32", "sqrt_f32",
		"relu_f32", "gelu_f32", "sigmoid_f32", "tanh_f32",
		"add_f32", "sub_f32", "mul_f32", "div_f32", "max_f32", "min_f32",
		"add_strided_f32", "min_strided_f32", "sub_scalar_f32",
		"div_scalar_f32", "reduce_sum_f32", "reduce_max_f32",
		"reduce_mean_f32", "softmax_f32", "matmul_f32",
	};
	wafer_client *c = NULL;
	wafer_status s, first = WAFER_OK;
	wafer_tensor a, b, row, t, out[4];
	uint64_t shape[2] = {4, 8}, row_shape[2] = {1, 8}, sq[2] = {8, 8};
	float data[64];

	fz->clear();
	if (!is_status(wafer_client_open(runtime, "levelzero", NULL, &c),
		       WAFER_OK, "ops: client open"))
		return;
	for (int i = 0; i < 64; i++)
		data[i] = (float)i / 8.0f - 2.0f;
#define OP(call)                                                               \
	do {                                                                   \
		s = (call);                                                    \
		if (s != WAFER_OK && first == WAFER_OK) {                      \
			first = s;                                             \
			diag("%s: %s: %s", #call, wafer_status_string(s),       \
			     wafer_last_error());                              \
		}                                                              \
	} while (0)
	OP(wafer_tensor_create(c, WAFER_DTYPE_F32, 2, shape, data, &a));
	OP(wafer_tensor_create(c, WAFER_DTYPE_F32, 2, shape, data + 32, &b));
	OP(wafer_tensor_create(c, WAFER_DTYPE_F32, 2, row_shape, data, &row));
	OP(wafer_op_fill(c, WAFER_DTYPE_F32, 2, shape, 1.5, &out[0]));
	OP(wafer_tensor_release(c, &out[0]));
	OP(wafer_op_fill(c, WAFER_DTYPE_I32, 2, shape, 3, &out[0]));
	OP(wafer_tensor_release(c, &out[0]));
	OP(wafer_op_copy(c, &a, WAFER_ALWAYS_COPY, &out[0]));
	OP(wafer_tensor_release(c, &out[0]));
	OP(wafer_tensor_transpose(&a, 0, 1, &t));
	OP(wafer_op_copy(c, &t, WAFER_ALWAYS_COPY, &out[0]));
	OP(wafer_tensor_release(c, &out[0]));
	OP(wafer_op_cast(c, &a, WAFER_ALWAYS_COPY, WAFER_DTYPE_F16, &out[0]));
	OP(wafer_op_cast(c, &out[0], WAFER_ALWAYS_COPY, WAFER_DTYPE_BF16,
			 &out[1]));
	OP(wafer_op_cast(c, &out[1], WAFER_ALWAYS_COPY, WAFER_DTYPE_I32,
			 &out[2]));
	OP(wafer_op_cast(c, &out[2], WAFER_ALWAYS_COPY, WAFER_DTYPE_F32,
			 &out[3]));
	for (int i = 0; i < 4; i++)
		OP(wafer_tensor_release(c, &out[i]));
	for (int op = WAFER_UNARY_NEG; op <= WAFER_UNARY_TANH; op++) {
		OP(wafer_op_unary(c, (wafer_unary_op)op, &a, WAFER_ALWAYS_COPY,
				  &out[0]));
		OP(wafer_tensor_release(c, &out[0]));
	}
	for (int op = WAFER_BINARY_ADD; op <= WAFER_BINARY_MIN; op++) {
		wafer_binary_op bop = (wafer_binary_op)op;
		OP(wafer_op_binary(c, bop, &a, WAFER_ALWAYS_COPY, &b,
				   WAFER_ALWAYS_COPY, &out[0]));
		/* a row broadcast over a: the strided kernel */
		OP(wafer_op_binary(c, bop, &a, WAFER_ALWAYS_COPY, &row,
				   WAFER_ALWAYS_COPY, &out[1]));
		OP(wafer_op_binary_scalar(c, bop, &a, WAFER_ALWAYS_COPY, 2.0,
					  1, &out[2]));
		for (int i = 0; i < 3; i++)
			OP(wafer_tensor_release(c, &out[i]));
	}
	for (int op = WAFER_REDUCE_SUM; op <= WAFER_REDUCE_MEAN; op++) {
		OP(wafer_op_reduce(c, (wafer_reduce_op)op, &a,
				   WAFER_ALWAYS_COPY, &out[0]));
		OP(wafer_tensor_release(c, &out[0]));
	}
	OP(wafer_op_softmax(c, &a, WAFER_ALWAYS_COPY, &out[0]));
	OP(wafer_tensor_release(c, &out[0]));
	OP(wafer_tensor_create(c, WAFER_DTYPE_F32, 2, sq, data, &t));
	OP(wafer_op_matmul(c, &a, WAFER_ALWAYS_COPY, &t, WAFER_ALWAYS_COPY,
			   0, &out[0]));
	OP(wafer_op_matmul(c, &a, WAFER_ALWAYS_COPY, &t, WAFER_ALWAYS_COPY,
			   WAFER_MATMUL_TRANSPOSE_B, &out[1]));
	OP(wafer_tensor_release(c, &out[0]));
	OP(wafer_tensor_release(c, &out[1]));
	OP(wafer_tensor_release(c, &t));
	OP(wafer_tensor_release(c, &a));
	OP(wafer_tensor_release(c, &b));
	OP(wafer_tensor_release(c, &row));
	OP(wafer_sync(c));
#undef OP
	is_status(first, WAFER_OK, "ops: every operation of ops.h runs on "
				   "levelzero");
	size_t missing = 0;
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		if (!launched(want[i]) && missing++ < 5)
			diag("no launch of %s", want[i]);
	ok(missing == 0, "ops: they launched the %zu SPIR-V kernels expected",
	   sizeof want / sizeof want[0]);
	is_status(wafer_client_close(c), WAFER_OK, "ops: close");
	ok(show_violations() == 0, "ops: no call a real driver would refuse");
}

int main(void)
{
	const char *builddir = getenv("T_BUILDDIR");
	char driver_path[4096];
	void *driver;

	if (!builddir)
		skip_all("T_BUILDDIR is not set (run through make check)");
	setenv("FAKEZE_MEMORY", "67108864", 1);
	unsetenv("FAKEZE_DEVICES");
	unsetenv("FAKEZE_NO_IMMEDIATE");
	unsetenv("FAKEZE_NO_VM");
	unsetenv("FAKEZE_BUILD_FAIL");
	fz = fakeze_bind_or_end(builddir, driver_path, sizeof driver_path,
				&driver);

	const wafer_option opts[] = {{"core", "backend", "levelzero"}};
	wafer_runtime_options ro = {
		.struct_size = sizeof ro,
		.options = opts,
		.option_count = 1,
		.flags = WAFER_RUNTIME_NO_CONFIG_FILES,
	};
	if (!is_status(wafer_runtime_open(&ro, &runtime), WAFER_OK,
		       "runtime on levelzero")) {
		done_testing();
		return exit_status();
	}
	wafer_device_desc desc = {.struct_size = sizeof desc};
	ok(wafer_runtime_device_count(runtime) == 1 &&
		   wafer_runtime_device(runtime, 0, &desc) == WAFER_OK &&
		   strcmp(desc.backend, "levelzero") == 0,
	   "one levelzero device: %s", desc.name ? desc.name : "(none)");

	size_t strategies = 0;
	for (size_t i = 0; wafer__memory_strategies[i]; i++, strategies++) {
		run_client(wafer__memory_strategies[i]->name, "direct");
		run_client(wafer__memory_strategies[i]->name, "mpsc");
	}
	ok(strategies > 0, "%zu memory strategies, each on two channels",
	   strategies);
	test_ops();

	wafer_runtime_close(runtime);
	struct fakeze_usage u;
	fz->usage(&u);
	ok(u.objects == 0 && u.device_bytes == 0 && u.host_bytes == 0 &&
		   u.physical_bytes == 0 && u.reserved_bytes == 0,
	   "after runtime_close every Level Zero object and allocation is "
	   "freed");
	dlclose(driver);
	done_testing();
	return exit_status();
}
