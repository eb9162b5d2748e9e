/* wafer — SPDX-License-Identifier: MIT
 *
 * allocator.c: libwafer-torch.so, PyTorch's CUDA memory on wafer
 * (wafer-torch(7)): the two entry points of PyTorch's
 * CUDAPluggableAllocator on top of the public client API, nothing else.
 *
 * One wafer client per device, opened on "cuda:<device>" with PyTorch's
 * default stream as its native queue, and one wafer queue per other
 * stream PyTorch allocates for (wafer_queue_open_native over that
 * stream), so that every stream's memory is one pool (wafer-queue(7)):
 *
 *  - an allocation is made with its stream's queue current: the memory
 *    may be used by PyTorch's work on that stream at once, and wafer has
 *    ordered that stream after the earlier users of the memory (a
 *    device-side event wait, no host sync);
 *  - a free is made with its stream's queue current: the memory serves
 *    any stream's next allocation once the work PyTorch queued on that
 *    stream before the free has run;
 *  - memory given back to the driver waits for that work too (the core
 *    synchronises a wrapped default queue before a free or an unmap:
 *    its work is issued by PyTorch, not by wafer), and the stream
 *    strategy's cuMemFreeAsync goes on the default stream after it.
 * A process with more streams on a device than a client has queues (32)
 * gets a client of their own for the rest, as each stream once had.
 *
 * Stream 0, the legacy default stream PyTorch runs on unless told
 * otherwise, cannot be passed as it is: a NULL native_queue means "a
 * stream of wafer's own", which would order nothing with PyTorch's work.
 * It is wrapped as CU_STREAM_LEGACY, the driver's explicit handle for the
 * same stream.
 *
 * Clients use the "mutex" channel unless `[torch] channel` says
 * otherwise: every call here wants its answer (a pointer) at once, and on
 * mpsc each one would be a round trip to the runner thread.
 *
 * A pointer names its allocation through a hash map (pointer -> record of
 * handle and client) under one lock held for a few instructions; clients
 * are found without a lock in an append-only table. */
#include "build-config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/interop.h>
#include <wafer/queue.h>
#include <wafer/wafer.h>

#include "lib/memory/u64map.h"
#include "torch/raise.h"
#include "torch/wafer_torch.h"

/* CU_STREAM_LEGACY of <cuda.h>: the legacy default stream, by name. */
#define TORCH_LEGACY_STREAM ((void *)(uintptr_t)0x1)

/* (device, stream) pairs: PyTorch's stream pools hold 32 streams per
 * priority and device, so this is far more than a process uses. */
#define TORCH_MAX_CLIENTS 1024

struct torch_client {
	int device;
	void *stream; /* as PyTorch passed it */
	/* The CUDA-graph private pool it serves (graph_pool.cc), {0, 0}
	 * for none: a pool's memory is in clients of its own. */
	uint64_t pool[2];
	/* PyTorch released the pool: what is freed goes back to the
	 * device. */
	atomic_bool released;
	wafer_client *client;
	/* The stream's queue on |client|, or NULL for its default queue
	 * (the client's own stream). */
	wafer_queue *queue;
	/* |client| was opened for this entry (closed with it). */
	bool owner;
};

/* Streams record_stream named for one block, beyond which its free
 * waits for the other streams on the host. */
#define TORCH_RECORDED_STREAMS 4

/* A live allocation. While free, |size| links the free list. */
struct torch_record {
	wafer_handle handle;
	uint32_t client;
	uint64_t size;
	/* record_stream: the entries of the other streams that use it. */
	uint32_t uses[TORCH_RECORDED_STREAMS];
	uint8_t use_count;
	bool many_uses;
};

/* state_lock: the runtime, opening clients, closing. */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static wafer_runtime *runtime;
static char channel[32];
static char backend[32];
static struct torch_client clients[TORCH_MAX_CLIENTS];
/* Published with release after the entry is written: readers scan
 * [0, count) without the lock. */
static atomic_size_t client_count;

/* map_lock: the pointer map, the records, the counters under it. */
static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wafer__u64map live;
static struct torch_record *records;
static size_t record_capacity, record_used;
static uint64_t free_records; /* index + 1 of the first free record; 0 */
static uint64_t n_allocs, n_frees, bytes_live, peak_live;

static atomic_uint_fast64_t n_zero, n_failed;

/* The calling thread's last message, for the exception raise.cc throws. */
static _Thread_local char reason[1024];

