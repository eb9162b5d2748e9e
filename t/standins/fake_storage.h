/* wafer — SPDX-License-Identifier: MIT
 *
 * fake_storage.h: a storage for the memory-strategy tests (t/memory_*.c),
 * behind the same struct wafer__storage a plugin's table gets. It backs
 * every resource with real host memory — alloc with posix_memalign, the
 * virtual-memory entries with mmap(PROT_NONE) and mprotect, so a strategy
 * that hands out an unmapped page faults instead of passing — and it:
 *
 *   - counts every call (allocs, frees, maps, unmaps, syncs, quiesces),
 *     and the calls per entry (per.alloc, per.vm_map, ...);
 *   - fails every k-th acquiring call (alloc, alloc_async, vm_reserve,
 *     vm_map) with WAFER_ERROR_OUT_OF_MEMORY when fail_every = k;
 *   - can defer free_async until the next sync, as a GPU queue does;
 *   - can fail the next N syncs;
 *   - checks the contract (unknown frees, double maps, unaligned ranges)
 *     and counts violations.
 *
 * Header-only, like tap.h, so each test stays one file. */
#ifndef WAFER_T_FAKE_STORAGE_H
#define WAFER_T_FAKE_STORAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lib/config.h"
#include "lib/error.h"
#include "lib/memory/memory.h"
#include "lib/memory/storage.h"
#include "t/tap.h"

enum fake_kind { FAKE_ALLOC, FAKE_ASYNC, FAKE_RANGE };

struct fake_object {
	uint64_t resource;
	size_t size;
	enum fake_kind kind;
	bool pending_free;  /* free_async issued, sync not yet run */
	uint8_t *mapped;    /* FAKE_RANGE: one byte per page */
};

struct fake_options {
	size_t alignment;   /* 0: 256 */
	size_t granularity; /* 0: 64 KiB */
	bool vm;            /* offer the vm entries */
	bool async;         /* offer alloc_async/free_async */
	bool defer_frees;   /* free_async completes at the next sync */
};

struct fake_storage {
	struct wafer__storage storage; /* what the strategy gets */
	struct wafer_storage_ops ops;
	struct fake_options opt;

	unsigned long allocs, frees, maps, unmaps, syncs, quiesces;
	/* The calls per entry, as wafer_memory_usage's calls_* count them. */
	struct {
		unsigned long alloc, free, alloc_async, free_async;
		unsigned long vm_reserve, vm_release, vm_map, vm_unmap;
	} per;
	unsigned long acquires;   /* acquiring calls, failed ones included */
	unsigned long fail_every; /* 0: never */
	unsigned long failures;
	unsigned long fail_syncs; /* the next N syncs fail */
	unsigned long violations;
	char first_violation[256];

	struct fake_object *objects;
	size_t count, capacity;
	uint64_t bytes; /* allocated (not yet freed) + mapped */
};

static inline void fake_violation(struct fake_storage *f, const char *what,
				  uint64_t resource)
{
	if (f->violations++ == 0)
		snprintf(f->first_violation, sizeof f->first_violation,
			 "%s (resource 0x%llx)", what,
			 (unsigned long long)resource);
}

static inline struct fake_object *fake_find(struct fake_storage *f,
					    uint64_t resource)
{
	for (size_t i = 0; i < f->count; i++)
		if (f->objects[i].resource == resource)
			return &f->objects[i];
	return NULL;
}

static inline void fake_forget(struct fake_storage *f, struct fake_object *o)
{
	free(o->mapped);
	*o = f->objects[--f->count];
}

static inline wafer_status fake_add(struct fake_storage *f,
				    struct fake_object o)
{
	if (f->count == f->capacity) {
		size_t capacity = f->capacity ? f->capacity * 2 : 64;
		struct fake_object *grown =
			realloc(f->objects, capacity * sizeof *grown);
		if (!grown)
			return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY, "fake: host");
		f->objects = grown;
		f->capacity = capacity;
	}
	f->objects[f->count++] = o;
	return WAFER_OK;
}

/* True when this acquiring call is the k-th and must fail. */
static inline bool fake_should_fail(struct fake_storage *f)
{
	f->acquires++;
	if (f->fail_every && f->acquires % f->fail_every == 0) {
		f->failures++;
		return true;
	}
	return false;
}

