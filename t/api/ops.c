/* wafer — SPDX-License-Identifier: MIT
 *
 * ops.c: every operation of ops.h against a straightforward host
 * reference on random inputs — odd sizes (1, 7, 1023, sizes that are no
 * multiple of any vector width, sizes large enough to be split over
 * threads), broadcasting, strided, sliced and transposed views, transpose
 * flags and batch strides — and the errors operations report. Every test
 * ends with no live handle and no byte in use.
 *
 * Backend-neutral: it opens "default" (WAFER_BACKEND picks another). An
 * operation whose kernel the backend lacks is reported as a skip naming
 * the backend, so the file doubles as a conformance check for a plugin's
 * catalogue. */
#include "build-config.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/ops.h>
#include <wafer/wafer.h>

#include "t/catalogue.h"
#include "t/client_util.h"
#include "t/half.h"
#include "t/tap.h"

static wafer_runtime *runtime;
static wafer_client *client;

/*===----------------------------------------------------------------------===
 * Helpers
 *===----------------------------------------------------------------------===*/

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Uniform in [lo, hi). */
static float uniform(float lo, float hi)
{
	return lo + (hi - lo) * (float)(next_random() >> 40) / 16777216.0f;
}

static float *random_floats(size_t n, float lo, float hi)
{
	float *v = malloc(n * sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = uniform(lo, hi);
	return v;
}

static wafer_tensor upload(const float *data, uint32_t rank,
			   const uint64_t *shape)
{
	return upload_f32(client, rank, shape, data);
}

static float *download(const wafer_tensor *t)
{
	return download_f32(client, t);
}

/* IEEE half to float, for checking f16 results on the host. */
static float half_to_float(uint16_t h)
{
	int exponent = (h >> 10) & 0x1f;
	float mantissa = (float)(h & 0x3ff);
	float v = exponent == 0    ? ldexpf(mantissa, -24)
		  : exponent == 31 ? INFINITY
				   : ldexpf(mantissa + 1024.0f, exponent - 25);
	return (h & 0x8000) ? -v : v;
}

/* The backend under test, and how many results it could not give for a
 * missing kernel. */
static const char *backend;
static int missing_kernels;

/* Reports a result as skipped when the backend lacks the kernel, and as
 * failed when the backend ships the whole catalogue (catalogue.h). */
static int unsupported(wafer_status status, const char *name)
{
	if (status != WAFER_ERROR_NOT_SUPPORTED)
		return 0;
	missing_kernels++;
	if (backend_has_full_catalogue(backend))
		ok(0, "%s: %s ships the whole catalogue, yet: %s", name,
		   backend, wafer_last_error());
	else
		ok(1, "%s # SKIP %s", name, wafer_last_error());
	return 1;
}

static int close_enough(double got, double want, double rel, double abs_tol)
{
	if (isnan(want))
		return isnan(got);
	if (isinf(want))
		return got == want;
	return fabs(got - want) <= abs_tol + rel * fabs(want);
}

/* Compares n results; one TAP line; the first mismatch in a diag. */
static int compare(const char *name, const float *got, const double *want,
		   size_t n, double rel, double abs_tol)
{
	for (size_t i = 0; i < n; i++) {
		if (close_enough(got[i], want[i], rel, abs_tol))
			continue;
		ok(0, "%s", name);
		diag("element %zu: got %.9g, want %.9g", i, got[i], want[i]);
		return 0;
	}
	return ok(1, "%s", name);
}

static void shape_name(char *buf, size_t size, uint32_t rank,
		       const uint64_t *shape)
{
	size_t used = (size_t)snprintf(buf, size, "[");
	for (uint32_t d = 0; d < rank; d++)
		used += (size_t)snprintf(buf + used, size - used, "%s%" PRIu64,
					 d ? "," : "", shape[d]);
	snprintf(buf + used, size - used, "]");
}

/*===----------------------------------------------------------------------===
 * Unary
 *===----------------------------------------------------------------------===*/

static void test_unary(void)
{
	static const uint64_t sizes[] = {1, 7, 16, 17, 1023, 70001};

	for (int op = 0; op < CATALOGUE_COUNT(catalogue_unary); op++) {
		bool positive = op == WAFER_UNARY_LOG || op == WAFER_UNARY_SQRT;
		float lo = positive ? 1e-6f : -20.0f, hi = 20.0f;
		if (op == WAFER_UNARY_EXP)
			lo = -90.0f, hi = 88.0f;
		for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
			uint64_t n = sizes[s];
			float *x = random_floats(n, lo, hi);
			double *want = malloc(n * sizeof *want);
			wafer_tensor tx = upload(x, 1, &n), ty;
			char name[96];
			snprintf(name, sizeof name, "%s on %" PRIu64 " elements",
				 catalogue_unary[op], n);
			wafer_status status = wafer_op_unary(
				client, op, &tx, WAFER_ALWAYS_COPY, &ty);
			if (!unsupported(status, name)) {
				check(status, name);
				float *y = download(&ty);
				for (uint64_t i = 0; i < n; i++)
					want[i] = ref_unary(op, x[i]);
				compare(name, y, want, n, 2e-6, 1e-7);
				free(y);
				wafer_tensor_release(client, &ty);
			}
			wafer_tensor_release(client, &tx);
			free(x);
			free(want);
		}
	}
	ok_clean(client, "unary");
}

/* Edge values: zeros, infinities, NaN, subnormals, the extremes of exp. */
static void test_unary_special(void)
{
	static const float xs[] = {
		0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN,
		1e-40f, FLT_MIN, FLT_MAX, -FLT_MAX, 88.7f, 89.0f, -87.3f,
		-103.0f, -104.0f, -200.0f, 0.0625f, -0.0625f, 0.06f, 1e-8f,
		1.4142135f, 0.70710677f, 2.0f, 0.5f, 1e30f, -1e-30f,
	};
	uint64_t n = sizeof xs / sizeof xs[0];

	for (int op = 0; op < CATALOGUE_COUNT(catalogue_unary); op++) {
		wafer_tensor tx = upload(xs, 1, &n), ty;
		char name[96];
		snprintf(name, sizeof name, "%s on special values",
			 catalogue_unary[op]);
		wafer_status status =
			wafer_op_unary(client, op, &tx, WAFER_ALWAYS_COPY, &ty);
		if (!unsupported(status, name)) {
			check(status, name);
			float *y = download(&ty);
			double want[sizeof xs / sizeof xs[0]];
			for (uint64_t i = 0; i < n; i++) {
				/* What an f32 result can be: the double
				 * rounded to f32 (overflow to inf,
				 * underflow to 0 or a subnormal). */
				want[i] = (float)ref_unary(op, xs[i]);
			}
			/* A plugin built before ABI 1.6 may give relu(NaN)
			 * as 0 (RELU_NAN_SINCE_MINOR). */
			for (uint64_t i = 0; i < n; i++)
				if (op == WAFER_UNARY_RELU && isnan(xs[i]) &&
				    y[i] == 0.0f &&
				    plugin_abi_minor(runtime, backend) <
					    RELU_NAN_SINCE_MINOR)
					want[i] = 0.0;
			compare(name, y, want, n, 4e-6, 1e-44);
			free(y);
			wafer_tensor_release(client, &ty);
		}
		wafer_tensor_release(client, &tx);
	}
	ok_clean(client, "unary special values");
}

