/* wafer — SPDX-License-Identifier: MIT
 *
 * nccl_raw.c: NCCL called directly, the counterpart of `wafer-bench
 * allreduce` (raw.h), as nccl-tests' all_reduce_perf calls it: one
 * process, every GPU's communicator from ncclCommInitAll, each step an
 * ncclGroupStart/End around one ncclAllReduce a rank, on the same
 * buffers and streams the wafer side used. The library is
 * WAFER_BENCH_NCCL when set, else libnccl.so.2 as the dynamic linker
 * finds it (LD_LIBRARY_PATH), else the toolkit's lib64; the driver is
 * loaded with the plugin's loader (plugins/cuda/driver.c) to synchronise
 * the streams. */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>

#include "tools/bench/bench.h"
#include "tools/bench/raw.h"

#ifdef WAFER_HAVE_NCCL_H

#include <dlfcn.h>
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
	__typeof__(ncclGroupStart) *group_start;
	__typeof__(ncclGroupEnd) *group_end;
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
	nccl.group_start = (__typeof__(nccl.group_start))dlsym(so, "ncclGroupStart");
	nccl.group_end = (__typeof__(nccl.group_end))dlsym(so, "ncclGroupEnd");
	nccl.error_string =
		(__typeof__(nccl.error_string))dlsym(so, "ncclGetErrorString");
	if (!nccl.get_version || !nccl.init_all || !nccl.destroy ||
	    !nccl.all_reduce || !nccl.group_start || !nccl.group_end ||
	    !nccl.error_string) {
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

static int step(const struct bench_nccl_rank *ranks, int n, size_t count)
{
	ncclResult_t r = nccl.group_start();

	for (int i = 0; i < n && r == ncclSuccess; i++)
		r = nccl.all_reduce(ranks[i].buffer, ranks[i].buffer, count,
				    ncclFloat32, ncclSum, nccl.comms[i],
				    ranks[i].stream);
	if (r == ncclSuccess)
		r = nccl.group_end();
	return r == ncclSuccess ? 0 : nccl_fail("ncclAllReduce", r);
}

static int sync_all(const struct bench_nccl_rank *ranks, int n)
{
	for (int i = 0; i < n; i++) {
		CUresult r = nccl.drv.cuCtxSetCurrent(ranks[i].context);
		if (r == CUDA_SUCCESS)
			r = nccl.drv.cuStreamSynchronize(ranks[i].stream);
		if (r != CUDA_SUCCESS) {
			fprintf(stderr, "wafer-bench: raw NCCL: "
				"cuStreamSynchronize: CUresult %d\n", (int)r);
			return -1;
		}
	}
	return 0;
}

double bench_nccl_allreduce_ns(const struct bench_nccl_rank *ranks, int n,
			       size_t count, unsigned warmup, unsigned reps,
			       const char **what)
{
	uint64_t t0;

	*what = "none";
	if (n < 1 || n > MAX_RANKS || reps == 0 || load() != 0 ||
	    comms_for(ranks, n) != 0)
		return -1.0;
	*what = nccl.what;
	for (unsigned i = 0; i < warmup; i++)
		if (step(ranks, n, count) != 0)
			return -1.0;
	if (sync_all(ranks, n) != 0)
		return -1.0;
	t0 = bench_now_ns();
	for (unsigned i = 0; i < reps; i++)
		if (step(ranks, n, count) != 0)
			return -1.0;
	if (sync_all(ranks, n) != 0)
		return -1.0;
	return (double)(bench_now_ns() - t0) / reps;
}

#else /* !WAFER_HAVE_NCCL_H */

double bench_nccl_allreduce_ns(const struct bench_nccl_rank *ranks, int n,
			       size_t count, unsigned warmup, unsigned reps,
			       const char **what)
{
	*what = "none";
	fprintf(stderr, "wafer-bench: raw NCCL: built without nccl.h\n");
	return -1.0;
}

#endif
