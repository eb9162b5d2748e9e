/* wafer — SPDX-License-Identifier: MIT
 *
 * gemm.h: the cpu plugin's own single-precision matrix multiply, the
 * engine behind its blocked matmul variants (matmul_blocked.c). The
 * classic three levels of blocking:
 *
 *   cache tiles    C is computed in blocks of mc x nc, summing over k in
 *                  slices of kc; each slice of A (mc x kc) and of B
 *                  (kc x nc) is first packed into a buffer in exactly the
 *                  order the micro-kernel reads it, so the inner loop
 *                  streams through memory that sits in L1 (the B panel)
 *                  and L2 (the A block), whatever A's and B's layout
 *                  (transposes are just other strides to the packing);
 *   register tiles the micro-kernel keeps an mr x nr tile of C in vector
 *                  registers for the whole kc loop: per step it loads nr
 *                  values of B, broadcasts mr values of A and issues
 *                  mr x nr / width fused multiply-adds;
 *   thread split   the output is cut into one contiguous range per thread,
 *                  of rows (split m) or of columns (split n); each thread
 *                  packs and computes its range alone, with no barrier.
 *
 * The micro-kernels are written with GCC vector types and compiled for
 * AVX-512, AVX2+FMA and the baseline; the widest the CPU runs is chosen
 * once, at run time (gemm_ukernel.c). */
#ifndef WAFER_PLUGINS_CPU_GEMM_H
#define WAFER_PLUGINS_CPU_GEMM_H

#include <stddef.h>
#include <stdint.h>

struct cpu_pool;

/* A micro-kernel: C[0..mr)[0..nr) (row stride ldc) = or += the product
 * of a packed A panel (kc steps of mr values) and a packed B panel (kc
 * steps of nr values). Both panels are 64-byte aligned. */
struct cpu_gemm_ukernel {
	unsigned mr, nr;
	const char *isa; /* "avx512", "avx2", "sse2": for logs and tests */
	void (*run)(size_t kc, const float *a, const float *b, float *c,
		    size_t ldc, int accumulate);
	/* C[0..mr)[0..nr) = A[0..mr)[0..kc) x B[0..kc)[0..nr) read in place:
	 * A's rows lda apart, B's rows ldb apart and contiguous. NULL for
	 * tiles that have no direct form. */
	void (*direct)(size_t kc, const float *a, size_t lda, const float *b,
		       size_t ldb, float *c, size_t ldc);
};

enum cpu_gemm_tile {
	CPU_GEMM_TILE_NARROW, /* 6 x 16 on AVX2 and up; 4 x 8 below */
	CPU_GEMM_TILE_WIDE,   /* 12 x 32 with AVX-512; else as NARROW */
	CPU_GEMM_TILE_MEDIUM, /* 8 x 32 with AVX-512; else as NARROW */
};

/* The best micro-kernel of |tile| this CPU runs. */
const struct cpu_gemm_ukernel *cpu_gemm_ukernel(enum cpu_gemm_tile tile);

enum cpu_gemm_split {
	CPU_GEMM_SPLIT_N, /* each thread a range of C's columns */
	CPU_GEMM_SPLIT_M, /* each thread a range of C's rows */
};

struct cpu_gemm_blocking {
	unsigned mc, kc, nc; /* cache tiles; mc, nc rounded to mr, nr */
	enum cpu_gemm_tile tile;
	enum cpu_gemm_split split;
	/* Products of at most this many multiply-adds, with row-major A and
	 * B, skip packing: the tile's direct micro-kernel reads them in
	 * place (edge tiles still go through packed panels). 0: never. */
	uint64_t direct_below;
};

/* C (m x n, row stride ldc) = A (m x k) x B (k x n), where element (i, p)
 * of A is a[i * a_rs + p * a_cs] and element (p, j) of B is
 * b[p * b_rs + j * b_cs]. */
struct cpu_gemm_problem {
	size_t m, n, k;
	const float *a;
	size_t a_rs, a_cs;
	const float *b;
	size_t b_rs, b_cs;
	float *c;
	size_t ldc;
};

/* Computes |problem| on |pool| (NULL: on the calling thread alone).
 * Returns 0, or -1 when a packing buffer could not be allocated (C is
 * then partly written). Each thread allocates its own buffers, about
 * (mc + nc) x kc floats. */
int cpu_gemm_f32(struct cpu_pool *pool, const struct cpu_gemm_blocking *blocking,
		 const struct cpu_gemm_problem *problem);

#endif
