/* wafer — SPDX-License-Identifier: MIT
 *
 * cublas.c: cuBLAS through dlopen (cublas.h). The prototypes come from the
 * toolkit's <cublas_v2.h>; nothing links against the library.
 *
 * wafer's matrices are row-major and cuBLAS's column-major. A row-major
 * m x n matrix read column-major is its n x m transpose, so
 * C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T: cuBLAS gets B
 * first, then A, with m and n swapped and each transpose flag as it is. */
#include "build-config.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>

#include "plugins/cuda/cublas.h"
#include "plugins/cuda/cuda_plugin.h"

#define CUBLAS_FUNCTIONS(X)                                                    \
	X(cublasCreate)                                                        \
	X(cublasDestroy)                                                       \
	X(cublasSetStream)                                                     \
	X(cublasGemmStridedBatchedEx)

#define CUBLAS_MEMBER(name) __typeof__(name) *name;

struct cuda_cublas {
	struct cuda_library library;
	CUBLAS_FUNCTIONS(CUBLAS_MEMBER)
};

/*===----------------------------------------------------------------------===
 * Loading
 *===----------------------------------------------------------------------===*/

/* Symbol names as the library exports them: cublas_v2.h maps cublasCreate
 * to cublasCreate_v2, and the stringified macro argument would not. */
#define CUBLAS_SYMBOL(name) CUBLAS_SYMBOL_(name)
#define CUBLAS_SYMBOL_(name) #name

#define CUBLAS_SYMBOL_OF(name)                                                 \
	CUDA_SYMBOL(struct cuda_cublas, name, CUBLAS_SYMBOL(name))

static const struct cuda_symbol symbols[] = {
	CUBLAS_FUNCTIONS(CUBLAS_SYMBOL_OF)
};

const struct cuda_cublas *cuda_cublas_get(struct cuda_state *state)
{
	static const char *const names[] = {
		"libcublas.so.13",
		"libcublas.so.12",
		WAFER_CUDA_LIBDIR "/libcublas.so.13",
		WAFER_CUDA_LIBDIR "/libcublas.so.12",
	};
	static const struct cuda_library_kind kind = {
		.what = "cuBLAS",
		CUDA_LIBRARY_FILES(names, symbols, struct cuda_cublas),
		.offers = "matmul variant \"cublas\"",
		.searched = "libcublas.so.13, .12",
		.without = "no matmul variant \"cublas\"",
	};

	return cuda_library_get(state->host, &state->cublas, &kind,
				state->options.cublas_library);
}

int cuda_cublas_has_dtype(const struct cuda_cublas *cublas, wafer_dtype dtype)
{
	return cublas && (dtype == WAFER_DTYPE_F32 || dtype == WAFER_DTYPE_F16 ||
			  dtype == WAFER_DTYPE_BF16 || dtype == WAFER_DTYPE_F64);
}

void cuda_cublas_queue_done(struct cuda_device *device, struct cuda_queue *q)
{
	if (q->blas && device->cublas)
		device->cublas->cublasDestroy(q->blas);
	q->blas = NULL;
}

/*===----------------------------------------------------------------------===
 * The launch
 *===----------------------------------------------------------------------===*/

static wafer_status blas_fail(struct cuda_device *dev, const char *what,
			      cublasStatus_t status)
{
	dev->host->set_error("cuda: %s: cublasStatus_t %d", what,
			     (int)status);
	return status == CUBLAS_STATUS_ALLOC_FAILED ? WAFER_ERROR_OUT_OF_MEMORY
						    : WAFER_ERROR_DEVICE;
}

/* The queue's handle, made on first use and bound to its stream. */
static wafer_status handle_of(struct cuda_device *dev, struct cuda_queue *q,
			      cublasHandle_t *out)
{
	const struct cuda_cublas *c = dev->cublas;
	cublasHandle_t h;
	cublasStatus_t status;

	if (q->blas) {
		*out = q->blas;
		return WAFER_OK;
	}
	status = c->cublasCreate(&h);
	if (status != CUBLAS_STATUS_SUCCESS)
		return blas_fail(dev, "cublasCreate", status);
	status = c->cublasSetStream(h, (cudaStream_t)q->stream);
	if (status != CUBLAS_STATUS_SUCCESS) {
		c->cublasDestroy(h);
		return blas_fail(dev, "cublasSetStream", status);
	}
	q->blas = h;
	*out = h;
	return WAFER_OK;
}

static int fits_int(uint64_t v)
{
	return v <= INT_MAX;
}

wafer_status cuda_cublas_matmul(struct cuda_device *device, struct cuda_queue *q,
				wafer_dtype dtype,
				const struct wafer_matmul_params *p,
				CUdeviceptr c, CUdeviceptr a, CUdeviceptr b)
{
	const struct cuda_cublas *cb = device->cublas;
	uint64_t lda = p->transpose_a ? p->m : p->k;
	uint64_t ldb = p->transpose_b ? p->k : p->n;
	cudaDataType type = dtype == WAFER_DTYPE_F16    ? CUDA_R_16F
			    : dtype == WAFER_DTYPE_BF16 ? CUDA_R_16BF
			    : dtype == WAFER_DTYPE_F64  ? CUDA_R_64F
							: CUDA_R_32F;
	/* float64 is dgemm: double scalars, computed in double. */
	const int f64 = dtype == WAFER_DTYPE_F64;
	const float alpha = 1.0f, beta = 0.0f;
	const double alpha_d = 1.0, beta_d = 0.0;
	cublasHandle_t h;
	cublasStatus_t status;
	wafer_status st;

	if (!cb) {
		device->host->set_error("cuda: matmul (cublas): cuBLAS is not "
					"loaded");
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	if (!fits_int(p->m) || !fits_int(p->n) || !fits_int(p->k) ||
	    !fits_int(lda) || !fits_int(ldb) || !fits_int(p->batch) ||
	    p->batch_stride_a > LLONG_MAX || p->batch_stride_b > LLONG_MAX ||
	    p->batch_stride_c > LLONG_MAX) {
		device->host->set_error("cuda: matmul (cublas): sizes past "
					"INT_MAX are not handed to cuBLAS");
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	st = handle_of(device, q, &h);
	if (st != WAFER_OK)
		return st;
	status = cb->cublasGemmStridedBatchedEx(
		h, p->transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
		p->transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)p->n, (int)p->m,
		(int)p->k, f64 ? (const void *)&alpha_d : (const void *)&alpha,
		(const void *)(uintptr_t)b, type, (int)ldb,
		(long long)p->batch_stride_b, (const void *)(uintptr_t)a, type,
		(int)lda, (long long)p->batch_stride_a,
		f64 ? (const void *)&beta_d : (const void *)&beta,
		(void *)(uintptr_t)c, type, (int)p->n,
		(long long)p->batch_stride_c, (int)p->batch,
		f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F,
		CUBLAS_GEMM_DEFAULT);
	if (status != CUBLAS_STATUS_SUCCESS)
		return blas_fail(device, "cublasGemmStridedBatchedEx", status);
	return WAFER_OK;
}

