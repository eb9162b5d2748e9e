/* wafer — SPDX-License-Identifier: MIT
 *
 * comm_mpi.c: the cpu plugin's collectives on MPI, one rank per process.
 * t/cpu/mpi.sh starts it under mpirun -np 4; run alone it is a world of one.
 * The same checks run twice: through the plugin ABI (the cpu plugin
 * dlopened with a fake core, as t/cpu/plugin does: the plugin and its
 * module cpu-mpi.so alone), then through the public API (comm.h, on a
 * client of cpu: the core's checks and channels too). Every collective
 * against a host reference, every dtype, SUM and MAX, every root, in
 * place and not; the caller's own communicator; a rank or size MPI sees
 * otherwise.
 *
 * Every rank checks its own results; rank 0 prints the point, which
 * passes when every rank passed (the others' stdout is /dev/null, and a
 * rank that failed says why on stderr).
 *
 *   t/cpu/comm_mpi               the program initialises MPI itself
 *                            (MPI_THREAD_MULTIPLE): wafer must use it
 *                            and leave it initialised at shutdown.
 *   t/cpu/comm_mpi --wafer-init  the program never calls MPI_Init: the
 *                            plugin does, and finalises it at shutdown;
 *                            the rank comes from mpirun's environment.
 *                            No TAP: exit status 0 when every check
 *                            passed (t/cpu/mpi.sh makes it one point). */
#include "build-config.h"

#include <dlfcn.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/comm.h>
#include <wafer/plugin.h>
#include <wafer/plugin_util.h>
#include <wafer/wafer.h>

#include "t/tap.h"
#include "t/standins/fake_host.h"
#include "t/half.h"
#include "t/comm_split.h"

static int rank, size;
static const struct wafer_plugin *plugin;

/* What the checks run on: the plugin's entries, or the public API. A
 * buffer is a resource of the plugin or a handle's bits (0: none). */
struct engine {
	const char *name;
	uint64_t (*make)(size_t bytes);
	void (*upload)(uint64_t b, const void *data, size_t bytes);
	void (*download)(uint64_t b, void *data, size_t bytes);
	void (*drop)(uint64_t b);
	wafer_status (*id)(wafer_comm_id *out);
	wafer_status (*open)(uint32_t r, uint32_t n, void *native, void **out);
	void (*close)(void *comm);
	wafer_status (*run)(void *comm, wafer_collective_kind kind,
			    wafer_reduce_op op, wafer_dtype t, size_t count,
			    uint32_t root, uint64_t src, uint64_t dst);
	const char *(*error)(void);
};
static const struct engine *engine;

static const char *error_text(void)
{
	return engine ? engine->error() : last_error;
}

/*===----------------------------------------------------------------------===
 * Points every rank agrees on
 *===----------------------------------------------------------------------===*/