/* A strided input goes through copy_strided, then in place. */
static void test_unary_views(void)
{
	uint64_t shape[2] = {33, 70};
	float *x = random_floats(33 * 70, -5, 5);
	wafer_tensor tx = upload(x, 2, shape), tt, sl, ty;

	check(wafer_tensor_transpose(&tx, 0, 1, &tt), "transpose");
	wafer_status status =
		wafer_op_unary(client, WAFER_UNARY_TANH, &tt, WAFER_ALWAYS_COPY,
			       &ty);
	if (!unsupported(status, "tanh of a transposed view")) {
		check(status, "tanh transposed");
		ok(ty.rank == 2 && ty.shape[0] == 70 && ty.shape[1] == 33 &&
			   !ty.strided,
		   "the output is dense [70, 33]");
		float *y = download(&ty);
		double *want = malloc(70 * 33 * sizeof *want);
		for (size_t i = 0; i < 70; i++)
			for (size_t j = 0; j < 33; j++)
				want[i * 33 + j] = tanh(x[j * 70 + i]);
		compare("tanh of a transposed view", y, want, 70 * 33, 2e-6,
			1e-7);
		free(y);
		free(want);
		wafer_tensor_release(client, &ty);
	}

	/* Columns 5..11 of rows 3..30: an offset and a row stride. */
	wafer_tensor rows;
	check(wafer_tensor_slice(&tx, 0, 3, 28, &rows), "slice rows");
	check(wafer_tensor_slice(&rows, 1, 5, 7, &sl), "slice columns");
	status = wafer_op_unary(client, WAFER_UNARY_NEG, &sl,
				WAFER_ALWAYS_COPY, &ty);
	if (!unsupported(status, "neg of a slice")) {
		check(status, "neg slice");
		float *y = download(&ty);
		double want[28 * 7];
		for (size_t i = 0; i < 28; i++)
			for (size_t j = 0; j < 7; j++)
				want[i * 7 + j] = -x[(i + 3) * 70 + j + 5];
		compare("neg of a slice [3:31, 5:12]", y, want, 28 * 7, 0, 0);
		free(y);
		wafer_tensor_release(client, &ty);

		/* Reading a view gathers it: the same elements. */
		float back[28 * 7];
		check(wafer_tensor_read(client, &sl, back, sizeof back),
		      "read slice");
		for (size_t i = 0; i < 28 * 7; i++)
			want[i] = -want[i];
		compare("wafer_tensor_read of a slice", back, want, 28 * 7, 0,
			0);
	}
	wafer_tensor_release(client, &tx);
	free(x);
	ok_clean(client, "unary views");
}

/*===----------------------------------------------------------------------===
 * Binary
 *===----------------------------------------------------------------------===*/

/* Element index of a (rank_a, shape_a) operand broadcast to out index i
 * of (rank, shape). */
static size_t broadcast_index(size_t i, uint32_t rank, const uint64_t *shape,
			      uint32_t rank_a, const uint64_t *shape_a)
{
	size_t index = 0, stride = 1;
	for (uint32_t d = rank; d-- > 0;) {
		size_t coord = i % shape[d];
		i /= shape[d];
		int da = (int)d - (int)(rank - rank_a);
		if (da < 0)
			continue;
		if (shape_a[da] != 1)
			index += coord * stride;
		stride *= shape_a[da];
	}
	return index;
}

struct bcase {
	uint32_t rank_a;
	uint64_t shape_a[4];
	uint32_t rank_b;
	uint64_t shape_b[4];
	uint32_t rank;
	uint64_t shape[4];
};

static const struct bcase bcases[] = {
	{1, {1}, 1, {1}, 1, {1}},
	{1, {7}, 1, {7}, 1, {7}},
	{1, {1023}, 1, {1023}, 1, {1023}},
	{1, {70001}, 1, {70001}, 1, {70001}},
	{1, {1023}, 1, {1}, 1, {1023}},
	{1, {1}, 1, {1023}, 1, {1023}},
	{2, {5, 7}, 1, {7}, 2, {5, 7}},
	{2, {5, 7}, 2, {5, 1}, 2, {5, 7}},
	{2, {1, 7}, 2, {5, 1}, 2, {5, 7}},
	{3, {3, 1, 17}, 2, {4, 1}, 3, {3, 4, 17}},
	{0, {0}, 2, {3, 9}, 2, {3, 9}},
	{2, {3, 9}, 0, {0}, 2, {3, 9}},
	{4, {2, 3, 1, 5}, 4, {1, 3, 4, 1}, 4, {2, 3, 4, 5}},
	{2, {300, 1023}, 1, {1023}, 2, {300, 1023}},
	{2, {300, 1}, 2, {300, 1023}, 2, {300, 1023}},
};

static void test_binary(void)
{
	for (int op = 0; op < CATALOGUE_COUNT(catalogue_binary); op++) {
		for (size_t c = 0; c < sizeof bcases / sizeof bcases[0]; c++) {
			const struct bcase *k = &bcases[c];
			size_t na = 1, nb = 1, n = 1;
			for (uint32_t d = 0; d < k->rank_a; d++)
				na *= k->shape_a[d];
			for (uint32_t d = 0; d < k->rank_b; d++)
				nb *= k->shape_b[d];
			for (uint32_t d = 0; d < k->rank; d++)
				n *= k->shape[d];
			float *a = random_floats(na, -10, 10);
			float *b = random_floats(nb, -10, 10);
			if (op == WAFER_BINARY_DIV)
				for (size_t i = 0; i < nb; i++)
					b[i] = b[i] < 0 ? b[i] - 0.5f
							: b[i] + 0.5f;
			wafer_tensor ta = upload(a, k->rank_a, k->shape_a);
			wafer_tensor tb = upload(b, k->rank_b, k->shape_b), to;
			char name[128], sa[48], sb[48];
			shape_name(sa, sizeof sa, k->rank_a, k->shape_a);
			shape_name(sb, sizeof sb, k->rank_b, k->shape_b);
			snprintf(name, sizeof name, "%s %s with %s",
				 catalogue_binary[op], sa, sb);
			wafer_status status =
				wafer_op_binary(client, op, &ta,
						WAFER_ALWAYS_COPY, &tb,
						WAFER_ALWAYS_COPY, &to);
			if (!unsupported(status, name)) {
				check(status, name);
				int shape_ok = to.rank == k->rank;
				for (uint32_t d = 0; d < k->rank; d++)
					shape_ok &= to.shape[d] == k->shape[d];
				float *y = download(&to);
				double *want = malloc(n * sizeof *want);
				for (size_t i = 0; i < n; i++) {
					size_t ia = broadcast_index(
						i, k->rank, k->shape, k->rank_a,
						k->shape_a);
					size_t ib = broadcast_index(
						i, k->rank, k->shape, k->rank_b,
						k->shape_b);
					want[i] = (float)ref_binary(op, a[ia],
								    b[ib]);
				}
				if (!shape_ok)
					ok(0, "%s: output shape", name);
				else
					compare(name, y, want, n, 0, 0);
				free(want);
				free(y);
				wafer_tensor_release(client, &to);
			}
			wafer_tensor_release(client, &ta);
			wafer_tensor_release(client, &tb);
			free(a);
			free(b);
		}
	}
	ok_clean(client, "binary");
}

