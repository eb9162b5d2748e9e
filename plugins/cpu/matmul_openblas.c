/* wafer — SPDX-License-Identifier: MIT
 *
 * matmul_openblas.c: the f32 and f64 matmul variant "openblas" —
 * OpenBLAS's cblas_sgemm and cblas_dgemm, once per matrix of the batch,
 * with OpenBLAS's own threads.
 * Built when configure finds OpenBLAS (pkg-config openblas; Debian
 * libopenblas-dev); without it this file adds no variant and the plugin
 * works the same. Vendor BLAS is a candidate like any other: autotune
 * measures it beside the plugin's own kernels and picks it where it is
 * faster (large matrices, usually), and not where its call overhead
 * dominates. */
#include "build-config.h"

#include "plugins/cpu/kernels.h"

#ifdef HAVE_OPENBLAS

#include <stdio.h>

#include <cblas.h>

#ifdef __SANITIZE_THREAD__
#include <pthread.h>

/* OpenBLAS's worker threads synchronise by spinning on plain memory,
 * which ThreadSanitizer cannot see, so every product they share with the
 * caller would be reported as a race. In a ThreadSanitizer build OpenBLAS
 * runs on the calling thread alone. */
static pthread_once_t single_thread_once = PTHREAD_ONCE_INIT;

static void single_thread(void)
{
	openblas_set_num_threads(1);
}
#define SINGLE_THREAD() pthread_once(&single_thread_once, single_thread)
#else
#define SINGLE_THREAD() ((void)0)
#endif

/* Row-major: A is m x k (lda k), or k x m stored (lda m) when
 * transposed; B likewise. check_blas made sure that m, n and k fit the
 * int CBLAS takes. One of sgemm and dgemm, with its scalar type. */
#define GEMM(name_, T, blas_)                                                  \
	static wafer_status run_##name_(const struct cpu_kernel_args *args)    \
	{                                                                      \
		SINGLE_THREAD();                                               \
		struct wafer_matmul_params p =                                 \
			CPU_PARAMS(struct wafer_matmul_params, args->params);  \
		T *c = args->data[0];                                          \
		const T *a = args->data[1];                                    \
		const T *b = args->data[2];                                    \
		const int m = (int)p.m, n = (int)p.n, k = (int)p.k;            \
		for (uint64_t t = 0; t < p.batch; t++)                         \
			blas_(CblasRowMajor,                                   \
			      p.transpose_a ? CblasTrans : CblasNoTrans,       \
			      p.transpose_b ? CblasTrans : CblasNoTrans, m, n, \
			      k, 1, a + t * p.batch_stride_a,                  \
			      p.transpose_a ? m : k, b + t * p.batch_stride_b, \
			      p.transpose_b ? k : n, 0,                        \
			      c + t * p.batch_stride_c, n);                    \
		return WAFER_OK;                                               \
	}                                                                      \
	static wafer_status check_##name_(const struct cpu_kernel_args *args)  \
	{                                                                      \
		return check_blas(args, sizeof(T));                            \
	}                                                                      \
	CPU_CHECKED_IMPL(name_##_impl, check_##name_, run_##name_);

/* The matmul checks, and dimensions CBLAS's int can hold. */
static wafer_status check_blas(const struct cpu_kernel_args *args,
			       size_t element_size)
{
	struct wafer_matmul_params p =
		CPU_PARAMS(struct wafer_matmul_params, args->params);

	if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX)
		return wafer_plugin_reach_fail(&args->reach,
					       WAFER_ERROR_INVALID_ARGUMENT,
					       "openblas: m, n and k must fit "
					       "an int");
	return wafer_plugin_check_matmul(&args->reach, &p, element_size, NULL);
}

GEMM(sgemm, float, cblas_sgemm)
GEMM(dgemm, double, cblas_dgemm)

static const struct wafer_kernel entries[] = {
	CPU_KERNEL(WAFER_KERNEL_MATMUL, "openblas", WAFER_DTYPE_F32, 3,
		   struct wafer_matmul_params, sgemm_impl),
	/* float64: autotune weighs it against kernels_typed.c's loop. */
	CPU_KERNEL(WAFER_KERNEL_MATMUL, "openblas", WAFER_DTYPE_F64, 3,
		   struct wafer_matmul_params, dgemm_impl),
};

CPU_KERNEL_SET_DEFINE(matmul_openblas, entries);

#else /* !HAVE_OPENBLAS */

const struct cpu_kernel_set cpu_kernel_set_matmul_openblas = {
	.entries = NULL,
	.count = 0,
};

#endif
