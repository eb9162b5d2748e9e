/* wafer — SPDX-License-Identifier: MIT
 *
 * reduce.c: reductions and softmax over the last dimension. Both see the
 * input as rows x cols, row-major: a view that is not dense at offset 0 is
 * gathered first — into a temporary for a reduction (its output is
 * smaller), into the output for softmax (which then runs in place). */
#include "build-config.h"

#include <string.h>

#include "core/error.h"
#include "core/ops/internal.h"

static const char *const reduce_kernels[] = {
	[WAFER_REDUCE_SUM] = WAFER_KERNEL_REDUCE_SUM,
	[WAFER_REDUCE_MAX] = WAFER_KERNEL_REDUCE_MAX,
	[WAFER_REDUCE_MEAN] = WAFER_KERNEL_REDUCE_MEAN,
};

#define N_REDUCE (sizeof reduce_kernels / sizeof reduce_kernels[0])

/* Begins a rows x cols call on |x|; looks up |kernel| and, for a view that
 * is not dense, copy_strided. */
static wafer_status begin_rows(struct wafer_op_call *call, wafer_client *client,
			       const char *name, const wafer_tensor *x,
			       wafer_copy_semantics sx, wafer_tensor *out,
			       const struct wafer_kernel **out_kernel,
			       const struct wafer_kernel **out_gather,
			       struct wafer_rows_params *out_rows)
{
	*out_kernel = *out_gather = NULL;
	wafer_status status =
		wafer_op_begin_one(call, client, name, "x", x, sx, out);
	if (status != WAFER_OK)
		return status;
	const struct wafer_view *v = &call->inputs[0].view;
	if (v->t.rank == 0)
		return wafer_fail(WAFER_ERROR_INVALID_ARGUMENT,
				  "%s: input x has rank 0; the operation "
				  "works over the last dimension",
				  name);
	*out_kernel = wafer_op_kernel(client, name, name, v->t.dtype);
	if (!*out_kernel)
		return WAFER_ERROR_NOT_SUPPORTED;
	if (!v->dense) {
		*out_gather = wafer_op_kernel(client, name,
					      WAFER_KERNEL_COPY_STRIDED,
					      v->t.dtype);
		if (!*out_gather)
			return WAFER_ERROR_NOT_SUPPORTED;
	}
	out_rows->cols = v->t.shape[v->t.rank - 1];
	out_rows->rows = v->count / out_rows->cols;
	return WAFER_OK;
}

WAFER_API wafer_status wafer_op_reduce(wafer_client *client,
				       wafer_reduce_op op,
				       const wafer_tensor *x,
				       wafer_copy_semantics sx,
				       wafer_tensor *out)
{
	struct wafer_op_call call;
	const struct wafer_kernel *kernel, *gather;
	struct wafer_rows_params rows;

	if ((unsigned)op >= N_REDUCE)
		return wafer_op_reject(out,
				       "wafer_op_reduce: unknown operation %d",
				       (int)op);
	const char *name = reduce_kernels[op];
	wafer_status status = begin_rows(&call, client, name, x, sx, out,
					 &kernel, &gather, &rows);
	if (status != WAFER_OK)
		return status;
	const struct wafer_view *v = &call.inputs[0].view;
	uint64_t shape[WAFER_MAX_RANK];
	memcpy(shape, v->t.shape, sizeof shape);
	shape[v->t.rank - 1] = 1;
	return wafer_op_run_gathered(&call, kernel, gather, v->t.dtype,
				     v->t.rank, shape, &rows, sizeof rows,
				     rows.rows, out);
}

WAFER_API wafer_status wafer_op_softmax(wafer_client *client,
					const wafer_tensor *x,
					wafer_copy_semantics sx,
					wafer_tensor *out)
{
	struct wafer_op_call call;
	const struct wafer_kernel *kernel, *gather;
	struct wafer_rows_params rows;

	wafer_status status =
		begin_rows(&call, client, WAFER_KERNEL_SOFTMAX, x, sx, out,
			   &kernel, &gather, &rows);
	if (status != WAFER_OK)
		return status;
	const struct wafer_view *v = &call.inputs[0].view;
	status = wafer_op_output(&call, v->t.dtype, v->t.rank, v->t.shape,
				 gather ? 0 : 1);
	if (status != WAFER_OK)
		return status;
	wafer_handle in = wafer_op_input_handle(&call, 0);
	if (gather) {
		status = wafer_op_gather(client, gather, v, in, call.out.handle);
		in = call.out.handle;
	}
	const wafer_handle h[2] = {call.out.handle, in};
	if (status == WAFER_OK)
		status = wafer_op_launch(client, kernel, h, 2, &rows,
					 sizeof rows, rows.rows, 1, 1);
	return wafer_op_finish(&call, status, out);
}
