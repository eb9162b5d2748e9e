/* wafer — SPDX-License-Identifier: MIT
 *
 * elementwise.cl: noop and the contiguous elementwise kernels — unary,
 * binary and binary-with-scalar — in f32 and f16. One work item per
 * element; out may alias an input exactly (each item reads its inputs
 * before it writes). Kernel names are <op>_<dtype>. */

/* Does nothing: what a launch costs (wafer-bench dispatch). */
__kernel void noop(void)
{
}

#define UNARY(NAME, DT, EXPR)                                                  \
	__kernel void NAME##_##DT(__global ST_##DT *out, ulong out_off,        \
				  __global const ST_##DT *in, ulong in_off,    \
				  ulong n)                                     \
	{                                                                      \
		size_t i = get_global_id(0);                                   \
		if (i >= n)                                                    \
			return;                                                \
		float x = LOAD_##DT(in + in_off, i);                           \
		STORE_##DT(out + out_off, i, (EXPR));                          \
	}

#define BINARY(NAME, DT, EXPR)                                                 \
	__kernel void NAME##_##DT(__global ST_##DT *out, ulong out_off,        \
				  __global const ST_##DT *a, ulong a_off,      \
				  __global const ST_##DT *b, ulong b_off,      \
				  ulong n)                                     \
	{                                                                      \
		size_t i = get_global_id(0);                                   \
		if (i >= n)                                                    \
			return;                                                \
		float x = LOAD_##DT(a + a_off, i);                             \
		float y = LOAD_##DT(b + b_off, i);                             \
		STORE_##DT(out + out_off, i, (EXPR));                          \
	}

/* s is the scalar already rounded to the dtype (the host does that);
 * scalar_first swaps the operands: s - a[i], s / a[i]. */
#define SCALAR(NAME, DT, EXPR)                                                 \
	__kernel void NAME##_scalar_##DT(__global ST_##DT *out, ulong out_off, \
					 __global const ST_##DT *a,            \
					 ulong a_off, ulong n, float s,        \
					 uint scalar_first)                    \
	{                                                                      \
		size_t i = get_global_id(0);                                   \
		if (i >= n)                                                    \
			return;                                                \
		float v = LOAD_##DT(a + a_off, i);                             \
		float x = scalar_first ? s : v;                                \
		float y = scalar_first ? v : s;                                \
		STORE_##DT(out + out_off, i, (EXPR));                          \
	}

/* sigmoid without overflow: e^-|x| never overflows. */
float sigmoid(float x)
{
	float e = exp(-fabs(x));
	return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

/* gelu, the tanh form the catalogue names, written as
 * 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3):
 * 1 + tanh(u) cancels for negative x (-5e-7 where the answer is -0). */
float gelu(float x)
{
	float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
	return x * sigmoid(2.0f * u);
}

#define UNARY_ALL(DT)                                                          \
	UNARY(neg, DT, -x)                                                     \
	UNARY(abs, DT, fabs(x))                                                \
	UNARY(exp, DT, exp(x))                                                 \
	UNARY(log, DT, log(x))                                                 \
	UNARY(sqrt, DT, sqrt(x))                                               \
	UNARY(relu, DT, x > 0.0f || isnan(x) ? x : 0.0f)                                   \
	UNARY(gelu, DT, gelu(x))                                               \
	UNARY(sigmoid, DT, sigmoid(x))                                         \
	UNARY(tanh, DT, tanh(x))

#define BINARY_ALL(KIND, DT)                                                   \
	KIND(add, DT, x + y)                                                   \
	KIND(sub, DT, x - y)                                                   \
	KIND(mul, DT, x * y)                                                   \
	KIND(div, DT, x / y)                                                   \
	KIND(max, DT, max_nan(x, y))                                           \
	KIND(min, DT, min_nan(x, y))

UNARY_ALL(f32)
UNARY_ALL(f16)
BINARY_ALL(BINARY, f32)
BINARY_ALL(BINARY, f16)
BINARY_ALL(SCALAR, f32)
BINARY_ALL(SCALAR, f16)

/* The integer and float64 kernels: the same families, computing in T. */
#define TUNARY(NAME, DT, T, EXPR)                                              \
	__kernel void NAME##_##DT(__global T *out, ulong out_off,              \
				  __global const T *in, ulong in_off, ulong n) \
	{                                                                      \
		size_t i = get_global_id(0);                                   \
		if (i >= n)                                                    \
			return;                                                \
		T x = in[in_off + i];                                          \
		out[out_off + i] = (EXPR);                                     \
	}

#define TBINARY(NAME, DT, T, EXPR)                                             \
	__kernel void NAME##_##DT(__global T *out, ulong out_off,              \
				  __global const T *a, ulong a_off,            \
				  __global const T *b, ulong b_off, ulong n)   \
	{                                                                      \
		size_t i = get_global_id(0);                                   \
		if (i >= n)                                                    \
			return;                                                \
		T x = a[a_off + i], y = b[b_off + i];                          \
		out[out_off + i] = (EXPR);                                     \
	}

#define TSCALAR(NAME, DT, T, EXPR)                                             \
	__kernel void NAME##_scalar_##DT(__global T *out, ulong out_off,       \
					 __global const T *a, ulong a_off,     \
					 ulong n, T s, uint scalar_first)      \
	{                                                                      \
		size_t i = get_global_id(0);                                   \
		if (i >= n)                                                    \
			return;                                                \
		T v = a[a_off + i];                                            \
		T x = scalar_first ? s : v;                                    \
		T y = scalar_first ? v : s;                                    \
		out[out_off + i] = (EXPR);                                     \
	}

#define TBINARY_ALL(KIND, DT, T, DIV, MAX, MIN)                                \
	KIND(add, DT, T, x + y)                                                \
	KIND(sub, DT, T, x - y)                                                \
	KIND(mul, DT, T, x * y)                                                \
	KIND(div, DT, T, DIV)                                                  \
	KIND(max, DT, T, MAX)                                                  \
	KIND(min, DT, T, MIN)

#define TINTEGER(DT, T)                                                        \
	TUNARY(neg, DT, T, -x)                                                 \
	TUNARY(abs, DT, T, x < 0 ? -x : x)                                     \
	TUNARY(relu, DT, T, x > 0 ? x : 0)                                     \
	TBINARY_ALL(TBINARY, DT, T, idiv_##DT(x, y), max(x, y), min(x, y))      \
	TBINARY_ALL(TSCALAR, DT, T, idiv_##DT(x, y), max(x, y), min(x, y))

TINTEGER(i32, int)
TINTEGER(i64, long)

#ifdef cl_khr_fp64
double sigmoid_d(double x)
{
	double e = exp(-fabs(x));
	return x >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}

double gelu_d(double x)
{
	double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
	return x * sigmoid_d(2.0 * u);
}

TUNARY(neg, f64, double, -x)
TUNARY(abs, f64, double, fabs(x))
TUNARY(exp, f64, double, exp(x))
TUNARY(log, f64, double, log(x))
TUNARY(sqrt, f64, double, sqrt(x))
TUNARY(relu, f64, double, x > 0.0 || isnan(x) ? x : 0.0)
TUNARY(gelu, f64, double, gelu_d(x))
TUNARY(sigmoid, f64, double, sigmoid_d(x))
TUNARY(tanh, f64, double, tanh(x))
TBINARY_ALL(TBINARY, f64, double, x / y, max_nan_f64(x, y),
	    min_nan_f64(x, y))
TBINARY_ALL(TSCALAR, f64, double, x / y, max_nan_f64(x, y),
	    min_nan_f64(x, y))
#endif
