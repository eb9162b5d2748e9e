/* wafer — SPDX-License-Identifier: MIT
 *
 * inproc_comm.h: an in-process collective engine: the cpu plugin's
 * communicators when it lists several devices (comm.c), and the
 * stand-ins' (the test plugin t/plugins/collective.c, the stand-in NCCL
 * t/standins/fakenccl.c). Ranks
 * are threads of one process; they meet by an opaque id of
 * INPROC_COMM_ID_BYTES bytes (a registry keyed by the id: the first rank
 * to join creates the group, the last one to arrive completes it, and
 * inproc_comm_join blocks until all |size| ranks joined, like
 * ncclCommInitRank).
 *
 * The collectives work on host memory and are blocking: every rank of the
 * group calls the same collective in the same order, each call waits for
 * the others (a barrier), so every rank sees the others' buffers. The
 * result is computed aside and written once every rank has read its
 * inputs, so src and dst may be the same buffer (or overlap) on any rank.
 * A call whose kind, count, dtype, op or root differs from rank 0's fails
 * on every rank with INPROC_COMM_MISMATCH instead of reading out of
 * bounds.
 *
 * Not thread-safe per rank: one rank is used by one thread at a time. */
#ifndef WAFER_PLUGINS_CPU_INPROC_COMM_H
#define WAFER_PLUGINS_CPU_INPROC_COMM_H

#include <stddef.h>
#include <stdint.h>

#define INPROC_COMM_ID_BYTES 128

typedef enum inproc_comm_status {
	INPROC_COMM_OK = 0,
	INPROC_COMM_INVALID,   /* rank >= size, size 0, rank taken, size
				* differs from the group's, bad dtype/op/root */
	INPROC_COMM_NO_MEMORY,
	INPROC_COMM_MISMATCH,  /* ranks called different collectives */
	INPROC_COMM_TIMEOUT,   /* join: the others did not come in time */
	INPROC_COMM_ABORTED,   /* the group was aborted (inproc_comm_abort) */
} inproc_comm_status;

typedef enum inproc_comm_dtype {
	INPROC_COMM_F32,
	INPROC_COMM_F16,
	INPROC_COMM_BF16,
	INPROC_COMM_F64,
	INPROC_COMM_I32,
} inproc_comm_dtype;

typedef enum inproc_comm_op {
	INPROC_COMM_SUM,
	INPROC_COMM_MAX,
} inproc_comm_op;

/* One rank's membership of a group. */
typedef struct inproc_comm inproc_comm;

/* Fills |id| with bytes no other call in this process returns. */
void inproc_comm_id_new(uint8_t id[INPROC_COMM_ID_BYTES]);

/* Joins group |id| as |rank| of |size|; blocks until all |size| ranks
 * joined. |timeout_ms| 0 waits for ever; otherwise a join still waiting
 * after that long leaves the group (which other ranks may still complete
 * with a new member of that rank) and returns INPROC_COMM_TIMEOUT. The
 * id may be reused once a group is complete: the next joins make a new
 * group. */
inproc_comm_status inproc_comm_join(const uint8_t id[INPROC_COMM_ID_BYTES],
				    uint32_t rank, uint32_t size,
				    unsigned timeout_ms, inproc_comm **out);
/* How many ranks wait in the forming group |id| (0 when none forms):
 * lets a test know a rank has joined before it joins another. */
uint32_t inproc_comm_waiting(const uint8_t id[INPROC_COMM_ID_BYTES]);

/* Leaves the group (no collective of it may be running on this rank);
 * the group goes with its last rank. NULL is a no-op. */
void inproc_comm_leave(inproc_comm *comm);

/* Splits the group: every rank calls it; ranks of one |color| (0 or
 * more) join a new group, ranked by |key|, ties by rank here. |color|
 * below 0 joins none (|*out| NULL, INPROC_COMM_OK). Blocks until every
 * rank of the new group joined, waiting up to |timeout_ms| (0: for
 * ever), as inproc_comm_join. */
inproc_comm_status inproc_comm_split(inproc_comm *comm, int32_t color,
				     int32_t key, unsigned timeout_ms,
				     inproc_comm **out);

/* Aborts the whole group, as a transport does when a rank gives up:
 * every call of any rank waiting in it returns INPROC_COMM_ABORTED at
 * once, and so does every later one. Any thread, any time. */
void inproc_comm_abort(inproc_comm *comm);
/* Whether the group was aborted (by any rank). */
int inproc_comm_aborted(inproc_comm *comm);

uint32_t inproc_comm_rank(const inproc_comm *comm);
uint32_t inproc_comm_size(const inproc_comm *comm);

/* Bytes of one element of |dtype|, 0 for an unknown one. */
size_t inproc_comm_dtype_size(inproc_comm_dtype dtype);
const char *inproc_comm_status_text(inproc_comm_status status);

/* dst[i] = op over ranks of src[i]; count elements on each rank. */
inproc_comm_status inproc_comm_all_reduce(inproc_comm *comm, const void *src,
					  void *dst, size_t count,
					  inproc_comm_dtype dtype,
					  inproc_comm_op op);
/* dst = root's src (src read on root only, may be NULL elsewhere). */
inproc_comm_status inproc_comm_broadcast(inproc_comm *comm, const void *src,
					 void *dst, size_t count,
					 inproc_comm_dtype dtype, uint32_t root);
/* dst[r * count + i] = rank r's src[i]: dst holds count * size. */
inproc_comm_status inproc_comm_all_gather(inproc_comm *comm, const void *src,
					  void *dst, size_t count,
					  inproc_comm_dtype dtype);
/* dst[i] = op over ranks of src[rank * count + i]: src holds
 * count * size. */
inproc_comm_status inproc_comm_reduce_scatter(inproc_comm *comm,
					      const void *src, void *dst,
					      size_t count,
					      inproc_comm_dtype dtype,
					      inproc_comm_op op);

/* Point to point: |count| elements from this rank's |src| to |peer|'s
 * |dst|. Each blocks until the other side came (a send until its data
 * was copied), so two ranks that both send first wait for ever: order
 * them. Messages of one pair arrive in the order sent. A count or dtype
 * size that differs from the sender's fails both with
 * INPROC_COMM_MISMATCH, copying nothing; a peer past the size is
 * INPROC_COMM_INVALID. A rank may send to itself only from another
 * thread. */
inproc_comm_status inproc_comm_send(inproc_comm *comm, const void *src,
				    size_t count, inproc_comm_dtype dtype,
				    uint32_t peer);
inproc_comm_status inproc_comm_recv(inproc_comm *comm, void *dst,
				    size_t count, inproc_comm_dtype dtype,
				    uint32_t peer);

#endif
