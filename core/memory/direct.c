/* wafer — SPDX-License-Identifier: MIT
 *
 * direct.c: the `direct` strategy — one storage allocation per handle, of
 * exactly the size asked (not rounded up), freed at release; nothing is
 * cached or shared. It is the slowest strategy and the one to run under
 * sanitizers: with every handle in its own allocation, a kernel that
 * writes past its handle writes past an allocation, which ASan (cpu) or
 * compute-sanitizer (CUDA) reports, where a pooling strategy would hand it
 * a neighbour's bytes in silence. Options: none. */
#include "build-config.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/memory/memory.h"

struct direct_alloc {
	wafer_resource resource;
	size_t size;
	struct direct_alloc *prev, *next;
};

struct direct_state {
	struct wafer_storage *storage;
	struct direct_alloc *live; /* freed by destroy if the client forgot */
	uint64_t count;
};

static const char *const direct_options[] = {NULL};

static wafer_status direct_create(struct wafer_storage *storage,
				  const struct wafer_config *config,
				  void **out_self)
{
	*out_self = NULL;
	wafer_status status =
		wafer_memory_option_check(config, "direct", direct_options);
	if (status != WAFER_OK)
		return status;
	struct direct_state *st = calloc(1, sizeof *st);
	if (!st)
		return wafer_fail(WAFER_ERROR_OUT_OF_MEMORY,
				  "direct: out of host memory");
	st->storage = storage;
	*out_self = st;
	return WAFER_OK;
}

static wafer_status direct_reserve(void *self, size_t size,
				   struct wafer_slice *out)
{
	struct direct_state *st = self;
	struct direct_alloc *a = malloc(sizeof *a);
	if (!a)
		return wafer_fail(WAFER_ERROR_OUT_OF_MEMORY,
				  "direct: out of host memory");
	wafer_status status =
		wafer_storage_alloc(st->storage, size, &a->resource);
	if (status != WAFER_OK) {
		free(a);
		return status;
	}
	a->size = size;
	a->prev = NULL;
	a->next = st->live;
	if (st->live)
		st->live->prev = a;
	st->live = a;
	st->count++;
	out->resource = a->resource;
	out->offset = 0;
	out->token = a;
	return WAFER_OK;
}

static void direct_release(void *self, const struct wafer_slice *slice)
{
	struct direct_state *st = self;
	struct direct_alloc *a = slice->token;
	if (a->prev)
		a->prev->next = a->next;
	else
		st->live = a->next;
	if (a->next)
		a->next->prev = a->prev;
	st->count--;
	wafer_storage_free(st->storage, a->resource, a->size);
	free(a);
}

/* Nothing is cached. */
static void direct_trim(void *self)
{
}

static void direct_destroy(void *self)
{
	struct direct_state *st = self;
	while (st->live) {
		struct direct_alloc *a = st->live;
		st->live = a->next;
		wafer_storage_free(st->storage, a->resource, a->size);
		free(a);
	}
	free(st);
}

static void direct_stats(void *self, struct wafer_memory_strategy_stats *out)
{
	struct direct_state *st = self;
	out->segments = st->count;
}

const struct wafer_memory_strategy_ops wafer_memory_direct = {
	.name = "direct",
	.create = direct_create,
	.destroy = direct_destroy,
	.reserve = direct_reserve,
	.release = direct_release,
	.trim = direct_trim,
	.stats = direct_stats,
};