static void test_binary_special(void)
{
	static const float a[] = {NAN, 1, NAN, -0.0f, INFINITY, 3, 1, -1};
	static const float b[] = {1, NAN, NAN, 0.0f, -INFINITY, 3, 0, 0};
	uint64_t n = 8;

	for (int op = 0; op < CATALOGUE_COUNT(catalogue_binary); op++) {
		wafer_tensor ta = upload(a, 1, &n), tb = upload(b, 1, &n), to;
		char name[64];
		snprintf(name, sizeof name, "%s: NaN, infinities, zeros",
			 catalogue_binary[op]);
		wafer_status status = wafer_op_binary(
			client, op, &ta, WAFER_ALWAYS_COPY, &tb,
			WAFER_ALWAYS_COPY, &to);
		if (!unsupported(status, name)) {
			check(status, name);
			float *y = download(&to);
			double want[8];
			for (size_t i = 0; i < 8; i++)
				want[i] = (float)ref_binary(op, a[i], b[i]);
			compare(name, y, want, 8, 0, 0);
			free(y);
			wafer_tensor_release(client, &to);
		}
		wafer_tensor_release(client, &ta);
		wafer_tensor_release(client, &tb);
	}
	ok_clean(client, "binary special values");
}

/* Transposed and sliced operands reach the _strided kernels as views. */
static void test_binary_views(void)
{
	uint64_t sa[2] = {40, 23}, sb[2] = {23, 40};
	float *a = random_floats(40 * 23, -4, 4);
	float *b = random_floats(23 * 40, -4, 4);
	wafer_tensor ta = upload(a, 2, sa), tb = upload(b, 2, sb), tbt, to;

	check(wafer_tensor_transpose(&tb, 0, 1, &tbt), "transpose");
	wafer_status status = wafer_op_sub(client, &ta, WAFER_ALWAYS_COPY,
					   &tbt, WAFER_ALWAYS_COPY, &to);
	if (!unsupported(status, "sub with a transposed operand")) {
		check(status, "sub transposed");
		float *y = download(&to);
		double *want = malloc(40 * 23 * sizeof *want);
		for (size_t i = 0; i < 40; i++)
			for (size_t j = 0; j < 23; j++)
				want[i * 23 + j] =
					a[i * 23 + j] - b[j * 40 + i];
		compare("sub with a transposed operand", y, want, 40 * 23, 0,
			0);
		free(y);
		free(want);
		wafer_tensor_release(client, &to);
	}

	/* Row 7 of a (an offset view, rank 1) times every row of a. */
	wafer_tensor row;
	check(wafer_tensor_slice(&ta, 0, 7, 1, &row), "slice");
	status = wafer_op_mul(client, &ta, WAFER_ALWAYS_COPY, &row,
			      WAFER_ALWAYS_COPY, &to);
	if (!unsupported(status, "mul by a row at an offset")) {
		check(status, "mul row");
		float *y = download(&to);
		double *want = malloc(40 * 23 * sizeof *want);
		for (size_t i = 0; i < 40; i++)
			for (size_t j = 0; j < 23; j++)
				want[i * 23 + j] =
					a[i * 23 + j] * a[7 * 23 + j];
		compare("mul by a row at an offset (broadcast)", y, want,
			40 * 23, 0, 0);
		free(y);
		free(want);
		wafer_tensor_release(client, &to);
	}
	wafer_tensor_release(client, &ta);
	wafer_tensor_release(client, &tb);
	free(a);
	free(b);
	ok_clean(client, "binary views");
}

static void test_scalar(void)
{
	static const uint64_t sizes[] = {1, 7, 1023, 70001};
	for (int op = 0; op < CATALOGUE_COUNT(catalogue_binary); op++)
		for (int first = 0; first <= 1; first++)
			for (size_t s = 0; s < 4; s++) {
				uint64_t n = sizes[s];
				float *a = random_floats(n, 0.5f, 10);
				float scalar = 2.5f;
				wafer_tensor ta = upload(a, 1, &n), to;
				char name[96];
				snprintf(name, sizeof name,
					 "%s_scalar (%s) on %" PRIu64,
					 catalogue_binary[op],
					 first ? "scalar first" : "scalar second",
					 n);
				wafer_status status = wafer_op_binary_scalar(
					client, op, &ta, WAFER_ALWAYS_COPY,
					scalar, (uint32_t)first, &to);
				if (!unsupported(status, name)) {
					check(status, name);
					float *y = download(&to);
					double *want = malloc(n * sizeof *want);
					for (size_t i = 0; i < n; i++)
						want[i] = (float)(first
							? ref_binary(op, scalar, a[i])
							: ref_binary(op, a[i], scalar));
					compare(name, y, want, n, 0, 0);
					free(want);
					free(y);
					wafer_tensor_release(client, &to);
				}
				wafer_tensor_release(client, &ta);
				free(a);
			}

	/* The named wrappers. */
	uint64_t n = 5;
	float a[5] = {1, 2, 4, 5, 10};
	wafer_tensor ta = upload(a, 1, &n), to;
	if (wafer_op_scalar_div(client, 20.0, &ta, WAFER_ALWAYS_COPY, &to) ==
	    WAFER_OK) {
		float *y = download(&to);
		double want[5] = {20, 10, 5, 4, 2};
		compare("wafer_op_scalar_div: 20 / a", y, want, 5, 0, 0);
		free(y);
		wafer_tensor_release(client, &to);
	}
	wafer_tensor_release(client, &ta);
	ok_clean(client, "scalar");
}

/*===----------------------------------------------------------------------===
 * fill, copy, cast
 *===----------------------------------------------------------------------===*/

