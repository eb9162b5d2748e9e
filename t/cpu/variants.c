/* wafer — SPDX-License-Identifier: MIT
 *
 * cpu_variants.c: the cpu plugin's kernel variants — every matmul variant
 * (the default, the blocked ones on the plugin's GEMM engine, "rows", and
 * "openblas" when built with it) and every reduce_sum and reduce_max
 * variant (per row, split row) — against a reference computed here in
 * double precision, over shapes that hit every edge: tiles cut at the
 * right and bottom, k past one cache tile, transposes, batches with a
 * shared operand, a single long row. Then the ops layer's matmul and
 * reductions through autotune: tuned once per shape, a cache hit after,
 * and the plugin's default in mode off.
 *
 * The variants are listed through autotune (wafer_autotune_candidates on
 * an operation with WAFER_TUNABLE_KERNEL_VARIANTS), so a new variant is
 * tested without touching this file. */
#include "build-config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/autotune.h>
#include <wafer/ops.h>
#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "t/client_util.h"
#include "t/tap.h"

static wafer_runtime *runtime;
static wafer_client *client;

/* An operation that only lists variants: never executed. */
static wafer_status list_key(const void *inputs, wafer_autotune_key *key)
{
	return WAFER_OK;
}

static wafer_status list_bind(const void *inputs, wafer_execute_args *args)
{
	return WAFER_ERROR_INTERNAL;
}

#define LISTING(name_, kernel_)                                                \
	static const wafer_tunable name_ = {                                   \
		.struct_size = sizeof(wafer_tunable),                          \
		.name = "list_" kernel_,                                       \
		.kernel = kernel_,                                             \
		.flags = WAFER_TUNABLE_KERNEL_VARIANTS,                        \
		.bind = list_bind,                                             \
		.key = list_key,                                               \
	}

LISTING(list_matmul, WAFER_KERNEL_MATMUL);
LISTING(list_sum, WAFER_KERNEL_REDUCE_SUM);
LISTING(list_max, WAFER_KERNEL_REDUCE_MAX);

static size_t variants(const wafer_tunable *op, const char **names,
		       size_t capacity)
{
	size_t n = 0;

	check(wafer_autotune_candidates(client, op, names, capacity, &n),
	      "candidates");
	return n < capacity ? n : capacity;
}

/* Small integers keep every product and sum exact in f32 up to k of a few
 * thousand, so any order of summation gives the reference exactly... */
static float value_at(size_t i, unsigned seed)
{
	return (float)((int)((i * 2654435761u + seed) % 9) - 4);
}

/*===----------------------------------------------------------------------===
 * matmul
 *===----------------------------------------------------------------------===*/

struct mm_case {
	uint64_t batch, m, n, k;
	uint32_t ta, tb;
	int shared_b; /* batch_stride_b = 0 */
};

static const struct mm_case mm_cases[] = {
	{1, 1, 1, 1, 0, 0, 0},       {1, 7, 5, 3, 0, 0, 0},
	{1, 13, 33, 17, 0, 0, 0},    {1, 64, 64, 64, 0, 0, 0},
	{1, 100, 37, 300, 1, 0, 0},  {1, 7, 200, 513, 0, 1, 0},
	{1, 130, 70, 260, 1, 1, 0},  {1, 1, 300, 129, 0, 0, 0},
	{1, 257, 1, 64, 0, 1, 0},    {3, 20, 40, 30, 0, 0, 0},
	{4, 33, 17, 65, 1, 1, 1},    {2, 150, 160, 270, 0, 0, 1},
};

static void mm_reference(const struct mm_case *c, const float *a,
			 const float *b, double *out)
{
	for (uint64_t t = 0; t < c->batch; t++) {
		const float *at = a + t * c->m * c->k;
		const float *bt = b + (c->shared_b ? 0 : t * c->k * c->n);
		for (uint64_t i = 0; i < c->m; i++)
			for (uint64_t j = 0; j < c->n; j++) {
				double s = 0;
				for (uint64_t p = 0; p < c->k; p++)
					s += (double)at[c->ta ? p * c->m + i
							      : i * c->k + p] *
					     bt[c->tb ? j * c->k + p
						      : p * c->n + j];
				out[(t * c->m + i) * c->n + j] = s;
			}
	}
}

