/* wafer — SPDX-License-Identifier: MIT
 *
 * allreduce.c: `wafer-bench allreduce [MAX_MiB [reps [ranks]]]` — the
 * in-place f32 sum all-reduce through wafer (wafer_comm_all_reduce) over
 * one client a device of the default device's backend (all its devices,
 * or the first |ranks|), one communicator over them
 * (wafer_comm_open_group), each rank issuing from a thread of its own;
 * beside NCCL called directly (nccl_raw.c) on the same buffers and
 * streams in the same run, as nccl-tests does it. Sizes go from 4 KiB
 * by factors of 8 up to MAX_MiB (default 256), which is the last; each
 * figure is the mean of |steps| steps (|reps|, default 20, or more for
 * small sizes: up to 1,000, about 512 MiB moved) after 3 warm-up steps,
 * from the first issue to the end of the last rank's sync; call_us is
 * the host's mean time in one wafer_comm_all_reduce. The raw side is
 * timed as nccl-tests does it: the same steps between two events on
 * each stream, no host synchronisation between calls (nccl_raw.c). Before the timing, each size is
 * checked once: ranks holding r + 1 all hold n(n + 1)/2 after. Then a
 * bucketed gradient all-reduce (50 all-reduces of 1 to 25 MiB a step,
 * smaller units when MAX_MiB is under 32), both sides. Then peer
 * copies (wafer_copy_peer) of the largest size between two clients: of
 * two devices when there are two, else of the one device:
 *
 *   allreduce ranks=N bytes=B dtype=f32 check=ok us=T algbw=A busbw=B
 *             steps=S call_us=C
 *             [raw=WHAT raw_us=T raw_busbw=B vs_raw=RAW_T/T raw_call_us=C]
 *   buckets ranks=N calls=50 bytes=B us=T call_us=C
 *             [raw_us=T vs_raw=RAW_T/T raw_call_us=C]
 *   peer_copy from=cuda:0 to=cuda:1 bytes=B us=T gbps=G
 *
 * algbw = bytes / time, busbw = algbw * 2 (n - 1) / n (nccl-tests' bus
 * bandwidth: 0 for one rank, where vs_raw still compares the times). */
#include "build-config.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/comm.h>
#include <wafer/interop.h>
#include <wafer/plugin.h>

#include "tools/bench/bench.h"
#include "tools/bench/raw.h"

#define MAX_RANKS 8
#define WARMUP 3

struct rank {
	wafer_client *client;
	wafer_comm *comm;
	wafer_handle buf;
	size_t count;
	/* When |calls| is not 0, a step is the sequence: an all-reduce of
	 * counts[j] elements of bufs[j] for each j < calls, in order. */
	const wafer_handle *bufs;
	const size_t *counts;
	size_t calls;
	unsigned steps;
	double issue_ns; /* the host's time in the calls */
	pthread_barrier_t *start, *done;
	wafer_status status;
	char error[512];
};

/* A rank's thread: |steps| all-reduces between the two barriers, then a
 * sync (the others may wait for it inside theirs). */
static void *rank_main(void *arg)
{
	struct rank *r = arg;
	wafer_status s = WAFER_OK;

	pthread_barrier_wait(r->start);
	uint64_t t0 = bench_now_ns();

	for (unsigned i = 0; i < r->steps && s == WAFER_OK; i++) {
		if (!r->calls)
			s = wafer_comm_all_reduce(r->comm, r->buf, r->buf,
						  r->count, WAFER_DTYPE_F32,
						  WAFER_REDUCE_SUM);
		for (size_t j = 0; j < r->calls && s == WAFER_OK; j++)
			s = wafer_comm_all_reduce(r->comm, r->bufs[j],
						  r->bufs[j], r->counts[j],
						  WAFER_DTYPE_F32,
						  WAFER_REDUCE_SUM);
	}
	r->issue_ns = (double)(bench_now_ns() - t0);
	if (s == WAFER_OK)
		s = wafer_sync(r->client);
	r->status = s;
	if (s != WAFER_OK)
		snprintf(r->error, sizeof r->error, "%s", wafer_last_error());
	pthread_barrier_wait(r->done);
	return NULL;
}

/* |steps| steps on every rank; ns from the start to the last sync, and
 * the host's mean time in one call (*out_call_ns, may be NULL). */
