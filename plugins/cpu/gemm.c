/* wafer — SPDX-License-Identifier: MIT
 *
 * gemm.c: packing, the macro-kernel and the thread split of gemm.h.
 *
 * Loop nest of one thread's range of C (Goto's order):
 *
 *   for jc over n in steps of nc        B slice: kc x nc, packed per pc
 *     for pc over k in steps of kc      (the reuse of B across all of m)
 *       pack B[pc.., jc..] into nr-wide panels
 *       for ic over m in steps of mc
 *         pack A[ic.., pc..] into mr-tall panels
 *         for each nr panel, each mr panel: micro-kernel
 *
 * The first pc slice stores into C, later ones add to it, so C is never
 * cleared separately. Tiles at the right and bottom edges are padded with
 * zeros in the packed panels, computed into a small buffer and copied.
 *
 * Small products with row-major A and B (blocking.direct_below) skip the
 * packing, which for them costs about as much as the arithmetic: whole
 * tiles are computed straight from A and B, only the edges are packed. */
#include "build-config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/gemm.h"
#include "plugins/cpu/threadpool.h"

/* The least work (multiply-adds) worth a range of its own: waking a
 * worker costs 5-10 us, about 1 M multiply-adds at the speed of one core
 * (plugins/cpu/kernels.c measures the same for elementwise kernels). */
#define MIN_RANGE_WORK (UINT64_C(1) << 20)

