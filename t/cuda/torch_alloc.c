/* wafer — SPDX-License-Identifier: MIT
 *
 * torch_alloc.c: libwafer-torch.so (torch/allocator.c, wafer-torch(7))
 * as PyTorch drives it — dlopened from the build tree and called through
 * the two entry points of its pluggable allocator — on the stand-in
 * driver t/standins/fakecuda.c, with streams the test creates through the
 * stand-in's own cuStreamCreate, as PyTorch's are created by the CUDA
 * runtime. For each memory strategy (pool, stream): the bytes of every
 * allocation written and read back on its stream; threads on two streams
 * whose live allocations never overlap; one client for a device's
 * streams, each stream a queue of it, so memory freed on a stream is
 * handed out again on that stream and on the other (pool), the other
 * ordered after the work queued on the first before the free (a copy
 * still queued there when the memory is handed to the second stream
 * does not land on the second stream's bytes); statistics equal
 * to the calls made; size 0, a pointer it never gave out; close. Then
 * the ordering contract: memory freed while a copy into it is still
 * queued on its stream, then returned to the driver (by empty_cache, or
 * by the free itself with the pool's max_idle), must outlive the copy —
 * the stand-in turns a copy into unmapped memory into a sticky
 * CUDA_ERROR_ILLEGAL_ADDRESS. The pool's idle bound: the allocator's
 * default, and a configured one winning over it. The core has to synchronise the stream
 * for that: its work is the program's, which wafer cannot see. Stream 0
 * (the legacy default stream, CU_STREAM_LEGACY) for each strategy. The
 * statistics' report at exit (WAFER_TORCH_REPORT) in a child process. */
#include "build-config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t/cuda/torch_catch.h"
#include "t/standins/fakecuda.h"
#include "t/tap.h"
#include "torch/wafer_torch.h"

typedef void *(*alloc_fn)(ssize_t, int, void *);
typedef void (*free_fn)(void *, ssize_t, int, void *);
typedef int (*stats_fn)(int, struct wafer_torch_stats *);
typedef void (*empty_cache_fn)(void);
typedef size_t (*close_fn)(void);

static struct {
	alloc_fn alloc;
	free_fn free;
	stats_fn stats;
	empty_cache_fn empty_cache;
	close_fn close;
} wt;

typedef uint64_t fc_ptr;

/* The stand-in's entry points, resolved as the plugin resolves them. */
static struct {
	int (*cuInit)(unsigned);
	int (*cuDeviceGet)(int *, int);
	int (*cuDevicePrimaryCtxRetain)(void **, int);
	int (*cuDevicePrimaryCtxRelease)(int);
	int (*cuCtxSetCurrent)(void *);
	int (*cuStreamCreate)(void **, unsigned);
	int (*cuStreamDestroy)(void *);
	int (*cuStreamSynchronize)(void *);
	int (*cuMemcpyHtoDAsync)(fc_ptr, const void *, size_t, void *);
	int (*cuMemcpyDtoHAsync)(void *, fc_ptr, size_t, void *);
} cu;
/* Optional: only a stand-in that models interop has it (a test fails
 * without it). */
static int (*cuStreamGetCtx)(void *, void **);

static fakecuda_stats_fn fake_stats;
static fakecuda_reset_fn fake_reset;
static void *ctx;
static char tmpdir[] = "/tmp/wafer-torch.XXXXXX";

#define CU_STREAM_NON_BLOCKING 1
#define LEGACY_STREAM ((void *)(uintptr_t)1)

static struct wafer_torch_stats stats(void)
{
	struct wafer_torch_stats s = {.struct_size = sizeof s};
	if (wt.stats(-1, &s) != 0)
		diag("wafer_torch_stats failed");
	return s;
}

static int resolve(void *fake)
{
	static const char *const names[] = {
		"cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain",
		"cuDevicePrimaryCtxRelease", "cuCtxSetCurrent",
		"cuStreamCreate", "cuStreamDestroy", "cuStreamSynchronize",
		"cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync",
	};
	const char *missing = fakecuda_resolve(
		fake, names, sizeof names / sizeof names[0], (void **)&cu);

	if (missing) {
		diag("the stand-in does not give %s", missing);
		return 0;
	}
	static const char *const optional[] = {"cuStreamGetCtx"};
	if (fakecuda_resolve(fake, optional, 1, (void **)&cuStreamGetCtx))
		cuStreamGetCtx = NULL;
	fake_stats = (fakecuda_stats_fn)dlsym(fake, "fakecuda_stats");
	fake_reset = (fakecuda_reset_fn)dlsym(fake, "fakecuda_reset");
	return fake_stats && fake_reset;
}