static double run(struct rank *ranks, int n, size_t count, unsigned steps,
		  double *out_call_ns)
{
	pthread_barrier_t start, done;
	pthread_t threads[MAX_RANKS];
	uint64_t t0, t1;

	pthread_barrier_init(&start, NULL, (unsigned)n + 1);
	pthread_barrier_init(&done, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++) {
		ranks[i].count = count;
		ranks[i].steps = steps;
		ranks[i].start = &start;
		ranks[i].done = &done;
		pthread_create(&threads[i], NULL, rank_main, &ranks[i]);
	}
	pthread_barrier_wait(&start);
	t0 = bench_now_ns();
	pthread_barrier_wait(&done);
	t1 = bench_now_ns();
	for (int i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	pthread_barrier_destroy(&start);
	pthread_barrier_destroy(&done);
	if (out_call_ns) {
		double issue = 0;
		size_t calls = ranks[0].calls ? ranks[0].calls : 1;

		for (int i = 0; i < n; i++)
			issue += ranks[i].issue_ns;
		*out_call_ns = issue / n / steps / calls;
	}
	for (int i = 0; i < n; i++)
		if (ranks[i].status != WAFER_OK) {
			fprintf(stderr, "wafer-bench allreduce: rank %d: %s\n",
				i, ranks[i].error);
			exit(1);
		}
	return (double)(t1 - t0);
}

/* Ranks holding r + 1 all hold n(n + 1)/2 after one all-reduce. */
static const char *check(struct rank *ranks, int n, size_t count)
{
	float want = (float)(n * (n + 1) / 2), first, last;

	for (int i = 0; i < n; i++)
		bench_fill_f32(ranks[i].client, ranks[i].buf, count, i + 1.0);
	run(ranks, n, count, 1, NULL);
	for (int i = 0; i < n; i++) {
		bench_check(wafer_read(ranks[i].client, ranks[i].buf, 0, &first,
				       sizeof first),
			    "read");
		bench_check(wafer_read(ranks[i].client, ranks[i].buf,
				       (count - 1) * sizeof last, &last,
				       sizeof last),
			    "read");
		if (first != want || last != want) {
			fprintf(stderr, "wafer-bench allreduce: rank %d holds "
				"%g ... %g, not %g\n", i, (double)first,
				(double)last, (double)want);
			return "FAILED";
		}
	}
	/* Zeros from here: sums of them stay finite whatever the steps. */
	for (int i = 0; i < n; i++) {
		bench_fill_f32(ranks[i].client, ranks[i].buf, count, 0.0);
		bench_check(wafer_sync(ranks[i].client), "sync");
	}
	return "ok";
}

/* Steps for a size: |reps| at least, more for small sizes (up to 1,000,
 * about 512 MiB moved), so that a figure is not one launch's latency. */
static unsigned steps_for(size_t bytes, unsigned reps)
{
	size_t many = ((size_t)512 << 20) / bytes;

	if (many > 1000)
		many = 1000;
	return many > reps ? (unsigned)many : reps;
}

/* A bucketed gradient all-reduce: BUCKETS in-place all-reduces a step,
 * of 1 to 25 units each (unit: 1 MiB, less when MAX_MiB is under 32),
 * wafer's and raw NCCL's on the same buffers. */
#define BUCKETS 50
static void buckets(struct rank *ranks, const struct bench_nccl_rank *raw,
		    int n, int have_raw, size_t max_bytes, unsigned reps)
{
	size_t unit = max_bytes / 32 < ((size_t)1 << 20) ? max_bytes / 32
							 : (size_t)1 << 20;
	size_t counts[BUCKETS], total = 0;
	wafer_handle bufs[MAX_RANKS][BUCKETS];
	void *raw_bufs[MAX_RANKS * BUCKETS];
	double call_ns, ns;

	unit &= ~(size_t)3;
	for (size_t j = 0; j < BUCKETS; j++) {
		/* 13 and 25 are coprime: each of 1..25 units twice. */
		counts[j] = (1 + j * 13 % 25) * unit / 4;
		total += counts[j] * 4;
	}
	for (int i = 0; i < n; i++) {
		for (size_t j = 0; j < BUCKETS; j++) {
			wafer_native_buffer nb = {.struct_size = sizeof nb};

			bench_check(wafer_empty(ranks[i].client, counts[j] * 4,
						&bufs[i][j]),
				    "empty (bucket)");
			bench_fill_f32(ranks[i].client, bufs[i][j], counts[j],
				       0.0);
			raw_bufs[(size_t)i * BUCKETS + j] = NULL;
			if (have_raw &&
			    wafer_handle_native(ranks[i].client, bufs[i][j],
						&nb) == WAFER_OK)
				raw_bufs[(size_t)i * BUCKETS + j] =
					(void *)(uintptr_t)nb.address;
			have_raw = have_raw && raw_bufs[(size_t)i * BUCKETS + j];
		}
		bench_check(wafer_sync(ranks[i].client), "sync");
		ranks[i].bufs = bufs[i];
		ranks[i].counts = counts;
		ranks[i].calls = BUCKETS;
	}
	run(ranks, n, 0, 1, NULL);
	ns = run(ranks, n, 0, reps, &call_ns) / reps;
	printf("buckets ranks=%d calls=%d bytes=%zu us=%.1f call_us=%.2f", n,
	       BUCKETS, total, ns / 1e3, call_ns / 1e3);
	if (have_raw) {
		const char *what;
		double raw_call_ns = 0, raw_ns = bench_nccl_sequence_ns(
			raw, n, raw_bufs, counts, BUCKETS, 1, reps, &what,
			&raw_call_ns);
		if (raw_ns > 0)
			printf(" raw_us=%.1f vs_raw=%.3f raw_call_us=%.2f",
			       raw_ns / 1e3, raw_ns / ns, raw_call_ns / 1e3);
	}
	printf("\n");
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		ranks[i].calls = 0;
		for (size_t j = 0; j < BUCKETS; j++)
			bench_check(wafer_release(ranks[i].client, bufs[i][j]),
				    "release");
	}
}

