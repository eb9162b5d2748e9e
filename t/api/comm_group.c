/* wafer — SPDX-License-Identifier: MIT
 *
 * comm_group.c: grouped collectives (wafer_comm_group_begin(3)), two
 * ranks as threads of this process (wafer_comm_open_group), on every
 * channel: three all-reduces in one group, a nested group, each giving
 * the right sums once the group ended; an end without its begin and a
 * NULL or closed communicator refused, naming what is wrong.
 *
 * On the default backend where it has collectives on two devices, and
 * on the test plugin t/plugins/collective.c, which has no group entries
 * (grouping does nothing there and the sums are still right). With
 * T_FAKENCCL naming the stand-in NCCL the plugin loaded
 * (t/standins/fakenccl.c, t/cuda/cuda.sh sets it), the calls of the
 * groups must have reached it grouped (ncclGroupStart/ncclGroupEnd):
 * its count of grouped calls grows by every one issued in a group (the
 * default backend's run only). */
#include "build-config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <wafer/comm.h>
#include <wafer/wafer.h>

#include "t/client_util.h"
#include "t/comm_backends.h"
#include "t/tap.h"

#define RANKS 2
#define N 23
#define BUFFERS 3

static const char *const channels[] = {"direct", "mutex", "mpsc"};

struct rank {
	wafer_client *client;
	wafer_comm *comm;
	uint32_t rank;
	int failed;
	char why[512];
};

static void fail(struct rank *r, const char *what)
{
	if (!r->failed++)
		snprintf(r->why, sizeof r->why, "rank %u: %s: %s", r->rank,
			 what, wafer_last_error());
}

/* Buffer b of rank r holds (r + 1) * (b + 1); its sum over two ranks is
 * 3 * (b + 1). */
static void *rank_main(void *data)
{
	struct rank *r = data;
	wafer_handle h[BUFFERS];
	float host[N];

	for (int b = 0; b < BUFFERS; b++) {
		for (int i = 0; i < N; i++)
			host[i] = (float)((r->rank + 1) * (b + 1));
		if (wafer_create(r->client, host, sizeof host, &h[b]) !=
		    WAFER_OK) {
			fail(r, "create");
			return NULL;
		}
	}
	/* Three in one group. */
	if (wafer_comm_group_begin(r->comm) != WAFER_OK)
		fail(r, "group_begin");
	for (int b = 0; b < BUFFERS; b++)
		if (wafer_comm_all_reduce(r->comm, h[b], h[b], N,
					  WAFER_DTYPE_F32,
					  WAFER_REDUCE_SUM) != WAFER_OK)
			fail(r, "all_reduce in a group");
	if (wafer_comm_group_end(r->comm) != WAFER_OK)
		fail(r, "group_end");
	/* Nested: buffer 0 again inside, buffer 1 in the outer group. */
	if (wafer_comm_group_begin(r->comm) != WAFER_OK ||
	    wafer_comm_group_begin(r->comm) != WAFER_OK)
		fail(r, "nested group_begin");
	if (wafer_comm_all_reduce(r->comm, h[0], h[0], N, WAFER_DTYPE_F32,
				  WAFER_REDUCE_SUM) != WAFER_OK)
		fail(r, "all_reduce in the inner group");
	if (wafer_comm_group_end(r->comm) != WAFER_OK)
		fail(r, "inner group_end");
	if (wafer_comm_all_reduce(r->comm, h[1], h[1], N, WAFER_DTYPE_F32,
				  WAFER_REDUCE_SUM) != WAFER_OK)
		fail(r, "all_reduce in the outer group");
	if (wafer_comm_group_end(r->comm) != WAFER_OK)
		fail(r, "outer group_end");
	for (int b = 0; b < BUFFERS && !r->failed; b++) {
		/* Buffers 0 and 1 were summed twice: 2 * 3 * (b + 1). */
		float want = (float)(3 * (b + 1) * (b < 2 ? 2 : 1));

		if (wafer_read(r->client, h[b], 0, host, sizeof host) !=
		    WAFER_OK) {
			fail(r, "read");
			break;
		}
		for (int i = 0; i < N; i++)
			if (host[i] != want) {
				snprintf(r->why, sizeof r->why,
					 "rank %u: buffer %d [%d] is %g, want "
					 "%g",
					 r->rank, b, i, host[i], want);
				r->failed++;
				break;
			}
	}
	for (int b = 0; b < BUFFERS; b++)
		wafer_release(r->client, h[b]);
	return NULL;
}

/* The stand-in NCCL's count of grouped calls, or -1 when T_FAKENCCL
 * names none loaded. */
static long grouped_calls(void)
{
	const char *path = getenv("T_FAKENCCL");
	void *so = path ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
	unsigned long (*count)(void) = NULL;
	long n = -1;

	if (so)
		*(void **)&count = dlsym(so, "fakenccl_grouped_calls");
	if (count)
		n = (long)count();
	if (so)
		dlclose(so);
	return n;
}

static void test_errors(wafer_comm *comm, const char *label)
{
	is_status(wafer_comm_group_end(comm), WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] group_end without group_begin", label);
	like(wafer_last_error(), "no group begun", "[%s]   ... says so",
	     label);
	is_status(wafer_comm_group_begin(NULL), WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] group_begin of NULL", label);
	like(wafer_last_error(), "comm is NULL", "[%s]   ... says so", label);
}

static void test_on(wafer_runtime *rt, const char *backend, bool stand_in)
{
	for (size_t ch = 0; ch < 3; ch++) {
		wafer_client *clients[RANKS];
		wafer_comm *comms[RANKS];
		struct rank ranks[RANKS];
		pthread_t threads[RANKS];
		const char *why;
		char label[64];

		snprintf(label, sizeof label, "%s %s", backend, channels[ch]);
		if (t_comm_open_clients(rt, backend, channels[ch], RANKS,
					clients, &why)) {
			ok(1, "[%s] groups # SKIP %s", label, why);
			return;
		}
		if (wafer_comm_open_group(clients, RANKS, comms) != WAFER_OK) {
			ok(1, "[%s] groups # SKIP open_group: %s", label,
			   wafer_last_error());
			for (int i = 0; i < RANKS; i++)
				wafer_client_close(clients[i]);
			return;
		}
		test_errors(comms[0], label);
		long before = stand_in ? grouped_calls() : -1;
		for (uint32_t i = 0; i < RANKS; i++) {
			ranks[i] = (struct rank){clients[i], comms[i], i, 0, ""};
			if (pthread_create(&threads[i], NULL, rank_main,
					   &ranks[i]))
				bail_out("pthread_create");
		}
		for (uint32_t i = 0; i < RANKS; i++)
			pthread_join(threads[i], NULL);
		ok(!ranks[0].failed && !ranks[1].failed,
		   "[%s] three all-reduces in a group, then nested groups: the "
		   "sums are right %s",
		   label, ranks[0].failed ? ranks[0].why : ranks[1].why);
		long after = grouped_calls();
		if (before >= 0)
			is_int(after - before, RANKS * 5,
			       "[%s]   ... the stand-in NCCL got all %d calls "
			       "grouped",
			       label, RANKS * 5);
		for (uint32_t i = 0; i < RANKS; i++) {
			is_status(wafer_comm_close(comms[i]), WAFER_OK,
				  "[%s] close rank %u", label, i);
			ok_clean(clients[i], label);
			check(wafer_client_close(clients[i]), "close");
		}
		is_status(wafer_comm_group_begin(comms[0]),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "[%s] group_begin of a closed communicator", label);
	}
}

int main(void)
{
	t_comm_on_backends(test_on);
	done_testing();
	return exit_status();
}
