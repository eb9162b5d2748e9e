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
 *               is, once its rank, size and GPU match, and never freed
 *               but by the abort of a failed wait (cuda_comm_wait).
 *   comm_close  ncclCommDestroy (the core synchronised the queues).
 *   comm_split  ncclCommSplit (NCCL 2.18 and later; resolved apart, so
 *               an older NCCL still gives the rest).
 *   comm_group_begin, comm_group_end  ncclGroupStart, ncclGroupEnd.
 *   sync        polls the collectives issued since the last sync (an
 *               event after them, ncclCommGetAsyncError, the [comm]
 *               timeout) and aborts their communicators (ncclCommAbort)
 *               on an error or past the timeout, so a rank that died
 *               never hangs the others (cuda_comm_wait).
 *   comm_run    ncclAllReduce, ncclBroadcast, ncclAllGather,
 *               ncclReduceScatter, ncclSend, ncclRecv on the queue's stream: ordered with the
 *               kernels and copies there like one of them.
 *
 * NCCL works on the current CUDA device: every entry first makes the
 * device's context current (cuda_enter), so the communicator is the GPU
 * of the client that opened it. */
#include "build-config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <time.h>

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
	X(ncclRecv)                                                            \
	X(ncclCommGetAsyncError)                                               \
	X(ncclCommAbort)                                                       \
	X(ncclGroupStart)                                                      \
	X(ncclGroupEnd)

#define NCCL_MEMBER(name) __typeof__(name) *name;

struct cuda_nccl {
	struct cuda_library library;
	int version; /* NCCL_VERSION_CODE of the loaded library */
	NCCL_FUNCTIONS(NCCL_MEMBER)
	/* Since NCCL 2.18; NULL before: wafer_comm_split is not offered. */
	__typeof__(ncclCommSplit) *ncclCommSplit;
};

/* One communicator: NCCL's, whether it is ours to destroy, and what a
 * wait for its collectives needs (cuda_comm_wait). It is freed by the
 * last of comm_close and the queues that watch it (|refs|): a queue not
 * synchronised before the close still polls it. */
struct cuda_comm {
	const struct cuda_nccl *nccl;
	ncclComm_t comm;
	int owned;
	struct cuda_device *dev;
	uint32_t rank, size;
	uint64_t timeout_ms; /* 0: for ever */
	unsigned refs;       /* atomic: comm_close's and each watch's */
	int aborted;         /* atomic: ncclCommAbort was called */
	/* The last collective issued (atomic, for the error text). */
	const char *last_what;
	size_t last_count;
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

	/* Optional, so an older NCCL still gives the rest. */
	n->ncclCommSplit = (__typeof__(n->ncclCommSplit))dlsym(
		n->library.handle, "ncclCommSplit");

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

/* A warning for a call whose failure only loses resources. */
static void warn_failed(struct cuda_device *dev, const struct cuda_nccl *n,
			const char *call, ncclResult_t r)
{
	if (r != ncclSuccess)
		dev->host->log(dev->host, WAFER_LOG_WARN,
			       "cuda:%" PRIu32 ": %s: %s", dev->index, call,
			       n->ncclGetErrorString(r));
}

/* Enters |dev|'s context for a call on |c|; WAFER_ERROR_DEVICE, saying
 * so, once |c| was aborted (cuda_comm_wait): ncclCommAbort freed NCCL's
 * communicator, which no call may name. */
static wafer_status comm_enter(struct cuda_device *dev,
			       const struct cuda_comm *c)
{
	if (!__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE))
		return cuda_enter(dev);
	dev->host->set_error("cuda:%" PRIu32 ": communicator %p (rank %" PRIu32
			     " of %" PRIu32 ") was aborted after %s failed or "
			     "timed out: close it and open a new one",
			     dev->index, (void *)c->comm, c->rank, c->size,
			     __atomic_load_n(&c->last_what, __ATOMIC_RELAXED));
	return WAFER_ERROR_DEVICE;
}

/* The opening of comm_open and comm_split: |dev|'s context current
 * (nccl_enter, or comm_enter on |parent|) and a new communicator in
 * |*out| of NCCL's table, with |parent|'s timeout when there is one. */
