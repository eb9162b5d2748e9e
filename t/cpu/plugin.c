/* wafer — SPDX-License-Identifier: MIT
 *
 * cpu_plugin.c: the cpu plugin on its own, through the vendor ABI only.
 * The test dlopens the built cpu.so, queries it with a fake host services
 * table (which captures set_error text and log lines), and drives every
 * entry the way the core would: descriptor and ABI numbers, init options,
 * device info, storage and virtual memory, each kernel against a scalar
 * reference, launch errors, timers, and launches from several threads. */
#include "build-config.h"

#include <dlfcn.h>
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

#include "t/tap.h"

#ifdef WAFER_SANITIZED
/* The out-of-memory tests ask for more memory than a sanitizer's allocator
 * serves; let it fail the way malloc does instead of aborting. The runtime
 * looks these up dynamically, so they must escape -fvisibility=hidden. */
#define SANITIZER_HOOK __attribute__((visibility("default"), used))
SANITIZER_HOOK const char *__asan_default_options(void);
SANITIZER_HOOK const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}
SANITIZER_HOOK const char *__tsan_default_options(void);
SANITIZER_HOOK const char *__tsan_default_options(void)
{
	return "allocator_may_return_null=1";
}
#endif

/* A fake core: host services that record what the plugin says. */
#include "t/standins/fake_host.h"

/*===----------------------------------------------------------------------===
 * Helpers
 *===----------------------------------------------------------------------===*/

static const struct wafer_plugin *plugin;
static long page_size;

static wafer_status init_with(const struct wafer_plugin_option *options,
			      size_t count, void **out_state)
{
	struct wafer_plugin_init_args args = {
		.struct_size = sizeof args,
		.options = options,
		.option_count = count,
		.host = &fake_host,
	};
	return plugin->init(&args, out_state);
}

static const struct wafer_kernel *find_kernel(void *device, const char *op)
{
	const struct wafer_kernel *table;
	size_t count;

	if (plugin->device_kernels(device, &table, &count) != WAFER_OK)
		return NULL;
	for (size_t i = 0; i < count; i++)
		if (strcmp(table[i].op, op) == 0)
			return &table[i];
	return NULL;
}

/* Launches a standard kernel over |count| elements of |bindings|. */
static wafer_status launch(void *device, void *queue, const char *op,
			   const struct wafer_binding *bindings,
			   uint32_t binding_count, uint64_t count, double value)
{
	const struct wafer_kernel *kernel = find_kernel(device, op);
	struct wafer_fill_params fill = {.count = count, .value = value};
	struct wafer_elementwise_params ew = {.count = count};
	int is_fill = strcmp(op, WAFER_KERNEL_FILL) == 0;
	struct wafer_launch l = {
		.struct_size = sizeof l,
		.kernel = kernel,
		.bindings = bindings,
		.binding_count = binding_count,
		.params = is_fill ? (const void *)&fill : (const void *)&ew,
		.params_size = is_fill ? sizeof fill : sizeof ew,
		.global = {count ? count : 1, 1, 1},
	};
	if (!kernel)
		return WAFER_ERROR_NOT_FOUND;
	return plugin->server->launch(device, queue, &l);
}

static wafer_resource alloc_or_die(void *device, size_t size)
{
	wafer_resource r;
	if (plugin->storage->alloc(device, size, &r) != WAFER_OK) {
		diag("alloc(%zu): %s", size, last_error);
		exit(1);
	}
	return r;
}

static void upload(void *device, void *queue, wafer_resource r,
		   const float *src, size_t n)
{
	plugin->storage->copy_in(device, queue, r, 0, src, n * sizeof(float));
}

static void download(void *device, void *queue, wafer_resource r, float *dst,
		     size_t n)
{
	plugin->storage->copy_out(device, queue, r, 0, dst, n * sizeof(float));
}

/* Deterministic inputs in [-64, 64), with exact zeros and negative zeros. */
static void fill_inputs(float *x, size_t n, uint32_t seed)
{
	uint32_t s = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		s = s * 1664525u + 1013904223u;
		x[i] = (float)((int32_t)(s >> 8) % 65536) / 512.0f;
		if (i % 97 == 5)
			x[i] = 0.0f;
		if (i % 89 == 3)
			x[i] = -0.0f;
	}
}

static float *floats(size_t n)
{
	float *x = calloc(n ? n : 1, sizeof(float));
	if (!x)
		exit(1);
	return x;
}

/* Scalar references: the element functions the kernels must match bit for
 * bit (f32 add and mul are exactly rounded in any vector width). */
static float ref_relu(float x)
{
	return x > 0.0f ? x : 0.0f;
}

static int same(const float *a, const float *b, size_t n)
{
	return memcmp(a, b, n * sizeof(float)) == 0;
}

/*===----------------------------------------------------------------------===
 * Descriptor and options
 *===----------------------------------------------------------------------===*/

static void test_descriptor(wafer_plugin_query_fn query)
{
	const struct wafer_storage_ops *st;
	const struct wafer_server_ops *sv;

	plugin = query(WAFER_PLUGIN_ABI_MAJOR, &fake_host);
	if (!ok(plugin != NULL, "query returns a descriptor")) {
		done_testing();
		exit(exit_status());
	}
	is_int((long long)plugin->struct_size, sizeof(struct wafer_plugin),
	       "descriptor struct_size");
	is_int(plugin->abi_major, WAFER_PLUGIN_ABI_MAJOR, "abi_major");
	is_int(plugin->abi_minor, WAFER_PLUGIN_ABI_MINOR, "abi_minor");
	is_str(plugin->name, "cpu", "name");
	is_str(plugin->version, PACKAGE_VERSION, "version is the package's");
	ok(plugin->description && *plugin->description, "description: %s",
	   plugin->description);
	ok(plugin->init && plugin->shutdown && plugin->device_count &&
		   plugin->device_info && plugin->device_open &&
		   plugin->device_close && plugin->device_kernels,
	   "every required lifetime and device entry is set");
	ok(query(WAFER_PLUGIN_ABI_MAJOR + 1, &fake_host) == plugin,
	   "a core of another major still gets the descriptor (it reports "
	   "the mismatch)");

	st = plugin->storage;
	ok(st && st->struct_size == sizeof *st && st->alloc && st->free &&
		   st->copy_in && st->copy_out && st->copy,
	   "storage table: struct_size and required entries");
	ok(st && st->vm_reserve && st->vm_release && st->vm_map &&
		   st->vm_unmap,
	   "storage table offers virtual memory");
	ok(st && !st->alloc_async && !st->free_async && !st->host_alloc &&
		   !st->host_free,
	   "no stream-ordered allocator, no pinned host memory");
	sv = plugin->server;
	ok(sv && sv->struct_size == sizeof *sv && sv->queue_create &&
		   sv->queue_destroy && sv->launch && sv->sync &&
		   sv->timer_begin && sv->timer_end,
	   "server table: struct_size, every entry including timers");
}

