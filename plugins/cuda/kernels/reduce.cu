/* wafer — SPDX-License-Identifier: MIT
 *
 * reduce.cu: reductions over the last axis (reduce_sum, reduce_max,
 * reduce_mean) and softmax, for f32, f16 and bf16, with struct
 * wafer_rows_params. One block of THREADS threads per row (a grid-stride
 * loop over rows when there are more rows than blocks): each thread folds
 * a strided share of the row in float, then the block combines the
 * threads' values, warps by shuffles and the warps through shared memory.
 *
 * reduce_max is NaN when any element is, as plugin.h asks (a comparison
 * alone drops NaN in one order). softmax makes three passes over its row
 * — the maximum, the sum of e^(x - max), the outputs — and writes only in
 * the last, each element by the thread that read it, so out may alias in. */
#include "plugins/cuda/kernels/common.cuh"

#define THREADS 256
#define WARPS (THREADS / 32)

struct SumOp {
	static __device__ __forceinline__ float identity(void) { return 0.0f; }
	static __device__ __forceinline__ float combine(float a, float b)
	{
		return a + b;
	}
};

/* NaN wins: once any value is NaN the result stays NaN. */
struct MaxOp {
	static __device__ __forceinline__ float identity(void)
	{
		return -INFINITY;
	}
	static __device__ __forceinline__ float combine(float a, float b)
	{
		return a != a || b != b ? a + b : (a > b ? a : b);
	}
};

/* Combines every thread's |v| with Op; all threads get the result.
 * |scratch| holds WARPS floats. The call begins with a barrier before it
 * writes scratch, so calls may follow each other on the same scratch. */
template <typename Op>
static __device__ __forceinline__ float block_reduce(float v, float *scratch)
{
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

#pragma unroll
	for (int o = 16; o > 0; o /= 2)
		v = Op::combine(v, __shfl_xor_sync(0xffffffffu, v, o));
	__syncthreads();
	if (lane == 0)
		scratch[warp] = v;
	__syncthreads();
	v = lane < WARPS ? scratch[lane] : Op::identity();
#pragma unroll
	for (int o = 16; o > 0; o /= 2)
		v = Op::combine(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* A row kernel's opening: B, the element's bits; |scratch| for
 * block_reduce; out and in typed. Blocks then stride over the rows. */
#define ROW_BODY(T)                                                            \
	typedef typename Elem<T>::Bits B;                                      \
	__shared__ float scratch[WARPS];                                       \
	B *out = (B *)out_;                                                    \
	const B *in = (const B *)in_

/* The block's fold of row[0 .. cols) with Op; all threads get it. */
template <typename T, typename Op>
static __device__ __forceinline__ float
row_fold(const typename Elem<T>::Bits *row, uint64_t cols, float *scratch)
{
	float acc = Op::identity();
	for (uint64_t c = threadIdx.x; c < cols; c += THREADS)
		acc = Op::combine(acc, Elem<T>::load(row[c]));
	return block_reduce<Op>(acc, scratch);
}

template <typename T, typename Op, bool MEAN>
static __device__ __forceinline__ void rows_reduce(void *out_, const void *in_,
						   const struct wafer_rows_params &p)
{
	ROW_BODY(T);

	for (uint64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
		float acc = row_fold<T, Op>(in + r * p.cols, p.cols, scratch);
		if (threadIdx.x == 0)
			out[r] = Elem<T>::store(MEAN ? acc / (float)p.cols : acc);
	}
}

template <typename T>
static __device__ __forceinline__ void softmax(void *out_, const void *in_,
					       const struct wafer_rows_params &p)
{
	ROW_BODY(T);

	for (uint64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
		const B *row = in + r * p.cols;
		B *dst = out + r * p.cols;
		const float m = row_fold<T, MaxOp>(row, p.cols, scratch);
		float sum = 0.0f;
		for (uint64_t c = threadIdx.x; c < p.cols; c += THREADS)
			sum += expf(Elem<T>::load(row[c]) - m);
		sum = block_reduce<SumOp>(sum, scratch);
		const float scale = 1.0f / sum;
		for (uint64_t c = threadIdx.x; c < p.cols; c += THREADS)
			dst[c] = Elem<T>::store(expf(Elem<T>::load(row[c]) - m) *
						scale);
		/* The next row's first block_reduce begins with a barrier,
		 * so scratch is free by then. */
	}
}

#define REDUCE(name, Op, MEAN, suffix, T)                                      \
	extern "C" __global__ void __launch_bounds__(THREADS)                  \
		wafer_##name##_##suffix(void *out, const void *in,             \
					struct wafer_rows_params p)            \
	{                                                                      \
		rows_reduce<T, Op, MEAN>(out, in, p);                          \
	}

#define SOFTMAX(suffix, T)                                                     \
	extern "C" __global__ void __launch_bounds__(THREADS)                  \
		wafer_softmax_##suffix(void *out, const void *in,              \
				       struct wafer_rows_params p)             \
	{                                                                      \
		softmax<T>(out, in, p);                                        \
	}

#define ALL_DTYPES(M, ...)                                                     \
	M(__VA_ARGS__, f32, F32)                                               \
	M(__VA_ARGS__, f16, F16)                                               \
	M(__VA_ARGS__, bf16, BF16)

ALL_DTYPES(REDUCE, reduce_sum, SumOp, false)
ALL_DTYPES(REDUCE, reduce_max, MaxOp, false)
ALL_DTYPES(REDUCE, reduce_mean, SumOp, true)
SOFTMAX(f32, F32)
SOFTMAX(f16, F16)
SOFTMAX(bf16, BF16)
