/* wafer — SPDX-License-Identifier: MIT
 *
 * storage.c: the cuda plugin's wafer_storage_ops.
 *
 *   alloc/free            cuMemAlloc / cuMemFree. The core synchronises
 *                         the queue before a free.
 *   alloc_async/          cuMemAllocAsync / cuMemFreeAsync on the queue's
 *   free_async            stream, from the device's default pool, whose
 *                         release threshold is [cuda] release_threshold.
 *   vm_*                  virtual memory: cuMemAddressReserve for a range;
 *                         each page (the allocation granularity) mapped is
 *                         its own physical allocation (cuMemCreate +
 *                         cuMemMap), so any page-aligned part of what was
 *                         mapped can be unmapped again — CUDA can only
 *                         unmap whole mappings. One cuMemSetAccess covers
 *                         each vm_map call, for this GPU and the GPUs that
 *                         can reach it (peer copies, NCCL). With [cuda] vm_page = whole,
 *                         each vm_map call is one physical allocation of
 *                         its size (the driver's cost goes with
 *                         allocations, not bytes) and vm_unmap takes
 *                         whole earlier vm_map calls only.
 *   vm_map_pieces         as vm_map calls of one piece each, with one
 *                         cuMemSetAccess for them all.
 *   copy_in/copy_out      through pinned staging buffers (staging.c).
 *   host_register ..      cuMemHostRegister / cuMemHostUnregister; copies
 *                         from and to the range are cuMemcpy*Async on the
 *                         queue's stream, no staging.
 *   copy                  cuMemcpyDtoDAsync on the queue's stream.
 *   copy_peer             peer.c: between two devices or queues.
 *   host_alloc/host_free  NULL: retired in ABI 1.1 (staging.c has its
 *                         own pinned pool).
 *   figure                the default pool's CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH.
 *   native/import/forget  interop (ABI 1.3): a resource is a CUdeviceptr
 *                         whatever made it, so native is the pointer plus
 *                         the offset (a vm range's page there must be
 *                         mapped), import takes the caller's pointer as
 *                         the resource once the driver says it is this
 *                         device's memory, and forget has nothing to drop:
 *                         the memory stays the caller's, never cuMemFree'd.
 *
 * When the device runs out of memory, alloc and vm_map first ask the
 * default pool to give back what it caches (cuMemPoolTrimTo) and try once
 * more: memory the stream-ordered allocator holds is invisible to
 * cuMemAlloc and cuMemCreate. */
#include "build-config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cuda/cuda_plugin.h"
#include "plugins/common/vm_ranges.h"

/* One vm_reserve'd range, with a bit per page saying whether it is
 * mapped, and one saying whether a mapping (one physical allocation)
 * starts there: every mapped page without vm_page = whole
 * (device->vm_ranges, under vm_lock). */
struct cuda_vm_range {
	/* First: the list holds this. */
	struct vm_range range;
	size_t pages;
	size_t mapped_pages;
	uint64_t *mapped;
	uint64_t *starts;
};

/* Gives the default pool's cached memory back to the device. */
static void trim_pool(struct cuda_device *dev)
{
	if (dev->pool)
		dev->drv->cuMemPoolTrimTo(dev->pool, 0);
}

/*===----------------------------------------------------------------------===
 * Allocation
 *===----------------------------------------------------------------------===*/

static wafer_status cuda_storage_alloc(void *device, size_t size,
				       wafer_resource *out_resource)
{
	struct cuda_device *dev = device;
	CUdeviceptr ptr = 0;
	wafer_status status;
	CUresult result;

	if (wafer_plugin_alloc_check(dev->host, "cuda", size, out_resource))
		return WAFER_ERROR_INVALID_ARGUMENT;
	status = cuda_enter(dev);
	if (status != WAFER_OK)
		return status;
	result = dev->drv->cuMemAlloc(&ptr, size);
	if (result == CUDA_ERROR_OUT_OF_MEMORY && dev->pool) {
		trim_pool(dev);
		result = dev->drv->cuMemAlloc(&ptr, size);
	}
	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result, "cuMemAlloc(%zu)", size);
	*out_resource = (wafer_resource)ptr;
	return WAFER_OK;
}

