/* wafer — SPDX-License-Identifier: MIT
 *
 * cuda_plugin.c: the cuda plugin through the vendor ABI alone — dlopen,
 * a fake host services table, every entry driven the way the core would.
 *
 * By default the plugin runs on t/standins/fakecuda.c, a stand-in driver (no GPU
 * needed), which also injects the failures a real machine rarely shows:
 * no driver, an old driver, cuInit failing, a missing entry point, no
 * device, an old GPU, no pinned memory, a kernel touching freed memory.
 * The stand-in checks the driver's contracts strictly (contexts current,
 * each stream's context, asynchronous streams, stream-ordered memory in
 * stream order, pinned versus pageable copies, whole-mapping unmaps,
 * no read of device memory nothing wrote, as initcheck checks) and runs
 * each kernel over the grid and block it was launched with, so the
 * same storage, staging, virtual-memory and launch code that runs on the
 * GPU is exercised here. At the end the test calls the stand-in's entry
 * points itself, making on purpose the mistakes it must catch (a grid
 * short of tiles, a block that is not the kernel's, an unknown kernel or
 * attribute, memory out of stream order, another context's stream,
 * reads of unwritten memory).
 *
 *   t/cuda/plugin            on the stand-in (make check)
 *   t/cuda/plugin --real     the driver-neutral part on libcuda.so.1 and
 *                            a real GPU (dev/gpu-check.sh runs it, also
 *                            under compute-sanitizer) */
#include "build-config.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wafer/plugin.h>
#include <wafer/plugin_util.h>

#include "t/standins/fakecuda.h"
#include "t/half.h"
#include "t/tap.h"

/* A fake core (host services that record what the plugin says), the
 * plugin on the stand-in or the real driver, and the setup helpers. */
#include "t/standins/cuda_host.h"

/*===----------------------------------------------------------------------===
 * Helpers
 *===----------------------------------------------------------------------===*/

static fakecuda_reset_fn fake_reset;

/* The checks the core makes before launch, as the debug-only helper of
 * <wafer/plugin_util.h> makes them for the cuda plugin. */
static wafer_status core_checks(const struct wafer_launch *l)
{
	return wafer_plugin_debug_check_launch(&fake_host, "cuda", l, 256);
}

/* When set, launch() below runs the core's checks only. */
static int core_checks_only;

static wafer_status launch(void *device, void *queue, const char *op,
			   wafer_dtype dtype, const struct wafer_binding *b,
			   uint32_t nb, uint64_t count, double value)
{
	const struct wafer_kernel *kernel = find_kernel(device, op, dtype);
	struct wafer_fill_params fill = {.count = count, .value = value};
	struct wafer_elementwise_params ew = {.count = count};
	int is_fill = strcmp(op, WAFER_KERNEL_FILL) == 0;
	int is_noop = strcmp(op, WAFER_KERNEL_NOOP) == 0;
	struct wafer_launch l = launch_of(
		kernel, b, nb,
		is_noop   ? NULL
		: is_fill ? (const void *)&fill
			  : (const void *)&ew,
		is_noop ? 0 : is_fill ? sizeof fill : sizeof ew, count);
	if (!kernel)
		return WAFER_ERROR_NOT_FOUND;
	if (core_checks_only)
		return core_checks(&l);
	return plugin->server->launch(device, queue, &l);
}

#define values host_values

static wafer_status sync_queue(void *device, void *queue)
{
	return plugin->server->sync(device, queue);
}

/*===----------------------------------------------------------------------===
 * Descriptor and options
 *===----------------------------------------------------------------------===*/

/* The descriptor's form is the plugin-ABI suite's (t/abi); the cuda
 * plugin offers stream-ordered allocation and virtual memory. */
static void test_descriptor(wafer_plugin_query_fn query)
{
	plugin = query(WAFER_PLUGIN_ABI_MAJOR, &fake_host);
	if (!ok(plugin != NULL, "query returns a descriptor")) {
		done_testing();
		exit(exit_status());
	}
	ok(plugin->storage->alloc_async && plugin->storage->vm_reserve,
	   "storage offers stream-ordered allocation and virtual memory");
}

static void bad_option(const char *key, const char *value, const char *want)
{
	struct wafer_plugin_option opt =
		option(key, value, "/etc/wafer/conf.d/10-cuda.conf:3");
	void *state = (void *)1;

	status_is(init_with(&opt, 1, &state), WAFER_ERROR_CONFIG,
		  "%s = '%s' is a configuration error", key, value);
	ok(state == NULL, "  ... no state");
	like(last_error, want, "  ... detail: %s", last_error);
}

static void test_options(void)
{
	struct wafer_plugin_option opts[2];
	void *state;

	bad_option("release_threshold", "lots",
		   "/etc/wafer/conf.d/10-cuda.conf:3: [cuda] "
		   "release_threshold: expected a size");
	bad_option("release_threshold", "-1", "got '-1'");
	bad_option("release_threshold", "1X", "got '1X'");
	bad_option("staging_chunk", "3M", "a power of two from 64K");
	bad_option("staging_chunk", "32K", "a power of two from 64K");
	bad_option("staging_chunk", "4G", "a power of two from 64K to 2G");
	bad_option("staging_limit", "many", "[cuda] staging_limit");
	bad_option("cublas", "libcublas.so", "auto, no or an absolute path");
	bad_option("driver_library", "", "a file name");

	opts[0] = option("staging_chunk", "8M", "api");
	opts[1] = option("staging_limit", "4M", "api");
	state = (void *)1;
	status_is(init_with(opts, 2, &state), WAFER_ERROR_CONFIG,
		  "staging_limit below staging_chunk is an error");
	like(last_error, "staging_limit (4194304 bytes) is smaller than "
	     "staging_chunk (8388608 bytes)",
	     "  ... naming both");

	log_reset();
	opts[0] = option("colour", "green", "/etc/wafer/conf.d/10-cuda.conf:9");
	status_is(init_with(opts, 1, &state), WAFER_OK,
		  "an unknown option does not fail init");
	like(log_text, "/etc/wafer/conf.d/10-cuda.conf:9: [cuda] unknown "
	     "option 'colour' ignored",
	     "  ... it is logged with its origin");
	plugin->shutdown(state);

	opts[0] = option("release_threshold", "512KiB", "api");
	opts[1] = option("staging_limit", "0", "api");
	status_is(init_with(opts, 2, &state), WAFER_OK,
		  "release_threshold = 512KiB and staging_limit = 0 are fine");
	plugin->shutdown(state);
}

/*===----------------------------------------------------------------------===
 * Without a usable driver
 *===----------------------------------------------------------------------===*/

/* Inits with |opt| (if any) and checks that the plugin reports no devices
 * with a reason containing |want|. */
static void expect_no_devices(const struct wafer_plugin_option *opt,
			      const char *want, const char *what)
{
	void *state = NULL;
	uint32_t count = 99;
	struct wafer_device_info info = {.struct_size = sizeof info};
	void *device = (void *)1;

	status_is(init_with(opt, opt ? 1 : 0, &state), WAFER_OK,
		  "%s: init succeeds", what);
	if (!state)
		return;
	last_error[0] = '\0';
	status_is(plugin->device_count(state, &count), WAFER_ERROR_NO_DEVICE,
		  "%s: device_count reports an error", what);
	is_int(count, 0, "%s: ... and zero devices", what);
	like(last_error, want, "%s: reason: %s", what, last_error);
	status_is(plugin->device_info(state, 0, &info), WAFER_ERROR_NOT_FOUND,
		  "%s: device_info(0) is NOT_FOUND", what);
	status_is(plugin->device_open(state, 0, &device),
		  WAFER_ERROR_NOT_FOUND, "%s: device_open(0) is NOT_FOUND",
		  what);
	ok(device == NULL, "%s: ... with no device", what);
	plugin->shutdown(state);
}

static void test_no_driver(void)
{
	struct wafer_plugin_option opt;
	void *probe;

	/* A driver library that is not there. The stand-in is named
	 * explicitly by init_with; this option comes later and wins. */
	opt = option("driver_library", "/nonexistent/libcuda.so.1", "api");
	expect_no_devices(&opt,
			  "/nonexistent/libcuda.so.1 not found: "
			  "/nonexistent/libcuda.so.1: cannot open shared "
			  "object file",
			  "missing driver library");

	/* The plain name, as on a machine without the NVIDIA driver. */
	probe = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (probe) {
		dlclose(probe);
		ok(1, "# SKIP libcuda.so.1 is installed here: the default "
		      "search finds it");
	} else {
		opt = option("driver_library", "libcuda.so.1", "api");
		expect_no_devices(&opt, "libcuda.so.1 not found: ",
				  "no libcuda.so.1");
	}

	/* Not a driver: a library without cuDriverGetVersion. */
	opt = option("driver_library", "libm.so.6", "api");
	expect_no_devices(&opt, "libm.so.6 is not a CUDA driver",
			  "not a driver");

	if (real)
		return;
	setenv("FAKECUDA_VERSION", "11080", 1);
	expect_no_devices(NULL,
			  "driver too old: API version 11080, need 12000 "
			  "(CUDA 12.0)",
			  "CUDA 11.8 driver");
	unsetenv("FAKECUDA_VERSION");

	setenv("FAKECUDA_INIT", "100", 1); /* CUDA_ERROR_NO_DEVICE */
	expect_no_devices(NULL,
			  "cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable "
			  "device is detected",
			  "cuInit fails");
	unsetenv("FAKECUDA_INIT");

	setenv("FAKECUDA_MISSING", "cuMemCreate", 1);
	expect_no_devices(NULL,
			  "cuMemCreate: not offered by the driver at API "
			  "version 12000",
			  "an entry point missing");
	unsetenv("FAKECUDA_MISSING");

	setenv("FAKECUDA_DEVICES", "0", 1);
	expect_no_devices(NULL, "the driver sees no GPU (cuDeviceGetCount: 0)",
			  "no GPU");
	unsetenv("FAKECUDA_DEVICES");

	setenv("FAKECUDA_ARCH", "70", 1);
	expect_no_devices(NULL,
			  "no GPU of compute capability 8.0 or later (GPU 0 "
			  "has compute capability 7.0)",
			  "a Volta GPU");
	unsetenv("FAKECUDA_ARCH");
}

/*===----------------------------------------------------------------------===
 * Devices
 *===----------------------------------------------------------------------===*/

static void test_device_info(void *state)
{
	struct wafer_device_info info = {.struct_size = sizeof info};
	uint32_t count = 0;

	status_is(plugin->device_count(state, &count), WAFER_OK,
		  "device_count");
	ok(count >= 1, "at least one device (%u)", count);
	status_is(plugin->device_info(state, 0, &info), WAFER_OK,
		  "device_info(0)");
	ok(info.name[0] != '\0', "device name: %s", info.name);
	if (!real)
		is_str(info.name, "Fake GPU 0 (compute 9.0, 132 SMs)",
		       "  ... name, compute capability and SMs");
	ok(info.memory_bytes > 0, "memory: %" PRIu64 " bytes",
	   info.memory_bytes);
	is_int((long long)info.alloc_alignment, 256, "alloc_alignment 256");
	ok(info.vm_granularity >= 4096 &&
		   (info.vm_granularity & (info.vm_granularity - 1)) == 0,
	   "vm_granularity %zu is a power of two", info.vm_granularity);
	ok((info.capabilities & (WAFER_CAP_F16 | WAFER_CAP_BF16 |
				 WAFER_CAP_PINNED_HOST)) ==
		   (WAFER_CAP_F16 | WAFER_CAP_BF16),
	   "capabilities: f16, bf16, no pinned host (retired in ABI 1.1)");
	ok(!(info.capabilities & WAFER_CAP_HOST_MEMORY),
	   "  ... device memory is not host memory");
	ok(info.compute_units >= 1, "compute units: %u", info.compute_units);

	plugin->device_info(state, count, &info);
	like(last_error, "no device", "device_info past the last device: %s",
	     last_error);
}

static void test_kernel_table(void *device)
{
	static const char *const ops[] = {
		WAFER_KERNEL_FILL, WAFER_KERNEL_COPY, WAFER_KERNEL_RELU,
		WAFER_KERNEL_ADD, WAFER_KERNEL_MUL,
	};
	static const wafer_dtype dtypes[] = {WAFER_DTYPE_F32, WAFER_DTYPE_F16,
					     WAFER_DTYPE_BF16};
	const struct wafer_kernel *table;
	size_t count;
	int all = 1, sizes = 1;

	status_is(plugin->device_kernels(device, &table, &count), WAFER_OK,
		  "device_kernels");
	ok(find_kernel(device, WAFER_KERNEL_NOOP, WAFER_DTYPE_F32) != NULL,
	   "noop is offered");
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		for (size_t d = 0; d < 3; d++)
			if (!find_kernel(device, ops[i], dtypes[d])) {
				all = 0;
				diag("missing %s dtype %d", ops[i], dtypes[d]);
			}
	ok(all, "fill, copy, relu, add, mul in f32, f16 and bf16");
	for (size_t i = 0; i < count; i++)
		sizes &= table[i].struct_size == sizeof(struct wafer_kernel) &&
			 table[i].variant && table[i].impl;
	ok(sizes, "every entry has struct_size, a variant and an impl");
	static const char *const f32_ops[] = {
		WAFER_KERNEL_NEG, WAFER_KERNEL_ABS, WAFER_KERNEL_EXP,
		WAFER_KERNEL_LOG, WAFER_KERNEL_SQRT, WAFER_KERNEL_GELU,
		WAFER_KERNEL_SIGMOID, WAFER_KERNEL_TANH, WAFER_KERNEL_SUB,
		WAFER_KERNEL_DIV, WAFER_KERNEL_MAX, WAFER_KERNEL_MIN,
		WAFER_KERNEL_ADD_SCALAR, WAFER_KERNEL_SUB_SCALAR,
		WAFER_KERNEL_MUL_SCALAR, WAFER_KERNEL_DIV_SCALAR,
		WAFER_KERNEL_MAX_SCALAR, WAFER_KERNEL_MIN_SCALAR,
		WAFER_KERNEL_ADD_STRIDED, WAFER_KERNEL_SUB_STRIDED,
		WAFER_KERNEL_MUL_STRIDED, WAFER_KERNEL_DIV_STRIDED,
		WAFER_KERNEL_MAX_STRIDED, WAFER_KERNEL_MIN_STRIDED,
		WAFER_KERNEL_COPY_STRIDED, WAFER_KERNEL_CAST,
		WAFER_KERNEL_REDUCE_SUM, WAFER_KERNEL_REDUCE_MAX,
		WAFER_KERNEL_REDUCE_MEAN, WAFER_KERNEL_SOFTMAX,
		WAFER_KERNEL_MATMUL,
	};
	all = 1;
	for (size_t i = 0; i < sizeof f32_ops / sizeof f32_ops[0]; i++)
		for (size_t d = 0; d < 3; d++)
			if (!find_kernel(device, f32_ops[i], dtypes[d])) {
				all = 0;
				diag("missing %s dtype %d", f32_ops[i],
				     dtypes[d]);
			}
	ok(all, "the whole catalogue in f32, f16 and bf16");
	ok(find_kernel(device, WAFER_KERNEL_COPY, WAFER_DTYPE_I32) &&
		   find_kernel(device, WAFER_KERNEL_COPY_STRIDED,
			       WAFER_DTYPE_I32) &&
		   find_kernel(device, WAFER_KERNEL_CAST, WAFER_DTYPE_I32),
	   "copy, copy_strided and cast in i32");
}

