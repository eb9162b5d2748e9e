/* wafer — SPDX-License-Identifier: MIT
 * storage.c: counted wrappers around a plugin's storage ops (storage.h). */
#include "build-config.h"

#include "lib/error.h"
#include "lib/log.h"
#include "lib/memory/storage.h"

static void add_reserved(struct wafer__storage *s, size_t bytes)
{
	struct wafer__storage_counters *c = &s->counters;
	c->bytes_reserved += bytes;
	if (c->bytes_reserved > c->peak_reserved)
		c->peak_reserved = c->bytes_reserved;
}

static void sub_reserved(struct wafer__storage *s, size_t bytes)
{
	s->counters.bytes_reserved -= bytes;
	if (s->limit)
		wafer__memory_limit_credit(s->limit, bytes);
}

/* Before |bytes| more are asked of the plugin: the device's limit. */
static wafer_status charge(struct wafer__storage *s, size_t bytes)
{
	if (!s->limit)
		return WAFER_OK;
	return wafer__memory_limit_charge(s->limit, bytes,
					  s->counters.bytes_reserved);
}

/* The plugin refused what charge() booked: give it back. */
static void uncharge(struct wafer__storage *s, wafer_status status,
		     size_t bytes)
{
	if (status != WAFER_OK && s->limit)
		wafer__memory_limit_credit(s->limit, bytes);
}

wafer_status wafer__storage_limit_check(struct wafer__storage *s, size_t bytes)
{
	wafer_status status = charge(s, bytes);
	if (status == WAFER_OK && s->limit)
		wafer__memory_limit_credit(s->limit, bytes);
	return status;
}

/* Counts an allocation (alloc, alloc_async, vm_reserve) that returned
 * |status| in the sum and in |*kind|; on success books |bytes| as
 * reserved, on failure clears |*out_resource|. */
static wafer_status counted_alloc(struct wafer__storage *s, uint64_t *kind,
				  wafer_status status, size_t bytes,
				  wafer_resource *out_resource)
{
	s->counters.allocs++;
	(*kind)++;
	if (status == WAFER_OK) {
		add_reserved(s, bytes);
	} else {
		s->counters.failures++;
		*out_resource = 0;
	}
	return status;
}

/* Memory about to go back to the plugin must not be read by queued work. */
static void quiesce(struct wafer__storage *s)
{
	if (!s->quiesce)
		return;
	wafer_status status = s->quiesce(s->quiesce_data);
	if (status != WAFER_OK)
		wafer__log_warn("memory", "sync before free failed: %s",
				wafer__error_detail());
}

/* Gives memory back through |op| (free or vm_release) after the queue is
 * quiet, and counts it: |bytes| were reserved. */
static void counted_free(struct wafer__storage *s,
			 void (*op)(void *device, wafer_resource resource),
			 uint64_t *kind, wafer_resource resource, size_t bytes)
{
	quiesce(s);
	op(s->device, resource);
	s->counters.frees++;
	(*kind)++;
	sub_reserved(s, bytes);
}

wafer_status wafer__storage_alloc(struct wafer__storage *s, size_t size,
				  wafer_resource *out_resource)
{
	wafer_status status = charge(s, size);
	if (status != WAFER_OK) {
		*out_resource = 0;
		return status;
	}
	status = s->ops->alloc(s->device, size, out_resource);
	uncharge(s, status, size);
	return counted_alloc(s, &s->counters.calls_alloc, status, size,
			     out_resource);
}

void wafer__storage_free(struct wafer__storage *s, wafer_resource resource,
			 size_t size)
{
	counted_free(s, s->ops->free, &s->counters.calls_free, resource, size);
}

