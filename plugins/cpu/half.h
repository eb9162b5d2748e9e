/* wafer — SPDX-License-Identifier: MIT
 *
 * half.h: f16 and bf16 to and from f32, with the rounding rules of
 * plugin.h (round to nearest even, overflow to inf, NaN kept quiet). The
 * cast kernels (kernels_cast.c) and the f16/bf16 reductions of the MPI
 * module (comm_mpi.c) use them. Header-only. */
#ifndef WAFER_PLUGINS_CPU_HALF_H
#define WAFER_PLUGINS_CPU_HALF_H

#include <stdint.h>

#include "plugins/cpu/kernels_math.h" /* cpu_f2u, cpu_u2f, CPU_ROUND_MAGIC */

static inline float f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exponent = (h >> 10) & 0x1fu;
	uint32_t mantissa = h & 0x3ffu;

	if (exponent == 0) /* zero or subnormal: mantissa * 2^-24, exact */
		return cpu_u2f(sign | cpu_f2u((float)mantissa * 0x1p-24f));
	if (exponent == 31) /* inf or NaN (payload kept) */
		return cpu_u2f(sign | 0x7f800000u | (mantissa << 13));
	return cpu_u2f(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/* Round to nearest even; overflow to inf; NaN stays NaN (quiet). */
static inline uint16_t f32_to_f16(float f)
{
	uint32_t x = cpu_f2u(f);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
	uint32_t ax = x & 0x7fffffffu;

	if (ax > 0x7f800000u) /* NaN */
		return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x1ffu));
	if (ax >= 0x477ff000u) /* 65520 and above round to inf */
		return sign | 0x7c00u;
	if (ax >= 0x38800000u) { /* normal in f16: rebias, round */
		uint32_t h = (ax - 0x38000000u + 0xfffu + ((ax >> 13) & 1u)) >>
			     13;
		return (uint16_t)(sign | h);
	}
	/* Subnormal in f16: |f| * 2^24 rounded to an integer (0..1024; 1024
	 * is the smallest normal, which the bits spell right). */
	float scaled = cpu_u2f(ax) * 0x1p24f;
	scaled = (scaled + CPU_ROUND_MAGIC) - CPU_ROUND_MAGIC;
	return (uint16_t)(sign | (uint16_t)scaled);
}

static inline float bf16_to_f32(uint16_t h)
{
	return cpu_u2f((uint32_t)h << 16);
}

static inline uint16_t f32_to_bf16(float f)
{
	uint32_t x = cpu_f2u(f);

	if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet */
		return (uint16_t)((x >> 16) | 0x40u);
	return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

#endif
