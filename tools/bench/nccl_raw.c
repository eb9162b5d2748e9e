/* wafer — SPDX-License-Identifier: MIT
 *
 * nccl_raw.c: NCCL called directly, the counterpart of `wafer-bench
 * allreduce` (raw.h), timed as nccl-tests' all_reduce_perf times it:
 * every GPU's communicator from ncclCommInitAll, a thread a rank, many
 * in-place ncclAllReduce calls between two events on the rank's stream
 * with no host synchronisation between them, on the same buffers and
 * streams the wafer side used. The library is
 * WAFER_BENCH_NCCL when set, else libnccl.so.2 as the dynamic linker
 * finds it (LD_LIBRARY_PATH), else the toolkit's lib64; the driver is
 * loaded with the plugin's loader (plugins/cuda/driver.c) for the
 * events. */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>

#include "tools/bench/bench.h"
#include "tools/bench/raw.h"

#ifdef WAFER_HAVE_NCCL_H

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include <nccl.h>

#include "plugins/cuda/driver.h"

#define MAX_RANKS 16

static struct {
	int tried, ok;
	char what[512];
	struct cuda_driver drv;
	__typeof__(ncclGetVersion) *get_version;
	__typeof__(ncclCommInitAll) *init_all;
	__typeof__(ncclCommDestroy) *destroy;
	__typeof__(ncclAllReduce) *all_reduce;
	__typeof__(ncclGetErrorString) *error_string;
	int n;
	int ordinals[MAX_RANKS];
	ncclComm_t comms[MAX_RANKS];
} nccl;

static int load(void)
{
	const char *names[] = {getenv("WAFER_BENCH_NCCL"), "libnccl.so.2",
			       WAFER_CUDA_LIBDIR "/libnccl.so.2"};
	char why[512], from[256] = "";
	void *so = NULL;
	int version = 0;

	if (nccl.tried)
		return nccl.ok ? 0 : -1;
	nccl.tried = 1;
	for (size_t i = 0; i < 3 && !so; i++)
		if (names[i]) {
			so = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
			if (so)
				snprintf(from, sizeof from, "%s", names[i]);
		}
	if (!so) {
		fprintf(stderr, "wafer-bench: raw NCCL: libnccl.so.2 not found "
				"(set WAFER_BENCH_NCCL or LD_LIBRARY_PATH)\n");
		return -1;
	}
	nccl.get_version = (__typeof__(nccl.get_version))dlsym(so, "ncclGetVersion");
	nccl.init_all = (__typeof__(nccl.init_all))dlsym(so, "ncclCommInitAll");
	nccl.destroy = (__typeof__(nccl.destroy))dlsym(so, "ncclCommDestroy");
	nccl.all_reduce = (__typeof__(nccl.all_reduce))dlsym(so, "ncclAllReduce");
	nccl.error_string =
		(__typeof__(nccl.error_string))dlsym(so, "ncclGetErrorString");
	if (!nccl.get_version || !nccl.init_all || !nccl.destroy ||
	    !nccl.all_reduce || !nccl.error_string) {
		fprintf(stderr, "wafer-bench: raw NCCL: %s lacks an entry\n",
			from);
		return -1;
	}
	if (cuda_driver_load(&nccl.drv, NULL, why, sizeof why) != 0) {
		fprintf(stderr, "wafer-bench: raw NCCL: the driver: %s\n", why);
		return -1;
	}
	nccl.get_version(&version);
	snprintf(nccl.what, sizeof nccl.what, "NCCL %d.%d.%d from %s",
		 version / 10000, version / 100 % 100, version % 100, from);
	nccl.ok = 1;
	return 0;
}

static int nccl_fail(const char *what, ncclResult_t r)
{
	fprintf(stderr, "wafer-bench: raw NCCL: %s: %s\n", what,
		nccl.error_string(r));
	return -1;
}

/* The communicators for |ranks|' GPUs, made once (again if the GPUs
 * differ). */
static int comms_for(const struct bench_nccl_rank *ranks, int n)
{
	int same = n == nccl.n;
	ncclResult_t r;

	for (int i = 0; same && i < n; i++)
		same = nccl.ordinals[i] == ranks[i].ordinal;
	if (same)
		return 0;
	for (int i = 0; i < nccl.n; i++)
		nccl.destroy(nccl.comms[i]);
	nccl.n = 0;
	for (int i = 0; i < n; i++)
		nccl.ordinals[i] = ranks[i].ordinal;
	nccl.drv.cuCtxSetCurrent(ranks[0].context);
	r = nccl.init_all(nccl.comms, n, nccl.ordinals);
	if (r != ncclSuccess)
		return nccl_fail("ncclCommInitAll", r);
	nccl.n = n;
	return 0;
}

/* One rank's side of a timing, on a thread of its own as the wafer side
 * issues each rank's calls (and as nccl-tests' one-GPU-a-process runs
 * do): |warmup| calls, then |reps| in-place calls between two events on
 * the rank's stream, no host synchronisation between calls. */
struct rank_run {
	const struct bench_nccl_rank *rank;
	ncclComm_t comm;
	/* A step: an all-reduce of counts[j] elements at buffers[j] for each
	 * j < calls, in order. */
	void *const *buffers;
	const size_t *counts;
	size_t calls;
	unsigned warmup, reps;
	pthread_barrier_t *start;
	double device_ns; /* between the events */
	double issue_ns;  /* the host's time in the timed calls */
	int failed;
};

