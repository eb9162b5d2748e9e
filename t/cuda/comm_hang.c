/* wafer — SPDX-License-Identifier: MIT
 *
 * comm_hang.c: failures of a rank never hang the others (wafer.conf(5)
 * [comm] timeout, the cuda plugin's cuda_comm_wait), through the core on
 * each channel. Two clients (cuda:0 and cuda:1 of the stand-in driver)
 * form a communicator through the stand-in NCCL, in two failure modes
 * (t/standins/fakenccl.c), and each rank all-reduces, then syncs (on the
 * mutex channel reads instead, which must give up the same way):
 *
 *  - FAKENCCL_HANG_RANK=1, [comm] timeout = 0.5: rank 1 never takes
 *    part. Rank 0's sync gives up after the timeout (not before, and
 *    well within 30 s), WAFER_ERROR_DEVICE naming ncclAllReduce, the
 *    communicator, "rank 0 of 2", the timeout and the abort.
 *  - FAKENCCL_ASYNC_FAIL_RANK=1, [comm] timeout = 60: rank 1's
 *    collective fails on the device (ncclCommGetAsyncError) and hangs
 *    there. Both syncs fail long before the timeout: rank 1 with NCCL's
 *    error (unhandled system error), rank 0 with the remote error its
 *    abort caused.
 *
 * The first communicator opened with a timeout sets
 * NCCL_RUNTIME_CONNECT=0 (connections made at init, while every rank is
 * there; lazily, a peer lost before the first collective would block it
 * inside NCCL, out of the timeout's reach).
 *
 * After either, on each failed rank: the client goes on (a fill reads
 * back), the aborted communicator refuses a collective and a split
 * naming the abort (NCCL freed it: nothing may reach it), closes, and a
 * new communicator of the same clients all-reduces right. */
#include "build-config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
	bool read_after;     /* a read after the all_reduce, not a sync */
	wafer_status failed; /* the all_reduce's, or its sync's (read's) */
	double seconds;      /* until then */
	char error[768];     /* wafer_last_error() then */
	wafer_status again;  /* a collective on the aborted communicator */
	char again_error[768];
	wafer_status split;  /* a split of the aborted communicator */
	char split_error[768];
	bool split_none;     /* ... left no communicator */
	bool usable;         /* fill and read gave the fill */
	char why[256];
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *rank_main(void *data)
{
	struct rank *r = data;
	float back[N];
	wafer_handle h;
	double start = now();

	if (wafer_empty(r->client, sizeof back, &h) != WAFER_OK) {
		snprintf(r->why, sizeof r->why, "empty: %s",
			 wafer_last_error());
		return NULL;
	}
	wafer_status st = t_comm_reduce_ones(r->client, r->comm, h, N);
	/* A read waits for the collective as a sync does. */
	if (st == WAFER_OK && r->read_after)
		st = wafer_read(r->client, h, 0, back, sizeof back);
	else if (st == WAFER_OK)
		st = wafer_sync(r->client);
	r->seconds = now() - start;
	r->failed = st;
	snprintf(r->error, sizeof r->error, "%s", wafer_last_error());

	r->usable = t_fill_reads_back(r->client, h, N, (float)(r->rank + 7),
				      r->rank, r->why, sizeof r->why);
	if (r->failed != WAFER_OK) {
		st = wafer_comm_all_reduce(r->comm, h, h, N, WAFER_DTYPE_F32,
					   WAFER_REDUCE_SUM);
		if (st == WAFER_OK)
			st = wafer_sync(r->client);
		r->again = st;
		snprintf(r->again_error, sizeof r->again_error, "%s",
			 wafer_last_error());

		wafer_comm *sub = NULL;
		r->split = wafer_comm_split(r->comm, 0, (int32_t)r->rank, &sub);
		snprintf(r->split_error, sizeof r->split_error, "%s",
			 wafer_last_error());
		r->split_none = sub == NULL;
		wafer_comm_close(sub);
	}
	wafer_release(r->client, h);
	return NULL;
}

