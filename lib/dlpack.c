/* wafer — SPDX-License-Identifier: MIT
 *
 * dlpack.c: DLPack exchange (include/wafer/dlpack.h) on top of the native
 * handles of interop.h. Export describes a view over wafer_handle_native's
 * memory and holds a reference to the handle until the consumer's deleter
 * call; import wraps the producer's bytes with wafer_handle_import, whose
 * release callback is the producer's deleter. Nothing is copied either
 * way. */
#include "build-config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/dlpack.h>
#include <wafer/interop.h>
#include <wafer/ops.h>

#include "lib/client.h"
#include "lib/client_watch.h"
#include "lib/error.h"
#include "lib/kernel_table.h"
#include "lib/log.h"
#include "lib/ops/internal.h"

/*===----------------------------------------------------------------------===
 * Element types and devices
 *===----------------------------------------------------------------------===*/

static const struct {
	wafer_dtype dtype;
	uint8_t code, bits;
} dtypes[] = {
	{WAFER_DTYPE_F32, kDLFloat, 32},  {WAFER_DTYPE_F16, kDLFloat, 16},
	{WAFER_DTYPE_BF16, kDLBfloat, 16}, {WAFER_DTYPE_I32, kDLInt, 32},
	{WAFER_DTYPE_U8, kDLUInt, 8},     {WAFER_DTYPE_F64, kDLFloat, 64},
	{WAFER_DTYPE_I64, kDLInt, 64},
};

static bool dtype_to_dl(wafer_dtype dtype, DLDataType *out)
{
	for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
		if (dtypes[i].dtype == dtype) {
			out->code = dtypes[i].code;
			out->bits = dtypes[i].bits;
			out->lanes = 1;
			return true;
		}
	return false;
}

/* WAFER_DTYPE_NONE when wafer has no such type. */
static wafer_dtype dtype_from_dl(DLDataType dl)
{
	if (dl.lanes != 1)
		return WAFER_DTYPE_NONE;
	for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
		if (dtypes[i].code == dl.code && dtypes[i].bits == dl.bits)
			return dtypes[i].dtype;
	return WAFER_DTYPE_NONE;
}

static const char *device_name(int type)
{
	switch (type) {
	case kDLCPU: return "kDLCPU";
	case kDLCUDA: return "kDLCUDA";
	case kDLCUDAHost: return "kDLCUDAHost";
	case kDLOpenCL: return "kDLOpenCL";
	case kDLVulkan: return "kDLVulkan";
	case kDLMetal: return "kDLMetal";
	case kDLROCM: return "kDLROCM";
	case kDLCUDAManaged: return "kDLCUDAManaged";
	case WAFER_DLPACK_ONEAPI: return "kDLOneAPI";
	default: return "an unknown device type";
	}
}

/* The DLPack device type of memory of |kind|; false (with the error
 * recorded, naming |fn| and |backend|) when DLPack cannot carry it. */
static bool device_of_kind(const char *fn, wafer_native_kind kind,
			   const char *backend, int *out_type)
{
	switch (kind) {
	case WAFER_NATIVE_HOST_POINTER:
		*out_type = kDLCPU;
		return true;
	case WAFER_NATIVE_CUDA_POINTER:
		*out_type = kDLCUDA;
		return true;
	case WAFER_NATIVE_LEVELZERO_POINTER:
		*out_type = WAFER_DLPACK_ONEAPI;
		return true;
	case WAFER_NATIVE_OPENCL_MEM:
		wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
			    "%s: %s buffers are OpenCL cl_mem objects, which "
			    "DLPack cannot carry (it shares device pointers)",
			    fn, backend ? backend : "opencl");
		return false;
	default:
		wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
			    "%s: %s memory is of native kind %s, which DLPack "
			    "cannot carry",
			    fn, backend ? backend : "the device's",
			    wafer_native_kind_name(kind));
		return false;
	}
}

/*===----------------------------------------------------------------------===
 * Export
 *===----------------------------------------------------------------------===*/

/* What a DLManagedTensor of ours points at (manager_ctx): the tensor
 * itself, its shape and strides, and the reference it holds. */
struct exported {
	union {
		DLManagedTensor legacy;
#if defined(DLPACK_MAJOR_VERSION)
		DLManagedTensorVersioned versioned;
#endif
	} m;
	int64_t shape[WAFER_MAX_RANK];
	int64_t strides[WAFER_MAX_RANK];
	/* Tells the deleter whether the client is still open. */
	struct wafer__client_watch *watch;
	wafer_handle handle;
};