/*===----------------------------------------------------------------------===
 * Storage
 *===----------------------------------------------------------------------===*/

/* Uploads |n| bytes, scribbles over the source at once, downloads and
 * compares after sync. */
static void roundtrip(void *device, void *queue, size_t n, const char *what)
{
	const struct wafer_storage_ops *st = plugin->storage;
	unsigned char *src = bytes(n), *want = bytes(n), *got = bytes(n);
	wafer_resource r = alloc_or_die(device, n);

	pattern(want, n, (uint32_t)n);
	memcpy(src, want, n);
	status_is(st->copy_in(device, queue, r, 0, src, n), WAFER_OK,
		  "%s: copy_in %zu bytes", what, n);
	/* The caller may reuse |src| as soon as copy_in returns. */
	memset(src, 0x5a, n);
	memset(got, 0xa5, n);
	status_is(st->copy_out(device, queue, r, 0, got, n), WAFER_OK,
		  "%s: copy_out %zu bytes", what, n);
	status_is(sync_queue(device, queue), WAFER_OK, "%s: sync", what);
	ok(memcmp(got, want, n) == 0,
	   "%s: %zu bytes came back as uploaded, though the source was "
	   "overwritten at once",
	   what, n);
	st->free(device, r);
	free(src);
	free(want);
	free(got);
}

static void test_copies(void *device, void *queue, const char *what)
{
	static const size_t sizes[] = {1,      255,         4096,
				       65536,  65537,       1 << 20,
				       5 << 20, (9 << 20) + 3};

	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		roundtrip(device, queue, sizes[i], what);
}

/* Offsets, several downloads into one destination (the later wins), and
 * device-to-device copies, overlapping too. */
static void test_copy_order(void *device, void *queue)
{
	const struct wafer_storage_ops *st = plugin->storage;
	const size_t n = 3 << 20;
	unsigned char *a = bytes(n), *b = bytes(n), *got = bytes(n),
		      *want = bytes(n);
	wafer_resource ra = alloc_or_die(device, n);
	wafer_resource rb = alloc_or_die(device, n);

	pattern(a, n, 1);
	pattern(b, n, 2);
	st->copy_in(device, queue, ra, 0, a, n);
	st->copy_in(device, queue, rb, 0, b, n);
	st->copy_out(device, queue, ra, 0, got, n);
	st->copy_out(device, queue, rb, 0, got, n);
	status_is(sync_queue(device, queue), WAFER_OK,
		  "two downloads into one buffer: sync");
	ok(memcmp(got, b, n) == 0, "  ... the later download wins");

	st->copy_in(device, queue, ra, 1000, b, 5000);
	st->copy_out(device, queue, ra, 0, got, n);
	status_is(sync_queue(device, queue), WAFER_OK, "copy_in at an offset");
	memcpy(want, a, n);
	memcpy(want + 1000, b, 5000);
	ok(memcmp(got, want, n) == 0, "  ... lands at the offset");

	status_is(st->copy(device, queue, rb, 4096, ra, 0, 65536), WAFER_OK,
		  "device-to-device copy");
	st->copy_out(device, queue, rb, 0, got, n);
	sync_queue(device, queue);
	memcpy(want, b, n);
	memcpy(want + 4096, a, 1000);
	memcpy(want + 5096, b, 5000);
	memcpy(want + 10096, a + 6000, 65536 - 6000);
	ok(memcmp(got, want, n) == 0, "  ... copies the bytes");

	/* Overlapping, both directions (CUDA leaves that undefined). */
	static const struct {
		size_t dst, src;
		const char *name;
	} overlaps[] = {
		{256, 0, "overlapping copy upwards"},
		{0, 512, "overlapping copy downwards"},
	};
	for (size_t i = 0; i < 2; i++) {
		size_t to = overlaps[i].dst, from = overlaps[i].src;
		st->copy_in(device, queue, ra, 0, a, n);
		status_is(st->copy(device, queue, ra, to, ra, from, 1 << 20),
			  WAFER_OK, "%s", overlaps[i].name);
		st->copy_out(device, queue, ra, 0, got, n);
		sync_queue(device, queue);
		memcpy(want, a, n);
		memmove(want + to, a + from, 1 << 20);
		ok(memcmp(got, want, n) == 0, "  ... behaves like memmove");
	}

	st->free(device, ra);
	st->free(device, rb);
	free(a);
	free(b);
	free(got);
	free(want);
}

static void test_alloc_errors(void *device, uint64_t memory_bytes)
{
	const struct wafer_storage_ops *st = plugin->storage;
	size_t too_much = (size_t)memory_bytes + ((size_t)1 << 30);
	wafer_resource r = 1;

	status_is(st->alloc(device, too_much, &r), WAFER_ERROR_OUT_OF_MEMORY,
		  "alloc of 1 GiB more than the device has");
	ok(r == 0, "  ... sets the resource to 0");
	like(last_error, "CUDA_ERROR_OUT_OF_MEMORY",
	     "  ... with the driver's error: %s", last_error);
}

static void test_async(void *device, void *queue)
{
	const struct wafer_storage_ops *st = plugin->storage;
	struct fakecuda_stats before = stats(), after;
	const size_t n = 1 << 20;
	unsigned char *a = bytes(n), *got = bytes(n);
	wafer_resource r = 0;

	pattern(a, n, 9);
	status_is(st->alloc_async(device, queue, n, &r), WAFER_OK,
		  "alloc_async");
	ok(r != 0 && r % 256 == 0, "  ... an aligned resource");
	st->copy_in(device, queue, r, 0, a, n);
	st->copy_out(device, queue, r, 0, got, n);
	status_is(st->free_async(device, queue, r), WAFER_OK,
		  "free_async right after the copies");
	status_is(sync_queue(device, queue), WAFER_OK, "  ... sync");
	ok(memcmp(a, got, n) == 0, "  ... the copies ran before the free");
	if (!real) {
		after = stats();
		ok(after.async_allocs == before.async_allocs + 1 &&
			   after.async_frees == before.async_frees + 1,
		   "  ... cuMemAllocAsync and cuMemFreeAsync were called");
	}
	free(a);
	free(got);
}

/* host_alloc is retired (the core never staged through it); the plugin
 * stages uploads through its own pinned pool (staging.c). */
static void test_host_memory(void *device, void *queue)
{
	const size_t n = 1 << 20;
	unsigned char *src = malloc(n), *back = malloc(n);
	wafer_resource r = alloc_or_die(device, n);
	struct fakecuda_stats s0 = stats(), s1;

	for (size_t i = 0; i < n; i++)
		src[i] = (unsigned char)(i * 7);
	status_is(plugin->storage->copy_in(device, queue, r, 0, src, n),
		  WAFER_OK, "an upload of 1 MiB");
	if (!real) { /* only the stand-in driver counts pinned copies */
		s1 = stats();
		ok(s1.pinned_copies > s0.pinned_copies,
		   "  ... is a copy from pinned staging memory");
		ok(s1.pinned_live > 0,
		   "  ... from the plugin's own pinned pool");
	}
	plugin->storage->copy_out(device, queue, r, 0, back, n);
	sync_queue(device, queue);
	ok(memcmp(src, back, n) == 0, "  ... and the bytes arrive");
	plugin->storage->free(device, r);
	free(src);
	free(back);
}

/*===----------------------------------------------------------------------===
 * Virtual memory
 *===----------------------------------------------------------------------===*/

static void test_vm(void *device, void *queue, size_t g)
{
	const struct wafer_storage_ops *st = plugin->storage;
	struct fakecuda_stats s0 = stats(), s1;
	unsigned char *a = bytes(3 * g), *got = bytes(3 * g);
	wafer_resource range = 0, other = 0;

	status_is(st->vm_reserve(device, 8 * g, &range), WAFER_OK,
		  "vm_reserve 8 pages");
	ok(range && range % g == 0, "  ... a range aligned to the granularity");
	status_is(st->vm_reserve(device, g + 1, &other),
		  WAFER_ERROR_INVALID_ARGUMENT, "vm_reserve of a partial page");
	ok(other == 0, "  ... sets the range to 0");

	status_is(st->vm_map(device, range, 0, 3 * g), WAFER_OK,
		  "vm_map pages 0-2 in one call");
	pattern(a, 3 * g, 3);
	st->copy_in(device, queue, range, 0, a, 3 * g);
	st->copy_out(device, queue, range, 0, got, 3 * g);
	status_is(sync_queue(device, queue), WAFER_OK, "  ... copies sync");
	ok(memcmp(a, got, 3 * g) == 0, "  ... the mapped pages hold data");

	status_is(st->vm_unmap(device, range, g, g), WAFER_OK,
		  "vm_unmap page 1 alone, part of that one call's mapping");
	st->copy_out(device, queue, range, 2 * g, got, g);
	status_is(sync_queue(device, queue), WAFER_OK, "  ... page 2 still "
		  "reads");
	ok(memcmp(a + 2 * g, got, g) == 0, "  ... and kept its bytes");
	status_is(st->vm_map(device, range, g, g), WAFER_OK,
		  "vm_map page 1 again");
	status_is(st->vm_map(device, range, 2 * g, g),
		  WAFER_ERROR_INVALID_ARGUMENT, "vm_map of a mapped page");
	like(last_error, "is already mapped", "  ... says so");
	status_is(st->vm_unmap(device, range, 5 * g, g),
		  WAFER_ERROR_INVALID_ARGUMENT, "vm_unmap of an unmapped page");
	like(last_error, "is not mapped", "  ... says so");
	status_is(st->vm_map(device, range, 7 * g, 2 * g),
		  WAFER_ERROR_INVALID_ARGUMENT, "vm_map past the range's end");
	like(last_error, "lies outside", "  ... says so");
	status_is(st->vm_map(device, range, g / 2, g),
		  WAFER_ERROR_INVALID_ARGUMENT, "vm_map at a partial offset");
	status_is(st->vm_map(device, range + g, 0, g),
		  WAFER_ERROR_INVALID_ARGUMENT, "vm_map on an address inside "
		  "the range, not its start");
	like(last_error, "is not a reserved range", "  ... says so");
	if (!real) {
		s1 = stats();
		ok(s1.maps - s0.maps == 4 && s1.unmaps - s0.unmaps == 1,
		   "one cuMemMap per page (4) and one cuMemUnmap");
		ok(s1.set_access - s0.set_access == 2,
		   "one cuMemSetAccess per vm_map call");
	}

	/* Released with three pages still mapped: all go. */
	st->vm_release(device, range);
	if (!real) {
		s1 = stats();
		ok(s1.handles_live == s0.handles_live,
		   "vm_release unmapped every page and freed its memory");
	}
	free(a);
	free(got);
}

/*===----------------------------------------------------------------------===
 * Kernels
 *===----------------------------------------------------------------------===*/

/* Element |i| of |x| in |dtype| (f32, f16, bf16, f64). */
static double elem(const void *x, wafer_dtype dtype, size_t i)
{
	if (dtype == WAFER_DTYPE_F32)
		return ((const float *)x)[i];
	if (dtype == WAFER_DTYPE_F64)
		return ((const double *)x)[i];
	uint16_t b = ((const uint16_t *)x)[i];
	return dtype == WAFER_DTYPE_F16 ? t_f16_to_float(b) : t_bf16_to_float(b);
}

static void set_elem(void *x, wafer_dtype dtype, size_t i, float v)
{
	if (dtype == WAFER_DTYPE_F32)
		((float *)x)[i] = v;
	else if (dtype == WAFER_DTYPE_F64)
		((double *)x)[i] = v;
	else
		((uint16_t *)x)[i] = dtype == WAFER_DTYPE_F16
					     ? t_float_to_f16(v)
					     : t_float_to_bf16(v);
}

static const char *dtype_name(wafer_dtype d)
{
	return d == WAFER_DTYPE_F32   ? "f32"
	       : d == WAFER_DTYPE_F16 ? "f16"
	       : d == WAFER_DTYPE_F64 ? "f64"
				      : "bf16";
}

