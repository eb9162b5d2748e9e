/* wafer — SPDX-License-Identifier: MIT
 *
 * cuda_comm.c: the cuda plugin's peer copies and collectives through the
 * vendor ABI alone (dlopen, t/standins/fake_host.h's services), as the core drives
 * them:
 *
 *  - storage.copy_peer between two queues of one device, on one queue,
 *    and between two devices: the values, and the order on both queues
 *    (the source overwritten, or freed stream-ordered, right after);
 *  - the comm entries: an id, a one-rank communicator from an all-zero
 *    id, two ranks on two devices (a thread each, as the core's
 *    wafer_comm_open_group): every collective, f32, f16 and bf16, sum and
 *    max, every root, in place and not, against a host reference, and a
 *    collective ordered after a kernel on its queue; a caller's
 *    ncclComm_t adopted (and left to it), or refused when its rank, size
 *    or GPU differ; NCCL off, or not found: WAFER_ERROR_NOT_SUPPORTED
 *    saying so; two ranks on one GPU refused as NCCL refuses them.
 *
 *   t/cuda/comm           on the stand-in driver (t/standins/fakecuda.c, two
 *                         devices) and the stand-in NCCL (t/standins/fakenccl.c)
 *   t/cuda/comm --real    on libcuda.so.1 and NCCL (CUDA_COMM_NCCL names
 *                         the library, else libnccl.so.2 is searched):
 *                         dev/nccl-check.sh. The cases of two devices
 *                         are skipped on a machine with one GPU. */
#include "build-config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wafer/plugin.h>
#include <wafer/plugin_util.h>

#include "t/standins/fakecuda.h"
#include "t/half.h"
#include "t/tap.h"

#include "t/standins/cuda_host.h"

static char nccl_path[4096];

/* init with this run's driver and NCCL, or with |nccl| ("no", a path). */
static wafer_status init_nccl(const char *nccl, void **out_state)
{
	struct wafer_plugin_option o = {0};
	const char *value = nccl ? nccl : nccl_path[0] ? nccl_path : NULL;

	if (value)
		o = option("nccl", value, "test");
	return init_with(&o, value ? 1 : 0, out_state);
}

/*===----------------------------------------------------------------------===
 * Peer copies
 *===----------------------------------------------------------------------===*/

/* |n| bytes from (src_dev, src_q) to (dst_dev, dst_q) at offsets, the
 * source overwritten on its queue right after: the copy holds the first
 * bytes, the source the second. */
static void peer_case(void *dst_dev, void *dst_q, void *src_dev, void *src_q,
		      size_t n, const char *what)
{
	const struct wafer_storage_ops *st = plugin->storage;
	unsigned char *first = bytes(n), *second = bytes(n), *got = bytes(n),
		      *got_src = bytes(n);
	wafer_resource src = alloc_or_die(src_dev, n + 512);
	wafer_resource dst = alloc_or_die(dst_dev, n + 256);

	pattern(first, n, (uint32_t)n);
	pattern(second, n, (uint32_t)n + 1);
	st->copy_in(src_dev, src_q, src, 512, first, n);
	status_is(st->copy_peer(dst_dev, dst_q, dst, 256, src_dev, src_q, src,
				512, n),
		  WAFER_OK, "%s: copy_peer of %zu bytes", what, n);
	st->copy_in(src_dev, src_q, src, 512, second, n);
	st->copy_out(dst_dev, dst_q, dst, 256, got, n);
	st->copy_out(src_dev, src_q, src, 512, got_src, n);
	status_is(plugin->server->sync(dst_dev, dst_q), WAFER_OK,
		  "%s: sync the destination", what);
	status_is(plugin->server->sync(src_dev, src_q), WAFER_OK,
		  "%s: sync the source", what);
	ok(memcmp(got, first, n) == 0, "%s: the copy holds the source's bytes "
	   "from before it was overwritten", what);
	ok(memcmp(got_src, second, n) == 0, "%s: the source holds what "
	   "overwrote it after the copy", what);
	st->free(src_dev, src);
	st->free(dst_dev, dst);
	free(first);
	free(second);
	free(got);
	free(got_src);
}

