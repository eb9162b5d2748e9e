/* wafer — SPDX-License-Identifier: MIT
 *
 * storage.c: the Level Zero plugin's wafer_storage_ops.
 *
 *  - Memory is zeMemAllocDevice in the driver's context; a resource is the
 *    device address.
 *  - Copies are appended to the queue's command list (server.c), so they
 *    are ordered with its launches. Host bytes always pass through host
 *    memory from zeMemAllocHost: an upload is copied there first (the
 *    caller may reuse its buffer at once), a download lands there and is
 *    copied out when the queue next waits (plugin.h: the bytes are in
 *    place when sync returns).
 *  - Virtual memory is zeVirtualMemReserve'd address space. vm_map backs
 *    each page (vm_granularity bytes) of what it maps with a physical
 *    object of its own, zePhysicalMemCreate'd and zeVirtualMemMap'ped;
 *    each range keeps a table of its pages' physical objects. The core
 *    may unmap any page-aligned part of what it mapped, in any order, and
 *    while kernels on other queues use the pages around it: with one
 *    object per page every unmap takes down whole mappings — the same
 *    calls that made them, which every driver accepts — touches no page
 *    outside the span, and gives its memory back at once. The price is a
 *    create and a map per page; the pool strategy maps while its working
 *    set grows, not while it repeats.
 *  - Interop (ABI 1.3): native is the USM device address plus the offset
 *    (a vm range's page there must be mapped) and the context; import
 *    takes the caller's USM pointer as the resource once
 *    zeMemGetAllocProperties says it is device (or shared) memory of this
 *    device in this context, at both ends; forget drops nothing: the
 *    memory stays the caller's, never zeMemFree'd.
 *  - host_alloc/host_free are retired (ABI 1.1) and NULL here; the
 *    queues' staging areas come from lz_host_alloc, zeMemAllocHost:
 *    page-locked host memory the device reaches directly. */
#include "build-config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/levelzero/lz_plugin.h"
#include "plugins/common/vm_ranges.h"

/* One vm_reserve'd range (device->vm_ranges, under vm_lock). */
struct lz_vm_range {
	/* First: the list holds this. */
	struct vm_range range;
	/* The physical object behind each page, NULL where unmapped;
	 * allocated at the first map (size / granularity entries). */
	ze_physical_mem_handle_t *pages;
};

/*===----------------------------------------------------------------------===
 * Allocation and copies
 *===----------------------------------------------------------------------===*/

static wafer_status lz_storage_alloc(void *device, size_t size,
				     wafer_resource *out_resource)
{
	struct lz_device *dev = device;
	ze_device_mem_alloc_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC,
		.ordinal = 0,
	};
	void *ptr = NULL;
	ze_result_t r;

	if (wafer_plugin_alloc_check(lz_host(dev), "levelzero", size,
				     out_resource))
		return WAFER_ERROR_INVALID_ARGUMENT;
	r = zeMemAllocDevice(dev->context, &desc, size, LZ_ALIGNMENT,
			     dev->device, &ptr);
	if (r != ZE_RESULT_SUCCESS || !ptr) {
		lz_host(dev)->set_error("levelzero: zeMemAllocDevice(%zu): %s",
					size, lz_result_name(r));
		return r == ZE_RESULT_SUCCESS ? WAFER_ERROR_OUT_OF_MEMORY
					      : lz_status(r);
	}
	*out_resource = lz_ptr_resource(ptr);
	return WAFER_OK;
}

static void lz_storage_free(void *device, wafer_resource resource)
{
	struct lz_device *dev = device;
	ze_result_t r = zeMemFree(dev->context, lz_resource_ptr(resource));

	if (r != ZE_RESULT_SUCCESS)
		lz_host(dev)->log(lz_host(dev), WAFER_LOG_WARN,
				  "zeMemFree(0x%" PRIx64 "): %s", resource,
				  lz_result_name(r));
}

/* Both directions go through the queue's staging area: an upload (|up|)
 * copies |host| there at once, so the caller may reuse it; a download's
 * bytes reach |host| at the queue's next wait. */