static void cuda_storage_free(void *device, wafer_resource resource)
{
	struct cuda_device *dev = device;
	char text[256];
	CUresult result;

	if (cuda_enter(dev) != WAFER_OK)
		return;
	result = dev->drv->cuMemFree(cuda_ptr(resource));
	if (result != CUDA_SUCCESS)
		dev->host->log(dev->host, WAFER_LOG_WARN,
			       "cuMemFree(0x%" PRIx64 "): %s", resource,
			       cuda_result_text(dev->drv, result, text,
						sizeof text));
}

static wafer_status cuda_storage_alloc_async(void *device, void *queue,
					     size_t size,
					     wafer_resource *out_resource)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;
	CUdeviceptr ptr = 0;
	wafer_status status;
	CUresult result;

	if (wafer_plugin_alloc_check(dev->host, "cuda", size, out_resource))
		return WAFER_ERROR_INVALID_ARGUMENT;
	if (!dev->pool) {
		dev->host->set_error("cuda: cuda:%" PRIu32 " has no "
				     "stream-ordered memory pool",
				     dev->index);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	status = cuda_enter(dev);
	if (status != WAFER_OK)
		return status;
	/* The pool reuses its own cached memory before it asks the device
	 * for more, so trimming it first would not help. */
	result = dev->drv->cuMemAllocAsync(&ptr, size, q->stream);
	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result, "cuMemAllocAsync(%zu)",
				 size);
	*out_resource = (wafer_resource)ptr;
	return WAFER_OK;
}

static wafer_status cuda_storage_free_async(void *device, void *queue,
					    wafer_resource resource)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;

	CUDA_ENTER_RETURN_AS(dev, ("cuMemFreeAsync(0x%" PRIx64 ")", resource),
			     cuMemFreeAsync, cuda_ptr(resource), q->stream);
}

/*===----------------------------------------------------------------------===
 * Copies
 *===----------------------------------------------------------------------===*/

static wafer_status cuda_storage_copy_in(void *device, void *queue,
					 wafer_resource dst, size_t dst_offset,
					 const void *src, size_t size)
{
	return cuda_staging_upload(device, queue, cuda_ptr(dst) + dst_offset,
				   src, size);
}

static wafer_status cuda_storage_copy_out(void *device, void *queue,
					  wafer_resource src,
					  size_t src_offset, void *dst,
					  size_t size)
{
	/* A download may wait on the stream (for a staging buffer, or
	 * unstaged): the collectives before it first, whose wait gives up
	 * on a rank that is gone (nccl.c). */
	wafer_status status = cuda_comm_wait(device, queue);

	if (status != WAFER_OK)
		return status;
	return cuda_staging_download(device, queue, dst,
				     cuda_ptr(src) + src_offset, size);
}

/* Registered host memory. Memory the driver has pinned already (a
 * cuMemHostAlloc block, PyTorch's pin_memory) or another client of the
 * process registered is taken as it is: the driver refuses a second
 * registration, and copies from it are asynchronous all the same. For
 * the same reason unregistering what the driver does not know is no
 * error; and should the memory be pageable after all (another client
 * unregistered it first), cuMemcpy*Async still copies correctly, only
 * synchronously. */
static wafer_status cuda_storage_host_register(void *device, void *ptr,
					       size_t size)
{
	struct cuda_device *dev = device;
	wafer_status status = cuda_enter(dev);

	if (status != WAFER_OK)
		return status;
	CUresult result = dev->drv->cuMemHostRegister(
		ptr, size, CU_MEMHOSTREGISTER_PORTABLE);
	if (result != CUDA_SUCCESS &&
	    result != CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
		return cuda_fail(dev->state, result,
				 "cuMemHostRegister(%p, %zu)", ptr, size);
	return WAFER_OK;
}

static void cuda_storage_host_unregister(void *device, void *ptr)
{
	struct cuda_device *dev = device;

	if (cuda_enter(dev) == WAFER_OK)
		(void)dev->drv->cuMemHostUnregister(ptr);
}

static wafer_status cuda_storage_copy_in_registered(void *device, void *queue,
						    wafer_resource dst,
						    size_t dst_offset,
						    const void *src,
						    size_t size)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;

	CUDA_ENTER_RETURN(dev, cuMemcpyHtoDAsync, cuda_ptr(dst) + dst_offset,
			  src, size, q->stream);
}

