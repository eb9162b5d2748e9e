/* wafer — SPDX-License-Identifier: MIT
 *
 * typed.cu: the catalogue's kernels for the element types NumPy users
 * start with — float64, int32, int64 and uint8: fill, copy, the unary
 * operations (on the integers only neg, abs and relu), the binary ones
 * (dense, with a scalar, strided), copy_strided, the reductions, softmax
 * (float64) and one matmul kernel (tile64). cuBLAS's dgemm is float64's
 * second matmul candidate (kernels.c).
 *
 * Arithmetic is in the element type itself, as plugin.h asks: float64 in
 * double, integers wrapping modulo 2^bits (computed in the unsigned type,
 * where wrapping is defined), integer division truncating with x / 0 = 0.
 * Integer sums and means wrap the same way, so any order of the fold
 * gives the same result. The kernels are plain grid-stride loops (the
 * tuned vector paths are for f32, f16 and bf16 in the other files). */
#include <math.h>

#include "plugins/cuda/kernels/common.cuh"

#define THREADS 256
#define WARPS (THREADS / 32)

/*===----------------------------------------------------------------------===
 * The types and their operations
 *===----------------------------------------------------------------------===*/

/* U: where T's arithmetic is done (wraps for the integers). */
template <typename T> struct Num;
#define NUM(T, ARITHMETIC, INTEGER)                                            \
	template <> struct Num<T> {                                            \
		typedef ARITHMETIC U;                                          \
		static const bool integer = INTEGER;                           \
	};
NUM(double, double, false)
NUM(int32_t, uint32_t, true)
NUM(int64_t, uint64_t, true)
NUM(uint8_t, uint32_t, true)

/* plugin.h's cast rule from a double (fill values, scalars): integers
 * truncate toward zero and saturate, NaN gives 0. */
template <typename T, typename B>
static __device__ __forceinline__ T saturate(double d, B lo, B hi)
{
	return d != d ? (T)0 : d <= (double)lo ? (T)lo : d >= (double)hi ? (T)hi : (T)d;
}
template <typename T> static __device__ T from_double(double d);
template <> __device__ double from_double<double>(double d) { return d; }
template <> __device__ int32_t from_double<int32_t>(double d)
{
	return saturate<int32_t>(d, INT32_MIN, INT32_MAX);
}
/* 2^63 - 1 rounds up to 2^63 as a double, where saturation begins. */
template <> __device__ int64_t from_double<int64_t>(double d)
{
	return saturate<int64_t>(d, INT64_MIN, INT64_MAX);
}
template <> __device__ uint8_t from_double<uint8_t>(double d)
{
	return saturate<uint8_t>(d, 0, 255);
}

/* The operations, in a namespace of their own (common.cuh has float
 * ones of the same names). */
namespace typed {

#define WRAP(T, expr) ((T)(typename Num<T>::U)(expr))
#define U_(T, x) ((typename Num<T>::U)(x))

struct Add {
	template <typename T> static __device__ T apply(T a, T b)
	{
		return WRAP(T, U_(T, a) + U_(T, b));
	}
};
struct Sub {
	template <typename T> static __device__ T apply(T a, T b)
	{
		return WRAP(T, U_(T, a) - U_(T, b));
	}
};
struct Mul {
	template <typename T> static __device__ T apply(T a, T b)
	{
		return WRAP(T, U_(T, a) * U_(T, b));
	}
};
struct Div {
	template <typename T> static __device__ T apply(T a, T b)
	{
		if (!Num<T>::integer)
			return a / b;
		if (b == 0)
			return 0;
		if ((T)-1 < 0 && b == (T)-1) /* MIN / -1 wraps */
			return WRAP(T, 0 - U_(T, a));
		return a / b;
	}
};
/* NaN when either operand is. */
struct Max {
	template <typename T> static __device__ T apply(T a, T b)
	{
		return a != a || b != b ? a + b : (a > b ? a : b);
	}
};
struct Min {
	template <typename T> static __device__ T apply(T a, T b)
	{
		return a != a || b != b ? a + b : (a < b ? a : b);
	}
};

struct Neg {
	template <typename T> static __device__ T apply(T x)
	{
		if constexpr (Num<T>::integer)
			return WRAP(T, 0 - U_(T, x));
		else /* the sign bit: -0.0 for 0.0 */
			return -x;
	}
};
struct Abs {
	template <typename T> static __device__ T apply(T x)
	{
		if constexpr ((T)-1 > 0) /* unsigned */
			return x;
		else /* -0.0 gives +0.0 */
			return x < 0 ? Neg::apply(x) : (x == 0 ? (T)0 : x);
	}
};
/* max(x, 0), NaN propagating. */
struct Relu {
	template <typename T> static __device__ T apply(T x)
	{
		return x > 0 || x != x ? x : (T)0;
	}
};

static __device__ __forceinline__ double sigmoid(double x)
{
	const double t = exp(-fabs(x));
	const double s = 1.0 / (1.0 + t);
	return x >= 0.0 ? s : t * s;
}

#define FLOAT_OP(name, expr)                                                   \
	struct name {                                                          \
		static __device__ double apply(double x) { return expr; }      \
	}
FLOAT_OP(Exp, exp(x));
FLOAT_OP(Log, log(x));
FLOAT_OP(Sqrt, sqrt(x));
FLOAT_OP(Tanh, tanh(x));
FLOAT_OP(Sigmoid, sigmoid(x));
FLOAT_OP(Gelu, x * sigmoid(2.0 * 0.7978845608028654 *
			   (x + 0.044715 * x * x * x)));

} /* namespace typed */