static ncclResult_t steps(const struct rank_run *r, unsigned how_many)
{
	ncclResult_t nr = ncclSuccess;

	for (unsigned i = 0; i < how_many; i++)
		for (size_t j = 0; j < r->calls && nr == ncclSuccess; j++)
			nr = nccl.all_reduce(r->buffers[j], r->buffers[j],
					     r->counts[j], ncclFloat32, ncclSum,
					     r->comm, r->rank->stream);
	return nr;
}

static void *rank_main(void *arg)
{
	struct rank_run *r = arg;
	CUevent begin = NULL, end = NULL;
	ncclResult_t nr = ncclSuccess;
	CUresult cr = nccl.drv.cuCtxSetCurrent(r->rank->context);
	uint64_t t0;
	float ms = 0;

	if (cr == CUDA_SUCCESS)
		cr = nccl.drv.cuEventCreate(&begin, CU_EVENT_DEFAULT);
	if (cr == CUDA_SUCCESS)
		cr = nccl.drv.cuEventCreate(&end, CU_EVENT_DEFAULT);
	/* Every rank reaches the barrier, failed or not: the others wait. */
	pthread_barrier_wait(r->start);
	if (cr == CUDA_SUCCESS)
		nr = steps(r, r->warmup);
	if (cr == CUDA_SUCCESS && nr == ncclSuccess)
		cr = nccl.drv.cuEventRecord(begin, r->rank->stream);
	t0 = bench_now_ns();
	if (cr == CUDA_SUCCESS && nr == ncclSuccess)
		nr = steps(r, r->reps);
	r->issue_ns = (double)(bench_now_ns() - t0);
	if (cr == CUDA_SUCCESS && nr == ncclSuccess)
		cr = nccl.drv.cuEventRecord(end, r->rank->stream);
	if (cr == CUDA_SUCCESS && nr == ncclSuccess)
		cr = nccl.drv.cuEventSynchronize(end);
	if (cr == CUDA_SUCCESS && nr == ncclSuccess)
		cr = nccl.drv.cuEventElapsedTime(&ms, begin, end);
	if (nr != ncclSuccess)
		nccl_fail("ncclAllReduce", nr);
	else if (cr != CUDA_SUCCESS)
		fprintf(stderr, "wafer-bench: raw NCCL: events: CUresult %d\n",
			(int)cr);
	r->failed = nr != ncclSuccess || cr != CUDA_SUCCESS;
	r->device_ns = (double)ms * 1e6;
	if (begin)
		nccl.drv.cuEventDestroy(begin);
	if (end)
		nccl.drv.cuEventDestroy(end);
	return NULL;
}

double bench_nccl_sequence_ns(const struct bench_nccl_rank *ranks, int n,
			      void *const *buffers, const size_t *counts,
			      size_t calls, unsigned warmup, unsigned reps,
			      const char **what, double *out_call_ns)
{
	struct rank_run runs[MAX_RANKS];
	pthread_t threads[MAX_RANKS];
	pthread_barrier_t start;
	double slowest = 0, issue = 0;
	int failed = 0;

	*what = "none";
	if (n < 1 || n > MAX_RANKS || reps == 0 || calls == 0 || load() != 0 ||
	    comms_for(ranks, n) != 0)
		return -1.0;
	*what = nccl.what;
	pthread_barrier_init(&start, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		runs[i] = (struct rank_run){
			.rank = &ranks[i],
			.comm = nccl.comms[i],
			.buffers = buffers + (size_t)i * calls,
			.counts = counts,
			.calls = calls,
			.warmup = warmup,
			.reps = reps,
			.start = &start,
		};
		if (pthread_create(&threads[i], NULL, rank_main, &runs[i])) {
			/* The barrier needs n: the bench cannot go on. */
			fprintf(stderr, "wafer-bench: raw NCCL: no thread\n");
			exit(1);
		}
	}
	for (int i = 0; i < n; i++) {
		pthread_join(threads[i], NULL);
		failed |= runs[i].failed;
		if (runs[i].device_ns > slowest)
			slowest = runs[i].device_ns;
		issue += runs[i].issue_ns;
	}
	pthread_barrier_destroy(&start);
	if (failed)
		return -1.0;
	if (out_call_ns)
		*out_call_ns = issue / n / reps / calls;
	return slowest / reps;
}

double bench_nccl_allreduce_ns(const struct bench_nccl_rank *ranks, int n,
			       size_t count, unsigned warmup, unsigned reps,
			       const char **what, double *out_call_ns)
{
	void *buffers[MAX_RANKS];

	for (int i = 0; i < n && i < MAX_RANKS; i++)
		buffers[i] = ranks[i].buffer;
	return bench_nccl_sequence_ns(ranks, n, buffers, &count, 1, warmup,
				      reps, what, out_call_ns);
}

#else /* !WAFER_HAVE_NCCL_H */

double bench_nccl_allreduce_ns(const struct bench_nccl_rank *ranks, int n,
			       size_t count, unsigned warmup, unsigned reps,
			       const char **what, double *out_call_ns)
{
	(void)out_call_ns;
	*what = "none";
	fprintf(stderr, "wafer-bench: raw NCCL: built without nccl.h\n");
	return -1.0;
}

double bench_nccl_sequence_ns(const struct bench_nccl_rank *ranks, int n,
			      void *const *buffers, const size_t *counts,
			      size_t calls, unsigned warmup, unsigned reps,
			      const char **what, double *out_call_ns)
{
	(void)buffers;
	(void)calls;
	return bench_nccl_allreduce_ns(ranks, n, counts[0], warmup, reps, what,
				       out_call_ns);
}

#endif