static wafer_status cuda_storage_copy_out_registered(void *device,
						     void *queue,
						     wafer_resource src,
						     size_t src_offset,
						     void *dst, size_t size)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;

	CUDA_ENTER_RETURN(dev, cuMemcpyDtoHAsync, dst,
			  cuda_ptr(src) + src_offset, size, q->stream);
}

/* Overlapping source and destination (two slices of one resource): CUDA
 * leaves that undefined, so it goes through a scratch buffer from the
 * stream-ordered pool, or with no pool, in steps no longer than the
 * distance between the two (each step's source is then untouched by the
 * step's own write). */
static wafer_status copy_overlapping(struct cuda_device *dev,
				     struct cuda_queue *q, CUdeviceptr dst,
				     CUdeviceptr src, size_t size)
{
	const struct cuda_driver *drv = dev->drv;
	CUdeviceptr tmp = 0;
	CUresult result;

	if (dev->pool &&
	    drv->cuMemAllocAsync(&tmp, size, q->stream) == CUDA_SUCCESS) {
		result = drv->cuMemcpyDtoDAsync(tmp, src, size, q->stream);
		if (result == CUDA_SUCCESS)
			result = drv->cuMemcpyDtoDAsync(dst, tmp, size,
							q->stream);
		drv->cuMemFreeAsync(tmp, q->stream);
		if (result != CUDA_SUCCESS)
			return cuda_fail(dev->state, result,
					 "cuMemcpyDtoDAsync(%zu, overlapping)",
					 size);
		return WAFER_OK;
	}
	size_t step = dst > src ? (size_t)(dst - src) : (size_t)(src - dst);
	for (size_t done = 0; done < size;) {
		size_t n = size - done < step ? size - done : step;
		/* Forward when the destination is below the source, else
		 * from the end. */
		size_t at = dst < src ? done : size - done - n;
		result = drv->cuMemcpyDtoDAsync(dst + at, src + at, n,
						q->stream);
		if (result != CUDA_SUCCESS)
			return cuda_fail(dev->state, result,
					 "cuMemcpyDtoDAsync(%zu, overlapping)",
					 n);
		done += n;
	}
	return WAFER_OK;
}

static wafer_status cuda_storage_copy(void *device, void *queue,
				      wafer_resource dst, size_t dst_offset,
				      wafer_resource src, size_t src_offset,
				      size_t size)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;
	CUdeviceptr to = cuda_ptr(dst) + dst_offset;
	CUdeviceptr from = cuda_ptr(src) + src_offset;
	wafer_status status;
	CUresult result;

	if (size == 0 || to == from)
		return WAFER_OK;
	status = cuda_enter(dev);
	if (status != WAFER_OK)
		return status;
	if (to < from + size && from < to + size)
		return copy_overlapping(dev, q, to, from, size);
	result = dev->drv->cuMemcpyDtoDAsync(to, from, size, q->stream);
	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result, "cuMemcpyDtoDAsync(%zu)",
				 size);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Virtual memory
 *===----------------------------------------------------------------------===*/

/* |range|: a struct cuda_vm_range (the type wafer_plugin_vm_pages_check
 * calls with). */
static int page_is_mapped(const void *range, size_t page)
{
	const struct cuda_vm_range *r = range;

	return (r->mapped[page / 64] >> (page % 64)) & 1;
}

static int page_starts(const struct cuda_vm_range *r, size_t page)
{
	return (r->starts[page / 64] >> (page % 64)) & 1;
}

static void mark_start(struct cuda_vm_range *r, size_t page, int start)
{
	uint64_t bit = UINT64_C(1) << (page % 64);

	if (start)
		r->starts[page / 64] |= bit;
	else
		r->starts[page / 64] &= ~bit;
}

