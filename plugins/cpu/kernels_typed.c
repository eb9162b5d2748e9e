/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels_typed.c: the catalogue's elementwise, strided, reduction and
 * matmul kernels for the element types beyond f32 (f64, i32, i64, u8), stamped
 * out once per type from the list CPU_TYPED_DTYPES below. Adding an
 * element type is one line of that list (and its cast in
 * kernels_cast.c); nothing else in the plugin names the types.
 *
 * These are plain loops (gcc vectorises the dense ones) run on the pool;
 * the tuned f32 kernels live in the other kernel files, and OpenBLAS's
 * dgemm is a float64 matmul candidate in matmul_openblas.c. Integer rules,
 * the ones NumPy follows where it defines them: add, sub, mul, neg and
 * the sums wrap around in two's complement; div truncates toward zero,
 * x / 0 is 0 and INT_MIN / -1 wraps to INT_MIN; reduce_mean is the
 * wrapped sum divided by cols, truncated; u8 wraps modulo 256 (its neg
 * too) and its abs is the identity. Unary kernels on integers are
 * neg, abs and relu (exp and the rest are for floating types only). */
#include "build-config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "plugins/cpu/convert.h"
#include "plugins/cpu/kernels.h"
#include "plugins/cpu/kernels_math.h"
#include "plugins/cpu/threadpool.h"


/* X(suffix, C type, unsigned twin for wrapping, dtype, is_float) */
#define CPU_TYPED_DTYPES(X)                                                    \
	X(f64, double, double, WAFER_DTYPE_F64, 1)                             \
	X(i32, int32_t, uint32_t, WAFER_DTYPE_I32, 0)                          \
	X(i64, int64_t, uint64_t, WAFER_DTYPE_I64, 0)                          \
	X(u8, uint8_t, uint8_t, WAFER_DTYPE_U8, 0)

/*===----------------------------------------------------------------------===
 * Conversions of the parameter blocks' doubles
 *===----------------------------------------------------------------------===*/

static inline double cpu_from_double_f64(double v)
{
	return v;
}

#define cpu_from_double_i32 wafer_plugin_double_to_i32
#define cpu_from_double_i64 wafer_plugin_double_to_i64
#define cpu_from_double_u8 cpu_double_to_u8

/*===----------------------------------------------------------------------===
 * Element functions
 *===----------------------------------------------------------------------===*/

/* Floating: IEEE, NaN propagating through max, min and relu as in the
 * f32 kernels. */
static inline double add_f64(double a, double b) { return a + b; }
static inline double sub_f64(double a, double b) { return a - b; }
static inline double mul_f64(double a, double b) { return a * b; }
static inline double div_f64(double a, double b) { return a / b; }
static inline double max_f64(double a, double b)
{
	return a != a || b != b ? a + b : a > b ? a : b;
}
static inline double min_f64(double a, double b)
{
	return a != a || b != b ? a + b : a < b ? a : b;
}
static inline double mean_f64(double sum, uint64_t n) { return sum / (double)n; }
static inline double neg_f64(double x) { return -x; }
static inline double abs_f64(double x) { return fabs(x); }
static inline double relu_f64(double x) { return x > 0.0 || x != x ? x : 0.0; }
static inline double exp_f64(double x) { return exp(x); }
static inline double log_f64(double x) { return log(x); }
static inline double sqrt_f64(double x) { return sqrt(x); }
static inline double tanh_f64(double x) { return tanh(x); }
CPU_SIGMOID_GELU(double, sigmoid_f64, gelu_f64, exp, fabs, )

/* Integers: the wrapping ones go through the unsigned twin (signed
 * overflow is undefined in C). */
#define INT_FUNCTIONS(sfx, T, U)                                               \
	static inline T add_##sfx(T a, T b) { return (T)((U)a + (U)b); }       \
	static inline T sub_##sfx(T a, T b) { return (T)((U)a - (U)b); }       \
	static inline T mul_##sfx(T a, T b) { return (T)((U)a * (U)b); }       \
	static inline T div_##sfx(T a, T b)                                    \
	{                                                                      \
		if (b == 0)                                                    \
			return 0;                                              \
		if ((T)-1 < (T)0 && b == (T)-1)                                \
			return (T)(0 - (U)a);                                  \
		return a / b;                                                  \
	}                                                                      \
	static inline T max_##sfx(T a, T b) { return a > b ? a : b; }          \
	static inline T min_##sfx(T a, T b) { return a < b ? a : b; }          \
	static inline T neg_##sfx(T x) { return (T)(0 - (U)x); }               \
	static inline T relu_##sfx(T x) { return x > 0 ? x : 0; }              \
	static inline T mean_##sfx(T sum, uint64_t n)                          \
	{                                                                      \
		return (T)((int64_t)sum / (int64_t)n);                         \
	}
