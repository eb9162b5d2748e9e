/* wafer — SPDX-License-Identifier: MIT
 *
 * comm_mpi.c: the cpu plugin's collectives on MPI, one rank per process.
 * t/mpi.sh starts it under mpirun -np 4; run alone it is a world of one.
 * Through the plugin ABI (the cpu plugin dlopened with a fake core, as
 * t/cpu_plugin does), so the plugin and its module cpu-mpi.so are what is
 * tested: every collective against a host reference, every dtype, SUM and
 * MAX, every root, in place and not; the caller's own communicator; a
 * rank or size MPI sees otherwise.
 *
 * Every rank checks its own results; rank 0 prints the point, which
 * passes when every rank passed (the others' stdout is /dev/null, and a
 * rank that failed says why on stderr).
 *
 *   t/comm_mpi               the program initialises MPI itself
 *                            (MPI_THREAD_MULTIPLE): wafer must use it
 *                            and leave it initialised at shutdown.
 *   t/comm_mpi --wafer-init  the program never calls MPI_Init: the
 *                            plugin does, and finalises it at shutdown;
 *                            the rank comes from mpirun's environment.
 *                            No TAP: exit status 0 when every check
 *                            passed (t/mpi.sh makes it one point). */
#include "build-config.h"

#include <dlfcn.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>
#include <wafer/plugin_util.h>

#include "t/tap.h"
#include "t/fake_host.h"
#include "t/half.h"

static int rank, size;
static const struct wafer_plugin *plugin;

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
			name, last_error);
	MPI_Allreduce(&pass, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	return ok(all, "%s", name);
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

struct rig {
	void *state, *device, *queue, *comm;
};

/* One resource of |bytes| holding |fill| bytes of |data| (or nothing). */
static wafer_resource make(const struct rig *g, size_t bytes)
{
	wafer_resource r = 0;

	if (plugin->storage->alloc(g->device, bytes ? bytes : 1, &r) != WAFER_OK)
		bail_out("rank %d: alloc %zu: %s", rank, bytes, last_error);
	return r;
}

static void upload(const struct rig *g, wafer_resource r, const void *data,
		   size_t bytes)
{
	plugin->storage->copy_in(g->device, g->queue, r, 0, data, bytes);
}

static void download(const struct rig *g, wafer_resource r, void *data,
		     size_t bytes)
{
	plugin->storage->copy_out(g->device, g->queue, r, 0, data, bytes);
}

static wafer_status run(const struct rig *g, void *comm,
			wafer_collective_kind kind, wafer_reduce_op op,
			wafer_dtype t, size_t count, uint32_t root,
			wafer_resource src, wafer_resource dst)
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
	return plugin->server->comm_run(g->device, g->queue, comm, &c);
}

static wafer_status open_comm(const struct rig *g, uint32_t r, uint32_t n,
			      void *native, void **out)
{
	struct wafer_comm_open_args args = {
		.struct_size = sizeof args,
		.rank = r,
		.size = n,
		.id = NULL,
		.native = native,
	};
	return plugin->server->comm_open(g->device, &args, out);
}

static void rig_up(struct rig *g)
{
	struct wafer_plugin_init_args args = {
		.struct_size = sizeof args,
		.host = &fake_host,
	};

	if (plugin->init(&args, &g->state) != WAFER_OK ||
	    plugin->device_open(g->state, 0, &g->device) != WAFER_OK ||
	    plugin->server->queue_create(g->device, &g->queue) != WAFER_OK)
		bail_out("rank %d: cpu plugin: %s", rank, last_error);
}

static void rig_down(struct rig *g)
{
	plugin->server->queue_destroy(g->device, g->queue);
	plugin->device_close(g->device);
	plugin->shutdown(g->state);
}

/*===----------------------------------------------------------------------===
 * The collectives against the reference
 *===----------------------------------------------------------------------===*/

#define COUNT 37 /* odd: no element count a vector loop would like */

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
static wafer_resource filled(const struct rig *g, wafer_dtype t, size_t n,
			     void *host)
{
	size_t bytes = n * wafer_plugin_dtype_size(t);
	wafer_resource r = make(g, bytes);

	for (size_t i = 0; i < n; i++)
		put(t, host, i, value(t, rank, i));
	upload(g, r, host, bytes);
	return r;
}