static void exported_free(struct exported *e)
{
	wafer_client *client = wafer__client_watch_enter(e->watch);
	if (client && wafer_release(client, e->handle) != WAFER_OK)
		wafer__log_warn("dlpack", "deleter: releasing handle 0x%016" PRIx64
				": %s", e->handle.bits, wafer_last_error());
	/* Closed: the client freed the memory with its other handles. */
	wafer__client_watch_leave(e->watch);
	wafer__client_watch_put(e->watch);
	free(e);
}

static void legacy_deleter(DLManagedTensor *self)
{
	exported_free(self->manager_ctx);
}

#if defined(DLPACK_MAJOR_VERSION)
static void versioned_deleter(DLManagedTensorVersioned *self)
{
	exported_free(self->manager_ctx);
}
#endif

/* Checks |tensor| and the caller's |out|, finishes the work issued
 * before and returns a record holding a reference to the handle and one
 * to the client's watch, whose managed tensor (|versioned| or legacy) is
 * filled from the handle's native memory and frees the record. */
static wafer_status export_tensor(const char *fn, wafer_client *client,
				  const wafer_tensor *tensor, const void *out,
				  bool versioned, struct exported **out_e)
{
	struct wafer__view view;
	DLDataType dtype;
	int device_type;
	wafer_status status;

	*out_e = NULL;
	status = wafer__check_not_null(fn, client, "client", tensor, "tensor",
				       out, "out");
	if (status != WAFER_OK)
		return status;
	status = wafer__view_check(client, fn, "tensor", tensor, &view);
	if (status != WAFER_OK)
		return status;
	if (!dtype_to_dl(view.t.dtype, &dtype))
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "%s: dtype %s has no DLPack type", fn,
				   wafer__dtype_name(view.t.dtype));

	wafer_native_buffer nb;
	memset(&nb, 0, sizeof nb);
	nb.struct_size = sizeof nb;
	status = wafer_handle_native(client, view.t.handle, &nb);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s: handle 0x%016" PRIx64,
					   fn, view.t.handle.bits);
	if (!device_of_kind(fn, nb.kind, nb.backend, &device_type))
		return wafer__fail_context(WAFER_ERROR_NOT_SUPPORTED,
					   "handle 0x%016" PRIx64,
					   view.t.handle.bits);
	/* The consumer reads the bytes at once, maybe from the host. */
	status = wafer_sync(client);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s: the work queued before",
					   fn);

	struct exported *e = calloc(1, sizeof *e);
	if (!e)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "%s: out of host memory", fn);
	e->watch = wafer__client_watch(client);
	if (!e->watch) {
		free(e);
		return wafer__fail_context(WAFER_ERROR_OUT_OF_MEMORY, "%s", fn);
	}
	status = wafer_retain(client, view.t.handle);
	if (status != WAFER_OK) {
		wafer__client_watch_put(e->watch);
		free(e);
		return status;
	}
	e->handle = view.t.handle;

	DLTensor *dl;
#if defined(DLPACK_MAJOR_VERSION)
	if (versioned) {
		e->m.versioned.version.major = DLPACK_MAJOR_VERSION;
		e->m.versioned.version.minor = DLPACK_MINOR_VERSION;
		e->m.versioned.flags = 0;
		e->m.versioned.manager_ctx = e;
		e->m.versioned.deleter = versioned_deleter;
		dl = &e->m.versioned.dl_tensor;
	} else
#endif
	{
		e->m.legacy.manager_ctx = e;
		e->m.legacy.deleter = legacy_deleter;
		dl = &e->m.legacy.dl_tensor;
	}
	(void)versioned;
	dl->data = (void *)(uintptr_t)nb.address;
	dl->device.device_type = (DLDeviceType)device_type;
	dl->device.device_id = device_type == kDLCPU ? 0 : nb.device_ordinal;
	dl->ndim = (int)view.t.rank;
	dl->dtype = dtype;
	/* view_check put the strides of a dense view in, so they are always
	 * given (DLPack 1.0 requires them; 0.6 consumers take them too). */
	for (uint32_t d = 0; d < view.t.rank; d++) {
		e->shape[d] = (int64_t)view.t.shape[d];
		e->strides[d] = (int64_t)view.t.strides[d];
	}
	dl->shape = e->shape;
	dl->strides = e->strides;
	dl->byte_offset = view.t.offset * view.element_size;
	*out_e = e;
	return WAFER_OK;
}

WAFER_API wafer_status wafer_tensor_to_dlpack(wafer_client *client,
					      const wafer_tensor *tensor,
					      DLManagedTensor **out)
{
	struct exported *e;

	if (out)
		*out = NULL;
	wafer_status status = export_tensor("wafer_tensor_to_dlpack", client,
					    tensor, out, false, &e);
	if (status == WAFER_OK)
		*out = &e->m.legacy;
	return status;
}

