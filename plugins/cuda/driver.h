/* wafer — SPDX-License-Identifier: MIT
 *
 * driver.h: the CUDA driver API as the cuda plugin reaches it — a table of
 * function pointers filled at run time. The plugin never links libcuda:
 * cuda_driver_load() dlopens libcuda.so.1, checks the driver's API
 * version, and resolves every entry below through cuGetProcAddress at one
 * pinned API version, CUDA_DRIVER_API_VERSION. Pinning the version makes
 * the driver hand out the entry points with the signatures that version
 * had, whatever newer driver is installed; the pointer types come from the
 * toolkit's <cuda.h>, whose macros (cuMemAlloc -> cuMemAlloc_v2) name the
 * same versions, so a mismatch fails to compile rather than at run time.
 *
 * On a machine without the driver, loading fails with a one-line reason
 * ("libcuda.so.1 not found: ...", "driver too old: ...", "cuInit: ...");
 * the plugin still initialises and reports that reason as why it has no
 * devices. */
#ifndef WAFER_PLUGINS_CUDA_DRIVER_H
#define WAFER_PLUGINS_CUDA_DRIVER_H

#include <stddef.h>

#include <cuda.h>

/* The driver API version every entry point is resolved at (CUDA 12.0):
 * the oldest driver the plugin accepts. */
#define CUDA_DRIVER_API_VERSION 12000

/* Every driver entry the plugin calls. X(name) is the name as <cuda.h>
 * spells it; its macros may map it to a versioned symbol (_v2), and both
 * the struct member and every call site go through the same macro. */
#define CUDA_DRIVER_FUNCTIONS(X)                                               \
	X(cuGetErrorName)                                                      \
	X(cuGetErrorString)                                                    \
	X(cuInit)                                                              \
	X(cuDeviceGetCount)                                                    \
	X(cuDeviceGet)                                                         \
	X(cuDeviceGetName)                                                     \
	X(cuDeviceTotalMem)                                                    \
	X(cuDeviceGetAttribute)                                                \
	X(cuDevicePrimaryCtxRetain)                                            \
	X(cuCtxGetCurrent)                                                     \
	X(cuCtxSetCurrent)                                                     \
	X(cuModuleLoadData)                                                    \
	X(cuModuleLoadDataEx)                                                  \
	X(cuModuleUnload)                                                      \
	X(cuModuleGetFunction)                                                 \
	X(cuFuncSetAttribute)                                                  \
	X(cuStreamCreate)                                                      \
	X(cuStreamDestroy)                                                     \
	X(cuStreamSynchronize)                                                 \
	X(cuLaunchKernel)                                                      \
	X(cuEventCreate)                                                       \
	X(cuEventDestroy)                                                      \
	X(cuEventRecord)                                                       \
	X(cuEventQuery)                                                        \
	X(cuEventSynchronize)                                                  \
	X(cuEventElapsedTime)                                                  \
	X(cuMemGetInfo)                                                        \
	X(cuMemAlloc)                                                          \
	X(cuMemFree)                                                           \
	X(cuMemAllocAsync)                                                     \
	X(cuMemFreeAsync)                                                      \
	X(cuDeviceGetDefaultMemPool)                                           \
	X(cuMemPoolSetAttribute)                                               \
	X(cuMemPoolGetAttribute)                                               \
	X(cuMemPoolTrimTo)                                                     \
	X(cuMemcpyHtoDAsync)                                                   \
	X(cuMemcpyDtoHAsync)                                                   \
	X(cuMemcpyDtoDAsync)                                                   \
	X(cuMemHostAlloc)                                                      \
	X(cuMemFreeHost)                                                       \
	X(cuMemHostRegister)                                                   \
	X(cuMemHostUnregister)                                                 \
	X(cuMemGetAllocationGranularity)                                       \
	X(cuMemAddressReserve)                                                 \
	X(cuMemAddressFree)                                                    \
	X(cuMemCreate)                                                         \
	X(cuMemRelease)                                                        \
	X(cuMemMap)                                                            \
	X(cuMemUnmap)                                                          \
	X(cuMemSetAccess)                                                      \
	X(cuPointerGetAttribute)                                               \
	X(cuStreamGetCtx)                                                      \
	X(cuStreamWaitEvent)                                                   \
	X(cuLaunchHostFunc)                                                    \
	X(cuMemcpyPeerAsync)                                                   \
	X(cuDeviceCanAccessPeer)                                               \
	X(cuCtxEnablePeerAccess)                                                \
	X(cuStreamBeginCapture)                                                \
	X(cuStreamEndCapture)                                                  \
	X(cuGraphInstantiateWithFlags)                                         \
	X(cuGraphLaunch)                                                       \
	X(cuGraphExecDestroy)                                                  \
	X(cuGraphDestroy)

#define CUDA_DRIVER_MEMBER(name) __typeof__(name) *name;

struct cuda_driver {
	/* dlopen handle of libcuda; NULL when loading failed. */
	void *library;
	/* cuDriverGetVersion of the loaded driver (13000 for CUDA 13.0). */
	int version;
	CUDA_DRIVER_FUNCTIONS(CUDA_DRIVER_MEMBER)
};

/* Loads |library| (NULL: "libcuda.so.1"), checks its version, resolves
 * every entry and calls cuInit(0). Returns 0, or -1 with the reason in
 * |why| (one line, no trailing period) and everything unloaded. libcuda
 * stays mapped after cuda_driver_unload (RTLD_NODELETE): the driver's
 * state lives for the process, so the next plugin instance finds the
 * driver initialised and pays nothing. */
int cuda_driver_load(struct cuda_driver *driver, const char *library,
		     char *why, size_t why_size);
void cuda_driver_unload(struct cuda_driver *driver);

/* "CUDA_ERROR_OUT_OF_MEMORY: out of memory", or "CUresult 2" when the
 * driver cannot name it. The string is static or lives in |buf|. */
const char *cuda_result_text(const struct cuda_driver *driver, CUresult result,
			     char *buf, size_t size);

#endif
