/* wafer — SPDX-License-Identifier: MIT
 *
 * pool.c: the `pool` strategy, wafer's default. Best-fit with splitting
 * and coalescing over segments, in two arenas: requests up to small_max
 * come from the small arena, the rest from the large one, so short-lived
 * small tensors never cut holes into the space of big ones.
 *
 * With the plugin's virtual-memory ops (wafer__storage_has_vm) a segment
 * is a large reserved address range with no memory behind it. Pages are
 * mapped when a block is placed on them and stay mapped when it goes
 * (idle pages). Address space is plentiful and only mapped pages cost
 * memory, so a hole between live blocks strands nothing: its pages can be
 * unmapped. Three rules keep both memory and storage calls low:
 *
 *  - Placement knows which pages are mapped. Among the free blocks that
 *    fit, the pool takes the smallest one whose pages are all mapped; if
 *    there is none, the one that needs the fewest new pages. A training
 *    step that repeats lands on the pages the previous step left mapped
 *    and makes no storage call.
 *  - Unmapping is lazy but bounded. Mapped bytes may exceed the peak of
 *    bytes in use by the fraction `overhead`. Only when a placement must
 *    map pages past that bound does the pool unmap idle pages.
 *  - It unmaps the pages that have been idle longest (each page remembers
 *    when its last block went), and neighbouring pages chosen together go
 *    in one call: pages a loop touches every step stay mapped, pages it
 *    left behind go first.
 *
 * So the pool holds about (1 + overhead) x its peak in use — more only
 * where partly used pages cannot be given back — and makes storage calls
 * while the working set grows or moves, not while it repeats.
 *
 * With unmap = whole the pool never unmaps part of what one vm_map call
 * mapped (a unit): a unit goes back whole, once no block touches it. A
 * storage may then back each vm_map call with one physical allocation
 * (`[cuda] vm_page = whole`), and on CUDA the time goes with those, not
 * with the bytes. A block's missing pages are mapped in units of a
 * quarter of its span at most (unit_cap), so a unit that a small block
 * keeps from going back is small beside the block that mapped it.
 *
 * Without virtual memory a segment is a plain storage allocation (a
 * chunk): small_chunk bytes in the small arena, the request rounded up to
 * large_round in the large one. An entirely free chunk is the unit of
 * idleness and goes back to storage under the same bound.
 *
 * Offsets and sizes are multiples of the storage alignment. Options,
 * [memory.pool]:
 *   small_max = 1M       requests up to this use the small arena
 *   overhead = 0.03      mapped bytes may exceed the peak in use by this
 *                        fraction before idle pages are unmapped
 *   max_idle = 0         also unmap at release once idle mapped bytes pass
 *                        this (0: no bound but overhead's)
 *   va_size = 0          address range reserved per segment (vm only;
 *                        0: 131072 pages of the granularity)
 *   small_chunk = 2M     chunk size of the small arena (no vm)
 *   large_round = 2M     large chunks are rounded up to this (no vm)
 *   unmap = pages        pages: any idle mapped page may be unmapped;
 *                        whole: only whole units (vm only)
 *   unit = 8M            unmap = whole: the most one unit holds */
#include "build-config.h"

#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/list.h"
#include "lib/log.h"
#include "lib/memory/bitmap.h"
#include "lib/memory/common.h"
#include "lib/memory/snapshot.h"

/* Idle ages are kept per 64 KiB of address space at least: with small
 * pages (4 KiB on cpu) a per-page age would cost a release one store per
 * page; a coarser age only makes a slot look as young as its youngest
 * page. */
#define AGE_SLOT ((size_t)64 << 10)

/* Free-block bins: four per power of two (the two bits after the leading
 * one), each list sorted by size, then address, so the first block that
 * fits in a walk from the request's bin up is the best fit. A bin may hold
 * many blocks of one size (holes between live blocks), so each list is a
 * skip list: a block is also on POOL_UP upper levels with probability
 * 1/4 each, and finding a place in a bin takes about log n steps. */
#define POOL_BINS 256
#define POOL_UP 11

struct pool_segment;

struct pool_block {
	size_t offset;
	size_t size;                          /* aligned */
	size_t requested;                     /* bytes asked, when live */
	struct pool_segment *seg;
	struct pool_block *prev, *next;       /* address order in segment */
	struct pool_block *free_prev, *free_next; /* bin list, when free */
	struct pool_block *up[POOL_UP]; /* next on each upper level */
	unsigned char levels;           /* upper levels it is on */
	bool free;
};

struct pool_arena {
	const char *name;
	struct pool_block *bins[POOL_BINS];
	uint64_t nonempty[POOL_BINS / 64];
	struct wafer__memory_chunk_list segments;
	struct pool_block *up_heads[POOL_BINS][POOL_UP];
	unsigned char up_top[POOL_BINS]; /* levels a bin's blocks ever had */
	uint64_t rng; /* picks levels; fixed seed: replays repeat */
	uint64_t *steps; /* the pool's free_steps */
};

struct pool_segment {
	/* On its arena's list. The size: the address range (vm), or the
	 * chunk. */
	struct wafer__memory_chunk chunk;
	struct pool_arena *arena;
	bool vm;
	size_t mapped_bytes;    /* vm: mapped pages; chunk: its size */
	size_t used_blocks;
	/* vm: per page, whether it is mapped; per age slot (AGE_SLOT bytes
	 * or one page, whichever is larger), the tick at which its last
	 * block was released. Kept for pages [0, tracked) only: the pages
	 * past the highest one ever used were never mapped. */
	size_t pages;
	size_t tracked;
	uint64_t *mapped;
	/* vm: per page, whether a unit (the pages one vm_map call mapped)
	 * starts there. A unit runs to the next start or unmapped page. */
	uint64_t *starts;
	uint32_t *idle_since;
	unsigned age_shift; /* pages per age slot = 1 << age_shift */
	/* chunk: the tick of its last release */
	uint32_t chunk_idle_since;
	struct pool_block *first;
};

