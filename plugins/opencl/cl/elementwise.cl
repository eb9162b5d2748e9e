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

/* The kernels of element type DT, computing in CT: float for f32, f16
 * and bf16 (see common.cl), the type itself for the others. */
#define UNARY(NAME, DT, CT, EXPR)                                              \
	__kernel void NAME##_##DT(__global ST_##DT *out, ulong out_off,        \
				  __global const ST_##DT *in, ulong in_off,    \
				  ulong n)                                     \
	{                                                                      \
		size_t i = get_global_id(0);                                   \
		if (i >= n)                                                    \
			return;                                                \
		CT x = LOAD_##DT(in + in_off, i);                              \
		STORE_##DT(out + out_off, i, (EXPR));                          \
	}

#define BINARY(NAME, DT, CT, EXPR)                                             \
	__kernel void NAME##_##DT(__global ST_##DT *out, ulong out_off,        \
				  __global const ST_##DT *a, ulong a_off,      \
				  __global const ST_##DT *b, ulong b_off,      \
				  ulong n)                                     \
	{                                                                      \
		size_t i = get_global_id(0);                                   \
		if (i >= n)                                                    \
			return;                                                \
		CT x = LOAD_##DT(a + a_off, i);                                \
		CT y = LOAD_##DT(b + b_off, i);                                \
		STORE_##DT(out + out_off, i, (EXPR));                          \
	}

/* s is the scalar already rounded to the dtype (the host does that);
 * scalar_first swaps the operands: s - a[i], s / a[i]. */
#define SCALAR(NAME, DT, CT, EXPR)                                             \
	__kernel void NAME##_scalar_##DT(__global ST_##DT *out, ulong out_off, \
					 __global const ST_##DT *a,            \
					 ulong a_off, ulong n, CT s,           \
					 uint scalar_first)                    \
	{                                                                      \
		size_t i = get_global_id(0);                                   \
		if (i >= n)                                                    \
			return;                                                \
		CT v = LOAD_##DT(a + a_off, i);                                \
		CT x = scalar_first ? s : v;                                   \
		CT y = scalar_first ? v : s;                                   \
		STORE_##DT(out + out_off, i, (EXPR));                          \
	}

/* sigmoid without overflow: e^-|x| never overflows. gelu, the tanh form
 * the catalogue names, written as 0.5 x (1 + tanh(u)) = x sigmoid(2u),
 * u = sqrt(2/pi) (x + 0.044715 x^3): 1 + tanh(u) cancels for negative x
 * (-5e-7 where the answer is -0). Both in T, named with SFX; LIT is the
 * suffix of a T literal (f for float, none for double). */
#define SIGMOID_GELU(T, SFX, LIT)                                              \
	T sigmoid##SFX(T x)                                                    \
	{                                                                      \
		T e = exp(-fabs(x));                                           \
		return x >= 0 ? 1 / (1 + e) : e / (1 + e);                     \
	}                                                                      \
	T gelu##SFX(T x)                                                       \
	{                                                                      \
		T u = 0.7978845608028654##LIT *                                \
		      (x + 0.044715##LIT * x * x * x);                         \
		return x * sigmoid##SFX(2 * u);                                \
	}
SIGMOID_GELU(float, , f)

/* The unary operations of the floating types, computing in CT. */
#define FLOAT_UNARY_OPS(DT, CT, GELU, SIGMOID)                                 \
	UNARY(neg, DT, CT, -x)                                                 \
	UNARY(abs, DT, CT, fabs(x))                                            \
	UNARY(exp, DT, CT, exp(x))                                             \
	UNARY(log, DT, CT, log(x))                                             \
	UNARY(sqrt, DT, CT, sqrt(x))                                           \
	UNARY(relu, DT, CT, x > 0 || isnan(x) ? x : 0)                         \
	UNARY(gelu, DT, CT, GELU(x))                                           \
	UNARY(sigmoid, DT, CT, SIGMOID(x))                                     \
	UNARY(tanh, DT, CT, tanh(x))

#define FLOAT_KERNELS(DT)                                                      \
	FLOAT_UNARY_OPS(DT, float, gelu, sigmoid)                              \
	FLOAT_BINARY_OPS(BINARY, DT)                                           \
	FLOAT_BINARY_OPS(SCALAR, DT)

FLOAT_KERNELS(f32)
FLOAT_KERNELS(f16)

/* The integer and float64 kernels: the same families, computing in
 * their own type. */
#define INT_KERNELS(DT)                                                        \
	UNARY(neg, DT, ST_##DT, -x)                                            \
	UNARY(abs, DT, ST_##DT, x < 0 ? -x : x)                                \
	UNARY(relu, DT, ST_##DT, x > 0 ? x : 0)                                \
	INT_BINARY_OPS(BINARY, DT)                                             \
	INT_BINARY_OPS(SCALAR, DT)

INT_KERNELS(i32)
INT_KERNELS(i64)

#ifdef cl_khr_fp64
SIGMOID_GELU(double, _d, )
FLOAT_UNARY_OPS(f64, double, gelu_d, sigmoid_d)
F64_BINARY_OPS(BINARY)
F64_BINARY_OPS(SCALAR)
#endif
