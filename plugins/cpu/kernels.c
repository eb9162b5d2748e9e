/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels.c: the cpu plugin's kernel table (kernels.h) and the f32 kernels
 * of the standard catalogue in plugin.h: noop, fill, copy, relu, add, mul.
 *
 * A kernel is three layers, bottom up:
 *   - an element function (relu_f32, add_f32) — the arithmetic;
 *   - a range function (relu_range) — the loop over [begin, end), which
 *     the thread pool calls on each thread with one contiguous range;
 *   - a run function (run_relu) — reads the parameter block and hands the
 *     whole count to cpu_pool_parallel_for.
 * The table at the bottom ties each run function to the catalogue entry
 * the core looks up by name. */
#include "build-config.h"

#include <string.h>

#include "plugins/cpu/kernels.h"
#include "plugins/cpu/threadpool.h"

/* The fewest elements worth a thread of their own: launches of fewer than
 * two grains run inline on the launching thread. Measured on a 2-vCPU
 * x86-64 VM (gcc 12 -O2): add on 1000 floats costs 0.16 us per launch,
 * 64K floats about 10 us inline, and waking a worker costs 5-10 us; on that
 * shared machine two threads paid off only from about 1M elements, while a
 * dedicated many-core host wakes workers faster. 32K is the middle ground:
 * a range is at least ~5 us of work. Tune it here, in one place. */
#define GRAIN 32768

/* Loops walk their range in blocks of BLOCK elements. Each block is first
 * computed into a local array and then stored, so every input of a block is
 * read before any of its output is written. That makes exact aliasing (out
 * == in, which plugin.h allows) correct without `restrict`, which exact
 * aliasing would turn into undefined behaviour — and the fixed-length inner
 * loops vectorise at plain -O2, where gcc's "very cheap" cost model refuses
 * a loop over a run-time length (it would need a scalar epilogue or an
 * alias check). Checked with gcc 12, -O2 -fopt-info-vec: the compute loop
 * of every block is "vectorized using 16 byte vectors" (SSE2, the x86-64
 * baseline) and its store loop becomes four 16-byte stores; only the tail
 * of a range, under BLOCK elements, runs scalar. */
#define BLOCK 16

/*===----------------------------------------------------------------------===
 * Element functions and range loops
 *===----------------------------------------------------------------------===*/

static inline float relu_f32(float x)
{
	return x > 0.0f ? x : 0.0f;
}

static inline float add_f32(float a, float b)
{
	return a + b;
}

static inline float mul_f32(float a, float b)
{
	return a * b;
}

struct fill_job {
	float *out;
	float value;
};

struct unary_job {
	float *out;
	const float *in;
};

struct binary_job {
	float *out;
	const float *a;
	const float *b;
};

static void fill_range(void *ctx, size_t begin, size_t end)
{
	const struct fill_job *job = ctx;
	float *out = job->out;
	const float value = job->value;
	size_t i = begin;

	for (; i + BLOCK <= end; i += BLOCK)
		for (size_t j = 0; j < BLOCK; j++)
			out[i + j] = value;
	for (; i < end; i++)
		out[i] = value;
}

/* memcpy is the best copy loop there is; out == in needs no work (and
 * memcpy must not be given overlapping buffers). */
static void copy_range(void *ctx, size_t begin, size_t end)
{
	const struct unary_job *job = ctx;

	if (job->out != job->in)
		memcpy(job->out + begin, job->in + begin,
		       (end - begin) * sizeof(float));
}

/* |op| is a constant at every call site, so gcc inlines it into the loop. */
static inline void unary_loop(float *out, const float *in, size_t begin,
			      size_t end, float (*op)(float))
{
	size_t i = begin;

	for (; i + BLOCK <= end; i += BLOCK) {
		float block[BLOCK];
		for (size_t j = 0; j < BLOCK; j++)
			block[j] = op(in[i + j]);
		for (size_t j = 0; j < BLOCK; j++)
			out[i + j] = block[j];
	}
	for (; i < end; i++)
		out[i] = op(in[i]);
}

static inline void binary_loop(float *out, const float *a, const float *b,
			       size_t begin, size_t end,
			       float (*op)(float, float))
{
	size_t i = begin;

	for (; i + BLOCK <= end; i += BLOCK) {
		float block[BLOCK];
		for (size_t j = 0; j < BLOCK; j++)
			block[j] = op(a[i + j], b[i + j]);
		for (size_t j = 0; j < BLOCK; j++)
			out[i + j] = block[j];
	}
	for (; i < end; i++)
		out[i] = op(a[i], b[i]);
}

static void relu_range(void *ctx, size_t begin, size_t end)
{
	const struct unary_job *job = ctx;

	unary_loop(job->out, job->in, begin, end, relu_f32);
}

static void add_range(void *ctx, size_t begin, size_t end)
{
	const struct binary_job *job = ctx;

	binary_loop(job->out, job->a, job->b, begin, end, add_f32);
}

static void mul_range(void *ctx, size_t begin, size_t end)
{
	const struct binary_job *job = ctx;

	binary_loop(job->out, job->a, job->b, begin, end, mul_f32);
}

/*===----------------------------------------------------------------------===
 * Parameter blocks and run functions
 *===----------------------------------------------------------------------===*/

/* The parameter block may sit at any address (the core may have copied it
 * into a command buffer), so it is copied out, never cast and read. Its
 * size was checked against the table entry before any of this runs. */
static struct wafer_fill_params fill_params(const void *params)
{
	struct wafer_fill_params p;

