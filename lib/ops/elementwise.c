/* wafer — SPDX-License-Identifier: MIT
 *
 * elementwise.c: the operations that map elements one to one — fill,
 * copy, cast, unary, binary (with broadcasting) and binary with a scalar.
 * Each one is the steps of internal.h; what differs is which kernels it
 * needs and which inputs its kernels may write over. */
#include "build-config.h"

#include <string.h>

#include "lib/error.h"
#include "lib/kernel_table.h"
#include "lib/ops/internal.h"

/* The unary kernels by wafer_unary_op, and per binary operation its
 * plain, _strided and _scalar kernels (the catalogue's rows). */
static const char *const unary_kernels[] = {
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference)                   \
	[WAFER_UNARY_##NAME] = WAFER_KERNEL_##NAME,
#include <wafer/catalogue.def>
};

static const struct {
	const char *plain, *strided, *scalar;
} binary_kernels[] = {
#define WAFER_CATALOGUE_BINARY(name, NAME, reference)                          \
	[WAFER_BINARY_##NAME] = {WAFER_KERNEL_##NAME,                          \
				 WAFER_KERNEL_##NAME##_STRIDED,                \
				 WAFER_KERNEL_##NAME##_SCALAR},
#include <wafer/catalogue.def>
};

#define N_UNARY (sizeof unary_kernels / sizeof unary_kernels[0])
#define N_BINARY (sizeof binary_kernels / sizeof binary_kernels[0])

/*===----------------------------------------------------------------------===
 * fill, copy, cast
 *===----------------------------------------------------------------------===*/

WAFER_API wafer_status wafer_op_fill(wafer_client *client, wafer_dtype dtype,
				     uint32_t rank, const uint64_t *shape,
				     double value, wafer_tensor *out)
{
	struct wafer__op_call call;
	size_t bytes;

	wafer_status status = wafer__op_begin(&call, client, "fill", NULL, NULL,
					      NULL, 0, out);
	if (status == WAFER_OK)
		status = wafer__view_check_shape("fill", dtype, rank, shape,
						 &bytes);
	if (status != WAFER_OK)
		return status;
	const struct wafer_kernel *fill =
		wafer__op_kernel(client, "fill", WAFER_KERNEL_FILL, dtype);
	if (!fill)
		return WAFER_ERROR_NOT_SUPPORTED;
	status = wafer__op_output(&call, dtype, rank, shape, 0);
	if (status != WAFER_OK)
		return status;
	uint64_t count = wafer__view_shape_count(rank, shape);
	struct wafer_fill_params params = {.count = count, .value = value};
	status = wafer__op_launch(client, fill, &call.out.handle, 1, &params,
				  sizeof params, count, 1, 1);
	return wafer__op_finish(&call, status, out);
}

WAFER_API wafer_status wafer_op_copy(wafer_client *client,
				     const wafer_tensor *x,
				     wafer_copy_semantics sx, wafer_tensor *out)
{
	struct wafer__op_call call;
	const struct wafer_kernel *kernel;

	wafer_status status =
		wafer__op_begin_one(&call, client, "copy", "x", x, sx, out);
	if (status != WAFER_OK)
		return status;
	const struct wafer__view *v = &call.inputs[0].view;
	kernel = wafer__op_kernel(client, "copy",
				  v->dense ? WAFER_KERNEL_COPY
					  : WAFER_KERNEL_COPY_STRIDED,
				 v->t.dtype);
	if (!kernel)
		return WAFER_ERROR_NOT_SUPPORTED;
	/* A dense input the output may take over needs no kernel at all. */
	status = wafer__op_output(&call, v->t.dtype, v->t.rank, v->t.shape, 1);
	if (status != WAFER_OK)
		return status;
	if (call.reuse == WAFER_OP_NEW) {
		if (v->dense) {
			struct wafer_elementwise_params params = {
				.count = v->count,
			};
			const wafer_handle h[2] = {call.out.handle,
						   wafer__op_input_handle(&call,
									  0)};
			status = wafer__op_launch(client, kernel, h, 2, &params,
						  sizeof params, v->count, 1, 1);
		} else {
			status = wafer__op_gather(client, kernel, v,
						  wafer__op_input_handle(&call, 0),
						  call.out.handle);
		}
	}
	return wafer__op_finish(&call, status, out);
}

WAFER_API wafer_status wafer_op_cast(wafer_client *client,
				     const wafer_tensor *x,
				     wafer_copy_semantics sx, wafer_dtype dtype,
				     wafer_tensor *out)
{
	struct wafer__op_call call;
	const struct wafer_kernel *gather;

	if (x && x->dtype == dtype)
		return wafer_op_copy(client, x, sx, out);
	wafer_status status =
		wafer__op_begin_one(&call, client, "cast", "x", x, sx, out);
	if (status != WAFER_OK)
		return status;
	const struct wafer__view *v = &call.inputs[0].view;
	if (!wafer_dtype_size(dtype))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "cast: dtype %d is no element type",
				   (int)dtype);
	const struct wafer_kernel *cast = wafer__op_kernel(
		client, "cast", WAFER_KERNEL_CAST, v->t.dtype);
	if (!cast)
		return WAFER_ERROR_NOT_SUPPORTED;
	/* A plugin casts into the dtypes it has kernels for: its copy of the
	 * target says it keeps tensors of that type. */
	if (!wafer__op_kernel(client, "cast", WAFER_KERNEL_COPY, dtype))
		return WAFER_ERROR_NOT_SUPPORTED;
	status = wafer__op_gather_kernel(&call, v, &gather);
	if (status != WAFER_OK)
		return status;
	struct wafer_cast_params params = {
		.count = v->count,
		.dtype_in = (uint32_t)v->t.dtype,
		.dtype_out = (uint32_t)dtype,
	};
	return wafer__op_run_gathered(&call, cast, gather, dtype, v->t.rank,
				      v->t.shape, &params, sizeof params,
				      v->count, out);
}

