/* wafer — SPDX-License-Identifier: MIT
 *
 * levelzero_plugin.c: the levelzero plugin through the vendor ABI alone,
 * on the test driver (t/standins/levelzero/driver.c) that the real oneAPI loader
 * loads through ZE_ENABLE_ALT_DRIVERS. The test dlopens the plugin, drives
 * every entry the way the core would, and reads back from the driver what
 * the plugin asked of Level Zero: each launch's SPIR-V kernel, argument
 * bytes and group counts, the calls it made, and any call a real driver
 * would refuse (a violation). Copies really move bytes (the driver's
 * memory is host memory) and kernels really run, by the driver's
 * emulation of kernels.cl, out of order between barriers and only when
 * the host synchronises: test_values checks what a chain of dependent
 * operations on one queue computes. (The SPIR-V itself runs nowhere
 * without Intel hardware.) */
#include "build-config.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <level_zero/ze_api.h>

#include <wafer/plugin.h>
#include <wafer/plugin_util.h>

#include "t/tap.h"

/* After tap.h: fakeze_bind_or_end uses it. */
#include "t/standins/levelzero/fakeze.h"

/* A fake core: host services that record what the plugin says. */
#include "t/standins/fake_host.h"

/*===----------------------------------------------------------------------===
 * Helpers
 *===----------------------------------------------------------------------===*/

static const struct wafer_plugin *plugin;
static const struct fakeze_api *fz;
static const struct wafer_storage_ops *st;
static const struct wafer_server_ops *sv;

/* What the test driver reports (fakeze.h and its configuration below). */
#define PAGE ((size_t)64 << 10)
#define MAX_GROUPS 300u
#define DEVICE_MEMORY ((size_t)64 << 20)

static wafer_status init_with(const struct wafer_plugin_option *options,
			      size_t count, void **out_state)
{
	return host_init(plugin, options, count, out_state);
}

static const struct wafer_kernel *find_kernel(void *device, const char *op,
					      wafer_dtype dtype)
{
	return host_find_kernel(plugin, device, op, dtype);
}

static wafer_resource alloc_or_die(void *device, size_t size)
{
	wafer_resource r;
	if (st->alloc(device, size, &r) != WAFER_OK) {
		diag("alloc(%zu): %s", size, last_error);
		exit(1);
	}
	return r;
}

static void *ptr_of(wafer_resource r, size_t offset)
{
	return (char *)(uintptr_t)r + offset;
}

/* The violations the driver saw since the last clear, as diagnostics;
 * returns how many. */
static size_t show_violations(void)
{
	size_t n = fz->violation_count();
	for (size_t i = 0; i < n && i < 20; i++)
		diag("violation: %s", fz->violation(i));
	return n;
}

static void no_violations(const char *what)
{
	ok(show_violations() == 0,
	   "%s: no call a real driver would refuse", what);
}

/*===----------------------------------------------------------------------===
 * Launch records
 *===----------------------------------------------------------------------===*/

/* One expected kernel argument: |size| bytes at |bytes|. */
struct want_arg {
	size_t size;
	const void *bytes;
};

static struct want_arg arg_ptr(const void **p)
{
	return (struct want_arg){sizeof(void *), p};
}

#define ARG(x) ((struct want_arg){sizeof(x), &(x)})

/* One point: the driver recorded no launch since it had |before|. */
static void no_launch_since(size_t before, const char *what)
{
	is_int((long long)fz->launch_count(), (long long)before, "%s", what);
}

/* Checks the newest launch the driver recorded. */
static void check_last(const char *what, const char *kernel,
		       const uint32_t size[3], const uint32_t count[3],
		       const struct want_arg *args, uint32_t nargs)
{
	struct fakeze_launch l;
	size_t n = fz->launch_count();
	int args_ok = 1;

	if (!ok(n > 0 && fz->launch_get(n - 1, &l), "%s: recorded", what))
		return;
	is_str(l.kernel, kernel, "%s: runs %s", what, kernel);
	ok(!memcmp(l.group_size, size, sizeof l.group_size) &&
		   !memcmp(l.group_count, count, sizeof l.group_count),
	   "%s: groups of %ux%ux%u, %ux%ux%u of them", what, size[0], size[1],
	   size[2], count[0], count[1], count[2]);
	if (l.group_size[0] != size[0] || l.group_count[0] != count[0] ||
	    l.group_count[1] != count[1] || l.group_count[2] != count[2])
		diag("got %ux%ux%u groups of %ux%ux%u", l.group_count[0],
		     l.group_count[1], l.group_count[2], l.group_size[0],
		     l.group_size[1], l.group_size[2]);
	if (l.arg_count != nargs)
		args_ok = 0;
	for (uint32_t i = 0; args_ok && i < nargs; i++) {
		if (l.args[i].size != args[i].size ||
		    memcmp(l.args[i].bytes, args[i].bytes, args[i].size)) {
			diag("argument %u: %u bytes, want %zu or other bytes", i,
			     l.args[i].size, args[i].size);
			args_ok = 0;
		}
	}
	ok(args_ok, "%s: %u arguments with the right bytes", what, nargs);
}

static const uint32_t ONE[3] = {1, 1, 1};

/* Groups of 256 over |n| elements, capped at the driver's maximum. */
static void groups_1d(uint64_t n, uint32_t group, uint32_t size[3],
		      uint32_t count[3])
{
	uint64_t g = (n + group - 1) / group;
	size[0] = group;
	size[1] = size[2] = 1;
	count[0] = g > MAX_GROUPS ? MAX_GROUPS : (uint32_t)g;
	count[1] = count[2] = 1;
}

/* When set, do_launch runs only the checks the core makes before launch,
 * as the debug-only helper of <wafer/plugin_util.h> makes them. */
static int core_checks_only;

static wafer_status do_launch(void *device, void *queue,
			      const struct wafer_kernel *k,
			      const struct wafer_binding *b, uint32_t nb,
			      const void *params, size_t params_size,
			      uint32_t local0)
{
	struct wafer_launch l = launch_of(k, b, nb, params, params_size, 1);

	l.local[0] = local0;
	if (core_checks_only)
		return wafer_plugin_debug_check_launch(&fake_host, "levelzero",
						       &l, 64);
	return sv->launch(device, queue, &l);
}

/*===----------------------------------------------------------------------===
 * Descriptor, options, devices
 *===----------------------------------------------------------------------===*/

/* The descriptor's form is the plugin-ABI suite's (t/abi); the levelzero
 * plugin says its kernels are unverified and has no stream-ordered
 * allocator. */
static void test_descriptor(wafer_plugin_query_fn query)
{
	plugin = query(WAFER_PLUGIN_ABI_MAJOR, &fake_host);
	if (!ok(plugin != NULL, "query returns a descriptor")) {
		done_testing();
		exit(exit_status());
	}
	st = plugin->storage;
	sv = plugin->server;
	like(plugin->description, "kernels not yet verified on Intel hardware",
	     "the description says the kernels are unverified: %s",
	     plugin->description);
	ok(!st->alloc_async && !st->free_async,
	   "storage: no stream-ordered allocator (Level Zero has none)");
}

static void test_options(void)
{
	struct wafer_plugin_option opts[3];
	void *state = (void *)1;

	host_init_rejects(plugin, "immediate", "sometimes",
			  "/etc/wafer/wafer.conf:4");
	is_str(last_error,
	       "/etc/wafer/wafer.conf:4: [levelzero] immediate: expected auto "
	       "or no, got 'sometimes'",
	       "  ... naming file, line, key and value");
	host_init_rejects(plugin, "staging", "4X",
			  "/etc/wafer/conf.d/lz.conf:2");
	like(last_error, "conf.d/lz.conf:2: [levelzero] staging",
	     "  ... naming where it was set");

	opts[0] = option("colour", "blue", "api");
	opts[1] = option("staging", "64KiB", "api");
	opts[2] = option("immediate", "auto", "api");
	log_count = 0;
	status_is(init_with(opts, 3, &state), WAFER_OK,
		  "an unknown option does not fail init");
	ok(log_count > 0 && strstr(log_text, "[levelzero] unknown option "
					     "'colour' ignored"),
	   "  ... it is logged");
	plugin->shutdown(state);
}

static void test_devices(void *state)
{
	struct wafer_device_info info = {.struct_size = sizeof info};
	uint32_t count = 0;

	status_is(plugin->device_count(state, &count), WAFER_OK,
		  "device_count");
	is_int(count, 2, "two GPUs (the driver's VPU is skipped)");
	status_is(plugin->device_info(state, 0, &info), WAFER_OK,
		  "device_info 0");
	is_str(info.name, "wafer test GPU 0 (host memory)",
	       "the name is the driver's");
	is_int((long long)info.memory_bytes, (long long)DEVICE_MEMORY,
	       "memory from zeDeviceGetMemoryProperties");
	is_int((long long)info.capabilities, (long long)WAFER_CAP_F16,
	       "capabilities: f16 from the module properties, no fp64, not "
	       "integrated");
	is_int((long long)info.alloc_alignment, 64, "alignment 64");
	is_int((long long)info.vm_granularity, (long long)PAGE,
	       "vm granularity from zeVirtualMemQueryPageSize");
	is_int(info.compute_units, 32, "compute units: slices x subslices x "
				       "EUs");
	plugin->device_info(state, 2, &info);
	like(last_error, "there are 2",
	     "device_info 2 says how many there are: %s", last_error);
}

/*===----------------------------------------------------------------------===
 * Storage
 *===----------------------------------------------------------------------===*/

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 131u + seed * 7u + (i >> 8));
}

