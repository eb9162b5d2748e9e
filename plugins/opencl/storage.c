/* wafer — SPDX-License-Identifier: MIT
 *
 * storage.c: the OpenCL plugin's wafer_storage_ops. A resource is a
 * cl_mem from clCreateBuffer; copies are clEnqueueRead/Write/CopyBuffer
 * on the client's in-order queue, so they keep their place among the
 * launches.
 *
 * Uploads: copy_in must let the caller reuse its buffer at once. A
 * blocking write would do that, but it also waits for everything queued
 * before it (21 us per 256-byte write on PoCL, against 1 us queued). So
 * uploads are staged: copied into a ring of pinned host memory
 * (CL_MEM_ALLOC_HOST_PTR, mapped once) and written from there without
 * blocking; the ring space comes back when the write's event completes.
 * Large uploads go through the ring in chunks, which on a discrete GPU
 * also gives them pinned-memory DMA speed with the memcpy of one chunk
 * overlapping the transfer of the previous one. Where the device's memory
 * is host memory (PoCL, integrated GPUs) staging a large upload is a
 * second memcpy for nothing: those are written directly, blocking.
 *
 * Downloads are non-blocking reads straight into the caller's memory:
 * plugin.h only promises the bytes at the next sync.
 *
 * No virtual memory (OpenCL has none) and no stream-ordered allocator:
 * the core's strategies pool cl_mem buffers themselves.
 *
 * Interop (ABI 1.3): native hands out the resource's cl_mem, the offset
 * and the device's cl_context. import takes a buffer of that context as
 * the resource, retained, whatever the offset (the core keeps the offset
 * as the handle's place in it, as for a binding: no sub-buffer, whose
 * alignment rules differ per device); forget releases that reference,
 * and the caller's own stays its own. */
#include "build-config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/opencl/ocl_plugin.h"

/* The staging ring of a queue, and the largest piece of an upload staged
 * at once. */
#define STAGING_SIZE ((size_t)8 << 20)
#define STAGING_CHUNK ((size_t)2 << 20)

/* On devices whose memory is host memory, uploads larger than this are
 * written directly (blocking) instead of staged. */
#define DIRECT_WRITE_MIN ((size_t)1 << 20)

/*===----------------------------------------------------------------------===
 * Allocation
 *===----------------------------------------------------------------------===*/

static wafer_status ocl_storage_alloc(void *device, size_t size,
				      wafer_resource *out_resource)
{
	struct ocl_device *dev = device;
	const struct wafer_host_services *host = ocl_host(dev);
	cl_mem mem;
	cl_int err;

	if (wafer_plugin_alloc_check(host, OCL_NAME, size, out_resource))
		return WAFER_ERROR_INVALID_ARGUMENT;
	if (size > dev->max_alloc) {
		host->set_error(OCL_NAME ": cannot allocate %zu bytes: more "
				"than %s allows in one buffer "
				"(CL_DEVICE_MAX_MEM_ALLOC_SIZE %" PRIu64 ")",
				size, dev->entry->name,
				(uint64_t)dev->max_alloc);
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	mem = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, size, NULL, &err);
	if (!mem) {
		ocl_fail(host, err, "clCreateBuffer(%zu bytes)", size);
		/* CL_OUT_OF_RESOURCES here means the device is full. */
		return err == CL_OUT_OF_RESOURCES ? WAFER_ERROR_OUT_OF_MEMORY
						  : ocl_status_of(err);
	}
	*out_resource = ocl_mem_resource(mem);
	return WAFER_OK;
}

/* The core frees a resource only once no queued work uses it; OpenCL
 * would keep it alive for such work anyway. */
static void ocl_storage_free(void *device, wafer_resource resource)
{
	clReleaseMemObject(ocl_resource_mem(resource));
}

/*===----------------------------------------------------------------------===
 * The staging ring
 *===----------------------------------------------------------------------===*/

/* Creates the ring at the first upload. A device that cannot give pinned
 * memory gets plain blocking writes instead (size SIZE_MAX marks that). */
