/* wafer — SPDX-License-Identifier: MIT
 *
 * fakeze.h: what the Level Zero test driver (t/standins/levelzero/driver.c) shows
 * the tests. The driver is a shared object the real oneAPI loader loads
 * when ZE_ENABLE_ALT_DRIVERS names it; it implements, on host memory, the
 * driver entry points the levelzero plugin calls. A test dlopens the same
 * file and looks these functions up with dlsym (fakeze_bind below does
 * it), so it reads what the plugin did through the loader:
 *
 *  - every kernel launch, recorded (kernel name, group size and counts,
 *    argument bytes) and executed, by an emulation of the kernel on host
 *    memory (emulate.h); copies are executed. Nothing submitted runs
 *    before the host synchronises with it (a queue synchronise, or a
 *    wait or query on an event it signals), and commands with no barrier
 *    between them run in reverse order (FAKEZE_ORDER), so a missing
 *    barrier or a read before the sync shows as a stale value. What
 *    follows a barrier or an event wait on a list runs once the events
 *    it waits on are signalled (by the work that signals them, run then,
 *    or by the host), so a list reading another's result without an
 *    event wait shows a stale value too;
 *  - how often each ze entry point was called;
 *  - violations: every call a real driver would refuse or that is
 *    undefined behaviour in the Level Zero specification (a kernel name
 *    not in the module, an argument of the wrong size, an argument left
 *    unset, a copy from pageable or unknown memory, overlapping copies,
 *    a group size against the kernel's required one, freeing what was not
 *    allocated, waiting for an event nothing will signal, two copies with
 *    no barrier between them touching the same bytes, freeing memory or
 *    resetting a list that submitted work still uses, a kernel reaching
 *    past its buffer, ...);
 *  - live objects and bytes, for leak checks.
 * And it lets a test inject a failure into a chosen entry point.
 *
 * The driver reads its configuration at zeInit from the environment:
 *   FAKEZE_DEVICES=N        GPUs (default 1)
 *   FAKEZE_VPU=1            also list one VPU (the plugin must skip it)
 *   FAKEZE_MEMORY=BYTES     device memory per GPU (default 256 MiB)
 *   FAKEZE_PAGE=BYTES       virtual-memory page size (default 64 KiB)
 *   FAKEZE_NO_VM=1          no virtual memory (QueryPageSize unsupported)
 *   FAKEZE_NO_IMMEDIATE=1   zeCommandListCreateImmediate unsupported
 *   FAKEZE_MAX_GROUPS=N     maxGroupCount in x, y, z (default 65535)
 *   FAKEZE_BUILD_FAIL=1     zeModuleCreate fails with a build log
 *   FAKEZE_BUILD_FAIL=flags zeModuleCreate fails when given build flags
 *   FAKEZE_INTEGRATED=1     the GPUs say they are integrated
 *   FAKEZE_ORDER=reverse    order of the commands between two barriers:
 *                           reverse (default), forward, or shuffle
 *   FAKEZE_SEED=N           the shuffle's seed (default 1)
 *   FAKEZE_VIOLATIONS=FILE  also append every violation to FILE
 *   FAKEZE_HANG_SECONDS=N   how long a host wait on work that waits for
 *                           an event only the host signals waits for
 *                           another thread to signal it before it gives
 *                           up with a violation (default 20)
 * An injected failure (fail below) of zeCommandQueueSynchronize or
 * zeEventHostSynchronize drops the work the call waited for, unrun, as
 * a lost device would.
 *
 * Device clock: launches and copies take FAKEZE_TICKS ticks each,
 * barriers none; the clock runs at FAKEZE_HZ and its kernel timestamps
 * are FAKEZE_TIMESTAMP_BITS wide and start just before they wrap, so a
 * timer around N launches measures N * FAKEZE_TICKS ticks exactly. */