static void test_bad_option(const char *value)
{
	struct wafer_plugin_option opt =
		option("threads", value, "/etc/wafer/wafer.conf:7");
	void *state = (void *)1;

	last_error[0] = '\0';
	status_is(init_with(&opt, 1, &state), WAFER_ERROR_CONFIG,
		  "threads = '%s' is rejected", value);
	ok(state == NULL && strstr(last_error, "/etc/wafer/wafer.conf:7: "
					       "[cpu] threads"),
	   "  ... with no state and a detail naming the origin: %s",
	   last_error);
}

static void test_options(void)
{
	struct wafer_plugin_option opts[2];
	static const char *const bad[] = {
		"x", "1025", "-1", "", " 4", "4x", "99999999999999999999",
	};
	struct wafer_device_info info = {.struct_size = sizeof info};
	void *state = (void *)1;

	status_is(plugin->init(NULL, &state), WAFER_ERROR_INVALID_ARGUMENT,
		  "init without arguments is rejected");
	ok(state == NULL, "  ... and sets *out_state to NULL");
	status_is(init_with(NULL, 2, &state), WAFER_ERROR_INVALID_ARGUMENT,
		  "init with an option count but no options is rejected");

	opts[0] = option("threads", "x", "/etc/wafer/wafer.conf:7");
	status_is(init_with(opts, 1, &state), WAFER_ERROR_CONFIG,
		  "threads = x is a configuration error");
	is_str(last_error,
	       "/etc/wafer/wafer.conf:7: [cpu] threads: expected a number "
	       "0..1024, got 'x'",
	       "  ... whose detail names file, line, section, key and value");
	for (size_t i = 1; i < sizeof bad / sizeof bad[0]; i++)
		test_bad_option(bad[i]);

	opts[0] = option("colour", "blue", "/etc/wafer/conf.d/cpu.conf:2");
	opts[1] = option("threads", "2", "api");
	log_count = 0;
	status_is(init_with(opts, 2, &state), WAFER_OK,
		  "an unknown option does not fail init");
	ok(log_count == 1 && strstr(last_log, "colour") &&
		   strstr(last_log, "/etc/wafer/conf.d/cpu.conf:2"),
	   "  ... it is logged with its origin: %s", last_log);
	plugin->device_info(state, 0, &info);
	is_int(info.compute_units, 2, "  ... and the known one applies");
	plugin->shutdown(state);

	opts[0] = option("threads", "0", "environment");
	status_is(init_with(opts, 1, &state), WAFER_OK, "threads = 0");
	plugin->device_info(state, 0, &info);
	is_int(info.compute_units, sysconf(_SC_NPROCESSORS_ONLN),
	       "  ... means one thread per online core");
	plugin->shutdown(state);

	status_is(init_with(NULL, 0, &state), WAFER_OK, "no options");
	plugin->device_info(state, 0, &info);
	is_int(info.compute_units, sysconf(_SC_NPROCESSORS_ONLN),
	       "  ... also one thread per online core");
	plugin->shutdown(state);
}

/*===----------------------------------------------------------------------===
 * Device
 *===----------------------------------------------------------------------===*/

static void test_device_info(void *state)
{
	struct wafer_device_info info = {.struct_size = sizeof info};
	struct wafer_device_info old;
	uint32_t count = 0;
	size_t name_len;

	status_is(plugin->device_count(state, &count), WAFER_OK,
		  "device_count");
	is_int(count, 1, "  ... one device");

	status_is(plugin->device_info(state, 0, &info), WAFER_OK,
		  "device_info(0)");
	name_len = strlen(info.name);
	ok(strncmp(info.name, "cpu: ", 5) == 0 && name_len > 16 &&
		   strcmp(info.name + name_len - 11, "(4 threads)") == 0,
	   "  ... name: %s", info.name);
	ok(info.memory_bytes ==
		   (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)page_size,
	   "  ... memory_bytes is physical RAM (%llu MiB)",
	   (unsigned long long)(info.memory_bytes >> 20));
	is_int((long long)info.capabilities,
	       (long long)(WAFER_CAP_HOST_MEMORY | WAFER_CAP_F64),
	       "  ... capabilities: host memory, f64 (the core adds the "
	       "derived ones)");
	is_int((long long)info.alloc_alignment, 64, "  ... alloc_alignment");
	is_int((long long)info.vm_granularity, page_size,
	       "  ... vm_granularity is the page size");
	is_int(info.compute_units, 4, "  ... compute_units = threads");
	is_int((long long)info.struct_size, sizeof info,
	       "  ... struct_size left as the caller set it");

	/* An older core knows only the fields up to the name. */
	memset(&old, 0xab, sizeof old);
	old.struct_size = offsetof(struct wafer_device_info, memory_bytes);
	status_is(plugin->device_info(state, 0, &old), WAFER_OK,
		  "device_info into a shorter struct (an older core)");
	ok(strcmp(old.name, info.name) == 0 &&
		   old.memory_bytes == UINT64_C(0xabababababababab) &&
		   old.compute_units == 0xabababab,
	   "  ... fills what fits and writes nothing past struct_size");

	status_is(plugin->device_info(state, 1, &info), WAFER_ERROR_NOT_FOUND,
		  "device_info(1): there is no second device");
}

