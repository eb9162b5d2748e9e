/* wafer — SPDX-License-Identifier: MIT
 *
 * wafer-bench: measures wafer beside the thing it wraps, in the same run
 * (see wafer-bench(1)). Absolute times depend on the machine; the ratios
 * on each line are the result. */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>

#include "tools/bench/bench.h"

volatile uint64_t bench_sink;

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} benches[] = {
	{"dispatch", bench_dispatch,
	 "no-op kernel per channel: queued execute, round trip, plain plugin call"},
	{"alloc", bench_alloc,
	 "reserve+release of a cached size per strategy, beside malloc+free"},
	{"matmul", bench_matmul,
	 "f32 matmul GFLOP/s: tuned, each variant, OpenBLAS direct"},
	{"donation", bench_donation,
	 "peak memory of a chain of 10 ops per copy semantics (ops.h)"},
	{"compare", bench_compare,
	 "bandwidth, dispatch and matmul on several devices in one run"},
	{"bandwidth", bench_bandwidth,
	 "f32 add through wafer_execute, in GB/s"},
	{"replay", bench_replay,
	 "an allocation trace through pool on the device, beside the "
	 "driver's own pool"},
	{"allreduce", bench_allreduce,
	 "f32 all-reduce bus bandwidth per size over the backend's devices, "
	 "beside NCCL called directly; peer copies"},
	{"queues", bench_queues,
	 "upload/compute overlap on two queues, event record+wait, dispatch "
	 "on a second queue; beside CUDA streams"},
	{"graph", bench_graph,
	 "a chain of tiny kernels and an MLP step, eager and replayed from a "
	 "graph; beside CUDA graphs"},
#ifdef WAFER_BENCH_CUDA
	{"sgemm", bench_sgemm,
	 "cuda: fp32 matmul n x n per variant, beside cuBLAS called directly"},
#endif
};

#define N_BENCHES (sizeof benches / sizeof benches[0])

void bench_check(wafer_status status, const char *what)
{
	if (status == WAFER_OK)
		return;
	fprintf(stderr, "wafer-bench: %s: %s: %s\n", what,
		wafer_status_string(status), wafer_last_error());
	exit(1);
}

uint64_t bench_count(const char *bench, const char *what, const char *text,
		     uint64_t max)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	/* strtoull takes a sign (and negates): only digits are a count. */
	if (text[0] < '0' || text[0] > '9' || *end || errno || v == 0 ||
	    v > max) {
		fprintf(stderr,
			"wafer-bench %s: %s '%s' is not a whole number from 1 "
			"to %" PRIu64 "\n",
			bench, what, text, max);
		exit(2);
	}
	return v;
}

wafer_client *bench_open_client(wafer_runtime *runtime, const char *channel,
				const char *memory)
{
	wafer_client *client;
	wafer_client_options options = {
		.struct_size = sizeof options,
		.channel = channel,
		.memory = memory,
	};
	bench_check(wafer_client_open(runtime, "default", &options, &client),
		    "client_open");
	return client;
}

void bench_fill_f32(wafer_client *client, wafer_handle h, uint64_t count,
		    double value)
{
	struct wafer_fill_params p = {.count = count, .value = value};
	wafer_buffer_binding b = {h, 0, 0};
	wafer_execute_args args = {
		.struct_size = sizeof args,
		.kernel = WAFER_KERNEL_FILL,
		.dtype = WAFER_DTYPE_F32,
		.bindings = &b,
		.binding_count = 1,
		.params = &p,
		.params_size = sizeof p,
		.global = {count, 1, 1},
	};
	bench_check(wafer_execute(client, &args), "fill");
}

void bench_add_f32(wafer_client *client, wafer_handle out, wafer_handle a,
		   wafer_handle b, uint64_t count)
{
	struct wafer_elementwise_params p = {.count = count};
	wafer_buffer_binding bind[3] = {{out, 0, 0}, {a, 0, 0}, {b, 0, 0}};
	wafer_execute_args args = {
		.struct_size = sizeof args,
		.kernel = WAFER_KERNEL_ADD,
		.dtype = WAFER_DTYPE_F32,
		.bindings = bind,
		.binding_count = 3,
		.params = &p,
		.params_size = sizeof p,
		.global = {count, 1, 1},
	};
	bench_check(wafer_execute(client, &args), "add");
}

static void usage(FILE *out)
{
	fprintf(out, "usage: wafer-bench BENCHMARK [options]\n\n"
		     "benchmarks:\n");
	for (size_t i = 0; i < N_BENCHES; i++)
		fprintf(out, "  %-10s %s\n", benches[i].name, benches[i].help);
	fprintf(out, "\nThe device is the default one (WAFER_BACKEND picks "
		     "another). See wafer-bench(1).\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < N_BENCHES; i++) {
		if (strcmp(argv[1], benches[i].name) != 0)
			continue;
		return benches[i].run(argc - 1, argv + 1);
	}
	fprintf(stderr, "wafer-bench: unknown benchmark '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
