/* wafer — SPDX-License-Identifier: MIT
 *
 * comm_group.c: grouped collectives (wafer_comm_group_begin(3)), two
 * ranks as threads of this process (wafer_comm_open_group), on every
 * channel: three all-reduces in one group, a nested group, each giving
 * the right sums once the group ended; an end without its begin and a
 * NULL or closed communicator refused, naming what is wrong. A
 * communicator closed inside its group ends the group: the all-reduce
 * issued in it is summed, and a later one on another communicator of
 * the same client (and thread) is not held in a group left open.
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

/* One rank of a communicator closed inside its group: an all-reduce in
 * the group on |r->comm|, the close, then an all-reduce on |other| (the
 * same client's, still open); both must be summed. */
struct closing {
	struct rank r;
	wafer_comm *other;
	wafer_status closed;
};

static bool reads_sum(struct rank *r, wafer_handle h, const char *what)
{
	float host[N];

	if (wafer_read(r->client, h, 0, host, sizeof host) != WAFER_OK) {
		fail(r, what);
		return false;
	}
	for (int i = 0; i < N; i++)
		if (host[i] != 3.0f) {
			if (!r->failed++)
				snprintf(r->why, sizeof r->why,
					 "rank %u: %s: [%d] is %g, want 3",
					 r->rank, what, i, host[i]);
			return false;
		}
	return true;
}

static void *closing_main(void *data)
{
	struct closing *c = data;
	struct rank *r = &c->r;
	float host[N];
	wafer_handle h, g;

	for (int i = 0; i < N; i++)
		host[i] = (float)(r->rank + 1);
	if (wafer_create(r->client, host, sizeof host, &h) != WAFER_OK ||
	    wafer_create(r->client, host, sizeof host, &g) != WAFER_OK) {
		fail(r, "create");
		return NULL;
	}
	if (wafer_comm_group_begin(r->comm) != WAFER_OK ||
	    wafer_comm_all_reduce(r->comm, h, h, N, WAFER_DTYPE_F32,
				  WAFER_REDUCE_SUM) != WAFER_OK)
		fail(r, "group_begin and all_reduce");
	c->closed = wafer_comm_close(r->comm);
	reads_sum(r, h, "the all_reduce in the group closed");
	/* Issued whatever the read gave: a rank that skipped it would leave
	 * the other waiting in it, and the test would hang, not fail. */
	if (wafer_comm_all_reduce(c->other, g, g, N, WAFER_DTYPE_F32,
				  WAFER_REDUCE_SUM) != WAFER_OK)
		fail(r, "all_reduce on the other communicator");
	else
		reads_sum(r, g, "the all_reduce after it");
	wafer_release(r->client, h);
	wafer_release(r->client, g);
	return NULL;
}

static void test_close_in_group(wafer_client **clients, wafer_comm **others,
				const char *label)
{
	wafer_comm *comms[RANKS];
	struct closing ranks[RANKS];
	pthread_t threads[RANKS];

	check(wafer_comm_open_group(clients, RANKS, comms), "open_group");
	for (uint32_t i = 0; i < RANKS; i++) {
		ranks[i] = (struct closing){{clients[i], comms[i], i, 0, ""},
					    others[i], WAFER_ERROR_INTERNAL};
		if (pthread_create(&threads[i], NULL, closing_main, &ranks[i]))
			bail_out("pthread_create");
	}
	for (uint32_t i = 0; i < RANKS; i++)
		pthread_join(threads[i], NULL);
	ok(ranks[0].closed == WAFER_OK && ranks[1].closed == WAFER_OK,
	   "[%s] a communicator closes inside its group", label);
	ok(!ranks[0].r.failed && !ranks[1].r.failed,
	   "[%s]   ... the group ended: its all-reduce and a later one on "
	   "another communicator are summed %s",
	   label, ranks[0].r.failed ? ranks[0].r.why : ranks[1].r.why);
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
		test_close_in_group(clients, comms, label);
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
