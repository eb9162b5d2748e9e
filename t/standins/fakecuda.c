/* wafer — SPDX-License-Identifier: MIT
 *
 * fakecuda.c: a stand-in for libcuda.so.1, so the cuda plugin's host code
 * runs in tests on machines without a GPU (CI never has one). The plugin
 * loads it through `[cuda] driver_library`. It is not a GPU simulator: it
 * keeps the driver's contracts that the plugin depends on, strictly, so a
 * plugin that breaks one fails here rather than on the GPU:
 *
 *  - entry points come only through cuGetProcAddress (the v2 form), and
 *    only cuDriverGetVersion and cuGetProcAddress_v2 are exported;
 *  - calls that need a context fail with CUDA_ERROR_INVALID_CONTEXT on a
 *    thread where none is current;
 *  - every stream is a worker thread that runs its copies, kernels, event
 *    records and frees later, in order (FAKECUDA_DELAY_US slows each step
 *    down, to shake out ordering bugs);
 *  - copies from pageable memory snapshot the source at the call, copies
 *    into pageable memory wait for the stream; copies from or to pinned
 *    memory (cuMemHostAlloc) touch it only when they run;
 *  - every device access (copies, emulated kernels) must lie in live
 *    device memory (an allocation, or mapped pages with access set),
 *    otherwise the context gets the sticky CUDA_ERROR_ILLEGAL_ADDRESS;
 *  - cuMemcpyDtoDAsync refuses overlapping ranges; cuMemUnmap takes
 *    exactly one whole mapping; cuMemMap needs offset 0 and unmapped
 *    address space; cuMemAddressFree needs nothing mapped;
 *  - cuModuleGetFunction finds a kernel only if the module image holds
 *    its PTX entry (the plugin's fatbins are built uncompressed), and
 *    only if the stand-in can emulate it: otherwise CUDA_ERROR_NOT_FOUND
 *    and a line on stderr, never a silent no-op; cuLaunchKernel takes
 *    only functions of a loaded module (CUDA_ERROR_INVALID_HANDLE);
 *  - cuDeviceGetAttribute answers the attributes the plugin reads, with
 *    an H200's values (sm_90, 132 SMs, 227 KiB opt-in shared memory),
 *    and refuses any other with CUDA_ERROR_INVALID_VALUE;
 *  - a stream belongs to the context it was created in: work queued on
 *    it while another context is current fails with
 *    CUDA_ERROR_INVALID_HANDLE, and once its context is destroyed (the
 *    last cuDevicePrimaryCtxRelease) every use fails with
 *    CUDA_ERROR_INVALID_CONTEXT;
 *  - CU_STREAM_LEGACY is the legacy default stream of the context
 *    current on the calling thread (none: CUDA_ERROR_INVALID_CONTEXT),
 *    started at its first use: it takes copies, kernels, events,
 *    stream-ordered allocations and frees and cuStreamSynchronize as
 *    any stream, cuStreamGetCtx answers the current context, and
 *    cuStreamDestroy refuses it (CUDA_ERROR_INVALID_HANDLE). Its work
 *    runs after what every blocking stream of its context (created
 *    CU_STREAM_DEFAULT) was given before, and theirs after what it was
 *    given before; that also orders stream-ordered memory between them.
 *    CU_STREAM_PER_THREAD and NULL are not modelled: refused with
 *    CUDA_ERROR_INVALID_HANDLE and a line on stderr;
 *  - cuMemAllocAsync memory is valid on its stream after the allocation,
 *    on another stream only once the host saw that point done (a sync of
 *    the stream, or of an event recorded after it), never after
 *    cuMemFreeAsync, whose stream must in turn come after every other
 *    stream's use; a use out of that order gets the sticky
 *    CUDA_ERROR_ILLEGAL_ADDRESS (at the next sync) and a line on stderr;
 *  - cuStreamWaitEvent holds the stream until the event's latest record
 *    (at the call) ran, on any stream of any context, and orders
 *    stream-ordered memory as a host sync would; cuEventDestroy returns
 *    at once, the event freed once its pending record ran;
 *  - several devices (FAKECUDA_DEVICES) reach each other's memory:
 *    cuMemcpyPeerAsync checks each pointer against the device of the
 *    context named for it, cuCtxEnablePeerAccess grants once per pair;
 *  - events time a fake clock that counts work (1 us an op plus 1 ns a
 *    byte it moves), so timers are deterministic;
 *  - as compute-sanitizer's initcheck does, it tracks which bytes of
 *    device memory were ever written, and a copy or kernel that reads one
 *    that never was gets a line on stderr ("fakecuda: uninitialised
 *    read: ...") and is counted (fakecuda_stats' uninit_reads); it still
 *    runs, as on the GPU.
 *
 * Kernels are emulated on the host by name, with the catalogue's meaning
 * (wafer/plugin.h) and the element type the name says, over the grid and
 * block they are launched with, as the kernel sources map them (the
 * table above find_emulator): grid-stride kernels cover every element
 * from any grid; a matmul block computes its BM x BN tile of C for batch
 * entry blockIdx.z, so a grid short of tiles leaves them unwritten; a
 * layout kernel (_nn .. _tt) reads the transposes its name says and
 * faults on misaligned rows; strided.cu's 32-bit twins index in 32 bits.
 * A block past a kernel's __launch_bounds__ fails with
 * CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, one of a shape the kernel is not
 * written for with CUDA_ERROR_INVALID_VALUE. So the plugin's host side —
 * which function, which arguments, which grid and block — is checked
 * by the backend-neutral tests; its device code is not (that takes a
 * GPU: dev/gpu-check.sh), and matmul is one exact loop for every
 * variant, whatever its tile size or arithmetic.
 *
 * Knobs (environment, read when used): FAKECUDA_VERSION (13000),
 * FAKECUDA_INIT (a CUresult for cuInit), FAKECUDA_MISSING (a symbol
 * cuGetProcAddress does not find), FAKECUDA_DEVICES (1), FAKECUDA_ARCH
 * (90), FAKECUDA_MEMORY (1 GiB), FAKECUDA_NO_VMM, FAKECUDA_NO_POOLS,
 * FAKECUDA_NO_PINNED, FAKECUDA_DELAY_US (read as each op is issued, on
 * the issuing thread), FAKECUDA_VA_MAX (bytes: a
 * larger address reservation is refused). fakecuda_stats() and
 * fakecuda_reset() are for tests that dlopen this library themselves;
 * fakecuda.h numbers what they check when they call entry points
 * directly. */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include <wafer/plugin.h>

#include "plugins/cuda/kernels/args.h"
#include "t/standins/fakecuda.h"
#include "t/standins/fakecuda_program.h"
#include "t/half.h"

#define EXPORT __attribute__((visibility("default")))

/* fakecuda.h's numbers are <cuda.h>'s. */
_Static_assert(FAKECUDA_ERROR_INVALID_VALUE == CUDA_ERROR_INVALID_VALUE &&
		       FAKECUDA_ERROR_INVALID_CONTEXT ==
			       CUDA_ERROR_INVALID_CONTEXT &&
		       FAKECUDA_ERROR_INVALID_HANDLE == CUDA_ERROR_INVALID_HANDLE &&
		       FAKECUDA_ERROR_NOT_FOUND == CUDA_ERROR_NOT_FOUND &&
		       FAKECUDA_ERROR_ILLEGAL_ADDRESS ==
			       CUDA_ERROR_ILLEGAL_ADDRESS &&
		       FAKECUDA_ERROR_LAUNCH_OUT_OF_RESOURCES ==
			       CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES &&
		       FAKECUDA_ERROR_MISALIGNED_ADDRESS ==
			       CUDA_ERROR_MISALIGNED_ADDRESS,
	       "fakecuda.h's CUresults");
_Static_assert(FAKECUDA_ATTR_MAX_BLOCK_DIM_X ==
			       CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X &&
		       FAKECUDA_ATTR_MULTIPROCESSOR_COUNT ==
			       CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT &&
		       FAKECUDA_ATTR_COMPUTE_CAPABILITY_MAJOR ==
			       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR &&
		       FAKECUDA_ATTR_COMPUTE_CAPABILITY_MINOR ==
			       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR &&
		       FAKECUDA_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN ==
			       CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN &&
		       FAKECUDA_ATTR_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED ==
			       CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED &&
		       FAKECUDA_ATTR_MEMORY_POOLS_SUPPORTED ==
			       CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
	       "fakecuda.h's device attributes");

/*===----------------------------------------------------------------------===
 * Global state
 *===----------------------------------------------------------------------===*/

static pthread_mutex_t L = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t C = PTHREAD_COND_INITIALIZER;

/* Device memory: allocations and vm mappings, and pinned host memory. */
enum region_kind { REGION_ALLOC, REGION_PINNED, REGION_RESERVED, REGION_MAPPED };

struct region {
	enum region_kind kind;
	uintptr_t base;
	size_t size;
	int accessible;           /* REGION_MAPPED: cuMemSetAccess done */
	/* REGION_ALLOC from cuMemAllocAsync: valid on |owner| after op
	 * |alloc_seq| of it, and on other streams only once the host saw
	 * that point done (owner then NULL); |free_pending| from
	 * cuMemFreeAsync on, until the free runs. */
	struct CUstream_st *owner;
	uint64_t alloc_seq;
	int free_pending;
	int async;                /* from cuMemAllocAsync: the pool's */
	/* The latest use by each of a few streams (op numbers there): a
	 * free on another stream must come after the host saw them done. */
	struct {
		const struct CUstream_st *stream;
		uint64_t seq;
	} users[4];
	struct fake_handle *handle; /* REGION_MAPPED */
	/* REGION_ALLOC: the context current at the allocation, for
	 * cuPointerGetAttribute (a mapping's device is its handle's). */
	struct CUctx_st *ctx;
	void *block;              /* REGION_ALLOC/PINNED: what to free */
	uint8_t *written;         /* REGION_ALLOC: see "Written bytes" */
};

struct fake_handle {
	int fd;
	size_t size;
	int ordinal; /* the device of cuMemCreate's location */
	int mappings;
	int released;
	uint8_t *written; /* see "Written bytes" */
};

static struct region *regions;
static size_t region_count, region_capacity;
static size_t device_bytes;     /* allocations + physical handles */
/* The default pool's bytes (cuMemAllocAsync's, until their free runs:
 * this pool caches nothing) and their high-water mark. */
static size_t pool_bytes, pool_bytes_high;
static struct fakecuda_stats stats;
/* A kernel or copy hit bad memory. Atomic: streams set it under L, and
 * every call reads it (need_context) without taking L. */
static _Atomic CUresult sticky;
/* Atomic too: a second runtime's cuInit may run while the first's
 * client threads call in (the driver's cuInit is thread-safe). */
static _Atomic int initialised;

static _Thread_local CUcontext current;

/* A device's primary context: alive while retained; each life is a new
 * generation, so streams of an earlier one are recognisably stale. */
struct CUctx_st {
	int ordinal;
	int refs, alive;
	unsigned generation;
	/* Its legacy default stream (CU_STREAM_LEGACY), started at its
	 * first use in this life; NULL until then. */
	struct CUstream_st *legacy;
	/* cuCtxEnablePeerAccess'd devices, a bit an ordinal, this life. */
	unsigned peers;
};
static struct CUctx_st contexts[8];

static long env_long(const char *name, long fallback)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 0) : fallback;
}

static size_t granularity(void)
{
	return (size_t)2 << 20;
}

/*===----------------------------------------------------------------------===
 * Regions
 *===----------------------------------------------------------------------===*/

static int add_region(struct region r)
{
	if (region_count == region_capacity) {
		size_t cap = region_capacity ? region_capacity * 2 : 64;
		struct region *grown = realloc(regions, cap * sizeof *grown);
		if (!grown)
			return -1;
		regions = grown;
		region_capacity = cap;
	}
	regions[region_count++] = r;
	return 0;
}

static struct region *find_region(enum region_kind kind, uintptr_t base)
{
	for (size_t i = 0; i < region_count; i++)
		if (regions[i].kind == kind && regions[i].base == base)
			return &regions[i];
	return NULL;
}

static void drop_region(struct region *r)
{
	*r = regions[--region_count];
}

/* The region of |kind| holding address |p|. */
static struct region *region_at(enum region_kind kind, uintptr_t p)
{
	for (size_t i = 0; i < region_count; i++)
		if (regions[i].kind == kind && p >= regions[i].base &&
		    p - regions[i].base < regions[i].size)
			return &regions[i];
	return NULL;
}

/* Whether [p, p + n) is live device memory: inside one allocation, or a
 * run of accessible mappings. Called with L held. */
static int device_range_ok(uintptr_t p, size_t n)
{
	uintptr_t end = p + n;

	if (n == 0)
		return 1;
	if (end < p)
		return 0;
	struct region *a = region_at(REGION_ALLOC, p);
	if (a)
		return end - a->base <= a->size;
	while (p < end) {
		struct region *m = region_at(REGION_MAPPED, p);
		if (!m || !m->accessible)
			return 0;
		p = m->base + m->size;
	}
	return 1;
}

static int is_pinned(const void *p, size_t n)
{
	struct region *r = region_at(REGION_PINNED, (uintptr_t)p);

	return r && (uintptr_t)p + n - r->base <= r->size;
}

/*===----------------------------------------------------------------------===
 * Written bytes
 *
 * As compute-sanitizer's initcheck does: every allocation (and every
 * physical handle, whose bytes stay written wherever it is mapped) has a
 * bit a byte, set once something wrote the byte: a copy from the host, a
 * device-to-device copy from written bytes, a kernel's output. A copy
 * whose source, or a kernel whose input, holds a byte never written
 * reads garbage: that is reported on stderr and counted, once a call and
 * binding, and the work still runs, as on the GPU. The emulators mark
 * what each kernel reads and writes: whole bindings for elementwise
 * kernels, the elements or rows it touches for strided, gather and
 * matmul kernels. All with L held.
 *===----------------------------------------------------------------------===*/

static void bits_set(uint8_t *b, size_t from, size_t to)
{
	for (; from < to && from % 8; from++)
		b[from / 8] |= (uint8_t)(1u << from % 8);
	if (to - from >= 8) {
		memset(b + from / 8, 0xff, (to - from) / 8);
		from += (to - from) / 8 * 8;
	}
	for (; from < to; from++)
		b[from / 8] |= (uint8_t)(1u << from % 8);
}

static int bit(const uint8_t *b, size_t i)
{
	return b[i / 8] >> i % 8 & 1;
}

/* The first bit in [from, to) equal to |want|, or |to|. */
static size_t bits_find(const uint8_t *b, size_t from, size_t to, int want)
{
	uint8_t none = want ? 0x00 : 0xff;

	for (; from < to && from % 8; from++)
		if (bit(b, from) == want)
			return from;
	while (to - from >= 8 && b[from / 8] == none)
		from += 8;
	for (; from < to; from++)
		if (bit(b, from) == want)
			return from;
	return to;
}

/* The bits of the device memory at |p|: |*off| is p's there, |*avail| the
 * bytes up to the end of its allocation or mapping, |*base| and |*size|
 * that allocation's or mapping's; NULL if |p| is no device memory. */
static uint8_t *written_at(uintptr_t p, size_t *off, size_t *avail,
			   uintptr_t *base, size_t *size)
{
	struct region *r = region_at(REGION_ALLOC, p);

	if (!r)
		r = region_at(REGION_MAPPED, p);
	if (!r)
		return NULL;
	*off = p - r->base; /* a mapping starts at its handle's offset 0 */
	*avail = r->size - *off;
	*base = r->base;
	*size = r->size;
	return r->kind == REGION_ALLOC ? r->written : r->handle->written;
}

/* Something wrote [p, p + n). */
static void mark_written(uintptr_t p, size_t n)
{
	while (n) {
		size_t off, avail, size;
		uintptr_t base;
		uint8_t *b = written_at(p, &off, &avail, &base, &size);
		if (!b)
			return; /* not device memory: a fault of its own */
		size_t step = n < avail ? n : avail;
		bits_set(b, off, off + step);
		p += step;
		n -= step;
	}
}

/* The first byte of [p, p + n) never written, or 0 (never device
 * memory) if every one was; |*run| the bytes never written from there,
 * within its allocation, whose start and size go to |*base|, |*size|. */
