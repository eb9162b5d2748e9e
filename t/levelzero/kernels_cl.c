/* wafer — SPDX-License-Identifier: MIT
 *
 * levelzero_kernels_cl.c: what the Level Zero plugin's kernels compute,
 * checked on whatever OpenCL device the machine has (pocl's CPU device in
 * CI). The kernels are OpenCL C (plugins/levelzero/kernels.cl); this test
 * builds that same source with the OpenCL device's own compiler, prepares
 * each launch with the plugin's own host code (kernels.c: kernel choice,
 * argument values, group sizes and counts, with the device pointers
 * replaced by OpenCL buffers), runs it, and compares the output with a
 * scalar reference in double precision.
 *
 * What this does NOT verify: the SPIR-V module the plugin embeds (built by
 * clang and llvm-spirv, not by the OpenCL device's compiler), and any Intel
 * GPU or driver. It verifies the kernels' source and the plugin's launch
 * arithmetic on a real OpenCL compiler and device (the Level Zero test
 * driver runs the same kernels too, by an emulation in C of kernels.cl:
 * t/standins/levelzero/emulate_plugin.c). Skips as a whole, before any test point,
 * when the machine has no OpenCL platform; a platform without a device,
 * or a kernels.cl that cannot be read, fails. */
#include "build-config.h"

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <errno.h>
#include <float.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>

#include "plugins/levelzero/kernels.h"
#include "plugins/levelzero/lz_plugin.h"
#include "t/half.h"
#include "t/tap.h"

/* The core's host services; set_error lands in last_error. */
#include "t/standins/fake_host.h"

#ifdef WAFER_SANITIZED
/* pocl's compiler keeps some of what it allocates until the process
 * exits; that is pocl's, not ours. The runtime looks the hook up
 * dynamically, so it must escape -fvisibility=hidden. */
#define SANITIZER_HOOK __attribute__((visibility("default"), used))
SANITIZER_HOOK const char *__lsan_default_suppressions(void);
SANITIZER_HOOK const char *__lsan_default_suppressions(void)
{
	return "leak:libpocl.so\n";
}
#endif

static cl_context context;
static cl_command_queue queue;
static cl_program program;
static struct lz_limits limits;

/*===----------------------------------------------------------------------===
 * Running one launch
 *===----------------------------------------------------------------------===*/

static const struct wafer_kernel *entry(const char *op, wafer_dtype dtype)
{
	const struct wafer_kernel *table;
	size_t count;

	table = lz_kernel_table(&count);
	for (size_t i = 0; i < count; i++)
		if (strcmp(table[i].op, op) == 0 && table[i].dtype == dtype)
			return &table[i];
	return NULL;
}

/* Runs |op| on |n| bindings of |size[i]| bytes from |in[i]| (NULL: zeros)
 * and copies binding 0 back to |out|. Returns 0 on success. */
