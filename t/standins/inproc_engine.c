/* wafer — SPDX-License-Identifier: MIT
 *
 * inproc_engine.c: the in-process collective engine the stand-ins share
 * (plugins/cpu/inproc_comm.c), on its own: what t/api/comm does not reach through the
 * test plugin, and what the stand-in NCCL relies on.
 *
 *  - join: size 0 and rank >= size refused; a rank taken twice and a size
 *    that differs from the group's refused while the group forms (at
 *    once: no wait); a join
 *    whose peers never come times out and leaves the group (the id
 *    works again after); a completed group's id makes a new group;
 *  - the collectives on three ranks for every dtype (f32, f16, bf16,
 *    f64, i32), SUM and MAX, with src and dst overlapping;
 *  - MAX keeps a NaN; an i32 sum wraps;
 *  - ranks that call different collectives (or counts) all get
 *    INPROC_COMM_MISMATCH, an invalid root INPROC_COMM_INVALID, and the
 *    group works after;
 *  - an abort wakes a rank waiting in a collective or a send, and
 *    fails every later call;
 *  - every rank leaving in any order frees the group (the sanitizers
 *    check). */
#include "build-config.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t/half.h"
#include "plugins/cpu/inproc_comm.h"
#include "t/tap.h"

#define RANKS 3
#define COUNT 11

static uint8_t group_id[INPROC_COMM_ID_BYTES];

/* Each rank runs |fn| on its own thread with its membership. */
struct rank {
	uint32_t rank;
	inproc_comm *comm;
	inproc_comm_status join;
	int failures;
	char why[160];
	void (*fn)(struct rank *r);
};

static void *rank_main(void *data)
{
	struct rank *r = data;

	r->join = inproc_comm_join(group_id, r->rank, RANKS, 0, &r->comm);
	if (r->join == INPROC_COMM_OK)
		r->fn(r);
	return NULL;
}

/* Runs |fn| on RANKS threads of a new group; one point, |name|, for the
 * whole; the ranks leave in reverse order. */
static void on_ranks(void (*fn)(struct rank *r), const char *name)
{
	struct rank ranks[RANKS];
	pthread_t threads[RANKS];
	const char *why = "";
	int failures = 0;

	inproc_comm_id_new(group_id);
	for (uint32_t i = 0; i < RANKS; i++) {
		ranks[i] = (struct rank){.rank = i, .fn = fn};
		if (pthread_create(&threads[i], NULL, rank_main, &ranks[i]))
			bail_out("pthread_create");
	}
	for (uint32_t i = 0; i < RANKS; i++)
		pthread_join(threads[i], NULL);
	for (uint32_t i = 0; i < RANKS; i++) {
		if (ranks[i].join != INPROC_COMM_OK && !failures++)
			why = inproc_comm_status_text(ranks[i].join);
		if (ranks[i].failures && !failures++)
			why = ranks[i].why;
	}
	for (uint32_t i = RANKS; i-- > 0;)
		inproc_comm_leave(ranks[i].comm);
	ok(!failures, "%s %s", name, why);
}

static void fail(struct rank *r, const char *what, double got, double want)
{
	if (!r->failures++)
		snprintf(r->why, sizeof r->why, "rank %u: %s: %g, want %g",
			 r->rank, what, got, want);
}

static void put(inproc_comm_dtype t, void *base, size_t i, double v)
{
	switch (t) {
	case INPROC_COMM_F32:
		((float *)base)[i] = (float)v;
		break;
	case INPROC_COMM_F64:
		((double *)base)[i] = v;
		break;
	case INPROC_COMM_I32:
		((int32_t *)base)[i] = (int32_t)v;
		break;
	case INPROC_COMM_F16:
		((uint16_t *)base)[i] = t_float_to_f16((float)v);
		break;
	case INPROC_COMM_BF16:
		((uint16_t *)base)[i] = t_float_to_bf16((float)v);
		break;
	}
}

