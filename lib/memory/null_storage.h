/* wafer — SPDX-License-Identifier: MIT
 *
 * null_storage.h: an accounting-only storage. It implements the plugin's
 * storage table (alloc/free, the stream-ordered pair and the four
 * virtual-memory entries) without holding any memory: resources are
 * made-up addresses that honour the alignment, vm ranges track which
 * pages are mapped. wafer-replay runs strategies on it, so a trace of a
 * 20 GB training run replays on a laptop, and it checks every call the
 * strategy makes (unknown or double frees, unaligned or overlapping maps)
 * so a replay also catches strategy bugs.
 *
 * Copies are not supported: there are no bytes. */
#ifndef WAFER_CORE_MEMORY_NULL_STORAGE_H
#define WAFER_CORE_MEMORY_NULL_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/memory/storage.h"

struct wafer__null_storage_options {
	/* Alignment of every allocation and offset (a power of two >= 16);
	 * 0: 256, what CUDA's allocator guarantees. */
	size_t alignment;
	/* Mapping granularity of the vm entries (a power of two, a multiple
	 * of alignment); 0: 2 MiB, what CUDA's virtual memory uses. */
	size_t vm_granularity;
	/* Leave out the vm entries / the stream-ordered entries, to replay
	 * what a plugin without them would get. */
	bool no_vm;
	bool no_async;
	/* Each vm_map call is one physical allocation, and a vm_unmap
	 * must cover whole earlier vm_map calls (one or more): what the
	 * cuda plugin does with `[cuda] vm_page = whole`. Otherwise every
	 * page is one and any mapped pages may be unmapped. */
	bool whole_maps;
};

/* Fills |*out_storage| (ops, device, alignment, granularity; zero
 * counters) with a fresh null storage. |options| may be NULL. */
wafer_status
wafer__null_storage_init(struct wafer__storage *out_storage,
			 const struct wafer__null_storage_options *options);

/* Frees the null storage behind |storage| (whatever it still holds is
 * forgotten, not reported). */
void wafer__null_storage_fini(struct wafer__storage *storage);

/* How many calls broke the storage contract so far, and the first one in
 * words in |*out_first| (may be NULL; "" when there was none). */
uint64_t wafer__null_storage_violations(const struct wafer__storage *storage,
					const char **out_first);

/* Allocations and vm ranges the null storage holds now, and the bytes
 * behind them (allocated plus mapped), as the storage itself counts them:
 * a cross-check of the wrappers' bytes_reserved. */
size_t wafer__null_storage_live(const struct wafer__storage *storage);
uint64_t wafer__null_storage_bytes(const struct wafer__storage *storage);

/* Physical allocations vm_map made and vm_unmap gave back so far: one
 * per page, or with whole_maps one per vm_map call (vm_release's are not
 * counted). On a driver like CUDA the time goes with these. */
void wafer__null_storage_phys(const struct wafer__storage *storage,
			      uint64_t *out_maps, uint64_t *out_unmaps);

#endif
