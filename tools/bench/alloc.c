/* wafer — SPDX-License-Identifier: MIT
 *
 * alloc.c: `wafer-bench alloc` — what a handle of a size the strategy has
 * cached costs: wafer_empty + wafer_release on the `direct` channel, per
 * memory strategy and size, beside glibc malloc + free of the same size in
 * the same run.
 *
 *   alloc strategy=S size=B ns_per_pair=X malloc_ns_per_pair=Y
 *         [raw_ns_per_pair=R vs_raw=X/R]
 *
 * The last two when the backend has a raw counterpart (raw.h): the
 * vendor's own cached allocator called directly for the same size
 * (cuMemAllocAsync + cuMemFreeAsync from the default pool on CUDA). */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench/bench.h"
#include "tools/bench/raw.h"

static const char *const strategies[] = {"exact", "direct", "chunked",
					 "buckets", "stream", "pool"};
static const size_t sizes[] = {64, 4096, 1 << 20};
static uint64_t pairs = 1000000;

static double malloc_ns(size_t size)
{
	free(malloc(size)); /* warm */
	uint64_t start = bench_now_ns();
	for (uint64_t i = 0; i < pairs; i++) {
		void *p = malloc(size);
		bench_sink += (uintptr_t)p;
		free(p);
	}
	return (double)(bench_now_ns() - start) / (double)pairs;
}

int bench_alloc(int argc, char **argv)
{
	wafer_runtime *runtime;
	if (argc > 1)
		pairs = bench_count("alloc", "pairs", argv[1], BENCH_MAX_COUNT);
	bench_check(wafer_runtime_open(NULL, &runtime), "runtime_open");

	/* The raw counterpart per size, measured once, while a client
	 * holds the device. */
	double raw_ns[sizeof sizes / sizeof sizes[0]];
	wafer_client *probe = bench_open_client(runtime, "direct", NULL);
	wafer_device_desc device = {.struct_size = sizeof device};
	bench_check(wafer_client_device(probe, &device), "client_device");
	const struct bench_raw *raw = bench_raw_for(&device);
	for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
		raw_ns[z] = raw ? raw->alloc_pair_ns(sizes[z], pairs) : -1;
	wafer_client_close(probe);

	for (size_t s = 0; s < sizeof strategies / sizeof strategies[0]; s++) {
		wafer_client *client;
		wafer_client_options options = {.struct_size = sizeof options,
						 .channel = "direct",
						 .memory = strategies[s]};
		wafer_status status = wafer_client_open(runtime, "default",
							&options, &client);
		if (status != WAFER_OK) {
			printf("alloc strategy=%s skipped: %s\n", strategies[s],
			       wafer_last_error());
			continue;
		}
		for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
			wafer_handle h;
			bench_check(wafer_empty(client, sizes[z], &h), "empty");
			bench_check(wafer_release(client, h), "release");
			uint64_t start = bench_now_ns();
			for (uint64_t i = 0; i < pairs; i++) {
				wafer_empty(client, sizes[z], &h);
				wafer_release(client, h);
			}
			double ours = (double)(bench_now_ns() - start) /
				      (double)pairs;
			printf("alloc strategy=%s size=%zu ns_per_pair=%.1f "
			       "malloc_ns_per_pair=%.1f",
			       strategies[s], sizes[z], ours, malloc_ns(sizes[z]));
			if (raw_ns[z] > 0)
				printf(" raw_ns_per_pair=%.1f vs_raw=%.3f",
				       raw_ns[z], ours / raw_ns[z]);
			printf("\n");
			fflush(stdout);
		}
		wafer_client_close(client);
	}
	wafer_runtime_close(runtime);
	return 0;
}