static wafer_status comm_new(struct cuda_device *dev,
			     const struct cuda_comm *parent,
			     struct cuda_comm **out)
{
	const struct cuda_nccl *n = parent ? parent->nccl : NULL;
	wafer_status status = parent ? comm_enter(dev, parent)
				     : nccl_enter(dev, &n);

	*out = NULL;
	if (status != WAFER_OK)
		return status;
	*out = wafer_plugin_calloc(dev->host, sizeof **out,
				   "cuda: cannot allocate a communicator");
	if (!*out)
		return WAFER_ERROR_OUT_OF_MEMORY;
	(*out)->nccl = n;
	(*out)->dev = dev;
	(*out)->refs = 1;
	if (parent)
		(*out)->timeout_ms = parent->timeout_ms;
	return WAFER_OK;
}

/* Drops one reference; the last destroys NCCL's communicator (unless
 * the caller's, or aborted, which freed it) and frees |c|. */
static void comm_release(struct cuda_comm *c)
{
	struct cuda_device *dev = c->dev;

	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (c->owned && !__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE) &&
	    cuda_enter(dev) == WAFER_OK) {
		warn_failed(dev, c->nccl, "ncclCommDestroy",
			    c->nccl->ncclCommDestroy(c->comm));
	}
	free(c);
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

/* A timeout is kept only while the host waits outside NCCL (sync). Since
 * NCCL 2.22 a communicator connects to its peers lazily, inside the host
 * call of its first collective (ncclAllReduce, ncclGroupEnd): a peer lost
 * before then leaves that call blocked for ever, out of the timeout's
 * reach (seen on two H200s: a rank that died after the open hung the
 * other with [comm] timeout = 3). So the first communicator opened with a
 * timeout has NCCL connect at init, while every rank is there
 * (NCCL_RUNTIME_CONNECT=0), unless the caller set the variable. Set once,
 * before that init; NCCL reads it at the process's first communicator. */
static void connect_at_init(void)
{
	setenv("NCCL_RUNTIME_CONNECT", "0", 0);
}

wafer_status cuda_comm_open(void *device,
			    const struct wafer_comm_open_args *args,
			    void **out_comm)
{
	static pthread_once_t connect_once = PTHREAD_ONCE_INIT;
	struct cuda_device *dev = device;
	const struct cuda_nccl *n;
	struct cuda_comm *c;
	ncclUniqueId id;
	wafer_status status;
	ncclResult_t r;
	char what[128];

	*out_comm = NULL;
	status = comm_new(dev, NULL, &c);
	if (status != WAFER_OK)
		return status;
	n = c->nccl;
	c->rank = args->rank;
	c->size = args->size;
	if (WAFER_STRUCT_HAS(args, struct wafer_comm_open_args, timeout_ms))
		c->timeout_ms = args->timeout_ms;
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
	if (c->timeout_ms)
		pthread_once(&connect_once, connect_at_init);
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
	(void)device;
	if (comm)
		comm_release(comm);
}

