/* wafer — SPDX-License-Identifier: MIT
 *
 * fakecuda.h: what t/standins/fakecuda.c (a stand-in libcuda for tests) counts,
 * for tests that dlopen it next to the cuda plugin and look inside. */
#ifndef WAFER_T_FAKECUDA_H
#define WAFER_T_FAKECUDA_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct fakecuda_stats {
	uint64_t context_sets;
	uint64_t modules_loaded;
	uint64_t launches;
	uint64_t allocs, frees, async_allocs, async_frees;
	uint64_t pinned_copies, pageable_copies, device_copies;
	uint64_t pinned_live, pinned_bytes;
	uint64_t registered_live; /* cuMemHostRegister'd ranges */
	uint64_t streams_live, events_live;
	uint64_t stream_syncs, event_syncs;
	uint64_t reserves, creates, maps, unmaps, set_access, handles_live;
	uint64_t pool_trims;
	uint64_t release_threshold;
	uint64_t device_bytes;
	int sticky; /* the context's sticky CUresult, 0 if none */
	/* Copies and kernels that read device memory nothing wrote (one a
	 * call and binding; each also a line on stderr). */
	uint64_t uninit_reads;
	/* cuMemcpyPeerAsync calls, cuCtxEnablePeerAccess grants,
	 * cuStreamWaitEvent calls, fakecuda_enqueue's work. */
	uint64_t peer_copies, peer_enables, stream_waits, host_ops;
	/* cuGraphLaunch calls. */
	uint64_t graph_launches;
};

typedef void (*fakecuda_stats_fn)(struct fakecuda_stats *out);

/* For stand-ins of libraries that run work on the driver's streams
 * (t/standins/fakenccl.c): fakecuda_enqueue(stream, run, arg, access, count)
 * queues |run|(|arg|) on the stream, in its order with copies and
 * kernels, on the stream's own thread. |access| lists the device ranges
 * it reads and writes: checked at the call (CUDA_ERROR_INVALID_VALUE
 * outside device memory; stream order as for copies), marked read or
 * written when it runs, as a kernel's bindings are; it is called even
 * after a fault, told so. Returns a CUresult
 * (the stream must be the current context's). */
struct fakecuda_access {
	uintptr_t ptr;
	size_t bytes;
	int write;
};
/* |ok| 0: the context faulted before it ran (sticky error): it must
 * touch no device memory, only let go of what it holds. */
typedef void (*fakecuda_host_fn)(void *arg, int ok);
typedef int (*fakecuda_enqueue_fn)(void *stream, fakecuda_host_fn run,
				   void *arg,
				   const struct fakecuda_access *access,
				   size_t count);
typedef void (*fakecuda_reset_fn)(void);

/* For tests that call the stand-in's entry points themselves, through
 * cuGetProcAddress_v2 (at version 12000), without <cuda.h>: the CUresult
 * values and device attributes they check, numbered as <cuda.h> numbers
 * them (t/standins/fakecuda.c asserts that they agree). */
typedef int (*fakecuda_getproc_fn)(const char *symbol, void **pfn,
				   int version, uint64_t flags, int *status);

/* Resolves |count| entry points |names| of the stand-in |fake| (a dlopen
 * handle) into |slots|, in order. NULL when all were found, else the
 * first name that was not ("cuGetProcAddress_v2" when that is missing). */
static inline const char *fakecuda_resolve(void *fake,
					   const char *const *names,
					   size_t count, void **slots)
{
	fakecuda_getproc_fn getproc =
		(fakecuda_getproc_fn)dlsym(fake, "cuGetProcAddress_v2");
	if (!getproc)
		return "cuGetProcAddress_v2";
	for (size_t i = 0; i < count; i++)
		if (getproc(names[i], &slots[i], 12000, 0, NULL) != 0)
			return names[i];
	return NULL;
}

enum {
	FAKECUDA_SUCCESS = 0,
	FAKECUDA_ERROR_INVALID_VALUE = 1,
	FAKECUDA_ERROR_INVALID_CONTEXT = 201,
	FAKECUDA_ERROR_INVALID_HANDLE = 400,
	FAKECUDA_ERROR_NOT_FOUND = 500,
	FAKECUDA_ERROR_ILLEGAL_ADDRESS = 700,
	FAKECUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
	FAKECUDA_ERROR_MISALIGNED_ADDRESS = 716,
};

enum {
	FAKECUDA_ATTR_MAX_BLOCK_DIM_X = 2,
	FAKECUDA_ATTR_MULTIPROCESSOR_COUNT = 16,
	FAKECUDA_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
	FAKECUDA_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
	FAKECUDA_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
	FAKECUDA_ATTR_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
	FAKECUDA_ATTR_MEMORY_POOLS_SUPPORTED = 115,
};

/* The stand-in's path in the tests' build tree |builddir| ($T_BUILDDIR). */
static inline void fakecuda_path(char *path, size_t size, const char *builddir)
{
	snprintf(path, size, "%s/standins/.libs/fakecuda.so", builddir);
}

#endif
