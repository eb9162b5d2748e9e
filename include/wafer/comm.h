/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * comm.h: several devices and several processes. Peer copies between
 * clients of one runtime, and collectives (all-reduce, broadcast,
 * all-gather, reduce-scatter) through the engine the backend ships with:
 * NCCL on cuda, MPI on cpu. A collective is queued on the client's queue
 * like any operation and ordered with its kernels:
 *
 *   wafer_comm_id id;                       // rank 0 makes it ...
 *   if (rank == 0) wafer_comm_id_create(client, &id);
 *   MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD); // ... all get it
 *   wafer_comm_options o = {sizeof o, rank, size, &id, NULL};
 *   wafer_comm *comm;
 *   wafer_comm_open(client, &o, &comm);
 *   wafer_comm_all_reduce(comm, grads, grads, n, WAFER_DTYPE_F32,
 *                         WAFER_REDUCE_SUM);
 *
 * Plugins without the comm entries of the plugin ABI (1.4) report
 * WAFER_ERROR_NOT_SUPPORTED, "collectives not supported by <plugin>".
 * See wafer-comm(7). */
#ifndef WAFER_COMM_H
#define WAFER_COMM_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/wafer.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===
 * Peer copies
 *===----------------------------------------------------------------------===*/

/* A new handle on |dst_client| holding the bytes of |src| (a handle of
 * |src_client|; both clients of one runtime, possibly one client). Ordered
 * on both clients: after the work already submitted on either, before
 * what is submitted later on either (so |src| may be overwritten and
 * released at once). Device to device where the plugin can (CUDA:
 * cuMemcpyPeerAsync), else staged through host memory, which waits for
 * the source. Errors: WAFER_ERROR_INVALID_ARGUMENT (clients of two
 * runtimes), WAFER_ERROR_INVALID_HANDLE, WAFER_ERROR_OUT_OF_MEMORY on
 * |dst_client|. */
WAFER_API wafer_status wafer_copy_peer(wafer_client *src_client,
				       wafer_handle src,
				       wafer_client *dst_client,
				       wafer_handle *out_dst);

/*===----------------------------------------------------------------------===
 * Communicators
 *===----------------------------------------------------------------------===*/

typedef struct wafer_comm wafer_comm;

/* A new communicator id, on the rank that makes it (any client of the
 * backend). Hand its bytes to every rank. All zeros where the backend's
 * transport needs none (MPI). WAFER_ERROR_NOT_SUPPORTED without
 * collectives. */
WAFER_API wafer_status wafer_comm_id_create(wafer_client *client,
					    wafer_comm_id *out_id);

typedef struct wafer_comm_options {
	size_t struct_size;
	uint32_t rank;          /* this member, 0 .. size-1 */
	uint32_t size;          /* members in all */
	const wafer_comm_id *id; /* NULL: all zeros */
	/* NULL, or the caller's communicator to run on, never freed by
	 * wafer: on cpu the address of an MPI_Comm (an MPI_Comm * — an
	 * integer in some MPIs), on cuda the ncclComm_t itself (already a
	 * pointer). wafer-mpi(7), wafer-cuda(7). */
	void *native;
} wafer_comm_options;

/* Joins a communicator on |client|'s device. Blocks until all |size|
 * ranks joined. The communicator belongs to the client: close it before
 * the client. Errors: WAFER_ERROR_NOT_SUPPORTED, "collectives not
 * supported by <plugin>"; WAFER_ERROR_INVALID_ARGUMENT for rank >= size,
 * size 0, or a rank/size the transport sees otherwise. */
WAFER_API wafer_status wafer_comm_open(wafer_client *client,
				       const wafer_comm_options *options,
				       wafer_comm **out_comm);

/* The environment variables wafer-launch(1) gives each process it
 * starts: its rank, the number of ranks, and the file through which
 * rank 0 hands the others the communicator id. */
#define WAFER_LAUNCH_RANK_ENV "WAFER_RANK"
#define WAFER_LAUNCH_SIZE_ENV "WAFER_SIZE"
#define WAFER_LAUNCH_ID_FILE_ENV "WAFER_COMM_ID_FILE"

/* For a process started by wafer-launch(1): fills |options| (rank,
 * size, id pointing at |out_id|) for wafer_comm_open. Rank 0 makes the
 * id on |client| and writes it to the launcher's file; the other ranks
 * wait for it there (up to [comm] timeout). Errors:
 * WAFER_ERROR_NOT_FOUND when the environment has no launcher's
 * variables (naming them), WAFER_ERROR_INVALID_ARGUMENT for values that
 * do not parse, WAFER_ERROR_IO when the file cannot be written or did
 * not come in time. See wafer_comm_launched(3). */
WAFER_API wafer_status wafer_comm_launched(wafer_client *client,
					   wafer_comm_options *options,
					   wafer_comm_id *out_id);

/* One communicator over |count| clients of this process (one per device,
 * clients[i] becomes rank i), opened together. On failure none is open.
 * Collectives on them must then be issued from different threads, or on
 * clients with the mpsc channel, as each may wait for the others. */
