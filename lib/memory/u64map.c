/* wafer — SPDX-License-Identifier: MIT
 * u64map.c: open-addressing u64 -> u64 map (u64map.h). */
#include "build-config.h"

#include <stdlib.h>

#include "lib/memory/u64map.h"

static size_t slot_of(uint64_t key, size_t capacity)
{
	/* Fibonacci hashing spreads sequential ids and aligned addresses. */
	uint64_t h = key * UINT64_C(0x9E3779B97F4A7C15);
	return (size_t)(h ^ (h >> 29)) & (capacity - 1);
}

void wafer__u64map_fini(struct wafer__u64map *map)
{
	free(map->keys);
	free(map->values);
	free(map->used);
	map->keys = map->values = NULL;
	map->used = NULL;
	map->capacity = map->count = 0;
}

static bool grow(struct wafer__u64map *map)
{
	size_t capacity = map->capacity ? map->capacity * 2 : 64;
	struct wafer__u64map bigger = {
		.keys = malloc(capacity * sizeof(uint64_t)),
		.values = malloc(capacity * sizeof(uint64_t)),
		.used = calloc(capacity, 1),
		.capacity = capacity,
	};
	if (!bigger.keys || !bigger.values || !bigger.used) {
		wafer__u64map_fini(&bigger);
		return false;
	}
	for (size_t i = 0; i < map->capacity; i++) {
		if (!map->used[i])
			continue;
		size_t s = slot_of(map->keys[i], capacity);
		while (bigger.used[s])
			s = (s + 1) & (capacity - 1);
		bigger.used[s] = 1;
		bigger.keys[s] = map->keys[i];
		bigger.values[s] = map->values[i];
	}
	bigger.count = map->count;
	wafer__u64map_fini(map);
	*map = bigger;
	return true;
}

static bool find(const struct wafer__u64map *map, uint64_t key, size_t *out_slot)
{
	if (!map->capacity)
		return false;
	size_t s = slot_of(key, map->capacity);
	while (map->used[s]) {
		if (map->keys[s] == key) {
			*out_slot = s;
			return true;
		}
		s = (s + 1) & (map->capacity - 1);
	}
	*out_slot = s;
	return false;
}

bool wafer__u64map_put(struct wafer__u64map *map, uint64_t key, uint64_t value)
{
	size_t s;
	if (find(map, key, &s)) {
		map->values[s] = value;
		return true;
	}
	/* Keep the load at most 1/2: probes stay short. */
	if ((map->count + 1) * 2 > map->capacity) {
		if (!grow(map))
			return false;
		find(map, key, &s);
	}
	map->used[s] = 1;
	map->keys[s] = key;
	map->values[s] = value;
	map->count++;
	return true;
}

bool wafer__u64map_get(const struct wafer__u64map *map, uint64_t key,
		       uint64_t *out_value)
{
	size_t s;
	if (!find(map, key, &s))
		return false;
	if (out_value)
		*out_value = map->values[s];
	return true;
}

bool wafer__u64map_remove(struct wafer__u64map *map, uint64_t key,
			  uint64_t *out_value)
{
	size_t hole;
	if (!find(map, key, &hole))
		return false;
	if (out_value)
		*out_value = map->values[hole];
	/* Backward shift: move later members of the probe run into the hole
	 * when their home slot does not lie cyclically in (hole, s]. */
	size_t mask = map->capacity - 1;
	size_t s = (hole + 1) & mask;
	while (map->used[s]) {
		size_t home = slot_of(map->keys[s], map->capacity);
		if (((s - home) & mask) >= ((s - hole) & mask)) {
			map->keys[hole] = map->keys[s];
			map->values[hole] = map->values[s];
			hole = s;
		}
		s = (s + 1) & mask;
	}
	map->used[hole] = 0;
	map->count--;
	return true;
}