static int sticky(void)
{
	struct fakecuda_stats s;
	fake_stats(&s);
	return s.sticky;
}

/* A configuration on the stand-in with memory strategy |strategy| and
 * the lines |extra|, for the runtime the allocator opens next; |name|
 * names its file. */
static void configure(const char *fake_path, const char *name,
		      const char *strategy, const char *extra)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s.conf", tmpdir, name);
	f = fopen(path, "w");
	if (!f)
		bail_out("cannot write %s", path);
	fprintf(f, "[core]\nbackend = cuda\n[cuda]\ndriver_library = %s\n"
		   "cublas = no\n[memory]\nstrategy = %s\n%s",
		fake_path, strategy, extra);
	fclose(f);
	setenv("WAFER_CONFIG", path, 1);
}

/* |n| bytes of |seed|'s pattern. */
static void pattern(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 31u + i * 7u + (i >> 8));
}

/* Writes |seed|'s pattern into |ptr| on |stream| and reads it back
 * (the read into pageable memory waits for the stream): 1 when the bytes
 * came back. */
static int round_trip(void *ptr, size_t n, void *stream, unsigned seed)
{
	unsigned char *in = malloc(n), *out = malloc(n);
	int same = 0;

	if (in && out) {
		pattern(in, n, seed);
		memset(out, 0, n);
		same = cu.cuMemcpyHtoDAsync((fc_ptr)(uintptr_t)ptr, in, n,
					    stream) == 0 &&
		       cu.cuMemcpyDtoHAsync(out, (fc_ptr)(uintptr_t)ptr, n,
					    stream) == 0 &&
		       memcmp(in, out, n) == 0;
	}
	free(in);
	free(out);
	return same;
}

/*===----------------------------------------------------------------------===
 * Threads on two streams
 *===----------------------------------------------------------------------===*/

#define THREADS 4
#define ROUNDS 150
#define KEEP 6

/* Every live allocation of every thread, to check that none overlap. */
static pthread_mutex_t ranges_lock = PTHREAD_MUTEX_INITIALIZER;
static struct range {
	uintptr_t begin, end;
} ranges[THREADS * KEEP];
static int overlaps, null_allocs, bad_bytes;

static void range_add(int slot, void *ptr, size_t n)
{
	uintptr_t b = (uintptr_t)ptr, e = b + n;
	pthread_mutex_lock(&ranges_lock);
	for (int i = 0; i < THREADS * KEEP; i++)
		if (ranges[i].end && b < ranges[i].end && ranges[i].begin < e)
			overlaps++;
	ranges[slot] = (struct range){b, e};
	pthread_mutex_unlock(&ranges_lock);
}

static void range_drop(int slot)
{
	pthread_mutex_lock(&ranges_lock);
	ranges[slot] = (struct range){0, 0};
	pthread_mutex_unlock(&ranges_lock);
}

struct worker {
	int id;
	void *stream;
	uint64_t allocs, frees;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	void *live[KEEP] = {0};
	size_t size[KEEP] = {0};
	unsigned seed = 12345u + (unsigned)w->id;