/* The end of the mapping that starts at mapped page |p|: the next page
 * that starts one or is not mapped. Called with vm_lock held. */
static size_t mapping_end(const struct cuda_vm_range *r, size_t p)
{
	size_t q = p + 1;

	while (q < r->pages && page_is_mapped(r, q) && !page_starts(r, q))
		q++;
	return q;
}

static void mark_page(struct cuda_vm_range *r, size_t page, int mapped)
{
	uint64_t bit = UINT64_C(1) << (page % 64);

	if (mapped) {
		r->mapped[page / 64] |= bit;
		r->mapped_pages++;
	} else {
		r->mapped[page / 64] &= ~bit;
		r->mapped_pages--;
	}
}

/* Finds the range starting at |base|; with |unlink|, also takes it off
 * the device's list. Called with vm_lock held. */
static struct cuda_vm_range *find_range(struct cuda_device *dev,
					CUdeviceptr base, int unlink)
{
	return (struct cuda_vm_range *)vm_range_find(&dev->vm_ranges, base,
						     unlink);
}

static wafer_status vm_unavailable(struct cuda_device *dev, const char *what)
{
	dev->host->set_error("cuda: %s: cuda:%" PRIu32 " has no virtual "
			     "memory management",
			     what, dev->index);
	return WAFER_ERROR_NOT_SUPPORTED;
}

static wafer_status cuda_storage_vm_reserve(void *device, size_t size,
					    wafer_resource *out_range)
{
	struct cuda_device *dev = device;
	size_t g = dev->vm_granularity;
	struct cuda_vm_range *r;
	wafer_status status;
	CUdeviceptr base;
	CUresult result;

	*out_range = 0;
	if (!g)
		return vm_unavailable(dev, "vm_reserve");
	if (wafer_plugin_vm_reserve_check(dev->host, "cuda", size, g))
		return WAFER_ERROR_INVALID_ARGUMENT;
	status = cuda_enter(dev);
	if (status != WAFER_OK)
		return status;
	r = calloc(1, sizeof *r);
	if (r) {
		r->range.size = size;
		r->pages = size / g;
		r->mapped = calloc((r->pages + 63) / 64, sizeof *r->mapped);
		r->starts = calloc((r->pages + 63) / 64, sizeof *r->starts);
	}
	if (!r || !r->mapped || !r->starts) {
		if (r) {
			free(r->mapped);
			free(r->starts);
		}
		free(r);
		dev->host->set_error("cuda: vm_reserve: out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	result = dev->drv->cuMemAddressReserve(&base, size, g, 0, 0);
	if (result != CUDA_SUCCESS) {
		free(r->mapped);
		free(r->starts);
		free(r);
		return cuda_fail(dev->state, result,
				 "cuMemAddressReserve(%zu)", size);
	}

	pthread_mutex_lock(&dev->vm_lock);
	r->range.base = base;
	vm_range_add(&dev->vm_ranges, &r->range);
	pthread_mutex_unlock(&dev->vm_lock);

	*out_range = (wafer_resource)r->range.base;
	return WAFER_OK;
}

/* Unmaps the mappings that start in pages [first, end), each with one
 * cuMemUnmap (CUDA unmaps whole mappings only; callers never cut one).
 * Returns the first failure, after trying every mapping. Called with
 * vm_lock held. */
static CUresult unmap_pages(struct cuda_device *dev, struct cuda_vm_range *r,
			    size_t first, size_t end)
{
	size_t g = dev->vm_granularity;
	CUresult first_error = CUDA_SUCCESS;

	for (size_t p = first; p < end;) {
		if (!page_is_mapped(r, p)) {
			p++;
			continue;
		}
		size_t q = mapping_end(r, p);
		CUresult result =
			dev->drv->cuMemUnmap(r->range.base + p * g, (q - p) * g);
		if (result == CUDA_SUCCESS) {
			mark_start(r, p, 0);
			for (size_t i = p; i < q; i++)
				mark_page(r, i, 0);
		} else if (first_error == CUDA_SUCCESS) {
			first_error = result;
		}
		p = q;
	}
	return first_error;
}

/* Backs pages [p, p + n) with one physical allocation of their own. The
 * handle is released at once: the mapping keeps the memory, and
 * cuMemUnmap of the mapping frees it. */
static CUresult map_pages(struct cuda_device *dev, struct cuda_vm_range *r,
			  size_t p, size_t n)
{
	const struct cuda_driver *drv = dev->drv;
	size_t g = dev->vm_granularity;
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE,
			     .id = dev->ordinal},
	};
	CUmemGenericAllocationHandle handle;
	CUresult result;

	result = drv->cuMemCreate(&handle, n * g, &prop, 0);
	if (result == CUDA_ERROR_OUT_OF_MEMORY && dev->pool) {
		trim_pool(dev);
		result = drv->cuMemCreate(&handle, n * g, &prop, 0);
	}
	if (result != CUDA_SUCCESS)
		return result;
	result = drv->cuMemMap(r->range.base + p * g, n * g, 0, handle, 0);
	drv->cuMemRelease(handle);
	if (result == CUDA_SUCCESS) {
		mark_start(r, p, 1);
		for (size_t i = p; i < p + n; i++)
			mark_page(r, i, 1);
	}
	return result;
}