static uintptr_t first_unwritten(uintptr_t p, size_t n, size_t *run,
				 uintptr_t *base, size_t *size)
{
	while (n) {
		size_t off, avail;
		uint8_t *b = written_at(p, &off, &avail, base, size);
		if (!b)
			return 0;
		size_t step = n < avail ? n : avail;
		size_t at = bits_find(b, off, off + step, 0);
		if (at < off + step) {
			*run = bits_find(b, at, off + step, 1) - at;
			return p + (at - off);
		}
		p += step;
		n -= step;
	}
	return 0;
}

/* Reports a read of [p, p + n) by |what| (a copy's source, a kernel's
 * input) if it holds a byte never written; returns 0 then. */
static int read_written(const char *what, uintptr_t p, size_t n)
{
	size_t run = 0, size = 0;
	uintptr_t base = 0;
	uintptr_t bad = first_unwritten(p, n, &run, &base, &size);

	if (!bad)
		return 1;
	stats.uninit_reads++;
	fprintf(stderr, "fakecuda: uninitialised read: %s reads [0x%" PRIxPTR
		", 0x%" PRIxPTR "), and [0x%" PRIxPTR ", 0x%" PRIxPTR ") of it "
		"was never written (device memory 0x%" PRIxPTR ", %zu "
		"bytes)\n", what, p, p + n, bad, bad + run, base, size);
	return 0;
}

/* A device-to-device copy of |n| bytes: what was written at |src| is
 * written at |dst|, the rest stays unwritten. */
static void copy_written(uintptr_t dst, uintptr_t src, size_t n)
{
	size_t done = 0;

	while (done < n) {
		size_t run = 0, size;
		uintptr_t base;
		uintptr_t bad = first_unwritten(src + done, n - done, &run,
						&base, &size);
		size_t good = bad ? bad - (src + done) : n - done;
		mark_written(dst + done, good);
		done += good + run;
	}
}

/*===----------------------------------------------------------------------===
 * Streams
 *===----------------------------------------------------------------------===*/

/* OP_WAIT: cuStreamWaitEvent (the stream holds until another's op ran);
 * OP_HOST: fakecuda_enqueue's work of a stand-in library (fakenccl);
 * OP_HOSTFN: cuLaunchHostFunc (not called once the context faulted, as
 * the driver documents). */
enum op_kind { OP_COPY, OP_KERNEL, OP_EVENT, OP_FREE, OP_WAIT, OP_HOST,
	       OP_HOSTFN };

struct fake_kernel;

struct op {
	enum op_kind kind;
	uint64_t seq;  /* in its stream */
	uint64_t gseq; /* across all streams: orders an event's records */
	/* OP_COPY: from |src| to |dst|; |check_dst|/|check_src| say which
	 * side is device memory; |owned| is a snapshot to free after. */
	void *dst;
	const void *src;
	size_t n;
	int check_dst, check_src;
	void *owned;
	/* OP_KERNEL */
	const struct fake_kernel *kernel;
	unsigned uninit_seen; /* bindings reported reading unwritten bytes */
	uint64_t cost; /* bytes its bindings span, for the fake clock */
	uintptr_t ptr[4];
	unsigned char params[512]; /* the largest block, with room */
	unsigned grid[3], block[3];
	/* OP_EVENT */
	struct CUevent_st *event;
	/* OP_FREE */
	uintptr_t free_ptr;
	/* OP_WAIT: until op |wait_seq| of |wait_for| ran (NULL once that
	 * stream is gone: all its work ran). */
	struct CUstream_st *wait_for;
	uint64_t wait_seq;
	/* OP_HOST: |host_run|(|host_arg|) over the device ranges of
	 * |access|, checked and marked as a kernel's bindings are. */
	fakecuda_host_fn host_run;
	void *host_arg;
	/* OP_HOSTFN: |host_fn|(|host_arg|). */
	CUhostFn host_fn;
	struct fakecuda_access *access;
	size_t access_count;
	/* FAKECUDA_DELAY_US when it was issued (read on the issuing thread:
	 * a test that sets it with setenv while streams run would race with
	 * a getenv on the stream's thread). */
	long delay_us;
	struct op *next;
};

struct CUstream_st {
	pthread_t thread;
	struct op *head, *tail;
	struct op *running;
	int busy, stop;
	uint64_t issued, done;
	/* The context it was created in, and that context's life. */
	struct CUctx_st *ctx;
	unsigned generation;
	int dead; /* its context was destroyed: the thread is gone */
	/* Created CU_STREAM_DEFAULT (blocking: ordered with the legacy
	 * stream), or the context's legacy stream itself. */
	int blocking, legacy;
	uint64_t seen; /* the host saw its ops up to this one done */
	/* cuStreamBeginCapture: ops go to |captured| instead of running;
	 * any but a kernel invalidates the capture (the stand-in's graphs
	 * hold kernels only). */
	int capturing, capture_invalid;
	struct op *captured, *captured_tail;
	/* cuStreamWaitEvent: work queued here from now on runs after op
	 * |seq| of |stream| (the latest wait on each of a few streams), which
	 * orders stream-ordered memory between the two as the host seeing it
	 * done does. */
	struct {
		const struct CUstream_st *stream;
		uint64_t seq;
	} waits[8];
	struct CUstream_st *next; /* every stream not yet destroyed */
};

static struct CUstream_st *streams;

struct CUevent_st {
	unsigned flags;
	uint64_t recorded, completed;
	uint64_t when; /* the fake clock at its latest record */
	/* The latest record: on which stream, as its op number there. */
	struct CUstream_st *stream;
	uint64_t stream_seq;
	/* cuEventDestroy came while a record was pending: freed when that
	 * record runs (run_op), as the driver defers it. */
	int destroyed;
	struct CUevent_st *next; /* every event not yet destroyed */
};

static struct CUevent_st *events;

static void delay(const struct op *o)
{
	if (o->delay_us > 0)
		usleep((useconds_t)o->delay_us);
}

static void run_kernel(struct op *o);
static void forget_event(struct CUevent_st *e);

/* What events time: a fake clock in nanoseconds that each op advances by
 * 1 us plus 1 ns a byte it moves (a kernel: a byte its bindings span), so
 * timers measure work, the same on every run, whatever the host's load. */
static uint64_t clock_ns;

/* Runs |o| (L not held), then reports it done. */
/* Device memory is freed only while no copy or kernel runs on another
 * stream: those touch it outside L, and a free that a test orders
 * wrongly on purpose (reported as CUDA_ERROR_ILLEGAL_ADDRESS) must not
 * become a real use after free in the stand-in. Copies and kernels never
 * wait on anything, so this cannot deadlock. L held. */
static void wait_device_work(const struct op *self)
{
	for (;;) {
		const struct CUstream_st *t = streams;
		for (; t; t = t->next)
			if (t->running && t->running != self &&
			    (t->running->kind == OP_COPY ||
			     t->running->kind == OP_KERNEL))
				break;
		if (!t)
			return;
		pthread_cond_wait(&C, &L);
	}
}

static void run_op(struct op *o)
{
	delay(o);
	pthread_mutex_lock(&L);
	int ok = sticky == CUDA_SUCCESS;
	if (ok && o->kind == OP_COPY)
		ok = (!o->check_dst || device_range_ok((uintptr_t)o->dst, o->n)) &&
		     (!o->check_src || device_range_ok((uintptr_t)o->src, o->n));
	if (!ok && sticky == CUDA_SUCCESS)
		sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
	if (ok && o->kind == OP_COPY && o->check_src)
		read_written(o->check_dst ? "cuMemcpyDtoDAsync's source"
					  : "cuMemcpyDtoHAsync's source",
			     (uintptr_t)o->src, o->n);
	for (size_t i = 0; ok && o->kind == OP_HOST && i < o->access_count;
	     i++)
		ok = device_range_ok(o->access[i].ptr, o->access[i].bytes);
	if (!ok && sticky == CUDA_SUCCESS)
		sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
	for (size_t i = 0; ok && o->kind == OP_HOST && i < o->access_count;
	     i++) {
		if (o->access[i].write)
			mark_written(o->access[i].ptr, o->access[i].bytes);
		else
			read_written("fakecuda_enqueue's input",
				     o->access[i].ptr, o->access[i].bytes);
	}
	if (ok && o->kind == OP_COPY && o->check_dst && o->check_src)
		copy_written((uintptr_t)o->dst, (uintptr_t)o->src, o->n);
	else if (ok && o->kind == OP_COPY && o->check_dst)
		mark_written((uintptr_t)o->dst, o->n);
	pthread_mutex_unlock(&L);

	if (ok && o->kind == OP_COPY)
		memcpy(o->dst, o->src, o->n);
	if (ok && o->kind == OP_KERNEL)
		run_kernel(o);
	/* Told when the stream faulted (ok 0: touch no memory), so that it
	 * can let go of what it holds. */
	if (o->kind == OP_HOST)
		o->host_run(o->host_arg, ok);
	if (o->kind == OP_HOSTFN && ok)
		o->host_fn(o->host_arg);

	pthread_mutex_lock(&L);
	clock_ns += 1000 + (o->kind == OP_COPY ? o->n : o->cost);
	if (o->kind == OP_WAIT)
		clock_ns -= 1000; /* a wait does no work */
	if (o->kind == OP_EVENT) {
		struct CUevent_st *e = o->event;
		e->when = clock_ns;
		if (o->gseq > e->completed)
			e->completed = o->gseq;
		if (e->destroyed && e->completed >= e->recorded)
			forget_event(e);
	}
	if (o->kind == OP_FREE) {
		wait_device_work(o);
		struct region *r = find_region(REGION_ALLOC, o->free_ptr);
		if (r) {
			device_bytes -= r->size;
			if (r->async)
				pool_bytes -= r->size;
			free(r->block);
			free(r->written);
			drop_region(r);
		}
	}
	pthread_mutex_unlock(&L);
	free(o->owned);
	free(o->access);
}

/* Whether |o|, next on |s|, must wait for another stream of its context:
 * the legacy stream's work runs after what every blocking stream was
 * given before it, and a blocking stream's after what the legacy stream
 * was given before it (<cuda.h>'s "implicit synchronization"). Queues
 * run in |gseq| order and each op waits only for lower numbers, so no
 * two wait for each other. L held. */
static int held_back(const struct CUstream_st *s, const struct op *o)
{
	if (o->kind == OP_WAIT && o->wait_for &&
	    o->wait_for->done < o->wait_seq)
		return 1;
	if (!s->legacy && !s->blocking)
		return 0;
	for (const struct CUstream_st *t = streams; t; t = t->next) {
		if (t == s || t->ctx != s->ctx ||
		    !(s->legacy ? t->blocking : t->legacy))
			continue;
		if ((t->running && t->running->gseq < o->gseq) ||
		    (t->head && t->head->gseq < o->gseq))
			return 1;
	}
	return 0;
}

static void *stream_main(void *arg)
{
	struct CUstream_st *s = arg;

	pthread_mutex_lock(&L);
	for (;;) {
		while ((!s->head && !s->stop) ||
		       (s->head && held_back(s, s->head)))
			pthread_cond_wait(&C, &L);
		if (!s->head)
			break;
		struct op *o = s->head;
		s->head = o->next;
		if (!s->head)
			s->tail = NULL;
		s->busy = 1;
		s->running = o;
		pthread_mutex_unlock(&L);
		run_op(o);
		pthread_mutex_lock(&L);
		s->running = NULL;
		free(o);
		s->busy = 0;
		s->done++;
		pthread_cond_broadcast(&C);
	}
	pthread_mutex_unlock(&L);
	return NULL;
}

static uint64_t global_seq;

/* Queues |o| on |s|; returns its number in the stream. L held. */
static uint64_t push_op(struct CUstream_st *s, struct op *o)
{
	o->delay_us = env_long("FAKECUDA_DELAY_US", 0);
	o->next = NULL;
	if (s->capturing) {
		if (o->kind != OP_KERNEL)
			s->capture_invalid = 1;
		if (s->captured_tail)
			s->captured_tail->next = o;
		else
			s->captured = o;
		s->captured_tail = o;
		return 0;
	}
	o->gseq = ++global_seq;
	if (s->tail)
		s->tail->next = o;
	else
		s->head = o;
	s->tail = o;
	o->seq = ++s->issued;
	pthread_cond_broadcast(&C);
	return o->seq;
}

/* Waits until op |seq| of |s| ran. L held. */
static void wait_stream(struct CUstream_st *s, uint64_t seq)
{
	while (s->done < seq)
		pthread_cond_wait(&C, &L);
}

/*===----------------------------------------------------------------------===
 * Stream-ordered memory
 *
 * cuMemAllocAsync memory may be used on its stream after the allocation,
 * and on another stream only once that stream is ordered after it; here,
 * once the host saw the allocating stream pass the allocation
 * (cuStreamSynchronize, or an event recorded after it completing). After
 * cuMemFreeAsync nothing may use it, and the free must come after every
 * use on other streams. A use that breaks this gets the sticky
 * CUDA_ERROR_ILLEGAL_ADDRESS (reported by the next call, a sync at the
 * latest) and a line on stderr: on a GPU it is a race that corrupts
 * memory now and then.
 *===----------------------------------------------------------------------===*/

