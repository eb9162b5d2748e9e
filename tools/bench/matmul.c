/* wafer — SPDX-License-Identifier: MIT
 *
 * matmul.c: `wafer-bench matmul` — f32 matrix products on the default
 * device, in one run:
 *
 *   tuned     wafer_op_matmul, which autotune sends to the fastest of the
 *             plugin's matmul variants for the shape (tuned on its first
 *             call; that call is not timed, its benchmark runs are
 *             counted);
 *   each variant of the plugin, through wafer_execute;
 *   openblas  cblas_sgemm called directly on host arrays (when wafer was
 *             configured with OpenBLAS): the reference.
 *
 * One line per shape, GFLOP/s (2mnk per product, best of several samples
 * taken in turns, see measure()) and ratios to OpenBLAS, then a summary
 * line for n = 1024:
 *
 *   matmul m=M n=N k=K tuned_gflops=T choice=V openblas_gflops=B
 *          tuned_vs_openblas=R own_best=V own_best_gflops=O
 *          own_vs_openblas=R <variant>=G ...
 *   matmul n=1024 tuned_gflops=X own_best_gflops=Y openblas_gflops=Z
 *          tune_benchmarks=N
 *
 * "own" is every variant but openblas. Autotune measures into a fresh
 * cache directory, removed at the end, so every run tunes (tune_benchmarks
 * is what a first use costs); --cache keeps the user's cache instead.
 * Options: --sizes=64,128,... (square), --quick (64..512, no skinny
 * shapes), --cache. */
#include "build-config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wafer/autotune.h>
#include <wafer/ops.h>
#include <wafer/plugin.h>

#ifdef HAVE_OPENBLAS
#include <cblas.h>
#endif

#include "tools/bench/bench.h"

#define MAX_VARIANTS 32
#define MAX_SHAPES 32
/* Each contender is measured for about this long (at least 3 rounds). */
#define BUDGET_NS UINT64_C(150000000)

struct shape {
	uint64_t m, n, k;
};

static const struct shape squares[] = {
	{64, 64, 64},       {128, 128, 128},    {256, 256, 256},
	{512, 512, 512},    {1024, 1024, 1024}, {2048, 2048, 2048},
};

/* Tiny squares, where the cost of a call dominates, and thin shapes: a
 * vector times a matrix, a few rows, a few columns, a long inner
 * dimension. */
static const struct shape skinny[] = {
	{16, 16, 16},      {32, 32, 32},     {1, 1024, 1024},
	{16, 1024, 1024},  {1024, 16, 1024}, {64, 64, 4096},
};

/* An operation that only lists the plugin's matmul variants. */
static wafer_status list_key(const void *inputs, wafer_autotune_key *key)
{
	return WAFER_OK;
}

static wafer_status list_bind(const void *inputs, wafer_execute_args *args)
{
	return WAFER_ERROR_INTERNAL;
}

static const wafer_tunable matmul_variants = {
	.struct_size = sizeof matmul_variants,
	.name = "bench_matmul_variants",
	.kernel = WAFER_KERNEL_MATMUL,
	.flags = WAFER_TUNABLE_KERNEL_VARIANTS,
	.bind = list_bind,
	.key = list_key,
};

struct problem {
	struct shape s;
	float *a, *b;
	wafer_tensor ta, tb;
};

typedef void (*run_fn)(wafer_client *client, const struct problem *p,
		       const char *variant);

static void run_tuned(wafer_client *client, const struct problem *p,
		      const char *variant)
{
	wafer_tensor out;

	bench_check(wafer_op_matmul(client, &p->ta, WAFER_ALWAYS_COPY, &p->tb,
				    WAFER_ALWAYS_COPY, 0, &out),
		    "op_matmul");
	bench_check(wafer_sync(client), "sync");
	wafer_tensor_release(client, &out);
}

/* The output of the variant runs, kept for the whole shape. */
static wafer_handle variant_out;

static void run_variant(wafer_client *client, const struct problem *p,
			const char *variant)
{
	struct wafer_matmul_params params = {
		.batch = 1, .m = p->s.m, .n = p->s.n, .k = p->s.k,
		.batch_stride_c = p->s.m * p->s.n,
	};
	wafer_buffer_binding bindings[3] = {
		{variant_out, 0, 0}, {p->ta.handle, 0, 0}, {p->tb.handle, 0, 0},
	};
	wafer_execute_args args = {
		.struct_size = sizeof args,
		.kernel = WAFER_KERNEL_MATMUL,
		.variant = variant,
		.dtype = WAFER_DTYPE_F32,
		.bindings = bindings,
		.binding_count = 3,
		.params = &params,
		.params_size = sizeof params,
		.global = {p->s.n, p->s.m, 1},
	};

	bench_check(wafer_execute(client, &args), variant);
	bench_check(wafer_sync(client), "sync");
}