/* Runs variant |name| on case |c|; returns the largest error. */
static double mm_run(const char *name, const struct mm_case *c,
		     wafer_status *out_status)
{
	size_t na = c->batch * c->m * c->k;
	size_t nb = (c->shared_b ? 1 : c->batch) * c->k * c->n;
	size_t nc = c->batch * c->m * c->n;
	float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
	float *got = malloc(nc * sizeof *got);
	double *want = malloc(nc * sizeof *want), worst = 0;
	wafer_handle ha, hb, hc;

	for (size_t i = 0; i < na; i++)
		a[i] = value_at(i, 1);
	for (size_t i = 0; i < nb; i++)
		b[i] = value_at(i, 7);
	check(wafer_create(client, a, na * sizeof *a, &ha), "a");
	check(wafer_create(client, b, nb * sizeof *b, &hb), "b");
	check(wafer_empty(client, nc * sizeof *got, &hc), "c");
	struct wafer_matmul_params p = {
		.batch = c->batch, .m = c->m, .n = c->n, .k = c->k,
		.transpose_a = c->ta, .transpose_b = c->tb,
		.batch_stride_a = c->batch > 1 ? c->m * c->k : 0,
		.batch_stride_b = c->batch > 1 && !c->shared_b ? c->k * c->n : 0,
		.batch_stride_c = c->m * c->n,
	};
	wafer_buffer_binding bindings[3] = {{hc, 0, 0}, {ha, 0, 0}, {hb, 0, 0}};
	wafer_execute_args args = execute_args_f32(WAFER_KERNEL_MATMUL, bindings,
						   3, &p, sizeof p, c->n);
	args.variant = name;
	args.global[1] = c->m;
	args.global[2] = c->batch;
	*out_status = wafer_execute(client, &args);
	if (*out_status == WAFER_OK)
		*out_status = wafer_read(client, hc, 0, got, nc * sizeof *got);
	if (*out_status == WAFER_OK) {
		mm_reference(c, a, b, want);
		for (size_t i = 0; i < nc; i++)
			if (fabs(got[i] - want[i]) > worst)
				worst = fabs(got[i] - want[i]);
	}
	wafer_release(client, ha);
	wafer_release(client, hb);
	wafer_release(client, hc);
	free(a);
	free(b);
	free(got);
	free(want);
	return worst;
}

static void test_matmul_variants(void)
{
	const char *names[32];
	size_t n = variants(&list_matmul, names, 32);

	ok(n >= 6, "matmul has %zu variants", n);
	is_str(names[0], "default", "the plugin's default comes first");
	for (size_t v = 0; v < n; v++) {
		int bad = 0;
		for (size_t i = 0; i < sizeof mm_cases / sizeof mm_cases[0];
		     i++) {
			const struct mm_case *c = &mm_cases[i];
			wafer_status status;
			double err = mm_run(names[v], c, &status);
			if (status != WAFER_OK || err != 0) {
				diag("%s: batch %" PRIu64 " %" PRIu64
				     "x%" PRIu64 "x%" PRIu64
				     " ta %u tb %u shared_b %d: %s, error %g",
				     names[v], c->batch, c->m, c->n, c->k,
				     c->ta, c->tb, c->shared_b,
				     wafer_status_string(status), err);
				bad++;
			}
		}
		is_int(bad, 0, "matmul variant %s is exact on %zu shapes",
		       names[v], sizeof mm_cases / sizeof mm_cases[0]);
	}
}

/*===----------------------------------------------------------------------===
 * Reductions
 *===----------------------------------------------------------------------===*/