static int run(const char *op, wafer_dtype dtype, uint32_t n, void *const in[],
	       const size_t size[], const void *params, void *out)
{
	const struct wafer_kernel *k = entry(op, dtype);
	cl_mem mem[LZ_MAX_BINDINGS] = {0};
	/* Distinct, aligned stand-ins for device addresses. */
	void *ptrs[LZ_MAX_BINDINGS] = {(void *)0x10000, (void *)0x20000,
				       (void *)0x30000};
	struct lz_dispatch d;
	cl_kernel kernel = NULL;
	cl_int err = CL_SUCCESS;
	int result = -1;

	if (!k) {
		diag("%s/%d is not in the table", op, dtype);
		return -1;
	}
	if (lz_prepare(&fake_host, k, ptrs, size, params, NULL, &limits, &d) !=
	    WAFER_OK) {
		diag("%s: lz_prepare: %s", op, last_error);
		return -1;
	}
	for (uint32_t i = 0; i < n && err == CL_SUCCESS; i++) {
		void *zeros = in[i] ? NULL : calloc(1, size[i]);
		mem[i] = clCreateBuffer(context,
					CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
					size[i], in[i] ? in[i] : zeros, &err);
		free(zeros);
	}
	if (err == CL_SUCCESS)
		kernel = clCreateKernel(program, lz_spirv_kernels[d.kernel],
					&err);
	for (uint32_t a = 0; err == CL_SUCCESS && a < d.arg_count; a++) {
		int binding = -1;
		for (uint32_t i = 0; i < n; i++)
			if (d.args[a].value == &d.ptrs[i])
				binding = (int)i;
		if (binding >= 0)
			err = clSetKernelArg(kernel, a, sizeof(cl_mem),
					     &mem[binding]);
		else
			err = clSetKernelArg(kernel, a, d.args[a].size,
					     d.args[a].value);
	}
	if (err == CL_SUCCESS && d.group_count[0]) {
		size_t global[3], local[3];
		for (int i = 0; i < 3; i++) {
			local[i] = d.group_size[i];
			global[i] = (size_t)d.group_count[i] * d.group_size[i];
		}
		err = clEnqueueNDRangeKernel(queue, kernel, 3, NULL, global,
					     local, 0, NULL, NULL);
	}
	if (err == CL_SUCCESS && n > 0)
		err = clEnqueueReadBuffer(queue, mem[0], CL_TRUE, 0, size[0],
					  out, 0, NULL, NULL);
	if (err == CL_SUCCESS)
		err = clFinish(queue);
	if (err == CL_SUCCESS)
		result = 0;
	else
		diag("%s (%s): OpenCL error %d", op, lz_spirv_kernels[d.kernel],
		     (int)err);
	if (kernel)
		clReleaseKernel(kernel);
	for (uint32_t i = 0; i < n; i++)
		if (mem[i])
			clReleaseMemObject(mem[i]);
	return result;
}

/*===----------------------------------------------------------------------===
 * Comparing
 *===----------------------------------------------------------------------===*/

/* plugin.h's tolerance for the transcendental functions: 1e-5 relative
 * plus 1e-6 absolute; |tol| 0 asks for the exact float (NaN == NaN). */
static int close_to(float got, double want, double tol)
{
	if (isnan(want))
		return isnan(got);
	if (tol == 0)
		return got == (float)want && signbit(got) == signbit((float)want);
	if (isinf(want))
		return got == (float)want;
	return fabs(got - want) <= tol * fabs(want) + 1e-6;
}

/* Compares |n| floats with the reference function |ref| applied to the
 * index; says the first few mismatches. */
static int check_floats(const char *what, const float *got, size_t n,
			double (*ref)(size_t i, const void *ctx),
			const void *ctx, double tol)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++) {
		double want = ref(i, ctx);
		if (close_to(got[i], want, tol))
			continue;
		if (bad++ < 5)
			diag("%s[%zu] = %.9g, want %.9g", what, i, got[i], want);
	}
	return ok(bad == 0, "%s: %zu values %s", what, n,
		  tol ? "within tolerance" : "exact");
}

/*===----------------------------------------------------------------------===
 * Inputs
 *===----------------------------------------------------------------------===*/

#define N 3001 /* odd, and more than the groups the capped runs launch */

static float a_in[N], b_in[N];

static void make_inputs(void)
{
	uint32_t s = 12345;
	for (size_t i = 0; i < N; i++) {
		int32_t ra = (int32_t)(host_lcg(&s) >> 8);
		int32_t rb = (int32_t)(host_lcg(&s) >> 8);
		a_in[i] = (float)(ra % 40000) / 1000.0f; /* +-40 */
		b_in[i] = (float)(rb % 8000) / 1000.0f + 0.25f;
	}
	a_in[0] = 0.0f;
	a_in[1] = -0.0f;
	a_in[2] = 1.0f;
	a_in[3] = -1.0f;
	a_in[4] = 88.5f;   /* exp overflows f32 */
	a_in[5] = -100.0f; /* sigmoid without overflow */
	a_in[6] = 1e-30f;
	b_in[7] = 0.0f;    /* division by zero */
	b_in[8] = NAN;     /* max and min propagate it */
}

/*===----------------------------------------------------------------------===
 * Elementwise
 *===----------------------------------------------------------------------===*/

struct unary_case {
	const char *op;
	double (*f)(double);
	double tol;
};

