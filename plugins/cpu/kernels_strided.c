/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels_strided.c: kernels that read strided views — copy_strided (its
 * f32, f16 and bf16 entries here; every other dtype's in kernels_typed.c
 * runs the same mover) and the f32 _strided binary kernels, which is how
 * broadcasting reaches the device.
 *
 * A range of the dense output is walked one row (a run along the last
 * dimension) at a time: the multi-index of the range's first element is
 * worked out once, then each row is one call of a row loop that knows its
 * two input strides. Rows whose strides are 1 (and 0, for a broadcast
 * operand) run the blocked loops of kernels_elementwise.c, which
 * vectorise; other strides run a plain gather loop. The core merges
 * dimensions before it launches (lib/ops/view.c), so rows are as long as
 * the views allow. */
#include "build-config.h"

#include <stdio.h>
#include <string.h>

#include "plugins/cpu/kernels.h"
#include "plugins/cpu/kernels_math.h"
#include "plugins/cpu/threadpool.h"

/* A walk over the rows of the flat range [pos, end) of a dense |shape|:
 * the row at |pos| is |len| long (0 once the range is done), and |index|
 * is the multi-index of its first element. */
struct cursor {
	uint32_t rank;
	const uint64_t *shape;
	size_t pos, end, len;
	uint64_t index[WAFER_KERNEL_MAX_RANK];
};

/* How many of the flat indices [pos, end) lie in the cursor's row. */
static size_t cursor_row_len(const struct cursor *c)
{
	size_t len = (size_t)(c->shape[c->rank - 1] - c->index[c->rank - 1]);

	return len < c->end - c->pos ? len : c->end - c->pos;
}

/* A cursor at the first row of [begin, end) of |shape|. */
static struct cursor cursor_at(uint32_t rank, const uint64_t *shape,
			       size_t begin, size_t end)
{
	struct cursor c = {.rank = rank, .shape = shape,
			   .pos = begin, .end = end};
	uint64_t rest = begin;

	for (uint32_t d = rank; d-- > 0;) {
		c.index[d] = rest % shape[d];
		rest /= shape[d];
	}
	c.len = begin < end ? cursor_row_len(&c) : 0;
	return c;
}

/* The element offset of the row's first element in a view of |strides|
 * from |offset|. */
static uint64_t cursor_offset(const struct cursor *c, const uint64_t *strides,
			      uint64_t offset)
{
	for (uint32_t d = 0; d < c->rank; d++)
		offset += c->index[d] * strides[d];
	return offset;
}

/* Moves past the rest of the current row: to the start of the next, or
 * to len 0 at the end of the range. */
static void cursor_next_row(struct cursor *c)
{
	uint32_t last = c->rank - 1;

	c->pos += c->len;
	if (c->pos >= c->end) {
		c->len = 0;
		return;
	}
	c->index[last] = 0;
	for (uint32_t d = last; d-- > 0;) {
		if (++c->index[d] < c->shape[d])
			break;
		c->index[d] = 0;
	}
	c->len = cursor_row_len(c);
}

/*===----------------------------------------------------------------------===
 * copy_strided
 *===----------------------------------------------------------------------===*/

struct gather_job {
	char *out;
	const char *in;
	struct wafer_strided_copy_params p;
	size_t element_size;
};

#define GATHER_ROW(type_)                                                      \
	static void gather_row_##type_(type_ *out, const type_ *in,            \
				       size_t len, uint64_t stride)            \
	{                                                                      \
		if (stride == 1) {                                             \
			memcpy(out, in, len * sizeof *out);                    \
		} else if (stride == 0) {                                      \
			const type_ v = in[0];                                 \
			for (size_t j = 0; j < len; j++)                       \
				out[j] = v;                                    \
		} else {                                                       \
			for (size_t j = 0; j < len; j++)                       \
				out[j] = in[j * stride];                       \
		}                                                              \
	}
GATHER_ROW(uint64_t)
GATHER_ROW(uint32_t)
GATHER_ROW(uint16_t)
GATHER_ROW(uint8_t)

static void gather_range(void *ctx, size_t begin, size_t end)
{
	const struct gather_job *job = ctx;
	const struct wafer_strided_copy_params *p = &job->p;
	uint64_t stride = p->strides[p->rank - 1];

	for (struct cursor c = cursor_at(p->rank, p->shape, begin, end); c.len;
	     cursor_next_row(&c)) {
		uint64_t o = cursor_offset(&c, p->strides, p->offset);
		size_t pos = c.pos, len = c.len;
		switch (job->element_size) {
		case 8:
			gather_row_uint64_t((uint64_t *)job->out + pos,
					    (const uint64_t *)job->in + o, len,
					    stride);
			break;
		case 4:
			gather_row_uint32_t((uint32_t *)job->out + pos,
					    (const uint32_t *)job->in + o, len,
					    stride);
			break;
		case 2:
			gather_row_uint16_t((uint16_t *)job->out + pos,
					    (const uint16_t *)job->in + o, len,
					    stride);
			break;
		default:
			gather_row_uint8_t((uint8_t *)job->out + pos,
					   (const uint8_t *)job->in + o, len,
					   stride);
		}
	}
}