/* Every elementwise kernel of |dtype| over |n| elements at |offset|. */
static void test_kernels_at(void *device, void *queue, wafer_dtype dtype,
			    size_t n, size_t offset)
{
	const struct wafer_storage_ops *st = plugin->storage;
	size_t es = dtype == WAFER_DTYPE_F32 ? 4 : 2, nb = n * es;
	const char *dn = dtype_name(dtype);
	float *fa = malloc((n ? n : 1) * sizeof(float));
	float *fb = malloc((n ? n : 1) * sizeof(float));
	unsigned char *a = bytes(nb), *b = bytes(nb), *got = bytes(nb),
		      *want = bytes(nb);
	wafer_resource ra = alloc_or_die(device, offset + nb + 256);
	wafer_resource rb = alloc_or_die(device, offset + nb + 256);
	wafer_resource ro = alloc_or_die(device, offset + nb + 256);
	struct wafer_binding bo = binding(ro, offset, nb);
	struct wafer_binding b3[3] = {bo, binding(ra, offset, nb),
				      binding(rb, offset, nb)};
	static const char *const ops[] = {WAFER_KERNEL_COPY, WAFER_KERNEL_RELU,
					   WAFER_KERNEL_ADD, WAFER_KERNEL_MUL};
	int fine;

	if (!fa || !fb)
		exit(1);
	values(fa, n, (uint32_t)(n + offset));
	values(fb, n, (uint32_t)(n * 3 + 1));
	for (size_t i = 0; i < n; i++) {
		set_elem(a, dtype, i, fa[i]);
		set_elem(b, dtype, i, fb[i]);
	}
	st->copy_in(device, queue, ra, offset, a, nb);
	st->copy_in(device, queue, rb, offset, b, nb);

	status_is(launch(device, queue, WAFER_KERNEL_FILL, dtype, &bo, 1, n,
			 -2.25),
		  WAFER_OK, "%s fill n=%zu offset=%zu", dn, n, offset);
	st->copy_out(device, queue, ro, offset, got, nb);
	status_is(sync_queue(device, queue), WAFER_OK, "  ... sync");
	fine = 1;
	for (size_t i = 0; i < n; i++)
		fine &= elem(got, dtype, i) == -2.25f;
	ok(fine, "  ... every element is -2.25");

	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		int binary = k >= 2;
		for (size_t i = 0; i < n; i++) {
			float x = elem(a, dtype, i), y = elem(b, dtype, i), v;
			v = k == 0 ? x : k == 1 ? (x > 0.0f ? x : 0.0f)
				     : k == 2 ? x + y : x * y;
			set_elem(want, dtype, i, v);
		}
		if (k == 0)
			memcpy(want, a, nb);
		status_is(launch(device, queue, ops[k], dtype, b3,
				 binary ? 3 : 2, n, 0),
			  WAFER_OK, "%s %s n=%zu offset=%zu", dn, ops[k], n,
			  offset);
		memset(got, 0x7f, nb);
		st->copy_out(device, queue, ro, offset, got, nb);
		status_is(sync_queue(device, queue), WAFER_OK, "  ... sync");
		ok(memcmp(got, want, nb) == 0,
		   "  ... matches the host, bit for bit");
	}

	/* out == a, exactly. */
	struct wafer_binding alias[3] = {b3[1], b3[1], b3[2]};
	for (size_t i = 0; i < n; i++)
		set_elem(want, dtype, i, elem(a, dtype, i) + elem(b, dtype, i));
	status_is(launch(device, queue, WAFER_KERNEL_ADD, dtype, alias, 3, n,
			 0),
		  WAFER_OK, "%s add in place (out == a) n=%zu", dn, n);
	st->copy_out(device, queue, ra, offset, got, nb);
	sync_queue(device, queue);
	ok(memcmp(got, want, nb) == 0, "  ... correct in place");

	st->free(device, ra);
	st->free(device, rb);
	st->free(device, ro);
	free(fa);
	free(fb);
	free(a);
	free(b);
	free(got);
	free(want);
}

static void test_kernels(void *device, void *queue)
{
	static const wafer_dtype dtypes[] = {WAFER_DTYPE_F32, WAFER_DTYPE_F16,
					     WAFER_DTYPE_BF16};
	static const size_t counts[] = {1, 7, 1000, 65536 + 3};

	status_is(launch(device, queue, WAFER_KERNEL_NOOP, WAFER_DTYPE_F32,
			 NULL, 0, 1, 0),
		  WAFER_OK, "noop");
	for (size_t d = 0; d < 3; d++)
		for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
			test_kernels_at(device, queue, dtypes[d], counts[c],
					c == 2 ? 256 : 0);
	/* The binding count is the core's to check (plugin.h). */
	core_checks_only = 1;
	status_is(launch(device, queue, WAFER_KERNEL_ADD, WAFER_DTYPE_F32,
			 NULL, 0, 0, 0),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "add with no bindings is refused");
	core_checks_only = 0;
}

/* Whether the device's table holds an entry with |k|'s impl. */
static int in_table(void *device, const struct wafer_kernel *k)
{
	const struct wafer_kernel *table;
	size_t count;

	if (plugin->device_kernels(device, &table, &count) != WAFER_OK)
		return 0;
	for (size_t i = 0; i < count; i++)
		if (table[i].impl == k->impl)
			return 1;
	return 0;
}

static void test_bad_launches(void *device, void *queue)
{
	const struct wafer_server_ops *sv = plugin->server;
	const struct wafer_kernel *add =
		find_kernel(device, WAFER_KERNEL_ADD, WAFER_DTYPE_F32);
	wafer_resource r = alloc_or_die(device, 4096);
	struct wafer_binding b[3] = {binding(r, 0, 4096), binding(r, 0, 4096),
				     binding(r, 0, 4096)};
	struct wafer_elementwise_params p = {.count = 1024};
	struct wafer_launch l = launch_of(add, b, 3, &p, sizeof p, 1024);
	struct wafer_kernel copy;
	float in[1024], got[1024];
	int fine = 1;

	/* Every element a kernel below reads holds a known value. */
	values(in, 1024, 41);
	plugin->storage->copy_in(device, queue, r, 0, in, sizeof in);

	/* Binding count, parameter size, the bindings' form and kernel
	 * identity are the core's to check, once (plugin.h): the same
	 * rejections through the debug-only helper of plugin_util.h. */
	l.binding_count = 2;
	status_is(core_checks(&l), WAFER_ERROR_INVALID_ARGUMENT,
		  "launch with too few bindings");
	like(last_error, "takes 3 bindings, got 2", "  ... says so");
	l.binding_count = 3;
	l.params_size = 4;
	status_is(core_checks(&l), WAFER_ERROR_INVALID_ARGUMENT,
		  "launch with a short parameter block");
	l.params_size = sizeof p;
	p.count = 1025;
	status_is(sv->launch(device, queue, &l), WAFER_ERROR_OUT_OF_RANGE,
		  "launch past a binding's end");
	like(last_error, "holds 4096 bytes, too few for 1025 elements",
	     "  ... says so");
	p.count = 16;
	b[1].offset = 16;
	status_is(core_checks(&l), WAFER_ERROR_INVALID_ARGUMENT,
		  "launch with an unaligned binding offset");
	b[1].offset = 0;
	b[2].resource = 0;
	status_is(core_checks(&l), WAFER_ERROR_INVALID_ARGUMENT,
		  "launch naming no resource");
	b[2].resource = r;
	copy = *add;
	copy.impl = &copy;
	ok(!in_table(device, &copy),
	   "a kernel that is not the plugin's is not in its table (the core "
	   "launches table entries only)");
	status_is(sv->launch(device, queue, &l), WAFER_OK,
		  "the repaired launch runs");
	plugin->storage->copy_out(device, queue, r, 0, got, sizeof got);
	status_is(sync_queue(device, queue), WAFER_OK, "  ... sync");
	for (size_t i = 0; i < 1024; i++)
		fine &= got[i] == (i < 16 ? in[i] + in[i] : in[i]);
	ok(fine, "  ... doubled its 16 elements (out == a == b) and no more");
	plugin->storage->free(device, r);
}

/* Launches |op| of dtype f32 with a parameter block; returns the status. */
static wafer_status launch_params(void *device, void *queue, const char *op,
				  wafer_dtype dtype,
				  const struct wafer_binding *b, uint32_t nb,
				  const void *params, size_t size)
{
	const struct wafer_kernel *k = find_kernel(device, op, dtype);

	if (!k)
		return WAFER_ERROR_NOT_FOUND;
	return host_launch(plugin, device, queue, k, b, nb, params, size, 1);
}

/* Downloads |n| floats of |r| and compares them with |want|, each within
 * |tol| times (1 + |want|). */
static void floats_are(void *device, void *queue, wafer_resource r,
		       const float *want, size_t n, double tol,
		       const char *what)
{
	float *got = malloc(n * sizeof *got);
	size_t bad = n;

	if (!got)
		exit(1);
	plugin->storage->copy_out(device, queue, r, 0, got, n * sizeof *got);
	if (sync_queue(device, queue) == WAFER_OK)
		for (bad = 0; bad < n; bad++)
			if (!(fabs((double)got[bad] - want[bad]) <=
			      tol * (1 + fabs((double)want[bad]))))
				break;
	if (!ok(bad == n, "  ... %s", what) && bad < n)
		diag("element %zu: got %g, want %g", bad, (double)got[bad],
		     (double)want[bad]);
	free(got);
}

/* What each launch kind checks before anything runs, and that what does
 * run computes the right values from inputs that hold known values. */
static void test_shape_checks(void *device, void *queue)
{
	wafer_resource rin = alloc_or_die(device, 4096);
	wafer_resource rout = alloc_or_die(device, 4096);
	struct wafer_binding b[3] = {binding(rout, 0, 4096),
				     binding(rin, 0, 1024),
				     binding(rin, 0, 4096)};
	struct wafer_binary_strided_params sp = {
		.rank = 2,
		.shape = {16, 16},
		.a_strides = {16, 1},
		.b_strides = {0, 1},
	};
	struct wafer_strided_copy_params gp = {
		.rank = 2,
		.shape = {16, 16},
		.strides = {1, 16},
	};
	struct wafer_cast_params cp = {
		.count = 256,
		.dtype_in = WAFER_DTYPE_F32,
		.dtype_out = WAFER_DTYPE_F16,
	};
	struct wafer_rows_params rp = {.rows = 4, .cols = 64};
	float in[1024], want[1024];

	values(in, 1024, 77);
	plugin->storage->copy_in(device, queue, rin, 0, in, sizeof in);

	/* b[1] holds 256 floats: exactly a 16 x 16 view. */
	status_is(launch_params(device, queue, WAFER_KERNEL_ADD_STRIDED,
				WAFER_DTYPE_F32, b, 3, &sp, sizeof sp),
		  WAFER_OK, "add_strided 16x16 with a broadcast row");
	for (size_t i = 0; i < 256; i++)
		want[i] = in[i] + in[i % 16];
	floats_are(device, queue, rout, want, 256, 0, "a + the broadcast row");
	sp.a_offset = 1;
	status_is(launch_params(device, queue, WAFER_KERNEL_ADD_STRIDED,
				WAFER_DTYPE_F32, b, 3, &sp, sizeof sp),
		  WAFER_ERROR_OUT_OF_RANGE,
		  "add_strided whose a reaches one past its binding");
	sp.a_offset = 0;
	sp.rank = 0;
	status_is(launch_params(device, queue, WAFER_KERNEL_ADD_STRIDED,
				WAFER_DTYPE_F32, b, 3, &sp, sizeof sp),
		  WAFER_ERROR_INVALID_ARGUMENT, "add_strided of rank 0");
	sp.rank = 9;
	status_is(launch_params(device, queue, WAFER_KERNEL_ADD_STRIDED,
				WAFER_DTYPE_F32, b, 3, &sp, sizeof sp),
		  WAFER_ERROR_INVALID_ARGUMENT, "add_strided of rank 9");
	sp.rank = 2;
	sp.shape[1] = 0;
	status_is(launch_params(device, queue, WAFER_KERNEL_ADD_STRIDED,
				WAFER_DTYPE_F32, b, 3, &sp, sizeof sp),
		  WAFER_ERROR_INVALID_ARGUMENT, "add_strided with a 0 extent");

	status_is(launch_params(device, queue, WAFER_KERNEL_COPY_STRIDED,
				WAFER_DTYPE_F32, b, 2, &gp, sizeof gp),
		  WAFER_OK, "copy_strided of a transposed 16x16 view");
	for (size_t i = 0; i < 256; i++)
		want[i] = in[(i % 16) * 16 + i / 16];
	floats_are(device, queue, rout, want, 256, 0, "the transpose");
	gp.strides[0] = 64;
	status_is(launch_params(device, queue, WAFER_KERNEL_COPY_STRIDED,
				WAFER_DTYPE_F32, b, 2, &gp, sizeof gp),
		  WAFER_ERROR_OUT_OF_RANGE, "copy_strided past its input");

	cp.dtype_out = WAFER_DTYPE_I32;
	status_is(launch_params(device, queue, WAFER_KERNEL_CAST,
				WAFER_DTYPE_F32, b, 2, &cp, sizeof cp),
		  WAFER_OK, "cast f32 -> i32 of 256");
	{
		int32_t got[256];
		int fine = 1;
		plugin->storage->copy_out(device, queue, rout, 0, got,
					  sizeof got);
		sync_queue(device, queue);
		for (size_t i = 0; i < 256; i++)
			fine &= got[i] == (int32_t)in[i];
		ok(fine, "  ... each value toward zero");
	}
	b[0].size = 1020;
	status_is(launch_params(device, queue, WAFER_KERNEL_CAST,
				WAFER_DTYPE_F32, b, 2, &cp, sizeof cp),
		  WAFER_ERROR_OUT_OF_RANGE,
		  "cast f32 -> i32 of 256 into 1020 bytes (sized by the "
		  "target)");
	b[0].size = 4096;
	cp.dtype_out = 99;
	status_is(launch_params(device, queue, WAFER_KERNEL_CAST,
				WAFER_DTYPE_F32, b, 2, &cp, sizeof cp),
		  WAFER_ERROR_INVALID_ARGUMENT, "cast to dtype 99 (not a target)");
	cp.dtype_out = WAFER_DTYPE_F32;
	cp.dtype_in = WAFER_DTYPE_F16;
	status_is(launch_params(device, queue, WAFER_KERNEL_CAST,
				WAFER_DTYPE_F32, b, 2, &cp, sizeof cp),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "cast whose dtype_in is not the entry's");

	status_is(launch_params(device, queue, WAFER_KERNEL_REDUCE_SUM,
				WAFER_DTYPE_F32, b, 2, &rp, sizeof rp),
		  WAFER_OK, "reduce_sum 4 x 64");
	for (size_t r = 0; r < 4; r++) {
		double sum = 0;
		for (size_t c = 0; c < 64; c++)
			sum += in[r * 64 + c];
		want[r] = (float)sum;
	}
	/* Summed in float, in any order: a few ulps of sum |x|. */
	floats_are(device, queue, rout, want, 4, 1e-3, "each row's sum");
	status_is(launch_params(device, queue, WAFER_KERNEL_SOFTMAX,
				WAFER_DTYPE_F32, b, 2, &rp, sizeof rp),
		  WAFER_OK, "softmax 4 x 64");
	for (size_t r = 0; r < 4; r++) {
		double m = -INFINITY, sum = 0;
		for (size_t c = 0; c < 64; c++)
			m = in[r * 64 + c] > m ? in[r * 64 + c] : m;
		for (size_t c = 0; c < 64; c++)
			sum += exp(in[r * 64 + c] - m);
		for (size_t c = 0; c < 64; c++)
			want[r * 64 + c] = (float)(exp(in[r * 64 + c] - m) / sum);
	}
	floats_are(device, queue, rout, want, 256, 1e-5, "softmax of each row");
	b[0].size = 512;
	status_is(launch_params(device, queue, WAFER_KERNEL_SOFTMAX,
				WAFER_DTYPE_F32, b, 2, &rp, sizeof rp),
		  WAFER_ERROR_OUT_OF_RANGE, "softmax into too small an out");
	status_is(launch_params(device, queue, WAFER_KERNEL_REDUCE_MAX,
				WAFER_DTYPE_F32, b, 2, &rp, sizeof rp),
		  WAFER_OK, "  ... while reduce_max needs rows elements only");
	for (size_t r = 0; r < 4; r++) {
		want[r] = -INFINITY;
		for (size_t c = 0; c < 64; c++)
			want[r] = in[r * 64 + c] > want[r] ? in[r * 64 + c]
							   : want[r];
	}
	floats_are(device, queue, rout, want, 4, 0, "each row's maximum");
	rp.cols = 0;
	status_is(launch_params(device, queue, WAFER_KERNEL_REDUCE_MAX,
				WAFER_DTYPE_F32, b, 2, &rp, sizeof rp),
		  WAFER_ERROR_INVALID_ARGUMENT, "reduce_max of 0 columns");
	status_is(sync_queue(device, queue), WAFER_OK, "  ... sync");
	plugin->storage->free(device, rin);
	plugin->storage->free(device, rout);
}

