/* wafer — SPDX-License-Identifier: MIT
 *
 * comm.c: communicators and collectives (comm.h, wafer-comm(7)), on each
 * channel (direct, mutex, mpsc).
 *
 *  - The default backend (WAFER_BACKEND picks another). Without
 *    collectives: wafer_comm_id_create, wafer_comm_open and
 *    wafer_comm_open_group report NOT_SUPPORTED, "collectives not
 *    supported by <plugin>", and the client goes on as before. With
 *    them: a communicator of one rank runs every collective on f32, f16
 *    and bf16, in place and not, against a host reference; and
 *    open_group of two clients either works (values checked) or is the
 *    plugin's INVALID_ARGUMENT naming it (MPI: one rank per process).
 *  - The test plugin t/plugins/collective.c (ranks are threads; built
 *    with the tests): open_group of four clients, the same collectives
 *    issued from one thread per rank and, on mpsc, from one thread for
 *    all, on f64 and i32 too; a collective after a kernel sees its
 *    result; every argument error the core checks, each naming what is
 *    wrong and changing nothing; a failing rank leaves no communicator
 *    open; a closed communicator's pointer names no later one; a client
 *    closed with its communicator open.
 *
 * Values are small integers, so f16 and bf16 sums are exact. */
#include "build-config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/comm.h>
#include <wafer/graph.h>
#include <wafer/ops.h>
#include <wafer/wafer.h>

#include "t/client_util.h"
#include "t/half.h"
#include "t/log_capture.h"
#include "t/tap.h"

#define N 37 /* elements per rank: odd, so no block lines up by luck */
#define MAX_RANKS 4

static const char *const channels[] = {"direct", "mutex", "mpsc"};
/* What every backend with collectives takes; the test plugin's engine
 * also f64 and i32. */
static const wafer_dtype dtypes[] = {WAFER_DTYPE_F32, WAFER_DTYPE_F16,
				     WAFER_DTYPE_BF16, WAFER_DTYPE_F64,
				     WAFER_DTYPE_I32};
#define EVERY_BACKEND_DTYPES 3
#define TEST_PLUGIN_DTYPES 5

/*===----------------------------------------------------------------------===
 * Host side: values, encoding, the reference
 *===----------------------------------------------------------------------===*/

/* Rank |r|'s |i|-th input of step |salt|: an integer in [-8, 8]. */
static double value(uint32_t r, size_t i, int salt)
{
	return (double)((int)(((r + 1) * (i % 5 + 1) + (size_t)salt * 3 + i) %
			      17) -
			8);
}

static void store(wafer_dtype dtype, void *base, size_t i, double v)
{
	uint16_t h;

	if (dtype == WAFER_DTYPE_F32) {
		((float *)base)[i] = (float)v;
		return;
	}
	if (dtype == WAFER_DTYPE_F64) {
		((double *)base)[i] = v;
		return;
	}
	if (dtype == WAFER_DTYPE_I32) {
		((int32_t *)base)[i] = (int32_t)v;
		return;
	}
	h = dtype == WAFER_DTYPE_F16 ? t_float_to_f16((float)v)
				     : t_float_to_bf16((float)v);
	((uint16_t *)base)[i] = h;
}

static double load(wafer_dtype dtype, const void *base, size_t i)
{
	if (dtype == WAFER_DTYPE_F32)
		return ((const float *)base)[i];
	if (dtype == WAFER_DTYPE_F64)
		return ((const double *)base)[i];
	if (dtype == WAFER_DTYPE_I32)
		return ((const int32_t *)base)[i];
	if (dtype == WAFER_DTYPE_F16)
		return t_f16_to_float(((const uint16_t *)base)[i]);
	return t_bf16_to_float(((const uint16_t *)base)[i]);
}

static const char *dtype_label(wafer_dtype dtype)
{
	switch (dtype) {
	case WAFER_DTYPE_F32:
		return "f32";
	case WAFER_DTYPE_F16:
		return "f16";
	case WAFER_DTYPE_BF16:
		return "bf16";
	case WAFER_DTYPE_F64:
		return "f64";
	case WAFER_DTYPE_I32:
		return "i32";
	default:
		return "?";
	}
}

enum step_kind { ALL_REDUCE, BROADCAST, ALL_GATHER, REDUCE_SCATTER };

struct step {
	enum step_kind kind;
	bool in_place;
	wafer_reduce_op op;
	uint32_t root;
	char name[64];
};

/* Every collective: SUM and MAX, in place and not, every root. */
static size_t make_steps(uint32_t size, struct step *steps)
{
	static const wafer_reduce_op ops[] = {WAFER_REDUCE_SUM,
					      WAFER_REDUCE_MAX};
	size_t n = 0;

	for (int o = 0; o < 2; o++) {
		const char *op = ops[o] == WAFER_REDUCE_SUM ? "sum" : "max";

		for (int in_place = 0; in_place < 2; in_place++) {
			steps[n] = (struct step){.kind = ALL_REDUCE,
						 .in_place = in_place,
						 .op = ops[o]};
			snprintf(steps[n].name, sizeof steps[n].name,
				 "all_reduce %s%s", op,
				 in_place ? " in place" : "");
			n++;
		}
		steps[n] = (struct step){.kind = REDUCE_SCATTER,
					 .op = ops[o]};
		snprintf(steps[n].name, sizeof steps[n].name,
			 "reduce_scatter %s", op);
		n++;
	}
	for (uint32_t root = 0; root < size; root++)
		for (int in_place = 0; in_place < 2; in_place++) {
			steps[n] = (struct step){.kind = BROADCAST,
						 .in_place = in_place,
						 .op = WAFER_REDUCE_SUM,
						 .root = root};
			snprintf(steps[n].name, sizeof steps[n].name,
				 "broadcast from %u%s", root,
				 in_place ? " in place" : "");
			n++;
		}
	steps[n] = (struct step){.kind = ALL_GATHER, .op = WAFER_REDUCE_SUM};
	snprintf(steps[n].name, sizeof steps[n].name, "all_gather");
	return n + 1;
}

static size_t src_count(const struct step *s, uint32_t size)
{
	return s->kind == REDUCE_SCATTER ? N * size : N;
}

static size_t dst_count(const struct step *s, uint32_t size)
{
	return s->kind == ALL_GATHER ? N * size : N;
}

static double reduce_ref(const struct step *s, uint32_t size, size_t j,
			 int salt)
{
	double acc = value(0, j, salt);

	for (uint32_t r = 1; r < size; r++) {
		double v = value(r, j, salt);

		acc = s->op == WAFER_REDUCE_SUM ? acc + v : (v > acc ? v : acc);
	}
	return acc;
}