/* The context gets the sticky |error|, and stderr says why. L held. */
static void fault(CUresult error, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
static void fault(CUresult error, const char *format, ...)
{
	va_list ap;

	fputs("fakecuda: ", stderr);
	va_start(ap, format);
	vfprintf(stderr, format, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (sticky == CUDA_SUCCESS)
		sticky = error;
}

static struct region *region_at(enum region_kind kind, uintptr_t p);

/* Whether work queued now on |later| runs after all work queued so far
 * on |earlier|: the same stream, or the legacy stream and a blocking
 * stream of one context, either way round (held_back). */
static int ordered(const struct CUstream_st *earlier,
		   const struct CUstream_st *later)
{
	/* (cuStreamWaitEvent orders up to an op: waited_for.) */
	if (earlier == later)
		return 1;
	if (earlier->ctx != later->ctx ||
	    earlier->generation != later->generation)
		return 0;
	return earlier->legacy ? later->blocking
			       : earlier->blocking && later->legacy;
}

/* Whether work queued now on |s| runs after op |seq| of |t| through a
 * cuStreamWaitEvent. L held. */
static int waited_for(const struct CUstream_st *s, const struct CUstream_st *t,
		      uint64_t seq)
{
	for (int i = 0; i < 8; i++)
		if (s->waits[i].stream == t && s->waits[i].seq >= seq)
			return 1;
	return 0;
}

/* The first use by a stream not ordered before |s| that the host has
 * not seen done, or NULL. L held. */
static const struct CUstream_st *unordered_user(const struct CUstream_st *s,
						const struct region *r)
{
	for (int i = 0; i < 4; i++)
		if (r->users[i].stream && !ordered(r->users[i].stream, s) &&
		    r->users[i].seq > r->users[i].stream->seen &&
		    !waited_for(s, r->users[i].stream, r->users[i].seq))
			return r->users[i].stream;
	return NULL;
}

/* Notes that the next op of |s| uses |r|. L held. */
static void note_use(const struct CUstream_st *s, struct region *r)
{
	int at = -1;

	for (int i = 0; i < 4 && at < 0; i++)
		if (r->users[i].stream == s)
			at = i;
	/* Else a free slot, or one whose use the host saw done. */
	for (int i = 0; i < 4 && at < 0; i++)
		if (!r->users[i].stream ||
		    r->users[i].seq <= r->users[i].stream->seen)
			at = i;
	if (at < 0)
		at = 0; /* more streams than slots: check fewer */
	r->users[at].stream = s;
	r->users[at].seq = s->issued + 1;
}

/* Whether |s| may use device address |p| now (an op being queued). L
 * held. */
static int use_ok(const struct CUstream_st *s, uintptr_t p, const char *what)
{
	struct region *r = region_at(REGION_ALLOC, p);

	if (!r)
		return 1;
	if (r->free_pending) {
		fault(CUDA_ERROR_ILLEGAL_ADDRESS, "%s: 0x%" PRIxPTR " on "
		      "stream %p, after its cuMemFreeAsync", what, p,
		      (void *)s);
		return 0;
	}
	if (r->owner && !ordered(r->owner, s) &&
	    !waited_for(s, r->owner, r->alloc_seq)) {
		fault(CUDA_ERROR_ILLEGAL_ADDRESS, "%s: 0x%" PRIxPTR " on "
		      "stream %p, allocated by cuMemAllocAsync on stream %p "
		      "with nothing ordering the two", what, p, (void *)s,
		      (void *)r->owner);
		return 0;
	}
	note_use(s, r);
	return 1;
}

/* The host saw op |seq| of |s| done: its allocations up to there are
 * valid on every stream. L held. */
static void ordered_after(struct CUstream_st *s, uint64_t seq)
{
	if (seq > s->seen)
		s->seen = seq;
	for (size_t i = 0; i < region_count; i++)
		if (regions[i].owner == s && regions[i].alloc_seq <= seq)
			regions[i].owner = NULL;
}

/*===----------------------------------------------------------------------===
 * Error names
 *===----------------------------------------------------------------------===*/

static const struct {
	CUresult code;
	const char *name, *text;
} errors[] = {
	{CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
	{CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE",
	 "invalid argument"},
	{CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
	 "initialization error"},
	{CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
	 "no CUDA-capable device is detected"},
	{CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
	 "invalid device ordinal"},
	{CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
	 "invalid device context"},
	{CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
	 "invalid resource handle"},
	{CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
	{CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
	 "an illegal memory access was encountered"},
	{CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
	 "operation not supported"},
	{CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE",
	 "device kernel image is invalid"},
	{CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
	 "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	 "too many resources requested for launch"},
	{CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS",
	 "misaligned address"},
};

static CUresult fake_cuGetErrorName(CUresult error, const char **out)
{
	for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
		if (errors[i].code == error) {
			*out = errors[i].name;
			return CUDA_SUCCESS;
		}
	*out = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuGetErrorString(CUresult error, const char **out)
{
	for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
		if (errors[i].code == error) {
			*out = errors[i].text;
			return CUDA_SUCCESS;
		}
	*out = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

/*===----------------------------------------------------------------------===
 * Initialisation, devices, contexts
 *===----------------------------------------------------------------------===*/

static int device_count(void)
{
	long n = env_long("FAKECUDA_DEVICES", 1);

	return n < 0 ? 0 : n > 8 ? 8 : (int)n;
}

/* Most calls: the driver is initialised and a context is current. */
static CUresult need_context(void)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!current || !current->alive)
		return CUDA_ERROR_INVALID_CONTEXT;
	return sticky;
}

/* The per-thread default stream (CU_STREAM_PER_THREAD) and the NULL
 * handle (the default stream to the driver) are not modelled: a handle
 * that is one of them says so on stderr, and the call is refused (never
 * dereferenced). CU_STREAM_LEGACY is (resolve_stream). */
static int default_stream(const struct CUstream_st *s, const char *what)
{
	if (s == CU_STREAM_LEGACY ||
	    (uintptr_t)s > (uintptr_t)CU_STREAM_PER_THREAD)
		return 0;
	fprintf(stderr, "fakecuda: %s: default stream %p: not modelled\n",
		what, (const void *)s);
	return 1;
}

/* A stream of |ctx| with its worker thread, in |streams|; NULL if none
 * can be made. L held. */
static struct CUstream_st *new_stream(struct CUctx_st *ctx, int blocking,
				      int legacy)
{
	struct CUstream_st *s = calloc(1, sizeof *s);

	if (!s)
		return NULL;
	s->ctx = ctx;
	s->generation = ctx->generation;
	s->blocking = blocking;
	s->legacy = legacy;
	/* The thread starts by taking L: it waits until we are done. */
	if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
		free(s);
		return NULL;
	}
	s->next = streams;
	streams = s;
	if (!legacy)
		stats.streams_live++;
	return s;
}

/* CU_STREAM_LEGACY names the legacy default stream of the context
 * current on the calling thread (CUDA_ERROR_INVALID_CONTEXT if none):
 * |*s| becomes that stream, started at its first use. Any other handle
 * is left as it is. L not held. */
static CUresult resolve_stream(CUstream *s)
{
	struct CUstream_st *legacy;

	if (*s != CU_STREAM_LEGACY)
		return CUDA_SUCCESS;
	if (!current || !current->alive)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&L);
	if (!current->legacy)
		current->legacy = new_stream(current, 0, 1);
	legacy = current->legacy;
	pthread_mutex_unlock(&L);
	if (!legacy)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*s = legacy;
	return CUDA_SUCCESS;
}

/* Whether work may go on |*s| now (CU_STREAM_LEGACY resolved in place):
 * its context must be alive (else CUDA_ERROR_INVALID_CONTEXT) and
 * current (else the handle is not one of this context's:
 * CUDA_ERROR_INVALID_HANDLE). */
static CUresult stream_usable(CUstream *sp)
{
	CUresult r;

	if (!*sp)
		return CUDA_ERROR_INVALID_HANDLE;
	if (default_stream(*sp, "a stream argument"))
		return CUDA_ERROR_INVALID_HANDLE;
	r = resolve_stream(sp);
	if (r)
		return r;
	const struct CUstream_st *s = *sp;
	if (s->dead || !s->ctx->alive || s->ctx->generation != s->generation)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (s->ctx != current)
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

/* A new op for stream |*sp| (resolved as stream_usable does), to fill
 * in and push_op: the stream's error, or CUDA_ERROR_OUT_OF_MEMORY. */
static CUresult op_on(CUstream *sp, struct op **out)
{
	CUresult r = stream_usable(sp);

	if (r)
		return r;
	*out = calloc(1, sizeof **out);
	return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult fake_cuInit(unsigned flags)
{
	CUresult r = (CUresult)env_long("FAKECUDA_INIT", 0);

	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS)
		initialised = 1;
	return r;
}

static CUresult fake_cuDeviceGetCount(int *count)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	*count = device_count();
	return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGet(CUdevice *dev, int ordinal)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ordinal < 0 || ordinal >= device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = ordinal;
	return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetName(char *name, int len, CUdevice dev)
{
	if (dev < 0 || dev >= device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "Fake GPU %d", (int)dev);
	return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
	if (dev < 0 || dev >= device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	*bytes = (size_t)env_long("FAKECUDA_MEMORY", 1L << 30);
	return CUDA_SUCCESS;
}

/* The attributes the plugin reads (plugins/cuda/plugin.c), as an H200
 * (sm_90) answers them; FAKECUDA_ARCH, FAKECUDA_NO_VMM and
 * FAKECUDA_NO_POOLS play older or smaller GPUs. */
static CUresult fake_cuDeviceGetAttribute(int *value, CUdevice_attribute a,
					  CUdevice dev)
{
	long arch = env_long("FAKECUDA_ARCH", 90);

	if (dev < 0 || dev >= device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		*value = (int)(arch / 10);
		break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
		*value = (int)(arch % 10);
		break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		*value = 132;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
		*value = 227 << 10;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		*value = 1024;
		break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
		*value = 32;
		break;
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
		*value = !getenv("FAKECUDA_NO_VMM");
		break;
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
		*value = !getenv("FAKECUDA_NO_POOLS");
		break;
	default:
		/* Not one the stand-in knows (the driver would answer every
		 * valid one): a plugin reading a new attribute must teach
		 * the stand-in its H200 value first. */
		fprintf(stderr, "fakecuda: cuDeviceGetAttribute(%d): not "
			"modelled\n", (int)a);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&L);
	contexts[dev].ordinal = dev;
	if (!contexts[dev].alive) {
		contexts[dev].alive = 1;
		contexts[dev].generation++;
		contexts[dev].peers = 0;
	}
	contexts[dev].refs++;
	pthread_mutex_unlock(&L);
	*ctx = &contexts[dev];
	return CUDA_SUCCESS;
}

static void stop_stream(struct CUstream_st *s);

/* The last release destroys the context, and with it its streams: their
 * work is finished, their threads end, and their handles become stale. */
static CUresult fake_cuDevicePrimaryCtxRelease(CUdevice dev)
{
	struct CUctx_st *ctx;

	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	ctx = &contexts[dev];
	pthread_mutex_lock(&L);
	if (!ctx->alive) {
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	if (--ctx->refs > 0) {
		pthread_mutex_unlock(&L);
		return CUDA_SUCCESS;
	}
	ctx->alive = 0;
	/* From the head again after each stop: the list may change while L
	 * is dropped. */
	for (struct CUstream_st *t = streams; t;) {
		/* (A stream being destroyed is being stopped already.) */
		if (t->ctx != ctx || t->dead || t->stop) {
			t = t->next;
			continue;
		}
		t->dead = 1;
		pthread_mutex_unlock(&L);
		stop_stream(t);
		pthread_mutex_lock(&L);
		/* Nobody holds the legacy stream's handle: it goes now, and
		 * the context's next life starts another. */
		if (t == ctx->legacy) {
			for (struct CUstream_st **at = &streams; *at;
			     at = &(*at)->next)
				if (*at == t) {
					*at = t->next;
					break;
				}
			ctx->legacy = NULL;
			free(t);
		}
		t = streams;
	}
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

/* Any two devices of the stand-in reach each other. */
static CUresult fake_cuDeviceCanAccessPeer(int *can, CUdevice dev,
					   CUdevice peer)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= device_count() || peer < 0 ||
	    peer >= device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	*can = dev != peer;
	return CUDA_SUCCESS;
}

/* As the driver: once per pair of live contexts, never with itself. */
static CUresult fake_cuCtxEnablePeerAccess(CUcontext peer, unsigned flags)
{
	CUresult r = need_context();

	if (r)
		return r;
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!peer || !peer->alive)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (peer == current)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&L);
	if (current->peers & (1u << peer->ordinal)) {
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
	}
	current->peers |= 1u << peer->ordinal;
	stats.peer_enables++;
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

/* The plugin asks before it sets (cuda_enter); t/standins/fakenccl.c checks
 * that a context is current as NCCL's runtime needs one. */
static CUresult fake_cuCtxGetCurrent(CUcontext *out)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	*out = current;
	return CUDA_SUCCESS;
}

/* For t/standins/fakenccl.c: the device of the current context. */
static CUresult fake_cuCtxGetDevice(CUdevice *out)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!current || !current->alive)
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = current->ordinal;
	return CUDA_SUCCESS;
}

static CUresult fake_cuCtxSetCurrent(CUcontext ctx)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	current = ctx;
	pthread_mutex_lock(&L);
	stats.context_sets++;
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

/*===----------------------------------------------------------------------===
 * Modules and kernels
 *===----------------------------------------------------------------------===*/

typedef void (*emulator_fn)(struct op *o);

/* Element types of emulated kernels. */
enum { T_F32, T_F16, T_BF16, T_B16, T_I32, T_F64, T_I64, T_U8, T_B64, T_B8 };

struct fake_kernel {
	char name[128];
	emulator_fn run;
	int pointers;       /* leading pointer arguments */
	size_t params_size; /* the parameter block after them */
	int dtype;          /* T_*: every binding's, or a cast's source */
	int dtype_out;      /* a cast's target */
	int op;             /* which unary, binary or reduction */
	/* The launch shape the kernel is written for (see shapes below):
	 * at most |threads| a block (its __launch_bounds__), exactly that
	 * many when |exact|; a matmul's tile of C per block; a layout
	 * kernel's transposes (-1: it reads p.trans_a/b); 32-bit indices. */
	unsigned threads;
	int exact;
	unsigned tile_m, tile_n;
	int layout_ta, layout_tb;
	int narrow;
	struct CUmod_st *module;
	uint32_t magic; /* KERNEL_MAGIC while its module is loaded */
	fakecuda_program_fn *program; /* a program's (fakecuda_program.c) */
};

#define KERNEL_MAGIC 0x6b65726eu

struct CUmod_st {
	const char *image;
	size_t image_size;
	void *owned; /* a program's image, copied: the caller frees its own */
	struct fake_kernel *kernels[256];
	int kernel_count;
};

/* The fatbin's length: its header says (magic 0xba55ed50, then the
 * header size and the size of what follows). */
static size_t fatbin_size(const void *image)
{
	const unsigned char *p = image;
	uint32_t magic;
	uint16_t header;
	uint64_t body;

	memcpy(&magic, p, 4);
	if (magic != 0xba55ed50u)
		return 0;
	memcpy(&header, p + 6, 2);
	memcpy(&body, p + 8, 8);
	return header + body;
}

static CUresult fake_cuModuleLoadData(CUmodule *module, const void *image)
{
	CUresult r = need_context();
	struct CUmod_st *m;

	if (r)
		return r;
	size_t n = fatbin_size(image);
	void *owned = NULL;
	if (!n && (n = fakecuda_program_image_size(image))) {
		owned = malloc(n);
		if (!owned)
			return CUDA_ERROR_OUT_OF_MEMORY;
		image = memcpy(owned, image, n);
	}
	if (!n)
		return CUDA_ERROR_INVALID_IMAGE;
	m = calloc(1, sizeof *m);
	if (!m) {
		free(owned);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->owned = owned;
	m->image = image;
	m->image_size = n;
	*module = m;
	pthread_mutex_lock(&L);
	stats.modules_loaded++;
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

static CUresult fake_cuModuleLoadDataEx(CUmodule *module, const void *image,
					unsigned count, CUjit_option *keys,
					void **values)
{
	CUresult r = fakecuda_program_check(image, count, keys, values);

	return r ? r : fake_cuModuleLoadData(module, image);
}

static CUresult fake_cuModuleUnload(CUmodule module)
{
	CUresult r = need_context();

	if (r && r != sticky)
		return r;
	for (int i = 0; i < module->kernel_count; i++) {
		module->kernels[i]->magic = 0;
		free(module->kernels[i]);
	}
	free(module->owned);
	free(module);
	return CUDA_SUCCESS;
}

static void emulate_noop(struct op *o);
static void emulate_fill(struct op *o);
static void emulate_copy(struct op *o);
static void emulate_unary(struct op *o);
static void emulate_binary(struct op *o);
static void emulate_scalar(struct op *o);
static void emulate_strided(struct op *o);
static void emulate_gather(struct op *o);
static void emulate_cast(struct op *o);
static void emulate_rows(struct op *o);
static void emulate_matmul(struct op *o);
static void emulate_program(struct op *o);

/* Operations, in the order of these names (the catalogue's): unary, then
 * binary, then the row kernels. */
#define COUNT_OF(a) (sizeof(a) / sizeof(a)[0])
static const char *const unary_names[] = {
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference) #name,
#include <wafer/catalogue.def>
};
static const char *const binary_names[] = {
#define WAFER_CATALOGUE_BINARY(name, NAME, reference) #name,
#include <wafer/catalogue.def>
};
static const char *const rows_names[] = {
#define WAFER_CATALOGUE_ROWS(name, NAME, dtypes, output) #name,
#include <wafer/catalogue.def>
};

/* T_* of a dtype suffix; -1 if none. */
static int suffix_dtype(const char *suffix)
{
	static const char *const names[] = {"f32", "f16", "bf16", "b16",
					    "b32", "i32", "f64", "i64",
					    "u8",  "b64", "b8"};
	static const int codes[] = {T_F32, T_F16, T_BF16, T_B16,
				    T_F32, T_I32, T_F64, T_I64,
				    T_U8,  T_B64, T_B8};

	for (int i = 0; i < 11; i++)
		if (strcmp(suffix, names[i]) == 0)
			return codes[i];
	return -1;
}

/* |name| is |prefix| followed by a dtype suffix, optionally "_i64": sets
 * k->dtype and returns 1. */
static int named(struct fake_kernel *k, const char *name, const char *prefix)
{
	size_t len = strlen(prefix);
	char suffix[16];

	if (strncmp(name, prefix, len) != 0)
		return 0;
	snprintf(suffix, sizeof suffix, "%s", name + len);
	char *wide = strstr(suffix, "_i64");
	if (wide && wide[4] == '\0')
		*wide = '\0';
	k->dtype = suffix_dtype(suffix);
	return k->dtype >= 0;
}

static void set_run(struct fake_kernel *k, emulator_fn run, int pointers,
		    size_t params_size)
{
	k->run = run;
	k->pointers = pointers;
	k->params_size = params_size;
}

/* The matmul variants of plugins/cuda/kernels/matmul.cu: the tile of C
 * each block computes (grid = n tiles x m tiles x batch), and whether the
 * variant is one kernel per layout (_nn, _nt, _tn, _tt), which ignores
 * p.trans_a/b and reads 16-byte vectors along every stored row. Keep in
 * step with matmul.cu's TILED/REG/WARP/WMMA lines. */
static const struct {
	const char *variant;
	unsigned tile_m, tile_n;
	int layouts;
} matmul_variants[] = {
	{"tile64", 64, 64, 0},       {"tile128", 128, 128, 0},
	{"reg128", 128, 128, 1},     {"reg128k16", 128, 128, 1},
	{"reg128x64", 128, 64, 1},   {"warp128", 128, 128, 1},
	{"warp128x256", 128, 256, 1}, {"tf32", 128, 128, 0},
	{"wmma", 128, 128, 0},
};

/* The launch shapes, from the kernel sources (every kernel of
 * elementwise.cu, strided.cu, reduce.cu and matmul.cu is
 * __launch_bounds__(256)):
 *
 *   noop                      no bounds: up to the device's 1024 threads.
 *   elementwise, strided,     grid-stride loops over blockIdx.x *
 *   copy_strided, cast        blockDim.x + threadIdx.x: any grid x and
 *                             block x <= 256 cover every element.
 *   reduce_*, softmax         a block per row, striding over rows by
 *                             gridDim.x: any grid x covers every row; the
 *                             block must be exactly 256 (the column loop
 *                             strides by 256, block_reduce has 8 warps).
 *   matmul_*                  block (x, y, z) computes C's tile rows
 *                             [y * BM, y * BM + BM), columns [x * BN, x *
 *                             BN + BN) of batch entry z; exactly 256.
 *
 * All are 1-D blocks (y = z = 1). A block above the bounds fails with
 * CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, as the driver fails it; a shape a
 * kernel is not written for (2-D blocks, fewer threads than an exact
 * kernel needs) with CUDA_ERROR_INVALID_VALUE and a line on stderr: the
 * driver would launch it and the kernel compute garbage. */
static void set_shape(struct fake_kernel *k, unsigned threads, int exact)
{
	k->threads = threads;
	k->exact = exact;
}

/* Fills in how |k| (named already) is emulated and launched; 0 if the
 * stand-in has no emulation for it. */
static int find_emulator(struct fake_kernel *k)
{
	const char *name = k->name;
	char prefix[64];

	k->layout_ta = k->layout_tb = -1;
	set_shape(k, 256, 0);
	/* A program's kernel takes any block; its emulation walks it. */
	if ((k->program = fakecuda_program_emulator(name, &k->pointers,
						    &k->params_size))) {
		k->run = emulate_program;
		set_shape(k, 1024, 0);
		return 1;
	}
	if (strncmp(name, "wafer_", 6) != 0)
		return 0;
	name += 6;
	/* The 64-bit-index twins end in _i64; so does an int64 kernel's
	 * own name (add_strided_i64, whose twin is add_strided_i64_i64). */
	size_t len = strlen(name);
	int ends_i64 = len > 4 && strcmp(name + len - 4, "_i64") == 0;
	k->narrow = strstr(name, "strided_") &&
		    (!ends_i64 || (len > 11 && strcmp(name + len - 11,
						      "strided_i64") == 0));
	if (strcmp(name, "noop") == 0) {
		set_shape(k, 1024, 0);
		k->run = emulate_noop;
		return 1;
	}
	if (strncmp(name, "matmul_", 7) == 0) {
		char dt[8] = "", variant[32] = "", layout[4] = "";
		if (sscanf(name + 7, "%7[a-z0-9]_%31[a-z0-9]_%3[a-z]", dt,
			   variant, layout) < 2)
			return 0;
		k->dtype = suffix_dtype(dt);
		if (k->dtype < 0)
			return 0;
		for (size_t i = 0;
		     i < sizeof matmul_variants / sizeof matmul_variants[0];
		     i++) {
			if (strcmp(variant, matmul_variants[i].variant) != 0)
				continue;
			if (matmul_variants[i].layouts) {
				if (strlen(layout) != 2 ||
				    !strchr("nt", layout[0]) ||
				    !strchr("nt", layout[1]))
					return 0;
				k->layout_ta = layout[0] == 't';
				k->layout_tb = layout[1] == 't';
			} else if (layout[0]) {
				return 0;
			}
			k->tile_m = matmul_variants[i].tile_m;
			k->tile_n = matmul_variants[i].tile_n;
			set_run(k, emulate_matmul, 3,
				sizeof(struct cuda_matmul_args));
			set_shape(k, 256, 1);
			return 1;
		}
		return 0;
	}
	if (strncmp(name, "cast_", 5) == 0) {
		char from[8] = "", to[8] = "";
		if (sscanf(name + 5, "%7[a-z0-9]_%7[a-z0-9]", from, to) != 2)
			return 0;
		k->dtype = suffix_dtype(from);
		k->dtype_out = suffix_dtype(to);
		if (k->dtype < 0 || k->dtype_out < 0)
			return 0;
		set_run(k, emulate_cast, 2, sizeof(struct wafer_cast_params));
		return 1;
	}
	if (named(k, name, "copy_strided_")) {
		set_run(k, emulate_gather, 2,
			sizeof(struct wafer_strided_copy_params));
		return 1;
	}
	if (named(k, name, "fill_")) {
		set_run(k, emulate_fill, 1, sizeof(struct wafer_fill_params));
		return 1;
	}
	if (named(k, name, "copy_")) {
		set_run(k, emulate_copy, 2,
			sizeof(struct wafer_elementwise_params));
		return 1;
	}
	for (int i = 0; i < (int)COUNT_OF(rows_names); i++) {
		snprintf(prefix, sizeof prefix, "%s_", rows_names[i]);
		if (named(k, name, prefix)) {
			k->op = i;
			set_run(k, emulate_rows, 2,
				sizeof(struct wafer_rows_params));
			set_shape(k, 256, 1);
			return 1;
		}
	}
	for (int i = 0; i < (int)COUNT_OF(unary_names); i++) {
		snprintf(prefix, sizeof prefix, "%s_", unary_names[i]);
		if (named(k, name, prefix)) {
			k->op = i;
			set_run(k, emulate_unary, 2,
				sizeof(struct wafer_elementwise_params));
			return 1;
		}
	}
	for (int i = 0; i < (int)COUNT_OF(binary_names); i++) {
		k->op = i;
		snprintf(prefix, sizeof prefix, "%s_scalar_", binary_names[i]);
		if (named(k, name, prefix)) {
			set_run(k, emulate_scalar, 2,
				sizeof(struct wafer_scalar_params));
			return 1;
		}
		snprintf(prefix, sizeof prefix, "%s_strided_", binary_names[i]);
		if (named(k, name, prefix)) {
			set_run(k, emulate_strided, 3,
				sizeof(struct wafer_binary_strided_params));
			return 1;
		}
		snprintf(prefix, sizeof prefix, "%s_", binary_names[i]);
		if (named(k, name, prefix)) {
			set_run(k, emulate_binary, 3,
				sizeof(struct wafer_elementwise_params));
			return 1;
		}
	}
	return 0;
}

static CUresult fake_cuModuleGetFunction(CUfunction *fn, CUmodule module,
					 const char *name)
{
	CUresult r = need_context();
	char entry[160];
	struct fake_kernel *k;

	if (r)
		return r;
	/* The PTX of the module declares each kernel as an entry. */
	snprintf(entry, sizeof entry, ".entry %s(", name);
	if (!memmem(module->image, module->image_size, entry, strlen(entry)) &&
	    !(module->owned && fakecuda_program_has_kernel(
				       module->image, module->image_size, name)))
		return CUDA_ERROR_NOT_FOUND;
	if (module->kernel_count == 256)
		return CUDA_ERROR_OUT_OF_MEMORY;
	k = calloc(1, sizeof *k);
	if (!k)
		return CUDA_ERROR_OUT_OF_MEMORY;
	snprintf(k->name, sizeof k->name, "%s", name);
	k->module = module;
	/* The driver finds the name; the stand-in cannot run it. Running
	 * it as a no-op would pass tests that a GPU fails. */
	if (!find_emulator(k)) {
		fprintf(stderr, "fakecuda: cuModuleGetFunction(%s): the "
			"stand-in has no emulation for this kernel\n", name);
		free(k);
		return CUDA_ERROR_NOT_FOUND;
	}
	k->magic = KERNEL_MAGIC;
	module->kernels[module->kernel_count++] = k;
	*fn = (CUfunction)k;
	return CUDA_SUCCESS;
}

static CUresult fake_cuFuncSetAttribute(CUfunction fn, CUfunction_attribute a,
					int value)
{
	return need_context();
}

static CUresult fake_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy,
				    unsigned gz, unsigned bx, unsigned by,
				    unsigned bz, unsigned smem, CUstream stream,
				    void **params, void **extra)
{
	struct fake_kernel *k = (struct fake_kernel *)f;
	CUresult r = need_context();
	struct op *o;

	if (r)
		return r;
	if (!k || k->magic != KERNEL_MAGIC)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!stream || extra)
		return CUDA_ERROR_INVALID_VALUE;
	r = stream_usable(&stream);
	if (r)
		return r;
	if (!gx || !gy || !gz || gx > 0x7fffffffu || gy > 65535 ||
	    gz > 65535 || !bx || !by || !bz || bx > 1024 || by > 1024 ||
	    bz > 64 || (uint64_t)bx * by * bz > 1024 || smem > 48 * 1024)
		return CUDA_ERROR_INVALID_VALUE;
	/* The kernel's own bounds (the shapes above). */
	if ((uint64_t)bx * by * bz > k->threads) {
		fprintf(stderr, "fakecuda: cuLaunchKernel(%s): block %ux%ux%u "
			"is more than its __launch_bounds__(%u)\n", k->name,
			bx, by, bz, k->threads);
		return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	}
	if (!k->program &&
	    (by != 1 || bz != 1 || (k->exact && bx != k->threads))) {
		fprintf(stderr, "fakecuda: cuLaunchKernel(%s): block %ux%ux%u, "
			"but the kernel is written for %s%ux1x1\n", k->name,
			bx, by, bz, k->exact ? "" : "at most ", k->threads);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if ((k->pointers || k->params_size) && !params)
		return CUDA_ERROR_INVALID_VALUE;
	if (k->params_size > sizeof o->params)
		return CUDA_ERROR_INVALID_VALUE; /* a fake too small: fix it */
	o = calloc(1, sizeof *o);
	if (!o)
		return CUDA_ERROR_OUT_OF_MEMORY;
	o->kind = OP_KERNEL;
	o->kernel = k;
	o->grid[0] = gx;
	o->grid[1] = gy;
	o->grid[2] = gz;
	o->block[0] = bx;
	o->block[1] = by;
	o->block[2] = bz;
	/* Arguments are read now, as the driver does. */
	for (int i = 0; i < k->pointers; i++)
		memcpy(&o->ptr[i], params[i], sizeof(CUdeviceptr));
	if (k->params_size)
		memcpy(o->params, params[k->pointers], k->params_size);
	pthread_mutex_lock(&L);
	for (int i = 0; i < k->pointers; i++)
		use_ok(stream, o->ptr[i], k->name);
	stats.launches++;
	push_op(stream, o);
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

/*===----------------------------------------------------------------------===
 * Kernel emulation
 *===----------------------------------------------------------------------===*/

static size_t size_of(int dtype)
{
	switch (dtype) {
	case T_F32: case T_I32: return 4;
	case T_F64: case T_I64: case T_B64: return 8;
	case T_U8: case T_B8: return 1;
	}
	return 2;
}

/* The types of typed.cu, computed in their own arithmetic (float64 in
 * double, the integers wrapping), not in float. */
static int typed(int dtype)
{
	return dtype == T_F64 || dtype == T_I32 || dtype == T_I64 ||
	       dtype == T_U8;
}

static int integer(int dtype)
{
	return dtype == T_I32 || dtype == T_I64 || dtype == T_U8;
}

static int64_t load_int(int dtype, const void *p, uint64_t i)
{
	switch (dtype) {
	case T_I32: return ((const int32_t *)p)[i];
	case T_I64: return ((const int64_t *)p)[i];
	case T_U8: return ((const uint8_t *)p)[i];
	}
	return 0;
}

/* An integer result, wrapped modulo the type's width. */
static void store_wrap(int dtype, void *p, uint64_t i, uint64_t v)
{
	switch (dtype) {
	case T_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
	case T_I64: ((int64_t *)p)[i] = (int64_t)v; break;
	case T_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
	}
}

/* plugin.h's cast rule into an integer type: toward zero, saturating,
 * NaN 0. */
static int64_t saturate(int dtype, double d)
{
	double lo = dtype == T_U8 ? 0 : dtype == T_I32 ? -2147483648.0
						      : -0x1p63;
	double hi = dtype == T_U8 ? 255 : dtype == T_I32 ? 2147483647.0
						       : 0x1p63;
	if (d != d)
		return 0;
	if (d <= lo)
		return dtype == T_I64 ? INT64_MIN : (int64_t)lo;
	if (d >= hi)
		return dtype == T_I64 ? INT64_MAX : (int64_t)hi;
	return (int64_t)d;
}

static int64_t clamp_int(int dtype, int64_t v)
{
	int64_t lo = dtype == T_U8 ? 0 : dtype == T_I32 ? INT32_MIN : INT64_MIN;
	int64_t hi = dtype == T_U8 ? 255 : dtype == T_I32 ? INT32_MAX : INT64_MAX;
	return v < lo ? lo : v > hi ? hi : v;
}

static float load_as(int dtype, const void *p, uint64_t i)
{
	switch (dtype) {
	case T_F32:
		return ((const float *)p)[i];
	case T_F16:
		return t_f16_to_float(((const uint16_t *)p)[i]);
	case T_BF16:
		return t_bf16_to_float(((const uint16_t *)p)[i]);
	case T_I32:
		return (float)((const int32_t *)p)[i];
	case T_F64:
		return (float)((const double *)p)[i];
	case T_I64:
	case T_U8:
		return (float)load_int(dtype, p, i);
	}
	return 0.0f;
}

static double load_double(int dtype, const void *p, uint64_t i)
{
	if (dtype == T_F64)
		return ((const double *)p)[i];
	if (integer(dtype))
		return (double)load_int(dtype, p, i);
	return load_as(dtype, p, i);
}

static void store_as(int dtype, void *p, uint64_t i, float v)
{
	switch (dtype) {
	case T_F32:
		((float *)p)[i] = v;
		break;
	case T_F16:
		((uint16_t *)p)[i] = t_float_to_f16(v);
		break;
	case T_BF16:
		((uint16_t *)p)[i] = t_float_to_bf16(v);
		break;
	case T_I32: /* toward zero, saturating, NaN 0 (plugin.h's cast) */
		((int32_t *)p)[i] = v != v                ? 0
				    : v >= 2147483648.0f  ? INT32_MAX
				    : v <= -2147483648.0f ? INT32_MIN
							  : (int32_t)v;
		break;
	}
}

static uint64_t first_u64(const struct op *o)
{
	uint64_t n;

	memcpy(&n, o->params, 8);
	return n;
}

/* Checks that pointer |i| holds |bytes|; on failure the context gets the
 * sticky illegal-address error. */
static int range_ok(struct op *o, int i, uint64_t bytes)
{
	o->cost += bytes;
	pthread_mutex_lock(&L);
	int ok = device_range_ok(o->ptr[i], bytes);
	if (!ok && sticky == CUDA_SUCCESS)
		sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
	pthread_mutex_unlock(&L);
	return ok;
}

static int kernel_ranges_ok(struct op *o, int count, uint64_t bytes)
{
	for (int i = 0; i < count; i++)
		if (!range_ok(o, i, bytes))
			return 0;
	return 1;
}

/* The kernel reads |bytes| of binding |i| from byte |off| on (see
 * "Written bytes"): a binding is reported once a launch. */
static void kernel_reads(struct op *o, int i, uint64_t off, uint64_t bytes)
{
	char what[192];

	if (o->uninit_seen & 1u << i)
		return;
	snprintf(what, sizeof what, "%s's binding %d", o->kernel->name, i);
	pthread_mutex_lock(&L);
	if (!read_written(what, o->ptr[i] + off, bytes))
		o->uninit_seen |= 1u << i;
	pthread_mutex_unlock(&L);
}

/* The kernel writes |bytes| of binding |i| from byte |off| on. */
static void kernel_writes(struct op *o, int i, uint64_t off, uint64_t bytes)
{
	pthread_mutex_lock(&L);
	mark_written(o->ptr[i] + off, bytes);
	pthread_mutex_unlock(&L);
}

static void run_kernel(struct op *o)
{
	o->kernel->run(o);
}

/* fakecuda_program.h's reach check, on the module's lock. The stand-in
 * cannot tell a program kernel's reads from its writes: what it reaches
 * counts as written (see "Written bytes"), and its reads go unchecked. */
static int program_reach(uintptr_t p, uint64_t bytes)
{
	pthread_mutex_lock(&L);
	int ok = device_range_ok(p, bytes);
	if (ok)
		mark_written(p, bytes);
	if (!ok && sticky == CUDA_SUCCESS)
		sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
	pthread_mutex_unlock(&L);
	return ok;
}

static void emulate_program(struct op *o)
{
	struct fakecuda_program_launch l = {
		.ptr = o->ptr, .params = o->params, .reach = program_reach,
	};

	memcpy(l.grid, o->grid, sizeof l.grid);
	memcpy(l.block, o->block, sizeof l.block);
	o->kernel->program(&l);
}

static float sigmoid(float x)
{
	float t = expf(-fabsf(x)), s = 1.0f / (1.0f + t);
	return x >= 0.0f ? s : t * s;
}

static float unary_op(int op, float x)
{
	switch (op) {
	case 0: return -x;
	case 1: return fabsf(x);
	case 2: return expf(x);
	case 3: return logf(x);
	case 4: return sqrtf(x);
	case 5: return x > 0.0f || x != x ? x : 0.0f;
	case 6: return x * sigmoid(2.0f * 0.7978845608028654f *
				   (x + 0.044715f * x * x * x));
	case 7: return sigmoid(x);
	default: return tanhf(x);
	}
}

/* The binary operations in double; NaN when either operand is. */
static double binary_d(int op, double a, double b)
{
	switch (op) {
	case 0: return a + b;
	case 1: return a - b;
	case 2: return a * b;
	case 3: return a / b;
	case 4: return a != a || b != b ? a + b : (a > b ? a : b);
	default: return a != a || b != b ? a + b : (a < b ? a : b);
	}
}

/* On floats: double has more than twice float's precision, so rounding
 * its result once to float is the float operation. */
static float binary_op(int op, float a, float b)
{
	return (float)binary_d(op, a, b);
}

/* typed.cu's operations: float64 in double, integers wrapping (computed
 * in uint64_t), integer division truncating with x / 0 = 0. */
static double sigmoid_d(double x)
{
	double t = exp(-fabs(x)), s = 1.0 / (1.0 + t);
	return x >= 0.0 ? s : t * s;
}

static void typed_unary(int op, int dtype, const void *in, uint64_t ii,
			void *out, uint64_t io)
{
	if (dtype == T_F64) {
		double x = ((const double *)in)[ii], r;
		switch (op) {
		case 0: r = -x; break;
		case 1: r = fabs(x); break;
		case 2: r = exp(x); break;
		case 3: r = log(x); break;
		case 4: r = sqrt(x); break;
		case 5: r = x > 0.0 || x != x ? x : 0.0; break;
		case 6: r = x * sigmoid_d(2.0 * 0.7978845608028654 *
					  (x + 0.044715 * x * x * x)); break;
		case 7: r = sigmoid_d(x); break;
		default: r = tanh(x); break;
		}
		((double *)out)[io] = r;
		return;
	}
	int64_t x = load_int(dtype, in, ii);
	uint64_t r = op == 0   ? 0 - (uint64_t)x
		     : op == 1 ? (x < 0 ? 0 - (uint64_t)x : (uint64_t)x)
			       : (uint64_t)(x > 0 ? x : 0);
	store_wrap(dtype, out, io, r);
}


static uint64_t binary_int(int op, int64_t a, int64_t b)
{
	switch (op) {
	case 0: return (uint64_t)a + (uint64_t)b;
	case 1: return (uint64_t)a - (uint64_t)b;
	case 2: return (uint64_t)a * (uint64_t)b;
	case 3: return b == 0 ? 0 : b == -1 ? 0 - (uint64_t)a : (uint64_t)(a / b);
	case 4: return (uint64_t)(a > b ? a : b);
	default: return (uint64_t)(a < b ? a : b);
	}
}

/* out[io] = a op b, each operand from its buffer, or |scalar| (already
 * in the dtype) in place of a null buffer. */
static void typed_binary(int op, int dtype, const void *a, uint64_t ia,
			 const void *b, uint64_t ib, double scalar, void *out,
			 uint64_t io)
{
	if (dtype == T_F64) {
		((double *)out)[io] =
			binary_d(op, a ? ((const double *)a)[ia] : scalar,
				 b ? ((const double *)b)[ib] : scalar);
		return;
	}
	int64_t s = saturate(dtype, scalar);
	store_wrap(dtype, out, io,
		   binary_int(op, a ? load_int(dtype, a, ia) : s,
			      b ? load_int(dtype, b, ib) : s));
}

/* plugin.h's cast of element |i|, between any two dtypes: one rounding
 * (f16 through _Float16 from double), integers saturating. */
static void convert(int from, const void *in, int to, void *out, uint64_t i)
{
	if (integer(to)) {
		int64_t v = integer(from) ? clamp_int(to, load_int(from, in, i))
					  : saturate(to, load_double(from, in, i));
		store_wrap(to, out, i, (uint64_t)v);
		return;
	}
	if (to == T_F64) {
		((double *)out)[i] = load_double(from, in, i);
		return;
	}
	if (to == T_F32) {
		((float *)out)[i] = integer(from)
					    ? (float)load_int(from, in, i)
					    : from == T_F64 ? (float)((const double *)in)[i]
							    : load_as(from, in, i);
		return;
	}
	if (to == T_F16 && (from == T_F64 || integer(from))) {
		_Float16 h = integer(from) ? (_Float16)load_int(from, in, i)
					   : (_Float16)((const double *)in)[i];
		memcpy((uint16_t *)out + i, &h, 2);
		return;
	}
	store_as(to, out, i,
		 integer(from) ? (float)load_int(from, in, i)
			       : (float)load_double(from, in, i));
}

static void emulate_noop(struct op *o)
{
}

static void emulate_fill(struct op *o)
{
	const struct fake_kernel *k = o->kernel;
	uint64_t n = first_u64(o);
	double value;

	memcpy(&value, o->params + 8, 8);
	if (!kernel_ranges_ok(o, 1, n * size_of(k->dtype)))
		return;
	kernel_writes(o, 0, 0, n * size_of(k->dtype));
	for (uint64_t i = 0; i < n; i++)
		if (integer(k->dtype))
			store_wrap(k->dtype, (void *)o->ptr[0], i,
				   (uint64_t)saturate(k->dtype, value));
		else if (k->dtype == T_F64)
			((double *)o->ptr[0])[i] = value;
		else
			store_as(k->dtype, (void *)o->ptr[0], i, (float)value);
}

static void emulate_copy(struct op *o)
{
	uint64_t n = first_u64(o) * size_of(o->kernel->dtype);

	if (!kernel_ranges_ok(o, 2, n))
		return;
	kernel_reads(o, 1, 0, n);
	kernel_writes(o, 0, 0, n);
	memmove((void *)o->ptr[0], (const void *)o->ptr[1], n);
}

static void emulate_unary(struct op *o)
{
	const struct fake_kernel *k = o->kernel;
	uint64_t n = first_u64(o);

	if (!kernel_ranges_ok(o, 2, n * size_of(k->dtype)))
		return;
	kernel_reads(o, 1, 0, n * size_of(k->dtype));
	kernel_writes(o, 0, 0, n * size_of(k->dtype));
	for (uint64_t i = 0; i < n; i++)
		if (typed(k->dtype))
			typed_unary(k->op, k->dtype, (const void *)o->ptr[1], i,
				    (void *)o->ptr[0], i);
		else
			store_as(k->dtype, (void *)o->ptr[0], i,
				 unary_op(k->op, load_as(k->dtype,
							 (const void *)o->ptr[1],
							 i)));
}

static void emulate_binary(struct op *o)
{
	const struct fake_kernel *k = o->kernel;
	uint64_t n = first_u64(o);

	if (!kernel_ranges_ok(o, 3, n * size_of(k->dtype)))
		return;
	kernel_reads(o, 1, 0, n * size_of(k->dtype));
	kernel_reads(o, 2, 0, n * size_of(k->dtype));
	kernel_writes(o, 0, 0, n * size_of(k->dtype));
	for (uint64_t i = 0; i < n; i++) {
		if (typed(k->dtype)) {
			typed_binary(k->op, k->dtype, (const void *)o->ptr[1], i,
				     (const void *)o->ptr[2], i, 0,
				     (void *)o->ptr[0], i);
			continue;
		}
		float a = load_as(k->dtype, (const void *)o->ptr[1], i);
		float b = load_as(k->dtype, (const void *)o->ptr[2], i);
		store_as(k->dtype, (void *)o->ptr[0], i, binary_op(k->op, a, b));
	}
}

static void emulate_scalar(struct op *o)
{
	const struct fake_kernel *k = o->kernel;
	struct wafer_scalar_params p;
	uint16_t bits[2];
	float s;

	memcpy(&p, o->params, sizeof p);
	if (!kernel_ranges_ok(o, 2, p.count * size_of(k->dtype)))
		return;
	kernel_reads(o, 1, 0, p.count * size_of(k->dtype));
	kernel_writes(o, 0, 0, p.count * size_of(k->dtype));
	if (typed(k->dtype)) { /* typed_binary converts the scalar */
		for (uint64_t i = 0; i < p.count; i++)
			typed_binary(k->op, k->dtype,
				     p.scalar_first ? NULL
						    : (const void *)o->ptr[1],
				     i,
				     p.scalar_first ? (const void *)o->ptr[1]
						    : NULL,
				     i, p.scalar, (void *)o->ptr[0], i);
		return;
	}
	/* The scalar in the dtype first. */
	store_as(k->dtype, bits, 0, (float)p.scalar);
	s = k->dtype == T_F32 ? (float)p.scalar : load_as(k->dtype, bits, 0);
	for (uint64_t i = 0; i < p.count; i++) {
		float a = load_as(k->dtype, (const void *)o->ptr[1], i);
		store_as(k->dtype, (void *)o->ptr[0], i,
			 p.scalar_first ? binary_op(k->op, s, a)
					: binary_op(k->op, a, s));
	}
}

/* Element |i| of a row-major |shape| at |offset| + sum index * stride.
 * A |narrow| kernel (strided.cu's 32-bit twins) does it all in uint32_t,
 * wrapping as the GPU would if the plugin picked it for too large a view. */
static uint64_t strided_index(uint32_t rank, const uint64_t *shape,
			      const uint64_t *strides, uint64_t offset,
			      uint64_t i, int narrow)
{
	uint64_t mask = narrow ? UINT32_MAX : UINT64_MAX;

	offset &= mask;
	i &= mask;
	for (uint32_t d = rank; d-- > 0;) {
		uint64_t extent = shape[d] & mask;
		offset = (offset + (i % extent) * (strides[d] & mask)) & mask;
		i /= extent;
	}
	return offset;
}

static uint64_t reach(uint32_t rank, const uint64_t *shape,
		      const uint64_t *strides, uint64_t offset)
{
	for (uint32_t d = 0; d < rank; d++)
		offset += (shape[d] - 1) * strides[d];
	return offset + 1;
}

/* Elements of |shape|: the count a kernel loops to, in 32 bits for a
 * narrow one. */
static uint64_t product(uint32_t rank, const uint64_t *shape, int narrow)
{
	uint64_t n = 1;
	for (uint32_t d = 0; d < rank; d++)
		n *= shape[d];
	return narrow ? (uint32_t)n : n;
}

static void emulate_strided(struct op *o)
{
	const struct fake_kernel *k = o->kernel;
	struct wafer_binary_strided_params p;
	size_t es = size_of(k->dtype);

	memcpy(&p, o->params, sizeof p);
	uint64_t n = product(p.rank, p.shape, k->narrow);
	if (!range_ok(o, 0, n * es) ||
	    !range_ok(o, 1, reach(p.rank, p.shape, p.a_strides, p.a_offset) * es) ||
	    !range_ok(o, 2, reach(p.rank, p.shape, p.b_strides, p.b_offset) * es))
		return;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t ia = strided_index(p.rank, p.shape, p.a_strides,
					    p.a_offset, i, k->narrow);
		uint64_t ib = strided_index(p.rank, p.shape, p.b_strides,
					    p.b_offset, i, k->narrow);
		kernel_reads(o, 1, ia * es, es);
		kernel_reads(o, 2, ib * es, es);
		if (typed(k->dtype)) {
			typed_binary(k->op, k->dtype, (const void *)o->ptr[1],
				     ia, (const void *)o->ptr[2], ib, 0,
				     (void *)o->ptr[0], i);
			continue;
		}
		float a = load_as(k->dtype, (const void *)o->ptr[1], ia);
		float b = load_as(k->dtype, (const void *)o->ptr[2], ib);
		store_as(k->dtype, (void *)o->ptr[0], i, binary_op(k->op, a, b));
	}
	kernel_writes(o, 0, 0, n * es); /* after: it may be an input */
}

static void emulate_gather(struct op *o)
{
	struct wafer_strided_copy_params p;
	size_t es = size_of(o->kernel->dtype);

	memcpy(&p, o->params, sizeof p);
	uint64_t n = product(p.rank, p.shape, o->kernel->narrow);
	if (!range_ok(o, 0, n * es) ||
	    !range_ok(o, 1, reach(p.rank, p.shape, p.strides, p.offset) * es))
		return;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t at = strided_index(p.rank, p.shape, p.strides,
					    p.offset, i, o->kernel->narrow);
		kernel_reads(o, 1, at * es, es);
		memcpy((char *)o->ptr[0] + i * es,
		       (const char *)o->ptr[1] + at * es, es);
	}
	kernel_writes(o, 0, 0, n * es);
}

static void emulate_cast(struct op *o)
{
	const struct fake_kernel *k = o->kernel;
	struct wafer_cast_params p;

	memcpy(&p, o->params, sizeof p);
	if (!range_ok(o, 0, p.count * size_of(k->dtype_out)) ||
	    !range_ok(o, 1, p.count * size_of(k->dtype)))
		return;
	kernel_reads(o, 1, 0, p.count * size_of(k->dtype));
	kernel_writes(o, 0, 0, p.count * size_of(k->dtype_out));
	for (uint64_t i = 0; i < p.count; i++)
		convert(k->dtype, (const void *)o->ptr[1], k->dtype_out,
			(void *)o->ptr[0], i);
}

/* Row |r| of typed.cu's reductions and softmax: float64 in double
 * (NaN wins the max), integers summed wrapping, the mean the wrapped sum
 * divided, truncating. */
static void typed_row(int op, int dtype, const void *in, uint64_t cols,
		      void *out, uint64_t r)
{
	if (dtype == T_F64) {
		const double *x = in;
		double sum = 0, m = -INFINITY, e = 0;
		for (uint64_t c = 0; c < cols; c++) {
			sum += x[c];
			m = binary_d(4, m, x[c]);
		}
		if (op < 3) {
			((double *)out)[r] = op == 0 ? sum : op == 1 ? m
							   : sum / (double)cols;
			return;
		}
		for (uint64_t c = 0; c < cols; c++)
			e += exp(x[c] - m);
		for (uint64_t c = 0; c < cols; c++)
			((double *)out)[r * cols + c] = exp(x[c] - m) / e;
		return;
	}
	uint64_t sum = 0;
	int64_t m = cols ? load_int(dtype, in, 0) : 0;
	for (uint64_t c = 0; c < cols; c++) {
		int64_t v = load_int(dtype, in, c);
		sum += (uint64_t)v;
		m = v > m ? v : m;
	}
	store_wrap(dtype, out, r, op == 1 ? (uint64_t)m : sum);
	if (op == 2)
		store_wrap(dtype, out, r,
			   (uint64_t)(load_int(dtype, out, r) / (int64_t)cols));
}

static void emulate_rows(struct op *o)
{
	const struct fake_kernel *k = o->kernel;
	struct wafer_rows_params p;
	size_t es = size_of(k->dtype);

	memcpy(&p, o->params, sizeof p);
	if (!range_ok(o, 0, (k->op == 3 ? p.rows * p.cols : p.rows) * es) ||
	    !range_ok(o, 1, p.rows * p.cols * es))
		return;
	kernel_reads(o, 1, 0, p.rows * p.cols * es);
	kernel_writes(o, 0, 0, (k->op == 3 ? p.rows * p.cols : p.rows) * es);
	for (uint64_t r = 0; r < p.rows && typed(k->dtype); r++)
		typed_row(k->op, k->dtype,
			  (const char *)o->ptr[1] + r * p.cols * es, p.cols,
			  (void *)o->ptr[0], r);
	for (uint64_t r = 0; r < p.rows && !typed(k->dtype); r++) {
		const void *in = (const char *)o->ptr[1] + r * p.cols * es;
		double sum = 0, e = 0;
		float m = -INFINITY;
		int nan = 0;
		for (uint64_t c = 0; c < p.cols; c++) {
			float x = load_as(k->dtype, in, c);
			sum += x;
			nan |= x != x;
			m = x > m ? x : m;
		}
		if (nan)
			m = NAN;
		if (k->op < 3) {
			float v = k->op == 0   ? (float)sum
				  : k->op == 1 ? m
					       : (float)(sum / (double)p.cols);
			store_as(k->dtype, (void *)o->ptr[0], r, v);
			continue;
		}
		for (uint64_t c = 0; c < p.cols; c++)
			e += exp((double)load_as(k->dtype, in, c) - m);
		for (uint64_t c = 0; c < p.cols; c++)
			store_as(k->dtype, (char *)o->ptr[0] + r * p.cols * es,
				 c,
				 (float)(exp((double)load_as(k->dtype, in, c) -
					     m) /
					 e));
	}
}

/* Elements from a matrix's origin to its last element, plus one. */
static uint64_t extent(uint64_t rows, uint64_t cols, uint64_t ld)
{
	return (rows - 1) * ld + cols;
}

/* Runs the launch's grid as matmul.cu does: block (x, y, z) computes the
 * tile rows [y * BM, y * BM + BM) and columns [x * BN, x * BN + BN) of C,
 * clipped to m x n, for batch entry z. What no block covers stays
 * unwritten, as on the GPU. A layout kernel (_nn .. _tt) reads the
 * transposes its name says, whatever p.trans_a/b hold, in 16-byte
 * vectors: rows or batch strides off a multiple of 4 elements, or an
 * operand not aligned to 4 elements, give CUDA_ERROR_MISALIGNED_ADDRESS. */
static void emulate_matmul(struct op *o)
{
	const struct fake_kernel *k = o->kernel;
	struct cuda_matmul_args p;
	size_t es = size_of(k->dtype);

	memcpy(&p, o->params, sizeof p);
	int ta = k->layout_ta >= 0 ? k->layout_ta : p.trans_a != 0;
	int tb = k->layout_tb >= 0 ? k->layout_tb : p.trans_b != 0;
	uint64_t batch = o->grid[2];
	uint64_t ea = ta ? extent(p.k, p.m, p.lda) : extent(p.m, p.k, p.lda);
	uint64_t eb = tb ? extent(p.n, p.k, p.ldb) : extent(p.k, p.n, p.ldb);
	uint64_t ec = extent(p.m, p.n, p.ldc);
	CUresult bad = CUDA_SUCCESS;

	o->cost = batch * es * (ea + eb + ec);

	if (k->layout_ta >= 0 &&
	    (p.lda % 4 || p.ldb % 4 || o->ptr[1] % (4 * es) ||
	     o->ptr[2] % (4 * es) ||
	     (batch > 1 && (p.stride_a % 4 || p.stride_b % 4))))
		bad = CUDA_ERROR_MISALIGNED_ADDRESS;
	pthread_mutex_lock(&L);
	for (uint64_t t = 0; t < batch && !bad && p.m && p.n; t++)
		if (!device_range_ok(o->ptr[0] + es * t * p.stride_c, es * ec) ||
		    (p.k && (!device_range_ok(o->ptr[1] + es * t * p.stride_a,
					      es * ea) ||
			     !device_range_ok(o->ptr[2] + es * t * p.stride_b,
					      es * eb))))
			bad = CUDA_ERROR_ILLEGAL_ADDRESS;
	if (bad && sticky == CUDA_SUCCESS) {
		fprintf(stderr, "fakecuda: %s: %s\n", k->name,
			bad == CUDA_ERROR_MISALIGNED_ADDRESS
				? "misaligned operand or row stride"
				: "an operand outside device memory");
		sticky = bad;
	}
	pthread_mutex_unlock(&L);
	if (bad)
		return;
	/* What the grid's blocks read: the rows of A and columns of B of
	 * their tiles, each stored row of them from its first element to
	 * its last. */
	uint64_t m_end = (uint64_t)o->grid[1] * k->tile_m;
	uint64_t n_end = (uint64_t)o->grid[0] * k->tile_n;
	m_end = m_end < p.m ? m_end : p.m;
	n_end = n_end < p.n ? n_end : p.n;
	for (uint64_t t = 0; t < batch && p.k && m_end && n_end; t++) {
		uint64_t a0 = es * t * p.stride_a, b0 = es * t * p.stride_b;
		for (uint64_t r = 0; r < (ta ? p.k : m_end); r++)
			kernel_reads(o, 1, a0 + es * r * p.lda,
				     es * (ta ? m_end : p.k));
		for (uint64_t r = 0; r < (tb ? n_end : p.k); r++)
			kernel_reads(o, 2, b0 + es * r * p.ldb,
				     es * (tb ? p.k : n_end));
	}
	for (uint64_t t = 0; t < batch; t++) {
		void *c = (char *)o->ptr[0] + es * t * p.stride_c;
		const void *a = (const char *)o->ptr[1] + es * t * p.stride_a;
		const void *b = (const char *)o->ptr[2] + es * t * p.stride_b;
		for (uint64_t by = 0; by < o->grid[1]; by++)
		for (uint64_t bx = 0; bx < o->grid[0]; bx++)
		for (uint64_t i = by * k->tile_m;
		     i < p.m && i < (by + 1) * k->tile_m; i++)
		for (uint64_t j = bx * k->tile_n;
		     j < p.n && j < (bx + 1) * k->tile_n; j++) {
			if (integer(k->dtype)) {
				uint64_t isum = 0;
				for (uint64_t l = 0; l < p.k; l++)
					isum += (uint64_t)load_int(
							k->dtype, a,
							ta ? l * p.lda + i
							   : i * p.lda + l) *
						(uint64_t)load_int(
							k->dtype, b,
							tb ? j * p.ldb + l
							   : l * p.ldb + j);
				store_wrap(k->dtype, c, i * p.ldc + j, isum);
				continue;
			}
			if (k->dtype == T_F64) {
				double dsum = 0;
				for (uint64_t l = 0; l < p.k; l++)
					dsum += ((const double *)a)
							[ta ? l * p.lda + i
							    : i * p.lda + l] *
						((const double *)b)
							[tb ? j * p.ldb + l
							    : l * p.ldb + j];
				((double *)c)[i * p.ldc + j] = dsum;
				continue;
			}
			double sum = 0;
			for (uint64_t l = 0; l < p.k; l++)
				sum += (double)load_as(k->dtype, a,
						       ta ? l * p.lda + i
							  : i * p.lda + l) *
				       load_as(k->dtype, b,
					       tb ? j * p.ldb + l
						  : l * p.ldb + j);
			store_as(k->dtype, c, i * p.ldc + j, (float)sum);
		}
	}
	for (uint64_t t = 0; t < batch; t++)
		for (uint64_t i = 0; i < m_end && n_end; i++)
			kernel_writes(o, 0, es * (t * p.stride_c + i * p.ldc),
				      es * n_end);
}

/*===----------------------------------------------------------------------===
 * Streams and events
 *===----------------------------------------------------------------------===*/

static CUresult fake_cuStreamCreate(CUstream *out, unsigned flags)
{
	CUresult r = need_context();
	struct CUstream_st *s;

	if (r)
		return r;
	if (flags != CU_STREAM_NON_BLOCKING && flags != CU_STREAM_DEFAULT)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&L);
	s = new_stream(current, flags == CU_STREAM_DEFAULT, 0);
	pthread_mutex_unlock(&L);
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = s;
	return CUDA_SUCCESS;
}

