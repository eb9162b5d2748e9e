/* wafer — SPDX-License-Identifier: MIT
 *
 * chunked.c: the `chunked` strategy, the seed design's chunk-and-slice
 * manager (DESIGN.md, "Memory management"). Every storage allocation is a
 * chunk; a handle gets either a whole chunk or one slice at the start of
 * a chunk. reserve():
 *   1. drops the slices released since the last reserve (their chunks
 *      become free again);
 *   2. runs the deallocation policy: every N reserves, every N seconds or
 *      never, each free chunk goes back to storage;
 *   3. takes a free chunk of exactly the (aligned) size if there is one;
 *   4. else cuts a slice from the smallest free chunk the slice policy
 *      accepts (the slice is at least slice_ratio of the chunk, and within
 *      slice_min..slice_max when those are set);
 *   5. else allocates a new chunk of exactly the size.
 * A chunk carries at most one slice: the rest of it is idle until the
 * slice goes, which is why the ratio matters — a 10-byte slice must not
 * pin a 1 GB chunk. Simple and predictable on static shapes; on dynamic
 * shapes it keeps more memory than it uses (see wafer-memory(7)).
 *
 * Options, [memory.chunked]:
 *   slice_ratio = 0.8        0..1; 1 turns slicing off
 *   slice_min = 0            smallest size that may be sliced (0: any)
 *   slice_max = 0            largest size that may be sliced (0: any)
 *   dealloc = reserves:1000 | seconds:N | never */
#include "build-config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/memory/memory.h"

enum chunk_state {
	CHUNK_FREE,       /* cached, reusable */
	CHUNK_WHOLE,      /* handed out whole */
	CHUNK_SLICED,     /* its start is a live slice */
	CHUNK_SLICE_FREE, /* the slice was released; dropped at next reserve */
};

struct chunk {
	wafer_resource resource;
	size_t size; /* aligned size allocated */
	enum chunk_state state;
	struct chunk *prev, *next;   /* every chunk */
	struct chunk *next_released; /* CHUNK_SLICE_FREE, awaiting the drop */
};

enum dealloc_mode { DEALLOC_RESERVES, DEALLOC_SECONDS, DEALLOC_NEVER };

struct chunked_state {
	struct wafer_storage *storage;
	struct chunk *chunks;
	struct chunk *released; /* slices to drop at the next reserve */
	size_t chunk_count;
	uint64_t free_bytes;

	double slice_ratio;
	uint64_t slice_min, slice_max;
	enum dealloc_mode dealloc;
	uint64_t dealloc_reserves;
	uint64_t dealloc_ns;

	uint64_t reserves_since; /* since the last deallocation */
	uint64_t last_dealloc_ns;
	uint64_t hits, misses;
};

static const char *const chunked_options[] = {
	"slice_ratio", "slice_min", "slice_max", "dealloc", NULL,
};

/*===----------------------------------------------------------------------===
 * Options
 *===----------------------------------------------------------------------===*/

/* "reserves:N", "seconds:N" (N may have a fraction) or "never", with
 * blanks allowed around the parts. */