/* Uploads, copies on the device and downloads on |queue|. */
static void test_storage(void *device, void *queue, const char *mode)
{
	const size_t n = 3000; /* not a multiple of the alignment */
	unsigned char *src = malloc(n), *dst = malloc(n), *big, *big_back;
	wafer_resource a = alloc_or_die(device, n), b = alloc_or_die(device, n);
	struct fakeze_usage before, after;

	pattern(src, n, 1);
	memset(dst, 0, n);
	status_is(st->copy_in(device, queue, a, 0, src, n), WAFER_OK,
		  "%s: copy_in", mode);
	memset(src, 0xee, n); /* the caller may reuse its buffer at once */
	status_is(st->copy(device, queue, b, 64, a, 0, n - 64), WAFER_OK,
		  "%s: copy on the device", mode);
	status_is(st->copy_out(device, queue, b, 64, dst, n - 64), WAFER_OK,
		  "%s: copy_out", mode);
	ok(dst[0] == 0 && dst[n / 2] == 0,
	   "%s: downloaded bytes are not there before sync", mode);
	status_is(sv->sync(device, queue), WAFER_OK, "%s: sync", mode);
	pattern(src, n, 1);
	ok(memcmp(dst, src, n - 64) == 0,
	   "%s: the bytes made the round trip (upload, copy at an offset, "
	   "download)",
	   mode);

	/* Two overlapping slices of one resource: a Level Zero copy between
	 * them is undefined, so the plugin goes through a temporary. */
	memset(dst, 0, n);
	st->copy(device, queue, a, 64, a, 0, 1024);
	st->copy_out(device, queue, a, 0, dst, 64 + 1024);
	status_is(sv->sync(device, queue), WAFER_OK,
		  "%s: overlapping copy and sync", mode);
	ok(memcmp(dst, src, 64) == 0 && memcmp(dst + 64, src, 1024) == 0,
	   "%s: the overlapping copy behaves like memmove", mode);

	status_is(st->copy_in(device, queue, a, 0, src, 0), WAFER_OK,
		  "%s: zero-byte copies are fine", mode);

	/* Bigger than the 64K staging area: a host block of its own, freed
	 * at the next wait. */
	big = malloc(PAGE * 3);
	big_back = calloc(1, PAGE * 3);
	pattern(big, PAGE * 3, 3);
	wafer_resource c = alloc_or_die(device, PAGE * 3);
	fz->usage(&before);
	st->copy_in(device, queue, c, 0, big, PAGE * 3);
	st->copy_out(device, queue, c, 0, big_back, PAGE * 3);
	fz->usage(&after);
	ok(after.host_bytes >= before.host_bytes + 2 * PAGE * 3,
	   "%s: copies beyond the staging area get their own host memory",
	   mode);
	status_is(sv->sync(device, queue), WAFER_OK, "%s: sync", mode);
	fz->usage(&after);
	ok(memcmp(big, big_back, PAGE * 3) == 0 &&
		   after.host_bytes == before.host_bytes,
	   "%s: ... the bytes arrive and the blocks are freed at sync", mode);

	/* Many small uploads fill the staging area: the plugin waits for the
	 * device to drain it and carries on. */
	uint64_t waits = fz->calls("zeEventHostSynchronize") +
			 fz->calls("zeCommandQueueSynchronize");
	for (size_t off = 0; off < PAGE * 3; off += 4096)
		st->copy_in(device, queue, c, off, big + off, 4096);
	pattern(big, PAGE * 3, 3);
	memset(big_back, 0, PAGE * 3);
	st->copy_out(device, queue, c, 0, big_back, PAGE * 3);
	sv->sync(device, queue);
	ok(fz->calls("zeEventHostSynchronize") +
			   fz->calls("zeCommandQueueSynchronize") >
		   waits + 1,
	   "%s: a full staging area is drained by a wait", mode);
	ok(memcmp(big, big_back, PAGE * 3) == 0,
	   "%s: ... and every byte arrives", mode);

	st->free(device, a);
	st->free(device, b);
	st->free(device, c);
	free(src);
	free(dst);
	free(big);
	free(big_back);
	no_violations(mode);
}

