/* wafer — SPDX-License-Identifier: MIT
 *
 * view.c: tensor views — checks against the handle, dense strides,
 * broadcasting, coalescing — and the view helpers of ops.h. */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <wafer/plugin_util.h>

#include "lib/client.h"
#include "lib/error.h"
#include "lib/kernel_table.h"
#include "lib/ops/internal.h"

/* One definition of element sizes for the core and the plugins: the
 * installed header-only helper (<wafer/plugin_util.h>). */
WAFER_API size_t wafer_dtype_size(wafer_dtype dtype)
{
	return wafer_plugin_dtype_size(dtype);
}

bool wafer__view_shape_count_fits(uint32_t rank, const uint64_t *shape,
				  uint64_t *out_count)
{
	uint64_t count = 1;
	bool fits = true;

	/* Every dimension, so a 0 anywhere gives 0 whatever came before. */
	for (uint32_t d = 0; d < rank; d++)
		fits &= !__builtin_mul_overflow(count, shape[d], &count);
	for (uint32_t d = 0; d < rank; d++)
		if (shape[d] == 0)
			fits = true, count = 0;
	*out_count = fits ? count : 0;
	return fits;
}

uint64_t wafer__view_shape_count(uint32_t rank, const uint64_t *shape)
{
	uint64_t count;

	return wafer__view_shape_count_fits(rank, shape, &count) ? count : 0;
}

WAFER_API uint64_t wafer_tensor_count(const wafer_tensor *tensor)
{
	if (!tensor || tensor->rank > WAFER_MAX_RANK)
		return 0;
	return wafer__view_shape_count(tensor->rank, tensor->shape);
}

void wafer__view_dense_strides(uint32_t rank, const uint64_t *shape,
			       uint64_t *strides)
{
	uint64_t stride = 1;

	for (uint32_t d = rank; d-- > 0;) {
		strides[d] = stride;
		stride *= shape[d];
	}
}

const char *wafer__view_shape_string(uint32_t rank, const uint64_t *shape,
				     char *buf, size_t size)
{
	size_t used = (size_t)snprintf(buf, size, "[");

	for (uint32_t d = 0; d < rank && d < WAFER_MAX_RANK && used < size; d++)
		used += (size_t)snprintf(buf + used, size - used, "%s%" PRIu64,
					 d ? ", " : "", shape[d]);
	if (used < size)
		snprintf(buf + used, size - used, "]");
	return buf;
}

/* Row-major strides wherever the size is above 1 (a size-1 dimension's
 * stride is never used), whatever the offset. */
static bool dense_layout(const wafer_tensor *t)
{
	uint64_t dense[WAFER_MAX_RANK];

	wafer__view_dense_strides(t->rank, t->shape, dense);
	for (uint32_t d = 0; d < t->rank; d++)
		if (t->shape[d] > 1 && t->strides[d] != dense[d])
			return false;
	return true;
}

static bool is_dense(const wafer_tensor *t)
{
	return t->offset == 0 && dense_layout(t);
}

/* The largest element index the view reaches, or false on overflow. */
static bool view_extent(const wafer_tensor *t, uint64_t *out_last)
{
	uint64_t last = t->offset;

	for (uint32_t d = 0; d < t->rank; d++) {
		uint64_t step;
		if (__builtin_mul_overflow(t->shape[d] - 1, t->strides[d],
					   &step) ||
		    __builtin_add_overflow(last, step, &last))
			return false;
	}
	*out_last = last;
	return true;
}

wafer_status wafer__view_check(wafer_client *client, const char *op,
			       const char *name, const wafer_tensor *tensor,
			       struct wafer__view *out)
{
	char shape[WAFER_SHAPE_STRING_MAX];
	struct wafer__handle_slot *slot;