static size_t round_up(size_t x, size_t to)
{
	return (x + to - 1) / to * to;
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/*===----------------------------------------------------------------------===
 * Packing
 *===----------------------------------------------------------------------===*/

/* A[0..mc)[0..kc) into mr-tall panels: panel q holds, for each p, the mr
 * values A[q*mr + i][p] (zeros past mc). */
static void pack_a(size_t mc, size_t kc, const float *a, size_t rs, size_t cs,
		   unsigned mr, float *out)
{
	for (size_t i0 = 0; i0 < mc; i0 += mr) {
		size_t rows = min_size(mr, mc - i0);
		const float *src = a + i0 * rs;
		if (cs == 1) {
			/* Row-major A: read each row along p. */
			for (size_t i = 0; i < rows; i++)
				for (size_t p = 0; p < kc; p++)
					out[p * mr + i] = src[i * rs + p];
		} else {
			for (size_t p = 0; p < kc; p++)
				for (size_t i = 0; i < rows; i++)
					out[p * mr + i] = src[i * rs + p * cs];
		}
		for (size_t i = rows; i < mr; i++)
			for (size_t p = 0; p < kc; p++)
				out[p * mr + i] = 0.0f;
		out += kc * mr;
	}
}

/* B[0..kc)[0..nc) into nr-wide panels: panel q holds, for each p, the nr
 * values B[p][q*nr + j] (zeros past nc). */
static void pack_b(size_t kc, size_t nc, const float *b, size_t rs, size_t cs,
		   unsigned nr, float *out)
{
	for (size_t j0 = 0; j0 < nc; j0 += nr) {
		size_t cols = min_size(nr, nc - j0);
		const float *src = b + j0 * cs;
		for (size_t p = 0; p < kc; p++) {
			float *dst = out + p * nr;
			if (cs == 1) {
				memcpy(dst, src + p * rs, cols * sizeof *dst);
			} else {
				for (size_t j = 0; j < cols; j++)
					dst[j] = src[p * rs + j * cs];
			}
			for (size_t j = cols; j < nr; j++)
				dst[j] = 0.0f;
		}
		out += kc * nr;
	}
}

/*===----------------------------------------------------------------------===
 * The macro-kernel
 *===----------------------------------------------------------------------===*/

/* C[0..mc)[0..nc) (+)= packed A block x packed B block. */
static void macro_kernel(const struct cpu_gemm_ukernel *uk, size_t mc,
			 size_t nc, size_t kc, const float *pa, const float *pb,
			 float *c, size_t ldc, int accumulate)
{
	_Alignas(64) float edge[16 * 64];

	for (size_t j0 = 0; j0 < nc; j0 += uk->nr) {
		size_t cols = min_size(uk->nr, nc - j0);
		const float *b = pb + j0 * kc;
		for (size_t i0 = 0; i0 < mc; i0 += uk->mr) {
			size_t rows = min_size(uk->mr, mc - i0);
			const float *a = pa + i0 * kc;
			float *dst = c + i0 * ldc + j0;
			if (rows == uk->mr && cols == uk->nr) {
				uk->run(kc, a, b, dst, ldc, accumulate);
				continue;
			}
			uk->run(kc, a, b, edge, uk->nr, 0);
			for (size_t i = 0; i < rows; i++)
				for (size_t j = 0; j < cols; j++)
					dst[i * ldc + j] =
						(accumulate ? dst[i * ldc + j]
							    : 0.0f) +
						edge[i * uk->nr + j];
		}
	}
}

/* The whole product |p| on the calling thread, through packed panels. */
static int gemm_packed(const struct cpu_gemm_blocking *blk,
		       const struct cpu_gemm_ukernel *uk,
		       const struct cpu_gemm_problem *p)
{
	size_t mc = round_up(min_size(blk->mc, p->m), uk->mr);
	size_t nc = round_up(min_size(blk->nc, p->n), uk->nr);
	size_t kc = min_size(blk->kc, p->k);
	float *pa = aligned_alloc(64, round_up(mc * kc * sizeof(float), 64));
	float *pb = aligned_alloc(64, round_up(nc * kc * sizeof(float), 64));

	if (!pa || !pb) {
		free(pa);
		free(pb);
		return -1;
	}
	for (size_t jc = 0; jc < p->n; jc += nc) {
		size_t ncur = min_size(nc, p->n - jc);
		for (size_t pc = 0; pc < p->k; pc += kc) {
			size_t kcur = min_size(kc, p->k - pc);
			pack_b(kcur, ncur, p->b + pc * p->b_rs + jc * p->b_cs,
			       p->b_rs, p->b_cs, uk->nr, pb);
			for (size_t ic = 0; ic < p->m; ic += mc) {
				size_t mcur = min_size(mc, p->m - ic);
				pack_a(mcur, kcur,
				       p->a + ic * p->a_rs + pc * p->a_cs,
				       p->a_rs, p->a_cs, uk->mr, pa);
				macro_kernel(uk, mcur, ncur, kcur, pa, pb,
					     p->c + ic * p->ldc + jc, p->ldc,
					     pc > 0);
			}
		}
	}
	free(pa);
	free(pb);
	return 0;
}

/* Rows [i0, i0 + m) and columns [j0, j0 + n) of |p|, packed. */
static int gemm_part(const struct cpu_gemm_blocking *blk,
		     const struct cpu_gemm_ukernel *uk,
		     const struct cpu_gemm_problem *p, size_t i0, size_t m,
		     size_t j0, size_t n)
{
	struct cpu_gemm_problem part = *p;

	if (!m || !n)
		return 0;
	part.m = m;
	part.n = n;
	part.a += i0 * p->a_rs;
	part.b += j0 * p->b_cs;
	part.c += i0 * p->ldc + j0;
	return gemm_packed(blk, uk, &part);
}

/* Small row-major products: whole tiles straight from A and B with the
 * direct micro-kernel, the bottom and right edges packed. */
static int gemm_direct(const struct cpu_gemm_blocking *blk,
		       const struct cpu_gemm_ukernel *uk,
		       const struct cpu_gemm_problem *p)
{
	size_t m_full = p->m / uk->mr * uk->mr, n_full = p->n / uk->nr * uk->nr;

	for (size_t i0 = 0; i0 < m_full; i0 += uk->mr)
		for (size_t j0 = 0; j0 < n_full; j0 += uk->nr)
			uk->direct(p->k, p->a + i0 * p->a_rs, p->a_rs, p->b + j0,
				   p->b_rs, p->c + i0 * p->ldc + j0, p->ldc);
	if (gemm_part(blk, uk, p, 0, m_full, n_full, p->n - n_full) != 0)
		return -1;
	return gemm_part(blk, uk, p, m_full, p->m - m_full, 0, p->n);
}

static int gemm_serial(const struct cpu_gemm_blocking *blk,
		       const struct cpu_gemm_ukernel *uk,
		       const struct cpu_gemm_problem *p)
{
	uint64_t work = (uint64_t)p->m * p->n * p->k;

	if (uk->direct && p->a_cs == 1 && p->b_cs == 1 &&
	    work <= blk->direct_below)
		return gemm_direct(blk, uk, p);
	return gemm_packed(blk, uk, p);
}

/*===----------------------------------------------------------------------===
 * The thread split
 *===----------------------------------------------------------------------===*/

struct gemm_job {
	const struct cpu_gemm_blocking *blocking;
	const struct cpu_gemm_ukernel *uk;
	const struct cpu_gemm_problem *problem;
	size_t unit; /* rows or columns per item: mr or nr */
	int failed;  /* set by any range (a plain store of 1 each) */
};

/* Items [begin, end) are units of rows (split m) or columns (split n). */
static void gemm_range(void *ctx, size_t begin, size_t end)
{
	struct gemm_job *job = ctx;
	struct cpu_gemm_problem part = *job->problem;
	size_t first = begin * job->unit;

	if (job->blocking->split == CPU_GEMM_SPLIT_M) {
		part.m = min_size(end * job->unit, part.m) - first;
		part.a += first * part.a_rs;
		part.c += first * part.ldc;
	} else {
		part.n = min_size(end * job->unit, part.n) - first;
		part.b += first * part.b_cs;
		part.c += first;
	}
	if (gemm_serial(job->blocking, job->uk, &part) != 0)
		__atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);
}

int cpu_gemm_f32(struct cpu_pool *pool, const struct cpu_gemm_blocking *blk,
		 const struct cpu_gemm_problem *problem)
{
	const struct cpu_gemm_ukernel *uk = cpu_gemm_ukernel(blk->tile);
	bool by_rows = blk->split == CPU_GEMM_SPLIT_M;
	struct gemm_job job = {
		.blocking = blk,
		.uk = uk,
		.problem = problem,
		.unit = by_rows ? uk->mr : uk->nr,
	};
	size_t extent = by_rows ? problem->m : problem->n;
	size_t items = (extent + job.unit - 1) / job.unit;
	/* Work per item, in multiply-adds: how many items make a range. */
	uint64_t item_work = (uint64_t)job.unit * problem->k *
			     (by_rows ? problem->n : problem->m);
	size_t grain = item_work ? (size_t)(MIN_RANGE_WORK / item_work) : 1;

	if (!problem->m || !problem->n)
		return 0;
	if (!problem->k) {
		for (size_t i = 0; i < problem->m; i++)
			memset(problem->c + i * problem->ldc, 0,
			       problem->n * sizeof(float));
		return 0;
	}
	if (!pool)
		return gemm_serial(blk, uk, problem);
	cpu_pool_parallel_for(pool, items, grain ? grain : 1, gemm_range,
			      &job);
	return job.failed ? -1 : 0;
}
