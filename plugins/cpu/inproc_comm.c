/* wafer — SPDX-License-Identifier: MIT
 *
 * inproc_comm.c: the in-process collective engine of inproc_comm.h.
 *
 * A group lives in the registry (a list under one mutex) while it forms,
 * and leaves it when its last rank arrives; from then on it is reached
 * only through its members, and freed by the last to leave. A collective
 * is two barriers: every rank posts its call and buffers, barrier, every
 * rank checks the posts agree and computes its result into a buffer of
 * its own, barrier (nobody reads another rank's buffers past it), every
 * rank writes its dst. The second barrier is also what keeps a fast rank
 * from overwriting its post while a slow one still reads it. */
#include "plugins/cpu/inproc_comm.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugins/cpu/half.h"

enum call_kind {
	CALL_ALL_REDUCE = 1,
	CALL_BROADCAST,
	CALL_ALL_GATHER,
	CALL_REDUCE_SCATTER,
};

/* What one rank posts for a collective. */
struct post {
	enum call_kind kind;
	size_t count;
	inproc_comm_dtype dtype;
	inproc_comm_op op;
	uint32_t root;
	const void *src;
};

/* A point-to-point message from one rank to another, under the group's
 * lock: the sender posts |src| and waits until the receiver copied it. */
struct mail {
	const void *src;
	size_t bytes;
	bool posted;
	bool taken;
	bool mismatch; /* the receiver wanted another size */
};

struct group {
	struct group *next; /* in the registry while forming */
	uint8_t id[INPROC_COMM_ID_BYTES];
	uint32_t size;
	uint32_t joined;    /* under registry_lock */
	bool complete;      /* under registry_lock */
	bool *taken;        /* [size], under registry_lock */

	pthread_mutex_t lock; /* the rest */
	pthread_cond_t turn;
	uint32_t members;     /* ranks that have not left */
	uint32_t arrived;     /* at the barrier */
	uint64_t generation;  /* of the barrier */
	bool aborted;         /* inproc_comm_abort: every wait gives up */
	struct post *posts;   /* [size] */
	struct mail *mail;    /* [from * size + to] */
};

struct inproc_comm {
	struct group *group;
	uint32_t rank;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t registry_joined = PTHREAD_COND_INITIALIZER;
static struct group *registry;

void inproc_comm_id_new(uint8_t id[INPROC_COMM_ID_BYTES])
{
	static uint64_t counter;
	uint64_t n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
	uint64_t pid = (uint64_t)getpid();
	struct timespec now;

	/* Unique in the process by the counter; the pid and time only make
	 * ids of two processes unlikely to meet (they never do here). */
	clock_gettime(CLOCK_REALTIME, &now);
	memset(id, 0, INPROC_COMM_ID_BYTES);
	memcpy(id, "inproc", 6);
	memcpy(id + 8, &n, sizeof n);
	memcpy(id + 16, &pid, sizeof pid);
	memcpy(id + 24, &now, sizeof now);
}

static void group_free(struct group *g)
{
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->turn);
	free(g->taken);
	free(g->posts);
	free(g->mail);
	free(g);
}

static struct group *group_new(const uint8_t *id, uint32_t size)
{
	struct group *g = calloc(1, sizeof *g);

	if (!g)
		return NULL;
	g->taken = calloc(size, sizeof *g->taken);
	g->posts = calloc(size, sizeof *g->posts);
	g->mail = calloc((size_t)size * size, sizeof *g->mail);
	if (!g->taken || !g->posts || !g->mail) {
		free(g->taken);
		free(g->posts);
		free(g->mail);
		free(g);
		return NULL;
	}
	memcpy(g->id, id, INPROC_COMM_ID_BYTES);
	g->size = size;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->turn, NULL);
	return g;
}

static void registry_unlink(struct group *g)
{
	struct group **p;

	for (p = &registry; *p; p = &(*p)->next)
		if (*p == g) {
			*p = g->next;
			return;
		}
}

static struct group *registry_find(const uint8_t *id)
{
	struct group *g;

	for (g = registry; g; g = g->next)
		if (!memcmp(g->id, id, INPROC_COMM_ID_BYTES))
			return g;
	return NULL;
}