static void test_alloc_errors(void *device)
{
	wafer_resource r = 1;

	status_is(st->alloc(device, 0, &r), WAFER_ERROR_INVALID_ARGUMENT,
		  "alloc(0) is rejected");
	ok(r == 0, "  ... with the resource 0");
	status_is(st->alloc(device, DEVICE_MEMORY * 2, &r),
		  WAFER_ERROR_OUT_OF_MEMORY, "alloc beyond the device's memory");
	like(last_error, "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
	     "  ... names the Level Zero result: %s", last_error);
	fz->fail("zeMemAllocDevice", 0, ZE_RESULT_ERROR_DEVICE_LOST);
	status_is(st->alloc(device, 64, &r), WAFER_ERROR_DEVICE,
		  "a lost device fails alloc with WAFER_ERROR_DEVICE");

	/* The plugin's own pinned host memory (host_alloc is retired): a
	 * queue's staging area, and the block of an upload bigger than it. */
	void *q = &r;
	fz->fail("zeMemAllocHost", 0, ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	status_is(sv->queue_create(device, &q), WAFER_ERROR_OUT_OF_MEMORY,
		  "a queue whose staging area cannot be had fails");
	ok(q == NULL, "  ... with NULL");
	fz->clear();
	status_is(sv->queue_create(device, &q), WAFER_OK,
		  "a queue with a staging area");
	enum { BIG = 5 << 20 }; /* beyond the default 4 MiB staging area */
	wafer_resource big = alloc_or_die(device, BIG);
	unsigned char *src = calloc(1, BIG);
	fz->fail("zeMemAllocHost", 0, ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	status_is(q ? st->copy_in(device, q, big, 0, src, BIG) : WAFER_OK,
		  WAFER_ERROR_OUT_OF_MEMORY,
		  "an upload beyond the staging area fails without its block");
	fz->clear();
	st->free(device, big);
	free(src);
	if (q)
		sv->queue_destroy(device, q);
	fz->clear();
}

/*===----------------------------------------------------------------------===
 * Virtual memory
 *===----------------------------------------------------------------------===*/

static void test_vm(void *device, void *queue)
{
	struct fakeze_usage u;
	wafer_resource range = 0;
	unsigned char *data = malloc(PAGE * 4), *back = calloc(1, PAGE * 4);

	status_is(st->vm_reserve(device, PAGE * 16, &range), WAFER_OK,
		  "vm_reserve 16 pages");
	status_is(st->vm_reserve(device, PAGE + 1, &(wafer_resource){0}),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "vm_reserve of a size off the page size is rejected");

	uint64_t creates = fz->calls("zePhysicalMemCreate");
	status_is(st->vm_map(device, range, PAGE, PAGE * 4), WAFER_OK,
		  "vm_map pages 1..4");
	is_int((long long)(fz->calls("zePhysicalMemCreate") - creates), 4,
	       "  ... one physical object per page");
	fz->usage(&u);
	is_int((long long)u.mapped_bytes, (long long)(PAGE * 4),
	       "  ... 4 pages mapped");

	pattern(data, PAGE * 4, 9);
	st->copy_in(device, queue, range, PAGE, data, PAGE * 4);
	st->copy_out(device, queue, range, PAGE, back, PAGE * 4);
	sv->sync(device, queue);
	ok(memcmp(data, back, PAGE * 4) == 0,
	   "bytes copied into mapped pages come back");

	status_is(st->vm_unmap(device, range, PAGE * 2, PAGE), WAFER_OK,
		  "vm_unmap page 2, in the middle of what one vm_map mapped");
	fz->usage(&u);
	is_int((long long)u.physical_bytes, (long long)(PAGE * 3),
	       "  ... its memory goes back at once");
	memset(back, 0, PAGE * 4);
	st->copy_out(device, queue, range, PAGE * 3, back, PAGE * 2);
	sv->sync(device, queue);
	ok(memcmp(back, data + PAGE * 2, PAGE * 2) == 0,
	   "  ... the pages after it keep their bytes");

	status_is(st->vm_map(device, range, 0, PAGE * 2),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "vm_map over a mapped page is rejected");
	like(last_error, "is already mapped", "  ... %s", last_error);
	status_is(st->vm_unmap(device, range, PAGE, PAGE * 2),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "vm_unmap over an unmapped page is rejected");
	fz->usage(&u);
	is_int((long long)u.mapped_bytes, (long long)(PAGE * 3),
	       "  ... and changes nothing");
	status_is(st->vm_map(device, range, 100, PAGE),
		  WAFER_ERROR_INVALID_ARGUMENT, "an unaligned offset");
	status_is(st->vm_map(device, range, PAGE * 15, PAGE * 2),
		  WAFER_ERROR_INVALID_ARGUMENT, "a span past the range");
	status_is(st->vm_map(device, range + PAGE, 0, PAGE),
		  WAFER_ERROR_INVALID_ARGUMENT, "a range that is not one");

	/* A map failing part way unmaps the pages it mapped. */
	fz->fail("zeVirtualMemMap", 2, ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
	status_is(st->vm_map(device, range, PAGE * 8, PAGE * 4),
		  WAFER_ERROR_OUT_OF_MEMORY, "vm_map failing at its third page");
	fz->usage(&u);
	is_int((long long)u.mapped_bytes, (long long)(PAGE * 3),
	       "  ... leaves no page of it mapped");
	is_int((long long)u.physical_bytes, (long long)(PAGE * 3),
	       "  ... and no physical memory");

	/* A kernel may bind the range. */
	const struct wafer_kernel *fill = find_kernel(device, "fill", WAFER_DTYPE_F32);
	struct wafer_fill_params fp = {.count = PAGE / 4, .value = 1.0};
	struct wafer_binding b = binding(range, PAGE, PAGE);
	status_is(do_launch(device, queue, fill, &b, 1, &fp, sizeof fp, 0),
		  WAFER_OK, "a launch binding mapped pages of the range");
	/* The core syncs before it releases what a launch uses. */
	status_is(sv->sync(device, queue), WAFER_OK, "  ... and sync");
	int all_one = fz->read(ptr_of(range, PAGE), back, PAGE);
	for (size_t i = 0; all_one && i < PAGE / 4; i++) {
		float v;
		memcpy(&v, back + 4 * i, 4);
		all_one = v == 1.0f;
	}
	ok(all_one, "  ... the kernel wrote 1.0 over the mapped page");

	st->vm_release(device, range);
	fz->usage(&u);
	ok(u.mapped_bytes == 0 && u.physical_bytes == 0 && u.reserved_bytes == 0,
	   "vm_release unmaps the rest and frees the range");
	log_count = 0;
	st->vm_release(device, range);
	ok(log_count == 1, "releasing it again is logged, not fatal");
	free(data);
	free(back);
	no_violations("virtual memory");
}

/*===----------------------------------------------------------------------===
 * Kernels: what each catalogue entry launches
 *===----------------------------------------------------------------------===*/

struct buffers {
	wafer_resource r[3];
	size_t size;
};

static struct buffers buffers(void *device, size_t size)
{
	struct buffers b = {.size = size};
	for (int i = 0; i < 3; i++)
		b.r[i] = alloc_or_die(device, size);
	return b;
}

static void free_buffers(void *device, struct buffers *b)
{
	for (int i = 0; i < 3; i++)
		st->free(device, b->r[i]);
}

static void bind3(const struct buffers *b, size_t offset,
		  struct wafer_binding out[3], const void *ptrs[3])
{
	for (int i = 0; i < 3; i++) {
		out[i] = binding(b->r[i], offset, b->size - offset);
		ptrs[i] = ptr_of(b->r[i], offset);
	}
}

/* Launches |op|'s f32 entry with |nb| bindings and |params| and checks
 * the launch the driver recorded: kernel |op|_f32, groups |gs| x |gc|,
 * arguments |w|. 0, after a failed point, when the table has no entry. */
static int launch_checked(void *device, void *queue, const char *op,
			  const struct wafer_binding *b, uint32_t nb,
			  const void *params, size_t params_size,
			  const uint32_t gs[3], const uint32_t gc[3],
			  const struct want_arg *w, uint32_t nw)
{
	const struct wafer_kernel *k = find_kernel(device, op, WAFER_DTYPE_F32);
	char name[64], what[96];

	snprintf(name, sizeof name, "%s_f32", op);
	snprintf(what, sizeof what, "%s f32", op);
	if (!ok(k != NULL, "%s is in the table", what))
		return 0;
	do_launch(device, queue, k, b, nb, params, params_size, 0);
	check_last(what, name, gs, gc, w, nw);
	return 1;
}

static void test_elementwise(void *device, void *queue, const struct buffers *bufs)
{
	static const char *const unary[] = {"neg", "abs", "exp", "log", "sqrt",
		"relu", "gelu", "sigmoid", "tanh"};
	static const char *const binary[] = {"add", "sub", "mul", "div", "max",
		"min"};
	struct wafer_binding b[3];
	const void *p[3];
	uint32_t gs[3], gc[3];
	uint64_t count = 1000;

	bind3(bufs, 64, b, p);
	groups_1d(count, 256, gs, gc);
	struct wafer_elementwise_params ep = {.count = count};
	struct want_arg w2[] = {arg_ptr(&p[0]), arg_ptr(&p[1]), ARG(count)};
	struct want_arg w3[] = {arg_ptr(&p[0]), arg_ptr(&p[1]), arg_ptr(&p[2]),
				ARG(count)};

	for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++)
		launch_checked(device, queue, unary[i], b, 2, &ep, sizeof ep,
			       gs, gc, w2, 3);
	for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++) {
		char op[32];
		if (!launch_checked(device, queue, binary[i], b, 3, &ep,
				    sizeof ep, gs, gc, w3, 4))
			continue;

		/* with a scalar */
		struct wafer_scalar_params sp = {
			.count = count, .scalar = 2.5, .scalar_first = 1};
		float s = 2.5f;
		uint32_t first = 1;
		struct want_arg ws[] = {arg_ptr(&p[0]), arg_ptr(&p[1]),
					ARG(count), ARG(s), ARG(first)};
		snprintf(op, sizeof op, "%s_scalar", binary[i]);
		if (!launch_checked(device, queue, op, b, 2, &sp, sizeof sp, gs,
				    gc, ws, 5))
			continue;

		/* on strided views: the parameter block goes by value */
		struct wafer_binary_strided_params bp = {
			.rank = 2,
			.shape = {10, 100},
			.a_strides = {100, 1},
			.b_strides = {0, 1}, /* b broadcast along rows */
		};
		struct want_arg wb[] = {arg_ptr(&p[0]), arg_ptr(&p[1]),
					arg_ptr(&p[2]), ARG(bp)};
		snprintf(op, sizeof op, "%s_strided", binary[i]);
		launch_checked(device, queue, op, b, 3, &bp, sizeof bp, gs, gc,
			       wb, 4);
	}
}

static void test_moves(void *device, void *queue, const struct buffers *bufs)
{
	static const struct {
		wafer_dtype dtype;
		const char *name;
		const char *copy;
		const char *strided;
		size_t size;
	} moves[] = {
		{WAFER_DTYPE_F32, "f32", "copy_b32", "copy_strided_b32", 4},
		{WAFER_DTYPE_I32, "i32", "copy_b32", "copy_strided_b32", 4},
		{WAFER_DTYPE_F16, "f16", "copy_b16", "copy_strided_b16", 2},
		{WAFER_DTYPE_BF16, "bf16", "copy_b16", "copy_strided_b16", 2},
	};
	struct wafer_binding b[3];
	const void *p[3];
	uint32_t gs[3], gc[3];
	char what[64];

	bind3(bufs, 0, b, p);
	for (size_t i = 0; i < sizeof moves / sizeof moves[0]; i++) {
		uint64_t count = bufs->size / moves[i].size; /* exactly full */
		struct wafer_elementwise_params ep = {.count = count};
		const struct wafer_kernel *k =
			find_kernel(device, "copy", moves[i].dtype);
		snprintf(what, sizeof what, "copy %s", moves[i].name);
		groups_1d(count, 256, gs, gc);
		if (ok(k != NULL, "%s is in the table", what)) {
			do_launch(device, queue, k, b, 2, &ep, sizeof ep, 0);
			struct want_arg w[] = {arg_ptr(&p[0]), arg_ptr(&p[1]),
					       ARG(count)};
			check_last(what, moves[i].copy, gs, gc, w, 3);
		}
		k = find_kernel(device, "copy_strided", moves[i].dtype);
		snprintf(what, sizeof what, "copy_strided %s", moves[i].name);
		if (ok(k != NULL, "%s is in the table", what)) {
			/* a transpose of a 20 x 30 matrix */
			struct wafer_strided_copy_params cp = {
				.rank = 2, .shape = {30, 20}, .strides = {1, 30}};
			groups_1d(600, 256, gs, gc);
			do_launch(device, queue, k, b, 2, &cp, sizeof cp, 0);
			struct want_arg w[] = {arg_ptr(&p[0]), arg_ptr(&p[1]),
					       ARG(cp)};
			check_last(what, moves[i].strided, gs, gc, w, 3);
		}
	}
}

static void test_cast(void *device, void *queue, const struct buffers *bufs)
{
	static const struct {
		wafer_dtype dtype;
		const char *name;
	} types[] = {
		{WAFER_DTYPE_F32, "f32"},
		{WAFER_DTYPE_F16, "f16"},
		{WAFER_DTYPE_BF16, "bf16"},
		{WAFER_DTYPE_I32, "i32"},
	};
	struct wafer_binding b[3];
	const void *p[3];
	uint32_t gs[3], gc[3];
	uint64_t count = 500;
	char what[64], want[64];

	bind3(bufs, 0, b, p);
	groups_1d(count, 256, gs, gc);
	for (size_t i = 0; i < 4; i++) {
		const struct wafer_kernel *k =
			find_kernel(device, "cast", types[i].dtype);
		if (!ok(k != NULL, "cast from %s is in the table", types[i].name))
			continue;
		for (size_t j = 0; j < 4; j++) {
			struct wafer_cast_params cp = {
				.count = count,
				.dtype_in = types[i].dtype,
				.dtype_out = types[j].dtype,
			};
			snprintf(what, sizeof what, "cast %s to %s",
				 types[i].name, types[j].name);
			if (i == j)
				snprintf(want, sizeof want, "copy_b%d",
					 types[i].dtype == WAFER_DTYPE_F32 ||
							 types[i].dtype ==
								 WAFER_DTYPE_I32
						 ? 32
						 : 16);
			else
				snprintf(want, sizeof want, "cast_%s_%s",
					 types[i].name, types[j].name);
			do_launch(device, queue, k, b, 2, &cp, sizeof cp, 0);
			struct want_arg w[] = {arg_ptr(&p[0]), arg_ptr(&p[1]),
					       ARG(count)};
			check_last(what, want, gs, gc, w, 3);
		}
	}
}

static void test_rows_and_matmul(void *device, void *queue,
				 const struct buffers *bufs)
{
	static const char *const rows_ops[] = {"reduce_sum", "reduce_max",
		"reduce_mean", "softmax"};
	struct wafer_binding b[3];
	const void *p[3];

	bind3(bufs, 0, b, p);
	for (size_t i = 0; i < 4; i++) {
		struct wafer_rows_params rp = {.rows = 400, .cols = 5};
		uint32_t gs[3] = {256, 1, 1}, gc[3] = {MAX_GROUPS, 1, 1};
		struct want_arg w[] = {arg_ptr(&p[0]), arg_ptr(&p[1]),
				       ARG(rp.rows), ARG(rp.cols)};
		launch_checked(device, queue, rows_ops[i], b, 2, &rp, sizeof rp,
			       gs, gc, w, 4);
	}

	struct wafer_matmul_params mp = {
		.batch = 3, .m = 20, .n = 33, .k = 8, .transpose_b = 1,
		.batch_stride_a = 160, .batch_stride_b = 0,
		.batch_stride_c = 660,
	};
	uint32_t gs[3] = {16, 16, 1}, gc[3] = {3, 2, 3};
	struct want_arg w[] = {arg_ptr(&p[0]), arg_ptr(&p[1]), arg_ptr(&p[2]),
			       ARG(mp)};
	launch_checked(device, queue, "matmul", b, 3, &mp, sizeof mp, gs, gc, w,
		       4);
}

/* What the kernels compute: a chain of dependent operations on one queue
 * with no sync between them — uploads, add, a scalar multiply, a row sum,
 * a matmul, downloads — checked against the host. The driver runs each
 * kernel (an emulation of kernels.cl) and runs commands between barriers
 * out of order, only at the sync: a missing barrier, a wrong argument or
 * launch shape, or a download read before the sync shows as a value. */
static void test_values(void *device, void *queue, const char *mode)
{
	enum { N = 1000, ROWS = 4, M = 4, K = 6, NN = 5 };
	float a[N], b[N], d[N], sums[ROWS], mm[M * NN];
	wafer_resource ra = alloc_or_die(device, N * 4),
		       rb = alloc_or_die(device, N * 4),
		       rc = alloc_or_die(device, N * 4),
		       rd = alloc_or_die(device, N * 4),
		       rs = alloc_or_die(device, ROWS * 4),
		       rm = alloc_or_die(device, M * NN * 4);
	const struct wafer_kernel *add = find_kernel(device, "add", WAFER_DTYPE_F32),
		*mul_s = find_kernel(device, "mul_scalar", WAFER_DTYPE_F32),
		*sum = find_kernel(device, "reduce_sum", WAFER_DTYPE_F32),
		*matmul = find_kernel(device, "matmul", WAFER_DTYPE_F32);
	wafer_status s = WAFER_OK;

	for (int i = 0; i < N; i++) {
		a[i] = (float)i * 0.25f - 3.0f;
		b[i] = 1.0f + (float)(i % 7);
	}
	memset(d, 0, sizeof d);
	memset(sums, 0, sizeof sums);
	memset(mm, 0, sizeof mm);
	st->copy_in(device, queue, ra, 0, a, sizeof a);
	st->copy_in(device, queue, rb, 0, b, sizeof b);
	/* c = a + b */
	struct wafer_binding b3[3] = {binding(rc, 0, N * 4),
				      binding(ra, 0, N * 4),
				      binding(rb, 0, N * 4)};
	struct wafer_elementwise_params ep = {.count = N};
	if (s == WAFER_OK)
		s = do_launch(device, queue, add, b3, 3, &ep, sizeof ep, 0);
	/* d = 2 * c (the scalar first) */
	struct wafer_binding b2[2] = {binding(rd, 0, N * 4),
				      binding(rc, 0, N * 4)};
	struct wafer_scalar_params sp = {.count = N, .scalar = 2.0,
					 .scalar_first = 1};
	if (s == WAFER_OK)
		s = do_launch(device, queue, mul_s, b2, 2, &sp, sizeof sp, 0);
	/* sums = the rows of d as ROWS x N / ROWS */
	struct wafer_binding br[2] = {binding(rs, 0, ROWS * 4),
				      binding(rd, 0, N * 4)};
	struct wafer_rows_params rp = {.rows = ROWS, .cols = N / ROWS};
	if (s == WAFER_OK)
		s = do_launch(device, queue, sum, br, 2, &rp, sizeof rp, 0);
	/* mm = d[0 .. M*K) as M x K times c[0 .. K*NN) as K x NN */
	struct wafer_binding bm[3] = {binding(rm, 0, M * NN * 4),
				      binding(rd, 0, N * 4),
				      binding(rc, 0, N * 4)};
	struct wafer_matmul_params mp = {.batch = 1, .m = M, .n = NN, .k = K};
	if (s == WAFER_OK)
		s = do_launch(device, queue, matmul, bm, 3, &mp, sizeof mp, 0);
	st->copy_out(device, queue, rd, 0, d, sizeof d);
	st->copy_out(device, queue, rs, 0, sums, sizeof sums);
	st->copy_out(device, queue, rm, 0, mm, sizeof mm);
	ok(d[N - 1] == 0.0f && sums[0] == 0.0f,
	   "%s: values: nothing downloaded before the sync", mode);
	if (s == WAFER_OK)
		s = sv->sync(device, queue);
	status_is(s, WAFER_OK, "%s: values: upload, add, mul_scalar, "
			       "reduce_sum, matmul, download, one sync",
		  mode);

	int good = 1;
	for (int i = 0; good && i < N; i++)
		if (!(good = d[i] == 2.0f * (a[i] + b[i])))
			diag("d[%d] = %g, want %g", i, d[i], 2.0f * (a[i] + b[i]));
	ok(good, "%s: values: 2 * (a + b) exact", mode);
	good = 1;
	for (int r = 0; r < ROWS; r++) {
		double want = 0;
		for (int c = 0; c < N / ROWS; c++)
			want += 2.0 * ((double)a[r * (N / ROWS) + c] +
				       b[r * (N / ROWS) + c]);
		if (fabs(sums[r] - want) > 1e-5 * fabs(want) + 1e-3) {
			diag("row %d: sum %g, want %g", r, sums[r], want);
			good = 0;
		}
	}
	ok(good, "%s: values: the row sums", mode);
	good = 1;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < NN; j++) {
			double want = 0;
			for (int k = 0; k < K; k++)
				want += 2.0 * ((double)a[i * K + k] + b[i * K + k]) *
					((double)a[k * NN + j] + b[k * NN + j]);
			if (fabs(mm[i * NN + j] - want) > 1e-4 * fabs(want) + 1e-4) {
				diag("mm[%d][%d] = %g, want %g", i, j,
				     mm[i * NN + j], want);
				good = 0;
			}
		}
	ok(good, "%s: values: the matmul", mode);
	wafer_resource all[] = {ra, rb, rc, rd, rs, rm};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		st->free(device, all[i]);
}

