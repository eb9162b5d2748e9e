/* wafer — SPDX-License-Identifier: MIT
 *
 * strided.cu: the kernels that read strided views — binary operations on
 * broadcast or strided inputs (<op>_strided), copy_strided — and cast
 * between every pair of element types.
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

/* Reading: each source type as float and as double (exactly where the
 * type fits), and an integer one as an int64_t too: integers convert
 * from their own value, so each target rounds once. */
#define FROM_FLOAT(name, Bits, to_f, to_d)                                     \
	struct name {                                                          \
		typedef Bits B;                                                \
		static __device__ __forceinline__ float to_float(B v)         \
		{                                                              \
			return to_f;                                           \
		}                                                              \
		static __device__ __forceinline__ double to_double(B v)       \
		{                                                              \
			return to_d;                                           \
		}                                                              \
		static const bool integer = false;                             \
		static __device__ __forceinline__ int64_t to_int(B v)         \
		{                                                              \
			return 0;                                              \
		}                                                              \
	}

FROM_FLOAT(FromF32, float, v, v);
FROM_FLOAT(FromF16, unsigned short, Elem<F16>::load(v), Elem<F16>::load(v));
FROM_FLOAT(FromBF16, unsigned short, Elem<BF16>::load(v),
	   Elem<BF16>::load(v));
FROM_FLOAT(FromF64, double, __double2float_rn(v), v);

#define FROM_INT(name, Bits)                                                   \
	struct name {                                                          \
		typedef Bits B;                                                \
		static __device__ __forceinline__ float to_float(B v)         \
		{                                                              \
			return __ll2float_rn((long long)v);                    \
		}                                                              \
		static __device__ __forceinline__ double to_double(B v)       \
		{                                                              \
			return __ll2double_rn((long long)v);                   \
		}                                                              \
		static const bool integer = true;                              \
		static __device__ __forceinline__ int64_t to_int(B v)         \
		{                                                              \
			return v;                                              \
		}                                                              \
	}

FROM_INT(FromI32, int32_t);
FROM_INT(FromI64, int64_t);
FROM_INT(FromU8, uint8_t);

/* Writing, round to nearest even. f16 and bf16 go from a double (one
 * rounding from a float64 or an integer; float, f16 and bf16 sources
 * widen exactly). */
struct ToF32 {
	typedef float B;
	template <typename From>
	static __device__ __forceinline__ B convert(typename From::B v)
	{
		return From::to_float(v);
	}
};

struct ToF64 {
	typedef double B;
	template <typename From>
	static __device__ __forceinline__ B convert(typename From::B v)
	{
		return From::to_double(v);
	}
};

template <typename T> struct To16 {
	typedef unsigned short B;
	template <typename From>
	static __device__ __forceinline__ B convert(typename From::B v)
	{
		return Elem<T>::from_double(From::to_double(v));
	}
};
struct ToF16 : To16<F16> {};
struct ToBF16 : To16<BF16> {};

/* Toward zero, saturating at [lo, hi]; NaN gives 0. */
template <typename Bits, int64_t lo, int64_t hi> struct ToInt {
	typedef Bits B;
	template <typename From>
	static __device__ __forceinline__ B convert(typename From::B v)
	{
		if (From::integer) {
			const int64_t x = From::to_int(v);
			return (B)(x < lo ? lo : x > hi ? hi : x);
		}
		const double d = From::to_double(v);
		if (d != d)
			return 0;
		/* (double)hi of int64 is 2^63, where saturation begins */
		if (d >= (double)hi)
			return (B)hi;
		if (d <= (double)lo)
			return (B)lo;
		return (B)d;
	}
};
typedef ToInt<int32_t, INT32_MIN, INT32_MAX> ToI32;
typedef ToInt<int64_t, INT64_MIN, INT64_MAX> ToI64;
typedef ToInt<uint8_t, 0, 255> ToU8;

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

/* In the order of kernels.c's cast_names. */
#define CAST_TO_ALL(in, From)                                                  \
	CAST(in, From, f32, ToF32)                                             \
	CAST(in, From, f16, ToF16)                                             \
	CAST(in, From, bf16, ToBF16)                                           \
	CAST(in, From, i32, ToI32)                                             \
	CAST(in, From, u8, ToU8)                                               \
	CAST(in, From, f64, ToF64)                                             \
	CAST(in, From, i64, ToI64)

CAST_TO_ALL(f32, FromF32)
CAST_TO_ALL(f16, FromF16)
CAST_TO_ALL(bf16, FromBF16)
CAST_TO_ALL(i32, FromI32)
CAST_TO_ALL(u8, FromU8)
CAST_TO_ALL(f64, FromF64)
CAST_TO_ALL(i64, FromI64)