/* Runs what |s| holds, ends its thread; its allocations are then valid
 * everywhere. L not held. */
static void stop_stream(struct CUstream_st *s)
{
	pthread_mutex_lock(&L);
	s->stop = 1;
	if (!s->legacy)
		stats.streams_live--;
	pthread_cond_broadcast(&C);
	pthread_mutex_unlock(&L);
	pthread_join(s->thread, NULL);
	pthread_mutex_lock(&L);
	ordered_after(s, s->issued);
	/* Its handle may be reused by the next stream. */
	for (struct CUevent_st *e = events; e; e = e->next)
		if (e->stream == s)
			e->stream = NULL;
	for (size_t i = 0; i < region_count; i++)
		for (int u = 0; u < 4; u++)
			if (regions[i].users[u].stream == s)
				regions[i].users[u].stream = NULL;
	/* Its work all ran: waits for it are over. */
	for (struct CUstream_st *t = streams; t; t = t->next) {
		for (struct op *o = t->head; o; o = o->next)
			if (o->kind == OP_WAIT && o->wait_for == s)
				o->wait_for = NULL;
		for (int i = 0; i < 8; i++)
			if (t->waits[i].stream == s)
				t->waits[i].stream = NULL;
	}
	pthread_cond_broadcast(&C);
	pthread_mutex_unlock(&L);
}