/* The base's stats keep hits and misses; its chunk list is unused (the
 * segments are on the arenas' lists). */
struct pool_state {
	struct wafer__memory_base base;
	bool vm;
	/* vm: unmap only whole units (what one vm_map mapped), never a
	 * part of one: [memory.pool] unmap = whole. */
	bool whole;
	size_t unit_pages; /* the most pages one unit holds */
	size_t align;
	size_t gran; /* vm page size */
	struct pool_arena small, large;

	uint64_t small_max;
	double overhead;
	uint64_t max_idle;
	uint64_t va_size;
	uint64_t small_chunk;
	uint64_t large_round;

	uint64_t live;      /* bytes asked by live blocks */
	uint64_t peak_live;
	uint64_t used;      /* aligned bytes of live blocks */
	uint64_t mapped;    /* held from storage: mapped pages, chunks */
	uint32_t tick;      /* counts releases, for idle ages */
	uint64_t free_steps; /* bin nodes visited (stats) */
	struct pool_block *spare; /* recycled block structs */
};

static const char *const pool_options[] = {
	"small_max", "overhead", "max_idle", "va_size", "small_chunk",
	"large_round", "unmap", "unit", NULL,
};

static struct pool_arena *arena_of(struct pool_state *p, int i)
{
	return i == 0 ? &p->small : &p->large;
}

/*===----------------------------------------------------------------------===
 * Blocks and bins
 *===----------------------------------------------------------------------===*/

static unsigned bin_of(size_t size)
{
	unsigned log = 63u - (unsigned)__builtin_clzll((unsigned long long)size);
	if (log < 2)
		return (unsigned)size;
	return log * 4 + (unsigned)((size >> (log - 2)) & 3);
}

static struct pool_block *block_new(struct pool_state *p)
{
	struct pool_block *b = p->spare;
	if (b) {
		p->spare = b->next;
		memset(b, 0, sizeof *b);
		return b;
	}
	return calloc(1, sizeof *b);
}

static void block_recycle(struct pool_state *p, struct pool_block *b)
{
	b->next = p->spare;
	p->spare = b;
}

/* Whether free block |x| comes before |b| in a bin: size, then address. */
static bool bin_before(const struct pool_block *x, size_t size, size_t offset)
{
	return x->size < size || (x->size == size && x->offset < offset);
}

/* The last block of |bin| before (size, offset), NULL for none; fills
 * |pred| with the last one before it on each upper level. */
static struct pool_block *bin_seek(struct pool_arena *a, unsigned bin,
				   size_t size, size_t offset,
				   struct pool_block **pred)
{
	struct pool_block *x = NULL;
	for (int l = POOL_UP - 1; l >= 0; l--) {
		if (l >= a->up_top[bin]) {
			if (pred)
				pred[l] = NULL;
			continue;
		}
		struct pool_block *next = x ? x->up[l] : a->up_heads[bin][l];
		while (next && bin_before(next, size, offset)) {
			x = next;
			next = x->up[l];
			(*a->steps)++;
		}
		if (pred)
			pred[l] = x;
	}
	struct pool_block *next = x ? x->free_next : a->bins[bin];
	while (next && bin_before(next, size, offset)) {
		x = next;
		next = x->free_next;
		(*a->steps)++;
	}
	return x;
}

static unsigned pick_levels(struct pool_arena *a)
{
	a->rng ^= a->rng << 13;
	a->rng ^= a->rng >> 7;
	a->rng ^= a->rng << 17;
	unsigned n = (unsigned)__builtin_ctzll(a->rng | (UINT64_C(1) << 62)) / 2;
	return n < POOL_UP ? n : POOL_UP;
}

static void bin_insert(struct pool_arena *a, struct pool_block *b)
{
	unsigned bin = bin_of(b->size);
	struct pool_block *pred[POOL_UP];
	struct pool_block *prev = bin_seek(a, bin, b->size, b->offset, pred);
	struct pool_block **at = prev ? &prev->free_next : &a->bins[bin];
	b->free_prev = prev;
	b->free_next = *at;
	if (*at)
		(*at)->free_prev = b;
	*at = b;
	b->levels = (unsigned char)pick_levels(a);
	if (b->levels > a->up_top[bin])
		a->up_top[bin] = b->levels;
	for (unsigned l = 0; l < b->levels; l++) {
		struct pool_block **link =
			pred[l] ? &pred[l]->up[l] : &a->up_heads[bin][l];
		b->up[l] = *link;
		*link = b;
	}
	a->nonempty[bin / 64] |= UINT64_C(1) << (bin % 64);
	b->free = true;
}

static void bin_remove(struct pool_arena *a, struct pool_block *b)
{
	unsigned bin = bin_of(b->size);
	/* Off its upper levels: walk to the last block before b's key,
	 * then past blocks of the same key (other segments) to b. */
	struct pool_block *x = NULL;
	for (int l = (int)a->up_top[bin] - 1; l >= 0; l--) {
		struct pool_block **link = x ? &x->up[l] : &a->up_heads[bin][l];
		while (*link && bin_before(*link, b->size, b->offset)) {
			x = *link;
			link = &x->up[l];
			(*a->steps)++;
		}
		if (l >= (int)b->levels)
			continue;
		while (*link != b) {
			x = *link;
			link = &x->up[l];
			(*a->steps)++;
		}
		*link = b->up[l];
		b->up[l] = NULL;
	}
	b->levels = 0;
	WAFER__LIST_UNLINK(a->bins[bin], b, free_prev, free_next);
	if (!a->bins[bin])
		a->nonempty[bin / 64] &= ~(UINT64_C(1) << (bin % 64));
	b->free_prev = b->free_next = NULL;
	b->free = false;
}

static unsigned next_bin(const struct pool_arena *a, unsigned from)
{
	while (from < POOL_BINS) {
		uint64_t w = a->nonempty[from / 64] &
			     ~((UINT64_C(1) << (from % 64)) - 1);
		if (w)
			return from / 64 * 64 + (unsigned)__builtin_ctzll(w);
		from = (from / 64 + 1) * 64;
	}
	return POOL_BINS;
}