inproc_comm_status inproc_comm_join(const uint8_t id[INPROC_COMM_ID_BYTES],
				    uint32_t rank, uint32_t size,
				    unsigned timeout_ms, inproc_comm **out)
{
	struct inproc_comm *comm;
	struct group *g;
	struct timespec deadline;
	int rc = 0;

	*out = NULL;
	if (size == 0 || rank >= size)
		return INPROC_COMM_INVALID;
	comm = calloc(1, sizeof *comm);
	if (!comm)
		return INPROC_COMM_NO_MEMORY;
	if (timeout_ms) {
		clock_gettime(CLOCK_REALTIME, &deadline);
		deadline.tv_sec += timeout_ms / 1000;
		deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}

	pthread_mutex_lock(&registry_lock);
	g = registry_find(id);
	if (!g) {
		g = group_new(id, size);
		if (!g) {
			pthread_mutex_unlock(&registry_lock);
			free(comm);
			return INPROC_COMM_NO_MEMORY;
		}
		g->next = registry;
		registry = g;
	}
	if (g->size != size || g->taken[rank]) {
		pthread_mutex_unlock(&registry_lock);
		free(comm);
		return INPROC_COMM_INVALID;
	}
	g->taken[rank] = true;
	if (++g->joined == size) {
		g->complete = true;
		g->members = size;
		registry_unlink(g);
		pthread_cond_broadcast(&registry_joined);
	}
	while (!g->complete && rc != ETIMEDOUT)
		rc = timeout_ms ? pthread_cond_timedwait(&registry_joined,
							 &registry_lock,
							 &deadline)
				: pthread_cond_wait(&registry_joined,
						    &registry_lock);
	if (!g->complete) {
		/* Gone: the group forms without us, or goes if we were the
		 * last one waiting. */
		g->taken[rank] = false;
		if (--g->joined == 0) {
			registry_unlink(g);
			group_free(g);
		}
		pthread_mutex_unlock(&registry_lock);
		free(comm);
		return INPROC_COMM_TIMEOUT;
	}
	pthread_mutex_unlock(&registry_lock);
	comm->group = g;
	comm->rank = rank;
	*out = comm;
	return INPROC_COMM_OK;
}

uint32_t inproc_comm_waiting(const uint8_t id[INPROC_COMM_ID_BYTES])
{
	struct group *g;
	uint32_t n;

	pthread_mutex_lock(&registry_lock);
	g = registry_find(id);
	n = g ? g->joined : 0;
	pthread_mutex_unlock(&registry_lock);
	return n;
}

void inproc_comm_leave(inproc_comm *comm)
{
	struct group *g;
	bool last;

	if (!comm)
		return;
	g = comm->group;
	pthread_mutex_lock(&g->lock);
	last = --g->members == 0;
	pthread_mutex_unlock(&g->lock);
	if (last)
		group_free(g);
	free(comm);
}

uint32_t inproc_comm_rank(const inproc_comm *comm)
{
	return comm->rank;
}

uint32_t inproc_comm_size(const inproc_comm *comm)
{
	return comm->group->size;
}

size_t inproc_comm_dtype_size(inproc_comm_dtype dtype)
{
	switch (dtype) {
	case INPROC_COMM_F32:
	case INPROC_COMM_I32:
		return 4;
	case INPROC_COMM_F16:
	case INPROC_COMM_BF16:
		return 2;
	case INPROC_COMM_F64:
		return 8;
	}
	return 0;
}

const char *inproc_comm_status_text(inproc_comm_status status)
{
	switch (status) {
	case INPROC_COMM_OK:
		return "ok";
	case INPROC_COMM_INVALID:
		return "invalid argument (rank, size, dtype, op or root)";
	case INPROC_COMM_NO_MEMORY:
		return "out of host memory";
	case INPROC_COMM_MISMATCH:
		return "ranks called different collectives";
	case INPROC_COMM_TIMEOUT:
		return "the other ranks did not join in time";
	case INPROC_COMM_ABORTED:
		return "the communicator was aborted";
	}
	return "unknown status";
}

/* False when |abortable| and the group was aborted (before or while
 * waiting). A barrier every rank is sure to reach (the second of a
 * collective: all passed the first) is not abortable, so no rank leaves
 * while another still reads its post. */
