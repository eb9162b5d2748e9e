/* wafer — SPDX-License-Identifier: MIT
 *
 * fakenccl.c: a stand-in for libnccl.so.2, so the cuda plugin's
 * collectives run in tests on t/standins/fakecuda.c (no GPU, no NCCL). The plugin
 * loads it through `[cuda] nccl = PATH`. Ranks are threads of this
 * process meeting through plugins/cpu/inproc_comm; the work is done on host memory
 * (the stand-in driver's device memory is host memory). It keeps the
 * contracts of NCCL that the plugin depends on:
 *
 *  - the prototypes are <nccl.h>'s (a mismatch fails to compile);
 *  - ncclGetUniqueId makes an id; an all-zero id is refused
 *    (ncclInvalidArgument), as NCCL cannot bootstrap from it;
 *  - ncclCommInitRank needs a CUDA context current (ncclInvalidUsage
 *    otherwise: NCCL would silently pick GPU 0), takes its device as the
 *    communicator's (ncclCommCuDevice), and blocks until every rank
 *    joined (FAKENCCL_TIMEOUT_MS, default 120000: then ncclSystemError
 *    rather than a hung test); two ranks on one GPU are refused on
 *    every rank (ncclInvalidUsage, "Duplicate GPU detected"), as NCCL
 *    refuses them;
 *  - the collectives are queued on the caller's stream (through the
 *    driver's fakecuda_enqueue) and run in its order, with copies and
 *    kernels, on the stream's own thread, each waiting there for the
 *    other ranks'; the stream must be one of the communicator's device
 *    (NCCL makes that device current around the call, as here);
 *    the buffers must be device memory, which is checked as a kernel's
 *    are, and read before and written after, as initcheck sees it;
 *  - datatypes f32, f16, bf16, f64, i32 and ops sum and max (anything
 *    else: ncclInvalidArgument, and a line on stderr: not modelled);
 *  - the calls between ncclGroupStart and ncclGroupEnd (of a thread,
 *    nesting) are queued at the outermost End, in order, and counted
 *    (fakenccl_grouped_calls, for the tests); End without Start is
 *    ncclInvalidUsage;
 *  - ncclCommDestroy waits for the communicator's queued work;
 *  - FAKENCCL_FAIL=<collective> (ncclAllReduce, ...): every call of that
 *    collective fails at once with ncclSystemError, nothing queued, as
 *    a real NCCL refuses a call it cannot issue;
 *  - ncclGetErrorString, ncclGetLastError (this thread's last failure),
 *    ncclGetVersion (NCCL_VERSION_CODE of the header), ncclCommCount,
 *    ncclCommUserRank, ncclCommCuDevice, ncclCommInitAll (one thread a
 *    device, each with that device's primary context);
 *  - ncclSend and ncclRecv, queued like the collectives; on the stream's
 *    thread a send waits until the peer's recv copied its data;
 *  - ncclCommSplit (colour NCCL_SPLIT_NOCOLOR: no communicator), the
 *    new communicator on the parent's device;
 *  - ncclCommAbort aborts the whole group: what any rank waits for in it
 *    fails at once, the other ranks' ncclCommGetAsyncError then says
 *    ncclRemoteError; the aborted communicator is freed;
 *  - failure modes, each naming a rank, read when a communicator is
 *    made: FAKENCCL_HANG_RANK=r, rank r's collectives are accepted and
 *    never take part (a process that stopped: its peers wait for it);
 *    FAKENCCL_ASYNC_FAIL_RANK=r, rank r's first collective fails on the
 *    stream (ncclCommGetAsyncError: ncclSystemError) and hangs there
 *    until the communicator is aborted.
 *
 * Not modelled: several ranks' ncclCommInitRank from one thread inside
 * a group (each call here blocks until the others joined), and
 * everything else of <nccl.h>, which the library does not export (a
 * caller needing it fails to resolve it).
 *
 * The driver is FAKENCCL_DRIVER when set, else the t/standins/fakecuda.so already
 * loaded in the process (the plugin's), else libcuda.so.1. */
#include "build-config.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

/* The library exports what <nccl.h> declares. */
#pragma GCC visibility push(default)
#include <nccl.h>
#pragma GCC visibility pop

#include "t/standins/fakecuda.h"
#include "plugins/cpu/inproc_comm.h"