static double get(inproc_comm_dtype t, const void *base, size_t i)
{
	switch (t) {
	case INPROC_COMM_F32:
		return ((const float *)base)[i];
	case INPROC_COMM_F64:
		return ((const double *)base)[i];
	case INPROC_COMM_I32:
		return ((const int32_t *)base)[i];
	case INPROC_COMM_F16:
		return t_f16_to_float(((const uint16_t *)base)[i]);
	case INPROC_COMM_BF16:
		return t_bf16_to_float(((const uint16_t *)base)[i]);
	}
	return NAN;
}

/* Rank r's i-th element: small integers, exact in every dtype. */
static double value(uint32_t r, size_t i)
{
	return (double)((int)((r * 7 + i * 3) % 13) - 6);
}

static void every_dtype(struct rank *r)
{
	static const inproc_comm_dtype types[] = {
		INPROC_COMM_F32, INPROC_COMM_F16, INPROC_COMM_BF16,
		INPROC_COMM_F64, INPROC_COMM_I32};

	for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
		inproc_comm_dtype t = types[k];
		/* One buffer: reduce_scatter's dst overlaps its src. */
		double buf[COUNT * RANKS];
		double out[COUNT * RANKS];

		for (size_t i = 0; i < COUNT * RANKS; i++)
			put(t, buf, i, value(r->rank, i));
		if (inproc_comm_all_reduce(r->comm, buf, out, COUNT, t,
					   INPROC_COMM_MAX) != INPROC_COMM_OK)
			fail(r, "all_reduce max", 0, 0);
		for (size_t i = 0; i < COUNT; i++) {
			double want = value(0, i);

			for (uint32_t q = 1; q < RANKS; q++)
				want = fmax(want, value(q, i));
			if (get(t, out, i) != want)
				fail(r, "all_reduce max", get(t, out, i), want);
		}
		if (inproc_comm_reduce_scatter(r->comm, buf, buf, COUNT, t,
					       INPROC_COMM_SUM) != INPROC_COMM_OK)
			fail(r, "reduce_scatter", 0, 0);
		for (size_t i = 0; i < COUNT; i++) {
			double want = 0;

			for (uint32_t q = 0; q < RANKS; q++)
				want += value(q, r->rank * COUNT + i);
			if (get(t, buf, i) != want)
				fail(r, "reduce_scatter in place", get(t, buf, i),
				     want);
		}
		for (size_t i = 0; i < COUNT; i++)
			put(t, buf, i, value(r->rank, i));
		if (inproc_comm_all_gather(r->comm, buf, out, COUNT, t) !=
		    INPROC_COMM_OK)
			fail(r, "all_gather", 0, 0);
		for (size_t i = 0; i < COUNT * RANKS; i++)
			if (get(t, out, i) != value((uint32_t)(i / COUNT),
						    i % COUNT))
				fail(r, "all_gather", get(t, out, i),
				     value((uint32_t)(i / COUNT), i % COUNT));
		if (inproc_comm_broadcast(r->comm, r->rank == 1 ? buf : NULL,
					  buf, COUNT, t, 1) != INPROC_COMM_OK)
			fail(r, "broadcast", 0, 0);
		for (size_t i = 0; i < COUNT; i++)
			if (get(t, buf, i) != value(1, i))
				fail(r, "broadcast", get(t, buf, i), value(1, i));
	}
}

static void edges(struct rank *r)
{
	float f[2] = {r->rank == 2 ? NAN : (float)r->rank, 1};
	int32_t n = INT32_MAX;

	if (inproc_comm_all_reduce(r->comm, f, f, 2, INPROC_COMM_F32,
				   INPROC_COMM_MAX) != INPROC_COMM_OK ||
	    !isnan(f[0]) || f[1] != 1)
		fail(r, "max keeps a NaN", f[0], NAN);
	if (inproc_comm_all_reduce(r->comm, &n, &n, 1, INPROC_COMM_I32,
				   INPROC_COMM_SUM) != INPROC_COMM_OK ||
	    n != (int32_t)(uint32_t)(3u * (uint32_t)INT32_MAX))
		fail(r, "i32 sum wraps", n,
		     (int32_t)(uint32_t)(3u * (uint32_t)INT32_MAX));
}