/*===----------------------------------------------------------------------===
 * Pages of vm segments
 *===----------------------------------------------------------------------===*/

/* Pages [first, end) that a byte range touches. */
static void page_span(const struct pool_state *p, size_t offset, size_t size,
		      size_t *first, size_t *end)
{
	*first = offset / p->gran;
	*end = (offset + size + p->gran - 1) / p->gran;
}

/* Pages lying wholly inside a free block. Free neighbours are always
 * coalesced, so no live block touches them: the mapped ones are idle. */
static void interior_pages(const struct pool_state *p,
			   const struct pool_block *b, size_t *first,
			   size_t *end)
{
	*first = (b->offset + p->gran - 1) / p->gran;
	*end = (b->offset + b->size) / p->gran;
	if (*end < *first)
		*end = *first;
	if (*end > b->seg->tracked)
		*end = b->seg->tracked;
	if (*first > *end)
		*first = *end;
}

/* Extends the per-page state to cover pages [0, end). */
static bool track_pages(struct pool_segment *s, size_t end)
{
	if (end <= s->tracked)
		return true;
	size_t want = s->tracked ? s->tracked : 1024;
	while (want < end)
		want *= 2;
	if (want > s->pages)
		want = s->pages;
	size_t words = (want + 63) / 64, old_words = (s->tracked + 63) / 64;
	uint64_t *mapped = realloc(s->mapped, words * sizeof *mapped);
	if (!mapped)
		return false;
	s->mapped = mapped;
	memset(mapped + old_words, 0, (words - old_words) * sizeof *mapped);
	uint64_t *starts = realloc(s->starts, words * sizeof *starts);
	if (!starts)
		return false;
	s->starts = starts;
	memset(starts + old_words, 0, (words - old_words) * sizeof *starts);
	size_t slots = (want >> s->age_shift) + 1;
	size_t old_slots = s->tracked ? (s->tracked >> s->age_shift) + 1 : 0;
	uint32_t *idle = realloc(s->idle_since, slots * sizeof *idle);
	if (!idle)
		return false;
	s->idle_since = idle;
	memset(idle + old_slots, 0, (slots - old_slots) * sizeof *idle);
	s->tracked = want;
	return true;
}

static void stamp_pages(struct pool_segment *s, size_t first, size_t end,
			uint32_t tick)
{
	for (size_t q = first >> s->age_shift; q <= (end - 1) >> s->age_shift;
	     q++)
		s->idle_since[q] = tick;
}

static size_t unmapped_pages(const struct pool_state *p,
			     const struct pool_segment *s, size_t offset,
			     size_t size)
{
	size_t first, end;
	page_span(p, offset, size, &first, &end);
	size_t known = end < s->tracked ? end : s->tracked;
	size_t mapped = first < known
				? wafer__bits_count(s->mapped, first, known) : 0;
	return (end - first) - mapped;
}

/* Ages count in releases; when the counter would wrap, every age starts
 * over (rare: four billion releases). */
static void next_tick(struct pool_state *p)
{
	if (++p->tick != UINT32_MAX)
		return;
	for (int i = 0; i < 2; i++)
		for (struct wafer__memory_chunk *c =
			     arena_of(p, i)->segments.head;
		     c; c = c->next) {
			struct pool_segment *s = (struct pool_segment *)c;
			if (s->vm && s->tracked)
				memset(s->idle_since, 0,
				       ((s->tracked >> s->age_shift) + 1) *
					       sizeof *s->idle_since);
			s->chunk_idle_since = 0;
		}
	p->tick = 1;
}

/*===----------------------------------------------------------------------===
 * Idle memory and the bound
 *===----------------------------------------------------------------------===*/

/* A run of idle memory that one call gives back: pages [first, end) of a
 * vm segment, mapped and unused, idle since one tick; or a whole free
 * chunk without vm (first = end = 0). */
struct idle_run {
	struct pool_segment *seg;
	size_t first, end;
	size_t bytes;
	uint32_t since;
};

struct idle_runs {
	struct idle_run *runs;
	size_t count, capacity;
};

static void runs_push(struct idle_runs *r, struct idle_run run)
{
	if (r->count == r->capacity) {
		size_t capacity = r->capacity ? r->capacity * 2 : 64;
		struct idle_run *grown =
			realloc(r->runs, capacity * sizeof *grown);
		if (!grown)
			return; /* fewer candidates: unmaps less, no harm */
		r->runs = grown;
		r->capacity = capacity;
	}
	r->runs[r->count++] = run;
}

/* Mapped pages [from, to) of |s|, cut where the idle age changes. */
static void push_pages(const struct pool_state *p, struct idle_runs *out,
		       struct pool_segment *s, size_t from, size_t to)
{
	unsigned sh = s->age_shift;
	while (from < to) {
		uint32_t since = s->idle_since[from >> sh];
		size_t end = ((from >> sh) + 1) << sh;
		while (end < to && s->idle_since[end >> sh] == since)
			end += (size_t)1 << sh;
		if (end > to)
			end = to;
		runs_push(out, (struct idle_run){
			.seg = s, .first = from, .end = end,
			.bytes = (end - from) * p->gran,
			.since = since,
		});
		from = end;
	}
}

static bool page_bit(const uint64_t *bits, size_t page)
{
	return (bits[page / 64] >> (page % 64)) & 1;
}

/* unmap = whole: the units lying wholly in mapped pages [from, to) of
 * |s| (pages inside one free block), one run each, as young as its
 * youngest page; a unit reaching past either end is in use (or in the
 * placement's way) and stays. Units touching [ex_first, ex_end) of |ex|
 * are left out. */