static int agree(int pass, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
static int agree(int pass, const char *format, ...)
{
	char name[512];
	va_list ap;
	int all;

	va_start(ap, format);
	vsnprintf(name, sizeof name, format, ap);
	va_end(ap);
	if (!pass)
		fprintf(stderr, "# rank %d failed: %s (last error: %s)\n", rank,
			name, error_text());
	MPI_Allreduce(&pass, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	return ok(all, "%s: %s", engine->name, name);
}

/*===----------------------------------------------------------------------===
 * Values and the host reference
 *===----------------------------------------------------------------------===*/

static const wafer_dtype dtypes[] = {
	WAFER_DTYPE_F32, WAFER_DTYPE_F16, WAFER_DTYPE_BF16, WAFER_DTYPE_F64,
	WAFER_DTYPE_I32, WAFER_DTYPE_I64, WAFER_DTYPE_U8,
};
#define DTYPES (sizeof dtypes / sizeof dtypes[0])

static const char *dtype_name(wafer_dtype t)
{
	static const char *names[] = {"none", "f32", "f16", "bf16",
				      "i32",  "u8",  "f64", "i64"};
	return t < sizeof names / sizeof names[0] ? names[t] : "?";
}

/* Rank |r|'s element |i|: small integers, so that every dtype holds them
 * and the sum of four ranks exactly (f16 and bf16 included); u8 is
 * unsigned. */
static double value(wafer_dtype t, int r, size_t i)
{
	double v = (double)((i * 7 + (size_t)r * 3 + 1) % 11);
	return t == WAFER_DTYPE_U8 ? v : v - 5;
}

static void put(wafer_dtype t, void *buf, size_t i, double v)
{
	switch (t) {
	case WAFER_DTYPE_F32: ((float *)buf)[i] = (float)v; break;
	case WAFER_DTYPE_F16: ((uint16_t *)buf)[i] = t_float_to_f16((float)v); break;
	case WAFER_DTYPE_BF16: ((uint16_t *)buf)[i] = t_float_to_bf16((float)v); break;
	case WAFER_DTYPE_F64: ((double *)buf)[i] = v; break;
	case WAFER_DTYPE_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case WAFER_DTYPE_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
	case WAFER_DTYPE_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
	default: break;
	}
}

static double get(wafer_dtype t, const void *buf, size_t i)
{
	switch (t) {
	case WAFER_DTYPE_F32: return ((const float *)buf)[i];
	case WAFER_DTYPE_F16: return t_f16_to_float(((const uint16_t *)buf)[i]);
	case WAFER_DTYPE_BF16: return t_bf16_to_float(((const uint16_t *)buf)[i]);
	case WAFER_DTYPE_F64: return ((const double *)buf)[i];
	case WAFER_DTYPE_I32: return ((const int32_t *)buf)[i];
	case WAFER_DTYPE_I64: return (double)((const int64_t *)buf)[i];
	case WAFER_DTYPE_U8: return ((const uint8_t *)buf)[i];
	default: return -1e300;
	}
}

/* op over ranks of value(t, r, i), over |members| ranks from |first| by
 * |stride|. */
static double reduced(wafer_dtype t, wafer_reduce_op op, size_t i, int first,
		      int stride, int members)
{
	double acc = value(t, first, i);

	for (int m = 1; m < members; m++) {
		double v = value(t, first + m * stride, i);
		acc = op == WAFER_REDUCE_SUM ? acc + v : (v > acc ? v : acc);
	}
	return acc;
}

/*===----------------------------------------------------------------------===
 * The plugin, driven as the core drives it
 *===----------------------------------------------------------------------===*/

static struct {
	void *state, *device, *queue;
} rig;

static uint64_t plugin_make(size_t bytes)
{
	wafer_resource r = 0;

	if (plugin->storage->alloc(rig.device, bytes ? bytes : 1, &r) !=
	    WAFER_OK)
		bail_out("rank %d: alloc %zu: %s", rank, bytes, last_error);
	return r;
}

static void plugin_upload(uint64_t b, const void *data, size_t bytes)
{
	plugin->storage->copy_in(rig.device, rig.queue, b, 0, data, bytes);
}

static void plugin_download(uint64_t b, void *data, size_t bytes)
{
	plugin->storage->copy_out(rig.device, rig.queue, b, 0, data, bytes);
}

static void plugin_drop(uint64_t b)
{
	plugin->storage->free(rig.device, b);
}

static wafer_status plugin_id(wafer_comm_id *out)
{
	return plugin->server->comm_id(rig.device, out);
}

static wafer_status plugin_open(uint32_t r, uint32_t n, void *native,
				void **out)
{
	struct wafer_comm_open_args args = {
		.struct_size = sizeof args,
		.rank = r,
		.size = n,
		.id = NULL,
		.native = native,
	};
	return plugin->server->comm_open(rig.device, &args, out);
}

static void plugin_close(void *comm)
{
	plugin->server->comm_close(rig.device, comm);
}

static wafer_status plugin_run(void *comm, wafer_collective_kind kind,
			       wafer_reduce_op op, wafer_dtype t, size_t count,
			       uint32_t root, uint64_t src, uint64_t dst)
{
	struct wafer_collective c = {
		.struct_size = sizeof c,
		.kind = kind,
		.op = op,
		.dtype = t,
		.count = count,
		.root = root,
		.src = src,
		.dst = dst,
	};
	return plugin->server->comm_run(rig.device, rig.queue, comm, &c);
}

static const char *plugin_error(void)
{
	return last_error;
}

static const struct engine plugin_engine = {
	"plugin", plugin_make,	plugin_upload, plugin_download, plugin_drop,
	plugin_id, plugin_open, plugin_close,	plugin_run,	plugin_error,
};

static void plugin_up(void)
{
	if (host_init(plugin, NULL, 0, &rig.state) != WAFER_OK ||
	    plugin->device_open(rig.state, 0, &rig.device) != WAFER_OK ||
	    plugin->server->queue_create(rig.device, &rig.queue) != WAFER_OK)
		bail_out("rank %d: cpu plugin: %s", rank, last_error);
}

static void plugin_down(void)
{
	plugin->server->queue_destroy(rig.device, rig.queue);
	plugin->device_close(rig.device);
	plugin->shutdown(rig.state);
}

/*===----------------------------------------------------------------------===
 * The public API, on a client of cpu
 *===----------------------------------------------------------------------===*/

static wafer_runtime *runtime;
static wafer_client *client;

static wafer_handle handle(uint64_t b)
{
	return (wafer_handle){b};
}

static uint64_t api_make(size_t bytes)
{
	wafer_handle h;

	if (wafer_empty(client, bytes ? bytes : 1, &h) != WAFER_OK)
		bail_out("rank %d: wafer_empty %zu: %s", rank, bytes,
			 wafer_last_error());
	return h.bits;
}

static void api_upload(uint64_t b, const void *data, size_t bytes)
{
	if (wafer_write(client, handle(b), 0, data, bytes) != WAFER_OK)
		bail_out("rank %d: wafer_write: %s", rank, wafer_last_error());
}

/* wafer_read waits for the collectives queued before it. */
static void api_download(uint64_t b, void *data, size_t bytes)
{
	if (wafer_read(client, handle(b), 0, data, bytes) != WAFER_OK)
		fprintf(stderr, "# rank %d: wafer_read: %s\n", rank,
			wafer_last_error());
}

static void api_drop(uint64_t b)
{
	wafer_release(client, handle(b));
}

static wafer_status api_id(wafer_comm_id *out)
{
	return wafer_comm_id_create(client, out);
}

static wafer_status api_open(uint32_t r, uint32_t n, void *native, void **out)
{
	wafer_comm_options o = {sizeof o, r, n, NULL, native};
	wafer_comm *comm = (wafer_comm *)1;
	wafer_status s = wafer_comm_open(client, &o, &comm);

	*out = comm;
	return s;
}

static void api_close(void *comm)
{
	wafer_comm_close(comm);
}

static wafer_status api_run(void *comm, wafer_collective_kind kind,
			    wafer_reduce_op op, wafer_dtype t, size_t count,
			    uint32_t root, uint64_t src, uint64_t dst)
{
	switch (kind) {
	case WAFER_COLLECTIVE_ALL_REDUCE:
		return wafer_comm_all_reduce(comm, handle(src), handle(dst),
					     count, t, op);
	case WAFER_COLLECTIVE_BROADCAST:
		return wafer_comm_broadcast(comm, handle(src), handle(dst),
					    count, t, root);
	case WAFER_COLLECTIVE_ALL_GATHER:
		return wafer_comm_all_gather(comm, handle(src), handle(dst),
					     count, t);
	case WAFER_COLLECTIVE_REDUCE_SCATTER:
		return wafer_comm_reduce_scatter(comm, handle(src),
						 handle(dst), count, t, op);
	case WAFER_COLLECTIVE_SEND:
		return wafer_comm_send(comm, handle(src), count, t, root);
	case WAFER_COLLECTIVE_RECV:
		return wafer_comm_recv(comm, handle(dst), count, t, root);
	}
	return WAFER_ERROR_INVALID_ARGUMENT;
}

static const struct engine api_engine = {
	"api", api_make, api_upload, api_download, api_drop,
	api_id, api_open, api_close, api_run,	wafer_last_error,
};

static void api_up(void)
{
	if (wafer_runtime_open(NULL, &runtime) != WAFER_OK ||
	    wafer_client_open(runtime, "cpu", NULL, &client) != WAFER_OK)
		bail_out("rank %d: a client on cpu: %s", rank,
			 wafer_last_error());
}

static void api_down(void)
{
	wafer_client_close(client);
	wafer_runtime_close(runtime);
}

/*===----------------------------------------------------------------------===
 * The collectives against the reference
 *===----------------------------------------------------------------------===*/

#define COUNT 37 /* odd: no element count a vector loop would like */

/* The communicator over MPI_COMM_WORLD the collectives run on. */
static void *world;

/* Checks |got| (|n| elements of |t|) against want(i); says the first
 * difference on stderr. */
static int matches(wafer_dtype t, const void *got, size_t n,
		   double (*want)(wafer_dtype, size_t, const void *),
		   const void *ctx, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		double w = want(t, i, ctx);
		if (get(t, got, i) != w) {
			fprintf(stderr,
				"# rank %d: %s %s: element %zu is %g, want %g\n",
				rank, what, dtype_name(t), i, get(t, got, i),
				w);
			return 0;
		}
	}
	return 1;
}

struct reduce_ctx {
	wafer_reduce_op op;
	size_t base; /* reduce_scatter: this rank's block */
};

static double want_reduced(wafer_dtype t, size_t i, const void *ctx)
{
	const struct reduce_ctx *c = ctx;
	return reduced(t, c->op, c->base + i, 0, 1, size);
}

static double want_root(wafer_dtype t, size_t i, const void *ctx)
{
	return value(t, *(const int *)ctx, i);
}

static double want_gathered(wafer_dtype t, size_t i, const void *ctx)
{
	(void)ctx;
	return value(t, (int)(i / COUNT), i % COUNT);
}

/* |n| elements of this rank's values in a new resource; |host| keeps a
 * host copy for the caller (n elements of t). */
static uint64_t filled(wafer_dtype t, size_t n,
			     void *host)
{
	size_t bytes = n * wafer_plugin_dtype_size(t);
	uint64_t r = engine->make(bytes);

	for (size_t i = 0; i < n; i++)
		put(t, host, i, value(t, rank, i));
	engine->upload(r, host, bytes);
	return r;
}

static void test_all_reduce(wafer_dtype t)
{
	size_t element = wafer_plugin_dtype_size(t);
	unsigned char host[COUNT * 8], got[COUNT * 8];

	for (int op = WAFER_REDUCE_SUM; op <= WAFER_REDUCE_MAX; op++)
		for (int in_place = 0; in_place < 2; in_place++) {
			struct reduce_ctx ctx = {(wafer_reduce_op)op, 0};
			uint64_t src = filled(t, COUNT, host);
			uint64_t dst = in_place ? src
						      : engine->make(COUNT * element);
			wafer_status s = engine->run(world,
					     WAFER_COLLECTIVE_ALL_REDUCE,
					     (wafer_reduce_op)op, t, COUNT, 0,
					     src, dst);
			int pass = s == WAFER_OK;
			engine->download(dst, got, COUNT * element);
			pass = pass && matches(t, got, COUNT, want_reduced,
					       &ctx, "all_reduce");
			if (!in_place) { /* the source is left alone */
				unsigned char kept[COUNT * 8];
				engine->download(src, kept, COUNT * element);
				pass = pass && !memcmp(kept, host,
						       COUNT * element);
			}
			agree(pass, "all_reduce %s %s, %s", dtype_name(t),
			      op == WAFER_REDUCE_SUM ? "sum" : "max",
			      in_place ? "in place" : "into another buffer");
			if (!in_place)
				engine->drop(dst);
			engine->drop(src);
		}
}

/* Every root; the non-root ranks pass no source (resource 0) out of
 * place, as wafer_comm_broadcast allows. */
static void test_broadcast(wafer_dtype t)
{
	size_t element = wafer_plugin_dtype_size(t);
	unsigned char host[COUNT * 8], got[COUNT * 8];

	for (int root = 0; root < size; root++) {
		int pass = 1;
		for (int in_place = 0; in_place < 2; in_place++) {
			uint64_t src = filled(t, COUNT, host);
			uint64_t dst = in_place ? src
						      : engine->make(COUNT * element);
			wafer_status s = engine->run(world,
					     WAFER_COLLECTIVE_BROADCAST,
					     WAFER_REDUCE_SUM, t, COUNT,
					     (uint32_t)root,
					     in_place || rank == root ? src : 0,
					     dst);
			pass = pass && s == WAFER_OK;
			engine->download(dst, got, COUNT * element);
			pass = pass && matches(t, got, COUNT, want_root, &root,
					       "broadcast");
			if (!in_place)
				engine->drop(dst);
			engine->drop(src);
		}
		agree(pass, "broadcast %s from root %d, in place and not",
		      dtype_name(t), root);
	}
}

static void test_all_gather(wafer_dtype t)
{
	size_t element = wafer_plugin_dtype_size(t);
	unsigned char host[COUNT * 8];
	unsigned char *got = malloc(COUNT * element * (size_t)size);
	uint64_t src = filled(t, COUNT, host);
	uint64_t dst = engine->make(COUNT * element * (size_t)size);
	wafer_status s = engine->run(world, WAFER_COLLECTIVE_ALL_GATHER,
			     WAFER_REDUCE_SUM, t, COUNT, 0, src, dst);

	engine->download(dst, got, COUNT * element * (size_t)size);
	agree(s == WAFER_OK && matches(t, got, COUNT * (size_t)size,
				       want_gathered, NULL, "all_gather"),
	      "all_gather %s: every rank's %d elements in rank order",
	      dtype_name(t), COUNT);
	engine->drop(dst);
	engine->drop(src);
	free(got);
}

/* Point to point: pairs (0, 1), (2, 3) exchange (the even rank sends
 * first), then rank 0's values go down the line 0 -> 1 -> ... -> size-1. */
static void test_send_recv(wafer_dtype t)
{
	size_t element = wafer_plugin_dtype_size(t);
	unsigned char host[COUNT * 8], got[COUNT * 8];
	uint64_t mine = filled(t, COUNT, host);
	uint64_t in = engine->make(COUNT * element);
	int pair = rank ^ 1, zero = 0;
	wafer_status s = WAFER_OK;
	int pass = 1;

	if (pair < size) {
		for (int turn = 0; turn < 2 && s == WAFER_OK; turn++)
			s = turn == rank % 2
				? engine->run(world, WAFER_COLLECTIVE_SEND,
					      WAFER_REDUCE_SUM, t, COUNT,
					      (uint32_t)pair, mine, mine)
				: engine->run(world, WAFER_COLLECTIVE_RECV,
					      WAFER_REDUCE_SUM, t, COUNT,
					      (uint32_t)pair, in, in);
		engine->download(in, got, COUNT * element);
		pass = s == WAFER_OK &&
		       matches(t, got, COUNT, want_root, &pair, "exchange");
	}
	agree(pass, "send/recv %s: pairs of ranks exchange %d elements",
	      dtype_name(t), COUNT);
	s = WAFER_OK;
	if (rank > 0)
		s = engine->run(world, WAFER_COLLECTIVE_RECV, WAFER_REDUCE_SUM,
				t, COUNT, (uint32_t)rank - 1, in, in);
	if (s == WAFER_OK && rank + 1 < size)
		s = engine->run(world, WAFER_COLLECTIVE_SEND, WAFER_REDUCE_SUM,
				t, COUNT, (uint32_t)rank + 1,
				rank ? in : mine, rank ? in : mine);
	engine->download(rank ? in : mine, got, COUNT * element);
	agree(s == WAFER_OK &&
		      matches(t, got, COUNT, want_root, &zero, "pipeline"),
	      "send/recv %s: rank 0's elements passed down the ranks",
	      dtype_name(t));
	engine->drop(in);
	engine->drop(mine);
}

static void test_reduce_scatter(wafer_dtype t)
{
	size_t element = wafer_plugin_dtype_size(t);
	size_t whole = COUNT * (size_t)size;
	unsigned char *host = malloc(whole * element);
	unsigned char got[COUNT * 8];

	for (int op = WAFER_REDUCE_SUM; op <= WAFER_REDUCE_MAX; op++) {
		struct reduce_ctx ctx = {(wafer_reduce_op)op,
					 (size_t)rank * COUNT};
		uint64_t src = filled(t, whole, host);
		uint64_t dst = engine->make(COUNT * element);
		wafer_status s = engine->run(world,
				     WAFER_COLLECTIVE_REDUCE_SCATTER,
				     (wafer_reduce_op)op, t, COUNT, 0, src, dst);
		engine->download(dst, got, COUNT * element);
		agree(s == WAFER_OK && matches(t, got, COUNT, want_reduced,
					       &ctx, "reduce_scatter"),
		      "reduce_scatter %s %s: this rank's block reduced",
		      dtype_name(t), op == WAFER_REDUCE_SUM ? "sum" : "max");
		engine->drop(dst);
		engine->drop(src);
	}
	free(host);
}

/* Long enough that MPI splits the message (and the cpu plugin's memory is
 * past any small-buffer path). */
static void test_long_all_reduce(void)
{
	size_t n = 1000003;
	float *host = malloc(n * sizeof *host);
	uint64_t r = filled(WAFER_DTYPE_F32, n, host);
	struct reduce_ctx ctx = {WAFER_REDUCE_SUM, 0};
	wafer_status s = engine->run(world, WAFER_COLLECTIVE_ALL_REDUCE,
			     WAFER_REDUCE_SUM, WAFER_DTYPE_F32, n, 0, r, r);

	engine->download(r, host, n * sizeof *host);
	agree(s == WAFER_OK && matches(WAFER_DTYPE_F32, host, n, want_reduced,
				       &ctx, "all_reduce"),
	      "all_reduce of %zu f32 in place", n);
	engine->drop(r);
	free(host);
}

static void test_count_zero(void)
{
	float before[4] = {1, 2, 3, 4}, after[4];
	uint64_t r = engine->make(sizeof before);
	int pass = 1;

	engine->upload(r, before, sizeof before);
	for (int k = WAFER_COLLECTIVE_ALL_REDUCE;
	     k <= WAFER_COLLECTIVE_REDUCE_SCATTER; k++)
		pass = pass && engine->run(world, (wafer_collective_kind)k,
				   WAFER_REDUCE_SUM, WAFER_DTYPE_F32, 0, 0, r,
				   r) == WAFER_OK;
	engine->download(r, after, sizeof after);
	agree(pass && !memcmp(before, after, sizeof before),
	      "count 0: every collective succeeds and writes nothing");
	engine->drop(r);
}

/* Through the plugin only, where source and destination are ranges of
 * one resource: the cpu plugin hands MPI the same buffer (MPI_IN_PLACE)
 * or a copy of a source that overlaps the destination, never two ranges
 * that overlap. Elements are f32; |at| is in elements. */
static int ranged(wafer_collective_kind kind, wafer_reduce_op op,
		  size_t src_at, size_t dst_at, size_t elements,
		  const float *init, float *out)
{
	uint64_t r = engine->make(elements * sizeof(float));
	struct wafer_collective c = {
		.struct_size = sizeof c,
		.kind = kind,
		.op = op,
		.dtype = WAFER_DTYPE_F32,
		.count = COUNT,
		.src = r,
		.src_offset = src_at * sizeof(float),
		.dst = r,
		.dst_offset = dst_at * sizeof(float),
	};
	wafer_status s;

	engine->upload(r, init, elements * sizeof(float));
	s = plugin->server->comm_run(rig.device, rig.queue, world, &c);
	engine->download(r, out, elements * sizeof(float));
	engine->drop(r);
	return s == WAFER_OK;
}

static void test_overlapping_ranges(void)
{
	size_t whole = COUNT * (size_t)size;
	float *init = malloc((whole + 8) * sizeof(float));
	float *out = malloc((whole + 8) * sizeof(float));
	struct reduce_ctx sum = {WAFER_REDUCE_SUM, 0};
	int pass;

	/* all_reduce from [0, COUNT) into [3, 3 + COUNT). */
	for (size_t i = 0; i < COUNT + 3; i++)
		init[i] = (float)value(WAFER_DTYPE_F32, rank, i);
	pass = ranged(WAFER_COLLECTIVE_ALL_REDUCE, WAFER_REDUCE_SUM, 0, 3,
		      COUNT + 3, init, out) &&
	       matches(WAFER_DTYPE_F32, out + 3, COUNT, want_reduced, &sum,
		       "all_reduce");
	agree(pass, "all_reduce into a range overlapping its source");

	/* all_gather in place: this rank's block already where it goes;
	 * the other blocks hold garbage until the gather. */
	for (size_t i = 0; i < whole; i++)
		init[i] = i / COUNT == (size_t)rank
				  ? (float)value(WAFER_DTYPE_F32, rank,
						 i % COUNT)
				  : -99.0f;
	pass = ranged(WAFER_COLLECTIVE_ALL_GATHER, WAFER_REDUCE_SUM,
		      (size_t)rank * COUNT, 0, whole, init, out) &&
	       matches(WAFER_DTYPE_F32, out, whole, want_gathered, NULL,
		       "all_gather");
	agree(pass, "all_gather in place (the source is the rank's block)");

	/* all_gather from a source one element into the destination. */
	for (size_t i = 0; i < whole + 1; i++)
		init[i] = i >= 1 && i <= COUNT
				  ? (float)value(WAFER_DTYPE_F32, rank, i - 1)
				  : -99.0f;
	pass = ranged(WAFER_COLLECTIVE_ALL_GATHER, WAFER_REDUCE_SUM, 1, 0,
		      whole + 1, init, out) &&
	       matches(WAFER_DTYPE_F32, out, whole, want_gathered, NULL,
		       "all_gather");
	agree(pass, "all_gather from a source overlapping the destination");

	/* reduce_scatter onto the start of its own source. */
	for (size_t i = 0; i < whole; i++)
		init[i] = (float)value(WAFER_DTYPE_F32, rank, i);
	sum.base = (size_t)rank * COUNT;
	pass = ranged(WAFER_COLLECTIVE_REDUCE_SCATTER, WAFER_REDUCE_SUM, 0, 0,
		      whole, init, out) &&
	       matches(WAFER_DTYPE_F32, out, COUNT, want_reduced, &sum,
		       "reduce_scatter");
	agree(pass, "reduce_scatter onto the start of its own source");
	free(init);
	free(out);
}

/*===----------------------------------------------------------------------===
 * Communicators
 *===----------------------------------------------------------------------===*/

static void test_ids_and_ranks(void)
{
	wafer_comm_id id, zero;
	void *comm = (void *)1;
	char want[64];
	wafer_status s;

	memset(&id, 0xa5, sizeof id);
	memset(&zero, 0, sizeof zero);
	s = engine->id(&id);
	agree(s == WAFER_OK && !memcmp(&id, &zero, sizeof id),
	      "comm_id: all zeros (MPI needs no id)");

	/* Each rank claims its neighbour's rank. */
	s = engine->open((uint32_t)((rank + 1) % size), (uint32_t)size, NULL,
		      &comm);
	snprintf(want, sizeof want, "as rank %d of %d", rank, size);
	agree(size == 1 ? s == WAFER_OK
			: s == WAFER_ERROR_INVALID_ARGUMENT && !comm &&
				  strstr(error_text(), want) &&
				  strstr(error_text(), "MPI_COMM_WORLD"),
	      "comm_open as another rank: INVALID_ARGUMENT naming both ranks "
	      "(%s)",
	      size == 1 ? "one rank: it is this one" : "MPI's own rank named");
	if (size == 1 && s == WAFER_OK)
		engine->close(comm);

	s = engine->open(0, (uint32_t)size + 1, NULL, &comm);
	snprintf(want, sizeof want, "of %u asked for", size + 1);
	agree(s == WAFER_ERROR_INVALID_ARGUMENT && !comm &&
		      strstr(error_text(), want),
	      "comm_open with one rank too many: INVALID_ARGUMENT: %s",
	      error_text());
}

/* The caller's communicator (native): the even and the odd ranks apart.
 * A sum reaches only the ranks of one's own half. */
static void test_native(void)
{
	MPI_Comm half;
	int half_rank, half_size;
	void *comm = NULL;
	float host[COUNT], got[COUNT];
	int pass;

	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
	MPI_Comm_rank(half, &half_rank);
	MPI_Comm_size(half, &half_size);

	pass = engine->open((uint32_t)half_rank, (uint32_t)size + 1, &half,
			 &comm) == WAFER_ERROR_INVALID_ARGUMENT &&
	       strstr(error_text(), "the caller's communicator");
	agree(pass, "comm_open on the caller's communicator with its size "
		    "wrong: INVALID_ARGUMENT naming it");

	pass = engine->open((uint32_t)half_rank, (uint32_t)half_size, &half,
			 &comm) == WAFER_OK;
	if (pass) {
		uint64_t r = filled(WAFER_DTYPE_F32, COUNT, host);
		pass = engine->run(comm, WAFER_COLLECTIVE_ALL_REDUCE,
			   WAFER_REDUCE_SUM, WAFER_DTYPE_F32, COUNT, 0, r,
			   r) == WAFER_OK;
		engine->download(r, got, sizeof got);
		for (size_t i = 0; pass && i < COUNT; i++)
			pass = got[i] == (float)reduced(WAFER_DTYPE_F32,
							WAFER_REDUCE_SUM, i,
							rank % 2, 2,
							half_size);
		engine->drop(r);
		engine->close(comm);
	}
	agree(pass, "comm_open on the caller's communicator (even and odd "
		    "ranks apart): a sum over its own ranks only");
	MPI_Comm_free(&half);
}

/*===----------------------------------------------------------------------===
 * The modes
 *===----------------------------------------------------------------------===*/

static void *load_plugin(void)
{
	const char *builddir = getenv("T_BUILDDIR");
	char path[4096];
	wafer_plugin_query_fn query;
	void *so;

	if (!builddir)
		bail_out("T_BUILDDIR is not set (run through make check or "
			 "t/cpu/mpi.sh)");
	snprintf(path, sizeof path, "%s/../plugins/cpu/.libs/cpu.so",
		 builddir);
	so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!so)
		bail_out("dlopen %s: %s", path, dlerror());
	query = (wafer_plugin_query_fn)(uintptr_t)dlsym(
		so, WAFER_PLUGIN_QUERY_SYMBOL);
	plugin = query ? query(WAFER_PLUGIN_ABI_MAJOR, &fake_host) : NULL;
	if (!plugin || !plugin->server->comm_run)
		bail_out("%s has no collectives", path);
	return so;
}