/* What rank |rank| must read at dst[i] after step |s|. */
static double expected(const struct step *s, uint32_t rank, uint32_t size,
		       size_t i, int salt)
{
	switch (s->kind) {
	case ALL_REDUCE:
		return reduce_ref(s, size, i, salt);
	case REDUCE_SCATTER:
		return reduce_ref(s, size, rank * N + i, salt);
	case BROADCAST:
		return value(s->root, i, salt);
	case ALL_GATHER:
		return value((uint32_t)(i / N), i % N, salt);
	}
	return 0;
}

/*===----------------------------------------------------------------------===
 * One rank's part of one step: issue, then check
 *===----------------------------------------------------------------------===*/

struct rank {
	wafer_client *client;
	wafer_comm *comm;
	uint32_t rank;
	uint32_t size;
	wafer_dtype dtype;
	wafer_handle src, dst;
	int failures;
	char why[256]; /* the first failure */
};

/* Ranks 0 .. |size| - 1 over clients[r] and comms[r], on |dtype|. */
static void set_ranks(struct rank *ranks, wafer_client **clients,
		      wafer_comm **comms, uint32_t size, wafer_dtype dtype)
{
	for (uint32_t r = 0; r < size; r++)
		ranks[r] = (struct rank){.client = clients[r],
					 .comm = comms[r],
					 .rank = r,
					 .size = size,
					 .dtype = dtype};
}

/* How many of the ranks failed; |*why| the first one's reason ("" when
 * none did). */
static int rank_failures(const struct rank *ranks, uint32_t size,
			 const char **why)
{
	int failures = 0;

	*why = "";
	for (uint32_t r = 0; r < size; r++)
		if (ranks[r].failures && !failures++)
			*why = ranks[r].why;
	return failures;
}

/* fn(args[r]) for each of |size| ranks, a thread each; returns when all
 * have. |args| holds |size| elements of |elem| bytes. */
static void on_threads(void *(*fn)(void *), void *args, size_t elem,
		       uint32_t size)
{
	pthread_t threads[MAX_RANKS];

	for (uint32_t r = 0; r < size; r++)
		if (pthread_create(&threads[r], NULL, fn,
				   (char *)args + r * elem))
			bail_out("pthread_create");
	for (uint32_t r = 0; r < size; r++)
		pthread_join(threads[r], NULL);
}

static void fail(struct rank *r, const char *what, wafer_status status)
{
	if (!r->failures++)
		snprintf(r->why, sizeof r->why, "rank %u: %s: %s: %s", r->rank,
			 what, wafer_status_string(status), wafer_last_error());
}

static void issue(struct rank *r, const struct step *s, int salt)
{
	size_t elem = wafer_dtype_size(r->dtype);
	size_t ns = src_count(s, r->size), nd = dst_count(s, r->size);
	unsigned char *host = malloc((ns > nd ? ns : nd) * elem);
	wafer_status st = WAFER_OK;

	r->src = r->dst = (wafer_handle){0};
	for (size_t i = 0; i < ns; i++)
		store(r->dtype, host, i, value(r->rank, i, salt));
	/* Off the root, a broadcast out of place passes no src at all. */
	if (!(s->kind == BROADCAST && !s->in_place && s->root != r->rank))
		st = wafer_create(r->client, host, ns * elem, &r->src);
	if (st == WAFER_OK && s->in_place) {
		r->dst = r->src;
	} else if (st == WAFER_OK) {
		for (size_t i = 0; i < nd; i++)
			store(r->dtype, host, i, 99); /* to be overwritten */
		st = wafer_create(r->client, host, nd * elem, &r->dst);
	}
	free(host);
	if (st != WAFER_OK) {
		fail(r, "create", st);
		return;
	}
	switch (s->kind) {
	case ALL_REDUCE:
		st = wafer_comm_all_reduce(r->comm, r->src, r->dst, N, r->dtype,
					   s->op);
		break;
	case REDUCE_SCATTER:
		st = wafer_comm_reduce_scatter(r->comm, r->src, r->dst, N,
					       r->dtype, s->op);
		break;
	case BROADCAST:
		st = wafer_comm_broadcast(r->comm, r->src, r->dst, N, r->dtype,
					  s->root);
		break;
	case ALL_GATHER:
		st = wafer_comm_all_gather(r->comm, r->src, r->dst, N,
					   r->dtype);
		break;
	}
	if (st != WAFER_OK)
		fail(r, s->name, st);
}

static void verify(struct rank *r, const struct step *s, int salt)
{
	size_t elem = wafer_dtype_size(r->dtype);
	size_t nd = dst_count(s, r->size);
	unsigned char *host = malloc(nd * elem);
	wafer_status st;

	if (r->dst.bits) {
		st = wafer_read(r->client, r->dst, 0, host, nd * elem);
		if (st != WAFER_OK)
			fail(r, "read", st);
		for (size_t i = 0; st == WAFER_OK && i < nd; i++) {
			double got = load(r->dtype, host, i);
			double want = expected(s, r->rank, r->size, i, salt);

			if (got != want) {
				if (!r->failures++)
					snprintf(r->why, sizeof r->why,
						 "rank %u: %s: dst[%zu] is %g, "
						 "want %g",
						 r->rank, s->name, i, got,
						 want);
				break;
			}
		}
	}
	if (r->src.bits && r->src.bits != r->dst.bits)
		wafer_release(r->client, r->src);
	if (r->dst.bits)
		wafer_release(r->client, r->dst);
	free(host);
}

/* Every step on one rank, on its own thread. */
struct rank_job {
	struct rank *r;
	const struct step *steps;
	size_t count;
};

static void *rank_main(void *data)
{
	struct rank_job *job = data;

	for (size_t k = 0; k < job->count; k++) {
		issue(job->r, &job->steps[k], (int)k);
		verify(job->r, &job->steps[k], (int)k);
	}
	return NULL;
}

/* Every step for the first |ndtypes| of dtypes on |size| ranks: a
 * thread per rank, or (|one_thread|) every rank's collectives issued in
 * turn by this thread before any is read, which only a queueing channel
 * (mpsc) allows. One point per dtype. */
