/* wafer — SPDX-License-Identifier: MIT
 *
 * strided.cu: the kernels that read strided views — binary operations on
 * broadcast or strided inputs (<op>_strided), copy_strided — and cast.
 *
 * An output index i becomes the coordinates (i_0 .. i_{r-1}) of the
 * row-major shape, by division from the last dimension; an input's
 * element is offset + sum_d i_d * stride_d. Divisions are the cost here,
 * so each strided kernel comes twice: with 32-bit indices (the plugin
 * picks these when every index of the launch fits) and 64-bit ones (the
 * _i64 symbols). The rank loop is unrolled to WAFER_KERNEL_MAX_RANK with
 * compile-time indices, so the shape and strides stay in the parameter
 * space. */
#include "plugins/cuda/kernels/common.cuh"

#define THREADS 256

/*===----------------------------------------------------------------------===
 * Strided binary
 *===----------------------------------------------------------------------===*/

/* Elements in the shape of |p| (rank |rank|), as Index. */
template <typename Index, typename Params>
static __device__ __forceinline__ Index shape_count(const Params &p, int rank)
{
	Index count = 1;

#pragma unroll
	for (int d = 0; d < WAFER_KERNEL_MAX_RANK; d++)
		if (d < rank)
			count *= (Index)p.shape[d];
	return count;
}

template <typename T, typename Op, typename Index>
static __device__ __forceinline__ void
binary_strided(void *out_, const void *a_, const void *b_,
	       const struct wafer_binary_strided_params &p)
{
	typedef typename Elem<T>::Bits B;
	B *out = (B *)out_;
	const B *a = (const B *)a_, *b = (const B *)b_;
	const int rank = (int)p.rank;
	const Index count = shape_count<Index>(p, rank);

	for (Index i = (Index)global_thread(); i < count;
	     i += (Index)grid_threads()) {
		Index rem = i, ai = (Index)p.a_offset, bi = (Index)p.b_offset;
#pragma unroll
		for (int d = WAFER_KERNEL_MAX_RANK - 1; d >= 0; d--) {
			if (d >= rank)
				continue;
			const Index extent = (Index)p.shape[d];
			const Index id = rem % extent;
			rem /= extent;
			ai += id * (Index)p.a_strides[d];
			bi += id * (Index)p.b_strides[d];
		}
		out[i] = Elem<T>::store(
			Op::apply(Elem<T>::load(a[ai]), Elem<T>::load(b[bi])));
	}
}

#define STRIDED(name, Op, suffix, T)                                           \
	extern "C" __global__ void __launch_bounds__(THREADS)                  \
		wafer_##name##_strided_##suffix(                               \
			void *out, const void *a, const void *b,               \
			struct wafer_binary_strided_params p)                  \
	{                                                                      \
		binary_strided<T, Op, uint32_t>(out, a, b, p);                 \
	}                                                                      \
	extern "C" __global__ void __launch_bounds__(THREADS)                  \
		wafer_##name##_strided_##suffix##_i64(                         \
			void *out, const void *a, const void *b,               \
			struct wafer_binary_strided_params p)                  \
	{                                                                      \
		binary_strided<T, Op, uint64_t>(out, a, b, p);                 \
	}

#define ALL_DTYPES(M, ...)                                                     \
	M(__VA_ARGS__, f32, F32)                                               \
	M(__VA_ARGS__, f16, F16)                                               \
	M(__VA_ARGS__, bf16, BF16)

ALL_DTYPES(STRIDED, add, Add)
ALL_DTYPES(STRIDED, sub, Sub)
ALL_DTYPES(STRIDED, mul, Mul)
ALL_DTYPES(STRIDED, div, Div)
ALL_DTYPES(STRIDED, max, Max)
ALL_DTYPES(STRIDED, min, Min)

/*===----------------------------------------------------------------------===
 * copy_strided: a gather of bits, by element size
 *===----------------------------------------------------------------------===*/

template <typename B, typename Index>
static __device__ __forceinline__ void
gather(void *out_, const void *in_, const struct wafer_strided_copy_params &p)
{
	B *out = (B *)out_;
	const B *in = (const B *)in_;
	const int rank = (int)p.rank;
	const Index count = shape_count<Index>(p, rank);

	for (Index i = (Index)global_thread(); i < count;
	     i += (Index)grid_threads()) {
		Index rem = i, at = (Index)p.offset;
#pragma unroll
		for (int d = WAFER_KERNEL_MAX_RANK - 1; d >= 0; d--) {
			if (d >= rank)
				continue;
			const Index extent = (Index)p.shape[d];
			at += (rem % extent) * (Index)p.strides[d];
			rem /= extent;
		}
		out[i] = in[at];
	}
}