	cu.cuCtxSetCurrent(ctx);
	for (int r = 0; r < ROUNDS; r++) {
		int k = r % KEEP;
		int slot = w->id * KEEP + k;
		if (live[k]) {
			if (!round_trip(live[k], size[k], w->stream,
					(unsigned)(slot + r)))
				__atomic_fetch_add(&bad_bytes, 1,
						   __ATOMIC_RELAXED);
			range_drop(slot);
			wt.free(live[k], (ssize_t)size[k], 0, w->stream);
			w->frees++;
			live[k] = NULL;
		}
		seed = seed * 1103515245u + 12345u;
		/* Mostly small, now and then a few MiB (pages of the pool). */
		size[k] = (seed >> 8) % 16 == 0 ? (size_t)(seed % 3) * 1048576 +
							   1048576 + 17
						: (size_t)(seed >> 4) % 65536 + 1;
		live[k] = wt.alloc((ssize_t)size[k], 0, w->stream);
		if (!live[k]) {
			__atomic_fetch_add(&null_allocs, 1, __ATOMIC_RELAXED);
			continue;
		}
		w->allocs++;
		range_add(slot, live[k], size[k]);
		if (!round_trip(live[k], size[k], w->stream,
				(unsigned)(slot + r + 1)))
			__atomic_fetch_add(&bad_bytes, 1, __ATOMIC_RELAXED);
	}
	for (int k = 0; k < KEEP; k++)
		if (live[k]) {
			range_drop(w->id * KEEP + k);
			wt.free(live[k], (ssize_t)size[k], 0, w->stream);
			w->frees++;
		}
	return NULL;
}

static void test_threads(const char *strategy, void *s1, void *s2)
{
	pthread_t t[THREADS];
	struct worker w[THREADS];
	uint64_t allocs = 0, frees = 0;
	struct wafer_torch_stats before = stats(), after;

	overlaps = null_allocs = bad_bytes = 0;
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.id = i, .stream = i % 2 ? s2 : s1};
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		allocs += w[i].allocs;
		frees += w[i].frees;
	}
	after = stats();
	is_int(null_allocs, 0, "%s: %d threads on two streams: every alloc "
	       "returned memory", strategy, THREADS);
	is_int(overlaps, 0, "%s: no two live allocations overlap", strategy);
	is_int(bad_bytes, 0, "%s: every allocation holds the bytes written "
	       "on its stream", strategy);
	is_int((long long)(after.allocs - before.allocs), (long long)allocs,
	       "%s: allocs counted", strategy);
	is_int((long long)(after.frees - before.frees), (long long)frees,
	       "%s: frees counted", strategy);
	is_int((long long)after.bytes_live, 0, "%s: nothing live after",
	       strategy);
	is_int((long long)after.clients, 1,
	       "%s: one client for the device's streams", strategy);
	ok(after.peak_reserved >= after.peak_in_use &&
		   after.peak_in_use >= after.peak_live &&
		   after.peak_live > 1048576,
	   "%s: peaks: reserved %llu >= in use %llu >= live %llu", strategy,
	   (unsigned long long)after.peak_reserved,
	   (unsigned long long)after.peak_in_use,
	   (unsigned long long)after.peak_live);
	is_int(sticky(), 0, "%s: the stand-in saw no bad access", strategy);
}

/*===----------------------------------------------------------------------===
 * One stream at a time
 *===----------------------------------------------------------------------===*/

/* wafer_torch_alloc(size, device, stream) throws a std::runtime_error
 * whose text holds |reason|. */
static void raises(const char *strategy, ssize_t size, int device,
		   void *stream, const char *reason, const char *what)
{
	char text[1024];
	void *p;
	int r = torch_catch_alloc(wt.alloc, size, device, stream, &p, text,
				  sizeof text);

	ok(r == 1 && strncmp(text, "wafer-torch: ", 13) == 0 &&
		   strstr(text, reason),
	   "%s: %s throws std::runtime_error naming the cause", strategy,
	   what);
	if (r != 1 || !strstr(text, reason))
		diag("returned %d (%p), what(): '%s'; wanted '%s'", r, p, text,
		     reason);
	if (r == 0 && p)
		wt.free(p, size, device, stream);
}

