/* wafer — SPDX-License-Identifier: MIT
 *
 * matmul_rows.c: the f32 matmul variant "rows" — no packing, one output
 * row at a time:
 *
 *   B not transposed:  C[i, :] = sum_p A[i, p] B[p, :]  (four rows of B
 *                      at a time, so each pass over C's row does four
 *                      multiply-adds per element)
 *   B transposed:      C[i, j] = dot(A[i, :], B^T[j, :]), both rows
 *                      contiguous
 *
 * It does little per element compared with the blocked variants
 * (matmul_blocked.c) but starts at once: for small matrices and for thin
 * ones (a single row, matrix times vector) the packing the blocked
 * variants do costs more than it saves. Rows of every matrix in the batch
 * are spread over the threads.
 *
 * The two inner loops are written with GCC vector types and compiled for
 * AVX-512, AVX2+FMA and the baseline; the widest one the CPU runs is
 * chosen at the first call. */
#include "build-config.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/kernels.h"
#include "plugins/cpu/threadpool.h"

/* Multiply-adds worth a range of their own (see gemm.c). */
#define MIN_RANGE_WORK (UINT64_C(1) << 20)

struct rows_loops {
	/* y[0..n) += a[0] x0 + a[1] x1 + a[2] x2 + a[3] x3 */
	void (*axpy4)(size_t n, const float *a, const float *x0,
		      const float *x1, const float *x2, const float *x3,
		      float *y);
	/* sum_p x[p] y[p] */
	float (*dot)(size_t k, const float *x, const float *y);
};

#define ROWS_LOOPS(SUFFIX, VT, W, ATTR)                                        \
	ATTR static void axpy4_##SUFFIX(size_t n, const float *a,              \
					const float *x0, const float *x1,      \
					const float *x2, const float *x3,      \
					float *y)                              \
	{                                                                      \
		size_t j = 0;                                                  \
		for (; j + W <= n; j += W) {                                   \
			VT v, t0, t1, t2, t3;                                  \
			memcpy(&v, y + j, sizeof v);                           \
			memcpy(&t0, x0 + j, sizeof t0);                        \
			memcpy(&t1, x1 + j, sizeof t1);                        \
			memcpy(&t2, x2 + j, sizeof t2);                        \
			memcpy(&t3, x3 + j, sizeof t3);                        \
			v += a[0] * t0 + a[1] * t1 + a[2] * t2 + a[3] * t3;    \
			memcpy(y + j, &v, sizeof v);                           \
		}                                                              \
		for (; j < n; j++)                                             \
			y[j] += a[0] * x0[j] + a[1] * x1[j] + a[2] * x2[j] +   \
				a[3] * x3[j];                                  \
	}                                                                      \
	ATTR static float dot_##SUFFIX(size_t k, const float *x,               \
				       const float *y)                         \
	{                                                                      \
		VT s0 = {0}, s1 = {0};                                         \
		size_t p = 0;                                                  \
		for (; p + 2 * W <= k; p += 2 * W) {                           \
			VT a0, a1, b0, b1;                                     \
			memcpy(&a0, x + p, sizeof a0);                         \
			memcpy(&a1, x + p + W, sizeof a1);                     \
			memcpy(&b0, y + p, sizeof b0);                         \
			memcpy(&b1, y + p + W, sizeof b1);                     \
			s0 += a0 * b0;                                         \
			s1 += a1 * b1;                                         \
		}                                                              \
		s0 += s1;                                                      \
		float sum = 0.0f;                                              \
		for (int i = 0; i < W; i++)                                    \
			sum += s0[i];                                          \
		for (; p < k; p++)                                             \
			sum += x[p] * y[p];                                    \
		return sum;                                                    \
	}

typedef float rows_v4sf __attribute__((vector_size(16)));
ROWS_LOOPS(sse2, rows_v4sf, 4, )
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define ROWS_X86 1
typedef float rows_v8sf __attribute__((vector_size(32)));
typedef float rows_v16sf __attribute__((vector_size(64)));
ROWS_LOOPS(avx2, rows_v8sf, 8, __attribute__((target("avx2,fma"))))
ROWS_LOOPS(avx512, rows_v16sf, 16, __attribute__((target("avx512f,fma"))))
#endif

