/* wafer — SPDX-License-Identifier: MIT
 *
 * kernel_table.h: finds a plugin kernel by (operation, variant, dtype) in
 * constant time. Built once per device when the runtime opens it
 * (lib/runtime.c) and shared by every client of that device; read-only
 * afterwards, so lookups from any thread take no lock. A NULL variant
 * finds the first entry the plugin listed for (operation, dtype): its
 * default.
 *
 * Each client keeps beside it what is its own: a cache of its recent
 * lookups (struct wafer__kernel_cache, in the client so that a hit costs
 * no load through the device), and the refs that wafer_kernel_find hands
 * out (struct wafer__kernel_refs, one pointer per kernel), so that a ref
 * from another client is still refused. */
#ifndef WAFER_CORE_KERNEL_TABLE_H
#define WAFER_CORE_KERNEL_TABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <wafer/plugin.h>

/* Recent lookups by the address of the name strings: programs pass the
 * same literals again and again, so a hit skips hashing. Each entry is a
 * seqlock (odd sequence: being written) so that lookups from any number of
 * threads take no lock; a hit is still checked against the kernel's own
 * strings, so a buffer reused for another name is never misread. */
#define WAFER_KERNEL_CACHE_SIZE 16

struct wafer__kernel_cache_entry {
	_Atomic uint32_t sequence;
	_Atomic(const char *) op;
	_Atomic(const char *) variant;
	_Atomic int dtype;
	_Atomic(const struct wafer_kernel *) kernel;
};

/* One client's recent lookups; zero-initialised or cache_init. */
struct wafer__kernel_cache {
	struct wafer__kernel_cache_entry entries[WAFER_KERNEL_CACHE_SIZE];
};

void wafer__kernel_cache_init(struct wafer__kernel_cache *cache);

struct wafer__kernel_table {
	struct wafer__kernel_table_entry *entries;
	size_t mask; /* capacity - 1, capacity a power of two */
	const struct wafer_kernel *kernels;
	size_t kernel_count;
	size_t stride; /* bytes between entries: the plugin's struct_size */
	const char *backend;
};

/* One client's refs: refs[i] points at kernel i of the device's table.
 * The public wafer_kernel_ref is the address of one of these, so
 * checking a ref is a range test. */
struct wafer__kernel_refs {
	const struct wafer_kernel **refs;
	size_t count;
};

wafer_status wafer__kernel_table_init(struct wafer__kernel_table *table,
				      const char *backend,
				      const struct wafer_kernel *kernels,
				      size_t count);
void wafer__kernel_table_fini(struct wafer__kernel_table *table);

/* The lookup in the table; on a hit, remembered in |cache| (NULL: none).
 * NULL with WAFER_ERROR_NOT_SUPPORTED recorded: "kernel 'op' (f32,
 * variant v) is not supported by cpu (it has: f16)". */
const struct wafer_kernel *
wafer__kernel_table_find_slow(const struct wafer__kernel_table *table,
			      struct wafer__kernel_cache *cache, const char *op,
			      const char *variant, wafer_dtype dtype);

static inline struct wafer__kernel_cache_entry *
wafer__kernel_cache_entry(struct wafer__kernel_cache *cache, const char *op)
{
	return &cache->entries[((uintptr_t)op >> 4) % WAFER_KERNEL_CACHE_SIZE];
}

/* strcmp(a, b) == 0 for the short names of kernels, inline: on the hit
 * path of every execute a library call costs more than the compare. */
static inline bool wafer__kernel_same_name(const char *a, const char *b)
{
	while (*a == *b) {
		if (!*a)
			return true;
		a++;
		b++;
	}
	return false;
}

/* A hit of the cache, or NULL. */
static inline const struct wafer_kernel *
wafer__kernel_cache_get(struct wafer__kernel_cache *cache, const char *op,
			const char *variant, wafer_dtype dtype)
{
	struct wafer__kernel_cache_entry *e = wafer__kernel_cache_entry(cache, op);
	uint32_t before = atomic_load_explicit(&e->sequence, memory_order_acquire);
	if (before & 1)
		return NULL;
	const char *cached_op = atomic_load_explicit(&e->op, memory_order_relaxed);
	const char *cached_variant =
		atomic_load_explicit(&e->variant, memory_order_relaxed);
	int cached_dtype = atomic_load_explicit(&e->dtype, memory_order_relaxed);
	const struct wafer_kernel *k =
		atomic_load_explicit(&e->kernel, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&e->sequence, memory_order_relaxed) != before)
		return NULL;
	if (!k || cached_op != op || cached_variant != variant ||
	    cached_dtype != (int)dtype)
		return NULL;
	/* Same addresses; make sure they still spell the same names. */
	if (!wafer__kernel_same_name(op, k->op) ||
	    (variant && !wafer__kernel_same_name(variant, k->variant)))
		return NULL;
	return k;
}

/* The kernel, or NULL with WAFER_ERROR_NOT_SUPPORTED recorded (see
 * find_slow); through a client's |cache|. Inline: a cache hit is most of
 * what a launch by name costs over a launch by ref. */
static inline const struct wafer_kernel *
wafer__kernel_find_cached(const struct wafer__kernel_table *table,
			  struct wafer__kernel_cache *cache, const char *op,
			  const char *variant, wafer_dtype dtype)
{
	const struct wafer_kernel *k =
		wafer__kernel_cache_get(cache, op, variant, dtype);
	return k ? k
		 : wafer__kernel_table_find_slow(table, cache, op, variant,
						 dtype);
}

/* The same without a cache (lookups off the launch path). */
static inline const struct wafer_kernel *
wafer__kernel_table_find(const struct wafer__kernel_table *table,
			 const char *op, const char *variant, wafer_dtype dtype)
{
	return wafer__kernel_table_find_slow(table, NULL, op, variant, dtype);
}

/* A client's refs to the kernels of |table|. */
wafer_status wafer__kernel_refs_init(struct wafer__kernel_refs *refs,
				     const struct wafer__kernel_table *table);
void wafer__kernel_refs_fini(struct wafer__kernel_refs *refs);

/* The ref of |kernel| (one of |table|'s): what wafer_kernel_find hands
 * out. */
const struct wafer_kernel *const *
wafer__kernel_refs_ref(const struct wafer__kernel_refs *refs,
		       const struct wafer__kernel_table *table,
		       const struct wafer_kernel *kernel);

/* The kernel behind |ref|, or NULL when |ref| is not one of these refs
 * (another client's, or not a ref at all). No lock, no lookup. */
static inline const struct wafer_kernel *
wafer__kernel_refs_deref(const struct wafer__kernel_refs *refs, const void *ref)
{
	uintptr_t offset = (uintptr_t)ref - (uintptr_t)refs->refs;
	if (offset >= refs->count * sizeof *refs->refs ||
	    offset % sizeof *refs->refs)
		return NULL;
	return refs->refs[offset / sizeof *refs->refs];
}

/* Entry |i| (< kernel_count) of the plugin's table, in its order. */
const struct wafer_kernel *
wafer__kernel_table_at(const struct wafer__kernel_table *table, size_t i);

const char *wafer__dtype_name(wafer_dtype dtype);

#endif