/* The f32 default entry for |op| in |table|, or NULL. */
static const struct wafer_kernel *find_entry(const struct wafer_kernel *table,
					     size_t count, const char *op)
{
	for (size_t i = 0; i < count; i++)
		if (strcmp(table[i].op, op) == 0 &&
		    table[i].dtype == WAFER_DTYPE_F32)
			return &table[i];
	return NULL;
}

static void test_device_open(void *state, void **out_device)
{
#define EW sizeof(struct wafer_elementwise_params)
#define SC sizeof(struct wafer_scalar_params)
#define ST sizeof(struct wafer_binary_strided_params)
#define RW sizeof(struct wafer_rows_params)
	/* The whole standard catalogue of plugin.h, f32. */
	static const struct {
		const char *op;
		uint32_t bindings;
		size_t params_size;
	} catalogue[] = {
		{WAFER_KERNEL_NOOP, 0, 0},
		{WAFER_KERNEL_FILL, 1, sizeof(struct wafer_fill_params)},
		{WAFER_KERNEL_COPY, 2, EW},
		{WAFER_KERNEL_RELU, 2, EW},
		{WAFER_KERNEL_ADD, 3, EW},
		{WAFER_KERNEL_MUL, 3, EW},
		{WAFER_KERNEL_NEG, 2, EW},
		{WAFER_KERNEL_ABS, 2, EW},
		{WAFER_KERNEL_EXP, 2, EW},
		{WAFER_KERNEL_LOG, 2, EW},
		{WAFER_KERNEL_SQRT, 2, EW},
		{WAFER_KERNEL_GELU, 2, EW},
		{WAFER_KERNEL_SIGMOID, 2, EW},
		{WAFER_KERNEL_TANH, 2, EW},
		{WAFER_KERNEL_SUB, 3, EW},
		{WAFER_KERNEL_DIV, 3, EW},
		{WAFER_KERNEL_MAX, 3, EW},
		{WAFER_KERNEL_MIN, 3, EW},
		{WAFER_KERNEL_ADD_SCALAR, 2, SC},
		{WAFER_KERNEL_SUB_SCALAR, 2, SC},
		{WAFER_KERNEL_MUL_SCALAR, 2, SC},
		{WAFER_KERNEL_DIV_SCALAR, 2, SC},
		{WAFER_KERNEL_MAX_SCALAR, 2, SC},
		{WAFER_KERNEL_MIN_SCALAR, 2, SC},
		{WAFER_KERNEL_ADD_STRIDED, 3, ST},
		{WAFER_KERNEL_SUB_STRIDED, 3, ST},
		{WAFER_KERNEL_MUL_STRIDED, 3, ST},
		{WAFER_KERNEL_DIV_STRIDED, 3, ST},
		{WAFER_KERNEL_MAX_STRIDED, 3, ST},
		{WAFER_KERNEL_MIN_STRIDED, 3, ST},
		{WAFER_KERNEL_COPY_STRIDED, 2,
		 sizeof(struct wafer_strided_copy_params)},
		{WAFER_KERNEL_CAST, 2, sizeof(struct wafer_cast_params)},
		{WAFER_KERNEL_REDUCE_SUM, 2, RW},
		{WAFER_KERNEL_REDUCE_MAX, 2, RW},
		{WAFER_KERNEL_REDUCE_MEAN, 2, RW},
		{WAFER_KERNEL_SOFTMAX, 2, RW},
		{WAFER_KERNEL_MATMUL, 3, sizeof(struct wafer_matmul_params)},
	};
#undef EW
#undef SC
#undef ST
#undef RW
	const struct wafer_kernel *table;
	size_t count = 0;
	void *device = (void *)1;

	status_is(plugin->device_open(state, 1, &device),
		  WAFER_ERROR_NOT_FOUND, "device_open(1) fails");
	ok(device == NULL, "  ... and sets *out_device to NULL");
	status_is(plugin->device_open(state, 0, out_device), WAFER_OK,
		  "device_open(0)");

	status_is(plugin->device_kernels(*out_device, &table, &count),
		  WAFER_OK, "device_kernels");
	size_t want = sizeof catalogue / sizeof catalogue[0];
	ok(count >= want, "  ... at least the %zu catalogue kernels (%zu)",
	   want, count);
	for (size_t i = 0; i < want; i++) {
		const struct wafer_kernel *k =
			find_entry(table, count, catalogue[i].op);
		ok(k && k->struct_size == sizeof *k &&
			   strcmp(k->variant, "default") == 0 &&
			   k->binding_count == catalogue[i].bindings &&
			   k->params_size == catalogue[i].params_size &&
			   k->impl != NULL,
		   "  ... %s: f32 default, %u bindings, %zu-byte params",
		   catalogue[i].op, catalogue[i].bindings,
		   catalogue[i].params_size);
	}
}

/*===----------------------------------------------------------------------===
 * Storage
 *===----------------------------------------------------------------------===*/

