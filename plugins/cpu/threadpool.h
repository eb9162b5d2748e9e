/* wafer — SPDX-License-Identifier: MIT
 *
 * threadpool.h: the cpu plugin's thread pool. A pool of N threads is N-1
 * workers plus whichever thread calls cpu_pool_parallel_for: the caller
 * does a share of the work instead of sleeping, so a pool of 1 has no
 * worker at all.
 *
 * Costs: work too small to be worth waking a worker (fewer than two grains)
 * runs inline on the caller, with no lock and no system call, which keeps
 * the launch latency of small kernels at a function call. Larger work costs
 * one mutex round and a condition-variable broadcast, then each thread
 * runs one contiguous range. */
#ifndef WAFER_PLUGINS_CPU_THREADPOOL_H
#define WAFER_PLUGINS_CPU_THREADPOOL_H

#include <stddef.h>

struct cpu_pool;

/* Runs items [begin, end) of a parallel_for. Called on any thread of the
 * pool, several ranges at once; the ranges of one call never overlap. It
 * must not call cpu_pool_parallel_for on the same pool. */
typedef void (*cpu_range_fn)(void *ctx, size_t begin, size_t end);

/* Starts a pool of |threads| (>= 1) threads, that is threads - 1 workers.
 * Returns 0, or an errno value when a thread could not be started (then
 * nothing is left running). The workers block all signals, so signals
 * meant for the application never land on them. */
int cpu_pool_create(unsigned threads, struct cpu_pool **out_pool);

/* Stops and joins every worker. No parallel_for may be running. */
void cpu_pool_destroy(struct cpu_pool *pool);

/* Calls |fn| on contiguous ranges covering [0, count) and returns when all
 * of them have run. Each range holds at least |grain| items (> 0): the
 * smallest amount worth a thread's wake-up. Several threads may call this
 * at once on one pool; their work is run one call after another (small
 * calls, which run inline, are not held up). */
void cpu_pool_parallel_for(struct cpu_pool *pool, size_t count, size_t grain,
			   cpu_range_fn fn, void *ctx);

#endif
