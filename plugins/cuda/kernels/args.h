/* wafer — SPDX-License-Identifier: MIT
 *
 * args.h: parameter blocks that the cuda plugin's launch code (C) passes
 * to its own kernels (CUDA C++) where a kernel does not take the
 * catalogue's parameter block as it is. Plain C, fixed-width fields and no
 * implicit padding, so both compilers lay them out the same. */
#ifndef WAFER_PLUGINS_CUDA_KERNELS_ARGS_H
#define WAFER_PLUGINS_CUDA_KERNELS_ARGS_H

#include <stdint.h>

/* One launch of a matmul kernel: C = op(A) x op(B) for |batch| matrices,
 * in elements, row-major, with explicit row strides so the plugin can hand
 * a kernel part of a larger problem (grid limits):
 *   op(A)(i, l) = a[i * lda + l]   or, when trans_a, a[l * lda + i]
 *   op(B)(l, j) = b[l * ldb + j]   or, when trans_b, b[j * ldb + l]
 *   C(i, j)     = c[i * ldc + j]
 * and matrix t of the batch at a + t * stride_a (likewise b, c). */
struct cuda_matmul_args {
	uint64_t m, n, k;
	uint64_t lda, ldb, ldc;
	uint64_t stride_a, stride_b, stride_c;
	uint32_t trans_a, trans_b;
};

#endif
