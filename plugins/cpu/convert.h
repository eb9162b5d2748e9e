/* wafer — SPDX-License-Identifier: MIT
 *
 * convert.h: the element conversions of plugin.h's cast rules that more
 * than one kernel file needs (cast itself, and fill and the scalar
 * kernels, whose parameter blocks carry a double): to integers truncate
 * toward zero, saturate and send NaN to 0; to f16 and bf16 round once to
 * nearest even (half.h does the last step from f32). */
#ifndef WAFER_PLUGINS_CPU_CONVERT_H
#define WAFER_PLUGINS_CPU_CONVERT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <wafer/plugin_util.h>

/* (double to int32 and int64: wafer_plugin_double_to_i32/i64.) */
static inline uint8_t cpu_double_to_u8(double v)
{
	if (v != v || v <= 0.0)
		return 0;
	if (v >= 255.0)
		return 255;
	return (uint8_t)v;
}

static inline int32_t cpu_i64_to_i32(int64_t v)
{
	return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

static inline uint8_t cpu_i64_to_u8(int64_t v)
{
	return v > 255 ? 255 : v < 0 ? 0 : (uint8_t)v;
}

/* f64 to f32 rounded to odd: truncate, then set the lowest bit when
 * anything was dropped. A further rounding to f16 or bf16 (11 and 8
 * significant bits of f32's 24) then rounds as if from the f64 itself,
 * so f64 to f16 rounds once. */
static inline float cpu_f64_to_f32_odd(double d)
{
	float f = (float)d;
	uint32_t u;

	if (d != d || isinf(f) || (double)f == d)
		return f;
	if (fabs((double)f) > fabs(d))
		f = nextafterf(f, 0.0f);
	memcpy(&u, &f, sizeof u);
	u |= 1;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* An integer as bf16 with one rounding: keep 8 significant bits of |v|,
 * nearest even; the result is then exact in f32 and truncates exactly. */
static inline uint16_t cpu_i64_to_bf16(int64_t v)
{
	uint32_t sign = v < 0 ? 0x8000u : 0;
	uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	int top = 63 - __builtin_clzll(mag | 1);
	float f;
	uint32_t u;

	if (top > 7) {
		int shift = top - 7;
		uint64_t keep = mag >> shift;
		uint64_t rest = mag & ((UINT64_C(1) << shift) - 1);
		uint64_t half = UINT64_C(1) << (shift - 1);
		if (rest > half || (rest == half && (keep & 1)))
			keep++;
		mag = keep << shift;
	}
	f = (float)mag;
	memcpy(&u, &f, sizeof u);
	return (uint16_t)(sign | (u >> 16));
}

#endif