static int env_int(const char *a, const char *b)
{
	const char *v = getenv(a);

	if (!v)
		v = getenv(b);
	return v ? atoi(v) : -1;
}

/* The plugin initialises MPI, and finalises it at shutdown. */
static int wafer_init_mode(void)
{
	float host[COUNT], got[COUNT];
	int initialised = 0, finalised = 0, pass;
	void *so = load_plugin();

	rank = env_int("OMPI_COMM_WORLD_RANK", "PMI_RANK");
	size = env_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE");
	if (rank < 0 || size < 1)
		rank = 0, size = 1; /* started without mpirun */
	engine = &plugin_engine;
	plugin_up();
	pass = engine->open((uint32_t)rank, (uint32_t)size, NULL, &world) ==
	       WAFER_OK;
	MPI_Initialized(&initialised);
	if (pass) {
		uint64_t r = filled(WAFER_DTYPE_F32, COUNT, host);
		pass = engine->run(world, WAFER_COLLECTIVE_ALL_REDUCE,
				   WAFER_REDUCE_MAX, WAFER_DTYPE_F32, COUNT, 0,
				   r, r) == WAFER_OK;
		engine->download(r, got, sizeof got);
		for (size_t i = 0; pass && i < COUNT; i++)
			pass = got[i] == (float)reduced(WAFER_DTYPE_F32,
							WAFER_REDUCE_MAX, i, 0,
							1, size);
		engine->drop(r);
		engine->close(world);
	}
	plugin_down();
	MPI_Finalized(&finalised);
	fprintf(stderr,
		"# rank %d of %d: all_reduce max %s; MPI initialised by the "
		"plugin: %s; finalised at its shutdown: %s%s%s\n",
		rank, size, pass ? "right" : "WRONG",
		initialised ? "yes" : "NO", finalised ? "yes" : "NO",
		pass ? "" : "; last error: ", pass ? "" : last_error);
	dlclose(so);
	return pass && initialised && finalised ? 0 : 1;
}