static void test_fill_copy(void)
{
	uint64_t shape[3] = {3, 7, 11};
	wafer_tensor t, c;
	wafer_status status =
		wafer_op_fill(client, WAFER_DTYPE_F32, 3, shape, -1.25, &t);
	if (!unsupported(status, "fill")) {
		check(status, "fill");
		float *y = download(&t);
		double want[231];
		for (size_t i = 0; i < 231; i++)
			want[i] = -1.25;
		compare("fill [3, 7, 11] with -1.25", y, want, 231, 0, 0);
		free(y);
		wafer_tensor_release(client, &t);
	}

	/* copy of a permuted view: [3,7,11] -> [11,3,7] */
	float *x = random_floats(231, -1, 1);
	wafer_tensor tx = upload(x, 3, shape), p1, p2;
	check(wafer_tensor_transpose(&tx, 0, 2, &p1), "transpose"); /* 11,7,3 */
	check(wafer_tensor_transpose(&p1, 1, 2, &p2), "transpose"); /* 11,3,7 */
	status = wafer_op_copy(client, &p2, WAFER_ALWAYS_COPY, &c);
	if (!unsupported(status, "copy of a permuted view")) {
		check(status, "copy");
		float *y = download(&c);
		double want[231];
		for (size_t i = 0; i < 11; i++)
			for (size_t j = 0; j < 3; j++)
				for (size_t k = 0; k < 7; k++)
					want[(i * 3 + j) * 7 + k] =
						x[(j * 7 + k) * 11 + i];
		compare("copy of a [3,7,11] view permuted to [11,3,7]", y, want,
			231, 0, 0);
		free(y);
		wafer_tensor_release(client, &c);
	}

	/* copy of a broadcast view: stride 0 repeats a row. */
	wafer_tensor row;
	check(wafer_tensor_slice(&tx, 0, 1, 1, &row), "slice");
	wafer_tensor bc = row;
	bc.strided = 1;
	bc.rank = 2;
	bc.shape[0] = 5;
	bc.shape[1] = 77;
	bc.strides[0] = 0;
	bc.strides[1] = 1;
	status = wafer_op_copy(client, &bc, WAFER_ALWAYS_COPY, &c);
	if (!unsupported(status, "copy of a broadcast view")) {
		check(status, "copy broadcast");
		float *y = download(&c);
		double want[5 * 77];
		for (size_t i = 0; i < 5; i++)
			for (size_t j = 0; j < 77; j++)
				want[i * 77 + j] = x[77 + j];
		compare("copy of a stride-0 (broadcast) view", y, want, 5 * 77,
			0, 0);
		free(y);
		wafer_tensor_release(client, &c);
	}

	/* A dense copy is a copy: the input stays. */
	status = wafer_op_copy(client, &tx, WAFER_ALWAYS_COPY, &c);
	if (!unsupported(status, "dense copy")) {
		check(status, "dense copy");
		ok(c.handle.bits != tx.handle.bits, "dense copy: a new buffer");
		float *y = download(&c);
		double want[231];
		for (size_t i = 0; i < 231; i++)
			want[i] = x[i];
		compare("dense copy", y, want, 231, 0, 0);
		free(y);
		wafer_tensor_release(client, &c);
	}
	wafer_tensor_release(client, &tx);
	free(x);
	ok_clean(client, "fill and copy");
}

/* f16 reference: the compiler's _Float16 where it has one (correctly
 * rounded conversions), else a double-based one. */
static uint16_t ref_f32_to_f16(float f)
{
#ifdef __FLT16_MAX__
	_Float16 h = (_Float16)f;
	uint16_t bits;
	memcpy(&bits, &h, 2);
	return bits;
#else
	(void)f;
	return 0;
#endif
}

static float ref_f16_to_f32(uint16_t bits)
{
	int e = (bits >> 10) & 31, m = bits & 1023;
	double v = e == 0 ? ldexp(m, -24)
		   : e == 31 ? (m ? NAN : INFINITY)
			     : ldexp(1024 + m, e - 25);
	return (float)(bits & 0x8000 ? -v : v);
}

/* bf16: round to nearest even on the top 16 bits. */
static uint16_t ref_f32_to_bf16(double v)
{
	float f = (float)v;
	if (isnan(f))
		return 0x7fc0;
	if (isinf(f) || fabs(v) >= 0x1.ffp127) /* the midpoint rounds up */
		return signbit(v) ? 0xff80 : 0x7f80;
	int e;
	double m = frexp(fabs(v), &e); /* v = m 2^e, m in [0.5, 1) */
	double scaled = ldexp(m, 8);    /* 8 significant bits */
	double r = nearbyint(scaled);
	float back = (float)ldexp(r, e - 8);
	if (e - 8 < -133)
		back = (float)ldexp(nearbyint(ldexp(fabs(v), 133)), -133);
	uint32_t bits;
	float sb = signbit(v) ? -back : back;
	memcpy(&bits, &sb, 4);
	return (uint16_t)(bits >> 16);
}

