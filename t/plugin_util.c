/* wafer — SPDX-License-Identifier: MIT
 *
 * plugin_util: the header-only plugin helpers of <wafer/plugin_util.h>,
 * with a fake host and no plugin: element sizes of every dtype, ABI array
 * stepping, the init and device checks, every catalogue reach check (and
 * its overflow cases), the deferred failure of a queue, and the debug-only
 * launch checks. */
#include "build-config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin_util.h>

#include "t/tap.h"
#include "t/fake_host.h"

static void dtype_sizes(void)
{
	static const struct {
		wafer_dtype dtype;
		size_t size;
		const char *name;
	} want[] = {
		{WAFER_DTYPE_NONE, 0, "none"}, {WAFER_DTYPE_F32, 4, "f32"},
		{WAFER_DTYPE_F16, 2, "f16"},   {WAFER_DTYPE_BF16, 2, "bf16"},
		{WAFER_DTYPE_I32, 4, "i32"},   {WAFER_DTYPE_U8, 1, "u8"},
		{WAFER_DTYPE_F64, 8, "f64"},   {WAFER_DTYPE_I64, 8, "i64"},
	};

	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		is_int((long long)wafer_plugin_dtype_size(want[i].dtype),
		       (long long)want[i].size, "dtype_size(%s)", want[i].name);
	is_int((long long)wafer_plugin_dtype_size(WAFER_DTYPE_I64 + 1), 0,
	       "dtype_size of the first value past the known dtypes is 0");
	is_int((long long)wafer_plugin_dtype_size(UINT32_MAX), 0,
	       "dtype_size(UINT32_MAX) is 0");
}

/* A binding of a later minor version: longer than ours. */
struct long_binding {
	struct wafer_binding b;
	uint64_t extra[3];
};

static void arrays(void)
{
	struct long_binding longer[3];

	for (int i = 0; i < 3; i++) {
		memset(&longer[i], 0, sizeof longer[i]);
		longer[i].b.struct_size = sizeof(struct long_binding);
		longer[i].b.offset = (size_t)i * 64;
	}
	const struct wafer_binding *b = wafer_plugin_array_at(longer, 2);
	ok(b == &longer[2].b && b->offset == 128,
	   "array_at steps by the first element's struct_size");
}

static void lifetime(void)
{
	struct wafer_host_services short_host = fake_host;
	struct wafer_plugin_init_args args = {
		.struct_size = sizeof args,
		.host = &fake_host,
		.option_count = 2,
	};

	ok(wafer_plugin_host_usable(&fake_host), "a full host table is usable");
	short_host.struct_size = offsetof(struct wafer_host_services, log);
	ok(!wafer_plugin_host_usable(&short_host) &&
		   !wafer_plugin_host_usable(NULL),
	   "a host table without log, or none, is not");
	status_is(wafer_plugin_init_check(&args, "util"),
		  WAFER_ERROR_INVALID_ARGUMENT, "init_check: options at NULL");
	like(last_error, "util: 2 options at NULL", "  ... says so");
	args.option_count = 0;
	status_is(wafer_plugin_init_check(&args, "util"), WAFER_OK,
		  "init_check: sound arguments");
	status_is(wafer_plugin_init_check(NULL, "util"),
		  WAFER_ERROR_INVALID_ARGUMENT, "init_check: no arguments");

	struct wafer_device_info full = {.struct_size = sizeof full,
					 .memory_bytes = 42,
					 .compute_units = 7};
	struct wafer_device_info out;
	memset(&out, 0xff, sizeof out);
	out.struct_size = offsetof(struct wafer_device_info, capabilities);
	wafer_plugin_device_info_copy(&out, &full);
	ok(out.memory_bytes == 42 && out.compute_units == UINT32_MAX &&
		   out.struct_size ==
			   offsetof(struct wafer_device_info, capabilities),
	   "device_info_copy fills an older core's part only");
	status_is(wafer_plugin_device_index_check(&fake_host, "util", 1, 1),
		  WAFER_ERROR_NOT_FOUND, "device index past the count");
	like(last_error, "util: no device 1 (there is 1)", "  ... says so");
	status_is(wafer_plugin_device_index_check(&fake_host, "util", 0, 1),
		  WAFER_OK, "device index 0 of 1");
}

