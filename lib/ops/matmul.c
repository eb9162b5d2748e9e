/* wafer — SPDX-License-Identifier: MIT
 *
 * matmul.c: batched matrix product. The matmul kernel takes each operand
 * as a row-major matrix per batch index at a fixed batch stride, optionally
 * transposed. Most views map onto that for free:
 *   - a column-major matrix (a transposed view) is the row-major storage
 *     of its transpose: flip the operand's transpose flag;
 *   - batch dimensions that broadcast (stride 0), or that step through
 *     memory evenly, reduce to one batch stride.
 * Anything else (an offset, a slice of columns, a partly broadcast batch)
 * is gathered with copy_strided into a dense temporary of the output's
 * batch shape first. */
#include "build-config.h"

#include <string.h>

#include "lib/error.h"
#include "lib/kernel_table.h"
#include "lib/log.h"
#include "lib/ops/internal.h"

/* How one operand reaches the kernel. */
struct operand {
	const struct wafer__view *view;
	const char *name;
	/* Per dimension of the output's batch shape. */
	uint64_t batch_strides[WAFER_MAX_RANK];
	uint64_t rows, cols; /* the stored matrix, as the view has it */
	uint32_t transpose;  /* the flag the kernel gets */
	uint64_t batch_stride;
	bool gather;
	wafer_tensor temp;
};

/* The one stride that walks the output's batch dimensions through this
 * operand, or false when there is none. */
static bool single_batch_stride(const struct operand *o, uint32_t batch_rank,
				const uint64_t *batch_shape, uint64_t *out)
{
	uint64_t stride = 0, span = 1;
	bool first = true;

	for (uint32_t d = batch_rank; d-- > 0;) {
		if (batch_shape[d] == 1)
			continue;
		if (first) {
			stride = o->batch_strides[d];
			first = false;
		} else if (o->batch_strides[d] != stride * span) {
			return false;
		}
		span *= batch_shape[d];
	}
	*out = stride;
	return true;
}

/* Plans operand |o| whose user flag is |transpose| against the output's
 * batch shape. */
static void plan_operand(struct operand *o, uint32_t transpose,
			 uint32_t batch_rank, const uint64_t *batch_shape)
{
	const wafer_tensor *t = &o->view->t;
	uint32_t rank = t->rank;
	uint64_t sr = t->strides[rank - 2], sc = t->strides[rank - 1];
	struct wafer__view batch = *o->view;

	o->rows = t->shape[rank - 2];
	o->cols = t->shape[rank - 1];
	batch.t.rank = rank - 2;
	wafer__view_broadcast_strides(&batch, batch_rank, o->batch_strides);

	bool row_major = (o->cols == 1 || sc == 1) &&
			 (o->rows == 1 || sr == o->cols);
	bool col_major = (o->rows == 1 || sr == 1) &&
			 (o->cols == 1 || sc == o->rows);
	bool batch_ok = single_batch_stride(o, batch_rank, batch_shape,
					    &o->batch_stride);
	o->gather = t->offset != 0 || !batch_ok || (!row_major && !col_major);
	if (o->gather) {
		/* Gathered row-major, batch dimensions expanded. */
		o->transpose = transpose;
		o->batch_stride = o->rows * o->cols;
	} else if (row_major) {
		o->transpose = transpose;
	} else {
		/* The storage is the row-major transpose. */
		o->transpose = !transpose;
		uint64_t r = o->rows;
		o->rows = o->cols;
		o->cols = r;
	}
}

/* The view |o| is gathered through: the output's batch shape, expanded. */
static void gather_view(const struct operand *o, uint32_t batch_rank,
			const uint64_t *batch_shape, struct wafer__view *out)
{
	const wafer_tensor *t = &o->view->t;

	*out = *o->view;
	out->t.rank = batch_rank + 2;
	memset(out->t.shape, 0, sizeof out->t.shape);
	memset(out->t.strides, 0, sizeof out->t.strides);
	for (uint32_t d = 0; d < batch_rank; d++) {
		out->t.shape[d] = batch_shape[d];
		out->t.strides[d] = o->batch_strides[d];
	}
	out->t.shape[batch_rank] = t->shape[t->rank - 2];
	out->t.shape[batch_rank + 1] = t->shape[t->rank - 1];
	out->t.strides[batch_rank] = t->strides[t->rank - 2];
	out->t.strides[batch_rank + 1] = t->strides[t->rank - 1];
	out->count = wafer__view_shape_count(out->t.rank, out->t.shape);
	out->dense = false;
}

/* The logical shape checks: ranks, dtypes, inner dimensions; fills the
 * output shape. */
