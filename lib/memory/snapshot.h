/* wafer — SPDX-License-Identifier: MIT
 *
 * snapshot.h: a snapshot of a memory manager for debugging fragmentation
 * (wafer_memory_snapshot(3)): its segments, the runs of their pages and
 * their blocks, as the public wafer_memory_item records.
 *
 * A strategy with its own view fills one through its ops table's
 * snapshot entry (pool: every segment, page run and block, free ones
 * included); for the others wafer__memory_snapshot_take lists the chunks
 * on the base's list as segments. The bridge then attaches each live
 * handle to its block (wafer__memory_snapshot_attach), adding the block
 * where the strategy listed none, and sorts the items into the order
 * the API promises.
 *
 * Not thread-safe: built on the bridge's thread, read by the caller's. */
#ifndef WAFER_CORE_MEMORY_SNAPSHOT_H
#define WAFER_CORE_MEMORY_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "lib/memory/memory.h"

struct wafer_memory_snapshot {
	wafer_memory_item *items;
	/* Per item, its segment's resource (matched against slices). */
	wafer_resource *resources;
	size_t count, capacity;
	uint32_t segments;
	/* The last segment added: its pages and blocks follow it. */
	wafer_resource last_resource;
	/* For attach: the segments and live blocks the strategy listed, by
	 * (resource, kind, offset); built at the first attach. */
	size_t *index;
	size_t indexed;
	bool index_built;
	bool failed; /* out of host memory: items are missing */
};

/* Adds a segment and returns its number; its pages and blocks follow. */
uint32_t wafer__memory_snapshot_segment(struct wafer_memory_snapshot *s,
					const char *arena,
					wafer_resource resource, uint64_t size,
					uint64_t mapped_bytes,
					uint64_t page_size);
void wafer__memory_snapshot_pages(struct wafer_memory_snapshot *s,
				  uint32_t segment, uint64_t offset,
				  uint64_t size, bool mapped);
/* |requested|: bytes asked, for a live block (0 for a free one). */
void wafer__memory_snapshot_block(struct wafer_memory_snapshot *s,
				  uint32_t segment, uint64_t offset,
				  uint64_t size, bool live, uint64_t requested);

/* Takes |memory|'s snapshot into |out| (zeroed first).
 * WAFER_ERROR_OUT_OF_MEMORY when it did not fit. Defined in memory.c,
 * which knows the strategy. */
wafer_status wafer__memory_snapshot_take(struct wafer__memory *memory,
					 struct wafer_memory_snapshot *out);

/* The snapshot of a strategy that keeps only the base's chunks. */
void wafer__memory_base_snapshot(void *self,
				 struct wafer_memory_snapshot *out);

/* Names the live block of |slice| |handle| (the bridge, per live handle
 * slot), adding the block when the strategy listed none there. */
void wafer__memory_snapshot_attach(struct wafer_memory_snapshot *s,
				   const struct wafer__slice *slice,
				   wafer_handle handle);

/* Puts the items in the order the API promises: by segment, the segment
 * first, then its page runs, then its blocks, each by offset. */
void wafer__memory_snapshot_sort(struct wafer_memory_snapshot *s);

void wafer__memory_snapshot_fini(struct wafer_memory_snapshot *s);

#endif
