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
 * The search of steps 3 and 4 walks only the free chunks (their own
 * list), never the live ones: a walk over every chunk made a trace with
 * many live blocks quadratic.
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

#include "lib/error.h"
#include "lib/list.h"
#include "lib/memory/common.h"

enum chunk_state {
	CHUNK_FREE,       /* cached, reusable */
	CHUNK_WHOLE,      /* handed out whole */
	CHUNK_SLICED,     /* its start is a live slice */
	CHUNK_SLICE_FREE, /* the slice was released; dropped at next reserve */
};

struct chunk {
	struct wafer__memory_chunk chunk; /* on the list of every chunk; its
					  * size is the aligned size */
	enum chunk_state state;
	struct chunk *next_released; /* CHUNK_SLICE_FREE, awaiting the drop */
	struct chunk *free_prev, *free_next; /* CHUNK_FREE: the free list */
};

enum dealloc_mode { DEALLOC_RESERVES, DEALLOC_SECONDS, DEALLOC_NEVER };

/* The base's chunks are every chunk; its stats keep hits, misses and, in
 * cached_bytes, the bytes of free chunks. */
struct chunked_state {
	struct wafer__memory_base base;
	struct chunk *released; /* slices to drop at the next reserve */
	struct chunk *free;     /* every CHUNK_FREE chunk */

	double slice_ratio;
	uint64_t slice_min, slice_max;
	enum dealloc_mode dealloc;
	uint64_t dealloc_reserves;
	uint64_t dealloc_ns;

	uint64_t reserves_since; /* since the last deallocation */
	uint64_t last_dealloc_ns;
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
				  const struct wafer__config *config)
{
	const struct wafer__config_entry *e =
		wafer__config_lookup(config, st->base.section, "dealloc");
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
	return wafer__fail(WAFER_ERROR_CONFIG,
			   "%s: [memory.chunked] dealloc: expected reserves:N "
			   "(N >= 1), seconds:N or never, got '%s'",
			   e->origin, e->value);
}

/* Reads the options (checked against chunked_options by base_create). */
static wafer_status chunked_setup(void *self,
				  const struct wafer__config *config)
{
	struct chunked_state *st = self;
	const char *section = st->base.section;
	st->last_dealloc_ns = wafer__memory_clock_ns();
	wafer_status status = wafer__config_get_double(
		config, section, "slice_ratio", 0.8, &st->slice_ratio);
	if (status == WAFER_OK &&
	    (st->slice_ratio < 0 || st->slice_ratio > 1))
		return wafer__memory_option_invalid(&st->base, config,
						    "slice_ratio",
						    "a number from 0 to 1");
	if (status == WAFER_OK)
		status = wafer__config_get_size(config, section, "slice_min", 0,
						&st->slice_min);
	if (status == WAFER_OK)
		status = wafer__config_get_size(config, section, "slice_max", 0,
						&st->slice_max);
	if (status == WAFER_OK)
		status = parse_dealloc(st, config);
	return status;
}

/*===----------------------------------------------------------------------===
 * Chunks
 *===----------------------------------------------------------------------===*/

/* Puts |c| on the free list (state CHUNK_FREE, counted as cached). */
static void free_push(struct chunked_state *st, struct chunk *c)
{
	c->state = CHUNK_FREE;
	WAFER__LIST_PUSH(st->free, c, free_prev, free_next);
	st->base.stats.cached_bytes += c->chunk.size;
}

/* Takes |c| off the free list (the caller sets its new state). */
static void free_remove(struct chunked_state *st, struct chunk *c)
{
	WAFER__LIST_UNLINK(st->free, c, free_prev, free_next);
	c->free_prev = c->free_next = NULL;
	st->base.stats.cached_bytes -= c->chunk.size;
}

/* A released slice stays in its chunk until the next reserve drops it. */
static void drop_released_slices(struct chunked_state *st)
{
	while (st->released) {
		struct chunk *c = st->released;
		st->released = c->next_released;
		c->next_released = NULL;
		free_push(st, c);
	}
}

static void dealloc_free_chunks(struct chunked_state *st)
{
	while (st->free) {
		struct chunk *c = st->free;
		free_remove(st, c);
		wafer__memory_chunk_free(&st->base, &c->chunk);
	}
	st->reserves_since = 0;
	st->last_dealloc_ns = wafer__memory_clock_ns();
}

static void run_dealloc_policy(struct chunked_state *st)
{
	switch (st->dealloc) {
	case DEALLOC_RESERVES:
		if (++st->reserves_since >= st->dealloc_reserves)
			dealloc_free_chunks(st);
		break;
	case DEALLOC_SECONDS:
		if (wafer__memory_clock_ns() - st->last_dealloc_ns >=
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
				    struct wafer__slice *out)
{
	struct chunked_state *st = self;
	size_t aligned = wafer__align_up(size, st->base.storage->alignment);

	drop_released_slices(st);
	run_dealloc_policy(st);

	struct chunk *smallest = NULL, *c = NULL;
	for (struct chunk *f = st->free; f; f = f->free_next) {
		size_t have = f->chunk.size;
		if (have < aligned)
			continue;
		if (have == aligned) {
			c = f;
			break;
		}
		if (slice_allowed(st, aligned, have) &&
		    (!smallest || have < smallest->chunk.size))
			smallest = f;
	}
	if (!c)
		c = smallest;
	if (c) {
		free_remove(st, c);
		c->state = c == smallest ? CHUNK_SLICED : CHUNK_WHOLE;
		wafer__memory_chunk_hit(&st->base, &c->chunk, out);
		return WAFER_OK;
	}

	wafer_status status =
		wafer__memory_chunk_miss(&st->base, aligned, sizeof *c, out);
	if (status != WAFER_OK)
		return status;
	c = out->token;
	c->state = CHUNK_WHOLE;
	return WAFER_OK;
}

static void chunked_release(void *self, const struct wafer__slice *slice)
{
	struct chunked_state *st = self;
	struct chunk *c = slice->token;
	if (c->state == CHUNK_WHOLE) {
		free_push(st, c);
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

WAFER_MEMORY_STRATEGY(chunked, chunked_setup,
		      .destroy = wafer__memory_base_destroy,
		      .stats = wafer__memory_base_stats);