static double f_neg(double x) { return -x; }
static double f_abs(double x) { return fabs(x); }
static double f_relu(double x) { return x > 0 || isnan(x) ? x : 0.0; }
static double f_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double f_gelu(double x)
{
	return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) *
				     (x + 0.044715 * x * x * x)));
}
/* The float result of an exact operation on float inputs. */
static double f_sqrt(double x) { return (float)sqrt(x); }
static double f_exp(double x) { return exp(x) > FLT_MAX ? INFINITY : exp(x); }

static const struct unary_case *unary_now;

static double ref_unary(size_t i, const void *ctx)
{
	return unary_now->f((double)a_in[i]);
}

static void test_unary(const char *label)
{
	static const struct unary_case cases[] = {
		{"neg", f_neg, 0}, {"abs", f_abs, 0}, {"relu", f_relu, 0},
		{"exp", f_exp, 1e-5}, {"log", log, 1e-5},
		{"sqrt", f_sqrt, 0}, {"gelu", f_gelu, 1e-5},
		{"sigmoid", f_sigmoid, 1e-5}, {"tanh", tanh, 1e-5},
	};
	float out[N];
	struct wafer_elementwise_params p = {.count = N};
	void *in[2] = {NULL, a_in};
	size_t size[2] = {sizeof out, sizeof a_in};
	char what[64];

	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		unary_now = &cases[c];
		snprintf(what, sizeof what, "%s%s", cases[c].op, label);
		if (run(cases[c].op, WAFER_DTYPE_F32, 2, in, size, &p, out) == 0)
			check_floats(what, out, N, ref_unary, NULL,
				     cases[c].tol);
		else
			ok(0, "%s runs", what);
	}
}

static double max_nan(double a, double b)
{
	return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
}

static double min_nan(double a, double b)
{
	return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
}

/* Every binary op as float arithmetic (the exact rounding of one f32
 * operation equals rounding the exact double result once). */
static double binary_op(const char *op, float a, float b)
{
	if (!strcmp(op, "add"))
		return (float)((double)a + b);
	if (!strcmp(op, "sub"))
		return (float)((double)a - b);
	if (!strcmp(op, "mul"))
		return (float)((double)a * b);
	if (!strcmp(op, "div"))
		return (float)((double)a / b);
	if (!strcmp(op, "max"))
		return max_nan(a, b);
	return min_nan(a, b);
}

struct binary_ctx {
	const char *op;
	int scalar_first;
	float scalar;
	int scalar_form;
};

static double ref_binary(size_t i, const void *p)
{
	const struct binary_ctx *c = p;
	if (!c->scalar_form)
		return binary_op(c->op, a_in[i], b_in[i]);
	return c->scalar_first ? binary_op(c->op, c->scalar, a_in[i])
			       : binary_op(c->op, a_in[i], c->scalar);
}

static void test_binary(const char *label)
{
	static const char *const ops[] = {"add", "sub", "mul", "div", "max",
					  "min"};
	float out[N];
	char what[128], op[32];

	for (size_t o = 0; o < 6; o++) {
		struct binary_ctx c = {.op = ops[o]};
		struct wafer_elementwise_params ep = {.count = N};
		void *in[3] = {NULL, a_in, b_in};
		size_t size[3] = {sizeof out, sizeof a_in, sizeof b_in};
		snprintf(what, sizeof what, "%s%s", ops[o], label);
		if (run(ops[o], WAFER_DTYPE_F32, 3, in, size, &ep, out) == 0)
			check_floats(what, out, N, ref_binary, &c, 0);
		else
			ok(0, "%s runs", what);

		for (int first = 0; first < 2; first++) {
			struct wafer_scalar_params sp = {
				.count = N, .scalar = 0.3, .scalar_first = first};
			c = (struct binary_ctx){ops[o], first, 0.3f, 1};
			snprintf(op, sizeof op, "%s_scalar", ops[o]);
			snprintf(what, sizeof what, "%s (scalar_first %d)%s",
				 op, first, label);
			if (run(op, WAFER_DTYPE_F32, 2, in, size, &sp, out) == 0)
				check_floats(what, out, N, ref_binary, &c, 0);
			else
				ok(0, "%s runs", what);
		}
	}
}

/* out = op(a viewed as 30 x 100 with row stride 100 but transposed... a
 * 3-D broadcast: out[i, j, k] = op(a[k * 300 + i * 10 + j... ]). Kept
 * concrete below. */