static wafer_status staged_copy(struct lz_device *dev, struct lz_queue *q,
				char *on_device, void *host, size_t size,
				int up)
{
	void *staged;
	wafer_status status;

	if (size == 0)
		return WAFER_OK;
	status = lz_queue_stage(dev, q, size, &staged);
	if (status != WAFER_OK)
		return status;
	if (up) {
		memcpy(staged, host, size);
		return lz_queue_copy(dev, q, on_device, staged, size);
	}
	status = lz_queue_copy(dev, q, staged, on_device, size);
	if (status != WAFER_OK)
		return status;
	return lz_queue_defer(dev, q,
			      &(struct lz_pending){
				      .staged = staged,
				      .dst = host,
				      .size = size,
			      });
}

static wafer_status lz_storage_copy_in(void *device, void *queue,
				       wafer_resource dst, size_t dst_offset,
				       const void *src, size_t size)
{
	/* |src| is only read: staged_copy writes to host for downloads. */
	return staged_copy(device, queue,
			   (char *)lz_resource_ptr(dst) + dst_offset,
			   (void *)src, size, 1);
}

static wafer_status lz_storage_copy_out(void *device, void *queue,
					wafer_resource src, size_t src_offset,
					void *dst, size_t size)
{
	return staged_copy(device, queue,
			   (char *)lz_resource_ptr(src) + src_offset, dst,
			   size, 0);
}

/* A memory copy between overlapping regions is undefined in Level Zero;
 * two slices of one resource that overlap go through a temporary, freed
 * when the queue next waits. */
static wafer_status lz_storage_copy(void *device, void *queue,
				    wafer_resource dst, size_t dst_offset,
				    wafer_resource src, size_t src_offset,
				    size_t size)
{
	struct lz_device *dev = device;
	char *to = (char *)lz_resource_ptr(dst) + dst_offset;
	const char *from = (const char *)lz_resource_ptr(src) + src_offset;
	wafer_resource tmp;
	wafer_status status;

	if (size == 0 || to == from)
		return WAFER_OK;
	if (to + size <= from || from + size <= to)
		return lz_queue_copy(dev, queue, to, from, size);

	status = lz_storage_ops.alloc(dev, size, &tmp);
	if (status != WAFER_OK)
		return status;
	status = lz_queue_copy(dev, queue, lz_resource_ptr(tmp), from, size);
	if (status == WAFER_OK)
		status = lz_queue_copy(dev, queue, to, lz_resource_ptr(tmp),
				       size);
	if (status == WAFER_OK)
		status = lz_queue_defer(dev, queue,
					&(struct lz_pending){
						.free_dev = lz_resource_ptr(tmp),
					});
	if (status != WAFER_OK) {
		/* A copy that went in may still read tmp: wait for it
		 * (a failure stays queued for sync) before freeing. */
		lz_queue_wait(dev, queue);
		lz_storage_ops.free(dev, tmp);
	}
	return status;
}

/*===----------------------------------------------------------------------===
 * Virtual memory
 *===----------------------------------------------------------------------===*/

/* The range starting at |range|; with |unlink|, also taken off the list.
 * Called with vm_lock held. */
static struct lz_vm_range *find_range(struct lz_device *dev,
				      wafer_resource range, int unlink)
{
	return (struct lz_vm_range *)vm_range_find(&dev->vm_ranges, range,
						   unlink);
}

