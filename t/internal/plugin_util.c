/* wafer — SPDX-License-Identifier: MIT
 *
 * plugin_util: the header-only plugin helpers of <wafer/plugin_util.h>,
 * with a fake host and no plugin: element sizes of every dtype, ABI array
 * stepping, the init and device checks, the size parser of options, the
 * virtual-memory page checks, every catalogue reach check (and
 * its overflow cases), the deferred failure of a queue, the debug-only
 * launch checks, the program helpers: a program's kernels, the
 * cached build (on an in-memory cache of one entry) and the program
 * entries' macros, and the interop import check and ops macros. */
#include "build-config.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin_util.h>

#include "t/dtypes.h"
#include "t/tap.h"
#include "t/standins/fake_host.h"

static void dtype_sizes(void)
{
	is_int((long long)wafer_plugin_dtype_size(WAFER_DTYPE_NONE), 0,
	       "dtype_size(none)");
	is_str(wafer_plugin_dtype_name(WAFER_DTYPE_NONE), "none",
	       "dtype_name(%d) is \"none\"", (int)WAFER_DTYPE_NONE);
	for (size_t i = 0; i < T_DTYPE_COUNT; i++) {
		is_int((long long)wafer_plugin_dtype_size(t_dtypes[i].dtype),
		       (long long)t_dtypes[i].size, "dtype_size(%s)",
		       t_dtypes[i].name);
		is_str(wafer_plugin_dtype_name(t_dtypes[i].dtype),
		       t_dtypes[i].name, "dtype_name(%d) is NumPy's name",
		       (int)t_dtypes[i].dtype);
	}
	is_str(wafer_plugin_dtype_name(WAFER_DTYPE_I64 + 1), "unknown",
	       "dtype_name past the known dtypes is \"unknown\"");
	/* The cast rule's conversion of a double to an integer. */
	ok(wafer_plugin_double_to_i32(3e9) == INT32_MAX &&
		   wafer_plugin_double_to_i32(-3e9) == INT32_MIN &&
		   wafer_plugin_double_to_i32(NAN) == 0 &&
		   wafer_plugin_double_to_i32(-2.9) == -2,
	   "double_to_i32 saturates, sends NaN to 0, truncates");
	ok(wafer_plugin_double_to_i64(1e19) == INT64_MAX &&
		   wafer_plugin_double_to_i64(-1e19) == INT64_MIN &&
		   wafer_plugin_double_to_i64(-9223372036854775808.0) ==
			   INT64_MIN &&
		   wafer_plugin_double_to_i64(NAN) == 0 &&
		   wafer_plugin_double_to_i64(2.9) == 2,
	   "double_to_i64 saturates, sends NaN to 0, truncates");
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

static void sizes(void)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} good[] = {
		{"0", 0},
		{"65536", 65536},
		{"64k", 64u << 10},
		{"512KiB", 512u << 10},
		{"4M", 4u << 20},
		{"3GB", (uint64_t)3 << 30},
		{"1T", (uint64_t)1 << 40},
		{"16777215T", UINT64_MAX >> 40 << 40},
		{"18446744073709551615", UINT64_MAX},
	};
	static const char *const bad[] = {
		"", "-1", " 1", "+1", "K", "1X", "1Kb", "1KiBs", "1 K",
		"16777216T", "18446744073709551616",
	};
	uint64_t got;

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		got = 1;
		ok(wafer_plugin_parse_size(good[i].text, &got) == 0 &&
			   got == good[i].bytes,
		   "parse_size(\"%s\") is %llu", good[i].text,
		   (unsigned long long)good[i].bytes);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		got = 7;
		ok(wafer_plugin_parse_size(bad[i], &got) == -1 && got == 7,
		   "parse_size(\"%s\") is refused, its output untouched",
		   bad[i]);
	}
	ok(wafer_plugin_parse_size(NULL, &got) == -1, "parse_size(NULL)");
}

