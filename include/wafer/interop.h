/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * interop.h: native handles out and in. A handle's memory as the backend
 * knows it (a CUdeviceptr, a cl_mem, a Level Zero USM pointer, a host
 * pointer), the client's queue (a CUstream, a cl_command_queue, a Level
 * Zero command list), a client opened on the caller's own queue, and a
 * foreign buffer wrapped as a handle that takes part in operations,
 * programs and donation like one of wafer's own:
 *
 *   wafer_native_buffer nb = {sizeof nb};
 *   wafer_handle_native(client, h, &nb);       // nb.address: a CUdeviceptr
 *   my_kernel<<<..., stream>>>((float *)nb.address);
 *
 *   wafer_native_buffer in = {sizeof in};
 *   in.kind = WAFER_NATIVE_CUDA_POINTER;  in.address = (uint64_t)ptr;
 *   in.size = bytes;
 *   wafer_handle_import(client, &in, my_free, my_data, &h);
 *
 * Plugins without the interop entries of the plugin ABI (1.3) report
 * WAFER_ERROR_NOT_SUPPORTED, "interop not supported by <plugin>". See
 * wafer-interop(7). */
#ifndef WAFER_INTEROP_H
#define WAFER_INTEROP_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/wafer.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "host-pointer", "cuda-pointer", "opencl-mem", "levelzero-pointer";
 * "none", "vendor-0x10001" and the like for a vendor's own kind
 * (types.h) and "unknown" otherwise. Never NULL. */
WAFER_API const char *wafer_native_kind_name(wafer_native_kind kind);

/* Fills |*out| (its struct_size set by the caller) with |handle|'s memory.
 * It waits for the handle's memory to exist (a reservation queued on the
 * mpsc channel), not for work that writes it: order your own access with
 * wafer_sync or on the client's queue (wafer_client_native_queue). Valid
 * while the handle lives; a pool handle gives a plain pointer into the
 * range its pages are mapped in. A view's offset is the caller's to add.
 * Errors: WAFER_ERROR_INVALID_HANDLE; WAFER_ERROR_NOT_SUPPORTED
 * ("interop not supported by <plugin>"). */
WAFER_API wafer_status wafer_handle_native(wafer_client *client,
					   wafer_handle handle,
					   wafer_native_buffer *out);

/* Called once, when the last reference to an imported buffer is gone and
 * the work issued before that on the client has finished; never from
 * inside another wafer call of that client's thread holding a lock. */
typedef void (*wafer_import_release_fn)(void *user_data);

/* Wraps a foreign buffer as a handle holding one reference. |buffer|'s
 * kind must be the client's device's (a CUDA pointer of that device, a
 * cl_mem of its context, ...), |size| > 0 and its address aligned as the
 * device's kernels need (the device's alloc_alignment); nothing is copied.
 * The handle is used like any other: operations, programs, reads, writes,
 * views; donated to an operation that reuses it, the output keeps the
 * foreign memory. The memory strategy never frees it: when the last
 * handle on it goes, |release| (may be NULL) is called once with
 * |user_data|. On failure |release| is not called and the buffer stays
 * the caller's. */
WAFER_API wafer_status wafer_handle_import(wafer_client *client,
					   const wafer_native_buffer *buffer,
					   wafer_import_release_fn release,
					   void *user_data,
					   wafer_handle *out_handle);

/* wafer_native_kind, wafer_native_buffer and wafer_native_queue are in
 * wafer/types.h (the plugin ABI passes them on). */

/* Fills |*out| with the calling thread's current queue of the client
 * (its default queue unless the thread selected another: queue.h),
 * after submitting to it everything issued on the client before this call (on mpsc: waits until the runner
 * has submitted it), so that work the caller puts on the queue next is
 * ordered after wafer's. Work the caller issued on it before the next
 * wafer call is ordered before that call's. */
WAFER_API wafer_status wafer_client_native_queue(wafer_client *client,
						 wafer_native_queue *out);

#ifdef __cplusplus
}
#endif

#endif /* WAFER_INTEROP_H */