static void test_cast(void)
{
	enum { N = 4099 };
	float *x = random_floats(N, -70000, 70000);
	static const float specials[] = {
		0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f, 65519.99f,
		65520.0f, -65520.0f, 6.1035156e-05f, 5.96e-08f, 2.98e-08f,
		2.99e-08f, 1e-10f, 3e9f, -3e9f, 2147483520.0f, -2147483648.0f,
		0.5f, 1.5f, 2.5f, -2.5f, 1.00048828125f, 1.0009765625f,
		3.3895314e38f, 1e-39f,
	};
	memcpy(x, specials, sizeof specials);
	for (size_t i = sizeof specials / 4; i < 600; i++)
		x[i] = uniform(-2, 2) * 1e-5f; /* f16 subnormals */
	uint64_t n = N;
	wafer_tensor tx = upload(x, 1, &n), t16, tbf, ti, back;

	wafer_status status = wafer_op_cast(client, &tx, WAFER_ALWAYS_COPY,
					    WAFER_DTYPE_F16, &t16);
	if (!unsupported(status, "cast f32 to f16")) {
		check(status, "cast f16");
		uint16_t *h = malloc(N * 2);
		check(wafer_tensor_read(client, &t16, h, N * 2), "read f16");
#ifdef __FLT16_MAX__
		size_t bad = N;
		for (size_t i = 0; i < N && bad == N; i++) {
			uint16_t want = ref_f32_to_f16(x[i]);
			int both_nan = (want & 0x7c00) == 0x7c00 &&
				       (want & 0x3ff) && (h[i] & 0x7c00) == 0x7c00 &&
				       (h[i] & 0x3ff);
			if (h[i] != want && !both_nan)
				bad = i;
		}
		ok(bad == N, "cast f32 to f16: round to nearest even, "
			     "subnormals, overflow, NaN");
		if (bad != N)
			diag("x = %.9g: got 0x%04x, want 0x%04x", x[bad],
			     h[bad], ref_f32_to_f16(x[bad]));
#endif
		status = wafer_op_cast(client, &t16, WAFER_DONATE_INPUT,
				       WAFER_DTYPE_F32, &back);
		check(status, "cast f16 back");
		float *y = download(&back);
		double *want = malloc(N * sizeof *want);
		for (size_t i = 0; i < N; i++)
			want[i] = ref_f16_to_f32(h[i]);
		compare("cast f16 to f32 (exact)", y, want, N, 0, 0);
		free(want);
		free(y);
		free(h);
		wafer_tensor_release(client, &back);
	}

	status = wafer_op_cast(client, &tx, WAFER_ALWAYS_COPY,
			       WAFER_DTYPE_BF16, &tbf);
	if (!unsupported(status, "cast f32 to bf16")) {
		check(status, "cast bf16");
		uint16_t *h = malloc(N * 2);
		check(wafer_tensor_read(client, &tbf, h, N * 2), "read bf16");
		size_t bad = N;
		for (size_t i = 0; i < N && bad == N; i++) {
			uint16_t want = ref_f32_to_bf16(x[i]);
			/* NaN stays a NaN; its payload bits are the
			 * plugin's (CUDA gives 0x7fff, C code 0x7fc0). */
			int both_nan = (want & 0x7f80) == 0x7f80 &&
				       (want & 0x7f) && (h[i] & 0x7f80) == 0x7f80 &&
				       (h[i] & 0x7f);
			if (h[i] != want && !both_nan)
				bad = i;
		}
		ok(bad == N, "cast f32 to bf16: round to nearest even, NaN");
		if (bad != N)
			diag("x = %.9g: got 0x%04x, want 0x%04x", x[bad],
			     h[bad], ref_f32_to_bf16(x[bad]));
		status = wafer_op_cast(client, &tbf, WAFER_ALWAYS_COPY,
				       WAFER_DTYPE_F32, &back);
		check(status, "cast bf16 back");
		float *y = download(&back);
		bad = N;
		for (size_t i = 0; i < N && bad == N; i++) {
			uint32_t bits;
			memcpy(&bits, &y[i], 4);
			if (bits != (uint32_t)h[i] << 16)
				bad = i;
		}
		ok(bad == N, "cast bf16 to f32 (exact)");
		free(y);
		free(h);
		wafer_tensor_release(client, &back);
		wafer_tensor_release(client, &tbf);
	}

	status = wafer_op_cast(client, &tx, WAFER_ALWAYS_COPY, WAFER_DTYPE_I32,
			       &ti);
	if (!unsupported(status, "cast f32 to i32")) {
		check(status, "cast i32");
		int32_t *v = malloc(N * 4);
		check(wafer_tensor_read(client, &ti, v, N * 4), "read i32");
		size_t bad = N;
		for (size_t i = 0; i < N && bad == N; i++)
			if (v[i] != t_to_i32(x[i]))
				bad = i;
		ok(bad == N, "cast f32 to i32: truncate, saturate, NaN to 0");
		if (bad != N)
			diag("x = %.9g: got %d, want %d", x[bad], v[bad],
			     t_to_i32(x[bad]));

		/* i32 to bf16 rounds once, from the integer. */
		static const int32_t ints[] = {16777217, 16777216 + 3,
					       2147483647, -2147483647 - 1,
					       0x01018000, 0x01008001, 257,
					       -257, 0, 1};
		uint64_t ni = sizeof ints / sizeof ints[0];
		wafer_tensor tint, tb2;
		check(wafer_tensor_create(client, WAFER_DTYPE_I32, 1, &ni, ints,
					  &tint),
		      "create i32");
		check(wafer_op_cast(client, &tint, WAFER_ALWAYS_COPY,
				    WAFER_DTYPE_BF16, &tb2),
		      "cast i32 bf16");
		uint16_t hb[10];
		check(wafer_tensor_read(client, &tb2, hb, sizeof hb), "read");
		bad = ni;
		for (size_t i = 0; i < ni && bad == ni; i++)
			if (hb[i] != ref_f32_to_bf16((double)ints[i]))
				bad = i;
		ok(bad == ni, "cast i32 to bf16: one rounding");
		if (bad != ni)
			diag("%d: got 0x%04x, want 0x%04x", ints[bad], hb[bad],
			     ref_f32_to_bf16((double)ints[bad]));
		check(wafer_op_cast(client, &tint, WAFER_DONATE_INPUT,
				    WAFER_DTYPE_F32, &back),
		      "cast i32 f32");
		float fb[10];
		check(wafer_tensor_read(client, &back, fb, sizeof fb), "read");
		int good = 1;
		for (size_t i = 0; i < ni; i++)
			good &= fb[i] == (float)ints[i];
		ok(good, "cast i32 to f32");
		wafer_tensor_release(client, &back);
		wafer_tensor_release(client, &tb2);
		free(v);
		wafer_tensor_release(client, &ti);
	}

	/* A strided view is gathered, then cast. */
	wafer_tensor odd = tx;
	odd.strided = 1;
	odd.rank = 1;
	odd.shape[0] = N / 2;
	odd.strides[0] = 2;
	odd.offset = 1;
	status = wafer_op_cast(client, &odd, WAFER_ALWAYS_COPY,
			       WAFER_DTYPE_I32, &ti);
	if (!unsupported(status, "cast of a strided view")) {
		check(status, "cast strided");
		int32_t *v = malloc(N / 2 * 4);
		check(wafer_tensor_read(client, &ti, v, N / 2 * 4), "read");
		int good = 1;
		for (size_t i = 0; i < N / 2; i++)
			good &= v[i] == t_to_i32(x[2 * i + 1]);
		ok(good, "cast of a strided view (odd elements)");
		free(v);
		wafer_tensor_release(client, &ti);
	}
	wafer_tensor_release(client, &tx);
	free(x);
	ok_clean(client, "cast");
}

/*===----------------------------------------------------------------------===
 * Reductions and softmax
 *===----------------------------------------------------------------------===*/

static void test_reduce(void)
{
	static const uint64_t shapes[][2] = {{1, 1},   {1, 7},   {7, 1023},
					     {1023, 7}, {3, 1},   {1, 70001},
					     {2000, 300}};

	for (int op = 0; op < CATALOGUE_COUNT(catalogue_reduce); op++)
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
			uint64_t rows = shapes[s][0], cols = shapes[s][1];
			float *x = random_floats(rows * cols, -3, 3);
			wafer_tensor tx = upload(x, 2, shapes[s]), to;
			char name[96];
			snprintf(name, sizeof name,
				 "%s over [%" PRIu64 ", %" PRIu64 "]",
				 catalogue_reduce[op], rows, cols);
			wafer_status status = wafer_op_reduce(
				client, op, &tx, WAFER_ALWAYS_COPY, &to);
			if (!unsupported(status, name)) {
				check(status, name);
				ok(to.rank == 2 && to.shape[0] == rows &&
					   to.shape[1] == 1,
				   "%s: output [rows, 1]", name);
				float *y = download(&to);
				double *want = malloc(rows * sizeof *want);
				double worst_scale = 0;
				for (size_t r = 0; r < rows; r++) {
					double sum = 0, mag = 0,
					       mx = -INFINITY;
					for (size_t c = 0; c < cols; c++) {
						double v = x[r * cols + c];
						sum += v;
						mag += fabs(v);
						mx = v > mx ? v : mx;
					}
					want[r] = op == WAFER_REDUCE_SUM ? sum
						  : op == WAFER_REDUCE_MAX
							  ? mx
							  : sum / cols;
					double scale =
						op == WAFER_REDUCE_MEAN
							? mag / cols
							: mag;
					if (scale > worst_scale)
						worst_scale = scale;
				}
				compare(name, y, want, rows, 0,
					op == WAFER_REDUCE_MAX
						? 0
						: 1e-6 * worst_scale + 1e-7);
				free(want);
				free(y);
				wafer_tensor_release(client, &to);
			}
			wafer_tensor_release(client, &tx);
			free(x);
		}

	/* Rank 1 and a transposed (gathered) input. */
	uint64_t shape[2] = {13, 9};
	float *x = random_floats(13 * 9, -3, 3);
	wafer_tensor tx = upload(x, 2, shape), tt, to;
	check(wafer_tensor_transpose(&tx, 0, 1, &tt), "transpose");
	wafer_status status =
		wafer_op_reduce_max(client, &tt, WAFER_ALWAYS_COPY, &to);
	if (!unsupported(status, "reduce_max of a transposed view")) {
		check(status, "max transposed");
		float *y = download(&to);
		double want[9];
		for (size_t j = 0; j < 9; j++) {
			want[j] = -INFINITY;
			for (size_t i = 0; i < 13; i++)
				if (x[i * 9 + j] > want[j])
					want[j] = x[i * 9 + j];
		}
		compare("reduce_max of a transposed view (columns)", y, want, 9,
			0, 0);
		free(y);
		wafer_tensor_release(client, &to);
	}
	wafer_tensor flat;
	uint64_t all = 13 * 9;
	check(wafer_tensor_reshape(&tx, 1, &all, &flat), "reshape");
	status = wafer_op_reduce_sum(client, &flat, WAFER_ALWAYS_COPY, &to);
	if (!unsupported(status, "reduce_sum of rank 1")) {
		check(status, "sum rank 1");
		ok(to.rank == 1 && to.shape[0] == 1, "rank 1: output [1]");
		float *y = download(&to);
		double want = 0;
		for (size_t i = 0; i < all; i++)
			want += x[i];
		compare("reduce_sum of rank 1", y, &want, 1, 1e-6, 1e-5);
		free(y);
		wafer_tensor_release(client, &to);
	}
	float nanrow[5] = {1, 2, NAN, 4, 5};
	uint64_t five = 5;
	wafer_tensor tn = upload(nanrow, 1, &five);
	if (wafer_op_reduce_max(client, &tn, WAFER_ALWAYS_COPY, &to) ==
	    WAFER_OK) {
		float *y = download(&to);
		ok(isnan(y[0]), "reduce_max of a row with NaN is NaN");
		free(y);
		wafer_tensor_release(client, &to);
	}
	wafer_tensor_release(client, &tn);
	wafer_tensor_release(client, &tx);
	free(x);
	ok_clean(client, "reductions");
}

