/* wafer — SPDX-License-Identifier: MIT
 *
 * standin_comm.h: what the tests of failing collectives through the core
 * on the stand-ins share (t/cuda/comm_fail, t/cuda/comm_hang): a runtime
 * on cuda with two stand-in GPUs (t/standins/fakecuda.c) and the
 * stand-in NCCL (t/standins/fakenccl.c), and the check that a client
 * goes on after a failure. Include after tap.h and client_util.h. */
#ifndef WAFER_T_CUDA_STANDIN_COMM_H
#define WAFER_T_CUDA_STANDIN_COMM_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <wafer/comm.h>
#include <wafer/wafer.h>

/* Each test runs T_COMM_RANKS ranks, a stand-in GPU each, on each of
 * t_comm_channels. */
#define T_COMM_RANKS 2
static const char *const t_comm_channels[] = {"direct", "mutex", "mpsc"};

/* A runtime on cuda:0 and cuda:1 of the stand-in driver with the
 * stand-in NCCL; [comm] timeout = |timeout| unless NULL. Skips the whole
 * test where they were not built. */
static inline wafer_runtime *t_standin_comm_runtime(const char *timeout)
{
	const char *builddir = getenv("T_BUILDDIR");
	char fake[4096], nccl[4096];

	if (!builddir)
		skip_all("T_BUILDDIR is not set (run through make check)");
	snprintf(fake, sizeof fake, "%s/standins/.libs/fakecuda.so", builddir);
	snprintf(nccl, sizeof nccl, "%s/standins/.libs/fakenccl.so", builddir);
	if (access(fake, R_OK) != 0 || access(nccl, R_OK) != 0)
		skip_all("no stand-in driver or NCCL (nccl.h not found?)");
	setenv("FAKECUDA_DEVICES", "2", 1);
	wafer_option options[] = {
		{"core", "backend", "cuda"},
		{"cuda", "driver_library", fake},
		{"cuda", "nccl", nccl},
		{"cuda", "cublas", "no"},
		{"comm", "timeout", timeout},
	};
	wafer_runtime_options ro = {
		.struct_size = sizeof ro,
		.options = options,
		.option_count = sizeof options / sizeof options[0] -
				(timeout ? 0 : 1),
		.flags = WAFER_RUNTIME_NO_CONFIG_FILES,
	};
	wafer_runtime *rt;

	check(wafer_runtime_open(&ro, &rt), "runtime_open");
	return rt;
}

/* Fills |n| floats of |h| with |value| by a kernel and reads them back:
 * whether all came back, else why in |why|. */
static inline bool t_fill_reads_back(wafer_client *c, wafer_handle h, int n,
				     float value, uint32_t rank, char *why,
				     size_t why_size)
{
	float back[64];
	wafer_status st = n <= 64 ? fill_floats(c, h, (size_t)n, value)
				  : WAFER_ERROR_INVALID_ARGUMENT;
	bool same;

	if (st == WAFER_OK)
		st = wafer_read(c, h, 0, back, (size_t)n * sizeof *back);
	same = st == WAFER_OK;
	for (int i = 0; same && i < n; i++)
		same = back[i] == value;
	if (!same)
		snprintf(why, why_size, "rank %u: fill and read: %s", rank,
			 st == WAFER_OK ? "other values" : wafer_last_error());
	return same;
}

/* Closes each rank's communicator, checks its client has no error left
 * (ok_clean) and closes the client. */
static inline void t_comm_close_all(wafer_client *clients[T_COMM_RANKS],
				    wafer_comm *comms[T_COMM_RANKS],
				    const char *label)
{
	for (uint32_t i = 0; i < T_COMM_RANKS; i++) {
		check(wafer_comm_close(comms[i]), "comm_close");
		ok_clean(clients[i], label);
		check(wafer_client_close(clients[i]), "client_close");
	}
}

/* Fills |n| floats of |h| with 1 and all-reduces them (a sum) on
 * |comm|: the collective the tests make fail or hang. */
static inline wafer_status t_comm_reduce_ones(wafer_client *c,
					      wafer_comm *comm, wafer_handle h,
					      size_t n)
{
	wafer_status st = fill_floats(c, h, n, 1);
	return st == WAFER_OK ? wafer_comm_all_reduce(comm, h, h, n,
						      WAFER_DTYPE_F32,
						      WAFER_REDUCE_SUM)
			      : st;
}

#endif
