/* wafer — SPDX-License-Identifier: MIT
 *
 * storage.c: the cpu plugin's wafer_storage_ops. Device memory is host
 * memory: a resource is a host address, copies are memcpy on the calling
 * thread, and virtual memory is mmap'd address space whose pages are
 * committed and dropped with mprotect and madvise.
 *
 * A copy runs on the calling thread once its queue's earlier work has
 * finished (cpu_queue_drain), so it is in order with the launches the
 * queue's worker runs (queue.c) and, like a copy from pageable memory on
 * a GPU, may overlap what other queues run. A copy from or to registered
 * host memory runs on the worker itself, so it overlaps the caller too. Memory is freed or unmapped
 * only once every queue of the device is drained: no kernel still
 * queued can touch it (plugin.h leaves that to the plugin where its
 * queues are its own threads). */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "plugins/cpu/cpu_plugin.h"
#include "plugins/common/vm_ranges.h"

static const struct wafer_host_services *host_of(void *device)
{
	return ((struct cpu_device *)device)->state->host;
}

/*===----------------------------------------------------------------------===
 * Allocation and copies
 *===----------------------------------------------------------------------===*/

static wafer_status cpu_storage_alloc(void *device, size_t size,
				      wafer_resource *out_resource)
{
	void *ptr;
	wafer_status status = wafer_plugin_alloc_check(host_of(device), "cpu",
							size, out_resource);

	if (status != WAFER_OK)
		return status;
	if (posix_memalign(&ptr, CPU_ALIGNMENT, size) != 0) {
		host_of(device)->set_error("cpu: cannot allocate %zu bytes",
					   size);
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	*out_resource = cpu_ptr_resource(ptr);
	return WAFER_OK;
}

static void cpu_storage_free(void *device, wafer_resource resource)
{
	cpu_device_drain(device);
	free(cpu_resource_ptr(resource));
}

static wafer_status cpu_storage_copy_in(void *device, void *queue,
					wafer_resource dst, size_t dst_offset,
					const void *src, size_t size)
{
	(void)device;
	cpu_queue_drain(queue);
	if (size)
		memcpy((char *)cpu_resource_ptr(dst) + dst_offset, src, size);
	return WAFER_OK;
}

static wafer_status cpu_storage_copy_out(void *device, void *queue,
					 wafer_resource src, size_t src_offset,
					 void *dst, size_t size)
{
	(void)device;
	cpu_queue_drain(queue);
	if (size)
		memcpy(dst, (const char *)cpu_resource_ptr(src) + src_offset,
		       size);
	return WAFER_OK;
}

/* Registered host memory: nothing to lock, host memory is what the
 * device computes on. A copy from or to it runs on the queue's worker in
 * order, so an upload on one queue overlaps the kernels of another. */
static wafer_status cpu_storage_host_register(void *device, void *ptr,
					      size_t size)
{
	(void)device, (void)ptr, (void)size;
	return WAFER_OK;
}

static void cpu_storage_host_unregister(void *device, void *ptr)
{
	(void)device, (void)ptr;
}

struct copy_task {
	struct cpu_task task;
	void *dst;
	const void *src;
	size_t size;
};

static void run_copy(struct cpu_task *task, struct cpu_queue *queue)
{
	struct copy_task *t = (struct copy_task *)task;

	(void)queue;
	memcpy(t->dst, t->src, t->size);
	free(t);
}

static wafer_status queue_copy(struct cpu_device *dev, struct cpu_queue *q,
			       void *dst, const void *src, size_t size)
{
	if (cpu_queue_inline(q)) {
		memcpy(dst, src, size);
		return WAFER_OK;
	}
	struct copy_task *t = malloc(sizeof *t);
	if (!t) {
		dev->state->host->set_error("cpu: cannot allocate a copy task");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	*t = (struct copy_task){.task.run = run_copy, .dst = dst, .src = src,
				.size = size};
	cpu_queue_push(q, &t->task);
	return WAFER_OK;
}

static wafer_status cpu_storage_copy_in_registered(void *device, void *queue,
						   wafer_resource dst,
						   size_t dst_offset,
						   const void *src, size_t size)
{
	return queue_copy(device, queue,
			  (char *)cpu_resource_ptr(dst) + dst_offset, src,
			  size);
}

static wafer_status cpu_storage_copy_out_registered(void *device, void *queue,
						    wafer_resource src,
						    size_t src_offset,
						    void *dst, size_t size)
{
	return queue_copy(device, queue, dst,
			  (const char *)cpu_resource_ptr(src) + src_offset,
			  size);
}

/* memmove: two slices of one resource may overlap. */
static wafer_status cpu_storage_copy(void *device, void *queue,
				     wafer_resource dst, size_t dst_offset,
				     wafer_resource src, size_t src_offset,
				     size_t size)
{
	(void)device;
	cpu_queue_drain(queue);
	if (size)
		memmove((char *)cpu_resource_ptr(dst) + dst_offset,
			(const char *)cpu_resource_ptr(src) + src_offset, size);
	return WAFER_OK;
}

/* Peer copy (wafer_copy_peer) between two cpu devices, or within one:
 * every device's memory is the same host memory, so it is a memmove on
 * the destination client's thread once both queues have run what was
 * issued on them before (the core has brought the source's commands to
 * its queue before calling). */
static wafer_status cpu_storage_copy_peer(void *device, void *queue,
					  wafer_resource dst,
					  size_t dst_offset, void *src_device,
					  void *src_queue, wafer_resource src,
					  size_t src_offset, size_t size)
{
	(void)src_device;
	cpu_queue_drain(src_queue);
	return cpu_storage_copy(device, queue, dst, dst_offset, src,
				src_offset, size);
}

/*===----------------------------------------------------------------------===
 * Virtual memory
 *===----------------------------------------------------------------------===*/

/* Checks that [offset, offset + size) is a non-empty, page-aligned part of
 * the reserved range and returns its address, or NULL after set_error. */
static void *range_pages(struct cpu_device *dev, wafer_resource range,
			 size_t offset, size_t size, const char *what)
{
	const struct wafer_host_services *host = dev->state->host;
	size_t range_size = 0;

	pthread_mutex_lock(&dev->vm_lock);
	struct vm_range *r = vm_range_find(&dev->vm_ranges, range, 0);
	if (r)
		range_size = r->size;
	pthread_mutex_unlock(&dev->vm_lock);

	cpu_device_drain(dev);
	if (wafer_plugin_vm_span_check(host, "cpu", what, range, range_size,
				       offset, size, dev->page_size))
		return NULL;
	return (char *)cpu_resource_ptr(range) + offset;
}

/* Address space only: PROT_NONE and MAP_NORESERVE commit no memory and
 * count against no overcommit limit until vm_map makes pages usable. */
static wafer_status cpu_storage_vm_reserve(void *device, size_t size,
					   wafer_resource *out_range)
{
	struct cpu_device *dev = device;
	const struct wafer_host_services *host = dev->state->host;
	struct vm_range *r;
	void *base;

	*out_range = 0;
	if (wafer_plugin_vm_reserve_check(host, "cpu", size, dev->page_size))
		return WAFER_ERROR_INVALID_ARGUMENT;
	r = malloc(sizeof *r);
	if (!r) {
		host->set_error("cpu: vm_reserve: out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	base = mmap(NULL, size, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		host->set_error("cpu: cannot reserve %zu bytes of address "
				"space: %s",
				size, strerror(errno));
		free(r);
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	r->base = (uintptr_t)base;
	r->size = size;

	pthread_mutex_lock(&dev->vm_lock);
	vm_range_add(&dev->vm_ranges, r);
	pthread_mutex_unlock(&dev->vm_lock);

	*out_range = cpu_ptr_resource(base);
	return WAFER_OK;
}

static void cpu_storage_vm_release(void *device, wafer_resource range)
{
	struct cpu_device *dev = device;

	pthread_mutex_lock(&dev->vm_lock);
	struct vm_range *r = vm_range_find(&dev->vm_ranges, range, 1);
	pthread_mutex_unlock(&dev->vm_lock);

	cpu_device_drain(dev);
	if (!r) {
		dev->state->host->log(dev->state->host, WAFER_LOG_WARN,
				      "vm_release: 0x%" PRIx64
				      " is not a reserved range; ignored",
				      range);
		return;
	}
	munmap((void *)r->base, r->size);
	free(r);
}

/* vm_map makes the pages readable and writable; the kernel backs each one
 * with a zeroed page on first touch. vm_unmap gives them back to the
 * system at once with MADV_DONTNEED (a later map reads zeros), and
 * PROT_NONE makes a stray access fault instead of quietly committing a
 * fresh page. range_pages has drained the device's queues either way. */
static wafer_status set_pages(void *device, wafer_resource range,
			      size_t offset, size_t size, bool map)
{
	struct cpu_device *dev = device;
	const char *what = map ? "vm_map" : "vm_unmap";
	void *pages = range_pages(dev, range, offset, size, what);
	bool failed;

	if (!pages)
		return WAFER_ERROR_INVALID_ARGUMENT;
	if (map)
		failed = mprotect(pages, size, PROT_READ | PROT_WRITE) != 0;
	else
		failed = madvise(pages, size, MADV_DONTNEED) != 0 ||
			 mprotect(pages, size, PROT_NONE) != 0;
	if (failed) {
		dev->state->host->set_error("cpu: %s: cannot %s %zu bytes: %s",
					    what, map ? "commit" : "release",
					    size, strerror(errno));
		return map ? WAFER_ERROR_OUT_OF_MEMORY : WAFER_ERROR_INTERNAL;
	}
	return WAFER_OK;
}

static wafer_status cpu_storage_vm_map(void *device, wafer_resource range,
				       size_t offset, size_t size)
{
	return set_pages(device, range, offset, size, true);
}

static wafer_status cpu_storage_vm_unmap(void *device, wafer_resource range,
					 size_t offset, size_t size)
{
	return set_pages(device, range, offset, size, false);
}

/*===----------------------------------------------------------------------===
 * Interop (wafer-interop(7))
 *===----------------------------------------------------------------------===*/

/* Every resource is a host address (a vm range's too: its base), so the
 * byte at |offset| is that address plus |offset|, mapped or not: the core
 * asks only for a handle's bytes, which are. */
static wafer_status cpu_storage_native(void *device, wafer_resource resource,
				       size_t offset,
				       struct wafer_native_buffer *out)
{
	out->kind = WAFER_NATIVE_HOST_POINTER;
	out->address = (uint64_t)(uintptr_t)resource + offset;
	out->object = NULL;
	out->offset = 0;
	out->context = NULL;
	out->device_ordinal = 0;
	return WAFER_OK;
}

/* The caller's host memory becomes a resource as it is: copies and
 * kernels read it in place. */
static wafer_status cpu_storage_import(void *device,
				       const struct wafer_native_buffer *buffer,
				       wafer_resource *out_resource)
{
	wafer_status status;

	status = wafer_plugin_import_checks(host_of(device), "cpu", buffer,
					    WAFER_NATIVE_HOST_POINTER,
					    "host-pointer", 0, out_resource);
	if (status != WAFER_OK)
		return status;
	*out_resource = (wafer_resource)buffer->address;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The table
 *===----------------------------------------------------------------------===*/

const struct wafer_storage_ops cpu_storage_ops = {
	WAFER_PLUGIN_STORAGE_OPS(cpu),
	/* alloc_async/free_async: NULL. There is no stream-ordered allocator
	 * to expose — every cpu queue runs synchronously, so the plain
	 * alloc already is "ordered" — and the core's `stream` strategy
	 * reports itself unavailable on cpu. */
	WAFER_PLUGIN_VM_OPS(cpu),
	WAFER_PLUGIN_POINTER_INTEROP_STORAGE_OPS(cpu),
	.copy_peer = cpu_storage_copy_peer,
	WAFER_PLUGIN_HOST_REGISTER_OPS(cpu),
	/* host_alloc/host_free: NULL. Device memory is host memory; uploads
	 * and downloads are a memcpy from the caller's buffer and need no
	 * page-locked staging. */
};

void cpu_storage_open(struct cpu_device *device)
{
	pthread_mutex_init(&device->vm_lock, NULL);
	device->vm_ranges = NULL;
}

void cpu_storage_close(struct cpu_device *device)
{
	const struct wafer_host_services *host = device->state->host;

	/* No lock: the core closes a device only when nothing uses it. */
	while (device->vm_ranges) {
		struct vm_range *r = device->vm_ranges;
		host->log(host, WAFER_LOG_WARN,
			  "device closed with %zu bytes of address space still "
			  "reserved at 0x%" PRIxPTR "; released",
			  r->size, r->base);
		device->vm_ranges = r->next;
		munmap((void *)r->base, r->size);
		free(r);
	}
	pthread_mutex_destroy(&device->vm_lock);
}