static void test_all_reduce(const struct rig *g, wafer_dtype t)
{
	size_t element = wafer_plugin_dtype_size(t);
	unsigned char host[COUNT * 8], got[COUNT * 8];

	for (int op = WAFER_REDUCE_SUM; op <= WAFER_REDUCE_MAX; op++)
		for (int in_place = 0; in_place < 2; in_place++) {
			struct reduce_ctx ctx = {(wafer_reduce_op)op, 0};
			wafer_resource src = filled(g, t, COUNT, host);
			wafer_resource dst = in_place ? src
						      : make(g, COUNT * element);
			wafer_status s = run(g, g->comm,
					     WAFER_COLLECTIVE_ALL_REDUCE,
					     (wafer_reduce_op)op, t, COUNT, 0,
					     src, dst);
			int pass = s == WAFER_OK;
			download(g, dst, got, COUNT * element);
			pass = pass && matches(t, got, COUNT, want_reduced,
					       &ctx, "all_reduce");
			if (!in_place) { /* the source is left alone */
				unsigned char kept[COUNT * 8];
				download(g, src, kept, COUNT * element);
				pass = pass && !memcmp(kept, host,
						       COUNT * element);
			}
			agree(pass, "all_reduce %s %s, %s", dtype_name(t),
			      op == WAFER_REDUCE_SUM ? "sum" : "max",
			      in_place ? "in place" : "into another buffer");
			if (!in_place)
				plugin->storage->free(g->device, dst);
			plugin->storage->free(g->device, src);
		}
}

/* Every root; the non-root ranks pass no source (resource 0) out of
 * place, as wafer_comm_broadcast allows. */
static void test_broadcast(const struct rig *g, wafer_dtype t)
{
	size_t element = wafer_plugin_dtype_size(t);
	unsigned char host[COUNT * 8], got[COUNT * 8];

	for (int root = 0; root < size; root++) {
		int pass = 1;
		for (int in_place = 0; in_place < 2; in_place++) {
			wafer_resource src = filled(g, t, COUNT, host);
			wafer_resource dst = in_place ? src
						      : make(g, COUNT * element);
			wafer_status s = run(g, g->comm,
					     WAFER_COLLECTIVE_BROADCAST,
					     WAFER_REDUCE_SUM, t, COUNT,
					     (uint32_t)root,
					     in_place || rank == root ? src : 0,
					     dst);
			pass = pass && s == WAFER_OK;
			download(g, dst, got, COUNT * element);
			pass = pass && matches(t, got, COUNT, want_root, &root,
					       "broadcast");
			if (!in_place)
				plugin->storage->free(g->device, dst);
			plugin->storage->free(g->device, src);
		}
		agree(pass, "broadcast %s from root %d, in place and not",
		      dtype_name(t), root);
	}
}

static void test_all_gather(const struct rig *g, wafer_dtype t)
{
	size_t element = wafer_plugin_dtype_size(t);
	unsigned char host[COUNT * 8];
	unsigned char *got = malloc(COUNT * element * (size_t)size);
	wafer_resource src = filled(g, t, COUNT, host);
	wafer_resource dst = make(g, COUNT * element * (size_t)size);
	wafer_status s = run(g, g->comm, WAFER_COLLECTIVE_ALL_GATHER,
			     WAFER_REDUCE_SUM, t, COUNT, 0, src, dst);

	download(g, dst, got, COUNT * element * (size_t)size);
	agree(s == WAFER_OK && matches(t, got, COUNT * (size_t)size,
				       want_gathered, NULL, "all_gather"),
	      "all_gather %s: every rank's %d elements in rank order",
	      dtype_name(t), COUNT);
	plugin->storage->free(g->device, dst);
	plugin->storage->free(g->device, src);
	free(got);
}