static void test_storage(void *device, void *queue)
{
	static const size_t sizes[] = {1, 3, 64, 100, 4096, 1 << 20};
	const struct wafer_storage_ops *st = plugin->storage;
	unsigned char in[256], out[256];
	wafer_resource r[6], a, b;
	int aligned = 1, round_trip = 1;

	for (size_t i = 0; i < 6; i++) {
		if (st->alloc(device, sizes[i], &r[i]) != WAFER_OK || !r[i]) {
			aligned = 0;
			continue;
		}
		aligned &= r[i] % 64 == 0;
		size_t n = sizes[i] < sizeof in ? sizes[i] : sizeof in;
		for (size_t j = 0; j < n; j++)
			in[j] = (unsigned char)(j * 7 + i);
		memset(out, 0, sizeof out);
		st->copy_in(device, queue, r[i], sizes[i] - n, in, n);
		st->copy_out(device, queue, r[i], sizes[i] - n, out, n);
		round_trip &= memcmp(in, out, n) == 0;
	}
	ok(aligned, "alloc of 1 B .. 1 MiB: nonzero, 64-byte aligned");
	ok(round_trip, "copy_in then copy_out at an offset round-trips");
	for (size_t i = 0; i < 6; i++)
		st->free(device, r[i]);

	a = alloc_or_die(device, 256);
	b = alloc_or_die(device, 256);
	for (size_t j = 0; j < 256; j++)
		in[j] = (unsigned char)j;
	st->copy_in(device, queue, a, 0, in, 256);
	status_is(st->copy(device, queue, b, 64, a, 0, 100), WAFER_OK,
		  "copy between resources");
	st->copy_out(device, queue, b, 64, out, 100);
	ok(memcmp(out, in, 100) == 0, "  ... with offsets lands right");
	status_is(st->copy(device, queue, a, 10, a, 0, 200), WAFER_OK,
		  "copy between overlapping slices of one resource");
	st->copy_out(device, queue, a, 10, out, 200);
	ok(memcmp(out, in, 200) == 0, "  ... behaves like memmove");
	st->free(device, a);
	st->free(device, b);

	status_is(st->alloc(device, 0, &a), WAFER_ERROR_INVALID_ARGUMENT,
		  "alloc(0) is rejected");
	status_is(st->alloc(device, (size_t)1 << 62, &a),
		  WAFER_ERROR_OUT_OF_MEMORY, "alloc(4 EiB) is out of memory");
	ok(a == 0 && strstr(last_error,
			    "cpu: cannot allocate 4611686018427387904 bytes"),
	   "  ... with resource 0 and detail: %s", last_error);
}

static int all_equal(const float *x, size_t n, float value)
{
	for (size_t i = 0; i < n; i++)
		if (x[i] != value)
			return 0;
	return 1;
}

static void test_vm(void *device, void *queue)
{
	const struct wafer_storage_ops *st = plugin->storage;
	size_t page = (size_t)page_size;
	size_t n = 2 * page / sizeof(float);
	float *data = floats(n), *back = floats(n);
	struct wafer_binding bind;
	wafer_resource range, other;

	status_is(st->vm_reserve(device, 3 * page + 1, &range),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "vm_reserve of a size that is not a page multiple");
	like(last_error, "multiple of the page size", "  ... detail: %s",
	     last_error);
	status_is(st->vm_reserve(device, 4 * page, &range), WAFER_OK,
		  "vm_reserve 4 pages");
	ok(range && range % page == 0, "  ... page-aligned range");

	status_is(st->vm_map(device, range, page, 2 * page), WAFER_OK,
		  "vm_map pages 1-2");
	status_is(st->vm_map(device, range, 100, page),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "vm_map at an unaligned offset");
	status_is(st->vm_map(device, range, 3 * page, 2 * page),
		  WAFER_ERROR_INVALID_ARGUMENT, "vm_map past the range's end");
	like(last_error, "outside", "  ... detail: %s", last_error);
	status_is(st->vm_map(device, range + page, 0, page),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "vm_map on an address that is not a range");

	fill_inputs(data, n, 11);
	st->copy_in(device, queue, range, page, data, 2 * page);
	st->copy_out(device, queue, range, page, back, 2 * page);
	ok(same(data, back, n), "mapped pages hold what was written");

	bind = binding(range, page, 2 * page);
	status_is(launch(device, queue, WAFER_KERNEL_FILL, &bind, 1, n, 7.0),
		  WAFER_OK, "a kernel binds a slice of a range");
	st->copy_out(device, queue, range, page, back, 2 * page);
	ok(all_equal(back, n, 7.0f), "  ... and writes it");

	status_is(st->vm_unmap(device, range, page, 2 * page), WAFER_OK,
		  "vm_unmap pages 1-2");
	status_is(st->vm_map(device, range, page, 2 * page), WAFER_OK,
		  "vm_map them again");
	st->copy_out(device, queue, range, page, back, 2 * page);
	ok(all_equal(back, n, 0.0f), "  ... they read zeros");
	status_is(st->vm_unmap(device, range, 0, 5 * page),
		  WAFER_ERROR_INVALID_ARGUMENT, "vm_unmap past the end");
	st->vm_release(device, range);

	status_is(st->vm_reserve(device, (size_t)1 << 62, &other),
		  WAFER_ERROR_OUT_OF_MEMORY,
		  "vm_reserve of 4 EiB of address space fails");
	ok(other == 0, "  ... with range 0: %s", last_error);
	free(data);
	free(back);
}

/*===----------------------------------------------------------------------===
 * Kernels
 *===----------------------------------------------------------------------===*/

/* Runs every kernel on |n| elements at binding offset |offset| and compares
 * each result with the scalar reference. */