const char *torch_reason(void)
{
	return reason;
}

static void say(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	vsnprintf(reason, sizeof reason, format, ap);
	va_end(ap);
	fprintf(stderr, "wafer-torch: %s\n", reason);
}

/*===----------------------------------------------------------------------===
 * Statistics
 *===----------------------------------------------------------------------===*/

static int collect(int device, struct wafer_torch_stats *s)
{
	size_t n = atomic_load_explicit(&client_count, memory_order_acquire);
	int status = 0;

	pthread_mutex_lock(&map_lock);
	s->allocs = n_allocs;
	s->frees = n_frees;
	s->bytes_live = bytes_live;
	s->peak_live = peak_live;
	pthread_mutex_unlock(&map_lock);
	s->zero_allocs = atomic_load(&n_zero);
	s->failed_allocs = atomic_load(&n_failed);
	for (size_t i = 0; i < n; i++) {
		const struct torch_client *c = &clients[i];
		wafer_memory_usage u = {.struct_size = sizeof u};

		if ((device >= 0 && c->device != device) || !c->owner)
			continue;
		if (wafer_memory_usage_get(c->client, &u) != WAFER_OK) {
			say("statistics of the client for device %d, stream "
			    "%p: %s", c->device, c->stream, wafer_last_error());
			status = -1;
			continue;
		}
		s->clients++;
		s->bytes_in_use += u.bytes_in_use;
		s->peak_in_use += u.peak_in_use;
		s->bytes_reserved += u.bytes_reserved;
		s->peak_reserved += u.peak_reserved;
		s->storage_allocs += u.storage_allocs;
		s->storage_frees += u.storage_frees;
		s->storage_maps += u.storage_maps;
		s->storage_unmaps += u.storage_unmaps;
		s->reuse_hits += u.reuse_hits;
	}
	return status;
}

int wafer_torch_stats(int device, struct wafer_torch_stats *out)
{
	struct wafer_torch_stats s = {.struct_size = sizeof s};
	size_t size;

	if (!out || out->struct_size < sizeof(size_t) * 2) {
		say("wafer_torch_stats: struct_size %zu is too small",
		    out ? out->struct_size : (size_t)0);
		return -1;
	}
	int status = collect(device, &s);
	size = out->struct_size < sizeof s ? out->struct_size : sizeof s;
	memcpy((char *)out + sizeof(size_t), (char *)&s + sizeof(size_t),
	       size - sizeof(size_t));
	return status;
}

/* WAFER_TORCH_REPORT=stderr or a file: the statistics at exit, one line
 * of key=value (what dev/torch-train.py reads when it cannot ask). */
/* Set once the runtime was opened: the report has something to say. */
static bool report_wanted;

/* A destructor rather than atexit: it runs when the process exits and
 * also when this object is dlclose'd first (an atexit handler would then
 * point into unmapped code where a sanitizer's atexit keeps it apart
 * from the object's lifetime). */
__attribute__((destructor)) static void report_at_exit(void)
{
	if (!report_wanted)
		return;
	const char *where = getenv("WAFER_TORCH_REPORT");
	struct wafer_torch_stats s = {.struct_size = sizeof s};
	FILE *f;

	if (!where || !*where)
		return;
	collect(-1, &s);
	f = strcmp(where, "stderr") == 0 ? stderr : fopen(where, "w");
	if (!f) {
		say("WAFER_TORCH_REPORT: cannot write %s", where);
		return;
	}
	fprintf(f,
		"wafer-torch: clients=%llu allocs=%llu frees=%llu "
		"zero_allocs=%llu failed_allocs=%llu peak_live=%llu "
		"peak_in_use=%llu peak_reserved=%llu bytes_reserved=%llu "
		"storage_allocs=%llu storage_frees=%llu storage_maps=%llu "
		"storage_unmaps=%llu reuse_hits=%llu\n",
		(unsigned long long)s.clients, (unsigned long long)s.allocs,
		(unsigned long long)s.frees, (unsigned long long)s.zero_allocs,
		(unsigned long long)s.failed_allocs,
		(unsigned long long)s.peak_live,
		(unsigned long long)s.peak_in_use,
		(unsigned long long)s.peak_reserved,
		(unsigned long long)s.bytes_reserved,
		(unsigned long long)s.storage_allocs,
		(unsigned long long)s.storage_frees,
		(unsigned long long)s.storage_maps,
		(unsigned long long)s.storage_unmaps,
		(unsigned long long)s.reuse_hits);
	if (f != stderr)
		fclose(f);
}