/* C = op(A) op(B) for every matmul variant against a double-precision
 * host product of the same (rounded) inputs: batch 3 with strides, each
 * transpose, edge tiles. The stand-in runs one exact loop for all
 * variants, over the tiles of the variant's grid (which checks what the
 * plugin hands the kernel: function, arguments, grid, block); on a GPU
 * every variant and dtype runs its own kernel. */
static void test_matmul(void *device, void *queue)
{
	static const struct {
		uint64_t m, n, k;
		uint32_t ta, tb;
	} shapes[] = {
		{1, 1, 1, 0, 0},     {37, 53, 29, 0, 0}, {64, 64, 64, 1, 0},
		{130, 70, 33, 0, 1}, {129, 257, 17, 1, 1},
		/* Row strides in multiples of 4, the layout kernels' cases
		 * (the others fall back), with edge tiles. */
		{128, 256, 64, 0, 0}, {200, 132, 36, 0, 1},
		{96, 100, 44, 1, 0},  {260, 124, 12, 1, 1},
	};
	const struct wafer_kernel *table;
	size_t count;

	plugin->device_kernels(device, &table, &count);
	for (size_t v = 0; v < count; v++) {
		const struct wafer_kernel *k = &table[v];
		wafer_dtype dt = k->dtype;
		/* The integers: t/api/ops_dtypes, on every backend. */
		if (strcmp(k->op, WAFER_KERNEL_MATMUL) != 0 ||
		    (dt != WAFER_DTYPE_F32 && dt != WAFER_DTYPE_F16 &&
		     dt != WAFER_DTYPE_BF16 && dt != WAFER_DTYPE_F64))
			continue;
		size_t es = dt == WAFER_DTYPE_F32   ? 4
			    : dt == WAFER_DTYPE_F64 ? 8
						    : 2;
		/* The tolerance, relative to sum |a b|: the output's rounding
		 * and tf32's 10-bit mantissa. */
		double tol = dt == WAFER_DTYPE_F64    ? 1e-13
			     : dt == WAFER_DTYPE_BF16 ? 1e-2
			     : dt == WAFER_DTYPE_F16  ? 2e-3
			     : strcmp(k->variant, "tf32") == 0 ? 2e-3
							       : 1e-5;
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
			uint64_t m = shapes[s].m, n = shapes[s].n,
				 k_ = shapes[s].k, batch = 3;
			/* Batch strides with a gap; a multiple of 4 from the
			 * sixth shape on. */
			uint64_t pad = s >= 5 ? 4 : 5;
			uint64_t sa = m * k_ + pad, sb = k_ * n + pad + 4,
				 sc = m * n + pad;
			size_t na = batch * sa, nb = batch * sb, nc = batch * sc;
			float *a = malloc(na * 4), *b = malloc(nb * 4);
			unsigned char *da = bytes(na * es), *db = bytes(nb * es),
				      *dc = bytes(nc * es);
			double worst = 0;
			/* In [-1, 1): f16 products of any k here stay far
			 * from its 65504 limit. */
			values(a, na, (uint32_t)(s + 11));
			values(b, nb, (uint32_t)(s + 23));
			for (size_t i = 0; i < na; i++)
				a[i] /= 64.0f;
			for (size_t i = 0; i < nb; i++)
				b[i] /= 64.0f;
			for (size_t i = 0; i < na; i++) {
				set_elem(da, dt, i, a[i]);
				a[i] = elem(da, dt, i); /* as rounded */
			}
			for (size_t i = 0; i < nb; i++) {
				set_elem(db, dt, i, b[i]);
				b[i] = elem(db, dt, i);
			}
			wafer_resource ra = alloc_or_die(device, na * es);
			wafer_resource rb = alloc_or_die(device, nb * es);
			wafer_resource rc = alloc_or_die(device, nc * es);
			struct wafer_binding bind[3] = {
				binding(rc, 0, nc * es), binding(ra, 0, na * es),
				binding(rb, 0, nb * es)};
			struct wafer_matmul_params p = {
				.batch = batch, .m = m, .n = n, .k = k_,
				.transpose_a = shapes[s].ta,
				.transpose_b = shapes[s].tb,
				.batch_stride_a = sa, .batch_stride_b = sb,
				.batch_stride_c = sc,
			};
			plugin->storage->copy_in(device, queue, ra, 0, da,
						 na * es);
			plugin->storage->copy_in(device, queue, rb, 0, db,
						 nb * es);
			/* C's batch gaps are no output: a known byte there
			 * before, the same after (and nothing reads back
			 * bytes nobody wrote). */
			memset(dc, 0xa5, nc * es);
			plugin->storage->copy_in(device, queue, rc, 0, dc,
						 nc * es);
			/* This variant's own entry, not the default one. */
			struct wafer_launch l = {
				.struct_size = sizeof l, .kernel = k,
				.bindings = bind, .binding_count = 3,
				.params = &p, .params_size = sizeof p,
				.global = {n, m, batch},
			};
			wafer_status st = plugin->server->launch(device, queue,
								 &l);
			plugin->storage->copy_out(device, queue, rc, 0, dc,
						  nc * es);
			if (st == WAFER_OK)
				st = sync_queue(device, queue);
			for (uint64_t t = 0; t < batch && st == WAFER_OK; t++)
				for (uint64_t i = 0; i < m; i++)
					for (uint64_t j = 0; j < n; j++) {
						double want = 0, mag = 0;
						for (uint64_t l2 = 0; l2 < k_; l2++) {
							double x = shapes[s].ta ? a[t * sa + l2 * m + i] : a[t * sa + i * k_ + l2];
							double y = shapes[s].tb ? b[t * sb + j * k_ + l2] : b[t * sb + l2 * n + j];
							want += x * y;
							mag += fabs(x * y);
						}
						double got = elem(dc, dt, t * sc + i * n + j);
						double err = fabs(got - want) / (mag + 1e-30);
						if (!(err <= worst))
							worst = err;
					}
			int gaps = 1;
			for (size_t i = 0; i < nc * es && st == WAFER_OK; i++)
				if (i / es % sc >= m * n && dc[i] != 0xa5)
					gaps = 0;
			ok(st == WAFER_OK && worst <= tol && gaps,
			   "matmul %s %s %" PRIu64 "x%" PRIu64 "x%" PRIu64
			   " ta=%u tb=%u batch 3: worst relative error %.2g%s",
			   dtype_name(dt), k->variant, m, n, k_, shapes[s].ta,
			   shapes[s].tb, worst,
			   gaps ? "" : ", and a batch gap of C overwritten");
			if (st != WAFER_OK)
				diag("%s", last_error);
			plugin->storage->free(device, ra);
			plugin->storage->free(device, rb);
			plugin->storage->free(device, rc);
			free(a);
			free(b);
			free(da);
			free(db);
			free(dc);
		}
	}
}

/* A timer around a fill of |n| floats; 0 if a step failed. */
static uint64_t timed_fill(void *device, void *queue, wafer_resource r,
			   size_t n)
{
	struct wafer_binding b = binding(r, 0, n * 4);
	void *timer = NULL;
	uint64_t ns = 0;

	status_is(plugin->server->timer_begin(device, queue, &timer), WAFER_OK,
		  "timer_begin");
	status_is(launch(device, queue, WAFER_KERNEL_FILL, WAFER_DTYPE_F32, &b,
			 1, n, 1),
		  WAFER_OK, "  ... a fill of %zu floats", n);
	status_is(plugin->server->timer_end(device, queue, timer, &ns),
		  WAFER_OK, "  ... timer_end");
	return ns;
}

/* Timers measure device time: no bounds on it here (a test must not
 * depend on the clock of a loaded machine), but something happened, and
 * on the stand-in, whose clock counts work, more work took longer. */
static void test_timers(void *device, void *queue)
{
	const size_t n = 1 << 20;
	wafer_resource r = alloc_or_die(device, n * 4);
	uint64_t small = timed_fill(device, queue, r, n / 4);
	uint64_t large = timed_fill(device, queue, r, n);

	ok(small > 0 && large > 0, "both timers measured some time (%" PRIu64
	   " and %" PRIu64 " ns)", small, large);
	if (!real)
		ok(large > small, "  ... on the stand-in's clock, the fill of "
		   "4 MiB took longer than the fill of 1 MiB");
	plugin->storage->free(device, r);
}

/*===----------------------------------------------------------------------===
 * Failures the stand-in injects
 *===----------------------------------------------------------------------===*/

static void test_sticky_error(void *state)
{
	void *device, *queue;
	wafer_resource r;

	if (plugin->device_open(state, 0, &device) != WAFER_OK ||
	    plugin->server->queue_create(device, &queue) != WAFER_OK) {
		ok(0, "sticky error: open: %s", last_error);
		return;
	}
	r = alloc_or_die(device, 4096);
	plugin->storage->free(device, r);
	struct wafer_binding b = binding(r, 0, 4096);
	status_is(launch(device, queue, WAFER_KERNEL_FILL, WAFER_DTYPE_F32, &b,
			 1, 1024, 0),
		  WAFER_OK,
		  "a fill of freed memory launches (the GPU finds out later)");
	status_is(sync_queue(device, queue), WAFER_ERROR_DEVICE,
		  "  ... sync reports WAFER_ERROR_DEVICE");
	like(last_error,
	     "cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal "
	     "memory access was encountered",
	     "  ... with the driver's name and text: %s", last_error);
	fake_reset();
	plugin->server->queue_destroy(device, queue);
	plugin->device_close(device);
}

static void test_no_pinned(void)
{
	void *state, *device, *queue;
	struct fakecuda_stats s0, s1;

	setenv("FAKECUDA_NO_PINNED", "1", 1);
	setenv("FAKECUDA_DELAY_US", "200", 1);
	if (init_with(NULL, 0, &state) != WAFER_OK ||
	    plugin->device_open(state, 0, &device) != WAFER_OK ||
	    plugin->server->queue_create(device, &queue) != WAFER_OK) {
		ok(0, "no pinned memory: open: %s", last_error);
		return;
	}
	log_reset();
	s0 = stats();
	roundtrip(device, queue, 100000, "no pinned memory");
	roundtrip(device, queue, 5 << 20, "no pinned memory");
	s1 = stats();
	ok(s1.pinned_copies == s0.pinned_copies &&
		   s1.pageable_copies > s0.pageable_copies,
	   "  ... every copy went unstaged");
	like(log_text, "cannot pin a", "  ... which was logged");
	plugin->server->queue_destroy(device, queue);
	plugin->device_close(device);
	plugin->shutdown(state);
	unsetenv("FAKECUDA_NO_PINNED");
	unsetenv("FAKECUDA_DELAY_US");
}

/* Small staging limits: copies wait for their own earlier ones, or go
 * unstaged when the pool is exhausted; everything stays correct. */
static void test_staging_limits(void)
{
	static const struct {
		const char *chunk, *limit;
	} cases[] = {{"64K", "64K"}, {"64K", "256K"}, {"1M", "0"}};
	void *state, *device, *queue;
	struct wafer_plugin_option opts[2];
	char what[64];

	setenv("FAKECUDA_DELAY_US", "100", 1);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		opts[0] = option("staging_chunk", cases[i].chunk, "api");
		opts[1] = option("staging_limit", cases[i].limit, "api");
		snprintf(what, sizeof what, "chunk %s limit %s", cases[i].chunk,
			 cases[i].limit);
		if (init_with(opts, 2, &state) != WAFER_OK ||
		    plugin->device_open(state, 0, &device) != WAFER_OK ||
		    plugin->server->queue_create(device, &queue) != WAFER_OK) {
			ok(0, "%s: open: %s", what, last_error);
			continue;
		}
		struct fakecuda_stats s0 = stats();
		roundtrip(device, queue, 1000, what);
		roundtrip(device, queue, (1 << 20) + 17, what);
		test_copy_order(device, queue);
		struct fakecuda_stats s1 = stats();
		if (strcmp(cases[i].limit, "0") == 0)
			ok(s1.pinned_copies == s0.pinned_copies,
			   "%s: nothing was staged", what);
		else
			ok(s1.pinned_copies > s0.pinned_copies,
			   "%s: copies were staged", what);
		plugin->server->queue_destroy(device, queue);
		plugin->device_close(device);
		ok(stats().pinned_live == 0,
		   "%s: every staging buffer was freed at close", what);
		plugin->shutdown(state);
	}
	unsetenv("FAKECUDA_DELAY_US");
}

static void test_release_threshold(void)
{
	void *state, *device;
	struct wafer_plugin_option opt = option("release_threshold", "1G",
						"api");

	if (init_with(&opt, 1, &state) == WAFER_OK &&
	    plugin->device_open(state, 0, &device) == WAFER_OK) {
		is_int((long long)stats().release_threshold, 1LL << 30,
		       "release_threshold = 1G reaches the default pool");
		plugin->device_close(device);
		plugin->shutdown(state);
	}
	if (init_with(NULL, 0, &state) == WAFER_OK &&
	    plugin->device_open(state, 0, &device) == WAFER_OK) {
		ok(stats().release_threshold == UINT64_MAX,
		   "the default threshold keeps everything (UINT64_MAX)");
		plugin->device_close(device);
		plugin->shutdown(state);
	}
}