static void test_kernels_at(void *device, void *queue, size_t n,
			    size_t offset)
{
	size_t bytes = n * sizeof(float);
	float *a = floats(n), *b = floats(n), *got = floats(n),
	      *want = floats(n);
	wafer_resource ra = alloc_or_die(device, offset + bytes);
	wafer_resource rb = alloc_or_die(device, offset + bytes);
	wafer_resource ro = alloc_or_die(device, offset + bytes);
	struct wafer_binding bind[3] = {
		binding(ro, offset, bytes),
		binding(ra, offset, bytes),
		binding(rb, offset, bytes),
	};
	wafer_status status = WAFER_OK;

	fill_inputs(a, n, (uint32_t)n);
	fill_inputs(b, n, (uint32_t)n + 1);
	plugin->storage->copy_in(device, queue, ra, offset, a, bytes);
	plugin->storage->copy_in(device, queue, rb, offset, b, bytes);

#define CHECK(op, nbind, value, expr)                                          \
	do {                                                                   \
		status = launch(device, queue, op, bind, nbind, n, value);     \
		if (status == WAFER_OK)                                        \
			status = plugin->server->sync(device, queue);          \
		plugin->storage->copy_out(device, queue, ro, offset, got,      \
					  bytes);                              \
		for (size_t i = 0; i < n; i++)                                 \
			want[i] = (expr);                                      \
		ok(status == WAFER_OK && same(got, want, n),                   \
		   "%s on %zu elements at offset %zu", op, n, offset);         \
	} while (0)

	CHECK(WAFER_KERNEL_FILL, 1, -2.5, -2.5f);
	CHECK(WAFER_KERNEL_COPY, 2, 0, a[i]);
	CHECK(WAFER_KERNEL_RELU, 2, 0, ref_relu(a[i]));
	CHECK(WAFER_KERNEL_ADD, 3, 0, a[i] + b[i]);
	CHECK(WAFER_KERNEL_MUL, 3, 0, a[i] * b[i]);
#undef CHECK

	plugin->storage->free(device, ra);
	plugin->storage->free(device, rb);
	plugin->storage->free(device, ro);
	free(a);
	free(b);
	free(got);
	free(want);
}

/* out == in, exactly: allowed by the catalogue, so each kernel must read
 * an element before it overwrites it. */
static void test_aliasing(void *device, void *queue)
{
	const size_t n = 100003;
	const size_t bytes = n * sizeof(float);
	float *a = floats(n), *b = floats(n), *got = floats(n),
	      *want = floats(n);
	wafer_resource rx = alloc_or_die(device, bytes);
	wafer_resource ry = alloc_or_die(device, bytes);
	struct wafer_binding x = binding(rx, 0, bytes);
	struct wafer_binding y = binding(ry, 0, bytes);

	fill_inputs(a, n, 5);
	fill_inputs(b, n, 6);
	upload(device, queue, ry, b, n);

	upload(device, queue, rx, a, n);
	launch(device, queue, WAFER_KERNEL_COPY, (struct wafer_binding[]){x, x},
	       2, n, 0);
	download(device, queue, rx, got, n);
	ok(same(got, a, n), "copy with out == in leaves the data");

	launch(device, queue, WAFER_KERNEL_RELU, (struct wafer_binding[]){x, x},
	       2, n, 0);
	download(device, queue, rx, got, n);
	for (size_t i = 0; i < n; i++)
		want[i] = ref_relu(a[i]);
	ok(same(got, want, n), "relu in place (out == in)");

	upload(device, queue, rx, a, n);
	launch(device, queue, WAFER_KERNEL_ADD,
	       (struct wafer_binding[]){x, x, y}, 3, n, 0);
	download(device, queue, rx, got, n);
	for (size_t i = 0; i < n; i++)
		want[i] = a[i] + b[i];
	ok(same(got, want, n), "add with out == a");

	upload(device, queue, rx, a, n);
	launch(device, queue, WAFER_KERNEL_ADD,
	       (struct wafer_binding[]){x, y, x}, 3, n, 0);
	download(device, queue, rx, got, n);
	for (size_t i = 0; i < n; i++)
		want[i] = b[i] + a[i];
	ok(same(got, want, n), "add with out == b");

	upload(device, queue, rx, a, n);
	launch(device, queue, WAFER_KERNEL_MUL,
	       (struct wafer_binding[]){x, x, x}, 3, n, 0);
	download(device, queue, rx, got, n);
	for (size_t i = 0; i < n; i++)
		want[i] = a[i] * a[i];
	ok(same(got, want, n), "mul with out == a == b (a square)");
	status_is(plugin->server->sync(device, queue), WAFER_OK,
		  "sync after the aliased launches");

	plugin->storage->free(device, rx);
	plugin->storage->free(device, ry);
	free(a);
	free(b);
	free(got);
	free(want);
}

/* The checks the core makes before launch, as the debug-only helper of
 * <wafer/plugin_util.h> makes them for the cpu plugin. */
static wafer_status core_checks(const struct wafer_launch *l)
{
	return wafer_plugin_debug_check_launch(&fake_host, "cpu", l, 64);
}