static inline wafer_status fake_alloc_kind(struct fake_storage *f, size_t size,
					   enum fake_kind kind,
					   wafer_resource *out)
{
	*out = 0;
	if (size == 0)
		fake_violation(f, "alloc of 0 bytes", 0);
	if (fake_should_fail(f))
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "fake: injected failure of alloc(%zu)", size);
	void *p = NULL;
	if (posix_memalign(&p, f->opt.alignment, size ? size : 1))
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY, "fake: host");
	wafer_status status = fake_add(
		f, (struct fake_object){(uint64_t)(uintptr_t)p, size, kind,
					false, NULL});
	if (status != WAFER_OK) {
		free(p);
		return status;
	}
	f->bytes += size;
	*out = (uint64_t)(uintptr_t)p;
	return WAFER_OK;
}

static inline wafer_status fake_alloc(void *device, size_t size,
				      wafer_resource *out)
{
	struct fake_storage *f = device;
	f->allocs++;
	f->per.alloc++;
	return fake_alloc_kind(f, size, FAKE_ALLOC, out);
}

static inline void fake_release_object(struct fake_storage *f,
				       struct fake_object *o)
{
	f->bytes -= o->size;
	free((void *)(uintptr_t)o->resource);
	fake_forget(f, o);
}

static inline void fake_free(void *device, wafer_resource resource)
{
	struct fake_storage *f = device;
	f->frees++;
	f->per.free++;
	struct fake_object *o = fake_find(f, resource);
	if (!o || o->kind == FAKE_RANGE || o->pending_free) {
		fake_violation(f, "free of a resource not allocated", resource);
		return;
	}
	fake_release_object(f, o);
}

static inline wafer_status fake_alloc_async(void *device, void *queue,
					    size_t size, wafer_resource *out)
{
	struct fake_storage *f = device;
	f->allocs++;
	f->per.alloc_async++;
	return fake_alloc_kind(f, size, FAKE_ASYNC, out);
}

static inline wafer_status fake_free_async(void *device, void *queue,
					   wafer_resource resource)
{
	struct fake_storage *f = device;
	f->frees++;
	f->per.free_async++;
	struct fake_object *o = fake_find(f, resource);
	if (!o || o->kind != FAKE_ASYNC || o->pending_free) {
		fake_violation(f, "free_async of a resource not allocated",
			       resource);
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT, "fake");
	}
	if (f->opt.defer_frees)
		o->pending_free = true; /* the queue frees it at sync */
	else
		fake_release_object(f, o);
	return WAFER_OK;
}

/* The queue drains: deferred frees happen. */
static inline void fake_drain(struct fake_storage *f)
{
	for (size_t i = 0; i < f->count;) {
		if (f->objects[i].pending_free)
			fake_release_object(f, &f->objects[i]);
		else
			i++;
	}
}

static inline size_t fake_pending(const struct fake_storage *f)
{
	size_t n = 0;
	for (size_t i = 0; i < f->count; i++)
		n += f->objects[i].pending_free;
	return n;
}

static inline wafer_status fake_sync(void *data)
{
	struct fake_storage *f = data;
	f->syncs++;
	if (f->fail_syncs) {
		f->fail_syncs--;
		return wafer__fail(WAFER_ERROR_DEVICE,
				   "fake: injected sync failure");
	}
	fake_drain(f);
	return WAFER_OK;
}

static inline wafer_status fake_quiesce(void *data)
{
	struct fake_storage *f = data;
	f->quiesces++;
	fake_drain(f);
	return WAFER_OK;
}

static inline wafer_status fake_copy_in(void *device, void *queue,
					wafer_resource dst, size_t off,
					const void *src, size_t size)
{
	memcpy((char *)(uintptr_t)dst + off, src, size);
	return WAFER_OK;
}

static inline wafer_status fake_copy_out(void *device, void *queue,
					 wafer_resource src, size_t off,
					 void *dst, size_t size)
{
	memcpy(dst, (char *)(uintptr_t)src + off, size);
	return WAFER_OK;
}

static inline wafer_status fake_copy(void *device, void *queue,
				     wafer_resource dst, size_t dst_off,
				     wafer_resource src, size_t src_off,
				     size_t size)
{
	memmove((char *)(uintptr_t)dst + dst_off,
		(char *)(uintptr_t)src + src_off, size);
	return WAFER_OK;
}