static int staging_ready(struct ocl_queue *q)
{
	struct ocl_device *dev = q->device;
	struct ocl_staging *s = &q->staging;
	cl_int err;

	if (s->size == SIZE_MAX)
		return 0;
	if (s->size)
		return 1;
	s->size = SIZE_MAX;
	s->buffer = clCreateBuffer(dev->context,
				   CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE,
				   STAGING_SIZE, NULL, &err);
	if (!s->buffer)
		goto fail;
	/* Mapped on the device's own queue: the client's stays untouched. */
	s->host = clEnqueueMapBuffer(dev->util_queue, s->buffer, CL_TRUE,
				     CL_MAP_WRITE, 0, STAGING_SIZE, 0, NULL,
				     NULL, &err);
	if (!s->host) {
		clReleaseMemObject(s->buffer);
		s->buffer = NULL;
		goto fail;
	}
	s->size = STAGING_SIZE;
	return 1;
fail:
	ocl_host(dev)->log(ocl_host(dev), WAFER_LOG_INFO,
			   "no pinned staging memory (%s); uploads block",
			   ocl_error_name(err));
	return 0;
}

/* Takes the oldest staged write off the ring; with |wait|, first waits
 * for it. Returns 0 when it had not finished (and |wait| was 0). */
static int staging_pop(struct ocl_queue *q, int wait)
{
	struct ocl_staging *s = &q->staging;
	struct ocl_staging_slot *slot = &s->slots[s->first];
	cl_int status = CL_COMPLETE, err;

	if (wait) {
		err = clWaitForEvents(1, &slot->event);
		if (err != CL_SUCCESS)
			status = err;
	}
	err = clGetEventInfo(slot->event, CL_EVENT_COMMAND_EXECUTION_STATUS,
			     sizeof status, &status, NULL);
	if (err != CL_SUCCESS)
		status = err;
	if (status > CL_COMPLETE)
		return 0; /* queued, submitted or running */
	if (status < 0)
		wafer_plugin_deferred_set(&q->failed, ocl_status_of(status),
				      OCL_NAME ": a staged upload failed: "
				      "%s (%d)",
				      ocl_error_name(status), (int)status);
	clReleaseEvent(slot->event);
	slot->event = NULL;
	s->first = (s->first + 1) % OCL_STAGING_SLOTS;
	s->count--;
	return 1;
}

void ocl_staging_reap(struct ocl_queue *q, int wait_all)
{
	while (q->staging.count && staging_pop(q, wait_all))
		;
}

/* Finds |len| (<= STAGING_CHUNK) free bytes of the ring, waiting for old
 * writes when it is full, and returns their offset. */
static size_t staging_reserve(struct ocl_queue *q, size_t len)
{
	struct ocl_staging *s = &q->staging;

	for (;;) {
		size_t tail, head;

		if (s->count == 0)
			return 0;
		if (s->count < OCL_STAGING_SLOTS) {
			tail = s->slots[s->first].begin;
			head = s->slots[(s->first + s->count - 1) %
					OCL_STAGING_SLOTS]
				       .end;
			/* Not wrapped: room after head, else at the start
			 * (strictly before tail, so head never meets tail
			 * and "full" never looks like "empty"). */
			if (head > tail) {
				if (head + len <= s->size)
					return head;
				if (len < tail)
					return 0;
			} else if (head + len < tail) {
				return head;
			}
		}
		/* Full: finished writes first, else wait for the oldest. */
		if (!staging_pop(q, 0))
			staging_pop(q, 1);
	}
}

/* Stages |size| bytes from |src| and writes them into |dst| at |offset|
 * without blocking, chunk by chunk. */
static wafer_status staged_write(struct ocl_queue *q, cl_mem dst,
				 size_t offset, const char *src, size_t size)
{
	struct ocl_staging *s = &q->staging;

	ocl_staging_reap(q, 0);
	while (size) {
		size_t len = size < STAGING_CHUNK ? size : STAGING_CHUNK;
		size_t begin = staging_reserve(q, len);
		struct ocl_staging_slot *slot;
		cl_event event;
		cl_int err;

		memcpy(s->host + begin, src, len);
		err = clEnqueueWriteBuffer(q->queue, dst, CL_FALSE, offset, len,
					   s->host + begin, 0, NULL, &event);
		if (err != CL_SUCCESS)
			return ocl_fail(ocl_host(q->device), err,
					"clEnqueueWriteBuffer(%zu bytes at "
					"%zu)",
					len, offset);
		if (ocl_queue_timing(q))
			ocl_queue_timed(q, event);
		slot = &s->slots[(s->first + s->count) % OCL_STAGING_SLOTS];
		slot->event = event;
		slot->begin = begin;
		slot->end = begin + len;
		s->count++;
		src += len;
		offset += len;
		size -= len;
	}
	return WAFER_OK;
}

