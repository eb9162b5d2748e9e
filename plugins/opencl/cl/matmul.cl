/* wafer — SPDX-License-Identifier: MIT
 *
 * matmul.cl: batched matmul, C_t = op(A_t) x op(B_t), three variants for
 * autotune to choose from, in f32 and f16 (accumulating in f32):
 *
 *   matmul_tile64_<dt>  16x16 items per group, each computing a 4x4 block
 *                       of a 64x64 tile of C; A and B pass through local
 *                       memory 16 columns at a time. The fast one on GPUs.
 *   matmul_tile16_<dt>  16x16 items, one element of C each, 16x16 tiles of
 *                       A and B in local memory. Simpler; competitive on
 *                       small matrices.
 *   matmul_naive_<dt>   one element of C per item straight from global
 *                       memory: no local memory, no barriers, any shape.
 *
 * Global sizes (kernels.c): tile64 {ceil(n/64)*16, ceil(m/64)*16, batch},
 * tile16 {ceil(n/16)*16, ceil(m/16)*16, batch}, naive {n, m, batch}.
 * Arguments after the buffers: m, n, k, transpose_a, transpose_b and the
 * three batch strides, all in elements. */

/* Element (r, c) of op(A) (m x k) and op(B) (k x n), stored row-major, or
 * transposed when ta / tb. */
#define A_AT(DT, A, r, c)                                                      \
	(ta ? LOAD_##DT(A, (c) * m + (r)) : LOAD_##DT(A, (r) * k + (c)))
#define B_AT(DT, B, r, c)                                                      \
	(tb ? LOAD_##DT(B, (c) * k + (r)) : LOAD_##DT(B, (r) * n + (c)))

#define MATMUL_ARGS(DT)                                                        \
	__global ST_##DT *out, ulong out_off, __global const ST_##DT *a,       \
		ulong a_off, __global const ST_##DT *b, ulong b_off, ulong m,  \
		ulong n, ulong k, uint ta, uint tb, ulong sa, ulong sb,        \
		ulong sc

/* The head of a tiled kernel: groups of 16 x 16 items, as kernels.c
 * launches them. */
#define MATMUL_TILED(NAME, DT)                                                 \
	__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void        \
	NAME##_##DT(MATMUL_ARGS(DT))

#define MATMUL_NAIVE(DT)                                                       \
	__kernel void matmul_naive_##DT(MATMUL_ARGS(DT))                       \
	{                                                                      \
		ulong col = get_global_id(0), row = get_global_id(1);          \
		ulong t = get_global_id(2);                                    \
		if (col >= n || row >= m)                                      \
			return;                                                \
		__global const ST_##DT *A = a + a_off + t * sa;                \
		__global const ST_##DT *B = b + b_off + t * sb;                \
		float acc = 0.0f;                                              \
		for (ulong p = 0; p < k; p++)                                  \
			acc += A_AT(DT, A, row, p) * B_AT(DT, B, p, col);      \
		STORE_##DT(out + out_off + t * sc, row * n + col, acc);        \
	}

#define MATMUL_TILE16(DT)                                                      \
	MATMUL_TILED(matmul_tile16, DT)                                        \
	{                                                                      \
		__local float As[16][17], Bs[16][17];                          \
		uint lx = get_local_id(0), ly = get_local_id(1);               \
		ulong col = get_group_id(0) * 16 + lx;                         \
		ulong row = get_group_id(1) * 16 + ly;                         \
		ulong t = get_group_id(2);                                     \
		__global const ST_##DT *A = a + a_off + t * sa;                \
		__global const ST_##DT *B = b + b_off + t * sb;                \
		float acc = 0.0f;                                              \
		for (ulong p0 = 0; p0 < k; p0 += 16) {                         \
			As[ly][lx] = row < m && p0 + lx < k                    \
					     ? A_AT(DT, A, row, p0 + lx)       \
					     : 0.0f;                           \
			Bs[ly][lx] = p0 + ly < k && col < n                    \
					     ? B_AT(DT, B, p0 + ly, col)       \
					     : 0.0f;                           \
			barrier(CLK_LOCAL_MEM_FENCE);                          \
			for (uint q = 0; q < 16; q++)                          \
				acc += As[ly][q] * Bs[q][lx];                  \
			barrier(CLK_LOCAL_MEM_FENCE);                          \
		}                                                              \
		if (row < m && col < n)                                        \
			STORE_##DT(out + out_off + t * sc, row * n + col,      \
				   acc);                                       \
	}

/* Each group loads a 64x16 slice of A and a 16x64 slice of B per step,
 * four elements per item, in the order that keeps neighbouring items on
 * neighbouring addresses for the operand's layout. Item (lx, ly) owns
 * rows ly + 16r and columns lx + 16c of the tile (r, c < 4), so the
 * local-memory reads of a step are broadcasts or consecutive. */
#define MATMUL_TILE64(DT)                                                      \
	MATMUL_TILED(matmul_tile64, DT)                                        \
	{                                                                      \
		__local float As[16][64], Bs[16][64];                          \
		uint lx = get_local_id(0), ly = get_local_id(1);               \
		uint tid = ly * 16 + lx;                                       \
		ulong col0 = get_group_id(0) * 64;                             \
		ulong row0 = get_group_id(1) * 64;                             \
		ulong t = get_group_id(2);                                     \
		__global const ST_##DT *A = a + a_off + t * sa;                \
		__global const ST_##DT *B = b + b_off + t * sb;                \
		float acc[4][4];                                               \
		for (uint r = 0; r < 4; r++)                                   \
			for (uint c = 0; c < 4; c++)                           \
				acc[r][c] = 0.0f;                              \
		for (ulong p0 = 0; p0 < k; p0 += 16) {                         \
			for (uint s = 0; s < 4; s++) {                         \
				uint e = tid + 256 * s, i, j, p;               \
				ulong gr, gc;                                  \
				i = ta ? e % 64 : e / 16;                      \
				p = ta ? e / 64 : e % 16;                      \
				gr = row0 + i;                                 \
				gc = p0 + p;                                   \
				As[p][i] = gr < m && gc < k                    \
						   ? A_AT(DT, A, gr, gc)       \
						   : 0.0f;                     \
				j = tb ? e / 16 : e % 64;                      \
				p = tb ? e % 16 : e / 64;                      \
				gr = p0 + p;                                   \
				gc = col0 + j;                                 \
				Bs[p][j] = gr < k && gc < n                    \
						   ? B_AT(DT, B, gr, gc)       \
						   : 0.0f;                     \
			}                                                      \
			barrier(CLK_LOCAL_MEM_FENCE);                          \
			for (uint p = 0; p < 16; p++) {                        \
				float av[4], bv[4];                            \
				for (uint r = 0; r < 4; r++)                   \
					av[r] = As[p][ly + 16 * r];            \
				for (uint c = 0; c < 4; c++)                   \
					bv[c] = Bs[p][lx + 16 * c];            \
				for (uint r = 0; r < 4; r++)                   \
					for (uint c = 0; c < 4; c++)           \
						acc[r][c] += av[r] * bv[c];    \
			}                                                      \
			barrier(CLK_LOCAL_MEM_FENCE);                          \
		}                                                              \
		for (uint r = 0; r < 4; r++) {                                 \
			ulong row = row0 + ly + 16 * r;                        \
			for (uint c = 0; c < 4; c++) {                         \
				ulong col = col0 + lx + 16 * c;                \
				if (row < m && col < n)                        \
					STORE_##DT(out + out_off + t * sc,     \
						   row * n + col, acc[r][c]);  \
			}                                                      \
		}                                                              \
	}