#ifdef HAVE_OPENBLAS
static float *blas_out;

static void run_openblas(wafer_client *client, const struct problem *p,
			 const char *variant)
{
	int m = (int)p->s.m, n = (int)p->s.n, k = (int)p->s.k;

	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
		    p->a, k, p->b, n, 0.0f, blas_out, n);
}
#endif

/* The variant list covers every dtype; keeps the names the plugin has
 * an f32 kernel for (a 1x1x1 product tells). */
static void keep_f32_variants(wafer_client *client, const char **names,
			      size_t *count)
{
	wafer_handle h[3];
	for (int i = 0; i < 3; i++)
		bench_check(wafer_empty(client, sizeof(float), &h[i]), "probe");
	struct wafer_matmul_params params = {.batch = 1, .m = 1, .n = 1,
					     .k = 1, .batch_stride_c = 1};
	wafer_buffer_binding bindings[3] = {
		{h[0], 0, 0}, {h[1], 0, 0}, {h[2], 0, 0}};
	size_t kept = 0;
	for (size_t v = 0; v < *count; v++) {
		wafer_execute_args args = {
			.struct_size = sizeof args,
			.kernel = WAFER_KERNEL_MATMUL,
			.variant = names[v],
			.dtype = WAFER_DTYPE_F32,
			.bindings = bindings,
			.binding_count = 3,
			.params = &params,
			.params_size = sizeof params,
			.global = {1, 1, 1},
		};
		if (wafer_execute(client, &args) != WAFER_ERROR_NOT_SUPPORTED)
			names[kept++] = names[v];
	}
	bench_check(wafer_sync(client), "probe sync");
	for (int i = 0; i < 3; i++)
		wafer_release(client, h[i]);
	*count = kept;
}

/* One thing measured: the tuned operation, a variant, or OpenBLAS. */
struct contender {
	run_fn run;
	const char *variant;
	unsigned batch;   /* runs per sample: a sample lasts >= SAMPLE_NS */
	uint64_t best_ns; /* per run, best sample */
};

/* A sample is at least this long, so the clock's resolution and the
 * sync around it do not count. */
#define SAMPLE_NS UINT64_C(2000000)

static uint64_t sample(wafer_client *client, const struct problem *p,
		       struct contender *c)
{
	uint64_t start = bench_now_ns();
	for (unsigned i = 0; i < c->batch; i++)
		c->run(client, p, c->variant);
	uint64_t ns = (bench_now_ns() - start) / c->batch;
	if (ns < c->best_ns)
		c->best_ns = ns;
	return ns * c->batch;
}

/* Measures every contender in rounds — each round samples each one once —
 * for at least 3 rounds and BUDGET_NS per contender, keeping each one's
 * best sample. Taking turns spreads whatever else the machine does over
 * all of them alike: on a shared machine the ratios hold when the
 * absolute figures do not. */
static void measure(wafer_client *client, const struct problem *p,
		    struct contender *c, size_t n)
{
	uint64_t spent = 0;

	for (size_t i = 0; i < n; i++) {
		c[i].batch = 1;
		c[i].best_ns = UINT64_MAX;
		uint64_t once = sample(client, p, &c[i]); /* warm-up */
		c[i].best_ns = UINT64_MAX;
		if (once < SAMPLE_NS)
			c[i].batch = (unsigned)(SAMPLE_NS / (once ? once : 1)) + 1;
	}
	for (unsigned round = 0;
	     round < 3 || (spent < BUDGET_NS * n && round < 100); round++)
		for (size_t i = 0; i < n; i++)
			spent += sample(client, p, &c[i]);
}

static double gflops_of(const struct problem *p, const struct contender *c)
{
	double flop = 2.0 * (double)p->s.m * (double)p->s.n * (double)p->s.k;

	return flop / (double)(c->best_ns ? c->best_ns : 1);
}

static uint64_t benchmark_runs(wafer_runtime *runtime)
{
	wafer_autotune_stats s = {.struct_size = sizeof s};

	bench_check(wafer_autotune_stats_get(runtime, &s), "autotune_stats");
	return s.benchmark_runs;
}

/* The fresh cache directory, or "" with --cache. */
static char cache_dir[64];

/* Which variant wafer_op_matmul runs for |s|: the choice autotune wrote
 * to the matmul cache file (format: wafer-autotune(7)), whose key holds
 * m, n, k and the batch anchored to powers of two. "?" when unknown. */