static void test_no_vmm_no_pools(void)
{
	struct wafer_device_info info = {.struct_size = sizeof info};
	void *state, *device, *queue;
	wafer_resource r = 1;

	setenv("FAKECUDA_NO_VMM", "1", 1);
	setenv("FAKECUDA_NO_POOLS", "1", 1);
	if (init_with(NULL, 0, &state) != WAFER_OK ||
	    plugin->device_open(state, 0, &device) != WAFER_OK ||
	    plugin->server->queue_create(device, &queue) != WAFER_OK) {
		ok(0, "no vmm: open: %s", last_error);
		return;
	}
	plugin->device_info(state, 0, &info);
	is_int((long long)info.vm_granularity, 0,
	       "no virtual memory management: vm_granularity 0");
	status_is(plugin->storage->vm_reserve(device, 2 << 20, &r),
		  WAFER_ERROR_NOT_SUPPORTED, "  ... vm_reserve not supported");
	ok(r == 0, "  ... no range");
	status_is(plugin->storage->alloc_async(device, queue, 256, &r),
		  WAFER_ERROR_NOT_SUPPORTED,
		  "no memory pools: alloc_async not supported");
	/* Overlapping copies go in steps without a pool. */
	test_copy_order(device, queue);
	plugin->server->queue_destroy(device, queue);
	plugin->device_close(device);
	plugin->shutdown(state);
	unsetenv("FAKECUDA_NO_VMM");
	unsetenv("FAKECUDA_NO_POOLS");
}

/*===----------------------------------------------------------------------===
 * The stand-in's own contracts, called directly
 *
 * What a plugin bug looks like to the stand-in, shown by making the
 * mistake on purpose through its entry points: a grid short of tiles
 * leaves them unwritten, a block that is not the kernel's is refused, an
 * unknown kernel or attribute is an error, a stream belongs to its
 * context, and stream-ordered memory is used in stream order only.
 *===----------------------------------------------------------------------===*/

typedef unsigned long long fc_ptr;
/* The entry points used below, with <cuda.h>'s signatures in plain C
 * (handles are pointers, CUdevice an int, CUdeviceptr 64 bits). */
static struct {
	int (*cuInit)(unsigned);
	int (*cuDeviceGet)(int *, int);
	int (*cuDeviceGetAttribute)(int *, int, int);
	int (*cuDevicePrimaryCtxRetain)(void **, int);
	int (*cuDevicePrimaryCtxRelease)(int);
	int (*cuCtxSetCurrent)(void *);
	int (*cuCtxGetCurrent)(void **);
	int (*cuModuleLoadData)(void **, const void *);
	int (*cuModuleUnload)(void *);
	int (*cuModuleGetFunction)(void **, void *, const char *);
	int (*cuStreamCreate)(void **, unsigned);
	int (*cuStreamDestroy)(void *);
	int (*cuStreamSynchronize)(void *);
	int (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned,
			      unsigned, unsigned, unsigned, void *, void **,
			      void **);
	int (*cuMemAlloc)(fc_ptr *, size_t);
	int (*cuMemFree)(fc_ptr);
	int (*cuMemAllocAsync)(fc_ptr *, size_t, void *);
	int (*cuMemFreeAsync)(fc_ptr, void *);
	int (*cuMemcpyHtoDAsync)(fc_ptr, const void *, size_t, void *);
	int (*cuMemcpyDtoHAsync)(void *, fc_ptr, size_t, void *);
	int (*cuMemcpyDtoDAsync)(fc_ptr, fc_ptr, size_t, void *);
} cu;

static int resolve_fake(void *fake)
{
	static const char *const names[] = {
		"cuInit", "cuDeviceGet", "cuDeviceGetAttribute",
		"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease",
		"cuCtxSetCurrent", "cuCtxGetCurrent", "cuModuleLoadData", "cuModuleUnload",
		"cuModuleGetFunction", "cuStreamCreate", "cuStreamDestroy",
		"cuStreamSynchronize", "cuLaunchKernel", "cuMemAlloc",
		"cuMemFree", "cuMemAllocAsync", "cuMemFreeAsync",
		"cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync",
		"cuMemcpyDtoDAsync",
	};
	const char *missing = fakecuda_resolve(
		fake, names, sizeof names / sizeof names[0], (void **)&cu);

	if (missing) {
		diag("the stand-in does not give %s", missing);
		return 0;
	}
	return 1;
}

/* The fatbin nvcc built for the plugin's |name|.cu, read whole; NULL if
 * it is not there. */
static void *read_fatbin(const char *name)
{
	char path[4096];
	FILE *f;
	long n;
	void *image = NULL;

	snprintf(path, sizeof path, "%s/../plugins/cuda/kernels/%s.fatbin",
		 getenv("T_BUILDDIR"), name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (image = malloc((size_t)n)) &&
	    fread(image, 1, (size_t)n, f) != (size_t)n) {
		free(image);
		image = NULL;
	}
	fclose(f);
	return image;
}

/* The plugin queries these, and gets an H200's values; anything else is
 * refused rather than answered with a made-up 0. */
static void test_fake_attributes(void)
{
	static const struct {
		int attr, want;
		const char *name;
	} h200[] = {
		{FAKECUDA_ATTR_COMPUTE_CAPABILITY_MAJOR, 9, "compute major"},
		{FAKECUDA_ATTR_COMPUTE_CAPABILITY_MINOR, 0, "compute minor"},
		{FAKECUDA_ATTR_MULTIPROCESSOR_COUNT, 132, "multiprocessors"},
		{FAKECUDA_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448,
		 "opt-in shared memory a block"},
		{FAKECUDA_ATTR_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1,
		 "virtual memory management"},
		{FAKECUDA_ATTR_MEMORY_POOLS_SUPPORTED, 1, "memory pools"},
	};
	int v;

	for (size_t i = 0; i < sizeof h200 / sizeof h200[0]; i++) {
		v = -1;
		is_int(cu.cuDeviceGetAttribute(&v, h200[i].attr, 0),
		       FAKECUDA_SUCCESS, "attribute %d (%s) is modelled",
		       h200[i].attr, h200[i].name);
		is_int(v, h200[i].want, "  ... with an H200's value");
	}
	is_int(cu.cuDeviceGetAttribute(&v, FAKECUDA_ATTR_MAX_BLOCK_DIM_X, 0),
	       FAKECUDA_ERROR_INVALID_VALUE,
	       "an attribute the stand-in does not model is "
	       "CUDA_ERROR_INVALID_VALUE, not a 0");
}

/* C = A B by wafer_matmul_f32_tile64 (64 x 64 tiles, 256 threads) for
 * m = 130, n = 70, k = 8: grid 2 x 3. */
static void test_fake_grid(void *ctx, void *stream)
{
	enum { M = 130, N = 70, K = 8 };
	void *matmul = read_fatbin("matmul"), *elementwise =
		read_fatbin("elementwise");
	void *mm_mod = NULL, *ew_mod = NULL, *fn = NULL, *fill = NULL,
	     *add = NULL, *none = NULL;
	static float a[M * K], b[K * N], c[M * N], want[M * N];
	fc_ptr da, db, dc;
	struct {
		uint64_t m, n, k, lda, ldb, ldc, sa, sb, sc;
		uint32_t ta, tb;
	} args = {M, N, K, K, N, N, 0, 0, 0, 0, 0};
	void *params[4] = {&dc, &da, &db, &args};

	cu.cuCtxSetCurrent(ctx);
	if (!ok(matmul && elementwise, "the plugin's fatbins are readable") ||
	    !ok(cu.cuModuleLoadData(&mm_mod, matmul) == FAKECUDA_SUCCESS &&
			cu.cuModuleLoadData(&ew_mod, elementwise) ==
				FAKECUDA_SUCCESS &&
			cu.cuModuleGetFunction(&fn, mm_mod,
					       "wafer_matmul_f32_tile64") ==
				FAKECUDA_SUCCESS &&
			cu.cuModuleGetFunction(&fill, ew_mod,
					       "wafer_fill_f32") ==
				FAKECUDA_SUCCESS &&
			cu.cuModuleGetFunction(&add, ew_mod,
					       "wafer_add_f32") ==
				FAKECUDA_SUCCESS,
		"  ... load, with their kernels")) {
		free(matmul);
		free(elementwise);
		return;
	}
	is_int(cu.cuModuleGetFunction(&none, mm_mod, "wafer_matmul_f32_none"),
	       FAKECUDA_ERROR_NOT_FOUND,
	       "a name the module lacks: CUDA_ERROR_NOT_FOUND");

	values(a, M * K, 3);
	values(b, K * N, 4);
	for (size_t i = 0; i < M; i++)
		for (size_t j = 0; j < N; j++) {
			double sum = 0;
			for (size_t l = 0; l < K; l++)
				sum += (double)a[i * K + l] * b[l * N + j];
			want[i * N + j] = (float)sum;
		}
	cu.cuMemAlloc(&da, sizeof a);
	cu.cuMemAlloc(&db, sizeof b);
	cu.cuMemAlloc(&dc, sizeof c);
	cu.cuMemcpyHtoDAsync(da, a, sizeof a, stream);
	cu.cuMemcpyHtoDAsync(db, b, sizeof b, stream);

	/* Each run: C to a sentinel, one launch, C back; then which
	 * elements are right and which still hold the sentinel. */
	static const struct {
		unsigned gx, gy, bx, by;
		int result;
		const char *what;
	} runs[] = {
		{2, 3, 256, 1, FAKECUDA_SUCCESS, "grid 2 x 3 (the tiles of C)"},
		{2, 2, 256, 1, FAKECUDA_SUCCESS,
		 "grid 2 x 2, a row of tiles short"},
		{1, 3, 256, 1, FAKECUDA_SUCCESS,
		 "grid 1 x 3, a column of tiles short"},
		{2, 3, 128, 1, FAKECUDA_ERROR_INVALID_VALUE,
		 "block 128, not the kernel's 256"},
		{2, 3, 16, 16, FAKECUDA_ERROR_INVALID_VALUE,
		 "block 16 x 16, not the kernel's 1-D 256"},
		{2, 3, 512, 1, FAKECUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
		 "block 512, past __launch_bounds__(256)"},
	};
	for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
		size_t right = 0, untouched = 0, rows_right = 0;
		for (size_t i = 0; i < M * N; i++)
			c[i] = -1234.5f;
		cu.cuMemcpyHtoDAsync(dc, c, sizeof c, stream);
		is_int(cu.cuLaunchKernel(fn, runs[r].gx, runs[r].gy, 1,
					 runs[r].bx, runs[r].by, 1, 0, stream,
					 params, NULL),
		       runs[r].result, "matmul tile64 %ux%ux%u: %s", M, N, K,
		       runs[r].what);
		cu.cuMemcpyDtoHAsync(c, dc, sizeof c, stream);
		cu.cuStreamSynchronize(stream);
		for (size_t i = 0; i < M; i++) {
			size_t row = 0;
			for (size_t j = 0; j < N; j++) {
				float g = c[i * N + j], w = want[i * N + j];
				right += fabsf(g - w) <= 1e-4f * (1 + fabsf(w));
				row += fabsf(g - w) <= 1e-4f * (1 + fabsf(w));
				untouched += g == -1234.5f;
			}
			rows_right += row == N;
		}
		if (r == 0)
			is_int((long long)right, M * N,
			       "  ... computes every element of C");
		else if (r == 1)
			ok(rows_right == 128 && untouched == 2 * N,
			   "  ... leaves rows 128 and 129 unwritten (%zu "
			   "rows right, %zu elements untouched)",
			   rows_right, untouched);
		else if (r == 2)
			ok(right == M * 64 && untouched == M * (N - 64),
			   "  ... leaves columns 64 to 69 unwritten");
		else
			is_int((long long)untouched, M * N,
			       "  ... and nothing runs");
	}

	/* A layout kernel reads 16-byte vectors along every row: B's rows
	 * of 70 floats put every other one off 16 bytes (the plugin sends
	 * such layouts to tile64). */
	{
		void *reg = NULL;
		cu.cuModuleGetFunction(&reg, mm_mod,
				       "wafer_matmul_f32_reg128_nn");
		is_int(cu.cuLaunchKernel(reg, 1, 2, 1, 256, 1, 1, 0, stream,
					 params, NULL),
		       FAKECUDA_SUCCESS, "reg128_nn with ldb = 70 launches");
		is_int(cu.cuStreamSynchronize(stream),
		       FAKECUDA_ERROR_MISALIGNED_ADDRESS,
		       "  ... and faults: CUDA_ERROR_MISALIGNED_ADDRESS");
		fake_reset();
	}

	/* Grid-stride kernels cover every element from any grid. */
	{
		enum { E = 100003 };
		struct {
			uint64_t count;
			double value;
		} fp = {E, 2.5};
		struct {
			uint64_t count;
		} ep = {E};
		fc_ptr d;
		float *host = malloc(E * sizeof *host);
		void *fparams[2] = {&d, &fp}, *eparams[4] = {&d, &d, &d, &ep};
		size_t fine = 0;

		cu.cuMemAlloc(&d, E * sizeof *host);
		is_int(cu.cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, stream,
					 fparams, NULL),
		       FAKECUDA_SUCCESS, "fill of %d floats by one block",
		       E);
		cu.cuMemcpyDtoHAsync(host, d, E * sizeof *host, stream);
		cu.cuStreamSynchronize(stream);
		for (size_t i = 0; i < E; i++)
			fine += host[i] == 2.5f;
		is_int((long long)fine, E,
		       "  ... its grid-stride loop reaches every element");
		is_int(cu.cuLaunchKernel(fill, 4, 1, 1, 1024, 1, 1, 0, stream,
					 fparams, NULL),
		       FAKECUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
		       "fill with 1024 threads a block, past its "
		       "__launch_bounds__(256)");
		is_int(cu.cuLaunchKernel(add, 4, 1, 1, 64, 4, 1, 0, stream,
					 eparams, NULL),
		       FAKECUDA_ERROR_INVALID_VALUE,
		       "add with a 64 x 4 block (it indexes threadIdx.x "
		       "only)");
		cu.cuMemFree(d);
		free(host);
	}

	/* A kernel in the module the stand-in cannot emulate: an image of
	 * the fatbin header's form whose PTX declares wafer_mystery. */
	{
		static const char ptx[] = ".entry wafer_mystery(";
		unsigned char image[16 + sizeof ptx];
		uint32_t magic = 0xba55ed50u;
		uint16_t header = 16;
		uint64_t body = sizeof ptx;
		void *mod = NULL, *f = NULL;

		memset(image, 0, sizeof image);
		memcpy(image, &magic, 4);
		memcpy(image + 6, &header, 2);
		memcpy(image + 8, &body, 8);
		memcpy(image + 16, ptx, sizeof ptx);
		is_int(cu.cuModuleLoadData(&mod, image), FAKECUDA_SUCCESS,
		       "a module declaring wafer_mystery loads");
		is_int(cu.cuModuleGetFunction(&f, mod, "wafer_mystery"),
		       FAKECUDA_ERROR_NOT_FOUND,
		       "  ... but the stand-in cannot run it: "
		       "CUDA_ERROR_NOT_FOUND, never a silent no-op");
		cu.cuModuleUnload(mod);
	}

	cu.cuMemFree(da);
	cu.cuMemFree(db);
	cu.cuMemFree(dc);
	cu.cuModuleUnload(mm_mod);
	cu.cuModuleUnload(ew_mod);
	free(matmul);
	free(elementwise);
}

