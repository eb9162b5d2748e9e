/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * dlpack.h: tensors exchanged with other frameworks (PyTorch, CuPy,
 * NumPy, JAX, ...) through DLPack, without copying. Installed when wafer
 * was built with DLPack's header (Debian: libdlpack-dev).
 *
 *   DLManagedTensor *m;
 *   wafer_tensor_to_dlpack(client, &y, &m);  // y's memory, one reference
 *   hand_over(m);                  // the consumer calls m->deleter(m)
 *
 *   wafer_tensor x;
 *   wafer_tensor_from_dlpack(client, theirs, &x);  // their memory
 *   wafer_op_unary(client, WAFER_UNARY_EXP, &x, WAFER_ALWAYS_COPY, &y);
 *   wafer_tensor_release(client, &x);  // theirs->deleter(theirs), once
 *
 * Devices: host memory is kDLCPU (the cpu backend), a CUDA pointer is
 * kDLCUDA with the device's ordinal as device_id, a Level Zero USM
 * pointer is kDLOneAPI (14; DLPack headers before 0.8 do not name it:
 * WAFER_DLPACK_ONEAPI). An OpenCL buffer is a cl_mem, which DLPack
 * cannot carry: WAFER_ERROR_NOT_SUPPORTED both ways. See
 * wafer_tensor_to_dlpack(3). */
#ifndef WAFER_DLPACK_H
#define WAFER_DLPACK_H

#include <dlpack/dlpack.h>

#include <wafer/ops.h>

#ifdef __cplusplus
extern "C" {
#endif

/* DLPack's device type of Level Zero (oneAPI) memory, kDLOneAPI in DLPack
 * 0.8 and later. */
#define WAFER_DLPACK_ONEAPI 14

/* Describes |tensor| (any view wafer_tensor can name: offset, strides,
 * broadcasts) as a DLManagedTensor over the handle's own memory. The
 * DLManagedTensor holds one reference to the handle (wafer_retain); its
 * deleter drops it. Before it returns, the work issued on the client
 * before the call has finished (a wafer_sync), so the consumer reads the
 * bytes that work wrote. data is the handle's first byte, byte_offset the
 * view's offset in bytes, strides always given, in elements.
 *
 * The deleter may be called from any thread; on the "direct" channel call
 * it where the client's calls are made. Called after wafer_client_close,
 * it frees only its own record: the client freed the memory when it
 * closed, so the consumer must be done with the data by then.
 *
 * Errors (nothing is retained, *out is NULL): WAFER_ERROR_INVALID_ARGUMENT
 * (NULL, a bad view), WAFER_ERROR_OUT_OF_RANGE (the view passes the end
 * of its handle), WAFER_ERROR_INVALID_HANDLE, WAFER_ERROR_NOT_SUPPORTED (a
 * backend without interop, an OpenCL cl_mem, a dtype DLPack cannot name),
 * an error of the queued work reported by the sync. */
WAFER_API wafer_status wafer_tensor_to_dlpack(wafer_client *client,
					      const wafer_tensor *tensor,
					      DLManagedTensor **out);

/* Wraps |managed|'s memory as a tensor of the client's device: a handle
 * imported with wafer_handle_import over the bytes the view reaches,
 * holding one reference, and a view of it with |managed|'s dtype, shape
 * and strides. When the last reference to the handle goes (and the work
 * issued before has finished) managed->deleter(managed) is called, once
 * (not at all when it is NULL). The device must be the client's (kDLCPU
 * on cpu, kDLCUDA with the client's CUDA ordinal, kDLOneAPI); strides may
 * be NULL (compact row-major) and must not be negative; the data pointer
 * plus byte_offset must be aligned to the element size.
 *
 * The tensor's bytes are the producer's as they are: order the producer's
 * pending work first (DLPack's Python protocol does it with its stream
 * argument; from C, finish it or use the client's native queue).
 *
 * Errors (the deleter is not called, |managed| stays the caller's, *out
 * is a null tensor): WAFER_ERROR_INVALID_ARGUMENT (NULL, a NULL data
 * pointer or shape, a negative size), WAFER_ERROR_NOT_SUPPORTED naming
 * what cannot be taken (another device, a dtype wafer has not, vector
 * lanes, rank above 8, an empty tensor, negative strides), or the error
 * of wafer_handle_import. */
WAFER_API wafer_status wafer_tensor_from_dlpack(wafer_client *client,
						DLManagedTensor *managed,
						wafer_tensor *out);

/* DLPack 1.0 and later (headers that define DLPACK_MAJOR_VERSION): the
 * same for DLManagedTensorVersioned. Export sets version to the header's
 * and flags to 0; import takes a tensor of major version 1, refuses one
 * flagged read-only (WAFER_ERROR_NOT_SUPPORTED: wafer's handles are
 * writable) and accepts one flagged as a copy. These two exist in the
 * library only when it was built with such a header. */
#if defined(DLPACK_MAJOR_VERSION)
WAFER_API wafer_status
wafer_tensor_to_dlpack_versioned(wafer_client *client,
				 const wafer_tensor *tensor,
				 DLManagedTensorVersioned **out);
WAFER_API wafer_status
wafer_tensor_from_dlpack_versioned(wafer_client *client,
				   DLManagedTensorVersioned *managed,
				   wafer_tensor *out);
#endif

#ifdef __cplusplus
}
#endif

#endif /* WAFER_DLPACK_H */