_Static_assert(NCCL_UNIQUE_ID_BYTES == INPROC_COMM_ID_BYTES,
	       "an ncclUniqueId is an inproc_comm id");

struct ncclComm {
	inproc_comm *ranks;
	int rank, size;
	CUdevice device;
	CUcontext ctx;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned pending; /* collectives queued, not yet run */
	int broken;       /* one failed: later ones fail at once */
	ncclResult_t async_error; /* under lock: ncclCommGetAsyncError */
	/* The failure modes, read from the environment at init. */
	int hangs;      /* FAKENCCL_HANG_RANK: never takes part */
	int fails_mid;  /* FAKENCCL_ASYNC_FAIL_RANK: fails on the stream */
};

/*===----------------------------------------------------------------------===
 * Errors
 *===----------------------------------------------------------------------===*/

static _Thread_local char last_error[512];

static ncclResult_t fail(ncclResult_t r, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
static ncclResult_t fail(ncclResult_t r, const char *format, ...)
{
	va_list ap;

	va_start(ap, format);
	vsnprintf(last_error, sizeof last_error, format, ap);
	va_end(ap);
	return r;
}

const char *ncclGetErrorString(ncclResult_t result)
{
	switch (result) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

const char *ncclGetLastError(ncclComm_t comm)
{
	(void)comm;
	return last_error;
}

ncclResult_t ncclGetVersion(int *version)
{
	if (!version)
		return fail(ncclInvalidArgument, "ncclGetVersion: NULL");
	*version = NCCL_VERSION_CODE;
	return ncclSuccess;
}

/*===----------------------------------------------------------------------===
 * The driver
 *===----------------------------------------------------------------------===*/

static struct {
	pthread_once_t once;
	char why[512]; /* empty once loaded */
	fakecuda_enqueue_fn enqueue;
	CUresult (*ctx_get_current)(CUcontext *);
	CUresult (*ctx_get_device)(CUdevice *);
	CUresult (*ctx_set_current)(CUcontext);
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*primary_retain)(CUcontext *, CUdevice);
} drv = {.once = PTHREAD_ONCE_INIT};

static int find_fakecuda(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *name = info->dlpi_name;
	size_t n = name ? strlen(name) : 0;

	(void)size;
	if (n >= 12 && strcmp(name + n - 12, "/fakecuda.so") == 0) {
		snprintf(data, 4096, "%s", name);
		return 1;
	}
	return 0;
}

static void load_driver(void)
{
	static const char *const names[] = {
		"cuCtxGetCurrent", "cuCtxGetDevice", "cuCtxSetCurrent",
		"cuDeviceGet", "cuDevicePrimaryCtxRetain",
	};
	void *slots[5];
	char path[4096] = "libcuda.so.1";
	const char *missing;
	void *so;

	if (getenv("FAKENCCL_DRIVER"))
		snprintf(path, sizeof path, "%s", getenv("FAKENCCL_DRIVER"));
	else
		dl_iterate_phdr(find_fakecuda, path);
	so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!so) {
		snprintf(drv.why, sizeof drv.why, "fakenccl: %s", dlerror());
		return;
	}
	drv.enqueue = (fakecuda_enqueue_fn)dlsym(so, "fakecuda_enqueue");
	missing = fakecuda_resolve(so, names, 5, slots);
	if (!drv.enqueue || missing) {
		snprintf(drv.why, sizeof drv.why,
			 "fakenccl: %s is not the stand-in driver (no %s)",
			 path, missing ? missing : "fakecuda_enqueue");
		return;
	}
	drv.ctx_get_current = (CUresult(*)(CUcontext *))slots[0];
	drv.ctx_get_device = (CUresult(*)(CUdevice *))slots[1];
	drv.ctx_set_current = (CUresult(*)(CUcontext))slots[2];
	drv.device_get = (CUresult(*)(CUdevice *, int))slots[3];
	drv.primary_retain = (CUresult(*)(CUcontext *, CUdevice))slots[4];
}

static ncclResult_t need_driver(void)
{
	pthread_once(&drv.once, load_driver);
	if (drv.why[0])
		return fail(ncclSystemError, "%s", drv.why);
	return ncclSuccess;
}

/*===----------------------------------------------------------------------===
 * Communicators
 *===----------------------------------------------------------------------===*/

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	if (!id)
		return fail(ncclInvalidArgument, "ncclGetUniqueId: NULL");
	inproc_comm_id_new((uint8_t *)id->internal);
	return ncclSuccess;
}

