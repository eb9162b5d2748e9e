/* wafer — SPDX-License-Identifier: MIT
 *
 * raw_none.c: no vendor counterparts (raw.h) in a build without the cuda
 * plugin. */
#include "build-config.h"

#include "tools/bench/raw.h"

const struct bench_raw *bench_raw_for(const wafer_device_desc *device)
{
	return NULL;
}
