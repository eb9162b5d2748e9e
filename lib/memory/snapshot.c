/* wafer — SPDX-License-Identifier: MIT
 * snapshot.c: snapshots of a memory manager (snapshot.h). */
#include "build-config.h"

#include <stdlib.h>
#include <string.h>

#include "lib/memory/common.h"
#include "lib/memory/snapshot.h"

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

uint32_t wafer__memory_snapshot_segment(struct wafer_memory_snapshot *s,
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

/* An item of |kind| for the range |offset|, |size| of |segment| (NULL
 * once the snapshot failed). */
static wafer_memory_item *push_range(struct wafer_memory_snapshot *s,
				     wafer_memory_item_kind kind,
				     uint32_t segment, uint64_t offset,
				     uint64_t size)
{
	wafer_memory_item *item =
		push(s, kind, segment, segment_resource(s, segment));
	if (item) {
		item->offset = offset;
		item->size = size;
	}
	return item;
}

void wafer__memory_snapshot_pages(struct wafer_memory_snapshot *s,
				  uint32_t segment, uint64_t offset,
				  uint64_t size, bool mapped)
{
	wafer_memory_item *item =
		push_range(s, WAFER_MEMORY_ITEM_PAGES, segment, offset, size);
	if (item)
		item->mapped = mapped;
}

void wafer__memory_snapshot_block(struct wafer_memory_snapshot *s,
				  uint32_t segment, uint64_t offset,
				  uint64_t size, bool live, uint64_t requested)
{
	wafer_memory_item *item =
		push_range(s, WAFER_MEMORY_ITEM_BLOCK, segment, offset, size);
	if (item) {
		item->live = live;
		item->requested = live ? requested : 0;
	}
}

void wafer__memory_base_snapshot(void *self, struct wafer_memory_snapshot *out)
{
	const struct wafer__memory_base *base = self;
	for (const struct wafer__memory_chunk *c = base->chunks.head; c;
	     c = c->next)
		wafer__memory_snapshot_segment(out, base->name, c->resource,
					       c->size, c->size, 0);
}

/* Sort key of an item for attach: its segment's resource, its kind
 * (segments first), its offset. */
struct place {
	wafer_resource resource;
	wafer_memory_item_kind kind;
	uint64_t offset;
};

static int compare_place(const struct place *a, const struct place *b)
{
	if (a->resource != b->resource)
		return a->resource < b->resource ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static struct place place_of(const struct wafer_memory_snapshot *s, size_t i)
{
	return (struct place){s->resources[i], s->items[i].kind,
			      s->items[i].offset};
}

/* qsort has no context argument: the snapshot being indexed. */
static _Thread_local const struct wafer_memory_snapshot *sorting;

static int by_index_place(const void *x, const void *y)
{
	struct place a = place_of(sorting, *(const size_t *)x);
	struct place b = place_of(sorting, *(const size_t *)y);
	return compare_place(&a, &b);
}

static bool build_index(struct wafer_memory_snapshot *s)
{
	s->index_built = true;
	s->index = malloc((s->count ? s->count : 1) * sizeof *s->index);
	if (!s->index)
		return false;
	for (size_t i = 0; i < s->count; i++) {
		const wafer_memory_item *it = &s->items[i];
		if (it->kind == WAFER_MEMORY_ITEM_SEGMENT ||
		    (it->kind == WAFER_MEMORY_ITEM_BLOCK && it->live))
			s->index[s->indexed++] = i;
	}
	sorting = s;
	qsort(s->index, s->indexed, sizeof *s->index, by_index_place);
	sorting = NULL;
	return true;
}

/* The item at |key| in the index, or SIZE_MAX. */
static size_t find(const struct wafer_memory_snapshot *s, struct place key)
{
	size_t lo = 0, hi = s->indexed;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct place at = place_of(s, s->index[mid]);
		int c = compare_place(&at, &key);
		if (c == 0)
			return s->index[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

void wafer__memory_snapshot_attach(struct wafer_memory_snapshot *s,
				   const struct wafer__slice *slice,
				   wafer_handle handle)
{
	if (s->failed)
		return;
	if (!s->index_built && !build_index(s)) {
		s->failed = true;
		return;
	}
	size_t block = find(s, (struct place){slice->resource,
					      WAFER_MEMORY_ITEM_BLOCK,
					      slice->offset});
	if (block != SIZE_MAX) {
		s->items[block].handle = handle;
		return;
	}
	size_t segment = find(s, (struct place){slice->resource,
						WAFER_MEMORY_ITEM_SEGMENT, 0});
	if (segment == SIZE_MAX)
		return; /* held off the lists (stream's pending): not shown */
	wafer__memory_snapshot_block(s, s->items[segment].segment, slice->offset,
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

void wafer__memory_snapshot_sort(struct wafer_memory_snapshot *s)
{
	/* The resources are not needed past here: they are left unsorted
	 * and dropped. */
	free(s->resources);
	s->resources = NULL;
	free(s->index);
	s->index = NULL;
	s->indexed = 0;
	if (s->count > 1) /* qsort(NULL, 0, ...) is undefined */
		qsort(s->items, s->count, sizeof *s->items, by_place);
}

void wafer__memory_snapshot_fini(struct wafer_memory_snapshot *s)
{
	free(s->index);
	free(s->items);
	free(s->resources);
	memset(s, 0, sizeof *s);
}