static void run_steps(const char *label, wafer_client **clients,
		      wafer_comm **comms, uint32_t size, size_t ndtypes,
		      bool one_thread)
{
	struct step steps[8 + 2 * MAX_RANKS];
	size_t count = make_steps(size, steps);

	for (size_t d = 0; d < ndtypes; d++) {
		struct rank ranks[MAX_RANKS];
		struct rank_job jobs[MAX_RANKS];
		int failures;
		const char *why;

		set_ranks(ranks, clients, comms, size, dtypes[d]);
		for (uint32_t r = 0; r < size; r++)
			jobs[r] = (struct rank_job){&ranks[r], steps, count};
		if (one_thread) {
			for (size_t k = 0; k < count; k++) {
				for (uint32_t r = 0; r < size; r++)
					issue(&ranks[r], &steps[k], (int)k);
				for (uint32_t r = 0; r < size; r++)
					verify(&ranks[r], &steps[k], (int)k);
			}
		} else if (size == 1) {
			rank_main(&jobs[0]);
		} else {
			on_threads(rank_main, jobs, sizeof *jobs, size);
		}
		failures = rank_failures(ranks, size, &why);
		ok(!failures,
		   "[%s] %s: %zu collectives on %u rank%s (%s), values match "
		   "the host's %s",
		   label, dtype_label(dtypes[d]), count, size,
		   size == 1 ? "" : "s",
		   one_thread ? "issued from one thread" : "a thread each",
		   failures ? why : "");
	}
}

/*===----------------------------------------------------------------------===
 * Point to point
 *===----------------------------------------------------------------------===*/

static wafer_handle create_f32(wafer_client *c, size_t n, float v);

/* Whether all |n| floats of |h| are |v|. */
static bool holds_f32(wafer_client *c, wafer_handle h, float v)
{
	float back[N];
	bool same = wafer_read(c, h, 0, back, sizeof back) == WAFER_OK;

	for (int i = 0; i < N && same; i++)
		same = back[i] == v;
	return same;
}

/* One rank of test_send_recv, on a thread of its own: a send may hold
 * its queue until the peer's recv. Rank r's data is N floats of 10 + r. */
static void *send_recv_main(void *data)
{
	struct rank *r = data;
	wafer_client *c = r->client;
	uint32_t pair = r->rank ^ 1, me = r->rank;
	wafer_handle mine = create_f32(c, N, 10.0f + (float)me);
	wafer_handle got = create_f32(c, N, -1.0f);
	wafer_handle second = create_f32(c, N, -1.0f);
	wafer_status st = WAFER_OK;

	/* Pairs (0, 1), (2, 3): the even rank sends, then receives; the
	 * odd one the other way round. Then the even one sends a second
	 * message, its own data plus 100, which must come after the first. */
	if (pair < r->size) {
		if (me % 2 == 0) {
			st = wafer_comm_send(r->comm, mine, N, WAFER_DTYPE_F32,
					     pair);
			if (st == WAFER_OK)
				st = wafer_comm_recv(r->comm, got, N,
						     WAFER_DTYPE_F32, pair);
		} else {
			st = wafer_comm_recv(r->comm, got, N, WAFER_DTYPE_F32,
					     pair);
			if (st == WAFER_OK)
				st = wafer_comm_send(r->comm, mine, N,
						     WAFER_DTYPE_F32, pair);
		}
		if (st != WAFER_OK)
			fail(r, "exchange", st);
		else if (!holds_f32(c, got, 10.0f + (float)pair))
			fail(r, "exchange: not the peer's data",
			     WAFER_ERROR_INTERNAL);
		if (me % 2 == 0) {
			wafer_handle next = create_f32(c, N, 110.0f + (float)me);

			st = wafer_comm_send(r->comm, mine, N, WAFER_DTYPE_F32,
					     pair);
			if (st == WAFER_OK)
				st = wafer_comm_send(r->comm, next, N,
						     WAFER_DTYPE_F32, pair);
			wafer_release(c, next);
		} else {
			st = wafer_comm_recv(r->comm, got, N, WAFER_DTYPE_F32,
					     pair);
			if (st == WAFER_OK)
				st = wafer_comm_recv(r->comm, second, N,
						     WAFER_DTYPE_F32, pair);
			if (st == WAFER_OK &&
			    (!holds_f32(c, got, 10.0f + (float)pair) ||
			     !holds_f32(c, second, 110.0f + (float)pair)))
				fail(r, "two messages: not in the order sent",
				     WAFER_ERROR_INTERNAL);
		}
		if (st != WAFER_OK)
			fail(r, "two messages", st);
	}
	/* A pipeline: rank 0's data passed on from rank to rank. */
	if (me > 0) {
		st = wafer_comm_recv(r->comm, got, N, WAFER_DTYPE_F32, me - 1);
		if (st != WAFER_OK)
			fail(r, "pipeline recv", st);
	}
	if (st == WAFER_OK && me + 1 < r->size) {
		st = wafer_comm_send(r->comm, me ? got : mine, N,
				     WAFER_DTYPE_F32, me + 1);
		if (st != WAFER_OK)
			fail(r, "pipeline send", st);
	}
	st = wafer_sync(c);
	if (st != WAFER_OK)
		fail(r, "sync", st);
	else if (me > 0 && !holds_f32(c, got, 10.0f))
		fail(r, "pipeline: not rank 0's data", WAFER_ERROR_INTERNAL);
	wafer_release(c, mine);
	wafer_release(c, got);
	wafer_release(c, second);
	return NULL;
}

/* send and recv on |size| ranks (2 or 4), and the peers the core
 * refuses before anything is queued. */
static void test_send_recv(const char *label, wafer_client **clients,
			   wafer_comm **comms, uint32_t size)
{
	struct rank ranks[MAX_RANKS];
	wafer_handle h = create_f32(clients[0], N, 1.0f);
	const char *why;
	int failures;

	is_status(wafer_comm_send(comms[0], h, N, WAFER_DTYPE_F32, 0),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] send to oneself", label);
	like(wafer_last_error(), "peer 0, this is rank 0 of",
	     "[%s]   ... says which peer and rank", label);
	is_status(wafer_comm_recv(comms[0], h, N, WAFER_DTYPE_F32, size),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] recv from past the size",
		  label);
	is_status(wafer_comm_send(comms[0], h, N + 1, WAFER_DTYPE_F32, 1),
		  WAFER_ERROR_OUT_OF_RANGE, "[%s] send of more than src holds",
		  label);
	is_status(wafer_comm_recv(comms[0], (wafer_handle){0}, N,
				  WAFER_DTYPE_F32, 1),
		  WAFER_ERROR_INVALID_HANDLE, "[%s] recv into a null handle",
		  label);
	ok(holds_f32(clients[0], h, 1.0f), "[%s]   ... src unchanged", label);
	check(wafer_release(clients[0], h), "release");

	set_ranks(ranks, clients, comms, size, WAFER_DTYPE_F32);
	on_threads(send_recv_main, ranks, sizeof *ranks, size);
	failures = rank_failures(ranks, size, &why);
	ok(!failures,
	   "[%s] send/recv on %u ranks: pairs exchange, two messages keep "
	   "their order, a pipeline passes rank 0's data on %s",
	   label, size, why);
}

