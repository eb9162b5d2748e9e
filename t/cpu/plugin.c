/* wafer — SPDX-License-Identifier: MIT
 *
 * cpu_plugin.c: what only the cpu plugin has, through the vendor ABI.
 * The plugin-ABI suite (t/abi, t/abi/cpu.abi) tests every entry as every
 * plugin must; this test dlopens the built cpu.so with a fake host
 * services table and checks the cpu's own: its options (threads,
 * devices), device figures, alignment and wording, each kernel against a
 * scalar reference, aliasing, the core's launch checks as the cpu's debug
 * build repeats them, a one-thread device, and the MPI module. */
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

#include "t/allocator_may_fail.h"

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
	return host_init(plugin, options, count, out_state);
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
	struct wafer_launch l = launch_of(
		kernel, bindings, binding_count,
		is_fill ? (const void *)&fill : (const void *)&ew,
		is_fill ? sizeof fill : sizeof ew, count);
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

#define fill_inputs host_values

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

/* What the plugin-ABI suite (t/abi) does not know of the cpu plugin's
 * descriptor: it is built for this minor and has no stream-ordered
 * allocator. */
static void test_descriptor(wafer_plugin_query_fn query)
{
	plugin = query(WAFER_PLUGIN_ABI_MAJOR, &fake_host);
	if (!ok(plugin != NULL, "query returns a descriptor")) {
		done_testing();
		exit(exit_status());
	}
	is_int(plugin->abi_minor, WAFER_PLUGIN_ABI_MINOR, "abi_minor");
	ok(plugin->storage && !plugin->storage->alloc_async &&
		   !plugin->storage->free_async,
	   "no stream-ordered allocator");
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

	host_init_rejects(plugin, "threads", "x", "/etc/wafer/wafer.conf:7");
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
}

/* The shapes of the catalogue's entries are the plugin-ABI suite's
 * (t/abi); the cpu plugin names the first entry of each (op, dtype)
 * "default". */
static void test_device_open(void *state, void **out_device)
{
	const struct wafer_kernel *table;
	size_t count = 0, misnamed = 0;

	status_is(plugin->device_open(state, 0, out_device), WAFER_OK,
		  "device_open(0)");
	status_is(plugin->device_kernels(*out_device, &table, &count),
		  WAFER_OK, "device_kernels");
	for (size_t i = 0; i < count; i++) {
		int first = 1;
		for (size_t j = 0; j < i; j++)
			first &= strcmp(table[j].op, table[i].op) != 0 ||
				 table[j].dtype != table[i].dtype;
		misnamed += first && strcmp(table[i].variant, "default") != 0;
	}
	ok(count > 0 && misnamed == 0,
	   "  ... the first entry of each (op, dtype) is \"default\"");
}

/*===----------------------------------------------------------------------===
 * Storage
 *===----------------------------------------------------------------------===*/

/* Round trips, copies and the errors are the plugin-ABI suite's (t/abi);
 * here the cpu's alignment and wording. */
static void test_storage(void *device)
{
	static const size_t sizes[] = {1, 3, 64, 100, 4096, 1 << 20};
	const struct wafer_storage_ops *st = plugin->storage;
	wafer_resource r[6], a;
	int aligned = 1;

	for (size_t i = 0; i < 6; i++) {
		aligned &= st->alloc(device, sizes[i], &r[i]) == WAFER_OK &&
			   r[i] % 64 == 0;
		if (aligned)
			st->free(device, r[i]);
	}
	ok(aligned, "alloc of 1 B .. 1 MiB: 64-byte aligned");
	st->alloc(device, (size_t)1 << 62, &a);
	like(last_error, "cpu: cannot allocate 4611686018427387904 bytes",
	     "alloc(4 EiB): %s", last_error);
}

static int all_equal(const float *x, size_t n, float value)
{
	for (size_t i = 0; i < n; i++)
		if (x[i] != value)
			return 0;
	return 1;
}

/* The mapping rules are the plugin-ABI suite's (t/abi); here the cpu's
 * wording, its page-aligned ranges, and pages that read zeros when
 * mapped again. */
static void test_vm(void *device, void *queue)
{
	const struct wafer_storage_ops *st = plugin->storage;
	size_t page = (size_t)page_size;
	size_t n = 2 * page / sizeof(float);
	float *data = floats(n), *back = floats(n);
	wafer_resource range;

	st->vm_reserve(device, 3 * page + 1, &range);
	like(last_error, "multiple of the page size",
	     "vm_reserve of an odd size: %s", last_error);
	status_is(st->vm_reserve(device, 4 * page, &range), WAFER_OK,
		  "vm_reserve 4 pages");
	ok(range && range % page == 0, "  ... page-aligned range");
	st->vm_map(device, range, 3 * page, 2 * page);
	like(last_error, "outside", "vm_map past the end: %s", last_error);

	st->vm_map(device, range, page, 2 * page);
	fill_inputs(data, n, 11);
	st->copy_in(device, queue, range, page, data, 2 * page);
	st->vm_unmap(device, range, page, 2 * page);
	st->vm_map(device, range, page, 2 * page);
	st->copy_out(device, queue, range, page, back, 2 * page);
	ok(all_equal(back, n, 0.0f), "pages mapped again read zeros");
	st->vm_release(device, range);
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
	struct wafer_launch l =
		launch_of(fill, &bind, 1, &params, sizeof params, 16);
	struct wafer_launch bad;

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

	sv->sync(device, queue);
	plugin->storage->free(device, r);
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

	host_init_rejects(plugin, "devices", "0", "api");
	is_str(last_error,
	       "api: [cpu] devices: expected a number 1..64, got '0'",
	       "  ... naming the option and the range");
	host_init_rejects(plugin, "devices", "65", "api");

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
	const char *builddir = tap_builddir();
	char path[4096];
	void *so, *state, *device, *queue;
	wafer_plugin_query_fn query;
	/* Odd sizes leave vector tails; 100003 is three of the kernels'
	 * 32K-element grains, so it runs on the thread pool. */
	static const size_t sizes[] = {1, 7, 1023, 100003};
	struct wafer_plugin_option opt = option("threads", "4", "api");

	snprintf(path, sizeof path, "%s/../plugins/cpu/.libs/cpu.so",
		 builddir);
	page_size = sysconf(_SC_PAGESIZE);

	query = host_open(path, &so);
	if (!query) {
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

	test_storage(device);
	test_vm(device, queue);
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		test_kernels_at(device, queue, sizes[i], 0);
	test_kernels_at(device, queue, 1023, 128);
	test_bad_launches(device, queue);

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