/* cuMemAllocAsync memory in and out of stream order. */
static void test_fake_stream_order(void *ctx)
{
	void *s1 = NULL, *s2 = NULL;
	unsigned char buf[4096] = {0};
	fc_ptr p;

	cu.cuCtxSetCurrent(ctx);
	cu.cuStreamCreate(&s1, 1);
	cu.cuStreamCreate(&s2, 1);

	cu.cuMemAllocAsync(&p, sizeof buf, s1);
	cu.cuMemcpyHtoDAsync(p, buf, sizeof buf, s1);
	cu.cuMemFreeAsync(p, s1);
	is_int(cu.cuStreamSynchronize(s1), FAKECUDA_SUCCESS,
	       "allocated, used and freed on one stream: in order");

	cu.cuMemAllocAsync(&p, sizeof buf, s1);
	cu.cuMemcpyHtoDAsync(p, buf, sizeof buf, s2);
	is_int(cu.cuStreamSynchronize(s2), FAKECUDA_ERROR_ILLEGAL_ADDRESS,
	       "used on another stream before the allocation was ordered "
	       "before it: CUDA_ERROR_ILLEGAL_ADDRESS at the sync");
	fake_reset();
	cu.cuMemFreeAsync(p, s1);
	cu.cuStreamSynchronize(s1);

	cu.cuMemAllocAsync(&p, sizeof buf, s1);
	cu.cuStreamSynchronize(s1);
	cu.cuMemcpyHtoDAsync(p, buf, sizeof buf, s2);
	is_int(cu.cuStreamSynchronize(s2), FAKECUDA_SUCCESS,
	       "used on another stream after the allocating one was synced");
	cu.cuMemcpyHtoDAsync(p, buf, sizeof buf, s2);
	cu.cuMemFreeAsync(p, s1);
	is_int(cu.cuStreamSynchronize(s1), FAKECUDA_ERROR_ILLEGAL_ADDRESS,
	       "freed on one stream while another's use of it is not "
	       "ordered before the free: CUDA_ERROR_ILLEGAL_ADDRESS");
	cu.cuStreamSynchronize(s2);
	fake_reset();

	/* Refused at the call if the free ran already, else at the sync. */
	cu.cuMemAllocAsync(&p, sizeof buf, s1);
	cu.cuMemFreeAsync(p, s1);
	int copied = cu.cuMemcpyHtoDAsync(p, buf, sizeof buf, s1);
	int synced = cu.cuStreamSynchronize(s1);
	ok((copied == FAKECUDA_SUCCESS &&
	    synced == FAKECUDA_ERROR_ILLEGAL_ADDRESS) ||
		   (copied == FAKECUDA_ERROR_INVALID_VALUE &&
		    synced == FAKECUDA_SUCCESS),
	   "used after cuMemFreeAsync: CUDA_ERROR_ILLEGAL_ADDRESS at the "
	   "sync, or CUDA_ERROR_INVALID_VALUE at once (got %d, %d)", copied,
	   synced);
	fake_reset();

	cu.cuStreamDestroy(s1);
	cu.cuStreamDestroy(s2);
}

/* A stream is its context's: another context's work may not go on it,
 * and once its context is destroyed it is stale. */
static void test_fake_stream_context(void *ctx0)
{
	void *ctx1 = NULL, *s = NULL, *mine = NULL;
	unsigned char buf[256] = {0};
	fc_ptr p;

	setenv("FAKECUDA_DEVICES", "2", 1);
	if (!ok(cu.cuDevicePrimaryCtxRetain(&ctx1, 1) == FAKECUDA_SUCCESS,
		"a second device's primary context")) {
		unsetenv("FAKECUDA_DEVICES");
		return;
	}
	cu.cuCtxSetCurrent(ctx1);
	is_int(cu.cuStreamCreate(&s, 1), FAKECUDA_SUCCESS,
	       "  ... a stream in it");
	cu.cuCtxSetCurrent(ctx0);
	cu.cuStreamCreate(&mine, 1);
	cu.cuMemAlloc(&p, sizeof buf);
	is_int(cu.cuMemcpyHtoDAsync(p, buf, sizeof buf, s),
	       FAKECUDA_ERROR_INVALID_HANDLE,
	       "a copy onto it from the first device's context: "
	       "CUDA_ERROR_INVALID_HANDLE");
	is_int(cu.cuMemcpyHtoDAsync(p, buf, sizeof buf, mine),
	       FAKECUDA_SUCCESS, "  ... onto the context's own stream: fine");
	is_int(cu.cuStreamSynchronize(s), FAKECUDA_SUCCESS,
	       "  ... any context may wait for it");
	is_int(cu.cuDevicePrimaryCtxRelease(1), FAKECUDA_SUCCESS,
	       "its context released for the last time (destroyed)");
	is_int(cu.cuStreamSynchronize(s), FAKECUDA_ERROR_INVALID_CONTEXT,
	       "  ... its stream is stale: CUDA_ERROR_INVALID_CONTEXT");
	cu.cuCtxSetCurrent(ctx1);
	is_int(cu.cuMemcpyHtoDAsync(p, buf, sizeof buf, s),
	       FAKECUDA_ERROR_INVALID_CONTEXT,
	       "  ... and no work goes on it, even with the dead context "
	       "current");
	cu.cuCtxSetCurrent(ctx0);
	is_int(cu.cuStreamDestroy(s), FAKECUDA_ERROR_INVALID_CONTEXT,
	       "  ... destroying it says so (and gives its memory back)");
	cu.cuStreamSynchronize(mine);
	cu.cuStreamDestroy(mine);
	cu.cuMemFree(p);
	unsetenv("FAKECUDA_DEVICES");
}

/* Reads of device bytes that nothing wrote, which initcheck reports on
 * a GPU: the stand-in counts each copy and kernel binding that makes one
 * (and names it on stderr); written bytes travel with device copies. */
static void test_fake_initcheck(void *ctx, void *stream)
{
	enum { E = 64 };
	void *image = read_fatbin("elementwise"), *mod = NULL, *add = NULL;
	static float in[E], out[E];
	struct {
		uint64_t count;
	} ep = {E};
	fc_ptr p = 0, q = 0, r = 0;
	void *params[4] = {&r, &p, &q, &ep};
	const size_t half = sizeof in / 2;

	cu.cuCtxSetCurrent(ctx);
	if (!ok(image && cu.cuModuleLoadData(&mod, image) == FAKECUDA_SUCCESS &&
			cu.cuModuleGetFunction(&add, mod, "wafer_add_f32") ==
				FAKECUDA_SUCCESS,
		"initcheck: wafer_add_f32 loads")) {
		free(image);
		return;
	}
	values(in, E, 17);
	cu.cuMemAlloc(&p, sizeof in);
	cu.cuMemAlloc(&q, sizeof in);
	cu.cuMemAlloc(&r, sizeof in);
	uint64_t n0 = stats().uninit_reads;
	cu.cuMemcpyHtoDAsync(p, in, half, stream);
	cu.cuMemcpyDtoHAsync(out, p, half, stream);
	cu.cuStreamSynchronize(stream);
	is_int((long long)(stats().uninit_reads - n0), 0,
	       "initcheck: reading back the half written: nothing to report");
	ok(memcmp(out, in, half) == 0, "  ... and the values are those written");
	cu.cuMemcpyDtoHAsync(out, p, sizeof in, stream);
	cu.cuStreamSynchronize(stream);
	is_int((long long)(stats().uninit_reads - n0), 1,
	       "  ... the whole, half never written: one uninitialised read");
	cu.cuMemcpyDtoDAsync(q, p, sizeof in, stream);
	cu.cuStreamSynchronize(stream);
	is_int((long long)(stats().uninit_reads - n0), 2,
	       "  ... a device-to-device copy of the whole: another");
	cu.cuMemcpyDtoHAsync(out, q, half, stream);
	cu.cuStreamSynchronize(stream);
	is_int((long long)(stats().uninit_reads - n0), 2,
	       "  ... the copy's first half is written");
	cu.cuMemcpyDtoHAsync(out, q + half, half, stream);
	cu.cuStreamSynchronize(stream);
	is_int((long long)(stats().uninit_reads - n0), 3,
	       "  ... its second half is not");
	is_int(cu.cuLaunchKernel(add, 1, 1, 1, 256, 1, 1, 0, stream, params,
				 NULL),
	       FAKECUDA_SUCCESS, "  ... wafer_add_f32 of the two still runs");
	cu.cuMemcpyDtoHAsync(out, r, sizeof out, stream);
	cu.cuStreamSynchronize(stream);
	is_int((long long)(stats().uninit_reads - n0), 5,
	       "  ... one report for each input; its output is written");
	is_int(stats().sticky, 0, "  ... none of this is an error the "
	       "program sees, as on a GPU");
	cu.cuMemFree(p);
	cu.cuMemFree(q);
	cu.cuMemFree(r);
	cu.cuModuleUnload(mod);
	free(image);
}

static void test_fake_contracts(void *fake)
{
	void *ctx = NULL, *stream = NULL;
	int dev = -1;

	if (!ok(resolve_fake(fake), "the stand-in's entry points, directly") ||
	    !ok(cu.cuInit(0) == FAKECUDA_SUCCESS &&
			cu.cuDeviceGet(&dev, 0) == FAKECUDA_SUCCESS &&
			cu.cuDevicePrimaryCtxRetain(&ctx, dev) ==
				FAKECUDA_SUCCESS &&
			cu.cuCtxSetCurrent(ctx) == FAKECUDA_SUCCESS &&
			cu.cuStreamCreate(&stream, 1) == FAKECUDA_SUCCESS,
		"  ... a context and a stream of device 0"))
		return;
	test_fake_attributes();
	test_fake_grid(ctx, stream);
	test_fake_stream_order(ctx);
	test_fake_stream_context(ctx);
	test_fake_initcheck(ctx, stream);
	cu.cuCtxSetCurrent(ctx);
	cu.cuStreamDestroy(stream);
	cu.cuDevicePrimaryCtxRelease(dev);
	cu.cuCtxSetCurrent(NULL);
}

/*===----------------------------------------------------------------------===
 * Main
 *===----------------------------------------------------------------------===*/


/*===----------------------------------------------------------------------===
 * Programs (program.c): CUDA C through the real NVRTC, PTX, CUBIN
 *===----------------------------------------------------------------------===*/

/* The saxpy of t/standins/fakecuda_program.c: y = a x + y. */
static const char program_cu[] =
	"struct saxpy_params { unsigned long long n; float a; unsigned pad; };\n"
	"extern \"C\" __global__ void wafer_test_saxpy(float *y, const float *x,\n"
	"                                             saxpy_params p)\n"
	"{\n"
	"\tunsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
	"\tif (i < p.n)\n"
	"\t\ty[i] = p.a * x[i] + y[i];\n"
	"}\n";

static wafer_status program_from(void *device, wafer_program_format format,
				 const void *data, size_t size, void **out)
{
	struct wafer_program_source src = {
		.struct_size = sizeof src,
		.format = format,
		.data = data,
		.size = size,
		.name = "saxpy.cu",
	};
	return plugin->server->program_load(device, &src, NULL, out);
}