	if (!tensor)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: input %s is NULL", op, name);
	const wafer_tensor *t = tensor;
	size_t element_size = wafer_dtype_size(t->dtype);
	if (!element_size)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: input %s has dtype %d, which has no "
				   "element size",
				   op, name, (int)t->dtype);
	if (t->rank > WAFER_MAX_RANK)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: input %s has rank %" PRIu32
				   ", the most is %d",
				   op, name, t->rank, WAFER_MAX_RANK);
	if (t->strided > 1 || t->reserved)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: input %s: %s is %" PRIu32 ", not %s "
				   "(a view made by hand? start from "
				  "wafer_tensor_view)",
				  op, name, t->reserved ? "reserved" : "strided",
				  t->reserved ? t->reserved : t->strided,
				  t->reserved ? "0" : "0 or 1");
	for (uint32_t d = 0; d < t->rank; d++)
		if (t->shape[d] == 0)
			return wafer__fail(
				WAFER_ERROR_INVALID_ARGUMENT,
				"%s: input %s has shape %s: size 0 in "
				"dimension %" PRIu32 " (no empty tensors)",
				op, name,
				wafer__view_shape_string(t->rank, t->shape,
							 shape, sizeof shape),
				d);
	uint64_t count = wafer__view_shape_count(t->rank, t->shape);
	if (count == 0 || count > SIZE_MAX / element_size)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: input %s has shape %s: too many "
				   "elements",
				   op, name,
				   wafer__view_shape_string(t->rank, t->shape,
							    shape, sizeof shape));

	wafer_status status = wafer__handle_table_lookup(
		wafer__client_handles(client), t->handle, op, &slot);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "input %s", name);

	out->t = *t;
	out->t.strided = 1;
	out->t.reserved = 0;
	if (!t->strided)
		wafer__view_dense_strides(t->rank, t->shape, out->t.strides);
	for (uint32_t d = t->rank; d < WAFER_MAX_RANK; d++)
		out->t.shape[d] = out->t.strides[d] = 0;
	out->element_size = element_size;
	out->count = count;
	out->dense = is_dense(&out->t);
	out->handle_size = slot->size;

	uint64_t last;
	size_t elements = slot->size / element_size;
	if (!view_extent(&out->t, &last) || last >= elements)
		return wafer__fail(WAFER_ERROR_OUT_OF_RANGE,
				   "%s: input %s (shape %s, offset %" PRIu64
				  ") reaches past the end of handle "
				  "0x%016" PRIx64 " (%zu elements of %s)",
				  op, name,
				  wafer__view_shape_string(t->rank, t->shape,
							   shape, sizeof shape),
				  t->offset, t->handle.bits, elements,
				  wafer__dtype_name(t->dtype));
	return WAFER_OK;
}

wafer_status wafer__view_broadcast_shape(const char *op, uint32_t rank_a,
					 const uint64_t *shape_a,
					 uint32_t rank_b,
					 const uint64_t *shape_b,
					 uint32_t *out_rank,
					 uint64_t *out_shape)
{
	uint32_t rank = rank_a > rank_b ? rank_a : rank_b;

	for (uint32_t i = 0; i < rank; i++) {
		/* i counts from the last dimension. */
		uint64_t a = i < rank_a ? shape_a[rank_a - 1 - i] : 1;
		uint64_t b = i < rank_b ? shape_b[rank_b - 1 - i] : 1;
		if (a != b && a != 1 && b != 1) {
			char sa[WAFER_SHAPE_STRING_MAX];
			char sb[WAFER_SHAPE_STRING_MAX];
			return wafer__fail(
				WAFER_ERROR_INVALID_ARGUMENT,
				"%s: shapes %s and %s do not broadcast "
				"(%" PRIu64 " vs %" PRIu64 " in the %" PRIu32
				"%s dimension from the end)",
				op,
				wafer__view_shape_string(rank_a, shape_a, sa,
							 sizeof sa),
				wafer__view_shape_string(rank_b, shape_b, sb,
							 sizeof sb),
				a, b, i + 1,
				i == 0 ? "st" : i == 1 ? "nd" : i == 2 ? "rd"
								       : "th");
		}
		/* a == 1 takes b's size, 0 included (numpy's rule; the
		 * ops refuse size 0 before they get here). */
		out_shape[rank - 1 - i] = a == 1 ? b : a;
	}
	*out_rank = rank;
	return WAFER_OK;
}

