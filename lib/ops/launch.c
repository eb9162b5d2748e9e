/* wafer — SPDX-License-Identifier: MIT
 *
 * launch.c: how the ops layer reaches the device — kernel lookup with the
 * operation's name in the error, the runs of a kernel on one input (its
 * launch, wafer__op_launch, is in tuned.c), and gathers of strided views
 * into dense buffers with copy_strided. */
#include "build-config.h"

#include <string.h>

#include "lib/client.h"
#include "lib/error.h"
#include "lib/ops/internal.h"

const struct wafer_kernel *wafer__op_kernel(wafer_client *client,
					    const char *op, const char *kernel,
					    wafer_dtype dtype)
{
	const struct wafer_kernel *k = wafer__client_kernel(client, kernel, dtype);

	if (!k)
		wafer__fail_context(WAFER_ERROR_NOT_SUPPORTED, "%s", op);
	return k;
}

void wafer__op_strided_copy_params(uint32_t rank, const uint64_t *shape,
				   const uint64_t *strides, uint64_t offset,
				   struct wafer_strided_copy_params *out)
{
	memset(out, 0, sizeof *out);
	out->rank = rank;
	out->offset = offset;
	for (uint32_t d = 0; d < rank; d++) {
		out->shape[d] = shape[d];
		out->strides[d] = strides[d];
	}
}

wafer_status wafer__op_gather(wafer_client *client,
			      const struct wafer_kernel *copy_strided,
			      const struct wafer__view *view, wafer_handle src,
			      wafer_handle dst)
{
	struct wafer_strided_copy_params params;
	uint64_t shape[WAFER_MAX_RANK], strides[WAFER_MAX_RANK];
	uint64_t *const arrays[1] = {strides};
	uint32_t rank = view->t.rank;

	memcpy(shape, view->t.shape, sizeof shape);
	memcpy(strides, view->t.strides, sizeof strides);
	if (rank == 0) {
		shape[0] = 1;
		strides[0] = 0;
		rank = 1;
	}
	wafer__view_coalesce(&rank, shape, arrays, 1);
	wafer__op_strided_copy_params(rank, shape, strides, view->t.offset,
				      &params);
	const wafer_handle handles[2] = {dst, src};
	return wafer__op_launch(client, copy_strided, handles, 2, &params,
				sizeof params, view->count, 1, 1);
}

wafer_status wafer__op_run_gathered(struct wafer__op_call *call,
				    const struct wafer_kernel *kernel,
				    const struct wafer_kernel *gather,
				    wafer_dtype dtype, uint32_t rank,
				    const uint64_t *shape, const void *params,
				    size_t params_size, uint64_t global,
				    wafer_tensor *out)
{
	wafer_client *client = call->client;
	const struct wafer__view *v = &call->inputs[0].view;
	wafer_tensor temp = {0};
	wafer_status status = WAFER_OK;

	if (gather)
		status = wafer_tensor_empty(client, v->t.dtype, v->t.rank,
					    v->t.shape, &temp);
	if (status == WAFER_OK)
		status = wafer__op_output(call, dtype, rank, shape, 0);
	if (status != WAFER_OK) {
		if (temp.handle.bits)
			wafer_release(client, temp.handle);
		return status;
	}
	wafer_handle in = wafer__op_input_handle(call, 0);
	if (gather) {
		status = wafer__op_gather(client, gather, v, in, temp.handle);
		in = temp.handle;
	}
	const wafer_handle h[2] = {call->out.handle, in};
	if (status == WAFER_OK)
		status = wafer__op_launch(client, kernel, h, 2, params,
					  params_size, global, 1, 1);
	if (gather)
		wafer_release(client, temp.handle);
	return wafer__op_finish(call, status, out);
}

wafer_status wafer__op_gather_kernel(const struct wafer__op_call *call,
				     const struct wafer__view *view,
				     const struct wafer_kernel **out)
{
	*out = NULL;
	if (view->dense)
		return WAFER_OK;
	*out = wafer__op_kernel(call->client, call->op,
				WAFER_KERNEL_COPY_STRIDED, view->t.dtype);
	return *out ? WAFER_OK : WAFER_ERROR_NOT_SUPPORTED;
}

wafer_status wafer__op_run_in_place(struct wafer__op_call *call,
				    const struct wafer_kernel *kernel,
				    const struct wafer_kernel *gather,
				    const void *params, size_t params_size,
				    uint64_t global, wafer_tensor *out)
{
	const struct wafer__view *v = &call->inputs[0].view;
	wafer_status status = wafer__op_output(call, v->t.dtype, v->t.rank,
					       v->t.shape, gather ? 0 : 1);
	if (status != WAFER_OK)
		return status;
	wafer_handle in = wafer__op_input_handle(call, 0);
	if (gather) {
		status = wafer__op_gather(call->client, gather, v, in,
					  call->out.handle);
		in = call->out.handle;
	}
	const wafer_handle h[2] = {call->out.handle, in};
	if (status == WAFER_OK)
		status = wafer__op_launch(call->client, kernel, h, 2, params,
					  params_size, global, 1, 1);
	return wafer__op_finish(call, status, out);
}
