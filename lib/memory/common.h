/* wafer — SPDX-License-Identifier: MIT
 *
 * common.h: what the strategies behind wafer__memory_strategy_ops (the
 * other files of lib/memory/) share, so that each file holds only its
 * own policy:
 *
 *  - struct wafer__memory_base, the head of every strategy's state: its
 *    storage, its list of whole chunks and the counters it keeps, created
 *    with its options checked (wafer__memory_base_create) and reported by
 *    one stats entry (wafer__memory_base_stats);
 *  - whole chunks: one storage allocation each, on the base's list,
 *    allocated, handed out as a slice and freed the same way everywhere;
 *  - WAFER_MEMORY_STRATEGY, a strategy's create entry and ops table from
 *    its <id>_options, struct <id>_state and <id>_reserve, ... entries.
 *
 * Not thread-safe, like the strategies (memory.h). */
#ifndef WAFER_CORE_MEMORY_COMMON_H
#define WAFER_CORE_MEMORY_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/memory/memory.h"

/* Zeroed host memory for a strategy's bookkeeping, or NULL with
 * WAFER_ERROR_OUT_OF_MEMORY recorded: "<who>: out of host memory". */
void *wafer__memory_host_calloc(size_t size, const char *who);

/* One storage allocation handed out (or cached) whole. A strategy that
 * needs more per chunk puts this first in its own struct. */
struct wafer__memory_chunk {
	wafer_resource resource;
	size_t size; /* bytes allocated from storage */
	struct wafer__memory_chunk *prev, *next;
};

/* Every chunk a strategy holds, newest first. */
struct wafer__memory_chunk_list {
	struct wafer__memory_chunk *head;
	uint64_t count;
	/* Stream-ordered allocation and free (alloc_async/free_async). */
	bool async;
};

/* The head of every strategy's state (its first member). */
struct wafer__memory_base {
	const char *name; /* the strategy's, for messages */
	/* "memory.<name>": the section of its options, for the config
	 * getters (config.h; they take a NULL config as all unset). */
	char section[32];
	struct wafer__storage *storage;
	struct wafer__memory_chunk_list chunks;
	/* The counters the strategy keeps. wafer__memory_base_stats reports
	 * them with segments = the chunks on the list + stats.segments (what
	 * the strategy holds off the list: the stream's pending frees). */
	struct wafer__memory_strategy_stats stats;
};

/* Checks the keys of [memory.<name>] against |known| (NULL-terminated),
 * creates a zeroed state of |size| bytes, a struct wafer__memory_base
 * first, on |storage|, and lets |setup| (may be NULL) finish it: read
 * its options, set its fields. On failure, its or setup's, nothing stays
 * allocated and |*out_self| is NULL. */
wafer_status wafer__memory_base_create(
	const char *name, struct wafer__storage *storage,
	const struct wafer__config *config, const char *const *known,
	size_t size,
	wafer_status (*setup)(void *self, const struct wafer__config *config),
	void **out_self);

/* Fails with WAFER_ERROR_CONFIG for option |key| of the base's section,
 * whose value parsed but is out of range: "origin: [memory.<name>] key:
 * expected <expected>, got 'value'". */
wafer_status wafer__memory_option_invalid(const struct wafer__memory_base *base,
					  const struct wafer__config *config,
					  const char *key, const char *expected);

/* A strategy's destroy entry where the base's chunks are all it holds:
 * frees every chunk, then the state. */
void wafer__memory_base_destroy(void *self);

/* A strategy's stats entry: the base's counters (see above). */
void wafer__memory_base_stats(void *self,
			      struct wafer__memory_strategy_stats *out);

/* Allocates a host struct of |node_size| bytes (zeroed; a struct
 * wafer__memory_chunk first) and |size| bytes of storage into it, and puts
 * it first on the base's list. On failure nothing stays allocated. */
wafer_status wafer__memory_chunk_new(struct wafer__memory_base *base,
				     size_t size, size_t node_size,
				     struct wafer__memory_chunk **out_chunk);

/* Puts |chunk| first on |list|; takes it off |list|. For lists other than
 * the base's (the pool's segments per arena). */
void wafer__memory_list_push(struct wafer__memory_chunk_list *list,
			     struct wafer__memory_chunk *chunk);
void wafer__memory_list_remove(struct wafer__memory_chunk_list *list,
			       struct wafer__memory_chunk *chunk);

/* Takes |chunk| off the base's list (it stays allocated). */
void wafer__memory_chunk_unlink(struct wafer__memory_base *base,
				struct wafer__memory_chunk *chunk);

/* Takes |chunk| off the list, gives its storage back (stream-ordered
 * where the list is async) and frees it. */
void wafer__memory_chunk_free(struct wafer__memory_base *base,
			      struct wafer__memory_chunk *chunk);

/* Frees every chunk on the base's list. */
void wafer__memory_chunk_free_all(struct wafer__memory_base *base);

/* A new chunk (as wafer__memory_chunk_new) handed out whole as |out|
 * (token: the chunk). */
wafer_status wafer__memory_chunk_reserve(struct wafer__memory_base *base,
					 size_t size, size_t node_size,
					 struct wafer__slice *out);

/* Hands out the start of |chunk| as |out| (token: the chunk). */
static inline void wafer__memory_chunk_slice(struct wafer__memory_chunk *chunk,
					     struct wafer__slice *out)
{
	out->resource = chunk->resource;
	out->offset = 0;
	out->token = chunk;
}

/* A reserve served from cached |chunk|, counted in the base's
 * stats.hits: hands out its start as |out|. */
static inline void wafer__memory_chunk_hit(struct wafer__memory_base *base,
					   struct wafer__memory_chunk *chunk,
					   struct wafer__slice *out)
{
	base->stats.hits++;
	wafer__memory_chunk_slice(chunk, out);
}

/* A reserve that found nothing cached: wafer__memory_chunk_reserve,
 * counted in the base's stats.misses when it succeeds. */
static inline wafer_status wafer__memory_chunk_miss(
	struct wafer__memory_base *base, size_t size, size_t node_size,
	struct wafer__slice *out)
{
	wafer_status status =
		wafer__memory_chunk_reserve(base, size, node_size, out);
	if (status == WAFER_OK)
		base->stats.misses++;
	return status;
}

/* Strategy "<id>": its create entry, which checks [memory.<id>] against
 * <id>_options and makes a struct <id>_state (a struct wafer__memory_base
 * first) finished by |setup| (may be NULL; see wafer__memory_base_create),
 * and its ops table wafer__memory_<id> with the entries <id>_reserve,
 * <id>_release and <id>_trim; destroy and the optional entries
 * (after_sync, stats) follow as designated initialisers. */
#define WAFER_MEMORY_STRATEGY(id, setup, ...)                                 \
	static wafer_status id##_create(struct wafer__storage *storage,       \
					const struct wafer__config *config,   \
					void **out_self)                      \
	{                                                                     \
		return wafer__memory_base_create(#id, storage, config,        \
						 id##_options,                \
						 sizeof(struct id##_state),   \
						 setup, out_self);            \
	}                                                                     \
	const struct wafer__memory_strategy_ops wafer__memory_##id = {        \
		.name = #id,                                                  \
		.create = id##_create,                                        \
		.reserve = id##_reserve,                                      \
		.release = id##_release,                                      \
		.trim = id##_trim,                                            \
		__VA_ARGS__                                                   \
	}

#endif
