/* wafer — SPDX-License-Identifier: MIT
 *
 * bandwidth.c: `wafer-bench bandwidth [MiB [reps]]` — memory bandwidth of
 * the standard f32 `add` (out = a + b over MiB mebibytes per array,
 * default 256; 12 bytes moved per element) through wafer_execute, best of
 * |reps| (default 20) adds, each timed from the execute to the end of the
 * sync after it. When the device's backend has a raw counterpart
 * (raw.h), the same add written directly against the vendor API runs in
 * the same process on the same device:
 *
 *   bandwidth op=add dtype=f32 bytes=B gbps=X [raw=WHAT raw_gbps=Y
 *             vs_raw=X/Y] */
#include "build-config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <wafer/plugin.h>

#include "tools/bench/bench.h"
#include "tools/bench/raw.h"

int bench_bandwidth(int argc, char **argv)
{
	size_t mib = argc > 1 ? bench_count("bandwidth", "MiB", argv[1], 1 << 20)
			      : 256;
	unsigned reps = argc > 2 ? (unsigned)bench_count("bandwidth", "repetitions",
							 argv[2], BENCH_MAX_COUNT)
				 : 20;
	size_t bytes = mib << 20, count = bytes / 4;
	wafer_runtime *runtime;
	wafer_client *client;
	wafer_device_desc device = {.struct_size = sizeof device};
	wafer_handle a, b, out;
	double best = INFINITY;

	if (!count || !reps) {
		fprintf(stderr, "wafer-bench bandwidth: MiB and reps must be "
				"positive\n");
		return 2;
	}
	bench_check(wafer_runtime_open(NULL, &runtime), "runtime_open");
	client = bench_open_client(runtime, NULL, NULL);
	bench_check(wafer_client_device(client, &device), "client_device");
	bench_check(wafer_empty(client, bytes, &a), "empty");
	bench_check(wafer_empty(client, bytes, &b), "empty");
	bench_check(wafer_empty(client, bytes, &out), "empty");
	bench_fill_f32(client, a, count, 1.5);
	bench_fill_f32(client, b, count, -0.25);

	bench_add_f32(client, out, a, b, count); /* warm: compile, tune */
	bench_check(wafer_sync(client), "sync");
	for (unsigned r = 0; r < reps; r++) {
		uint64_t start = bench_now_ns();
		bench_add_f32(client, out, a, b, count);
		bench_check(wafer_sync(client), "sync");
		double ns = (double)(bench_now_ns() - start);
		if (ns < best)
			best = ns;
	}
	double gbps = 12.0 * (double)count / best;
	printf("bandwidth op=add dtype=f32 bytes=%zu gbps=%.1f", bytes, gbps);
	const struct bench_raw *raw = bench_raw_for(&device);
	double raw_gbps = raw ? raw->add_gbps(count, reps) : -1;
	if (raw_gbps > 0)
		printf(" raw=\"%s\" raw_gbps=%.1f vs_raw=%.3f", raw->add_what,
		       raw_gbps, gbps / raw_gbps);
	printf("\n");
	wafer_release(client, a);
	wafer_release(client, b);
	wafer_release(client, out);
	wafer_client_close(client);
	wafer_runtime_close(runtime);
	return 0;
}