static void test_reduce_scatter(const struct rig *g, wafer_dtype t)
{
	size_t element = wafer_plugin_dtype_size(t);
	size_t whole = COUNT * (size_t)size;
	unsigned char *host = malloc(whole * element);
	unsigned char got[COUNT * 8];

	for (int op = WAFER_REDUCE_SUM; op <= WAFER_REDUCE_MAX; op++) {
		struct reduce_ctx ctx = {(wafer_reduce_op)op,
					 (size_t)rank * COUNT};
		wafer_resource src = filled(g, t, whole, host);
		wafer_resource dst = make(g, COUNT * element);
		wafer_status s = run(g, g->comm,
				     WAFER_COLLECTIVE_REDUCE_SCATTER,
				     (wafer_reduce_op)op, t, COUNT, 0, src, dst);
		download(g, dst, got, COUNT * element);
		agree(s == WAFER_OK && matches(t, got, COUNT, want_reduced,
					       &ctx, "reduce_scatter"),
		      "reduce_scatter %s %s: this rank's block reduced",
		      dtype_name(t), op == WAFER_REDUCE_SUM ? "sum" : "max");
		plugin->storage->free(g->device, dst);
		plugin->storage->free(g->device, src);
	}
	free(host);
}

/* Long enough that MPI splits the message (and the cpu plugin's memory is
 * past any small-buffer path). */
static void test_long_all_reduce(const struct rig *g)
{
	size_t n = 1000003;
	float *host = malloc(n * sizeof *host);
	wafer_resource r = filled(g, WAFER_DTYPE_F32, n, host);
	struct reduce_ctx ctx = {WAFER_REDUCE_SUM, 0};
	wafer_status s = run(g, g->comm, WAFER_COLLECTIVE_ALL_REDUCE,
			     WAFER_REDUCE_SUM, WAFER_DTYPE_F32, n, 0, r, r);

	download(g, r, host, n * sizeof *host);
	agree(s == WAFER_OK && matches(WAFER_DTYPE_F32, host, n, want_reduced,
				       &ctx, "all_reduce"),
	      "all_reduce of %zu f32 in place", n);
	plugin->storage->free(g->device, r);
	free(host);
}

static void test_count_zero(const struct rig *g)
{
	float before[4] = {1, 2, 3, 4}, after[4];
	wafer_resource r = make(g, sizeof before);
	int pass = 1;

	upload(g, r, before, sizeof before);
	for (int k = WAFER_COLLECTIVE_ALL_REDUCE;
	     k <= WAFER_COLLECTIVE_REDUCE_SCATTER; k++)
		pass = pass && run(g, g->comm, (wafer_collective_kind)k,
				   WAFER_REDUCE_SUM, WAFER_DTYPE_F32, 0, 0, r,
				   r) == WAFER_OK;
	download(g, r, after, sizeof after);
	agree(pass && !memcmp(before, after, sizeof before),
	      "count 0: every collective succeeds and writes nothing");
	plugin->storage->free(g->device, r);
}

/*===----------------------------------------------------------------------===
 * Communicators
 *===----------------------------------------------------------------------===*/

static void test_ids_and_ranks(const struct rig *g)
{
	wafer_comm_id id, zero;
	void *comm = (void *)1;
	char want[64];
	wafer_status s;

	memset(&id, 0xa5, sizeof id);
	memset(&zero, 0, sizeof zero);
	s = plugin->server->comm_id(g->device, &id);
	agree(s == WAFER_OK && !memcmp(&id, &zero, sizeof id),
	      "comm_id: all zeros (MPI needs no id)");

	/* Each rank claims its neighbour's rank. */
	s = open_comm(g, (uint32_t)((rank + 1) % size), (uint32_t)size, NULL,
		      &comm);
	snprintf(want, sizeof want, "as rank %d of %d", rank, size);
	agree(size == 1 ? s == WAFER_OK
			: s == WAFER_ERROR_INVALID_ARGUMENT && !comm &&
				  strstr(last_error, want) &&
				  strstr(last_error, "MPI_COMM_WORLD"),
	      "comm_open as another rank: INVALID_ARGUMENT naming both ranks "
	      "(%s)",
	      size == 1 ? "one rank: it is this one" : "MPI's own rank named");
	if (size == 1 && s == WAFER_OK)
		plugin->server->comm_close(g->device, comm);

	s = open_comm(g, 0, (uint32_t)size + 1, NULL, &comm);
	snprintf(want, sizeof want, "of %u asked for", size + 1);
	agree(s == WAFER_ERROR_INVALID_ARGUMENT && !comm &&
		      strstr(last_error, want),
	      "comm_open with one rank too many: INVALID_ARGUMENT: %s",
	      last_error);
}