static bool barrier(struct group *g, bool abortable)
{
	uint64_t generation;
	bool gone;

	pthread_mutex_lock(&g->lock);
	generation = g->generation;
	gone = abortable && g->aborted;
	if (gone) {
		/* arrives nowhere: the group is over */
	} else if (++g->arrived == g->size) {
		g->arrived = 0;
		g->generation++;
		pthread_cond_broadcast(&g->turn);
	} else {
		while (generation == g->generation && !gone) {
			pthread_cond_wait(&g->turn, &g->lock);
			gone = abortable && g->aborted &&
			       generation == g->generation;
		}
	}
	pthread_mutex_unlock(&g->lock);
	return !gone;
}

void inproc_comm_abort(inproc_comm *comm)
{
	struct group *g = comm->group;

	pthread_mutex_lock(&g->lock);
	g->aborted = true;
	pthread_cond_broadcast(&g->turn);
	pthread_mutex_unlock(&g->lock);
}

int inproc_comm_aborted(inproc_comm *comm)
{
	struct group *g = comm->group;
	bool aborted;

	pthread_mutex_lock(&g->lock);
	aborted = g->aborted;
	pthread_mutex_unlock(&g->lock);
	return aborted;
}

/* Elements go through double: exact for f32, f16, bf16 and i32, so a
 * reduction rounds once, at the store. */
static double load(inproc_comm_dtype dtype, const void *base, size_t i)
{
	const char *p = base;
	float f;
	double d;
	int32_t n;
	uint16_t h;

	switch (dtype) {
	case INPROC_COMM_F32:
		memcpy(&f, p + i * 4, 4);
		return f;
	case INPROC_COMM_F64:
		memcpy(&d, p + i * 8, 8);
		return d;
	case INPROC_COMM_I32:
		memcpy(&n, p + i * 4, 4);
		return n;
	case INPROC_COMM_F16:
		memcpy(&h, p + i * 2, 2);
		return f16_to_f32(h);
	case INPROC_COMM_BF16:
		memcpy(&h, p + i * 2, 2);
		return bf16_to_f32(h);
	}
	return 0;
}

static void store(inproc_comm_dtype dtype, void *base, size_t i, double v)
{
	char *p = base;
	float f = (float)v;
	int32_t n;
	uint16_t h;

	switch (dtype) {
	case INPROC_COMM_F32:
		memcpy(p + i * 4, &f, 4);
		break;
	case INPROC_COMM_F64:
		memcpy(p + i * 8, &v, 8);
		break;
	case INPROC_COMM_I32:
		/* Wraps like the int32 sums of NCCL and MPI. */
		n = (int32_t)(uint32_t)(int64_t)v;
		memcpy(p + i * 4, &n, 4);
		break;
	case INPROC_COMM_F16:
		h = f32_to_f16(f);
		memcpy(p + i * 2, &h, 2);
		break;
	case INPROC_COMM_BF16:
		h = f32_to_bf16(f);
		memcpy(p + i * 2, &h, 2);
		break;
	}
}

static void reduce(const struct group *g, size_t first, size_t count,
		   inproc_comm_dtype dtype, inproc_comm_op op, void *out)
{
	size_t i;
	uint32_t r;

	for (i = 0; i < count; i++) {
		double acc = load(dtype, g->posts[0].src, first + i);

		for (r = 1; r < g->size; r++) {
			double v = load(dtype, g->posts[r].src, first + i);

			if (op == INPROC_COMM_SUM)
				acc += v;
			else if (v > acc || v != v)
				acc = v; /* MAX keeps a NaN, as NCCL does */
		}
		store(dtype, out, i, acc);
	}
}

static bool post_valid(const struct post *p, uint32_t size)
{
	if (!inproc_comm_dtype_size(p->dtype))
		return false;
	if ((p->kind == CALL_ALL_REDUCE || p->kind == CALL_REDUCE_SCATTER) &&
	    p->op != INPROC_COMM_SUM && p->op != INPROC_COMM_MAX)
		return false;
	return p->kind != CALL_BROADCAST || p->root < size;
}

static bool posts_agree(const struct post *a, const struct post *b)
{
	return a->kind == b->kind && a->count == b->count &&
	       a->dtype == b->dtype && a->op == b->op && a->root == b->root;
}

