/* wafer — SPDX-License-Identifier: MIT
 *
 * graph.c: `wafer-bench graph [channel]` — what replaying a captured
 * graph (wafer_graph(3)) saves over issuing the same work again, beside
 * CUDA graphs where the backend has a raw counterpart (raw.h), in one
 * run:
 *
 *   chain: a chain of K tiny kernels (an f32 add of 256 elements, each
 *     reading the last one's output), K = 100 and 1,000: ns per kernel
 *     issued eagerly (wafer_execute each, then one sync) and replayed
 *     (one wafer_graph_launch of the captured chain, then one sync), and
 *     the storage calls a replay made (the memory manager's counters
 *     before and after 100 replays); raw: the same adds by cuLaunchKernel
 *     and by cuGraphLaunch of the stream-captured chain:
 *
 *     graph chain=K eager_ns=X replay_ns=Y speedup=X/Y native=N
 *           storage_calls_per_replay=S [raw_eager_ns=A raw_graph_ns=B
 *           vs_raw_graph=Y/B]
 *
 *   mlp: one forward step of a 3-layer MLP (batch 64, width 256: matmul,
 *     bias add, tanh per layer, the operations of ops.h with their
 *     temporaries and donations), eager and replayed, in us per step:
 *
 *     graph mlp eager_us=X replay_us=Y speedup=X/Y
 */
#include "build-config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/graph.h>
#include <wafer/plugin.h>
#include <wafer/ops.h>
#include <wafer/queue.h>

#include "tools/bench/bench.h"
#include "tools/bench/raw.h"

#define CHAIN_COUNT 256

/* x <- x + y, |k| times, alternating two buffers so that each add reads
 * the last one's output. */
static void chain(wafer_client *client, wafer_handle h[2], wafer_handle y,
		  unsigned k)
{
	for (unsigned i = 0; i < k; i++)
		bench_add_f32(client, h[(i + 1) % 2], h[i % 2], y, CHAIN_COUNT);
}

static uint64_t storage_calls(wafer_client *client)
{
	wafer_memory_usage u = {.struct_size = sizeof u};
	bench_check(wafer_sync(client), "sync");
	bench_check(wafer_memory_usage_get(client, &u), "usage");
	return u.storage_allocs + u.storage_frees + u.storage_maps +
	       u.storage_unmaps;
}

static void chain_figures(wafer_client *client, const struct bench_raw *raw,
			  unsigned k)
{
	wafer_queue *q = wafer_client_default_queue(client);
	wafer_handle h[2], y;
	wafer_graph *g;
	unsigned reps = k >= 1000 ? 20 : 200;
	double eager = INFINITY, replay = INFINITY;

	for (int i = 0; i < 2; i++) {
		bench_check(wafer_empty(client, CHAIN_COUNT * 4, &h[i]), "empty");
		bench_fill_f32(client, h[i], CHAIN_COUNT, 0.0);
	}
	bench_check(wafer_empty(client, CHAIN_COUNT * 4, &y), "empty");
	bench_fill_f32(client, y, CHAIN_COUNT, 1.0);
	bench_check(wafer_queue_begin_capture(q), "begin_capture");
	chain(client, h, y, k);
	bench_check(wafer_queue_end_capture(q, &g), "end_capture");
	wafer_graph_info info = {.struct_size = sizeof info};
	bench_check(wafer_graph_info_get(g, &info), "graph_info");

	chain(client, h, y, k); /* warm-up */
	bench_check(wafer_graph_launch(g, q), "graph_launch");
	bench_check(wafer_sync(client), "sync");
	for (int s = 0; s < 5; s++) {
		uint64_t t = bench_now_ns();
		for (unsigned r = 0; r < reps / 10 + 1; r++)
			chain(client, h, y, k);
		bench_check(wafer_sync(client), "sync");
		eager = fmin(eager, (double)(bench_now_ns() - t) /
					    ((reps / 10 + 1) * (double)k));
		t = bench_now_ns();
		for (unsigned r = 0; r < reps; r++)
			bench_check(wafer_graph_launch(g, q), "graph_launch");
		bench_check(wafer_sync(client), "sync");
		replay = fmin(replay,
			      (double)(bench_now_ns() - t) / (reps * (double)k));
	}
	uint64_t before = storage_calls(client);
	for (int r = 0; r < 100; r++)
		bench_check(wafer_graph_launch(g, q), "graph_launch");
	uint64_t after = storage_calls(client);
	printf("graph chain=%u eager_ns=%.1f replay_ns=%.1f speedup=%.2f "
	       "native=%u storage_calls_per_replay=%.2f",
	       k, eager, replay, eager / replay, info.native_launches,
	       (double)(after - before) / 100.0);
	if (raw && raw->graph_chain_ns) {
		double raw_eager = raw->graph_chain_ns(k, reps, 0);
		double raw_graph = raw->graph_chain_ns(k, reps, 1);
		if (raw_eager > 0 && raw_graph > 0)
			printf(" raw=%s raw_eager_ns=%.1f raw_graph_ns=%.1f "
			       "vs_raw_graph=%.3f",
			       raw->graph_what, raw_eager, raw_graph,
			       replay / raw_graph);
	}
	printf("\n");
	fflush(stdout);
	bench_check(wafer_graph_release(g), "graph_release");
	for (int i = 0; i < 2; i++)
		bench_check(wafer_release(client, h[i]), "release");
	bench_check(wafer_release(client, y), "release");
}