static const struct rows_loops *rows_loops(void)
{
#ifdef ROWS_X86
	static const struct rows_loops avx512 = {axpy4_avx512, dot_avx512};
	static const struct rows_loops avx2 = {axpy4_avx2, dot_avx2};
	if (__builtin_cpu_supports("avx512f"))
		return &avx512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return &avx2;
#endif
	static const struct rows_loops sse2 = {axpy4_sse2, dot_sse2};
	return &sse2;
}

struct rows_job {
	struct wafer_matmul_params p;
	const struct rows_loops *loops;
	float *c;
	const float *a;
	const float *b;
	int failed;
};

/* C[i, :] of matrix t, with B not transposed. */
static void row_axpy(const struct rows_job *job, const float *a, size_t a_cs,
		     const float *b, float *c)
{
	const size_t n = (size_t)job->p.n, k = (size_t)job->p.k;
	size_t p = 0;

	memset(c, 0, n * sizeof *c);
	for (; p + 4 <= k; p += 4) {
		const float coef[4] = {a[p * a_cs], a[(p + 1) * a_cs],
				       a[(p + 2) * a_cs], a[(p + 3) * a_cs]};
		job->loops->axpy4(n, coef, b + p * n, b + (p + 1) * n,
				  b + (p + 2) * n, b + (p + 3) * n, c);
	}
	for (; p < k; p++) {
		const float coef[4] = {a[p * a_cs], 0, 0, 0};
		const float *x = b + p * n;
		job->loops->axpy4(n, coef, x, x, x, x, c);
	}
}

/* C[i, :] of matrix t, with B transposed: one dot product per element. A
 * row that is not contiguous (A transposed) is gathered into |tmp|. */
static void row_dots(const struct rows_job *job, const float *a, size_t a_cs,
		     const float *b, float *c, float *tmp)
{
	const size_t n = (size_t)job->p.n, k = (size_t)job->p.k;

	if (a_cs != 1) {
		for (size_t p = 0; p < k; p++)
			tmp[p] = a[p * a_cs];
		a = tmp;
	}
	for (size_t j = 0; j < n; j++)
		c[j] = job->loops->dot(k, a, b + j * k);
}

/* Items are rows of the whole batch: item r is row r % m of matrix
 * r / m. */
static void rows_range(void *ctx, size_t begin, size_t end)
{
	struct rows_job *job = ctx;
	const struct wafer_matmul_params *p = &job->p;
	const size_t m = (size_t)p->m, k = (size_t)p->k;
	/* Where A's row i starts, and the step along it. */
	const size_t a_rs = p->transpose_a ? 1 : k;
	const size_t a_cs = p->transpose_a ? m : 1;
	float *tmp = NULL;

	if (p->transpose_b && p->transpose_a) {
		tmp = malloc(k * sizeof *tmp);
		if (!tmp) {
			__atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);
			return;
		}
	}
	for (size_t r = begin; r < end; r++) {
		size_t t = r / m, i = r % m;
		const float *a = job->a + t * p->batch_stride_a + i * a_rs;
		const float *b = job->b + t * p->batch_stride_b;
		float *c = job->c + t * p->batch_stride_c + i * p->n;
		if (p->transpose_b)
			row_dots(job, a, a_cs, b, c, tmp);
		else
			row_axpy(job, a, a_cs, b, c);
	}
	free(tmp);
}

static wafer_status run_rows(const struct cpu_kernel_args *args)
{
	struct rows_job job = {
		.p = CPU_PARAMS(struct wafer_matmul_params, args->params),
		.loops = rows_loops(),
		.c = args->data[0],
		.a = args->data[1],
		.b = args->data[2],
	};
	uint64_t row_work;
	size_t grain = 1;

	if (!__builtin_mul_overflow(job.p.n, job.p.k, &row_work) &&
	    row_work < MIN_RANGE_WORK)
		grain = (size_t)(MIN_RANGE_WORK / (row_work ? row_work : 1));
	cpu_pool_parallel_for(args->pool, (size_t)(job.p.batch * job.p.m),
			      grain, rows_range, &job);
	return job.failed ? WAFER_ERROR_OUT_OF_MEMORY : WAFER_OK;
}

CPU_CHECKED_IMPL(rows_impl, cpu_check_matmul, run_rows);

static const struct wafer_kernel entries[] = {
	CPU_KERNEL(WAFER_KERNEL_MATMUL, "rows", WAFER_DTYPE_F32, 3,
		   struct wafer_matmul_params, rows_impl),
};

CPU_KERNEL_SET_DEFINE(matmul_rows, entries);