INT_FUNCTIONS(i32, int32_t, uint32_t)
INT_FUNCTIONS(i64, int64_t, uint64_t)
INT_FUNCTIONS(u8, uint8_t, uint8_t)
static inline int32_t abs_i32(int32_t x) { return x < 0 ? neg_i32(x) : x; }
static inline int64_t abs_i64(int64_t x) { return x < 0 ? neg_i64(x) : x; }
static inline uint8_t abs_u8(uint8_t x) { return x; }

/*===----------------------------------------------------------------------===
 * Shared pieces
 *===----------------------------------------------------------------------===*/

/* What every job carries: the bindings, the parameter block. */
struct typed_job {
	void *out;
	const void *a;
	const void *b;
	const void *params;
};

static wafer_status run_job(const struct cpu_kernel_args *args, size_t count,
			    size_t grain, cpu_range_fn range)
{
	struct typed_job job = {
		.out = args->data[0],
		.a = args->binding_count > 1 ? args->data[1] : NULL,
		.b = args->binding_count > 2 ? args->data[2] : NULL,
		.params = args->params,
	};

	cpu_pool_parallel_for(args->pool, count, grain ? grain : 1, range,
			      &job);
	return WAFER_OK;
}

/* Offsets of flat output index |pos| into two strided inputs. */
static void strided_offsets(const struct wafer_binary_strided_params *p,
			    uint64_t pos, uint64_t *oa, uint64_t *ob)
{
	uint64_t a = p->a_offset, b = p->b_offset;

	for (uint32_t d = p->rank; d-- > 0;) {
		uint64_t i = pos % p->shape[d];
		pos /= p->shape[d];
		a += i * p->a_strides[d];
		b += i * p->b_strides[d];
	}
	*oa = a;
	*ob = b;
}

/*===----------------------------------------------------------------------===
 * Kernel families, stamped per type
 *===----------------------------------------------------------------------===*/

/* run_<name>: <name>_range over the count |count_fn| reads from the
 * parameters, in pieces of CPU_GRAIN elements; and <name>_impl. */