void wafer__view_broadcast_strides(const struct wafer__view *view,
				   uint32_t rank, uint64_t *strides)
{
	uint32_t lead = rank - view->t.rank;

	for (uint32_t d = 0; d < rank; d++) {
		if (d < lead || view->t.shape[d - lead] == 1)
			strides[d] = 0;
		else
			strides[d] = view->t.strides[d - lead];
	}
}

void wafer__view_coalesce(uint32_t *rank, uint64_t *shape,
			  uint64_t *const *strides, size_t n)
{
	uint32_t r = 0;

	/* Drop size-1 dimensions: they add nothing to any index. */
	for (uint32_t d = 0; d < *rank; d++) {
		if (shape[d] == 1)
			continue;
		shape[r] = shape[d];
		for (size_t k = 0; k < n; k++)
			strides[k][r] = strides[k][d];
		r++;
	}
	if (r == 0) {
		shape[0] = 1;
		for (size_t k = 0; k < n; k++)
			strides[k][0] = 0;
		r = 1;
	}
	/* Merge d into d + 1 where every array steps over d + 1 exactly. */
	uint32_t w = 0;
	for (uint32_t d = 1; d < r; d++) {
		bool merge = true;
		for (size_t k = 0; k < n && merge; k++)
			merge = strides[k][w] == strides[k][d] * shape[d];
		if (merge) {
			shape[w] *= shape[d];
			for (size_t k = 0; k < n; k++)
				strides[k][w] = strides[k][d];
		} else {
			w++;
			shape[w] = shape[d];
			for (size_t k = 0; k < n; k++)
				strides[k][w] = strides[k][d];
		}
	}
	*rank = w + 1;
	for (uint32_t d = *rank; d < WAFER_MAX_RANK; d++) {
		shape[d] = 0;
		for (size_t k = 0; k < n; k++)
			strides[k][d] = 0;
	}
}

/*===----------------------------------------------------------------------===
 * The view helpers of ops.h
 *===----------------------------------------------------------------------===*/

WAFER_API wafer_tensor wafer_tensor_view(wafer_handle handle, wafer_dtype dtype,
					 uint32_t rank, const uint64_t *shape)
{
	wafer_tensor t;

	memset(&t, 0, sizeof t);
	t.handle = handle;
	t.dtype = dtype;
	t.rank = rank;
	for (uint32_t d = 0; d < rank && d < WAFER_MAX_RANK; d++)
		t.shape[d] = shape[d];
	return t;
}

wafer_status wafer__view_check_same_dtype(const char *op,
					  const struct wafer__view *a,
					  const struct wafer__view *b)
{
	if (a->t.dtype == b->t.dtype)
		return WAFER_OK;
	return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
			   "%s: inputs a and b have different dtypes (%s and "
			   "%s): convert one with wafer_op_cast first",
			   op, wafer__dtype_name(a->t.dtype),
			   wafer__dtype_name(b->t.dtype));
}

wafer_status wafer__view_check_shape(const char *what, wafer_dtype dtype,
				     uint32_t rank, const uint64_t *shape,
				     size_t *out_bytes)
{
	size_t element_size = wafer_dtype_size(dtype);

	*out_bytes = 0;
	if (!element_size)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: dtype %d has no element size", what,
				   (int)dtype);
	if (rank > WAFER_MAX_RANK || (rank && !shape))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: rank %" PRIu32 "%s", what, rank,
				   rank > WAFER_MAX_RANK ? " is above 8"
							: " with a NULL shape");
	uint64_t count = wafer__view_shape_count(rank, shape);
	for (uint32_t d = 0; d < rank; d++)
		if (shape[d] == 0)
			count = 0;
	if (count == 0 || count > SIZE_MAX / element_size) {
		char s[WAFER_SHAPE_STRING_MAX];
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: shape %s is empty or too large", what,
				   wafer__view_shape_string(rank, shape, s,
							    sizeof s));
	}
	*out_bytes = (size_t)count * element_size;
	return WAFER_OK;
}