static void test_bad_launches(void *device, void *queue)
{
	const struct wafer_server_ops *sv = plugin->server;
	const struct wafer_kernel *fill =
		find_kernel(device, WAFER_KERNEL_FILL);
	struct wafer_kernel foreign = *fill, copied = *fill;
	struct wafer_fill_params params = {.count = 16, .value = 1.0};
	wafer_resource r = alloc_or_die(device, 1024);
	struct wafer_binding bind = binding(r, 0, 64);
	struct wafer_launch l = {
		.struct_size = sizeof l,
		.kernel = fill,
		.bindings = &bind,
		.binding_count = 1,
		.params = &params,
		.params_size = sizeof params,
		.global = {16, 1, 1},
	};
	struct wafer_launch bad;
	float back[32];

	/* Kernel identity, binding count, parameter size and the bindings'
	 * form are the core's to check, once (plugin.h); the plugin trusts
	 * them. The same rejections, through the debug-only helper a plugin
	 * built with -DWAFER_PLUGIN_DEBUG runs. */
	foreign.impl = &foreign;
	status_is(core_checks(NULL), WAFER_ERROR_INVALID_ARGUMENT,
		  "launch(NULL) is rejected");
	bad = l;
	bad.kernel = NULL;
	status_is(core_checks(&bad), WAFER_ERROR_INVALID_ARGUMENT,
		  "a launch without a kernel");
	bad = l;
	bad.kernel = &foreign;
	bad.binding_count = 0;
	status_is(core_checks(&bad), WAFER_ERROR_INVALID_ARGUMENT,
		  "a foreign kernel with the wrong binding count");
	like(last_error, "cpu: launch fill: takes 1 bindings, got 0",
	     "  ... detail: %s", last_error);
	bad = l;
	bad.kernel = &copied;
	status_is(sv->launch(device, queue, &bad), WAFER_OK,
		  "a copy of a table entry is recognised");
	bad = l;
	bad.binding_count = 2;
	status_is(core_checks(&bad), WAFER_ERROR_INVALID_ARGUMENT,
		  "the wrong binding count");
	like(last_error, "takes 1 bindings, got 2", "  ... detail: %s",
	     last_error);
	bad = l;
	bad.params_size = 8;
	status_is(core_checks(&bad), WAFER_ERROR_INVALID_ARGUMENT,
		  "the wrong parameter size");
	bad = l;
	bad.params = NULL;
	status_is(core_checks(&bad), WAFER_ERROR_INVALID_ARGUMENT,
		  "no parameter block");

	plugin->storage->copy_in(device, queue, r, 0,
				 (float[32]){0}, sizeof back);
	params.count = 17; /* one more than the 64-byte binding holds */
	status_is(sv->launch(device, queue, &l), WAFER_ERROR_OUT_OF_RANGE,
		  "a count larger than the binding");
	like(last_error, "holds 64 bytes, too few for 17 elements",
	     "  ... detail: %s", last_error);
	plugin->storage->copy_out(device, queue, r, 0, back, sizeof back);
	ok(all_equal(back, 32, 0.0f), "  ... and nothing was written");
	params.count = 16;

	bind = binding(r, 4, 64);
	status_is(core_checks(&l), WAFER_ERROR_INVALID_ARGUMENT,
		  "a binding offset that is not 64-byte aligned");
	bind = binding(0, 0, 64);
	status_is(core_checks(&l), WAFER_ERROR_INVALID_ARGUMENT,
		  "a binding with resource 0");
	bind = binding(r, 0, 64);
	bind.struct_size = 8;
	status_is(core_checks(&l), WAFER_ERROR_INVALID_ARGUMENT,
		  "a binding whose struct_size is too small");
	bind = binding(r, 0, 64);

	status_is(sv->sync(device, queue), WAFER_OK,
		  "rejected launches leave no error for sync");
	plugin->storage->free(device, r);
}

static void test_timers(void *device, void *queue)
{
	const size_t n = 100003;
	wafer_resource r = alloc_or_die(device, n * sizeof(float));
	struct wafer_binding bind = binding(r, 0, n * sizeof(float));
	void *timer = NULL;
	uint64_t ns = 0;

	status_is(plugin->server->timer_begin(device, queue, &timer), WAFER_OK,
		  "timer_begin");
	for (int i = 0; i < 10; i++)
		launch(device, queue, WAFER_KERNEL_FILL, &bind, 1, n, i);
	status_is(plugin->server->timer_end(device, queue, timer, &ns),
		  WAFER_OK, "timer_end");
	ok(ns > 0 && ns < UINT64_C(10000000000),
	   "  ... ten fills of 100003 floats took %llu ns",
	   (unsigned long long)ns);
	plugin->storage->free(device, r);
}

/*===----------------------------------------------------------------------===
 * Concurrency
 *===----------------------------------------------------------------------===*/

#define CLIENTS 4
#define ROUNDS 25

struct client {
	void *device;
	pthread_barrier_t *start;
	int index;
	int failures;
};

/* One client thread: its own queue and buffers; big launches (which use
 * the pool) and small ones (inline) interleaved with the other clients'. */
static void *client_main(void *arg)
{
	struct client *c = arg;
	const size_t sizes[2] = {100003, 1000};
	void *queue;

	if (plugin->server->queue_create(c->device, &queue) != WAFER_OK) {
		c->failures++;
		return NULL;
	}
	pthread_barrier_wait(c->start);
	for (int round = 0; round < ROUNDS; round++) {
		size_t n = sizes[round % 2];
		size_t bytes = n * sizeof(float);
		float *a = floats(n), *b = floats(n), *got = floats(n);
		wafer_resource ra = alloc_or_die(c->device, bytes);
		wafer_resource ro = alloc_or_die(c->device, bytes);
		struct wafer_binding x = binding(ra, 0, bytes);
		struct wafer_binding o = binding(ro, 0, bytes);

		fill_inputs(a, n, (uint32_t)(c->index * 100 + round));
		fill_inputs(b, n, (uint32_t)(c->index * 100 + round + 1));
		upload(c->device, queue, ra, a, n);
		upload(c->device, queue, ro, b, n);
		launch(c->device, queue, WAFER_KERNEL_ADD,
		       (struct wafer_binding[]){o, x, o}, 3, n, 0);
		if (plugin->server->sync(c->device, queue) != WAFER_OK)
			c->failures++;
		download(c->device, queue, ro, got, n);
		for (size_t i = 0; i < n; i++)
			if (got[i] != a[i] + b[i]) {
				c->failures++;
				break;
			}
		plugin->storage->free(c->device, ra);
		plugin->storage->free(c->device, ro);
		free(a);
		free(b);
		free(got);
	}
	plugin->server->queue_destroy(c->device, queue);
	return NULL;
}

static void test_concurrent(void *device)
{
	pthread_t threads[CLIENTS];
	struct client clients[CLIENTS];
	pthread_barrier_t start;

	pthread_barrier_init(&start, NULL, CLIENTS);
	for (int i = 0; i < CLIENTS; i++) {
		clients[i] = (struct client){
			.device = device, .start = &start, .index = i};
		pthread_create(&threads[i], NULL, client_main, &clients[i]);
	}
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(threads[i], NULL);
		is_int(clients[i].failures, 0,
		       "client thread %d: %d launches on its own queue, all "
		       "correct",
		       i, ROUNDS);
	}
	pthread_barrier_destroy(&start);
}

/* A one-thread device has no workers: everything runs inline. It is closed
 * with a range still reserved, which the plugin releases and logs. */