/* Sub-communicators through the public API: 2 x 2 with four ranks
 * (t/comm_split.h). */
static void test_split(void)
{
	char why[512] = "";

	if (size != 4) {
		ok(1, "%s: wafer_comm_split 2 x 2 # SKIP %d ranks, not 4",
		   engine->name, size);
		return;
	}
	if (t_split_2x2(client, world, why, sizeof why))
		fprintf(stderr, "# %s\n", why);
	agree(!why[0], "wafer_comm_split 2 x 2: rows and columns "
		       "(MPI_Comm_split) all-reduce and broadcast over their "
		       "members, odd ranks left out");
}

/* Every check on |e|, between |up| and |down|. */
static void run_checks(const struct engine *e, void (*up)(void),
		       void (*down)(void))
{
	engine = e;
	up();
	test_ids_and_ranks();
	agree(engine->open((uint32_t)rank, (uint32_t)size, NULL, &world) ==
		      WAFER_OK,
	      "comm_open on MPI_COMM_WORLD as rank %d of %d", rank, size);
	if (!world)
		bail_out("no communicator: %s", error_text());
	for (size_t t = 0; t < DTYPES; t++) {
		test_all_reduce(dtypes[t]);
		test_broadcast(dtypes[t]);
		test_all_gather(dtypes[t]);
		test_reduce_scatter(dtypes[t]);
		test_send_recv(dtypes[t]);
	}
	test_long_all_reduce();
	test_count_zero();
	if (engine == &api_engine)
		test_split();
	if (engine == &plugin_engine)
		test_overlapping_ranges();
	engine->close(world);
	world = NULL;
	test_native();
	down();
}

int main(int argc, char **argv)
{
	int level, finalised = 1, initialised = 0;
	void *so;

	if (argc > 1 && strcmp(argv[1], "--wafer-init") == 0)
		return wafer_init_mode();

	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (rank != 0 && !freopen("/dev/null", "w", stdout))
		return 1;
	so = load_plugin();
	diag("%d ranks; MPI thread level %d", size, level);

	run_checks(&plugin_engine, plugin_up, plugin_down);
	run_checks(&api_engine, api_up, api_down);

	/* The application's MPI is the application's to finalise. */
	MPI_Initialized(&initialised);
	MPI_Finalized(&finalised);
	agree(initialised && !finalised,
	      "the plugin's shutdown leaves the caller's MPI initialised");
	dlclose(so);
	MPI_Finalize();
	done_testing();
	return exit_status();
}