/* The source from the stream-ordered pool, freed on its queue right after
 * the copy: the stand-in faults a free not ordered after the copy's read
 * (and a read of memory the source queue allocated not ordered after
 * the allocation). */
static void peer_async_source(void *dst_dev, void *dst_q, void *src_dev,
			      void *src_q, const char *what)
{
	const struct wafer_storage_ops *st = plugin->storage;
	const size_t n = 100000;
	unsigned char *want = bytes(n), *got = bytes(n);
	wafer_resource src = 0, dst = alloc_or_die(dst_dev, n);

	if (st->alloc_async(src_dev, src_q, n, &src) != WAFER_OK) {
		ok(1, "%s: # SKIP no stream-ordered pool", what);
		st->free(dst_dev, dst);
		free(want);
		free(got);
		return;
	}
	pattern(want, n, 77);
	st->copy_in(src_dev, src_q, src, 0, want, n);
	status_is(st->copy_peer(dst_dev, dst_q, dst, 0, src_dev, src_q, src, 0,
				n),
		  WAFER_OK, "%s: copy_peer from stream-ordered memory", what);
	status_is(st->free_async(src_dev, src_q, src), WAFER_OK,
		  "%s: the source freed on its queue at once", what);
	st->copy_out(dst_dev, dst_q, dst, 0, got, n);
	status_is(plugin->server->sync(dst_dev, dst_q), WAFER_OK,
		  "%s: sync the destination", what);
	status_is(plugin->server->sync(src_dev, src_q), WAFER_OK,
		  "%s: sync the source", what);
	ok(memcmp(got, want, n) == 0, "%s: the bytes arrived before the free",
	   what);
	st->free(dst_dev, dst);
	free(want);
	free(got);
}

static void test_peer(void *dev0, void *dev1)
{
	void *qa = NULL, *qb = NULL, *q1 = NULL;
	struct fakecuda_stats before = stats();

	plugin->server->queue_create(dev0, &qa);
	plugin->server->queue_create(dev0, &qb);
	ok(plugin->storage->copy_peer != NULL, "storage.copy_peer is offered");
	if (!qa || !qb || !plugin->storage->copy_peer)
		return;
	peer_case(dev0, qb, dev0, qa, 3 << 20, "one device, two queues");
	peer_case(dev0, qa, dev0, qa, 4096, "one queue");
	peer_async_source(dev0, qb, dev0, qa, "one device, two queues");
	status_is(plugin->storage->copy_peer(dev0, qb, 0, 0, dev0, qa, 0, 0, 0),
		  WAFER_OK, "zero bytes: nothing to do");
	if (!real)
		is_int((long long)(stats().peer_copies - before.peer_copies), 0,
		       "one device: no cuMemcpyPeerAsync");
	if (!dev1) {
		ok(1, "two devices # SKIP one device here");
	} else if (plugin->server->queue_create(dev1, &q1) == WAFER_OK) {
		peer_case(dev1, q1, dev0, qa, 3 << 20, "cuda:0 -> cuda:1");
		peer_case(dev0, qb, dev1, q1, 65537, "cuda:1 -> cuda:0");
		peer_case(dev1, q1, dev0, qa, 12345, "cuda:0 -> cuda:1 again");
		peer_async_source(dev1, q1, dev0, qa, "cuda:0 -> cuda:1");
		if (!real) {
			struct fakecuda_stats s = stats();
			is_int((long long)(s.peer_copies - before.peer_copies),
			       4, "two devices: cuMemcpyPeerAsync each time");
			is_int((long long)(s.peer_enables -
					   before.peer_enables),
			       2, "peer access enabled once each way");
		}
		plugin->server->queue_destroy(dev1, q1);
	}
	plugin->server->queue_destroy(dev0, qa);
	plugin->server->queue_destroy(dev0, qb);
}

/*===----------------------------------------------------------------------===
 * Collectives
 *===----------------------------------------------------------------------===*/

#define COUNT 257
#define MAX_RANKS 2

struct ccase {
	wafer_collective_kind kind;
	wafer_reduce_op op;
	uint32_t root;
	int in_place;
	int null_src; /* broadcast: a null src on ranks other than root */
	wafer_dtype dtype;
};

static struct ccase cases[64];
static size_t case_count;

