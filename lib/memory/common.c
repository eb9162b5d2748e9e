/* wafer — SPDX-License-Identifier: MIT
 *
 * common.c: what the memory strategies share (common.h). */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/list.h"
#include "lib/memory/common.h"

void *wafer__memory_host_calloc(size_t size, const char *who)
{
	void *p = calloc(1, size);
	if (!p)
		wafer__fail(WAFER_ERROR_OUT_OF_MEMORY, "%s: out of host memory",
			    who);
	return p;
}

/* Fails with WAFER_ERROR_CONFIG for a key of |base|'s section that is not
 * in the NULL-terminated |known| list, so that a misspelt option is an
 * error instead of silently ignored. */
static wafer_status check_options(const struct wafer__memory_base *base,
				  const struct wafer__config *config,
				  const char *const *known)
{
	const struct wafer__config_entry *entries[64];
	if (!config)
		return WAFER_OK;
	size_t count = wafer__config_section(config, base->section, entries, 64);
	if (count > 64)
		count = 64;
	for (size_t i = 0; i < count; i++) {
		size_t k = 0;
		while (known[k] && strcmp(known[k], entries[i]->key) != 0)
			k++;
		if (known[k])
			continue;
		char list[256];
		size_t used = 0;
		list[0] = '\0';
		for (k = 0; known[k] && used < sizeof list; k++)
			used += (size_t)snprintf(list + used, sizeof list - used,
						 "%s%s", k ? ", " : "",
						 known[k]);
		return wafer__fail(WAFER_ERROR_CONFIG,
				   "%s: [%s] unknown option '%s' (known: %s)",
				   entries[i]->origin, base->section,
				   entries[i]->key, k ? list : "none");
	}
	return WAFER_OK;
}

wafer_status wafer__memory_option_invalid(const struct wafer__memory_base *base,
					  const struct wafer__config *config,
					  const char *key, const char *expected)
{
	const struct wafer__config_entry *e =
		wafer__config_lookup(config, base->section, key);
	return wafer__fail(WAFER_ERROR_CONFIG, "%s: [%s] %s: expected %s, got '%s'",
			   e ? e->origin : "default", base->section, key,
			   expected, e ? e->value : "?");
}

wafer_status wafer__memory_base_create(
	const char *name, struct wafer__storage *storage,
	const struct wafer__config *config, const char *const *known,
	size_t size,
	wafer_status (*setup)(void *self, const struct wafer__config *config),
	void **out_self)
{
	*out_self = NULL;
	struct wafer__memory_base *base = wafer__memory_host_calloc(size, name);
	if (!base)
		return WAFER_ERROR_OUT_OF_MEMORY;
	base->name = name;
	base->storage = storage;
	snprintf(base->section, sizeof base->section, "memory.%s", name);
	wafer_status status = check_options(base, config, known);
	if (status == WAFER_OK && setup)
		status = setup(base, config);
	if (status != WAFER_OK) {
		free(base);
		return status;
	}
	*out_self = base;
	return WAFER_OK;
}

void wafer__memory_base_destroy(void *self)
{
	wafer__memory_chunk_free_all(self);
	free(self);
}

void wafer__memory_base_stats(void *self,
			      struct wafer__memory_strategy_stats *out)
{
	const struct wafer__memory_base *base = self;
	*out = base->stats;
	out->segments += base->chunks.count;
}

wafer_status wafer__memory_chunk_new(struct wafer__memory_base *base,
				     size_t size, size_t node_size,
				     struct wafer__memory_chunk **out_chunk)
{
	struct wafer__memory_chunk_list *list = &base->chunks;
	struct wafer__memory_chunk *c =
		wafer__memory_host_calloc(node_size, base->name);
	if (!c)
		return WAFER_ERROR_OUT_OF_MEMORY;
	wafer_status status =
		list->async ? wafer__storage_alloc_async(base->storage, size,
							 &c->resource)
			    : wafer__storage_alloc(base->storage, size,
						   &c->resource);
	if (status != WAFER_OK) {
		free(c);
		return status;
	}
	c->size = size;
	wafer__memory_list_push(list, c);
	*out_chunk = c;
	return WAFER_OK;
}

wafer_status wafer__memory_chunk_reserve(struct wafer__memory_base *base,
					 size_t size, size_t node_size,
					 struct wafer__slice *out)
{
	struct wafer__memory_chunk *c;
	wafer_status status = wafer__memory_chunk_new(base, size, node_size, &c);
	if (status == WAFER_OK)
		wafer__memory_chunk_slice(c, out);
	return status;
}

void wafer__memory_list_push(struct wafer__memory_chunk_list *list,
			     struct wafer__memory_chunk *chunk)
{
	WAFER__LIST_PUSH(list->head, chunk, prev, next);
	list->count++;
}

void wafer__memory_list_remove(struct wafer__memory_chunk_list *list,
			       struct wafer__memory_chunk *chunk)
{
	WAFER__LIST_UNLINK(list->head, chunk, prev, next);
	chunk->prev = chunk->next = NULL;
	list->count--;
}

void wafer__memory_chunk_unlink(struct wafer__memory_base *base,
				struct wafer__memory_chunk *chunk)
{
	wafer__memory_list_remove(&base->chunks, chunk);
}

void wafer__memory_chunk_free(struct wafer__memory_base *base,
			      struct wafer__memory_chunk *chunk)
{
	wafer__memory_chunk_unlink(base, chunk);
	if (base->chunks.async)
		wafer__storage_free_async(base->storage, chunk->resource,
					  chunk->size);
	else
		wafer__storage_free(base->storage, chunk->resource, chunk->size);
	free(chunk);
}

void wafer__memory_chunk_free_all(struct wafer__memory_base *base)
{
	while (base->chunks.head)
		wafer__memory_chunk_free(base, base->chunks.head);
}