/* How new_tensor makes the handle. */
enum new_tensor_kind { NEW_EMPTY, NEW_EMPTY_NOW, NEW_UPLOAD };

/* wafer_tensor_empty (NEW_EMPTY), wafer__op_tensor_empty_now and
 * wafer_tensor_create (NEW_UPLOAD: |data| is uploaded); |what| names the
 * call in errors. */
static wafer_status new_tensor(const char *what, wafer_client *client,
			       wafer_dtype dtype, uint32_t rank,
			       const uint64_t *shape, enum new_tensor_kind kind,
			       const void *data, wafer_tensor *out)
{
	size_t bytes;
	wafer_handle handle;

	if (!out)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: out is NULL", what);
	memset(out, 0, sizeof *out);
	wafer_status status =
		wafer__view_check_shape(what, dtype, rank, shape, &bytes);
	if (status == WAFER_OK)
		status = kind == NEW_UPLOAD ? wafer_create(client, data, bytes,
							   &handle)
			 : kind == NEW_EMPTY_NOW
				 ? wafer__client_empty_now(client, bytes, &handle)
				 : wafer_empty(client, bytes, &handle);
	if (status == WAFER_OK)
		*out = wafer_tensor_view(handle, dtype, rank, shape);
	return status;
}

WAFER_API wafer_status wafer_tensor_empty(wafer_client *client,
					  wafer_dtype dtype, uint32_t rank,
					  const uint64_t *shape,
					  wafer_tensor *out)
{
	return new_tensor("wafer_tensor_empty", client, dtype, rank, shape,
			  NEW_EMPTY, NULL, out);
}

wafer_status wafer__op_tensor_empty_now(wafer_client *client,
					wafer_dtype dtype, uint32_t rank,
					const uint64_t *shape, wafer_tensor *out)
{
	return new_tensor("wafer_tensor_empty", client, dtype, rank, shape,
			  NEW_EMPTY_NOW, NULL, out);
}

WAFER_API wafer_status wafer_tensor_create(wafer_client *client,
					   wafer_dtype dtype, uint32_t rank,
					   const uint64_t *shape,
					   const void *data, wafer_tensor *out)
{
	return new_tensor("wafer_tensor_create", client, dtype, rank, shape,
			  NEW_UPLOAD, data, out);
}

WAFER_API wafer_status wafer_tensor_read(wafer_client *client,
					 const wafer_tensor *tensor, void *dst,
					 size_t size)
{
	struct wafer__view view;

	if (!client || !dst)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_tensor_read: %s is NULL",
				   client ? "dst" : "client");
	wafer_status status = wafer__view_check(client, "wafer_tensor_read",
						"tensor", tensor, &view);
	if (status != WAFER_OK)
		return status;
	size_t bytes = (size_t)view.count * view.element_size;
	if (size != bytes)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_tensor_read: size %zu, the tensor "
				   "holds %zu bytes",
				   size, bytes);
	/* Dense from some offset on: one read. */
	if (dense_layout(&view.t))
		return wafer_read(client, view.t.handle,
				  (size_t)view.t.offset * view.element_size,
				  dst, size);
	wafer_tensor dense;
	status = wafer_op_copy(client, tensor, WAFER_ALWAYS_COPY, &dense);
	if (status != WAFER_OK)
		return status;
	status = wafer_read(client, dense.handle, 0, dst, size);
	wafer_status released = wafer_release(client, dense.handle);
	return status != WAFER_OK ? status : released;
}

WAFER_API wafer_status wafer_tensor_release(wafer_client *client,
					    const wafer_tensor *tensor)
{
	if (!tensor)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_tensor_release: tensor is NULL");
	return wafer_release(client, tensor->handle);
}

