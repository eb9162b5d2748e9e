/* wafer — SPDX-License-Identifier: MIT
 *
 * raw_none.c: no vendor counterparts (raw.h) in a build without the cuda
 * plugin, NCCL's included. */
#include "build-config.h"

#include "tools/bench/raw.h"

const struct bench_raw *bench_raw_for(const wafer_device_desc *device)
{
	return NULL;
}

double bench_nccl_allreduce_ns(const struct bench_nccl_rank *ranks, int n,
			       size_t count, unsigned warmup, unsigned reps,
			       const char **what)
{
	*what = "none";
	return -1.0;
}
