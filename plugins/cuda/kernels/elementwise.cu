/* wafer — SPDX-License-Identifier: MIT
 *
 * elementwise.cu: noop, fill, copy, and the contiguous elementwise
 * kernels of the catalogue (wafer/plugin.h) — unary, binary, and binary
 * with a scalar — for f32, f16 and bf16 (copy also for i32).
 *
 * Every kernel walks its elements with a grid-stride loop in 16-byte
 * vectors (4 floats, 8 halves), then the tail one element at a time; the
 * plugin sizes the grid to fill the GPU (kernels.c), so one launch of any
 * count runs at memory bandwidth. Binding offsets are multiples of 256
 * bytes (CUDA_ALIGNMENT), so the vectors are aligned. Bindings may alias
 * exactly (out == in): each element is read before it is written by the
 * same thread, so no __restrict__.
 *
 * Arithmetic is in float, for f16 and bf16 too, rounded once when stored.
 * The transcendental functions are CUDA's full-accuracy ones (within 2
 * ulp; nvcc is not given --use_fast_math). */
#include "plugins/cuda/kernels/common.cuh"

#define THREADS 256

/*===----------------------------------------------------------------------===
 * Operations, on floats
 *===----------------------------------------------------------------------===*/

/* A unary operation as a functor: apply(x) = |expr|. */
#define UNARY_OP(name, expr)                                                   \
	struct name {                                                          \
		static __device__ __forceinline__ float apply(float x)        \
		{                                                              \
			return expr;                                           \
		}                                                              \
	}

UNARY_OP(Neg, -x);
UNARY_OP(Abs, fabsf(x));
UNARY_OP(Exp, expf(x));
UNARY_OP(Log, logf(x));
UNARY_OP(Sqrt, sqrtf(x));
/* max(x, 0) with NaN propagating (plugin.h). */
UNARY_OP(Relu, x > 0.0f || x != x ? x : 0.0f);

/* 1 / (1 + e^-x) from e^-|x|: nothing overflows. */
static __device__ __forceinline__ float sigmoid(float x)
{
	const float t = expf(-fabsf(x));
	const float s = 1.0f / (1.0f + t);
	return x >= 0.0f ? s : t * s;
}

UNARY_OP(Sigmoid, sigmoid(x));

/* The tanh form, 0.5 x (1 + tanh(u)) = x sigmoid(2u), which has no
 * cancellation for negative x. */
struct Gelu {
	static __device__ __forceinline__ float apply(float x)
	{
		const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
		return x * sigmoid(2.0f * u);
	}
};

UNARY_OP(Tanh, tanhf(x));

/* Binary operations: Add .. Min, in common.cuh. */

/*===----------------------------------------------------------------------===
 * Bodies
 *===----------------------------------------------------------------------===*/

/* A body's opening: B, its element's bits; V, elements in 16 bytes; out;
 * nv, whole 16-byte vectors in n elements; t and s, this thread's index
 * and the grid's stride. Vectors go first, then the tail one at a time. */
#define VEC_BODY(T)                                                            \
	typedef typename Elem<T>::Bits B;                                      \
	const int V = 16 / sizeof(B);                                          \
	B *out = (B *)out_;                                                    \
	const uint64_t nv = n / V, t = global_thread(), s = grid_threads()

template <typename T>
static __device__ __forceinline__ void fill_body(void *out_, double value,
						 uint64_t n)
{
	VEC_BODY(T);
	const B v = Elem<T>::from_double(value);
	Vec16<T> vec;

#pragma unroll
	for (int j = 0; j < V; j++)
		vec.e[j] = v;
	for (uint64_t i = t; i < nv; i += s)
		((uint4 *)out)[i] = vec.raw;
	for (uint64_t i = nv * V + t; i < n; i += s)
		out[i] = v;
}

/* Moves bits: no conversion, so NaN payloads survive. out == in is a
 * harmless self-copy. */
template <typename T>
static __device__ __forceinline__ void copy_body(void *out_, const void *in_,
						 uint64_t n)
{
	VEC_BODY(T);
	const B *in = (const B *)in_;

	for (uint64_t i = t; i < nv; i += s)
		((uint4 *)out)[i] = ((const uint4 *)in)[i];
	for (uint64_t i = nv * V + t; i < n; i += s)
		out[i] = in[i];
}

template <typename T, typename Op>
static __device__ __forceinline__ void unary_body(void *out_, const void *in_,
						  uint64_t n)
{
	VEC_BODY(T);
	const B *in = (const B *)in_;

	for (uint64_t i = t; i < nv; i += s) {
		Vec16<T> x;
		x.raw = ((const uint4 *)in)[i];
#pragma unroll
		for (int j = 0; j < V; j++)
			x.e[j] = Elem<T>::store(Op::apply(Elem<T>::load(x.e[j])));
		((uint4 *)out)[i] = x.raw;
	}
	for (uint64_t i = nv * V + t; i < n; i += s)
		out[i] = Elem<T>::store(Op::apply(Elem<T>::load(in[i])));
}