static CUresult fake_cuStreamDestroy(CUstream s)
{
	if (!initialised || !current)
		return !initialised ? CUDA_ERROR_NOT_INITIALIZED
				    : CUDA_ERROR_INVALID_CONTEXT;
	/* The legacy stream lives as long as its context. */
	if (!s || s == CU_STREAM_LEGACY ||
	    default_stream(s, "cuStreamDestroy"))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&L);
	int dead = s->dead;
	s->stop = 1; /* a context release leaves it to us */
	pthread_mutex_unlock(&L);
	/* A stream of a destroyed context ended with it; the stale handle
	 * is refused, and its memory given back here. It stays in |streams|
	 * until its work is done, for held_back. */
	if (!dead)
		stop_stream(s);
	pthread_mutex_lock(&L);
	for (struct CUstream_st **at = &streams; *at; at = &(*at)->next)
		if (*at == s) {
			*at = s->next;
			break;
		}
	pthread_mutex_unlock(&L);
	free(s);
	return dead ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

static CUresult fake_cuStreamSynchronize(CUstream s)
{
	CUresult r = need_context();

	if (r && r != sticky)
		return r;
	if (!s || default_stream(s, "cuStreamSynchronize"))
		return CUDA_ERROR_INVALID_HANDLE;
	/* The legacy stream: the current context's (there is one: see
	 * need_context). Waiting for its work waits for the blocking
	 * streams' work queued before that, not for any queued since. */
	r = resolve_stream(&s);
	if (r)
		return r;
	/* Any context may wait for a stream; not for one whose context is
	 * gone. */
	if (s->dead || !s->ctx->alive || s->ctx->generation != s->generation)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (s->capturing)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	pthread_mutex_lock(&L);
	uint64_t upto = s->issued;
	wait_stream(s, upto);
	ordered_after(s, upto);
	r = sticky;
	stats.stream_syncs++;
	pthread_mutex_unlock(&L);
	return r;
}