/* vm_map's and vm_unmap's opening: enters the context, takes vm_lock and
 * finds the range holding [offset, +size) in whole pages, every one of
 * them |mapped| (1) or not (0). On WAFER_OK vm_lock is held and *out_r,
 * [*first, *end) name the pages; on a failure it is not held. */
static wafer_status lock_pages(struct cuda_device *dev, wafer_resource range,
			       size_t offset, size_t size, int mapped,
			       const char *what, struct cuda_vm_range **out_r,
			       size_t *first, size_t *end)
{
	size_t g = dev->vm_granularity;
	struct vm_range *r;
	wafer_status status;

	if (!g)
		return vm_unavailable(dev, what);
	status = cuda_enter(dev);
	if (status != WAFER_OK)
		return status;
	status = vm_range_lock_pages(&dev->vm_lock, &dev->vm_ranges, dev->host,
				     "cuda", what, range, offset, size, g,
				     mapped, page_is_mapped, &r);
	if (status != WAFER_OK)
		return status;
	*out_r = (struct cuda_vm_range *)r;
	*first = offset / g;
	*end = *first + size / g;
	return WAFER_OK;
}

/* vm_map and vm_map_pieces (|what|): [offset, +size) as physical
 * allocations of |piece| bytes (0: one per page, or with vm_page = whole
 * one for the lot), then one cuMemSetAccess for all of them — it costs
 * about twice a cuMemCreate, and about the same for one page or many
 * (an H200: 22-46 us a call, under 0.5 us a piece when one call covers
 * forty). */
static wafer_status map_span(struct cuda_device *dev, wafer_resource range,
			     size_t offset, size_t size, size_t piece,
			     const char *what)
{
	size_t first, end, step_pages;
	struct cuda_vm_range *r;
	const char *step = "cuMemCreate/cuMemMap";
	wafer_status status;
	CUresult result = CUDA_SUCCESS;

	status = lock_pages(dev, range, offset, size, 0, what, &r, &first,
			    &end);
	if (status != WAFER_OK)
		return status;
	step_pages = piece ? piece / dev->vm_granularity
		     : dev->vm_whole ? end - first : 1;
	for (size_t p = first; p < end && result == CUDA_SUCCESS;
	     p += step_pages)
		result = map_pages(dev, r, p,
				   end - p < step_pages ? end - p : step_pages);
	if (result == CUDA_SUCCESS) {
		/* This GPU, then the peers that can reach it. */
		CUmemAccessDesc access[1 + CUDA_PEER_MAX];
		for (int i = 0; i <= dev->peer_count; i++)
			access[i] = (CUmemAccessDesc){
				.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE,
					     .id = i ? dev->peers[i - 1]
						     : dev->ordinal},
				.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
			};
		step = "cuMemSetAccess";
		result = dev->drv->cuMemSetAccess(r->range.base + offset, size,
						  access,
						  1 + (size_t)dev->peer_count);
	}
	if (result != CUDA_SUCCESS) {
		/* Nothing of this call stays mapped. */
		unmap_pages(dev, r, first, end);
		status = cuda_fail(dev->state, result,
				   "%s: %s ([%zu, +%zu) of 0x%" PRIx64 ")",
				   what, step, offset, size, range);
	}
	pthread_mutex_unlock(&dev->vm_lock);
	return status;
}