/*===----------------------------------------------------------------------===
 * Elementwise
 *===----------------------------------------------------------------------===*/

#define EACH(i, n) for (uint64_t i = global_thread(); i < (n); i += grid_threads())

#define KERNEL extern "C" __global__ void __launch_bounds__(THREADS)

#define FILL(s, T)                                                             \
	KERNEL wafer_fill_##s(void *out, struct wafer_fill_params p)           \
	{                                                                      \
		const T v = from_double<T>(p.value);                           \
		EACH(i, p.count) ((T *)out)[i] = v;                            \
	}

#define COPY(s, T)                                                             \
	KERNEL wafer_copy_##s(void *out, const void *in,                       \
			      struct wafer_elementwise_params p)               \
	{                                                                      \
		EACH(i, p.count) ((T *)out)[i] = ((const T *)in)[i];           \
	}

#define UNARY(name, Op, s, T)                                                  \
	KERNEL wafer_##name##_##s(void *out, const void *in,                   \
				  struct wafer_elementwise_params p)           \
	{                                                                      \
		EACH(i, p.count) ((T *)out)[i] = Op::apply(((const T *)in)[i]); \
	}

#define BINARY(name, Op, s, T)                                                 \
	KERNEL wafer_##name##_##s(void *out, const void *a, const void *b,     \
				  struct wafer_elementwise_params p)           \
	{                                                                      \
		EACH(i, p.count) ((T *)out)[i] = Op::apply(                    \
			((const T *)a)[i], ((const T *)b)[i]);                 \
	}                                                                      \
	KERNEL wafer_##name##_scalar_##s(void *out, const void *a,             \
					 struct wafer_scalar_params p)         \
	{                                                                      \
		const T v = from_double<T>(p.scalar);                          \
		EACH(i, p.count) ((T *)out)[i] =                               \
			p.scalar_first ? Op::apply(v, ((const T *)a)[i])       \
				       : Op::apply(((const T *)a)[i], v);      \
	}                                                                      \
	KERNEL wafer_##name##_strided_##s(void *out, const void *a,            \
					  const void *b,                       \
					  struct wafer_binary_strided_params p) \
	{                                                                      \
		strided<T, Op, uint32_t>(out, a, b, p);                        \
	}                                                                      \
	KERNEL wafer_##name##_strided_##s##_i64(                               \
		void *out, const void *a, const void *b,                       \
		struct wafer_binary_strided_params p)                          \
	{                                                                      \
		strided<T, Op, uint64_t>(out, a, b, p);                        \
	}

/* Element |i| of a row-major |shape| as an offset through |strides|. */
template <typename Index>
static __device__ __forceinline__ Index at(Index i, int rank,
					   const uint64_t *shape,
					   const uint64_t *strides, Index offset)
{
	for (int d = rank - 1; d >= 0; d--) {
		const Index extent = (Index)shape[d];
		offset += (i % extent) * (Index)strides[d];
		i /= extent;
	}
	return offset;
}

template <typename Index>
static __device__ __forceinline__ Index count_of(int rank,
						 const uint64_t *shape)
{
	Index n = 1;
	for (int d = 0; d < rank; d++)
		n *= (Index)shape[d];
	return n;
}