static void push_units(const struct pool_state *p, struct idle_runs *out,
		       struct pool_segment *s, size_t from, size_t to,
		       const struct pool_segment *ex, size_t ex_first,
		       size_t ex_end)
{
	if (from >= to)
		return; /* no mapped page: [from, to) may start past tracked */
	size_t u = page_bit(s->starts, from)
			   ? from : wafer__bits_find(s->starts, from + 1, to, 1);
	while (u < to) {
		size_t next = wafer__bits_find(s->starts, u + 1, to, 1);
		bool whole = next < to || to >= s->tracked ||
			     !page_bit(s->mapped, to) || page_bit(s->starts, to);
		bool in_way = s == ex && u < ex_end && ex_first < next;
		if (whole && !in_way) {
			uint32_t since = 0;
			unsigned sh = s->age_shift;
			for (size_t q = u >> sh; q <= (next - 1) >> sh; q++)
				if (s->idle_since[q] > since)
					since = s->idle_since[q];
			runs_push(out, (struct idle_run){
				.seg = s, .first = u, .end = next,
				.bytes = (next - u) * p->gran,
				.since = since,
			});
		}
		u = next;
	}
}

/* The idle runs of one free block, leaving out pages [ex_first, ex_end)
 * of segment |ex| (the placement being made room for). */
static void collect_block(struct pool_state *p, struct idle_runs *out,
			  const struct pool_block *b,
			  const struct pool_segment *ex, size_t ex_first,
			  size_t ex_end)
{
	struct pool_segment *s = b->seg;
	if (!s->vm) {
		if (s->used_blocks == 0 && s != ex)
			runs_push(out, (struct idle_run){
				.seg = s,
				.bytes = s->chunk.size,
				.since = s->chunk_idle_since,
			});
		return;
	}
	size_t first, end;
	interior_pages(p, b, &first, &end);
	while (first < end) {
		size_t from = wafer__bits_find(s->mapped, first, end, 1);
		size_t to = wafer__bits_find(s->mapped, from, end, 0);
		first = to;
		if (p->whole) {
			push_units(p, out, s, from, to, ex, ex_first, ex_end);
			continue;
		}
		if (s != ex || to <= ex_first || ex_end <= from) {
			push_pages(p, out, s, from, to);
			continue;
		}
		if (from < ex_first)
			push_pages(p, out, s, from, ex_first);
		if (ex_end < to)
			push_pages(p, out, s, ex_end, to);
	}
}

/* Collects every idle run but those in [ex_first, ex_end) of |ex|. */
static void collect_idle(struct pool_state *p, struct idle_runs *out,
			 const struct pool_segment *ex, size_t ex_first,
			 size_t ex_end)
{
	for (int i = 0; i < 2; i++) {
		struct pool_arena *a = arena_of(p, i);
		for (unsigned bin = next_bin(a, 0); bin < POOL_BINS;
		     bin = next_bin(a, bin + 1))
			for (struct pool_block *b = a->bins[bin]; b;
			     b = b->free_next)
				collect_block(p, out, b, ex, ex_first, ex_end);
	}
}

/* Oldest first; of the same age, the longest first. */
static int by_age(const void *x, const void *y)
{
	const struct idle_run *a = x, *b = y;
	if (a->since != b->since)
		return a->since < b->since ? -1 : 1;
	return a->bytes > b->bytes ? -1 : a->bytes < b->bytes;
}

static int by_address(const void *x, const void *y)
{
	const struct idle_run *a = x, *b = y;
	if (a->seg != b->seg)
		return (uintptr_t)a->seg < (uintptr_t)b->seg ? -1 : 1;
	return a->first < b->first ? -1 : a->first > b->first;
}

static void segment_free(struct pool_state *p, struct pool_segment *s);

/* Gives one idle run back to storage. */
static bool release_run(struct pool_state *p, const struct idle_run *run)
{
	struct pool_segment *s = run->seg;
	if (!s->vm) {
		segment_free(p, s);
		return true;
	}
	wafer_status status = wafer__storage_vm_unmap(
		p->base.storage, s->chunk.resource, run->first * p->gran,
		(run->end - run->first) * p->gran);
	wafer__log_debug("memory", "pool: unmap %s pages [%zu, %zu): %s",
			s->arena->name, run->first, run->end,
			wafer_status_string(status));
	if (status != WAFER_OK) {
		wafer__log_warn("memory", "pool: unmapping %zu idle bytes "
				"failed; they stay mapped: %s", run->bytes,
				wafer__error_detail());
		return false;
	}
	wafer__bits_clear(s->mapped, run->first, run->end);
	wafer__bits_clear(s->starts, run->first, run->end);
	s->mapped_bytes -= run->bytes;
	p->mapped -= run->bytes;
	return true;
}

/* Gives back at least |bytes| of idle memory (everything idle for
 * UINT64_MAX), the longest idle first, in as few calls as the choice
 * allows. Returns the bytes given back. */
static uint64_t release_idle(struct pool_state *p, uint64_t bytes,
			     const struct pool_segment *ex, size_t ex_first,
			     size_t ex_end)
{
	struct idle_runs runs = {0};
	collect_idle(p, &runs, ex, ex_first, ex_end);
	if (!runs.count)
		return 0;
	qsort(runs.runs, runs.count, sizeof *runs.runs, by_age);
	size_t chosen = 0;
	uint64_t total = 0;
	while (chosen < runs.count && total < bytes)
		total += runs.runs[chosen++].bytes;
	if (p->whole && bytes != UINT64_MAX) {
		/* Units come whole, and the youngest chosen may be big
		 * enough alone for what older small ones were chosen for:
		 * keep only those needed to reach |bytes|, the youngest
		 * dropped first (each one given back too many is a map
		 * again later). */
		size_t kept = 0;
		for (size_t i = chosen; i-- > 0;)
			if (total - runs.runs[i].bytes >= bytes) {
				total -= runs.runs[i].bytes;
				runs.runs[i].bytes = 0;
			}
		for (size_t i = 0; i < chosen; i++)
			if (runs.runs[i].bytes)
				runs.runs[kept++] = runs.runs[i];
		chosen = kept;
	}

	/* Chosen runs that touch become one call. */
	qsort(runs.runs, chosen, sizeof *runs.runs, by_address);
	uint64_t done = 0;
	for (size_t i = 0; i < chosen;) {
		struct idle_run run = runs.runs[i++];
		while (run.seg->vm && i < chosen &&
		       runs.runs[i].seg == run.seg &&
		       runs.runs[i].first == run.end) {
			run.end = runs.runs[i].end;
			run.bytes += runs.runs[i++].bytes;
		}
		if (release_run(p, &run))
			done += run.bytes;
	}
	free(runs.runs);
	return done;
}

