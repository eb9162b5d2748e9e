/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels_elementwise.c: the f32 kernels that map dense elements one to
 * one — unary (neg ... tanh), binary (add ... min) and binary with a
 * scalar (add_scalar ... min_scalar). Bindings may alias exactly (out ==
 * in): every loop works in blocks (CPU_BLOCK in kernels.h) that read all
 * their inputs before storing.
 *
 * Each operation is an element function; the macros at the bottom stamp
 * out its range loop, run function, impl and table entry. */
#include "build-config.h"

#include <math.h>

#include "plugins/cpu/kernels.h"
#include "plugins/cpu/kernels_math.h"
#include "plugins/cpu/threadpool.h"

/* Operations costing tens of cycles per element (exp and friends) are
 * worth a thread at fewer elements than a plain add. */
#define HEAVY_GRAIN (CPU_GRAIN / 8)

/*===----------------------------------------------------------------------===
 * Element functions
 *===----------------------------------------------------------------------===*/

static inline float neg_f32(float x)
{
	return -x;
}

static inline float abs_f32(float x)
{
	return fabsf(x);
}

static inline float sqrt_f32(float x)
{
	/* sqrtps; -fno-math-errno (local.mk) keeps errno out of it. */
	return sqrtf(x);
}

/* max(x, 0) with NaN propagating (plugin.h), as PyTorch and NumPy do. */
static inline float relu_f32(float x)
{
	return x > 0.0f || x != x ? x : 0.0f;
}

/*===----------------------------------------------------------------------===
 * Loops
 *===----------------------------------------------------------------------===*/

/* A unary or binary kernel's bindings (b is NULL for a unary one). */
struct dense_job {
	float *out;
	const float *a;
	const float *b;
};

struct scalar_job {
	float *out;
	const float *a;
	float scalar;
	int scalar_first;
};

/* |op| is a constant at every call site, so gcc inlines it into the loop. */
static inline void unary_loop(const struct dense_job *job, size_t begin,
			      size_t end, float (*op)(float))
{
	float *out = job->out;
	const float *in = job->a;
	size_t i = begin;

	CPU_BLOCKED(i, end, out, op(in[i + j]));
	for (; i < end; i++)
		out[i] = op(in[i]);
}

static inline void binary_loop(const struct dense_job *job, size_t begin,
			       size_t end, float (*op)(float, float))
{
	float *out = job->out;
	const float *a = job->a, *b = job->b;
	size_t i = begin;

	CPU_BLOCKED(i, end, out, op(a[i + j], b[i + j]));
	for (; i < end; i++)
		out[i] = op(a[i], b[i]);
}

/* Two loops rather than a test per element: gcc at -O2 does not unswitch
 * loops, and the test would keep it from vectorising. */
static inline void scalar_loop(const struct scalar_job *job, size_t begin,
			       size_t end, float (*op)(float, float))
{
	float *out = job->out;
	const float *a = job->a;
	const float s = job->scalar;
	size_t i = begin;

	if (job->scalar_first) {
		CPU_BLOCKED(i, end, out, op(s, a[i + j]));
		for (; i < end; i++)
			out[i] = op(s, a[i]);
	} else {
		CPU_BLOCKED(i, end, out, op(a[i + j], s));
		for (; i < end; i++)
			out[i] = op(a[i], s);
	}
}

/*===----------------------------------------------------------------------===
 * Run functions
 *===----------------------------------------------------------------------===*/

/* The counts below fit in size_t: launch checked that every binding holds
 * that many elements. */

/* A unary or binary kernel: |range| over the count of its
 * wafer_elementwise_params, in pieces of |grain| elements. */
static wafer_status run_dense(const struct cpu_kernel_args *args,
			      cpu_range_fn range, size_t grain)
{
	struct dense_job job = {
		.out = args->data[0],
		.a = args->data[1],
		.b = args->binding_count > 2 ? args->data[2] : NULL,
	};

	cpu_pool_parallel_for(args->pool,
			      (size_t)cpu_elementwise_count(args->params), grain,
			      range, &job);
	return WAFER_OK;
}

static wafer_status run_scalar(const struct cpu_kernel_args *args,
			       cpu_range_fn range, size_t grain)
{
	struct wafer_scalar_params p = CPU_PARAMS(struct wafer_scalar_params,
						  args->params);
	struct scalar_job job = {
		.out = args->data[0],
		.a = args->data[1],
		.scalar = (float)p.scalar,
		.scalar_first = p.scalar_first != 0,
	};

	cpu_pool_parallel_for(args->pool, (size_t)p.count, grain, range, &job);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The kernels
 *===----------------------------------------------------------------------===*/

#define UNARY(name_, fn_, grain_)                                              \
	CPU_LOOP_KERNEL(name_, unary_loop, fn_, run_dense, grain_)             \
	CPU_COUNTED_IMPL(name_##_impl, cpu_elementwise_count,                  \
		sizeof(float), run_##name_);

#define BINARY(name_, fn_)                                                     \
	CPU_LOOP_KERNEL(name_, binary_loop, fn_, run_dense, CPU_GRAIN)         \
	CPU_COUNTED_IMPL(name_##_impl, cpu_elementwise_count,                  \
		sizeof(float), run_##name_);                                   \
	CPU_LOOP_KERNEL(name_##_scalar, scalar_loop, fn_, run_scalar,          \
			CPU_GRAIN)                                             \
	CPU_COUNTED_IMPL(name_##_scalar_impl, cpu_scalar_count,                \
		sizeof(float), run_##name_##_scalar);

UNARY(neg, neg_f32, CPU_GRAIN)
UNARY(abs, abs_f32, CPU_GRAIN)
UNARY(exp, cpu_exp, HEAVY_GRAIN)
UNARY(log, cpu_log, HEAVY_GRAIN)
UNARY(sqrt, sqrt_f32, CPU_GRAIN)
UNARY(relu, relu_f32, CPU_GRAIN)
UNARY(gelu, cpu_gelu, HEAVY_GRAIN)
UNARY(sigmoid, cpu_sigmoid, HEAVY_GRAIN)
UNARY(tanh, cpu_tanh, HEAVY_GRAIN)

BINARY(add, cpu_add)
BINARY(sub, cpu_sub)
BINARY(mul, cpu_mul)
BINARY(div, cpu_div)
BINARY(max, cpu_max)
BINARY(min, cpu_min)

#define UNARY_ENTRY(op_, name_)                                                \
	CPU_F32_KERNEL(op_, 2, struct wafer_elementwise_params, name_##_impl)
#define BINARY_ENTRIES(op_, scalar_op_, name_)                                 \
	CPU_F32_KERNEL(op_, 3, struct wafer_elementwise_params,                \
		       name_##_impl),                                          \
		CPU_F32_KERNEL(scalar_op_, 2, struct wafer_scalar_params,      \
			       name_##_scalar_impl)

/* The catalogue's unary and binary kernels (UNARY and BINARY above make
 * their bodies). */
static const struct wafer_kernel entries[] = {
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference)                   \
	UNARY_ENTRY(WAFER_KERNEL_##NAME, name),
#define WAFER_CATALOGUE_BINARY(name, NAME, reference)                          \
	BINARY_ENTRIES(WAFER_KERNEL_##NAME, WAFER_KERNEL_##NAME##_SCALAR, name),
#include <wafer/catalogue.def>
};

CPU_KERNEL_SET_DEFINE(elementwise, entries);