static void add_cases(void)
{
	static const wafer_dtype dtypes[] = {WAFER_DTYPE_F32, WAFER_DTYPE_F16,
					     WAFER_DTYPE_BF16};

	case_count = 0;
	for (size_t d = 0; d < 3; d++) {
		wafer_dtype t = dtypes[d];
		struct ccase each[] = {
			{WAFER_COLLECTIVE_ALL_REDUCE, WAFER_REDUCE_SUM, 0, 0, 0, t},
			{WAFER_COLLECTIVE_ALL_REDUCE, WAFER_REDUCE_MAX, 0, 0, 0, t},
			{WAFER_COLLECTIVE_ALL_REDUCE, WAFER_REDUCE_SUM, 0, 1, 0, t},
			{WAFER_COLLECTIVE_BROADCAST, WAFER_REDUCE_SUM, 0, 0, 1, t},
			{WAFER_COLLECTIVE_BROADCAST, WAFER_REDUCE_SUM, 1, 1, 0, t},
			{WAFER_COLLECTIVE_ALL_GATHER, WAFER_REDUCE_SUM, 0, 0, 0, t},
			{WAFER_COLLECTIVE_REDUCE_SCATTER, WAFER_REDUCE_SUM, 0, 0, 0, t},
			{WAFER_COLLECTIVE_REDUCE_SCATTER, WAFER_REDUCE_MAX, 0, 0, 0, t},
		};
		for (size_t i = 0; i < sizeof each / sizeof each[0]; i++)
			cases[case_count++] = each[i];
	}
}

static size_t dsize(wafer_dtype t)
{
	return t == WAFER_DTYPE_F32 ? 4 : 2;
}

/* Rank |r|'s input element |i| of case |c|: small integers, exact in
 * every dtype, summed or not. */
static float input(size_t c, uint32_t r, size_t i)
{
	return (float)((int)((i * 7 + r * 3 + c) % 17) - 8);
}

static void store(void *x, wafer_dtype t, size_t i, float v)
{
	if (t == WAFER_DTYPE_F32)
		((float *)x)[i] = v;
	else if (t == WAFER_DTYPE_F16)
		((uint16_t *)x)[i] = t_float_to_f16(v);
	else
		((uint16_t *)x)[i] = t_float_to_bf16(v);
}

static float load(const void *x, wafer_dtype t, size_t i)
{
	if (t == WAFER_DTYPE_F32)
		return ((const float *)x)[i];
	if (t == WAFER_DTYPE_F16)
		return t_f16_to_float(((const uint16_t *)x)[i]);
	return t_bf16_to_float(((const uint16_t *)x)[i]);
}

/* One rank: its device and queue, what it did, what it got. */
struct rank {
	void *device, *queue;
	uint32_t rank, size;
	const wafer_comm_id *id;
	void *native;
	void *comm;
	wafer_status open_status;
	char open_error[512];
	/* The first failure of the collectives, and each case's result. */
	char failed[512];
	void *results[64];
	float ordered; /* the all-reduce after a fill kernel */
	float exchanged[2]; /* first and last element from the peer */
};

static void note(struct rank *r, wafer_status s, const char *what, size_t c)
{
	if (s != WAFER_OK && !r->failed[0])
		snprintf(r->failed, sizeof r->failed, "case %zu: %s: status "
			 "%d: %.300s", c, what, (int)s, last_error);
}

static void run_case(struct rank *r, size_t c)
{
	const struct wafer_storage_ops *st = plugin->storage;
	const struct ccase *k = &cases[c];
	size_t es = dsize(k->dtype), size = r->size;
	size_t src_n = k->kind == WAFER_COLLECTIVE_REDUCE_SCATTER ? COUNT * size
								   : COUNT;
	size_t dst_n = k->kind == WAFER_COLLECTIVE_ALL_GATHER ? COUNT * size
							       : COUNT;
	unsigned char *host = bytes(src_n * es);
	wafer_resource src = alloc_or_die(r->device, src_n * es), dst = src;

	for (size_t i = 0; i < src_n; i++)
		store(host, k->dtype, i, input(c, r->rank, i));
	note(r, st->copy_in(r->device, r->queue, src, 0, host, src_n * es),
	     "copy_in", c);
	if (!k->in_place)
		dst = alloc_or_die(r->device, dst_n * es);
	struct wafer_collective col = {
		.struct_size = sizeof col,
		.kind = k->kind,
		.op = k->op,
		.dtype = k->dtype,
		.count = COUNT,
		.root = k->root % r->size,
		.src = k->null_src && r->rank != k->root % r->size ? 0 : src,
		.dst = dst,
	};
	note(r, plugin->server->comm_run(r->device, r->queue, r->comm, &col),
	     "comm_run", c);
	r->results[c] = bytes(dst_n * es);
	note(r, st->copy_out(r->device, r->queue, dst, 0, r->results[c],
			     dst_n * es),
	     "copy_out", c);
	note(r, plugin->server->sync(r->device, r->queue), "sync", c);
	st->free(r->device, src);
	if (dst != src)
		st->free(r->device, dst);
	free(host);
}