MATMUL_NAIVE(f32)
MATMUL_NAIVE(f16)
MATMUL_TILE16(f32)
MATMUL_TILE16(f16)
MATMUL_TILE64(f32)
MATMUL_TILE64(f16)

/* The naive kernel for the integer types and float64, accumulating in T
 * (integers wrap as the elementwise kernels do). */
#define TMATMUL_NAIVE(DT, T)                                                   \
	__kernel void matmul_naive_##DT(                                       \
		__global T *out, ulong out_off, __global const T *a,           \
		ulong a_off, __global const T *b, ulong b_off, ulong m,        \
		ulong n, ulong k, uint ta, uint tb, ulong sa, ulong sb,        \
		ulong sc)                                                      \
	{                                                                      \
		ulong col = get_global_id(0), row = get_global_id(1);          \
		ulong t = get_global_id(2);                                    \
		if (col >= n || row >= m)                                      \
			return;                                                \
		__global const T *A = a + a_off + t * sa;                      \
		__global const T *B = b + b_off + t * sb;                      \
		T acc = 0;                                                     \
		for (ulong p = 0; p < k; p++)                                  \
			acc += (ta ? A[p * m + row] : A[row * k + p]) *        \
			       (tb ? B[col * k + p] : B[p * n + col]);         \
		out[out_off + t * sc + row * n + col] = acc;                   \
	}

TMATMUL_NAIVE(i32, int)
TMATMUL_NAIVE(i64, long)
#ifdef cl_khr_fp64
TMATMUL_NAIVE(f64, double)
#endif