static wafer_status cuda_storage_vm_map(void *device, wafer_resource range,
					size_t offset, size_t size)
{
	return map_span(device, range, offset, size, 0, "vm_map");
}

static wafer_status cuda_storage_vm_map_pieces(void *device,
					       wafer_resource range,
					       size_t offset, size_t size,
					       size_t piece)
{
	struct cuda_device *dev = device;

	if (dev->vm_granularity &&
	    (piece == 0 || piece % dev->vm_granularity)) {
		dev->host->set_error("cuda: vm_map_pieces: piece %zu is not a "
				     "multiple of the granularity %zu",
				     piece, dev->vm_granularity);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	return map_span(device, range, offset, size, piece, "vm_map_pieces");
}

static wafer_status cuda_storage_vm_unmap(void *device, wafer_resource range,
					  size_t offset, size_t size)
{
	struct cuda_device *dev = device;
	size_t first, end;
	struct cuda_vm_range *r;
	wafer_status status;
	CUresult result;

	status = lock_pages(dev, range, offset, size, 1, "vm_unmap", &r, &first,
			    &end);
	if (status != WAFER_OK)
		return status;
	/* Whole mappings only: [first, end) starts where one starts and
	 * ends where one ends (always so with a mapping per page). */
	size_t cut = !page_starts(r, first) ? first
		     : end < r->pages && page_is_mapped(r, end) &&
				     !page_starts(r, end)
			     ? end : SIZE_MAX;
	if (cut != SIZE_MAX) {
		dev->host->set_error(
			"cuda: vm_unmap: [%zu, +%zu) of range 0x%" PRIx64
			" cuts the physical allocation mapped across offset "
			"%zu: with [cuda] vm_page = whole, vm_unmap takes "
			"whole earlier vm_map calls only ([memory.pool] "
			"unmap = whole keeps to that)",
			offset, size, range, cut * dev->vm_granularity);
		pthread_mutex_unlock(&dev->vm_lock);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	result = unmap_pages(dev, r, first, end);
	if (result != CUDA_SUCCESS)
		status = cuda_fail(dev->state, result,
				   "vm_unmap: cuMemUnmap ([%zu, +%zu) of "
				   "0x%" PRIx64 ")",
				   offset, size, range);
	pthread_mutex_unlock(&dev->vm_lock);
	return status;
}

/* Unmaps what is mapped and frees the address range. Called with the
 * range off the device's list. */
static void release_range(struct cuda_device *dev, struct cuda_vm_range *r)
{
	char text[256];
	CUresult result;

	result = unmap_pages(dev, r, 0, r->pages);
	if (result == CUDA_SUCCESS)
		result = dev->drv->cuMemAddressFree(r->range.base,
						    r->range.size);
	if (result != CUDA_SUCCESS)
		dev->host->log(dev->host, WAFER_LOG_WARN,
			       "vm_release(0x%llx): %s",
			       (unsigned long long)r->range.base,
			       cuda_result_text(dev->drv, result, text,
						sizeof text));
	free(r->mapped);
	free(r->starts);
	free(r);
}

static void cuda_storage_vm_release(void *device, wafer_resource range)
{
	struct cuda_device *dev = device;
	struct cuda_vm_range *r;

	if (cuda_enter(dev) != WAFER_OK)
		return;
	pthread_mutex_lock(&dev->vm_lock);
	r = find_range(dev, cuda_ptr(range), 1);
	if (r)
		release_range(dev, r);
	pthread_mutex_unlock(&dev->vm_lock);
	if (!r)
		dev->host->log(dev->host, WAFER_LOG_WARN,
			       "vm_release: 0x%" PRIx64
			       " is not a reserved range; ignored",
			       range);
}

/*===----------------------------------------------------------------------===
 * Figures
 *===----------------------------------------------------------------------===*/

/* The default pool's own high-water mark: what alloc_async really held,
 * cached memory included (the core only sees live and pending bytes);
 * and whether vm_unmap takes whole vm_map calls only (vm_page = whole). */
static wafer_status cuda_storage_figure(void *device, int what,
					uint64_t *value)
{
	struct cuda_device *dev = device;
	cuuint64_t high = 0;
	wafer_status status;
	CUresult result;

	if (what == WAFER_STORAGE_FIGURE_WHOLE_UNMAPS) {
		*value = dev->vm_whole;
		return WAFER_OK;
	}
	if (what != WAFER_STORAGE_FIGURE_ASYNC_RESERVED_HIGH || !dev->pool) {
		dev->host->set_error("cuda: figure %d: not kept on cuda:%" PRIu32,
				     what, dev->index);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	status = cuda_enter(dev);
	if (status != WAFER_OK)
		return status;
	result = dev->drv->cuMemPoolGetAttribute(
		dev->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &high);
	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result,
				 "cuMemPoolGetAttribute(RESERVED_MEM_HIGH)");
	*value = high;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Interop
 *===----------------------------------------------------------------------===*/

static wafer_status cuda_storage_native(void *device, wafer_resource resource,
					size_t offset,
					struct wafer_native_buffer *out)
{
	struct cuda_device *dev = device;
	wafer_status status = WAFER_OK;

	/* A vm range answers only for a mapped page; other resources are
	 * plain pointers. */
	pthread_mutex_lock(&dev->vm_lock);
	struct cuda_vm_range *r = find_range(dev, cuda_ptr(resource), 0);
	if (r)
		status = wafer_plugin_vm_native_check(
			dev->host, "cuda", resource, r->range.size, offset,
			dev->vm_granularity, page_is_mapped, r);
	pthread_mutex_unlock(&dev->vm_lock);
	if (status != WAFER_OK)
		return status;
	out->kind = WAFER_NATIVE_CUDA_POINTER;
	out->address = (uint64_t)(cuda_ptr(resource) + offset);
	out->object = NULL;
	out->offset = 0;
	out->context = dev->ctx;
	out->device_ordinal = dev->ordinal;
	return WAFER_OK;
}

/* Whether the byte at |p| is device memory of |dev| usable in its primary
 * context: the driver's memory type, device ordinal and context (NULL for
 * virtual memory and the stream-ordered pools, which belong to the device
 * rather than to a context). |which| names the byte in the error. */
static wafer_status check_pointer(struct cuda_device *dev, CUdeviceptr p,
				  const char *which)
{
	const struct cuda_driver *drv = dev->drv;
	unsigned type = 0;
	int ordinal = -1;
	CUcontext ctx = NULL;
	CUresult result;

	result = drv->cuPointerGetAttribute(&type,
					    CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
	if (result == CUDA_SUCCESS && type == CU_MEMORYTYPE_DEVICE)
		result = drv->cuPointerGetAttribute(
			&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
	/* Memory no context allocated (virtual memory, a pool's) may have
	 * no context to report: only one that is there is compared. */
	if (result == CUDA_SUCCESS && type == CU_MEMORYTYPE_DEVICE &&
	    drv->cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT,
				       p) != CUDA_SUCCESS)
		ctx = NULL;
	if (result == CUDA_ERROR_INVALID_VALUE) {
		dev->host->set_error("cuda: import: %s 0x%llx is not memory "
				     "the CUDA driver knows",
				     which, (unsigned long long)p);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result,
				 "import: cuPointerGetAttribute(0x%llx)",
				 (unsigned long long)p);
	if (type != CU_MEMORYTYPE_DEVICE) {
		dev->host->set_error("cuda: import: %s 0x%llx is host memory "
				     "(CUmemorytype %u), not device memory of "
				     "cuda:%" PRIu32,
				     which, (unsigned long long)p, type,
				     dev->index);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (ordinal != dev->ordinal) {
		dev->host->set_error("cuda: import: %s 0x%llx is memory of CUDA "
				     "device %d, not of cuda:%" PRIu32
				     " (CUDA device %d)",
				     which, (unsigned long long)p, ordinal,
				     dev->index, dev->ordinal);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (ctx && ctx != dev->ctx) {
		dev->host->set_error("cuda: import: %s 0x%llx belongs to "
				     "context %p, not cuda:%" PRIu32
				     "'s primary context %p",
				     which, (unsigned long long)p, (void *)ctx,
				     dev->index, (void *)dev->ctx);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	return WAFER_OK;
}

static wafer_status cuda_storage_import(void *device,
					const struct wafer_native_buffer *buffer,
					wafer_resource *out_resource)
{
	struct cuda_device *dev = device;
	wafer_status status;

	status = wafer_plugin_import_checks(dev->host, "cuda", buffer,
					    WAFER_NATIVE_CUDA_POINTER,
					    "cuda-pointer", dev->ordinal,
					    out_resource);
	if (status != WAFER_OK)
		return status;
	if (buffer->context && buffer->context != dev->ctx) {
		dev->host->set_error("cuda: import: context %p is not "
				     "cuda:%" PRIu32 "'s primary context %p",
				     buffer->context, dev->index,
				     (void *)dev->ctx);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	status = cuda_enter(dev);
	if (status != WAFER_OK)
		return status;
	/* Both ends: a size running past the allocation into another
	 * device's memory, or into none, is refused too. */
	CUdeviceptr first = (CUdeviceptr)buffer->address;
	status = check_pointer(dev, first, "address");
	if (status == WAFER_OK)
		status = check_pointer(dev, first + buffer->size - 1,
				       "last byte");
	if (status != WAFER_OK)
		return status;
	*out_resource = (wafer_resource)first;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The table
 *===----------------------------------------------------------------------===*/

const struct wafer_storage_ops cuda_storage_ops = {
	WAFER_PLUGIN_STORAGE_OPS(cuda),
	.alloc_async = cuda_storage_alloc_async,
	.free_async = cuda_storage_free_async,
	WAFER_PLUGIN_VM_OPS(cuda),
	.figure = cuda_storage_figure,
	WAFER_PLUGIN_POINTER_INTEROP_STORAGE_OPS(cuda),
	.copy_peer = cuda_storage_copy_peer,
	WAFER_PLUGIN_HOST_REGISTER_OPS(cuda),
	.vm_map_pieces = cuda_storage_vm_map_pieces,
	/* host_alloc/host_free: retired in ABI 1.1 (NULL); staging.c keeps
	 * its own pinned buffers. */
};

void cuda_storage_open(struct cuda_device *device)
{
	const struct cuda_state *st = device->state;

	pthread_mutex_init(&device->vm_lock, NULL);
	device->vm_ranges = NULL;
	device->peer_count = 0;
	for (uint32_t i = 0; i < st->device_count; i++) {
		CUdevice peer;
		int can = 0;

		if (st->ordinals[i] == device->ordinal ||
		    device->peer_count == CUDA_PEER_MAX ||
		    device->drv->cuDeviceGet(&peer, st->ordinals[i]) !=
			    CUDA_SUCCESS ||
		    device->drv->cuDeviceCanAccessPeer(&can, peer,
						       device->cu) !=
			    CUDA_SUCCESS ||
		    !can)
			continue;
		device->peers[device->peer_count++] = st->ordinals[i];
	}
}

void cuda_storage_close(struct cuda_device *device)
{
	const struct wafer_host_services *host = device->host;

	/* No lock: the core closes a device only when nothing uses it. */
	while (device->vm_ranges) {
		struct cuda_vm_range *r =
			(struct cuda_vm_range *)device->vm_ranges;
		host->log(host, WAFER_LOG_WARN,
			  "device closed with %zu bytes of address space still "
			  "reserved at 0x%llx (%zu pages mapped); released",
			  r->range.size, (unsigned long long)r->range.base,
			  r->mapped_pages);
		device->vm_ranges = r->range.next;
		release_range(device, r);
	}
	pthread_mutex_destroy(&device->vm_lock);
}
