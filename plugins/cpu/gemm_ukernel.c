/* wafer — SPDX-License-Identifier: MIT
 *
 * gemm_ukernel.c: the micro-kernels of gemm.h, one body written once with
 * GCC vector types and instantiated per instruction set:
 *
 *   avx512  12 x 32: 24 zmm accumulators, 2 zmm of B, a broadcast of A
 *   avx512   8 x 32: 16 zmm accumulators: less waste at the bottom edge
 *                    of small matrices (64 rows are 8 tiles, not 5 1/3)
 *   avx2     6 x 16: 12 ymm accumulators (also used on AVX-512 CPUs for
 *                    the narrow tile)
 *   sse2     4 x  8:  8 xmm accumulators, the x86-64 baseline (and what
 *                    other architectures get: the vector types are
 *                    generic, 16 bytes wide)
 *
 * Every tile but 12 x 32 also comes in a direct form that reads A and B
 * where they are instead of from packed panels (for gemm.c's small
 * matrices).
 *
 * Each instance is fully unrolled over the tile's rows, so the compiler
 * keeps every accumulator in a register (checked with gcc 12 -O2: no
 * stack traffic in the loop, one FMA per accumulator per step). The
 * instruction set is picked once, at the first call, from
 * __builtin_cpu_supports: the plugin itself is built for the baseline
 * and runs anywhere. */
#include "build-config.h"

#include <string.h>

#include "plugins/cpu/gemm.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define CPU_GEMM_X86 1
#endif

typedef float v4sf __attribute__((vector_size(16)));
#ifdef CPU_GEMM_X86
typedef float v8sf __attribute__((vector_size(32)));
typedef float v16sf __attribute__((vector_size(64)));
#endif

/* Both micro-kernels' sums, c0[i] | c1[i] = sum over p < kc of A(i, p)
 * times row p of B (2W floats): |brow| is where row p of B starts and
 * |aip| is A(i, p), both written in p and i. */
#define GEMM_SUMS(VT, W, MR, brow, aip)                                        \
	VT c0[MR], c1[MR];                                                     \
	_Pragma("GCC unroll 16") for (int i = 0; i < MR; i++)                  \
		c0[i] = c1[i] = (VT){0};                                       \
	for (size_t p = 0; p < kc; p++) {                                      \
		VT b0, b1;                                                     \
		memcpy(&b0, brow, sizeof b0);                                  \
		memcpy(&b1, brow + W, sizeof b1);                              \
		_Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {        \
			float ai = aip;                                        \
			c0[i] += ai * b0;                                      \
			c1[i] += ai * b1;                                      \
		}                                                              \
	}

/* C[mr x 2W] (+)= sum_p a[p][0..mr) (x) b[p][0..2W): two vectors of B per
 * step, |mr| broadcasts of A. Loads and stores of C go through memcpy:
 * C rows need not be aligned. */
#define GEMM_UKERNEL(NAME, VT, W, MR, ATTR)                                    \
	ATTR static void NAME(size_t kc, const float *restrict a,              \
			      const float *restrict b, float *restrict c,      \
			      size_t ldc, int accumulate)                      \
	{                                                                      \
		GEMM_SUMS(VT, W, MR, b + p * 2 * W, a[p * MR + i]);            \
		_Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {        \
			float *row = c + i * ldc;                              \
			if (accumulate) {                                      \
				VT t0, t1;                                     \
				memcpy(&t0, row, sizeof t0);                   \
				memcpy(&t1, row + W, sizeof t1);               \
				c0[i] += t0;                                   \
				c1[i] += t1;                                   \
			}                                                      \
			memcpy(row, &c0[i], sizeof c0[i]);                     \
			memcpy(row + W, &c1[i], sizeof c1[i]);                 \
		}                                                              \
	}

/* The same product read straight from A (row stride lda) and B (row
 * stride ldb, contiguous rows): no packing, for small matrices whose
 * packing would cost as much as the product. */
#define GEMM_UKERNEL_DIRECT(NAME, VT, W, MR, ATTR)                             \
	ATTR static void NAME(size_t kc, const float *restrict a, size_t lda,  \
			      const float *restrict b, size_t ldb,             \
			      float *restrict c, size_t ldc)                   \
	{                                                                      \
		GEMM_SUMS(VT, W, MR, b + p * ldb, a[i * lda + p]);             \
		_Pragma("GCC unroll 16") for (int i = 0; i < MR; i++) {        \
			memcpy(c + i * ldc, &c0[i], sizeof c0[i]);             \
			memcpy(c + i * ldc + W, &c1[i], sizeof c1[i]);         \
		}                                                              \
	}

GEMM_UKERNEL(ukernel_sse2_4x8, v4sf, 4, 4, )
GEMM_UKERNEL_DIRECT(direct_sse2_4x8, v4sf, 4, 4, )
#ifdef CPU_GEMM_X86
GEMM_UKERNEL(ukernel_avx2_6x16, v8sf, 8, 6,
	     __attribute__((target("avx2,fma"))))
GEMM_UKERNEL_DIRECT(direct_avx2_6x16, v8sf, 8, 6,
		    __attribute__((target("avx2,fma"))))
GEMM_UKERNEL(ukernel_avx512_12x32, v16sf, 16, 12,
	     __attribute__((target("avx512f,fma"))))
GEMM_UKERNEL(ukernel_avx512_8x32, v16sf, 16, 8,
	     __attribute__((target("avx512f,fma"))))
GEMM_UKERNEL_DIRECT(direct_avx512_8x32, v16sf, 16, 8,
		    __attribute__((target("avx512f,fma"))))
#endif

static const struct cpu_gemm_ukernel sse2_4x8 = {4, 8, "sse2",
						 ukernel_sse2_4x8,
						 direct_sse2_4x8};
#ifdef CPU_GEMM_X86
static const struct cpu_gemm_ukernel avx2_6x16 = {6, 16, "avx2",
						  ukernel_avx2_6x16,
						  direct_avx2_6x16};
static const struct cpu_gemm_ukernel avx512_12x32 = {12, 32, "avx512",
						     ukernel_avx512_12x32, NULL};
static const struct cpu_gemm_ukernel avx512_8x32 = {8, 32, "avx512",
						    ukernel_avx512_8x32,
						    direct_avx512_8x32};
#endif

const struct cpu_gemm_ukernel *cpu_gemm_ukernel(enum cpu_gemm_tile tile)
{
#ifdef CPU_GEMM_X86
	/* __builtin_cpu_supports initialises itself (a constructor in
	 * libgcc); the answers never change, so racing threads agree. */
	if (tile == CPU_GEMM_TILE_WIDE && __builtin_cpu_supports("avx512f"))
		return &avx512_12x32;
	if (tile == CPU_GEMM_TILE_MEDIUM && __builtin_cpu_supports("avx512f"))
		return &avx512_8x32;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return &avx2_6x16;
#endif
	return &sse2_4x8;
}