/* The caller's communicator (native): the even and the odd ranks apart.
 * A sum reaches only the ranks of one's own half. */
static void test_native(const struct rig *g)
{
	MPI_Comm half;
	int half_rank, half_size;
	void *comm = NULL;
	float host[COUNT], got[COUNT];
	int pass;

	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
	MPI_Comm_rank(half, &half_rank);
	MPI_Comm_size(half, &half_size);

	pass = open_comm(g, (uint32_t)half_rank, (uint32_t)size + 1, &half,
			 &comm) == WAFER_ERROR_INVALID_ARGUMENT &&
	       strstr(last_error, "the caller's communicator");
	agree(pass, "comm_open on the caller's communicator with its size "
		    "wrong: INVALID_ARGUMENT naming it");

	pass = open_comm(g, (uint32_t)half_rank, (uint32_t)half_size, &half,
			 &comm) == WAFER_OK;
	if (pass) {
		wafer_resource r = filled(g, WAFER_DTYPE_F32, COUNT, host);
		pass = run(g, comm, WAFER_COLLECTIVE_ALL_REDUCE,
			   WAFER_REDUCE_SUM, WAFER_DTYPE_F32, COUNT, 0, r,
			   r) == WAFER_OK;
		download(g, r, got, sizeof got);
		for (size_t i = 0; pass && i < COUNT; i++)
			pass = got[i] == (float)reduced(WAFER_DTYPE_F32,
							WAFER_REDUCE_SUM, i,
							rank % 2, 2,
							half_size);
		plugin->storage->free(g->device, r);
		plugin->server->comm_close(g->device, comm);
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
			 "t/mpi.sh)");
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
	struct rig g = {0};
	float host[COUNT], got[COUNT];
	int initialised = 0, finalised = 0, pass;
	void *so = load_plugin();

	rank = env_int("OMPI_COMM_WORLD_RANK", "PMI_RANK");
	size = env_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE");
	if (rank < 0 || size < 1)
		rank = 0, size = 1; /* started without mpirun */
	rig_up(&g);
	pass = open_comm(&g, (uint32_t)rank, (uint32_t)size, NULL, &g.comm) ==
	       WAFER_OK;
	MPI_Initialized(&initialised);
	if (pass) {
		wafer_resource r = filled(&g, WAFER_DTYPE_F32, COUNT, host);
		pass = run(&g, g.comm, WAFER_COLLECTIVE_ALL_REDUCE,
			   WAFER_REDUCE_MAX, WAFER_DTYPE_F32, COUNT, 0, r,
			   r) == WAFER_OK;
		download(&g, r, got, sizeof got);
		for (size_t i = 0; pass && i < COUNT; i++)
			pass = got[i] == (float)reduced(WAFER_DTYPE_F32,
							WAFER_REDUCE_MAX, i, 0,
							1, size);
		plugin->storage->free(g.device, r);
		plugin->server->comm_close(g.device, g.comm);
	}
	rig_down(&g);
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

int main(int argc, char **argv)
{
	struct rig g = {0};
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

	rig_up(&g);
	test_ids_and_ranks(&g);
	agree(open_comm(&g, (uint32_t)rank, (uint32_t)size, NULL, &g.comm) ==
		      WAFER_OK,
	      "comm_open on MPI_COMM_WORLD as rank %d of %d", rank, size);
	if (!g.comm)
		bail_out("no communicator: %s", last_error);
	for (size_t t = 0; t < DTYPES; t++) {
		test_all_reduce(&g, dtypes[t]);
		test_broadcast(&g, dtypes[t]);
		test_all_gather(&g, dtypes[t]);
		test_reduce_scatter(&g, dtypes[t]);
	}
	test_long_all_reduce(&g);
	test_count_zero(&g);
	plugin->server->comm_close(g.device, g.comm);
	test_native(&g);
	rig_down(&g);

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
