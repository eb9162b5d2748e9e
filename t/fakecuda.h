/* wafer — SPDX-License-Identifier: MIT
 *
 * fakecuda.h: what t/fakecuda.c (a stand-in libcuda for tests) counts,
 * for tests that dlopen it next to the cuda plugin and look inside. */
#ifndef WAFER_T_FAKECUDA_H
#define WAFER_T_FAKECUDA_H

#include <stddef.h>
#include <stdint.h>

struct fakecuda_stats {
	uint64_t context_sets;
	uint64_t modules_loaded;
	uint64_t launches;
	uint64_t allocs, frees, async_allocs, async_frees;
	uint64_t pinned_copies, pageable_copies, device_copies;
	uint64_t pinned_live, pinned_bytes;
	uint64_t streams_live, events_live;
	uint64_t stream_syncs, event_syncs;
	uint64_t reserves, creates, maps, unmaps, set_access, handles_live;
	uint64_t pool_trims;
	uint64_t release_threshold;
	uint64_t device_bytes;
	int sticky; /* the context's sticky CUresult, 0 if none */
};

typedef void (*fakecuda_stats_fn)(struct fakecuda_stats *out);
typedef void (*fakecuda_reset_fn)(void);

#endif