/*===----------------------------------------------------------------------===
 * Clients
 *===----------------------------------------------------------------------===*/

/* A configuration value of [torch], or |fallback|, into |dst|. */
static void setting(const char *key, const char *fallback, char *dst,
		    size_t size)
{
	const char *v = wafer_runtime_config_value(runtime, "torch", key, NULL);
	snprintf(dst, size, "%s", v && *v ? v : fallback);
}

/* The pool's bound on idle mapped memory here, unless the configuration
 * sets [memory.pool] overhead. On PyTorch's stream every unmap must first
 * wait for the stream (work PyTorch queued may still read the memory), so
 * unmapping is dearer than on wafer's own queue and the pool should hold
 * idle pages longer than its default 3% allows. On an H200 (dev/
 * torch-train.py, one run): the MLP with random batch sizes took 1.16x
 * PyTorch's step time at 0.04, 1.05x at 0.10 and 1.00x at 0.20, holding
 * 590 MiB at most against expandable segments' 606; ResNet-18 and GPT-2
 * kept their peaks and storage calls at every value. */
#define TORCH_POOL_OVERHEAD "0.2"

/* state_lock held. The runtime runs no kernel of wafer's here, so the
 * cuda plugin need not load cuBLAS (PyTorch has loaded its own). Opened
 * once to read the configuration, and again with TORCH_POOL_OVERHEAD when
 * it sets no overhead of its own (API options outrank every file). */
static bool open_runtime(void)
{
	static const wafer_option options_list[] = {
		{"cuda", "cublas", "no"},
		{"memory.pool", "overhead", TORCH_POOL_OVERHEAD},
	};
	wafer_runtime_options options = {
		.struct_size = sizeof options,
		.options = options_list,
		.option_count = 1,
	};
	wafer_status status = wafer_runtime_open(&options, &runtime);

	if (status == WAFER_OK &&
	    !wafer_runtime_config_value(runtime, "memory.pool", "overhead",
					NULL)) {
		wafer_runtime_close(runtime);
		options.option_count = 2;
		status = wafer_runtime_open(&options, &runtime);
	}
	if (status != WAFER_OK) {
		say("cannot open the wafer runtime: %s", wafer_last_error());
		runtime = NULL;
		return false;
	}
	setting("channel", "mutex", channel, sizeof channel);
	setting("backend", "cuda", backend, sizeof backend);
	report_wanted = true;
	return true;
}

static bool same(const struct torch_client *c, int device, void *stream,
		 const uint64_t pool[2])
{
	return c->device == device && c->stream == stream &&
	       c->pool[0] == pool[0] && c->pool[1] == pool[1];
}

static const uint64_t no_pool[2] = {0, 0};

/* state_lock held: a client of its own for (device, stream) in |c|. */
static bool open_owner(struct torch_client *c, int device, void *stream)
{
	char selector[64];

	snprintf(selector, sizeof selector, "%s:%d", backend, device);
	wafer_client_options options = {
		.struct_size = sizeof options,
		.channel = channel,
		.native_queue = stream ? stream : TORCH_LEGACY_STREAM,
	};
	if (wafer_client_open(runtime, selector, &options, &c->client) !=
	    WAFER_OK) {
		say("cannot open a wafer client on %s for stream %p: %s",
		    selector, stream, wafer_last_error());
		return false;
	}
	c->owner = true;
	return true;
}

/* state_lock held: the entry of (device, stream, pool), made if need
 * be. The device's client is the entry of its stream 0, made first; a
 * graph pool's entries are clients of their own. */