WAFER_API wafer_status wafer_comm_open_group(wafer_client *const *clients,
					     size_t count,
					     wafer_comm **out_comms);

/* Waits for the collectives issued and frees the communicator. NULL is a
 * no-op. */
WAFER_API wafer_status wafer_comm_close(wafer_comm *comm);

WAFER_API uint32_t wafer_comm_rank(const wafer_comm *comm);
WAFER_API uint32_t wafer_comm_size(const wafer_comm *comm);

/* wafer_comm_split's colour for a rank that joins no new communicator. */
#define WAFER_COMM_SPLIT_NONE (-1)

/* Splits |comm| into sub-communicators (tensor x data parallel
 * layouts): every rank of |comm| calls it, and the ranks that give the
 * same |color| (0 or more) form one new communicator on the same
 * client, ranked by |key|, ties by their rank in |comm|. A rank that
 * gives WAFER_COMM_SPLIT_NONE joins none: |*out_comm| is NULL. Waits for
 * the collectives issued on |comm|'s client, then blocks until every
 * rank of |comm| called it (ncclCommSplit, MPI_Comm_split): ranks of one
 * process call it from their own threads. Close the new communicator
 * like any other; |comm| stays open. Errors:
 * WAFER_ERROR_INVALID_ARGUMENT for a colour below -1;
 * WAFER_ERROR_NOT_SUPPORTED where the plugin cannot split (ABI 1.7
 * entry comm_split; NCCL before 2.18). See wafer_comm_split(3). */
WAFER_API wafer_status wafer_comm_split(wafer_comm *comm, int32_t color,
					int32_t key, wafer_comm **out_comm);

/* The collectives. |src| and |dst| are handles of the communicator's
 * client; counts are elements of |dtype| (f32, f16 and bf16 on every
 * backend with collectives). Every rank issues the same collectives in
 * the same order. They return once queued (wafer_sync, wafer_read wait);
 * a transport failure is returned then or by the next sync.
 *
 * all_reduce: dst[i] = op over ranks of src[i]; src == dst is in place. */
WAFER_API wafer_status wafer_comm_all_reduce(wafer_comm *comm,
					     wafer_handle src, wafer_handle dst,
					     size_t count, wafer_dtype dtype,
					     wafer_reduce_op op);
/* broadcast: dst = root's src (src is read on root only; other ranks may
 * pass a null handle); src == dst is in place. */
WAFER_API wafer_status wafer_comm_broadcast(wafer_comm *comm,
					    wafer_handle src, wafer_handle dst,
					    size_t count, wafer_dtype dtype,
					    uint32_t root);
/* all_gather: dst (count * size elements) = every rank's src (count), in
 * rank order. */
WAFER_API wafer_status wafer_comm_all_gather(wafer_comm *comm,
					     wafer_handle src, wafer_handle dst,
					     size_t count, wafer_dtype dtype);
/* reduce_scatter: dst (count) = op over ranks of src's (count * size)
 * rank-th block. */
WAFER_API wafer_status wafer_comm_reduce_scatter(wafer_comm *comm,
						 wafer_handle src,
						 wafer_handle dst,
						 size_t count,
						 wafer_dtype dtype,
						 wafer_reduce_op op);

/* Point to point, between two ranks (pipeline parallelism): send
 * queues |count| elements of |src| for rank |peer|, which receives them
 * in |dst| with a recv naming this rank, of the same count and dtype.
 * Only the two ranks take part; messages of one pair arrive in the order
 * sent. A send may hold its queue until the peer's recv runs (NCCL, a
 * large MPI_Send): of two ranks that exchange, one sends first and the
 * other receives first. Errors: WAFER_ERROR_INVALID_ARGUMENT for a peer
 * that is this rank or past the size; WAFER_ERROR_NOT_SUPPORTED where
 * the plugin predates them (ABI 1.6). See wafer_comm_send(3). */
WAFER_API wafer_status wafer_comm_send(wafer_comm *comm, wafer_handle src,
				       size_t count, wafer_dtype dtype,
				       uint32_t peer);
WAFER_API wafer_status wafer_comm_recv(wafer_comm *comm, wafer_handle dst,
				       size_t count, wafer_dtype dtype,
				       uint32_t peer);

/* Grouping: the collectives (and sends and receives) issued on |comm|'s
 * client between begin and end go to the transport together, as one
 * launch where it can (NCCL: ncclGroupStart/ncclGroupEnd; a bucketed
 * gradient all-reduce, or a send and a recv both ranks issue at once).
 * Pairs nest. Issue only collectives in between: other work queued
 * then may run before them, and a sync or read waits for nothing of
 * the group until its end. Where the transport has no groups (MPI, the
 * in-process engine) both do nothing. Errors:
 * WAFER_ERROR_INVALID_ARGUMENT for a NULL or closed |comm|, or an end
 * without its begin. See wafer_comm_group_begin(3). */
WAFER_API wafer_status wafer_comm_group_begin(wafer_comm *comm);
WAFER_API wafer_status wafer_comm_group_end(wafer_comm *comm);

#ifdef __cplusplus
}
#endif

#endif /* WAFER_COMM_H */