static void test_single_thread(void)
{
	struct wafer_plugin_option opt = option("threads", "1", "api");
	void *state, *device, *queue;
	wafer_resource range;

	status_is(init_with(&opt, 1, &state), WAFER_OK, "threads = 1");
	status_is(plugin->device_open(state, 0, &device), WAFER_OK,
		  "  ... device_open");
	plugin->server->queue_create(device, &queue);
	test_kernels_at(device, queue, 100003, 0);
	plugin->server->queue_destroy(device, queue);

	plugin->storage->vm_reserve(device, (size_t)page_size, &range);
	log_count = 0;
	plugin->device_close(device);
	ok(log_count == 1 && strstr(last_log, "still reserved"),
	   "closing a device with a reserved range releases it and logs: %s",
	   last_log);
	plugin->shutdown(state);
}

/* `devices = N`: N devices, each the whole host; peer copies between two
 * of them (and within one) are memmoves, ordered as every cpu copy is. */
static void test_devices_and_peers(void)
{
	struct wafer_plugin_option opt = option("devices", "3", "api");
	struct wafer_device_info info = {.struct_size = sizeof info};
	void *state, *dev[2], *queue[2];
	wafer_resource a, b;
	uint32_t count = 0;
	float x[64], y[64];

	opt.value = "0";
	status_is(init_with(&opt, 1, &state), WAFER_ERROR_CONFIG,
		  "devices = 0 is a configuration error");
	is_str(last_error,
	       "api: [cpu] devices: expected a number 1..64, got '0'",
	       "  ... naming the option and the range");
	opt.value = "65";
	status_is(init_with(&opt, 1, &state), WAFER_ERROR_CONFIG,
		  "devices = 65 is a configuration error");

	opt.value = "3";
	status_is(init_with(&opt, 1, &state), WAFER_OK, "devices = 3");
	plugin->device_count(state, &count);
	is_int(count, 3, "  ... lists three devices");
	status_is(plugin->device_info(state, 2, &info), WAFER_OK,
		  "  ... device 2 has info");
	like(info.name, "device 2 of 3", "  ... its name says which: %s",
	     info.name);
	status_is(plugin->device_info(state, 3, &info), WAFER_ERROR_NOT_FOUND,
		  "  ... there is no device 3");
	ok(plugin->storage->copy_peer != NULL, "storage.copy_peer is offered");

	for (int d = 0; d < 2; d++)
		if (plugin->device_open(state, (uint32_t)d, &dev[d]) != WAFER_OK ||
		    plugin->server->queue_create(dev[d], &queue[d]) != WAFER_OK)
			bail_out("device %d: %s", d, last_error);
	for (int i = 0; i < 64; i++)
		x[i] = (float)i;
	a = alloc_or_die(dev[0], sizeof x);
	b = alloc_or_die(dev[1], sizeof x);
	upload(dev[0], queue[0], a, x, 64);
	upload(dev[1], queue[1], b, x, 64);
	/* x[8..40) of device 0 to y[4..36) of device 1. */
	status_is(plugin->storage->copy_peer(dev[1], queue[1], b,
					     4 * sizeof(float), dev[0],
					     queue[0], a, 8 * sizeof(float),
					     32 * sizeof(float)),
		  WAFER_OK, "copy_peer from device 0 to device 1");
	download(dev[1], queue[1], b, y, 64);
	int right = 1;
	for (int i = 0; i < 64; i++)
		right &= y[i] == (i >= 4 && i < 36 ? (float)(i + 4) : (float)i);
	ok(right, "  ... the bytes land at the offsets, nothing else moves");
	/* Within one resource, overlapping: memmove's result. */
	status_is(plugin->storage->copy_peer(dev[0], queue[0], a,
					     2 * sizeof(float), dev[0],
					     queue[0], a, 0,
					     16 * sizeof(float)),
		  WAFER_OK, "copy_peer within one resource, overlapping");
	download(dev[0], queue[0], a, y, 64);
	right = 1;
	for (int i = 0; i < 64; i++)
		right &= y[i] == (i >= 2 && i < 18 ? (float)(i - 2) : (float)i);
	ok(right, "  ... reads as if through a temporary (memmove)");
	plugin->storage->free(dev[0], a);
	plugin->storage->free(dev[1], b);
	for (int d = 0; d < 2; d++) {
		plugin->server->queue_destroy(dev[d], queue[d]);
		plugin->device_close(dev[d]);
	}
	plugin->shutdown(state);
}

static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	char buf[65536];
	size_t n;

	while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0)
		fwrite(buf, 1, n, out);
	if (!in || !out || ferror(in) || fclose(out) != 0)
		bail_out("cannot copy %s to %s", from, to);
	fclose(in);
}

/* A copy of cpu.so in a directory of its own (mkdtemp), beside a
 * cpu-mpi.so copied from |module_from| (NULL: no module file at all); its
 * descriptor. |dir| (64 bytes) gets the directory. */
static const struct wafer_plugin *copy_plugin(const char *plugin_path,
					      const char *module_from,
					      char *dir, void **out_so)
{
	char path[4200];
	wafer_plugin_query_fn query;

	snprintf(dir, 64, "/tmp/wafer-cpu-plugin-XXXXXX");
	if (!mkdtemp(dir))
		bail_out("mkdtemp: cannot make a temporary directory");
	snprintf(path, sizeof path, "%s/cpu.so", dir);
	copy_file(plugin_path, path);
	if (module_from) {
		snprintf(path, sizeof path, "%s/cpu-mpi.so", dir);
		copy_file(module_from, path);
	}
	snprintf(path, sizeof path, "%s/cpu.so", dir);
	*out_so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!*out_so)
		bail_out("dlopen %s: %s", path, dlerror());
	query = (wafer_plugin_query_fn)(uintptr_t)dlsym(
		*out_so, WAFER_PLUGIN_QUERY_SYMBOL);
	return query(WAFER_PLUGIN_ABI_MAJOR, &fake_host);
}

