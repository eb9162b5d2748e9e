/* wafer — SPDX-License-Identifier: MIT
 *
 * ops_dtypes.c: the operations of ops.h on the element types beyond f32
 * (float64, int32, int64, uint8) against a host reference, and cast between
 * every pair of wafer's element types.
 *
 * Backend-neutral. A backend is judged by what it offers: it computes in
 * a dtype when its table has an add of that dtype (as wafer-info and the
 * Python package judge it), and then every elementwise, reduction and
 * matmul kernel of that dtype must compute (the floating-only unary ones
 * on float64 only); a missing one fails. It keeps a dtype when it has a
 * copy of it, and then casts into it from every dtype it keeps. A dtype
 * it lacks is a skip naming it. Every test ends with no byte in use. */
#include "build-config.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/ops.h>
#include <wafer/plugin_util.h>
#include <wafer/wafer.h>

#include "t/catalogue.h"
#include "t/client_util.h"
#include "t/tap.h"

static wafer_runtime *runtime;
static wafer_client *client;
static const char *backend;

static const wafer_dtype typed[] = {WAFER_DTYPE_F64, WAFER_DTYPE_I32,
				    WAFER_DTYPE_I64, WAFER_DTYPE_U8};
#define N_TYPED (sizeof typed / sizeof typed[0])

static const char *dname(wafer_dtype d)
{
	return wafer_plugin_dtype_name(d);
}

static bool is_float(wafer_dtype d)
{
	return d == WAFER_DTYPE_F32 || d == WAFER_DTYPE_F64 ||
	       d == WAFER_DTYPE_F16 || d == WAFER_DTYPE_BF16;
}

static bool has(const char *kernel, wafer_dtype d)
{
	const wafer_kernel_ref *ref;

	return wafer_kernel_find(client, kernel, NULL, d, &ref) == WAFER_OK;
}

static bool keeps(wafer_dtype d)
{
	return has("copy", d);
}

