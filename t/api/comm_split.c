/* wafer — SPDX-License-Identifier: MIT
 *
 * comm_split.c: sub-communicators (wafer_comm_split(3)), four ranks as
 * 2 x 2 (t/comm_split.h: row and column communicators, an all-reduce and
 * a broadcast on each, and a split that leaves odd ranks out), the ranks
 * threads of this process on four clients (wafer_comm_open_group), on
 * every channel.
 *
 *  - The default backend (WAFER_BACKEND picks another) where it has
 *    collectives on four devices that take an open_group (cpu with
 *    [cpu] devices = 4, cuda on the stand-in with FAKECUDA_DEVICES=4);
 *    otherwise a skip saying which is missing. A plugin without
 *    comm_split reports NOT_SUPPORTED, naming it.
 *  - The test plugin t/plugins/collective.c, always.
 *  - Argument errors: a NULL or closed communicator, a colour below -1,
 *    NULL out_comm; each names what is wrong. */
#include "build-config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <wafer/comm.h>
#include <wafer/wafer.h>

#include "t/client_util.h"
#include "t/comm_backends.h"
#include "t/comm_split.h"
#include "t/tap.h"

#define RANKS 4

static const char *const channels[] = {"direct", "mutex", "mpsc"};

struct rank {
	wafer_client *client;
	wafer_comm *comm;
	int failed;
	char why[512];
};

static void *rank_main(void *data)
{
	struct rank *r = data;

	r->failed = t_split_2x2(r->client, r->comm, r->why, sizeof r->why);
	return NULL;
}

/* The 2 x 2 test on |clients| (four), one thread a rank. */
static void split_on(wafer_client **clients, const char *label)
{
	wafer_comm *comms[RANKS];
	struct rank ranks[RANKS];
	pthread_t threads[RANKS];
	const char *why = "";
	int failed = 0;

	check(wafer_comm_open_group(clients, RANKS, comms), "open_group");
	for (int r = 0; r < RANKS; r++) {
		ranks[r] = (struct rank){clients[r], comms[r], 0, ""};
		if (pthread_create(&threads[r], NULL, rank_main, &ranks[r]))
			bail_out("pthread_create");
	}
	for (int r = 0; r < RANKS; r++)
		pthread_join(threads[r], NULL);
	for (int r = 0; r < RANKS; r++)
		if (ranks[r].failed && !failed++)
			why = ranks[r].why;
	ok(!failed, "[%s] 2 x 2: rows and columns all-reduce and broadcast "
		    "over their members, odd ranks left out %s",
	   label, why);
	for (int r = 0; r < RANKS; r++)
		is_status(wafer_comm_close(comms[r]), WAFER_OK,
			  "[%s] close world rank %d", label, r);
}

static void test_errors(wafer_client *client, const char *label)
{
	wafer_comm *comm = NULL, *out = (wafer_comm *)&out;
	wafer_status st;

	is_status(wafer_comm_split(NULL, 0, 0, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] split of NULL", label);
	like(wafer_last_error(), "comm is NULL", "[%s]   ... says so", label);
	ok(out == NULL, "[%s]   ... out_comm NULL", label);
	check(wafer_comm_open_group(&client, 1, &comm), "open_group of one");
	is_status(wafer_comm_split(comm, -2, 0, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] colour -2", label);
	like(wafer_last_error(), "colour -2", "[%s]   ... names it", label);
	is_status(wafer_comm_split(comm, 0, 0, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] out_comm NULL", label);
	st = wafer_comm_split(comm, 5, 0, &out);
	is_status(st, WAFER_OK, "[%s] a split of one rank", label);
	ok(out && wafer_comm_size(out) == 1 && wafer_comm_rank(out) == 0,
	   "[%s]   ... rank 0 of 1", label);
	is_status(wafer_comm_close(out), WAFER_OK, "[%s]   ... closes", label);
	is_status(wafer_comm_split(comm, WAFER_COMM_SPLIT_NONE, 0, &out),
		  WAFER_OK, "[%s] WAFER_COMM_SPLIT_NONE", label);
	ok(out == NULL, "[%s]   ... joins none", label);
	check(wafer_comm_close(comm), "close");
	is_status(wafer_comm_split(comm, 0, 0, &out),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] split of a closed communicator", label);
	like(wafer_last_error(), "is not open", "[%s]   ... says so", label);
}

static void test_backend(wafer_runtime *rt, const char *backend,
			 bool default_backend)
{
	(void)default_backend;
	for (size_t ch = 0; ch < 3; ch++) {
		wafer_client *clients[RANKS];
		const char *why = "";
		char label[64];

		snprintf(label, sizeof label, "%s %s", backend, channels[ch]);
		if (t_comm_open_clients(rt, backend, channels[ch], RANKS,
					clients, &why)) {
			ok(1, "[%s] 2 x 2 # SKIP %s", label, why);
			return;
		}
		wafer_comm *comm = NULL, *out = NULL;
		check(wafer_comm_open_group(clients, 1, &comm), "open_group");
		wafer_status st = wafer_comm_split(comm, 0, 0, &out);
		wafer_comm_close(out);
		wafer_comm_close(comm);
		if (st == WAFER_ERROR_NOT_SUPPORTED) {
			like(wafer_last_error(), "not supported by",
			     "[%s] no comm_split: NOT_SUPPORTED, naming the "
			     "plugin",
			     label);
		} else {
			test_errors(clients[0], label);
			split_on(clients, label);
		}
		for (int r = 0; r < RANKS; r++) {
			ok_clean(clients[r], label);
			check(wafer_client_close(clients[r]), "close");
		}
	}
}

int main(void)
{
	t_comm_on_backends(test_backend);
	done_testing();
	return exit_status();
}