static void mismatches(struct rank *r)
{
	float a[4] = {1, 2, 3, 4}, b[4 * RANKS];
	inproc_comm_status s;

	/* Rank 1 gathers while the others reduce. */
	s = r->rank == 1 ? inproc_comm_all_gather(r->comm, a, b, 4,
						  INPROC_COMM_F32)
			 : inproc_comm_all_reduce(r->comm, a, a, 4,
						  INPROC_COMM_F32,
						  INPROC_COMM_SUM);
	if (s != INPROC_COMM_MISMATCH)
		fail(r, "different kinds: mismatch", s, INPROC_COMM_MISMATCH);
	/* Rank 0 counts 3. */
	s = inproc_comm_all_reduce(r->comm, a, a, r->rank ? 4 : 3,
				   INPROC_COMM_F32, INPROC_COMM_SUM);
	if (s != INPROC_COMM_MISMATCH)
		fail(r, "different counts: mismatch", s, INPROC_COMM_MISMATCH);
	s = inproc_comm_broadcast(r->comm, a, a, 4, INPROC_COMM_F32, RANKS);
	if (s != INPROC_COMM_INVALID)
		fail(r, "root past the size: invalid", s, INPROC_COMM_INVALID);
	if (a[0] != 1 || a[3] != 4)
		fail(r, "nothing written by the failures", a[0], 1);
	/* And the group goes on. */
	s = inproc_comm_all_reduce(r->comm, a, a, 4, INPROC_COMM_F32,
				   INPROC_COMM_SUM);
	if (s != INPROC_COMM_OK || a[3] != 4 * RANKS)
		fail(r, "all_reduce after", a[3], 4 * RANKS);
}

static void test_join(void)
{
	uint8_t id[INPROC_COMM_ID_BYTES];
	inproc_comm *c = (inproc_comm *)id, *d;

	inproc_comm_id_new(id);
	is_int(inproc_comm_join(id, 0, 0, 0, &c), INPROC_COMM_INVALID,
	       "join: size 0");
	ok(c == NULL, "  ... no membership");
	is_int(inproc_comm_join(id, 2, 2, 0, &c), INPROC_COMM_INVALID,
	       "join: rank 2 of 2");
	/* A group of 2 whose rank 1 never comes: rank 0 times out, and
	 * while it waits a second rank 0 and a size 3 are refused. */
	is_int(inproc_comm_join(id, 0, 2, 30, &c), INPROC_COMM_TIMEOUT,
	       "join: alone in a group of 2, times out");
	is_int(inproc_comm_join(id, 0, 1, 0, &c), INPROC_COMM_OK,
	       "  ... the id works again after");
	ok(c && inproc_comm_rank(c) == 0 && inproc_comm_size(c) == 1,
	   "  ... rank 0 of 1");
	is_int(inproc_comm_join(id, 0, 1, 0, &d), INPROC_COMM_OK,
	       "join: a completed group's id makes a new group");
	inproc_comm_leave(c);
	inproc_comm_leave(d);
	inproc_comm_leave(NULL);
	ok(1, "leave(NULL) is a no-op");
}

/* While rank 0 of a group of 2 waits, a second rank 0 and a rank with
 * another size are refused. */
static void *wait_rank0(void *data)
{
	inproc_comm **out = data;

	if (inproc_comm_join(group_id, 0, 2, 0, out) != INPROC_COMM_OK)
		*out = NULL;
	return NULL;
}

