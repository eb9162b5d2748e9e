/* wafer — SPDX-License-Identifier: MIT
 * kernel_table.c: open-addressing hash of a plugin's kernels. */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include "lib/error.h"
#include "lib/hash.h"
#include "lib/kernel_table.h"

#include <wafer/plugin_util.h>

struct wafer__kernel_table_entry {
	uint64_t hash;
	const char *op;
	const char *variant; /* NULL: the default-variant alias */
	wafer_dtype dtype;
	const struct wafer_kernel *kernel;
};

const char *wafer__dtype_name(wafer_dtype dtype)
{
	return wafer_plugin_dtype_name((uint32_t)dtype);
}

/* FNV-1a over op, a separator, variant and the dtype. */
static uint64_t key_hash(const char *op, const char *variant, wafer_dtype dtype)
{
	uint64_t h = wafer__fnv_byte(wafer__fnv_string(WAFER_FNV_INIT, op), 0xff);
	h = wafer__fnv_string(h, variant ? variant : "");
	return (h ^ (uint64_t)dtype) * UINT64_C(1099511628211);
}

static int same_variant(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static struct wafer__kernel_table_entry *
probe(const struct wafer__kernel_table *table, const char *op,
      const char *variant, wafer_dtype dtype)
{
	uint64_t h = key_hash(op, variant, dtype);
	for (size_t i = h & table->mask;; i = (i + 1) & table->mask) {
		struct wafer__kernel_table_entry *e = &table->entries[i];
		if (!e->kernel ||
		    (e->hash == h && e->dtype == dtype &&
		     strcmp(e->op, op) == 0 && same_variant(e->variant, variant)))
			return e;
	}
}

static void insert(struct wafer__kernel_table *table, const char *variant,
		   const struct wafer_kernel *k)
{
	struct wafer__kernel_table_entry *e = probe(table, k->op, variant, k->dtype);
	if (e->kernel)
		return; /* first listed wins: the plugin's default */
	*e = (struct wafer__kernel_table_entry){
		.hash = key_hash(k->op, variant, k->dtype),
		.op = k->op,
		.variant = variant,
		.dtype = k->dtype,
		.kernel = k,
	};
}

/* The plugin's table entries may be larger than ours (a plugin built for a
 * later minor version appends fields): step by the entries' struct_size. */
static const struct wafer_kernel *kernel_at(const struct wafer__kernel_table *t,
					    size_t i)
{
	return (const struct wafer_kernel *)((const char *)t->kernels +
					     i * t->stride);
}

void wafer__kernel_cache_init(struct wafer__kernel_cache *cache)
{
	for (size_t i = 0; i < WAFER_KERNEL_CACHE_SIZE; i++) {
		atomic_init(&cache->entries[i].sequence, 0);
		atomic_init(&cache->entries[i].op, NULL);
		atomic_init(&cache->entries[i].variant, NULL);
		atomic_init(&cache->entries[i].dtype, 0);
		atomic_init(&cache->entries[i].kernel, NULL);
	}
}

wafer_status wafer__kernel_table_init(struct wafer__kernel_table *table,
				      const char *backend,
				      const struct wafer_kernel *kernels,
				      size_t count)
{
	size_t capacity = 16;
	while (capacity < 4 * count) /* two keys per kernel, half full */
		capacity *= 2;
	table->entries = calloc(capacity, sizeof *table->entries);
	if (!table->entries) {
		wafer__kernel_table_fini(table);
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY, "out of host memory");
	}
	table->mask = capacity - 1;
	table->kernels = kernels;
	table->kernel_count = count;
	table->backend = backend;
	table->stride = count ? kernels[0].struct_size : sizeof *kernels;
	if (count && table->stride < sizeof *kernels) {
		wafer__kernel_table_fini(table);
		return wafer__fail(WAFER_ERROR_PLUGIN,
				   "%s: kernel table entries have struct_size "
				   "%zu, the core needs at least %zu",
				   backend, table->stride, sizeof *kernels);
	}
	for (size_t i = 0; i < count; i++) {
		const struct wafer_kernel *k = kernel_at(table, i);
		if (!k->op || !k->variant) {
			wafer__kernel_table_fini(table);
			return wafer__fail(WAFER_ERROR_PLUGIN,
					   "%s: kernel table entry %zu has no %s",
					   backend, i, k->op ? "variant" : "op");
		}
		insert(table, k->variant, k);
		insert(table, NULL, k);
	}
	return WAFER_OK;
}