/* Each rank's thread: all-reduce of rank + 1 and a read; the sum is
 * right on every rank. */
static void *sum_main(void *data)
{
	struct rank *r = data;
	float back[N];
	wafer_handle h;

	r->usable = false;
	r->why[0] = '\0';
	if (wafer_empty(r->client, sizeof back, &h) != WAFER_OK)
		return NULL;
	wafer_status st = fill_floats(r->client, h, N, (float)(r->rank + 1));
	if (st == WAFER_OK)
		st = wafer_comm_all_reduce(r->comm, h, h, N, WAFER_DTYPE_F32,
					   WAFER_REDUCE_SUM);
	if (st == WAFER_OK)
		st = wafer_read(r->client, h, 0, back, sizeof back);
	r->usable = st == WAFER_OK;
	for (int i = 0; r->usable && i < N; i++)
		r->usable = back[i] == 3.0f;
	if (!r->usable)
		snprintf(r->why, sizeof r->why, "rank %u: %s", r->rank,
			 st == WAFER_OK ? "wrong sum" : wafer_last_error());
	wafer_release(r->client, h);
	return NULL;
}

static void on_ranks(void *(*fn)(void *), struct rank *ranks)
{
	pthread_t threads[T_COMM_RANKS];

	for (uint32_t i = 0; i < T_COMM_RANKS; i++)
		if (pthread_create(&threads[i], NULL, fn, &ranks[i]))
			bail_out("pthread_create");
	for (uint32_t i = 0; i < T_COMM_RANKS; i++)
		pthread_join(threads[i], NULL);
}

/* The checks of one failed rank: |needle| in its error, within
 * [min_s, max_s] seconds. */
static void check_failed(const struct rank *r, const char *label,
			 const char *needle, double min_s, double max_s)
{
	char rank_text[32];

	snprintf(rank_text, sizeof rank_text, "rank %u of %u", r->rank,
		 T_COMM_RANKS);
	is_status(r->failed, WAFER_ERROR_DEVICE,
		  "[%s] rank %u: the sync is WAFER_ERROR_DEVICE", label,
		  r->rank);
	ok(strstr(r->error, "ncclAllReduce") && strstr(r->error, rank_text) &&
		   strstr(r->error, "communicator") &&
		   strstr(r->error, "aborted") && strstr(r->error, needle),
	   "[%s]   ... naming ncclAllReduce, the communicator, %s, \"%s\" "
	   "and the abort (%s)",
	   label, rank_text, needle, r->error);
	ok(r->seconds >= min_s && r->seconds <= max_s,
	   "[%s]   ... after %.2f s (want %.1f to %.0f)", label, r->seconds,
	   min_s, max_s);
	ok(r->usable, "[%s]   ... the client goes on: a fill reads back %s",
	   label, r->why);
	is_status(r->again, WAFER_ERROR_DEVICE,
		  "[%s]   ... a collective on the aborted communicator fails",
		  label);
	like(r->again_error, "was aborted", "[%s]   ... saying it was aborted",
	     label);
	is_status(r->split, WAFER_ERROR_DEVICE,
		  "[%s]   ... a split of the aborted communicator fails",
		  label);
	like(r->split_error, "was aborted", "[%s]   ... saying it was aborted",
	     label);
	ok(r->split_none, "[%s]   ... no communicator", label);
}

/* One mode on one channel: |mode| names the failing rank 1 (an
 * environment variable the stand-in NCCL reads when the communicator is
 * made). */
