/* wafer — SPDX-License-Identifier: MIT
 * null_storage.c: accounting-only storage for wafer-replay
 * (null_storage.h). */
#include "build-config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/log.h"
#include "lib/memory/common.h"
#include "lib/memory/null_storage.h"
#include "lib/memory/u64map.h"

struct null_range {
	size_t size;
	size_t pages;
	uint8_t *mapped; /* one bit per page */
	uint8_t *starts; /* whole_maps: one bit per page that starts a map */
	size_t mapped_bytes;
};

struct null_device {
	struct wafer_storage_ops ops;
	size_t alignment;
	size_t granularity;
	uint64_t next_address;
	struct wafer__u64map allocs; /* resource -> size */
	struct wafer__u64map ranges; /* resource -> struct null_range * */
	bool whole_maps;
	uint64_t bytes;             /* allocated + mapped */
	uint64_t addresses;         /* allocated + reserved: at most
				     * ADDRESS_SPACE */
	/* Physical allocations made by vm_map and given back by vm_unmap:
	 * one per page, or with whole_maps one per vm_map call. */
	uint64_t phys_maps, phys_unmaps;
	uint64_t violations;
	char first_violation[256];
};

/* The addresses the null storage hands out, allocations and vm ranges
 * together: 128 TiB, the user address space of an x86-64 process (a
 * device's own is no larger). The state
 * kept per range (a bit per page) grows with what is reserved, so a
 * trace of absurd sizes fails at this bound instead of exhausting the
 * host. */
#define ADDRESS_SPACE (UINT64_C(1) << 47)

static void violation(struct null_device *d, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
static void violation(struct null_device *d, const char *format, ...)
{
	if (d->violations++ == 0) {
		va_list ap;
		va_start(ap, format);
		vsnprintf(d->first_violation, sizeof d->first_violation, format,
			  ap);
		va_end(ap);
		wafer__log_error("null-storage", "%s", d->first_violation);
	}
}

/* Removes |id| from |map| into |*out_value|; an unknown one is a
 * violation: "<what> 0x<id>". */
static bool take(struct null_device *d, struct wafer__u64map *map,
		 wafer_resource id, const char *what, uint64_t *out_value)
{
	if (wafer__u64map_remove(map, id, out_value))
		return true;
	violation(d, "%s 0x%llx", what, (unsigned long long)id);
	return false;
}

/* Made-up addresses: every resource starts on a fresh, aligned address
 * and none is ever handed out twice, so a stale resource is noticed. */
static wafer_resource take_address(struct null_device *d, size_t size,
				   size_t align)
{
	uint64_t base = wafer__align_up(d->next_address, align);
	d->next_address = base + wafer__align_up(size, align) + align;
	return base;
}

/* Counts |size| more bytes of addresses, or fails naming |what| when
 * they pass ADDRESS_SPACE. */
static bool addresses_take(struct null_device *d, const char *what,
			   size_t size)
{
	if (size > ADDRESS_SPACE - d->addresses) {
		wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
			    "null storage: %s of %zu bytes: past its address "
			    "space of %" PRIu64 " bytes (%" PRIu64 " in use)",
			    what, size, ADDRESS_SPACE, d->addresses);
		return false;
	}
	d->addresses += size;
	return true;
}

static wafer_status null_alloc(void *device, size_t size,
			       wafer_resource *out_resource)
{
	struct null_device *d = device;
	*out_resource = 0;
	if (size == 0) {
		violation(d, "alloc of 0 bytes");
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "null storage: alloc of 0 bytes");
	}
	if (!addresses_take(d, "alloc", size))
		return WAFER_ERROR_OUT_OF_MEMORY;
	wafer_resource r = take_address(d, size, d->alignment);
	if (!wafer__u64map_put(&d->allocs, r, size)) {
		d->addresses -= size;
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "null storage: out of host memory");
	}
	d->bytes += size;
	*out_resource = r;
	return WAFER_OK;
}

static void null_free(void *device, wafer_resource resource)
{
	struct null_device *d = device;
	uint64_t size;
	if (take(d, &d->allocs, resource, "free of unknown resource", &size)) {
		d->bytes -= size;
		d->addresses -= size;
	}
}

static wafer_status null_alloc_async(void *device, void *queue, size_t size,
				     wafer_resource *out_resource)
{
	return null_alloc(device, size, out_resource);
}

static wafer_status null_free_async(void *device, void *queue,
				    wafer_resource resource)
{
	null_free(device, resource);
	return WAFER_OK;
}

static wafer_status null_no_copy(void)
{
	return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
			   "the null storage holds no bytes to copy");
}

static wafer_status null_copy_in(void *device, void *queue, wafer_resource dst,
				 size_t dst_offset, const void *src, size_t size)
{
	return null_no_copy();
}

static wafer_status null_copy_out(void *device, void *queue,
				  wafer_resource src, size_t src_offset,
				  void *dst, size_t size)
{
	return null_no_copy();
}

static wafer_status null_copy(void *device, void *queue, wafer_resource dst,
			      size_t dst_offset, wafer_resource src,
			      size_t src_offset, size_t size)
{
	return null_no_copy();
}

