/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels_basic.c: noop, fill and copy.
 *
 * A kernel is three layers, bottom up:
 *   - a range function (fill_range) — the loop over [begin, end), which
 *     the thread pool calls on each thread with one contiguous range;
 *   - a run function (run_fill) — reads the parameter block and hands the
 *     whole count to cpu_pool_parallel_for;
 *   - an impl and a table entry, which tie the run function to the
 *     catalogue name the core looks up.
 * The other kernel files follow the same pattern. */
#include "build-config.h"

#include <string.h>

#include "plugins/cpu/kernels.h"
#include "plugins/cpu/threadpool.h"

/* noop touches nothing: it is what dispatch costs (wafer-bench dispatch). */
static uint64_t noop_count(const void *params)
{
	return 0;
}

static wafer_status run_noop(const struct cpu_kernel_args *args)
{
	return WAFER_OK;
}

struct fill_job {
	float *out;
	float value;
};

static void fill_range(void *ctx, size_t begin, size_t end)
{
	const struct fill_job *job = ctx;
	float *out = job->out;
	const float value = job->value;
	size_t i = begin;

	for (; i + CPU_BLOCK <= end; i += CPU_BLOCK)
		for (size_t j = 0; j < CPU_BLOCK; j++)
			out[i + j] = value;
	for (; i < end; i++)
		out[i] = value;
}

/* The counts below fit in size_t: launch checked that every binding holds
 * that many elements. */
static wafer_status run_fill(const struct cpu_kernel_args *args)
{
	struct wafer_fill_params p = CPU_PARAMS(struct wafer_fill_params,
						args->params);
	struct fill_job job = {
		.out = args->data[0],
		.value = (float)p.value,
	};

	cpu_pool_parallel_for(args->pool, (size_t)p.count, CPU_GRAIN,
			      fill_range, &job);
	return WAFER_OK;
}

/* copy moves bytes; one impl per element size. memcpy is the best copy
 * loop there is; out == in needs no work (and memcpy must not be given
 * overlapping buffers). */
struct copy_job {
	char *out;
	const char *in;
	size_t element_size;
};

static void copy_range(void *ctx, size_t begin, size_t end)
{
	const struct copy_job *job = ctx;
	size_t es = job->element_size;

	if (job->out != job->in)
		memcpy(job->out + begin * es, job->in + begin * es,
		       (end - begin) * es);
}

wafer_status cpu_run_copy(const struct cpu_kernel_args *args,
			  size_t element_size)
{
	struct copy_job job = {
		.out = args->data[0],
		.in = args->data[1],
		.element_size = element_size,
	};

	cpu_pool_parallel_for(args->pool,
			      (size_t)cpu_elementwise_count(args->params),
			      CPU_GRAIN * 4 / element_size, copy_range, &job);
	return WAFER_OK;
}

CPU_BIND(run_copy4, cpu_run_copy, 4)
CPU_BIND(run_copy2, cpu_run_copy, 2)

CPU_COUNTED_IMPL(noop_impl, noop_count, 0, run_noop);

CPU_COUNTED_IMPL(fill_impl, cpu_fill_count, sizeof(float), run_fill);

CPU_COUNTED_IMPL(copy4_impl, cpu_elementwise_count, 4, run_copy4);

CPU_COUNTED_IMPL(copy2_impl, cpu_elementwise_count, 2, run_copy2);

static const struct wafer_kernel entries[] = {
	{
		.struct_size = sizeof(struct wafer_kernel),
		.op = WAFER_KERNEL_NOOP,
		.variant = "default",
		.dtype = WAFER_DTYPE_F32,
		.binding_count = 0,
		.params_size = 0,
		.impl = &noop_impl,
	},
	CPU_F32_KERNEL(WAFER_KERNEL_FILL, 1, struct wafer_fill_params,
		       fill_impl),
	CPU_F32_KERNEL(WAFER_KERNEL_COPY, 2, struct wafer_elementwise_params,
		       copy4_impl),
	CPU_KERNEL(WAFER_KERNEL_COPY, "default", WAFER_DTYPE_F16, 2,
		   struct wafer_elementwise_params, copy2_impl),
	CPU_KERNEL(WAFER_KERNEL_COPY, "default", WAFER_DTYPE_BF16, 2,
		   struct wafer_elementwise_params, copy2_impl),
};

CPU_KERNEL_SET_DEFINE(basic, entries);
