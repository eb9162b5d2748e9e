/* wafer — SPDX-License-Identifier: MIT
 *
 * compare.c: `wafer-bench compare` — the same workloads on several
 * devices in one run, so that a backend's cost is read against another's
 * on the same machine at the same moment (the OpenCL plugin on PoCL
 * against the cpu plugin, say; or opencl against cuda on one GPU).
 *
 *   wafer-bench compare [SELECTOR...] [--mib=N] [--sizes=N,N,...]
 *
 * Selectors as wafer_client_open takes them ("cpu", "opencl:1"); by
 * default the first device of every backend that has one. Named
 * selectors load their backends whatever [core] backend says. Per device:
 *
 *   compare device=D upload_gbs=U download_gbs=W copy_gbs=C add_gbs=A
 *           noop_us=R
 *
 * upload and download: wafer_write / wafer_read of N MiB (default 64)
 * with a sync each; copy and add: the standard kernels on N MiB, counting
 * the bytes read and written (2N and 3N); noop_us: one execute+sync round
 * trip of the noop kernel. Then per matrix size (default 256,512,1024)
 * and device, f32 matmul in GFLOP/s for the default variant and each
 * other variant the device offers among those wafer's plugins name:
 *
 *   compare matmul n=S device=D variant=V gflops=G
 *
 * and last, each device against the first, as ratios (above 1: faster):
 *
 *   compare ratio device=D base=B upload=x download=x copy=x add=x
 *           noop=x matmul_best=x
 *
 * Times are host wall clock around a sync, best of several rounds. */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>

#include "tools/bench/bench.h"

#define MAX_DEVICES 8
#define MAX_SIZES 8
/* Each measurement runs for at least this long (and 3 rounds). */
#define BUDGET_NS UINT64_C(300000000)

/* Variant names wafer's plugins give matmul; a device offers some. */
static const char *const variants[] = {
	NULL, /* the default */
	"tile64", "tile16", "naive", "clblast",
};

struct device_result {
	char selector[64];
	double upload, download, copy, add, noop_us;
	double matmul_best; /* at the largest size */
};

static double seconds(uint64_t ns)
{
	return (double)ns / 1e9;
}

/* Runs |step| until the budget is spent (at least 3 times) and returns
 * the best time of one step in ns. |step| returns 0 on success. */
static uint64_t best_of(int (*step)(void *), void *ctx)
{
	uint64_t best = UINT64_MAX, spent = 0;

	for (int i = 0; i < 3 || spent < BUDGET_NS; i++) {
		uint64_t t0 = bench_now_ns(), dt;
		if (step(ctx) != 0)
			return 0;
		dt = bench_now_ns() - t0;
		spent += dt;
		if (dt < best)
			best = dt;
		if (i > 1000)
			break;
	}
	return best;
}

struct work {
	wafer_client *client;
	wafer_handle a, b, c;
	void *host;
	size_t bytes;
	const char *variant;
	uint64_t n;
};

static int step_upload(void *ctx)
{
	struct work *w = ctx;
	return wafer_write(w->client, w->a, 0, w->host, w->bytes) ||
	       wafer_sync(w->client);
}

static int step_download(void *ctx)
{
	struct work *w = ctx;
	return wafer_read(w->client, w->a, 0, w->host, w->bytes) != WAFER_OK;
}

static wafer_status execute(struct work *w, const char *kernel,
			    const wafer_buffer_binding *bindings,
			    size_t count, const void *params,
			    size_t params_size, uint64_t g0, uint64_t g1)
{
	wafer_execute_args args = {
		.struct_size = sizeof args,
		.kernel = kernel,
		.variant = w->variant,
		.dtype = WAFER_DTYPE_F32,
		.bindings = bindings,
		.binding_count = count,
		.params = params,
		.params_size = params_size,
		.global = {g0, g1, 1},
	};
	return wafer_execute(w->client, &args);
}

static int step_copy(void *ctx)
{
	struct work *w = ctx;
	wafer_buffer_binding b[2] = {{w->b, 0, 0}, {w->a, 0, 0}};
	struct wafer_elementwise_params p = {.count = w->bytes / 4};
	return execute(w, WAFER_KERNEL_COPY, b, 2, &p, sizeof p, p.count, 1) ||
	       wafer_sync(w->client);
}

static int step_add(void *ctx)
{
	struct work *w = ctx;
	wafer_buffer_binding b[3] = {{w->c, 0, 0}, {w->a, 0, 0}, {w->b, 0, 0}};
	struct wafer_elementwise_params p = {.count = w->bytes / 4};
	return execute(w, WAFER_KERNEL_ADD, b, 3, &p, sizeof p, p.count, 1) ||
	       wafer_sync(w->client);
}

static int step_noop(void *ctx)
{
	struct work *w = ctx;
	return execute(w, WAFER_KERNEL_NOOP, NULL, 0, NULL, 0, 1, 1) ||
	       wafer_sync(w->client);
}