static void test_basics(const char *strategy, void *s1, void *s2)
{
	struct wafer_torch_stats s0 = stats(), s;

	ok(wt.alloc(0, 0, s1) == NULL, "%s: size 0 gives NULL", strategy);
	wt.free(NULL, 0, 0, s1);
	s = stats();
	is_int((long long)(s.zero_allocs - s0.zero_allocs), 1,
	       "%s: counted as a zero alloc", strategy);
	is_int((long long)(s.failed_allocs - s0.failed_allocs), 0,
	       "%s: not as a failure", strategy);

	void *a = wt.alloc(4096, 0, s1);
	ok(a != NULL, "%s: 4096 bytes on stream 1", strategy);
	ok(a && round_trip(a, 4096, s1, 1), "%s: written and read back on "
	   "the stream", strategy);
	s0 = stats();
	wt.free(a, 4096, 0, s1);
	void *b = wt.alloc(4096, 0, s1);
	s = stats();
	if (strcmp(strategy, "pool") == 0) {
		ok(b == a, "%s: freed on stream 1, handed out again on "
		   "stream 1", strategy);
		is_int((long long)(s.storage_allocs - s0.storage_allocs), 0,
		       "%s: without a storage call", strategy);
		is_int((long long)(s.reuse_hits - s0.reuse_hits), 1,
		       "%s: a reuse hit", strategy);
	} else {
		/* stream: each alloc is the driver's stream-ordered one. */
		ok(b != NULL, "%s: allocated again on stream 1", strategy);
		is_int((long long)(s.storage_allocs - s0.storage_allocs), 1,
		       "%s: with the driver's cuMemAllocAsync", strategy);
		is_int((long long)(s.reuse_hits - s0.reuse_hits), 0,
		       "%s: no reuse of its own", strategy);
	}
	ok(b && round_trip(b, 4096, s1, 2), "%s: the reused memory works",
	   strategy);

	/* One pool for both streams: stream 2 gets what stream 1 freed. */
	wt.free(b, 4096, 0, s1);
	void *c = wt.alloc(4096, 0, s2);
	if (strcmp(strategy, "pool") == 0)
		ok(c != NULL && c == b, "%s: stream 2 gets what stream 1 "
		   "freed", strategy);
	else
		ok(c != NULL, "%s: 4096 bytes on stream 2", strategy);
	ok(c && round_trip(c, 4096, s2, 3), "%s: stream 2's memory works",
	   strategy);
	wt.free(c, 4096, 0, s2);

	s0 = stats();
	int here = 0;
	wt.free(&here, 4, 0, s1);
	s = stats();
	is_int((long long)(s.frees - s0.frees), 0,
	       "%s: a pointer it never gave out is not freed", strategy);
	/* A failure is thrown, with wafer's reason, for PyTorch to raise
	 * in Python (never a NULL PyTorch would hand to a kernel). */
	raises(strategy, -5, 0, s1, "alloc of -5 bytes",
	       "a negative size");
	raises(strategy, 16, -1, s1, "device -1: not a CUDA device",
	       "device -1");
	raises(strategy, 16, 3, s1, "cannot open a wafer client on cuda:3",
	       "a device the stand-in does not have");
	raises(strategy, (ssize_t)1 << 40, 0, s1, "alloc of 1099511627776 "
	       "bytes on device 0", "1 TiB, more than the device has");
	s = stats();
	is_int((long long)(s.failed_allocs - s0.failed_allocs), 4,
	       "%s: four failures counted", strategy);
}

/* Memory whose last use is still queued on its stream when it is freed
 * and returned to the driver: the return must wait for the use.
 * FAKECUDA_DELAY_US keeps the copy queued well past the free. The
 * return is the program's wafer_torch_empty_cache, or with |on_free|
 * the strategy's own, inside the free (the pool's max_idle). */
static void test_ordering(const char *strategy, void *s1, bool on_free)
{
	const char *how = on_free ? "free" : "empty_cache";
	size_t n = 4 * 1048576;
	unsigned char *in = malloc(n);
	struct wafer_torch_stats s0, s;

	pattern(in, n, 9);
	void *p = wt.alloc((ssize_t)n, 0, s1);
	ok(p != NULL, "%s, %s: 4 MiB for the ordering check", strategy, how);
	if (!p) {
		free(in);
		return;
	}
	s0 = stats();
	/* Set and unset while no stream has work (the stand-in's stream
	 * threads read it before each step). */
	setenv("FAKECUDA_DELAY_US", "20000", 1);
	/* Staged at the call (pageable source); runs 20 ms later. */
	cu.cuMemcpyHtoDAsync((fc_ptr)(uintptr_t)p, in, n, s1);
	wt.free(p, (ssize_t)n, 0, s1);
	if (!on_free)
		wt.empty_cache();
	int synced = cu.cuStreamSynchronize(s1);
	unsetenv("FAKECUDA_DELAY_US");
	s = stats();
	ok(s.storage_frees + s.storage_unmaps >
		   s0.storage_frees + s0.storage_unmaps,
	   "%s: %s gave memory back to the driver (frees %llu, "
	   "unmaps %llu)", strategy, how,
	   (unsigned long long)(s.storage_frees - s0.storage_frees),
	   (unsigned long long)(s.storage_unmaps - s0.storage_unmaps));
	is_int(synced, 0, "%s, %s: the copy queued before the free ran on "
	       "live memory (stream sync)", strategy, how);
	is_int(sticky(), 0, "%s, %s: no access to memory already given back",
	       strategy, how);
	free(in);
}