wafer_status cuda_comm_split(void *device, void *comm, int32_t color,
			     int32_t key, void **out_comm, uint32_t *out_rank,
			     uint32_t *out_size)
{
	struct cuda_device *dev = device;
	struct cuda_comm *parent = comm, *c;
	const struct cuda_nccl *n = parent->nccl;
	int rank = 0, count = 0;
	wafer_status status;
	ncclResult_t r;

	*out_comm = NULL;
	if (!n->ncclCommSplit) {
		dev->host->set_error("cuda: sub-communicators need "
				     "ncclCommSplit (NCCL 2.18 or later); "
				     "%s is NCCL %d.%d.%d",
				     n->library.path, n->version / 10000,
				     n->version / 100 % 100, n->version % 100);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	status = comm_new(dev, parent, &c);
	if (status != WAFER_OK)
		return status;
	r = n->ncclCommSplit(parent->comm, color < 0 ? NCCL_SPLIT_NOCOLOR
						     : (int)color,
			     (int)key, &c->comm, NULL);
	if (r == ncclSuccess && c->comm)
		r = n->ncclCommUserRank(c->comm, &rank);
	if (r == ncclSuccess && c->comm)
		r = n->ncclCommCount(c->comm, &count);
	if (r != ncclSuccess) {
		if (c->comm)
			n->ncclCommDestroy(c->comm);
		free(c);
		return nccl_fail(dev, n, parent->comm, r, "ncclCommSplit");
	}
	if (!c->comm) { /* NCCL_SPLIT_NOCOLOR */
		free(c);
		return WAFER_OK;
	}
	c->owned = 1;
	c->rank = (uint32_t)rank;
	c->size = (uint32_t)count;
	*out_rank = (uint32_t)rank;
	*out_size = (uint32_t)count;
	*out_comm = c;
	return WAFER_OK;
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

static wafer_status watch(struct cuda_device *dev, struct cuda_queue *q,
			  struct cuda_comm *c);

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
	status = comm_enter(dev, cc);
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
	__atomic_store_n(&cc->last_what, what, __ATOMIC_RELAXED);
	__atomic_store_n(&cc->last_count, c->count, __ATOMIC_RELAXED);
	return watch(dev, q, cc);
}

/* Grouped collectives: NCCL's groups are the calling thread's, which is
 * the one that issues the client's collectives (the core's COMM_GROUP
 * command). */
static wafer_status group(void *device, int begin)
{
	struct cuda_device *dev = device;
	const struct cuda_nccl *n;
	wafer_status status = nccl_enter(dev, &n);
	ncclResult_t r;

	if (status != WAFER_OK)
		return status;
	r = begin ? n->ncclGroupStart() : n->ncclGroupEnd();
	if (r != ncclSuccess)
		return nccl_fail(dev, n, NULL, r,
				 begin ? "ncclGroupStart" : "ncclGroupEnd");
	return WAFER_OK;
}

wafer_status cuda_comm_group_begin(void *device)
{
	return group(device, 1);
}

wafer_status cuda_comm_group_end(void *device)
{
	return group(device, 0);
}

/*===----------------------------------------------------------------------===
 * Waiting for collectives: failures never hang
 *===----------------------------------------------------------------------===*/

/* Adds |c| to what |q|'s next sync watches (once). */
static wafer_status watch(struct cuda_device *dev, struct cuda_queue *q,
			  struct cuda_comm *c)
{
	struct cuda_comm_watch *w = &q->watch;

	for (size_t i = 0; i < w->count; i++)
		if (w->comms[i] == c)
			return WAFER_OK;
	if (w->count == w->capacity) {
		size_t capacity = w->capacity ? 2 * w->capacity : 4;
		struct cuda_comm **comms =
			realloc(w->comms, capacity * sizeof *comms);
		if (!comms) {
			dev->host->set_error("cuda: out of host memory to "
					     "watch a collective (it was "
					     "issued; sync waits for it "
					     "without a timeout)");
			return WAFER_ERROR_OUT_OF_MEMORY;
		}
		w->comms = comms;
		w->capacity = capacity;
	}
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_ACQ_REL);
	w->comms[w->count++] = c;
	return WAFER_OK;
}

static void unwatch_all(struct cuda_comm_watch *w)
{
	for (size_t i = 0; i < w->count; i++)
		comm_release(w->comms[i]);
	w->count = 0;
}

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) +
	       (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* Aborts every watched communicator (NCCL's kernels on the stream then
 * return) and sets the error for |c|, the one that failed. */
static wafer_status give_up(struct cuda_device *dev, struct cuda_comm_watch *w,
			    struct cuda_comm *c, const char *why)
{
	dev->host->set_error(
		"cuda:%" PRIu32 ": %s of %zu elements on communicator %p "
		"(rank %" PRIu32 " of %" PRIu32 "): %s; communicator aborted "
		"(ncclCommAbort), the client goes on: close the communicator "
		"and open a new one",
		dev->index, __atomic_load_n(&c->last_what, __ATOMIC_RELAXED),
		__atomic_load_n(&c->last_count, __ATOMIC_RELAXED),
		(void *)c->comm, c->rank, c->size, why);
	for (size_t i = 0; i < w->count; i++) {
		struct cuda_comm *a = w->comms[i];

		if (__atomic_exchange_n(&a->aborted, 1, __ATOMIC_ACQ_REL))
			continue;
		warn_failed(dev, a->nccl, "ncclCommAbort",
			    a->nccl->ncclCommAbort(a->comm));
	}
	return WAFER_ERROR_DEVICE;
}

/* The watched communicator whose engine reports an asynchronous error
 * (its text in |why|), or NULL. */
static struct cuda_comm *async_failed(struct cuda_comm_watch *w, char *why,
				      size_t size)
{
	for (size_t i = 0; i < w->count; i++) {
		struct cuda_comm *c = w->comms[i];
		ncclResult_t e = ncclSuccess;

		if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE))
			continue;
		if (c->nccl->ncclCommGetAsyncError(c->comm, &e) ==
			    ncclSuccess &&
		    e != ncclSuccess && e != ncclInProgress) {
			snprintf(why, size, "failed on the device "
				 "(ncclCommGetAsyncError: %s)",
				 c->nccl->ncclGetErrorString(e));
			return c;
		}
	}
	return NULL;
}