struct strided_ctx {
	const char *op;
	const struct wafer_binary_strided_params *p;
};

static double ref_strided(size_t i, const void *ctx)
{
	const struct strided_ctx *c = ctx;
	const struct wafer_binary_strided_params *p = c->p;
	size_t rest = i, ia = p->a_offset, ib = p->b_offset;
	for (uint32_t d = p->rank; d-- > 0;) {
		size_t idx = rest % p->shape[d];
		rest /= p->shape[d];
		ia += idx * p->a_strides[d];
		ib += idx * p->b_strides[d];
	}
	return binary_op(c->op, a_in[ia], b_in[ib]);
}

static void test_strided(const char *label)
{
	static const char *const ops[] = {"add", "sub", "mul", "div", "max",
					  "min"};
	/* out: 3 x 20 x 40 = 2400. a: a transposed 40 x 60 view (element
	 * [i, j, k] at offset 5 + k * 60 + i * 20 + j); b broadcast over
	 * the first dimension and the last (one value per j). */
	const struct wafer_binary_strided_params p = {
		.rank = 3,
		.shape = {3, 20, 40},
		.a_strides = {20, 1, 60},
		.b_strides = {0, 7, 0},
		.a_offset = 5,
		.b_offset = 11,
	};
	float out[2400];
	char what[128], op[32];

	for (size_t o = 0; o < 6; o++) {
		struct strided_ctx c = {ops[o], &p};
		void *in[3] = {NULL, a_in, b_in};
		size_t size[3] = {sizeof out, sizeof a_in, sizeof b_in};
		snprintf(op, sizeof op, "%s_strided", ops[o]);
		snprintf(what, sizeof what, "%s, rank 3 with broadcasts%s", op,
			 label);
		if (run(op, WAFER_DTYPE_F32, 3, in, size, &p, out) == 0)
			check_floats(what, out, 2400, ref_strided, &c, 0);
		else
			ok(0, "%s runs", what);
	}
}

/*===----------------------------------------------------------------------===
 * Moves, fill and cast
 *===----------------------------------------------------------------------===*/

/* One point: "copy" of N elements of |dtype| (|bytes| in all) copies
 * every bit of |in| into |out|. */
static void copy_every_bit(wafer_dtype dtype, const char *dtype_name,
			   void *in, void *out, size_t bytes, const char *label)
{
	struct wafer_elementwise_params ep = {.count = N};
	void *ptrs[2] = {NULL, in};
	size_t sizes[2] = {bytes, bytes};

	ok(run("copy", dtype, 2, ptrs, sizes, &ep, out) == 0 &&
		   memcmp(out, in, bytes) == 0,
	   "copy %s%s: every bit", dtype_name, label);
}

static void test_moves(const char *label)
{
	uint16_t h_in[N], h_out[N], t_out[600];
	uint32_t w_out[N], wt_out[600];

	for (size_t i = 0; i < N; i++)
		h_in[i] = (uint16_t)(i * 2654435761u >> 7);
	copy_every_bit(WAFER_DTYPE_BF16, "bf16", h_in, h_out, sizeof h_in,
		       label);
	copy_every_bit(WAFER_DTYPE_I32, "i32", a_in, w_out, sizeof a_in, label);

	/* The transpose of a 20 x 30 matrix stored at offset 3. */
	struct wafer_strided_copy_params cp = {
		.rank = 2, .shape = {30, 20}, .strides = {1, 30}, .offset = 3};
	int good32 = 1, good16 = 1;
	void *in32[2] = {NULL, a_in}, *in16[2] = {NULL, h_in};
	size_t size32[2] = {sizeof wt_out, sizeof a_in};
	size_t size16[2] = {sizeof t_out, sizeof h_in};
	int r32 = run("copy_strided", WAFER_DTYPE_F32, 2, in32, size32, &cp,
		      wt_out);
	int r16 = run("copy_strided", WAFER_DTYPE_F16, 2, in16, size16, &cp,
		      t_out);
	for (size_t i = 0; i < 30; i++)
		for (size_t j = 0; j < 20; j++) {
			uint32_t w;
			memcpy(&w, &a_in[3 + j * 30 + i], 4);
			good32 &= wt_out[i * 20 + j] == w;
			good16 &= t_out[i * 20 + j] == h_in[3 + j * 30 + i];
		}
	ok(r32 == 0 && good32, "copy_strided f32: a transpose%s", label);
	ok(r16 == 0 && good16, "copy_strided f16: a transpose%s", label);
}