/* Memory freed on stream 1 while a copy into it is still queued there,
 * handed to stream 2 at once: stream 2's own bytes must not be
 * overwritten by that late copy (stream 2 waits for it on the device). */
static void test_cross_stream(const char *strategy, void *s1, void *s2)
{
	size_t n = 1048576;
	unsigned char *in = malloc(n);

	pattern(in, n, 11);
	void *p = wt.alloc((ssize_t)n, 0, s1);
	ok(p != NULL, "%s: 1 MiB on stream 1", strategy);
	if (!p) {
		free(in);
		return;
	}
	setenv("FAKECUDA_DELAY_US", "20000", 1);
	/* Staged at the call (pageable source); runs 20 ms later. */
	cu.cuMemcpyHtoDAsync((fc_ptr)(uintptr_t)p, in, n, s1);
	wt.free(p, (ssize_t)n, 0, s1);
	void *q = wt.alloc((ssize_t)n, 0, s2);
	unsetenv("FAKECUDA_DELAY_US");
	if (strcmp(strategy, "pool") == 0)
		ok(q == p, "%s: stream 2 gets it at once", strategy);
	else
		ok(q != NULL, "%s: stream 2 gets memory", strategy);
	ok(q && round_trip(q, n, s2, 12),
	   "%s: stream 2's bytes are its own, not the late copy's", strategy);
	if (q)
		wt.free(q, (ssize_t)n, 0, s2);
	is_int(cu.cuStreamSynchronize(s1), 0, "%s: stream 1 finished",
	       strategy);
	is_int(sticky(), 0, "%s: no access out of order", strategy);
	free(in);
}

/* Stream 0: PyTorch's default. The allocator wraps it as
 * CU_STREAM_LEGACY, the legacy default stream of the current context,
 * which the plugin and the stand-in take as any stream. */
static void test_legacy_stream(const char *strategy)
{
	void *owner = NULL;

	is_int(cuStreamGetCtx ? cuStreamGetCtx(LEGACY_STREAM, &owner) : -1,
	       FAKECUDA_SUCCESS, "%s, stream 0: the driver takes "
	       "CU_STREAM_LEGACY", strategy);
	ok(owner == ctx, "%s, stream 0: it is the current context's",
	   strategy);
	void *p = wt.alloc(1000, 0, NULL);
	ok(p != NULL, "%s, stream 0: 1000 bytes", strategy);
	ok(p && round_trip(p, 1000, LEGACY_STREAM, 5),
	   "%s, stream 0: written and read back on the legacy stream",
	   strategy);
	wt.free(p, 1000, 0, NULL);
	void *q = wt.alloc(1000, 0, NULL);
	if (strcmp(strategy, "pool") == 0)
		ok(q == p, "%s, stream 0: freed memory handed out again",
		   strategy);
	else
		ok(q != NULL, "%s, stream 0: allocated again", strategy);
	ok(q && round_trip(q, 1000, LEGACY_STREAM, 6),
	   "%s, stream 0: the memory allocated again works", strategy);
	wt.free(q, 1000, 0, NULL);
	is_int(cu.cuStreamSynchronize(LEGACY_STREAM), FAKECUDA_SUCCESS,
	       "%s, stream 0: the legacy stream synchronises", strategy);
	is_int(sticky(), 0, "%s, stream 0: no access out of stream order",
	       strategy);
}

/* CUDA graphs (graph_pool.cc): while a pool is active for stream 1,
 * its allocations come from the pool's own memory; a block freed inside
 * the capture is not handed to an allocation outside it, another stream
 * is not in the pool, and the pool's memory goes back once it was
 * released and its blocks freed. record_stream: a free then waits for
 * the other stream's work, on the device. */