/* The bound: mapped bytes stay within (1 + overhead) of the most bytes in
 * use so far, counting the reserve being made. */
static uint64_t mapped_limit(const struct pool_state *p, size_t incoming)
{
	uint64_t base = p->live + incoming;
	if (base < p->peak_live)
		base = p->peak_live;
	return (uint64_t)((double)base * (1.0 + p->overhead));
}

/* Before |need| more bytes are mapped: unmap idle memory so that the
 * total stays within the bound, as far as idle memory allows. */
static void make_room(struct pool_state *p, uint64_t need, size_t incoming,
		      const struct pool_segment *ex, size_t ex_first,
		      size_t ex_end)
{
	uint64_t limit = mapped_limit(p, incoming);
	if (p->mapped + need > limit)
		release_idle(p, p->mapped + need - limit, ex, ex_first,
			     ex_end);
}

/* unmap = whole: the most pages one vm_map call may cover for a block
 * spanning |span| pages — a quarter of the span, rounded down to a power
 * of two, at most `unit`. A unit goes back only once no block touches
 * it, so a unit much larger than the blocks later placed on it would
 * stay mapped for a small one; a quarter keeps what such a block strands
 * small against the big block that mapped it, while a big block still
 * costs a few physical allocations, not one per page. Otherwise no cap:
 * a run of pages is one call. */
static size_t unit_cap(const struct pool_state *p, size_t span)
{
	if (!p->whole)
		return SIZE_MAX;
	size_t cap = 1;
	while (cap * 2 <= span / 4 && cap * 2 <= p->unit_pages)
		cap *= 2;
	return cap;
}

/* Maps the unmapped pages of [offset, offset + size) of |s|, one call per
 * run of them (unmap = whole: a run in units of unit_cap pages). On
 * failure unmaps what this call mapped. */
static wafer_status map_range(struct pool_state *p, struct pool_segment *s,
			      size_t offset, size_t size, size_t incoming)
{
	size_t first, end;
	page_span(p, offset, size, &first, &end);
	if (!track_pages(s, end))
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "pool: out of host memory");
	size_t missing = (end - first) - wafer__bits_count(s->mapped, first, end);
	if (!missing)
		return WAFER_OK;
	make_room(p, (uint64_t)missing * p->gran, incoming, s, first, end);
	size_t cap = unit_cap(p, end - first);
	/* Several calls: fail before the first if the limit refuses the
	 * lot, rather than map some and unmap them again. */
	if (missing > cap) {
		wafer_status status = wafer__storage_limit_check(
			p->base.storage, missing * p->gran);
		if (status != WAFER_OK)
			return status;
	}

	/* Each run of missing pages in one call; with a cap, in units of
	 * at most |cap| pages, each a start (vm_map_pieces: one call for the
	 * run where the plugin can, as the driver's cost goes with calls). */
	wafer_status status = WAFER_OK;
	size_t at = first;
	while (at < end) {
		size_t from = wafer__bits_find(s->mapped, at, end, 0);
		size_t to = wafer__bits_find(s->mapped, from, end, 1);
		if (from == to)
			break;
		size_t pages = to - from;
		status = cap < pages ? wafer__storage_vm_map_pieces(
					       p->base.storage, s->chunk.resource,
					       from * p->gran, pages * p->gran,
					       cap * p->gran)
				     : wafer__storage_vm_map(
					       p->base.storage, s->chunk.resource,
					       from * p->gran, pages * p->gran);
		wafer__log_debug("memory", "pool: map %s pages [%zu, %zu) for "
				"%zu bytes: %s", s->arena->name, from, to,
				incoming, wafer_status_string(status));
		if (status != WAFER_OK)
			break;
		wafer__bits_set(s->mapped, from, to);
		for (size_t unit = from; unit < to;
		     unit = to - unit > cap ? unit + cap : to)
			wafer__bits_set(s->starts, unit, unit + 1);
		/* Freshly mapped pages are as young as any. */
		stamp_pages(s, from, to, p->tick);
		s->mapped_bytes += pages * p->gran;
		p->mapped += pages * p->gran;
		at = to;
	}
	if (status == WAFER_OK)
		return WAFER_OK;

	/* Roll back. The range lies in one free block; mapped pages wholly
	 * inside it were mapped by this call or idle before — unmapping the
	 * latter too is harmless. Edge pages shared with a live neighbour
	 * were mapped before and stay. With unmap = whole, the units wholly
	 * inside: this call's are. */
	struct pool_block *b = s->first;
	while (b && b->offset + b->size <= offset)
		b = b->next;
	size_t inner_first, inner_end;
	interior_pages(p, b, &inner_first, &inner_end);
	if (inner_first < first)
		inner_first = first;
	if (inner_end > end)
		inner_end = end;
	struct idle_runs runs = {0};
	while (inner_first < inner_end) {
		size_t from = wafer__bits_find(s->mapped, inner_first,
					       inner_end, 1);
		size_t to = wafer__bits_find(s->mapped, from, inner_end, 0);
		if (from < to && p->whole)
			push_units(p, &runs, s, from, to, NULL, 0, 0);
		else if (from < to)
			runs_push(&runs, (struct idle_run){
				.seg = s, .first = from, .end = to,
				.bytes = (to - from) * p->gran,
			});
		inner_first = to;
	}
	for (size_t i = 0; i < runs.count; i++)
		release_run(p, &runs.runs[i]);
	free(runs.runs);
	return status;
}