static void test_fill(const char *label)
{
	float out[N];
	int32_t iout[N];
	struct wafer_fill_params fp = {.count = N - 1, .value = 0.1};
	size_t size[1] = {sizeof out};
	void *in[1] = {NULL};
	int good = 1;

	ok(run("fill", WAFER_DTYPE_F32, 1, in, size, &fp, out) == 0,
	   "fill f32 runs%s", label);
	for (size_t i = 0; i < N - 1; i++)
		good &= out[i] == 0.1f;
	ok(good && out[N - 1] == 0.0f,
	   "fill f32: count elements set to 0.1f, the one past untouched%s",
	   label);
	fp.value = -7.9;
	ok(run("fill", WAFER_DTYPE_I32, 1, in, size, &fp, iout) == 0 &&
		   iout[0] == -7 && iout[N - 2] == -7 && iout[N - 1] == 0,
	   "fill i32: -7.9 truncates to -7%s", label);
}

/* Reference conversions, written apart from the kernels' own. */
static uint16_t ref_bf16(double v)
{
	if (isnan(v))
		return 0x7fc0;
	double mag = fabs(v);
	uint16_t sign = signbit(v) ? 0x8000 : 0;
	if (mag == 0)
		return sign;
	int e;
	frexp(mag, &e);                     /* mag = m * 2^e, m in [0.5, 1) */
	if (e < -125)
		e = -125;                   /* subnormal spacing */
	double ulp = ldexp(1.0, e - 8);     /* 8 significant bits */
	double r = nearbyint(mag / ulp) * ulp; /* to nearest, ties to even */
	if (r >= ldexp(1.0, 128))
		return sign | 0x7f80;
	float f = (float)r;                 /* exact */
	uint32_t bits;
	memcpy(&bits, &f, 4);
	return sign | (uint16_t)(bits >> 16);
}

#ifdef __FLT16_MAX__
static uint16_t ref_f16(double v)
{
	_Float16 h = (_Float16)v; /* correctly rounded by the compiler */
	uint16_t bits;
	memcpy(&bits, &h, 2);
	return bits;
}

static double from_f16(uint16_t b)
{
	_Float16 h;
	memcpy(&h, &b, 2);
	return (double)h;
}
#endif