static wafer_status lz_storage_vm_reserve(void *device, size_t size,
					  wafer_resource *out_range)
{
	struct lz_device *dev = device;
	const struct wafer_host_services *host = lz_host(dev);
	size_t page = dev->slot->vm_granularity;
	struct lz_vm_range *r;
	void *base = NULL;
	ze_result_t zr;

	*out_range = 0;
	if (page == 0) {
		host->set_error("levelzero: '%s' has no virtual memory",
				dev->slot->name);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	if (wafer_plugin_vm_reserve_check(host, "levelzero", size, page))
		return WAFER_ERROR_INVALID_ARGUMENT;
	r = wafer_plugin_calloc(host, sizeof *r,
				"levelzero: vm_reserve: out of host memory");
	if (!r)
		return WAFER_ERROR_OUT_OF_MEMORY;
	zr = zeVirtualMemReserve(dev->context, NULL, size, &base);
	if (zr != ZE_RESULT_SUCCESS || !base) {
		host->set_error("levelzero: zeVirtualMemReserve(%zu): %s", size,
				lz_result_name(zr));
		free(r);
		return zr == ZE_RESULT_SUCCESS ? WAFER_ERROR_OUT_OF_MEMORY
					       : lz_status(zr);
	}
	r->range.base = (uintptr_t)base;
	r->range.size = size;

	pthread_mutex_lock(&dev->vm_lock);
	vm_range_add(&dev->vm_ranges, &r->range);
	pthread_mutex_unlock(&dev->vm_lock);

	*out_range = lz_ptr_resource(base);
	return WAFER_OK;
}

/* Unmaps page |i| of |r| and destroys its physical object. Failures are
 * logged: the page is gone from the table either way (a page the driver
 * refused to unmap cannot be used again safely). */
static void unmap_page(struct lz_device *dev, struct lz_vm_range *r, size_t i)
{
	size_t page = dev->slot->vm_granularity;
	ze_result_t zr;

	zr = zeVirtualMemUnmap(dev->context, (void *)(r->range.base + i * page),
			       page);
	if (zr != ZE_RESULT_SUCCESS)
		lz_host(dev)->log(lz_host(dev), WAFER_LOG_WARN,
				  "zeVirtualMemUnmap(+%zu, %zu): %s", i * page,
				  page, lz_result_name(zr));
	zr = zePhysicalMemDestroy(dev->context, r->pages[i]);
	if (zr != ZE_RESULT_SUCCESS)
		lz_host(dev)->log(lz_host(dev), WAFER_LOG_WARN,
				  "zePhysicalMemDestroy: %s", lz_result_name(zr));
	r->pages[i] = NULL;
}

/* Unmaps every page of |r| and gives its address space back. Called with
 * |r| off the device's list. */
static void release_range(struct lz_device *dev, struct lz_vm_range *r)
{
	size_t pages = r->range.size / dev->slot->vm_granularity;
	ze_result_t zr;

	for (size_t i = 0; r->pages && i < pages; i++)
		if (r->pages[i])
			unmap_page(dev, r, i);
	zr = zeVirtualMemFree(dev->context, (void *)r->range.base,
			      r->range.size);
	if (zr != ZE_RESULT_SUCCESS)
		lz_host(dev)->log(lz_host(dev), WAFER_LOG_WARN,
				  "zeVirtualMemFree(%zu): %s", r->range.size,
				  lz_result_name(zr));
	free(r->pages);
	free(r);
}

static void lz_storage_vm_release(void *device, wafer_resource range)
{
	struct lz_device *dev = device;

	pthread_mutex_lock(&dev->vm_lock);
	struct lz_vm_range *r = find_range(dev, range, 1);
	pthread_mutex_unlock(&dev->vm_lock);

	if (!r) {
		lz_host(dev)->log(lz_host(dev), WAFER_LOG_WARN,
				  "vm_release: 0x%" PRIx64
				  " is not a reserved range; ignored",
				  range);
		return;
	}
	release_range(dev, r);
}

/* Maps page |i| of |r| to a new physical object. */
static wafer_status map_page(struct lz_device *dev, struct lz_vm_range *r,
			     size_t i)
{
	size_t page = dev->slot->vm_granularity;
	ze_physical_mem_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_PHYSICAL_MEM_DESC,
		.size = page,
	};
	ze_physical_mem_handle_t phys;
	ze_result_t zr;

	zr = zePhysicalMemCreate(dev->context, dev->device, &desc, &phys);
	if (zr != ZE_RESULT_SUCCESS)
		return lz_fail(lz_host(dev), zr, "vm_map: zePhysicalMemCreate");
	/* The map sets the access attribute itself; a later
	 * zeVirtualMemSetAccessAttribute would change nothing. */
	zr = zeVirtualMemMap(dev->context, (void *)(r->range.base + i * page),
			     page, phys, 0,
			     ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE);
	if (zr != ZE_RESULT_SUCCESS) {
		zePhysicalMemDestroy(dev->context, phys);
		return lz_fail(lz_host(dev), zr, "vm_map: zeVirtualMemMap");
	}
	r->pages[i] = phys;
	return WAFER_OK;
}

/* Whether page |i| of |range| (a struct lz_vm_range) is mapped: pages is
 * made at its first vm_map. */
static int page_mapped(const void *range, size_t i)
{
	const struct lz_vm_range *r = range;

	return r->pages && r->pages[i];
}

/* vm_map's and vm_unmap's opening: takes vm_lock and finds the range
 * holding [offset, +size) in whole pages, every one of them |mapped| (1)
 * or not (0). On WAFER_OK vm_lock is held; on a failure it is not. */
