/* wafer — SPDX-License-Identifier: MIT
 *
 * matmul.c: the cpu plugin's default matmul (f32), a cache-blocked loop
 * nest in the classic shape:
 *
 *   for each task (batch index t, block of MC rows of C)      pool
 *     for each block of NC columns of C
 *       for each block of KC of the inner dimension
 *         pack B's KC x NC panel   (column groups of NR, zero-padded)
 *         pack A's MC x KC block   (row groups of MR, zero-padded)
 *         for each MR x NR tile of C: C_tile += A_rows x B_cols
 *
 * Packing does three things: it turns both transposes into the same
 * layout (so the inner loops never see a flag), it makes the micro
 * kernel's reads sequential, and its zero padding lets the micro kernel be
 * fixed-size loops (MR x NR), which gcc vectorises at -O2. The panels
 * (KC x NC and MC x KC floats, 96 KiB together) live on the thread's
 * stack and stay in L2 while they are reused.
 *
 * This is the correct, reasonably fast default; faster variants (wider
 * micro tiles, intrinsics) go in their own files as further entries for
 * "matmul" (see kernels.h) for autotune to choose between. */
#include "build-config.h"

#include <stdio.h>
#include <string.h>

#include "plugins/cpu/kernels.h"
#include "plugins/cpu/threadpool.h"

#define MR 4
#define NR 16
#define MC 64
#define KC 128
#define NC 128

struct matmul_job {
	float *c;
	const float *a;
	const float *b;
	struct wafer_matmul_params p;
	size_t row_blocks; /* ceil(m / MC) */
};

/* Packs rows o0 .. o0 + ob - 1 by k indices p0 .. p0 + kb - 1 of a matrix
 * whose element (o, kk) is x[o * so + kk * sk] into |packed|: slices of
 * |width| rows (MR for A, NR for B), each kb x width, zero past ob. */
static inline void pack_panel(float *packed, const float *x, size_t so,
			      size_t sk, size_t width, size_t o0, size_t ob,
			      size_t p0, size_t kb)
{
	for (size_t og = 0; og < ob; og += width) {
		float *dst = packed + (og / width) * KC * width;
		size_t rows = ob - og < width ? ob - og : width;
		for (size_t q = 0; q < kb; q++) {
			const float *src = x + (p0 + q) * sk + (o0 + og) * so;
			size_t oo = 0;
			for (; oo < rows; oo++)
				dst[q * width + oo] = src[oo * so];
			for (; oo < width; oo++)
				dst[q * width + oo] = 0.0f;
		}
	}
}

/* B(p, j) of the current batch, stored n x k when transposed. */
static void pack_b(float *packed, const float *b,
		   const struct wafer_matmul_params *p, size_t p0, size_t kb,
		   size_t j0, size_t nb)
{
	if (p->transpose_b)
		pack_panel(packed, b, p->k, 1, NR, j0, nb, p0, kb);
	else
		pack_panel(packed, b, 1, p->n, NR, j0, nb, p0, kb);
}

/* A(i, p) of the current batch, stored k x m when transposed. */
static void pack_a(float *packed, const float *a,
		   const struct wafer_matmul_params *p, size_t i0, size_t mb,
		   size_t p0, size_t kb)
{
	if (p->transpose_a)
		pack_panel(packed, a, 1, p->m, MR, i0, mb, p0, kb);
	else
		pack_panel(packed, a, p->k, 1, MR, i0, mb, p0, kb);
}

/* acc += A_panel (kb x MR) x B_panel (kb x NR). */
static void micro_kernel(float acc[MR][NR], const float *a, const float *b,
			 size_t kb)
{
	for (size_t q = 0; q < kb; q++) {
		const float *bq = b + q * NR;
		const float *aq = a + q * MR;
		for (size_t r = 0; r < MR; r++)
			for (size_t j = 0; j < NR; j++)
				acc[r][j] += aq[r] * bq[j];
	}
}

/* One task: rows [i0, i0 + mb) of C for batch index t. */
static void matmul_task(const struct matmul_job *job, size_t t, size_t i0,
			size_t mb)
{
	const struct wafer_matmul_params *p = &job->p;
	const float *a = job->a + t * p->batch_stride_a;
	const float *b = job->b + t * p->batch_stride_b;
	float *c = job->c + t * p->batch_stride_c;
	float bpack[KC * NC];
	float apack[MC * KC];

	for (size_t j0 = 0; j0 < p->n; j0 += NC) {
		size_t nb = p->n - j0 < NC ? p->n - j0 : NC;
		for (size_t p0 = 0; p0 < p->k; p0 += KC) {
			size_t kb = p->k - p0 < KC ? p->k - p0 : KC;
			pack_b(bpack, b, p, p0, kb, j0, nb);
			pack_a(apack, a, p, i0, mb, p0, kb);
			for (size_t ig = 0; ig < mb; ig += MR) {
				size_t height = mb - ig < MR ? mb - ig : MR;
				for (size_t jg = 0; jg < nb; jg += NR) {
					size_t width =
						nb - jg < NR ? nb - jg : NR;
					float acc[MR][NR] = {{0}};
					float *ct = c + (i0 + ig) * p->n + j0 +
						    jg;
					if (p0 > 0)
						for (size_t r = 0; r < height;
						     r++)
							memcpy(acc[r],
							       ct + r * p->n,
							       width * sizeof(float));
					micro_kernel(acc,
						     apack + (ig / MR) * KC * MR,
						     bpack + (jg / NR) * KC * NR,
						     kb);
					for (size_t r = 0; r < height; r++)
						memcpy(ct + r * p->n, acc[r],
						       width * sizeof(float));
				}
			}
		}
	}
}

static void matmul_range(void *ctx, size_t begin, size_t end)
{
	const struct matmul_job *job = ctx;

	for (size_t task = begin; task < end; task++) {
		size_t t = task / job->row_blocks;
		size_t i0 = (task % job->row_blocks) * MC;
		size_t mb = job->p.m - i0 < MC ? job->p.m - i0 : MC;
		matmul_task(job, t, i0, mb);
	}
}

wafer_status cpu_check_matmul(const struct cpu_kernel_args *args)
{
	struct wafer_matmul_params p =
		CPU_PARAMS(struct wafer_matmul_params, args->params);

	return wafer_plugin_check_matmul(&args->reach, &p, sizeof(float),
					 NULL);
}

static wafer_status run_matmul(const struct cpu_kernel_args *args)
{
	struct matmul_job job = {
		.c = args->data[0],
		.a = args->data[1],
		.b = args->data[2],
		.p = CPU_PARAMS(struct wafer_matmul_params, args->params),
	};
	job.row_blocks = (size_t)((job.p.m + MC - 1) / MC);
	size_t tasks = (size_t)job.p.batch * job.row_blocks;
	/* A task is worth a thread from about 2^18 multiply-adds. */
	uint64_t work = (uint64_t)MC * job.p.n * job.p.k;
	size_t grain = work >= (1u << 18) ? 1 : (size_t)((1u << 18) / work);

	cpu_pool_parallel_for(args->pool, tasks, grain, matmul_range, &job);
	return WAFER_OK;
}

CPU_CHECKED_IMPL(matmul_impl, cpu_check_matmul, run_matmul);

static const struct wafer_kernel entries[] = {
	CPU_F32_KERNEL(WAFER_KERNEL_MATMUL, 3, struct wafer_matmul_params,
		       matmul_impl),
};

CPU_KERNEL_SET_DEFINE(matmul, entries);
