/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels_math.h: f32 element functions for the cpu kernels, written so
 * that gcc vectorises a fixed-length loop over them at -O2 without
 * -ffast-math: no calls (libm's expf and logf are opaque calls that stop
 * vectorisation unless glibc's vector variants are enabled, which needs
 * -ffast-math and its loose NaN rules), no branches (selects instead),
 * bit casts through memcpy.
 *
 * Accuracy, measured against double precision over random inputs by
 * t/api/ops: exp and log within 2 ulp; tanh, sigmoid and gelu, built on exp,
 * within a few ulp (tanh adds up to 1e-7 absolute near 0.0625, where its
 * two forms meet). Special values: exp(NaN) = NaN, exp(-inf) = 0,
 * exp(+inf) = inf, log(0) = -inf, log(x < 0) = NaN, log(inf) = inf. */
#ifndef WAFER_PLUGINS_CPU_KERNELS_MATH_H
#define WAFER_PLUGINS_CPU_KERNELS_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "plugins/cpu/kernels.h" /* CPU_BLOCK */

static inline uint32_t cpu_f2u(float x)
{
	uint32_t u;

	memcpy(&u, &x, sizeof u);
	return u;
}

static inline float cpu_u2f(uint32_t u)
{
	float x;

	memcpy(&x, &u, sizeof x);
	return x;
}

/* 1.5 * 2^23: adding and subtracting it rounds a float of magnitude
 * below 2^22 to the nearest integer (ties to even), in the current
 * (default) rounding mode, without a call. */
#define CPU_ROUND_MAGIC 12582912.0f

#define CPU_LN2_HI 0.693145751953125f        /* exact in 16 bits */
#define CPU_LN2_LO 1.428606765330187045e-06f /* ln 2 - CPU_LN2_HI */

/* e^x: x = n ln2 + r with |r| <= ln2 / 2, e^r by a degree-7 polynomial
 * (Taylor; the first dropped term is below 2^-27), times 2^n applied in
 * two halves so that results near the subnormal range round once. */
static inline float cpu_exp(float x)
{
	/* The clamps keep the integer conversion defined; NaN fails both
	 * comparisons and is replaced by 0 until the end. */
	float xc = x < -104.0f ? -104.0f : x;
	xc = xc > 89.0f ? 89.0f : xc;
	xc = xc == xc ? xc : 0.0f;
	float n = xc * 1.44269504088896341f + CPU_ROUND_MAGIC;
	n -= CPU_ROUND_MAGIC;
	float r = xc - n * CPU_LN2_HI;
	r = r - n * CPU_LN2_LO;
	float p = 1.0f / 5040.0f;
	p = p * r + 1.0f / 720.0f;
	p = p * r + 1.0f / 120.0f;
	p = p * r + 1.0f / 24.0f;
	p = p * r + 1.0f / 6.0f;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	int32_t ni = (int32_t)n; /* -150 .. 129 */
	int32_t n1 = ni / 2;
	int32_t n2 = ni - n1;
	float s1 = cpu_u2f((uint32_t)(n1 + 127) << 23);
	float s2 = cpu_u2f((uint32_t)(n2 + 127) << 23);
	float result = p * s1 * s2;
	return x == x ? result : x;
}

/* ln x: x = 2^e m with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s) with
 * s = (m - 1) / (m + 1), |s| <= 0.172, by its series to s^9. */
static inline float cpu_log(float x)
{
	/* Subnormals: scale into the normal range first. */
	int sub = x < 1.17549435e-38f;
	float xs = sub ? x * 8388608.0f : x;
	uint32_t u = cpu_f2u(xs);
	int32_t e = (int32_t)((u >> 23) & 0xff) - 127 - (sub ? 23 : 0);
	float m = cpu_u2f((u & 0x007fffffu) | 0x3f800000u);
	int big = m > 1.41421356f;
	m = big ? m * 0.5f : m;
	e = big ? e + 1 : e;
	float f = m - 1.0f;
	float s = f / (2.0f + f);
	float z = s * s;
	float poly = z * (1.0f / 3.0f +
			  z * (1.0f / 5.0f + z * (1.0f / 7.0f + z * (1.0f / 9.0f))));
	float logm = 2.0f * s + 2.0f * s * poly;
	float ef = (float)e;
	float result = ef * CPU_LN2_HI + (logm + ef * CPU_LN2_LO);
	result = x == 0.0f ? -INFINITY : result;
	result = x < 0.0f ? NAN : result;
	result = x == INFINITY ? x : result;
	return x == x ? result : x;
}

