/* wafer — SPDX-License-Identifier: MIT
 *
 * comm_mpi.c: the cpu plugin's MPI module, cpu-mpi.so — the collectives
 * of wafer-comm(7) on MPI, one rank per process (see comm_mpi.h for why
 * it is a module of its own, and wafer-mpi(7) for the user's side).
 *
 * MPI is process-wide, so is this module's state: the plugin instances
 * of every runtime in the process share one count of references. The
 * first takes MPI as it finds it — initialised by the application, which
 * then keeps it and finalises it, or not yet, and then this module calls
 * MPI_Init_thread(MPI_THREAD_MULTIPLE) and the last release calls
 * MPI_Finalize. The collectives are issued from whichever thread runs
 * the client's commands (the caller's, or a worker of the mpsc channel),
 * hence the thread level.
 *
 * Every element type of wafer has an MPI datatype and MPI_SUM and
 * MPI_MAX, except f16 and bf16, which MPI does not know: they travel as
 * 16-bit integers and reduce through operators of our own (in f32,
 * rounded back once per pair, as a GPU library does). */
#include "build-config.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include <wafer/plugin.h>
#include <wafer/plugin_util.h>

#include "plugins/cpu/comm_mpi.h"
#include "plugins/cpu/half.h"

struct mpi_comm {
	MPI_Comm comm;
	int rank, size;
	const struct wafer_host_services *host;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned references;
static int initialised_here;
/* f16 and bf16 reductions, [0] f16, [1] bf16; by wafer_reduce_op. */
static MPI_Op half_ops[2][2];

/*===----------------------------------------------------------------------===
 * f16 and bf16 reductions
 *===----------------------------------------------------------------------===*/

#define HALF_REDUCTION(name, to_f32, from_f32, combine)                        \
	static void name(void *in, void *inout, int *len, MPI_Datatype *type)  \
	{                                                                      \
		const uint16_t *a = in;                                        \
		uint16_t *b = inout;                                           \
		(void)type;                                                    \
		for (int i = 0; i < *len; i++)                                 \
			b[i] = combine(a[i], b[i], to_f32, from_f32);          \
	}

#define HALF_SUM(x, y, to_f32, from_f32) from_f32(to_f32(x) + to_f32(y))
/* The larger operand as it is (no rounding); NaN wins, as in the cpu
 * plugin's reductions. */
#define HALF_MAX(x, y, to_f32, from_f32)                                            \
	(to_f32(x) != to_f32(x) || to_f32(x) > to_f32(y) ? (x) : (y))

HALF_REDUCTION(f16_sum, f16_to_f32, f32_to_f16, HALF_SUM)
HALF_REDUCTION(f16_max, f16_to_f32, f32_to_f16, HALF_MAX)
HALF_REDUCTION(bf16_sum, bf16_to_f32, f32_to_bf16, HALF_SUM)
HALF_REDUCTION(bf16_max, bf16_to_f32, f32_to_bf16, HALF_MAX)

static void create_half_ops(void)
{
	MPI_Op_create(f16_sum, 1, &half_ops[0][WAFER_REDUCE_SUM]);
	MPI_Op_create(f16_max, 1, &half_ops[0][WAFER_REDUCE_MAX]);
	MPI_Op_create(bf16_sum, 1, &half_ops[1][WAFER_REDUCE_SUM]);
	MPI_Op_create(bf16_max, 1, &half_ops[1][WAFER_REDUCE_MAX]);
}

static void free_half_ops(void)
{
	for (int t = 0; t < 2; t++)
		for (int o = 0; o < 2; o++)
			MPI_Op_free(&half_ops[t][o]);
}

/* MPI's datatype and operator for |dtype| and |op|; 0 when MPI has none
 * (a dtype of a later ABI). */
static int mpi_types(wafer_dtype dtype, wafer_reduce_op op,
		     MPI_Datatype *out_type, MPI_Op *out_op)
{
	*out_op = op == WAFER_REDUCE_MAX ? MPI_MAX : MPI_SUM;
	switch (dtype) {
	case WAFER_DTYPE_F32:
		*out_type = MPI_FLOAT;
		return 1;
	case WAFER_DTYPE_F64:
		*out_type = MPI_DOUBLE;
		return 1;
	case WAFER_DTYPE_I32:
		*out_type = MPI_INT32_T;
		return 1;
	case WAFER_DTYPE_I64:
		*out_type = MPI_INT64_T;
		return 1;
	case WAFER_DTYPE_U8:
		*out_type = MPI_UINT8_T;
		return 1;
	case WAFER_DTYPE_F16:
	case WAFER_DTYPE_BF16:
		*out_type = MPI_UINT16_T;
		*out_op = half_ops[dtype == WAFER_DTYPE_BF16][op == WAFER_REDUCE_MAX];
		return 1;
	default:
		return 0;
	}
}

/*===----------------------------------------------------------------------===
 * MPI itself
 *===----------------------------------------------------------------------===*/

static const char *thread_level_name(int level)
{
	switch (level) {
	case MPI_THREAD_SINGLE:
		return "MPI_THREAD_SINGLE";
	case MPI_THREAD_FUNNELED:
		return "MPI_THREAD_FUNNELED";
	case MPI_THREAD_SERIALIZED:
		return "MPI_THREAD_SERIALIZED";
	default:
		return "MPI_THREAD_MULTIPLE";
	}
}

/* The first reference starts what the module needs; see the top. */
static wafer_status start(const struct wafer_host_services *host)
{
	int initialised, finalised, level;

	MPI_Initialized(&initialised);
	MPI_Finalized(&finalised);
	if (finalised) {
		host->set_error("cpu: MPI was finalised already in this "
				"process, and cannot start twice: keep MPI "
				"(or the wafer runtime that started it) "
				"until the last communicator");
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	if (!initialised) {
		if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &level) !=
		    MPI_SUCCESS) {
			host->set_error("cpu: MPI_Init_thread failed");
			return WAFER_ERROR_DEVICE;
		}
		initialised_here = 1;
		host->log(host, WAFER_LOG_DEBUG,
			  "cpu: MPI initialised by wafer (%s)",
			  thread_level_name(level));
	} else {
		MPI_Query_thread(&level);
	}
	if (level < MPI_THREAD_MULTIPLE)
		host->log(host, WAFER_LOG_WARN,
			  "cpu: MPI runs at %s: wafer issues collectives from "
			  "the thread that runs the client's commands, so no "
			  "other thread may call MPI meanwhile (initialise "
			  "MPI with MPI_THREAD_MULTIPLE to lift this)",
			  thread_level_name(level));
	create_half_ops();
	return WAFER_OK;
}

