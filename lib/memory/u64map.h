/* wafer — SPDX-License-Identifier: MIT
 *
 * u64map.h: a small open-addressing hash map from 64-bit keys to 64-bit
 * values (linear probing, deletion by backward shift, so no tombstones
 * pile up under churn). The null storage keys its live allocations by
 * resource with it, and wafer-replay its trace ids. */
#ifndef WAFER_CORE_MEMORY_U64MAP_H
#define WAFER_CORE_MEMORY_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wafer__u64map {
	uint64_t *keys;
	uint64_t *values;
	uint8_t *used;
	size_t capacity; /* a power of two, or 0 before the first put */
	size_t count;
};

/* An empty map is all zeros; fini frees it and leaves it empty. */
void wafer__u64map_fini(struct wafer__u64map *map);

/* Inserts or replaces. False only when host memory ran out (the map is
 * unchanged then). */
bool wafer__u64map_put(struct wafer__u64map *map, uint64_t key, uint64_t value);

/* True and the value in |*out_value| (may be NULL) when |key| is there. */
bool wafer__u64map_get(const struct wafer__u64map *map, uint64_t key,
		       uint64_t *out_value);

/* Removes |key|; true and its value in |*out_value| (may be NULL) when it
 * was there. */
bool wafer__u64map_remove(struct wafer__u64map *map, uint64_t key,
			  uint64_t *out_value);

#endif