/* The watched communicator whose timeout has passed after |waited|
 * seconds, or NULL. */
static struct cuda_comm *timed_out(struct cuda_comm_watch *w, double waited,
				   char *why, size_t size)
{
	for (size_t i = 0; i < w->count; i++) {
		struct cuda_comm *c = w->comms[i];

		if (c->timeout_ms && waited * 1000 >= (double)c->timeout_ms) {
			snprintf(why, size, "not finished after %.3g s ([comm] "
				 "timeout): a rank may have stopped or died",
				 (double)c->timeout_ms / 1000);
			return c;
		}
	}
	return NULL;
}

/* How the wait polls: the event is looked at as often as the driver's
 * own synchronise would (yielding in between) for SPIN_S, so a short
 * collective costs no more than before; then every SLEEP_S. The engine's
 * errors and the timeouts are looked at every CHECK_S. */
#define SPIN_S 0.01
#define SLEEP_S 100e-6
#define CHECK_S 1e-3

wafer_status cuda_comm_wait(struct cuda_device *dev, struct cuda_queue *q)
{
	struct cuda_comm_watch *w = &q->watch;
	struct timespec start;
	double next_check = CHECK_S;
	wafer_status status = WAFER_OK;
	char why[256];

	if (!w->count)
		return WAFER_OK;
	status = cuda_enter(dev);
	/* An event after the collectives, polled: without one (no event
	 * to be had) the sync waits as it would have. */
	if (status == WAFER_OK &&
	    (w->done || dev->drv->cuEventCreate(&w->done,
					       CU_EVENT_DISABLE_TIMING) ==
				CUDA_SUCCESS) &&
	    dev->drv->cuEventRecord(w->done, q->stream) == CUDA_SUCCESS) {
		clock_gettime(CLOCK_MONOTONIC, &start);
		for (;;) {
			CUresult r = dev->drv->cuEventQuery(w->done);
			struct cuda_comm *failed = NULL;
			double waited;

			if (r != CUDA_ERROR_NOT_READY) {
				/* Done, or a failure the sync reports; but
				 * a collective a peer's abort ended is no
				 * result: the engine says so. */
				failed = async_failed(w, why, sizeof why);
				if (failed)
					status = give_up(dev, w, failed, why);
				break;
			}
			waited = seconds_since(&start);
			if (waited >= next_check) {
				next_check = waited + CHECK_S;
				failed = async_failed(w, why, sizeof why);
				if (!failed)
					failed = timed_out(w, waited, why,
							   sizeof why);
			}
			if (failed) {
				status = give_up(dev, w, failed, why);
				break;
			}
			if (waited < SPIN_S)
				sched_yield();
			else
				nanosleep(&(struct timespec){
						  0, (long)(SLEEP_S * 1e9)},
					  NULL);
		}
	}
	unwatch_all(w);
	return status;
}

void cuda_comm_watch_free(struct cuda_device *dev, struct cuda_queue *q)
{
	unwatch_all(&q->watch);
	free(q->watch.comms);
	if (q->watch.done)
		dev->drv->cuEventDestroy(q->watch.done);
	q->watch = (struct cuda_comm_watch){0};
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

wafer_status cuda_comm_split(void *device, void *comm, int32_t color,
			     int32_t key, void **out_comm, uint32_t *out_rank,
			     uint32_t *out_size)
{
	*out_comm = NULL;
	return no_nccl(device);
}

wafer_status cuda_comm_wait(struct cuda_device *dev, struct cuda_queue *q)
{
	return WAFER_OK;
}

wafer_status cuda_comm_group_begin(void *device)
{
	return no_nccl(device);
}

wafer_status cuda_comm_group_end(void *device)
{
	return no_nccl(device);
}

void cuda_comm_watch_free(struct cuda_device *dev, struct cuda_queue *q)
{
}

#endif