void ocl_staging_destroy(struct ocl_queue *q)
{
	struct ocl_staging *s = &q->staging;
	struct ocl_device *dev = q->device;

	ocl_staging_reap(q, 1);
	if (s->buffer) {
		clEnqueueUnmapMemObject(dev->util_queue, s->buffer, s->host, 0,
					NULL, NULL);
		clFinish(dev->util_queue);
		clReleaseMemObject(s->buffer);
	}
	memset(s, 0, sizeof *s);
}

/*===----------------------------------------------------------------------===
 * Copies
 *===----------------------------------------------------------------------===*/

/* Whether an upload of |size| bytes goes through the staging ring
 * ([opencl] staging: auto, always, never). */
static int wants_staging(const struct ocl_device *dev, size_t size)
{
	switch (dev->state->staging) {
	case OCL_STAGING_ALWAYS:
		return 1;
	case OCL_STAGING_NEVER:
		return 0;
	default:
		return !(dev->host_unified && size >= DIRECT_WRITE_MIN);
	}
}

static wafer_status ocl_storage_copy_in(void *device, void *queue,
					wafer_resource dst, size_t dst_offset,
					const void *src, size_t size)
{
	struct ocl_device *dev = device;
	struct ocl_queue *q = queue;
	cl_event event, *ev;
	cl_int err;

	if (size == 0)
		return WAFER_OK;
	if (wants_staging(dev, size) && staging_ready(q))
		return staged_write(q, ocl_resource_mem(dst), dst_offset, src,
				    size);

	ev = ocl_queue_timing(q) ? &event : NULL;
	err = clEnqueueWriteBuffer(q->queue, ocl_resource_mem(dst), CL_TRUE,
				   dst_offset, size, src, 0, NULL, ev);
	if (err != CL_SUCCESS)
		return ocl_fail(ocl_host(dev), err,
				"clEnqueueWriteBuffer(%zu bytes at %zu)", size,
				dst_offset);
	return ocl_queue_done(q, ev);
}

static wafer_status ocl_storage_copy_out(void *device, void *queue,
					 wafer_resource src, size_t src_offset,
					 void *dst, size_t size)
{
	struct ocl_queue *q = queue;
	cl_event event, *ev;
	cl_int err;

	if (size == 0)
		return WAFER_OK;
	ev = ocl_queue_timing(q) ? &event : NULL;
	err = clEnqueueReadBuffer(q->queue, ocl_resource_mem(src), CL_FALSE,
				  src_offset, size, dst, 0, NULL, ev);
	if (err != CL_SUCCESS)
		return ocl_fail(ocl_host(q->device), err,
				"clEnqueueReadBuffer(%zu bytes at %zu)", size,
				src_offset);
	return ocl_queue_done(q, ev);
}

static wafer_status enqueue_copy(struct ocl_queue *q, cl_mem dst,
				 size_t dst_offset, cl_mem src,
				 size_t src_offset, size_t size)
{
	cl_event event, *ev = ocl_queue_timing(q) ? &event : NULL;
	cl_int err;

	err = ocl_enqueue_copy(q, src, dst, src_offset, dst_offset, size, ev);
	if (err != CL_SUCCESS)
		return ocl_fail(ocl_host(q->device), err,
				"clEnqueueCopyBuffer(%zu bytes)", size);
	return ocl_queue_done(q, ev);
}

/* Two slices of one buffer may overlap, which clEnqueueCopyBuffer
 * refuses (CL_MEM_COPY_OVERLAP): such a copy goes through a temporary
 * buffer, released at once (OpenCL keeps it until the copies ran). */
static wafer_status ocl_storage_copy(void *device, void *queue,
				     wafer_resource dst, size_t dst_offset,
				     wafer_resource src, size_t src_offset,
				     size_t size)
{
	struct ocl_device *dev = device;
	cl_mem d = ocl_resource_mem(dst), s = ocl_resource_mem(src), tmp;
	wafer_status status;
	cl_int err;

	if (size == 0 || (d == s && dst_offset == src_offset))
		return WAFER_OK;
	if (d != s || dst_offset >= src_offset + size ||
	    src_offset >= dst_offset + size)
		return enqueue_copy(queue, d, dst_offset, s, src_offset, size);

	/* A temporary released at once must not be in a command buffer. */
	if (((struct ocl_queue *)queue)->recording)
		return ocl_fail(ocl_host(dev), CL_INVALID_OPERATION,
				"an overlapping copy cannot be recorded into a "
				"command buffer");
	tmp = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, size, NULL, &err);
	if (!tmp)
		return ocl_fail(ocl_host(dev), err,
				"clCreateBuffer(%zu bytes) for an overlapping "
				"copy",
				size);
	status = enqueue_copy(queue, tmp, 0, s, src_offset, size);
	if (status == WAFER_OK)
		status = enqueue_copy(queue, d, dst_offset, tmp, 0, size);
	clReleaseMemObject(tmp);
	return status;
}