/* The checks every rank makes on the same posts, so all agree. */
static inproc_comm_status posts_verdict(const struct group *g)
{
	uint32_t r;

	for (r = 0; r < g->size; r++)
		if (!post_valid(&g->posts[r], g->size))
			return INPROC_COMM_INVALID;
	for (r = 1; r < g->size; r++)
		if (!posts_agree(&g->posts[0], &g->posts[r]))
			return INPROC_COMM_MISMATCH;
	return INPROC_COMM_OK;
}

static inproc_comm_status run(inproc_comm *comm, struct post mine, void *dst)
{
	struct group *g = comm->group;
	size_t elem = inproc_comm_dtype_size(mine.dtype);
	size_t out_elems = mine.kind == CALL_ALL_GATHER
				   ? mine.count * g->size
				   : mine.count;
	size_t bytes = out_elems * elem;
	inproc_comm_status status;
	void *result;
	uint32_t r;

	if (mine.kind == CALL_BROADCAST && mine.root != comm->rank)
		mine.src = NULL;
	/* Allocated before the barrier: a rank short of memory still takes
	 * part in both barriers, so the others do not wait for ever. */
	result = malloc(bytes ? bytes : 1);
	g->posts[comm->rank] = mine;
	if (!barrier(g, true)) {
		free(result);
		return INPROC_COMM_ABORTED;
	}
	status = posts_verdict(g);
	if (status == INPROC_COMM_OK && !result)
		status = INPROC_COMM_NO_MEMORY;
	if (status == INPROC_COMM_OK) {
		switch (mine.kind) {
		case CALL_ALL_REDUCE:
			reduce(g, 0, mine.count, mine.dtype, mine.op, result);
			break;
		case CALL_REDUCE_SCATTER:
			reduce(g, (size_t)comm->rank * mine.count, mine.count,
			       mine.dtype, mine.op, result);
			break;
		case CALL_BROADCAST:
			memcpy(result, g->posts[mine.root].src, bytes);
			break;
		case CALL_ALL_GATHER:
			for (r = 0; r < g->size; r++)
				memcpy((char *)result + r * mine.count * elem,
				       g->posts[r].src, mine.count * elem);
			break;
		}
	}
	barrier(g, false);
	if (status == INPROC_COMM_OK && bytes)
		memcpy(dst, result, bytes);
	free(result);
	return status;
}

inproc_comm_status inproc_comm_all_reduce(inproc_comm *comm, const void *src,
					  void *dst, size_t count,
					  inproc_comm_dtype dtype,
					  inproc_comm_op op)
{
	struct post p = {CALL_ALL_REDUCE, count, dtype, op, 0, src};

	return run(comm, p, dst);
}

inproc_comm_status inproc_comm_broadcast(inproc_comm *comm, const void *src,
					 void *dst, size_t count,
					 inproc_comm_dtype dtype, uint32_t root)
{
	struct post p = {CALL_BROADCAST, count, dtype, INPROC_COMM_SUM, root,
			 src};

	return run(comm, p, dst);
}

inproc_comm_status inproc_comm_all_gather(inproc_comm *comm, const void *src,
					  void *dst, size_t count,
					  inproc_comm_dtype dtype)
{
	struct post p = {CALL_ALL_GATHER, count, dtype, INPROC_COMM_SUM, 0, src};

	return run(comm, p, dst);
}

inproc_comm_status inproc_comm_reduce_scatter(inproc_comm *comm,
					      const void *src, void *dst,
					      size_t count,
					      inproc_comm_dtype dtype,
					      inproc_comm_op op)
{
	struct post p = {CALL_REDUCE_SCATTER, count, dtype, op, 0, src};

	return run(comm, p, dst);
}

/* The mailbox from rank |from| to rank |to|, or NULL (after checking
 * the dtype and peer) for an invalid call; |*bytes| the message's size. */
static struct mail *mailbox(inproc_comm *comm, uint32_t from, uint32_t to,
			    size_t count, inproc_comm_dtype dtype, size_t *bytes)
{
	struct group *g = comm->group;
	size_t elem = inproc_comm_dtype_size(dtype);

	if (!elem || from >= g->size || to >= g->size)
		return NULL;
	*bytes = count * elem;
	return &g->mail[(size_t)from * g->size + to];
}