static void test_softmax(void)
{
	static const uint64_t shapes[][2] = {{1, 1},  {1, 7},    {7, 1023},
					     {33, 10}, {1, 4099}, {512, 129}};

	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		uint64_t rows = shapes[s][0], cols = shapes[s][1];
		float *x = random_floats(rows * cols, -30, 30);
		if (s == 3)
			for (size_t i = 0; i < cols; i++)
				x[i] += 1000.0f; /* stability */
		wafer_tensor tx = upload(x, 2, shapes[s]), to;
		char name[96];
		snprintf(name, sizeof name, "softmax over [%" PRIu64 ", %" PRIu64
					    "]%s",
			 rows, cols, s == 3 ? " with a row near 1000" : "");
		wafer_status status =
			wafer_op_softmax(client, &tx, WAFER_ALWAYS_COPY, &to);
		if (!unsupported(status, name)) {
			check(status, name);
			float *y = download(&to);
			double *want = malloc(rows * cols * sizeof *want);
			for (size_t r = 0; r < rows; r++) {
				double m = -INFINITY, sum = 0;
				for (size_t c = 0; c < cols; c++)
					m = fmax(m, x[r * cols + c]);
				for (size_t c = 0; c < cols; c++)
					sum += exp(x[r * cols + c] - m);
				for (size_t c = 0; c < cols; c++)
					want[r * cols + c] =
						exp(x[r * cols + c] - m) / sum;
			}
			compare(name, y, want, rows * cols, 1e-5, 1e-9);
			free(want);
			free(y);
			wafer_tensor_release(client, &to);
		}
		wafer_tensor_release(client, &tx);
		free(x);
	}
	ok_clean(client, "softmax");
}

/*===----------------------------------------------------------------------===
 * Matmul
 *===----------------------------------------------------------------------===*/

/* Host reference for out[t] = op(A_t) op(B_t) on dense operands given
 * with their own batch counts (1 broadcasts). */
static void ref_matmul(const float *a, const float *b, double *out,
		       double *scale, uint64_t batch, uint64_t batch_a,
		       uint64_t batch_b, uint64_t m, uint64_t n, uint64_t k,
		       int ta, int tb)
{
	for (uint64_t t = 0; t < batch; t++) {
		const float *at = a + (batch_a > 1 ? t : 0) * m * k;
		const float *bt = b + (batch_b > 1 ? t : 0) * k * n;
		for (uint64_t i = 0; i < m; i++)
			for (uint64_t j = 0; j < n; j++) {
				double sum = 0, mag = 0;
				for (uint64_t p = 0; p < k; p++) {
					double x = ta ? at[p * m + i]
						      : at[i * k + p];
					double y = tb ? bt[j * k + p]
						      : bt[p * n + j];
					sum += x * y;
					mag += fabs(x * y);
				}
				out[(t * m + i) * n + j] = sum;
				scale[(t * m + i) * n + j] = mag;
			}
	}
}

static int compare_matmul(const char *name, const float *got,
			  const double *want, const double *scale, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fabs(got[i] - want[i]) > 8e-6 * scale[i] + 1e-6) {
			ok(0, "%s", name);
			diag("element %zu: got %.9g, want %.9g", i, got[i],
			     want[i]);
			return 0;
		}
	return ok(1, "%s", name);
}

static void run_matmul_case(uint64_t batch_a, uint64_t batch_b, uint64_t m,
			    uint64_t n, uint64_t k, int ta, int tb)
{
	uint64_t batch = batch_a > batch_b ? batch_a : batch_b;
	float *a = random_floats(batch_a * m * k, -1, 1);
	float *b = random_floats(batch_b * k * n, -1, 1);
	uint64_t sa[3] = {batch_a, ta ? k : m, ta ? m : k};
	uint64_t sb[3] = {batch_b, tb ? n : k, tb ? k : n};
	wafer_tensor tA = upload(a, batch_a > 1 ? 3 : 2,
				 batch_a > 1 ? sa : sa + 1);
	wafer_tensor tB = upload(b, batch_b > 1 ? 3 : 2,
				 batch_b > 1 ? sb : sb + 1);
	wafer_tensor to;
	char name[160];
	snprintf(name, sizeof name,
		 "matmul batch %" PRIu64 "x%" PRIu64 " m=%" PRIu64
		 " n=%" PRIu64 " k=%" PRIu64 "%s%s",
		 batch_a, batch_b, m, n, k, ta ? " A^T" : "", tb ? " B^T" : "");
	uint32_t flags = (ta ? WAFER_MATMUL_TRANSPOSE_A : 0) |
			 (tb ? WAFER_MATMUL_TRANSPOSE_B : 0);
	wafer_status status = wafer_op_matmul(client, &tA, WAFER_ALWAYS_COPY,
					      &tB, WAFER_ALWAYS_COPY, flags,
					      &to);
	if (!unsupported(status, name)) {
		check(status, name);
		size_t total = batch * m * n;
		double *want = malloc(total * sizeof *want);
		double *scale = malloc(total * sizeof *scale);
		ref_matmul(a, b, want, scale, batch, batch_a, batch_b, m, n, k,
			   ta, tb);
		float *y = download(&to);
		ok(to.shape[to.rank - 2] == m && to.shape[to.rank - 1] == n &&
			   wafer_tensor_count(&to) == total,
		   "%s: output shape", name);
		compare_matmul(name, y, want, scale, total);
		free(y);
		free(want);
		free(scale);
		wafer_tensor_release(client, &to);
	}
	wafer_tensor_release(client, &tA);
	wafer_tensor_release(client, &tB);
	free(a);
	free(b);
}