static void tuned_choice(const struct shape *s, char *out, size_t size)
{
	char want[128], path[256], line[512];
	FILE *f = NULL;

	snprintf(out, size, "?");
	snprintf(want, sizeof want, " %llu,%llu,%llu,1 ",
		 (unsigned long long)wafer_autotune_anchor(s->m, 1),
		 (unsigned long long)wafer_autotune_anchor(s->n, 1),
		 (unsigned long long)wafer_autotune_anchor(s->k, 1));
	snprintf(path, sizeof path, "ls %s/matmul-*.cache 2>/dev/null",
		 cache_dir);
	FILE *ls = cache_dir[0] ? popen(path, "r") : NULL;
	if (ls && fgets(path, sizeof path, ls)) {
		path[strcspn(path, "\n")] = '\0';
		f = fopen(path, "r");
	}
	if (ls)
		pclose(ls);
	while (f && fgets(line, sizeof line, f)) {
		char *at = strstr(line, want);
		if (strncmp(line, "entry ", 6) != 0 || !at)
			continue;
		at += strlen(want);
		snprintf(out, size, "%.*s", (int)strcspn(at, " \n"), at);
	}
	if (f)
		fclose(f);
}

struct summary {
	double tuned, own_best, openblas;
	uint64_t tune_runs;
};