/* A fill kernel writes rank + 1, then an all-reduce in place on the same
 * queue: it must see the kernel's values. */
static void run_after_kernel(struct rank *r)
{
	const struct wafer_kernel *fill =
		find_kernel(r->device, WAFER_KERNEL_FILL, WAFER_DTYPE_F32);
	float got[COUNT];
	wafer_resource buf = alloc_or_die(r->device, sizeof got);
	struct wafer_fill_params params = {.count = COUNT,
					   .value = r->rank + 1.0};
	struct wafer_binding b = binding(buf, 0, sizeof got);
	struct wafer_collective col = {
		.struct_size = sizeof col,
		.kind = WAFER_COLLECTIVE_ALL_REDUCE,
		.op = WAFER_REDUCE_SUM,
		.dtype = WAFER_DTYPE_F32,
		.count = COUNT,
		.src = buf,
		.dst = buf,
	};
	r->ordered = -1;
	if (!fill) {
		note(r, WAFER_ERROR_NOT_FOUND, "no fill kernel", 99);
	} else {
		note(r, host_launch(plugin, r->device, r->queue, fill, &b, 1,
				    &params, sizeof params, COUNT),
		     "fill", 99);
		note(r, plugin->server->comm_run(r->device, r->queue, r->comm,
						 &col),
		     "comm_run after fill", 99);
		note(r, plugin->storage->copy_out(r->device, r->queue, buf, 0,
						  got, sizeof got),
		     "copy_out", 99);
		note(r, plugin->server->sync(r->device, r->queue), "sync", 99);
		r->ordered = got[COUNT - 1];
	}
	plugin->storage->free(r->device, buf);
}

/* Two ranks swap COUNT floats of 10 + rank with SEND and RECV (rank 0
 * sends first, rank 1 receives first, as ncclSend/ncclRecv outside a
 * group must be ordered). */
static void run_exchange(struct rank *r)
{
	float mine[COUNT], got[COUNT];
	wafer_resource out = alloc_or_die(r->device, sizeof mine);
	wafer_resource in = alloc_or_die(r->device, sizeof got);
	uint32_t peer = r->rank ^ 1;

	for (size_t i = 0; i < COUNT; i++)
		mine[i] = 10.0f + (float)r->rank;
	note(r, plugin->storage->copy_in(r->device, r->queue, out, 0, mine,
					 sizeof mine),
	     "copy_in", 98);
	for (int turn = 0; turn < 2; turn++) {
		int sending = turn == (int)r->rank;
		struct wafer_collective col = {
			.struct_size = sizeof col,
			.kind = sending ? WAFER_COLLECTIVE_SEND
					: WAFER_COLLECTIVE_RECV,
			.op = WAFER_REDUCE_SUM,
			.dtype = WAFER_DTYPE_F32,
			.count = COUNT,
			.root = peer,
			.src = sending ? out : in,
			.dst = sending ? out : in,
		};
		note(r, plugin->server->comm_run(r->device, r->queue, r->comm,
						 &col),
		     sending ? "send" : "recv", 98);
	}
	note(r, plugin->storage->copy_out(r->device, r->queue, in, 0, got,
					  sizeof got),
	     "copy_out", 98);
	note(r, plugin->server->sync(r->device, r->queue), "sync", 98);
	r->exchanged[0] = got[0];
	r->exchanged[1] = got[COUNT - 1];
	plugin->storage->free(r->device, out);
	plugin->storage->free(r->device, in);
}

