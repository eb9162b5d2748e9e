/* wafer — SPDX-License-Identifier: MIT
 *
 * common.cl: the prelude of every program unit (kernels_build.c puts it first).
 * OpenCL C 1.2.
 *
 * Element types. Every kernel computes in float and the element type is
 * only how values are stored: f16 through vload_half/vstore_half, which
 * are core OpenCL C and need no cl_khr_fp16, so f16 works on every device;
 * bf16 as the upper half of a float. For add, sub, mul, div and sqrt,
 * computing in f32 and rounding once to f16 or bf16 gives the correctly
 * rounded result (f32 has more than twice their precision plus two bits),
 * so nothing is lost against native half arithmetic.
 *
 *   ST_<dt>               the storage type
 *   LOAD_<dt>(p, i)       element i of p, as float
 *   STORE_<dt>(p, i, v)   stores float v, rounded to nearest even */
#define ST_f32 float
#define ST_f16 half
#define ST_bf16 ushort
#define ST_i32 int

#define LOAD_f32(p, i) ((p)[i])
#define STORE_f32(p, i, v) ((p)[i] = (v))
#define LOAD_f16(p, i) vload_half((i), (p))
#define STORE_f16(p, i, v) vstore_half_rte((v), (i), (p))
#define LOAD_bf16(p, i) as_float((uint)(p)[i] << 16)
#define STORE_bf16(p, i, v) ((p)[i] = bf16_from_float(v))

/* float to bf16, round to nearest even; NaN stays NaN (made quiet, sign
 * kept), overflow rounds to infinity. */
ushort bf16_from_float(float x)
{
	uint u = as_uint(x);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (ushort)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (ushort)(u >> 16);
}

/* max and min that return NaN when either operand is NaN (fmax and fmin
 * return the other operand). */
float max_nan(float a, float b)
{
	return isnan(a) || isnan(b) ? a + b : fmax(a, b);
}

float min_nan(float a, float b)
{
	return isnan(a) || isnan(b) ? a + b : fmin(a, b);
}

/* Every kernel takes each binding as a buffer and an element offset into
 * it (never a sub-buffer), then its parameters; the host side is
 * kernels.c. Work items past the count return at once: the global size is
 * rounded up to a whole number of work-groups. */

/* The integer types and float64 compute in their own type (the kernels of
 * elementwise.cl, strided.cl, rows.cl and matmul.cl stamped per type
 * with a T argument). float64 needs cl_khr_fp64: its kernels are
 * compiled only where the device has it, and kernels.c offers them only
 * there. Integer division truncates, x / 0 is 0 and MIN / -1 wraps (the
 * catalogue's rule; C leaves both undefined). */
#define ST_i64 long
#define LOAD_i32(p, i) ((p)[i])
#define STORE_i32(p, i, v) ((p)[i] = (v))
#define LOAD_i64(p, i) ((p)[i])
#define STORE_i64(p, i, v) ((p)[i] = (v))

int idiv_i32(int a, int b)
{
	return b == 0 ? 0 : b == -1 ? (int)(0u - (uint)a) : a / b;
}

long idiv_i64(long a, long b)
{
	return b == 0 ? 0 : b == -1 ? (long)(0ul - (ulong)a) : a / b;
}

/* The six binary operations as KIND(name, DT, CT, expression of x and
 * y), for element type DT computed in CT: division, max and min are
 * what differs between the types. */
#define BINARY_OPS(KIND, DT, CT, DIV, MAX, MIN)                                \
	KIND(add, DT, CT, x + y)                                               \
	KIND(sub, DT, CT, x - y)                                               \
	KIND(mul, DT, CT, x * y)                                               \
	KIND(div, DT, CT, DIV)                                                 \
	KIND(max, DT, CT, MAX)                                                 \
	KIND(min, DT, CT, MIN)
#define FLOAT_BINARY_OPS(KIND, DT)                                             \
	BINARY_OPS(KIND, DT, float, x / y, max_nan(x, y), min_nan(x, y))
#define INT_BINARY_OPS(KIND, DT)                                               \
	BINARY_OPS(KIND, DT, ST_##DT, idiv_##DT(x, y), max(x, y), min(x, y))

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define ST_f64 double
#define LOAD_f64(p, i) ((p)[i])
#define STORE_f64(p, i, v) ((p)[i] = (v))

double max_nan_f64(double a, double b)
{
	return isnan(a) || isnan(b) ? a + b : fmax(a, b);
}

double min_nan_f64(double a, double b)
{
	return isnan(a) || isnan(b) ? a + b : fmin(a, b);
}

#define F64_BINARY_OPS(KIND)                                                   \
	BINARY_OPS(KIND, f64, double, x / y, max_nan_f64(x, y),                \
		   min_nan_f64(x, y))
#endif