static bool open_client(int device, void *stream, const uint64_t pool[2],
			size_t *out_index)
{
	size_t n = atomic_load_explicit(&client_count, memory_order_relaxed);
	size_t device_entry = SIZE_MAX;
	bool pooled = pool[0] || pool[1];

	for (size_t i = 0; i < n; i++) {
		if (same(&clients[i], device, stream, pool)) {
			*out_index = i;
			return true;
		}
		if (same(&clients[i], device, NULL, no_pool))
			device_entry = i;
	}
	if (!runtime && !open_runtime())
		return false;
	if (device_entry == SIZE_MAX && stream && !pooled) {
		if (!open_client(device, NULL, no_pool, &device_entry))
			return false;
		n = atomic_load_explicit(&client_count, memory_order_relaxed);
	}
	if (n == TORCH_MAX_CLIENTS) {
		say("device %d, stream %p: more than %d (device, stream) "
		    "pairs", device, stream, TORCH_MAX_CLIENTS);
		return false;
	}
	struct torch_client *c = &clients[n];
	*c = (struct torch_client){.device = device, .stream = stream,
				   .pool = {pool[0], pool[1]}};
	if (!stream || pooled) {
		if (!open_owner(c, device, stream))
			return false;
	} else {
		c->client = clients[device_entry].client;
		wafer_status status =
			wafer_queue_open_native(c->client, stream, &c->queue);
		if (status == WAFER_ERROR_OUT_OF_RANGE) {
			c->queue = NULL;
			if (!open_owner(c, device, stream))
				return false;
		} else if (status != WAFER_OK) {
			say("cannot open a wafer queue on device %d for stream "
			    "%p: %s", device, stream, wafer_last_error());
			return false;
		}
	}
	atomic_store_explicit(&client_count, n + 1, memory_order_release);
	*out_index = n;
	return true;
}

/* Makes entry |c|'s queue the calling thread's current one of its client
 * and returns the one to select again after (NULL: nothing to undo). */
static wafer_queue *enter_queue(const struct torch_client *c)
{
	return c->queue ? wafer_queue_select(c->queue) : NULL;
}

static void leave_queue(wafer_queue *was)
{
	if (was)
		wafer_queue_select(was);
}

static bool client_for(int device, void *stream, const uint64_t pool[2],
		       size_t *out_index)
{
	size_t n = atomic_load_explicit(&client_count, memory_order_acquire);

	for (size_t i = 0; i < n; i++)
		if (same(&clients[i], device, stream, pool)) {
			*out_index = i;
			return true;
		}
	if (device < 0) {
		say("device %d: not a CUDA device", device);
		return false;
	}
	pthread_mutex_lock(&state_lock);
	bool ok = open_client(device, stream, pool, out_index);
	pthread_mutex_unlock(&state_lock);
	return ok;
}

/* Out of memory on |device|: what the other streams' clients hold cached
 * goes back to the device (each client's own cache it trimmed itself). */
static void trim_others(int device, size_t except)
{
	size_t n = atomic_load_explicit(&client_count, memory_order_acquire);

	for (size_t i = 0; i < n; i++)
		if (clients[i].owner && clients[i].device == device &&
		    clients[i].client != clients[except].client)
			wafer_memory_trim(clients[i].client);
}

/*===----------------------------------------------------------------------===
 * Pointer map
 *===----------------------------------------------------------------------===*/

/* map_lock held. The index of a free record, or SIZE_MAX when host
 * memory ran out. */
static size_t take_record(void)
{
	if (free_records) {
		size_t i = (size_t)free_records - 1;
		free_records = records[i].size;
		return i;
	}
	if (record_used == record_capacity) {
		size_t capacity = record_capacity ? record_capacity * 2 : 256;
		struct torch_record *bigger =
			realloc(records, capacity * sizeof *records);
		if (!bigger)
			return SIZE_MAX;
		records = bigger;
		record_capacity = capacity;
	}
	return record_used++;
}

/* map_lock held. */
static void put_record(size_t i)
{
	records[i].size = free_records;
	free_records = i + 1;
}

static bool remember(void *ptr, wafer_handle handle, size_t client,
		     size_t size)
{
	uint64_t key = (uint64_t)(uintptr_t)ptr;
	bool ok = false;

	pthread_mutex_lock(&map_lock);
	if (wafer__u64map_get(&live, key, NULL)) {
		/* Two live allocations at one address: wafer's bug. */
		say("%p was handed out twice (%zu bytes now)", ptr, size);
	} else {
		size_t i = take_record();
		if (i != SIZE_MAX && wafer__u64map_put(&live, key, i)) {
			records[i] = (struct torch_record){
				.handle = handle,
				.client = (uint32_t)client,
				.size = size,
			};
			n_allocs++;
			bytes_live += size;
			if (bytes_live > peak_live)
				peak_live = bytes_live;
			ok = true;
		} else {
			if (i != SIZE_MAX)
				put_record(i);
			say("out of host memory for the pointer map");
		}
	}
	pthread_mutex_unlock(&map_lock);
	return ok;
}