static void *rank_main(void *arg)
{
	struct rank *r = arg;
	struct wafer_comm_open_args args = {
		.struct_size = sizeof args,
		.rank = r->rank,
		.size = r->size,
		.id = r->id,
		.native = r->native,
	};

	r->open_status = plugin->server->comm_open(r->device, &args, &r->comm);
	snprintf(r->open_error, sizeof r->open_error, "%.500s", last_error);
	if (r->open_status != WAFER_OK)
		return NULL;
	for (size_t c = 0; c < case_count; c++)
		run_case(r, c);
	run_after_kernel(r);
	if (r->size == 2)
		run_exchange(r);
	return NULL;
}

/* What rank |rank| of |size| must hold after case |c|, element |i|. */
static float expected(size_t c, uint32_t rank, uint32_t size, size_t i)
{
	const struct ccase *k = &cases[c];
	float v = 0.0f;

	switch (k->kind) {
	case WAFER_COLLECTIVE_ALL_REDUCE:
	case WAFER_COLLECTIVE_REDUCE_SCATTER: {
		size_t at = k->kind == WAFER_COLLECTIVE_REDUCE_SCATTER
				    ? rank * COUNT + i
				    : i;
		for (uint32_t r = 0; r < size; r++) {
			float x = input(c, r, at);
			v = r == 0 ? x
			    : k->op == WAFER_REDUCE_MAX ? (x > v ? x : v)
							: v + x;
		}
		return v;
	}
	case WAFER_COLLECTIVE_BROADCAST:
		return input(c, k->root % size, i);
	case WAFER_COLLECTIVE_ALL_GATHER:
		return input(c, (uint32_t)(i / COUNT), i % COUNT);
	default: /* SEND and RECV: run_exchange checks them */
		break;
	}
	return 0.0f;
}

static const char *kind_name(wafer_collective_kind k)
{
	switch (k) {
	case WAFER_COLLECTIVE_ALL_REDUCE: return "all_reduce";
	case WAFER_COLLECTIVE_BROADCAST: return "broadcast";
	case WAFER_COLLECTIVE_ALL_GATHER: return "all_gather";
	default: return "reduce_scatter";
	}
}

static const char *dtype_name(wafer_dtype t)
{
	return t == WAFER_DTYPE_F32 ? "f32" : t == WAFER_DTYPE_F16 ? "f16"
								     : "bf16";
}

/* Opens |size| ranks on |devices| (a thread each), runs every case,
 * checks every rank's results, closes. */
static void run_ranks(void **devices, uint32_t size, const wafer_comm_id *id,
		      const char *what)
{
	struct rank ranks[MAX_RANKS];
	pthread_t threads[MAX_RANKS];

	memset(ranks, 0, sizeof ranks);
	for (uint32_t i = 0; i < size; i++) {
		ranks[i] = (struct rank){.device = devices[i], .rank = i,
					 .size = size, .id = id};
		if (plugin->server->queue_create(devices[i],
						 &ranks[i].queue) != WAFER_OK)
			bail_out("queue_create: %s", last_error);
	}
	for (uint32_t i = 0; i < size; i++)
		pthread_create(&threads[i], NULL, rank_main, &ranks[i]);
	for (uint32_t i = 0; i < size; i++)
		pthread_join(threads[i], NULL);
	for (uint32_t i = 0; i < size; i++) {
		struct rank *r = &ranks[i];
		if (!status_is(r->open_status, WAFER_OK, "%s: comm_open, rank %u",
			       what, i)) {
			diag("%s", r->open_error);
			continue;
		}
		if (!ok(!r->failed[0], "%s: rank %u: every collective issued "
			"and synced", what, i))
			diag("%s", r->failed);
		for (size_t c = 0; c < case_count; c++) {
			const struct ccase *k = &cases[c];
			size_t n = k->kind == WAFER_COLLECTIVE_ALL_GATHER
					   ? COUNT * size
					   : COUNT;
			size_t bad = n;
			for (size_t e = 0; r->results[c] && e < n && bad == n;
			     e++)
				if (load(r->results[c], k->dtype, e) !=
				    expected(c, i, size, e))
					bad = e;
			if (!ok(r->results[c] && bad == n,
				"%s: rank %u: %s %s%s%s root %u%s", what, i,
				kind_name(k->kind), dtype_name(k->dtype),
				k->kind == WAFER_COLLECTIVE_ALL_REDUCE ||
						k->kind == WAFER_COLLECTIVE_REDUCE_SCATTER
					? (k->op == WAFER_REDUCE_MAX ? " max"
								     : " sum")
					: "",
				k->in_place ? " in place" : "",
				k->root % size,
				k->null_src ? " (null src off root)" : "") &&
			    r->results[c])
				diag("element %zu: got %g, want %g", bad,
				     (double)load(r->results[c], k->dtype, bad),
				     (double)expected(c, i, size, bad));
			free(r->results[c]);
		}
		float want = (float)(size * (size + 1) / 2);
		if (!ok(r->ordered == want, "%s: rank %u: an all-reduce after a "
			"fill kernel on its queue sees the kernel's values",
			what, i))
			diag("got %g, want %g", (double)r->ordered,
			     (double)want);
		if (size == 2) {
			float peer = 10.0f + (float)(i ^ 1);
			if (!ok(r->exchanged[0] == peer &&
					r->exchanged[1] == peer,
				"%s: rank %u: send and recv swap the two "
				"ranks' data", what, i))
				diag("got %g ... %g, want %g",
				     (double)r->exchanged[0],
				     (double)r->exchanged[1], (double)peer);
		}
		plugin->server->comm_close(r->device, r->comm);
	}
	for (uint32_t i = 0; i < size; i++)
		plugin->server->queue_destroy(devices[i], ranks[i].queue);
}