static CUresult fake_cuEventCreate(CUevent *out, unsigned flags)
{
	CUresult r = need_context();
	struct CUevent_st *e;

	if (r)
		return r;
	e = calloc(1, sizeof *e);
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->flags = flags;
	pthread_mutex_lock(&L);
	e->next = events;
	events = e;
	stats.events_live++;
	pthread_mutex_unlock(&L);
	*out = e;
	return CUDA_SUCCESS;
}

static CUresult fake_cuEventDestroy(CUevent e)
{
	if (!current)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&L);
	/* The driver defers the destruction of a pending event, and
	 * returns at once; so do we (run_op frees it). */
	stats.events_live--;
	e->destroyed = 1;
	if (e->completed >= e->recorded)
		forget_event(e);
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

/* Unlinks and frees |e|, destroyed with no record pending. L held. */
static void forget_event(struct CUevent_st *e)
{
	for (struct CUevent_st **at = &events; *at; at = &(*at)->next)
		if (*at == e) {
			*at = e->next;
			break;
		}
	free(e);
}

static CUresult fake_cuEventRecord(CUevent e, CUstream s)
{
	CUresult r = need_context();
	struct op *o;

	if (r)
		return r;
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	r = op_on(&s, &o);
	if (r)
		return r;
	o->kind = OP_EVENT;
	o->event = e;
	pthread_mutex_lock(&L);
	/* A record supersedes the event's earlier ones, on any stream. */
	e->stream_seq = push_op(s, o);
	e->stream = s;
	e->recorded = o->gseq;
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

static CUresult fake_cuEventQuery(CUevent e)
{
	CUresult r = need_context();

	if (r)
		return r;
	pthread_mutex_lock(&L);
	r = e->completed >= e->recorded ? sticky : CUDA_ERROR_NOT_READY;
	if (r == CUDA_SUCCESS && e->stream)
		ordered_after(e->stream, e->stream_seq);
	pthread_mutex_unlock(&L);
	return r;
}

static CUresult fake_cuEventSynchronize(CUevent e)
{
	CUresult r = need_context();

	if (r && r != sticky)
		return r;
	pthread_mutex_lock(&L);
	while (e->completed < e->recorded)
		pthread_cond_wait(&C, &L);
	if (e->stream)
		ordered_after(e->stream, e->stream_seq);
	r = sticky;
	stats.event_syncs++;
	pthread_mutex_unlock(&L);
	return r;
}

static CUresult fake_cuEventElapsedTime(float *ms, CUevent start, CUevent end)
{
	CUresult r = need_context();

	if (r)
		return r;
	if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&L);
	if (start->completed < start->recorded || !start->recorded ||
	    end->completed < end->recorded || !end->recorded) {
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_NOT_READY;
	}
	*ms = (float)(((double)end->when - (double)start->when) / 1e6);
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

/* |fn|(|user|) runs on the stream's thread after the work before it. */
static CUresult fake_cuLaunchHostFunc(CUstream s, CUhostFn fn, void *user)
{
	CUresult r = need_context();
	struct op *o;

	if (r)
		return r;
	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	r = op_on(&s, &o);
	if (r)
		return r;
	o->kind = OP_HOSTFN;
	o->host_fn = fn;
	o->host_arg = user;
	pthread_mutex_lock(&L);
	push_op(s, o);
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

/* Work queued on |s| from now on waits for |e|'s latest record (none,
 * or one on a stream since destroyed: nothing to wait for). The event
 * may be another context's, as in CUDA. */
static CUresult fake_cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags)
{
	CUresult r = need_context();
	struct op *o;

	if (r)
		return r;
	if (!e || flags)
		return !e ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
	r = op_on(&s, &o);
	if (r)
		return r;
	o->kind = OP_WAIT;
	pthread_mutex_lock(&L);
	o->wait_for = e->stream;
	o->wait_seq = e->stream_seq;
	stats.stream_waits++;
	if (o->wait_for && o->wait_for != s) {
		int at = -1;
		for (int i = 0; i < 8 && at < 0; i++)
			if (s->waits[i].stream == o->wait_for)
				at = i;
		for (int i = 0; i < 8 && at < 0; i++)
			if (!s->waits[i].stream)
				at = i;
		if (at < 0)
			at = 0; /* more streams than slots: check fewer */
		s->waits[at].stream = o->wait_for;
		if (s->waits[at].seq < o->wait_seq)
			s->waits[at].seq = o->wait_seq;
	}
	push_op(s, o);
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

/*===----------------------------------------------------------------------===
 * Memory
 *===----------------------------------------------------------------------===*/

static size_t memory_limit(void)
{
	return (size_t)env_long("FAKECUDA_MEMORY", 1L << 30);
}

static CUresult fake_cuMemGetInfo(size_t *free_bytes, size_t *total)
{
	CUresult r = need_context();

	if (r)
		return r;
	pthread_mutex_lock(&L);
	*total = memory_limit();
	*free_bytes = *total - device_bytes;
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

static CUresult allocate(CUdeviceptr *out, size_t size)
{
	size_t rounded = (size + 255) & ~(size_t)255;
	void *p;

	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&L);
	if (device_bytes + rounded > memory_limit()) {
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	p = aligned_alloc(256, rounded);
	uint8_t *written = calloc(rounded / 8, 1);
	if (!p || !written ||
	    add_region((struct region){.kind = REGION_ALLOC,
				       .base = (uintptr_t)p,
				       .size = rounded,
				       .block = p,
				       .ctx = current,
				       .written = written}) != 0) {
		free(p);
		free(written);
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	device_bytes += rounded;
	stats.allocs++;
	pthread_mutex_unlock(&L);
	*out = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

static CUresult fake_cuMemAlloc(CUdeviceptr *out, size_t size)
{
	CUresult r = need_context();

	return r ? r : allocate(out, size);
}

static CUresult fake_cuMemFree(CUdeviceptr ptr)
{
	CUresult r = need_context();

	if (r)
		return r;
	pthread_mutex_lock(&L);
	wait_device_work(NULL); /* before the lookup: it lets go of L */
	struct region *reg = find_region(REGION_ALLOC, (uintptr_t)ptr);
	if (!reg || reg->free_pending) {
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_INVALID_VALUE;
	}
	device_bytes -= reg->size;
	free(reg->block);
	free(reg->written);
	drop_region(reg);
	stats.frees++;
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

static CUresult fake_cuMemAllocAsync(CUdeviceptr *out, size_t size,
				     CUstream s)
{
	CUresult r = need_context();

	if (r)
		return r;
	if (getenv("FAKECUDA_NO_POOLS"))
		return CUDA_ERROR_NOT_SUPPORTED;
	r = stream_usable(&s);
	if (r)
		return r;
	r = allocate(out, size);
	if (r == CUDA_SUCCESS) {
		pthread_mutex_lock(&L);
		struct region *reg = find_region(REGION_ALLOC, (uintptr_t)*out);
		reg->owner = s;
		reg->alloc_seq = s->issued;
		reg->async = 1;
		pool_bytes += reg->size;
		if (pool_bytes > pool_bytes_high)
			pool_bytes_high = pool_bytes;
		stats.async_allocs++;
		pthread_mutex_unlock(&L);
	}
	return r;
}

static CUresult fake_cuMemFreeAsync(CUdeviceptr ptr, CUstream s)
{
	CUresult r = need_context();
	struct op *o;

	if (r)
		return r;
	r = op_on(&s, &o);
	if (r)
		return r;
	o->kind = OP_FREE;
	o->free_ptr = (uintptr_t)ptr;
	pthread_mutex_lock(&L);
	struct region *reg = find_region(REGION_ALLOC, (uintptr_t)ptr);
	if (!reg || reg->free_pending) {
		pthread_mutex_unlock(&L);
		free(o);
		return CUDA_ERROR_INVALID_VALUE;
	}
	const struct CUstream_st *other = unordered_user(s, reg);
	if (use_ok(s, (uintptr_t)ptr, "cuMemFreeAsync") && other)
		fault(CUDA_ERROR_ILLEGAL_ADDRESS, "cuMemFreeAsync of 0x%"
		      PRIxPTR " on stream %p, used on stream %p with nothing "
		      "ordering that use before the free", (uintptr_t)ptr,
		      (void *)s, (void *)other);
	reg->free_pending = 1;
	stats.async_frees++;
	push_op(s, o);
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

static struct CUmemPoolHandle_st {
	int dummy;
} pool;

static CUresult fake_cuDeviceGetDefaultMemPool(CUmemoryPool *out, CUdevice dev)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (getenv("FAKECUDA_NO_POOLS"))
		return CUDA_ERROR_NOT_SUPPORTED;
	*out = &pool;
	return CUDA_SUCCESS;
}

static CUresult fake_cuMemPoolSetAttribute(CUmemoryPool p,
					   CUmemPool_attribute a, void *value)
{
	if (p != &pool)
		return CUDA_ERROR_INVALID_VALUE;
	if (a == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) {
		pthread_mutex_lock(&L);
		memcpy(&stats.release_threshold, value, 8);
		pthread_mutex_unlock(&L);
	}
	return CUDA_SUCCESS;
}

/* RESERVED_MEM_CURRENT/HIGH, RELEASE_THRESHOLD; HIGH is reset by
 * setting it (to 0) in CUDA, not modelled here. */
static CUresult fake_cuMemPoolGetAttribute(CUmemoryPool p,
					   CUmemPool_attribute a, void *value)
{
	cuuint64_t v;

	if (p != &pool || !value)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&L);
	switch (a) {
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
		v = pool_bytes;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		v = pool_bytes_high;
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		v = stats.release_threshold;
		break;
	default:
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	pthread_mutex_unlock(&L);
	memcpy(value, &v, sizeof v);
	return CUDA_SUCCESS;
}

static CUresult fake_cuMemPoolTrimTo(CUmemoryPool p, size_t keep)
{
	if (p != &pool)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&L);
	stats.pool_trims++;
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

/* Copies: which side is device memory, and whether the host side is
 * pinned, decide when the host memory is touched. */
static CUresult copy(void *dst, const void *src, size_t n, CUstream s,
		     int dst_device, int src_device)
{
	CUresult r = need_context();
	struct op *o;
	uint64_t seq;
	int wait = 0;

	if (r)
		return r;
	r = stream_usable(&s);
	if (r)
		return r;
	if (n == 0)
		return CUDA_SUCCESS;
	pthread_mutex_lock(&L);
	if ((dst_device && !device_range_ok((uintptr_t)dst, n)) ||
	    (src_device && !device_range_ok((uintptr_t)src, n))) {
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* Sticky on failure, like a kernel's bad access. */
	if (dst_device)
		use_ok(s, (uintptr_t)dst, "a copy's destination");
	if (src_device)
		use_ok(s, (uintptr_t)src, "a copy's source");
	int pinned = dst_device ? (src_device || is_pinned(src, n))
				: is_pinned(dst, n);
	pthread_mutex_unlock(&L);

	o = calloc(1, sizeof *o);
	if (!o)
		return CUDA_ERROR_OUT_OF_MEMORY;
	o->kind = OP_COPY;
	o->dst = dst;
	o->src = src;
	o->n = n;
	o->check_dst = dst_device;
	o->check_src = src_device;
	if (!pinned && dst_device) {
		/* From pageable memory: staged now, the caller's buffer is
		 * free when we return. */
		o->owned = malloc(n);
		if (!o->owned) {
			free(o);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(o->owned, src, n);
		o->src = o->owned;
	} else if (!pinned) {
		wait = 1; /* into pageable memory: returns when done */
	}
	pthread_mutex_lock(&L);
	if (dst_device && src_device)
		stats.device_copies++;
	else if (pinned)
		stats.pinned_copies++;
	else
		stats.pageable_copies++;
	seq = push_op(s, o);
	if (wait)
		wait_stream(s, seq);
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

static CUresult fake_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src,
				       size_t n, CUstream s)
{
	return copy((void *)(uintptr_t)dst, src, n, s, 1, 0);
}

static CUresult fake_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n,
				       CUstream s)
{
	return copy(dst, (const void *)(uintptr_t)src, n, s, 0, 1);
}

static CUresult fake_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src,
				       size_t n, CUstream s)
{
	if (dst < src + n && src < dst + n)
		return CUDA_ERROR_INVALID_VALUE; /* undefined in CUDA */
	return copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, s,
		    1, 1);
}

/* The device whose memory |p| is: an allocation's context's, a
 * mapping's handle's; -1 for anything else. L held. */
static int device_of(uintptr_t p)
{
	struct region *a = region_at(REGION_ALLOC, p);
	struct region *m = region_at(REGION_MAPPED, p);

	if (a)
		return a->ctx ? a->ctx->ordinal : -1;
	if (m)
		return m->handle->ordinal;
	return -1;
}

/* As cuMemcpyDtoDAsync, and each pointer must be memory of the device
 * of the context named for it (the driver's contract; a swapped pair
 * fails here with CUDA_ERROR_INVALID_VALUE and a line on stderr). */
static CUresult fake_cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx,
				       CUdeviceptr src, CUcontext src_ctx,
				       size_t n, CUstream s)
{
	CUresult r = need_context();

	if (r)
		return r;
	if (!dst_ctx || !src_ctx || !dst_ctx->alive || !src_ctx->alive)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (dst < src + n && src < dst + n)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&L);
	int dst_dev = device_of((uintptr_t)dst), src_dev = device_of((uintptr_t)src);
	pthread_mutex_unlock(&L);
	if (n && (dst_dev != dst_ctx->ordinal || src_dev != src_ctx->ordinal)) {
		fprintf(stderr, "fakecuda: cuMemcpyPeerAsync: destination 0x%llx "
			"is device %d's memory, its context device %d's; source "
			"0x%llx device %d's, its context device %d's\n",
			(unsigned long long)dst, dst_dev, dst_ctx->ordinal,
			(unsigned long long)src, src_dev, src_ctx->ordinal);
		return CUDA_ERROR_INVALID_VALUE;
	}
	r = copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, s, 1,
		 1);
	if (r == CUDA_SUCCESS && n) {
		pthread_mutex_lock(&L);
		stats.peer_copies++;
		pthread_mutex_unlock(&L);
	}
	return r;
}

static CUresult fake_cuMemHostAlloc(void **out, size_t size, unsigned flags)
{
	CUresult r = need_context();
	void *p;

	if (r)
		return r;
	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (getenv("FAKECUDA_NO_PINNED"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	p = malloc(size);
	pthread_mutex_lock(&L);
	if (!p || add_region((struct region){.kind = REGION_PINNED,
					     .base = (uintptr_t)p,
					     .size = size,
					     .block = p}) != 0) {
		pthread_mutex_unlock(&L);
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	stats.pinned_live++;
	stats.pinned_bytes += size;
	pthread_mutex_unlock(&L);
	*out = p;
	return CUDA_SUCCESS;
}

static CUresult fake_cuMemFreeHost(void *p)
{
	if (!current)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&L);
	struct region *reg = find_region(REGION_PINNED, (uintptr_t)p);
	if (!reg || !reg->block) { /* not cuMemHostAlloc's */
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_INVALID_VALUE;
	}
	stats.pinned_live--;
	stats.pinned_bytes -= reg->size;
	free(reg->block);
	drop_region(reg);
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

/* Registered host memory is pinned memory the caller owns (block NULL):
 * copies from it touch it only when they run, as from cuMemHostAlloc's.
 * Overlapping an earlier registration or pinned block is refused, as by
 * the driver. */
static CUresult fake_cuMemHostRegister(void *p, size_t size, unsigned flags)
{
	CUresult r = need_context();

	(void)flags;
	if (r)
		return r;
	if (!p || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&L);
	for (size_t i = 0; i < region_count; i++)
		if (regions[i].kind == REGION_PINNED &&
		    (uintptr_t)p < regions[i].base + regions[i].size &&
		    regions[i].base < (uintptr_t)p + size) {
			pthread_mutex_unlock(&L);
			return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
		}
	r = add_region((struct region){.kind = REGION_PINNED,
				       .base = (uintptr_t)p, .size = size})
		    ? CUDA_ERROR_OUT_OF_MEMORY
		    : CUDA_SUCCESS;
	stats.registered_live += r == CUDA_SUCCESS;
	pthread_mutex_unlock(&L);
	return r;
}

static CUresult fake_cuMemHostUnregister(void *p)
{
	if (!current)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&L);
	struct region *reg = find_region(REGION_PINNED, (uintptr_t)p);
	CUresult r = reg && !reg->block ? CUDA_SUCCESS
					: CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	if (r == CUDA_SUCCESS) {
		drop_region(reg);
		stats.registered_live--;
	}
	pthread_mutex_unlock(&L);
	return r;
}

/*===----------------------------------------------------------------------===
 * Virtual memory
 *===----------------------------------------------------------------------===*/

static CUresult fake_cuMemGetAllocationGranularity(
	size_t *out, const CUmemAllocationProp *prop,
	CUmemAllocationGranularity_flags option)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (getenv("FAKECUDA_NO_VMM"))
		return CUDA_ERROR_NOT_SUPPORTED;
	if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	*out = granularity();
	return CUDA_SUCCESS;
}

static CUresult fake_cuMemAddressReserve(CUdeviceptr *out, size_t size,
					 size_t align, CUdeviceptr addr,
					 unsigned long long flags)
{
	CUresult r = need_context();
	size_t g = granularity();

	if (r)
		return r;
	if (!size || size % g || addr || flags || (align && align % g))
		return CUDA_ERROR_INVALID_VALUE;
	/* FAKECUDA_VA_MAX: a driver (or process) with less address space. */
	const char *va_max = getenv("FAKECUDA_VA_MAX");
	if (va_max && size > strtoull(va_max, NULL, 0))
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Over-reserve, then trim to a granularity-aligned range. */
	char *raw = mmap(NULL, size + g, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	uintptr_t base = ((uintptr_t)raw + g - 1) & ~(uintptr_t)(g - 1);
	if (base > (uintptr_t)raw)
		munmap(raw, base - (uintptr_t)raw);
	munmap((void *)(base + size), (uintptr_t)raw + size + g - (base + size));
	pthread_mutex_lock(&L);
	add_region((struct region){.kind = REGION_RESERVED, .base = base,
				   .size = size});
	stats.reserves++;
	pthread_mutex_unlock(&L);
	*out = (CUdeviceptr)base;
	return CUDA_SUCCESS;
}

static CUresult fake_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	CUresult r = need_context();

	if (r)
		return r;
	pthread_mutex_lock(&L);
	struct region *res = find_region(REGION_RESERVED, (uintptr_t)ptr);
	if (!res || res->size != size) {
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (size_t i = 0; i < region_count; i++)
		if (regions[i].kind == REGION_MAPPED &&
		    regions[i].base >= ptr && regions[i].base < ptr + size) {
			pthread_mutex_unlock(&L);
			return CUDA_ERROR_INVALID_VALUE; /* still mapped */
		}
	drop_region(res);
	pthread_mutex_unlock(&L);
	munmap((void *)(uintptr_t)ptr, size);
	return CUDA_SUCCESS;
}

static CUresult fake_cuMemCreate(CUmemGenericAllocationHandle *out,
				 size_t size, const CUmemAllocationProp *prop,
				 unsigned long long flags)
{
	CUresult r = need_context();
	struct fake_handle *h;

	if (r)
		return r;
	if (!size || size % granularity() || flags ||
	    prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    prop->location.id < 0 || prop->location.id >= device_count())
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&L);
	if (device_bytes + size > memory_limit()) {
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	device_bytes += size;
	stats.creates++;
	stats.handles_live++;
	pthread_mutex_unlock(&L);
	h = calloc(1, sizeof *h);
	if (h) {
		h->fd = memfd_create("fakecuda", MFD_CLOEXEC);
		h->written = calloc(size / 8, 1);
	}
	if (!h || h->fd < 0 || !h->written ||
	    ftruncate(h->fd, (off_t)size) != 0) {
		if (h && h->fd >= 0)
			close(h->fd);
		if (h)
			free(h->written);
		free(h);
		pthread_mutex_lock(&L);
		device_bytes -= size;
		stats.handles_live--;
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h->size = size;
	h->ordinal = prop->location.id;
	*out = (CUmemGenericAllocationHandle)(uintptr_t)h;
	return CUDA_SUCCESS;
}

/* Frees |h| once it is released and mapped nowhere. L held. */
static void handle_maybe_free(struct fake_handle *h)
{
	if (!h->released || h->mappings)
		return;
	close(h->fd);
	device_bytes -= h->size;
	stats.handles_live--;
	free(h->written);
	free(h);
}

static CUresult fake_cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct fake_handle *h = (struct fake_handle *)(uintptr_t)handle;
	CUresult r = need_context();

	if (r)
		return r;
	pthread_mutex_lock(&L);
	if (h->released) {
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_INVALID_VALUE;
	}
	h->released = 1;
	handle_maybe_free(h);
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

static CUresult fake_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			      CUmemGenericAllocationHandle handle,
			      unsigned long long flags)
{
	struct fake_handle *h = (struct fake_handle *)(uintptr_t)handle;
	CUresult r = need_context();
	uintptr_t p = (uintptr_t)ptr;

	if (r)
		return r;
	if (offset || flags || !h || h->released || size != h->size)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&L);
	struct region *res = region_at(REGION_RESERVED, p);
	int clash = !res || p + size - res->base > res->size;
	for (size_t i = 0; !clash && i < region_count; i++)
		clash = regions[i].kind == REGION_MAPPED &&
			p < regions[i].base + regions[i].size &&
			regions[i].base < p + size;
	if (clash) {
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (mmap((void *)p, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd,
		 0) == MAP_FAILED) {
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	add_region((struct region){.kind = REGION_MAPPED, .base = p,
				   .size = size, .handle = h});
	h->mappings++;
	stats.maps++;
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

static CUresult fake_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CUresult r = need_context();
	uintptr_t p = (uintptr_t)ptr;

	if (r)
		return r;
	pthread_mutex_lock(&L);
	struct region *m = find_region(REGION_MAPPED, p);
	/* CUDA unmaps whole mappings only. */
	if (!m || m->size != size) {
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct fake_handle *h = m->handle;
	drop_region(m);
	mmap((void *)p, size, PROT_NONE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	h->mappings--;
	handle_maybe_free(h);
	stats.unmaps++;
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

static CUresult fake_cuMemSetAccess(CUdeviceptr ptr, size_t size,
				    const CUmemAccessDesc *desc, size_t count)
{
	CUresult r = need_context();
	uintptr_t p = (uintptr_t)ptr, end = p + size;

	if (r)
		return r;
	if (!count || desc[0].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&L);
	/* The range must be wholly mapped, and start and end on mapping
	 * boundaries. */
	for (uintptr_t at = p; at < end;) {
		struct region *m = find_region(REGION_MAPPED, at);
		if (!m || m->base + m->size > end) {
			pthread_mutex_unlock(&L);
			return CUDA_ERROR_INVALID_VALUE;
		}
		at = m->base + m->size;
	}
	for (uintptr_t at = p; at < end;) {
		struct region *m = find_region(REGION_MAPPED, at);
		m->accessible = 1;
		mprotect((void *)at, m->size, PROT_READ | PROT_WRITE);
		at = m->base + m->size;
	}
	stats.set_access++;
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

/*===----------------------------------------------------------------------===
 * Pointer attributes and a stream's context (interop)
 *===----------------------------------------------------------------------===*/

/* The attributes an importer asks of a pointer: its memory type, device
 * ordinal and context. Device memory is an allocation (its context is
 * the one current at cuMemAlloc/cuMemAllocAsync) or an accessible
 * mapping (no context: the driver answers NULL for virtual memory);
 * pinned host memory is CU_MEMORYTYPE_HOST; any other address, as for
 * pageable memory the driver does not know, CUDA_ERROR_INVALID_VALUE. */
static CUresult fake_cuPointerGetAttribute(void *data,
					   CUpointer_attribute attribute,
					   CUdeviceptr ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	CUresult r = CUDA_SUCCESS;
	struct CUctx_st *ctx = NULL;
	int ordinal = 0;
	unsigned type = CU_MEMORYTYPE_DEVICE;

	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&L);
	struct region *a = region_at(REGION_ALLOC, p);
	struct region *m = region_at(REGION_MAPPED, p);
	if (a && !a->free_pending) {
		ctx = a->ctx;
		ordinal = ctx ? ctx->ordinal : 0;
	} else if (m && m->accessible) {
		ordinal = m->handle->ordinal;
	} else if (region_at(REGION_PINNED, p)) {
		type = CU_MEMORYTYPE_HOST;
	} else {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&L);
	if (r)
		return r;
	switch (attribute) {
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned *)data = type;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = ordinal;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = ctx;
		return CUDA_SUCCESS;
	default:
		fprintf(stderr, "fakecuda: cuPointerGetAttribute(%d): not "
			"modelled\n", (int)attribute);
		return CUDA_ERROR_INVALID_VALUE;
	}
}

/* The context a stream was created in; for CU_STREAM_LEGACY the current
 * one (CUDA_ERROR_INVALID_CONTEXT if none). The per-thread default
 * stream and NULL are not modelled: CUDA_ERROR_INVALID_HANDLE, with a
 * line on stderr. */
static CUresult fake_cuStreamGetCtx(CUstream s, CUcontext *out)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	*out = NULL;
	if (s == CU_STREAM_LEGACY) {
		if (!current || !current->alive)
			return CUDA_ERROR_INVALID_CONTEXT;
		*out = current;
		return CUDA_SUCCESS;
	}
	if (default_stream(s, "cuStreamGetCtx"))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&L);
	int known = 0;
	for (struct CUstream_st *t = streams; t && !known; t = t->next)
		known = t == s;
	pthread_mutex_unlock(&L);
	if (!known)
		return CUDA_ERROR_INVALID_HANDLE;
	if (s->dead || !s->ctx->alive || s->ctx->generation != s->generation)
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = s->ctx;
	return CUDA_SUCCESS;
}

/*===----------------------------------------------------------------------===
 * Entry points
 *===----------------------------------------------------------------------===*/

/*===----------------------------------------------------------------------===
 * Graphs: stream capture of kernels, replayed by pushing copies of the
 * captured ops (a graph and its instantiation are the same list here)
 *===----------------------------------------------------------------------===*/

#define GRAPH_MAGIC 0x67726170u

struct CUgraph_st {
	unsigned magic;
	struct op *ops;
};

struct CUgraphExec_st {
	unsigned magic;
	struct op *ops;
};

static void free_ops(struct op *o)
{
	while (o) {
		struct op *next = o->next;
		free(o);
		o = next;
	}
}

/* A copy of the list |o|, or NULL (out of memory, *failed set). */
static struct op *copy_ops(const struct op *o, int *failed)
{
	struct op *head = NULL, **tail = &head;
	for (; o; o = o->next) {
		struct op *c = malloc(sizeof *c);
		if (!c) {
			free_ops(head);
			*failed = 1;
			return NULL;
		}
		*c = *o;
		c->next = NULL;
		c->uninit_seen = 0;
		*tail = c;
		tail = &c->next;
	}
	return head;
}

static CUresult fake_cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode)
{
	CUresult r = need_context();

	if (r)
		return r;
	if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
	    mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
	    mode != CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	r = stream_usable(&s);
	if (r)
		return r;
	pthread_mutex_lock(&L);
	if (s->capturing || s->legacy)
		r = CUDA_ERROR_ILLEGAL_STATE;
	else
		s->capturing = 1;
	pthread_mutex_unlock(&L);
	return r;
}

static CUresult fake_cuStreamEndCapture(CUstream s, CUgraph *out)
{
	CUresult r = need_context();

	if (r)
		return r;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	*out = NULL;
	r = stream_usable(&s);
	if (r)
		return r;
	pthread_mutex_lock(&L);
	if (!s->capturing) {
		pthread_mutex_unlock(&L);
		return CUDA_ERROR_ILLEGAL_STATE;
	}
	struct op *ops = s->captured;
	int invalid = s->capture_invalid;
	s->capturing = s->capture_invalid = 0;
	s->captured = s->captured_tail = NULL;
	pthread_mutex_unlock(&L);
	if (invalid) {
		free_ops(ops);
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	}
	struct CUgraph_st *g = calloc(1, sizeof *g);
	if (!g) {
		free_ops(ops);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	g->magic = GRAPH_MAGIC;
	g->ops = ops;
	*out = g;
	return CUDA_SUCCESS;
}

static CUresult fake_cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g,
						 unsigned long long flags)
{
	int failed = 0;

	if (!out || !g || g->magic != GRAPH_MAGIC || flags)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUgraphExec_st *e = calloc(1, sizeof *e);
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->magic = GRAPH_MAGIC;
	e->ops = copy_ops(g->ops, &failed);
	if (failed) {
		free(e);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = e;
	return CUDA_SUCCESS;
}

static CUresult fake_cuGraphLaunch(CUgraphExec e, CUstream s)
{
	CUresult r = need_context();
	int failed = 0;

	if (r)
		return r;
	if (!e || e->magic != GRAPH_MAGIC)
		return CUDA_ERROR_INVALID_HANDLE;
	r = stream_usable(&s);
	if (r)
		return r;
	struct op *ops = copy_ops(e->ops, &failed);
	if (failed)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&L);
	stats.graph_launches++;
	while (ops) {
		struct op *next = ops->next;
		for (int i = 0; i < ops->kernel->pointers; i++)
			use_ok(s, ops->ptr[i], ops->kernel->name);
		push_op(s, ops);
		ops = next;
	}
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

/* Launches already pushed hold copies: both free at once. */
static CUresult fake_cuGraphExecDestroy(CUgraphExec e)
{
	if (!e || e->magic != GRAPH_MAGIC)
		return CUDA_ERROR_INVALID_VALUE;
	e->magic = 0;
	free_ops(e->ops);
	free(e);
	return CUDA_SUCCESS;
}

static CUresult fake_cuGraphDestroy(CUgraph g)
{
	if (!g || g->magic != GRAPH_MAGIC)
		return CUDA_ERROR_INVALID_VALUE;
	g->magic = 0;
	free_ops(g->ops);
	free(g);
	return CUDA_SUCCESS;
}

#define ENTRY(name) {#name, (void *)fake_##name}

static const struct {
	const char *name;
	void *fn;
} entries[] = {
	ENTRY(cuGetErrorName),
	ENTRY(cuGetErrorString),
	ENTRY(cuInit),
	ENTRY(cuDeviceGetCount),
	ENTRY(cuDeviceGet),
	ENTRY(cuDeviceGetName),
	{"cuDeviceTotalMem", (void *)fake_cuDeviceTotalMem},
	ENTRY(cuDeviceGetAttribute),
	ENTRY(cuDevicePrimaryCtxRetain),
	{"cuDevicePrimaryCtxRelease",
	 (void *)fake_cuDevicePrimaryCtxRelease},
	ENTRY(cuCtxSetCurrent),
	ENTRY(cuModuleLoadData),
	ENTRY(cuModuleLoadDataEx),
	ENTRY(cuModuleUnload),
	ENTRY(cuModuleGetFunction),
	ENTRY(cuFuncSetAttribute),
	ENTRY(cuStreamCreate),
	{"cuStreamDestroy", (void *)fake_cuStreamDestroy},
	ENTRY(cuStreamSynchronize),
	ENTRY(cuLaunchKernel),
	ENTRY(cuEventCreate),
	{"cuEventDestroy", (void *)fake_cuEventDestroy},
	ENTRY(cuEventRecord),
	ENTRY(cuEventQuery),
	ENTRY(cuEventSynchronize),
	{"cuEventElapsedTime", (void *)fake_cuEventElapsedTime},
	{"cuMemGetInfo", (void *)fake_cuMemGetInfo},
	{"cuMemAlloc", (void *)fake_cuMemAlloc},
	{"cuMemFree", (void *)fake_cuMemFree},
	ENTRY(cuMemAllocAsync),
	ENTRY(cuMemFreeAsync),
	ENTRY(cuDeviceGetDefaultMemPool),
	ENTRY(cuMemPoolSetAttribute),
	ENTRY(cuMemPoolGetAttribute),
	ENTRY(cuMemPoolTrimTo),
	{"cuMemcpyHtoDAsync", (void *)fake_cuMemcpyHtoDAsync},
	{"cuMemcpyDtoHAsync", (void *)fake_cuMemcpyDtoHAsync},
	{"cuMemcpyDtoDAsync", (void *)fake_cuMemcpyDtoDAsync},
	ENTRY(cuMemHostAlloc),
	ENTRY(cuMemFreeHost),
	ENTRY(cuMemHostRegister),
	ENTRY(cuMemHostUnregister),
	ENTRY(cuMemGetAllocationGranularity),
	ENTRY(cuMemAddressReserve),
	ENTRY(cuMemAddressFree),
	ENTRY(cuMemCreate),
	ENTRY(cuMemRelease),
	ENTRY(cuMemMap),
	ENTRY(cuMemUnmap),
	ENTRY(cuMemSetAccess),
	ENTRY(cuPointerGetAttribute),
	ENTRY(cuStreamGetCtx),
	ENTRY(cuStreamWaitEvent),
	ENTRY(cuLaunchHostFunc),
	ENTRY(cuMemcpyPeerAsync),
	ENTRY(cuDeviceCanAccessPeer),
	ENTRY(cuCtxEnablePeerAccess),
	ENTRY(cuCtxGetCurrent),
	ENTRY(cuCtxGetDevice),
	{"cuStreamBeginCapture", (void *)fake_cuStreamBeginCapture},
	ENTRY(cuStreamEndCapture),
	{"cuGraphInstantiate", (void *)fake_cuGraphInstantiateWithFlags},
	ENTRY(cuGraphInstantiateWithFlags),
	ENTRY(cuGraphLaunch),
	ENTRY(cuGraphExecDestroy),
	ENTRY(cuGraphDestroy),
};

EXPORT CUresult cuDriverGetVersion(int *version);
EXPORT CUresult cuDriverGetVersion(int *version)
{
	*version = (int)env_long("FAKECUDA_VERSION", 13000);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
				    int version, cuuint64_t flags,
				    CUdriverProcAddressQueryResult *status);
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
				    int version, cuuint64_t flags,
				    CUdriverProcAddressQueryResult *status)
{
	const char *missing = getenv("FAKECUDA_MISSING");

	*pfn = NULL;
	if (status)
		*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	/* The plugin pins 12.0; a request for a later ABI would mean it
	 * expects signatures that 12.0 drivers do not have. */
	if (version != 12000)
		return CUDA_ERROR_INVALID_VALUE;
	if (missing && strcmp(symbol, missing) == 0)
		return CUDA_ERROR_NOT_FOUND;
	for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
		if (strcmp(entries[i].name, symbol) == 0) {
			*pfn = entries[i].fn;
			if (status)
				*status = CU_GET_PROC_ADDRESS_SUCCESS;
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_NOT_FOUND;
}

EXPORT void fakecuda_stats(struct fakecuda_stats *out);
EXPORT void fakecuda_stats(struct fakecuda_stats *out)
{
	pthread_mutex_lock(&L);
	*out = stats;
	out->device_bytes = device_bytes;
	out->sticky = (int)sticky;
	pthread_mutex_unlock(&L);
}

/* fakecuda.h: |run|(|arg|) on |s| in its order, over the device ranges
 * of |access| (checked at the call as a copy's are, marked read or
 * written when it runs). */
EXPORT CUresult fakecuda_enqueue(CUstream s, fakecuda_host_fn run, void *arg,
				 const struct fakecuda_access *access,
				 size_t count);
EXPORT CUresult fakecuda_enqueue(CUstream s, fakecuda_host_fn run, void *arg,
				 const struct fakecuda_access *access,
				 size_t count)
{
	CUresult r = need_context();
	struct op *o;

	if (r)
		return r;
	r = op_on(&s, &o);
	if (r)
		return r;
	if (count && !(o->access = calloc(count, sizeof *access))) {
		free(o);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (count)
		memcpy(o->access, access, count * sizeof *access);
	o->access_count = count;
	o->kind = OP_HOST;
	o->host_run = run;
	o->host_arg = arg;
	pthread_mutex_lock(&L);
	for (size_t i = 0; i < count; i++)
		if (!device_range_ok(access[i].ptr, access[i].bytes)) {
			pthread_mutex_unlock(&L);
			free(o->access);
			free(o);
			return CUDA_ERROR_INVALID_VALUE;
		}
	for (size_t i = 0; i < count; i++)
		use_ok(s, access[i].ptr, "fakecuda_enqueue");
	for (size_t i = 0; i < count; i++)
		o->cost += access[i].bytes;
	stats.host_ops++;
	push_op(s, o);
	pthread_mutex_unlock(&L);
	return CUDA_SUCCESS;
}

EXPORT void fakecuda_reset(void);
EXPORT void fakecuda_reset(void)
{
	pthread_mutex_lock(&L);
	sticky = CUDA_SUCCESS;
	pthread_mutex_unlock(&L);
}