static void test_graph_pool(const char *strategy, void *so, void *s1, void *s2)
{
	void *begin = dlsym(so, "wafer_torch_begin_allocate_to_pool");
	void *end = dlsym(so, "wafer_torch_end_allocate_to_pool");
	void *release = dlsym(so, "wafer_torch_release_pool");
	void (*record_stream)(void *, void *) =
		(void (*)(void *, void *))dlsym(so, "wafer_torch_record_stream");
	size_t n = 65536;

	ok(begin && end && release && record_stream,
	   "%s: the graph pool and record_stream hooks are exported",
	   strategy);
	if (!begin || !end || !release || !record_stream)
		return;
	void *outside = wt.alloc((ssize_t)n, 0, s1);
	wt.free(outside, (ssize_t)n, 0, s1);
	torch_catch_begin_pool(begin, 0, 7, 9, s1);
	void *in_pool = wt.alloc((ssize_t)n, 0, s1);
	void *other = wt.alloc((ssize_t)n, 0, s2);
	/* The stream strategy gives freed memory back to the driver's
	 * stream-ordered pool, which may hand the same address to any
	 * client, ordered by the driver: only the pool strategy keeps it. */
	ok(in_pool && (in_pool != outside || strcmp(strategy, "pool") != 0),
	   "%s: inside a capture, stream 1 gets the pool's memory, not the "
	   "block it freed before", strategy);
	ok(other == outside || (other && strcmp(strategy, "pool") != 0),
	   "%s: stream 2 is not in the pool: it gets the freed block",
	   strategy);
	ok(in_pool && round_trip(in_pool, n, s1, 21),
	   "%s: the pool's memory works", strategy);
	wt.free(in_pool, (ssize_t)n, 0, s1);
	void *again = wt.alloc((ssize_t)n, 0, s1);
	if (strcmp(strategy, "pool") == 0)
		ok(again == in_pool, "%s: the pool's freed block serves the "
		   "capture's next allocation", strategy);
	else
		ok(again != NULL, "%s: the capture allocates again", strategy);
	torch_catch_pool_call(end, 0, 7, 9);
	void *after = wt.alloc((ssize_t)n, 0, s1);
	ok(after && after != again,
	   "%s: after the capture, stream 1 no longer allocates from the "
	   "pool", strategy);
	wt.free(other, (ssize_t)n, 0, s2);
	wt.free(after, (ssize_t)n, 0, s1);
	torch_catch_pool_call(release, 0, 7, 9);
	wt.free(again, (ssize_t)n, 0, s1);
	struct wafer_torch_stats st = stats();
	ok(st.bytes_live == 0, "%s: the pool released and its blocks freed, "
	   "nothing is live (%llu bytes)", strategy,
	   (unsigned long long)st.bytes_live);

	/* record_stream: freed on stream 1 while stream 2 still copies
	 * into it (20 ms late); the next allocation on stream 1 must not
	 * see the late copy's bytes. With the pool strategy: a stream-
	 * ordered allocation would need stream 2 ordered after the
	 * allocating stream first, which the program does (wait_stream),
	 * not the allocator. */
	if (strcmp(strategy, "pool") != 0)
		return;
	unsigned char *in = malloc(n);
	pattern(in, n, 31);
	void *p = wt.alloc((ssize_t)n, 0, s1);
	record_stream(p, s2);
	setenv("FAKECUDA_DELAY_US", "20000", 1);
	cu.cuMemcpyHtoDAsync((fc_ptr)(uintptr_t)p, in, n, s2);
	unsetenv("FAKECUDA_DELAY_US");
	wt.free(p, (ssize_t)n, 0, s1);
	void *q = wt.alloc((ssize_t)n, 0, s1);
	/* Stream 1 writes at once unless it waits for stream 2's copy;
	 * read back after that copy landed either way. */
	unsigned char *mine = malloc(n), *back = calloc(1, n);
	pattern(mine, n, 32);
	bool right = q && mine && back &&
		     cu.cuMemcpyHtoDAsync((fc_ptr)(uintptr_t)q, mine, n, s1) ==
			     0;
	usleep(60000);
	right = right &&
		cu.cuMemcpyDtoHAsync(back, (fc_ptr)(uintptr_t)q, n, s1) == 0 &&
		memcmp(mine, back, n) == 0;
	ok(right, "%s: record_stream: the block is reused on stream 1 only "
	   "after stream 2's copy into it", strategy);
	free(mine);
	free(back);
	wt.free(q, (ssize_t)n, 0, s1);
	is_int(cu.cuStreamSynchronize(s2), 0, "%s: stream 2 finished",
	       strategy);
	is_int(sticky(), 0, "%s: no access out of order", strategy);
	free(in);
}