#define COUNTED_RUN(name, count_fn, T)                                         \
	static wafer_status run_##name(const struct cpu_kernel_args *args)     \
	{                                                                      \
		return run_job(args, (size_t)count_fn(args->params),           \
			       CPU_GRAIN, name##_range);                       \
	}                                                                      \
	CPU_COUNTED_IMPL(name##_impl, count_fn, sizeof(T), run_##name);

#define UNARY(sfx, T, op)                                                      \
	static void op##_##sfx##_range(void *ctx, size_t begin, size_t end)    \
	{                                                                      \
		const struct typed_job *job = ctx;                             \
		T *out = job->out;                                             \
		const T *in = job->a;                                          \
		for (size_t i = begin; i < end; i++)                           \
			out[i] = op##_##sfx(in[i]);                            \
	}                                                                      \
	COUNTED_RUN(op##_##sfx, cpu_elementwise_count, T)

#define BINARY(sfx, T, op)                                                     \
	static void op##_##sfx##_range(void *ctx, size_t begin, size_t end)    \
	{                                                                      \
		const struct typed_job *job = ctx;                             \
		T *out = job->out;                                             \
		const T *a = job->a, *b = job->b;                              \
		for (size_t i = begin; i < end; i++)                           \
			out[i] = op##_##sfx(a[i], b[i]);                       \
	}                                                                      \
	COUNTED_RUN(op##_##sfx, cpu_elementwise_count, T)                      \
	static void op##_scalar_##sfx##_range(void *ctx, size_t begin,         \
					      size_t end)                      \
	{                                                                      \
		const struct typed_job *job = ctx;                             \
		struct wafer_scalar_params p =                                 \
			CPU_PARAMS(struct wafer_scalar_params, job->params);   \
		T *out = job->out;                                             \
		const T *a = job->a;                                           \
		const T s = cpu_from_double_##sfx(p.scalar);                   \
		if (p.scalar_first)                                            \
			for (size_t i = begin; i < end; i++)                   \
				out[i] = op##_##sfx(s, a[i]);                  \
		else                                                           \
			for (size_t i = begin; i < end; i++)                   \
				out[i] = op##_##sfx(a[i], s);                  \
	}                                                                      \
	COUNTED_RUN(op##_scalar_##sfx, cpu_scalar_count, T)                    \
	static void op##_strided_##sfx##_range(void *ctx, size_t begin,        \
					       size_t end)                     \
	{                                                                      \
		const struct typed_job *job = ctx;                             \
		struct wafer_binary_strided_params p = CPU_PARAMS(             \
			struct wafer_binary_strided_params, job->params);      \
		T *out = job->out;                                             \
		const T *a = job->a, *b = job->b;                              \
		for (size_t i = begin; i < end; i++) {                         \
			uint64_t oa, ob;                                       \
			strided_offsets(&p, i, &oa, &ob);                      \
			out[i] = op##_##sfx(a[oa], b[ob]);                     \
		}                                                              \
	}                                                                      \
	static wafer_status run_##op##_strided_##sfx(                          \
		const struct cpu_kernel_args *args)                            \
	{                                                                      \
		struct wafer_binary_strided_params p = CPU_PARAMS(             \
			struct wafer_binary_strided_params, args->params);     \
		return run_job(args, (size_t)cpu_shape_count(p.rank, p.shape), \
			       CPU_GRAIN / 4, op##_strided_##sfx##_range);     \
	}                                                                      \
	static wafer_status check_##op##_strided_##sfx(                        \
		const struct cpu_kernel_args *args)                            \
	{                                                                      \
		struct wafer_binary_strided_params p = CPU_PARAMS(             \
			struct wafer_binary_strided_params, args->params);     \
		return wafer_plugin_check_binary_strided(                      \
			&args->reach, &p, sizeof(T), NULL, NULL, NULL);        \
	}                                                                      \
	CPU_CHECKED_IMPL(op##_strided_##sfx##_impl,                            \
			 check_##op##_strided_##sfx,                           \
			 run_##op##_strided_##sfx);

/* fill, copy and copy_strided (kernels_basic.c's and kernels_strided.c's
 * movers of the element size), the reductions and matmul of one type. */
#define COMMON(sfx, T, U)                                                      \
	static void fill_##sfx##_range(void *ctx, size_t begin, size_t end)    \
	{                                                                      \
		const struct typed_job *job = ctx;                             \
		T *out = job->out;                                             \
		const T v = cpu_from_double_##sfx(                             \
			CPU_PARAMS(struct wafer_fill_params, job->params)      \
				.value);                                       \
		for (size_t i = begin; i < end; i++)                           \
			out[i] = v;                                            \
	}                                                                      \
	COUNTED_RUN(fill_##sfx, cpu_fill_count, T)                             \
	CPU_BIND(run_copy_##sfx, cpu_run_copy, sizeof(T))                      \
	CPU_COUNTED_IMPL(copy_##sfx##_impl, cpu_elementwise_count, sizeof(T),  \
			 run_copy_##sfx);                                      \
	CPU_BIND(check_gather_##sfx, cpu_check_gather, sizeof(T))             \
	CPU_BIND(run_gather_##sfx, cpu_run_gather, sizeof(T))                 \
	CPU_CHECKED_IMPL(gather_##sfx##_impl, check_gather_##sfx,              \
			 run_gather_##sfx);                                    \
	static wafer_status check_rows_##sfx(                                  \
		const struct cpu_kernel_args *args)                            \
	{                                                                      \
		struct wafer_rows_params p =                                   \
			CPU_PARAMS(struct wafer_rows_params, args->params);    \
		return wafer_plugin_check_rows(&args->reach, &p, sizeof(T), 0, \
					       NULL);                          \
	}                                                                      \
	REDUCE(sfx, T, sum, add_##sfx(acc, x[c]), 0, 0)                        \
	REDUCE(sfx, T, mean, add_##sfx(acc, x[c]), 0, 1)                       \
	REDUCE(sfx, T, max, max_##sfx(acc, x[c]), x[0], 0)                     \
	static void matmul_##sfx##_range(void *ctx, size_t begin, size_t end)  \
	{                                                                      \
		const struct typed_job *job = ctx;                             \
		struct wafer_matmul_params p =                                 \
			CPU_PARAMS(struct wafer_matmul_params, job->params);   \
		T *c = job->out;                                               \
		const T *a = job->a, *b = job->b;                              \
		for (size_t row = begin; row < end; row++) {                   \
			uint64_t t = row / p.m, i = row % p.m;                 \
			const T *at = a + t * p.batch_stride_a;                \
			const T *bt = b + t * p.batch_stride_b;                \
			T *ct = c + t * p.batch_stride_c + i * p.n;            \
			for (uint64_t j = 0; j < p.n; j++)                     \
				ct[j] = 0;                                     \
			for (uint64_t l = 0; l < p.k; l++) {                   \
				T av = p.transpose_a ? at[l * p.m + i]         \
						     : at[i * p.k + l];        \
				for (uint64_t j = 0; j < p.n; j++) {           \
					T bv = p.transpose_b                   \
						       ? bt[j * p.k + l]       \
						       : bt[l * p.n + j];      \
					ct[j] = add_##sfx(ct[j],               \
							  mul_##sfx(av, bv));  \
				}                                              \
			}                                                      \
		}                                                              \
	}                                                                      \
	static wafer_status check_matmul_##sfx(                                \
		const struct cpu_kernel_args *args)                            \
	{                                                                      \
		struct wafer_matmul_params p =                                 \
			CPU_PARAMS(struct wafer_matmul_params, args->params);  \
		return wafer_plugin_check_matmul(&args->reach, &p, sizeof(T),  \
						 NULL);                        \
	}                                                                      \
	static wafer_status run_matmul_##sfx(                                  \
		const struct cpu_kernel_args *args)                            \
	{                                                                      \
		struct wafer_matmul_params p =                                 \
			CPU_PARAMS(struct wafer_matmul_params, args->params);  \
		uint64_t work = p.n * p.k;                                     \
		size_t grain = work >= (1u << 18)                              \
				       ? 1                                     \
				       : (size_t)((1u << 18) / (work | 1));    \
		return run_job(args, (size_t)(p.batch * p.m), grain,           \
			       matmul_##sfx##_range);                          \
	}                                                                      \
	CPU_CHECKED_IMPL(matmul_##sfx##_impl, check_matmul_##sfx,              \
			 run_matmul_##sfx);

/* reduce_|name| over rows: acc starts at |init| and takes |step| for
 * each column; |mean| divides by cols at the end. */
#define REDUCE(sfx, T, name, step, init, mean)                                 \
	static void reduce_##name##_##sfx##_range(void *ctx, size_t begin,     \
						  size_t end)                  \
	{                                                                      \
		const struct typed_job *job = ctx;                             \
		struct wafer_rows_params p =                                   \
			CPU_PARAMS(struct wafer_rows_params, job->params);     \
		T *out = job->out;                                             \
		for (size_t r = begin; r < end; r++) {                         \
			const T *x = (const T *)job->a + r * p.cols;           \
			T acc = (init);                                        \
			for (size_t c = 0; c < p.cols; c++)                    \
				acc = (step);                                  \
			out[r] = (mean) ? mean_##sfx(acc, p.cols) : acc;       \
		}                                                              \
	}                                                                      \
	static wafer_status run_reduce_##name##_##sfx(                         \
		const struct cpu_kernel_args *args)                            \
	{                                                                      \
		struct wafer_rows_params p =                                   \
			CPU_PARAMS(struct wafer_rows_params, args->params);    \
		return run_job(args, (size_t)p.rows,                           \
			       (size_t)(CPU_GRAIN / (p.cols | 1)),             \
			       reduce_##name##_##sfx##_range);                 \
	}                                                                      \
	CPU_CHECKED_IMPL(reduce_##name##_##sfx##_impl, check_rows_##sfx,       \
			 run_reduce_##name##_##sfx);

/* M(suffix, C type, dtype, op) in each type of CPU_TYPED_DTYPES, for a
 * catalogue row whose dtypes are ANY; FLOAT rows are f64's alone. */
#define TYPED_ANY(M, op)                                                       \
	M(f64, double, WAFER_DTYPE_F64, op)                                    \
	M(i32, int32_t, WAFER_DTYPE_I32, op)                                   \
	M(i64, int64_t, WAFER_DTYPE_I64, op)                                   \
	M(u8, uint8_t, WAFER_DTYPE_U8, op)
#define TYPED_FLOAT(M, op) M(f64, double, WAFER_DTYPE_F64, op)

/* Every type's moves, reductions and matmul, then the catalogue's unary
 * and binary kernels in the types each row allows (the table below
 * lists the same). */
#define COMMON_KERNELS(sfx, T, U, dtype, is_float) COMMON(sfx, T, U)
#define UNARY_KERNELS(sfx, T, dtype, op) UNARY(sfx, T, op)
#define BINARY_KERNELS(sfx, T, dtype, op) BINARY(sfx, T, op)
CPU_TYPED_DTYPES(COMMON_KERNELS)
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference)                   \
	TYPED_##dtypes(UNARY_KERNELS, name)
#define WAFER_CATALOGUE_BINARY(name, NAME, reference)                          \
	TYPED_ANY(BINARY_KERNELS, name)
#include <wafer/catalogue.def>

/* softmax in f64: the row's maximum, then e^(x - max) / their sum. */
static void softmax_f64_range(void *ctx, size_t begin, size_t end)
{
	const struct typed_job *job = ctx;
	struct wafer_rows_params p =
		CPU_PARAMS(struct wafer_rows_params, job->params);

	for (size_t r = begin; r < end; r++) {
		const double *x = (const double *)job->a + r * p.cols;
		double *out = (double *)job->out + r * p.cols;
		double m = x[0], sum = 0.0;
		for (size_t c = 1; c < p.cols; c++)
			m = max_f64(m, x[c]);
		for (size_t c = 0; c < p.cols; c++) {
			out[c] = exp(x[c] - m);
			sum += out[c];
		}
		for (size_t c = 0; c < p.cols; c++)
			out[c] /= sum;
	}
}

static wafer_status check_softmax_f64(const struct cpu_kernel_args *args)
{
	struct wafer_rows_params p =
		CPU_PARAMS(struct wafer_rows_params, args->params);

	return wafer_plugin_check_rows(&args->reach, &p, sizeof(double), 1,
				       NULL);
}

static wafer_status run_softmax_f64(const struct cpu_kernel_args *args)
{
	struct wafer_rows_params p =
		CPU_PARAMS(struct wafer_rows_params, args->params);

	return run_job(args, (size_t)p.rows,
		       (size_t)(CPU_GRAIN / 8 / (p.cols | 1)),
		       softmax_f64_range);
}

CPU_CHECKED_IMPL(softmax_f64_impl, check_softmax_f64, run_softmax_f64);


/*===----------------------------------------------------------------------===
 * The table
 *===----------------------------------------------------------------------===*/

#define ENTRY(op_, sfx, dtype, bindings, params, impl)                         \
	CPU_KERNEL(op_, "default", dtype, bindings, struct params,             \
		   impl##_##sfx##_impl)
#define UNARY_ENTRY(sfx, T, dtype, op)                                         \
	ENTRY(#op, sfx, dtype, 2, wafer_elementwise_params, op),
#define BINARY_ENTRIES(sfx, T, dtype, op)                                      \
	CPU_KERNEL(#op, "default", dtype, 3, struct wafer_elementwise_params,  \
		   op##_##sfx##_impl),                                         \
		CPU_KERNEL(#op "_scalar", "default", dtype, 2,                 \
			   struct wafer_scalar_params,                         \
			   op##_scalar_##sfx##_impl),                          \
		CPU_KERNEL(#op "_strided", "default", dtype, 3,                \
			   struct wafer_binary_strided_params,                 \
			   op##_strided_##sfx##_impl),
#define ROWS_ENTRY(sfx, T, dtype, op)                                          \
	ENTRY(#op, sfx, dtype, 2, wafer_rows_params, op),

/* The moves and matmul, in every type. i32's copy and copy_strided are
 * the f32 ones' 4-byte movers (kernels_basic.c, kernels_strided.c),
 * listed first. */
#define TYPED_ENTRIES(sfx, T, U, dtype, is_float)                              \
	ENTRY(WAFER_KERNEL_FILL, sfx, dtype, 1, wafer_fill_params, fill),      \
		ENTRY(WAFER_KERNEL_COPY, sfx, dtype, 2,                        \
		      wafer_elementwise_params, copy),                         \
		ENTRY(WAFER_KERNEL_COPY_STRIDED, sfx, dtype, 2,                \
		      wafer_strided_copy_params, gather),                      \
		ENTRY(WAFER_KERNEL_MATMUL, sfx, dtype, 3,                      \
		      wafer_matmul_params, matmul),

static const struct wafer_kernel entries[] = {
	CPU_TYPED_DTYPES(TYPED_ENTRIES)
	/* The catalogue's unary, binary (with its scalar and strided forms)
	 * and row kernels, in the dtypes each row allows. */
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference)                   \
	TYPED_##dtypes(UNARY_ENTRY, name)
#define WAFER_CATALOGUE_BINARY(name, NAME, reference)                          \
	TYPED_ANY(BINARY_ENTRIES, name)
#define WAFER_CATALOGUE_ROWS(name, NAME, dtypes, output)                       \
	TYPED_##dtypes(ROWS_ENTRY, name)
#include <wafer/catalogue.def>
};

CPU_KERNEL_SET_DEFINE(typed, entries);