static bool computes(wafer_dtype d)
{
	return has("add", d);
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Values every type holds exactly: small integers for the integer types,
 * numbers with fractions for float64. |positive|: in [1, 50). */
static double *random_values(wafer_dtype d, size_t n, bool positive)
{
	double *v = malloc(n * sizeof *v);

	for (size_t i = 0; i < n; i++) {
		int64_t k = (int64_t)(next_random() % 99) - 49;
		if (positive || d == WAFER_DTYPE_U8)
			k = (int64_t)(next_random() % 49) + !!positive;
		v[i] = is_float(d) ? (double)k + (double)(next_random() % 1024) /
							   1024.0
				   : (double)k;
	}
	return v;
}

/* Host doubles to a buffer of |d| (values exact in |d|) and back. */
static void *pack(wafer_dtype d, const double *v, size_t n)
{
	void *buf = malloc(n * 8 + 1);

	for (size_t i = 0; i < n; i++)
		switch (d) {
		case WAFER_DTYPE_F64: ((double *)buf)[i] = v[i]; break;
		case WAFER_DTYPE_F32: ((float *)buf)[i] = (float)v[i]; break;
		case WAFER_DTYPE_I32: ((int32_t *)buf)[i] = (int32_t)v[i]; break;
		case WAFER_DTYPE_I64: ((int64_t *)buf)[i] = (int64_t)v[i]; break;
		case WAFER_DTYPE_U8: ((uint8_t *)buf)[i] = (uint8_t)v[i]; break;
		default: abort();
		}
	return buf;
}

static double unpack(wafer_dtype d, const void *buf, size_t i)
{
	switch (d) {
	case WAFER_DTYPE_F64: return ((const double *)buf)[i];
	case WAFER_DTYPE_F32: return ((const float *)buf)[i];
	case WAFER_DTYPE_I32: return ((const int32_t *)buf)[i];
	case WAFER_DTYPE_I64: return (double)((const int64_t *)buf)[i];
	case WAFER_DTYPE_U8: return ((const uint8_t *)buf)[i];
	default: abort();
	}
}

static wafer_tensor upload(wafer_dtype d, const double *v, uint32_t rank,
			   const uint64_t *shape)
{
	wafer_tensor t;
	size_t n = 1;

	for (uint32_t i = 0; i < rank; i++)
		n *= shape[i];
	void *buf = pack(d, v, n);
	check(wafer_tensor_create(client, d, rank, shape, buf, &t), "upload");
	free(buf);
	return t;
}

/* The tensor's elements as doubles (freed by the caller). */
static double *download(const wafer_tensor *t)
{
	size_t n = (size_t)wafer_tensor_count(t);
	size_t es = wafer_dtype_size(t->dtype);
	void *buf = malloc(n * es + 1);
	double *v = malloc(n * sizeof *v + 1);

	check(wafer_tensor_read(client, t, buf, n * es), "download");
	for (size_t i = 0; i < n; i++)
		v[i] = unpack(t->dtype, buf, i);
	free(buf);
	return v;
}

/* Integers exactly; float64 within |rel| (and 1e-12 absolute). */
static int compare(const char *name, wafer_dtype d, const double *got,
		   const double *want, size_t n, double rel)
{
	for (size_t i = 0; i < n; i++) {
		bool same = got[i] == want[i] ||
			    (is_float(d) &&
			     (isnan(want[i]) ? isnan(got[i])
					     : fabs(got[i] - want[i]) <=
						       1e-12 + rel * fabs(want[i])));
		if (same)
			continue;
		ok(0, "%s", name);
		diag("element %zu: got %.17g, want %.17g", i, got[i], want[i]);
		return 0;
	}
	return ok(1, "%s", name);
}

/* One TAP line for a result; the operation's failure in a diag. */
static int ran(wafer_status status, const char *name)
{
	if (status == WAFER_OK)
		return 1;
	ok(0, "%s: %s", name, wafer_last_error());
	return 0;
}

/* uint8 wraps modulo 256; the other integer tests stay in range. */
static double wrap(wafer_dtype d, double x)
{
	if (d != WAFER_DTYPE_U8)
		return x;
	x = fmod(x, 256);
	return x < 0 ? x + 256 : x;
}

/* Integer division of plugin.h: truncates, x / 0 is 0. */
static double ref_binary_typed(wafer_dtype d, wafer_binary_op op, double a,
			       double b)
{
	if (op == WAFER_BINARY_DIV && !is_float(d))
		return b == 0 ? 0 : trunc(a / b);
	return wrap(d, ref_binary(op, a, b));
}

static double ref_unary_typed(wafer_dtype d, wafer_unary_op op, double x)
{
	if (d == WAFER_DTYPE_U8 && op == WAFER_UNARY_ABS)
		return x;
	return wrap(d, ref_unary(op, x));
}

/*===----------------------------------------------------------------------===
 * Elementwise
 *===----------------------------------------------------------------------===*/

static void test_binary(wafer_dtype d)
{
	/* [5, 7] op [5, 7] dense, and op [1, 7] broadcast (strided). */
	const uint64_t shape[2] = {5, 7}, row[2] = {1, 7};
	const size_t n = 35;
	double *a = random_values(d, n, false);
	double *b = random_values(d, n, false);
	double want[35];
	char name[96];

	b[3] = 0; /* integer x / 0 is 0; float64's is +-inf */
	wafer_tensor ta = upload(d, a, 2, shape), tb = upload(d, b, 2, shape);
	wafer_tensor tr = upload(d, b, 2, row);
	for (int op = 0; op < CATALOGUE_COUNT(catalogue_binary); op++) {
		wafer_tensor out;

		snprintf(name, sizeof name, "%s %s [5,7] x [5,7]",
			 catalogue_binary[op], dname(d));
		if (ran(wafer_op_binary(client, (wafer_binary_op)op, &ta,
					WAFER_ALWAYS_COPY, &tb,
					WAFER_ALWAYS_COPY, &out),
			name)) {
			double *got = download(&out);
			for (size_t i = 0; i < n; i++)
				want[i] = ref_binary_typed(
					d, (wafer_binary_op)op, a[i], b[i]);
			compare(name, d, got, want, n, 0);
			free(got);
			wafer_tensor_release(client, &out);
		}
		snprintf(name, sizeof name, "%s %s [5,7] x [1,7] (broadcast)",
			 catalogue_binary[op], dname(d));
		if (ran(wafer_op_binary(client, (wafer_binary_op)op, &ta,
					WAFER_ALWAYS_COPY, &tr,
					WAFER_ALWAYS_COPY, &out),
			name)) {
			double *got = download(&out);
			for (size_t i = 0; i < n; i++)
				want[i] = ref_binary_typed(
					d, (wafer_binary_op)op, a[i], b[i % 7]);
			compare(name, d, got, want, n, 0);
			free(got);
			wafer_tensor_release(client, &out);
		}
		snprintf(name, sizeof name, "%s_scalar %s, scalar first",
			 catalogue_binary[op], dname(d));
		if (ran(wafer_op_binary_scalar(client, (wafer_binary_op)op,
					       &tb, WAFER_ALWAYS_COPY, 3.0, 1,
					       &out),
			name)) {
			double *got = download(&out);
			for (size_t i = 0; i < n; i++)
				want[i] = ref_binary_typed(
					d, (wafer_binary_op)op, 3.0, b[i]);
			compare(name, d, got, want, n, 0);
			free(got);
			wafer_tensor_release(client, &out);
		}
	}
	wafer_tensor_release(client, &ta);
	wafer_tensor_release(client, &tb);
	wafer_tensor_release(client, &tr);
	free(a);
	free(b);
}

static void test_unary(wafer_dtype d)
{
	const uint64_t shape[1] = {1031};
	double *x = random_values(d, 1031, false);
	double *pos = random_values(d, 1031, true);
	double *want = malloc(1031 * sizeof *want);
	char name[96];

	wafer_tensor tx = upload(d, x, 1, shape), tp = upload(d, pos, 1, shape);
	for (int op = 0; op < CATALOGUE_COUNT(catalogue_unary); op++) {
		bool needs_float = catalogue_unary_float_only[op];
		bool positive = op == WAFER_UNARY_LOG || op == WAFER_UNARY_SQRT;
		const double *in = positive ? pos : x;
		wafer_tensor out;

		if (needs_float && !is_float(d))
			continue;
		snprintf(name, sizeof name, "%s %s of 1031", catalogue_unary[op],
			 dname(d));
		if (!ran(wafer_op_unary(client, (wafer_unary_op)op,
					positive ? &tp : &tx,
					WAFER_ALWAYS_COPY, &out),
			 name))
			continue;
		double *got = download(&out);
		for (size_t i = 0; i < 1031; i++)
			want[i] = ref_unary_typed(d, (wafer_unary_op)op,
						  in[i]);
		compare(name, d, got, want, 1031, 1e-13);
		free(got);
		wafer_tensor_release(client, &out);
	}
	wafer_tensor_release(client, &tx);
	wafer_tensor_release(client, &tp);
	free(x);
	free(pos);
	free(want);
}

static void test_fill_copy(wafer_dtype d)
{
	const uint64_t shape[2] = {3, 4};
	double v[12], want[12];
	wafer_tensor t, tt, out;
	char name[96];

	snprintf(name, sizeof name, "fill %s with -7", dname(d));
	if (ran(wafer_op_fill(client, d, 2, shape, -7.0, &t), name)) {
		double *got = download(&t);
		for (int i = 0; i < 12; i++)
			want[i] = d == WAFER_DTYPE_U8 ? 0 : -7.0; /* saturates */
		compare(name, d, got, want, 12, 0);
		free(got);
		wafer_tensor_release(client, &t);
	}
	for (int i = 0; i < 12; i++)
		v[i] = i * 3 + 5;
	t = upload(d, v, 2, shape);
	snprintf(name, sizeof name, "copy of a dense %s tensor", dname(d));
	if (ran(wafer_op_copy(client, &t, WAFER_ALWAYS_COPY, &out), name)) {
		double *got = download(&out);
		compare(name, d, got, v, 12, 0);
		free(got);
		wafer_tensor_release(client, &out);
	}
	check(wafer_tensor_transpose(&t, 0, 1, &tt), "transpose");
	snprintf(name, sizeof name, "copy of a transposed %s view", dname(d));
	if (ran(wafer_op_copy(client, &tt, WAFER_ALWAYS_COPY, &out), name)) {
		double *got = download(&out);
		for (int r = 0; r < 4; r++)
			for (int c = 0; c < 3; c++)
				want[r * 3 + c] = v[c * 4 + r];
		compare(name, d, got, want, 12, 0);
		free(got);
		wafer_tensor_release(client, &out);
	}
	wafer_tensor_release(client, &t);
}

/*===----------------------------------------------------------------------===
 * Reductions, softmax, matmul
 *===----------------------------------------------------------------------===*/

static void test_reduce(wafer_dtype d)
{
	const uint64_t shape[2] = {9, 301};
	double *x = random_values(d, 9 * 301, false);
	double want[9];
	char name[96];
	wafer_tensor t = upload(d, x, 2, shape);

	for (int k = 0; k < CATALOGUE_COUNT(catalogue_reduce); k++) {
		wafer_tensor out;

		snprintf(name, sizeof name, "%s %s [9,301]",
			 catalogue_reduce[k], dname(d));
		if (!ran(wafer_op_reduce(client, (wafer_reduce_op)k, &t,
					 WAFER_ALWAYS_COPY, &out),
			 name))
			continue;
		for (int r = 0; r < 9; r++) {
			double s = 0, m = x[r * 301];
			for (int c = 0; c < 301; c++) {
				s += x[r * 301 + c];
				m = fmax(m, x[r * 301 + c]);
			}
			s = wrap(d, s);
			want[r] = k == 0 ? s : k == 1 ? m
					: is_float(d) ? s / 301 : trunc(s / 301);
		}
		double *got = download(&out);
		compare(name, d, got, want, 9, 1e-13);
		free(got);
		wafer_tensor_release(client, &out);
	}
	if (is_float(d)) {
		wafer_tensor out;
		double *want_s = malloc(9 * 301 * sizeof *want_s);

		snprintf(name, sizeof name, "softmax %s [9,301]", dname(d));
		if (ran(wafer_op_softmax(client, &t, WAFER_ALWAYS_COPY, &out),
			name)) {
			for (int r = 0; r < 9; r++) {
				double m = -INFINITY, s = 0;
				for (int c = 0; c < 301; c++)
					m = fmax(m, x[r * 301 + c]);
				for (int c = 0; c < 301; c++)
					s += exp(x[r * 301 + c] - m);
				for (int c = 0; c < 301; c++)
					want_s[r * 301 + c] =
						exp(x[r * 301 + c] - m) / s;
			}
			double *got = download(&out);
			compare(name, d, got, want_s, 9 * 301, 1e-12);
			free(got);
			wafer_tensor_release(client, &out);
		}
		free(want_s);
	}
	wafer_tensor_release(client, &t);
	free(x);
}

static void test_matmul(wafer_dtype d)
{
	/* batch 2: [2, 5, 9] x [9, 6] (a shared b), with each transpose. */
	const uint64_t m = 5, k = 9, n = 6;
	char name[96];

	for (uint32_t flags = 0; flags < 4; flags++) {
		bool ta = flags & WAFER_MATMUL_TRANSPOSE_A;
		bool tb = flags & WAFER_MATMUL_TRANSPOSE_B;
		const uint64_t sa[3] = {2, ta ? k : m, ta ? m : k};
		const uint64_t sb[2] = {tb ? n : k, tb ? k : n};
		double *a = random_values(d, 2 * m * k, false);
		double *b = random_values(d, k * n, false);
		double want[2 * 5 * 6];
		wafer_tensor xa = upload(d, a, 3, sa), xb = upload(d, b, 2, sb);
		wafer_tensor out;

		snprintf(name, sizeof name,
			 "matmul %s [2,5,9] x [9,6]%s%s", dname(d),
			 ta ? ", a transposed" : "", tb ? ", b transposed" : "");
		if (ran(wafer_op_matmul(client, &xa, WAFER_ALWAYS_COPY, &xb,
					WAFER_ALWAYS_COPY, flags, &out),
			name)) {
			for (uint64_t t = 0; t < 2; t++)
				for (uint64_t i = 0; i < m; i++)
					for (uint64_t j = 0; j < n; j++) {
						double s = 0;
						for (uint64_t l = 0; l < k; l++)
							s += a[t * m * k +
							       (ta ? l * m + i
								   : i * k + l)] *
							     b[tb ? j * k + l
								  : l * n + j];
						want[(t * m + i) * n + j] =
							wrap(d, s);
					}
			double *got = download(&out);
			compare(name, d, got, want, 2 * m * n, 1e-13);
			free(got);
			wafer_tensor_release(client, &out);
		}
		wafer_tensor_release(client, &xa);
		wafer_tensor_release(client, &xb);
		free(a);
		free(b);
	}
}

/*===----------------------------------------------------------------------===
 * Cast between every pair
 *===----------------------------------------------------------------------===*/

static const wafer_dtype all[] = {WAFER_DTYPE_F32, WAFER_DTYPE_F16,
				  WAFER_DTYPE_BF16, WAFER_DTYPE_I32,
				  WAFER_DTYPE_U8, WAFER_DTYPE_F64,
				  WAFER_DTYPE_I64};
#define N_ALL (sizeof all / sizeof all[0])

/* Values exact in every type (small non-negative integers and halves for
 * the floating ones), so that each cast is exact and the reference is
 * the value itself; plus, from floating types, 2.75 and -3.5 which the
 * integer targets truncate (u8 saturates -3 at 0). */
static void test_cast(void)
{
	const double base[] = {0, 1, 2, 7, 100, 255, 3, 64};
	const double frac[] = {2.75, -3.5};
	const size_t n = 10;

	for (size_t i = 0; i < N_ALL; i++)
		for (size_t j = 0; j < N_ALL; j++) {
			wafer_dtype from = all[i], to = all[j];
			double v[10], want[10];
			uint16_t half[10];
			char name[96];
			wafer_tensor t, out;
			size_t count = is_float(from) ? n : 8;

			snprintf(name, sizeof name, "cast %s to %s",
				 dname(from), dname(to));
			if (!keeps(from) || !keeps(to)) {
				ok(1, "%s # SKIP %s does not keep %s", name,
				   backend, keeps(from) ? dname(to)
							: dname(from));
				continue;
			}
			for (size_t e = 0; e < count; e++) {
				v[e] = e < 8 ? base[e] : frac[e - 8];
				want[e] = is_float(to) ? v[e]
					  : to == WAFER_DTYPE_U8 && v[e] < 0
						  ? 0
						  : trunc(v[e]);
			}
			const uint64_t shape[1] = {count};
			if (from == WAFER_DTYPE_F16 ||
			    from == WAFER_DTYPE_BF16) {
				/* Exact halves: build the bits from f32. */
				for (size_t e = 0; e < count; e++) {
					float f = (float)v[e];
					uint32_t u;
					memcpy(&u, &f, sizeof u);
					half[e] = from == WAFER_DTYPE_BF16
							  ? (uint16_t)(u >> 16)
							  : 0;
				}
				if (from == WAFER_DTYPE_F16) {
					wafer_tensor t32 = upload(
						WAFER_DTYPE_F32, v, 1, shape);
					check(wafer_op_cast(client, &t32,
							    WAFER_DONATE_INPUT,
							    from, &t),
					      "f32 to f16 for the source");
				} else {
					check(wafer_tensor_create(
						      client, from, 1, shape,
						      half, &t),
					      "upload");
				}
			} else {
				t = upload(from, v, 1, shape);
			}
			if (!ran(wafer_op_cast(client, &t, WAFER_ALWAYS_COPY,
					       to, &out),
				 name)) {
				wafer_tensor_release(client, &t);
				continue;
			}
			if (out.dtype == WAFER_DTYPE_F16 ||
			    out.dtype == WAFER_DTYPE_BF16) {
				/* Back to f32 on the device, checked there. */
				wafer_tensor back;
				check(wafer_op_cast(client, &out,
						    WAFER_DONATE_INPUT,
						    WAFER_DTYPE_F32, &back),
				      "back to f32");
				out = back;
			}
			double *got = download(&out);
			compare(name, to, got, want, count, 0);
			free(got);
			wafer_tensor_release(client, &out);
			wafer_tensor_release(client, &t);
		}
}

/* Rounding and saturation at the edges of the new types. */
static void test_cast_edges(void)
{
	const uint64_t four[1] = {4};
	wafer_tensor t, out;

	if (!keeps(WAFER_DTYPE_F64) || !keeps(WAFER_DTYPE_I64)) {
		ok(1, "cast edges # SKIP %s does not keep float64 and int64", backend);
		return;
	}
	/* f64 to i32 and i64 saturate; NaN gives 0. */
	const double big[4] = {1e300, -1e300, NAN, -2.9};
	t = upload(WAFER_DTYPE_F64, big, 1, four);
	if (ran(wafer_op_cast(client, &t, WAFER_ALWAYS_COPY, WAFER_DTYPE_I64,
			      &out),
		"cast float64 to int64 saturates")) {
		int64_t got[4];
		check(wafer_tensor_read(client, &out, got, sizeof got), "read");
		ok(got[0] == INT64_MAX && got[1] == INT64_MIN && got[2] == 0 &&
			   got[3] == -2,
		   "cast float64 to int64: 1e300, -1e300, NaN, -2.9 give "
		   "INT64_MAX, INT64_MIN, 0, -2");
		wafer_tensor_release(client, &out);
	}
	wafer_tensor_release(client, &t);
	/* i64 to f32 rounds once, to nearest even: 2^24 + 1 is a tie. */
	const int64_t wide[4] = {(1 << 24) + 1, (1 << 24) + 3, INT64_MAX,
				 -((int64_t)1 << 40) - 1};
	check(wafer_tensor_create(client, WAFER_DTYPE_I64, 1, four, wide, &t),
	      "upload");
	if (ran(wafer_op_cast(client, &t, WAFER_ALWAYS_COPY, WAFER_DTYPE_F32,
			      &out),
		"cast int64 to float32")) {
		float got[4];
		check(wafer_tensor_read(client, &out, got, sizeof got), "read");
		ok(got[0] == 16777216.0f && got[1] == 16777220.0f &&
			   got[2] == 9223372036854775808.0f &&
			   got[3] == -1099511627776.0f,
		   "cast int64 to float32 rounds to nearest even");
		wafer_tensor_release(client, &out);
	}
	wafer_tensor_release(client, &t);
	/* f64 to f16 rounds once: 1 + 2^-11 + 2^-40 is just above the tie
	 * between 1 and 1 + 2^-10, so it rounds up (through f32 by plain
	 * rounding it would land on the tie and go to 1). */
	const double tie[4] = {1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-11, 65520.0,
			       -0.0};
	t = upload(WAFER_DTYPE_F64, tie, 1, four);
	if (ran(wafer_op_cast(client, &t, WAFER_ALWAYS_COPY, WAFER_DTYPE_F16,
			      &out),
		"cast float64 to float16")) {
		uint16_t got[4];
		check(wafer_tensor_read(client, &out, got, sizeof got), "read");
		ok(got[0] == 0x3c01 && got[1] == 0x3c00 && got[2] == 0x7c00 &&
			   got[3] == 0x8000,
		   "cast float64 to float16 rounds once (got %04x %04x %04x "
		   "%04x)",
		   got[0], got[1], got[2], got[3]);
		wafer_tensor_release(client, &out);
	}
	wafer_tensor_release(client, &t);
}

/*===----------------------------------------------------------------------===
 * Errors name dtypes
 *===----------------------------------------------------------------------===*/

static void test_mixed(void)
{
	const uint64_t shape[1] = {3};
	const double v[3] = {1, 2, 3};
	wafer_tensor a = upload(WAFER_DTYPE_F32, v, 1, shape), b, out;

	if (!keeps(WAFER_DTYPE_I32)) {
		ok(1, "mixed dtypes # SKIP %s does not keep int32", backend);
		wafer_tensor_release(client, &a);
		return;
	}
	b = upload(WAFER_DTYPE_I32, v, 1, shape);
	is_int(wafer_op_binary(client, WAFER_BINARY_ADD, &a, WAFER_ALWAYS_COPY,
			       &b, WAFER_ALWAYS_COPY, &out),
	       WAFER_ERROR_INVALID_ARGUMENT, "add float32 + int32 is refused");
	like(wafer_last_error(), "float32 and int32",
	     "and the error names both dtypes");
	is_int(wafer_op_matmul(client, &a, WAFER_ALWAYS_COPY, &b,
			       WAFER_ALWAYS_COPY, 0, &out),
	       WAFER_ERROR_INVALID_ARGUMENT,
	       "matmul float32 x int32 is refused");
	wafer_tensor_release(client, &a);
	wafer_tensor_release(client, &b);
}

int main(void)
{
	backend = open_default(NULL, &runtime, &client);

	for (size_t i = 0; i < N_TYPED; i++) {
		wafer_dtype d = typed[i];

		if (!computes(d)) {
			ok(1, "%s # SKIP %s does not compute in %s (no add of "
			      "it)",
			   dname(d), backend, dname(d));
			continue;
		}
		test_fill_copy(d);
		test_binary(d);
		test_unary(d);
		test_reduce(d);
		test_matmul(d);
	}
	test_cast();
	test_cast_edges();
	test_mixed();
	ok_clean(client, "every tensor released");

	close_default(runtime, client);
	done_testing();
	return exit_status();
}