/* Every rank learns every rank's device; all fail alike when two share
 * one. */
static ncclResult_t distinct_devices(struct ncclComm *c)
{
	int32_t mine = (int32_t)c->device, *all;
	inproc_comm_status s;

	all = calloc((size_t)c->size, sizeof *all);
	if (!all)
		return fail(ncclSystemError, "ncclCommInitRank: out of memory");
	s = inproc_comm_all_gather(c->ranks, &mine, all, 1, INPROC_COMM_I32);
	if (s != INPROC_COMM_OK) {
		free(all);
		return fail(ncclSystemError, "ncclCommInitRank: %s",
			    inproc_comm_status_text(s));
	}
	for (int i = 0; i < c->size; i++)
		for (int k = i + 1; k < c->size; k++)
			if (all[i] == all[k]) {
				int dev = all[i];
				free(all);
				return fail(ncclInvalidUsage,
					    "Duplicate GPU detected : rank %d "
					    "and rank %d both on CUDA device %d",
					    i, k, dev);
			}
	free(all);
	return ncclSuccess;
}

/* How long a join waits for the other ranks (FAKENCCL_TIMEOUT_MS,
 * default 120000; 0 or less: for ever). */
static unsigned join_timeout_ms(void)
{
	const char *v = getenv("FAKENCCL_TIMEOUT_MS");
	long ms = v ? atol(v) : 120000;

	return ms > 0 ? (unsigned)ms : 0;
}

/* Whether the environment variable |name| names this communicator's
 * rank. */
static int rank_named(const struct ncclComm *c, const char *name)
{
	const char *v = getenv(name);

	return v && *v && atoi(v) == c->rank;
}

ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks, ncclUniqueId id,
			      int rank)
{
	struct ncclComm *c;
	inproc_comm_status s;
	ncclResult_t r;
	int zero = 1;

	if (!out)
		return fail(ncclInvalidArgument, "ncclCommInitRank: NULL comm");
	*out = NULL;
	if (nranks < 1 || rank < 0 || rank >= nranks)
		return fail(ncclInvalidArgument, "ncclCommInitRank: rank %d "
			    "of %d", rank, nranks);
	for (size_t i = 0; i < sizeof id.internal; i++)
		zero = zero && !id.internal[i];
	if (zero)
		return fail(ncclInvalidArgument, "ncclCommInitRank: the "
			    "unique id is all zeros (not one from "
			    "ncclGetUniqueId)");
	r = need_driver();
	if (r != ncclSuccess)
		return r;
	c = calloc(1, sizeof *c);
	if (!c)
		return fail(ncclSystemError, "ncclCommInitRank: out of memory");
	if (drv.ctx_get_current(&c->ctx) != CUDA_SUCCESS || !c->ctx ||
	    drv.ctx_get_device(&c->device) != CUDA_SUCCESS) {
		free(c);
		return fail(ncclInvalidUsage, "ncclCommInitRank: no CUDA "
			    "context is current on this thread (the "
			    "stand-in's rule: NCCL would take GPU 0)");
	}
	s = inproc_comm_join((const uint8_t *)id.internal, (uint32_t)rank,
			     (uint32_t)nranks, join_timeout_ms(), &c->ranks);
	if (s != INPROC_COMM_OK) {
		free(c);
		return fail(s == INPROC_COMM_INVALID ? ncclInvalidArgument
						     : ncclSystemError,
			    "ncclCommInitRank(rank %d of %d): %s", rank,
			    nranks, inproc_comm_status_text(s));
	}
	c->rank = rank;
	c->size = nranks;
	r = distinct_devices(c);
	if (r != ncclSuccess) {
		inproc_comm_leave(c->ranks);
		free(c);
		return r;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->idle, NULL);
	c->hangs = rank_named(c, "FAKENCCL_HANG_RANK");
	c->fails_mid = rank_named(c, "FAKENCCL_ASYNC_FAIL_RANK");
	*out = c;
	return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
			   ncclComm_t *newcomm, ncclConfig_t *config)
{
	struct ncclComm *c;
	inproc_comm_status s;

	(void)config;
	if (!comm || !newcomm)
		return fail(ncclInvalidArgument, "ncclCommSplit: NULL");
	*newcomm = NULL;
	if (color < NCCL_SPLIT_NOCOLOR)
		return fail(ncclInvalidArgument, "ncclCommSplit: colour %d",
			    color);
	c = calloc(1, sizeof *c);
	/* Into the split even without memory: the others wait for it. */
	s = inproc_comm_split(comm->ranks, c ? color : -1, key,
			      join_timeout_ms(),
			      c ? &c->ranks : &(inproc_comm *){NULL});
	if (s != INPROC_COMM_OK || !c || !c->ranks) {
		free(c);
		if (s != INPROC_COMM_OK)
			return fail(ncclSystemError, "ncclCommSplit(rank %d, "
				    "colour %d): %s", comm->rank, color,
				    inproc_comm_status_text(s));
		return c ? ncclSuccess
			 : fail(ncclSystemError, "ncclCommSplit: out of "
				"memory");
	}
	c->rank = (int)inproc_comm_rank(c->ranks);
	c->size = (int)inproc_comm_size(c->ranks);
	c->device = comm->device;
	c->ctx = comm->ctx;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->idle, NULL);
	*newcomm = c;
	return ncclSuccess;
}