static void test_close(void *s1)
{
	void *p = wt.alloc(100, 0, s1);
	ok(p != NULL, "an allocation left live");
	is_int((long long)wt.close(), 1, "close reports the one live "
	       "pointer");
	struct wafer_torch_stats s = stats();
	is_int((long long)s.clients, 0, "no clients after close");
	void *q = wt.alloc(100, 0, s1);
	ok(q != NULL, "alloc after close opens the runtime again");
	wt.free(q, 100, 0, s1);
	is_int((long long)wt.close(), 0, "close with nothing live");
}

/* The pool's bound on idle mapped memory: the allocator's own 20% unless
 * the configuration sets one. 10 MiB and 100 MiB live, the 10 MiB freed,
 * then 12 MiB more that the hole cannot take: 122 MiB mapped for 112
 * live, within 20% (nothing unmapped) but past 4% (the idle 10 MiB goes
 * back to the driver). */
static uint64_t unmaps_after_moving(void *s1)
{
	const size_t MiB = 1 << 20;
	void *a = wt.alloc(10 * MiB, 0, s1), *b = wt.alloc(100 * MiB, 0, s1);
	wt.free(a, 10 * MiB, 0, s1);
	void *c = wt.alloc(12 * MiB, 0, s1);
	uint64_t unmaps = stats().storage_unmaps;
	wt.free(b, 100 * MiB, 0, s1);
	wt.free(c, 12 * MiB, 0, s1);
	ok(a && b && c, "overhead: the three allocations");
	return unmaps;
}

static void test_overhead(const char *fake_path, void *s1)
{
	configure(fake_path, "pool-overhead-default", "pool", "");
	is_int((long long)unmaps_after_moving(s1), 0,
	       "overhead: the allocator's 20%% keeps the idle 10 MiB mapped");
	is_int((long long)wt.close(), 0, "overhead: closed");
	configure(fake_path, "pool-overhead-4", "pool",
		  "[memory.pool]\noverhead = 0.04\n");
	ok(unmaps_after_moving(s1) > 0,
	   "overhead: a configured 4%% wins, the idle 10 MiB is unmapped");
	is_int((long long)wt.close(), 0, "overhead: closed");
}

/* The child of test_report: one alloc and free on the parent's
 * configuration (WAFER_CONFIG), exit. */
static int report_child(void *s1)
{
	void *p = wt.alloc(300, 0, s1);
	wt.free(p, 300, 0, s1);
	return p ? 0 : 1;
}

/*===----------------------------------------------------------------------===
 * Setup
 *===----------------------------------------------------------------------===*/

static void *load(const char *path, void **out_fake, const char *fake_path)
{
	*out_fake = dlopen(fake_path, RTLD_NOW | RTLD_LOCAL);
	if (!*out_fake)
		bail_out("%s", dlerror());
	if (!resolve(*out_fake))
		bail_out("the stand-in's entry points");
	void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!so)
		bail_out("dlopen %s: %s", path, dlerror());
	wt.alloc = (alloc_fn)dlsym(so, "wafer_torch_alloc");
	wt.free = (free_fn)dlsym(so, "wafer_torch_free");
	wt.stats = (stats_fn)dlsym(so, "wafer_torch_stats");
	wt.empty_cache = (empty_cache_fn)dlsym(so, "wafer_torch_empty_cache");
	wt.close = (close_fn)dlsym(so, "wafer_torch_close");
	return so;
}

static void *context_and_stream(void)
{
	int dev = 0;
	void *s = NULL;

	if (cu.cuInit(0) || cu.cuDeviceGet(&dev, 0) ||
	    cu.cuDevicePrimaryCtxRetain(&ctx, dev) || cu.cuCtxSetCurrent(ctx))
		bail_out("the stand-in's primary context");
	if (cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))
		bail_out("cuStreamCreate");
	return s;
}