/*===----------------------------------------------------------------------===
 * Segments
 *===----------------------------------------------------------------------===*/

/* Reserves |chunk->size| bytes of address space, or, where the machine
 * refuses that much (a sanitizer's shadow layout, `ulimit -v`, a driver
 * with a smaller address space), the largest halving of it that works,
 * down to |needed|. The size that worked becomes the pool's va_size, so
 * only the first segment pays for the search. */
static wafer_status reserve_range(struct pool_state *p, size_t needed,
				  struct wafer__memory_chunk *chunk)
{
	for (;;) {
		wafer_status status = wafer__storage_vm_reserve(
			p->base.storage, chunk->size, &chunk->resource);
		size_t smaller = wafer__align_up(chunk->size / 2, p->gran);
		if (smaller < needed)
			smaller = needed;
		if (status != WAFER_ERROR_OUT_OF_MEMORY ||
		    smaller == chunk->size)
			return status;
		wafer__log_info("memory",
				"pool: %zu bytes of address space refused (%s); "
				"trying %zu",
				chunk->size, wafer__error_detail(), smaller);
		chunk->size = smaller;
		if (p->va_size > smaller)
			p->va_size = smaller;
	}
}

/* A new segment big enough for |size| bytes, holding one free block. */
static wafer_status segment_new(struct pool_state *p, struct pool_arena *a,
				size_t size, size_t incoming,
				struct pool_segment **out)
{
	struct pool_segment *s = calloc(1, sizeof *s);
	struct pool_block *b = s ? block_new(p) : NULL;
	if (!b) {
		free(s);
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "pool: out of host memory");
	}
	wafer_status status;
	if (p->vm) {
		s->vm = true;
		s->chunk.size = wafer__align_up(size, p->gran);
		if (s->chunk.size < p->va_size)
			s->chunk.size = p->va_size;
		while (((size_t)p->gran << s->age_shift) < AGE_SLOT)
			s->age_shift++;
		status = reserve_range(p, wafer__align_up(size, p->gran),
				       &s->chunk);
		s->pages = s->chunk.size / p->gran;
	} else {
		bool small = a == &p->small && size <= p->small_chunk;
		size_t round = a == &p->small ? p->small_chunk : p->large_round;
		/* Not necessarily a power of two. */
		s->chunk.size = small ? p->small_chunk
				: (size + round - 1) / round * round;
		make_room(p, s->chunk.size, incoming, NULL, 0, 0);
		status = wafer__storage_alloc(p->base.storage, s->chunk.size,
					      &s->chunk.resource);
		if (status == WAFER_OK) {
			s->mapped_bytes = s->chunk.size;
			p->mapped += s->chunk.size;
		}
	}
	if (status != WAFER_OK) {
		free(s);
		block_recycle(p, b);
		return status;
	}
	s->arena = a;
	wafer__memory_list_push(&a->segments, &s->chunk);
	s->first = b;
	b->seg = s;
	b->offset = 0;
	b->size = s->chunk.size;
	bin_insert(a, b);
	*out = s;
	return WAFER_OK;
}

/* Gives an entirely free segment back to storage. */
static void segment_free(struct pool_state *p, struct pool_segment *s)
{
	struct pool_arena *a = s->arena;
	while (s->first) {
		struct pool_block *b = s->first;
		s->first = b->next;
		if (b->free)
			bin_remove(a, b);
		block_recycle(p, b);
	}
	wafer__memory_list_remove(&a->segments, &s->chunk);
	if (s->vm)
		wafer__storage_vm_release(p->base.storage, s->chunk.resource,
					  s->mapped_bytes);
	else
		wafer__storage_free(p->base.storage, s->chunk.resource,
				    s->chunk.size);
	p->mapped -= s->mapped_bytes;
	free(s->mapped);
	free(s->starts);
	free(s->idle_since);
	free(s);
}

/*===----------------------------------------------------------------------===
 * Reserve and release
 *===----------------------------------------------------------------------===*/

/* Where in free block |b| (vm) |size| bytes need the fewest new pages:
 * at its start, or where a window of them starts or ends with a run of
 * mapped pages inside the block. Stores the offset in *at and returns
 * the pages it needs. A big block whose first bytes lie on pages that
 * were unmapped, with idle mapped pages further in (a hole left by a
 * bigger tensor of an earlier step), is then used where it is mapped
 * instead of mapping its start and unmapping its middle. */
static size_t best_window(const struct pool_state *p,
			  const struct pool_block *b, size_t size, size_t *at)
{
	const struct pool_segment *s = b->seg;
	size_t best = unmapped_pages(p, s, b->offset, size);
	*at = b->offset;
	if (best == 0 || size < p->gran)
		return best;
	/* Page-aligned windows of |pages| pages wholly inside the block. */
	size_t pages = (size + p->gran - 1) / p->gran;
	size_t lo = (b->offset + p->gran - 1) / p->gran;
	size_t end = b->offset + b->size;
	if (end / p->gran < lo + pages)
		return best;
	size_t hi = end / p->gran - pages; /* last start page */
	size_t known = s->tracked < end / p->gran ? s->tracked : end / p->gran;
	for (size_t q = lo; q < known;) {
		size_t from = wafer__bits_find(s->mapped, q, known, 1);
		if (from == known)
			break;
		size_t to = wafer__bits_find(s->mapped, from, known, 0);
		size_t starts[2] = {from, to >= pages ? to - pages : 0};
		for (int i = 0; i < 2; i++) {
			size_t k = starts[i];
			if (k < lo || k > hi)
				continue;
			size_t cost = unmapped_pages(p, s, k * p->gran, size);
			if (cost < best) {
				best = cost;
				*at = k * p->gran;
			}
		}
		if (best == 0)
			break;
		q = to;
	}
	return best;
}

