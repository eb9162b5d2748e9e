/* wafer — SPDX-License-Identifier: MIT
 *
 * nvrtc.h: NVRTC, the CUDA runtime compiler, for programs in CUDA C
 * (program.c). Like cuBLAS it is loaded with dlopen the first time a
 * device is asked for its program formats, and stays loaded for the life
 * of the process; without it the device takes PTX and CUBIN only. */
#ifndef WAFER_PLUGINS_CUDA_NVRTC_H
#define WAFER_PLUGINS_CUDA_NVRTC_H

#include <stddef.h>

#include <wafer/plugin.h>

struct cuda_state;
struct cuda_nvrtc;

/* NVRTC for |state|, loading it on first use ([cuda] nvrtc names the
 * file, else libnvrtc.so.13, then .12, then libnvrtc.so, also under the
 * toolkit's lib64). NULL when it does not load or [cuda] nvrtc = no
 * (logged once). Thread-safe. */
const struct cuda_nvrtc *cuda_nvrtc_get(struct cuda_state *state);

/* "13.0": part of the cache key of what it compiles. */
const char *cuda_nvrtc_version(const struct cuda_nvrtc *nvrtc);

/* The target for a GPU of compute capability |arch| (x 10 + minor):
 * "sm_90" when NVRTC can make SASS for it (|*out_cubin| = 1), else
 * "compute_NN" of the newest architecture NVRTC knows (PTX, which the
 * driver compiles for the GPU; |*out_cubin| = 0). */
void cuda_nvrtc_target(const struct cuda_nvrtc *nvrtc, int arch, char *buf,
		       size_t size, int *out_cubin);

/* Compiles |source| (|size| bytes, not NUL-terminated) named |name| with
 * |options| (NULL, or options separated by white space, without quoting)
 * for |target|, unless the options name an architecture themselves
 * (-arch, --gpu-architecture). On success |*out_image| (malloc'd) is the
 * CUBIN, or when the target made none the PTX with its terminating NUL.
 * A program that does not compile is WAFER_ERROR_BUILD with NVRTC's log
 * as it gave it ("saxpy.cu(3): error: ..."); a refused option is
 * WAFER_ERROR_BUILD too (NVRTC says which). Errors go through set_error. */
wafer_status cuda_nvrtc_compile(const struct cuda_nvrtc *nvrtc,
				const struct wafer_host_services *host,
				const char *source, size_t size,
				const char *name, const char *options,
				const char *target, void **out_image,
				size_t *out_size);

#endif