static wafer_status null_vm_reserve(void *device, size_t size,
				    wafer_resource *out_range)
{
	struct null_device *d = device;
	*out_range = 0;
	if (size == 0 || size % d->granularity) {
		violation(d, "vm_reserve of %zu bytes, not a positive multiple "
			  "of the granularity %zu", size, d->granularity);
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "null storage: vm_reserve(%zu) not a "
				   "multiple of %zu", size, d->granularity);
	}
	if (!addresses_take(d, "vm_reserve", size))
		return WAFER_ERROR_OUT_OF_MEMORY;
	struct null_range *range = calloc(1, sizeof *range);
	size_t pages = size / d->granularity;
	uint8_t *bits = range ? calloc((pages + 7) / 8, 1) : NULL;
	uint8_t *starts = bits ? calloc((pages + 7) / 8, 1) : NULL;
	if (!starts) {
		free(bits);
		free(range);
		d->addresses -= size;
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "null storage: out of host memory");
	}
	range->size = size;
	range->pages = pages;
	range->mapped = bits;
	range->starts = starts;
	wafer_resource r = take_address(d, size, d->granularity);
	if (!wafer__u64map_put(&d->ranges, r, (uint64_t)(uintptr_t)range)) {
		free(starts);
		free(bits);
		free(range);
		d->addresses -= size;
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "null storage: out of host memory");
	}
	*out_range = r;
	return WAFER_OK;
}

static struct null_range *find_range(struct null_device *d, wafer_resource r)
{
	uint64_t value;
	if (!wafer__u64map_get(&d->ranges, r, &value))
		return NULL;
	return (struct null_range *)(uintptr_t)value;
}

static void null_vm_release(void *device, wafer_resource range_id)
{
	struct null_device *d = device;
	uint64_t value;
	if (!take(d, &d->ranges, range_id, "vm_release of unknown range",
		  &value))
		return;
	struct null_range *range = (struct null_range *)(uintptr_t)value;
	d->bytes -= range->mapped_bytes;
	d->addresses -= range->size;
	free(range->mapped);
	free(range->starts);
	free(range);
}

static bool bit(const uint8_t *bits, size_t page)
{
	return bits[page / 8] & (1u << (page % 8));
}

/* Checks a map or unmap request; every page of it must be in state
 * |want_mapped| before the call. */
static bool check_pages(struct null_device *d, const char *what,
			struct null_range *range, wafer_resource id,
			size_t offset, size_t size, bool want_mapped)
{
	if (!range) {
		violation(d, "%s on unknown range 0x%llx", what,
			  (unsigned long long)id);
		return false;
	}
	if (size == 0 || offset % d->granularity || size % d->granularity ||
	    offset > range->size || size > range->size - offset) {
		violation(d, "%s [%zu, +%zu) of a range of %zu: not "
			  "granularity-aligned or out of the range",
			  what, offset, size, range->size);
		return false;
	}
	size_t first = offset / d->granularity;
	size_t end = (offset + size) / d->granularity;
	for (size_t p = first; p < end; p++) {
		bool mapped = bit(range->mapped, p);
		if (mapped != want_mapped) {
			violation(d, "%s [%zu, +%zu): page %zu is %s", what,
				  offset, size, p,
				  mapped ? "already mapped" : "not mapped");
			return false;
		}
	}
	/* whole_maps: an unmap covers whole earlier maps, as cuMemUnmap
	 * does: it starts where one started and ends where one ends. */
	if (d->whole_maps && want_mapped &&
	    (!bit(range->starts, first) ||
	     (end < range->pages && bit(range->mapped, end) &&
	      !bit(range->starts, end)))) {
		violation(d, "%s [%zu, +%zu) of range 0x%llx: cuts a mapping "
			  "(whole maps: an unmap covers whole earlier "
			  "vm_map calls)",
			  what, offset, size, (unsigned long long)id);
		return false;
	}
	return true;
}

static void set_pages(struct null_device *d, struct null_range *range,
		      size_t offset, size_t size, bool mapped)
{
	for (size_t p = offset / d->granularity,
		    end = (offset + size) / d->granularity; p < end; p++) {
		if (mapped)
			range->mapped[p / 8] |= (uint8_t)(1u << (p % 8));
		else
			range->mapped[p / 8] &= (uint8_t)~(1u << (p % 8));
	}
}

/* vm_map (|map|; in pieces of |piece| bytes, vm_map_pieces, or one
 * piece) or vm_unmap: the pages must all be unmapped, or all mapped,
 * before. */