static void test_fill_and_noop(void *device, void *queue)
{
	struct wafer_binding b[3];
	const void *p[3];
	uint32_t gs[3], gc[3];
	const struct wafer_kernel *k;

	/* 100000 floats and an offset. */
	struct buffers big = buffers(device, 400000 + 128);
	bind3(&big, 128, b, p);
	k = find_kernel(device, "noop", WAFER_DTYPE_F32);
	if (ok(k != NULL, "noop is in the table")) {
		do_launch(device, queue, k, NULL, 0, NULL, 0, 0);
		check_last("noop", "noop", ONE, ONE, NULL, 0);
	}

	k = find_kernel(device, "fill", WAFER_DTYPE_F32);
	uint64_t count = 100000; /* 391 groups, capped at the driver's 300 */
	struct wafer_fill_params fp = {.count = count, .value = 0.1};
	float value = 0.1f;
	groups_1d(count, 256, gs, gc);
	if (ok(k != NULL, "fill f32 is in the table")) {
		do_launch(device, queue, k, b, 1, &fp, sizeof fp, 0);
		struct want_arg w[] = {arg_ptr(&p[0]), ARG(count), ARG(value)};
		check_last("fill f32 (group count capped)", "fill_f32", gs, gc,
			   w, 3);
		/* a work-group hint the device takes, and one it does not */
		do_launch(device, queue, k, b, 1, &fp, sizeof fp, 64);
		groups_1d(count, 64, gs, gc);
		check_last("fill with local = 64", "fill_f32", gs, gc, w, 3);
		do_launch(device, queue, k, b, 1, &fp, sizeof fp, 4096);
		groups_1d(count, 256, gs, gc);
		check_last("fill with local = 4096 (too big: ignored)",
			   "fill_f32", gs, gc, w, 3);
	}

	k = find_kernel(device, "fill", WAFER_DTYPE_I32);
	static const struct {
		double value;
		int32_t want;
	} ints[] = {{3.7, 3}, {-3.7, -3}, {1e12, INT32_MAX},
		    {-1e12, INT32_MIN}};
	if (ok(k != NULL, "fill i32 is in the table")) {
		count = 1000;
		groups_1d(count, 256, gs, gc);
		for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
			char what[64];
			fp = (struct wafer_fill_params){count, ints[i].value};
			snprintf(what, sizeof what, "fill i32 with %g",
				 ints[i].value);
			do_launch(device, queue, k, b, 1, &fp, sizeof fp, 0);
			struct want_arg w[] = {arg_ptr(&p[0]), ARG(count),
					       ARG(ints[i].want)};
			check_last(what, "fill_i32", gs, gc, w, 3);
		}
		fp = (struct wafer_fill_params){count, NAN};
		int32_t zero = 0;
		do_launch(device, queue, k, b, 1, &fp, sizeof fp, 0);
		struct want_arg w[] = {arg_ptr(&p[0]), ARG(count), ARG(zero)};
		check_last("fill i32 with NaN", "fill_i32", gs, gc, w, 3);
	}

	/* Nothing to do: nothing is appended. */
	size_t before = fz->launch_count();
	struct wafer_elementwise_params none = {0};
	k = find_kernel(device, "relu", WAFER_DTYPE_F32);
	status_is(do_launch(device, queue, k, b, 2, &none, sizeof none, 0),
		  WAFER_OK, "relu over 0 elements");
	no_launch_since(before, "  ... launches nothing");
	sv->sync(device, queue);
	free_buffers(device, &big);
}