static wafer_status lock_pages(struct lz_device *dev, wafer_resource range,
			       size_t offset, size_t size, int mapped,
			       const char *what, struct lz_vm_range **out_r)
{
	struct vm_range *r = NULL;
	wafer_status status = vm_range_lock_pages(
		&dev->vm_lock, &dev->vm_ranges, lz_host(dev), "levelzero", what,
		range, offset, size, dev->slot->vm_granularity, mapped,
		page_mapped, &r);

	if (status == WAFER_OK)
		*out_r = (struct lz_vm_range *)r;
	return status;
}

/* Every page of [offset, offset + size) must be unmapped; on a failure
 * part way the pages this call mapped are unmapped again. */
static wafer_status lz_storage_vm_map(void *device, wafer_resource range,
				      size_t offset, size_t size)
{
	struct lz_device *dev = device;
	size_t page = dev->slot->vm_granularity;
	size_t first = offset / page, count = size / page;
	struct lz_vm_range *r;
	wafer_status status;

	status = lock_pages(dev, range, offset, size, 0, "vm_map", &r);
	if (status != WAFER_OK)
		return status;
	if (!r->pages) {
		r->pages = calloc(r->range.size / page, sizeof *r->pages);
		if (!r->pages) {
			lz_host(dev)->set_error("levelzero: vm_map: out of "
						"host memory");
			status = WAFER_ERROR_OUT_OF_MEMORY;
		}
	}
	for (size_t i = first; status == WAFER_OK && i < first + count; i++) {
		status = map_page(dev, r, i);
		if (status == WAFER_OK)
			continue;
		while (i-- > first)
			unmap_page(dev, r, i);
	}
	pthread_mutex_unlock(&dev->vm_lock);
	return status;
}

/* Every page of [offset, offset + size) must be mapped (checked before
 * anything is unmapped, so a bad call changes nothing). */