static void peer_copies(wafer_runtime *runtime, struct rank *ranks, int n,
			const wafer_device_desc *dev0, size_t bytes,
			unsigned reps)
{
	wafer_client *src = ranks[0].client, *dst;
	wafer_device_desc d = {.struct_size = sizeof d};
	wafer_handle h, copy;
	char name[64];
	uint64_t t0, total = 0;

	if (n > 1) {
		dst = ranks[1].client;
	} else {
		snprintf(name, sizeof name, "%s:%u", dev0->backend, dev0->index);
		bench_check(wafer_client_open(runtime, name, NULL, &dst),
			    "client_open (a second client)");
	}
	bench_check(wafer_client_device(dst, &d), "client_device");
	bench_check(wafer_empty(src, bytes, &h), "empty");
	bench_fill_f32(src, h, bytes / 4, 1.0);
	bench_check(wafer_sync(src), "sync");
	/* One untimed, then each copy to the end of the destination's
	 * sync, and its release. */
	for (unsigned i = 0; i <= reps; i++) {
		t0 = bench_now_ns();
		bench_check(wafer_copy_peer(src, h, dst, &copy), "copy_peer");
		bench_check(wafer_sync(dst), "sync");
		if (i)
			total += bench_now_ns() - t0;
		bench_check(wafer_release(dst, copy), "release");
	}
	bench_check(wafer_release(src, h), "release");
	double us = (double)total / reps / 1e3;
	printf("peer_copy from=%s:%u to=%s:%u bytes=%zu us=%.1f gbps=%.2f\n",
	       dev0->backend, dev0->index, d.backend, d.index, bytes, us,
	       (double)bytes / (us * 1e3));
	if (n == 1)
		wafer_client_close(dst);
}