template <typename T, typename Op, typename Index>
static __device__ __forceinline__ void
strided(void *out, const void *a, const void *b,
	const struct wafer_binary_strided_params &p)
{
	const int rank = (int)p.rank;
	const Index n = count_of<Index>(rank, p.shape);

	for (Index i = (Index)global_thread(); i < n; i += (Index)grid_threads())
		((T *)out)[i] = Op::apply(
			((const T *)a)[at<Index>(i, rank, p.shape, p.a_strides,
						 (Index)p.a_offset)],
			((const T *)b)[at<Index>(i, rank, p.shape, p.b_strides,
						 (Index)p.b_offset)]);
}

template <typename T, typename Index>
static __device__ __forceinline__ void
gather(void *out, const void *in, const struct wafer_strided_copy_params &p)
{
	const int rank = (int)p.rank;
	const Index n = count_of<Index>(rank, p.shape);

	for (Index i = (Index)global_thread(); i < n; i += (Index)grid_threads())
		((T *)out)[i] = ((const T *)in)[at<Index>(
			i, rank, p.shape, p.strides, (Index)p.offset)];
}

#define GATHER(s, T)                                                           \
	KERNEL wafer_copy_strided_##s(void *out, const void *in,               \
				      struct wafer_strided_copy_params p)      \
	{                                                                      \
		gather<T, uint32_t>(out, in, p);                               \
	}                                                                      \
	KERNEL wafer_copy_strided_##s##_i64(                                   \
		void *out, const void *in, struct wafer_strided_copy_params p) \
	{                                                                      \
		gather<T, uint64_t>(out, in, p);                               \
	}

/*===----------------------------------------------------------------------===
 * Rows: one block of THREADS per row, blocks striding over the rows
 *===----------------------------------------------------------------------===*/

struct SumOp {
	template <typename A> static __device__ A identity(void) { return 0; }
	template <typename A> static __device__ A combine(A a, A b)
	{
		return a + b;
	}
};
struct MaxOp {
	template <typename A> static __device__ A identity(void)
	{
		return Num<A>::integer ? (A)0 : (A)-INFINITY;
	}
	template <typename A> static __device__ A combine(A a, A b)
	{
		return typed::Max::apply(a, b);
	}
};

/* The block's fold of |row| with Op, in A (the unsigned type for an
 * integer sum, T itself otherwise); every thread gets it. */
template <typename T, typename A, typename Op>
static __device__ A row_fold(const T *row, uint64_t cols, A *scratch)
{
	A acc = threadIdx.x < cols ? (A)row[threadIdx.x] : Op::template identity<A>();
	for (uint64_t c = threadIdx.x + THREADS; c < cols; c += THREADS)
		acc = Op::combine(acc, (A)row[c]);
	__syncthreads();
	scratch[threadIdx.x] = acc;
	__syncthreads();
	for (int half = THREADS / 2; half > 0; half /= 2) {
		if (threadIdx.x < half && threadIdx.x + half < cols)
			scratch[threadIdx.x] = Op::combine(
				scratch[threadIdx.x], scratch[threadIdx.x + half]);
		__syncthreads();
	}
	return scratch[0];
}

/* The mean of a row whose (wrapped) sum is |s|; integers truncate. In
 * int64_t, as |cols| need not fit T (301 is not a uint8). */
template <typename T>
static __device__ __forceinline__ T mean_of(T s, uint64_t cols)
{
	if constexpr (Num<T>::integer)
		return (T)((int64_t)s / (int64_t)cols);
	else
		return s / (T)cols;
}

template <typename T, int KIND>
static __device__ void rows(void *out_, const void *in_,
			    const struct wafer_rows_params &p)
{
	typedef typename Num<T>::U A; /* double for float64 */
	__shared__ A sums[THREADS];
	__shared__ T maxes[THREADS];
	T *out = (T *)out_;

	for (uint64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
		const T *row = (const T *)in_ + r * p.cols;
		if (KIND == 1) {
			T m = row_fold<T, T, MaxOp>(row, p.cols, maxes);
			if (threadIdx.x == 0)
				out[r] = m;
			continue;
		}
		T s = (T)row_fold<T, A, SumOp>(row, p.cols, sums);
		if (threadIdx.x == 0)
			out[r] = KIND == 2 ? mean_of(s, p.cols) : s;
	}
}

KERNEL wafer_softmax_f64(void *out_, const void *in_,
			 struct wafer_rows_params p)
{
	__shared__ double scratch[THREADS];
	double *out = (double *)out_;