static wafer_status parse_dealloc(struct chunked_state *st,
				  const struct wafer_config *config)
{
	const struct wafer_config_entry *e =
		wafer_memory_option_entry(config, "chunked", "dealloc");
	st->dealloc = DEALLOC_RESERVES;
	st->dealloc_reserves = 1000;
	if (!e)
		return WAFER_OK;

	const char *v = e->value;
	while (isspace((unsigned char)*v))
		v++;
	size_t word = strcspn(v, ": \t");
	const char *rest = v + word;
	while (isspace((unsigned char)*rest))
		rest++;
	if (word == 5 && strncmp(v, "never", 5) == 0 && !*rest) {
		st->dealloc = DEALLOC_NEVER;
		return WAFER_OK;
	}
	bool reserves = word == 8 && strncmp(v, "reserves", 8) == 0;
	bool seconds = word == 7 && strncmp(v, "seconds", 7) == 0;
	if ((reserves || seconds) && *rest == ':') {
		char *end;
		rest++;
		errno = 0;
		if (reserves) {
			while (isspace((unsigned char)*rest))
				rest++;
			unsigned long long n = isdigit((unsigned char)*rest)
				? strtoull(rest, &end, 10) : 0;
			while (n && isspace((unsigned char)*end))
				end++;
			if (n && !errno && !*end) {
				st->dealloc_reserves = n;
				return WAFER_OK;
			}
		} else {
			double s = strtod(rest, &end);
			while (end != rest && isspace((unsigned char)*end))
				end++;
			if (end != rest && !*end && !errno && isfinite(s) &&
			    s >= 0 && s < 1e9) {
				st->dealloc = DEALLOC_SECONDS;
				st->dealloc_ns = (uint64_t)(s * 1e9);
				return WAFER_OK;
			}
		}
	}
	return wafer_fail(WAFER_ERROR_CONFIG,
			  "%s: [memory.chunked] dealloc: expected reserves:N "
			  "(N >= 1), seconds:N or never, got '%s'",
			  e->origin, e->value);
}

static wafer_status read_options(struct chunked_state *st,
				 const struct wafer_config *config)
{
	wafer_status status =
		wafer_memory_option_check(config, "chunked", chunked_options);
	if (status == WAFER_OK)
		status = wafer_memory_option_double(config, "chunked",
						    "slice_ratio", 0.8,
						    &st->slice_ratio);
	if (status == WAFER_OK &&
	    (st->slice_ratio < 0 || st->slice_ratio > 1)) {
		const struct wafer_config_entry *e = wafer_memory_option_entry(
			config, "chunked", "slice_ratio");
		return wafer_fail(WAFER_ERROR_CONFIG,
				  "%s: [memory.chunked] slice_ratio: expected "
				  "a number from 0 to 1, got '%s'",
				  e ? e->origin : "default",
				  e ? e->value : "?");
	}
	if (status == WAFER_OK)
		status = wafer_memory_option_size(config, "chunked",
						  "slice_min", 0,
						  &st->slice_min);
	if (status == WAFER_OK)
		status = wafer_memory_option_size(config, "chunked",
						  "slice_max", 0,
						  &st->slice_max);
	if (status == WAFER_OK)
		status = parse_dealloc(st, config);
	return status;
}

/*===----------------------------------------------------------------------===
 * Chunks
 *===----------------------------------------------------------------------===*/

static void free_chunk(struct chunked_state *st, struct chunk *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		st->chunks = c->next;
	if (c->next)
		c->next->prev = c->prev;
	st->chunk_count--;
	wafer_storage_free(st->storage, c->resource, c->size);
	free(c);
}

/* A released slice stays in its chunk until the next reserve drops it. */
static void drop_released_slices(struct chunked_state *st)
{
	while (st->released) {
		struct chunk *c = st->released;
		st->released = c->next_released;
		c->next_released = NULL;
		c->state = CHUNK_FREE;
		st->free_bytes += c->size;
	}
}

static void dealloc_free_chunks(struct chunked_state *st)
{
	struct chunk *c = st->chunks;
	while (c) {
		struct chunk *next = c->next;
		if (c->state == CHUNK_FREE) {
			st->free_bytes -= c->size;
			free_chunk(st, c);
		}
		c = next;
	}
	st->reserves_since = 0;
	st->last_dealloc_ns = wafer_memory_clock_ns();
}

static void run_dealloc_policy(struct chunked_state *st)
{
	switch (st->dealloc) {
	case DEALLOC_RESERVES:
		if (++st->reserves_since >= st->dealloc_reserves)
			dealloc_free_chunks(st);
		break;
	case DEALLOC_SECONDS:
		if (wafer_memory_clock_ns() - st->last_dealloc_ns >=
		    st->dealloc_ns)
			dealloc_free_chunks(st);
		break;
	case DEALLOC_NEVER:
		break;
	}
}

