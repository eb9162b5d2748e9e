/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels_cast.c: cast between f32, f16, bf16 and i32, with the rounding
 * rules of plugin.h. One table entry per source dtype; each converts into
 * any of the four. Every conversion goes through f32, which is exact for
 * f16 and bf16 sources and for i32 to f16 (integers above 2^24 are beyond
 * f16's range anyway); i32 to bf16 rounds once, from the integer, so the
 * f32 step cannot round twice. */
#include "build-config.h"

#include <stdio.h>

#include "plugins/cpu/kernels.h"
#include "plugins/cpu/half.h"
#include "plugins/cpu/kernels_math.h"
#include "plugins/cpu/threadpool.h"

/*===----------------------------------------------------------------------===
 * Element conversions (f16 and bf16: half.h)
 *===----------------------------------------------------------------------===*/

/* Truncate toward zero, saturate, NaN to 0. */
static inline int32_t f32_to_i32(float f)
{
	if (f != f)
		return 0;
	if (f >= 2147483648.0f)
		return INT32_MAX;
	if (f <= -2147483648.0f)
		return INT32_MIN;
	return (int32_t)f;
}

/* i32 to bf16 with one rounding: keep 8 significant bits of |v|,
 * nearest even, then the result is exact in f32 and truncates exactly. */
static inline uint16_t i32_to_bf16(int32_t v)
{
	uint32_t sign = v < 0 ? 0x8000u : 0;
	uint64_t mag = v < 0 ? (uint64_t)(-(int64_t)v) : (uint64_t)v;
	int top = 63 - __builtin_clzll(mag | 1);

	if (top > 7) {
		int shift = top - 7;
		uint64_t keep = mag >> shift;
		uint64_t rest = mag & ((UINT64_C(1) << shift) - 1);
		uint64_t half = UINT64_C(1) << (shift - 1);
		if (rest > half || (rest == half && (keep & 1)))
			keep++;
		mag = keep << shift;
	}
	return (uint16_t)(sign | (cpu_f2u((float)mag) >> 16));
}

/*===----------------------------------------------------------------------===
 * The kernel
 *===----------------------------------------------------------------------===*/

struct cast_job {
	void *out;
	const void *in;
	uint32_t from, to;
};

static inline float load(const void *in, uint32_t dtype, size_t i)
{
	switch (dtype) {
	case WAFER_DTYPE_F16:
		return f16_to_f32(((const uint16_t *)in)[i]);
	case WAFER_DTYPE_BF16:
		return bf16_to_f32(((const uint16_t *)in)[i]);
	case WAFER_DTYPE_I32:
		return (float)((const int32_t *)in)[i];
	default:
		return ((const float *)in)[i];
	}
}

static inline void store(void *out, uint32_t dtype, size_t i, float v)
{
	switch (dtype) {
	case WAFER_DTYPE_F16:
		((uint16_t *)out)[i] = f32_to_f16(v);
		break;
	case WAFER_DTYPE_BF16:
		((uint16_t *)out)[i] = f32_to_bf16(v);
		break;
	case WAFER_DTYPE_I32:
		((int32_t *)out)[i] = f32_to_i32(v);
		break;
	default:
		((float *)out)[i] = v;
	}
}

static void cast_range(void *ctx, size_t begin, size_t end)
{
	const struct cast_job *job = ctx;

	if (job->from == WAFER_DTYPE_I32 && job->to == WAFER_DTYPE_BF16) {
		const int32_t *in = job->in;
		uint16_t *out = job->out;
		for (size_t i = begin; i < end; i++)
			out[i] = i32_to_bf16(in[i]);
		return;
	}
	if (job->from == WAFER_DTYPE_I32 && job->to == WAFER_DTYPE_I32) {
		const int32_t *in = job->in;
		int32_t *out = job->out;
		for (size_t i = begin; i < end; i++)
			out[i] = in[i];
		return;
	}
	/* f32 to f32, f16 to f16 ...: exact through f32 (NaN payloads of
	 * f16 and bf16 survive the round trip, being quiet already). */
	for (size_t i = begin; i < end; i++)
		store(job->out, job->to, i, load(job->in, job->from, i));
}

static wafer_status check_cast(const struct cpu_kernel_args *args)
{
	struct wafer_cast_params p =
		CPU_PARAMS(struct wafer_cast_params, args->params);
	size_t from = wafer_plugin_dtype_size(p.dtype_in);
	size_t to = wafer_plugin_dtype_size(p.dtype_out);
	wafer_status status;

	if (wafer_plugin_cast_slot(p.dtype_in) < 0 ||
	    wafer_plugin_cast_slot(p.dtype_out) < 0)
		return wafer_plugin_reach_fail(&args->reach,
					       WAFER_ERROR_INVALID_ARGUMENT,
					       "dtypes %u to %u: cast converts "
					       "between f32, f16, bf16 and i32",
					       p.dtype_in, p.dtype_out);
	status = wafer_plugin_check_holds(&args->reach, 0, p.count, to);
	if (status == WAFER_OK)
		status = wafer_plugin_check_holds(&args->reach, 1, p.count,
						  from);
	return status;
}

static wafer_status run_cast(const struct cpu_kernel_args *args)
{
	struct wafer_cast_params p =
		CPU_PARAMS(struct wafer_cast_params, args->params);
	struct cast_job job = {
		.out = args->data[0],
		.in = args->data[1],
		.from = p.dtype_in,
		.to = p.dtype_out,
	};

	cpu_pool_parallel_for(args->pool, (size_t)p.count, CPU_GRAIN / 4,
			      cast_range, &job);
	return WAFER_OK;
}

/* One impl per source dtype, so that the check can insist that dtype_in
 * is the entry's. */
#define CAST(name_, dtype_)                                                    \
	static wafer_status check_##name_(const struct cpu_kernel_args *args)   \
	{                                                                      \
		uint32_t from = CPU_PARAMS(struct wafer_cast_params,           \
					   args->params)                       \
					.dtype_in;                             \
		if (from != (dtype_))                                          \
			return wafer_plugin_reach_fail(                        \
				&args->reach, WAFER_ERROR_INVALID_ARGUMENT,    \
				"dtype_in %u, but this entry casts from %u",   \
				from, (unsigned)(dtype_));                     \
		return check_cast(args);                                       \
	}                                                                      \
	CPU_CHECKED_IMPL(name_##_impl, check_##name_, run_cast);

CAST(cast_f32, WAFER_DTYPE_F32)
CAST(cast_f16, WAFER_DTYPE_F16)
CAST(cast_bf16, WAFER_DTYPE_BF16)
CAST(cast_i32, WAFER_DTYPE_I32)

#define CAST_ENTRY(dtype_, impl_)                                              \
	CPU_KERNEL(WAFER_KERNEL_CAST, "default", dtype_, 2,                    \
		   struct wafer_cast_params, impl_)

static const struct wafer_kernel entries[] = {
	CAST_ENTRY(WAFER_DTYPE_F32, cast_f32_impl),
	CAST_ENTRY(WAFER_DTYPE_F16, cast_f16_impl),
	CAST_ENTRY(WAFER_DTYPE_BF16, cast_bf16_impl),
	CAST_ENTRY(WAFER_DTYPE_I32, cast_i32_impl),
};

CPU_KERNEL_SET_DEFINE(cast, entries);
