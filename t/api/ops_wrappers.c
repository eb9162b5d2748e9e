/* wafer — SPDX-License-Identifier: MIT
 *
 * ops_wrappers.c: the static inline wrappers at the end of ops.h, one
 * name per operation (wafer_op_exp, wafer_op_max_scalar,
 * wafer_op_scalar_div, wafer_op_reduce_mean, ...). Each is called by its
 * own name and its result compared with a host reference of the
 * operation the name promises, on inputs where the operations differ from
 * each other (so a wrapper that passes the wrong operation, or the scalar
 * on the wrong side, fails). t/api/ops checks the operations themselves in
 * depth through wafer_op_unary and friends.
 *
 * Backend-neutral: it opens "default" (WAFER_BACKEND picks another); an
 * operation whose kernel the backend lacks is a skip naming the backend. */
#include "build-config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/ops.h>
#include <wafer/wafer.h>

#include "t/client_util.h"
#include "t/tap.h"

static wafer_client *client;

enum { ROWS = 3, COLS = 5, N = ROWS * COLS };
static const uint64_t shape[2] = {ROWS, COLS};

/* Mixed signs, magnitudes on both sides of 1, no zero (for div). */
static const float xs[N] = {-2.5f,  -1.25f, -0.5f, 0.25f, 0.75f,
			    1.5f,   3.0f,   -3.5f, 2.25f, -0.125f,
			    0.625f, -1.75f, 4.0f,  -0.875f, 1.125f};
static const float ys[N] = {1.5f,  -2.0f, 0.5f,  -0.25f, 3.0f,
			    -1.5f, 2.5f,  -0.75f, 1.0f, 0.375f,
			    -3.0f, 0.875f, -1.25f, 2.0f, -0.5f};
/* Positive, for log and sqrt. */
static const float ps[N] = {0.125f, 0.5f, 1.0f, 2.0f, 3.5f,
			    0.75f,  9.0f, 4.0f, 0.25f, 1.5f,
			    7.0f,   0.3f, 2.5f, 6.0f, 11.0f};
static const double scalar = 0.75;

static wafer_tensor upload(const float *data)
{
	return upload_f32(client, 2, shape, data);
}

/* Judges one wrapper's result: the status (a skip when the backend lacks
 * the kernel), the output's shape, and |count| values against |want|
 * within f32 rounding of the library functions. Releases the output. */
static void judge(const char *name, wafer_status status, wafer_tensor *out,
		  uint64_t rows, uint64_t cols, const double *want,
		  size_t count)
{
	if (status == WAFER_ERROR_NOT_SUPPORTED) {
		ok(1, "%s # SKIP %s", name, wafer_last_error());
		return;
	}
	if (!is_status(status, WAFER_OK, "%s", name))
		return;
	float got[N];
	int right = out->rank == 2 && out->shape[0] == rows &&
		    out->shape[1] == cols &&
		    wafer_tensor_read(client, out, got, count * sizeof *got) ==
			    WAFER_OK;
	size_t bad = count;
	for (size_t i = 0; right && i < count; i++)
		if (!(fabs(got[i] - want[i]) <= 1e-6 + 4e-6 * fabs(want[i]))) {
			bad = i;
			right = 0;
		}
	ok(right, "  ... [%d, %d] of the values the host computes",
	   (int)rows, (int)cols);
	if (bad < count)
		diag("element %zu: got %.9g, want %.9g", bad, got[bad],
		     want[bad]);
	check(wafer_tensor_release(client, out), "release");
}

/*===----------------------------------------------------------------------===
 * Unary: wafer_op_neg ... wafer_op_tanh
 *===----------------------------------------------------------------------===*/

/* A wrapper of one input and one output: a unary operation or a
 * reduction. */
typedef wafer_status (*unary_fn)(wafer_client *, const wafer_tensor *,
				 wafer_copy_semantics, wafer_tensor *);

static void test_unary(void)
{
	static const struct {
		wafer_unary_op op;
		const char *name;
		unary_fn fn;
	} cases[] = {
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference)                   \
	{WAFER_UNARY_##NAME, "wafer_op_" #name, wafer_op_##name},
#include <wafer/catalogue.def>
	};
	wafer_tensor x = upload(xs), p = upload(ps);

	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		/* log and sqrt on positive inputs, the rest on mixed signs. */
		int positive = cases[c].op == WAFER_UNARY_LOG ||
			       cases[c].op == WAFER_UNARY_SQRT;
		const float *in = positive ? ps : xs;
		double want[N];
		for (size_t i = 0; i < N; i++)
			want[i] = ref_unary(cases[c].op, in[i]);
		wafer_tensor out;
		wafer_status status = cases[c].fn(client, positive ? &p : &x,
						  WAFER_ALWAYS_COPY, &out);
		judge(cases[c].name, status, &out, ROWS, COLS, want, N);
	}
	check(wafer_tensor_release(client, &x), "release");
	check(wafer_tensor_release(client, &p), "release");
}