/*===----------------------------------------------------------------------===
 * Interop
 *===----------------------------------------------------------------------===*/

static wafer_status ocl_storage_native(void *device, wafer_resource resource,
				       size_t offset,
				       struct wafer_native_buffer *out)
{
	struct ocl_device *dev = device;

	out->kind = WAFER_NATIVE_OPENCL_MEM;
	out->address = 0;
	out->object = ocl_resource_mem(resource);
	out->offset = offset;
	out->context = dev->context;
	out->device_ordinal = 0;
	return WAFER_OK;
}

/* One clGetMemObjectInfo; on a failure set_error names |what| and |mem|. */
static wafer_status mem_info(struct ocl_device *dev, cl_mem mem,
			     cl_mem_info what, const char *name, void *value,
			     size_t size)
{
	cl_int err = clGetMemObjectInfo(mem, what, size, value, NULL);

	if (err == CL_SUCCESS)
		return WAFER_OK;
	ocl_fail(ocl_host(dev), err, "import: clGetMemObjectInfo(cl_mem %p, %s)",
		 (void *)mem, name);
	/* A handle OpenCL does not know is the caller's mistake. */
	return err == CL_INVALID_MEM_OBJECT ? WAFER_ERROR_INVALID_ARGUMENT
					    : ocl_status_of(err);
}

static wafer_status ocl_storage_import(void *device,
				       const struct wafer_native_buffer *buffer,
				       wafer_resource *out_resource)
{
	struct ocl_device *dev = device;
	const struct wafer_host_services *host = ocl_host(dev);
	cl_mem mem;
	cl_context context = NULL;
	cl_mem_object_type type = 0;
	size_t size = 0;
	wafer_status status;

	status = wafer_plugin_import_checks(host, OCL_NAME, buffer,
					    WAFER_NATIVE_OPENCL_MEM,
					    "opencl-mem", 0, out_resource);
	if (status != WAFER_OK)
		return status;
	mem = buffer->object;
	status = mem_info(dev, mem, CL_MEM_CONTEXT, "CL_MEM_CONTEXT", &context,
			  sizeof context);
	if (status == WAFER_OK && context != dev->context) {
		host->set_error(OCL_NAME ": import: cl_mem %p belongs to "
				"cl_context %p, not %s's cl_context %p",
				(void *)mem, (void *)context, dev->entry->name,
				(void *)dev->context);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (status == WAFER_OK)
		status = mem_info(dev, mem, CL_MEM_TYPE, "CL_MEM_TYPE", &type,
				  sizeof type);
	if (status == WAFER_OK && type != CL_MEM_OBJECT_BUFFER) {
		host->set_error(OCL_NAME ": import: cl_mem %p is not a buffer "
				"(CL_MEM_TYPE 0x%x)",
				(void *)mem, (unsigned)type);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (status == WAFER_OK)
		status = mem_info(dev, mem, CL_MEM_SIZE, "CL_MEM_SIZE", &size,
				  sizeof size);
	if (status == WAFER_OK && (buffer->offset > size ||
				   buffer->size > size - buffer->offset)) {
		host->set_error(OCL_NAME ": import: %zu bytes at offset %zu "
				"run past the end of cl_mem %p (%zu bytes)",
				buffer->size, buffer->offset, (void *)mem,
				size);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (status != WAFER_OK)
		return status;
	clRetainMemObject(mem);
	*out_resource = ocl_mem_resource(mem);
	return WAFER_OK;
}

/* Drops import's reference; the caller's own stays. */
static void ocl_storage_forget(void *device, wafer_resource resource)
{
	(void)device;
	clReleaseMemObject(ocl_resource_mem(resource));
}

/*===----------------------------------------------------------------------===
 * The table
 *===----------------------------------------------------------------------===*/

const struct wafer_storage_ops ocl_storage_ops = {
	WAFER_PLUGIN_STORAGE_OPS(ocl),
	WAFER_PLUGIN_INTEROP_STORAGE_OPS(ocl),
	/* alloc_async/free_async, vm_*: NULL. OpenCL 1.2 has neither a
	 * stream-ordered allocator nor virtual memory (SVM is not it). */
	/* host_alloc/host_free: NULL, retired in ABI 1.1; the staging ring
	 * above is the plugin's own pinned memory. */
};
