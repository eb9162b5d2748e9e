/* wafer — SPDX-License-Identifier: MIT
 *
 * limit.h: `[memory] limit`, the most bytes the clients of one device may
 * reserve from its storage together. Each client has its own memory
 * manager and storage wrapper (lib/bridge.c); the bytes they reserve are
 * summed in one counter of the device (struct wafer_runtime_device's
 * memory_reserved), which every client's storage wrapper charges before
 * it asks the plugin for memory (alloc, alloc_async, vm_map) and credits
 * when it gives memory back. The counter is the runtime's (each runtime
 * opens its own devices): other runtimes and processes are not counted.
 * What counts is what storage holds — live
 * blocks and cached free ones, rounded as the strategy rounds — not the
 * bytes handles asked for.
 *
 * A charge that would pass the limit fails with WAFER_ERROR_OUT_OF_MEMORY
 * naming the limit, where it was set and what the device holds; the
 * memory manager then trims its cache and retries, and asks the
 * program's out-of-memory handler (memory.h), like any storage failure.
 *
 * Thread-safe: the device's counter is changed with atomic operations,
 * as clients on different threads share it. */
#ifndef WAFER_CORE_MEMORY_LIMIT_H
#define WAFER_CORE_MEMORY_LIMIT_H

#include <stdint.h>

#include <wafer/wafer.h>

#include "lib/config.h"

struct wafer__memory_limit {
	uint64_t bytes;     /* 0: no limit (the counter is kept anyway) */
	char text[32];      /* the value as written: "80%", "4G" */
	char origin[160];   /* where: "path:line", "environment ...", ... */
	char device[48];    /* "cpu:0", for messages */
	/* The device's counter of bytes reserved by all its clients. */
	uint64_t *device_reserved;
};

/* Reads `[memory] limit` from |config| (NULL: none): a size (K, M, G, T,
 * KiB, ... as wafer__config_get_size) or a percentage of |device_memory|
 * ("80%", "12.5%"). WAFER_ERROR_CONFIG naming the file and line for a
 * malformed value, a percentage outside (0, 100], or a percentage of a
 * device whose memory size is unknown (0). */
wafer_status wafer__memory_limit_init(struct wafer__memory_limit *limit,
				      const struct wafer__config *config,
				      uint64_t device_memory,
				      const char *device_name,
				      uint64_t *device_reserved);

/* Adds |bytes| to the device's counter, unless that passes the limit:
 * then WAFER_ERROR_OUT_OF_MEMORY, "[memory] limit 80% (858993459 bytes,
 * from FILE:LINE) reached on cpu:0: N bytes reserved on the device (M by
 * this client), B more asked". |client_reserved|: for the message. */
wafer_status wafer__memory_limit_charge(struct wafer__memory_limit *limit,
					uint64_t bytes, uint64_t client_reserved);

/* Takes |bytes| off the device's counter. */
void wafer__memory_limit_credit(struct wafer__memory_limit *limit,
				uint64_t bytes);

/* The device's counter now. */
uint64_t wafer__memory_limit_device_reserved(const struct wafer__memory_limit *limit);

#endif