/* The best fit by cost: the smallest free block whose first |size| bytes
 * need no new page, else the one needing the fewest (the smaller on a
 * tie), placed where in it the fewest are needed (best_window; *at).
 * Otherwise blocks are placed at the start of the hole: that keeps a
 * segment's working set packed at its low end. */
static struct pool_block *find_block(struct pool_state *p, struct pool_arena *a,
				     size_t size, size_t *at)
{
	struct pool_block *best = NULL;
	size_t best_cost = SIZE_MAX, best_at = 0;
	unsigned first = bin_of(size);
	for (unsigned bin = next_bin(a, first); bin < POOL_BINS;
	     bin = next_bin(a, bin + 1)) {
		/* In the request's own bin, skip the smaller blocks. */
		struct pool_block *start = a->bins[bin];
		if (bin == first) {
			struct pool_block *x = bin_seek(a, bin, size, 0, NULL);
			start = x ? x->free_next : start;
		}
		for (struct pool_block *b = start; b; b = b->free_next) {
			p->free_steps++;
			if (b->size < size)
				continue;
			if (!b->seg->vm || unmapped_pages(p, b->seg, b->offset,
							  size) == 0) {
				*at = b->offset;
				return b;
			}
			size_t where;
			size_t cost = best_window(p, b, size, &where);
			if (cost < best_cost) {
				best = b;
				best_cost = cost;
				best_at = where;
			}
		}
	}
	*at = best_at;
	return best;
}

/* Cuts the first |size| bytes out of free block |b|; the rest stays a
 * free block. */
static wafer_status split(struct pool_state *p, struct pool_block *b,
			  size_t size)
{
	struct pool_arena *a = b->seg->arena;
	struct pool_block *rest = NULL;
	if (size < b->size) {
		rest = block_new(p);
		if (!rest)
			return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
					   "pool: out of host memory");
	}
	bin_remove(a, b);
	if (rest) {
		rest->seg = b->seg;
		rest->offset = b->offset + size;
		rest->size = b->size - size;
		rest->prev = b;
		rest->next = b->next;
		if (b->next)
			b->next->prev = rest;
		b->next = rest;
		bin_insert(a, rest);
	}
	b->size = size;
	return WAFER_OK;
}

static wafer_status pool_reserve(void *self, size_t size,
				 struct wafer__slice *out)
{
	struct pool_state *p = self;
	if (size > SIZE_MAX / 4)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "pool: %zu bytes cannot be placed", size);
	size_t aligned = wafer__align_up(size, p->align);
	struct pool_arena *a = size <= p->small_max ? &p->small : &p->large;
	const struct wafer__storage_counters *c = &p->base.storage->counters;
	uint64_t calls = c->allocs + c->maps;

	size_t at = 0;
	struct pool_block *b = find_block(p, a, aligned, &at);
	if (!b) {
		struct pool_segment *fresh = NULL;
		wafer_status status = segment_new(p, a, aligned, size, &fresh);
		if (status != WAFER_OK)
			return status;
		b = fresh->first;
		at = 0;
	}
	struct pool_segment *s = b->seg;
	wafer_status status = WAFER_OK;
	if (s->vm)
		status = map_range(p, s, at, aligned, size);
	/* Placed inside the hole: its front stays a free block. */
	if (status == WAFER_OK && at > b->offset) {
		status = split(p, b, at - b->offset);
		if (status == WAFER_OK) {
			bin_insert(a, b);
			b = b->next;
		}
	}
	if (status == WAFER_OK)
		status = split(p, b, aligned);
	if (status != WAFER_OK)
		return status;

	s->used_blocks++;
	b->requested = size;
	p->live += size;
	p->used += aligned;
	if (p->live > p->peak_live)
		p->peak_live = p->live;
	if (c->allocs + c->maps == calls)
		p->base.stats.hits++;
	else
		p->base.stats.misses++;
	out->resource = s->chunk.resource;
	out->offset = b->offset;
	out->token = b;
	return WAFER_OK;
}

/* Merges free neighbour |other| into |b| (not in a bin). */
static void merge_into(struct pool_state *p, struct pool_block *b,
		       struct pool_block *other)
{
	bin_remove(b->seg->arena, other);
	if (other == b->prev) {
		b->offset = other->offset;
		b->prev = other->prev;
		if (other->prev)
			other->prev->next = b;
		else
			b->seg->first = b;
	} else {
		b->next = other->next;
		if (other->next)
			other->next->prev = b;
	}
	b->size += other->size;
	block_recycle(p, other);
}

static uint64_t idle_bytes(struct pool_state *p)
{
	struct idle_runs runs = {0};
	collect_idle(p, &runs, NULL, 0, 0);
	uint64_t idle = 0;
	for (size_t i = 0; i < runs.count; i++)
		idle += runs.runs[i].bytes;
	free(runs.runs);
	return idle;
}

static void pool_release(void *self, const struct wafer__slice *slice)
{
	struct pool_state *p = self;
	struct pool_block *b = slice->token;
	struct pool_segment *s = b->seg;
	p->live -= b->requested;
	p->used -= b->size;
	s->used_blocks--;
	next_tick(p);
	if (s->vm) {
		size_t first, end;
		page_span(p, b->offset, b->size, &first, &end);
		stamp_pages(s, first, end, p->tick);
	} else {
		s->chunk_idle_since = p->tick;
	}
	if (b->prev && b->prev->free)
		merge_into(p, b, b->prev);
	if (b->next && b->next->free)
		merge_into(p, b, b->next);
	bin_insert(s->arena, b);

	/* mapped - used bounds idle from above: the cheap test first. */
	if (p->max_idle && p->mapped - p->used > p->max_idle) {
		uint64_t idle = idle_bytes(p);
		if (idle > p->max_idle)
			release_idle(p, idle - p->max_idle, NULL, 0, 0);
	}
}

static void pool_trim(void *self)
{
	struct pool_state *p = self;
	release_idle(p, UINT64_MAX, NULL, 0, 0);
	for (int i = 0; i < 2; i++) {
		struct wafer__memory_chunk *c = arena_of(p, i)->segments.head;
		while (c) {
			struct wafer__memory_chunk *next = c->next;
			struct pool_segment *s = (struct pool_segment *)c;
			if (s->used_blocks == 0)
				segment_free(p, s);
			c = next;
		}
	}
}

