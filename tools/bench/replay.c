/* wafer — SPDX-License-Identifier: MIT
 *
 * replay.c: `wafer-bench replay TRACE [DEVICE]` — an allocation trace
 * (wafer-replay(1)'s format) replayed twice in one process on one device:
 * through wafer's `pool` strategy on the device's own storage ops (as
 * `wafer-replay --storage DEVICE` does), then through the vendor's cached
 * allocator called directly (raw.h: cuMemAllocAsync + cuMemFreeAsync on
 * the default pool, on CUDA). Both start with nothing held and are timed
 * from the first event to a synchronised queue after the last.
 *
 *   replay trace=NAME events=N strategy=pool ns_per_event=X ratio=R
 *          pages=map:N,unmap:N [raw_ns_per_event=Y raw_reserved=B
 *          raw_ratio=R vs_raw=X/Y]
 *
 * ratio is the pool's peak reserved over the trace's peak live bytes;
 * raw_reserved is the driver pool's own high-water mark (CUDA:
 * CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) and raw_ratio that over the same
 * peak. DEVICE is a selector ("cuda:0"); default: the default device. */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/config.h"
#include "lib/error.h"
#include "lib/memory/memory.h"
#include "tools/bench/bench.h"
#include "tools/bench/raw.h"
#include "tools/replay_backend.h"
#include "tools/trace_file.h"

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static void die_status(const char *what)
{
	fprintf(stderr, "wafer-bench replay: %s: %s\n", what,
		wafer__error_detail());
	exit(1);
}

int bench_replay(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: wafer-bench replay TRACE [DEVICE]\n");
		return 2;
	}
	const char *path = argv[1];
	const char *selector = argc > 2 ? argv[2] : "default";
	struct wafer_trace t = {0};
	char why[512];
	if (!wafer_trace_load(path, &t, why, sizeof why)) {
		fprintf(stderr, "wafer-bench replay: %s\n", why);
		wafer_trace_fini(&t);
		return 1;
	}

	struct replay_backend backend;
	struct wafer__storage storage;
	if (replay_backend_open(selector, &backend, &storage) != WAFER_OK)
		die_status(selector);
	struct wafer__config *config;
	struct wafer__memory *memory;
	if (wafer__config_create(&config) != WAFER_OK)
		die_status("config");
	if (wafer__memory_create("pool", &storage, config, &memory) != WAFER_OK)
		die_status("pool");
	struct wafer__slice *slices = calloc(t.slots, sizeof *slices);
	if (!slices) {
		fprintf(stderr, "wafer-bench replay: out of host memory\n");
		return 1;
	}

	const struct wafer_plugin *plugin = backend.device->plugin;
	uint64_t start = bench_now_ns();
	for (size_t i = 0; i < t.count; i++) {
		const struct wafer_trace_event *e = &t.events[i];
		if (e->size) {
			if (wafer__memory_reserve(memory, e->size,
						  &slices[e->slot]) != WAFER_OK) {
				fprintf(stderr, "wafer-bench replay: %s:%u",
					path, e->line);
				die_status("reserve");
			}
		} else {
			wafer__memory_release(memory, &slices[e->slot]);
			slices[e->slot].size = 0;
		}
	}
	bench_check(plugin->server->sync(backend.device->device, backend.queue),
		    "sync");
	double ns = (double)(bench_now_ns() - start) / (double)t.count;

	wafer_memory_usage u = {.struct_size = sizeof u};
	wafer__memory_get_usage(memory, &u);
	uint64_t gran = storage.vm_granularity ? storage.vm_granularity : 1;
	printf("replay trace=%s events=%zu strategy=pool ns_per_event=%.1f "
	       "ratio=%.3f pages=map:%" PRIu64 ",unmap:%" PRIu64,
	       base_name(path), t.count, ns,
	       u.peak_in_use ? (double)u.peak_reserved / (double)u.peak_in_use
			     : 0.0,
	       storage.counters.bytes_mapped / gran,
	       storage.counters.bytes_unmapped / gran);
	for (uint32_t i = 0; i < t.slots; i++)
		if (slices[i].size)
			wafer__memory_release(memory, &slices[i]);
	wafer__memory_destroy(memory);
	free(slices);

	/* The raw side, with the pool's memory given back. */
	wafer_device_desc device = {
		.struct_size = sizeof device,
		.backend = backend.device->backend,
		.index = backend.device->index,
	};
	const struct bench_raw *raw = bench_raw_for(&device);
	uint64_t high = 0;
	double raw_ns = raw && raw->replay_ns ? raw->replay_ns(&t, &high) : -1;
	if (raw_ns > 0)
		printf(" raw_ns_per_event=%.1f raw_reserved=%" PRIu64
		       " raw_ratio=%.3f vs_raw=%.2f",
		       raw_ns, high,
		       u.peak_in_use ? (double)high / (double)u.peak_in_use
				     : 0.0,
		       ns / raw_ns);
	printf("\n");
	replay_backend_close(&backend);
	wafer__config_destroy(config);
	wafer_trace_fini(&t);
	return 0;
}
