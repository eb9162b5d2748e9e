/* wafer — SPDX-License-Identifier: MIT
 *
 * storage.h: the memory manager's view of a plugin's storage. It wraps the
 * plugin's wafer_storage_ops for one device and queue and counts what
 * every strategy is judged by: storage calls (allocate, free, map, unmap)
 * and bytes reserved from the device, with their peak. Strategies call
 * these wrappers, never the plugin table directly, so the statistics are
 * the same for all of them. wafer-replay gives it an accounting-only
 * plugin table ("null" storage) instead of a real device.
 *
 * Not thread-safe: a storage belongs to one memory manager, which the
 * client's channel serialises. */
#ifndef WAFER_CORE_MEMORY_STORAGE_H
#define WAFER_CORE_MEMORY_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <wafer/plugin.h>

#include "lib/memory/limit.h"

struct wafer__storage_counters {
	uint64_t allocs;   /* alloc + alloc_async + vm_reserve */
	uint64_t frees;    /* free + free_async + vm_release */
	uint64_t maps;     /* vm_map */
	uint64_t unmaps;   /* vm_unmap */
	uint64_t bytes_reserved; /* allocated + mapped, now */
	uint64_t peak_reserved;
	/* Calls per plugin entry (the sums above add them up), and calls
	 * that returned an error (a failed alloc, map, unmap, free_async):
	 * wafer_memory_usage's calls_* fields, wafer-replay's calls=. */
	uint64_t calls_alloc, calls_free;
	uint64_t calls_alloc_async, calls_free_async;
	uint64_t calls_vm_reserve, calls_vm_release;
	uint64_t calls_vm_map, calls_vm_unmap;
	uint64_t failures;
	/* Bytes vm_map and vm_unmap succeeded on, summed over time: a
	 * driver's cost goes with the pages (cuda makes several calls per
	 * page), not with the calls. wafer-replay's pages=. */
	uint64_t bytes_mapped, bytes_unmapped;
};

struct wafer__storage {
	const struct wafer_storage_ops *ops;
	void *device;
	/* The client's queue: stream-ordered ops and copies go on it. */
	void *queue;
	/* From wafer_device_info: slice offsets are multiples of alignment;
	 * vm sizes and offsets of vm_granularity (0: no virtual memory). */
	size_t alignment;
	size_t vm_granularity;
	/* Called before memory goes back to the plugin (free, vm_unmap,
	 * vm_release) so that no queued kernel still reads it; the server
	 * makes it a queue sync when work was issued since the last one.
	 * NULL: nothing to wait for (null storage). */
	wafer_status (*quiesce)(void *quiesce_data);
	void *quiesce_data;
	/* Waits for every queued operation on the queue (the stream
	 * strategy's reap step). NULL: nothing queued. */
	wafer_status (*sync)(void *quiesce_data);
	/* The device's `[memory] limit` and its counter of bytes reserved by
	 * all its clients (limit.h): charged before alloc, alloc_async and
	 * vm_map, credited at free, free_async, vm_unmap and vm_release.
	 * NULL: neither (null and fake storage). */
	struct wafer__memory_limit *limit;
	struct wafer__storage_counters counters;
};

/* The plugin's vm_unmap takes only whole earlier vm_map calls
 * (WAFER_STORAGE_FIGURE_WHOLE_UNMAPS). */
bool wafer__storage_unmaps_whole(const struct wafer__storage *s);

static inline bool wafer__storage_has_vm(const struct wafer__storage *s)
{
	return s->vm_granularity && s->ops->vm_reserve && s->ops->vm_release &&
	       s->ops->vm_map && s->ops->vm_unmap;
}

static inline bool wafer__storage_has_async(const struct wafer__storage *s)
{
	return s->ops->alloc_async && s->ops->free_async;
}

/* Each wrapper calls the plugin entry, counts the call, and on success
 * updates bytes_reserved. Frees and unmaps take the size that was
 * allocated or mapped, and quiesce first. */
wafer_status wafer__storage_alloc(struct wafer__storage *s, size_t size,
				  wafer_resource *out_resource);
void wafer__storage_free(struct wafer__storage *s, wafer_resource resource,
			 size_t size);
wafer_status wafer__storage_alloc_async(struct wafer__storage *s, size_t size,
					wafer_resource *out_resource);
/* Stream-ordered free: no quiesce (the queue orders it). */
wafer_status wafer__storage_free_async(struct wafer__storage *s,
				       wafer_resource resource, size_t size);
wafer_status wafer__storage_vm_reserve(struct wafer__storage *s, size_t size,
				       wafer_resource *out_range);
/* |mapped_bytes|: how much of the range is still mapped (released with
 * it). */
void wafer__storage_vm_release(struct wafer__storage *s, wafer_resource range,
			       size_t mapped_bytes);
wafer_status wafer__storage_vm_map(struct wafer__storage *s, wafer_resource range,
				   size_t offset, size_t size);
wafer_status wafer__storage_vm_unmap(struct wafer__storage *s,
				     wafer_resource range, size_t offset,
				     size_t size);
/* Maps [offset, +size) as vm_map calls of |piece| bytes each would (the
 * last one shorter), each unmappable on its own: in one call where the
 * plugin has vm_map_pieces, else one vm_map per piece. On a failure
 * nothing of it stays mapped. */
wafer_status wafer__storage_vm_map_pieces(struct wafer__storage *s,
					  wafer_resource range, size_t offset,
					  size_t size, size_t piece);

/* Whether |bytes| more fit under the device's limit now: WAFER_OK, or
 * the error vm_map would give (naming the limit). Books nothing, so a
 * strategy about to map in several calls can fail before the first
 * instead of mapping and unmapping; another client may still take the
 * room in between (the calls then fail as usual). */
wafer_status wafer__storage_limit_check(struct wafer__storage *s, size_t bytes);

/* Rounds |size| up to a multiple of |align| (a power of two). */
static inline size_t wafer__align_up(size_t size, size_t align)
{
	return (size + align - 1) & ~(align - 1);
}

#endif