static void test_forming(void)
{
	pthread_t t;
	inproc_comm *first = NULL, *other, *second;

	inproc_comm_id_new(group_id);
	if (pthread_create(&t, NULL, wait_rank0, &first))
		bail_out("pthread_create");
	while (inproc_comm_waiting(group_id) == 0)
		sched_yield(); /* until rank 0 waits in the group */
	is_int(inproc_comm_join(group_id, 0, 2, 0, &other),
	       INPROC_COMM_INVALID, "join: rank 0 taken while forming");
	is_int(inproc_comm_join(group_id, 1, 3, 0, &other),
	       INPROC_COMM_INVALID, "join: size 3 in a group of 2");
	is_int(inproc_comm_waiting(group_id), 1,
	       "  ... rank 0 still the one waiting");
	is_int(inproc_comm_join(group_id, 1, 2, 0, &second), INPROC_COMM_OK,
	       "join: rank 1 completes it");
	pthread_join(t, NULL);
	ok(first != NULL, "  ... and rank 0 returns");
	inproc_comm_leave(second);
	inproc_comm_leave(first);
}

/* Rank 0 of a group of 2 waits in an all_reduce (and then a send)
 * rank 1 never makes; rank 1 aborts the group: both return
 * INPROC_COMM_ABORTED, and so does every later call. */
static void *reduce_alone(void *data)
{
	inproc_comm *c = data;
	float f = 1;
	inproc_comm_status *s = malloc(2 * sizeof *s);

	s[0] = inproc_comm_all_reduce(c, &f, &f, 1, INPROC_COMM_F32,
				      INPROC_COMM_SUM);
	s[1] = inproc_comm_send(c, &f, 1, INPROC_COMM_F32, 1);
	return s;
}

static void *join_rank0(void *data)
{
	if (inproc_comm_join(group_id, 0, 2, 0, data) != INPROC_COMM_OK)
		*(inproc_comm **)data = NULL;
	return NULL;
}

static void test_abort(void)
{
	inproc_comm *zero = NULL, *one = NULL;
	inproc_comm_status *s;
	pthread_t t;
	float f = 1;

	inproc_comm_id_new(group_id);
	if (pthread_create(&t, NULL, join_rank0, &zero))
		bail_out("pthread_create");
	if (inproc_comm_join(group_id, 1, 2, 0, &one) != INPROC_COMM_OK)
		bail_out("join");
	pthread_join(t, NULL);
	if (!zero)
		bail_out("join rank 0");
	ok(!inproc_comm_aborted(zero), "abort: a new group is not aborted");
	if (pthread_create(&t, NULL, reduce_alone, zero))
		bail_out("pthread_create");
	usleep(20000); /* rank 0 waits in its all_reduce (or soon will) */
	inproc_comm_abort(one);
	pthread_join(t, (void **)&s);
	is_int(s[0], INPROC_COMM_ABORTED,
	       "abort: rank 0's waiting all_reduce returns ABORTED");
	is_int(s[1], INPROC_COMM_ABORTED, "  ... and its send after it");
	free(s);
	ok(inproc_comm_aborted(zero), "  ... rank 0 sees the group aborted");
	is_int(inproc_comm_recv(one, &f, 1, INPROC_COMM_F32, 0),
	       INPROC_COMM_ABORTED, "  ... a later recv too");
	inproc_comm_leave(zero);
	inproc_comm_leave(one);
}

int main(void)
{
	ok(inproc_comm_dtype_size(INPROC_COMM_F16) == 2 &&
		   inproc_comm_dtype_size(INPROC_COMM_F64) == 8 &&
		   inproc_comm_dtype_size((inproc_comm_dtype)99) == 0,
	   "dtype sizes");
	test_join();
	test_forming();
	on_ranks(every_dtype, "every collective, every dtype, 3 ranks");
	on_ranks(edges, "MAX keeps a NaN, an i32 sum wraps");
	on_ranks(mismatches, "mismatched calls fail on every rank, the "
			     "group goes on");
	test_abort();
	done_testing();
	return exit_status();
}