/* Every table entry creates its kernel in the module: its SPIR-V entry
 * point exists (the driver refuses other names). */
static void test_table(void *device)
{
	const struct wafer_kernel *table;
	size_t count;
	int bad = 0;

	status_is(plugin->device_kernels(device, &table, &count), WAFER_OK,
		  "device_kernels");
	ok(count >= 40, "the table has the catalogue (%zu entries)", count);
	for (size_t i = 0; i < count; i++) {
		const struct wafer_kernel *k = &table[i];
		if (k->struct_size != sizeof *k || !k->op || !k->variant ||
		    strcmp(k->variant, "default") != 0 || !k->impl) {
			diag("entry %zu (%s) is malformed", i, k->op);
			bad++;
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(table[j].op, k->op) &&
			    table[j].dtype == k->dtype) {
				diag("entry %zu repeats %s/%d", i, k->op,
				     k->dtype);
				bad++;
			}
	}
	ok(bad == 0, "every entry: struct_size, op, variant \"default\", "
		     "one per (op, dtype)");
}

static void test_bad_launches(void *device, void *queue)
{
	const struct wafer_kernel *add = find_kernel(device, "add", WAFER_DTYPE_F32);
	const struct wafer_kernel *cast = find_kernel(device, "cast", WAFER_DTYPE_F32);
	const struct wafer_kernel *strided =
		find_kernel(device, "add_strided", WAFER_DTYPE_F32);
	const struct wafer_kernel *mm = find_kernel(device, "matmul", WAFER_DTYPE_F32);
	const struct wafer_kernel *sum =
		find_kernel(device, "reduce_sum", WAFER_DTYPE_F32);
	const struct wafer_kernel *scalar =
		find_kernel(device, "mul_scalar", WAFER_DTYPE_F32);
	struct buffers bufs = buffers(device, 4096);
	struct wafer_binding b[3];
	const void *p[3];
	struct wafer_elementwise_params ep = {.count = 1024};
	size_t before = fz->launch_count();

	bind3(&bufs, 0, b, p);
	/* Kernel identity, binding count, parameter size and alignment are
	 * the core's to check, once (plugin.h): the same rejections through
	 * the debug-only helper. */
	struct wafer_kernel foreign = *add;
	foreign.impl = &foreign;
	core_checks_only = 1;
	status_is(do_launch(device, queue, &foreign, b, 1, &ep, sizeof ep, 0),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "a foreign kernel with the wrong binding count");
	status_is(do_launch(device, queue, add, b, 2, &ep, sizeof ep, 0),
		  WAFER_ERROR_INVALID_ARGUMENT, "too few bindings");
	status_is(do_launch(device, queue, add, b, 3, &ep, 4, 0),
		  WAFER_ERROR_INVALID_ARGUMENT, "a short parameter block");
	b[1].offset = 32;
	status_is(do_launch(device, queue, add, b, 3, &ep, sizeof ep, 0),
		  WAFER_ERROR_INVALID_ARGUMENT, "a misaligned binding offset");
	core_checks_only = 0;
	b[1].offset = 0;
	ep.count = 1025;
	status_is(do_launch(device, queue, add, b, 3, &ep, sizeof ep, 0),
		  WAFER_ERROR_OUT_OF_RANGE, "a count past the bindings");
	like(last_error, "binding 0 holds 4096 bytes, too few for 1025",
	     "  ... says which binding and the sizes: %s", last_error);

	struct wafer_cast_params cp = {.count = 10, .dtype_in = WAFER_DTYPE_F32,
				       .dtype_out = WAFER_DTYPE_F64};
	status_is(do_launch(device, queue, cast, b, 2, &cp, sizeof cp, 0),
		  WAFER_ERROR_INVALID_ARGUMENT, "cast to f64 is not offered");
	cp = (struct wafer_cast_params){.count = 10, .dtype_in = WAFER_DTYPE_I32,
					.dtype_out = WAFER_DTYPE_F32};
	status_is(do_launch(device, queue, cast, b, 2, &cp, sizeof cp, 0),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "a dtype_in other than the entry's");
	cp = (struct wafer_cast_params){.count = 1024,
					.dtype_in = WAFER_DTYPE_F32,
					.dtype_out = WAFER_DTYPE_F16};
	b[0].size = 1024;
	status_is(do_launch(device, queue, cast, b, 2, &cp, sizeof cp, 0),
		  WAFER_ERROR_OUT_OF_RANGE,
		  "cast: the output holds 2 bytes per element");
	b[0].size = bufs.size;

	struct wafer_binary_strided_params bp = {.rank = 0};
	status_is(do_launch(device, queue, strided, b, 3, &bp, sizeof bp, 0),
		  WAFER_ERROR_INVALID_ARGUMENT, "rank 0");
	bp = (struct wafer_binary_strided_params){
		.rank = 2, .shape = {4, 256}, .a_strides = {256, 1},
		.b_strides = {512, 1}};
	status_is(do_launch(device, queue, strided, b, 3, &bp, sizeof bp, 0),
		  WAFER_ERROR_OUT_OF_RANGE, "strides reaching past b");
	bp.b_strides[0] = 0;
	bp.shape[1] = 0;
	status_is(do_launch(device, queue, strided, b, 3, &bp, sizeof bp, 0),
		  WAFER_ERROR_INVALID_ARGUMENT, "a zero in the shape");
	bp = (struct wafer_binary_strided_params){
		.rank = 1, .shape = {2}, .a_strides = {UINT64_MAX / 2}};
	status_is(do_launch(device, queue, strided, b, 3, &bp, sizeof bp, 0),
		  WAFER_ERROR_OUT_OF_RANGE, "strides that overflow");

	struct wafer_matmul_params mp = {.batch = 1, .m = 0, .n = 4, .k = 4};
	status_is(do_launch(device, queue, mm, b, 3, &mp, sizeof mp, 0),
		  WAFER_ERROR_INVALID_ARGUMENT, "matmul with m = 0");
	mp = (struct wafer_matmul_params){.batch = 2, .m = 16, .n = 16, .k = 16,
					  .batch_stride_a = 256,
					  .batch_stride_b = 256,
					  .batch_stride_c = 1000};
	status_is(do_launch(device, queue, mm, b, 3, &mp, sizeof mp, 0),
		  WAFER_ERROR_OUT_OF_RANGE, "matmul: C's batch stride past out");

	struct wafer_rows_params rp = {.rows = 4, .cols = 0};
	status_is(do_launch(device, queue, sum, b, 2, &rp, sizeof rp, 0),
		  WAFER_ERROR_INVALID_ARGUMENT, "reduce_sum with cols = 0");
	struct wafer_scalar_params sp = {.count = 4, .scalar_first = 2};
	status_is(do_launch(device, queue, scalar, b, 2, &sp, sizeof sp, 0),
		  WAFER_ERROR_INVALID_ARGUMENT, "scalar_first = 2");

	no_launch_since(before, "no rejected launch reached the driver");
	sv->sync(device, queue);
	free_buffers(device, &bufs);
	no_violations("rejected launches");
}

/*===----------------------------------------------------------------------===
 * Errors from the driver
 *===----------------------------------------------------------------------===*/