	memcpy(&p, params, sizeof p);
	return p;
}

static struct wafer_elementwise_params elementwise_params(const void *params)
{
	struct wafer_elementwise_params p;

	memcpy(&p, params, sizeof p);
	return p;
}

static uint64_t fill_count(const void *params)
{
	return fill_params(params).count;
}

static uint64_t elementwise_count(const void *params)
{
	return elementwise_params(params).count;
}

/* The counts below fit in size_t: launch checked that every binding holds
 * that many elements. */

static wafer_status run_fill(const struct cpu_kernel_args *args)
{
	struct wafer_fill_params p = fill_params(args->params);
	struct fill_job job = {
		.out = args->data[0],
		.value = (float)p.value,
	};

	cpu_pool_parallel_for(args->pool, (size_t)p.count, GRAIN, fill_range,
			      &job);
	return WAFER_OK;
}

static wafer_status run_unary(const struct cpu_kernel_args *args,
			      cpu_range_fn range)
{
	struct wafer_elementwise_params p = elementwise_params(args->params);
	struct unary_job job = {
		.out = args->data[0],
		.in = args->data[1],
	};

	cpu_pool_parallel_for(args->pool, (size_t)p.count, GRAIN, range, &job);
	return WAFER_OK;
}

static wafer_status run_binary(const struct cpu_kernel_args *args,
			       cpu_range_fn range)
{
	struct wafer_elementwise_params p = elementwise_params(args->params);
	struct binary_job job = {
		.out = args->data[0],
		.a = args->data[1],
		.b = args->data[2],
	};

	cpu_pool_parallel_for(args->pool, (size_t)p.count, GRAIN, range, &job);
	return WAFER_OK;
}

static wafer_status run_copy(const struct cpu_kernel_args *args)
{
	return run_unary(args, copy_range);
}

static wafer_status run_relu(const struct cpu_kernel_args *args)
{
	return run_unary(args, relu_range);
}

static wafer_status run_add(const struct cpu_kernel_args *args)
{
	return run_binary(args, add_range);
}

static wafer_status run_mul(const struct cpu_kernel_args *args)
{
	return run_binary(args, mul_range);
}

/* noop touches nothing: it is what dispatch costs (wafer-bench dispatch). */
static uint64_t noop_count(const void *params)
{
	return 0;
}

static wafer_status run_noop(const struct cpu_kernel_args *args)
{
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The kernel table
 *===----------------------------------------------------------------------===*/

static const struct cpu_kernel_impl noop_impl = {
	.count = noop_count,
	.element_size = 0,
	.run = run_noop,
};

static const struct cpu_kernel_impl fill_impl = {
	.count = fill_count,
	.element_size = sizeof(float),
	.run = run_fill,
};

static const struct cpu_kernel_impl copy_impl = {
	.count = elementwise_count,
	.element_size = sizeof(float),
	.run = run_copy,
};

static const struct cpu_kernel_impl relu_impl = {
	.count = elementwise_count,
	.element_size = sizeof(float),
	.run = run_relu,
};

static const struct cpu_kernel_impl add_impl = {
	.count = elementwise_count,
	.element_size = sizeof(float),
	.run = run_add,
};

static const struct cpu_kernel_impl mul_impl = {
	.count = elementwise_count,
	.element_size = sizeof(float),
	.run = run_mul,
};

/* One catalogue entry: the default (and only) f32 variant of |op|. */
#define F32_KERNEL(op_, bindings_, params_type_, impl_)                        \
	{                                                                      \
		.struct_size = sizeof(struct wafer_kernel),                    \
		.op = (op_),                                                   \
		.variant = "default",                                          \
		.dtype = WAFER_DTYPE_F32,                                      \
		.binding_count = (bindings_),                                  \
		.params_size = sizeof(params_type_),                           \
		.impl = &(impl_),                                              \
	}

/* Bindings and parameter blocks as the catalogue in plugin.h defines them. */
static const struct wafer_kernel kernel_table[] = {
	{
		.struct_size = sizeof(struct wafer_kernel),
		.op = WAFER_KERNEL_NOOP,
		.variant = "default",
		.dtype = WAFER_DTYPE_F32,
		.binding_count = 0,
		.params_size = 0,
		.impl = &noop_impl,
	},
	F32_KERNEL(WAFER_KERNEL_FILL, 1, struct wafer_fill_params, fill_impl),
	F32_KERNEL(WAFER_KERNEL_COPY, 2, struct wafer_elementwise_params,
		   copy_impl),
	F32_KERNEL(WAFER_KERNEL_RELU, 2, struct wafer_elementwise_params,
		   relu_impl),
	F32_KERNEL(WAFER_KERNEL_ADD, 3, struct wafer_elementwise_params,
		   add_impl),
	F32_KERNEL(WAFER_KERNEL_MUL, 3, struct wafer_elementwise_params,
		   mul_impl),
};

#define KERNEL_COUNT (sizeof kernel_table / sizeof kernel_table[0])

const struct wafer_kernel *cpu_kernel_table(size_t *out_count)
{
	*out_count = KERNEL_COUNT;
	return kernel_table;
}

const struct wafer_kernel *cpu_kernel_find(const struct wafer_kernel *kernel)
{
	if (!WAFER_STRUCT_HAS(kernel, struct wafer_kernel, impl))
		return NULL;
	for (size_t i = 0; i < KERNEL_COUNT; i++)
		if (kernel->impl == kernel_table[i].impl)
			return &kernel_table[i];
	return NULL;
}
