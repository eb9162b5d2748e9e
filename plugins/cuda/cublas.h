/* wafer — SPDX-License-Identifier: MIT
 *
 * cublas.h: cuBLAS as a matmul candidate (variant "cublas"). The library
 * is loaded with dlopen the first time a device opens — it is large, and
 * a machine without it simply offers no such variant — and stays loaded
 * for the life of the process. Each queue gets its own cuBLAS handle,
 * bound to the queue's stream, at its first cuBLAS launch. */
#ifndef WAFER_PLUGINS_CUDA_CUBLAS_H
#define WAFER_PLUGINS_CUDA_CUBLAS_H

#include <wafer/plugin.h>

#include <cuda.h>

struct cuda_state;
struct cuda_device;
struct cuda_queue;
struct cuda_cublas;

/* cuBLAS for |state|, loading it on first use ([cuda] cublas names the
 * file, else libcublas.so.13, then .12, also under the toolkit's lib64).
 * NULL when it does not load (logged once). Thread-safe. */
const struct cuda_cublas *cuda_cublas_get(struct cuda_state *state);

int cuda_cublas_has_dtype(const struct cuda_cublas *cublas, wafer_dtype dtype);

/* Issues C = op(A) x op(B) on |q|'s stream (parameters already checked
 * against the bindings). */
wafer_status cuda_cublas_matmul(struct cuda_device *device, struct cuda_queue *q,
				wafer_dtype dtype,
				const struct wafer_matmul_params *p,
				CUdeviceptr c, CUdeviceptr a, CUdeviceptr b);

/* Destroys |q|'s handle (queue_destroy). */
void cuda_cublas_queue_done(struct cuda_device *device, struct cuda_queue *q);

#endif
