/* wafer — SPDX-License-Identifier: MIT
 *
 * common.cuh: what every kernel file of the cuda plugin shares — the
 * catalogue's parameter blocks (wafer/plugin.h, plain C), and the element
 * types. Kernels keep f16 and bf16 values as their 16-bit patterns and do
 * arithmetic in float: Elem<T>::load turns stored bits into a float,
 * Elem<T>::store rounds a float back (round to nearest even).
 *
 * Every kernel is extern "C", so its name in the fatbin is the plain
 * symbol kernels.c looks up with cuModuleGetFunction. */
#ifndef WAFER_PLUGINS_CUDA_KERNELS_COMMON_CUH
#define WAFER_PLUGINS_CUDA_KERNELS_COMMON_CUH

#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <wafer/plugin.h>

#include "plugins/cuda/kernels/args.h"

/* Storage tags: the element type a kernel is instantiated for. */
struct F32 {};
struct F16 {};
struct BF16 {};
struct I32 {};

template <typename T> struct Elem;

template <> struct Elem<F32> {
	typedef float Bits;
	static __device__ __forceinline__ float load(Bits b) { return b; }
	static __device__ __forceinline__ Bits store(float f) { return f; }
	static __device__ __forceinline__ Bits from_double(double d)
	{
		return (float)d;
	}
};

/* f16 and bf16 are stored as their bits; |name| is the part of the CUDA
 * intrinsics' names for the type (__half2float, __bfloat162float, ...). */
#define ELEM_16BIT(T, name)                                                    \
	template <> struct Elem<T> {                                           \
		typedef unsigned short Bits;                                   \
		static __device__ __forceinline__ float load(Bits b)          \
		{                                                              \
			return __##name##2float(__ushort_as_##name(b));        \
		}                                                              \
		static __device__ __forceinline__ Bits store(float f)         \
		{                                                              \
			return __##name##_as_ushort(__float2##name##_rn(f));   \
		}                                                              \
		static __device__ __forceinline__ Bits from_double(double d)  \
		{                                                              \
			return __##name##_as_ushort(__double2##name(d));       \
		}                                                              \
	}

ELEM_16BIT(F16, half);
ELEM_16BIT(BF16, bfloat16);

/* i32 moves as bits (copy, copy_strided); cast converts it itself. */
template <> struct Elem<I32> {
	typedef int32_t Bits;
};

/* 16 bytes of elements: the widest load and store a thread issues. */
template <typename T> union Vec16 {
	uint4 raw;
	typename Elem<T>::Bits e[16 / sizeof(typename Elem<T>::Bits)];
};

/* The global index of the calling thread and the grid's thread count,
 * 64-bit: element counts may pass 2^32. */
static __device__ __forceinline__ uint64_t global_thread(void)
{
	return (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
}

static __device__ __forceinline__ uint64_t grid_threads(void)
{
	return (uint64_t)gridDim.x * blockDim.x;
}

/* The binary operations of elementwise.cu and strided.cu, as functors:
 * apply(a, b) = |expr|. */
#define BINARY_OP(name, expr)                                                  \
	struct name {                                                          \
		static __device__ __forceinline__ float apply(float a,        \
							      float b)        \
		{                                                              \
			return expr;                                           \
		}                                                              \
	}

BINARY_OP(Add, a + b);
BINARY_OP(Sub, a - b);
BINARY_OP(Mul, a * b);
BINARY_OP(Div, a / b);
/* NaN when either operand is: a plain compare would drop one. */
BINARY_OP(Max, a != a || b != b ? a + b : (a > b ? a : b));
BINARY_OP(Min, a != a || b != b ? a + b : (a < b ? a : b));

#endif
