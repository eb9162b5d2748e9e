/* wafer — SPDX-License-Identifier: MIT
 * memory.c: what every strategy shares — lookup, statistics, the
 * out-of-memory retry (memory.h). */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/error.h"
#include "lib/memory/common.h"
#include "lib/memory/snapshot.h"

struct wafer__memory {
	const struct wafer__memory_strategy_ops *ops;
	void *self;
	struct wafer__storage *storage;
	uint64_t bytes_in_use;
	uint64_t peak_in_use;
	uint64_t reuse_hits;
	/* The out-of-memory hook (wafer__memory_set_oom). */
	wafer__memory_oom_fn oom;
	void *oom_data;
	uint64_t retries; /* reserves retried after a trim */
};

const struct wafer__memory_strategy_ops *
wafer__memory_strategy_find(const char *name)
{
	for (size_t i = 0; wafer__memory_strategies[i]; i++)
		if (strcmp(wafer__memory_strategies[i]->name, name) == 0)
			return wafer__memory_strategies[i];
	return NULL;
}

static void list_strategies(char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; wafer__memory_strategies[i] && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%s",
					 i ? ", " : "",
					 wafer__memory_strategies[i]->name);
}

wafer_status wafer__memory_create(const char *name, struct wafer__storage *storage,
				  const struct wafer__config *config,
				  struct wafer__memory **out_memory)
{
	const char *origin = "the API";
	*out_memory = NULL;
	if (!name) {
		const struct wafer__config_entry *entry =
			config ? wafer__config_lookup(config, "memory", "strategy")
			       : NULL;
		name = entry ? entry->value : wafer__memory_default_strategy;
		origin = entry ? entry->origin : "default";
	}
	const struct wafer__memory_strategy_ops *ops =
		wafer__memory_strategy_find(name);
	if (!ops) {
		char known[256];
		list_strategies(known, sizeof known);
		return wafer__fail(WAFER_ERROR_CONFIG,
				   "%s: unknown memory strategy '%s' (known: %s)",
				   origin, name, known);
	}
	struct wafer__memory *memory =
		wafer__memory_host_calloc(sizeof *memory, "memory manager");
	if (!memory)
		return WAFER_ERROR_OUT_OF_MEMORY;
	memory->ops = ops;
	memory->storage = storage;
	wafer_status status = ops->create(storage, config, &memory->self);
	if (status != WAFER_OK) {
		free(memory);
		return wafer__fail_context(status, "memory strategy %s", name);
	}
	*out_memory = memory;
	return WAFER_OK;
}

void wafer__memory_destroy(struct wafer__memory *memory)
{
	if (!memory)
		return;
	memory->ops->destroy(memory->self);
	free(memory);
}

const char *wafer__memory_strategy_name(const struct wafer__memory *memory)
{
	return memory->ops->name;
}

static uint64_t storage_calls(const struct wafer__storage *s)
{
	const struct wafer__storage_counters *c = &s->counters;
	return c->allocs + c->maps;
}

/* A reserve; on out-of-memory, the strategy's cache is trimmed and it
 * tries once more: cached free memory may be what stands in the way (of
 * the device's limit, or of the device). */
static wafer_status reserve_trimming(struct wafer__memory *memory, size_t size,
				     struct wafer__slice *out_slice)
{
	wafer_status status = memory->ops->reserve(memory->self, size, out_slice);
	if (status == WAFER_ERROR_OUT_OF_MEMORY) {
		/* Cached free memory may be what stands in the way. */
		memory->ops->trim(memory->self);
		memory->retries++;
		status = memory->ops->reserve(memory->self, size, out_slice);
	}
	return status;
}

void wafer__memory_set_oom(struct wafer__memory *memory, wafer__memory_oom_fn fn,
			   void *data)
{
	memory->oom = fn;
	memory->oom_data = data;
}

/* The reserve of |size| failed for want of memory: the hook may release
 * slices and ask for one retry. The failure's detail is kept across the
 * hook (whose own calls may overwrite the thread's detail) and is the
 * result's when the hook declines. */