#define MLP_BATCH 64
#define MLP_WIDTH 256

/* One forward step: three layers of tanh(x w + b); |out| is the last. */
static void mlp_step(wafer_client *c, const wafer_tensor *x,
		     const wafer_tensor w[3], const wafer_tensor b[3],
		     wafer_tensor *out)
{
	wafer_tensor h = *x;
	for (int l = 0; l < 3; l++) {
		wafer_tensor m, a;
		bench_check(wafer_op_matmul(c, &h, WAFER_ALWAYS_COPY, &w[l],
					    WAFER_ALWAYS_COPY, 0, &m),
			    "matmul");
		if (l > 0)
			bench_check(wafer_tensor_release(c, &h), "release");
		bench_check(wafer_op_binary(c, WAFER_BINARY_ADD, &m,
					    WAFER_DONATE_INPUT, &b[l],
					    WAFER_ALWAYS_COPY, &a),
			    "add");
		bench_check(wafer_op_unary(c, WAFER_UNARY_TANH, &a,
					   WAFER_DONATE_INPUT, &h),
			    "tanh");
	}
	*out = h;
}

static void mlp_figures(wafer_client *c)
{
	wafer_queue *q = wafer_client_default_queue(c);
	uint64_t xs[2] = {MLP_BATCH, MLP_WIDTH}, ws[2] = {MLP_WIDTH, MLP_WIDTH},
		 bs[2] = {1, MLP_WIDTH};
	size_t n = MLP_WIDTH * MLP_WIDTH;
	float *v = malloc(n * sizeof *v);
	wafer_tensor x, w[3], b[3], y;
	wafer_graph *g;
	double eager = INFINITY, replay = INFINITY;
	const unsigned reps = 200;

	for (size_t i = 0; i < n; i++)
		v[i] = bench_matrix_value(0, i) * 0.05f;
	bench_check(wafer_tensor_create(c, WAFER_DTYPE_F32, 2, xs, v, &x), "x");
	for (int l = 0; l < 3; l++) {
		bench_check(wafer_tensor_create(c, WAFER_DTYPE_F32, 2, ws, v,
						&w[l]),
			    "w");
		bench_check(wafer_tensor_create(c, WAFER_DTYPE_F32, 2, bs, v,
						&b[l]),
			    "b");
	}
	free(v);
	/* Eager first: autotune measures here, not in the capture. */
	for (int i = 0; i < 3; i++) {
		mlp_step(c, &x, w, b, &y);
		bench_check(wafer_tensor_release(c, &y), "release");
	}
	bench_check(wafer_queue_begin_capture(q), "begin_capture");
	mlp_step(c, &x, w, b, &y);
	bench_check(wafer_queue_end_capture(q, &g), "end_capture");
	for (int s = 0; s < 5; s++) {
		uint64_t t = bench_now_ns();
		for (unsigned r = 0; r < reps; r++) {
			wafer_tensor e;
			mlp_step(c, &x, w, b, &e);
			bench_check(wafer_tensor_release(c, &e), "release");
		}
		bench_check(wafer_sync(c), "sync");
		eager = fmin(eager, (double)(bench_now_ns() - t) / reps / 1e3);
		t = bench_now_ns();
		for (unsigned r = 0; r < reps; r++)
			bench_check(wafer_graph_launch(g, q), "graph_launch");
		bench_check(wafer_sync(c), "sync");
		replay = fmin(replay, (double)(bench_now_ns() - t) / reps / 1e3);
	}
	printf("graph mlp eager_us=%.2f replay_us=%.2f speedup=%.2f\n", eager,
	       replay, eager / replay);
	fflush(stdout);
	bench_check(wafer_graph_release(g), "graph_release");
	bench_check(wafer_tensor_release(c, &y), "release");
	bench_check(wafer_tensor_release(c, &x), "release");
	for (int l = 0; l < 3; l++) {
		bench_check(wafer_tensor_release(c, &w[l]), "release");
		bench_check(wafer_tensor_release(c, &b[l]), "release");
	}
}

int bench_graph(int argc, char **argv)
{
	const char *channel = argc > 1 ? argv[1] : NULL;
	wafer_runtime *runtime;
	wafer_device_desc device = {.struct_size = sizeof device};

	bench_check(wafer_runtime_open(NULL, &runtime), "runtime_open");
	wafer_client *client = bench_open_client(runtime, channel, NULL);
	bench_check(wafer_client_device(client, &device), "client_device");
	const struct bench_raw *raw = bench_raw_for(&device);
	printf("# wafer-bench graph on %s:%u (%s), channel %s\n",
	       device.backend, device.index, device.name,
	       channel ? channel : "configured");
	chain_figures(client, raw, 100);
	chain_figures(client, raw, 1000);
	mlp_figures(client);
	bench_check(wafer_client_close(client), "client_close");
	wafer_runtime_close(runtime);
	return 0;
}
