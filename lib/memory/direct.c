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

#include "lib/memory/common.h"

/* Every allocation is a chunk on the base's list (freed by destroy if the
 * client forgot it). */
struct direct_state {
	struct wafer__memory_base base;
};

static const char *const direct_options[] = {NULL};

static wafer_status direct_reserve(void *self, size_t size,
				   struct wafer__slice *out)
{
	struct direct_state *st = self;
	return wafer__memory_chunk_reserve(
		&st->base, size, sizeof(struct wafer__memory_chunk), out);
}

static void direct_release(void *self, const struct wafer__slice *slice)
{
	struct direct_state *st = self;
	wafer__memory_chunk_free(&st->base, slice->token);
}

/* Nothing is cached. */
static void direct_trim(void *self)
{
}

WAFER_MEMORY_STRATEGY(direct, NULL, .destroy = wafer__memory_base_destroy,
		      .stats = wafer__memory_base_stats);