/*===----------------------------------------------------------------------===
 * The default backend
 *===----------------------------------------------------------------------===*/

/* A backend without collectives says so three ways and loses nothing. */
static void test_unsupported(wafer_client *c, const char *backend,
			     const char *label)
{
	float data[N], back[N];
	char want[128];
	wafer_comm_id id;
	wafer_comm *comm = (wafer_comm *)&id, *comms[1] = {(wafer_comm *)&id};
	wafer_comm_options o = {sizeof o, 0, 1, NULL, NULL};
	wafer_handle h;
	int same = 1;

	for (int i = 0; i < N; i++)
		data[i] = (float)i;
	check(wafer_create(c, data, sizeof data, &h), "create");
	snprintf(want, sizeof want, "collectives not supported by %s",
		 backend);
	memset(&id, 0x5a, sizeof id);
	is_status(wafer_comm_id_create(c, &id), WAFER_ERROR_NOT_SUPPORTED,
		  "[%s] %s: comm_id_create not supported", label, backend);
	like(wafer_last_error(), want, "[%s]   ... says so", label);
	ok(id.bytes[0] == 0 && id.bytes[WAFER_COMM_ID_BYTES - 1] == 0,
	   "[%s]   ... the id zeroed", label);
	is_status(wafer_comm_open(c, &o, &comm), WAFER_ERROR_NOT_SUPPORTED,
		  "[%s] %s: comm_open not supported", label, backend);
	like(wafer_last_error(), want, "[%s]   ... says so", label);
	ok(comm == NULL, "[%s]   ... no communicator", label);
	is_status(wafer_comm_open_group(&c, 1, comms),
		  WAFER_ERROR_NOT_SUPPORTED,
		  "[%s] %s: comm_open_group not supported", label, backend);
	like(wafer_last_error(), want, "[%s]   ... says so", label);
	ok(comms[0] == NULL, "[%s]   ... no communicator", label);
	check(wafer_read(c, h, 0, back, sizeof back), "read");
	for (int i = 0; i < N; i++)
		same = same && back[i] == data[i];
	ok(same, "[%s] the client goes on: a handle made before reads back",
	   label);
	check(wafer_release(c, h), "release");
}

/* Two ranks on the default backend: two of its devices, or one twice. */
static void test_default_group(wafer_runtime *rt, const char *backend,
			       const char *label)
{
	wafer_device_desc d = {.struct_size = sizeof d};
	size_t devices = 0;
	char sel[2][64];
	wafer_client *clients[2];
	wafer_comm *comms[2] = {NULL, NULL};
	wafer_status st;

	for (size_t i = 0; i < wafer_runtime_device_count(rt); i++)
		if (wafer_runtime_device(rt, i, &d) == WAFER_OK &&
		    strcmp(d.backend, backend) == 0)
			devices++;
	for (int r = 0; r < 2; r++) {
		if (devices >= 2)
			snprintf(sel[r], sizeof sel[r], "%s:%d", backend, r);
		else
			snprintf(sel[r], sizeof sel[r], "default");
		clients[r] = open_client_on(rt, sel[r], label);
	}
	st = wafer_comm_open_group(clients, 2, comms);
	if (st == WAFER_OK) {
		ok(comms[0] && comms[1] && wafer_comm_rank(comms[1]) == 1 &&
			   wafer_comm_size(comms[0]) == 2,
		   "[%s] open_group of %s and %s: ranks 0 and 1 of 2", label,
		   sel[0], sel[1]);
		run_steps(label, clients, comms, 2, EVERY_BACKEND_DTYPES, false);
		test_send_recv(label, clients, comms, 2);
		if (strcmp(label, "mpsc") == 0)
			run_steps(label, clients, comms, 2, EVERY_BACKEND_DTYPES, true);
		is_status(wafer_comm_close(comms[0]), WAFER_OK,
			  "[%s] close rank 0", label);
		is_status(wafer_comm_close(comms[1]), WAFER_OK,
			  "[%s] close rank 1", label);
	} else {
		/* MPI: one rank per process; the plugin says so. */
		is_status(st, WAFER_ERROR_INVALID_ARGUMENT,
			  "[%s] open_group of %s and %s: %s refuses two ranks "
			  "in one process",
			  label, sel[0], sel[1], backend);
		like(wafer_last_error(), backend, "[%s]   ... naming the plugin",
		     label);
		ok(!comms[0] && !comms[1], "[%s]   ... no communicator",
		   label);
	}
	for (int r = 0; r < 2; r++)
		check(wafer_client_close(clients[r]), "close");
}

static void test_default(void)
{
	wafer_runtime *rt;

	check(wafer_runtime_open(NULL, &rt), "runtime_open");
	for (size_t ch = 0; ch < 3; ch++) {
		const char *label = channels[ch], *backend;
		wafer_client *c = open_client_on(rt, "default", label);
		uint64_t caps = caps_of(c, &backend);
		wafer_comm_id id;
		wafer_comm *comm = NULL;

		if (ch == 0)
			diag("default backend %s: collectives %s", backend,
			     caps & WAFER_CAP_COLLECTIVES ? "yes" : "no");
		if (!(caps & WAFER_CAP_COLLECTIVES)) {
			test_unsupported(c, backend, label);
			ok_clean(c, label);
			check(wafer_client_close(c), "close");
			continue;
		}
		check(wafer_comm_id_create(c, &id), "comm_id_create");
		wafer_comm_options o = {sizeof o, 0, 1, &id, NULL};
		is_status(wafer_comm_open(c, &o, &comm), WAFER_OK,
			  "[%s] %s: a communicator of one rank", label,
			  backend);
		ok(comm && wafer_comm_rank(comm) == 0 &&
			   wafer_comm_size(comm) == 1,
		   "[%s]   ... rank 0 of 1", label);
		if (comm)
			run_steps(label, &c, &comm, 1, EVERY_BACKEND_DTYPES,
				  false);
		is_status(wafer_comm_close(comm), WAFER_OK, "[%s] close it",
			  label);
		test_default_group(rt, backend, label);
		ok_clean(c, label);
		check(wafer_client_close(c), "close");
	}
	wafer_runtime_close(rt);
}