static void test_reduce_variants(const wafer_tunable *list, const char *kernel,
				 int is_max)
{
	static const uint64_t shapes[][2] = {
		{1, 1}, {3, 17}, {1, 100000}, {2, 70001}, {1000, 33}, {5, 32768},
	};
	const char *names[16];
	size_t n = variants(list, names, 16);

	ok(n >= 2, "%s has %zu variants (per row and split row)", kernel, n);
	for (size_t v = 0; v < n; v++) {
		int bad = 0;
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
			uint64_t rows = shapes[s][0], cols = shapes[s][1];
			size_t count = rows * cols;
			float *x = malloc(count * sizeof *x);
			float *got = malloc(rows * sizeof *got);
			for (size_t i = 0; i < count; i++)
				x[i] = value_at(i, 3) * 0.25f;
			if (is_max && rows > 1)
				x[cols + cols / 2] = NAN; /* row 1 */
			wafer_handle hx, ho;
			check(wafer_create(client, x, count * sizeof *x, &hx),
			      "x");
			check(wafer_empty(client, rows * sizeof *got, &ho),
			      "out");
			struct wafer_rows_params p = {rows, cols};
			wafer_buffer_binding b[2] = {{ho, 0, 0}, {hx, 0, 0}};
			wafer_execute_args args = execute_args_f32(
				kernel, b, 2, &p, sizeof p, rows);
			args.variant = names[v];
			wafer_status status = wafer_execute(client, &args);
			if (status == WAFER_OK)
				status = wafer_read(client, ho, 0, got,
						    rows * sizeof *got);
			for (uint64_t r = 0; status == WAFER_OK && r < rows;
			     r++) {
				double want = is_max ? -INFINITY : 0;
				for (uint64_t c = 0; c < cols; c++) {
					double e = x[r * cols + c];
					want = is_max ? (isnan(e) || isnan(want)
								 ? NAN
							 : e > want ? e
								    : want)
						      : want + e;
				}
				int same = isnan(want) ? isnan(got[r])
						       : got[r] == (float)want;
				if (!same) {
					diag("%s %s: %" PRIu64 "x%" PRIu64
					     " row %" PRIu64 ": %g, want %g",
					     kernel, names[v], rows, cols, r,
					     got[r], want);
					bad++;
					break;
				}
			}
			if (status != WAFER_OK) {
				diag("%s %s: %s: %s", kernel, names[v],
				     wafer_status_string(status),
				     wafer_last_error());
				bad++;
			}
			wafer_release(client, hx);
			wafer_release(client, ho);
			free(x);
			free(got);
		}
		is_int(bad, 0, "%s variant %s is exact, NaN included", kernel,
		       names[v]);
	}
}

/*===----------------------------------------------------------------------===
 * The ops layer through autotune
 *===----------------------------------------------------------------------===*/

static wafer_autotune_stats stats(wafer_runtime *rt)
{
	wafer_autotune_stats s = {.struct_size = sizeof s};

	check(wafer_autotune_stats_get(rt, &s), "stats");
	return s;
}

/* out = a x b for 96 x 80 x 72 through wafer_op_matmul, checked. */
static int op_matmul_right(wafer_client *c)
{
	const uint64_t sa[2] = {96, 72}, sb[2] = {72, 80};
	float *a = malloc(96 * 72 * sizeof *a), *b = malloc(72 * 80 * sizeof *b);
	wafer_tensor out;
	int right = 1;

	for (size_t i = 0; i < 96 * 72; i++)
		a[i] = value_at(i, 5);
	for (size_t i = 0; i < 72 * 80; i++)
		b[i] = value_at(i, 11);
	wafer_tensor ta = upload_f32(c, 2, sa, a), tb = upload_f32(c, 2, sb, b);
	check(wafer_op_matmul(c, &ta, WAFER_ALWAYS_COPY, &tb,
			      WAFER_ALWAYS_COPY, 0, &out),
	      "op_matmul");
	float *got = download_f32(c, &out);
	wafer_tensor_release(c, &ta);
	wafer_tensor_release(c, &tb);
	wafer_tensor_release(c, &out);
	for (size_t i = 0; i < 96 && right; i++)
		for (size_t j = 0; j < 80 && right; j++) {
			double s = 0;
			for (size_t p = 0; p < 72; p++)
				s += (double)a[i * 72 + p] * b[p * 80 + j];
			right = got[i * 80 + j] == (float)s;
		}
	free(a);
	free(b);
	free(got);
	return right;
}