static wafer_status map_pages(void *device, wafer_resource id, size_t offset,
			      size_t size, size_t piece, bool map)
{
	struct null_device *d = device;
	struct null_range *range = find_range(d, id);
	if (!check_pages(d, map ? "vm_map" : "vm_unmap", range, id, offset,
			 size, !map))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "null storage: %s", d->first_violation);
	size_t first = offset / d->granularity;
	size_t end = (offset + size) / d->granularity;
	uint64_t phys = end - first;
	if (d->whole_maps && map) {
		size_t step = piece / d->granularity;
		phys = 0;
		for (size_t p = first; p < end; p += step, phys++)
			range->starts[p / 8] |= (uint8_t)(1u << (p % 8));
	} else if (d->whole_maps) {
		phys = 0;
		for (size_t p = first; p < end; p++)
			if (bit(range->starts, p)) {
				phys++;
				range->starts[p / 8] &=
					(uint8_t)~(1u << (p % 8));
			}
	}
	set_pages(d, range, offset, size, map);
	if (map) {
		d->phys_maps += phys;
		range->mapped_bytes += size;
		d->bytes += size;
	} else {
		d->phys_unmaps += phys;
		range->mapped_bytes -= size;
		d->bytes -= size;
	}
	return WAFER_OK;
}

static wafer_status null_vm_map(void *device, wafer_resource id,
				size_t offset, size_t size)
{
	return map_pages(device, id, offset, size, size, true);
}

static wafer_status null_vm_map_pieces(void *device, wafer_resource id,
				       size_t offset, size_t size, size_t piece)
{
	struct null_device *d = device;
	if (piece == 0 || piece % d->granularity)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "null storage: vm_map_pieces: piece %zu is "
				   "not a multiple of the granularity %zu",
				   piece, d->granularity);
	return map_pages(device, id, offset, size, piece, true);
}

static wafer_status null_vm_unmap(void *device, wafer_resource id,
				  size_t offset, size_t size)
{
	return map_pages(device, id, offset, size, size, false);
}

static bool power_of_two(size_t x)
{
	return x && !(x & (x - 1));
}

wafer_status
wafer__null_storage_init(struct wafer__storage *out,
			 const struct wafer__null_storage_options *options)
{
	struct wafer__null_storage_options defaults = {0};
	if (!options)
		options = &defaults;
	size_t alignment = options->alignment ? options->alignment : 256;
	size_t granularity = options->vm_granularity ? options->vm_granularity
						     : (size_t)2 << 20;
	memset(out, 0, sizeof *out);
	if (!power_of_two(alignment) || alignment < 16)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "null storage: alignment %zu is not a power "
				   "of two >= 16", alignment);
	if (!options->no_vm &&
	    (!power_of_two(granularity) || granularity % alignment))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "null storage: granularity %zu is not a "
				   "power of two multiple of the alignment %zu",
				   granularity, alignment);
	struct null_device *d =
		wafer__memory_host_calloc(sizeof *d, "null storage");
	if (!d)
		return WAFER_ERROR_OUT_OF_MEMORY;
	d->alignment = alignment;
	d->granularity = granularity;
	d->whole_maps = options->whole_maps;
	d->next_address = UINT64_C(1) << 32;
	d->ops = (struct wafer_storage_ops){
		.struct_size = sizeof(struct wafer_storage_ops),
		.alloc = null_alloc,
		.free = null_free,
		.copy_in = null_copy_in,
		.copy_out = null_copy_out,
		.copy = null_copy,
	};
	if (!options->no_async) {
		d->ops.alloc_async = null_alloc_async;
		d->ops.free_async = null_free_async;
	}
	if (!options->no_vm) {
		d->ops.vm_reserve = null_vm_reserve;
		d->ops.vm_release = null_vm_release;
		d->ops.vm_map = null_vm_map;
		d->ops.vm_unmap = null_vm_unmap;
		d->ops.vm_map_pieces = null_vm_map_pieces;
	}
	out->ops = &d->ops;
	out->device = d;
	out->alignment = alignment;
	out->vm_granularity = options->no_vm ? 0 : granularity;
	return WAFER_OK;
}

void wafer__null_storage_fini(struct wafer__storage *storage)
{
	struct null_device *d = storage->device;
	if (!d)
		return;
	for (size_t i = 0; i < d->ranges.capacity; i++) {
		if (!d->ranges.used[i])
			continue;
		struct null_range *range =
			(struct null_range *)(uintptr_t)d->ranges.values[i];
		free(range->mapped);
		free(range->starts);
		free(range);
	}
	wafer__u64map_fini(&d->ranges);
	wafer__u64map_fini(&d->allocs);
	free(d);
	storage->device = NULL;
	storage->ops = NULL;
}

uint64_t wafer__null_storage_violations(const struct wafer__storage *storage,
					const char **out_first)
{
	const struct null_device *d = storage->device;
	if (out_first)
		*out_first = d->first_violation;
	return d->violations;
}

size_t wafer__null_storage_live(const struct wafer__storage *storage)
{
	const struct null_device *d = storage->device;
	return d->allocs.count + d->ranges.count;
}

uint64_t wafer__null_storage_bytes(const struct wafer__storage *storage)
{
	const struct null_device *d = storage->device;
	return d->bytes;
}

void wafer__null_storage_phys(const struct wafer__storage *storage,
			      uint64_t *out_maps, uint64_t *out_unmaps)
{
	const struct null_device *d = storage->device;
	*out_maps = d->phys_maps;
	*out_unmaps = d->phys_unmaps;
}