	for (uint64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
		const double *row = (const double *)in_ + r * p.cols;
		double *o = out + r * p.cols;
		const double m = row_fold<double, double, MaxOp>(row, p.cols,
								 scratch);
		double e = 0;
		for (uint64_t c = threadIdx.x; c < p.cols; c += THREADS)
			e += exp(row[c] - m);
		__syncthreads();
		scratch[threadIdx.x] = e;
		__syncthreads();
		for (int half = THREADS / 2; half > 0; half /= 2) {
			if (threadIdx.x < half)
				scratch[threadIdx.x] += scratch[threadIdx.x + half];
			__syncthreads();
		}
		const double s = scratch[0];
		for (uint64_t c = threadIdx.x; c < p.cols; c += THREADS)
			o[c] = exp(row[c] - m) / s;
	}
}

#define ROWS(s, T)                                                             \
	KERNEL wafer_reduce_sum_##s(void *o, const void *i,                    \
				    struct wafer_rows_params p)                \
	{                                                                      \
		rows<T, 0>(o, i, p);                                           \
	}                                                                      \
	KERNEL wafer_reduce_max_##s(void *o, const void *i,                    \
				    struct wafer_rows_params p)                \
	{                                                                      \
		rows<T, 1>(o, i, p);                                           \
	}                                                                      \
	KERNEL wafer_reduce_mean_##s(void *o, const void *i,                   \
				     struct wafer_rows_params p)               \
	{                                                                      \
		rows<T, 2>(o, i, p);                                           \
	}

/*===----------------------------------------------------------------------===
 * matmul: block (x, y, z) computes C's 64 x 64 tile (y, x) of batch entry
 * z; each of the 256 threads 16 elements of it, one column each
 *===----------------------------------------------------------------------===*/

template <typename T>
static __device__ void tile64(void *c_, const void *a_, const void *b_,
			      const cuda_matmul_args &p)
{
	typedef typename Num<T>::U A;
	const uint64_t z = blockIdx.z;
	const T *a = (const T *)a_ + z * p.stride_a;
	const T *b = (const T *)b_ + z * p.stride_b;
	T *c = (T *)c_ + z * p.stride_c;
	const uint64_t j = (uint64_t)blockIdx.x * 64 + threadIdx.x % 64;
	const uint64_t i0 = (uint64_t)blockIdx.y * 64 + threadIdx.x / 64 * 16;

	if (j >= p.n)
		return;
	for (uint64_t i = i0; i < i0 + 16 && i < p.m; i++) {
		A s = 0;
		for (uint64_t l = 0; l < p.k; l++)
			s += (A)a[p.trans_a ? l * p.lda + i : i * p.lda + l] *
			     (A)b[p.trans_b ? j * p.ldb + l : l * p.ldb + j];
		c[i * p.ldc + j] = (T)s;
	}
}

#define MATMUL(s, T)                                                           \
	KERNEL wafer_matmul_##s##_tile64(void *c, const void *a,               \
					 const void *b,                        \
					 struct cuda_matmul_args p)            \
	{                                                                      \
		tile64<T>(c, a, b, p);                                         \
	}

/*===----------------------------------------------------------------------===
 * The kernels
 *===----------------------------------------------------------------------===*/

#define ALL(M, ...)                                                            \
	M(__VA_ARGS__, f64, double)                                            \
	M(__VA_ARGS__, i32, int32_t)                                           \
	M(__VA_ARGS__, i64, int64_t)                                           \
	M(__VA_ARGS__, u8, uint8_t)
#define APPLY(M, s, T) M(s, T)

ALL(APPLY, FILL)
COPY(b64, uint64_t)
COPY(b8, uint8_t)
GATHER(b64, uint64_t)
GATHER(b8, uint8_t)

ALL(UNARY, neg, typed::Neg)
ALL(UNARY, abs, typed::Abs)
ALL(UNARY, relu, typed::Relu)
UNARY(exp, typed::Exp, f64, double)
UNARY(log, typed::Log, f64, double)
UNARY(sqrt, typed::Sqrt, f64, double)
UNARY(gelu, typed::Gelu, f64, double)
UNARY(sigmoid, typed::Sigmoid, f64, double)
UNARY(tanh, typed::Tanh, f64, double)

ALL(BINARY, add, typed::Add)
ALL(BINARY, sub, typed::Sub)
ALL(BINARY, mul, typed::Mul)
ALL(BINARY, div, typed::Div)
ALL(BINARY, max, typed::Max)
ALL(BINARY, min, typed::Min)

ALL(APPLY, ROWS)
ALL(APPLY, MATMUL)