/*===----------------------------------------------------------------------===
 * The test plugin: four ranks in this process
 *===----------------------------------------------------------------------===*/

static char plugin_dir[4096];

/* Each rank fills its buffer with rank + 1 by a kernel, then sums it in
 * place: the collective must come after the kernel. */
static void *fill_then_reduce(void *data)
{
	struct rank *r = data;
	float back[N];
	wafer_handle h;
	wafer_status st = wafer_empty(r->client, sizeof back, &h);

	if (st != WAFER_OK) {
		fail(r, "empty", st);
		return NULL;
	}
	st = fill_floats(r->client, h, N, r->rank + 1);
	if (st == WAFER_OK)
		st = wafer_comm_all_reduce(r->comm, h, h, N, WAFER_DTYPE_F32,
					   WAFER_REDUCE_SUM);
	if (st == WAFER_OK)
		st = wafer_read(r->client, h, 0, back, sizeof back);
	if (st != WAFER_OK)
		fail(r, "fill, all_reduce, read", st);
	for (int i = 0; st == WAFER_OK && i < N; i++)
		if (back[i] != (float)(r->size * (r->size + 1) / 2)) {
			if (!r->failures++)
				snprintf(r->why, sizeof r->why,
					 "rank %u: [%d] is %g", r->rank, i,
					 back[i]);
			break;
		}
	wafer_release(r->client, h);
	return NULL;
}

static void test_after_kernel(const char *label, wafer_client **clients,
			      wafer_comm **comms, uint32_t size);

/* Rank 0 asks for MAX, the others for SUM: the engine refuses the
 * mismatch on every rank (at the call, or at the sync on mpsc). Each
 * rank's client must come out usable: a kernel and a read work. */
static void *disagree(void *data)
{
	struct rank *r = data;
	float back[N];
	wafer_handle h;
	wafer_status st = wafer_empty(r->client, sizeof back, &h);

	if (st != WAFER_OK) {
		fail(r, "empty", st);
		return NULL;
	}
	st = wafer_comm_all_reduce(r->comm, h, h, N, WAFER_DTYPE_F32,
				   r->rank ? WAFER_REDUCE_SUM
					   : WAFER_REDUCE_MAX);
	if (st == WAFER_OK)
		st = wafer_sync(r->client);
	if (st == WAFER_OK)
		fail(r, "a mismatched all_reduce succeeded", st);
	st = fill_floats(r->client, h, N, 7);
	if (st == WAFER_OK)
		st = wafer_read(r->client, h, 0, back, sizeof back);
	if (st == WAFER_OK)
		st = wafer_sync(r->client);
	if (st != WAFER_OK)
		fail(r, "fill and read after the failure", st);
	for (int i = 0; st == WAFER_OK && i < N; i++)
		if (back[i] != 7.0f) {
			if (!r->failures++)
				snprintf(r->why, sizeof r->why,
					 "rank %u: [%d] is %g after the fill",
					 r->rank, i, back[i]);
			break;
		}
	wafer_release(r->client, h);
	return NULL;
}

static void test_failing_collective(const char *label, wafer_client **clients)
{
	struct rank ranks[MAX_RANKS];
	pthread_t threads[MAX_RANKS];
	wafer_comm *comms[MAX_RANKS];
	const char *why;

	check(wafer_comm_open_group(clients, MAX_RANKS, comms), "open_group");
	set_ranks(ranks, clients, comms, MAX_RANKS, WAFER_DTYPE_F32);
	for (uint32_t r = 0; r < MAX_RANKS; r++)
		if (pthread_create(&threads[r], NULL, disagree, &ranks[r]))
			bail_out("pthread_create");
	for (uint32_t r = 0; r < MAX_RANKS; r++)
		pthread_join(threads[r], NULL);
	int failures = rank_failures(ranks, MAX_RANKS, &why);
	ok(!failures, "[%s] a failing collective leaves every client usable "
	   "%s", label, why);
	for (uint32_t r = 0; r < MAX_RANKS; r++)
		wafer_comm_close(comms[r]);
	check(wafer_comm_open_group(clients, MAX_RANKS, comms), "open_group");
	test_after_kernel(label, clients, comms, MAX_RANKS);
	for (uint32_t r = 0; r < MAX_RANKS; r++)
		check(wafer_comm_close(comms[r]), "comm_close");
}

static void test_after_kernel(const char *label, wafer_client **clients,
			      wafer_comm **comms, uint32_t size)
{
	struct rank ranks[MAX_RANKS];
	pthread_t threads[MAX_RANKS];
	const char *why;
	int failures;

	set_ranks(ranks, clients, comms, size, 0);
	for (uint32_t r = 0; r < size; r++)
		if (pthread_create(&threads[r], NULL, fill_then_reduce,
				   &ranks[r]))
			bail_out("pthread_create");
	for (uint32_t r = 0; r < size; r++)
		pthread_join(threads[r], NULL);
	failures = rank_failures(ranks, size, &why);
	ok(!failures,
	   "[%s] a kernel's output, summed over %u ranks, reads %u %s", label,
	   size, size * (size + 1) / 2, why);
}

/* A rank that captured an all_reduce of src into dst as a graph. */
struct graph_rank {
	struct rank r;
	wafer_graph *graph;
};

/* Captures the all_reduce once, then for three rounds writes
 * (rank + 1) x round into src and replays it: dst holds the new sum
 * each time. */
static void *graph_reduce(void *data)
{
	struct graph_rank *g = data;
	struct rank *r = &g->r;
	wafer_queue *q = wafer_client_default_queue(r->client);
	float v[N], back[N];
	wafer_status st = wafer_empty(r->client, sizeof v, &r->src);

	if (st == WAFER_OK)
		st = wafer_empty(r->client, sizeof v, &r->dst);
	if (st == WAFER_OK)
		st = wafer_queue_begin_capture(q);
	if (st == WAFER_OK) {
		wafer_status captured = wafer_comm_all_reduce(
			r->comm, r->src, r->dst, N, WAFER_DTYPE_F32,
			WAFER_REDUCE_SUM);
		st = wafer_queue_end_capture(q, &g->graph);
		if (st == WAFER_OK)
			st = captured;
	}
	if (st != WAFER_OK) {
		fail(r, "capture an all_reduce", st);
		return NULL;
	}
	for (int round = 1; round <= 3; round++) {
		for (int i = 0; i < N; i++)
			v[i] = (float)((r->rank + 1) * round);
		st = wafer_write(r->client, r->src, 0, v, sizeof v);
		if (st == WAFER_OK)
			st = wafer_graph_launch(g->graph, q);
		if (st == WAFER_OK)
			st = wafer_read(r->client, r->dst, 0, back, sizeof back);
		if (st != WAFER_OK) {
			fail(r, "write, replay, read", st);
			return NULL;
		}
		float want = (float)(round * r->size * (r->size + 1) / 2);
		for (int i = 0; i < N; i++)
			if (back[i] != want) {
				if (!r->failures++)
					snprintf(r->why, sizeof r->why,
						 "rank %u round %d: [%d] is %g, "
						 "not %g",
						 r->rank, round, i, back[i], want);
				return NULL;
			}
	}
	return NULL;
}

