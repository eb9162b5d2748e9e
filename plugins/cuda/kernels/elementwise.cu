/* wafer — SPDX-License-Identifier: MIT
 *
 * elementwise.cu: noop, fill, copy and the contiguous elementwise kernels
 * of the catalogue (wafer/plugin.h), each for f32, f16 and bf16.
 *
 * Every kernel walks its elements with a grid-stride loop in 16-byte
 * vectors (4 floats, 8 halves), then the tail one element at a time; the
 * plugin sizes the grid to fill the GPU (kernels.c), so one launch of any
 * count runs at memory bandwidth. Binding offsets are multiples of 256
 * bytes (CUDA_ALIGNMENT), so the vectors are aligned. Bindings may alias
 * exactly (out == in): each element is read before it is written by the
 * same thread, so no __restrict__. */
#include "plugins/cuda/kernels/common.cuh"

#define THREADS 256

/*===----------------------------------------------------------------------===
 * Operations, on floats
 *===----------------------------------------------------------------------===*/

struct Relu {
	/* The same expression as the cpu plugin's: NaN gives 0 there too. */
	static __device__ __forceinline__ float apply(float x)
	{
		return x > 0.0f ? x : 0.0f;
	}
};

struct Add {
	static __device__ __forceinline__ float apply(float a, float b)
	{
		return a + b;
	}
};

struct Mul {
	static __device__ __forceinline__ float apply(float a, float b)
	{
		return a * b;
	}
};

/*===----------------------------------------------------------------------===
 * Bodies
 *===----------------------------------------------------------------------===*/

template <typename T>
static __device__ __forceinline__ void fill_body(void *out_, double value,
						 uint64_t n)
{
	typedef typename Elem<T>::Bits B;
	const int V = 16 / sizeof(B);
	B *out = (B *)out_;
	const B v = Elem<T>::from_double(value);
	const uint64_t nv = n / V, t = global_thread(), s = grid_threads();
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
	typedef typename Elem<T>::Bits B;
	const int V = 16 / sizeof(B);
	B *out = (B *)out_;
	const B *in = (const B *)in_;
	const uint64_t nv = n / V, t = global_thread(), s = grid_threads();

	for (uint64_t i = t; i < nv; i += s)
		((uint4 *)out)[i] = ((const uint4 *)in)[i];
	for (uint64_t i = nv * V + t; i < n; i += s)
		out[i] = in[i];
}

template <typename T, typename Op>
static __device__ __forceinline__ void unary_body(void *out_, const void *in_,
						  uint64_t n)
{
	typedef typename Elem<T>::Bits B;
	const int V = 16 / sizeof(B);
	B *out = (B *)out_;
	const B *in = (const B *)in_;
	const uint64_t nv = n / V, t = global_thread(), s = grid_threads();

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
	typedef typename Elem<T>::Bits B;
	const int V = 16 / sizeof(B);
	B *out = (B *)out_;
	const B *a = (const B *)a_, *b = (const B *)b_;
	const uint64_t nv = n / V, t = global_thread(), s = grid_threads();

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

/*===----------------------------------------------------------------------===
 * The kernels: wafer_<op>_<dtype>
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

#define ALL_DTYPES(M, ...)                                                     \
	M(__VA_ARGS__, f32, F32)                                               \
	M(__VA_ARGS__, f16, F16)                                               \
	M(__VA_ARGS__, bf16, BF16)

FILL(f32, F32)
FILL(f16, F16)
FILL(bf16, BF16)
COPY(f32, F32)
COPY(f16, F16)
COPY(bf16, BF16)
ALL_DTYPES(UNARY, relu, Relu)
ALL_DTYPES(BINARY, add, Add)
ALL_DTYPES(BINARY, mul, Mul)
