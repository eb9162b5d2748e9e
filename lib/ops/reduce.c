/* wafer — SPDX-License-Identifier: MIT
 *
 * reduce.c: reductions and softmax over the last dimension. Both see the
 * input as rows x cols, row-major: a view that is not dense at offset 0 is
 * gathered first — into a temporary for a reduction (its output is
 * smaller), into the output for softmax (which then runs in place). */
#include "build-config.h"

#include <string.h>

#include "lib/error.h"
#include "lib/ops/internal.h"

/* The reductions by wafer_reduce_op (the catalogue's REDUCE rows). */
#define REDUCE_KERNEL_REDUCE(NAME) [WAFER_##NAME] = WAFER_KERNEL_##NAME,
#define REDUCE_KERNEL_FULL(NAME)
static const char *const reduce_kernels[] = {
#define WAFER_CATALOGUE_ROWS(name, NAME, dtypes, output)                       \
	REDUCE_KERNEL_##output(NAME)
#include <wafer/catalogue.def>
};

#define N_REDUCE (sizeof reduce_kernels / sizeof reduce_kernels[0])

/* A rows x cols call on one input: the kernel, copy_strided for a view
 * that is not dense (else NULL), and the parameters. */
struct rows_call {
	struct wafer__op_call call;
	const struct wafer_kernel *kernel, *gather;
	struct wafer_rows_params rows;
};

/* Begins a rows x cols call on |x| with kernel |name|. */
static wafer_status begin_rows(struct rows_call *rc, wafer_client *client,
			       const char *name, const wafer_tensor *x,
			       wafer_copy_semantics sx, wafer_tensor *out)
{
	rc->kernel = rc->gather = NULL;
	wafer_status status =
		wafer__op_begin_one(&rc->call, client, name, "x", x, sx, out);
	if (status != WAFER_OK)
		return status;
	const struct wafer__view *v = &rc->call.inputs[0].view;
	if (v->t.rank == 0)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: input x has rank 0; the operation "
				   "works over the last dimension",
				   name);
	rc->kernel = wafer__op_kernel(client, name, name, v->t.dtype);
	if (!rc->kernel)
		return WAFER_ERROR_NOT_SUPPORTED;
	status = wafer__op_gather_kernel(&rc->call, v, &rc->gather);
	if (status != WAFER_OK)
		return status;
	rc->rows.cols = v->t.shape[v->t.rank - 1];
	rc->rows.rows = v->count / rc->rows.cols;
	return WAFER_OK;
}

WAFER_API wafer_status wafer_op_reduce(wafer_client *client,
				       wafer_reduce_op op,
				       const wafer_tensor *x,
				       wafer_copy_semantics sx,
				       wafer_tensor *out)
{
	struct rows_call rc;

	wafer_status status =
		wafer__op_known(out, (const wafer_tensor *const[]){x}, 1,
				"wafer_op_reduce", (unsigned)op, N_REDUCE);
	if (status == WAFER_OK)
		status = begin_rows(&rc, client, reduce_kernels[op], x, sx,
				    out);
	if (status != WAFER_OK)
		return status;
	const struct wafer__view *v = &rc.call.inputs[0].view;
	uint64_t shape[WAFER_MAX_RANK];
	memcpy(shape, v->t.shape, sizeof shape);
	shape[v->t.rank - 1] = 1;
	return wafer__op_run_gathered(&rc.call, rc.kernel, rc.gather,
				      v->t.dtype, v->t.rank, shape, &rc.rows,
				      sizeof rc.rows, rc.rows.rows, out);
}

WAFER_API wafer_status wafer_op_softmax(wafer_client *client,
					const wafer_tensor *x,
					wafer_copy_semantics sx,
					wafer_tensor *out)
{
	struct rows_call rc;

	wafer_status status =
		begin_rows(&rc, client, WAFER_KERNEL_SOFTMAX, x, sx, out);
	if (status != WAFER_OK)
		return status;
	return wafer__op_run_in_place(&rc.call, rc.kernel, rc.gather, &rc.rows,
				      sizeof rc.rows, rc.rows.rows, out);
}