static void remove_copy(const char *dir, void *so)
{
	char path[4200];

	dlclose(so);
	snprintf(path, sizeof path, "%s/cpu-mpi.so", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/cpu.so", dir);
	unlink(path);
	rmdir(dir);
}

/* Collectives need the MPI module beside cpu.so. Not installed: no comm
 * entries (so the core reports no WAFER_CAP_COLLECTIVES). There but not
 * loadable: the entries say why, and the device works on. */
static void test_collectives_and_the_module(const char *plugin_path)
{
	char not_elf[80];
	const struct wafer_plugin *saved = plugin, *copy;
	struct wafer_comm_open_args args = {
		.struct_size = sizeof args, .rank = 0, .size = 1,
	};
	wafer_comm_id id;
	void *state, *device, *queue, *comm = (void *)1, *so;
	wafer_resource r;
	float x[4] = {1, 2, 3, 4}, y[4];
	char dir[64];

	copy = copy_plugin(plugin_path, NULL, dir, &so);
	ok(copy && !copy->server->comm_id && !copy->server->comm_open &&
		   !copy->server->comm_close && !copy->server->comm_run &&
		   copy->server->launch && copy->storage->copy_peer,
	   "without cpu-mpi.so beside it: no comm entries, the rest as ever");
	remove_copy(dir, so);

	/* A module file that is no shared object: this test's source. */
	snprintf(not_elf, sizeof not_elf, "%s/cpu/plugin.c",
		 getenv("T_SRCDIR") ? getenv("T_SRCDIR") : ".");
	copy = copy_plugin(plugin_path, not_elf, dir, &so);
	ok(copy->server->comm_id && copy->server->comm_open &&
		   copy->server->comm_close && copy->server->comm_run,
	   "with a cpu-mpi.so beside it: all four comm entries");
	plugin = copy;
	status_is(init_with(NULL, 0, &state), WAFER_OK, "  ... init");
	if (plugin->device_open(state, 0, &device) != WAFER_OK ||
	    plugin->server->queue_create(device, &queue) != WAFER_OK)
		bail_out("cpu device: %s", last_error);
	status_is(plugin->server->comm_id(device, &id),
		  WAFER_ERROR_NOT_SUPPORTED,
		  "  ... a module that cannot load: comm_id NOT_SUPPORTED");
	like(last_error,
	     "cpu: collectives need cpu-mpi.so (configure --with-mpi): ",
	     "  ... saying what is missing and why: %s", last_error);
	status_is(plugin->server->comm_open(device, &args, &comm),
		  WAFER_ERROR_NOT_SUPPORTED, "  ... comm_open: NOT_SUPPORTED");
	ok(comm == NULL, "  ... and no communicator");
	r = alloc_or_die(device, sizeof x);
	upload(device, queue, r, x, 4);
	download(device, queue, r, y, 4);
	ok(!memcmp(x, y, sizeof x), "  ... the device works on");
	plugin->storage->free(device, r);
	plugin->server->queue_destroy(device, queue);
	plugin->device_close(device);
	plugin->shutdown(state);
	remove_copy(dir, so);

	/* A shared object that is not the module: cpu.so itself. */
	copy = copy_plugin(plugin_path, plugin_path, dir, &so);
	plugin = copy;
	status_is(init_with(NULL, 0, &state), WAFER_OK,
		  "a cpu-mpi.so that is another shared object (cpu.so)");
	if (plugin->device_open(state, 0, &device) != WAFER_OK)
		bail_out("cpu device: %s", last_error);
	status_is(plugin->server->comm_id(device, &id),
		  WAFER_ERROR_NOT_SUPPORTED, "  ... comm_id: NOT_SUPPORTED");
	like(last_error, "is not the module of this cpu plugin (no "
			 "cpu_mpi_query)",
	     "  ... saying so: %s", last_error);
	plugin->device_close(device);
	plugin->shutdown(state);
	remove_copy(dir, so);
	plugin = saved;
}

int main(void)
{
	const char *builddir = getenv("T_BUILDDIR");
	char path[4096];
	void *so, *state, *device, *queue;
	wafer_plugin_query_fn query;
	/* Odd sizes leave vector tails; 100003 is three of the kernels'
	 * 32K-element grains, so it runs on the thread pool. */
	static const size_t sizes[] = {1, 7, 1023, 100003};
	struct wafer_plugin_option opt = option("threads", "4", "api");

	if (!builddir)
		bail_out("T_BUILDDIR is not set (run through make check)");
	snprintf(path, sizeof path, "%s/../plugins/cpu/.libs/cpu.so",
		 builddir);
	page_size = sysconf(_SC_PAGESIZE);

	so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!ok(so != NULL, "dlopen %s", path)) {
		diag("%s", dlerror());
		done_testing();
		return exit_status();
	}
	query = (wafer_plugin_query_fn)(uintptr_t)dlsym(
		so, WAFER_PLUGIN_QUERY_SYMBOL);
	if (!ok(query != NULL, "%s is exported", WAFER_PLUGIN_QUERY_SYMBOL)) {
		done_testing();
		return exit_status();
	}

	test_descriptor(query);
	test_options();

	/* A four-thread instance: the pool has workers even on a small
	 * machine. */
	status_is(init_with(&opt, 1, &state), WAFER_OK, "init threads = 4");
	test_device_info(state);
	test_device_open(state, &device);
	status_is(plugin->server->queue_create(device, &queue), WAFER_OK,
		  "queue_create");

	test_storage(device, queue);
	test_vm(device, queue);
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		test_kernels_at(device, queue, sizes[i], 0);
	test_kernels_at(device, queue, 1023, 128);
	test_aliasing(device, queue);
	test_bad_launches(device, queue);
	test_timers(device, queue);
	test_concurrent(device);

	plugin->server->queue_destroy(device, queue);
	plugin->device_close(device);
	plugin->shutdown(state);
	test_single_thread();
	test_devices_and_peers();
	test_collectives_and_the_module(path);

	ok(dlclose(so) == 0, "dlclose");
	done_testing();
	return exit_status();
}