/* WAFER_TORCH_REPORT: this program again, as a child that allocates once
 * and exits; its report names the one alloc and free. */
static void test_report(void)
{
	const char *self = "/proc/self/exe";
	char path[4096], line[1024] = "";
	pid_t pid;
	int status = -1;

	snprintf(path, sizeof path, "%s/report", tmpdir);
	pid = fork();
	if (pid == 0) {
		setenv("WAFER_TORCH_REPORT", path, 1);
		execl(self, self, "--report-child", (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
	is_int(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0,
	       "report: the child ran");
	FILE *f = fopen(path, "r");
	if (f) {
		if (!fgets(line, sizeof line, f))
			line[0] = '\0';
		fclose(f);
	}
	like(line, "wafer-torch: clients=1 allocs=1 frees=1 ",
	     "report: WAFER_TORCH_REPORT has the statistics at exit");
	like(line, " peak_live=300 ", "report: the peak of live bytes");
}

int main(int argc, char **argv)
{
	const char *builddir = getenv("T_BUILDDIR");
	char so_path[4096], fake_path[4096], plugin[4096];
	void *fake, *so;

	if (!builddir)
		skip_all("T_BUILDDIR is not set (run through make check)");
	snprintf(so_path, sizeof so_path,
		 "%s/../torch/.libs/libwafer-torch.so", builddir);
	fakecuda_path(fake_path, sizeof fake_path, builddir);
	snprintf(plugin, sizeof plugin, "%s/../plugins/cuda/.libs/cuda.so",
		 builddir);
	if (access(plugin, R_OK) != 0 || access(fake_path, R_OK) != 0)
		skip_all("the cuda plugin was not built");
	unsetenv("WAFER_BACKEND");
	unsetenv("WAFER_CHANNEL");
	unsetenv("WAFER_MEMORY");
	unsetenv("FAKECUDA_DELAY_US");
	so = load(so_path, &fake, fake_path);
	if (argc > 1 && strcmp(argv[1], "--report-child") == 0)
		return report_child(context_and_stream());
	if (!mkdtemp(tmpdir))
		bail_out("mkdtemp");
	ok(wt.alloc && wt.free && wt.stats && wt.empty_cache && wt.close,
	   "the entry points are exported");
	ok(dlsym(so, "wafer__u64map_put") == NULL,
	   "its own copy of the pointer map is not");

	void *s1 = context_and_stream(), *s2 = NULL;
	if (cu.cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING))
		bail_out("cuStreamCreate");

	/* stream first: its ordering check leaves the context usable
	 * whatever happens; pool's, last, may poison it (a sticky error,
	 * which the stand-in forgets at fakecuda_reset). */
	static const char *const strategies[] = {"stream", "pool"};
	for (size_t i = 0; i < 2; i++) {
		const char *strategy = strategies[i];
		configure(fake_path, strategy, strategy, "");
		test_basics(strategy, s1, s2);
		test_threads(strategy, s1, s2);
		test_cross_stream(strategy, s1, s2);
		test_legacy_stream(strategy);
		test_graph_pool(strategy, so, s1, s2);
		if (strcmp(strategy, "pool") == 0)
			test_close(s1);
		test_ordering(strategy, s1, false);
		is_int((long long)wt.close(), 0, "%s: closed with nothing "
		       "live", strategy);
	}
	fake_reset();
	test_overhead(fake_path, s1);
	/* A pool that unmaps idle pages as soon as a free leaves more than
	 * 1 MiB of them: the free itself returns memory to the driver. */
	configure(fake_path, "pool-max-idle", "pool",
		  "[memory.pool]\nmax_idle = 1M\n");
	test_ordering("pool", s1, true);
	is_int((long long)wt.close(), 0, "pool, max_idle: closed with "
	       "nothing live");

	cu.cuStreamDestroy(s1);
	cu.cuStreamDestroy(s2);
	cu.cuDevicePrimaryCtxRelease(0);
	test_report();

	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		diag("could not remove %s", tmpdir);
	dlclose(so);
	dlclose(fake);
	done_testing();
	return exit_status();
}
