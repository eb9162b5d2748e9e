/* wafer — SPDX-License-Identifier: MIT
 *
 * nccl.c: collectives (the server's comm entries, plugin ABI 1.4) through
 * NCCL. libnccl.so.2 is loaded with dlopen at the first comm_id or
 * comm_open ([cuda] nccl = auto|no|PATH); the prototypes come from
 * <nccl.h> (the toolkit's, or configure --with-nccl-include=DIR), and
 * nothing links against the library. Without NCCL, or built without
 * nccl.h, comm_id and comm_open report WAFER_ERROR_NOT_SUPPORTED saying
 * which; the rest of the plugin is the same.
 *
 *   comm_id     ncclGetUniqueId: its 128 bytes are the wafer_comm_id.
 *   comm_open   ncclCommInitRank, which blocks until every rank joined
 *               (the core opens a group's ranks from one thread each);
 *               with size 1 an all-zero id is fine (the plugin makes
 *               one); a caller's ncclComm_t (args->native) is used as it
 *               is, once its rank, size and GPU match, and never freed.
 *   comm_close  ncclCommDestroy (the core synchronised the queues).
 *   comm_run    ncclAllReduce, ncclBroadcast, ncclAllGather,
 *               ncclReduceScatter, ncclSend, ncclRecv on the queue's stream: ordered with the
 *               kernels and copies there like one of them.
 *
 * NCCL works on the current CUDA device: every entry first makes the
 * device's context current (cuda_enter), so the communicator is the GPU
 * of the client that opened it. */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cuda/cuda_plugin.h"

#ifdef WAFER_HAVE_NCCL_H

#include <dlfcn.h>

#include <nccl.h>

_Static_assert(sizeof(ncclUniqueId) == WAFER_COMM_ID_BYTES,
	       "wafer_comm_id holds an ncclUniqueId");

#define NCCL_FUNCTIONS(X)                                                      \
	X(ncclGetVersion)                                                      \
	X(ncclGetErrorString)                                                  \
	X(ncclGetLastError)                                                    \
	X(ncclGetUniqueId)                                                     \
	X(ncclCommInitRank)                                                    \
	X(ncclCommDestroy)                                                     \
	X(ncclCommCount)                                                       \
	X(ncclCommUserRank)                                                    \
	X(ncclCommCuDevice)                                                    \
	X(ncclAllReduce)                                                       \
	X(ncclBroadcast)                                                       \
	X(ncclAllGather)                                                       \
	X(ncclReduceScatter)                                                   \
	X(ncclSend)                                                            \
	X(ncclRecv)

#define NCCL_MEMBER(name) __typeof__(name) *name;

struct cuda_nccl {
	struct cuda_library library;
	int version; /* NCCL_VERSION_CODE of the loaded library */
	NCCL_FUNCTIONS(NCCL_MEMBER)
};

/* One communicator: NCCL's, and whether it is ours to destroy. */
struct cuda_comm {
	const struct cuda_nccl *nccl;
	ncclComm_t comm;
	int owned;
};

/*===----------------------------------------------------------------------===
 * Loading
 *===----------------------------------------------------------------------===*/