struct init_all {
	ncclComm_t *comm;
	int ndev, device;
	ncclUniqueId id;
	int rank;
	ncclResult_t result;
	char why[512];
};

static void *init_one(void *arg)
{
	struct init_all *a = arg;
	CUdevice dev;
	CUcontext ctx;

	if (drv.device_get(&dev, a->device) != CUDA_SUCCESS ||
	    drv.primary_retain(&ctx, dev) != CUDA_SUCCESS ||
	    drv.ctx_set_current(ctx) != CUDA_SUCCESS) {
		a->result = fail(ncclInvalidArgument, "ncclCommInitAll: no "
				 "device %d", a->device);
	} else {
		a->result = ncclCommInitRank(a->comm, a->ndev, a->id, a->rank);
	}
	snprintf(a->why, sizeof a->why, "%s", last_error);
	return NULL;
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	struct init_all *a;
	pthread_t *threads;
	ncclUniqueId id;
	ncclResult_t r;

	if (!comms || ndev < 1)
		return fail(ncclInvalidArgument, "ncclCommInitAll: %d devices",
			    ndev);
	r = need_driver();
	if (r != ncclSuccess)
		return r;
	ncclGetUniqueId(&id);
	a = calloc((size_t)ndev, sizeof *a);
	threads = calloc((size_t)ndev, sizeof *threads);
	if (!a || !threads) {
		free(a);
		free(threads);
		return fail(ncclSystemError, "ncclCommInitAll: out of memory");
	}
	for (int i = 0; i < ndev; i++) {
		a[i] = (struct init_all){&comms[i], ndev,
					 devlist ? devlist[i] : i, id, i,
					 ncclSuccess, ""};
		pthread_create(&threads[i], NULL, init_one, &a[i]);
	}
	for (int i = 0; i < ndev; i++)
		pthread_join(threads[i], NULL);
	r = ncclSuccess;
	for (int i = 0; i < ndev && r == ncclSuccess; i++)
		if (a[i].result != ncclSuccess)
			r = fail(a[i].result, "%s", a[i].why);
	if (r != ncclSuccess)
		for (int i = 0; i < ndev; i++)
			if (a[i].result == ncclSuccess)
				ncclCommDestroy(comms[i]);
	free(a);
	free(threads);
	return r;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	if (!comm)
		return ncclSuccess;
	pthread_mutex_lock(&comm->lock);
	while (comm->pending)
		pthread_cond_wait(&comm->idle, &comm->lock);
	pthread_mutex_unlock(&comm->lock);
	inproc_comm_leave(comm->ranks);
	pthread_mutex_destroy(&comm->lock);
	pthread_cond_destroy(&comm->idle);
	free(comm);
	return ncclSuccess;
}