static int step_matmul(void *ctx)
{
	struct work *w = ctx;
	wafer_buffer_binding b[3] = {{w->c, 0, 0}, {w->a, 0, 0}, {w->b, 0, 0}};
	struct wafer_matmul_params p = {
		.batch = 1, .m = w->n, .n = w->n, .k = w->n,
		.batch_stride_c = w->n * w->n,
	};
	return execute(w, WAFER_KERNEL_MATMUL, b, 3, &p, sizeof p, w->n,
		       w->n) ||
	       wafer_sync(w->client);
}

static void fill_host(float *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = (float)(i % 251) / 251.0f - 0.5f;
}

static void bandwidth(wafer_runtime *runtime, struct device_result *r,
		      size_t mib)
{
	struct work w = {.bytes = mib << 20};
	double gb = (double)w.bytes / 1e9;

	bench_check(wafer_client_open(runtime, r->selector, NULL, &w.client),
		    r->selector);
	w.host = malloc(w.bytes);
	if (!w.host) {
		fprintf(stderr, "wafer-bench: out of memory\n");
		exit(1);
	}
	fill_host(w.host, w.bytes / 4);
	bench_check(wafer_create(w.client, w.host, w.bytes, &w.a), "create");
	bench_check(wafer_create(w.client, w.host, w.bytes, &w.b), "create");
	bench_check(wafer_empty(w.client, w.bytes, &w.c), "empty");
	bench_check(wafer_sync(w.client), "sync");

	r->upload = gb / seconds(best_of(step_upload, &w));
	r->download = gb / seconds(best_of(step_download, &w));
	step_copy(&w); /* first use builds programs */
	r->copy = 2 * gb / seconds(best_of(step_copy, &w));
	step_add(&w);
	r->add = 3 * gb / seconds(best_of(step_add, &w));
	step_noop(&w);
	r->noop_us = (double)best_of(step_noop, &w) / 1e3;
	printf("compare device=%s upload_gbs=%.2f download_gbs=%.2f "
	       "copy_gbs=%.2f add_gbs=%.2f noop_us=%.1f\n",
	       r->selector, r->upload, r->download, r->copy, r->add,
	       r->noop_us);
	fflush(stdout);
	wafer_release(w.client, w.a);
	wafer_release(w.client, w.b);
	wafer_release(w.client, w.c);
	wafer_client_close(w.client);
	free(w.host);
}

/* GFLOP/s of every matmul variant of |r|'s device at size n; the best is
 * kept when |last|. */
static void matmul(wafer_runtime *runtime, struct device_result *r,
		   uint64_t n, int last)
{
	struct work w = {.n = n, .bytes = n * n * 4};
	double flop = 2.0 * (double)n * (double)n * (double)n;

	bench_check(wafer_client_open(runtime, r->selector, NULL, &w.client),
		    r->selector);
	w.host = malloc(w.bytes);
	if (!w.host) {
		fprintf(stderr, "wafer-bench: out of memory\n");
		exit(1);
	}
	fill_host(w.host, n * n);
	bench_check(wafer_create(w.client, w.host, w.bytes, &w.a), "create");
	bench_check(wafer_create(w.client, w.host, w.bytes, &w.b), "create");
	bench_check(wafer_empty(w.client, w.bytes, &w.c), "empty");
	for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
		double gflops;
		w.variant = variants[v];
		/* Warm-up: builds the program, or finds the variant missing
		 * (and a variant that is the default was measured as such). */
		if (step_matmul(&w) != 0)
			continue;
		gflops = flop / seconds(best_of(step_matmul, &w)) / 1e9;
		printf("compare matmul n=%llu device=%s variant=%s "
		       "gflops=%.2f\n",
		       (unsigned long long)n, r->selector,
		       w.variant ? w.variant : "default", gflops);
		fflush(stdout);
		if (last && gflops > r->matmul_best)
			r->matmul_best = gflops;
	}
	wafer_release(w.client, w.a);
	wafer_release(w.client, w.b);
	wafer_release(w.client, w.c);
	wafer_sync(w.client);
	wafer_client_close(w.client);
	free(w.host);
}

/* The first device of each backend the runtime lists. */
static size_t default_selectors(wafer_runtime *runtime,
				struct device_result *out)
{
	size_t n = 0;

	for (size_t i = 0; i < wafer_runtime_device_count(runtime); i++) {
		wafer_device_desc d = {.struct_size = sizeof d};
		if (wafer_runtime_device(runtime, i, &d) != WAFER_OK ||
		    d.index != 0 || n == MAX_DEVICES)
			continue;
		snprintf(out[n++].selector, sizeof out[0].selector, "%s:0",
			 d.backend);
	}
	return n;
}

