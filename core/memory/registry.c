/* wafer — SPDX-License-Identifier: MIT
 * registry.c: the strategies compiled into the core, by name. */
#include "build-config.h"

#include "core/memory/memory.h"

extern const struct wafer_memory_strategy_ops wafer_memory_exact;
extern const struct wafer_memory_strategy_ops wafer_memory_direct;
extern const struct wafer_memory_strategy_ops wafer_memory_chunked;
extern const struct wafer_memory_strategy_ops wafer_memory_buckets;
extern const struct wafer_memory_strategy_ops wafer_memory_stream;
extern const struct wafer_memory_strategy_ops wafer_memory_pool;

const struct wafer_memory_strategy_ops *const wafer_memory_strategies[] = {
	&wafer_memory_exact,
	&wafer_memory_direct,
	&wafer_memory_chunked,
	&wafer_memory_buckets,
	&wafer_memory_stream,
	&wafer_memory_pool,
	NULL,
};

const char wafer_memory_default_strategy[] = "pool";