/* Aborts the whole group (its peers see ncclRemoteError), lets the
 * collectives queued on this rank fail at once, and frees the
 * communicator, as NCCL does (no ncclCommDestroy after). */
ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	if (!comm)
		return ncclSuccess;
	inproc_comm_abort(comm->ranks);
	return ncclCommDestroy(comm);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
	if (!comm || !asyncError)
		return fail(ncclInvalidArgument, "ncclCommGetAsyncError: NULL");
	pthread_mutex_lock(&comm->lock);
	*asyncError = comm->async_error;
	pthread_mutex_unlock(&comm->lock);
	if (*asyncError == ncclSuccess && inproc_comm_aborted(comm->ranks))
		*asyncError = ncclRemoteError; /* a peer gave up */
	return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	if (!comm || !count)
		return fail(ncclInvalidArgument, "ncclCommCount: NULL");
	*count = comm->size;
	return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	if (!comm || !rank)
		return fail(ncclInvalidArgument, "ncclCommUserRank: NULL");
	*rank = comm->rank;
	return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
	if (!comm || !device)
		return fail(ncclInvalidArgument, "ncclCommCuDevice: NULL");
	*device = (int)comm->device;
	return ncclSuccess;
}

/*===----------------------------------------------------------------------===
 * Collectives
 *===----------------------------------------------------------------------===*/

enum kind { ALL_REDUCE, BROADCAST, ALL_GATHER, REDUCE_SCATTER, SEND, RECV };

static const char *const kind_names[] = {
	"ncclAllReduce", "ncclBroadcast", "ncclAllGather", "ncclReduceScatter",
	"ncclSend",      "ncclRecv",
};

/* One queued collective, run on the stream's thread. */
struct job {
	struct ncclComm *comm;
	enum kind kind;
	const void *send;
	void *recv;
	size_t count;
	inproc_comm_dtype dtype;
	inproc_comm_op op;
	int root; /* BROADCAST; SEND's and RECV's peer */
};

static void run_job(void *arg, int ok)
{
	struct job *j = arg;
	struct ncclComm *c = j->comm;
	inproc_comm_status s = INPROC_COMM_OK;

	if (!ok) {
		/* The context faulted: this rank drops out, and its peers
		 * wait for it, as on a GPU. */
		fprintf(stderr, "fakenccl: %s (rank %d): not run, the "
			"stream's context faulted\n", kind_names[j->kind],
			c->rank);
	} else if (c->hangs) {
		/* A rank that stopped: its peers wait for it. */
		fprintf(stderr, "fakenccl: %s (rank %d): not taking part, as "
			"FAKENCCL_HANG_RANK asks\n", kind_names[j->kind],
			c->rank);
	} else if (c->fails_mid) {
		/* Fails on the device and hangs there, as a collective whose
		 * network went away: only an abort ends it. */
		fprintf(stderr, "fakenccl: %s (rank %d): failing mid-collective, "
			"as FAKENCCL_ASYNC_FAIL_RANK asks\n",
			kind_names[j->kind], c->rank);
		pthread_mutex_lock(&c->lock);
		c->async_error = ncclSystemError;
		pthread_mutex_unlock(&c->lock);
		while (!inproc_comm_aborted(c->ranks))
			nanosleep(&(struct timespec){0, 1000000}, NULL);
		s = INPROC_COMM_ABORTED;
	} else if (c->broken) {
		fprintf(stderr, "fakenccl: %s (rank %d): not run, an earlier "
			"collective of this communicator failed\n",
			kind_names[j->kind], c->rank);
	} else {
		switch (j->kind) {
		case ALL_REDUCE:
			s = inproc_comm_all_reduce(c->ranks, j->send, j->recv,
						   j->count, j->dtype, j->op);
			break;
		case BROADCAST:
			s = inproc_comm_broadcast(c->ranks, j->send, j->recv,
						  j->count, j->dtype,
						  (uint32_t)j->root);
			break;
		case ALL_GATHER:
			s = inproc_comm_all_gather(c->ranks, j->send, j->recv,
						   j->count, j->dtype);
			break;
		case REDUCE_SCATTER:
			s = inproc_comm_reduce_scatter(c->ranks, j->send,
						       j->recv, j->count,
						       j->dtype, j->op);
			break;
		case SEND:
			s = inproc_comm_send(c->ranks, j->send, j->count,
					     j->dtype, (uint32_t)j->root);
			break;
		case RECV:
			s = inproc_comm_recv(c->ranks, j->recv, j->count,
					     j->dtype, (uint32_t)j->root);
			break;
		}
		if (s != INPROC_COMM_OK)
			fprintf(stderr, "fakenccl: %s (rank %d): %s\n",
				kind_names[j->kind], c->rank,
				inproc_comm_status_text(s));
	}
	pthread_mutex_lock(&c->lock);
	if (!ok || s != INPROC_COMM_OK)
		c->broken = 1;
	c->pending--;
	pthread_cond_broadcast(&c->idle);
	pthread_mutex_unlock(&c->lock);
	free(j);
}