static void test_ops_tuned(void)
{
	wafer_autotune_stats before = stats(runtime);

	ok(op_matmul_right(client), "wafer_op_matmul: right result, tuned");
	wafer_autotune_stats s = stats(runtime);
	ok(s.keys_tuned + s.disk_hits == before.keys_tuned + before.disk_hits + 1,
	   "the first matmul of a shape is tuned (or read from the cache)");
	ok(op_matmul_right(client), "again");
	is_int((long long)(stats(runtime).cache_hits - s.cache_hits), 1,
	       "the second is an in-memory hit");

	/* A reduction too. */
	const uint64_t shape[2] = {4, 50000};
	float *x = malloc(4 * 50000 * sizeof *x), got[4];
	for (size_t i = 0; i < 4 * 50000; i++)
		x[i] = value_at(i, 2);
	wafer_tensor tx, out;
	check(wafer_tensor_create(client, WAFER_DTYPE_F32, 2, shape, x, &tx),
	      "tx");
	s = stats(runtime);
	check(wafer_op_reduce(client, WAFER_REDUCE_SUM, &tx,
			      WAFER_ALWAYS_COPY, &out),
	      "reduce");
	check(wafer_tensor_read(client, &out, got, sizeof got), "read");
	double want = 0;
	for (size_t c = 0; c < 50000; c++)
		want += x[c];
	is_int((long long)got[0], (long long)want, "wafer_op_reduce sum");
	wafer_autotune_stats after = stats(runtime);
	ok(after.keys_tuned + after.disk_hits == s.keys_tuned + s.disk_hits + 1,
	   "reduce_sum went through autotune");
	wafer_tensor_release(client, &out);
	wafer_tensor_release(client, &tx);
	free(x);

	/* Mode off: the plugin's default, nothing measured. */
	const char *plugin_path = getenv("WAFER_PLUGIN_PATH");
	wafer_option options[] = {
		{"core", "backend", "cpu"},
		{"core", "plugin_path", plugin_path ? plugin_path : ""},
		{"autotune", "mode", "off"},
	};
	wafer_runtime *rt = open_runtime_with(options, 3, "runtime (off)");
	wafer_client *c;
	check(wafer_client_open(rt, "cpu", NULL, &c), "client (off)");
	ok(op_matmul_right(c), "mode off: wafer_op_matmul is right");
	s = stats(rt);
	is_int((long long)s.default_runs, 1, "mode off: the default ran");
	is_int((long long)s.benchmark_runs, 0, "mode off: nothing measured");
	wafer_client_close(c);
	wafer_runtime_close(rt);
}

int main(void)
{
	const char *plugin_path = getenv("WAFER_PLUGIN_PATH");
	wafer_option options[] = {
		{"core", "backend", "cpu"},
		{"core", "plugin_path", plugin_path ? plugin_path : ""},
	};

	runtime = open_runtime_with(options, 2, "runtime_open");
	check(wafer_client_open(runtime, "cpu", NULL, &client),
	      "client_open");
	test_matmul_variants();
	test_reduce_variants(&list_sum, WAFER_KERNEL_REDUCE_SUM, 0);
	test_reduce_variants(&list_max, WAFER_KERNEL_REDUCE_MAX, 1);
	test_ops_tuned();
	wafer_client_close(client);
	wafer_runtime_close(runtime);
	done_testing();
	return exit_status();
}