static inline wafer_status fake_vm_reserve(void *device, size_t size,
					   wafer_resource *out)
{
	struct fake_storage *f = device;
	f->allocs++;
	f->per.vm_reserve++;
	*out = 0;
	if (size == 0 || size % f->opt.granularity)
		fake_violation(f, "vm_reserve not a multiple of granularity", 0);
	if (fake_should_fail(f))
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "fake: injected failure of vm_reserve(%zu)",
				   size);
	void *p = mmap(NULL, size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint8_t *mapped = calloc(size / f->opt.granularity + 1, 1);
	if (p == MAP_FAILED || !mapped) {
		if (p != MAP_FAILED)
			munmap(p, size);
		free(mapped);
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY, "fake: mmap");
	}
	/* mmap aligns to the host page only; the tests' granularity is a
	 * multiple of it, and the strategies use offsets, never addresses. */
	wafer_status status = fake_add(
		f, (struct fake_object){(uint64_t)(uintptr_t)p, size,
					FAKE_RANGE, false, mapped});
	if (status != WAFER_OK) {
		munmap(p, size);
		free(mapped);
		return status;
	}
	*out = (uint64_t)(uintptr_t)p;
	return WAFER_OK;
}

static inline struct fake_object *fake_range(struct fake_storage *f,
					     uint64_t range, size_t offset,
					     size_t size, const char *what)
{
	struct fake_object *o = fake_find(f, range);
	if (!o || o->kind != FAKE_RANGE) {
		fake_violation(f, what, range);
		return NULL;
	}
	if (size == 0 || offset % f->opt.granularity ||
	    size % f->opt.granularity || offset > o->size ||
	    size > o->size - offset) {
		fake_violation(f, what, range);
		return NULL;
	}
	return o;
}

/* vm_map (|map|) or vm_unmap of [offset, offset + size) of |range|:
 * counts the call and checks the contract (every page unmapped for a
 * map, mapped for an unmap: a violation otherwise). */
static inline wafer_status fake_vm_pages(void *device, wafer_resource range,
					 size_t offset, size_t size, bool map)
{
	struct fake_storage *f = device;
	const char *entry = map ? "vm_map" : "vm_unmap";
	char what[64];

	if (map) {
		f->maps++;
		f->per.vm_map++;
	} else {
		f->unmaps++;
		f->per.vm_unmap++;
	}
	snprintf(what, sizeof what, "%s out of range", entry);
	struct fake_object *o = fake_range(f, range, offset, size, what);
	if (!o)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT, "fake");
	size_t g = f->opt.granularity;
	for (size_t p = offset / g; p < (offset + size) / g; p++)
		if (o->mapped[p] == map)
			fake_violation(f,
				       map ? "vm_map of a mapped page"
					   : "vm_unmap of an unmapped page",
				       range);
	char *at = (char *)(uintptr_t)range + offset;
	if (map) {
		if (fake_should_fail(f))
			return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
					   "fake: injected failure of "
					   "vm_map(%zu)",
					   size);
		if (mprotect(at, size, PROT_READ | PROT_WRITE))
			return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
					   "fake: mprotect");
		f->bytes += size;
	} else {
		/* Like a device: the bytes are gone, the next map is
		 * fresh. */
		madvise(at, size, MADV_DONTNEED);
		mprotect(at, size, PROT_NONE);
		f->bytes -= size;
	}
	memset(o->mapped + offset / g, map, size / g);
	return WAFER_OK;
}

static inline wafer_status fake_vm_map(void *device, wafer_resource range,
				       size_t offset, size_t size)
{
	return fake_vm_pages(device, range, offset, size, true);
}

static inline wafer_status fake_vm_unmap(void *device, wafer_resource range,
					 size_t offset, size_t size)
{
	return fake_vm_pages(device, range, offset, size, false);
}

static inline void fake_vm_release(void *device, wafer_resource range)
{
	struct fake_storage *f = device;
	f->frees++;
	f->per.vm_release++;
	struct fake_object *o = fake_find(f, range);
	if (!o || o->kind != FAKE_RANGE) {
		fake_violation(f, "vm_release of an unknown range", range);
		return;
	}
	size_t g = f->opt.granularity;
	for (size_t p = 0; p < o->size / g; p++)
		f->bytes -= o->mapped[p] ? g : 0;
	munmap((void *)(uintptr_t)range, o->size);
	fake_forget(f, o);
}

static inline void fake_init(struct fake_storage *f,
			     const struct fake_options *options)
{
	memset(f, 0, sizeof *f);
	if (options)
		f->opt = *options;
	if (!f->opt.alignment)
		f->opt.alignment = 256;
	if (!f->opt.granularity)
		f->opt.granularity = 64 << 10;
	f->ops = (struct wafer_storage_ops){
		.struct_size = sizeof f->ops,
		.alloc = fake_alloc,
		.free = fake_free,
		.copy_in = fake_copy_in,
		.copy_out = fake_copy_out,
		.copy = fake_copy,
	};
	if (f->opt.async) {
		f->ops.alloc_async = fake_alloc_async;
		f->ops.free_async = fake_free_async;
	}
	if (f->opt.vm) {
		f->ops.vm_reserve = fake_vm_reserve;
		f->ops.vm_release = fake_vm_release;
		f->ops.vm_map = fake_vm_map;
		f->ops.vm_unmap = fake_vm_unmap;
	}
	f->storage = (struct wafer__storage){
		.ops = &f->ops,
		.device = f,
		.alignment = f->opt.alignment,
		.vm_granularity = f->opt.vm ? f->opt.granularity : 0,
		.quiesce = fake_quiesce,
		.quiesce_data = f,
		.sync = fake_sync,
	};
}