int bench_allreduce(int argc, char **argv)
{
	size_t max_mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
	unsigned reps = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 20;
	int want = argc > 3 ? atoi(argv[3]) : MAX_RANKS;
	size_t max_bytes = max_mib << 20;
	struct rank ranks[MAX_RANKS];
	wafer_client *clients[MAX_RANKS];
	wafer_comm *comms[MAX_RANKS];
	struct bench_nccl_rank raw[MAX_RANKS];
	wafer_device_desc dev0 = {.struct_size = sizeof dev0};
	wafer_runtime *runtime;
	int n = 0;

	if (!max_bytes || !reps || want < 1) {
		fprintf(stderr, "wafer-bench allreduce: MiB, reps and ranks "
				"must be positive\n");
		return 2;
	}
	if (want > MAX_RANKS)
		want = MAX_RANKS;
	bench_check(wafer_runtime_open(NULL, &runtime), "runtime_open");
	clients[0] = bench_open_client(runtime, NULL, NULL);
	bench_check(wafer_client_device(clients[0], &dev0), "client_device");
	n = 1;
	/* The default device's backend's other devices, one client each. */
	for (size_t i = 0; i < wafer_runtime_device_count(runtime) && n < want;
	     i++) {
		wafer_device_desc d = {.struct_size = sizeof d};
		char name[64];

		bench_check(wafer_runtime_device(runtime, i, &d), "device");
		if (strcmp(d.backend, dev0.backend) != 0 || d.index == dev0.index)
			continue;
		snprintf(name, sizeof name, "%s:%u", d.backend, d.index);
		bench_check(wafer_client_open(runtime, name, NULL, &clients[n]),
			    "client_open");
		n++;
	}
	bench_check(wafer_comm_open_group(clients, (size_t)n, comms),
		    "comm_open_group");
	memset(ranks, 0, sizeof ranks);
	for (int i = 0; i < n; i++) {
		wafer_native_queue q = {.struct_size = sizeof q};

		ranks[i].client = clients[i];
		ranks[i].comm = comms[i];
		bench_check(wafer_empty(clients[i], max_bytes, &ranks[i].buf),
			    "empty");
		/* NCCL's side runs on the same buffers and streams. */
		raw[i].buffer = NULL;
		if (wafer_client_native_queue(clients[i], &q) == WAFER_OK &&
		    q.kind == WAFER_NATIVE_CUDA_POINTER) {
			wafer_native_buffer nb = {.struct_size = sizeof nb};
			if (wafer_handle_native(clients[i], ranks[i].buf, &nb) ==
			    WAFER_OK) {
				raw[i] = (struct bench_nccl_rank){
					q.device_ordinal, q.context, q.queue,
					(void *)(uintptr_t)nb.address};
			}
		}
	}
	int have_raw = 1;
	for (int i = 0; i < n; i++)
		have_raw = have_raw && raw[i].buffer;

	for (size_t bytes = 4096;; bytes *= 8) {
		if (bytes > max_bytes)
			bytes = max_bytes;
		size_t count = bytes / 4;
		const char *ok = check(ranks, n, count);
		unsigned steps = steps_for(bytes, reps);
		double call_ns;
		run(ranks, n, count, WARMUP, NULL);
		double ns = run(ranks, n, count, steps, &call_ns) / steps;
		double algbw = (double)bytes / ns; /* GB/s */
		double factor = 2.0 * (n - 1) / n;
		printf("allreduce ranks=%d bytes=%zu dtype=f32 check=%s us=%.2f "
		       "algbw=%.2f busbw=%.2f steps=%u call_us=%.2f",
		       n, bytes, ok, ns / 1e3, algbw, algbw * factor, steps,
		       call_ns / 1e3);
		if (have_raw) {
			const char *what;
			double raw_call_ns = 0, raw_ns = bench_nccl_allreduce_ns(
				raw, n, count, WARMUP, steps, &what,
				&raw_call_ns);
			if (raw_ns > 0)
				printf(" raw=\"%s\" raw_us=%.2f raw_busbw=%.2f "
				       "vs_raw=%.3f raw_call_us=%.2f",
				       what, raw_ns / 1e3,
				       (double)bytes / raw_ns * factor,
				       raw_ns / ns, raw_call_ns / 1e3);
		}
		printf("\n");
		fflush(stdout);
		if (bytes == max_bytes)
			break;
	}
	for (int i = 0; i < n; i++)
		bench_check(wafer_release(clients[i], ranks[i].buf), "release");
	buckets(ranks, raw, n, have_raw, max_bytes, reps);
	for (int i = 0; i < n; i++)
		wafer_comm_close(comms[i]);
	peer_copies(runtime, ranks, n, &dev0,
		    max_bytes < ((size_t)256 << 20) ? max_bytes
						    : (size_t)256 << 20,
		    reps);
	for (int i = 0; i < n; i++)
		wafer_client_close(clients[i]);
	wafer_runtime_close(runtime);
	return 0;
}