#ifndef WAFER_T_LEVELZERO_FAKEZE_H
#define WAFER_T_LEVELZERO_FAKEZE_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FAKEZE_MAX_ARGS 16
#define FAKEZE_ARG_BYTES 256
#define FAKEZE_TICKS 1000
#define FAKEZE_HZ 10000000u
#define FAKEZE_TIMESTAMP_BITS 32

struct fakeze_arg {
	uint32_t size;
	unsigned char bytes[FAKEZE_ARG_BYTES];
};

struct fakeze_launch {
	char kernel[64];
	uint32_t group_size[3];
	uint32_t group_count[3];
	uint32_t arg_count;
	struct fakeze_arg args[FAKEZE_MAX_ARGS];
	/* Appended to an immediate command list (else a regular one). */
	int immediate;
};

struct fakeze_usage {
	uint64_t objects;        /* contexts, queues, lists, events, ... */
	uint64_t device_bytes;   /* zeMemAllocDevice, live */
	uint64_t host_bytes;     /* zeMemAllocHost, live */
	uint64_t physical_bytes; /* zePhysicalMemCreate, live */
	uint64_t reserved_bytes; /* zeVirtualMemReserve, live */
	uint64_t mapped_bytes;   /* zeVirtualMemMap, live */
};

/* The functions the driver exports for tests. */
struct fakeze_api {
	size_t (*launch_count)(void);
	int (*launch_get)(size_t i, struct fakeze_launch *out);
	uint64_t (*calls)(const char *entry_point);
	size_t (*violation_count)(void);
	const char *(*violation)(size_t i);
	/* Forgets launches, call counts and violations. */
	void (*clear)(void);
	/* The next call of |entry_point| after |after| more successful
	 * ones returns |result| (a ze_result_t) and does nothing. */
	void (*fail)(const char *entry_point, uint64_t after, int result);
	void (*usage)(struct fakeze_usage *out);
	/* Reads |size| bytes of device memory at |ptr| (it is host memory):
	 * what is there now, so stale until the host synchronised. */
	int (*read)(const void *ptr, void *dst, size_t size);
	/* Sets the device clock (in ticks, before masking to the timestamp
	 * width), so a test can put a timestamp wrap where it wants one. */
	void (*set_clock)(uint64_t ticks);
	/* pBuildFlags of the last module that built. */
	const char *(*build_flags)(void);
};

/* For a test: the driver built in |builddir| (T_BUILDDIR), its path in
 * |path|, made the loader's (ZE_ENABLE_ALT_DRIVERS) and opened here too —
 * the same file, so one instance, whose record the test reads (the
 * handle, for dlclose, in |*out_driver|). Its API, or NULL (dlerror()
 * says why). The FAKEZE_ variables are read at zeInit, so a test may set
 * them before or after. */
static inline const struct fakeze_api *fakeze_bind(const char *builddir,
						   char *path, size_t size,
						   void **out_driver)
{
	const struct fakeze_api *(*get_api)(void) = NULL;
	void *driver;

	snprintf(path, size, "%s/levelzero/.libs/fakeze.so", builddir);
	setenv("ZE_ENABLE_ALT_DRIVERS", path, 1);
	driver = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (driver)
		get_api = (const struct fakeze_api *(*)(void))(uintptr_t)dlsym(
			driver, "fakeze_get_api");
	*out_driver = driver;
	return get_api ? get_api() : NULL;
}

#ifdef WAFER_T_TAP_H
/* For a test's main, after tap.h: fakeze_bind as one test point, ending
 * the test there when the driver cannot be bound. */
static inline const struct fakeze_api *
fakeze_bind_or_end(const char *builddir, char *path, size_t size,
		   void **out_driver)
{
	const struct fakeze_api *api =
		fakeze_bind(builddir, path, size, out_driver);

	if (!ok(api != NULL, "the test driver %s", path)) {
		diag("%s", dlerror());
		done_testing();
		exit(exit_status());
	}
	return api;
}
#endif

#endif