/* Frees whatever is left; returns how many objects were (a leak). */
static inline size_t fake_fini(struct fake_storage *f)
{
	size_t leaked = f->count;
	while (f->count) {
		struct fake_object *o = &f->objects[0];
		if (o->kind == FAKE_RANGE)
			munmap((void *)(uintptr_t)o->resource, o->size);
		else
			free((void *)(uintptr_t)o->resource);
		fake_forget(f, o);
	}
	free(f->objects);
	f->objects = NULL;
	f->capacity = 0;
	return leaked;
}

/* Host address of a slice's first byte. */
static inline unsigned char *fake_ptr(const struct wafer__slice *slice)
{
	return (unsigned char *)(uintptr_t)slice->resource + slice->offset;
}

/* A configuration holding |text| (INI), or NULL after a diagnostic. */
static inline struct wafer__config *fake_config(const char *text)
{
	struct wafer__config *config;
	if (wafer__config_create(&config) != WAFER_OK)
		return NULL;
	if (wafer__config_load_string(config, "test.conf", text, false) !=
	    WAFER_OK) {
		printf("# config: %s\n", wafer__error_detail());
		wafer__config_destroy(config);
		return NULL;
	}
	return config;
}

/* A manager with |strategy| on |f| and options |text| (may be NULL). */
static inline struct wafer__memory *fake_memory(struct fake_storage *f,
						const char *strategy,
						const char *text)
{
	struct wafer__config *config = text ? fake_config(text) : NULL;
	struct wafer__memory *memory = NULL;
	if (wafer__memory_create(strategy, &f->storage, config, &memory) !=
	    WAFER_OK)
		printf("# memory_create(%s): %s\n", strategy,
		       wafer__error_detail());
	wafer__config_destroy(config);
	return memory;
}

/* fake_init(f, options), then a manager as fake_memory makes it. */
static inline struct wafer__memory *
fake_open(struct fake_storage *f, const struct fake_options *options,
	  const char *strategy, const char *text)
{
	fake_init(f, options);
	return fake_memory(f, strategy, text);
}

/* Destroys |m|, then fake_fini(f): returns how many objects leaked. */
static inline size_t fake_close(struct fake_storage *f, struct wafer__memory *m)
{
	wafer__memory_destroy(m);
	return fake_fini(f);
}

/* Four points named |what|: a |strategy| manager on a fresh storage of
 * |options| refuses the options |text| with WAFER_ERROR_CONFIG, its
 * detail names |needle| and the option's origin, and no manager is
 * left. */
static inline void fake_refuses(const struct fake_options *options,
				const char *strategy, const char *text,
				const char *needle, const char *what)
{
	struct fake_storage f;
	fake_init(&f, options);
	struct wafer__config *config = fake_config(text);
	struct wafer__memory *m = (struct wafer__memory *)&f;
	is_status(wafer__memory_create(strategy, &f.storage, config, &m),
		  WAFER_ERROR_CONFIG, "%s refused", what);
	like(wafer__error_detail(), needle, "%s: the detail names it", what);
	like(wafer__error_detail(), "test.conf:",
	     "%s: the detail has the origin", what);
	ok(m == NULL, "%s: no manager on failure", what);
	wafer__config_destroy(config);
	fake_fini(&f);
}

/* Options a strategy refuses, and what the detail must name. */
struct fake_bad_option {
	const char *text, *needle;
};

/* fake_refuses for each of |n| |bad| options, named "bad option I". */
static inline void fake_refuses_each(const struct fake_options *options,
				     const char *strategy,
				     const struct fake_bad_option *bad,
				     size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char what[32];
		snprintf(what, sizeof what, "bad option %zu", i);
		fake_refuses(options, strategy, bad[i].text, bad[i].needle,
			     what);
	}
}

static inline wafer_memory_usage fake_usage(const struct wafer__memory *m)
{
	wafer_memory_usage u = {.struct_size = sizeof u};
	wafer__memory_get_usage(m, &u);
	return u;
}

#endif