/* Pages 1 and 3 of a four-page range are mapped. */
static int util_page_mapped(const void *ctx, size_t index)
{
	const unsigned char *pages = ctx;

	return pages[index];
}

static void vm_pages(void)
{
	static const unsigned char pages[4] = {0, 1, 0, 1};
	const size_t g = 4096;

	status_is(wafer_plugin_vm_pages_check(&fake_host, "util", "vm_map",
					      0x10000, 4 * g, 0, g, g, 0,
					      util_page_mapped, pages),
		  WAFER_OK, "vm_pages_check: vm_map of an unmapped page");
	status_is(wafer_plugin_vm_pages_check(&fake_host, "util", "vm_map",
					      0x10000, 4 * g, 0, 3 * g, g, 0,
					      util_page_mapped, pages),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "vm_pages_check: vm_map over a mapped page");
	like(last_error,
	     "util: vm_map: page 1 (offset 4096) of range 0x10000 is already "
	     "mapped",
	     "  ... names the first one");
	status_is(wafer_plugin_vm_pages_check(&fake_host, "util", "vm_unmap",
					      0x10000, 4 * g, g, 3 * g, g, 1,
					      util_page_mapped, pages),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "vm_pages_check: vm_unmap over an unmapped page");
	like(last_error,
	     "util: vm_unmap: page 2 (offset 8192) of range 0x10000 is not "
	     "mapped",
	     "  ... names it");
	status_is(wafer_plugin_vm_pages_check(&fake_host, "util", "vm_unmap",
					      0x10000, 4 * g, 3 * g, g, g, 1,
					      util_page_mapped, pages),
		  WAFER_OK, "vm_pages_check: vm_unmap of a mapped page");
	/* No range: the span check refuses before any page is looked at
	 * (a NULL |ctx| would crash). */
	status_is(wafer_plugin_vm_pages_check(&fake_host, "util", "vm_map",
					      0x10000, 0, 0, g, g, 0,
					      util_page_mapped, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "vm_pages_check: not a reserved range");
	like(last_error, "is not a reserved range", "  ... says so");

	status_is(wafer_plugin_vm_native_check(&fake_host, "util", 0x10000,
					       4 * g, g + 8, g,
					       util_page_mapped, pages),
		  WAFER_OK, "vm_native_check: an offset on a mapped page");
	status_is(wafer_plugin_vm_native_check(&fake_host, "util", 0x10000,
					       4 * g, 2 * g, g,
					       util_page_mapped, pages),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "vm_native_check: an offset on an unmapped page");
	like(last_error,
	     "util: native: offset 8192 of range 0x10000 (16384 bytes) is "
	     "not mapped",
	     "  ... says so");
	status_is(wafer_plugin_vm_native_check(&fake_host, "util", 0x10000,
					       4 * g, 4 * g, g, NULL, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "vm_native_check: an offset past the range");
	like(last_error, "(16384 bytes) is outside it", "  ... says so");
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

static wafer_status acme_storage_native(void *d, wafer_resource r, size_t o,
					struct wafer_native_buffer *out)
{
	(void)d, (void)r, (void)o, (void)out;
	return WAFER_OK;
}
static wafer_status acme_storage_import(void *d,
					const struct wafer_native_buffer *b,
					wafer_resource *out)
{
	(void)d, (void)b, (void)out;
	return WAFER_OK;
}
static void acme_storage_forget(void *d, wafer_resource r)
{
	(void)d, (void)r;
}
static wafer_status acme_server_queue_native(void *d, void *q,
					     struct wafer_native_queue *out)
{
	(void)d, (void)q, (void)out;
	return WAFER_OK;
}
static wafer_status acme_server_queue_wrap(void *d, void *n, void **out)
{
	(void)d, (void)n, (void)out;
	return WAFER_OK;
}

static void interop(void)
{
	struct wafer_native_buffer b = {
		.struct_size = sizeof b,
		.kind = WAFER_NATIVE_CUDA_POINTER,
		.address = 0x10000,
		.size = 256,
	};
	wafer_resource r = 7;

	status_is(wafer_plugin_import_check(&fake_host, "acme", &b,
					    WAFER_NATIVE_CUDA_POINTER,
					    "cuda-pointer", &r),
		  WAFER_OK, "import_check: a whole pointer buffer");
	ok(r == 0, "  ... sets the resource to 0");
	b.kind = WAFER_NATIVE_HOST_POINTER;
	status_is(wafer_plugin_import_check(&fake_host, "acme", &b,
					    WAFER_NATIVE_CUDA_POINTER,
					    "cuda-pointer", &r),
		  WAFER_ERROR_INVALID_ARGUMENT, "import_check: another kind");
	is_str(last_error, "acme: import: native kind 1, not cuda-pointer (2)",
	       "  ... naming both");
	b.kind = WAFER_NATIVE_CUDA_POINTER;
	b.size = 0;
	status_is(wafer_plugin_import_check(&fake_host, "acme", &b,
					    WAFER_NATIVE_CUDA_POINTER,
					    "cuda-pointer", &r),
		  WAFER_ERROR_INVALID_ARGUMENT, "import_check: 0 bytes");
	b.size = 256;
	b.address = 0;
	status_is(wafer_plugin_import_check(&fake_host, "acme", &b,
					    WAFER_NATIVE_CUDA_POINTER,
					    "cuda-pointer", &r),
		  WAFER_ERROR_INVALID_ARGUMENT, "import_check: address 0");
	like(last_error, "no address", "  ... says so");
	b.address = UINT64_MAX - 16;
	status_is(wafer_plugin_import_check(&fake_host, "acme", &b,
					    WAFER_NATIVE_CUDA_POINTER,
					    "cuda-pointer", &r),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "import_check: an address range that wraps");
	b = (struct wafer_native_buffer){.struct_size = sizeof b,
					 .kind = WAFER_NATIVE_OPENCL_MEM,
					 .offset = 64,
					 .size = 256};
	status_is(wafer_plugin_import_check(&fake_host, "acme", &b,
					    WAFER_NATIVE_OPENCL_MEM,
					    "opencl-mem", &r),
		  WAFER_ERROR_INVALID_ARGUMENT, "import_check: no object");
	like(last_error, "no object", "  ... says so");
	b.object = &b;
	status_is(wafer_plugin_import_check(&fake_host, "acme", &b,
					    WAFER_NATIVE_OPENCL_MEM,
					    "opencl-mem", &r),
		  WAFER_OK, "import_check: an object and an offset");
	b.struct_size = offsetof(struct wafer_native_buffer, context);
	status_is(wafer_plugin_import_check(&fake_host, "acme", &b,
					    WAFER_NATIVE_OPENCL_MEM,
					    "opencl-mem", &r),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "import_check: a struct_size short of device_ordinal");
	status_is(wafer_plugin_import_check(&fake_host, "acme", NULL,
					    WAFER_NATIVE_OPENCL_MEM,
					    "opencl-mem", &r),
		  WAFER_ERROR_INVALID_ARGUMENT, "import_check: NULL");

	const struct wafer_storage_ops so = {
		WAFER_PLUGIN_INTEROP_STORAGE_OPS(acme)};
	const struct wafer_server_ops vo = {
		WAFER_PLUGIN_INTEROP_SERVER_OPS(acme)};
	ok(so.native == acme_storage_native &&
		   so.import == acme_storage_import &&
		   so.forget == acme_storage_forget &&
		   vo.queue_native == acme_server_queue_native &&
		   vo.queue_wrap == acme_server_queue_wrap,
	   "WAFER_PLUGIN_INTEROP_*_OPS fill the five interop entries");
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

/*===----------------------------------------------------------------------===
 * Programs
 *===----------------------------------------------------------------------===*/

/* A plugin's program kernel: the head, then its own part. */
struct util_kernel {
	struct wafer_plugin_program_kernel head;
	int handle;
};

static int made, destroyed;

/* make: kernels named "missing" are not found; others get a handle. */
static wafer_status util_make(void *ctx, void *kernel)
{
	struct util_kernel *k = kernel;

	if (strcmp(k->head.name, "missing") == 0) {
		fake_set_error("util: no kernel '%s' in program %s",
			       k->head.name, (const char *)ctx);
		return WAFER_ERROR_NOT_FOUND;
	}
	k->handle = 100 + made++;
	return WAFER_OK;
}

static void util_destroy(void *kernel)
{
	destroyed += ((struct util_kernel *)kernel)->handle;
}

static void program_kernels(void)
{
	struct wafer_plugin_program_kernels list = {
		&fake_host, "util", "prog.c", 4, NULL};
	const struct wafer_kernel *a = NULL, *again = NULL, *other = NULL,
				  *k = NULL;
	const size_t size = sizeof(struct util_kernel);

	made = destroyed = 0;
	status_is(wafer_plugin_program_kernel_get(&list, "saxpy", 2, 8, size,
						  util_make, "prog.c", &a),
		  WAFER_OK, "program_kernel_get: a new kernel");
	ok(a && strcmp(a->op, "saxpy") == 0 &&
		   strcmp(a->variant, "default") == 0 &&
		   a->dtype == WAFER_DTYPE_NONE && a->binding_count == 2 &&
		   a->params_size == 8 && a->struct_size == sizeof *a,
	   "  ... op = its name, variant default, dtype NONE, the counts");
	ok(a && a->impl == (const void *)a &&
		   ((const struct util_kernel *)a->impl)->handle == 100,
	   "  ... impl is the plugin's struct, filled by make");
	ok(wafer_plugin_kernel_is_program(a), "  ... is a program kernel");
	struct wafer_kernel catalogue = {.struct_size = sizeof catalogue,
					 .op = "add",
					 .dtype = WAFER_DTYPE_F32};
	ok(!wafer_plugin_kernel_is_program(&catalogue),
	   "a catalogue entry (it has a dtype) is not");
	status_is(wafer_plugin_program_kernel_get(&list, "saxpy", 2, 8, size,
						  util_make, "prog.c",
						  &again),
		  WAFER_OK, "the same name and counts again");
	ok(again == a && made == 1, "  ... the same entry, made once");
	status_is(wafer_plugin_program_kernel_get(&list, "saxpy", 3, 8, size,
						  util_make, "prog.c",
						  &other),
		  WAFER_OK, "the same name with other counts");
	ok(other && other != a && other->binding_count == 3 && made == 2,
	   "  ... a second entry");
	status_is(wafer_plugin_program_kernel_get(&list, "missing", 1, 0, size,
						  util_make, "prog.c", &k),
		  WAFER_ERROR_NOT_FOUND, "make's failure is returned");
	ok(k == NULL && list.first == (struct wafer_plugin_program_kernel *)
						 (void *)other,
	   "  ... and nothing is added");
	like(last_error, "util: no kernel 'missing' in program prog.c",
	     "  ... with make's text");
	status_is(wafer_plugin_program_kernel_get(&list, "wide", 5, 0, size,
						  util_make, "prog.c", &k),
		  WAFER_ERROR_INVALID_ARGUMENT, "more bindings than the most");
	is_str(last_error, "util: kernel wide of prog.c: 5 bindings, at most 4",
	       "  ... names the kernel, the program and both counts");
	ok(made == 2, "  ... make is not called");
	wafer_plugin_program_kernels_release(&list, util_destroy);
	ok(list.first == NULL && destroyed == 100 + 101,
	   "release destroys every kernel once and empties the list");
}

/* An in-memory cache of one entry, behind a host table that offers it. */
static struct {
	char key[256];
	unsigned char data[64];
	size_t size;
	int loads, stores;
} cache;

static void key_text(const struct wafer_cache_part *parts, size_t count,
		     char *out, size_t size)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < count && used + 1 < size; i++) {
		size_t n = parts[i].size < size - used - 1 ? parts[i].size
							   : size - used - 1;
		/* A NUL shows as '~', so the whole key reads as one string. */
		for (size_t c = 0; c < n; c++, used++)
			out[used] = ((const char *)parts[i].data)[c]
					    ? ((const char *)parts[i].data)[c]
					    : '~';
		out[used++] = '|';
		out[used] = '\0';
	}
}

static wafer_status mem_load(const struct wafer_host_services *host,
			     const struct wafer_cache_part *parts,
			     size_t count, void **out_data, size_t *out_size)
{
	char key[256];

	(void)host;
	cache.loads++;
	key_text(parts, count, key, sizeof key);
	*out_data = NULL;
	*out_size = 0;
	if (!cache.size || strcmp(key, cache.key) != 0)
		return WAFER_ERROR_NOT_FOUND;
	*out_data = malloc(cache.size);
	memcpy(*out_data, cache.data, cache.size);
	*out_size = cache.size;
	return WAFER_OK;
}

static wafer_status mem_store(const struct wafer_host_services *host,
			      const struct wafer_cache_part *parts,
			      size_t count, const void *data, size_t size)
{
	(void)host;
	cache.stores++;
	key_text(parts, count, cache.key, sizeof cache.key);
	cache.size = size < sizeof cache.data ? size : sizeof cache.data;
	memcpy(cache.data, data, cache.size);
	return WAFER_OK;
}

/* What the callbacks of a cached build saw and do. */
struct util_build {
	int compiled, loaded;
	char loaded_bytes[64];
	wafer_status load_gives, compile_gives;
	int store_nothing;
};

static wafer_status util_load(void *ctx, const void *binary, size_t size)
{
	struct util_build *b = ctx;

	b->loaded++;
	snprintf(b->loaded_bytes, sizeof b->loaded_bytes, "%.*s", (int)size,
		 (const char *)binary);
	return b->load_gives;
}

static wafer_status util_compile(void *ctx, void **out_binary,
				 size_t *out_size)
{
	struct util_build *b = ctx;

	b->compiled++;
	if (b->compile_gives != WAFER_OK) {
		fake_set_error("util: prog.c(3): error: expected ';'");
		return b->compile_gives;
	}
	if (!b->store_nothing) {
		*out_binary = strdup("BINARY");
		*out_size = 6;
	}
	return WAFER_OK;
}

static void cached_build(void)
{
	struct wafer_host_services host = fake_host;
	struct wafer_host_services old_host = fake_host;
	struct util_build b = {0};
	const struct wafer_cache_part key[] = {
		wafer_plugin_cache_text("util 1"),
		wafer_plugin_cache_part("src", 3),
	};
	struct wafer_plugin_cached_build build = {
		&host, "prog.c", "util on dev", key, 2, util_load, util_compile,
		&b};

	host.cache_load = mem_load;
	host.cache_free = free;
	host.cache_store = mem_store;
	old_host.struct_size = offsetof(struct wafer_host_services, cache_load);
	ok(wafer_plugin_has_cache(&host), "has_cache: a host offering it");
	ok(!wafer_plugin_has_cache(&fake_host) &&
		   !wafer_plugin_has_cache(&old_host),
	   "  ... not one without the entries, nor an ABI 1.1 table");
	ok(key[0].struct_size == sizeof key[0] && key[0].size == 7 &&
		   memcmp(key[0].data, "util 1", 7) == 0 && key[1].size == 3,
	   "cache_text counts the NUL, cache_part the bytes given");

	memset(&cache, 0, sizeof cache);
	log_reset();
	status_is(wafer_plugin_cached_build(&build), WAFER_OK,
		  "cached_build: the first time");
	ok(b.compiled == 1 && b.loaded == 0 && cache.stores == 1 &&
		   cache.size == 6 && memcmp(cache.data, "BINARY", 6) == 0,
	   "  ... compiled, and the binary stored");
	is_str(cache.key, "util 1~|src|", "  ... under the key's parts");
	like(log_text, "program: compiled prog.c (util on dev)",
	     "  ... logged as compiled");

	log_reset();
	status_is(wafer_plugin_cached_build(&build), WAFER_OK, "the second time");
	ok(b.compiled == 1 && b.loaded == 1 &&
		   strcmp(b.loaded_bytes, "BINARY") == 0 && cache.stores == 1,
	   "  ... loaded from the stored bytes, nothing compiled or stored");
	like(log_text, "program: from cache prog.c (util on dev)",
	     "  ... logged as from cache");

	log_reset();
	b.load_gives = WAFER_ERROR_BUILD;
	status_is(wafer_plugin_cached_build(&build), WAFER_OK,
		  "a cached binary that does not load");
	ok(b.loaded == 2 && b.compiled == 2 && cache.stores == 2,
	   "  ... is compiled again and stored again");
	like(log_text, "the cached binary of prog.c (util on dev) does not "
		       "load; compiling it again",
	     "  ... and the log says so");

	memset(&cache, 0, sizeof cache);
	b.compile_gives = WAFER_ERROR_BUILD;
	status_is(wafer_plugin_cached_build(&build), WAFER_ERROR_BUILD,
		  "a failed compilation is returned");
	like(last_error, "prog.c(3): error: expected ';'",
	     "  ... with the compiler's text");
	ok(cache.stores == 0, "  ... and nothing is stored");

	b.compile_gives = WAFER_OK;
	b.store_nothing = 1;
	status_is(wafer_plugin_cached_build(&build), WAFER_OK,
		  "a compilation that gives no binary");
	ok(cache.stores == 0, "  ... stores nothing");

	b = (struct util_build){0};
	build.host = &fake_host;
	log_reset();
	status_is(wafer_plugin_cached_build(&build), WAFER_OK,
		  "a host without the cache");
	status_is(wafer_plugin_cached_build(&build), WAFER_OK, "  ... twice");
	ok(b.compiled == 2 && b.loaded == 0,
	   "  ... compiles each time, loads nothing");
}

/* The program entries, declared and tabled by the macros. */
WAFER_PLUGIN_PROGRAM_ENTRIES(util);

wafer_status util_program_formats(void *device,
				  const wafer_program_format **out_formats,
				  size_t *out_count)
{
	static const wafer_program_format formats[] = {WAFER_PROGRAM_HOST_C};

	(void)device;
	*out_formats = formats;
	*out_count = 1;
	return WAFER_OK;
}

wafer_status util_program_load(void *device,
			       const struct wafer_program_source *source,
			       const char *options, void **out_program)
{
	(void)device, (void)source, (void)options;
	*out_program = NULL;
	return WAFER_ERROR_NOT_SUPPORTED;
}

wafer_status util_program_kernel(void *device, void *program,
				 const char *name, uint32_t binding_count,
				 size_t params_size,
				 const struct wafer_kernel **out_kernel)
{
	(void)device, (void)program, (void)name, (void)binding_count,
		(void)params_size;
	*out_kernel = NULL;
	return WAFER_ERROR_NOT_FOUND;
}

void util_program_release(void *device, void *program)
{
	(void)device, (void)program;
}

static void program_macros(void)
{
	const struct wafer_server_ops ops = {
		.struct_size = sizeof ops,
		WAFER_PLUGIN_PROGRAM_OPS(util),
	};

	ok(ops.program_formats == util_program_formats &&
		   ops.program_load == util_program_load &&
		   ops.program_kernel == util_program_kernel &&
		   ops.program_release == util_program_release,
	   "WAFER_PLUGIN_PROGRAM_OPS fills the four program entries");
}

int main(void)
{
	dtype_sizes();
	arrays();
	lifetime();
	sizes();
	vm_pages();
	reach();
	deferred();
	debug_checks();
	program_kernels();
	cached_build();
	program_macros();
	interop();
	done_testing();
	return exit_status();
}