#define NCCL_SYMBOL_OF(name)                                                   \
	CUDA_SYMBOL(struct cuda_nccl, name, #name)

static const struct cuda_symbol symbols[] = {
	NCCL_FUNCTIONS(NCCL_SYMBOL_OF)
};

/* The version, for the log: 2.28.9 from 22809 (2.9 and later number
 * major * 10000 + minor * 100 + patch). */
static int ready(const struct wafer_host_services *host, void *table,
		 char *offers, size_t size)
{
	struct cuda_nccl *n = table;
	ncclResult_t r = n->ncclGetVersion(&n->version);

	if (r != ncclSuccess) {
		host->log(host, WAFER_LOG_WARN,
			  "NCCL: %s: ncclGetVersion: %s; not used",
			  n->library.path, n->ncclGetErrorString(r));
		return -1;
	}
	snprintf(offers, size, "collectives (NCCL %d.%d.%d)",
		 n->version / 10000, n->version / 100 % 100,
		 n->version % 100);
	return 0;
}

/* NCCL's table, or NULL with the error set (WAFER_ERROR_NOT_SUPPORTED). */
static const struct cuda_nccl *nccl_get(struct cuda_device *dev)
{
	static const char *const names[] = {
		"libnccl.so.2",
		WAFER_CUDA_LIBDIR "/libnccl.so.2",
	};
	static const struct cuda_library_kind kind = {
		.what = "NCCL",
		CUDA_LIBRARY_FILES(names, symbols, struct cuda_nccl),
		.ready = ready,
		.offers = "collectives",
		.searched = "libnccl.so.2",
		.without = "no collectives",
	};
	struct cuda_state *st = dev->state;
	const struct cuda_nccl *n;

	if (!st->options.nccl) {
		dev->host->set_error("cuda: collectives are off ([cuda] nccl "
				     "= no)");
		return NULL;
	}
	n = cuda_library_get(st->host, &st->nccl, &kind,
			     st->options.nccl_library);
	if (!n)
		dev->host->set_error(
			"cuda: collectives need NCCL: %s did not load (see "
			"the log at debug level; install NCCL, or name the "
			"library with [cuda] nccl = PATH)",
			st->options.nccl_library ? st->options.nccl_library
						 : "libnccl.so.2");
	return n;
}

/* Sets "cuda: <what>: <NCCL's text> (<its last error>)" and returns the
 * wafer status for |r|. */
static wafer_status nccl_fail(struct cuda_device *dev,
			      const struct cuda_nccl *n, ncclComm_t comm,
			      ncclResult_t r, const char *what)
{
	const char *last = n->ncclGetLastError(comm);

	dev->host->set_error("cuda: %s: %s%s%s%s", what,
			     n->ncclGetErrorString(r),
			     last && *last ? " (" : "", last ? last : "",
			     last && *last ? ")" : "");
	switch (r) {
	case ncclInvalidArgument:
	case ncclInvalidUsage:
		return WAFER_ERROR_INVALID_ARGUMENT;
	default:
		return WAFER_ERROR_DEVICE;
	}
}

/*===----------------------------------------------------------------------===
 * The entries
 *===----------------------------------------------------------------------===*/

/* |dev|'s context current (cuda_enter) and NCCL's table in |*out|: the
 * status of cuda_enter, or WAFER_ERROR_NOT_SUPPORTED with nccl_get's
 * error set. */
static wafer_status nccl_enter(struct cuda_device *dev,
			       const struct cuda_nccl **out)
{
	wafer_status status = cuda_enter(dev);

	if (status != WAFER_OK)
		return status;
	*out = nccl_get(dev);
	return *out ? WAFER_OK : WAFER_ERROR_NOT_SUPPORTED;
}

wafer_status cuda_comm_id(void *device, wafer_comm_id *out_id)
{
	struct cuda_device *dev = device;
	const struct cuda_nccl *n;
	ncclUniqueId id;
	wafer_status status;
	ncclResult_t r;

	memset(out_id, 0, sizeof *out_id);
	status = nccl_enter(dev, &n);
	if (status != WAFER_OK)
		return status;
	r = n->ncclGetUniqueId(&id);
	if (r != ncclSuccess)
		return nccl_fail(dev, n, NULL, r, "ncclGetUniqueId");
	memcpy(out_id->bytes, id.internal, sizeof id.internal);
	return WAFER_OK;
}

static int all_zeros(const wafer_comm_id *id)
{
	for (size_t i = 0; id && i < sizeof id->bytes; i++)
		if (id->bytes[i])
			return 0;
	return 1;
}

/* The caller's communicator, once it is the rank, size and GPU asked. */
static wafer_status adopt(struct cuda_device *dev, const struct cuda_nccl *n,
			  const struct wafer_comm_open_args *args,
			  ncclComm_t comm)
{
	int count = 0, rank = 0, gpu = 0;
	ncclResult_t r;

	r = n->ncclCommCount(comm, &count);
	if (r == ncclSuccess)
		r = n->ncclCommUserRank(comm, &rank);
	if (r == ncclSuccess)
		r = n->ncclCommCuDevice(comm, &gpu);
	if (r != ncclSuccess)
		return nccl_fail(dev, n, comm, r, "comm_open: the caller's "
				 "ncclComm_t");
	if ((uint32_t)count != args->size || (uint32_t)rank != args->rank) {
		dev->host->set_error("cuda: comm_open: the caller's ncclComm_t "
				     "%p is rank %d of %d, not rank %" PRIu32
				     " of %" PRIu32 " as asked",
				     (void *)comm, rank, count, args->rank,
				     args->size);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (gpu != dev->ordinal) {
		dev->host->set_error("cuda: comm_open: the caller's ncclComm_t "
				     "%p runs on GPU %d, not on cuda:%" PRIu32
				     " (GPU %d)",
				     (void *)comm, gpu, dev->index,
				     dev->ordinal);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	return WAFER_OK;
}

wafer_status cuda_comm_open(void *device,
			    const struct wafer_comm_open_args *args,
			    void **out_comm)
{
	struct cuda_device *dev = device;
	const struct cuda_nccl *n;
	struct cuda_comm *c;
	ncclUniqueId id;
	wafer_status status;
	ncclResult_t r;
	char what[128];

	*out_comm = NULL;
	status = nccl_enter(dev, &n);
	if (status != WAFER_OK)
		return status;
	c = calloc(1, sizeof *c);
	if (!c) {
		dev->host->set_error("cuda: cannot allocate a communicator");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	c->nccl = n;
	if (args->native) {
		status = adopt(dev, n, args, args->native);
		if (status != WAFER_OK) {
			free(c);
			return status;
		}
		c->comm = args->native;
		*out_comm = c;
		return WAFER_OK;
	}
	if (all_zeros(args->id) && args->size > 1) {
		dev->host->set_error("cuda: comm_open: rank %" PRIu32 " of %"
				     PRIu32 ": NCCL needs the id that "
				     "wafer_comm_id_create made on one rank "
				     "(this one is all zeros)",
				     args->rank, args->size);
		free(c);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (all_zeros(args->id))
		r = n->ncclGetUniqueId(&id); /* one rank: nobody to tell */
	else {
		memcpy(id.internal, args->id->bytes, sizeof id.internal);
		r = ncclSuccess;
	}
	if (r == ncclSuccess)
		r = n->ncclCommInitRank(&c->comm, (int)args->size, id,
					(int)args->rank);
	if (r != ncclSuccess) {
		snprintf(what, sizeof what,
			 "ncclCommInitRank(rank %" PRIu32 " of %" PRIu32
			 ", cuda:%" PRIu32 ")",
			 args->rank, args->size, dev->index);
		status = nccl_fail(dev, n, NULL, r, what);
		free(c);
		return status;
	}
	c->owned = 1;
	*out_comm = c;
	return WAFER_OK;
}

void cuda_comm_close(void *device, void *comm)
{
	struct cuda_device *dev = device;
	struct cuda_comm *c = comm;
	ncclResult_t r;

	if (!c)
		return;
	if (c->owned && cuda_enter(dev) == WAFER_OK) {
		r = c->nccl->ncclCommDestroy(c->comm);
		if (r != ncclSuccess)
			dev->host->log(dev->host, WAFER_LOG_WARN,
				       "cuda:%" PRIu32 ": ncclCommDestroy: %s",
				       dev->index,
				       c->nccl->ncclGetErrorString(r));
	}
	free(c);
}

static int nccl_dtype(wafer_dtype dtype, ncclDataType_t *out)
{
	switch (dtype) {
	case WAFER_DTYPE_F32: *out = ncclFloat32; return 0;
	case WAFER_DTYPE_F16: *out = ncclFloat16; return 0;
	case WAFER_DTYPE_BF16: *out = ncclBfloat16; return 0;
	case WAFER_DTYPE_F64: *out = ncclFloat64; return 0;
	case WAFER_DTYPE_I32: *out = ncclInt32; return 0;
	case WAFER_DTYPE_I64: *out = ncclInt64; return 0;
	case WAFER_DTYPE_U8: *out = ncclUint8; return 0;
	default: return -1;
	}
}

wafer_status cuda_comm_run(void *device, void *queue, void *comm,
			   const struct wafer_collective *c)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;
	struct cuda_comm *cc = comm;
	const struct cuda_nccl *n = cc->nccl;
	/* Broadcast's src is a null handle on ranks other than root. */
	const void *send = c->src ? (const void *)(uintptr_t)(cuda_ptr(c->src) +
							      c->src_offset)
				  : NULL;
	void *recv = (void *)(uintptr_t)(cuda_ptr(c->dst) + c->dst_offset);
	ncclDataType_t dt;
	ncclRedOp_t op = c->op == WAFER_REDUCE_MAX ? ncclMax : ncclSum;
	wafer_status status;
	ncclResult_t r;
	const char *what;

	if (nccl_dtype(c->dtype, &dt) != 0) {
		dev->host->set_error("cuda: collectives on %s: not offered "
				     "by NCCL",
				     wafer_plugin_dtype_name(c->dtype));
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	if (c->op != WAFER_REDUCE_SUM && c->op != WAFER_REDUCE_MAX &&
	    (c->kind == WAFER_COLLECTIVE_ALL_REDUCE ||
	     c->kind == WAFER_COLLECTIVE_REDUCE_SCATTER)) {
		dev->host->set_error("cuda: reduction %d: not offered "
				     "(sum and max are)", (int)c->op);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	status = cuda_enter(dev);
	if (status != WAFER_OK)
		return status;
	switch (c->kind) {
	case WAFER_COLLECTIVE_ALL_REDUCE:
		what = "ncclAllReduce";
		r = n->ncclAllReduce(send, recv, c->count, dt, op, cc->comm,
				     q->stream);
		break;
	case WAFER_COLLECTIVE_BROADCAST:
		what = "ncclBroadcast";
		r = n->ncclBroadcast(send, recv, c->count, dt, (int)c->root,
				     cc->comm, q->stream);
		break;
	case WAFER_COLLECTIVE_ALL_GATHER:
		what = "ncclAllGather";
		r = n->ncclAllGather(send, recv, c->count, dt, cc->comm,
				     q->stream);
		break;
	case WAFER_COLLECTIVE_REDUCE_SCATTER:
		what = "ncclReduceScatter";
		r = n->ncclReduceScatter(send, recv, c->count, dt, op,
					 cc->comm, q->stream);
		break;
	case WAFER_COLLECTIVE_SEND:
		what = "ncclSend";
		r = n->ncclSend(send, c->count, dt, (int)c->root, cc->comm,
				q->stream);
		break;
	case WAFER_COLLECTIVE_RECV:
		what = "ncclRecv";
		r = n->ncclRecv(recv, c->count, dt, (int)c->root, cc->comm,
				q->stream);
		break;
	default:
		dev->host->set_error("cuda: collective kind %d: not offered",
				     (int)c->kind);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	if (r != ncclSuccess)
		return nccl_fail(dev, n, cc->comm, r, what);
	return WAFER_OK;
}

#else /* !WAFER_HAVE_NCCL_H */

/* Built without <nccl.h>: the entries are there, and say why they do
 * nothing. */
static wafer_status no_nccl(void *device)
{
	struct cuda_device *dev = device;

	dev->host->set_error("cuda: collectives need NCCL, and this plugin "
			     "was built without nccl.h (configure "
			     "--with-nccl-include=DIR)");
	return WAFER_ERROR_NOT_SUPPORTED;
}

wafer_status cuda_comm_id(void *device, wafer_comm_id *out_id)
{
	memset(out_id, 0, sizeof *out_id);
	return no_nccl(device);
}

wafer_status cuda_comm_open(void *device,
			    const struct wafer_comm_open_args *args,
			    void **out_comm)
{
	*out_comm = NULL;
	return no_nccl(device);
}

void cuda_comm_close(void *device, void *comm)
{
}

wafer_status cuda_comm_run(void *device, void *queue, void *comm,
			   const struct wafer_collective *c)
{
	return no_nccl(device);
}

#endif
