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
