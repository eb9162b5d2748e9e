/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels_reduce.c: f32 kernels over rows — reduce_sum, reduce_max,
 * reduce_mean and softmax on a rows x cols row-major input. The pool
 * splits the rows; each row is one thread's.
 *
 * A row is reduced into CPU_BLOCK lanes (lane j takes elements j, j +
 * CPU_BLOCK, ...), which is a fixed-length loop gcc vectorises, then the
 * lanes are combined pairwise. That is also a better sum than a
 * sequential one: each lane adds a sixteenth of the row. */
#include "build-config.h"

#include <stdio.h>

#include "plugins/cpu/kernels.h"
#include "plugins/cpu/kernels_math.h"
#include "plugins/cpu/threadpool.h"


/* out[c] = e^(in[c] - max), returning their sum; then scaled. out may be
 * in: each element is read before it is written. */
static void row_softmax(float *out, const float *in, size_t cols)
{
	const float m = cpu_max_f32(in, cols);
	float lanes[CPU_BLOCK] = {0};
	size_t i = 0;

	for (; i + CPU_BLOCK <= cols; i += CPU_BLOCK) {
		float block[CPU_BLOCK];
		for (size_t j = 0; j < CPU_BLOCK; j++)
			block[j] = cpu_exp(in[i + j] - m);
		for (size_t j = 0; j < CPU_BLOCK; j++) {
			out[i + j] = block[j];
			lanes[j] += block[j];
		}
	}
	for (size_t j = 0; i < cols; i++, j++) {
		float e = cpu_exp(in[i] - m);
		out[i] = e;
		lanes[j] += e;
	}
	for (size_t width = CPU_BLOCK / 2; width > 0; width /= 2)
		for (size_t j = 0; j < width; j++)
			lanes[j] += lanes[j + width];
	const float scale = 1.0f / lanes[0];
	for (i = 0; i + CPU_BLOCK <= cols; i += CPU_BLOCK)
		for (size_t j = 0; j < CPU_BLOCK; j++)
			out[i + j] *= scale;
	for (; i < cols; i++)
		out[i] *= scale;
}

/*===----------------------------------------------------------------------===
 * Kernels
 *===----------------------------------------------------------------------===*/

enum row_op { ROW_SUM, ROW_MAX, ROW_MEAN, ROW_SOFTMAX };

struct rows_job {
	float *out;
	const float *in;
	size_t cols;
	enum row_op op;
};

static void rows_range(void *ctx, size_t begin, size_t end)
{
	const struct rows_job *job = ctx;
	const size_t cols = job->cols;

	for (size_t r = begin; r < end; r++) {
		const float *x = job->in + r * cols;
		switch (job->op) {
		case ROW_SUM:
			job->out[r] = cpu_sum_f32(x, cols);
			break;
		case ROW_MAX:
			job->out[r] = cpu_max_f32(x, cols);
			break;
		case ROW_MEAN:
			job->out[r] = cpu_sum_f32(x, cols) / (float)cols;
			break;
		case ROW_SOFTMAX:
			row_softmax(job->out + r * cols, x, cols);
			break;
		}
	}
}

static wafer_status check_rows(const struct cpu_kernel_args *args,
			      int full_output)
{
	struct wafer_rows_params p =
		CPU_PARAMS(struct wafer_rows_params, args->params);

	return wafer_plugin_check_rows(&args->reach, &p, sizeof(float),
				       full_output, NULL);
}

wafer_status cpu_check_reduce(const struct cpu_kernel_args *args)
{
	return check_rows(args, 0);
}

static wafer_status check_softmax(const struct cpu_kernel_args *args)
{
	return check_rows(args, 1);
}

static wafer_status run_rows(const struct cpu_kernel_args *args,
			     enum row_op op)
{
	struct wafer_rows_params p =
		CPU_PARAMS(struct wafer_rows_params, args->params);
	struct rows_job job = {
		.out = args->data[0],
		.in = args->data[1],
		.cols = (size_t)p.cols,
		.op = op,
	};
	/* Rows per thread: about a grain of elements (fewer for softmax,
	 * which calls exp on each). */
	size_t per_row = op == ROW_SOFTMAX ? job.cols * 8 : job.cols;
	size_t grain = CPU_GRAIN / (per_row ? per_row : 1);

	cpu_pool_parallel_for(args->pool, (size_t)p.rows, grain ? grain : 1,
			      rows_range, &job);
	return WAFER_OK;
}

CPU_CHECKED_IMPL_OF(reduce_sum_impl, cpu_check_reduce, run_rows, ROW_SUM);
CPU_CHECKED_IMPL_OF(reduce_max_impl, cpu_check_reduce, run_rows, ROW_MAX);
CPU_CHECKED_IMPL_OF(reduce_mean_impl, cpu_check_reduce, run_rows, ROW_MEAN);
CPU_CHECKED_IMPL_OF(softmax_impl, check_softmax, run_rows, ROW_SOFTMAX);

/* The catalogue's row kernels: <name>_impl each. */
static const struct wafer_kernel entries[] = {
#define WAFER_CATALOGUE_ROWS(name, NAME, dtypes, output)                       \
	CPU_F32_KERNEL(WAFER_KERNEL_##NAME, 2, struct wafer_rows_params,       \
		       name##_impl),
#include <wafer/catalogue.def>
};

CPU_KERNEL_SET_DEFINE(reduce, entries);