static void test_cast(const char *label)
{
#ifndef __FLT16_MAX__
	/* One point skipped, in the stream (a plan of 0 here would come
	 * after test points). */
	ok(1, "cast%s # SKIP the C compiler has no _Float16 for the f16 "
	      "reference",
	   label);
#else
	enum { F32, F16, BF16, I32 };
	static const wafer_dtype dt[4] = {WAFER_DTYPE_F32, WAFER_DTYPE_F16,
					  WAFER_DTYPE_BF16, WAFER_DTYPE_I32};
	static const char *const name[4] = {"f32", "f16", "bf16", "i32"};
	static const size_t esize[4] = {4, 2, 2, 4};
	enum { M = 64 };
	/* Source values as doubles, then stored in each type. */
	double src[M];
	unsigned char buf[4][M * 4];
	for (int i = 0; i < M; i++)
		src[i] = (i % 2 ? -1 : 1) * ldexp(1.0 + i / 64.0, i - 20);
	src[0] = 65519.0;  /* rounds to 65504 in f16 */
	src[1] = 65520.0;  /* rounds to inf in f16 */
	src[2] = 3.0e38;   /* bf16: finite; f16: inf; i32: saturates */
	src[3] = NAN;
	src[4] = 0x1.002p-24; /* an f16 subnormal */
	src[5] = -2.5;
	src[6] = 16777217.0;  /* 2^24 + 1: not a float */
	src[7] = 2147483520.0;
	src[8] = 16842753.0; /* 2^24 + 2^16 + 1: i32 to bf16 rounds once,
			      * up, where rounding twice gives 2^24 */
	src[9] = 1.00390625;      /* a bf16 tie: 1 + 2^-8, to even (1.0) */
	for (int i = 0; i < M; i++) {
		float f = (float)src[i];
		memcpy(buf[F32] + 4 * i, &f, 4);
		uint16_t h = ref_f16(src[i]);
		memcpy(buf[F16] + 2 * i, &h, 2);
		uint16_t b = ref_bf16(src[i]);
		memcpy(buf[BF16] + 2 * i, &b, 2);
		int32_t n = t_to_i32(src[i]);
		memcpy(buf[I32] + 4 * i, &n, 4);
	}
	for (int from = 0; from < 4; from++)
		for (int to = 0; to < 4; to++) {
			unsigned char out[M * 4];
			struct wafer_cast_params cp = {
				.count = M, .dtype_in = dt[from],
				.dtype_out = dt[to]};
			void *in[2] = {NULL, buf[from]};
			size_t size[2] = {M * esize[to], M * esize[from]};
			int bad = 0;
			if (run("cast", dt[from], 2, in, size, &cp, out) != 0) {
				ok(0, "cast %s to %s runs%s", name[from],
				   name[to], label);
				continue;
			}
			for (int i = 0; i < M; i++) {
				/* The exact value the source holds. */
				double v;
				if (from == F32) {
					float f;
					memcpy(&f, buf[F32] + 4 * i, 4);
					v = f;
				} else if (from == F16) {
					uint16_t h;
					memcpy(&h, buf[F16] + 2 * i, 2);
					v = from_f16(h);
				} else if (from == BF16) {
					uint16_t b;
					memcpy(&b, buf[BF16] + 2 * i, 2);
					v = t_bf16_to_float(b);
				} else {
					int32_t n;
					memcpy(&n, buf[I32] + 4 * i, 4);
					v = n;
				}
				int match;
				if (to == F32) {
					float got, want = (float)v;
					memcpy(&got, out + 4 * i, 4);
					match = isnan(want) ? isnan(got)
							    : got == want;
				} else if (to == F16 || to == BF16) {
					uint16_t got, want = to == F16
								     ? ref_f16(v)
								     : ref_bf16(v);
					memcpy(&got, out + 2 * i, 2);
					if (isnan(v))
						match = (got & 0x7fff) >
							(to == F16 ? 0x7c00
								   : 0x7f80);
					else
						match = got == want;
				} else {
					int32_t got, want = t_to_i32(v);
					memcpy(&got, out + 4 * i, 4);
					match = got == want;
				}
				if (!match && bad++ < 3)
					diag("cast %s to %s: element %d (%.17g) "
					     "wrong",
					     name[from], name[to], i, v);
			}
			ok(bad == 0, "cast %s to %s: %d values, rounding, "
				     "overflow and NaN as plugin.h says%s",
			   name[from], name[to], M, label);
		}
#endif
}

/*===----------------------------------------------------------------------===
 * Rows and matmul
 *===----------------------------------------------------------------------===*/

static void test_rows(const char *label)
{
	enum { R = 7, C = 421 }; /* C > one group of 256 */
	static float in[R * C], out[R * C];
	struct wafer_rows_params rp = {.rows = R, .cols = C};
	void *ins[2] = {NULL, in};
	size_t size[2] = {sizeof out, sizeof in};
	int bad;

	memcpy(in, a_in, sizeof in);
	in[3 * C + 100] = NAN; /* row 3 of reduce_max is NaN */
	for (int op = 0; op < 3; op++) {
		static const char *const ops[] = {"reduce_sum", "reduce_mean",
						  "reduce_max"};
		bad = run(ops[op], WAFER_DTYPE_F32, 2, ins, size, &rp, out);
		for (int r = 0; r < R && !bad; r++) {
			double sum = 0, abs_sum = 0, m = -INFINITY;
			for (int c = 0; c < C; c++) {
				sum += in[r * C + c];
				abs_sum += fabs(in[r * C + c]);
				m = max_nan(m, in[r * C + c]);
			}
			double want = op == 0 ? sum : op == 1 ? sum / C : m;
			double tol = 1e-5 * abs_sum / (op == 1 ? C : 1);
			if (op == 2 ? !close_to(out[r], want, 0)
				    : !(fabs(out[r] - want) <= tol + 1e-6) &&
					      !(isnan(want) && isnan(out[r]))) {
				diag("%s row %d: %.9g, want %.9g", ops[op], r,
				     out[r], want);
				bad = 1;
			}
		}
		ok(!bad, "%s over %d x %d (a NaN in row 3)%s", ops[op], R, C,
		   label);
	}

	in[3 * C + 100] = 1.0f;
	bad = run("softmax", WAFER_DTYPE_F32, 2, ins, size, &rp, out);
	for (int r = 0; r < R && !bad; r++) {
		double m = -INFINITY, s = 0;
		for (int c = 0; c < C; c++)
			m = fmax(m, in[r * C + c]);
		for (int c = 0; c < C; c++)
			s += exp(in[r * C + c] - m);
		for (int c = 0; c < C; c++) {
			double want = exp(in[r * C + c] - m) / s;
			if (!close_to(out[r * C + c], want, 1e-5)) {
				diag("softmax [%d, %d]: %.9g, want %.9g", r, c,
				     out[r * C + c], want);
				bad = 1;
				break;
			}
		}
	}
	ok(!bad, "softmax over %d x %d, inputs up to 88%s", R, C, label);
}

