/* wafer — SPDX-License-Identifier: MIT
 *
 * reduce_split.c: the "split_row" variants of reduce_sum and reduce_max
 * (f32). The default variants (kernels_reduce.c) give each thread whole
 * rows, which leaves threads idle when there are fewer rows than threads
 * — a single long row is reduced by one core. Here every row is cut into
 * chunks of CHUNK elements; the threads reduce chunks of any row, each
 * into its own partial result, and the partials of a row are combined at
 * the end (in chunk order, so the result does not depend on the number of
 * threads). Which variant wins for a shape is autotune's to measure: for
 * many short rows the split only adds the partials' traffic. */
#include "build-config.h"

#include <math.h>
#include <stdlib.h>

#include "plugins/cpu/kernels.h"
#include "plugins/cpu/kernels_math.h"
#include "plugins/cpu/threadpool.h"

/* Elements per chunk: one grain, the least work worth a thread. */
#define CHUNK ((size_t)CPU_GRAIN)

enum split_op { SPLIT_SUM, SPLIT_MAX };

struct split_job {
	const float *in;
	float *partial; /* rows x chunks */
	size_t cols;
	size_t chunks; /* per row */
	enum split_op op;
};


/* Items are chunks of the whole input: item q is chunk q % chunks of row
 * q / chunks. */
static void split_range(void *ctx, size_t begin, size_t end)
{
	const struct split_job *job = ctx;

	for (size_t q = begin; q < end; q++) {
		size_t row = q / job->chunks, chunk = q % job->chunks;
		size_t first = chunk * CHUNK;
		size_t n = job->cols - first < CHUNK ? job->cols - first : CHUNK;
		const float *x = job->in + row * job->cols + first;
		job->partial[q] = job->op == SPLIT_SUM ? cpu_sum_f32(x, n)
						       : cpu_max_f32(x, n);
	}
}

static wafer_status run_split(const struct cpu_kernel_args *args,
			      enum split_op op)
{
	struct wafer_rows_params p =
		CPU_PARAMS(struct wafer_rows_params, args->params);
	float *out = args->data[0];
	struct split_job job = {
		.in = args->data[1],
		.cols = (size_t)p.cols,
		.chunks = ((size_t)p.cols + CHUNK - 1) / CHUNK,
		.op = op,
	};
	size_t items = (size_t)p.rows * job.chunks;

	job.partial = malloc(items * sizeof *job.partial);
	if (!job.partial)
		return WAFER_ERROR_OUT_OF_MEMORY;
	/* A chunk is a grain's work; short rows make chunks smaller, so
	 * several of them make a range. */
	size_t grain = job.cols >= CHUNK ? 1 : CHUNK / job.cols;
	cpu_pool_parallel_for(args->pool, items, grain, split_range, &job);
	for (size_t r = 0; r < (size_t)p.rows; r++) {
		const float *part = job.partial + r * job.chunks;
		float acc = part[0];
		for (size_t c = 1; c < job.chunks; c++)
			acc = op == SPLIT_SUM ? acc + part[c]
			      : (isnan(acc) || isnan(part[c])) ? NAN
			      : part[c] > acc ? part[c]
					      : acc;
		out[r] = acc;
	}
	free(job.partial);
	return WAFER_OK;
}

CPU_CHECKED_IMPL_OF(split_sum_impl, cpu_check_reduce, run_split, SPLIT_SUM);
CPU_CHECKED_IMPL_OF(split_max_impl, cpu_check_reduce, run_split, SPLIT_MAX);

static const struct wafer_kernel entries[] = {
	CPU_KERNEL(WAFER_KERNEL_REDUCE_SUM, "split_row", WAFER_DTYPE_F32, 2,
		   struct wafer_rows_params, split_sum_impl),
	CPU_KERNEL(WAFER_KERNEL_REDUCE_MAX, "split_row", WAFER_DTYPE_F32, 2,
		   struct wafer_rows_params, split_max_impl),
};

CPU_KERNEL_SET_DEFINE(reduce_split, entries);