static void bench_shape(wafer_runtime *runtime, wafer_client *client,
			const struct shape *s, const char **names,
			size_t n_names, struct summary *out)
{
	struct problem p = {.s = *s};
	const uint64_t sa[2] = {s->m, s->k}, sb[2] = {s->k, s->n};

	p.a = malloc(s->m * s->k * sizeof *p.a);
	p.b = malloc(s->k * s->n * sizeof *p.b);
	if (!p.a || !p.b)
		bench_check(WAFER_ERROR_OUT_OF_MEMORY, "host arrays");
	for (size_t i = 0; i < s->m * s->k; i++)
		p.a[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
	for (size_t i = 0; i < s->k * s->n; i++)
		p.b[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
	bench_check(wafer_tensor_create(client, WAFER_DTYPE_F32, 2, sa, p.a,
					&p.ta),
		    "tensor a");
	bench_check(wafer_tensor_create(client, WAFER_DTYPE_F32, 2, sb, p.b,
					&p.tb),
		    "tensor b");
	bench_check(wafer_empty(client, s->m * s->n * sizeof(float),
				&variant_out),
		    "output");

	/* The first call tunes (or finds the shape in the cache). */
	uint64_t runs = benchmark_runs(runtime);
	wafer_tensor first;
	bench_check(wafer_op_matmul(client, &p.ta, WAFER_ALWAYS_COPY, &p.tb,
				    WAFER_ALWAYS_COPY, 0, &first),
		    "op_matmul (tuning)");
	bench_check(wafer_sync(client), "sync");
	wafer_tensor_release(client, &first);
	out->tune_runs = benchmark_runs(runtime) - runs;

	struct contender c[MAX_VARIANTS + 2];
	size_t n = 0;
	c[n++] = (struct contender){.run = run_tuned};
	for (size_t v = 0; v < n_names; v++)
		c[n++] = (struct contender){.run = run_variant,
					    .variant = names[v]};
#ifdef HAVE_OPENBLAS
	blas_out = malloc(s->m * s->n * sizeof *blas_out);
	if (!blas_out)
		bench_check(WAFER_ERROR_OUT_OF_MEMORY, "openblas output");
	c[n++] = (struct contender){.run = run_openblas};
#endif
	measure(client, &p, c, n);
#ifdef HAVE_OPENBLAS
	free(blas_out);
#endif

	double tuned = gflops_of(&p, &c[0]);
	double own_best = 0, openblas = NAN, variant[MAX_VARIANTS];
	const char *best_name = "-";
	for (size_t v = 0; v < n_names; v++) {
		variant[v] = gflops_of(&p, &c[1 + v]);
		if (strcmp(names[v], "openblas") != 0 && variant[v] > own_best) {
			own_best = variant[v];
			best_name = names[v];
		}
	}
#ifdef HAVE_OPENBLAS
	openblas = gflops_of(&p, &c[n - 1]);
#endif

	char choice[64];
	tuned_choice(s, choice, sizeof choice);
	printf("matmul m=%llu n=%llu k=%llu tuned_gflops=%.1f choice=%s "
	       "openblas_gflops=%.1f tuned_vs_openblas=%.2f own_best=%s "
	       "own_best_gflops=%.1f own_vs_openblas=%.2f tune_benchmarks=%llu",
	       (unsigned long long)s->m, (unsigned long long)s->n,
	       (unsigned long long)s->k, tuned, choice, openblas,
	       tuned / openblas, best_name, own_best, own_best / openblas,
	       (unsigned long long)out->tune_runs);
	for (size_t v = 0; v < n_names; v++)
		printf(" %s=%.1f", names[v], variant[v]);
	printf("\n");
	fflush(stdout);
	out->tuned = tuned;
	out->own_best = own_best;
	out->openblas = openblas;

	wafer_release(client, variant_out);
	wafer_tensor_release(client, &p.ta);
	wafer_tensor_release(client, &p.tb);
	free(p.a);
	free(p.b);
}

static size_t parse_sizes(const char *text, struct shape *out, size_t max)
{
	size_t n = 0;
	char *end;

	while (*text && n < max) {
		unsigned long long v = strtoull(text, &end, 10);
		if (end == text || v == 0 || v > 16384)
			return 0;
		out[n++] = (struct shape){v, v, v};
		text = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return 0;
	}
	return n;
}

int bench_matmul(int argc, char **argv)
{
	struct shape shapes[MAX_SHAPES];
	size_t n_shapes = 0;
	int quick = 0, keep_cache = 0;
	const char *sizes = NULL;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			quick = 1;
		else if (strcmp(argv[i], "--cache") == 0)
			keep_cache = 1;
		else if (strncmp(argv[i], "--sizes=", 8) == 0)
			sizes = argv[i] + 8;
		else {
			fprintf(stderr, "wafer-bench matmul: unknown option "
					"'%s' (--sizes=64,128,... --quick "
					"--cache)\n",
				argv[i]);
			return 2;
		}
	}
	if (sizes) {
		n_shapes = parse_sizes(sizes, shapes, MAX_SHAPES);
		if (!n_shapes) {
			fprintf(stderr, "wafer-bench matmul: --sizes wants "
					"sizes 1..16384 separated by commas\n");
			return 2;
		}
	} else {
		for (size_t i = 0; i < sizeof squares / sizeof squares[0]; i++)
			if (!quick || squares[i].m <= 512)
				shapes[n_shapes++] = squares[i];
		for (size_t i = 0; !quick && i < sizeof skinny / sizeof skinny[0];
		     i++)
			shapes[n_shapes++] = skinny[i];
	}

	char cache[] = "/tmp/wafer-bench-autotune-XXXXXX";
	wafer_option options[1] = {{"autotune", "cache_dir", cache}};
	wafer_runtime_options ro = {
		.struct_size = sizeof ro,
		.options = options,
		.option_count = keep_cache ? 0 : 1,
	};
	if (!keep_cache && !mkdtemp(cache)) {
		perror("wafer-bench matmul: mkdtemp");
		return 1;
	}
	if (!keep_cache)
		snprintf(cache_dir, sizeof cache_dir, "%s", cache);
	wafer_runtime *runtime;
	bench_check(wafer_runtime_open(&ro, &runtime), "runtime_open");
	wafer_client *client = bench_open_client(runtime, NULL, NULL);
	wafer_device_desc device = {.struct_size = sizeof device};
	bench_check(wafer_client_device(client, &device), "client_device");
	const char *names[MAX_VARIANTS];
	size_t n_names = 0;
	bench_check(wafer_autotune_candidates(client, &matmul_variants, names,
					      MAX_VARIANTS, &n_names),
		    "matmul variants");
	if (n_names > MAX_VARIANTS)
		n_names = MAX_VARIANTS;
	keep_f32_variants(client, names, &n_names);
	printf("# %s:%u (%s); matmul variants:", device.backend, device.index,
	       device.name);
	for (size_t v = 0; v < n_names; v++)
		printf(" %s", names[v]);
#ifndef HAVE_OPENBLAS
	printf("; built without OpenBLAS (no reference)");
#endif
	printf("\n");

	struct summary at1024 = {0}, s;
	int have1024 = 0;
	for (size_t i = 0; i < n_shapes; i++) {
		bench_shape(runtime, client, &shapes[i], names, n_names, &s);
		if (shapes[i].m == 1024 && shapes[i].n == 1024 &&
		    shapes[i].k == 1024) {
			at1024 = s;
			have1024 = 1;
		}
	}
	if (have1024)
		printf("matmul n=1024 tuned_gflops=%.1f own_best_gflops=%.1f "
		       "openblas_gflops=%.1f tune_benchmarks=%llu\n",
		       at1024.tuned, at1024.own_best, at1024.openblas,
		       (unsigned long long)at1024.tune_runs);

	wafer_client_close(client);
	wafer_runtime_close(runtime);
	if (!keep_cache) {
		char command[sizeof cache + 16];
		snprintf(command, sizeof command, "rm -rf '%s'", cache);
		if (system(command) != 0)
			fprintf(stderr, "wafer-bench matmul: could not remove "
					"%s\n",
				cache);
	}
	return 0;
}