/* Collectives captured into graphs (wafer_graph(3)) replay on every
 * rank; a replay after the communicator closed is refused, naming it,
 * and the client goes on. */
static void test_graph(const char *label, wafer_client **clients)
{
	struct graph_rank ranks[MAX_RANKS];
	struct rank plain[MAX_RANKS];
	wafer_comm *comms[MAX_RANKS];
	const char *why = "";
	int failures = 0;

	check(wafer_comm_open_group(clients, MAX_RANKS, comms), "open_group");
	set_ranks(plain, clients, comms, MAX_RANKS, WAFER_DTYPE_F32);
	for (uint32_t r = 0; r < MAX_RANKS; r++)
		ranks[r] = (struct graph_rank){.r = plain[r]};
	on_threads(graph_reduce, ranks, sizeof *ranks, MAX_RANKS);
	for (uint32_t r = 0; r < MAX_RANKS; r++)
		if (ranks[r].r.failures && !failures++)
			why = ranks[r].r.why;
	ok(!failures, "[%s] an all_reduce captured into a graph on each rank "
	   "sums new values at each of three replays %s", label, why);
	for (uint32_t r = 0; r < MAX_RANKS; r++)
		check(wafer_comm_close(comms[r]), "comm_close");
	wafer_client *c = clients[0];
	wafer_status st = ranks[0].graph
				  ? wafer_graph_launch(ranks[0].graph,
						       wafer_client_default_queue(c))
				  : WAFER_ERROR_INVALID_ARGUMENT;
	if (st == WAFER_OK)
		st = wafer_sync(c);
	is_status(st, WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] a replay after the communicator closed is refused",
		  label);
	like(wafer_last_error(), "was closed after the capture",
	     "[%s]   ... naming it: %s", label, wafer_last_error());
	float back[N];
	st = fill_floats(c, ranks[0].r.dst, N, 5.0);
	if (st == WAFER_OK)
		st = wafer_read(c, ranks[0].r.dst, 0, back, sizeof back);
	ok(st == WAFER_OK && back[0] == 5.0f && back[N - 1] == 5.0f,
	   "[%s]   ... and the client goes on", label);
	for (uint32_t r = 0; r < MAX_RANKS; r++) {
		if (ranks[r].graph)
			check(wafer_graph_release(ranks[r].graph), "graph_release");
		wafer_release(clients[r], ranks[r].r.src);
		wafer_release(clients[r], ranks[r].r.dst);
	}
}

static wafer_handle create_f32(wafer_client *c, size_t n, float v)
{
	float *data = malloc(n * sizeof *data);
	wafer_handle h;

	for (size_t i = 0; i < n; i++)
		data[i] = v;
	check(wafer_create(c, data, n * sizeof *data, &h), "create");
	free(data);
	return h;
}

/* Every argument error the core checks, on rank 0 alone: none reaches
 * the plugin (which would wait for the other ranks), none changes a
 * byte or a handle. */