wafer_status wafer__storage_alloc_async(struct wafer__storage *s, size_t size,
					wafer_resource *out_resource)
{
	if (!wafer__storage_has_async(s))
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "the plugin offers no stream-ordered allocation");
	wafer_status status = charge(s, size);
	if (status != WAFER_OK) {
		*out_resource = 0;
		return status;
	}
	status = s->ops->alloc_async(s->device, s->queue, size, out_resource);
	uncharge(s, status, size);
	return counted_alloc(s, &s->counters.calls_alloc_async, status, size,
			     out_resource);
}

wafer_status wafer__storage_free_async(struct wafer__storage *s,
				       wafer_resource resource, size_t size)
{
	wafer_status status = s->ops->free_async(s->device, s->queue, resource);
	s->counters.frees++;
	s->counters.calls_free_async++;
	if (status == WAFER_OK)
		sub_reserved(s, size);
	else
		s->counters.failures++;
	return status;
}

bool wafer__storage_unmaps_whole(const struct wafer__storage *s)
{
	uint64_t whole = 0;
	return s->ops->figure &&
	       s->ops->figure(s->device, WAFER_STORAGE_FIGURE_WHOLE_UNMAPS,
			      &whole) == WAFER_OK &&
	       whole;
}

wafer_status wafer__storage_vm_reserve(struct wafer__storage *s, size_t size,
				       wafer_resource *out_range)
{
	if (!wafer__storage_has_vm(s))
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "the plugin offers no virtual memory");
	/* An address range: no bytes until pages are mapped. */
	return counted_alloc(s, &s->counters.calls_vm_reserve,
			     s->ops->vm_reserve(s->device, size, out_range), 0,
			     out_range);
}

void wafer__storage_vm_release(struct wafer__storage *s, wafer_resource range,
			       size_t mapped_bytes)
{
	counted_free(s, s->ops->vm_release, &s->counters.calls_vm_release,
		     range, mapped_bytes);
}

/* The plugin's vm_map (|piece| 0) or vm_map_pieces call, charged and
 * counted. */
static wafer_status map_call(struct wafer__storage *s, wafer_resource range,
			     size_t offset, size_t size, size_t piece)
{
	wafer_status status = charge(s, size);
	if (status != WAFER_OK)
		return status;
	status = piece ? s->ops->vm_map_pieces(s->device, range, offset, size,
					      piece)
		       : s->ops->vm_map(s->device, range, offset, size);
	uncharge(s, status, size);
	s->counters.maps++;
	s->counters.calls_vm_map++;
	if (status == WAFER_OK) {
		add_reserved(s, size);
		s->counters.bytes_mapped += size;
	} else {
		s->counters.failures++;
	}
	return status;
}

wafer_status wafer__storage_vm_map(struct wafer__storage *s, wafer_resource range,
				   size_t offset, size_t size)
{
	return map_call(s, range, offset, size, 0);
}

wafer_status wafer__storage_vm_map_pieces(struct wafer__storage *s,
					  wafer_resource range, size_t offset,
					  size_t size, size_t piece)
{
	if (size <= piece)
		return map_call(s, range, offset, size, 0);
	if (s->ops->vm_map_pieces)
		return map_call(s, range, offset, size, piece);
	for (size_t at = 0; at < size; at += piece) {
		size_t n = size - at < piece ? size - at : piece;
		wafer_status status = map_call(s, range, offset + at, n, 0);
		if (status == WAFER_OK)
			continue;
		for (size_t back = 0; back < at; back += piece)
			wafer__storage_vm_unmap(s, range, offset + back, piece);
		return status;
	}
	return WAFER_OK;
}

wafer_status wafer__storage_vm_unmap(struct wafer__storage *s,
				     wafer_resource range, size_t offset,
				     size_t size)
{
	quiesce(s);
	wafer_status status = s->ops->vm_unmap(s->device, range, offset, size);
	s->counters.unmaps++;
	s->counters.calls_vm_unmap++;
	if (status == WAFER_OK) {
		sub_reserved(s, size);
		s->counters.bytes_unmapped += size;
	} else
		s->counters.failures++;
	return status;
}