static void test_matmul(void)
{
	static const uint64_t dims[][3] = {
		{1, 1, 1}, {7, 5, 3}, {1, 33, 7}, {33, 1, 130},
		{65, 70, 129}, {130, 17, 257},
	};
	for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
		for (int t = 0; t < 4; t++)
			run_matmul_case(1, 1, dims[d][0], dims[d][1],
					dims[d][2], t & 1, t >> 1);
	/* Batches: both, a shared B (stride 0), a shared A. */
	run_matmul_case(3, 3, 7, 9, 11, 0, 0);
	run_matmul_case(4, 1, 17, 5, 33, 1, 0);
	run_matmul_case(1, 5, 6, 19, 4, 0, 1);
	run_matmul_case(2, 2, 70, 65, 33, 1, 1);
	run_matmul_case(16, 16, 64, 64, 64, 0, 0);
	ok_clean(client, "matmul");
}

/* Views: a transposed view flips the flag; a sliced or offset one is
 * gathered; a partly broadcast batch is expanded. */
static void test_matmul_views(void)
{
	uint64_t m = 9, k = 14, n = 6;
	uint64_t sa[2] = {k, m};
	float *a = random_floats(k * m, -1, 1);
	float *b = random_floats(k * n * 2, -1, 1);
	uint64_t sb[2] = {k * 2, n};
	wafer_tensor tA = upload(a, 2, sa), tB = upload(b, 2, sb), at, bs, to;

	check(wafer_tensor_transpose(&tA, 0, 1, &at), "transpose"); /* m x k */
	check(wafer_tensor_slice(&tB, 0, k, k, &bs), "slice");      /* rows k.. */
	wafer_status status = wafer_op_matmul(client, &at, WAFER_ALWAYS_COPY,
					      &bs, WAFER_ALWAYS_COPY, 0, &to);
	if (!unsupported(status, "matmul of views")) {
		check(status, "matmul views");
		double want[9 * 6], scale[9 * 6];
		/* a stored k x m is A^T; b's second half. */
		ref_matmul(a, b + k * n, want, scale, 1, 1, 1, m, n, k, 1, 0);
		float *y = download(&to);
		compare_matmul("matmul of a transposed view and an offset slice",
			       y, want, scale, m * n);
		free(y);
		wafer_tensor_release(client, &to);
	}

	/* [2, 1, m, k] x [1, 3, k, n] -> [2, 3, m, n] */
	uint64_t s4a[4] = {2, 1, 5, 4}, s4b[4] = {1, 3, 4, 3};
	float *x = random_floats(2 * 5 * 4, -1, 1);
	float *z = random_floats(3 * 4 * 3, -1, 1);
	wafer_tensor tx = upload(x, 4, s4a), tz = upload(z, 4, s4b);
	status = wafer_op_matmul(client, &tx, WAFER_ALWAYS_COPY, &tz,
				 WAFER_ALWAYS_COPY, 0, &to);
	if (!unsupported(status, "matmul with broadcast batches")) {
		check(status, "matmul 4d");
		ok(to.rank == 4 && to.shape[0] == 2 && to.shape[1] == 3 &&
			   to.shape[2] == 5 && to.shape[3] == 3,
		   "[2,1,5,4] x [1,3,4,3] gives [2,3,5,3]");
		float *y = download(&to);
		double want[2 * 3 * 5 * 3], scale[2 * 3 * 5 * 3];
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 3; j++)
				ref_matmul(x + i * 20, z + j * 12,
					   want + (i * 3 + j) * 15,
					   scale + (i * 3 + j) * 15, 1, 1, 1, 5,
					   3, 4, 0, 0);
		compare_matmul("matmul with batches broadcast both ways", y,
			       want, scale, 90);
		free(y);
		wafer_tensor_release(client, &to);
	}
	wafer_tensor_release(client, &tx);
	wafer_tensor_release(client, &tz);
	wafer_tensor_release(client, &tA);
	wafer_tensor_release(client, &tB);
	free(a);
	free(b);
	free(x);
	free(z);
	ok_clean(client, "matmul views");
}

/*===----------------------------------------------------------------------===
 * Errors
 *===----------------------------------------------------------------------===*/