static wafer_status mpi_acquire(const struct wafer_host_services *host)
{
	wafer_status status = WAFER_OK;

	pthread_mutex_lock(&lock);
	if (references == 0)
		status = start(host);
	if (status == WAFER_OK)
		references++;
	pthread_mutex_unlock(&lock);
	return status;
}

static void mpi_release(const struct wafer_host_services *host)
{
	int finalised;

	pthread_mutex_lock(&lock);
	if (--references == 0) {
		MPI_Finalized(&finalised);
		if (finalised) {
			/* The application finalised MPI before closing
			 * wafer: MPI freed everything itself. */
			host->log(host, WAFER_LOG_DEBUG,
				  "cpu: MPI was finalised before the plugin's "
				  "shutdown");
		} else {
			free_half_ops();
			if (initialised_here) {
				MPI_Finalize();
				host->log(host, WAFER_LOG_DEBUG,
					  "cpu: MPI finalised by wafer");
			}
		}
		initialised_here = 0;
	}
	pthread_mutex_unlock(&lock);
}

/* "MPI_Allreduce: MPI_ERR_TRUNCATE: message truncated" */
static wafer_status mpi_failed(const struct wafer_host_services *host,
			       const char *call, int code)
{
	char text[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
		len = 0;
	text[len] = '\0';
	host->set_error("cpu: %s failed: %s (MPI error %d)", call,
			len ? text : "unknown error", code);
	return WAFER_ERROR_DEVICE;
}

/*===----------------------------------------------------------------------===
 * Communicators
 *===----------------------------------------------------------------------===*/

static wafer_status mpi_open(const struct wafer_host_services *host,
			     uint32_t rank, uint32_t size, void *native,
			     void **out_comm)
{
	MPI_Comm base = native ? *(MPI_Comm *)native : MPI_COMM_WORLD;
	struct mpi_comm *c;
	int mpi_rank, mpi_size, code;

	*out_comm = NULL;
	/* Before anything collective: several ranks of one process
	 * (wafer_comm_open_group) all land here, and only one of them can
	 * be MPI's rank. */
	if (MPI_Comm_rank(base, &mpi_rank) != MPI_SUCCESS ||
	    MPI_Comm_size(base, &mpi_size) != MPI_SUCCESS) {
		host->set_error("cpu: comm_open: the MPI communicator %p is "
				"not valid",
				native);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if ((uint32_t)mpi_rank != rank || (uint32_t)mpi_size != size) {
		host->set_error("cpu: comm_open: rank %u of %u asked for, but "
				"MPI has this process as rank %d of %d in %s "
				"(MPI gives one rank per process; start the "
				"program with mpirun -np %u)",
				rank, size, mpi_rank, mpi_size,
				native ? "the caller's communicator"
				       : "MPI_COMM_WORLD",
				size);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	c = calloc(1, sizeof *c);
	if (!c) {
		host->set_error("cpu: out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	/* A communicator of our own, so that wafer's messages never match
	 * the application's, and errors come back instead of aborting. */
	code = MPI_Comm_dup(base, &c->comm);
	if (code != MPI_SUCCESS) {
		free(c);
		return mpi_failed(host, "MPI_Comm_dup", code);
	}
	MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
	c->rank = mpi_rank;
	c->size = mpi_size;
	c->host = host;
	*out_comm = c;
	return WAFER_OK;
}

static void mpi_close(void *comm)
{
	struct mpi_comm *c = comm;
	int finalised;

	MPI_Finalized(&finalised);
	if (!finalised)
		MPI_Comm_free(&c->comm);
	free(c);
}

static wafer_status mpi_split(void *comm, int32_t color, int32_t key,
			      void **out_comm, uint32_t *out_rank,
			      uint32_t *out_size)
{
	struct mpi_comm *parent = comm, *c;
	MPI_Comm sub;
	int code;

	*out_comm = NULL;
	c = calloc(1, sizeof *c);
	/* Into MPI_Comm_split even without memory: the others wait for
	 * this rank there. */
	code = MPI_Comm_split(parent->comm, c && color >= 0 ? color
							   : MPI_UNDEFINED,
			      key, &sub);
	if (code != MPI_SUCCESS) {
		free(c);
		return mpi_failed(parent->host, "MPI_Comm_split", code);
	}
	if (!c) {
		if (sub != MPI_COMM_NULL)
			MPI_Comm_free(&sub);
		parent->host->set_error("cpu: out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	if (sub == MPI_COMM_NULL) {
		free(c);
		return WAFER_OK;
	}
	MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
	MPI_Comm_rank(sub, &c->rank);
	MPI_Comm_size(sub, &c->size);
	c->comm = sub;
	c->host = parent->host;
	*out_rank = (uint32_t)c->rank;
	*out_size = (uint32_t)c->size;
	*out_comm = c;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Collectives
 *===----------------------------------------------------------------------===*/

static int overlap(const void *a, size_t a_size, const void *b, size_t b_size)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return x < y + b_size && y < x + a_size;
}

/* MPI counts are int: all-reduce and broadcast, element-wise, go in
 * pieces of at most INT_MAX elements. */
static wafer_status all_reduce(struct mpi_comm *c, const char *src, char *dst,
			       size_t count, size_t element,
			       MPI_Datatype type, MPI_Op op)
{
	for (size_t done = 0; done < count;) {
		size_t n = count - done < INT_MAX ? count - done : INT_MAX;
		int code = MPI_Allreduce(src == dst ? MPI_IN_PLACE
						    : src + done * element,
					 dst + done * element, (int)n, type,
					 op, c->comm);
		if (code != MPI_SUCCESS)
			return mpi_failed(c->host, "MPI_Allreduce", code);
		done += n;
	}
	return WAFER_OK;
}

static wafer_status broadcast(struct mpi_comm *c, char *dst, size_t count,
			      size_t element, MPI_Datatype type, int root)
{
	for (size_t done = 0; done < count;) {
		size_t n = count - done < INT_MAX ? count - done : INT_MAX;
		int code = MPI_Bcast(dst + done * element, (int)n, type, root,
				     c->comm);
		if (code != MPI_SUCCESS)
			return mpi_failed(c->host, "MPI_Bcast", code);
		done += n;
	}
	return WAFER_OK;
}

/* Point to point, in pieces of at most INT_MAX elements; MPI keeps the
 * messages of one pair (one tag) in order. */
#define P2P_TAG 0x5746
static wafer_status point_to_point(struct mpi_comm *c, int send, char *buf,
				   size_t count, size_t element,
				   MPI_Datatype type, int peer)
{
	for (size_t done = 0; done < count;) {
		size_t n = count - done < INT_MAX ? count - done : INT_MAX;
		int code = send ? MPI_Send(buf + done * element, (int)n, type,
					   peer, P2P_TAG, c->comm)
				: MPI_Recv(buf + done * element, (int)n, type,
					   peer, P2P_TAG, c->comm,
					   MPI_STATUS_IGNORE);
		if (code != MPI_SUCCESS)
			return mpi_failed(c->host, send ? "MPI_Send" : "MPI_Recv",
					  code);
		done += n;
	}
	return WAFER_OK;
}

static wafer_status mpi_run(void *comm, const struct wafer_collective *col,
			    const void *src_arg, void *dst_arg)
{
	struct mpi_comm *c = comm;
	const struct wafer_host_services *host = c->host;
	const char *src = src_arg;
	char *dst = dst_arg;
	size_t element = wafer_plugin_dtype_size(col->dtype);
	size_t bytes = col->count * element;
	size_t whole = bytes * (size_t)c->size;
	void *copy = NULL;
	MPI_Datatype type;
	MPI_Op op;
	wafer_status status;
	int code = MPI_SUCCESS;
	const char *call = "";

	if (!mpi_types(col->dtype, col->op, &type, &op)) {
		host->set_error("cpu: collectives of %s are not supported",
				wafer_plugin_dtype_name(col->dtype));
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	if (col->count == 0)
		return WAFER_OK;
	if ((col->kind == WAFER_COLLECTIVE_ALL_GATHER ||
	     col->kind == WAFER_COLLECTIVE_REDUCE_SCATTER) &&
	    col->count > INT_MAX) {
		host->set_error("cpu: %s of %zu elements: MPI counts at most "
				"%d per rank",
				col->kind == WAFER_COLLECTIVE_ALL_GATHER
					? "all_gather"
					: "reduce_scatter",
				col->count, INT_MAX);
		return WAFER_ERROR_NOT_SUPPORTED;
	}

	switch (col->kind) {
	case WAFER_COLLECTIVE_ALL_REDUCE:
		/* MPI takes the same buffer (MPI_IN_PLACE) or disjoint ones,
		 * nothing in between: a partial overlap reads a copy. */
		if (src != dst && overlap(src, bytes, dst, bytes)) {
			copy = malloc(bytes);
			if (!copy)
				goto no_memory;
			src = memcpy(copy, src, bytes);
		}
		status = all_reduce(c, src, dst, col->count, element, type, op);
		free(copy);
		return status;
	case WAFER_COLLECTIVE_BROADCAST:
		if (c->rank == (int)col->root && src != dst)
			memmove(dst, src, bytes);
		return broadcast(c, dst, col->count, element, type,
				 (int)col->root);
	case WAFER_COLLECTIVE_ALL_GATHER:
		call = "MPI_Allgather";
		if (src == dst + (size_t)c->rank * bytes) {
			src = MPI_IN_PLACE;
		} else if (overlap(src, bytes, dst, whole)) {
			copy = malloc(bytes);
			if (!copy)
				goto no_memory;
			src = memcpy(copy, src, bytes);
		}
		code = MPI_Allgather(src, (int)col->count, type, dst,
				     (int)col->count, type, c->comm);
		break;
	case WAFER_COLLECTIVE_REDUCE_SCATTER:
		call = "MPI_Reduce_scatter_block";
		if (overlap(src, whole, dst, bytes)) {
			copy = malloc(whole);
			if (!copy)
				goto no_memory;
			src = memcpy(copy, src, whole);
		}
		code = MPI_Reduce_scatter_block(src, dst, (int)col->count, type,
						op, c->comm);
		break;
	case WAFER_COLLECTIVE_SEND:
		return point_to_point(c, 1, (char *)src, col->count, element,
				      type, (int)col->root);
	case WAFER_COLLECTIVE_RECV:
		return point_to_point(c, 0, dst, col->count, element, type,
				      (int)col->root);
	default:
		host->set_error("cpu: collective kind %d is not supported",
				(int)col->kind);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	free(copy);
	return code == MPI_SUCCESS ? WAFER_OK : mpi_failed(host, call, code);

no_memory:
	host->set_error("cpu: cannot allocate %zu bytes to stage a collective",
			col->kind == WAFER_COLLECTIVE_REDUCE_SCATTER ? whole
								     : bytes);
	return WAFER_ERROR_OUT_OF_MEMORY;
}

/*===----------------------------------------------------------------------===
 * The module's table
 *===----------------------------------------------------------------------===*/

static const struct cpu_mpi_ops ops = {
	.version = CPU_MPI_VERSION,
	.acquire = mpi_acquire,
	.release = mpi_release,
	.open = mpi_open,
	.close = mpi_close,
	.run = mpi_run,
	.split = mpi_split,
};

__attribute__((visibility("default"))) const struct cpu_mpi_ops *
cpu_mpi_query(void);
const struct cpu_mpi_ops *cpu_mpi_query(void)
{
	return &ops;
}
