/* wafer — SPDX-License-Identifier: MIT
 *
 * rows.cl: reductions over the last axis and softmax, in f32 and f16.
 * One work-group per row: its items stride over the row's columns, then
 * combine their partial results in local memory (a tree, so a sum adds
 * pairwise rather than in one long chain). The host gives a power-of-two
 * work-group size and |scratch| of that many floats. */

/* Tree-combine |v| over the work-group; every item gets the result. */
#define GROUP_REDUCE(NAME, T, OP)                                              \
	T NAME(T v, __local T *scratch)                                        \
	{                                                                      \
		uint lid = get_local_id(0);                                    \
		scratch[lid] = v;                                              \
		barrier(CLK_LOCAL_MEM_FENCE);                                  \
		for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {         \
			if (lid < s)                                           \
				scratch[lid] = OP(scratch[lid],                \
						  scratch[lid + s]);           \
			barrier(CLK_LOCAL_MEM_FENCE);                          \
		}                                                              \
		v = scratch[0];                                                \
		barrier(CLK_LOCAL_MEM_FENCE);                                  \
		return v;                                                      \
	}

#define PLUS(a, b) ((a) + (b))
GROUP_REDUCE(group_sum, float, PLUS)
GROUP_REDUCE(group_max, float, max_nan)

#define ROW_ARGS(DT)                                                           \
	__global ST_##DT *out, ulong out_off, __global const ST_##DT *in,      \
		ulong in_off, ulong rows, ulong cols, __local float *scratch

#define ROW_BEGIN(DT)                                                          \
	ulong r = get_group_id(0);                                             \
	uint lid = get_local_id(0), step = get_local_size(0);                  \
	if (r >= rows)                                                         \
		return;                                                        \
	__global const ST_##DT *row = in + in_off + r * cols;

/* A row reduction: each item's |acc| starts at |init| and takes its
 * elements of the row through |fold|; the group folds them with |group|
 * and item 0 stores |result|. */
#define ROW_REDUCE(DT, name, init, fold, group, result)                        \
	__kernel void name##_##DT(ROW_ARGS(DT))                                \
	{                                                                      \
		ROW_BEGIN(DT)                                                  \
		float acc = (init);                                            \
		for (ulong c = lid; c < cols; c += step)                       \
			acc = (fold);                                          \
		acc = group(acc, scratch);                                     \
		if (lid == 0)                                                  \
			STORE_##DT(out + out_off, r, (result));                \
	}

#define ROWS(DT)                                                               \
	ROW_REDUCE(DT, reduce_sum, 0.0f, acc + LOAD_##DT(row, c), group_sum,   \
		   acc)                                                        \
	ROW_REDUCE(DT, reduce_mean, 0.0f, acc + LOAD_##DT(row, c), group_sum,  \
		   acc / (float)cols)                                          \
	ROW_REDUCE(DT, reduce_max, -INFINITY, max_nan(acc, LOAD_##DT(row, c)), \
		   group_max, acc)                                             \
	/* out may alias in exactly: every read of the row happens before  \
	 * the barriers in group_sum, and the last pass reads each element \
	 * in the item that then writes it. */                              \
	__kernel void softmax_##DT(ROW_ARGS(DT))                               \
	{                                                                      \
		ROW_BEGIN(DT)                                                  \
		__global ST_##DT *dst = out + out_off + r * cols;              \
		float m = -INFINITY, sum = 0.0f;                               \
		for (ulong c = lid; c < cols; c += step)                       \
			m = max_nan(m, LOAD_##DT(row, c));                     \
		m = group_max(m, scratch);                                     \
		for (ulong c = lid; c < cols; c += step)                       \
			sum += exp(LOAD_##DT(row, c) - m);                     \
		sum = group_sum(sum, scratch);                                 \
		for (ulong c = lid; c < cols; c += step)                       \
			STORE_##DT(dst, c, exp(LOAD_##DT(row, c) - m) / sum);  \
	}

ROWS(f32)
ROWS(f16)

/* The reductions of the integer types and float64, in T; scratch holds
 * T (kernels.c sizes it for 8-byte elements). */
#define TROW_REDUCE(DT, T, name, init, fold, group, result)                    \
	__kernel void name##_##DT(__global T *out, ulong out_off,              \
				  __global const T *in, ulong in_off,          \
				  ulong rows, ulong cols,                      \
				  __local T *scratch)                          \
	{                                                                      \
		ulong r = get_group_id(0);                                     \
		uint lid = get_local_id(0), step = get_local_size(0);          \
		if (r >= rows)                                                 \
			return;                                                \
		__global const T *row = in + in_off + r * cols;                \
		T acc = (init);                                                \
		for (ulong c = lid; c < cols; c += step)                       \
			acc = (fold);                                          \
		acc = group(acc, scratch);                                     \
		if (lid == 0)                                                  \
			out[out_off + r] = (result);                           \
	}

#define TROWS(DT, T, MAXF, LOWEST)                                             \
	GROUP_REDUCE(group_sum_##DT, T, PLUS)                                 \
	GROUP_REDUCE(group_max_##DT, T, MAXF)                                 \
	TROW_REDUCE(DT, T, reduce_sum, 0, acc + row[c], group_sum_##DT, acc)   \
	TROW_REDUCE(DT, T, reduce_mean, 0, acc + row[c], group_sum_##DT,       \
		    acc / (T)cols)                                             \
	TROW_REDUCE(DT, T, reduce_max, LOWEST, MAXF(acc, row[c]),              \
		    group_max_##DT, acc)

TROWS(i32, int, max, INT_MIN)
TROWS(i64, long, max, LONG_MIN)

#ifdef cl_khr_fp64
TROWS(f64, double, max_nan_f64, -INFINITY)

__kernel void softmax_f64(__global double *out, ulong out_off,
			  __global const double *in, ulong in_off, ulong rows,
			  ulong cols, __local double *scratch)
{
	ulong r = get_group_id(0);
	uint lid = get_local_id(0), step = get_local_size(0);
	if (r >= rows)
		return;
	__global const double *row = in + in_off + r * cols;
	__global double *dst = out + out_off + r * cols;
	double m = -INFINITY, sum = 0.0;
	for (ulong c = lid; c < cols; c += step)
		m = max_nan_f64(m, row[c]);
	m = group_max_f64(m, scratch);
	for (ulong c = lid; c < cols; c += step)
		sum += exp(row[c] - m);
	sum = group_sum_f64(sum, scratch);
	for (ulong c = lid; c < cols; c += step)
		dst[c] = exp(row[c] - m) / sum;
}
#endif
