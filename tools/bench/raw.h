/* wafer — SPDX-License-Identifier: MIT
 *
 * raw.h: the vendor API called directly — what each benchmark puts beside
 * wafer's figure when the device's backend has such a counterpart. The
 * CUDA one (cuda_raw.c, built with the cuda plugin) loads libcuda.so.1
 * and cuBLAS itself and works on the same GPU, in the same process, as
 * the wafer side; without it (raw_none.c) there is none. */
#ifndef WAFER_TOOLS_BENCH_RAW_H
#define WAFER_TOOLS_BENCH_RAW_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/wafer.h>

struct wafer_trace;

struct bench_raw {
	/* What the numbers below call: "cuLaunchKernel", ... */
	const char *launch_what, *alloc_what, *add_what, *sgemm_what;
	/* Each returns its figure, or a negative number (after a message on
	 * stderr) when it cannot run. */
	/* ns per launch of an empty kernel: |launches| queued, then one
	 * synchronisation. */
	double (*launch_ns)(uint64_t launches);
	/* ns per allocate + free pair of |size| bytes from the device's
	 * stream-ordered pool, |pairs| times. */
	double (*alloc_pair_ns)(size_t size, uint64_t pairs);
	/* GB/s of out = a + b over |count| floats (3 x 4 x count bytes
	 * moved per add), best of |reps| adds. */
	double (*add_gbps)(size_t count, unsigned reps);
	/* GFLOP/s of an n x n x n fp32 matrix product by the vendor's BLAS,
	 * best of |reps|; |out_c| (n x n floats, may be NULL) receives C for
	 * A[i] = a(i), B[i] = b(i) as bench_matrix_value() fills them. */
	double (*sgemm_gflops)(unsigned n, unsigned reps, float *out_c);
	/* ns per event of |trace| (tools/trace.h) replayed through the
	 * device's stream-ordered pool, from nothing cached to a
	 * synchronised stream; *out_reserved_high: the most bytes the pool
	 * held meanwhile. */
	double (*replay_ns)(const struct wafer_trace *trace,
			    uint64_t *out_reserved_high);
	/* ms for |batches| batches, each an upload of |bytes| from pinned
	 * host memory and |adds| adds over it, double-buffered: on one
	 * stream (|two| 0), or the uploads on a second stream ordered with
	 * the adds by events (|two| 1). */
	const char *overlap_what, *event_what;
	double (*overlap_ms)(size_t bytes, unsigned batches, unsigned adds,
			     int two);
	/* ns per event record on one stream + wait on another, |pairs|
	 * times, then both synchronised; the best of |samples| runs.
	 * |context| 0: the calls alone; 1:
	 * each call after the API's "make the context current" (CUDA's
	 * cuCtxSetCurrent); 2: after asking which context is current
	 * (cuCtxGetCurrent), made current only when it is another; 3: with
	 * no context current at all (a negative result: the driver refused
	 * the calls). 1 and 2 show what a plugin pays for entering its
	 * context on every call, 3 whether the driver needs it to. */
	double (*event_pair_ns)(unsigned pairs, int context, int samples);
	/* ns per kernel of a chain of |k| adds of 256 floats, each reading
	 * the last one's output, |reps| chains then a synchronisation:
	 * launched one by one (|graph| 0), or captured once into a graph
	 * and launched as one (|graph| 1). */
	const char *graph_what;
	double (*graph_chain_ns)(unsigned k, unsigned reps, int graph);
};

/* The counterpart for |device| (the one the benchmark's client runs
 * on), or NULL when there is none. Loaded on first use. */
const struct bench_raw *bench_raw_for(const wafer_device_desc *device);

/* NCCL called directly (nccl_raw.c, with the cuda plugin and nccl.h),
 * beside `allreduce`: one rank a GPU, on the wafer side's own buffers and
 * streams (wafer_handle_native, wafer_client_native_queue). */
struct bench_nccl_rank {
	int ordinal;   /* the CUDA device */
	void *context; /* its primary context (CUcontext) */
	void *stream;  /* CUstream */
	void *buffer;  /* CUdeviceptr of count f32 */
};

/* ns per in-place f32 sum all-reduce of |count| elements over the |n|
 * ranks, as nccl-tests times it: communicators from ncclCommInitAll
 * (made at the first call and kept), a thread a rank issuing |warmup|
 * then |reps| ncclAllReduce calls on its stream, the timed ones between
 * two events with no host synchronisation between calls; the slowest
 * rank's time between its events. |*out_call_ns| (may be NULL): the
 * host's mean time in one timed call. Negative (after a message on
 * stderr) when it cannot run. |*what| says which NCCL ran ("NCCL 2.28.9
 * from libnccl.so.2"). */
double bench_nccl_allreduce_ns(const struct bench_nccl_rank *ranks, int n,
			       size_t count, unsigned warmup, unsigned reps,
			       const char **what, double *out_call_ns);
/* The same for a sequence of |calls| all-reduces a step, the j-th of
 * counts[j] elements in place at buffers[i * calls + j] on rank i (a
 * bucketed gradient all-reduce); ns per step, *out_call_ns per call. */
double bench_nccl_sequence_ns(const struct bench_nccl_rank *ranks, int n,
			      void *const *buffers, const size_t *counts,
			      size_t calls, unsigned warmup, unsigned reps,
			      const char **what, double *out_call_ns);

/* The inputs both sides of a matrix benchmark use: element |i| of A
 * (|which| 0) or B (1), in [-1, 1). */
static inline float bench_matrix_value(int which, size_t i)
{
	uint32_t x = (uint32_t)(i * 2654435761u) ^ (which ? 0x9e3779b9u : 0);
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	return (float)(x & 0xffff) / 32768.0f - 1.0f;
}

#endif
