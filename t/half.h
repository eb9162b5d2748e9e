/* wafer — SPDX-License-Identifier: MIT
 *
 * half.h: f16 and bf16 conversions for tests, bit-exact with CUDA's
 * round-to-nearest-even conversions (__float2half_rn, __float2bfloat16_rn)
 * for finite values, infinities and NaN (a quiet NaN); and the cast
 * kernels' conversion to i32. Header-only. */
#ifndef WAFER_T_HALF_H
#define WAFER_T_HALF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float t_bf16_to_float(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static inline uint16_t t_float_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

static inline float t_f16_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f,
		 man = h & 0x3ff, u;
	float f;

	if (exp == 0)
		f = ldexpf((float)man, -24);
	else if (exp == 31)
		f = man ? NAN : INFINITY;
	else
		f = ldexpf((float)(man | 0x400), (int)exp - 25);
	memcpy(&u, &f, 4);
	u |= sign;
	memcpy(&f, &u, 4);
	return f;
}

static inline uint16_t t_float_to_f16(float f)
{
	uint32_t u;
	uint16_t sign;
	float a = fabsf(f), q;
	int e;

	memcpy(&u, &f, 4);
	sign = (uint16_t)((u >> 16) & 0x8000);
	if (isnan(f))
		return sign | 0x7e00;
	if (a >= 65520.0f)
		return sign | 0x7c00;
	if (a < ldexpf(1.0f, -14)) /* subnormal: units of 2^-24 */
		return sign | (uint16_t)nearbyintf(a * ldexpf(1.0f, 24));
	q = nearbyintf(ldexpf(frexpf(a, &e), 11)); /* 11 significant bits */
	if (q >= 2048.0f) {
		q /= 2;
		e++;
	}
	if (e + 14 >= 31)
		return sign | 0x7c00;
	return sign | (uint16_t)((uint32_t)(e + 14) << 10) |
	       (uint16_t)((uint32_t)q & 0x3ff);
}

/* A value cast to i32 as every backend's cast kernel does it: toward
 * zero, saturating at INT32_MIN and INT32_MAX, NaN to 0. (The tests'
 * reference, written apart from wafer_plugin_double_to_i32.) */
static inline int32_t t_to_i32(double v)
{
	if (isnan(v))
		return 0;
	if (v >= INT32_MAX || v <= INT32_MIN)
		return v > 0 ? INT32_MAX : INT32_MIN;
	return (int32_t)v;
}

#endif