static void test_errors(const char *label, wafer_client **clients,
			wafer_comm **comms)
{
	wafer_client *c = clients[0];
	wafer_comm *comm = comms[0];
	wafer_handle src = create_f32(c, N, 1), dst = create_f32(c, N, 2);
	wafer_handle small = create_f32(c, N - 1, 3);
	wafer_handle other = create_f32(clients[1], N, 4);
	wafer_handle dead = create_f32(c, N, 5);
	wafer_memory_usage before;
	float back[N];
	char want[160];
	int same = 1;

	check(wafer_release(c, dead), "release");
	before = usage_now(c);
	is_status(wafer_comm_all_reduce(NULL, src, dst, N, WAFER_DTYPE_F32,
					WAFER_REDUCE_SUM),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] all_reduce: comm NULL",
		  label);
	like(wafer_last_error(), "comm is NULL", "[%s]   ... says so", label);
	is_status(wafer_comm_all_reduce(comm, src, dst, N, WAFER_DTYPE_F32,
					WAFER_REDUCE_MEAN),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] all_reduce: MEAN refused", label);
	like(wafer_last_error(), "WAFER_REDUCE_SUM or WAFER_REDUCE_MAX",
	     "[%s]   ... naming the ops taken", label);
	is_status(wafer_comm_reduce_scatter(comm, src, dst, 1, WAFER_DTYPE_F32,
					    (wafer_reduce_op)7),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] reduce_scatter: op 7 refused", label);
	is_status(wafer_comm_broadcast(comm, src, dst, N, WAFER_DTYPE_F32, 4),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] broadcast: root 4",
		  label);
	like(wafer_last_error(), "root 4, communicator of size 4",
	     "[%s]   ... naming root and size", label);
	is_status(wafer_comm_all_reduce(comm, src, dst, N, WAFER_DTYPE_NONE,
					WAFER_REDUCE_SUM),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] all_reduce: dtype none",
		  label);
	is_status(wafer_comm_all_reduce(comm, src, small, N, WAFER_DTYPE_F32,
					WAFER_REDUCE_SUM),
		  WAFER_ERROR_OUT_OF_RANGE, "[%s] all_reduce: dst too small",
		  label);
	snprintf(want, sizeof want,
		 "dst handle 0x%016" PRIx64 " holds %zu bytes, %zu needed",
		 small.bits, (N - 1) * sizeof(float), N * sizeof(float));
	like(wafer_last_error(), want, "[%s]   ... naming it, held, needed",
	     label);
	is_status(wafer_comm_all_gather(comm, src, dst, N, WAFER_DTYPE_F32),
		  WAFER_ERROR_OUT_OF_RANGE,
		  "[%s] all_gather: dst holds one rank's part, not four",
		  label);
	snprintf(want, sizeof want, "holds %zu bytes, %zu needed",
		 N * sizeof(float), 4 * N * sizeof(float));
	like(wafer_last_error(), want, "[%s]   ... %s", label, want);
	is_status(wafer_comm_reduce_scatter(comm, src, dst, N, WAFER_DTYPE_F32,
					    WAFER_REDUCE_SUM),
		  WAFER_ERROR_OUT_OF_RANGE,
		  "[%s] reduce_scatter: src holds one block, not four", label);
	like(wafer_last_error(), "src handle", "[%s]   ... naming src", label);
	is_status(wafer_comm_all_reduce(comm, other, dst, N, WAFER_DTYPE_F32,
					WAFER_REDUCE_SUM),
		  WAFER_ERROR_INVALID_HANDLE,
		  "[%s] all_reduce: src of another client", label);
	like(wafer_last_error(), "belongs to another client",
	     "[%s]   ... says so", label);
	is_status(wafer_comm_broadcast(comm, dead, dead, N, WAFER_DTYPE_F32,
				       0),
		  WAFER_ERROR_INVALID_HANDLE,
		  "[%s] broadcast: a released handle", label);
	is_status(wafer_comm_all_gather(comm, dst, dst, 1, WAFER_DTYPE_F32),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] all_gather: src and dst one handle", label);
	like(wafer_last_error(), "same handle", "[%s]   ... says so", label);
	is_status(wafer_comm_all_reduce(comm, src, dst, SIZE_MAX / 2,
					WAFER_DTYPE_F32, WAFER_REDUCE_SUM),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] all_reduce: a count whose bytes overflow", label);
	is_status(wafer_comm_all_reduce(comm, src, dst, 0, WAFER_DTYPE_F32,
					WAFER_REDUCE_SUM),
		  WAFER_OK, "[%s] all_reduce of 0 elements: nothing to do",
		  label);
	is_status(wafer_comm_all_gather(comm, (wafer_handle){0},
					(wafer_handle){0}, 0, WAFER_DTYPE_F16),
		  WAFER_OK, "[%s] all_gather of 0 elements, no handles", label);
	check(wafer_read(c, dst, 0, back, sizeof back), "read");
	for (int i = 0; i < N; i++)
		same = same && back[i] == 2;
	ok(same, "[%s] dst unchanged by all of them", label);
	{
		wafer_memory_usage now = usage_now(c);
		ok(now.handles_live == before.handles_live &&
			   now.bytes_in_use == before.bytes_in_use,
		   "[%s] no handle or byte more", label);
	}

	/* Opening. */
	wafer_comm *got = (wafer_comm *)&got;
	wafer_comm_options o = {sizeof o, 4, 4, NULL, NULL};
	is_status(wafer_comm_open(c, &o, &got), WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] comm_open: rank 4 of 4", label);
	like(wafer_last_error(), "rank 4 of size 4", "[%s]   ... says so",
	     label);
	ok(got == NULL, "[%s]   ... no communicator", label);
	o.rank = 0;
	o.size = 0;
	is_status(wafer_comm_open(c, &o, &got), WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] comm_open: size 0", label);
	is_status(wafer_comm_open(c, NULL, &got), WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] comm_open: options NULL", label);
	like(wafer_last_error(), "options is NULL", "[%s]   ... says so",
	     label);
	o.size = 1;
	o.native = &o;
	is_status(wafer_comm_open(c, &o, &got), WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] comm_open: a native communicator the plugin refuses",
		  label);
	like(wafer_last_error(), "collective: native communicator",
	     "[%s]   ... in the plugin's words", label);
	like(wafer_last_error(), "wafer_comm_open: collective:0, rank 0 of 1",
	     "[%s]   ... after the core's context", label);
	ok(got == NULL, "[%s]   ... no communicator", label);
	{
		wafer_client *twice[2] = {c, c};
		wafer_comm *out[2] = {(wafer_comm *)&got, (wafer_comm *)&got};

		is_status(wafer_comm_open_group(twice, 2, out),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "[%s] open_group: one client twice", label);
		like(wafer_last_error(), "clients[0] and clients[1] are the "
		     "same client", "[%s]   ... says so", label);
		ok(!out[0] && !out[1], "[%s]   ... no communicator", label);
		is_status(wafer_comm_open_group(twice, 0, out),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "[%s] open_group: count 0", label);
	}
	{
		/* On the default backend: a test plugin loaded by two
		 * runtimes at once keeps the host services of the last. */
		wafer_runtime *rt2;
		check(wafer_runtime_open(NULL, &rt2), "runtime_open");
		wafer_client *pair[2] = {
			c, open_client_on(rt2, "default", label)};
		wafer_comm *out[2];

		is_status(wafer_comm_open_group(pair, 2, out),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "[%s] open_group: clients of two runtimes", label);
		like(wafer_last_error(), "two runtimes", "[%s]   ... says so",
		     label);
		check(wafer_client_close(pair[1]), "close");
		wafer_runtime_close(rt2);
	}
	is_status(wafer_comm_close(NULL), WAFER_OK, "[%s] comm_close(NULL)",
		  label);
	ok(wafer_comm_rank(NULL) == 0 && wafer_comm_size(NULL) == 0,
	   "[%s] rank and size of NULL are 0", label);
	check(wafer_release(c, src), "release");
	check(wafer_release(c, dst), "release");
	check(wafer_release(c, small), "release");
	check(wafer_release(clients[1], other), "release");
}

/* A rank whose comm_open fails after the group formed: the ranks that
 * opened are closed again, none handed out. */
static void test_failing_rank(const char *label, wafer_client **clients)
{
	wafer_comm *comms[MAX_RANKS];

	setenv("T_COLLECTIVE_FAIL_RANK", "2", 1);
	is_status(wafer_comm_open_group(clients, MAX_RANKS, comms),
		  WAFER_ERROR_DEVICE, "[%s] open_group: rank 2 fails", label);
	unsetenv("T_COLLECTIVE_FAIL_RANK");
	like(wafer_last_error(), "rank 2 refused",
	     "[%s]   ... its failure reported", label);
	ok(!comms[0] && !comms[1] && !comms[2] && !comms[3],
	   "[%s]   ... no communicator handed out", label);
}

/* Clients closed with their communicators open: a warning each, the
 * communicators freed with them (the sanitizers see no leak). */