static void test_programs(void *device, void *queue)
{
	const struct wafer_server_ops *s = plugin->server;
	const wafer_program_format *formats = NULL;
	const struct wafer_kernel *k = NULL, *again = NULL;
	struct { uint64_t n; float a; uint32_t pad; } p = {1000, 2.0f, 0};
	enum { N = 1000 };
	float x[N], y[N], got[N];
	void *program = NULL, *bad = NULL;
	size_t count = 0;

	if (real || !WAFER_STRUCT_HAS(s, struct wafer_server_ops,
				      program_release)) {
		ok(s->program_load != NULL, "# SKIP programs on the GPU: "
		   "t/api/programs (dev/gpu-programs.sh)");
		return;
	}
	status_is(s->program_formats(device, &formats, &count), WAFER_OK,
		  "program_formats");
	ok(count == 3 && formats[0] == WAFER_PROGRAM_CUDA_C &&
		   formats[1] == WAFER_PROGRAM_PTX &&
		   formats[2] == WAFER_PROGRAM_CUBIN,
	   "programs: cuda-c (NVRTC loads), ptx, cubin");

	/* NVRTC compiles for the stand-in's sm_90; the CUBIN it makes is
	 * what the driver is given. */
	if (!status_is(program_from(device, WAFER_PROGRAM_CUDA_C, program_cu,
				    strlen(program_cu), &program),
		       WAFER_OK, "program_load: CUDA C through NVRTC"))
		return;
	status_is(s->program_kernel(device, program, "wafer_test_saxpy", 2,
				    sizeof p, &k),
		  WAFER_OK, "program_kernel: wafer_test_saxpy");
	status_is(s->program_kernel(device, program, "wafer_test_saxpy", 2,
				    sizeof p, &again),
		  WAFER_OK, "program_kernel again");
	ok(k && k == again && k->dtype == WAFER_DTYPE_NONE &&
		   k->binding_count == 2 && k->params_size == sizeof p &&
		   strcmp(k->op, "wafer_test_saxpy") == 0,
	   "program_kernel: one entry per name and shape, dtype none");
	status_is(s->program_kernel(device, program, "saxpy", 2, sizeof p,
				    &again),
		  WAFER_ERROR_NOT_FOUND, "program_kernel: an unknown name");
	like(last_error, "no kernel 'saxpy' in program saxpy.cu",
	     "program_kernel: the error names the kernel and program");

	/* y at an offset into its allocation: the kernel gets the
	 * binding's first byte. */
	wafer_resource rx = alloc_or_die(device, sizeof x);
	wafer_resource ry = alloc_or_die(device, 256 + sizeof y);
	values(x, N, 1);
	values(y, N, 2);
	s->sync(device, queue);
	plugin->storage->copy_in(device, queue, rx, 0, x, sizeof x);
	plugin->storage->copy_in(device, queue, ry, 256, y, sizeof y);
	struct wafer_binding b[2] = {binding(ry, 256, sizeof y),
				     binding(rx, 0, sizeof x)};
	struct wafer_launch l = launch_of(k, b, 2, &p, sizeof p, N);
	status_is(s->launch(device, queue, &l), WAFER_OK,
		  "launch of a program kernel (default block)");
	l.local[0] = 64; /* 16 blocks of 64: 24 threads past n */
	status_is(s->launch(device, queue, &l), WAFER_OK,
		  "launch of a program kernel (block 64)");
	plugin->storage->copy_out(device, queue, ry, 256, got, sizeof got);
	status_is(sync_queue(device, queue), WAFER_OK, "sync after them");
	int wrong = 0;
	for (int i = 0; i < N; i++)
		wrong += got[i] != 2.0f * x[i] + (2.0f * x[i] + y[i]);
	is_int(wrong, 0, "program kernel: y = 2x + (2x + y) at every element");
	plugin->storage->free(device, rx);
	plugin->storage->free(device, ry);
	s->program_release(device, program);

	/* Failures: the compiler's log with its line, the JIT's, a bad
	 * image. */
	static const char broken[] = "extern \"C\" __global__ void f(float *y)\n"
				     "{\n"
				     "\ty[0] = undeclared;\n"
				     "}\n";
	status_is(program_from(device, WAFER_PROGRAM_CUDA_C, broken,
			       sizeof broken - 1, &bad),
		  WAFER_ERROR_BUILD, "CUDA C that does not compile: BUILD");
	like(last_error, "saxpy.cu(3): error", "the error holds NVRTC's "
	     "log with the line");
	static const char no_version[] = "\n\n.entry f()\n{\n\tret;\n}\n";
	status_is(program_from(device, WAFER_PROGRAM_PTX, no_version,
			       sizeof no_version - 1, &bad),
		  WAFER_ERROR_BUILD, "PTX the driver refuses: BUILD");
	like(last_error, "line 3", "the error holds the JIT's log");
	static const unsigned char junk[64] = {0x7f, 'E', 'L', 'F', 2, 1};
	unsigned char cut[64];
	memcpy(cut, junk, sizeof cut);
	cut[0x3c] = 9; /* nine section headers at offset 0 of 64 bytes */
	cut[0x3a] = 64;
	status_is(program_from(device, WAFER_PROGRAM_CUBIN, cut, sizeof cut,
			       &bad),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "a CUBIN whose headers lie past its bytes: refused before "
		  "the driver reads it");
	ok(bad == NULL, "no program from a failed load");
}

/* [cuda] nvrtc = no: PTX and CUBIN only. */
static void test_programs_without_nvrtc(void)
{
	struct wafer_plugin_option no = option("nvrtc", "no", "test");
	const wafer_program_format *formats = NULL;
	void *state = NULL, *device = NULL;
	size_t count = 0;

	if (real || init_with(&no, 1, &state) != WAFER_OK ||
	    plugin->device_open(state, 0, &device) != WAFER_OK) {
		ok(real, "nvrtc = no: open: %s", last_error);
		if (state)
			plugin->shutdown(state);
		return;
	}
	plugin->server->program_formats(device, &formats, &count);
	ok(count == 2 && formats[0] == WAFER_PROGRAM_PTX &&
		   formats[1] == WAFER_PROGRAM_CUBIN,
	   "nvrtc = no: programs in ptx and cubin only");
	plugin->device_close(device);
	plugin->shutdown(state);
}

/*===----------------------------------------------------------------------===
 * Interop: native pointers and streams out, the caller's in
 *===----------------------------------------------------------------------===*/

/* The driver the plugin runs on (the stand-in, or libcuda.so.1 with
 * --real), for the test's own calls through |cu|. */
static void *driver_so;

static struct wafer_native_buffer cuda_pointer(fc_ptr address, size_t size)
{
	return (struct wafer_native_buffer){
		.struct_size = sizeof(struct wafer_native_buffer),
		.kind = WAFER_NATIVE_CUDA_POINTER,
		.address = address,
		.size = size,
	};
}

/* |n| bytes at device address |p| as the driver reads them on |stream|. */
static int driver_read(void *stream, fc_ptr p, void *dst, size_t n)
{
	return cu.cuMemcpyDtoHAsync(dst, p, n, stream) ||
	       cu.cuStreamSynchronize(stream);
}

static int driver_write(void *stream, fc_ptr p, const void *src, size_t n)
{
	return cu.cuMemcpyHtoDAsync(p, src, n, stream) ||
	       cu.cuStreamSynchronize(stream);
}

static void test_native_out(void *device, void *queue, void *stream,
			    size_t g)
{
	const struct wafer_storage_ops *st = plugin->storage;
	const size_t n = 4096;
	unsigned char *a = bytes(n), *got = bytes(n);
	wafer_resource r = alloc_or_die(device, n);
	struct wafer_native_buffer nb = {.struct_size = sizeof nb};

	pattern(a, n, 31);
	st->copy_in(device, queue, r, 0, a, n);
	sync_queue(device, queue);
	status_is(st->native(device, r, 256, &nb), WAFER_OK,
		  "native of an allocation, 256 bytes in");
	ok(nb.kind == WAFER_NATIVE_CUDA_POINTER && nb.address == r + 256 &&
		   nb.context != NULL && nb.device_ordinal == 0,
	   "  ... a CUDA pointer, the resource + 256, the primary context, "
	   "device 0");
	memset(got, 0, n);
	ok(driver_read(stream, nb.address, got, n - 256) == 0 &&
		   memcmp(got, a + 256, n - 256) == 0,
	   "  ... the driver reads copy_in's bytes there");
	st->free(device, r);

	if (!g)
		return;
	wafer_resource range = 0;
	if (st->vm_reserve(device, 4 * g, &range) != WAFER_OK ||
	    st->vm_map(device, range, g, g) != WAFER_OK) {
		ok(0, "vm_reserve and vm_map for native: %s", last_error);
		return;
	}
	st->copy_in(device, queue, range, g + 64, a, n);
	sync_queue(device, queue);
	status_is(st->native(device, range, g + 64, &nb), WAFER_OK,
		  "native of a mapped page of a vm range");
	ok(nb.address == range + g + 64, "  ... a pointer into the range");
	ok(driver_read(stream, nb.address, got, n) == 0 &&
		   memcmp(got, a, n) == 0,
	   "  ... the driver reads the bytes there");
	status_is(st->native(device, range, 2 * g, &nb),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "native of an unmapped page is refused");
	like(last_error, "not mapped", "  ... saying it is not mapped");
	st->vm_release(device, range);
	free(a);
	free(got);
}

static void test_import(void *device, void *queue, void *stream)
{
	const struct wafer_storage_ops *st = plugin->storage;
	const size_t n = 4096;
	unsigned char *a = bytes(n), *b = bytes(n), *got = bytes(n);
	fc_ptr p = 0;
	wafer_resource r = 0;
	struct wafer_native_buffer nb;
	struct fakecuda_stats s0, s1;

	if (cu.cuMemAlloc(&p, n) != FAKECUDA_SUCCESS) {
		ok(0, "the test's cuMemAlloc");
		return;
	}
	pattern(a, n, 41);
	driver_write(stream, p, a, n);
	nb = cuda_pointer(p, n);
	status_is(st->import(device, &nb, &r), WAFER_OK,
		  "import of the test's cuMemAlloc pointer");
	ok(r == p, "  ... the resource is the pointer");
	memset(got, 0, n);
	st->copy_out(device, queue, r, 0, got, n);
	sync_queue(device, queue);
	ok(memcmp(got, a, n) == 0, "  ... copy_out reads the driver's bytes");
	pattern(b, n, 42);
	st->copy_in(device, queue, r, 512, b, 1024);
	sync_queue(device, queue);
	driver_read(stream, p, got, n);
	ok(memcmp(got + 512, b, 1024) == 0 && memcmp(got, a, 512) == 0,
	   "  ... copy_in writes where the driver reads");
	struct wafer_binding bind = binding(r, 1024, 1024);
	status_is(launch(device, queue, WAFER_KERNEL_FILL, WAFER_DTYPE_F32,
			 &bind, 1, 256, 3.5),
		  WAFER_OK, "  ... a fill launched on it");
	sync_queue(device, queue);
	float f[256];
	driver_read(stream, p + 1024, f, sizeof f);
	int filled = 1;
	for (size_t i = 0; i < 256; i++)
		filled &= f[i] == 3.5f;
	ok(filled, "  ... the driver reads the fill's values");
	s0 = stats();
	st->forget(device, r);
	s1 = stats();
	if (!real)
		ok(s1.frees == s0.frees, "  ... forget frees nothing");
	is_int(cu.cuMemFree(p), FAKECUDA_SUCCESS,
	       "  ... the test's cuMemFree of it after forget succeeds");

	/* Refusals, each naming what is wrong. */
	unsigned char host[256];
	nb = cuda_pointer((fc_ptr)(uintptr_t)host, sizeof host);
	status_is(st->import(device, &nb, &r), WAFER_ERROR_INVALID_ARGUMENT,
		  "import of a pageable host pointer is refused");
	like(last_error, "not memory the CUDA driver knows",
	     "  ... naming it");
	ok(r == 0, "  ... and the resource is 0");
	nb = cuda_pointer(0, n);
	status_is(st->import(device, &nb, &r), WAFER_ERROR_INVALID_ARGUMENT,
		  "import of address 0 is refused");
	nb = cuda_pointer(0x10000, 0);
	status_is(st->import(device, &nb, &r), WAFER_ERROR_INVALID_ARGUMENT,
		  "import of 0 bytes is refused");
	nb = cuda_pointer(0x10000, n);
	nb.kind = WAFER_NATIVE_OPENCL_MEM;
	status_is(st->import(device, &nb, &r), WAFER_ERROR_INVALID_ARGUMENT,
		  "import of another kind is refused");
	like(last_error, "not cuda-pointer", "  ... naming the kind wanted");
	if (cu.cuMemAlloc(&p, n) == FAKECUDA_SUCCESS) {
		/* On a GPU 64 MiB further may well be another allocation:
		 * the plugin checks the two ends only. */
		nb = cuda_pointer(p, (size_t)64 << 20);
		if (!real) {
			status_is(st->import(device, &nb, &r),
				  WAFER_ERROR_INVALID_ARGUMENT,
				  "import running past the allocation is "
				  "refused");
			like(last_error, "last byte",
			     "  ... naming the last byte");
		}
		nb = cuda_pointer(p, n);
		nb.context = (void *)&nb;
		status_is(st->import(device, &nb, &r),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "import naming another context is refused");
		like(last_error, "primary context", "  ... saying so");
		cu.cuMemFree(p);
	}
	free(a);
	free(b);
	free(got);
}

/* The legacy default stream's implicit synchronisation, through |wq|,
 * a queue over it: its work runs after what a blocking stream (one
 * created without CU_STREAM_NON_BLOCKING) was given before, and the
 * blocking stream's after what it was given before. Each copy reads
 * what the other stream wrote, however late that runs (on the
 * stand-in, FAKECUDA_DELAY_US holds each step back 20 ms). */
static void test_legacy_order(void *device, void *wq, wafer_resource t,
			      size_t n)
{
	const struct wafer_storage_ops *st = plugin->storage;
	unsigned char *a = bytes(n), *got = bytes(n);
	void *blocking = NULL;
	fc_ptr p = (fc_ptr)t;

	if (cu.cuStreamCreate(&blocking, 0) != FAKECUDA_SUCCESS) {
		ok(0, "a blocking stream for the legacy stream's order");
		free(a);
		free(got);
		return;
	}
	/* Set and unset while no stream has work. */
	setenv("FAKECUDA_DELAY_US", "20000", 1);
	pattern(a, n, 53);
	cu.cuMemcpyHtoDAsync(p, a, n, blocking);
	st->copy_out(device, wq, t, 0, got, n);
	status_is(sync_queue(device, wq), WAFER_OK,
		  "  ... a download on it after a blocking stream's upload");
	ok(memcmp(a, got, n) == 0, "  ... reads what the upload wrote");
	/* Two uploads on it, the second the one to read: a download that
	 * ran beside them would see the first's bytes or older. */
	memset(got, 0, n);
	st->copy_in(device, wq, t, 0, got, n);
	pattern(a, n, 54);
	st->copy_in(device, wq, t, 0, a, n);
	/* Into pageable memory: returns when the copy ran. */
	is_int(cu.cuMemcpyDtoHAsync(got, p, n, blocking), FAKECUDA_SUCCESS,
	       "  ... a blocking stream's download after an upload on it");
	ok(memcmp(a, got, n) == 0, "  ... reads what the upload wrote");
	unsetenv("FAKECUDA_DELAY_US");
	/* So stream-ordered memory passes between the two without a sync:
	 * allocated on the legacy stream, written on the blocking one,
	 * read on the legacy one, freed on the blocking one. */
	fc_ptr q = 0;
	if (cu.cuMemAllocAsync(&q, n, (void *)1) == FAKECUDA_SUCCESS) {
		pattern(a, n, 55);
		memset(got, 0, n);
		cu.cuMemcpyHtoDAsync(q, a, n, blocking);
		cu.cuMemcpyDtoHAsync(got, q, n, (void *)1);
		cu.cuMemFreeAsync(q, blocking);
		is_int(cu.cuStreamSynchronize(blocking), FAKECUDA_SUCCESS,
		       "  ... cuMemAllocAsync on it, used and freed on a "
		       "blocking stream");
		ok(memcmp(a, got, n) == 0, "  ... the bytes arrive");
		is_int(stats().sticky, 0, "  ... no use out of stream order");
	} else {
		ok(1, "# SKIP the driver has no memory pools");
	}
	cu.cuStreamSynchronize(blocking);
	cu.cuStreamDestroy(blocking);
	free(a);
	free(got);
}