static int to_dtype(ncclDataType_t t, inproc_comm_dtype *out)
{
	switch (t) {
	case ncclFloat32: *out = INPROC_COMM_F32; return 0;
	case ncclFloat16: *out = INPROC_COMM_F16; return 0;
	case ncclBfloat16: *out = INPROC_COMM_BF16; return 0;
	case ncclFloat64: *out = INPROC_COMM_F64; return 0;
	case ncclInt32: *out = INPROC_COMM_I32; return 0;
	default: return -1;
	}
}

static _Thread_local int group_depth;
static ncclResult_t issue(struct job *j, cudaStream_t stream,
			  const struct fakecuda_access *access, size_t n);
static ncclResult_t defer(struct job *j, cudaStream_t stream,
			  const struct fakecuda_access *access, size_t n);

static ncclResult_t enqueue(enum kind kind, const void *send, void *recv,
			    size_t count, ncclDataType_t datatype,
			    ncclRedOp_t op, int root, ncclComm_t comm,
			    cudaStream_t stream)
{
	const char *what = kind_names[kind];
	struct fakecuda_access access[2];
	size_t n = 0, bytes, size;
	struct job *j;

	if (!comm)
		return fail(ncclInvalidArgument, "%s: NULL comm", what);
	if (getenv("FAKENCCL_FAIL") && strcmp(getenv("FAKENCCL_FAIL"), what) == 0)
		return fail(ncclSystemError, "%s: failed as FAKENCCL_FAIL "
			    "asks", what);
	j = calloc(1, sizeof *j);
	if (!j)
		return fail(ncclSystemError, "%s: out of memory", what);
	*j = (struct job){comm, kind, send, recv, count, INPROC_COMM_F32,
			  op == ncclMax ? INPROC_COMM_MAX : INPROC_COMM_SUM,
			  root};
	if (to_dtype(datatype, &j->dtype) != 0 ||
	    (op != ncclSum && op != ncclMax)) {
		fprintf(stderr, "fakenccl: %s: datatype %d, op %d: not "
			"modelled\n", what, (int)datatype, (int)op);
		free(j);
		return fail(ncclInvalidArgument, "%s: datatype %d, op %d",
			    what, (int)datatype, (int)op);
	}
	if ((kind == BROADCAST || kind == SEND || kind == RECV) &&
	    (root < 0 || root >= comm->size)) {
		free(j);
		return fail(ncclInvalidArgument, "%s: %s %d of %d", what,
			    kind == BROADCAST ? "root" : "peer", root,
			    comm->size);
	}
	if (count == 0) {
		free(j);
		return ncclSuccess;
	}
	/* What each side holds: count elements, or count for every rank. */
	size = inproc_comm_dtype_size(j->dtype);
	bytes = count * size;
	if (kind != RECV && (kind != BROADCAST || comm->rank == root))
		access[n++] = (struct fakecuda_access){
			(uintptr_t)send,
			kind == REDUCE_SCATTER ? bytes * (size_t)comm->size
					       : bytes,
			0};
	if (kind != SEND)
		access[n++] = (struct fakecuda_access){
			(uintptr_t)recv,
			kind == ALL_GATHER ? bytes * (size_t)comm->size : bytes,
			1};

	pthread_mutex_lock(&comm->lock);
	comm->pending++;
	pthread_mutex_unlock(&comm->lock);
	if (group_depth > 0)
		return defer(j, stream, access, n);
	return issue(j, stream, access, n);
}

/* Queues |j| on |stream| (its pending count taken); on failure gives
 * the count back and frees |j|. */
static ncclResult_t issue(struct job *j, cudaStream_t stream,
			  const struct fakecuda_access *access, size_t n)
{
	struct ncclComm *comm = j->comm;
	const char *what = kind_names[j->kind];
	CUcontext was = NULL;
	CUresult cr;

	/* NCCL makes the communicator's device current around the call. */
	drv.ctx_get_current(&was);
	drv.ctx_set_current(comm->ctx);
	cr = (CUresult)drv.enqueue(stream, run_job, j, access, n);
	drv.ctx_set_current(was);
	if (cr == CUDA_SUCCESS)
		return ncclSuccess;
	pthread_mutex_lock(&comm->lock);
	comm->pending--;
	pthread_cond_broadcast(&comm->idle);
	pthread_mutex_unlock(&comm->lock);
	free(j);
	if (cr == CUDA_ERROR_INVALID_HANDLE)
		return fail(ncclInvalidArgument, "%s: stream %p is not one of "
			    "GPU %d (rank %d's)", what, (void *)stream,
			    (int)comm->device, comm->rank);
	if (cr == CUDA_ERROR_INVALID_VALUE)
		return fail(ncclInvalidArgument, "%s: a buffer at %p is not "
			    "device memory of its size", what,
			    (void *)access[0].ptr);
	return fail(ncclUnhandledCudaError, "%s: CUresult %d", what, (int)cr);
}