static bool forget(void *ptr, struct torch_record *out)
{
	uint64_t i;

	pthread_mutex_lock(&map_lock);
	bool found = wafer__u64map_remove(&live, (uint64_t)(uintptr_t)ptr, &i);
	if (found) {
		*out = records[i];
		put_record((size_t)i);
		n_frees++;
		bytes_live -= out->size;
	}
	pthread_mutex_unlock(&map_lock);
	return found;
}

/*===----------------------------------------------------------------------===
 * Entry points
 *===----------------------------------------------------------------------===*/

/* A handle's first byte as a pointer PyTorch can use, or NULL. */
static void *pointer_of(wafer_client *client, wafer_handle handle, int device)
{
	wafer_native_buffer nb = {.struct_size = sizeof nb};

	if (wafer_handle_native(client, handle, &nb) != WAFER_OK) {
		say("device %d: the pointer of a new buffer: %s", device,
		    wafer_last_error());
		return NULL;
	}
	if (nb.kind != WAFER_NATIVE_CUDA_POINTER &&
	    nb.kind != WAFER_NATIVE_HOST_POINTER &&
	    nb.kind != WAFER_NATIVE_LEVELZERO_POINTER) {
		say("%s:%d gives %s buffers, not pointers", backend, device,
		    wafer_native_kind_name(nb.kind));
		return NULL;
	}
	return (void *)(uintptr_t)nb.address;
}

/* wafer_torch_alloc for a size > 0: the pointer, or NULL said why. */
static void *allocate(size_t size, int device, void *stream)
{
	size_t index;
	wafer_handle handle;
	uint64_t pool[2] = {0, 0};

	/* Inside a CUDA-graph capture: the graph's private pool. */
	torch_pool_of(device, stream, pool);
	if (!client_for(device, stream, pool, &index))
		return NULL;
	wafer_client *client = clients[index].client;
	wafer_queue *was = enter_queue(&clients[index]);
	wafer_status status = wafer_empty(client, size, &handle);
	if (status == WAFER_ERROR_OUT_OF_MEMORY) {
		trim_others(device, index);
		status = wafer_empty(client, size, &handle);
	}
	leave_queue(was);
	if (status != WAFER_OK) {
		say("alloc of %zu bytes on device %d, stream %p: %s", size,
		    device, stream, wafer_last_error());
		return NULL;
	}
	void *ptr = pointer_of(client, handle, device);
	if (ptr && remember(ptr, handle, index, size))
		return ptr;
	was = enter_queue(&clients[index]);
	wafer_release(client, handle);
	leave_queue(was);
	return NULL;
}

/* wafer_torch_alloc (raise.cc) without the exception. */
void *torch_alloc_or_null(ssize_t size, int device, void *stream)
{
	if (size == 0) {
		/* PyTorch asks for empty tensors; its own allocator answers
		 * NULL for them, and never frees NULL. */
		atomic_fetch_add(&n_zero, 1);
		return NULL;
	}
	void *ptr = NULL;
	if (size < 0)
		say("alloc of %zd bytes on device %d", size, device);
	else
		ptr = allocate((size_t)size, device, stream);
	if (!ptr)
		atomic_fetch_add(&n_failed, 1);
	return ptr;
}

/* The queue of entry |c|: its stream's, or its client's default one. */
static wafer_queue *queue_of(const struct torch_client *c)
{
	return c->queue ? c->queue : wafer_client_default_queue(c->client);
}

/* Before |r| is freed on its stream: that stream waits for the work
 * issued before on the streams record_stream named (an event each, on
 * the device, where they share a client; the host waits otherwise). */
static void wait_for_uses(const struct torch_record *r)
{
	const struct torch_client *c = &clients[r->client];
	if (r->many_uses) {
		wafer_sync(c->client);
		return;
	}
	for (uint8_t k = 0; k < r->use_count; k++) {
		const struct torch_client *u = &clients[r->uses[k]];
		wafer_event *e = NULL;
		if (u->client != c->client ||
		    wafer_event_create(c->client, 0, &e) != WAFER_OK ||
		    wafer_event_record(e, queue_of(u)) != WAFER_OK ||
		    wafer_queue_wait(queue_of(c), e) != WAFER_OK)
			wafer_queue_sync(queue_of(u));
		wafer_event_release(e);
	}
}