void wafer__kernel_table_fini(struct wafer__kernel_table *table)
{
	free(table->entries);
	table->entries = NULL;
}

wafer_status wafer__kernel_refs_init(struct wafer__kernel_refs *refs,
				     const struct wafer__kernel_table *table)
{
	size_t count = table->kernel_count;
	refs->refs = malloc((count ? count : 1) * sizeof *refs->refs);
	refs->count = 0;
	if (!refs->refs)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY, "out of host memory");
	for (size_t i = 0; i < count; i++)
		refs->refs[i] = kernel_at(table, i);
	refs->count = count;
	return WAFER_OK;
}

void wafer__kernel_refs_fini(struct wafer__kernel_refs *refs)
{
	free(refs->refs);
	refs->refs = NULL;
	refs->count = 0;
}

const struct wafer_kernel *const *
wafer__kernel_refs_ref(const struct wafer__kernel_refs *refs,
		       const struct wafer__kernel_table *table,
		       const struct wafer_kernel *kernel)
{
	size_t i = (size_t)((const char *)kernel - (const char *)table->kernels) /
		   table->stride;
	return &refs->refs[i];
}

/* What the plugin does have under |op|, for the error message. */
static void list_dtypes(const struct wafer__kernel_table *table, const char *op,
			char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < table->kernel_count && used < size; i++) {
		const struct wafer_kernel *k = kernel_at(table, i);
		if (strcmp(k->op, op) == 0)
			used += (size_t)snprintf(buf + used, size - used,
						 "%s%s/%s", used ? ", " : "",
						 wafer__dtype_name(k->dtype),
						 k->variant);
	}
}

static void cache_put(struct wafer__kernel_cache *cache, const char *op,
		      const char *variant, wafer_dtype dtype,
		      const struct wafer_kernel *k)
{
	struct wafer__kernel_cache_entry *e = wafer__kernel_cache_entry(cache, op);
	uint32_t sequence = atomic_load_explicit(&e->sequence,
						 memory_order_relaxed);
	/* Another writer holds the entry: skip caching, it is only a hint. */
	if ((sequence & 1) ||
	    !atomic_compare_exchange_strong_explicit(&e->sequence, &sequence,
						     sequence + 1,
						     memory_order_acquire,
						     memory_order_relaxed))
		return;
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&e->op, op, memory_order_relaxed);
	atomic_store_explicit(&e->variant, variant, memory_order_relaxed);
	atomic_store_explicit(&e->dtype, (int)dtype, memory_order_relaxed);
	atomic_store_explicit(&e->kernel, k, memory_order_relaxed);
	atomic_store_explicit(&e->sequence, sequence + 2, memory_order_release);
}

const struct wafer_kernel *
wafer__kernel_table_find_slow(const struct wafer__kernel_table *table,
			      struct wafer__kernel_cache *cache, const char *op,
			      const char *variant, wafer_dtype dtype)
{
	const struct wafer__kernel_table_entry *e =
		probe(table, op, variant, dtype);
	if (e->kernel) {
		if (cache)
			cache_put(cache, op, variant, dtype, e->kernel);
		return e->kernel;
	}

	char have[256];
	list_dtypes(table, op, have, sizeof have);
	wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
		    "kernel '%s' (%s%s%s) is not supported by %s%s%s%s", op,
		    wafer__dtype_name(dtype), variant ? ", variant " : "",
		    variant ? variant : "", table->backend,
		    have[0] ? " (it has: " : "", have, have[0] ? ")" : "");
	return NULL;
}

const struct wafer_kernel *
wafer__kernel_table_at(const struct wafer__kernel_table *table, size_t i)
{
	return kernel_at(table, i);
}