template <typename T, typename Op>
static __device__ __forceinline__ void binary_body(void *out_, const void *a_,
						   const void *b_, uint64_t n)
{
	VEC_BODY(T);
	const B *a = (const B *)a_, *b = (const B *)b_;

	for (uint64_t i = t; i < nv; i += s) {
		Vec16<T> x, y;
		x.raw = ((const uint4 *)a)[i];
		y.raw = ((const uint4 *)b)[i];
#pragma unroll
		for (int j = 0; j < V; j++)
			x.e[j] = Elem<T>::store(Op::apply(Elem<T>::load(x.e[j]),
							  Elem<T>::load(y.e[j])));
		((uint4 *)out)[i] = x.raw;
	}
	for (uint64_t i = nv * V + t; i < n; i += s)
		out[i] = Elem<T>::store(
			Op::apply(Elem<T>::load(a[i]), Elem<T>::load(b[i])));
}

/* The scalar is converted to the dtype first (plugin.h), then computed
 * with in float like every element. */
template <typename T, typename Op>
static __device__ __forceinline__ void
scalar_body(void *out_, const void *a_, const struct wafer_scalar_params &p)
{
	typedef typename Elem<T>::Bits B;
	const int V = 16 / sizeof(B);
	B *out = (B *)out_;
	const B *a = (const B *)a_;
	const uint64_t n = p.count, nv = n / V, t = global_thread(),
		       s = grid_threads();
	const float sv = Elem<T>::load(Elem<T>::from_double(p.scalar));
	const bool first = p.scalar_first != 0;

	for (uint64_t i = t; i < nv; i += s) {
		Vec16<T> x;
		x.raw = ((const uint4 *)a)[i];
#pragma unroll
		for (int j = 0; j < V; j++) {
			const float v = Elem<T>::load(x.e[j]);
			x.e[j] = Elem<T>::store(first ? Op::apply(sv, v)
						      : Op::apply(v, sv));
		}
		((uint4 *)out)[i] = x.raw;
	}
	for (uint64_t i = nv * V + t; i < n; i += s) {
		const float v = Elem<T>::load(a[i]);
		out[i] = Elem<T>::store(first ? Op::apply(sv, v)
					      : Op::apply(v, sv));
	}
}

/*===----------------------------------------------------------------------===
 * The kernels: wafer_<op>_<dtype>, wafer_<op>_scalar_<dtype>
 *===----------------------------------------------------------------------===*/

/* noop — what a launch costs (wafer-bench dispatch). */
extern "C" __global__ void wafer_noop(void)
{
}

#define FILL(suffix, T)                                                        \
	extern "C" __global__ void __launch_bounds__(THREADS)                  \
		wafer_fill_##suffix(void *out, struct wafer_fill_params p)     \
	{                                                                      \
		fill_body<T>(out, p.value, p.count);                           \
	}

/* By element size: f32 and i32 share b32, f16 and bf16 b16. */
#define COPY(suffix, T)                                                        \
	extern "C" __global__ void __launch_bounds__(THREADS)                  \
		wafer_copy_##suffix(void *out, const void *in,                 \
				    struct wafer_elementwise_params p)         \
	{                                                                      \
		copy_body<T>(out, in, p.count);                                \
	}

#define UNARY(name, Op, suffix, T)                                             \
	extern "C" __global__ void __launch_bounds__(THREADS)                  \
		wafer_##name##_##suffix(void *out, const void *in,             \
					struct wafer_elementwise_params p)     \
	{                                                                      \
		unary_body<T, Op>(out, in, p.count);                           \
	}

#define BINARY(name, Op, suffix, T)                                            \
	extern "C" __global__ void __launch_bounds__(THREADS)                  \
		wafer_##name##_##suffix(void *out, const void *a,              \
					const void *b,                         \
					struct wafer_elementwise_params p)     \
	{                                                                      \
		binary_body<T, Op>(out, a, b, p.count);                        \
	}

#define SCALAR(name, Op, suffix, T)                                            \
	extern "C" __global__ void __launch_bounds__(THREADS)                  \
		wafer_##name##_scalar_##suffix(void *out, const void *a,       \
					       struct wafer_scalar_params p)   \
	{                                                                      \
		scalar_body<T, Op>(out, a, p);                                 \
	}

#define ALL_DTYPES(M, ...)                                                     \
	M(__VA_ARGS__, f32, F32)                                               \
	M(__VA_ARGS__, f16, F16)                                               \
	M(__VA_ARGS__, bf16, BF16)

FILL(f32, F32)
FILL(f16, F16)
FILL(bf16, BF16)
COPY(b32, F32)
COPY(b16, F16)

ALL_DTYPES(UNARY, neg, Neg)
ALL_DTYPES(UNARY, abs, Abs)
ALL_DTYPES(UNARY, exp, Exp)
ALL_DTYPES(UNARY, log, Log)
ALL_DTYPES(UNARY, sqrt, Sqrt)
ALL_DTYPES(UNARY, relu, Relu)
ALL_DTYPES(UNARY, gelu, Gelu)
ALL_DTYPES(UNARY, sigmoid, Sigmoid)
ALL_DTYPES(UNARY, tanh, Tanh)

ALL_DTYPES(BINARY, add, Add)
ALL_DTYPES(BINARY, sub, Sub)
ALL_DTYPES(BINARY, mul, Mul)
ALL_DTYPES(BINARY, div, Div)
ALL_DTYPES(BINARY, max, Max)
ALL_DTYPES(BINARY, min, Min)

ALL_DTYPES(SCALAR, add, Add)
ALL_DTYPES(SCALAR, sub, Sub)
ALL_DTYPES(SCALAR, mul, Mul)
ALL_DTYPES(SCALAR, div, Div)
ALL_DTYPES(SCALAR, max, Max)
ALL_DTYPES(SCALAR, min, Min)