static void test_close_open(wafer_runtime *rt, const char *label)
{
	wafer_client *pair[2] = {open_client_on(rt, "collective:0", label),
				 open_client_on(rt, "collective:1", label)};
	wafer_comm *comms[2];
	struct log_capture cap;
	char text[4096] = "";
	wafer_status a = WAFER_ERROR_INTERNAL, b = WAFER_ERROR_INTERNAL;

	check(wafer_comm_open_group(pair, 2, comms), "open_group");
	if (log_capture_begin(&cap)) {
		a = wafer_client_close(pair[0]);
		b = wafer_client_close(pair[1]);
		log_capture_end(&cap, text, sizeof text);
	}
	ok(a == WAFER_OK && b == WAFER_OK,
	   "[%s] clients close with their communicators open", label);
	is_int(log_count(text, "still open: closing it"), 2,
	       "[%s]   ... one warning each", label);
	is_status(wafer_comm_close(comms[0]), WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s]   ... the communicator is closed with its client",
		  label);
}

/* A closed communicator's pointer names nothing, even when malloc hands
 * its memory to the next communicator opened (it once was recognised by
 * address, and a collective on it ran on the new one). */
static void test_stale(const char *label, wafer_client **clients)
{
	enum { ROUNDS = 8 };
	wafer_comm *stale[ROUNDS][MAX_RANKS];
	int named = 0, closed = 0;

	for (int round = 0; round < ROUNDS; round++) {
		check(wafer_comm_open_group(clients, MAX_RANKS, stale[round]),
		      "open_group");
		for (int old = 0; old < round; old++)
			for (int r = 0; r < MAX_RANKS; r++)
				named += wafer_comm_size(stale[old][r]) != 0;
		for (int r = 0; r < MAX_RANKS; r++)
			check(wafer_comm_close(stale[round][r]), "comm_close");
	}
	wafer_comm *fresh[MAX_RANKS];
	check(wafer_comm_open_group(clients, MAX_RANKS, fresh), "open_group");
	for (int old = 0; old < ROUNDS; old++)
		for (int r = 0; r < MAX_RANKS; r++)
			closed += wafer_comm_close(stale[old][r]) == WAFER_OK;
	is_int(named, 0, "[%s] no closed communicator's pointer names a later "
	       "one", label);
	is_int(closed, 0, "[%s]   ... nor closes it", label);
	for (int r = 0; r < MAX_RANKS; r++)
		is_status(wafer_comm_close(fresh[r]), WAFER_OK,
			  "[%s]   ... the later one, rank %d, is still open",
			  label, r);
}

/* A second runtime loads the same plugin and closes: the first one's
 * clients go on (the test plugins once kept the last runtime's host
 * services, freed with it: heap-use-after-free under the sanitizers and
 * valgrind on the next error or log line). */
static void test_second_runtime(wafer_runtime *rt)
{
	wafer_runtime *other = open_runtime_on("collective", plugin_dir);
	check(wafer_client_close(open_client_on(other, "collective:1",
						"mutex")),
	      "close");
	wafer_runtime_close(other);

	wafer_client *c = open_client_on(rt, "collective:0", "mutex");
	wafer_comm_options options = {
		.struct_size = sizeof options,
		.rank = 0,
		.size = 1,
		.native = &options,
	};
	wafer_comm *comm = NULL;
	is_status(wafer_comm_open(c, &options, &comm),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "a second runtime closed: the first's plugin still reports "
		  "errors");
	like(wafer_last_error(), "native communicator",
	     "  ... with its text");
	is_status(wafer_client_close(c), WAFER_OK, "  ... and closes clients");
}

static void test_plugin(void)
{
	const char *builddir = getenv("T_BUILDDIR");
	wafer_runtime *rt;

	if (!builddir) {
		ok(1, "test plugin collective # SKIP T_BUILDDIR is not set");
		return;
	}
	snprintf(plugin_dir, sizeof plugin_dir, "%s/plugins/.libs", builddir);
	rt = open_runtime_on("collective", plugin_dir);
	test_second_runtime(rt);
	for (size_t ch = 0; ch < 3; ch++) {
		const char *label = channels[ch];
		wafer_client *clients[MAX_RANKS];
		wafer_comm *comms[MAX_RANKS];
		char sel[32];
		wafer_status st;

		for (int r = 0; r < MAX_RANKS; r++) {
			snprintf(sel, sizeof sel, "collective:%d", r);
			clients[r] = open_client_on(rt, sel, label);
		}
		ok((caps_of(clients[0], NULL) &
		    (WAFER_CAP_COLLECTIVES | WAFER_CAP_PEER_COPY)) ==
			   (WAFER_CAP_COLLECTIVES | WAFER_CAP_PEER_COPY),
		   "[%s] collective: the core sets both capabilities", label);
		st = wafer_comm_open_group(clients, MAX_RANKS, comms);
		is_status(st, WAFER_OK, "[%s] open_group of four clients",
			  label);
		if (st != WAFER_OK)
			bail_out("open_group: %s", wafer_last_error());
		ok(wafer_comm_rank(comms[3]) == 3 &&
			   wafer_comm_size(comms[3]) == MAX_RANKS &&
			   wafer_comm_rank(comms[0]) == 0,
		   "[%s]   ... clients[i] is rank i of 4", label);
		run_steps(label, clients, comms, MAX_RANKS,
			  TEST_PLUGIN_DTYPES, false);
		if (ch == 2)
			run_steps(label, clients, comms, MAX_RANKS,
				  TEST_PLUGIN_DTYPES, true);
		test_after_kernel(label, clients, comms, MAX_RANKS);
		test_send_recv(label, clients, comms, MAX_RANKS);
		test_errors(label, clients, comms);
		for (int r = 0; r < MAX_RANKS; r++)
			is_status(wafer_comm_close(comms[r]), WAFER_OK,
				  "[%s] close rank %d", label, r);
		is_status(wafer_comm_close(comms[0]),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "[%s] close rank 0 again", label);
		like(wafer_last_error(), "is not open", "[%s]   ... says so",
		     label);
		is_status(wafer_comm_all_reduce(comms[1], (wafer_handle){0},
						(wafer_handle){0}, 1,
						WAFER_DTYPE_F32,
						WAFER_REDUCE_SUM),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "[%s] a collective on a closed communicator", label);
		test_failing_rank(label, clients);
		test_stale(label, clients);
		test_failing_collective(label, clients);
		test_graph(label, clients);
		for (int r = 0; r < MAX_RANKS; r++) {
			ok_clean(clients[r], label);
			check(wafer_client_close(clients[r]), "close");
		}
		test_close_open(rt, label);
	}
	wafer_runtime_close(rt);
}

int main(void)
{
	test_default();
	test_plugin();
	done_testing();
	return exit_status();
}