static void test_matmul(const char *label)
{
	enum { B = 3, M_ = 37, N_ = 21, K = 19 };
	static float a[B * M_ * K], b[K * N_], out[B * M_ * N_];
	memcpy(a, a_in, sizeof a);
	for (size_t i = 0; i < K * N_; i++)
		b[i] = b_in[i] - 4.0f;

	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			/* B shared by every batch (stride 0). */
			struct wafer_matmul_params mp = {
				.batch = B, .m = M_, .n = N_, .k = K,
				.transpose_a = ta, .transpose_b = tb,
				.batch_stride_a = M_ * K, .batch_stride_b = 0,
				.batch_stride_c = M_ * N_};
			void *in[3] = {NULL, a, b};
			size_t size[3] = {sizeof out, sizeof a, sizeof b};
			int bad = run("matmul", WAFER_DTYPE_F32, 3, in, size, &mp,
				      out);
			for (int t = 0; t < B && !bad; t++)
				for (int i = 0; i < M_ && !bad; i++)
					for (int j = 0; j < N_ && !bad; j++) {
						double s = 0, abs_s = 0;
						for (int k = 0; k < K; k++) {
							double x = ta ? a[t * M_ * K + k * M_ + i]
								      : a[t * M_ * K + i * K + k];
							double y = tb ? b[j * K + k]
								      : b[k * N_ + j];
							s += x * y;
							abs_s += fabs(x * y);
						}
						float got = out[t * M_ * N_ + i * N_ + j];
						if (fabs(got - s) > 1e-5 * abs_s + 1e-6) {
							diag("C%d[%d, %d] = %.9g, want %.9g",
							     t, i, j, got, s);
							bad = 1;
						}
					}
			ok(!bad, "matmul %d x %d x %d x %d, transpose_a %d, "
				 "transpose_b %d, shared B%s",
			   B, M_, N_, K, ta, tb, label);
		}
}

/*===----------------------------------------------------------------------===
 * Setup
 *===----------------------------------------------------------------------===*/

static char *read_file(const char *path, size_t *out_size)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)n + 1)) &&
	    fread(text, 1, (size_t)n, f) == (size_t)n) {
		text[n] = '\0';
		*out_size = (size_t)n;
	} else {
		free(text);
		text = NULL;
	}
	fclose(f);
	return text;
}

/* pocl keeps compiled kernels in a cache under $XDG_CACHE_HOME, which
 * make check points into the build tree, where distclean would find them:
 * this test gives it a directory of its own and removes it at exit. */
static char cache_dir[4096];

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	return remove(path);
}

