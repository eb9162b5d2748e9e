/* wafer — SPDX-License-Identifier: MIT
 * snapshot.c: snapshots of a memory manager (snapshot.h). */
#include "build-config.h"

#include <stdlib.h>
#include <string.h>

#include "core/memory/common.h"
#include "core/memory/snapshot.h"

static wafer_memory_item *push(struct wafer_memory_snapshot *s,
			       wafer_memory_item_kind kind, uint32_t segment,
			       wafer_resource resource)
{
	if (s->failed)
		return NULL;
	if (s->count == s->capacity) {
		size_t capacity = s->capacity ? s->capacity * 2 : 64;
		wafer_memory_item *items =
			realloc(s->items, capacity * sizeof *items);
		if (items)
			s->items = items;
		wafer_resource *resources =
			items ? realloc(s->resources,
					capacity * sizeof *resources)
			      : NULL;
		if (!resources) {
			s->failed = true;
			return NULL;
		}
		s->resources = resources;
		s->capacity = capacity;
	}
	wafer_memory_item *item = &s->items[s->count];
	memset(item, 0, sizeof *item);
	item->struct_size = sizeof *item;
	item->kind = kind;
	item->segment = segment;
	s->resources[s->count++] = resource;
	return item;
}

/* The resource of segment |segment|: mostly the last one added (items
 * are not sorted before the bridge is done). */
static wafer_resource segment_resource(const struct wafer_memory_snapshot *s,
				       uint32_t segment)
{
	if (segment + 1 == s->segments)
		return s->last_resource;
	for (size_t i = 0; i < s->count; i++)
		if (s->items[i].kind == WAFER_MEMORY_ITEM_SEGMENT &&
		    s->items[i].segment == segment)
			return s->resources[i];
	return 0;
}

uint32_t wafer_memory_snapshot_segment(struct wafer_memory_snapshot *s,
				       const char *arena,
				       wafer_resource resource, uint64_t size,
				       uint64_t mapped_bytes,
				       uint64_t page_size)
{
	uint32_t number = s->segments++;
	s->last_resource = resource;
	wafer_memory_item *item =
		push(s, WAFER_MEMORY_ITEM_SEGMENT, number, resource);
	if (item) {
		item->arena = arena;
		item->size = size;
		item->mapped_bytes = mapped_bytes;
		item->page_size = page_size;
	}
	return number;
}

void wafer_memory_snapshot_pages(struct wafer_memory_snapshot *s,
				 uint32_t segment, uint64_t offset,
				 uint64_t size, bool mapped)
{
	wafer_memory_item *item = push(s, WAFER_MEMORY_ITEM_PAGES, segment,
				       segment_resource(s, segment));
	if (item) {
		item->offset = offset;
		item->size = size;
		item->mapped = mapped;
	}
}

void wafer_memory_snapshot_block(struct wafer_memory_snapshot *s,
				 uint32_t segment, uint64_t offset,
				 uint64_t size, bool live, uint64_t requested)
{
	wafer_memory_item *item = push(s, WAFER_MEMORY_ITEM_BLOCK, segment,
				       segment_resource(s, segment));
	if (item) {
		item->offset = offset;
		item->size = size;
		item->live = live;
		item->requested = live ? requested : 0;
	}
}

void wafer_memory_base_snapshot(void *self, struct wafer_memory_snapshot *out)
{
	const struct wafer_memory_base *base = self;
	for (const struct wafer_memory_chunk *c = base->chunks.head; c;
	     c = c->next)
		wafer_memory_snapshot_segment(out, base->name, c->resource,
					      c->size, c->size, 0);
}

void wafer_memory_snapshot_attach(struct wafer_memory_snapshot *s,
				  const struct wafer_slice *slice,
				  wafer_handle handle)
{
	/* Linear: a debugging call, and the snapshot is taken once. */
	int64_t segment = -1;
	for (size_t i = 0; i < s->count; i++) {
		wafer_memory_item *item = &s->items[i];
		if (s->resources[i] != slice->resource)
			continue;
		if (item->kind == WAFER_MEMORY_ITEM_SEGMENT)
			segment = item->segment;
		if (item->kind == WAFER_MEMORY_ITEM_BLOCK && item->live &&
		    item->offset == slice->offset) {
			item->handle = handle;
			return;
		}
	}
	if (segment < 0)
		return; /* held off the lists (stream's pending): not shown */
	wafer_memory_snapshot_block(s, (uint32_t)segment, slice->offset,
				    slice->size, true, slice->size);
	if (!s->failed)
		s->items[s->count - 1].handle = handle;
}

static int by_place(const void *x, const void *y)
{
	const wafer_memory_item *a = x, *b = y;
	if (a->segment != b->segment)
		return a->segment < b->segment ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return a->offset < b->offset ? -1 : a->offset > b->offset;
}

void wafer_memory_snapshot_sort(struct wafer_memory_snapshot *s)
{
	/* The resources are not needed past here: they are left unsorted
	 * and dropped. */
	free(s->resources);
	s->resources = NULL;
	qsort(s->items, s->count, sizeof *s->items, by_place);
}

void wafer_memory_snapshot_fini(struct wafer_memory_snapshot *s)
{
	free(s->items);
	free(s->resources);
	memset(s, 0, sizeof *s);
}