static void test_errors(void)
{
	uint64_t s5 = 5, s6 = 6, s23[2] = {2, 3};
	float x[6] = {1, 2, 3, 4, 5, 6};
	wafer_tensor a = upload(x, 1, &s5), b = upload(x, 1, &s6), out;
	wafer_tensor m = upload(x, 2, s23);

	is_status(wafer_op_add(client, &a, WAFER_ALWAYS_COPY, &b,
			       WAFER_ALWAYS_COPY, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "shapes [5] and [6]");
	like(wafer_last_error(), "[5] and [6] do not broadcast",
	     "  ... detail names both shapes");
	ok(wafer_handle_is_null(out.handle), "  ... out is a null tensor");

	is_status(wafer_op_matmul(client, &m, WAFER_ALWAYS_COPY, &m,
				  WAFER_ALWAYS_COPY, 0, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "matmul [2,3] x [2,3]");
	like(wafer_last_error(), "inner dimensions 3 and 2",
	     "  ... detail names the inner dimensions");
	is_status(wafer_op_matmul(client, &a, WAFER_ALWAYS_COPY, &m,
				  WAFER_ALWAYS_COPY, 0, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "matmul of a vector");

	wafer_tensor big = a;
	big.rank = 9;
	is_status(wafer_op_neg(client, &big, WAFER_ALWAYS_COPY, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "rank 9");
	wafer_tensor empty = a;
	empty.shape[0] = 0;
	is_status(wafer_op_neg(client, &empty, WAFER_ALWAYS_COPY, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "a size-0 dimension");
	wafer_tensor past = a;
	past.offset = 2;
	is_status(wafer_op_neg(client, &past, WAFER_ALWAYS_COPY, &out),
		  WAFER_ERROR_OUT_OF_RANGE, "a view past the handle's end");
	like(wafer_last_error(), "reaches past the end", "  ... says so");
	wafer_tensor wide = a;
	wide.strided = 1;
	wide.strides[0] = 2;
	is_status(wafer_op_neg(client, &wide, WAFER_ALWAYS_COPY, &out),
		  WAFER_ERROR_OUT_OF_RANGE, "strides past the handle's end");
	/* Fields with values no view has were once taken as they came. */
	wafer_tensor flag = a;
	flag.strided = 7;
	is_status(wafer_op_neg(client, &flag, WAFER_ALWAYS_COPY, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "strided 7");
	like(wafer_last_error(), "strided is 7", "  ... says so");
	wafer_tensor kept = a;
	kept.reserved = 1;
	is_status(wafer_op_neg(client, &kept, WAFER_ALWAYS_COPY, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "reserved 1");
	like(wafer_last_error(), "reserved is 1", "  ... says so");
	wafer_tensor nodtype = a;
	nodtype.dtype = WAFER_DTYPE_NONE;
	is_status(wafer_op_neg(client, &nodtype, WAFER_ALWAYS_COPY, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "dtype none");
	is_status(wafer_op_neg(client, &a, WAFER_ALWAYS_COPY, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "out NULL");
	is_status(wafer_op_neg(client, NULL, WAFER_ALWAYS_COPY, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "input NULL");
	is_status(wafer_op_neg(client, &a, (wafer_copy_semantics)7, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "unknown copy semantics");
	is_status(wafer_op_unary(client, (wafer_unary_op)99, &a,
				 WAFER_ALWAYS_COPY, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "unknown unary operation");
	is_status(wafer_op_matmul(client, &m, WAFER_ALWAYS_COPY, &m,
				  WAFER_ALWAYS_COPY, 0x10, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "unknown matmul flag");

	/* A dtype the backend has no kernel for: not supported, naming the
	 * plugin; nothing allocated. */
	wafer_device_desc device = {.struct_size = sizeof device};
	check(wafer_client_device(client, &device), "device");
	wafer_tensor h16;
	uint16_t halves[4] = {0x3c00, 0x4000, 0x4200, 0x4400};
	uint64_t s4 = 4;
	check(wafer_tensor_create(client, WAFER_DTYPE_F16, 1, &s4, halves,
				  &h16),
	      "create f16");
	wafer_status status = wafer_op_add(client, &h16, WAFER_DONATE_INPUT,
					   &h16, WAFER_ALWAYS_COPY, &out);
	is_status(status, WAFER_ERROR_INVALID_ARGUMENT,
		  "rules are checked before kernels");
	status = wafer_op_exp(client, &h16, WAFER_DONATE_INPUT, &out);
	/* f16 unary kernels are optional (cpu has none): either answer is
	 * right, and each is checked for what it promises. */
	if (status == WAFER_ERROR_NOT_SUPPORTED) {
		is_status(status, WAFER_ERROR_NOT_SUPPORTED,
			  "exp on f16: WAFER_ERROR_NOT_SUPPORTED");
		char want[64];
		snprintf(want, sizeof want, "not supported by %s",
			 device.backend);
		like(wafer_last_error(), want, "  ... names the backend");
		like(wafer_last_error(), "'exp' (float16)",
		     "  ... and the kernel, with its dtype by name");
		uint32_t refs = 0;
		is_status(wafer_handle_references(client, h16.handle, &refs),
			  WAFER_OK, "  ... the donated input is still there");
		is_int(refs, 1, "  ... with its reference");
	} else {
		/* The backend has the kernel: then it must be right. */
		is_status(status, WAFER_OK, "exp on f16 (%s has it)",
			  device.backend);
		uint16_t got[4] = {0};
		int close = status == WAFER_OK &&
			    wafer_tensor_read(client, &out, got, sizeof got) ==
				    WAFER_OK;
		for (int i = 0; close && i < 4; i++) {
			float want = expf((float)(i + 1));
			close = fabsf(half_to_float(got[i]) - want) <=
				0.002f * want;
		}
		ok(close, "  ... exp(1..4) in f16 within f16 precision");
		if (status == WAFER_OK)
			wafer_tensor_release(client, &out);
		else
			wafer_tensor_release(client, &h16);
	}
	if (status == WAFER_ERROR_NOT_SUPPORTED)
		wafer_tensor_release(client, &h16);

	/* The documented in-place idiom, failing: the donated input must
	 * stay named and owned (once x was cleared while its handle kept
	 * its reference, so nobody could release it). */
	wafer_tensor x16;
	check(wafer_tensor_create(client, WAFER_DTYPE_F16, 1, &s4, halves,
				  &x16),
	      "create f16");
	wafer_handle x16_handle = x16.handle;
	status = wafer_op_neg(client, &x16, WAFER_DONATE_INPUT, &x16);
	if (status == WAFER_ERROR_NOT_SUPPORTED) {
		ok(x16.handle.bits == x16_handle.bits,
		   "neg(&x, DONATE, &x) failing: x still names its handle");
		uint32_t refs = 0;
		is_status(wafer_handle_references(client, x16.handle, &refs),
			  WAFER_OK, "  ... which is live");
		is_int(refs, 1, "  ... with the caller's one reference");
	} else {
		is_status(status, WAFER_OK, "neg(&x, DONATE, &x) on f16 (%s has it)",
			  device.backend);
		ok(x16.handle.bits != 0, "  ... x is the output");
		uint16_t got[4] = {0};
		int negated = status == WAFER_OK &&
			      wafer_tensor_read(client, &x16, got,
						sizeof got) == WAFER_OK;
		for (int i = 0; negated && i < 4; i++)
			negated = got[i] == (halves[i] ^ 0x8000u);
		ok(negated, "  ... holding -x (the sign bits flipped)");
	}
	is_status(wafer_op_unary(client, (wafer_unary_op)99, &x16,
				 WAFER_DONATE_INPUT, &x16),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "an unknown operation in place");
	ok(x16.handle.bits != 0, "  ... leaves x as it was");
	is_status(wafer_tensor_release(client, &x16), WAFER_OK,
		  "  ... and the caller can release it");

	is_status(wafer_op_fill(client, WAFER_DTYPE_F32, 2, NULL, 0, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "fill with a NULL shape");
	is_status(wafer_op_cast(client, &a, WAFER_ALWAYS_COPY, (wafer_dtype)99,
				&out),
		  WAFER_ERROR_INVALID_ARGUMENT, "cast to dtype 99");

	is_status(wafer_tensor_reshape(&m, 1, &s5, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "reshape to another count");
	/* A count that does not fit in 64 bits once read as 0, so a target
	 * with a 0 in it passed as "the same count". */
	const uint64_t huge_shape[2] = {UINT64_C(1) << 40, UINT64_C(1) << 40};
	const uint64_t zero_shape[2] = {0, 4};
	wafer_tensor huge = wafer_tensor_view(m.handle, WAFER_DTYPE_F32, 2,
					      huge_shape);
	is_status(wafer_tensor_reshape(&huge, 2, zero_shape, &out),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "reshape of a 2^80-element view to a 0 in the shape");
	like(wafer_last_error(), "does not fit in 64 bits",
	     "  ... says the count does not fit");
	wafer_tensor mt;
	check(wafer_tensor_transpose(&m, 0, 1, &mt), "transpose");
	is_status(wafer_tensor_reshape(&mt, 1, &s6, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "reshape of a transposed view");
	is_status(wafer_tensor_slice(&m, 1, 2, 2, &out),
		  WAFER_ERROR_INVALID_ARGUMENT, "slice past the end");
	float small[4];
	is_status(wafer_tensor_read(client, &a, small, sizeof small),
		  WAFER_ERROR_INVALID_ARGUMENT, "read with the wrong size");

	wafer_tensor_release(client, &a);
	wafer_tensor_release(client, &b);
	wafer_tensor_release(client, &m);
	is_status(wafer_op_neg(client, &a, WAFER_ALWAYS_COPY, &out),
		  WAFER_ERROR_INVALID_HANDLE, "a released handle");
	ok_clean(client, "errors");
}

int main(void)
{
	backend = open_default(NULL, &runtime, &client);

	test_unary();
	test_unary_special();
	test_unary_views();
	test_binary();
	test_binary_special();
	test_binary_views();
	test_scalar();
	test_fill_copy();
	test_cast();
	test_reduce();
	test_softmax();
	test_matmul();
	test_matmul_views();
	test_errors();

	if (backend_has_full_catalogue(backend))
		is_int(missing_kernels, 0, "%s has every catalogue kernel the "
		       "operations call: none skipped", backend);
	else
		diag("%s lacks the kernels of %d result(s), skipped", backend,
		     missing_kernels);

	close_default(runtime, client);
	done_testing();
	return exit_status();
}