/*===----------------------------------------------------------------------===
 * Import
 *===----------------------------------------------------------------------===*/

/* The client's device as DLPack names it. */
static wafer_status client_device(const char *fn, wafer_client *client,
				  wafer_native_queue *q, int *out_type)
{
	memset(q, 0, sizeof *q);
	q->struct_size = sizeof *q;
	wafer_status status = wafer_client_native_queue(client, q);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s", fn);
	if (!device_of_kind(fn, q->kind, q->backend, out_type))
		return WAFER_ERROR_NOT_SUPPORTED;
	return WAFER_OK;
}

/* Whether DLPack device |type| is memory of a device of |client_type|. A
 * CUDA managed pointer is a CUdeviceptr too. */
static bool device_matches(int type, int client_type)
{
	return type == client_type ||
	       (client_type == kDLCUDA && type == kDLCUDAManaged);
}

/* Checks |dl| against the client, imports the bytes its view reaches and
 * fills |out|. On failure |release| is not called. */
static wafer_status import_tensor(const char *fn, wafer_client *client,
				  const DLTensor *dl,
				  wafer_import_release_fn release,
				  void *user_data, wafer_tensor *out)
{
	wafer_native_queue q;
	int client_type;
	wafer_status status;

	wafer_dtype dtype = dtype_from_dl(dl->dtype);
	if (dtype == WAFER_DTYPE_NONE)
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "%s: DLPack dtype (code %u, %u bits, %u "
				  "lanes) is not one of wafer's (f32, f16, "
				  "bf16, i32, u8, f64, i64)",
				  fn, dl->dtype.code, dl->dtype.bits,
				  dl->dtype.lanes);
	if (dl->ndim < 0 || (dl->ndim > 0 && !dl->shape))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: ndim %d%s", fn, dl->ndim,
				   dl->ndim < 0 ? " is negative"
					       : " with a NULL shape");
	if (dl->ndim > WAFER_MAX_RANK)
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "%s: rank %d, wafer's tensors have at most "
				   "%d dimensions",
				   fn, dl->ndim, WAFER_MAX_RANK);
	if (!dl->data)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: the data pointer is NULL", fn);

	uint32_t rank = (uint32_t)dl->ndim;
	size_t element_size = wafer_dtype_size(dtype);
	uint64_t shape[WAFER_MAX_RANK] = {0}, strides[WAFER_MAX_RANK] = {0};
	uint64_t dense[WAFER_MAX_RANK] = {0};
	for (uint32_t d = 0; d < rank; d++) {
		if (dl->shape[d] < 0)
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "%s: size %" PRId64 " in dimension "
					   "%" PRIu32,
					   fn, dl->shape[d], d);
		if (dl->shape[d] == 0)
			return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
					   "%s: size 0 in dimension %" PRIu32
					   ": wafer has no empty tensors",
					   fn, d);
		shape[d] = (uint64_t)dl->shape[d];
	}
	wafer__view_dense_strides(rank, shape, dense);
	bool is_dense = true;
	for (uint32_t d = 0; d < rank; d++) {
		int64_t s = dl->strides ? dl->strides[d] : (int64_t)dense[d];
		/* The stride of a dimension of size 1 never moves: any value
		 * will do, and frameworks give odd ones. */
		if (shape[d] == 1)
			s = (int64_t)dense[d];
		if (s < 0)
			return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
					   "%s: stride %" PRId64 " in dimension "
					   "%" PRIu32 ": a layout with negative "
					   "strides (a flipped view) is not one "
					   "wafer_tensor can name; copy it first",
					   fn, s, d);
		strides[d] = (uint64_t)s;
		if (strides[d] != dense[d])
			is_dense = false;
	}
	/* The last element the view reaches, and the bytes up to it. */
	uint64_t last = 0, bytes;
	for (uint32_t d = 0; d < rank; d++) {
		uint64_t reach;
		if (__builtin_mul_overflow(shape[d] - 1, strides[d], &reach) ||
		    __builtin_add_overflow(last, reach, &last))
			goto too_large;
	}
	if (__builtin_add_overflow(last, 1, &bytes) ||
	    __builtin_mul_overflow(bytes, element_size, &bytes) ||
	    bytes > SIZE_MAX)
		goto too_large;

	status = client_device(fn, client, &q, &client_type);
	if (status != WAFER_OK)
		return status;
	if (!device_matches(dl->device.device_type, client_type) ||
	    dl->device.device_id != q.device_ordinal)
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "%s: the tensor is on %s device %d, the "
				   "client's device (%s) is %s device %d",
				   fn, device_name(dl->device.device_type),
				   dl->device.device_id,
				   q.backend ? q.backend : "?",
				   device_name(client_type), q.device_ordinal);

	uint64_t address;
	if (__builtin_add_overflow((uint64_t)(uintptr_t)dl->data,
				   dl->byte_offset, &address))
		goto too_large;
	if (address % element_size)
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "%s: the first element (data 0x%" PRIx64
				  " + byte_offset %" PRIu64 ") is not aligned "
				  "to its %zu-byte element",
				  fn, (uint64_t)(uintptr_t)dl->data,
				  (uint64_t)dl->byte_offset, element_size);
	/* The import takes the device's alignment (a framework's slice does
	 * not start on it): it starts at the aligned address below and the
	 * view's offset covers the rest. Both are multiples of the element
	 * size (powers of two), so the offset is whole elements. The bytes
	 * in between are never touched: the view does not reach them, and an
	 * operation reuses an input's buffer only for a view of all of it. */
	size_t alignment =
		wafer__client_runtime_device(client)->info.alloc_alignment;
	uint64_t lead = alignment > 1 ? address % alignment : 0;
	if (lead > SIZE_MAX - bytes)
		goto too_large;

	wafer_native_buffer nb;
	memset(&nb, 0, sizeof nb);
	nb.struct_size = sizeof nb;
	nb.kind = q.kind;
	nb.address = address - lead;
	nb.size = (size_t)(lead + bytes);
	nb.context = q.context;
	nb.device_ordinal = q.device_ordinal;
	wafer_handle handle;
	status = wafer_handle_import(client, &nb, release, user_data, &handle);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s", fn);

	wafer_tensor t = wafer_tensor_view(handle, dtype, rank, shape);
	t.offset = lead / element_size;
	if (!is_dense) {
		t.strided = 1;
		memcpy(t.strides, strides, sizeof strides);
	}
	*out = t;
	return WAFER_OK;