/* Two ranks on one device: NCCL refuses them on every rank. */
static void test_duplicate_gpu(void *device)
{
	wafer_comm_id id;
	struct rank ranks[2];
	pthread_t threads[2];

	plugin->server->comm_id(device, &id);
	memset(ranks, 0, sizeof ranks);
	case_count = 0; /* nothing to run: the open fails */
	for (uint32_t i = 0; i < 2; i++) {
		ranks[i] = (struct rank){.device = device, .rank = i,
					 .size = 2, .id = &id};
		pthread_create(&threads[i], NULL, rank_main, &ranks[i]);
	}
	for (uint32_t i = 0; i < 2; i++)
		pthread_join(threads[i], NULL);
	for (uint32_t i = 0; i < 2; i++) {
		status_is(ranks[i].open_status, WAFER_ERROR_INVALID_ARGUMENT,
			  "two ranks on one GPU: rank %u refused", i);
		like(ranks[i].open_error, "Duplicate GPU detected",
		     "two ranks on one GPU: NCCL's reason, rank %u", i);
		if (ranks[i].comm)
			plugin->server->comm_close(device, ranks[i].comm);
	}
	add_cases();
}

/*===----------------------------------------------------------------------===
 * The caller's ncclComm_t
 *===----------------------------------------------------------------------===*/

typedef int (*nccl_get_id_fn)(void *id);
typedef int (*nccl_init_rank_fn)(void **comm, int nranks, ...);
typedef int (*nccl_destroy_fn)(void *comm);

/* A communicator of NCCL's own (the library the plugin loaded), made on
 * |device|'s GPU (its context current on this thread: the plugin's
 * entries leave it so), adopted by comm_open as it is, and refused with
 * another rank, size or device. */