/* |tensor| with explicit strides, for the view arithmetic. */
static wafer_status explicit_strides(const char *what,
				     const wafer_tensor *tensor,
				     wafer_tensor *out)
{
	if (!tensor || tensor->rank > WAFER_MAX_RANK)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: %s", what,
				   tensor ? "rank above 8" : "tensor is NULL");
	*out = *tensor;
	if (!out->strided)
		wafer__view_dense_strides(out->rank, out->shape, out->strides);
	out->strided = 1;
	return WAFER_OK;
}

WAFER_API wafer_status wafer_tensor_transpose(const wafer_tensor *tensor,
					      uint32_t dim0, uint32_t dim1,
					      wafer_tensor *out)
{
	wafer_tensor t;
	wafer_status status =
		explicit_strides("wafer_tensor_transpose", tensor, &t);

	if (status != WAFER_OK)
		return status;
	if (!out || dim0 >= t.rank || dim1 >= t.rank)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_tensor_transpose: dimensions %" PRIu32
				   " and %" PRIu32 " of a rank-%" PRIu32
				   " tensor%s",
				   dim0, dim1, t.rank, out ? "" : " (out NULL)");
	uint64_t s = t.shape[dim0], st = t.strides[dim0];
	t.shape[dim0] = t.shape[dim1];
	t.strides[dim0] = t.strides[dim1];
	t.shape[dim1] = s;
	t.strides[dim1] = st;
	*out = t;
	return WAFER_OK;
}

WAFER_API wafer_status wafer_tensor_reshape(const wafer_tensor *tensor,
					    uint32_t rank,
					    const uint64_t *shape,
					    wafer_tensor *out)
{
	wafer_tensor t;
	char a[WAFER_SHAPE_STRING_MAX], b[WAFER_SHAPE_STRING_MAX];
	wafer_status status =
		explicit_strides("wafer_tensor_reshape", tensor, &t);

	if (status != WAFER_OK)
		return status;
	if (!out || rank > WAFER_MAX_RANK || (rank && !shape))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_tensor_reshape: %s",
				   out ? "rank above 8 or shape NULL"
				      : "out is NULL");
	if (!dense_layout(&t))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_tensor_reshape: the view of shape %s "
				   "is not dense; copy it first",
				   wafer__view_shape_string(t.rank, t.shape, a,
							    sizeof a));
	/* A count past 64 bits is no count: it must not compare equal to
	 * the 0 of a shape with a 0 in it. */
	uint64_t count, source_count;
	bool fits = wafer__view_shape_count_fits(rank, shape, &count) &
		    wafer__view_shape_count_fits(t.rank, t.shape, &source_count);
	if (!fits || count != source_count)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_tensor_reshape: %s has another "
				   "element count than %s%s",
				   wafer__view_shape_string(rank, shape, b,
							    sizeof b),
				  wafer__view_shape_string(t.rank, t.shape, a,
							   sizeof a),
				  fits ? "" : " (a count does not fit in 64 bits)");
	wafer_tensor r = wafer_tensor_view(t.handle, t.dtype, rank, shape);
	r.offset = t.offset;
	*out = r;
	return WAFER_OK;
}

WAFER_API wafer_status wafer_tensor_slice(const wafer_tensor *tensor,
					  uint32_t dim, uint64_t start,
					  uint64_t length, wafer_tensor *out)
{
	wafer_tensor t;
	wafer_status status = explicit_strides("wafer_tensor_slice", tensor,
					       &t);

	if (status != WAFER_OK)
		return status;
	if (!out || dim >= t.rank || length == 0 || start >= t.shape[dim] ||
	    length > t.shape[dim] - start)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_tensor_slice: [%" PRIu64 ", +%" PRIu64
				   ") of dimension %" PRIu32
				   " (rank %" PRIu32 ")%s",
				   start, length, dim, t.rank,
				   out ? "" : ", out NULL");
	uint64_t shift;
	if (__builtin_mul_overflow(start, t.strides[dim], &shift) ||
	    __builtin_add_overflow(t.offset, shift, &t.offset))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_tensor_slice: offset overflows");
	t.shape[dim] = length;
	*out = t;
	return WAFER_OK;
}