inproc_comm_status inproc_comm_send(inproc_comm *comm, const void *src,
				    size_t count, inproc_comm_dtype dtype,
				    uint32_t peer)
{
	struct group *g = comm->group;
	size_t bytes;
	struct mail *m = mailbox(comm, comm->rank, peer, count, dtype, &bytes);
	bool mismatch;

	if (!m)
		return INPROC_COMM_INVALID;
	pthread_mutex_lock(&g->lock);
	while (m->posted && !g->aborted) /* one message at a time a pair */
		pthread_cond_wait(&g->turn, &g->lock);
	if (g->aborted) {
		pthread_mutex_unlock(&g->lock);
		return INPROC_COMM_ABORTED;
	}
	*m = (struct mail){.src = src, .bytes = bytes, .posted = true};
	pthread_cond_broadcast(&g->turn);
	while (!m->taken && !g->aborted)
		pthread_cond_wait(&g->turn, &g->lock);
	if (!m->taken) {
		/* Aborted: the message is withdrawn, src no longer read. */
		*m = (struct mail){0};
		pthread_mutex_unlock(&g->lock);
		return INPROC_COMM_ABORTED;
	}
	mismatch = m->mismatch;
	*m = (struct mail){0};
	pthread_cond_broadcast(&g->turn);
	pthread_mutex_unlock(&g->lock);
	return mismatch ? INPROC_COMM_MISMATCH : INPROC_COMM_OK;
}

inproc_comm_status inproc_comm_recv(inproc_comm *comm, void *dst,
				    size_t count, inproc_comm_dtype dtype,
				    uint32_t peer)
{
	struct group *g = comm->group;
	size_t bytes;
	struct mail *m = mailbox(comm, peer, comm->rank, count, dtype, &bytes);
	bool mismatch;

	if (!m)
		return INPROC_COMM_INVALID;
	pthread_mutex_lock(&g->lock);
	while ((!m->posted || m->taken) && !g->aborted)
		pthread_cond_wait(&g->turn, &g->lock);
	if (g->aborted) {
		pthread_mutex_unlock(&g->lock);
		return INPROC_COMM_ABORTED;
	}
	mismatch = m->bytes != bytes;
	if (!mismatch && bytes && m->src != dst)
		memcpy(dst, m->src, bytes);
	m->mismatch = mismatch;
	m->taken = true;
	pthread_cond_broadcast(&g->turn);
	pthread_mutex_unlock(&g->lock);
	return mismatch ? INPROC_COMM_MISMATCH : INPROC_COMM_OK;
}

/* Every rank learns every rank's colour and key (an all_gather) and a
 * base id from rank 0 (a broadcast); the ranks of one colour then join
 * the group named by the base id with the colour written into it, each
 * at its place among that colour's keys. */
inproc_comm_status inproc_comm_split(inproc_comm *comm, int32_t color,
				     int32_t key, unsigned timeout_ms,
				     inproc_comm **out)
{
	uint32_t size = comm->group->size, rank = 0, members = 0;
	int32_t mine[2] = {color < 0 ? -1 : color, key}, *all;
	uint8_t id[INPROC_COMM_ID_BYTES];
	inproc_comm_status s;

	*out = NULL;
	if (comm->rank == 0)
		inproc_comm_id_new(id);
	all = malloc(2 * sizeof *all * size);
	/* Both collectives still run without it, so nobody waits. */
	s = inproc_comm_all_gather(comm, mine, all ? (void *)all : (void *)id,
				   all ? 2 : 0, INPROC_COMM_I32);
	if (s == INPROC_COMM_OK)
		s = inproc_comm_broadcast(comm, id, id,
					  INPROC_COMM_ID_BYTES / 4,
					  INPROC_COMM_I32, 0);
	if (s == INPROC_COMM_OK && !all)
		s = INPROC_COMM_NO_MEMORY;
	if (s != INPROC_COMM_OK || mine[0] < 0) {
		free(all);
		return s;
	}
	for (uint32_t r = 0; r < size; r++) {
		if (all[2 * r] != mine[0])
			continue;
		members++;
		if (all[2 * r + 1] < key ||
		    (all[2 * r + 1] == key && r < comm->rank))
			rank++;
	}
	free(all);
	/* The tail of an id is zeros (inproc_comm_id_new): the colour goes
	 * there, one group per colour. */
	memcpy(id + INPROC_COMM_ID_BYTES - sizeof mine[0], &mine[0],
	       sizeof mine[0]);
	return inproc_comm_join(id, rank, members, timeout_ms, out);
}
