/* wafer — SPDX-License-Identifier: MIT
 *
 * matmul_blocked.c: f32 matmul variants on the plugin's own GEMM engine
 * (gemm.h), differing in the three choices autotune is there to make:
 *
 *   variant      register tile  cache tiles (mc/kc/nc)  thread split
 *   tile6x16     6 x 16 (AVX2)  120 / 256 / 4096        columns
 *   tile8x32     8 x 32 (512)   128 / 256 / 4096        columns
 *   tile12x32    12 x 32 (512)  144 / 256 / 4096        columns
 *   tile12x32_m  12 x 32 (512)  144 / 256 / 4096        rows
 *   tile12x32_k  12 x 32 (512)   48 / 128 / 1024        columns
 *   direct6x16   6 x 16, no packing up to 256^3, rows
 *   direct8x32   8 x 32, no packing up to 256^3, rows
 *
 * The 32-wide tiles need AVX-512 and fall back to 6 x 16 without it
 * (gemm_ukernel.c); the small cache tiles of _k suit CPUs with a small or
 * shared L2; splitting by rows suits wide-and-short outputs less and
 * tall-and-narrow ones more; the direct variants read small row-major
 * operands in place, where packing them would cost as much as the
 * product. Which wins where is for autotune to measure.
 *
 * A batch of matrices too small to keep every thread busy on its own is
 * spread over the threads one matrix each; larger ones run one after
 * another, each split over the threads. */
#include "build-config.h"

#include "plugins/cpu/gemm.h"
#include "plugins/cpu/kernels.h"
#include "plugins/cpu/threadpool.h"

/* Below this many multiply-adds a matrix of a batch runs on one thread. */
#define SMALL_MATRIX_WORK (UINT64_C(1) << 22)

struct blocked_job {
	const struct cpu_gemm_blocking *blocking;
	struct wafer_matmul_params p;
	float *c;
	const float *a;
	const float *b;
	int failed;
};

/* Matrix |t| of the batch as a gemm problem. */
static struct cpu_gemm_problem batch_problem(const struct blocked_job *job,
					     size_t t)
{
	const struct wafer_matmul_params *p = &job->p;

	return (struct cpu_gemm_problem){
		.m = (size_t)p->m,
		.n = (size_t)p->n,
		.k = (size_t)p->k,
		.a = job->a + t * p->batch_stride_a,
		/* A is m x k, or k x m stored when transposed. */
		.a_rs = p->transpose_a ? 1 : (size_t)p->k,
		.a_cs = p->transpose_a ? (size_t)p->m : 1,
		.b = job->b + t * p->batch_stride_b,
		/* B is k x n, or n x k stored when transposed. */
		.b_rs = p->transpose_b ? 1 : (size_t)p->n,
		.b_cs = p->transpose_b ? (size_t)p->k : 1,
		.c = job->c + t * p->batch_stride_c,
		.ldc = (size_t)p->n,
	};
}

static void batch_range(void *ctx, size_t begin, size_t end)
{
	struct blocked_job *job = ctx;

	for (size_t t = begin; t < end; t++) {
		struct cpu_gemm_problem problem = batch_problem(job, t);
		if (cpu_gemm_f32(NULL, job->blocking, &problem) != 0)
			__atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);
	}
}

static wafer_status run_blocked(const struct cpu_kernel_args *args,
				const struct cpu_gemm_blocking *blocking)
{
	struct blocked_job job = {
		.blocking = blocking,
		.p = CPU_PARAMS(struct wafer_matmul_params, args->params),
		.c = args->data[0],
		.a = args->data[1],
		.b = args->data[2],
	};
	uint64_t work;

	if (__builtin_mul_overflow(job.p.m * job.p.n, job.p.k, &work))
		work = UINT64_MAX; /* m * n was checked with the bindings */

	if (job.p.batch > 1 && work < SMALL_MATRIX_WORK) {
		size_t grain = (size_t)(SMALL_MATRIX_WORK / (work ? work : 1));
		cpu_pool_parallel_for(args->pool, (size_t)job.p.batch, grain,
				      batch_range, &job);
	} else {
		for (size_t t = 0; t < job.p.batch && !job.failed; t++) {
			struct cpu_gemm_problem problem = batch_problem(&job, t);
			if (cpu_gemm_f32(args->pool, blocking, &problem) != 0)
				job.failed = 1;
		}
	}
	return job.failed ? WAFER_ERROR_OUT_OF_MEMORY : WAFER_OK;
}

/* One variant: its blocking and its run function. */
#define BLOCKED_VARIANT(name_, mc_, kc_, nc_, tile_, split_, direct_)          \
	static const struct cpu_gemm_blocking name_##_blocking = {             \
		.mc = (mc_),                                                   \
		.kc = (kc_),                                                   \
		.nc = (nc_),                                                   \
		.tile = (tile_),                                               \
		.split = (split_),                                             \
		.direct_below = (direct_),                                     \
	};                                                                     \
	static wafer_status run_##name_(const struct cpu_kernel_args *args)    \
	{                                                                      \
		return run_blocked(args, &name_##_blocking);                   \
	}                                                                      \
	CPU_CHECKED_IMPL(name_##_impl, cpu_check_matmul, run_##name_)

/* Up to this many multiply-adds (256^3) the direct variants read A and B
 * in place. */
#define DIRECT_BELOW (UINT64_C(1) << 24)

BLOCKED_VARIANT(tile6x16, 120, 256, 4096, CPU_GEMM_TILE_NARROW,
		CPU_GEMM_SPLIT_N, 0);
BLOCKED_VARIANT(tile8x32, 128, 256, 4096, CPU_GEMM_TILE_MEDIUM,
		CPU_GEMM_SPLIT_N, 0);
BLOCKED_VARIANT(tile12x32, 144, 256, 4096, CPU_GEMM_TILE_WIDE,
		CPU_GEMM_SPLIT_N, 0);
BLOCKED_VARIANT(tile12x32_m, 144, 256, 4096, CPU_GEMM_TILE_WIDE,
		CPU_GEMM_SPLIT_M, 0);
BLOCKED_VARIANT(tile12x32_k, 48, 128, 1024, CPU_GEMM_TILE_WIDE,
		CPU_GEMM_SPLIT_N, 0);
BLOCKED_VARIANT(direct6x16, 120, 256, 4096, CPU_GEMM_TILE_NARROW,
		CPU_GEMM_SPLIT_M, DIRECT_BELOW);
BLOCKED_VARIANT(direct8x32, 128, 256, 4096, CPU_GEMM_TILE_MEDIUM,
		CPU_GEMM_SPLIT_M, DIRECT_BELOW);

#define ENTRY(name_)                                                           \
	CPU_KERNEL(WAFER_KERNEL_MATMUL, #name_, WAFER_DTYPE_F32, 3,            \
		   struct wafer_matmul_params, name_##_impl)

static const struct wafer_kernel entries[] = {
	ENTRY(tile6x16),
	ENTRY(tile8x32),
	ENTRY(tile12x32),
	ENTRY(tile12x32_m),
	ENTRY(tile12x32_k),
	ENTRY(direct6x16),
	ENTRY(direct8x32),
};

CPU_KERNEL_SET_DEFINE(matmul_blocked, entries);