static void test_queue_wrap(void *device, void *queue, void *stream)
{
	const struct wafer_storage_ops *st = plugin->storage;
	const struct wafer_server_ops *sv = plugin->server;
	const size_t n = 1 << 16;
	unsigned char *a = bytes(n), *got = bytes(n);
	struct wafer_native_queue nq = {.struct_size = sizeof nq};
	void *wq = NULL, *timer = NULL;
	uint64_t ns = 0;
	fc_ptr p = 0;

	status_is(sv->queue_native(device, queue, &nq), WAFER_OK,
		  "queue_native of the plugin's own queue");
	ok(nq.kind == WAFER_NATIVE_CUDA_POINTER && nq.queue && nq.context,
	   "  ... a stream and a context");
	is_int(cu.cuStreamSynchronize(nq.queue), FAKECUDA_SUCCESS,
	       "  ... a stream the driver synchronises");

	/* The default streams, by their handles (<cuda.h>'s
	 * CU_STREAM_LEGACY and CU_STREAM_PER_THREAD). */
	status_is(sv->queue_wrap(device, (void *)2, &wq),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "queue_wrap of the per-thread default stream is refused");
	like(last_error, "CU_STREAM_PER_THREAD", "  ... naming it");
	status_is(sv->queue_wrap(device, (void *)1, &wq), WAFER_OK,
		  "queue_wrap of the legacy default stream");
	if (wq) {
		wafer_resource t = alloc_or_die(device, n);
		pattern(a, n, 52);
		st->copy_in(device, wq, t, 0, a, n);
		st->copy_out(device, wq, t, 0, got, n);
		status_is(sync_queue(device, wq), WAFER_OK,
			  "  ... copies on it and a sync");
		ok(memcmp(a, got, n) == 0, "  ... the bytes arrive");
		test_legacy_order(device, wq, t, n);
		sv->queue_destroy(device, wq);
		st->free(device, t);
		/* The queue did not own it: the stream lives on. */
		is_int(cu.cuStreamSynchronize((void *)1), FAKECUDA_SUCCESS,
		       "  ... the legacy stream outlives the queue");
		if (real)
			ok(cu.cuStreamDestroy((void *)1) != FAKECUDA_SUCCESS,
			   "  ... and cannot be destroyed");
		else
			is_int(cu.cuStreamDestroy((void *)1),
			       FAKECUDA_ERROR_INVALID_HANDLE,
			       "  ... and cannot be destroyed");
	}
	wq = NULL;
	status_is(sv->queue_wrap(device, stream, &wq), WAFER_OK,
		  "queue_wrap of the test's stream");
	if (!wq)
		return;
	status_is(sv->queue_native(device, wq, &nq), WAFER_OK,
		  "  ... queue_native of it");
	ok(nq.queue == stream, "  ... is the test's stream");
	/* The caller's work, then wafer's on the same stream: in order. */
	pattern(a, n, 51);
	wafer_resource r = alloc_or_die(device, n);
	cu.cuMemAlloc(&p, n);
	cu.cuMemcpyHtoDAsync(p, a, n, stream);
	status_is(st->copy(device, wq, r, 0, (wafer_resource)p, 0, n),
		  WAFER_OK, "  ... a copy after the caller's upload");
	st->copy_out(device, wq, r, 0, got, n);
	status_is(sv->timer_begin(device, wq, &timer), WAFER_OK,
		  "  ... a timer on it");
	struct wafer_binding bind = binding(r, 0, 1024);
	launch(device, wq, WAFER_KERNEL_FILL, WAFER_DTYPE_F32, &bind, 1, 256,
	       -2.0);
	if (timer)
		status_is(sv->timer_end(device, wq, timer, &ns), WAFER_OK,
			  "  ... timer_end (%" PRIu64 " ns)", ns);
	wafer_resource t = 0;
	status_is(st->alloc_async(device, wq, n, &t), WAFER_OK,
		  "  ... alloc_async on it");
	st->copy(device, wq, t, 0, r, 0, n);
	st->copy_out(device, wq, t, 0, a, 1024);
	st->free_async(device, wq, t);
	status_is(sync_queue(device, wq), WAFER_OK, "  ... sync");
	float f[256];
	memcpy(f, a, sizeof f);
	int filled = 1;
	for (size_t i = 0; i < 256; i++)
		filled &= f[i] == -2.0f;
	ok(filled, "  ... the work ran in order (fill, copy, download)");
	unsigned char *want = bytes(n);
	pattern(want, n, 51);
	ok(memcmp(got, want, n) == 0,
	   "  ... the copy read the caller's bytes, written before it");
	struct fakecuda_stats s0 = stats();
	sv->queue_destroy(device, wq);
	if (!real)
		is_int((long long)stats().streams_live,
		       (long long)s0.streams_live,
		       "queue_destroy leaves the caller's stream alive");
	is_int(cu.cuMemcpyHtoDAsync(p, want, n, stream), FAKECUDA_SUCCESS,
	       "  ... it takes the caller's work");
	is_int(cu.cuStreamSynchronize(stream), FAKECUDA_SUCCESS,
	       "  ... and synchronises");
	cu.cuMemFree(p);
	st->free(device, r);
	free(want);
	free(a);
	free(got);
}

/* Another device's memory and stream (the stand-in's second GPU). */
static void test_interop_other_device(void *device, void *ctx0)
{
	void *ctx1 = NULL, *s1 = NULL, *wq = NULL;
	fc_ptr p = 0;
	wafer_resource r = 0;
	struct wafer_native_buffer nb;

	setenv("FAKECUDA_DEVICES", "2", 1);
	if (cu.cuDevicePrimaryCtxRetain(&ctx1, 1) != FAKECUDA_SUCCESS ||
	    cu.cuCtxSetCurrent(ctx1) != FAKECUDA_SUCCESS ||
	    cu.cuMemAlloc(&p, 4096) != FAKECUDA_SUCCESS ||
	    cu.cuStreamCreate(&s1, 0) != FAKECUDA_SUCCESS) {
		ok(0, "the stand-in's second device");
		unsetenv("FAKECUDA_DEVICES");
		return;
	}
	nb = cuda_pointer(p, 4096);
	status_is(plugin->storage->import(device, &nb, &r),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "import of another device's pointer is refused");
	like(last_error, "memory of CUDA device 1, not of cuda:0",
	     "  ... naming both devices");
	status_is(plugin->server->queue_wrap(device, s1, &wq),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "queue_wrap of another context's stream is refused");
	like(last_error, "belongs to context", "  ... naming its context");
	ok(wq == NULL, "  ... and no queue comes back");
	cu.cuCtxSetCurrent(ctx1);
	cu.cuStreamDestroy(s1);
	cu.cuMemFree(p);
	cu.cuDevicePrimaryCtxRelease(1);
	cu.cuCtxSetCurrent(ctx0);
	unsetenv("FAKECUDA_DEVICES");
}

/* Record and wait are tried before the plugin enters its context: with
 * another device's context current, or none, they still order the two
 * queues (the stand-in refuses work on a stream of a context that is not
 * current, as a driver may: the plugin enters and calls again). */
static void test_events_context(void *device, void *queue, void *ctx0)
{
	const struct wafer_storage_ops *st = plugin->storage;
	const struct wafer_server_ops *sv = plugin->server;
	const size_t n = 1 << 20;
	unsigned char *a = bytes(n), *got = bytes(n);
	void *ctx1 = NULL, *other = NULL, *e = NULL, *now = NULL;
	wafer_resource r = alloc_or_die(device, n);

	setenv("FAKECUDA_DEVICES", "2", 1);
	if (!sv->event_create || sv->event_create(device, 0, &e) != WAFER_OK ||
	    sv->queue_create(device, &other) != WAFER_OK ||
	    cu.cuDevicePrimaryCtxRetain(&ctx1, 1) != FAKECUDA_SUCCESS) {
		ok(0, "an event, a second queue and the second device");
		unsetenv("FAKECUDA_DEVICES");
		return;
	}
	for (int none = 0; none < 2; none++) {
		const char *current = none ? "no context" : "another context";
		pattern(a, n, 3 + none);
		st->copy_in(device, queue, r, 0, a, n);
		cu.cuCtxSetCurrent(none ? NULL : ctx1);
		status_is(sv->event_record(device, queue, e), WAFER_OK,
			  "event_record with %s current", current);
		cu.cuCtxSetCurrent(none ? NULL : ctx1);
		status_is(sv->queue_wait_event(device, other, e), WAFER_OK,
			  "  ... queue_wait_event too");
		cu.cuCtxGetCurrent(&now);
		ok(now == ctx0, "  ... the stand-in refused the first try: "
				"the plugin entered its context");
		memset(got, 0, n);
		st->copy_out(device, other, r, 0, got, n);
		status_is(sync_queue(device, other), WAFER_OK, "  ... sync");
		ok(memcmp(got, a, n) == 0,
		   "  ... the other queue's download came after the upload");
	}
	sv->queue_destroy(device, other);
	sv->event_destroy(device, e);
	st->free(device, r);
	cu.cuCtxSetCurrent(ctx0);
	cu.cuDevicePrimaryCtxRelease(1);
	unsetenv("FAKECUDA_DEVICES");
	free(a);
	free(got);
}

static void test_interop(void *device, void *queue, size_t g)
{
	struct wafer_native_buffer nb = {.struct_size = sizeof nb};
	wafer_resource r = alloc_or_die(device, 256);
	void *stream = NULL;

	if (!driver_so || !resolve_fake(driver_so)) {
		ok(0, "the driver's entry points for the interop tests");
		return;
	}
	/* The test's own calls run in the device's primary context. */
	plugin->storage->native(device, r, 0, &nb);
	plugin->storage->free(device, r);
	if (!nb.context || cu.cuCtxSetCurrent(nb.context) != FAKECUDA_SUCCESS ||
	    cu.cuStreamCreate(&stream, 1) != FAKECUDA_SUCCESS) {
		ok(0, "the test's stream in the primary context");
		return;
	}
	test_native_out(device, queue, stream, g);
	test_import(device, queue, stream);
	test_queue_wrap(device, queue, stream);
	if (!real) {
		test_interop_other_device(device, nb.context);
		test_events_context(device, queue, nb.context);
	}
	cu.cuCtxSetCurrent(nb.context);
	cu.cuStreamDestroy(stream);
}

static void test_device(void *state)
{
	struct wafer_device_info info = {.struct_size = sizeof info};
	void *device = NULL, *queue = NULL;

	test_device_info(state);
	status_is(plugin->device_open(state, 0, &device), WAFER_OK,
		  "device_open(0)");
	if (!device)
		return;
	plugin->device_info(state, 0, &info);
	test_kernel_table(device);
	status_is(plugin->server->queue_create(device, &queue), WAFER_OK,
		  "queue_create");
	test_copies(device, queue, "default staging");
	test_copy_order(device, queue);
	test_alloc_errors(device, info.memory_bytes);
	test_async(device, queue);
	test_host_memory(device, queue);
	if (info.vm_granularity)
		test_vm(device, queue, info.vm_granularity);
	test_kernels(device, queue);
	test_bad_launches(device, queue);
	test_shape_checks(device, queue);
	test_matmul(device, queue);
	test_timers(device, queue);
	test_programs(device, queue);
	test_interop(device, queue, info.vm_granularity);
	plugin->server->queue_destroy(device, queue);

	/* A range the core forgot: released at close, with a warning. */
	wafer_resource range;
	if (info.vm_granularity &&
	    plugin->storage->vm_reserve(device, info.vm_granularity,
					&range) == WAFER_OK &&
	    plugin->storage->vm_map(device, range, 0, info.vm_granularity) ==
		    WAFER_OK) {
		log_reset();
		plugin->device_close(device);
		like(log_text, "device closed with", "device_close releases a "
		     "forgotten range");
	} else {
		plugin->device_close(device);
	}
}

int main(int argc, char **argv)
{
	const char *builddir = getenv("T_BUILDDIR");
	char path[4096];
	void *so, *fake = NULL, *state = NULL;

	real = argc > 1 && strcmp(argv[1], "--real") == 0;
	if (!builddir)
		skip_all("T_BUILDDIR is not set (run through make check)");
	snprintf(path, sizeof path, "%s/../plugins/cuda/.libs/cuda.so",
		 builddir);
	fakecuda_path(fake_path, sizeof fake_path, builddir);
	if (access(path, R_OK) != 0)
		skip_all("the cuda plugin was not built");
	if (!real) {
		/* The same instance the plugin will dlopen by path. */
		fake = dlopen(fake_path, RTLD_NOW | RTLD_LOCAL);
		if (!fake) {
			diag("%s", dlerror());
			return 1;
		}
		fake_stats = (fakecuda_stats_fn)dlsym(fake, "fakecuda_stats");
		fake_reset = (fakecuda_reset_fn)dlsym(fake, "fakecuda_reset");
		driver_so = fake;
	} else {
		driver_so = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	}

	so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!ok(so != NULL, "dlopen %s", path)) {
		diag("%s", dlerror());
		return exit_status();
	}
	wafer_plugin_query_fn query =
		(wafer_plugin_query_fn)dlsym(so, WAFER_PLUGIN_QUERY_SYMBOL);
	if (!ok(query != NULL, "wafer_plugin_query is exported"))
		return exit_status();
	test_descriptor(query);
	test_options();
	test_no_driver();

	/* Pages of the driver's granularity (2 MiB on the stand-in and on
	 * current GPUs), which test_vm cuts and maps again one by one; the
	 * default, vm_page = whole, runs under the backend-neutral suites
	 * of t/cuda/cuda.sh. */
	struct wafer_plugin_option pages = option("vm_page", "2M", "test");
	status_is(init_with(&pages, 1, &state), WAFER_OK, "init on %s",
		  real ? "libcuda.so.1" : "the stand-in driver");
	if (!state)
		return exit_status();
	uint32_t count = 0;
	if (plugin->device_count(state, &count) != WAFER_OK) {
		diag("no device: %s", last_error);
		plugin->shutdown(state);
		done_testing();
		return real ? 1 : exit_status();
	}
	test_device(state);
	if (!real) {
		test_sticky_error(state);
		test_release_threshold();
		test_staging_limits();
		test_no_pinned();
		test_no_vmm_no_pools();
		test_programs_without_nvrtc();
		struct fakecuda_stats s = stats();
		is_int((long long)s.streams_live, 0, "every stream destroyed");
		is_int((long long)s.events_live, 0, "every event destroyed");
		/* What initcheck reports on a GPU (the lines on stderr
		 * say which copy or kernel, and where). */
		is_int((long long)s.uninit_reads, 0, "the stand-in saw no read "
		       "of unwritten device memory");
	}
	plugin->shutdown(state);
	dlclose(so);
	if (fake) {
		test_fake_contracts(fake);
		dlclose(fake);
	}
	done_testing();
	return exit_status();
}