too_large:
	return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
			   "%s: the view reaches past the address space", fn);
}

static void call_legacy_deleter(void *user_data)
{
	DLManagedTensor *managed = user_data;
	if (managed->deleter)
		managed->deleter(managed);
}

WAFER_API wafer_status wafer_tensor_from_dlpack(wafer_client *client,
						DLManagedTensor *managed,
						wafer_tensor *out)
{
	static const char fn[] = "wafer_tensor_from_dlpack";

	wafer_status status =
		WAFER__CHECK_OUT_POINTER(fn, client, managed, out);
	if (status != WAFER_OK)
		return status;
	return import_tensor(fn, client, &managed->dl_tensor,
			     call_legacy_deleter, managed, out);
}

/*===----------------------------------------------------------------------===
 * DLPack 1.0: the versioned struct, where the header has it
 *===----------------------------------------------------------------------===*/

#if defined(DLPACK_MAJOR_VERSION)
WAFER_API wafer_status
wafer_tensor_to_dlpack_versioned(wafer_client *client,
				 const wafer_tensor *tensor,
				 DLManagedTensorVersioned **out)
{
	struct exported *e;

	if (out)
		*out = NULL;
	wafer_status status = export_tensor("wafer_tensor_to_dlpack_versioned",
					    client, tensor, out, true, &e);
	if (status == WAFER_OK)
		*out = &e->m.versioned;
	return status;
}

static void call_versioned_deleter(void *user_data)
{
	DLManagedTensorVersioned *managed = user_data;
	if (managed->deleter)
		managed->deleter(managed);
}

WAFER_API wafer_status
wafer_tensor_from_dlpack_versioned(wafer_client *client,
				   DLManagedTensorVersioned *managed,
				   wafer_tensor *out)
{
	static const char fn[] = "wafer_tensor_from_dlpack_versioned";

	wafer_status status =
		WAFER__CHECK_OUT_POINTER(fn, client, managed, out);
	if (status != WAFER_OK)
		return status;
	/* A new major changes the struct's layout past |version|. */
	if (managed->version.major != 1)
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "%s: DLPack version %u.%u, wafer takes 1.x",
				   fn, managed->version.major,
				   managed->version.minor);
	if (managed->flags & DLPACK_FLAG_BITMASK_READ_ONLY)
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "%s: the tensor is read-only; wafer's "
				   "handles are writable (an operation may "
				  "reuse a donated input), so it is not "
				  "imported",
				  fn);
	return import_tensor(fn, client, &managed->dl_tensor,
			     call_versioned_deleter, managed, out);
}
#endif