static void test_native(void *dev0, void *dev1)
{
	void *so = dlopen(nccl_path[0] ? nccl_path : "libnccl.so.2",
			  RTLD_NOW | RTLD_LOCAL);
	struct {
		char internal[128];
	} id;
	void *comm = NULL, *ours = NULL;
	wafer_comm_id wid;

	if (!so) {
		ok(1, "the caller's ncclComm_t # SKIP %s", dlerror());
		return;
	}
	int (*get_id)(void *) = (int (*)(void *))dlsym(so, "ncclGetUniqueId");
	int (*init_rank)(void **, int, __typeof__(id), int) =
		(int (*)(void **, int, __typeof__(id), int))dlsym(
			so, "ncclCommInitRank");
	int (*destroy)(void *) = (int (*)(void *))dlsym(so, "ncclCommDestroy");
	/* Makes dev0's context current here. */
	plugin->server->comm_id(dev0, &wid);
	if (!get_id || !init_rank || !destroy || get_id(&id) != 0 ||
	    init_rank(&comm, 1, id, 0) != 0) {
		ok(0, "a communicator of NCCL's own, one rank");
		dlclose(so);
		return;
	}
	struct wafer_comm_open_args args = {
		.struct_size = sizeof args, .rank = 0, .size = 1,
		.native = comm,
	};
	status_is(plugin->server->comm_open(dev0, &args, &ours), WAFER_OK,
		  "the caller's ncclComm_t adopted");
	if (ours)
		plugin->server->comm_close(dev0, ours);
	args.size = 2;
	ours = NULL;
	status_is(plugin->server->comm_open(dev0, &args, &ours),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "the caller's ncclComm_t of another size: refused");
	like(last_error, "is rank 0 of 1, not rank 0 of 2",
	     "the error names both");
	args.size = 1;
	if (dev1) {
		status_is(plugin->server->comm_open(dev1, &args, &ours),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "the caller's ncclComm_t of another GPU: refused");
		like(last_error, "runs on GPU 0, not on cuda:1",
		     "the error names both");
	}
	/* comm_close left it to us: destroying it once is fine. */
	is_int(destroy(comm), 0, "the caller's ncclComm_t is still the "
	       "caller's after comm_close");
	dlclose(so);
}

/*===----------------------------------------------------------------------===
 * Without NCCL
 *===----------------------------------------------------------------------===*/

static void without(const char *nccl, const char *want)
{
	void *state = NULL, *device = NULL, *comm = NULL;
	wafer_comm_id id;
	struct wafer_comm_open_args args = {
		.struct_size = sizeof args, .rank = 0, .size = 1,
	};

	if (init_nccl(nccl, &state) != WAFER_OK ||
	    plugin->device_open(state, 0, &device) != WAFER_OK) {
		ok(0, "nccl = %s: init and device_open", nccl);
		if (state)
			plugin->shutdown(state);
		return;
	}
	status_is(plugin->server->comm_id(device, &id),
		  WAFER_ERROR_NOT_SUPPORTED, "nccl = %s: comm_id not supported",
		  nccl);
	status_is(plugin->server->comm_open(device, &args, &comm),
		  WAFER_ERROR_NOT_SUPPORTED,
		  "nccl = %s: comm_open not supported", nccl);
	like(last_error, want, "nccl = %s: the reason", nccl);
	ok(comm == NULL, "nccl = %s: no communicator", nccl);
	/* Nothing else lost: a copy still works. */
	void *q = NULL;
	plugin->server->queue_create(device, &q);
	unsigned char in[64], out[64];
	pattern(in, sizeof in, 5);
	wafer_resource r = alloc_or_die(device, sizeof in);
	plugin->storage->copy_in(device, q, r, 0, in, sizeof in);
	plugin->storage->copy_out(device, q, r, 0, out, sizeof out);
	plugin->server->sync(device, q);
	ok(memcmp(in, out, sizeof in) == 0, "nccl = %s: copies still work",
	   nccl);
	plugin->storage->free(device, r);
	plugin->server->queue_destroy(device, q);
	plugin->device_close(device);
	plugin->shutdown(state);
}

/*===----------------------------------------------------------------------===
 * main
 *===----------------------------------------------------------------------===*/