static wafer_status lz_storage_vm_unmap(void *device, wafer_resource range,
					size_t offset, size_t size)
{
	struct lz_device *dev = device;
	size_t page = dev->slot->vm_granularity;
	struct lz_vm_range *r;
	wafer_status status;

	status = lock_pages(dev, range, offset, size, 1, "vm_unmap", &r);
	if (status != WAFER_OK)
		return status;
	for (size_t i = offset / page; i < (offset + size) / page; i++)
		unmap_page(dev, r, i);
	pthread_mutex_unlock(&dev->vm_lock);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Pinned host memory, for the plugin's own staging (server.c)
 *===----------------------------------------------------------------------===*/

wafer_status lz_host_alloc(struct lz_device *dev, size_t size, void **out_ptr)
{
	ze_host_mem_alloc_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC,
	};
	ze_result_t r;

	*out_ptr = NULL;
	if (size == 0) {
		lz_host(dev)->set_error("levelzero: cannot allocate 0 bytes of "
					"host memory");
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	r = zeMemAllocHost(dev->context, &desc, size, LZ_ALIGNMENT, out_ptr);
	if (r != ZE_RESULT_SUCCESS || !*out_ptr) {
		*out_ptr = NULL;
		lz_host(dev)->set_error("levelzero: zeMemAllocHost(%zu): %s",
					size, lz_result_name(r));
		return r == ZE_RESULT_SUCCESS ? WAFER_ERROR_OUT_OF_MEMORY
					      : lz_status(r);
	}
	return WAFER_OK;
}

void lz_host_free(struct lz_device *dev, void *ptr)
{
	if (ptr)
		zeMemFree(dev->context, ptr);
}

/*===----------------------------------------------------------------------===
 * Interop
 *===----------------------------------------------------------------------===*/

static wafer_status lz_storage_native(void *device, wafer_resource resource,
				      size_t offset,
				      struct wafer_native_buffer *out)
{
	struct lz_device *dev = device;
	wafer_status status = WAFER_OK;

	/* A vm range answers only for a mapped page; other resources are
	 * plain pointers. */
	pthread_mutex_lock(&dev->vm_lock);
	struct lz_vm_range *r = find_range(dev, resource, 0);
	if (r)
		status = wafer_plugin_vm_native_check(
			lz_host(dev), "levelzero", resource, r->range.size,
			offset, dev->slot->vm_granularity, page_mapped, r);
	pthread_mutex_unlock(&dev->vm_lock);
	if (status != WAFER_OK)
		return status;
	out->kind = WAFER_NATIVE_LEVELZERO_POINTER;
	out->address = resource + offset;
	out->object = NULL;
	out->offset = 0;
	out->context = dev->context;
	out->device_ordinal = lz_device_ordinal(dev);
	return WAFER_OK;
}

static const char *memory_type_name(ze_memory_type_t type)
{
	switch (type) {
	case ZE_MEMORY_TYPE_HOST:
		return "host";
	case ZE_MEMORY_TYPE_DEVICE:
		return "device";
	case ZE_MEMORY_TYPE_SHARED:
		return "shared";
	default:
		return "unknown";
	}
}

/* Whether the byte at |p| is device or shared USM of |dev| in its
 * context; |which| names the byte in the error. */
static wafer_status check_usm(struct lz_device *dev, const void *p,
			      const char *which)
{
	ze_memory_allocation_properties_t props = {
		.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES,
	};
	ze_device_handle_t owner = NULL;
	ze_result_t r;

	r = zeMemGetAllocProperties(dev->context, p, &props, &owner);
	if (r != ZE_RESULT_SUCCESS) {
		lz_host(dev)->set_error("levelzero: import: "
					"zeMemGetAllocProperties(%s %p): %s",
					which, p, lz_result_name(r));
		return r == ZE_RESULT_ERROR_INVALID_ARGUMENT
			       ? WAFER_ERROR_INVALID_ARGUMENT
			       : lz_status(r);
	}
	if (props.type != ZE_MEMORY_TYPE_DEVICE &&
	    props.type != ZE_MEMORY_TYPE_SHARED) {
		lz_host(dev)->set_error("levelzero: import: %s %p is %s memory "
					"in context %p, not device memory of "
					"'%s'",
					which, p, memory_type_name(props.type),
					(void *)dev->context, dev->slot->name);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (owner != dev->device) {
		lz_host(dev)->set_error("levelzero: import: %s %p is memory of "
					"device %p, not of '%s' (%p)",
					which, p, (void *)owner,
					dev->slot->name, (void *)dev->device);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	return WAFER_OK;
}

static wafer_status lz_storage_import(void *device,
				      const struct wafer_native_buffer *buffer,
				      wafer_resource *out_resource)
{
	struct lz_device *dev = device;
	wafer_status status;

	status = wafer_plugin_import_checks(lz_host(dev), "levelzero", buffer,
					    WAFER_NATIVE_LEVELZERO_POINTER,
					    "levelzero-pointer",
					    lz_device_ordinal(dev),
					    out_resource);
	if (status != WAFER_OK)
		return status;
	if (buffer->context && buffer->context != (void *)dev->context) {
		lz_host(dev)->set_error("levelzero: import: context %p is not "
					"'%s''s context %p",
					buffer->context, dev->slot->name,
					(void *)dev->context);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	const char *first = (const char *)(uintptr_t)buffer->address;
	status = check_usm(dev, first, "address");
	if (status == WAFER_OK)
		status = check_usm(dev, first + buffer->size - 1, "last byte");
	if (status != WAFER_OK)
		return status;
	*out_resource = buffer->address;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The table
 *===----------------------------------------------------------------------===*/

const struct wafer_storage_ops lz_storage_ops = {
	WAFER_PLUGIN_STORAGE_OPS(lz),
	/* alloc_async/free_async: NULL. Level Zero has no stream-ordered
	 * allocator; the core's `stream` strategy falls back to plain
	 * alloc and free here (and says so in its log). */
	WAFER_PLUGIN_VM_OPS(lz),
	WAFER_PLUGIN_POINTER_INTEROP_STORAGE_OPS(lz),
	/* host_alloc/host_free: NULL, retired in ABI 1.1. */
};

void lz_storage_open(struct lz_device *device)
{
	pthread_mutex_init(&device->vm_lock, NULL);
	device->vm_ranges = NULL;
}

void lz_storage_close(struct lz_device *device)
{
	/* No lock: the core closes a device only when nothing uses it. */
	while (device->vm_ranges) {
		struct lz_vm_range *r =
			(struct lz_vm_range *)device->vm_ranges;
		lz_host(device)->log(lz_host(device), WAFER_LOG_WARN,
				     "device closed with %zu bytes of address "
				     "space still reserved at 0x%" PRIxPTR
				     "; released",
				     r->range.size, r->range.base);
		device->vm_ranges = r->range.next;
		release_range(device, r);
	}
	pthread_mutex_destroy(&device->vm_lock);
}