/* tanh: an odd polynomial below 0.0625 (no cancellation near 0), else
 * (1 - t) / (1 + t) with t = e^-2|x|, which never overflows. */
static inline float cpu_tanh(float x)
{
	float ax = fabsf(x);
	float t = cpu_exp(-2.0f * ax);
	float far = copysignf((1.0f - t) / (1.0f + t), x);
	float z = x * x;
	float near = x + x * z *
				 (-1.0f / 3.0f +
				  z * (2.0f / 15.0f +
				       z * (-17.0f / 315.0f + z * (62.0f / 2835.0f))));
	return ax < 0.0625f ? near : far;
}

/* SIGMOID, 1 / (1 + e^-x), from e^-|x| so that nothing overflows; and
 * GELU, tanh form: 0.5 x (1 + tanh(u)) = x sigmoid(2u), with
 * u = sqrt(2/pi) (x + 0.044715 x^3); the sigmoid form has no cancellation
 * for negative x. Both in type T, from its EXP and FABS; LIT is the
 * suffix of a T literal (f for float, none for double). kernels_typed.c
 * stamps the f64 pair. */
#define CPU_SIGMOID_GELU(T, SIGMOID, GELU, EXP, FABS, LIT)                     \
	static inline T SIGMOID(T x)                                           \
	{                                                                      \
		T t = EXP(-FABS(x));                                           \
		T s = 1 / (1 + t);                                             \
		return x >= 0 ? s : t * s;                                     \
	}                                                                      \
	static inline T GELU(T x)                                              \
	{                                                                      \
		T u = 0.7978845608028654##LIT *                                \
		      (x + 0.044715##LIT * x * x * x);                         \
		return x * SIGMOID(2 * u);                                     \
	}
CPU_SIGMOID_GELU(float, cpu_sigmoid, cpu_gelu, cpu_exp, fabsf, f)

/* The binary operations of the catalogue. max and min are NaN when either
 * operand is (a + b is then NaN), as plugin.h asks; a plain compare
 * would drop a NaN in one operand order. */
static inline float cpu_add(float a, float b)
{
	return a + b;
}

static inline float cpu_sub(float a, float b)
{
	return a - b;
}

static inline float cpu_mul(float a, float b)
{
	return a * b;
}

static inline float cpu_div(float a, float b)
{
	return a / b;
}

static inline float cpu_max(float a, float b)
{
	float m = a > b ? a : b;
	return a != a || b != b ? a + b : m;
}

static inline float cpu_min(float a, float b)
{
	float m = a < b ? a : b;
	return a != a || b != b ? a + b : m;
}

/* Sum and maximum of |cols| floats in CPU_BLOCK lanes (a fixed-length loop
 * gcc vectorises), shared by the per-row and split-row reductions. */
static inline float cpu_sum_f32(const float *x, size_t cols)
{
	float lanes[CPU_BLOCK] = {0};
	size_t i = 0;

	for (; i + CPU_BLOCK <= cols; i += CPU_BLOCK)
		for (size_t j = 0; j < CPU_BLOCK; j++)
			lanes[j] += x[i + j];
	for (size_t j = 0; i < cols; i++, j++)
		lanes[j] += x[i];
	for (size_t width = CPU_BLOCK / 2; width > 0; width /= 2)
		for (size_t j = 0; j < width; j++)
			lanes[j] += lanes[j + width];
	return lanes[0];
}

/* The maximum, NaN if any element is NaN (counted separately: a compare
 * alone would drop NaN in one direction). */
static inline float cpu_max_f32(const float *x, size_t cols)
{
	float lanes[CPU_BLOCK];
	int nan[CPU_BLOCK] = {0};
	size_t i = 0;

	for (size_t j = 0; j < CPU_BLOCK; j++)
		lanes[j] = -INFINITY;
	for (; i + CPU_BLOCK <= cols; i += CPU_BLOCK)
		for (size_t j = 0; j < CPU_BLOCK; j++) {
			float v = x[i + j];
			lanes[j] = v > lanes[j] ? v : lanes[j];
			nan[j] |= v != v;
		}
	for (size_t j = 0; i < cols; i++, j++) {
		float v = x[i];
		lanes[j] = v > lanes[j] ? v : lanes[j];
		nan[j] |= v != v;
	}
	float m = lanes[0];
	int any = nan[0];
	for (size_t j = 1; j < CPU_BLOCK; j++) {
		m = lanes[j] > m ? lanes[j] : m;
		any |= nan[j];
	}
	return any ? NAN : m;
}

#endif