void wafer_torch_free(void *ptr, ssize_t size, int device, void *stream)
{
	struct torch_record r;

	if (!ptr)
		return;
	if (!forget(ptr, &r)) {
		say("free of %p (%zd bytes, device %d, stream %p): not a live "
		    "allocation of wafer-torch", ptr, size, device, stream);
		return;
	}
	/* Released with the stream's queue current: reused by any stream
	 * once the work queued on this one before has run (and on the
	 * streams record_stream named), or given back to the driver behind
	 * it. */
	const struct torch_client *c = &clients[r.client];
	wait_for_uses(&r);
	wafer_queue *was = enter_queue(c);
	wafer_status status = wafer_release(c->client, r.handle);
	leave_queue(was);
	if (status != WAFER_OK)
		say("free of %p (%zd bytes, device %d): %s", ptr, size,
		    device, wafer_last_error());
	/* A released graph pool keeps nothing cached. */
	if (atomic_load(&c->released) && c->owner)
		wafer_memory_trim(c->client);
}

void torch_pool_release(int device, uint64_t a, uint64_t b)
{
	size_t n = atomic_load_explicit(&client_count, memory_order_acquire);

	for (size_t i = 0; i < n; i++) {
		struct torch_client *c = &clients[i];
		if (c->device != device || c->pool[0] != a || c->pool[1] != b)
			continue;
		atomic_store(&c->released, true);
		if (c->owner)
			wafer_memory_trim(c->client);
	}
}

void wafer_torch_record_stream(void *ptr, void *stream)
{
	uint64_t i;
	size_t use;

	pthread_mutex_lock(&map_lock);
	bool found = wafer__u64map_get(&live, (uint64_t)(uintptr_t)ptr, &i);
	struct torch_record r = found ? records[i] : (struct torch_record){0};
	pthread_mutex_unlock(&map_lock);
	if (!found) {
		say("record_stream of %p: not a live allocation of wafer-torch",
		    ptr);
		return;
	}
	const struct torch_client *owner = &clients[r.client];
	if (owner->stream == stream ||
	    !client_for(owner->device, stream, no_pool, &use))
		return;
	pthread_mutex_lock(&map_lock);
	/* Still the same allocation (not freed meanwhile by another
	 * thread, which PyTorch does not do). */
	if (wafer__u64map_get(&live, (uint64_t)(uintptr_t)ptr, &i)) {
		struct torch_record *rec = &records[i];
		bool known = false;
		for (uint8_t k = 0; k < rec->use_count; k++)
			known |= rec->uses[k] == (uint32_t)use;
		if (!known && rec->use_count < TORCH_RECORDED_STREAMS)
			rec->uses[rec->use_count++] = (uint32_t)use;
		else if (!known)
			rec->many_uses = true;
	}
	pthread_mutex_unlock(&map_lock);
}

void wafer_torch_empty_cache(void)
{
	size_t n = atomic_load_explicit(&client_count, memory_order_acquire);

	for (size_t i = 0; i < n; i++)
		if (clients[i].owner &&
		    wafer_memory_trim(clients[i].client) != WAFER_OK)
			say("empty_cache on device %d, stream %p: %s",
			    clients[i].device, clients[i].stream,
			    wafer_last_error());
}

size_t wafer_torch_close(void)
{
	size_t n, leaked;

	pthread_mutex_lock(&state_lock);
	pthread_mutex_lock(&map_lock);
	leaked = live.count;
	wafer__u64map_fini(&live);
	free(records);
	records = NULL;
	record_capacity = record_used = 0;
	free_records = 0;
	n_allocs = n_frees = bytes_live = peak_live = 0;
	pthread_mutex_unlock(&map_lock);
	atomic_store(&n_zero, 0);
	atomic_store(&n_failed, 0);

	n = atomic_load(&client_count);
	atomic_store(&client_count, 0);
	/* The streams' queues first, then the clients they belong to. */
	for (size_t i = 0; i < n; i++)
		if (clients[i].queue &&
		    wafer_queue_close(clients[i].queue) != WAFER_OK)
			say("closing the queue of device %d, stream %p: %s",
			    clients[i].device, clients[i].stream,
			    wafer_last_error());
	for (size_t i = 0; i < n; i++) {
		if (clients[i].owner &&
		    wafer_client_close(clients[i].client) != WAFER_OK)
			say("closing the client of device %d, stream %p: %s",
			    clients[i].device, clients[i].stream,
			    wafer_last_error());
		clients[i] = (struct torch_client){0};
	}
	wafer_runtime_close(runtime);
	runtime = NULL;
	pthread_mutex_unlock(&state_lock);
	return leaked;
}