static void reach(void)
{
	size_t sizes[3] = {64, 64, 64};
	struct wafer_plugin_reach r = {&fake_host, "util", "k", sizes, 3};
	uint64_t count, ra, rb, spans[3];

	status_is(wafer_plugin_check_count(&r, 16, 4), WAFER_OK,
		  "16 f32 fit 64-byte bindings");
	status_is(wafer_plugin_check_count(&r, 17, 4), WAFER_ERROR_OUT_OF_RANGE,
		  "17 f32 do not");
	like(last_error, "util: launch k: binding 0 holds 64 bytes, too few "
			 "for 17 elements of 4 bytes",
	     "  ... with the sizes");
	status_is(wafer_plugin_check_holds(&r, 1, UINT64_MAX, 8),
		  WAFER_ERROR_OUT_OF_RANGE, "holds: elements x size overflow");

	struct wafer_binary_strided_params bp = {
		.rank = 2, .shape = {4, 4}, .a_strides = {4, 1},
		.b_strides = {0, 1}, .a_offset = 0, .b_offset = 12};
	status_is(wafer_plugin_check_binary_strided(&r, &bp, 4, &count, &ra,
						    &rb),
		  WAFER_OK, "binary strided in range");
	ok(count == 16 && ra == 16 && rb == 16, "  ... count and reaches");
	bp.b_offset = 13;
	status_is(wafer_plugin_check_binary_strided(&r, &bp, 4, NULL, NULL,
						    NULL),
		  WAFER_ERROR_OUT_OF_RANGE, "b's view one past its binding");
	like(last_error, "binding 2 holds 64 bytes, too few for 17",
	     "  ... names binding 2");
	bp.rank = 0;
	status_is(wafer_plugin_check_binary_strided(&r, &bp, 4, NULL, NULL,
						    NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "rank 0");
	bp.rank = WAFER_KERNEL_MAX_RANK + 1;
	status_is(wafer_plugin_check_binary_strided(&r, &bp, 4, NULL, NULL,
						    NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "rank past the maximum");
	bp.rank = 2;
	bp.shape[1] = 0;
	status_is(wafer_plugin_check_binary_strided(&r, &bp, 4, NULL, NULL,
						    NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "a dimension of 0");
	bp.shape[1] = 4;
	bp.b_offset = 0;
	bp.a_strides[0] = UINT64_MAX / 2;
	status_is(wafer_plugin_check_binary_strided(&r, &bp, 4, NULL, NULL,
						    NULL),
		  WAFER_ERROR_OUT_OF_RANGE, "strides that overflow");
	like(last_error, "binding 1: the view's strides overflow",
	     "  ... says so");

	struct wafer_strided_copy_params cp = {
		.rank = 1, .shape = {8}, .strides = {2}, .offset = 1};
	status_is(wafer_plugin_check_copy_strided(&r, &cp, 4, &count, &ra),
		  WAFER_OK, "copy strided in range");
	ok(count == 8 && ra == 16, "  ... count and reach");
	cp.offset = 2;
	status_is(wafer_plugin_check_copy_strided(&r, &cp, 4, NULL, NULL),
		  WAFER_ERROR_OUT_OF_RANGE, "copy strided one past");
	cp.offset = UINT64_MAX - 14;
	status_is(wafer_plugin_check_copy_strided(&r, &cp, 4, NULL, NULL),
		  WAFER_ERROR_OUT_OF_RANGE, "copy strided: reach of 2^64");

	struct wafer_rows_params rp = {.rows = 4, .cols = 4};
	status_is(wafer_plugin_check_rows(&r, &rp, 4, 1, &count), WAFER_OK,
		  "4x4 rows, full output");
	ok(count == 16, "  ... elements");
	rp.cols = 5;
	status_is(wafer_plugin_check_rows(&r, &rp, 4, 0, NULL),
		  WAFER_ERROR_OUT_OF_RANGE, "4x5 rows into 64 bytes");
	rp.cols = 0;
	status_is(wafer_plugin_check_rows(&r, &rp, 4, 0, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "0 columns");
	rp.cols = UINT64_MAX;
	status_is(wafer_plugin_check_rows(&r, &rp, 4, 0, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "rows x cols overflow");

	struct wafer_matmul_params mp = {.batch = 1, .m = 4, .n = 4, .k = 4};
	status_is(wafer_plugin_check_matmul(&r, &mp, 4, spans), WAFER_OK,
		  "4x4x4 matmul");
	ok(spans[0] == 16 && spans[1] == 16 && spans[2] == 16,
	   "  ... spans");
	mp.batch = 2;
	mp.batch_stride_c = 16;
	status_is(wafer_plugin_check_matmul(&r, &mp, 4, NULL),
		  WAFER_ERROR_OUT_OF_RANGE, "two batches of C into 64 bytes");
	mp.batch_stride_c = 15;
	status_is(wafer_plugin_check_matmul(&r, &mp, 4, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "batch_stride_c below m x n");
	mp.batch_stride_c = 16;
	mp.batch_stride_a = UINT64_MAX;
	status_is(wafer_plugin_check_matmul(&r, &mp, 4, NULL),
		  WAFER_ERROR_OUT_OF_RANGE, "batch strides overflow");
	mp.batch = 1;
	mp.transpose_a = 2;
	status_is(wafer_plugin_check_matmul(&r, &mp, 4, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "transpose_a of 2");
	ok(wafer_plugin_batch_span(3, 0, 10) == 10 &&
		   wafer_plugin_batch_span(3, 20, 10) == 50,
	   "batch_span: shared and strided batches");
}

static void deferred(void)
{
	struct wafer_plugin_deferred d = {0};
	char long_text[2000];

	memset(long_text, 'x', sizeof long_text - 1);
	long_text[sizeof long_text - 1] = '\0';
	status_is(wafer_plugin_deferred_report(&d, &fake_host), WAFER_OK,
		  "nothing deferred: OK");
	wafer_plugin_deferred_set(&d, WAFER_ERROR_DEVICE, "first: %s",
				  long_text);
	wafer_plugin_deferred_set(&d, WAFER_ERROR_INTERNAL, "second");
	wafer_plugin_deferred_set(&d, WAFER_ERROR_INTERNAL, "third");
	last_error[0] = '\0';
	status_is(wafer_plugin_deferred_report(&d, &fake_host),
		  WAFER_ERROR_DEVICE, "the first failure's status");
	ok(strncmp(last_error, "first: ", 7) == 0 &&
		   strlen(last_error) == 7 + strlen(long_text) +
						  strlen(" (and 2 later failures)"),
	   "  ... its full text, not cut");
	like(last_error, " (and 2 later failures)", "  ... and the count");
	status_is(wafer_plugin_deferred_report(&d, &fake_host), WAFER_OK,
		  "reported once, then forgotten");
	wafer_plugin_deferred_set(&d, WAFER_ERROR_DEVICE, "alone");
	wafer_plugin_deferred_report(&d, &fake_host);
	is_str(last_error, "alone", "one failure: no count");
	wafer_plugin_deferred_set(&d, WAFER_ERROR_DEVICE, "dropped");
	wafer_plugin_deferred_clear(&d);
	ok(d.status == WAFER_OK && d.detail == NULL && d.later == 0,
	   "clear forgets it");
}

static void debug_checks(void)
{
	struct wafer_kernel k = {.struct_size = sizeof k,
				 .op = "add",
				 .binding_count = 2,
				 .params_size = 8};
	struct wafer_binding b[2] = {binding(64, 0, 64), binding(128, 64, 64)};
	uint64_t params = 16;
	struct wafer_launch l = {.struct_size = sizeof l,
				 .kernel = &k,
				 .bindings = b,
				 .binding_count = 2,
				 .params = &params,
				 .params_size = 8};

	status_is(wafer_plugin_debug_check_launch(&fake_host, "util", &l, 64),
		  WAFER_OK, "debug: a sound launch");
	l.binding_count = 1;
	status_is(wafer_plugin_debug_check_launch(&fake_host, "util", &l, 64),
		  WAFER_ERROR_INVALID_ARGUMENT, "debug: too few bindings");
	like(last_error, "takes 2 bindings, got 1", "  ... says so");
	l.binding_count = 2;
	l.params_size = 4;
	status_is(wafer_plugin_debug_check_launch(&fake_host, "util", &l, 64),
		  WAFER_ERROR_INVALID_ARGUMENT, "debug: short parameter block");
	l.params_size = 8;
	b[1].offset = 32;
	status_is(wafer_plugin_debug_check_launch(&fake_host, "util", &l, 64),
		  WAFER_ERROR_INVALID_ARGUMENT, "debug: misaligned binding");
	b[1].offset = 64;
	b[0].resource = 0;
	status_is(wafer_plugin_debug_check_launch(&fake_host, "util", &l, 64),
		  WAFER_ERROR_INVALID_ARGUMENT, "debug: no resource");
	status_is(wafer_plugin_debug_check_launch(&fake_host, "util", NULL, 64),
		  WAFER_ERROR_INVALID_ARGUMENT, "debug: no launch");
}

int main(void)
{
	dtype_sizes();
	arrays();
	lifetime();
	reach();
	deferred();
	debug_checks();
	done_testing();
	return exit_status();
}