static void test_driver_errors(void *device, void *queue, int immediate)
{
	const struct wafer_kernel *add = find_kernel(device, "add", WAFER_DTYPE_F32);
	struct buffers bufs = buffers(device, 4096);
	struct wafer_binding b[3];
	const void *p[3];
	struct wafer_elementwise_params ep = {.count = 1024};
	const char *wait = immediate ? "zeEventHostSynchronize"
				     : "zeCommandQueueSynchronize";
	unsigned char dst[64], src[64];

	bind3(&bufs, 0, b, p);
	fz->fail("zeCommandListAppendLaunchKernel", 0,
		 ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
	status_is(do_launch(device, queue, add, b, 3, &ep, sizeof ep, 0),
		  WAFER_ERROR_OUT_OF_MEMORY,
		  "a launch the driver refuses fails at once");
	like(last_error,
	     "zeCommandListAppendLaunchKernel: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
	     "  ... naming the call and the result: %s", last_error);

	/* The device is lost while the queue runs: the next sync says so,
	 * once; the download it held is not copied. */
	memset(src, 7, sizeof src);
	memset(dst, 0, sizeof dst);
	status_is(do_launch(device, queue, add, b, 3, &ep, sizeof ep, 0),
		  WAFER_OK, "a launch");
	st->copy_in(device, queue, bufs.r[0], 0, src, sizeof src);
	st->copy_out(device, queue, bufs.r[0], 0, dst, sizeof dst);
	fz->fail(wait, 0, ZE_RESULT_ERROR_DEVICE_LOST);
	status_is(sv->sync(device, queue), WAFER_ERROR_DEVICE,
		  "sync returns the device's failure");
	char want[128];
	snprintf(want, sizeof want, "%s: ZE_RESULT_ERROR_DEVICE_LOST", wait);
	like(last_error, want, "  ... with its detail: %s", last_error);
	ok(dst[0] == 0, "  ... and does not copy a download it cannot trust");
	status_is(sv->sync(device, queue), WAFER_OK,
		  "the next sync has nothing to report");

	/* A kernel object that cannot be created (on a new queue: kernel
	 * objects are per queue). */
	const struct wafer_kernel *tanh_k =
		find_kernel(device, "tanh", WAFER_DTYPE_F32);
	void *q2;
	sv->queue_create(device, &q2);
	fz->fail("zeKernelCreate", 0, ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	status_is(do_launch(device, q2, tanh_k, b, 2, &ep, sizeof ep, 0),
		  WAFER_ERROR_OUT_OF_MEMORY, "zeKernelCreate failing");
	like(last_error, "zeKernelCreate(tanh_f32)", "  ... %s", last_error);
	status_is(do_launch(device, q2, tanh_k, b, 2, &ep, sizeof ep, 0),
		  WAFER_OK, "  ... the next launch creates it");
	sv->sync(device, q2);
	sv->queue_destroy(device, q2);
	free_buffers(device, &bufs);
	fz->clear();
}

/*===----------------------------------------------------------------------===
 * Timers
 *===----------------------------------------------------------------------===*/

static void test_timers(void *device, void *queue, const char *mode)
{
	const struct wafer_kernel *relu = find_kernel(device, "relu", WAFER_DTYPE_F32);
	struct buffers bufs = buffers(device, 4096);
	struct wafer_binding b[3];
	const void *p[3];
	struct wafer_elementwise_params ep = {.count = 1024};
	void *timer = NULL;
	uint64_t ns = 1;

	bind3(&bufs, 0, b, p);
	/* The 32-bit timestamps wrap after the second launch. */
	fz->set_clock((UINT64_C(1) << FAKEZE_TIMESTAMP_BITS) - 2 * FAKEZE_TICKS -
		      FAKEZE_TICKS / 2);
	status_is(sv->timer_begin(device, queue, &timer), WAFER_OK,
		  "%s: timer_begin", mode);
	for (int i = 0; i < 5; i++)
		do_launch(device, queue, relu, b, 2, &ep, sizeof ep, 0);
	status_is(sv->timer_end(device, queue, timer, &ns), WAFER_OK,
		  "%s: timer_end", mode);
	/* 5 launches of FAKEZE_TICKS ticks at FAKEZE_HZ. */
	is_int((long long)ns,
	       5LL * FAKEZE_TICKS * 1000000000LL / FAKEZE_HZ,
	       "%s: 5 launches measure 5 x %d ticks at %u Hz, across the "
	       "timestamp wrap",
	       mode, FAKEZE_TICKS, FAKEZE_HZ);

	status_is(sv->timer_begin(device, queue, &timer), WAFER_OK,
		  "%s: an empty interval", mode);
	status_is(sv->timer_end(device, queue, timer, &ns), WAFER_OK,
		  "%s: ... ends", mode);
	is_int((long long)ns, 0, "%s: ... and measures 0", mode);

	fz->fail("zeEventQueryKernelTimestamp", 0, ZE_RESULT_ERROR_DEVICE_LOST);
	sv->timer_begin(device, queue, &timer);
	status_is(sv->timer_end(device, queue, timer, &ns), WAFER_ERROR_DEVICE,
		  "%s: a failing timestamp query fails timer_end (and frees "
		  "the timer)",
		  mode);
	fz->clear();
	sv->sync(device, queue);
	free_buffers(device, &bufs);
}

/*===----------------------------------------------------------------------===
 * Events: what only this plugin does (the ABI suite tests the group)
 *===----------------------------------------------------------------------===*/

static void count_call(void *arg)
{
	++*(int *)arg;
}

/* A callback that holds its queue's callback thread until let go. */
struct holder {
	atomic_int started, go;
};

static void hold_thread(void *arg)
{
	struct holder *h = arg;

	atomic_store(&h->started, 1);
	while (!atomic_load(&h->go))
		usleep(1000);
}

/* A recording takes a Level Zero event of its own, and events go back
 * for reuse once no work uses them: recording again and again creates
 * no more pools than are in use at once. A wait on an event of a failed
 * queue, and a host callback behind a failure, do not hang. */
static void test_events(void *device, void *queue, const char *mode,
			int immediate)
{
	void *other = NULL, *e = NULL;
	int calls = 0;

	status_is(sv->queue_create(device, &other), WAFER_OK,
		  "%s: a second queue", mode);
	sv->event_create(device, 0, &e);
	uint64_t pools = fz->calls("zeEventPoolCreate");
	for (int i = 0; i < 200; i++) {
		sv->event_record(device, queue, e);
		sv->queue_wait_event(device, other, e);
		if (i % 20 == 19) {
			sv->sync(device, other);
			sv->sync(device, queue);
		}
	}
	status_is(sv->event_sync(device, e), WAFER_OK, "%s: 200 recordings",
		  mode);
	ok(fz->calls("zeEventPoolCreate") - pools <= 24,
	   "%s: ... recycle their Level Zero events (%llu pools made)", mode,
	   (unsigned long long)(fz->calls("zeEventPoolCreate") - pools));

	/* The device is lost at the queue's wait: the work before the
	 * second callback never runs, yet its thread is not left waiting
	 * (the queue's destruction joins it). The first holds the thread
	 * meanwhile, so that the failure goes to the queue's wait. */
	struct holder h = {0};
	sv->queue_callback(device, other, hold_thread, &h);
	while (!atomic_load(&h.started))
		usleep(1000);
	status_is(sv->queue_callback(device, other, count_call, &calls),
		  WAFER_OK, "%s: a host callback", mode);
	fz->fail(immediate ? "zeEventHostSynchronize"
			   : "zeCommandQueueSynchronize",
		 0, ZE_RESULT_ERROR_DEVICE_LOST);
	status_is(sv->sync(device, other), WAFER_ERROR_DEVICE,
		  "%s: ... behind a wait on a lost device", mode);
	fz->clear();
	atomic_store(&h.go, 1);
	sv->event_destroy(device, e);
	sv->queue_destroy(device, other);
	is_int(calls, 1, "%s: ... runs once all the same", mode);
}

/*===----------------------------------------------------------------------===
 * Queues on several threads
 *===----------------------------------------------------------------------===*/

struct worker {
	void *device;
	int ok;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const struct wafer_kernel *mul = find_kernel(w->device, "mul", WAFER_DTYPE_F32);
	struct buffers bufs = buffers(w->device, 4096);
	struct wafer_binding b[3];
	const void *p[3];
	struct wafer_elementwise_params ep = {.count = 1024};
	unsigned char src[4096], dst[4096];
	void *queue;

	w->ok = sv->queue_create(w->device, &queue) == WAFER_OK;
	bind3(&bufs, 0, b, p);
	pattern(src, sizeof src, 5);
	for (int i = 0; w->ok && i < 50; i++) {
		w->ok = do_launch(w->device, queue, mul, b, 3, &ep, sizeof ep,
				  0) == WAFER_OK &&
			st->copy_in(w->device, queue, bufs.r[1], 0, src,
				    sizeof src) == WAFER_OK;
		if (i % 10 == 9)
			w->ok = w->ok && sv->sync(w->device, queue) == WAFER_OK;
	}
	st->copy_out(w->device, queue, bufs.r[1], 0, dst, sizeof dst);
	w->ok = w->ok && sv->sync(w->device, queue) == WAFER_OK &&
		memcmp(src, dst, sizeof dst) == 0;
	sv->queue_destroy(w->device, queue);
	free_buffers(w->device, &bufs);
	return NULL;
}

static void test_threads(void *device)
{
	struct worker w[4];
	pthread_t t[4];
	size_t before = fz->launch_count();

	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){.device = device};
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ok(w[0].ok && w[1].ok && w[2].ok && w[3].ok,
	   "4 threads, a queue each: launches, copies and syncs");
	is_int((long long)(fz->launch_count() - before), 200,
	       "  ... all 200 launches reached the driver");
	no_violations("4 threads");
}

/*===----------------------------------------------------------------------===
 * One instance in one mode
 *===----------------------------------------------------------------------===*/

/* Runs the storage, kernel, error and timer tests on a fresh instance. */
/*===----------------------------------------------------------------------===
 * Interop: USM pointers and command lists out, the caller's in
 *===----------------------------------------------------------------------===*/

/* The plugin's handle: the test reaches the Level Zero loader it links
 * through it (the test itself does not link the loader). */
static void *plugin_so;

static struct {
	__typeof__(zeMemAllocDevice) *MemAllocDevice;
	__typeof__(zeMemAllocHost) *MemAllocHost;
	__typeof__(zeMemFree) *MemFree;
	__typeof__(zeMemGetAllocProperties) *MemGetAllocProperties;
	__typeof__(zeCommandListAppendMemoryCopy) *AppendMemoryCopy;
} ze;

static int resolve_ze(void)
{
	static const char *const names[] = {
		"zeMemAllocDevice", "zeMemAllocHost", "zeMemFree",
		"zeMemGetAllocProperties", "zeCommandListAppendMemoryCopy",
	};
	return host_resolve(plugin_so, names, sizeof names / sizeof names[0],
			    (void **)&ze, "loader");
}

static struct wafer_native_buffer usm_pointer(const void *p, size_t size)
{
	return (struct wafer_native_buffer){
		.struct_size = sizeof(struct wafer_native_buffer),
		.kind = WAFER_NATIVE_LEVELZERO_POINTER,
		.address = (uint64_t)(uintptr_t)p,
		.size = size,
	};
}

static wafer_status fill_f32(void *device, void *queue, wafer_resource r,
			     size_t offset, uint64_t count, double value)
{
	struct wafer_binding b = binding(r, offset, count * 4);
	struct wafer_fill_params fp = {.count = count, .value = value};

	return do_launch(device, queue,
			 find_kernel(device, "fill", WAFER_DTYPE_F32), &b, 1,
			 &fp, sizeof fp, 0);
}

static int floats_equal(const void *bytes, size_t count, float want)
{
	for (size_t i = 0; i < count; i++) {
		float f;
		memcpy(&f, (const char *)bytes + 4 * i, 4);
		if (f != want)
			return 0;
	}
	return 1;
}

static void test_native_out(void *device, void *queue, const char *mode,
			    int ordinal, ze_context_handle_t *out_ctx,
			    ze_device_handle_t *out_dev)
{
	const size_t n = 4096;
	unsigned char *a = malloc(n), *got = calloc(1, n);
	wafer_resource r = alloc_or_die(device, n), range = 0;
	struct wafer_native_buffer nb = {.struct_size = sizeof nb};

	pattern(a, n, 17);
	st->copy_in(device, queue, r, 0, a, n);
	sv->sync(device, queue);
	status_is(st->native(device, r, 64, &nb), WAFER_OK,
		  "%s: native of an allocation, 64 bytes in", mode);
	ok(nb.kind == WAFER_NATIVE_LEVELZERO_POINTER && nb.address == r + 64 &&
		   nb.context && nb.device_ordinal == ordinal,
	   "%s:   ... a USM pointer, the resource + 64, the context, "
	   "device %d",
	   mode, ordinal);
	ok(fz->read((const void *)(uintptr_t)nb.address, got, n - 64) &&
		   memcmp(got, a + 64, n - 64) == 0,
	   "%s:   ... the driver reads copy_in's bytes there", mode);
	ze_memory_allocation_properties_t props = {
		.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
	*out_ctx = nb.context;
	*out_dev = NULL;
	ze.MemGetAllocProperties(nb.context,
				 (const void *)(uintptr_t)nb.address, &props,
				 out_dev);
	st->free(device, r);

	if (st->vm_reserve(device, 4 * PAGE, &range) != WAFER_OK ||
	    st->vm_map(device, range, PAGE, PAGE) != WAFER_OK) {
		ok(0, "%s: vm_reserve and vm_map: %s", mode, last_error);
		return;
	}
	status_is(st->native(device, range, PAGE + 64, &nb), WAFER_OK,
		  "%s: native of a mapped page of a vm range", mode);
	ok(nb.address == range + PAGE + 64, "%s:   ... a pointer into it",
	   mode);
	status_is(st->native(device, range, 2 * PAGE, &nb),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: native of an unmapped page is refused", mode);
	like(last_error, "not mapped", "%s:   ... saying so", mode);
	st->vm_release(device, range);
	free(a);
	free(got);
}

static void test_import(void *device, void *queue, void *other,
			const char *mode, ze_context_handle_t ctx,
			ze_device_handle_t dev)
{
	const size_t n = 8192;
	unsigned char *a = malloc(n), *got = calloc(1, n);
	ze_device_mem_alloc_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
	ze_host_mem_alloc_desc_t hdesc = {
		.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
	void *p = NULL, *h = NULL;
	wafer_resource r = 0;
	struct wafer_native_buffer nb;

	if (ze.MemAllocDevice(ctx, &desc, n, 64, dev, &p) != ZE_RESULT_SUCCESS) {
		ok(0, "%s: the test's zeMemAllocDevice", mode);
		return;
	}
	/* The test driver's device memory is host memory. */
	pattern(a, n, 23);
	memcpy(p, a, n);
	nb = usm_pointer(p, n);
	status_is(st->import(device, &nb, &r), WAFER_OK,
		  "%s: import of the test's zeMemAllocDevice pointer", mode);
	ok(r == (wafer_resource)(uintptr_t)p, "%s:   ... the resource is it",
	   mode);
	st->copy_out(device, queue, r, 0, got, n);
	sv->sync(device, queue);
	ok(memcmp(got, a, n) == 0, "%s:   ... copy_out reads its bytes",
	   mode);
	status_is(fill_f32(device, queue, r, 1024, 256, 0.75), WAFER_OK,
		  "%s:   ... a fill launched on it", mode);
	sv->sync(device, queue);
	fz->read((char *)p + 1024, got, 1024);
	ok(floats_equal(got, 256, 0.75f), "%s:   ... the driver reads the "
	   "fill's values", mode);
	st->forget(device, r);
	ok(ze.MemFree(ctx, p) == ZE_RESULT_SUCCESS,
	   "%s:   ... forget left it allocated: the test's zeMemFree "
	   "succeeds",
	   mode);

	ze.MemAllocHost(ctx, &hdesc, n, 64, &h);
	nb = usm_pointer(h, n);
	status_is(st->import(device, &nb, &r), WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: import of host USM is refused", mode);
	like(last_error, "is host memory", "%s:   ... naming it", mode);
	ok(r == 0, "%s:   ... and the resource is 0", mode);
	ze.MemFree(ctx, h);
	nb = usm_pointer(a, n);
	status_is(st->import(device, &nb, &r), WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: import of pageable memory is refused", mode);
	like(last_error, "is unknown memory", "%s:   ... naming it", mode);
	nb.kind = WAFER_NATIVE_CUDA_POINTER;
	status_is(st->import(device, &nb, &r), WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: import of another kind is refused", mode);
	like(last_error, "not levelzero-pointer", "%s:   ... naming the kind",
	     mode);
	if (other) {
		wafer_resource o = alloc_or_die(other, n);
		struct wafer_native_buffer on = {.struct_size = sizeof on};
		st->native(other, o, 0, &on);
		nb = usm_pointer((const void *)(uintptr_t)on.address, n);
		status_is(st->import(device, &nb, &r),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "%s: import of the other device's memory is refused",
			  mode);
		like(last_error, "is memory of device", "%s:   ... naming it",
		     mode);
		st->free(other, o);
	}
	free(a);
	free(got);
}

/* What the caller appends to the queue's list comes after wafer's work,
 * and wafer's next work after it: the driver runs commands between
 * barriers in reverse, so a missing barrier shows as stale bytes. */
static void test_queue_native(void *device, void *queue, const char *mode)
{
	const size_t n = 4096;
	unsigned char *got = calloc(1, n);
	struct wafer_native_queue nq = {.struct_size = sizeof nq};
	wafer_resource r = alloc_or_die(device, n), q = alloc_or_die(device, n);
	void *wq = NULL;

	fill_f32(device, queue, r, 0, n / 4, 5.0);
	status_is(sv->queue_native(device, queue, &nq), WAFER_OK,
		  "%s: queue_native", mode);
	ok(nq.kind == WAFER_NATIVE_LEVELZERO_POINTER && nq.queue &&
		   nq.context,
	   "%s:   ... a command list and the context", mode);
	ok(ze.AppendMemoryCopy(nq.queue, ptr_of(q, 0), ptr_of(r, 0), n, NULL,
			       0, NULL) == ZE_RESULT_SUCCESS,
	   "%s:   ... the test appends a copy to it", mode);
	fill_f32(device, queue, r, 0, n / 4, 6.0);
	st->copy_out(device, queue, q, 0, got, n);
	status_is(sv->sync(device, queue), WAFER_OK, "%s:   ... sync", mode);
	ok(floats_equal(got, n / 4, 5.0f),
	   "%s:   ... the test's copy ran after wafer's fill and before its "
	   "next one",
	   mode);
	fz->read(ptr_of(r, 0), got, n);
	ok(floats_equal(got, n / 4, 6.0f), "%s:   ... and that fill ran",
	   mode);
	status_is(sv->queue_wrap(device, nq.queue, &wq),
		  WAFER_ERROR_NOT_SUPPORTED, "%s: queue_wrap is not supported",
		  mode);
	like(last_error, "cannot adopt", "%s:   ... saying why", mode);
	ok(wq == NULL, "%s:   ... and no queue comes back", mode);
	st->free(device, r);
	st->free(device, q);
	free(got);
}

static void test_interop(void *state, void *device, void *queue,
			 const char *mode)
{
	ze_context_handle_t ctx = NULL;
	ze_device_handle_t dev = NULL;
	void *other = NULL;

	if (!resolve_ze())
		return;
	plugin->device_open(state, 0, &other);
	test_native_out(device, queue, mode, 1, &ctx, &dev);
	test_import(device, queue, other, mode, ctx, dev);
	test_queue_native(device, queue, mode);
	if (other)
		plugin->device_close(other);
}

static void run_mode(const char *mode, const struct wafer_plugin_option *opts,
		     size_t nopts, int immediate)
{
	void *state = NULL, *device = NULL, *queue = NULL;
	uint64_t immediate_lists, queues;

	diag("--- %s ---", mode);
	fz->clear();
	if (!status_is(init_with(opts, nopts, &state), WAFER_OK, "%s: init",
		       mode))
		return;
	if (!status_is(plugin->device_open(state, 1, &device), WAFER_OK,
		       "%s: open device 1", mode)) {
		plugin->shutdown(state);
		return;
	}
	immediate_lists = fz->calls("zeCommandListCreateImmediate");
	queues = fz->calls("zeCommandQueueCreate");
	status_is(sv->queue_create(device, &queue), WAFER_OK,
		  "%s: queue_create", mode);
	if (immediate)
		ok(fz->calls("zeCommandQueueCreate") == queues,
		   "%s: the queue is an immediate command list", mode);
	else
		ok(fz->calls("zeCommandQueueCreate") == queues + 1,
		   "%s: the queue is a command queue and a command list "
		   "(immediate lists tried: %llu)",
		   mode,
		   (unsigned long long)(fz->calls("zeCommandListCreateImmediate") -
					immediate_lists));

	test_storage(device, queue, mode);
	struct buffers bufs = buffers(device, 8192);
	test_fill_and_noop(device, queue);
	struct fakeze_launch l;
	ok(fz->launch_get(fz->launch_count() - 1, &l) &&
		   l.immediate == immediate,
	   "%s: launches went to an %s list", mode,
	   immediate ? "immediate" : "regular");
	test_elementwise(device, queue, &bufs);
	test_moves(device, queue, &bufs);
	test_cast(device, queue, &bufs);
	test_rows_and_matmul(device, queue, &bufs);
	status_is(sv->sync(device, queue), WAFER_OK, "%s: sync after the "
						       "catalogue", mode);
	free_buffers(device, &bufs);
	test_values(device, queue, mode);
	no_violations(mode);
	test_driver_errors(device, queue, immediate);
	test_timers(device, queue, mode);
	no_violations(mode);
	test_events(device, queue, mode, immediate);
	test_interop(state, device, queue, mode);
	no_violations(mode);

	sv->queue_destroy(device, queue);
	plugin->device_close(device);
	plugin->shutdown(state);
}

static void test_leaks(const char *when)
{
	struct fakeze_usage u;

	fz->usage(&u);
	ok(u.objects == 0 && u.device_bytes == 0 && u.host_bytes == 0 &&
		   u.physical_bytes == 0 && u.reserved_bytes == 0,
	   "%s: every Level Zero object and allocation was freed", when);
	if (u.objects || u.device_bytes || u.host_bytes)
		diag("%llu objects, %llu device bytes, %llu host bytes live",
		     (unsigned long long)u.objects,
		     (unsigned long long)u.device_bytes,
		     (unsigned long long)u.host_bytes);
}

/* Programs (program.c) through the vendor ABI: the driver's build log as
 * WAFER_ERROR_BUILD, an unknown kernel naming those there are. Run with
 * FAKEZE_BUILD_FAIL=flags: a module fails when given build flags. */
static void test_program_errors(void *device)
{
	char path[4096];
	const char *builddir = getenv("T_BUILDDIR");
	const struct wafer_kernel *k = NULL;
	void *program = NULL;
	long size = 0;
	FILE *f;

	snprintf(path, sizeof path, "%s/user_kernels/kernels.spv", builddir);
	f = fopen(path, "rb");
	unsigned char *spv = f && fseek(f, 0, SEEK_END) == 0 &&
					     (size = ftell(f)) > 0
				     ? malloc((size_t)size)
				     : NULL;
	if (!spv || fseek(f, 0, SEEK_SET) != 0 ||
	    fread(spv, 1, (size_t)size, f) != (size_t)size) {
		ok(0, "programs: read %s", path);
		free(spv);
		if (f)
			fclose(f);
		return;
	}
	fclose(f);
	struct wafer_program_source src = {
		.struct_size = sizeof src,
		.format = WAFER_PROGRAM_SPIRV,
		.data = spv,
		.size = (size_t)size,
		.name = "kernels.spv",
	};
	status_is(sv->program_load(device, &src, "-DTILE=8", &program),
		  WAFER_ERROR_BUILD, "programs: a module that does not build");
	if (!getenv("ZE_ENABLE_LOADER_INTERCEPT"))
		like(last_error, "kernels.spv (", "  ... naming it");
	if (!getenv("ZE_ENABLE_LOADER_INTERCEPT"))
		like(last_error, "error: the test driver was told to fail",
		     "  ... with the driver's build log");
	ok(program == NULL, "  ... and no program");
	status_is(sv->program_load(device, &src, NULL, &program), WAFER_OK,
		  "programs: without flags it builds");
	status_is(sv->program_kernel(device, program, "saxpy", 2, 16, &k),
		  WAFER_ERROR_NOT_FOUND, "programs: an unknown kernel");
	like(last_error, "it has: wafer_test_saxpy, wafer_test_tile2d",
	     "  ... naming the kernels there are");
	status_is(sv->program_kernel(device, program, "wafer_test_saxpy", 2,
				     16, &k),
		  WAFER_OK, "programs: wafer_test_saxpy");
	ok(k && k->dtype == WAFER_DTYPE_NONE && k->binding_count == 2,
	   "  ... an entry of dtype none, two bindings");
	sv->program_release(device, program);
	free(spv);
}

int main(void)
{
	const char *builddir = getenv("T_BUILDDIR");
	char plugin_path[4096], driver_path[4096];
	void *so, *driver, *state = NULL, *device = NULL, *queue = NULL;
	wafer_plugin_query_fn query;

	if (!builddir)
		skip_all("T_BUILDDIR is not set (run through make check)");
	snprintf(plugin_path, sizeof plugin_path,
		 "%s/../plugins/levelzero/.libs/levelzero.so", builddir);

	/* The driver reads these at zeInit. */
	setenv("FAKEZE_DEVICES", "2", 1);
	setenv("FAKEZE_VPU", "1", 1);
	setenv("FAKEZE_MEMORY", "67108864", 1);
	setenv("FAKEZE_MAX_GROUPS", "300", 1);
	unsetenv("FAKEZE_NO_IMMEDIATE");
	unsetenv("FAKEZE_NO_VM");
	unsetenv("FAKEZE_BUILD_FAIL");

	fz = fakeze_bind_or_end(builddir, driver_path, sizeof driver_path,
				&driver);
	query = host_open(plugin_path, &so);
	plugin_so = so;
	if (!query) {
		done_testing();
		return exit_status();
	}

	test_descriptor(query);
	test_options();

	status_is(init_with(NULL, 0, &state), WAFER_OK, "init");
	test_devices(state);
	uint64_t modules = fz->calls("zeModuleCreate");
	status_is(plugin->device_open(state, 0, &device), WAFER_OK,
		  "device_open");
	is_int((long long)(fz->calls("zeModuleCreate") - modules), 1,
	       "  ... builds the embedded SPIR-V module");
	is_str(fz->build_flags(), "-cl-fp32-correctly-rounded-divide-sqrt",
	       "  ... asking for correctly rounded division and sqrt");
	test_table(device);
	status_is(sv->queue_create(device, &queue), WAFER_OK, "queue_create");
	test_alloc_errors(device);
	test_vm(device, queue);
	test_bad_launches(device, queue);
	test_threads(device);
	sv->queue_destroy(device, queue);
	plugin->device_close(device);
	plugin->shutdown(state);
	test_leaks("after the first instance");

	/* The three ways a queue can be made. */
	struct wafer_plugin_option small = option("staging", "64K", "test");
	run_mode("immediate command lists", &small, 1, 1);
	struct wafer_plugin_option opts[2] = {
		option("staging", "64K", "test"),
		option("immediate", "no", "test")};
	run_mode("immediate = no", opts, 2, 0);
	setenv("FAKEZE_NO_IMMEDIATE", "1", 1);
	run_mode("a driver without immediate lists", &small, 1, 0);
	unsetenv("FAKEZE_NO_IMMEDIATE");
	test_leaks("after every mode");

	/* A driver without virtual memory: granularity 0, vm entries say
	 * "not supported". */
	setenv("FAKEZE_NO_VM", "1", 1);
	struct wafer_device_info info = {.struct_size = sizeof info};
	status_is(init_with(NULL, 0, &state), WAFER_OK, "init, no vm");
	plugin->device_info(state, 0, &info);
	is_int((long long)info.vm_granularity, 0,
	       "without virtual memory the granularity is 0");
	plugin->device_open(state, 0, &device);
	status_is(st->vm_reserve(device, PAGE, &(wafer_resource){0}),
		  WAFER_ERROR_NOT_SUPPORTED, "  ... and vm_reserve says so");
	plugin->device_close(device);
	plugin->shutdown(state);
	unsetenv("FAKEZE_NO_VM");

	/* A driver that refuses the build flag: built without, with a
	 * warning. */
	setenv("FAKEZE_BUILD_FAIL", "flags", 1);
	status_is(init_with(NULL, 0, &state), WAFER_OK, "init, no flags");
	log_count = 0;
	status_is(plugin->device_open(state, 0, &device), WAFER_OK,
		  "device_open when the driver refuses the build flag");
	is_str(fz->build_flags(), "", "  ... builds without flags");
	like(log_text, "f32 division and sqrt may be off",
	     "  ... and warns what that costs");
	test_program_errors(device);
	plugin->device_close(device);
	plugin->shutdown(state);

	/* A module the driver cannot build: device_open fails with the log. */
	setenv("FAKEZE_BUILD_FAIL", "1", 1);
	status_is(init_with(NULL, 0, &state), WAFER_OK, "init, build fails");
	status_is(plugin->device_open(state, 0, &device), WAFER_ERROR_DEVICE,
		  "device_open fails when the module does not build");
	if (getenv("ZE_ENABLE_LOADER_INTERCEPT"))
		like(last_error, "no build log: the Level Zero loader's "
				 "intercept layer",
		     "  ... and says why there is no build log (the "
		     "loader's intercept layer): %s",
		     last_error);
	else
		like(last_error,
		     "build log: error: the test driver was told to fail",
		     "  ... and shows the build log: %s", last_error);
	plugin->shutdown(state);
	unsetenv("FAKEZE_BUILD_FAIL");

	test_leaks("at the end");
	ok(dlclose(so) == 0, "dlclose the plugin");
	dlclose(driver);
	done_testing();
	return exit_status();
}