/*===----------------------------------------------------------------------===
 * Unary and scalar: one input, in place after a gather
 *===----------------------------------------------------------------------===*/

/* Runs kernel |name| on the call's one input (wafer__op_run_in_place). */
static wafer_status run_one_input(struct wafer__op_call *call,
				  const char *name, const void *params,
				  size_t params_size, wafer_tensor *out)
{
	const struct wafer_kernel *gather;
	const struct wafer__view *v = &call->inputs[0].view;
	const struct wafer_kernel *kernel =
		wafer__op_kernel(call->client, name, name, v->t.dtype);
	if (!kernel)
		return WAFER_ERROR_NOT_SUPPORTED;

	wafer_status status = wafer__op_gather_kernel(call, v, &gather);
	if (status != WAFER_OK)
		return status;
	return wafer__op_run_in_place(call, kernel, gather, params,
				      params_size, v->count, out);
}

WAFER_API wafer_status wafer_op_unary(wafer_client *client, wafer_unary_op op,
				      const wafer_tensor *x,
				      wafer_copy_semantics sx,
				      wafer_tensor *out)
{
	struct wafer__op_call call;

	wafer_status status =
		wafer__op_known(out, (const wafer_tensor *const[]){x}, 1,
				"wafer_op_unary", (unsigned)op, N_UNARY);
	if (status != WAFER_OK)
		return status;
	const char *name = unary_kernels[op];
	status = wafer__op_begin_one(&call, client, name, "x", x, sx, out);
	if (status != WAFER_OK)
		return status;
	struct wafer_elementwise_params params = {
		.count = call.inputs[0].view.count,
	};
	return run_one_input(&call, name, &params, sizeof params, out);
}

WAFER_API wafer_status wafer_op_binary_scalar(wafer_client *client,
					      wafer_binary_op op,
					      const wafer_tensor *a,
					      wafer_copy_semantics sa,
					      double scalar,
					      uint32_t scalar_first,
					      wafer_tensor *out)
{
	struct wafer__op_call call;

	if ((unsigned)op >= N_BINARY || scalar_first > 1)
		return wafer__op_reject(
			out, (const wafer_tensor *const[]){a}, 1,
			"wafer_op_binary_scalar: %s %d",
			scalar_first > 1 ? "scalar_first is"
					 : "unknown operation",
			scalar_first > 1 ? (int)scalar_first : (int)op);
	const char *name = binary_kernels[op].scalar;
	wafer_status status =
		wafer__op_begin_one(&call, client, name, "a", a, sa, out);
	if (status != WAFER_OK)
		return status;
	struct wafer_scalar_params params = {
		.count = call.inputs[0].view.count,
		.scalar = scalar,
		.scalar_first = scalar_first,
	};
	return run_one_input(&call, name, &params, sizeof params, out);
}

