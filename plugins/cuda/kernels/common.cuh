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

template <> struct Elem<F16> {
	typedef unsigned short Bits;
	static __device__ __forceinline__ float load(Bits b)
	{
		return __half2float(__ushort_as_half(b));
	}
	static __device__ __forceinline__ Bits store(float f)
	{
		return __half_as_ushort(__float2half_rn(f));
	}
	static __device__ __forceinline__ Bits from_double(double d)
	{
		return __half_as_ushort(__double2half(d));
	}
};

template <> struct Elem<BF16> {
	typedef unsigned short Bits;
	static __device__ __forceinline__ float load(Bits b)
	{
		return __bfloat162float(__ushort_as_bfloat16(b));
	}
	static __device__ __forceinline__ Bits store(float f)
	{
		return __bfloat16_as_ushort(__float2bfloat16_rn(f));
	}
	static __device__ __forceinline__ Bits from_double(double d)
	{
		return __bfloat16_as_ushort(__double2bfloat16(d));
	}
};

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

#endif