/*===----------------------------------------------------------------------===
 * Life cycle
 *===----------------------------------------------------------------------===*/

/* Sets the arenas up and reads the options (checked against pool_options
 * by base_create). */
static wafer_status pool_setup(void *self, const struct wafer__config *config)
{
	struct pool_state *p = self;
	struct wafer__storage *storage = p->base.storage;
	p->align = storage->alignment;
	p->vm = wafer__storage_has_vm(storage) &&
		storage->vm_granularity % storage->alignment == 0;
	p->gran = p->vm ? storage->vm_granularity : 0;
	p->small.name = "small";
	p->large.name = "large";
	p->small.steps = p->large.steps = &p->free_steps;
	p->small.rng = p->large.rng = UINT64_C(0x9e3779b97f4a7c15);
	const char *section = p->base.section;
	wafer_status status = wafer__config_get_size(
		config, section, "small_max", (uint64_t)1 << 20, &p->small_max);
	if (status == WAFER_OK)
		status = wafer__config_get_double(config, section, "overhead",
						  0.03, &p->overhead);
	if (status == WAFER_OK && (p->overhead < 0 || p->overhead > 100))
		return wafer__memory_option_invalid(&p->base, config, "overhead",
						    "a fraction from 0 to 100");
	if (status == WAFER_OK)
		status = wafer__config_get_size(config, section, "max_idle", 0,
						&p->max_idle);
	if (status == WAFER_OK)
		status = wafer__config_get_size(
			config, section, "va_size",
			(uint64_t)(p->gran ? p->gran : 1) << 17, &p->va_size);
	if (status == WAFER_OK)
		status = wafer__config_get_size(config, section, "small_chunk",
						(uint64_t)2 << 20,
						&p->small_chunk);
	if (status == WAFER_OK)
		status = wafer__config_get_size(config, section, "large_round",
						(uint64_t)2 << 20,
						&p->large_round);
	uint64_t unit = 0;
	if (status == WAFER_OK)
		status = wafer__config_get_size(config, section, "unit",
						(uint64_t)8 << 20, &unit);
	if (status != WAFER_OK)
		return status;
	p->unit_pages = p->gran && unit > p->gran ? unit / p->gran : 1;
	/* The plugin may take whole unmaps only (`[cuda] vm_page =
	 * whole`): then that is the default, and cutting is refused here
	 * rather than at every unmap. */
	bool plugin_whole = p->vm && wafer__storage_unmaps_whole(p->base.storage);
	const char *unmap = wafer__config_get(config, section, "unmap",
					      plugin_whole ? "whole" : "pages");
	if (strcmp(unmap, "whole") == 0)
		p->whole = true;
	else if (strcmp(unmap, "pages") != 0 || plugin_whole)
		return wafer__memory_option_invalid(
			&p->base, config, "unmap",
			plugin_whole ? "whole: the plugin's vm_unmap takes whole "
				       "vm_map calls only"
				     : "whole or pages");
	/* Sizes the arithmetic relies on: aligned and non-zero. */
	p->small_chunk = wafer__align_up(p->small_chunk ? p->small_chunk : 1,
					 p->align);
	p->large_round = wafer__align_up(p->large_round ? p->large_round : 1,
					 p->align);
	if (p->gran)
		p->va_size = wafer__align_up(p->va_size ? p->va_size : 1,
					     p->gran);
	return WAFER_OK;
}

static void pool_destroy(void *self)
{
	struct pool_state *p = self;
	for (int i = 0; i < 2; i++)
		while (arena_of(p, i)->segments.head)
			segment_free(p, (struct pool_segment *)arena_of(p, i)
						->segments.head);
	while (p->spare) {
		struct pool_block *b = p->spare;
		p->spare = b->next;
		free(b);
	}
	free(p);
}

static void pool_stats(void *self, struct wafer__memory_strategy_stats *out)
{
	struct pool_state *p = self;
	wafer__memory_base_stats(p, out);
	out->cached_bytes = p->mapped > p->used ? p->mapped - p->used : 0;
	out->segments = p->small.segments.count + p->large.segments.count;
	out->free_steps = p->free_steps;
}

/* Every segment of both arenas, the runs of its pages (past the tracked
 * ones none was ever mapped) and every block, free ones included. */
static void pool_snapshot(void *self, struct wafer_memory_snapshot *out)
{
	struct pool_state *p = self;
	for (int i = 0; i < 2; i++) {
		const struct pool_arena *a = arena_of(p, i);
		for (const struct wafer__memory_chunk *c = a->segments.head; c;
		     c = c->next) {
			const struct pool_segment *s =
				(const struct pool_segment *)c;
			uint32_t n = wafer__memory_snapshot_segment(
				out, a->name, c->resource, c->size,
				s->mapped_bytes, s->vm ? p->gran : 0);
			for (size_t from = 0; s->vm && from < s->pages;) {
				bool mapped = from < s->tracked &&
					      wafer__bits_find(s->mapped, from,
							       from + 1, 1) == from;
				size_t to = from < s->tracked
					? wafer__bits_find(s->mapped, from,
							   s->tracked, !mapped)
					: s->pages;
				if (!mapped && to == s->tracked)
					to = s->pages;
				wafer__memory_snapshot_pages(
					out, n, (uint64_t)from * p->gran,
					(uint64_t)(to - from) * p->gran, mapped);
				from = to;
			}
			for (const struct pool_block *b = s->first; b;
			     b = b->next)
				wafer__memory_snapshot_block(out, n, b->offset,
							     b->size, !b->free,
							     b->requested);
		}
	}
}

WAFER_MEMORY_STRATEGY(pool, pool_setup, .destroy = pool_destroy,
		      .stats = pool_stats, .snapshot = pool_snapshot);