/* "a,b,c" of the selectors' backends, for [core] backend. */
static void backend_list(const struct device_result *r, size_t n,
			 char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < size; i++) {
		size_t len = strcspn(r[i].selector, ":");
		used += (size_t)snprintf(buf + used, size - used, "%s%.*s",
					 i ? ", " : "", (int)len,
					 r[i].selector);
	}
}

static double ratio(double x, double base)
{
	return base > 0 ? x / base : 0;
}

/* Progress on stderr (stdout stays the result lines): the step about to
 * run, the time so far and an estimate of what is left, from the time
 * the steps done took per unit of weight. A step's weight is a guess of
 * its cost: a bandwidth round moves some MiB, a matmul of n does n^3
 * work per variant. */
struct progress {
	uint64_t start_ns;
	double total, done;
};

static double step_weight(uint64_t matmul_n, size_t mib)
{
	if (!matmul_n)
		return 1.0 + (double)mib / 64.0;
	return (double)matmul_n * matmul_n * matmul_n / (512.0 * 512 * 512);
}

static void progress_step(const struct progress *pr, const char *what,
			  const char *selector, uint64_t n)
{
	double elapsed = (double)(bench_now_ns() - pr->start_ns) / 1e9;
	char size[32] = "";

	if (n)
		snprintf(size, sizeof size, " n=%llu", (unsigned long long)n);
	if (pr->done > 0)
		fprintf(stderr, "wafer-bench compare: %s%s on %s (%.0f s so far, "
			"about %.0f s left)\n", what, size, selector, elapsed,
			elapsed / pr->done * (pr->total - pr->done));
	else
		fprintf(stderr, "wafer-bench compare: %s%s on %s\n", what,
			size, selector);
}

int bench_compare(int argc, char **argv)
{
	struct device_result dev[MAX_DEVICES];
	uint64_t sizes[MAX_SIZES] = {256, 512, 1024};
	size_t n_dev = 0, n_sizes = 3, mib = 64;
	char backends[512];
	wafer_option option = {"core", "backend", backends};
	wafer_runtime_options ro = {.struct_size = sizeof ro};
	wafer_runtime *runtime;

	memset(dev, 0, sizeof dev);
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--mib=", 6) == 0) {
			mib = strtoul(argv[i] + 6, NULL, 10);
		} else if (strncmp(argv[i], "--sizes=", 8) == 0) {
			char *p = argv[i] + 8;
			n_sizes = 0;
			while (*p && n_sizes < MAX_SIZES) {
				sizes[n_sizes++] = strtoull(p, &p, 10);
				p += *p == ',';
			}
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "wafer-bench compare: unknown option "
					"'%s'\n", argv[i]);
			return 2;
		} else if (n_dev < MAX_DEVICES) {
			snprintf(dev[n_dev++].selector, sizeof dev[0].selector,
				 "%s", argv[i]);
		}
	}
	if (mib == 0)
		mib = 1;
	if (n_dev) {
		backend_list(dev, n_dev, backends, sizeof backends);
		ro.options = &option;
		ro.option_count = 1;
	}
	bench_check(wafer_runtime_open(&ro, &runtime), "runtime_open");
	if (!n_dev)
		n_dev = default_selectors(runtime, dev);
	if (!n_dev) {
		fprintf(stderr, "wafer-bench compare: no device\n");
		return 1;
	}

	struct progress pr = {.start_ns = bench_now_ns()};
	for (size_t d = 0; d < n_dev; d++)
		pr.total += step_weight(0, mib);
	for (size_t s = 0; s < n_sizes; s++)
		pr.total += (double)n_dev * step_weight(sizes[s], mib);
	for (size_t d = 0; d < n_dev; d++) {
		progress_step(&pr, "bandwidth", dev[d].selector, 0);
		bandwidth(runtime, &dev[d], mib);
		pr.done += step_weight(0, mib);
	}
	for (size_t s = 0; s < n_sizes; s++)
		for (size_t d = 0; d < n_dev; d++) {
			progress_step(&pr, "matmul", dev[d].selector, sizes[s]);
			matmul(runtime, &dev[d], sizes[s], s == n_sizes - 1);
			pr.done += step_weight(sizes[s], mib);
		}
	fprintf(stderr, "wafer-bench compare: done in %.0f s\n",
		(double)(bench_now_ns() - pr.start_ns) / 1e9);
	for (size_t d = 1; d < n_dev; d++)
		printf("compare ratio device=%s base=%s upload=%.2f "
		       "download=%.2f copy=%.2f add=%.2f noop=%.2f "
		       "matmul_best=%.2f\n",
		       dev[d].selector, dev[0].selector,
		       ratio(dev[d].upload, dev[0].upload),
		       ratio(dev[d].download, dev[0].download),
		       ratio(dev[d].copy, dev[0].copy),
		       ratio(dev[d].add, dev[0].add),
		       ratio(dev[0].noop_us, dev[d].noop_us),
		       ratio(dev[d].matmul_best, dev[0].matmul_best));
	wafer_runtime_close(runtime);
	return 0;
}
