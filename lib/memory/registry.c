/* wafer — SPDX-License-Identifier: MIT
 * registry.c: the strategies compiled into the core, by name. */
#include "build-config.h"

#include "lib/memory/memory.h"

extern const struct wafer__memory_strategy_ops wafer__memory_exact;
extern const struct wafer__memory_strategy_ops wafer__memory_direct;
extern const struct wafer__memory_strategy_ops wafer__memory_chunked;
extern const struct wafer__memory_strategy_ops wafer__memory_buckets;
extern const struct wafer__memory_strategy_ops wafer__memory_stream;
extern const struct wafer__memory_strategy_ops wafer__memory_pool;

const struct wafer__memory_strategy_ops *const wafer__memory_strategies[] = {
	&wafer__memory_exact,
	&wafer__memory_direct,
	&wafer__memory_chunked,
	&wafer__memory_buckets,
	&wafer__memory_stream,
	&wafer__memory_pool,
	NULL,
};

const char wafer__memory_default_strategy[] = "pool";