static void test_mode(wafer_runtime *rt, const char *channel,
		      const char *label, const char *mode,
		      bool both_fail, const char *needle0,
		      const char *needle1, double min_s, double max_s,
		      bool read_after)
{
	wafer_client *clients[T_COMM_RANKS];
	wafer_comm *comms[T_COMM_RANKS];
	struct rank ranks[T_COMM_RANKS];

	clients[0] = open_client_on(rt, "cuda:0", channel);
	clients[1] = open_client_on(rt, "cuda:1", channel);
	setenv(mode, "1", 1);
	check(wafer_comm_open_group(clients, T_COMM_RANKS, comms), "open_group");
	unsetenv(mode);
	for (uint32_t i = 0; i < T_COMM_RANKS; i++)
		ranks[i] = (struct rank){.client = clients[i],
					 .comm = comms[i], .rank = i,
					 .read_after = read_after};
	on_ranks(rank_main, ranks);
	check_failed(&ranks[0], label, needle0, min_s, max_s);
	if (both_fail)
		check_failed(&ranks[1], label, needle1, 0, max_s);
	else
		ok(ranks[1].usable, "[%s] rank 1 (not taking part) goes on %s",
		   label, ranks[1].why);
	for (uint32_t i = 0; i < T_COMM_RANKS; i++)
		is_status(wafer_comm_close(comms[i]), WAFER_OK,
			  "[%s] rank %u: the communicator closes", label, i);

	check(wafer_comm_open_group(clients, T_COMM_RANKS, comms), "open_group");
	for (uint32_t i = 0; i < T_COMM_RANKS; i++)
		ranks[i] = (struct rank){.client = clients[i],
					 .comm = comms[i], .rank = i};
	on_ranks(sum_main, ranks);
	ok(ranks[0].usable && ranks[1].usable,
	   "[%s] a new communicator of the same clients all-reduces right %s",
	   label, ranks[0].usable ? ranks[1].why : ranks[0].why);
	t_comm_close_all(clients, comms, label);
}

/* The two modes: the environment variable naming rank 1, [comm]
 * timeout, whether both ranks fail, what each one's error says, and the
 * seconds rank 0's sync takes. */
static const struct mode {
	const char *what, *variable, *timeout;
	bool both_fail;
	const char *says0, *says1;
	double min_s, max_s;
} modes[] = {
	{"rank 1 never joins", "FAKENCCL_HANG_RANK", "0.5", false,
	 "[comm] timeout", NULL, 0.45, 30},
	{"rank 1 fails mid-collective", "FAKENCCL_ASYNC_FAIL_RANK", "60", true,
	 "remote process exited", "unhandled system error", 0, 30},
};

int main(void)
{
	wafer_runtime *rt;

	/* The caller's own choice stays (the plugin sets it only when
	 * unset): here the test's, checked after the first timed open. */
	unsetenv("NCCL_RUNTIME_CONNECT");
	for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
		const struct mode *mo = &modes[m];

		rt = t_standin_comm_runtime(mo->timeout);
		for (size_t ch = 0; ch < 3; ch++) {
			char label[64];

			snprintf(label, sizeof label, "%s, %s", t_comm_channels[ch],
				 mo->what);
			test_mode(rt, t_comm_channels[ch], label, mo->variable,
				  mo->both_fail, mo->says0, mo->says1,
				  mo->min_s, mo->max_s, ch == 1);
		}
		wafer_runtime_close(rt);
		if (m == 0) {
			const char *eager = getenv("NCCL_RUNTIME_CONNECT");
			ok(eager && strcmp(eager, "0") == 0,
			   "a communicator opened with a timeout has NCCL "
			   "connect at init (NCCL_RUNTIME_CONNECT=%s)",
			   eager ? eager : "unset");
		}
	}

	/* A bad timeout is refused, naming the key. */
	rt = t_standin_comm_runtime("-1");
	wafer_client *c[2] = {open_client_on(rt, "cuda:0", NULL),
			      open_client_on(rt, "cuda:1", NULL)};
	wafer_comm *comms[2];
	is_status(wafer_comm_open_group(c, 2, comms), WAFER_ERROR_CONFIG,
		  "[comm] timeout = -1: the open is WAFER_ERROR_CONFIG");
	like(wafer_last_error(), "[comm] timeout", "  ... naming the key");
	wafer_client_close(c[0]);
	wafer_client_close(c[1]);
	wafer_runtime_close(rt);
	done_testing();
	return exit_status();
}