static wafer_status ask_oom(struct wafer__memory *memory, size_t size,
			    struct wafer__slice *out_slice)
{
	char *detail = strdup(wafer__error_detail());
	const struct wafer__memory_limit *limit = memory->storage->limit;
	wafer_oom_info info = {
		.struct_size = sizeof info,
		.size = size,
		.bytes_in_use = memory->bytes_in_use,
		.bytes_reserved = memory->storage->counters.bytes_reserved,
		.device_reserved =
			limit ? wafer__memory_limit_device_reserved(limit)
			      : memory->storage->counters.bytes_reserved,
		.limit = limit ? limit->bytes : 0,
		.detail = detail ? detail : "out of memory",
	};
	wafer_status status = WAFER_ERROR_OUT_OF_MEMORY;
	if (memory->oom(memory->oom_data, &info))
		status = reserve_trimming(memory, size, out_slice);
	else
		wafer__fail(status, "%s", info.detail);
	free(detail);
	return status;
}

wafer_status wafer__memory_reserve(struct wafer__memory *memory, size_t size,
				   struct wafer__slice *out_slice)
{
	uint64_t calls_before = storage_calls(memory->storage);
	wafer_status status = reserve_trimming(memory, size, out_slice);
	if (status == WAFER_ERROR_OUT_OF_MEMORY && memory->oom)
		status = ask_oom(memory, size, out_slice);
	if (status != WAFER_OK) {
		memset(out_slice, 0, sizeof *out_slice);
		if (status != WAFER_ERROR_OUT_OF_MEMORY)
			return status;
		return wafer__fail_context(
			status,
			"cannot reserve %zu bytes: %llu in use, %llu reserved "
			"(strategy %s)",
			size, (unsigned long long)memory->bytes_in_use,
			(unsigned long long)memory->storage->counters.bytes_reserved,
			memory->ops->name);
	}
	out_slice->size = size;
	if (storage_calls(memory->storage) == calls_before)
		memory->reuse_hits++;
	memory->bytes_in_use += size;
	if (memory->bytes_in_use > memory->peak_in_use)
		memory->peak_in_use = memory->bytes_in_use;
	return WAFER_OK;
}

void wafer__memory_release(struct wafer__memory *memory,
			   const struct wafer__slice *slice)
{
	memory->bytes_in_use -= slice->size;
	memory->ops->release(memory->self, slice);
}

void wafer__memory_trim_cache(struct wafer__memory *memory)
{
	memory->ops->trim(memory->self);
}

void wafer__memory_after_sync(struct wafer__memory *memory)
{
	if (memory->ops->after_sync)
		memory->ops->after_sync(memory->self);
}

void wafer__memory_get_usage(const struct wafer__memory *memory,
			     wafer_memory_usage *out)
{
	const struct wafer__storage_counters *c = &memory->storage->counters;
	out->bytes_in_use = memory->bytes_in_use;
	out->peak_in_use = memory->peak_in_use;
	out->bytes_reserved = c->bytes_reserved;
	out->peak_reserved = c->peak_reserved;
	out->storage_allocs = c->allocs;
	out->storage_frees = c->frees;
	out->storage_maps = c->maps;
	out->storage_unmaps = c->unmaps;
	out->reuse_hits = memory->reuse_hits;
	out->calls_alloc = c->calls_alloc;
	out->calls_free = c->calls_free;
	out->calls_alloc_async = c->calls_alloc_async;
	out->calls_free_async = c->calls_free_async;
	out->calls_vm_reserve = c->calls_vm_reserve;
	out->calls_vm_release = c->calls_vm_release;
	out->calls_vm_map = c->calls_vm_map;
	out->calls_vm_unmap = c->calls_vm_unmap;
	out->storage_failures = c->failures;
	out->reserve_retries = memory->retries;
}

void wafer__memory_strategy_stats(const struct wafer__memory *memory,
				  struct wafer__memory_strategy_stats *out)
{
	memset(out, 0, sizeof *out);
	if (memory->ops->stats)
		memory->ops->stats(memory->self, out);
}

wafer_status wafer__memory_snapshot_take(struct wafer__memory *memory,
					 struct wafer_memory_snapshot *out)
{
	memset(out, 0, sizeof *out);
	if (memory->ops->snapshot)
		memory->ops->snapshot(memory->self, out);
	else
		wafer__memory_base_snapshot(memory->self, out);
	if (out->failed)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "memory snapshot: out of host memory after "
				   "%zu items", out->count);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Time
 *===----------------------------------------------------------------------===*/

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

uint64_t (*wafer__memory_clock_ns)(void) = monotonic_ns;