static bool slice_allowed(const struct chunked_state *st, size_t slice,
			  size_t chunk)
{
	if (slice > chunk)
		return false;
	if (st->slice_min && slice < st->slice_min)
		return false;
	if (st->slice_max && slice > st->slice_max)
		return false;
	return (double)slice >= st->slice_ratio * (double)chunk;
}

static wafer_status chunked_reserve(void *self, size_t size,
				    struct wafer_slice *out)
{
	struct chunked_state *st = self;
	size_t aligned = wafer_align_up(size, st->storage->alignment);

	drop_released_slices(st);
	run_dealloc_policy(st);

	struct chunk *smallest = NULL, *c;
	for (c = st->chunks; c; c = c->next) {
		if (c->state != CHUNK_FREE || c->size < aligned)
			continue;
		if (c->size == aligned)
			break;
		if (slice_allowed(st, aligned, c->size) &&
		    (!smallest || c->size < smallest->size))
			smallest = c;
	}
	if (c) {
		c->state = CHUNK_WHOLE;
	} else if (smallest) {
		c = smallest;
		c->state = CHUNK_SLICED;
	}
	if (c) {
		st->free_bytes -= c->size;
		st->hits++;
		out->resource = c->resource;
		out->offset = 0;
		out->token = c;
		return WAFER_OK;
	}

	c = calloc(1, sizeof *c);
	if (!c)
		return wafer_fail(WAFER_ERROR_OUT_OF_MEMORY,
				  "chunked: out of host memory");
	wafer_status status =
		wafer_storage_alloc(st->storage, aligned, &c->resource);
	if (status != WAFER_OK) {
		free(c);
		return status;
	}
	st->misses++;
	c->size = aligned;
	c->state = CHUNK_WHOLE;
	c->next = st->chunks;
	if (st->chunks)
		st->chunks->prev = c;
	st->chunks = c;
	st->chunk_count++;
	out->resource = c->resource;
	out->offset = 0;
	out->token = c;
	return WAFER_OK;
}

static void chunked_release(void *self, const struct wafer_slice *slice)
{
	struct chunked_state *st = self;
	struct chunk *c = slice->token;
	if (c->state == CHUNK_WHOLE) {
		c->state = CHUNK_FREE;
		st->free_bytes += c->size;
	} else if (c->state == CHUNK_SLICED) {
		c->state = CHUNK_SLICE_FREE;
		c->next_released = st->released;
		st->released = c;
	}
}

static void chunked_trim(void *self)
{
	struct chunked_state *st = self;
	drop_released_slices(st);
	dealloc_free_chunks(st);
}

static wafer_status chunked_create(struct wafer_storage *storage,
				   const struct wafer_config *config,
				   void **out_self)
{
	*out_self = NULL;
	struct chunked_state *st = calloc(1, sizeof *st);
	if (!st)
		return wafer_fail(WAFER_ERROR_OUT_OF_MEMORY,
				  "chunked: out of host memory");
	wafer_status status = read_options(st, config);
	if (status != WAFER_OK) {
		free(st);
		return status;
	}
	st->storage = storage;
	st->last_dealloc_ns = wafer_memory_clock_ns();
	*out_self = st;
	return WAFER_OK;
}

static void chunked_destroy(void *self)
{
	struct chunked_state *st = self;
	while (st->chunks)
		free_chunk(st, st->chunks);
	free(st);
}

static void chunked_stats(void *self, struct wafer_memory_strategy_stats *out)
{
	struct chunked_state *st = self;
	out->hits = st->hits;
	out->misses = st->misses;
	out->cached_bytes = st->free_bytes;
	out->segments = st->chunk_count;
}

const struct wafer_memory_strategy_ops wafer_memory_chunked = {
	.name = "chunked",
	.create = chunked_create,
	.destroy = chunked_destroy,
	.reserve = chunked_reserve,
	.release = chunked_release,
	.trim = chunked_trim,
	.stats = chunked_stats,
};
