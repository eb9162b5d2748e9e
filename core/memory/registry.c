/* wafer — SPDX-License-Identifier: MIT
 * registry.c: the strategies compiled into the core, by name. */
#include "build-config.h"

#include "core/memory/memory.h"

extern const struct wafer_memory_strategy_ops wafer_memory_exact;

const struct wafer_memory_strategy_ops *const wafer_memory_strategies[] = {
	&wafer_memory_exact,
	NULL,
};

const char wafer_memory_default_strategy[] = "exact";