static wafer_status check_shapes(const char *op, const struct wafer__view *a,
				 const struct wafer__view *b, uint32_t flags,
				 uint32_t *out_rank, uint64_t *out_shape,
				 uint64_t mnk[3])
{
	char sa[WAFER_SHAPE_STRING_MAX], sb[WAFER_SHAPE_STRING_MAX];

	if (a->t.rank < 2 || b->t.rank < 2)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: input %s has rank %u; matmul needs "
				   "matrices (rank >= 2)",
				   op, a->t.rank < 2 ? "a" : "b",
				   a->t.rank < 2 ? a->t.rank : b->t.rank);
	wafer_status status = wafer__view_check_same_dtype(op, a, b);
	if (status != WAFER_OK)
		return status;
	uint64_t ar = a->t.shape[a->t.rank - 2], ac = a->t.shape[a->t.rank - 1];
	uint64_t br = b->t.shape[b->t.rank - 2], bc = b->t.shape[b->t.rank - 1];
	uint64_t m = flags & WAFER_MATMUL_TRANSPOSE_A ? ac : ar;
	uint64_t k = flags & WAFER_MATMUL_TRANSPOSE_A ? ar : ac;
	uint64_t kb = flags & WAFER_MATMUL_TRANSPOSE_B ? bc : br;
	uint64_t n = flags & WAFER_MATMUL_TRANSPOSE_B ? br : bc;
	if (k != kb)
		return wafer__fail(
			WAFER_ERROR_INVALID_ARGUMENT,
			"%s: a %s%s and b %s%s: inner dimensions %llu and "
			"%llu differ",
			op,
			wafer__view_shape_string(a->t.rank, a->t.shape, sa,
						 sizeof sa),
			flags & WAFER_MATMUL_TRANSPOSE_A ? " (transposed)" : "",
			wafer__view_shape_string(b->t.rank, b->t.shape, sb,
						 sizeof sb),
			flags & WAFER_MATMUL_TRANSPOSE_B ? " (transposed)" : "",
			(unsigned long long)k, (unsigned long long)kb);
	uint32_t batch_rank;
	status = wafer__view_broadcast_shape(
		op, a->t.rank - 2, a->t.shape, b->t.rank - 2, b->t.shape,
		&batch_rank, out_shape);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "batch dimensions");
	out_shape[batch_rank] = m;
	out_shape[batch_rank + 1] = n;
	*out_rank = batch_rank + 2;
	mnk[0] = m;
	mnk[1] = n;
	mnk[2] = k;
	return WAFER_OK;
}

WAFER_API wafer_status wafer_op_matmul(wafer_client *client,
				       const wafer_tensor *a,
				       wafer_copy_semantics sa,
				       const wafer_tensor *b,
				       wafer_copy_semantics sb, uint32_t flags,
				       wafer_tensor *out)
{
	static const char op[] = WAFER_KERNEL_MATMUL;
	struct wafer__op_call call;
	uint64_t shape[WAFER_MAX_RANK] = {0}, mnk[3] = {0};
	uint32_t rank = 0;

	wafer_status status =
		wafer__op_begin_two(&call, client, op, a, sa, b, sb, out);
	if (status != WAFER_OK)
		return status;
	if (flags & ~(WAFER_MATMUL_TRANSPOSE_A | WAFER_MATMUL_TRANSPOSE_B))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: unknown flags 0x%x", op, flags);
	struct operand o[2] = {
		{.view = &call.inputs[0].view, .name = "a"},
		{.view = &call.inputs[1].view, .name = "b"},
	};
	status = check_shapes(op, o[0].view, o[1].view, flags, &rank, shape,
			      mnk);
	if (status != WAFER_OK)
		return status;
	uint32_t batch_rank = rank - 2;
	uint64_t batch = wafer__view_shape_count(batch_rank, shape);
	wafer_dtype dtype = o[0].view->t.dtype;

	const struct wafer_kernel *matmul =
		wafer__op_kernel(client, op, WAFER_KERNEL_MATMUL, dtype);
	if (!matmul)
		return WAFER_ERROR_NOT_SUPPORTED;
	plan_operand(&o[0], (flags & WAFER_MATMUL_TRANSPOSE_A) != 0,
		     batch_rank, shape);
	plan_operand(&o[1], (flags & WAFER_MATMUL_TRANSPOSE_B) != 0,
		     batch_rank, shape);
	const struct wafer_kernel *gather = NULL;
	if (o[0].gather || o[1].gather) {
		gather = wafer__op_kernel(client, op, WAFER_KERNEL_COPY_STRIDED,
					  dtype);
		if (!gather)
			return WAFER_ERROR_NOT_SUPPORTED;
	}

	/* Temporaries before the output: a failure here gives nothing up. */
	struct wafer__view gathered[2];
	for (int i = 0; i < 2 && status == WAFER_OK; i++) {
		if (!o[i].gather)
			continue;
		gather_view(&o[i], batch_rank, shape, &gathered[i]);
		wafer__log_debug("ops", "matmul: input %s is gathered into a "
				       "dense temporary of %llu elements",
				o[i].name,
				(unsigned long long)gathered[i].count);
		status = wafer_tensor_empty(client, dtype, gathered[i].t.rank,
					    gathered[i].t.shape, &o[i].temp);
	}
	if (status == WAFER_OK)
		status = wafer__op_output(&call, dtype, rank, shape, 0);
	if (status != WAFER_OK) {
		for (int i = 0; i < 2; i++)
			if (o[i].temp.handle.bits)
				wafer_release(client, o[i].temp.handle);
		return status;
	}

	wafer_handle h[3] = {call.out.handle, wafer__op_input_handle(&call, 0),
			     wafer__op_input_handle(&call, 1)};
	for (int i = 0; i < 2 && status == WAFER_OK; i++) {
		if (!o[i].gather)
			continue;
		status = wafer__op_gather(client, gather, &gathered[i], h[1 + i],
					  o[i].temp.handle);
		h[1 + i] = o[i].temp.handle;
	}
	struct wafer_matmul_params params = {
		.batch = batch,
		.m = mnk[0],
		.n = mnk[1],
		.k = mnk[2],
		.transpose_a = o[0].transpose,
		.transpose_b = o[1].transpose,
		.batch_stride_a = batch > 1 ? o[0].batch_stride : 0,
		.batch_stride_b = batch > 1 ? o[1].batch_stride : 0,
		.batch_stride_c = mnk[0] * mnk[1],
	};
	if (status == WAFER_OK)
		status = wafer__op_launch(client, matmul, h, 3, &params,
					  sizeof params, mnk[1], mnk[0], batch);
	for (int i = 0; i < 2; i++)
		if (o[i].gather)
			wafer_release(client, o[i].temp.handle);
	return wafer__op_finish(&call, status, out);
}