static void remove_cache(void)
{
	if (cache_dir[0])
		nftw(cache_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void private_cache(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(cache_dir, sizeof cache_dir, "%s/wafer-pocl.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(cache_dir)) {
		cache_dir[0] = '\0';
		return;
	}
	setenv("POCL_CACHE_DIR", cache_dir, 1);
	atexit(remove_cache);
}

/* The first OpenCL device of any platform. No platform at all skips the
 * whole file (called before any test point); a platform without a device
 * (PoCL installed, its CPU device gone) is a failure. */
static cl_device_id pick_device(char *name, size_t size)
{
	cl_platform_id platforms[8];
	cl_uint np = 0;
	cl_device_id device;

	if (clGetPlatformIDs(8, platforms, &np) != CL_SUCCESS || np == 0)
		skip_all("no OpenCL platform (ocl-icd with pocl-opencl-icd "
			 "runs this test on the CPU)");
	for (cl_uint i = 0; i < np; i++) {
		cl_uint nd = 0;
		if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, 1, &device,
				   &nd) == CL_SUCCESS &&
		    nd > 0) {
			clGetDeviceInfo(device, CL_DEVICE_NAME, size, name, NULL);
			return device;
		}
	}
	ok(0, "an OpenCL device on the %u platform(s) found", (unsigned)np);
	return NULL;
}

int main(void)
{
	const char *srcdir = getenv("T_SRCDIR");
	char path[4096], name[256] = "";
	size_t src_size = 0, max_group = 0;
	cl_device_id device;
	cl_int err;

	if (!srcdir)
		skip_all("T_SRCDIR is not set (run through make check)");
	snprintf(path, sizeof path, "%s/../plugins/levelzero/kernels.cl",
		 srcdir);
	/* A shipped file: not being able to read it is a failure. */
	errno = 0;
	char *source = read_file(path, &src_size);
	if (!ok(source != NULL, "read %s", path)) {
		diag("%s: %s", path,
		     errno ? strerror(errno) : "empty, or a short read");
		done_testing();
		return exit_status();
	}
	private_cache();
	device = pick_device(name, sizeof name);
	if (!device) {
		free(source);
		done_testing();
		return exit_status();
	}
	diag("running plugins/levelzero/kernels.cl on OpenCL device '%s' "
	     "(its own compiler, not the embedded SPIR-V; not Intel hardware)",
	     name);

	context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
	queue = clCreateCommandQueue(context, device, 0, &err);
	program = clCreateProgramWithSource(context, 1,
					    (const char **)&source, &src_size,
					    &err);
	/* OpenCL C 2.0 where the device speaks it (as the plugin's build
	 * does), else 1.2: the kernels need nothing newer. With correctly
	 * rounded division and sqrt, as the plugin asks of Level Zero. */
	char version[64] = "";
	clGetDeviceInfo(device, CL_DEVICE_OPENCL_C_VERSION, sizeof version,
			version, NULL);
	const char *options =
		strncmp(version, "OpenCL C 2.", 11) == 0
			? "-cl-std=CL2.0 -cl-fp32-correctly-rounded-divide-sqrt"
			: "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt";
	err = clBuildProgram(program, 1, &device, options, NULL, NULL);
	if (!ok(err == CL_SUCCESS, "kernels.cl builds (%s)", options)) {
		char log[4096] = "";
		clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG,
				      sizeof log, log, NULL);
		diag("%s", log);
		done_testing();
		return exit_status();
	}
	clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_group,
			&max_group, NULL);
	make_inputs();

	/* Once with generous limits, once with the group counts capped at 2
	 * so every grid-stride and group-stride loop goes round. */
	for (int pass = 0; pass < 2; pass++) {
		const char *label = pass ? " [2 groups per dimension]" : "";
		uint32_t cap = pass ? 2 : 65535;
		limits = (struct lz_limits){
			.max_group_size = {(uint32_t)max_group,
					   (uint32_t)max_group, 64},
			.max_total_group_size = (uint32_t)max_group,
			.max_group_count = {cap, cap, cap},
		};
		test_fill(label);
		test_unary(label);
		test_binary(label);
		test_strided(label);
		test_moves(label);
		test_cast(label);
		/* The row kernels and matmul need groups of 256 items. */
		if (max_group < 256) {
			ok(1, "rows and matmul%s # SKIP the OpenCL device's "
			      "work-groups hold %zu items, fewer than 256",
			   label, max_group);
			continue;
		}
		test_rows(label);
		test_matmul(label);
	}

	/* noop runs. */
	ok(run("noop", WAFER_DTYPE_F32, 0, NULL, NULL, NULL, NULL) == 0,
	   "noop runs");

	clReleaseProgram(program);
	clReleaseCommandQueue(queue);
	clReleaseContext(context);
	free(source);
	done_testing();
	return exit_status();
}
