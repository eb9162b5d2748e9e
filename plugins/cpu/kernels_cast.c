/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels_cast.c: cast between every pair of wafer's element types, with
 * the rounding rules of plugin.h. One table entry per source dtype; each
 * converts into any of them. An integer source is read as int64 and a
 * floating one as double (both exact), then rounded once into the
 * target (convert.h says how f16 and bf16 avoid a second rounding). */
#include "build-config.h"

#include <stdio.h>

#include "plugins/cpu/convert.h"
#include "plugins/cpu/kernels.h"
#include "plugins/cpu/half.h"
#include "plugins/cpu/kernels_math.h"
#include "plugins/cpu/threadpool.h"

/*===----------------------------------------------------------------------===
 * Element conversions (f16 and bf16: half.h; the rest: convert.h)
 *===----------------------------------------------------------------------===*/

static bool is_integer(uint32_t dtype)
{
	return dtype == WAFER_DTYPE_I32 || dtype == WAFER_DTYPE_I64 ||
	       dtype == WAFER_DTYPE_U8;
}

/* Integers load exactly as int64, floating types exactly as double. */
static inline int64_t load_int(const void *in, uint32_t dtype, size_t i)
{
	switch (dtype) {
	case WAFER_DTYPE_I32:
		return ((const int32_t *)in)[i];
	case WAFER_DTYPE_U8:
		return ((const uint8_t *)in)[i];
	default:
		return ((const int64_t *)in)[i];
	}
}

static inline double load_float(const void *in, uint32_t dtype, size_t i)
{
	switch (dtype) {
	case WAFER_DTYPE_F16:
		return f16_to_f32(((const uint16_t *)in)[i]);
	case WAFER_DTYPE_BF16:
		return bf16_to_f32(((const uint16_t *)in)[i]);
	case WAFER_DTYPE_F64:
		return ((const double *)in)[i];
	default:
		return ((const float *)in)[i];
	}
}

static inline void store_int(void *out, uint32_t dtype, size_t i, int64_t v)
{
	switch (dtype) {
	case WAFER_DTYPE_F32:
		((float *)out)[i] = (float)v; /* one rounding, nearest even */
		break;
	case WAFER_DTYPE_F64:
		((double *)out)[i] = (double)v;
		break;
	case WAFER_DTYPE_F16:
		/* Exact in f32 below 2^24; anything larger is inf in f16. */
		((uint16_t *)out)[i] = f32_to_f16((float)v);
		break;
	case WAFER_DTYPE_BF16:
		((uint16_t *)out)[i] = cpu_i64_to_bf16(v);
		break;
	case WAFER_DTYPE_I32:
		((int32_t *)out)[i] = cpu_i64_to_i32(v);
		break;
	case WAFER_DTYPE_U8:
		((uint8_t *)out)[i] = cpu_i64_to_u8(v);
		break;
	default:
		((int64_t *)out)[i] = v;
	}
}

static inline void store_float(void *out, uint32_t dtype, size_t i, double v)
{
	switch (dtype) {
	case WAFER_DTYPE_F32:
		((float *)out)[i] = (float)v;
		break;
	case WAFER_DTYPE_F64:
		((double *)out)[i] = v;
		break;
	case WAFER_DTYPE_F16:
		((uint16_t *)out)[i] = f32_to_f16(cpu_f64_to_f32_odd(v));
		break;
	case WAFER_DTYPE_BF16:
		((uint16_t *)out)[i] = f32_to_bf16(cpu_f64_to_f32_odd(v));
		break;
	case WAFER_DTYPE_I32:
		((int32_t *)out)[i] = wafer_plugin_double_to_i32(v);
		break;
	case WAFER_DTYPE_U8:
		((uint8_t *)out)[i] = cpu_double_to_u8(v);
		break;
	default:
		((int64_t *)out)[i] = wafer_plugin_double_to_i64(v);
	}
}

/*===----------------------------------------------------------------------===
 * The kernel
 *===----------------------------------------------------------------------===*/

struct cast_job {
	void *out;
	const void *in;
	uint32_t from, to;
};

/* Every pair goes through int64 (from an integer) or double (from a
 * floating type), both exact for every source. */
static void cast_range(void *ctx, size_t begin, size_t end)
{
	const struct cast_job *job = ctx;

	if (is_integer(job->from))
		for (size_t i = begin; i < end; i++)
			store_int(job->out, job->to, i,
				  load_int(job->in, job->from, i));
	else
		for (size_t i = begin; i < end; i++)
			store_float(job->out, job->to, i,
				    load_float(job->in, job->from, i));
}

static wafer_status check_cast(const struct cpu_kernel_args *args)
{
	struct wafer_cast_params p =
		CPU_PARAMS(struct wafer_cast_params, args->params);
	size_t from = wafer_plugin_dtype_size(p.dtype_in);
	size_t to = wafer_plugin_dtype_size(p.dtype_out);
	wafer_status status;

	if (!to)
		return wafer_plugin_reach_fail(&args->reach,
					       WAFER_ERROR_INVALID_ARGUMENT,
					       "cast into dtype %u, which is "
					       "no element type",
					       p.dtype_out);
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
				"dtype_in %s, but this entry casts from %s",   \
				wafer_plugin_dtype_name(from),                 \
				wafer_plugin_dtype_name(dtype_));                     \
		return check_cast(args);                                       \
	}                                                                      \
	CPU_CHECKED_IMPL(name_##_impl, check_##name_, run_cast);

CAST(cast_f32, WAFER_DTYPE_F32)
CAST(cast_f16, WAFER_DTYPE_F16)
CAST(cast_bf16, WAFER_DTYPE_BF16)
CAST(cast_i32, WAFER_DTYPE_I32)
CAST(cast_f64, WAFER_DTYPE_F64)
CAST(cast_i64, WAFER_DTYPE_I64)
CAST(cast_u8, WAFER_DTYPE_U8)

#define CAST_ENTRY(dtype_, impl_)                                              \
	CPU_KERNEL(WAFER_KERNEL_CAST, "default", dtype_, 2,                    \
		   struct wafer_cast_params, impl_)

static const struct wafer_kernel entries[] = {
	CAST_ENTRY(WAFER_DTYPE_F32, cast_f32_impl),
	CAST_ENTRY(WAFER_DTYPE_F16, cast_f16_impl),
	CAST_ENTRY(WAFER_DTYPE_BF16, cast_bf16_impl),
	CAST_ENTRY(WAFER_DTYPE_I32, cast_i32_impl),
	CAST_ENTRY(WAFER_DTYPE_F64, cast_f64_impl),
	CAST_ENTRY(WAFER_DTYPE_I64, cast_i64_impl),
	CAST_ENTRY(WAFER_DTYPE_U8, cast_u8_impl),
};

CPU_KERNEL_SET_DEFINE(cast, entries);