/*===----------------------------------------------------------------------===
 * Groups: the calls between ncclGroupStart and ncclGroupEnd of a thread
 * are queued at the outermost End, in order (as NCCL launches them
 * then: nothing of the group runs before), and counted as grouped.
 *===----------------------------------------------------------------------===*/

struct deferred {
	struct deferred *next;
	struct job *job;
	cudaStream_t stream;
	struct fakecuda_access access[2];
	size_t n;
};

static _Thread_local int group_depth;
static _Thread_local struct deferred *group_head;
static unsigned long grouped_calls; /* atomic */

/* For the tests (not NCCL's): how many calls went through a group. */
__attribute__((visibility("default"))) unsigned long
fakenccl_grouped_calls(void);
unsigned long fakenccl_grouped_calls(void)
{
	return __atomic_load_n(&grouped_calls, __ATOMIC_RELAXED);
}

static ncclResult_t defer(struct job *j, cudaStream_t stream,
			  const struct fakecuda_access *access, size_t n)
{
	struct deferred *d = calloc(1, sizeof *d);

	if (!d) {
		pthread_mutex_lock(&j->comm->lock);
		j->comm->pending--;
		pthread_cond_broadcast(&j->comm->idle);
		pthread_mutex_unlock(&j->comm->lock);
		free(j);
		return fail(ncclSystemError, "ncclGroupStart: out of memory");
	}
	d->job = j;
	d->stream = stream;
	memcpy(d->access, access, n * sizeof *access);
	d->n = n;
	struct deferred **tail = &group_head;
	while (*tail)
		tail = &(*tail)->next;
	*tail = d;
	return ncclSuccess;
}

/* <nccl.h> declares them without (void). */
#pragma GCC visibility push(default)
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
#pragma GCC visibility pop

ncclResult_t ncclGroupStart(void)
{
	group_depth++;
	return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
	ncclResult_t first = ncclSuccess;
	struct deferred *d;

	if (group_depth == 0)
		return fail(ncclInvalidUsage, "ncclGroupEnd without "
			    "ncclGroupStart");
	if (--group_depth > 0)
		return ncclSuccess;
	while ((d = group_head)) {
		ncclResult_t r = issue(d->job, d->stream, d->access, d->n);

		if (r == ncclSuccess)
			__atomic_add_fetch(&grouped_calls, 1,
					   __ATOMIC_RELAXED);
		else if (first == ncclSuccess)
			first = r;
		group_head = d->next;
		free(d);
	}
	return first;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclRedOp_t op,
			   ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(ALL_REDUCE, sendbuff, recvbuff, count, datatype, op, 0,
		       comm, stream);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, int root, ncclComm_t comm,
			   cudaStream_t stream)
{
	return enqueue(BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum,
		       root, comm, stream);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff,
			   size_t sendcount, ncclDataType_t datatype,
			   ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(ALL_GATHER, sendbuff, recvbuff, sendcount, datatype,
		       ncclSum, 0, comm, stream);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff,
			       size_t recvcount, ncclDataType_t datatype,
			       ncclRedOp_t op, ncclComm_t comm,
			       cudaStream_t stream)
{
	return enqueue(REDUCE_SCATTER, sendbuff, recvbuff, recvcount,
		       datatype, op, 0, comm, stream);
}

ncclResult_t ncclSend(const void *sendbuff, size_t count,
		      ncclDataType_t datatype, int peer, ncclComm_t comm,
		      cudaStream_t stream)
{
	return enqueue(SEND, sendbuff, NULL, count, datatype, ncclSum, peer,
		       comm, stream);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype,
		      int peer, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(RECV, NULL, recvbuff, count, datatype, ncclSum, peer,
		       comm, stream);
}