wafer_status cpu_check_gather(const struct cpu_kernel_args *args,
			      size_t element_size)
{
	struct wafer_strided_copy_params p =
		CPU_PARAMS(struct wafer_strided_copy_params, args->params);

	return wafer_plugin_check_copy_strided(&args->reach, &p, element_size,
					       NULL, NULL);
}

wafer_status cpu_run_gather(const struct cpu_kernel_args *args,
			    size_t element_size)
{
	struct gather_job job = {
		.out = args->data[0],
		.in = args->data[1],
		.p = CPU_PARAMS(struct wafer_strided_copy_params, args->params),
		.element_size = element_size,
	};
	size_t count = (size_t)cpu_shape_count(job.p.rank, job.p.shape);

	cpu_pool_parallel_for(args->pool, count, CPU_GRAIN,
			      gather_range, &job);
	return WAFER_OK;
}

CPU_BIND(check_gather4, cpu_check_gather, 4)
CPU_BIND(check_gather2, cpu_check_gather, 2)
CPU_BIND(run_gather4, cpu_run_gather, 4)
CPU_BIND(run_gather2, cpu_run_gather, 2)

CPU_CHECKED_IMPL(gather4_impl, check_gather4, run_gather4);

CPU_CHECKED_IMPL(gather2_impl, check_gather2, run_gather2);

/*===----------------------------------------------------------------------===
 * Binary on strided views
 *===----------------------------------------------------------------------===*/

/* One row: out[j] = op(a[j * sa], b[j * sb]). out may alias a (or b)
 * exactly, with stride 1: blocks read before they store. */
static inline void binary_row(float *out, const float *a, const float *b,
			      size_t len, uint64_t sa, uint64_t sb,
			      float (*op)(float, float))
{
	size_t i = 0;

	if (sa == 1 && sb == 1) {
		CPU_BLOCKED(i, len, out, op(a[i + j], b[i + j]));
	} else if (sa == 1 && sb == 0) {
		const float bv = b[0];
		CPU_BLOCKED(i, len, out, op(a[i + j], bv));
	} else if (sa == 0 && sb == 1) {
		const float av = a[0];
		CPU_BLOCKED(i, len, out, op(av, b[i + j]));
	}
	for (; i < len; i++)
		out[i] = op(a[i * sa], b[i * sb]);
}

struct strided_job {
	float *out;
	const float *a;
	const float *b;
	struct wafer_binary_strided_params p;
};

static inline void strided_range(const struct strided_job *job, size_t begin,
				 size_t end, float (*op)(float, float))
{
	const struct wafer_binary_strided_params *p = &job->p;
	uint32_t last = p->rank - 1;

	for (struct cursor c = cursor_at(p->rank, p->shape, begin, end); c.len;
	     cursor_next_row(&c)) {
		uint64_t oa = cursor_offset(&c, p->a_strides, p->a_offset);
		uint64_t ob = cursor_offset(&c, p->b_strides, p->b_offset);
		binary_row(job->out + c.pos, job->a + oa, job->b + ob, c.len,
			   p->a_strides[last], p->b_strides[last], op);
	}
}

static wafer_status check_strided(const struct cpu_kernel_args *args)
{
	struct wafer_binary_strided_params p =
		CPU_PARAMS(struct wafer_binary_strided_params, args->params);

	return wafer_plugin_check_binary_strided(&args->reach, &p,
						 sizeof(float), NULL, NULL,
						 NULL);
}

static wafer_status run_strided(const struct cpu_kernel_args *args,
				cpu_range_fn range, size_t grain)
{
	struct strided_job job = {
		.out = args->data[0],
		.a = args->data[1],
		.b = args->data[2],
		.p = CPU_PARAMS(struct wafer_binary_strided_params,
				args->params),
	};
	size_t count = (size_t)cpu_shape_count(job.p.rank, job.p.shape);

	cpu_pool_parallel_for(args->pool, count, grain, range, &job);
	return WAFER_OK;
}

#define STRIDED(name_, fn_)                                                    \
	CPU_LOOP_KERNEL(name_, strided_range, fn_, run_strided, CPU_GRAIN)     \
	CPU_CHECKED_IMPL(name_##_impl, check_strided, run_##name_);

STRIDED(add_strided, cpu_add)
STRIDED(sub_strided, cpu_sub)
STRIDED(mul_strided, cpu_mul)
STRIDED(div_strided, cpu_div)
STRIDED(max_strided, cpu_max)
STRIDED(min_strided, cpu_min)

#define STRIDED_ENTRY(op_, name_)                                              \
	CPU_F32_KERNEL(op_, 3, struct wafer_binary_strided_params,             \
		       name_##_impl)
#define GATHER_ENTRY(dtype_, impl_)                                            \
	CPU_KERNEL(WAFER_KERNEL_COPY_STRIDED, "default", dtype_, 2,            \
		   struct wafer_strided_copy_params, impl_)

static const struct wafer_kernel entries[] = {
	GATHER_ENTRY(WAFER_DTYPE_F32, gather4_impl),
	GATHER_ENTRY(WAFER_DTYPE_F16, gather2_impl),
	GATHER_ENTRY(WAFER_DTYPE_BF16, gather2_impl),
#define WAFER_CATALOGUE_BINARY(name, NAME, reference)                          \
	STRIDED_ENTRY(WAFER_KERNEL_##NAME##_STRIDED, name##_strided),
#include <wafer/catalogue.def>
};

CPU_KERNEL_SET_DEFINE(strided, entries);