int main(int argc, char **argv)
{
	const char *builddir = getenv("T_BUILDDIR");
	char path[4096];
	void *so, *fake = NULL, *state = NULL;
	void *dev[2] = {NULL, NULL};
	uint32_t count = 0;

	real = argc > 1 && strcmp(argv[1], "--real") == 0;
	if (!builddir)
		skip_all("T_BUILDDIR is not set (run through make check)");
	snprintf(path, sizeof path, "%s/../plugins/cuda/.libs/cuda.so",
		 builddir);
	if (access(path, R_OK) != 0)
		skip_all("the cuda plugin was not built");
	if (real) {
		if (getenv("CUDA_COMM_NCCL"))
			snprintf(nccl_path, sizeof nccl_path, "%s",
				 getenv("CUDA_COMM_NCCL"));
	} else {
		snprintf(fake_path, sizeof fake_path, "%s/standins/.libs/fakecuda.so",
			 builddir);
		snprintf(nccl_path, sizeof nccl_path, "%s/standins/.libs/fakenccl.so",
			 builddir);
		if (access(nccl_path, R_OK) != 0)
			skip_all("the stand-in NCCL was not built (no nccl.h)");
		/* Two devices, unless the caller chose. */
		setenv("FAKECUDA_DEVICES", "2", 0);
		fake = dlopen(fake_path, RTLD_NOW | RTLD_LOCAL);
		if (!fake)
			bail_out("%s", dlerror());
		fake_stats = (fakecuda_stats_fn)dlsym(fake, "fakecuda_stats");
	}
	so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!so)
		bail_out("dlopen %s: %s", path, dlerror());
	wafer_plugin_query_fn query =
		(wafer_plugin_query_fn)dlsym(so, WAFER_PLUGIN_QUERY_SYMBOL);
	plugin = query ? query(WAFER_PLUGIN_ABI_MAJOR, &fake_host) : NULL;
	if (!plugin)
		bail_out("no wafer_plugin_query in %s", path);
	ok(plugin->server->comm_id && plugin->server->comm_open &&
	   plugin->server->comm_close && plugin->server->comm_run,
	   "the four comm entries are offered");

	status_is(init_nccl(NULL, &state), WAFER_OK, "init");
	if (!state || plugin->device_count(state, &count) != WAFER_OK ||
	    count == 0) {
		diag("no device: %s", last_error);
		if (state)
			plugin->shutdown(state);
		done_testing();
		return real ? 1 : exit_status();
	}
	for (uint32_t i = 0; i < count && i < 2; i++)
		status_is(plugin->device_open(state, i, &dev[i]), WAFER_OK,
			  "device_open(%u)", i);
	test_peer(dev[0], dev[1]);

	wafer_comm_id id, zero;
	memset(&zero, 0, sizeof zero);
	memset(&id, 0, sizeof id);
	status_is(plugin->server->comm_id(dev[0], &id), WAFER_OK, "comm_id");
	ok(memcmp(&id, &zero, sizeof id) != 0, "the id is not all zeros");
	add_cases();
	run_ranks(dev, 1, &zero, "one rank, an all-zero id");
	if (dev[1])
		run_ranks(dev, 2, &id, "two ranks on two devices");
	else
		ok(1, "two ranks on two devices # SKIP one device here");

	/* Two ranks that need an id, given none. */
	void *comm = NULL;
	struct wafer_comm_open_args args = {
		.struct_size = sizeof args, .rank = 1, .size = 2, .id = &zero,
	};
	status_is(plugin->server->comm_open(dev[0], &args, &comm),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "two ranks, an all-zero id: refused");
	like(last_error, "rank 1 of 2: NCCL needs the id",
	     "the error says what is missing");
	test_native(dev[0], dev[1]);
	/* On a GPU NCCL refuses it too, but its text is its own. */
	if (!real)
		test_duplicate_gpu(dev[0]);

	for (uint32_t i = 0; i < 2; i++)
		if (dev[i])
			plugin->device_close(dev[i]);
	plugin->shutdown(state);

	void *bad = NULL;
	status_is(init_nccl("libnccl.so.2", &bad), WAFER_ERROR_CONFIG,
		  "nccl = a relative name: refused");
	like(last_error, "test: [cuda] nccl: expected auto, no or an absolute "
	     "path, got 'libnccl.so.2'", "the error names the key and value");
	if (bad)
		plugin->shutdown(bad);
	without("no", "collectives are off ([cuda] nccl = no)");
	without("/nonexistent/libnccl.so.2",
		"collectives need NCCL: /nonexistent/libnccl.so.2 did not "
		"load");
	if (!real) {
		struct fakecuda_stats s = stats();
		is_int((long long)s.streams_live, 0, "every stream destroyed");
		is_int((long long)s.events_live, 0, "every event destroyed");
		is_int((long long)s.uninit_reads, 0, "the stand-in saw no read "
		       "of unwritten device memory");
		ok(s.host_ops > 0, "the collectives ran on the streams");
		ok(s.stream_waits > 0, "copy_peer made streams wait");
	}
	dlclose(so);
	if (fake)
		dlclose(fake);
	done_testing();
	return exit_status();
}