/*===----------------------------------------------------------------------===
 * Binary: wafer_op_add ... wafer_op_min, their _scalar forms, and
 * wafer_op_scalar_sub / wafer_op_scalar_div
 *===----------------------------------------------------------------------===*/

typedef wafer_status (*binary_fn)(wafer_client *, const wafer_tensor *,
				  wafer_copy_semantics, const wafer_tensor *,
				  wafer_copy_semantics, wafer_tensor *);
typedef wafer_status (*scalar_fn)(wafer_client *, const wafer_tensor *,
				  wafer_copy_semantics, double,
				  wafer_tensor *);

static void test_binary(void)
{
	static const struct {
		wafer_binary_op op;
		const char *name;
		binary_fn fn;
		scalar_fn scalar_fn;
	} cases[] = {
#define WAFER_CATALOGUE_BINARY(name, NAME, reference)                          \
	{WAFER_BINARY_##NAME, #name, wafer_op_##name, wafer_op_##name##_scalar},
#include <wafer/catalogue.def>
	};
	wafer_tensor a = upload(xs), b = upload(ys), out;
	double want[N];
	char name[64];

	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		for (size_t i = 0; i < N; i++)
			want[i] = (float)ref_binary(cases[c].op, xs[i], ys[i]);
		snprintf(name, sizeof name, "wafer_op_%s", cases[c].name);
		judge(name,
		      cases[c].fn(client, &a, WAFER_ALWAYS_COPY, &b,
				  WAFER_ALWAYS_COPY, &out),
		      &out, ROWS, COLS, want, N);

		/* op(a, scalar): the scalar second. */
		for (size_t i = 0; i < N; i++)
			want[i] = (float)ref_binary(cases[c].op, xs[i],
						    (float)scalar);
		snprintf(name, sizeof name, "wafer_op_%s_scalar(a, %g)",
			 cases[c].name, scalar);
		judge(name,
		      cases[c].scalar_fn(client, &a, WAFER_ALWAYS_COPY, scalar,
					 &out),
		      &out, ROWS, COLS, want, N);
	}

	/* scalar - a and scalar / a: the scalar first. */
	for (size_t i = 0; i < N; i++)
		want[i] = (float)(scalar - xs[i]);
	snprintf(name, sizeof name, "wafer_op_scalar_sub(%g, a)", scalar);
	judge(name, wafer_op_scalar_sub(client, scalar, &a, WAFER_ALWAYS_COPY,
					&out),
	      &out, ROWS, COLS, want, N);
	for (size_t i = 0; i < N; i++)
		want[i] = (float)(scalar / xs[i]);
	snprintf(name, sizeof name, "wafer_op_scalar_div(%g, a)", scalar);
	judge(name, wafer_op_scalar_div(client, scalar, &a, WAFER_ALWAYS_COPY,
					&out),
	      &out, ROWS, COLS, want, N);

	/* The inputs were only read (ALWAYS_COPY). */
	float back[N];
	check(wafer_tensor_read(client, &a, back, sizeof back), "read a");
	ok(!memcmp(back, xs, sizeof xs), "the input a is unchanged");
	check(wafer_tensor_read(client, &b, back, sizeof back), "read b");
	ok(!memcmp(back, ys, sizeof ys), "the input b is unchanged");
	check(wafer_tensor_release(client, &a), "release");
	check(wafer_tensor_release(client, &b), "release");
}

/*===----------------------------------------------------------------------===
 * Reductions: wafer_op_reduce_sum, _max, _mean
 *===----------------------------------------------------------------------===*/

static void test_reduce(void)
{
	static const struct {
		wafer_reduce_op op;
		const char *name;
		unary_fn fn;
	} cases[] = {
#define REDUCE_CASE_REDUCE(name, NAME)                                         \
	{WAFER_##NAME, "wafer_op_" #name, wafer_op_##name},
#define REDUCE_CASE_FULL(name, NAME)
#define WAFER_CATALOGUE_ROWS(name, NAME, dtypes, output)                       \
	REDUCE_CASE_##output(name, NAME)
#include <wafer/catalogue.def>
	};
	wafer_tensor x = upload(xs), out;

	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		double want[ROWS];
		for (size_t r = 0; r < ROWS; r++) {
			double sum = 0, max = -INFINITY;
			for (size_t k = 0; k < COLS; k++) {
				double v = xs[r * COLS + k];
				sum += v;
				max = v > max ? v : max;
			}
			want[r] = cases[c].op == WAFER_REDUCE_SUM   ? sum
				  : cases[c].op == WAFER_REDUCE_MAX ? max
								    : sum / COLS;
		}
		/* Over the last dimension, kept with size 1: [3, 1]. */
		judge(cases[c].name,
		      cases[c].fn(client, &x, WAFER_ALWAYS_COPY, &out), &out,
		      ROWS, 1, want, ROWS);
	}
	check(wafer_tensor_release(client, &x), "release");
}

int main(void)
{
	wafer_runtime *runtime;

	open_default(NULL, &runtime, &client);

	test_unary();
	test_binary();
	test_reduce();

	ok_clean(client, "at the end");
	close_default(runtime, client);
	done_testing();
	return exit_status();
}