/*===----------------------------------------------------------------------===
 * Binary with broadcasting
 *===----------------------------------------------------------------------===*/

/* The _strided kernel's parameters: out's shape and each input's strides
 * read as that shape, coalesced. */
static void strided_params(const struct wafer__view *a,
			   const struct wafer__view *b, uint32_t rank,
			   const uint64_t *shape,
			   struct wafer_binary_strided_params *p)
{
	uint64_t sa[WAFER_MAX_RANK] = {0}, sb[WAFER_MAX_RANK] = {0};
	uint64_t s[WAFER_MAX_RANK] = {0};
	uint64_t *const arrays[2] = {sa, sb};

	memcpy(s, shape, rank * sizeof *s);
	wafer__view_broadcast_strides(a, rank, sa);
	wafer__view_broadcast_strides(b, rank, sb);
	if (rank == 0) {
		s[0] = 1;
		rank = 1;
	}
	wafer__view_coalesce(&rank, s, arrays, 2);
	memset(p, 0, sizeof *p);
	p->rank = rank;
	memcpy(p->shape, s, sizeof p->shape);
	memcpy(p->a_strides, sa, sizeof p->a_strides);
	memcpy(p->b_strides, sb, sizeof p->b_strides);
	p->a_offset = a->t.offset;
	p->b_offset = b->t.offset;
}

WAFER_API wafer_status wafer_op_binary(wafer_client *client,
				       wafer_binary_op op,
				       const wafer_tensor *a,
				       wafer_copy_semantics sa,
				       const wafer_tensor *b,
				       wafer_copy_semantics sb,
				       wafer_tensor *out)
{
	struct wafer__op_call call;
	uint64_t shape[WAFER_MAX_RANK] = {0};
	uint32_t rank;

	wafer_status status =
		wafer__op_known(out, (const wafer_tensor *const[]){a, b}, 2,
				"wafer_op_binary", (unsigned)op, N_BINARY);
	if (status != WAFER_OK)
		return status;
	const char *name = binary_kernels[op].plain;
	status = wafer__op_begin_two(&call, client, name, a, sa, b, sb, out);
	if (status != WAFER_OK)
		return status;
	const struct wafer__view *va = &call.inputs[0].view;
	const struct wafer__view *vb = &call.inputs[1].view;
	status = wafer__view_check_same_dtype(name, va, vb);
	if (status != WAFER_OK)
		return status;
	status = wafer__view_broadcast_shape(name, va->t.rank, va->t.shape,
					     vb->t.rank, vb->t.shape, &rank,
					     shape);
	if (status != WAFER_OK)
		return status;
	uint64_t count = wafer__view_shape_count(rank, shape);
	bool plain = va->dense && vb->dense && va->count == count &&
		     vb->count == count;
	const struct wafer_kernel *kernel = wafer__op_kernel(
		client, name,
		plain ? binary_kernels[op].plain : binary_kernels[op].strided,
		va->t.dtype);
	if (!kernel)
		return WAFER_ERROR_NOT_SUPPORTED;
	status = wafer__op_output(&call, va->t.dtype, rank, shape, 0x3);
	if (status != WAFER_OK)
		return status;

	const wafer_handle h[3] = {call.out.handle,
				   wafer__op_input_handle(&call, 0),
				   wafer__op_input_handle(&call, 1)};
	if (plain) {
		struct wafer_elementwise_params params = {.count = count};
		status = wafer__op_launch(client, kernel, h, 3, &params,
					  sizeof params, count, 1, 1);
	} else {
		struct wafer_binary_strided_params params;
		strided_params(va, vb, rank, shape, &params);
		status = wafer__op_launch(client, kernel, h, 3, &params,
					  sizeof params, count, 1, 1);
	}
	return wafer__op_finish(&call, status, out);
}