#define GATHER(suffix, B)                                                      \
	extern "C" __global__ void __launch_bounds__(THREADS)                  \
		wafer_copy_strided_##suffix(                                   \
			void *out, const void *in,                             \
			struct wafer_strided_copy_params p)                    \
	{                                                                      \
		gather<B, uint32_t>(out, in, p);                               \
	}                                                                      \
	extern "C" __global__ void __launch_bounds__(THREADS)                  \
		wafer_copy_strided_##suffix##_i64(                             \
			void *out, const void *in,                             \
			struct wafer_strided_copy_params p)                    \
	{                                                                      \
		gather<B, uint64_t>(out, in, p);                               \
	}

GATHER(b32, uint32_t)
GATHER(b16, uint16_t)

/*===----------------------------------------------------------------------===
 * cast: wafer_cast_<in>_<out>
 *===----------------------------------------------------------------------===*/

/* Reading: f16 and bf16 widen to float exactly; i32 stays an integer
 * (converting it here would round before the target's own rounding). */
struct FromF32 {
	typedef float B;
	static __device__ __forceinline__ float to_float(B v) { return v; }
	static __device__ __forceinline__ double to_double(B v) { return v; }
	static const bool integer = false;
	static __device__ __forceinline__ int32_t to_int(B v) { return 0; }
};

/* f16 and bf16: Elem's exact widening. */
template <typename T> struct From16 {
	typedef unsigned short B;
	static __device__ __forceinline__ float to_float(B v)
	{
		return Elem<T>::load(v);
	}
	static __device__ __forceinline__ double to_double(B v)
	{
		return to_float(v);
	}
	static const bool integer = false;
	static __device__ __forceinline__ int32_t to_int(B v) { return 0; }
};
struct FromF16 : From16<F16> {};
struct FromBF16 : From16<BF16> {};

struct FromI32 {
	typedef int32_t B;
	static __device__ __forceinline__ float to_float(B v)
	{
		return __int2float_rn(v);
	}
	static __device__ __forceinline__ double to_double(B v)
	{
		return (double)v; /* exact */
	}
	static const bool integer = true;
	static __device__ __forceinline__ int32_t to_int(B v) { return v; }
};

/* Writing, round to nearest even: an integer source goes through double
 * (exact for every int32), so each target rounds once. */
struct ToF32 {
	typedef float B;
	template <typename From>
	static __device__ __forceinline__ B convert(typename From::B v)
	{
		return From::to_float(v);
	}
};

/* f16 and bf16: Elem's conversions, from double for an integer source. */
template <typename T> struct To16 {
	typedef unsigned short B;
	template <typename From>
	static __device__ __forceinline__ B convert(typename From::B v)
	{
		if (From::integer)
			return Elem<T>::from_double(From::to_double(v));
		return Elem<T>::store(From::to_float(v));
	}
};
struct ToF16 : To16<F16> {};
struct ToBF16 : To16<BF16> {};

/* Toward zero, saturating; NaN gives 0. */
struct ToI32 {
	typedef int32_t B;
	template <typename From>
	static __device__ __forceinline__ B convert(typename From::B v)
	{
		if (From::integer)
			return From::to_int(v);
		const float f = From::to_float(v);
		if (f != f)
			return 0;
		if (f >= 2147483648.0f)
			return INT32_MAX;
		if (f <= -2147483648.0f)
			return INT32_MIN;
		return (int32_t)truncf(f);
	}
};

template <typename From, typename To>
static __device__ __forceinline__ void cast_body(void *out_, const void *in_,
						 uint64_t n)
{
	typename To::B *out = (typename To::B *)out_;
	const typename From::B *in = (const typename From::B *)in_;

	for (uint64_t i = global_thread(); i < n; i += grid_threads())
		out[i] = To::template convert<From>(in[i]);
}

#define CAST(in, From, out, To)                                                \
	extern "C" __global__ void __launch_bounds__(THREADS)                  \
		wafer_cast_##in##_##out(void *o, const void *i,                \
					struct wafer_cast_params p)            \
	{                                                                      \
		cast_body<From, To>(o, i, p.count);                            \
	}

#define CAST_TO_ALL(in, From)                                                  \
	CAST(in, From, f32, ToF32)                                             \
	CAST(in, From, f16, ToF16)                                             \
	CAST(in, From, bf16, ToBF16)                                           \
	CAST(in, From, i32, ToI32)

CAST_TO_ALL(f32, FromF32)
CAST_TO_ALL(f16, FromF16)
CAST_TO_ALL(bf16, FromBF16)
CAST_TO_ALL(i32, FromI32)
