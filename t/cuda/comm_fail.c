/* wafer — SPDX-License-Identifier: MIT
 *
 * comm_fail.c: a collective that NCCL refuses, through the core, on each
 * channel (direct, mutex, mpsc). Two clients (cuda:0 and cuda:1 of the
 * stand-in driver, t/standins/fakecuda.c) form a communicator through the
 * stand-in NCCL (t/standins/fakenccl.c), which fails every ncclAllReduce
 * (FAKENCCL_FAIL). Each rank's all_reduce (or, on mpsc, the sync after
 * it) is WAFER_ERROR_DEVICE naming ncclAllReduce and NCCL's reason; the
 * client then goes on: a kernel and a read give the right bytes, and an
 * all_gather on the same communicator works. */
#include "build-config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wafer/comm.h>
#include <wafer/wafer.h>

#include "t/client_util.h"
#include "t/tap.h"
#include "t/cuda/standin_comm.h"

#define N 37

struct rank {
	wafer_client *client;
	wafer_comm *comm;
	uint32_t rank;
	wafer_status failed;  /* the all_reduce's, or its sync's */
	char error[512];      /* wafer_last_error() then */
	bool usable;          /* fill and read gave the fill */
	bool gathered;        /* the all_gather after it is right */
	char why[256];
};

static void *rank_main(void *data)
{
	struct rank *r = data;
	float back[N], all[N * T_COMM_RANKS];
	wafer_handle h, g;

	if (wafer_empty(r->client, sizeof back, &h) != WAFER_OK ||
	    wafer_empty(r->client, sizeof all, &g) != WAFER_OK) {
		snprintf(r->why, sizeof r->why, "empty: %s",
			 wafer_last_error());
		return NULL;
	}
	wafer_status st = t_comm_reduce_ones(r->client, r->comm, h, N);
	if (st == WAFER_OK)
		st = wafer_sync(r->client);
	r->failed = st;
	snprintf(r->error, sizeof r->error, "%s", wafer_last_error());

	r->usable = t_fill_reads_back(r->client, h, N, (float)(r->rank + 7),
				      r->rank, r->why, sizeof r->why);

	st = wafer_comm_all_gather(r->comm, h, g, N, WAFER_DTYPE_F32);
	if (st == WAFER_OK)
		st = wafer_read(r->client, g, 0, all, sizeof all);
	r->gathered = st == WAFER_OK;
	for (int i = 0; r->gathered && i < N * T_COMM_RANKS; i++)
		r->gathered = all[i] == (float)(i / N + 7);
	if (!r->gathered && !r->why[0])
		snprintf(r->why, sizeof r->why, "rank %u: all_gather: %s",
			 r->rank, wafer_last_error());
	wafer_release(r->client, h);
	wafer_release(r->client, g);
	return NULL;
}

static void test_channel(wafer_runtime *rt, const char *label)
{
	wafer_client *clients[T_COMM_RANKS];
	wafer_comm *comms[T_COMM_RANKS];
	struct rank ranks[T_COMM_RANKS];
	pthread_t threads[T_COMM_RANKS];

	clients[0] = open_client_on(rt, "cuda:0", label);
	clients[1] = open_client_on(rt, "cuda:1", label);
	check(wafer_comm_open_group(clients, T_COMM_RANKS, comms), "open_group");
	for (uint32_t i = 0; i < T_COMM_RANKS; i++) {
		ranks[i] = (struct rank){.client = clients[i],
					 .comm = comms[i], .rank = i};
		if (pthread_create(&threads[i], NULL, rank_main, &ranks[i]))
			bail_out("pthread_create");
	}
	for (uint32_t i = 0; i < T_COMM_RANKS; i++)
		pthread_join(threads[i], NULL);
	for (uint32_t i = 0; i < T_COMM_RANKS; i++) {
		struct rank *r = &ranks[i];
		is_status(r->failed, WAFER_ERROR_DEVICE,
			  "[%s] rank %u: the failing all_reduce is "
			  "WAFER_ERROR_DEVICE",
			  label, i);
		ok(strstr(r->error, "ncclAllReduce") &&
			   strstr(r->error, "FAKENCCL_FAIL"),
		   "[%s]   ... naming ncclAllReduce and NCCL's reason (%s)",
		   label, r->error);
		ok(r->usable, "[%s]   ... the client goes on: a fill reads "
		   "back %s", label, r->why);
		ok(r->gathered, "[%s]   ... an all_gather on the same "
		   "communicator works %s", label, r->why);
	}
	t_comm_close_all(clients, comms, label);
}

int main(void)
{
	wafer_runtime *rt;

	setenv("FAKENCCL_FAIL", "ncclAllReduce", 1);
	rt = t_standin_comm_runtime(NULL);
	for (size_t ch = 0; ch < 3; ch++)
		test_channel(rt, t_comm_channels[ch]);
	wafer_runtime_close(rt);
	done_testing();
	return exit_status();
}
