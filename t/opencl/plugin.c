/* wafer — SPDX-License-Identifier: MIT
 *
 * opencl_plugin.c: the OpenCL plugin on its own, through the vendor ABI
 * only, on whatever OpenCL device the machine has (PoCL in CI): the
 * descriptor, [opencl] options and device choice, device info and the
 * kernel table, storage (staged uploads, overlapping copies, no
 * host_alloc), every kernel of the catalogue in every dtype it is offered in
 * against a host reference — through bindings at non-zero offsets with
 * guard bytes around them — launch errors, device timers, and launches
 * from several threads on their own queues.
 *
 * Skips only when the machine has no OpenCL device (as the ICD loader
 * sees it); a plugin that fails to initialise or to open a device that is
 * there fails the test. The binary cache, the build-log error path and the no-platform
 * path are in opencl_cache.c. */
#include "build-config.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t/half.h"
#include "t/standins/opencl_host.h"

static void *state, *device, *queue;
static size_t align;

/*===----------------------------------------------------------------------===
 * Element conversions, as the catalogue defines them
 *===----------------------------------------------------------------------===*/

/* |v| rounded to nearest even with |bits| significant bits, exponents
 * down to |emin|, +-inf past |max|: the f16 and bf16 rounding, straight
 * from a double (no double rounding through float). */
static double round_format(double v, int bits, int emin, double max)
{
	double r;
	int e;

	if (v != v || v == 0 || isinf(v))
		return v;
	frexp(v, &e);
	if (e - 1 < emin)
		e = emin + 1;
	r = ldexp(nearbyint(ldexp(v, bits - e)), e - bits);
	return fabs(r) > max ? copysign(INFINITY, v) : r;
}

static double to_f16(double v)
{
	return round_format(v, 11, -14, 65504.0);
}

static double to_bf16(double v)
{
	return round_format(v, 8, -126, 0x1.fep127);
}

static uint16_t f16_bits(double v)
{
	double r = to_f16(v), a = fabs(r), m;
	uint16_t sign = signbit(r) ? 0x8000u : 0;
	int e;

	if (r != r)
		return 0x7e00u;
	if (isinf(a))
		return sign | 0x7c00u;
	if (a < 0x1p-14)
		return sign | (uint16_t)(a * 0x1p24);
	m = frexp(a, &e);
	return sign | (uint16_t)((e + 14) << 10) |
	       (uint16_t)((m * 2.0 - 1.0) * 1024.0);
}

static double from_f16(uint16_t h)
{
	int e = (h >> 10) & 0x1f;
	double s = (h & 0x8000u) ? -1.0 : 1.0, f = h & 0x3ffu;

	if (e == 31)
		return f ? NAN : s * INFINITY;
	if (e == 0)
		return s * f * 0x1p-24;
	return s * (1024.0 + f) * ldexp(1.0, e - 25);
}

static uint16_t bf16_bits(double v)
{
	union { float f; uint32_t u; } x;

	if (v != v)
		return 0x7fc0u;
	x.f = (float)to_bf16(v);
	return (uint16_t)(x.u >> 16);
}

static size_t dsize(wafer_dtype dt)
{
	return dt == WAFER_DTYPE_F16 || dt == WAFER_DTYPE_BF16 ? 2 : 4;
}

static const char *dname(wafer_dtype dt)
{
	switch (dt) {
	case WAFER_DTYPE_F32: return "f32";
	case WAFER_DTYPE_F16: return "f16";
	case WAFER_DTYPE_BF16: return "bf16";
	case WAFER_DTYPE_I32: return "i32";
	default: return "?";
	}
}

/* Values <-> storage bytes of |dt|. */
static void encode(wafer_dtype dt, const double *v, size_t n, void *out)
{
	for (size_t i = 0; i < n; i++) {
		switch (dt) {
		case WAFER_DTYPE_F16:
			((uint16_t *)out)[i] = f16_bits(v[i]);
			break;
		case WAFER_DTYPE_BF16:
			((uint16_t *)out)[i] = bf16_bits(v[i]);
			break;
		case WAFER_DTYPE_I32:
			((int32_t *)out)[i] = t_to_i32(v[i]);
			break;
		default:
			((float *)out)[i] = (float)v[i];
			break;
		}
	}
}

static void decode(wafer_dtype dt, const void *in, size_t n, double *v)
{
	for (size_t i = 0; i < n; i++) {
		switch (dt) {
		case WAFER_DTYPE_F16:
			v[i] = from_f16(((const uint16_t *)in)[i]);
			break;
		case WAFER_DTYPE_BF16:
			v[i] = t_bf16_to_float(((const uint16_t *)in)[i]);
			break;
		case WAFER_DTYPE_I32:
			v[i] = ((const int32_t *)in)[i];
			break;
		default:
			v[i] = ((const float *)in)[i];
			break;
		}
	}
}

/* A value as |dt| stores it (what the kernel computes with). */
static double stored(wafer_dtype dt, double v)
{
	switch (dt) {
	case WAFER_DTYPE_F16: return to_f16(v);
	case WAFER_DTYPE_BF16: return to_bf16(v);
	case WAFER_DTYPE_I32: return t_to_i32(v);
	default: return (float)v;
	}
}

/*===----------------------------------------------------------------------===
 * Buffers with guard bytes
 *===----------------------------------------------------------------------===*/

#define GUARD 64
#define GUARD_BYTE 0xa5

/* A binding at a non-zero offset of its own resource, with GUARD bytes
 * of a known pattern on each side: a kernel writing outside its binding
 * shows up in check_guards. */
struct buf {
	wafer_resource r;
	size_t offset, size;
};

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		printf("Bail out! out of memory\n");
		exit(1);
	}
	return p;
}

static struct buf new_buf(size_t size)
{
	struct buf b = {.offset = 2 * align, .size = size};
	size_t total = b.offset + size + GUARD;
	unsigned char *pattern = xmalloc(total);

	if (plugin->storage->alloc(device, total, &b.r) != WAFER_OK) {
		printf("Bail out! alloc(%zu): %s\n", total, last_error);
		exit(1);
	}
	memset(pattern, GUARD_BYTE, total);
	plugin->storage->copy_in(device, queue, b.r, 0, pattern, total);
	free(pattern);
	return b;
}

static struct buf upload_values(wafer_dtype dt, const double *v, size_t n)
{
	struct buf b = new_buf(n * dsize(dt));
	void *bytes = xmalloc(n * dsize(dt));

	encode(dt, v, n, bytes);
	plugin->storage->copy_in(device, queue, b.r, b.offset, bytes,
				 n * dsize(dt));
	free(bytes);
	return b;
}

static wafer_status download_values(wafer_dtype dt, struct buf b, size_t n,
				    double *v)
{
	void *bytes = xmalloc(n * dsize(dt));
	wafer_status s;

	plugin->storage->copy_out(device, queue, b.r, b.offset, bytes,
				  n * dsize(dt));
	s = plugin->server->sync(device, queue);
	decode(dt, bytes, n, v);
	free(bytes);
	return s;
}

static int check_guards(struct buf b)
{
	unsigned char head[GUARD], tail[GUARD];
	int good = 1;

	plugin->storage->copy_out(device, queue, b.r, b.offset - GUARD, head,
				  GUARD);
	plugin->storage->copy_out(device, queue, b.r, b.offset + b.size, tail,
				  GUARD);
	plugin->server->sync(device, queue);
	for (int i = 0; i < GUARD; i++)
		good &= head[i] == GUARD_BYTE && tail[i] == GUARD_BYTE;
	return good;
}

static void free_buf(struct buf b)
{
	plugin->storage->free(device, b.r);
}

static struct wafer_binding bind_of(struct buf b)
{
	return binding(b.r, b.offset, b.size);
}

/* Launches (op, dt, variant) on |bufs| and syncs. */
static wafer_status run(const char *op, wafer_dtype dt, const char *variant,
			const struct buf *bufs, uint32_t n, const void *params,
			size_t params_size)
{
	struct wafer_binding b[3];
	wafer_status s;

	for (uint32_t i = 0; i < n; i++)
		b[i] = bind_of(bufs[i]);
	s = launch_kernel(device, queue, find_kernel(device, op, dt, variant),
			  b, n, params, params_size);
	if (s != WAFER_OK)
		return s;
	return plugin->server->sync(device, queue);
}

/* Got matches want: both NaN, or equal, or within rel * |want| + abs. */
static int near(double got, double want, double rel, double abs_tol)
{
	if (want != want)
		return got != got;
	if (isinf(want))
		return got == want;
	return fabs(got - want) <= rel * fabs(want) + abs_tol;
}

/* Compares |n| results; diagnoses the first mismatch. */
static int all_near(const double *got, const double *want, size_t n,
		    double rel, double abs_tol)
{
	for (size_t i = 0; i < n; i++) {
		if (near(got[i], want[i], rel, abs_tol))
			continue;
		diag("element %zu: got %.9g, want %.9g", i, got[i], want[i]);
		return 0;
	}
	return 1;
}

/* Deterministic inputs: multiples of 1/8 in [-8, 8) (exact in every
 * float type, so f16 inputs lose nothing), with zeros sprinkled in. */
static void inputs(double *v, size_t n, uint32_t seed)
{
	uint32_t s = seed * 2654435761u + 7;

	for (size_t i = 0; i < n; i++) {
		v[i] = (double)((int32_t)(host_lcg(&s) >> 16) % 128) / 8.0;
		if (i % 61 == 4)
			v[i] = 0.0;
	}
}

/*===----------------------------------------------------------------------===
 * Descriptor, options, devices
 *===----------------------------------------------------------------------===*/

/* The descriptor's form is the plugin-ABI suite's (t/abi); the opencl
 * plugin has neither virtual memory nor a stream-ordered allocator. */
static void test_descriptor(void)
{
	ok(!plugin->storage->vm_reserve && !plugin->storage->alloc_async,
	   "storage: no virtual memory, no stream-ordered allocator");
}

/* init with one option; returns the device count (0 with its reason in
 * |reason|), -1 when init failed. */
static int count_with(const char *key, const char *value, char *reason,
		      size_t reason_size)
{
	struct wafer_plugin_option opt = option(key, value, "test.conf:3");
	void *st = NULL;
	uint32_t n = 0;

	if (init_with(&opt, 1, &st) != WAFER_OK)
		return -1;
	last_error[0] = '\0';
	plugin->device_count(st, &n);
	snprintf(reason, reason_size, "%s", last_error);
	plugin->shutdown(st);
	return (int)n;
}

static void test_options(const char *dev_name, const char *platform_name,
			 const char *type_name, uint32_t all)
{
	char reason[2048], part[64];
	struct wafer_plugin_option opt;
	void *st = (void *)1;
	int n;

	ok(count_with("type", "all", reason, sizeof reason) == (int)all,
	   "type = all: every device (%u)", all);
	ok(count_with("type", type_name, reason, sizeof reason) >= 1,
	   "type = %s: the first device's type finds it", type_name);
	ok(count_with("type", "gpu, cpu, accelerator, custom", reason,
		      sizeof reason) == (int)all,
	   "a list of every type is all of them");
	n = count_with("type", strcmp(type_name, "cpu") == 0 ? "accelerator"
							    : "cpu",
		       reason, sizeof reason);
	ok(n >= 0, "a type with no device present still initialises");
	if (n == 0)
		ok(strstr(reason, "no OpenCL device matches [opencl] type =") &&
			   strstr(reason, dev_name) &&
			   strstr(reason, "set [opencl] type = all"),
		   "  ... zero devices, and the reason lists what was found: "
		   "%s", reason);
	else
		/* The first device is of type_name, so not of this type. */
		ok(n > 0 && n < (int)all,
		   "  ... %d such device(s), not counting the first of the %u",
		   n, all);

	snprintf(part, sizeof part, "%.6s", dev_name);
	for (char *p = part; *p; p++)
		*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
	ok(count_with("device", part, reason, sizeof reason) >= 1,
	   "device = '%s': a case-insensitive part of the name matches",
	   part);
	ok(count_with("device", "no such device anywhere", reason,
		      sizeof reason) == 0 &&
		   strstr(reason, "device = 'no such device anywhere'"),
	   "device = <no match>: zero devices naming the filter: %s", reason);
	snprintf(part, sizeof part, "%.5s", platform_name);
	ok(count_with("platform", part, reason, sizeof reason) >= 1,
	   "platform = '%s' matches", part);
	ok(count_with("platform", "nosuchplatform", reason, sizeof reason) ==
		   0,
	   "platform = <no match>: zero devices");

	opt = option("type", "gpu, fpga", "/etc/wafer/conf.d/cl.conf:4");
	status_is(init_with(&opt, 1, &st), WAFER_ERROR_CONFIG,
		  "type = gpu, fpga: a configuration error");
	ok(st == NULL && strstr(last_error, "/etc/wafer/conf.d/cl.conf:4: "
					    "[opencl] type"),
	   "  ... naming file, line and key: %s", last_error);
	opt = option("cache", "maybe", "api");
	status_is(init_with(&opt, 1, &st), WAFER_ERROR_CONFIG,
		  "cache = maybe is rejected");
	opt = option("staging", "sometimes", "api");
	status_is(init_with(&opt, 1, &st), WAFER_ERROR_CONFIG,
		  "staging = sometimes is rejected");
	opt = option("colour", "blue", "env");
	log_reset();
	status_is(init_with(&opt, 1, &st), WAFER_OK,
		  "an unknown option does not fail init");
	ok(strstr(log_text, "unknown option 'colour'") != NULL,
	   "  ... it is logged");
	plugin->shutdown(st);
}

static void test_device(void)
{
	struct wafer_device_info info = {.struct_size = sizeof info};
	const struct wafer_kernel *table;
	size_t count = 0;
	uint32_t n = 0;

	plugin->device_count(state, &n);
	status_is(plugin->device_info(state, 0, &info), WAFER_OK,
		  "device_info(0): %s", info.name);
	align = info.alloc_alignment;
	ok(align >= 64 && (align & (align - 1)) == 0 && align <= 4096,
	   "alloc_alignment %zu is a power of two in [64, 4096]", align);
	ok(info.memory_bytes > 0, "memory_bytes %llu MiB",
	   (unsigned long long)(info.memory_bytes >> 20));
	is_int((long long)info.vm_granularity, 0, "no virtual memory");
	ok(info.compute_units > 0, "compute_units %u", info.compute_units);

	status_is(plugin->device_kernels(device, &table, &count), WAFER_OK,
		  "device_kernels: %zu entries", count);
	ok(find_kernel(device, WAFER_KERNEL_MATMUL, WAFER_DTYPE_F32, NULL) &&
		   strcmp(find_kernel(device, WAFER_KERNEL_MATMUL,
				      WAFER_DTYPE_F32, NULL)
				  ->variant,
			  "tile64") == 0,
	   "matmul f32: tile64 is the default variant");
#ifdef WAFER_HAVE_CLBLAST
	ok(find_kernel(device, WAFER_KERNEL_MATMUL, WAFER_DTYPE_F32,
		       "clblast") != NULL,
	   "matmul f32: the clblast variant is offered (built with CLBlast)");
#else
	ok(find_kernel(device, WAFER_KERNEL_MATMUL, WAFER_DTYPE_F32,
		       "clblast") == NULL,
	   "matmul f32: no clblast variant (built without CLBlast)");
#endif
}

/* The whole catalogue of plugin.h, in f32 at least. */
static void test_catalogue(void)
{
	static const char *const ops[] = {
		"noop", "fill", "copy", "neg", "abs", "exp", "log", "sqrt",
		"relu", "gelu", "sigmoid", "tanh", "add", "sub", "mul", "div",
		"max", "min", "add_scalar", "sub_scalar", "mul_scalar",
		"div_scalar", "max_scalar", "min_scalar", "add_strided",
		"sub_strided", "mul_strided", "div_strided", "max_strided",
		"min_strided", "copy_strided", "cast", "reduce_sum",
		"reduce_max", "reduce_mean", "softmax", "matmul",
	};
	size_t no_f16 = 0;

	/* f32 is the plugin-ABI suite's (t/abi, the catalogue group). */
	for (size_t i = 1; i < sizeof ops / sizeof ops[0]; i++) {
		if (
		    !find_kernel(device, ops[i], WAFER_DTYPE_F16, NULL)) {
			diag("missing: %s f16", ops[i]);
			no_f16++;
		}
	}
	is_int((long long)no_f16, 0, "every one but noop in f16 too");
	ok(find_kernel(device, "cast", WAFER_DTYPE_BF16, NULL) &&
		   find_kernel(device, "cast", WAFER_DTYPE_I32, NULL) &&
		   find_kernel(device, "copy_strided", WAFER_DTYPE_BF16,
			       NULL) &&
		   find_kernel(device, "copy_strided", WAFER_DTYPE_I32, NULL) &&
		   find_kernel(device, "fill", WAFER_DTYPE_I32, NULL),
	   "cast, copy_strided, fill and copy also in bf16 and i32");
}

/*===----------------------------------------------------------------------===
 * Storage
 *===----------------------------------------------------------------------===*/

static void test_storage(void)
{
	enum { N = 1 << 20, SMALL = 1024, PIECES = 3000 };
	wafer_resource r = 0, big;
	uint32_t *src = xmalloc(N * 4), *dst = xmalloc(N * 4);
	int good = 1;

	status_is(plugin->storage->alloc(device, 0, &r),
		  WAFER_ERROR_INVALID_ARGUMENT, "alloc(0) is rejected");
	status_is(plugin->storage->alloc(device, (size_t)1 << 46, &r),
		  WAFER_ERROR_OUT_OF_MEMORY, "alloc(64 TiB): out of memory");
	ok(r == 0 && strstr(last_error, "CL_DEVICE_MAX_MEM_ALLOC_SIZE"),
	   "  ... naming the device's limit: %s", last_error);

	/* copy_in returns with the bytes taken: the caller's buffer is
	 * reused at once, before any sync. */
	status_is(plugin->storage->alloc(device, (size_t)N * 4, &big), WAFER_OK,
		  "alloc 4 MiB");
	for (uint32_t i = 0; i < SMALL; i++)
		src[i] = i * 7u;
	plugin->storage->copy_in(device, queue, big, 0, src, SMALL * 4);
	for (uint32_t i = 0; i < SMALL; i++)
		src[i] = 0xdeadbeefu;
	plugin->storage->copy_out(device, queue, big, 0, dst, SMALL * 4);
	status_is(plugin->server->sync(device, queue), WAFER_OK, "sync");
	for (uint32_t i = 0; i < SMALL; i++)
		good &= dst[i] == i * 7u;
	ok(good, "copy_in: the source may be overwritten as soon as it "
		 "returns");

	/* Many small uploads without a sync: the staging ring fills,
	 * wraps and waits for old writes. */
	for (uint32_t p = 0; p < PIECES; p++) {
		uint32_t piece[SMALL / 4];
		for (uint32_t i = 0; i < SMALL / 4; i++)
			piece[i] = p * 1000u + i;
		plugin->storage->copy_in(device, queue, big,
					 (size_t)(p % 1024) * SMALL, piece,
					 sizeof piece);
	}
	plugin->storage->copy_out(device, queue, big, 0, dst, (size_t)N * 4);
	status_is(plugin->server->sync(device, queue), WAFER_OK,
		  "%d small uploads, then sync", PIECES);
	good = 1;
	for (uint32_t slot = 0; slot < 1024; slot++) {
		uint32_t p = slot + 1024 * ((PIECES - 1 - slot) / 1024);
		for (uint32_t i = 0; i < SMALL / 4 && good; i++)
			good &= dst[slot * (SMALL / 4) + i] == p * 1000u + i;
	}
	ok(good, "  ... each slot holds its last upload, in issue order");

	/* Overlapping copies within one buffer, both directions. */
	for (uint32_t i = 0; i < N; i++)
		src[i] = i;
	plugin->storage->copy_in(device, queue, big, 0, src, (size_t)N * 4);
	plugin->storage->copy(device, queue, big, 4096, big, 0, 65536);
	plugin->storage->copy(device, queue, big, 200000, big, 204800, 65536);
	plugin->storage->copy_out(device, queue, big, 0, dst, (size_t)N * 4);
	status_is(plugin->server->sync(device, queue), WAFER_OK,
		  "overlapping copies");
	ok(dst[1024] == 0 && dst[1024 + 16383] == 16383 && dst[1023] == 1023,
	   "  ... forward overlap copies the original bytes");
	ok(dst[50000] == 51200 && dst[50000 + 16383] == 51200 + 16383,
	   "  ... backward overlap too");
	plugin->storage->free(device, big);

	/* host_alloc is retired (ABI 1.1): the staging ring is the plugin's
	 * own pinned memory. An upload lets the caller reuse its buffer at
	 * once, whether it was staged or written directly. */
	memset(src, 0x3c, 1 << 20);
	r = 0;
	status_is(plugin->storage->alloc(device, 1 << 20, &r), WAFER_OK,
		  "alloc 1 MiB for a staged upload");
	plugin->storage->copy_in(device, queue, r, 0, src, 1 << 20);
	memset(src, 0x5a, 1 << 20);
	plugin->storage->copy_out(device, queue, r, 0, dst, 1 << 20);
	plugin->server->sync(device, queue);
	ok(((unsigned char *)dst)[12345] == 0x3c &&
		   ((unsigned char *)dst)[(1 << 20) - 1] == 0x3c,
	   "  ... the upload took the bytes at copy_in, not later ones");
	plugin->storage->free(device, r);
	ok(!plugin->storage->host_alloc && !plugin->storage->host_free,
	   "no host_alloc/host_free to hand out pinned memory");
	free(src);
	free(dst);
}

/* Uploads through the other staging modes give the same bytes. */
static void test_staging_modes(void)
{
	static const char *const modes[] = {"always", "never"};
	enum { N = 3 << 20 }; /* crosses a 2 MiB staging chunk */

	for (int m = 0; m < 2; m++) {
		struct wafer_plugin_option opt =
			option("staging", modes[m], "t");
		void *st, *dev, *q;
		wafer_resource r;
		unsigned char *src = xmalloc(N), *dst = xmalloc(N);

		for (size_t i = 0; i < N; i++)
			src[i] = (unsigned char)(i * 131 + m);
		if (init_with(&opt, 1, &st) != WAFER_OK ||
		    plugin->device_open(st, 0, &dev) != WAFER_OK ||
		    plugin->server->queue_create(dev, &q) != WAFER_OK) {
			ok(0, "staging = %s: open: %s", modes[m], last_error);
			continue;
		}
		plugin->storage->alloc(dev, N, &r);
		plugin->storage->copy_in(dev, q, r, 0, src, N);
		memset(src, 0, N);
		plugin->storage->copy_out(dev, q, r, 0, dst, N);
		status_is(plugin->server->sync(dev, q), WAFER_OK,
			  "staging = %s: 3 MiB upload and download", modes[m]);
		ok(dst[N - 1] == (unsigned char)((N - 1) * 131 + m) &&
			   dst[2 << 20] ==
				   (unsigned char)((2u << 20) * 131 + m),
		   "  ... bytes intact across the chunk boundary");
		plugin->storage->free(dev, r);
		plugin->server->queue_destroy(dev, q);
		plugin->device_close(dev);
		plugin->shutdown(st);
		free(src);
		free(dst);
	}
}

/*===----------------------------------------------------------------------===
 * Kernels against references
 *===----------------------------------------------------------------------===*/

static const wafer_dtype floats[] = {WAFER_DTYPE_F32, WAFER_DTYPE_F16};

/* Tolerance for transcendental results: OpenCL's few ulp in f32; one
 * rounding of f16. */
static double tol(wafer_dtype dt)
{
	return dt == WAFER_DTYPE_F16 ? 1e-3 : 2e-6;
}

static double ref_unary(const char *op, double x)
{
	float f = (float)x;
	if (!strcmp(op, "neg")) return -f;
	if (!strcmp(op, "abs")) return fabsf(f);
	if (!strcmp(op, "exp")) return expf(f);
	if (!strcmp(op, "log")) return logf(f);
	if (!strcmp(op, "sqrt")) return sqrtf(f);
	if (!strcmp(op, "relu")) return f > 0 || isnan(f) ? f : 0.0f;
	if (!strcmp(op, "gelu"))
		return x / (1 + exp(-2 * 0.7978845608028654 *
				    (x + 0.044715 * x * x * x)));
	if (!strcmp(op, "sigmoid")) return 1.0 / (1.0 + exp(-x));
	return tanhf(f);
}

static double ref_binary(const char *op, double a, double b)
{
	float x = (float)a, y = (float)b;
	if (!strncmp(op, "add", 3)) return x + y;
	if (!strncmp(op, "sub", 3)) return x - y;
	if (!strncmp(op, "mul", 3)) return x * y;
	if (!strncmp(op, "div", 3)) return x / y;
	if (x != x || y != y) return NAN;
	if (!strncmp(op, "max", 3)) return x > y ? x : y;
	return x < y ? x : y;
}

static int exact_op(const char *op)
{
	return !strcmp(op, "neg") || !strcmp(op, "abs") || !strcmp(op, "relu");
}

static void test_unary(void)
{
	static const char *const ops[] = {"neg", "abs", "exp", "log", "sqrt",
					  "relu", "gelu", "sigmoid", "tanh"};
	enum { N = 1023 };
	double in[N], got[N], want[N];

	inputs(in, N, 1);
	for (size_t d = 0; d < 2; d++) {
		wafer_dtype dt = floats[d];
		for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
			struct buf b[2] = {new_buf(N * dsize(dt)),
					   upload_values(dt, in, N)};
			struct wafer_elementwise_params p = {.count = N};
			double rel = exact_op(ops[o]) ? 0 : tol(dt);
			int good;

			for (int i = 0; i < N; i++)
				want[i] = stored(dt, ref_unary(ops[o], in[i]));
			status_is(run(ops[o], dt, NULL, b, 2, &p, sizeof p),
				  WAFER_OK, "%s %s: launch", ops[o], dname(dt));
			download_values(dt, b[0], N, got);
			good = all_near(got, want, N, rel, rel * 1e-1);
			ok(good && check_guards(b[0]),
			   "  ... %d elements match, guards intact", N);
			free_buf(b[0]);
			free_buf(b[1]);
		}
	}
}

static void test_binary(void)
{
	static const char *const ops[] = {"add", "sub", "mul",
					  "div", "max", "min"};
	enum { N = 1023 };
	double a[N], b[N], got[N], want[N];

	inputs(a, N, 2);
	inputs(b, N, 3);
	a[10] = NAN;
	b[20] = NAN;
	for (size_t d = 0; d < 2; d++) {
		wafer_dtype dt = floats[d];
		for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
			struct buf bufs[3] = {new_buf(N * dsize(dt)),
					      upload_values(dt, a, N),
					      upload_values(dt, b, N)};
			struct wafer_elementwise_params p = {.count = N};

			for (int i = 0; i < N; i++)
				want[i] = stored(
					dt, ref_binary(ops[o], a[i], b[i]));
			status_is(run(ops[o], dt, NULL, bufs, 3, &p, sizeof p),
				  WAFER_OK, "%s %s: launch", ops[o], dname(dt));
			download_values(dt, bufs[0], N, got);
			ok(all_near(got, want, N, 0, 0) &&
				   check_guards(bufs[0]),
			   "  ... exact, NaN propagated, guards intact");
			for (int i = 0; i < 3; i++)
				free_buf(bufs[i]);
		}
	}

	/* Exact aliasing: out is a. */
	{
		struct buf x = upload_values(WAFER_DTYPE_F32, a, N);
		struct buf y = upload_values(WAFER_DTYPE_F32, b, N);
		struct buf bufs[3] = {x, x, y};
		struct wafer_elementwise_params p = {.count = N};

		for (int i = 0; i < N; i++)
			want[i] = ref_binary("add", a[i], b[i]);
		run("add", WAFER_DTYPE_F32, NULL, bufs, 3, &p, sizeof p);
		download_values(WAFER_DTYPE_F32, x, N, got);
		ok(all_near(got, want, N, 0, 0), "add with out == a");
		free_buf(x);
		free_buf(y);
	}
}

static void test_scalar(void)
{
	static const char *const ops[] = {"add_scalar", "sub_scalar",
					  "mul_scalar", "div_scalar",
					  "max_scalar", "min_scalar"};
	enum { N = 777 };
	double a[N], got[N], want[N];
	const double scalar = 0.1; /* not exact in any float type */

	inputs(a, N, 4);
	for (size_t d = 0; d < 2; d++) {
		wafer_dtype dt = floats[d];
		double s = stored(dt, scalar);
		for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
			for (uint32_t first = 0; first < 2; first++) {
				struct buf bufs[2] = {new_buf(N * dsize(dt)),
						      upload_values(dt, a, N)};
				struct wafer_scalar_params p = {
					.count = N,
					.scalar = scalar,
					.scalar_first = first,
				};
				for (int i = 0; i < N; i++) {
					double x = first ? s : a[i];
					double y = first ? a[i] : s;
					want[i] = stored(dt, ref_binary(ops[o],
									x, y));
				}
				run(ops[o], dt, NULL, bufs, 2, &p, sizeof p);
				download_values(dt, bufs[0], N, got);
				ok(all_near(got, want, N, 0, 0) &&
					   check_guards(bufs[0]),
				   "%s %s scalar_first=%u: exact, with the "
				   "scalar rounded to the dtype",
				   ops[o], dname(dt), first);
				free_buf(bufs[0]);
				free_buf(bufs[1]);
			}
		}
	}
}

static void test_strided(void)
{
	static const char *const ops[] = {"add_strided", "sub_strided",
					  "mul_strided", "div_strided",
					  "max_strided", "min_strided"};
	/* out 3 x 5 x 7; a: a transposed view (strides 1, 3, 15) of a
	 * 7 x 5 x 3 block at offset 4; b: a row of 7 broadcast over the
	 * first two dimensions, at offset 2. */
	enum { D0 = 3, D1 = 5, D2 = 7, N = D0 * D1 * D2 };
	double a[N + 4], b[D2 + 2], got[N], want[N];

	inputs(a, N + 4, 5);
	inputs(b, D2 + 2, 6);
	b[2] = 0.5; /* no division by zero in the broadcast row */
	for (int i = 3; i < D2 + 2; i++)
		if (b[i] == 0)
			b[i] = -1.5;
	for (size_t d = 0; d < 2; d++) {
		wafer_dtype dt = floats[d];
		for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
			struct buf bufs[3] = {new_buf(N * dsize(dt)),
					      upload_values(dt, a, N + 4),
					      upload_values(dt, b, D2 + 2)};
			struct wafer_binary_strided_params p = {
				.rank = 3,
				.shape = {D0, D1, D2},
				.a_strides = {1, 3, 15},
				.b_strides = {0, 0, 1},
				.a_offset = 4,
				.b_offset = 2,
			};
			for (int i = 0; i < N; i++) {
				int i0 = i / (D1 * D2), i1 = i / D2 % D1;
				int i2 = i % D2;
				double x = a[4 + i0 + 3 * i1 + 15 * i2];
				want[i] = stored(dt, ref_binary(ops[o], x,
								b[2 + i2]));
			}
			status_is(run(ops[o], dt, NULL, bufs, 3, &p, sizeof p),
				  WAFER_OK, "%s %s: rank 3, transposed a, "
				  "broadcast b", ops[o], dname(dt));
			download_values(dt, bufs[0], N, got);
			ok(all_near(got, want, N, 0, 0) &&
				   check_guards(bufs[0]),
			   "  ... exact, guards intact");
			for (int i = 0; i < 3; i++)
				free_buf(bufs[i]);
		}
	}
}

static const wafer_dtype all_types[] = {WAFER_DTYPE_F32, WAFER_DTYPE_F16,
					WAFER_DTYPE_BF16, WAFER_DTYPE_I32};

static void test_copy_strided_and_fill(void)
{
	enum { R = 5, C = 7, N = R * C };
	double in[N + 3], got[N], want[N];

	inputs(in, N + 3, 7);
	for (size_t d = 0; d < 4; d++) {
		wafer_dtype dt = all_types[d];
		struct buf bufs[2] = {new_buf(N * dsize(dt)),
				      upload_values(dt, in, N + 3)};
		/* The transpose of a 7 x 5 matrix at offset 3. */
		struct wafer_strided_copy_params p = {.rank = 2,
						      .shape = {R, C},
						      .strides = {1, R},
						      .offset = 3};
		struct wafer_elementwise_params cp = {.count = N};
		struct wafer_fill_params fp = {
			.count = N - 1,
			.value = dt == WAFER_DTYPE_I32 ? -3.7 : 0.1,
		};

		for (int r = 0; r < R; r++)
			for (int c = 0; c < C; c++)
				want[r * C + c] = stored(dt, in[3 + r + R * c]);
		status_is(run("copy_strided", dt, NULL, bufs, 2, &p, sizeof p),
			  WAFER_OK, "copy_strided %s: a transposed view",
			  dname(dt));
		download_values(dt, bufs[0], N, got);
		ok(all_near(got, want, N, 0, 0) && check_guards(bufs[0]),
		   "  ... gathered exactly");

		run("fill", dt, NULL, bufs, 1, &fp, sizeof fp);
		download_values(dt, bufs[0], N, got);
		ok(got[0] == stored(dt, fp.value) && got[N - 2] == got[0] &&
			   got[N - 1] == want[N - 1] && check_guards(bufs[0]),
		   "fill %s: %g stored as %.9g, count respected", dname(dt),
		   fp.value, got[0]);

		run("copy", dt, NULL, bufs, 2, &cp, sizeof cp);
		download_values(dt, bufs[0], N, got);
		for (int i = 0; i < N; i++)
			want[i] = stored(dt, in[i]);
		ok(all_near(got, want, N, 0, 0) && check_guards(bufs[0]),
		   "copy %s", dname(dt));
		free_buf(bufs[0]);
		free_buf(bufs[1]);
	}
	{
		struct buf bufs[1] = {new_buf(16)};
		struct wafer_fill_params fp = {.count = 4, .value = 1e10};
		run("fill", WAFER_DTYPE_I32, NULL, bufs, 1, &fp, sizeof fp);
		download_values(WAFER_DTYPE_I32, bufs[0], 4, got);
		ok(got[3] == INT32_MAX, "fill i32 saturates 1e10 to INT32_MAX");
		free_buf(bufs[0]);
	}
}

static void test_cast(void)
{
	static const double values[] = {
		0.0, -0.0, 1.5, -2.75, 0.1, 65504.0, 65519.0, 65520.0,
		1e-7, 3e-8, 6e-5, 3.4e38, -3.4e38, INFINITY, -INFINITY, NAN,
		2.5e9, -3e9, 123456.789, -0.99, 16777217.0, 2147483647.0,
		-2147483648.0, 1.00390625, 1.005859375, 33554435.0,
	};
	enum { N = sizeof values / sizeof values[0] };
	double got[N], want[N];

	for (size_t din = 0; din < 4; din++) {
		wafer_dtype in = all_types[din];
		for (size_t dout = 0; dout < 4; dout++) {
			wafer_dtype out = all_types[dout];
			struct buf bufs[2] = {new_buf(N * dsize(out)),
					      upload_values(in, values, N)};
			struct wafer_cast_params p = {
				.count = N, .dtype_in = in, .dtype_out = out};
			double src[N];

			/* Every reference rounds once, from the exact
			 * source value. */
			for (int i = 0; i < N; i++) {
				src[i] = stored(in, values[i]);
				want[i] = stored(out, src[i]);
			}
			status_is(run("cast", in, NULL, bufs, 2, &p, sizeof p),
				  WAFER_OK, "cast %s -> %s", dname(in),
				  dname(out));
			download_values(out, bufs[0], N, got);
			ok(all_near(got, want, N, 0, 0) &&
				   check_guards(bufs[0]),
			   "  ... rounding, overflow, NaN, saturation as the "
			   "catalogue says");
			free_buf(bufs[0]);
			free_buf(bufs[1]);
		}
	}
}

/* Reference of row kernel |o| (sum, max, mean, softmax) on one row. */
static void rows_reference(size_t o, wafer_dtype dt, const double *row,
			   uint64_t cols, double *out)
{
	double sum = 0, mx = -INFINITY, es = 0;

	for (uint64_t k = 0; k < cols; k++) {
		sum += row[k];
		if (row[k] != row[k] || mx != mx)
			mx = NAN;
		else if (row[k] > mx)
			mx = row[k];
	}
	for (uint64_t k = 0; k < cols; k++)
		es += exp(row[k] - mx);
	if (o == 0)
		out[0] = stored(dt, sum);
	else if (o == 1)
		out[0] = stored(dt, mx);
	else if (o == 2)
		out[0] = stored(dt, sum / (double)cols);
	else
		for (uint64_t k = 0; k < cols; k++)
			out[k] = stored(dt, exp(row[k] - mx) / es);
}

static void test_rows(void)
{
	static const char *const ops[] = {"reduce_sum", "reduce_max",
					  "reduce_mean", "softmax"};
	static const uint64_t cols_list[] = {1, 7, 300, 1023};
	enum { ROWS = 5, MAXC = 1023 };
	double *in = xmalloc(ROWS * MAXC * sizeof *in);
	double *got = xmalloc(ROWS * MAXC * sizeof *got);
	double *want = xmalloc(ROWS * MAXC * sizeof *want);

	for (size_t d = 0; d < 2; d++) {
		wafer_dtype dt = floats[d];
		for (size_t o = 0; o < 4; o++) {
			int softmax = o == 3;
			for (size_t c = 0; c < 4; c++) {
				uint64_t cols = cols_list[c], n = ROWS * cols;
				uint64_t outs = softmax ? n : ROWS;
				struct wafer_rows_params p = {.rows = ROWS,
							      .cols = cols};
				struct buf bufs[2];

				inputs(in, n, 8 + (uint32_t)c);
				if (o == 1)
					in[2 * cols + cols / 2] = NAN;
				bufs[0] = new_buf(outs * dsize(dt));
				bufs[1] = upload_values(dt, in, n);
				for (uint64_t r = 0; r < ROWS; r++)
					rows_reference(o, dt, in + r * cols,
						       cols,
						       o == 3 ? want + r * cols
							      : want + r);
				status_is(run(ops[o], dt, NULL, bufs, 2, &p,
					      sizeof p),
					  WAFER_OK, "%s %s: %d x %llu", ops[o],
					  dname(dt), ROWS,
					  (unsigned long long)cols);
				download_values(dt, bufs[0], outs, got);
				ok(all_near(got, want, outs,
					    o == 3 || dt == WAFER_DTYPE_F16
						    ? tol(dt)
						    : 1e-6,
					    1e-7) &&
					   check_guards(bufs[0]),
				   "  ... matches, guards intact");
				free_buf(bufs[0]);
				free_buf(bufs[1]);
			}
		}
	}
	free(in);
	free(got);
	free(want);
}

static const char *const mm_variants[] = {"tile64", "tile16", "naive",
					  "clblast"};

/* One matmul case: every variant the device offers for |dt|, inputs of
 * multiples of 1/8 (products and sums exact in f32, so every
 * accumulation order gives the same answer). */
static void matmul_case(wafer_dtype dt, uint64_t batch, uint64_t m,
			uint64_t n, uint64_t k, int ta, int tb, int shared_a)
{
	uint64_t sa = shared_a ? 0 : m * k, sb = k * n, sc = m * n;
	uint64_t na = shared_a ? m * k : batch * m * k, nb = batch * k * n;
	double *a = xmalloc(na * sizeof *a), *b = xmalloc(nb * sizeof *b);
	double *got = xmalloc(batch * sc * sizeof *got);
	double *want = xmalloc(batch * sc * sizeof *want);
	struct wafer_matmul_params p = {
		.batch = batch,
		.m = m,
		.n = n,
		.k = k,
		.transpose_a = (uint32_t)ta,
		.transpose_b = (uint32_t)tb,
		.batch_stride_a = sa,
		.batch_stride_b = sb,
		.batch_stride_c = sc,
	};

	inputs(a, na, (uint32_t)(m + 11));
	inputs(b, nb, (uint32_t)(n + 13));
	for (size_t i = 0; i < na; i++)
		a[i] /= 4; /* keep f16 sums exact too */
	for (uint64_t t = 0; t < batch; t++)
		for (uint64_t i = 0; i < m; i++)
			for (uint64_t j = 0; j < n; j++) {
				double s = 0;
				for (uint64_t q = 0; q < k; q++)
					s += a[t * sa +
					       (ta ? q * m + i : i * k + q)] *
					     b[t * sb +
					       (tb ? j * k + q : q * n + j)];
				want[t * sc + i * n + j] = stored(dt, s);
			}
	for (size_t v = 0; v < sizeof mm_variants / sizeof mm_variants[0];
	     v++) {
		struct buf bufs[3];
		if (!find_kernel(device, "matmul", dt, mm_variants[v]))
			continue;
		bufs[0] = new_buf(batch * sc * dsize(dt));
		bufs[1] = upload_values(dt, a, na);
		bufs[2] = upload_values(dt, b, nb);
		status_is(run("matmul", dt, mm_variants[v], bufs, 3, &p,
			      sizeof p),
			  WAFER_OK,
			  "matmul %s %s: batch %llu, %llux%llux%llu%s%s%s",
			  mm_variants[v], dname(dt), (unsigned long long)batch,
			  (unsigned long long)m, (unsigned long long)n,
			  (unsigned long long)k, ta ? ", A^T" : "",
			  tb ? ", B^T" : "", shared_a ? ", shared A" : "");
		download_values(dt, bufs[0], batch * sc, got);
		ok(all_near(got, want, batch * sc, 0, 0) &&
			   check_guards(bufs[0]),
		   "  ... exact, guards intact");
		for (int i = 0; i < 3; i++)
			free_buf(bufs[i]);
	}
	free(a);
	free(b);
	free(got);
	free(want);
}

static void test_matmul(void)
{
	for (size_t d = 0; d < 2; d++) {
		wafer_dtype dt = floats[d];
		matmul_case(dt, 1, 1, 1, 1, 0, 0, 0);
		matmul_case(dt, 1, 64, 64, 64, 0, 0, 0);
		for (int t = 0; t < 4; t++)
			matmul_case(dt, 3, 37, 45, 29, t & 1, t >> 1, t == 3);
		matmul_case(dt, 2, 70, 3, 130, 0, 1, 1);
	}
}

static void test_noop(void)
{
	status_is(run("noop", WAFER_DTYPE_F32, NULL, NULL, 0, NULL, 0),
		  WAFER_OK, "noop");
}

/*===----------------------------------------------------------------------===
 * Launch errors, timers, threads
 *===----------------------------------------------------------------------===*/

/* launch_kernel of |op|'s f32 entry (none: WAFER_ERROR_NOT_FOUND). */
static wafer_status launch_f32(const char *op, const struct wafer_binding *b,
			       uint32_t nb, const void *params,
			       size_t params_size)
{
	return launch_kernel(device, queue,
			     find_kernel(device, op, WAFER_DTYPE_F32, NULL), b,
			     nb, params, params_size);
}

static void test_launch_errors(void)
{
	struct buf x = new_buf(4096), y = new_buf(64);
	struct wafer_binding b[3] = {bind_of(x), bind_of(x), bind_of(x)};
	struct wafer_elementwise_params ew = {.count = 1024};
	const struct wafer_kernel *add =
		find_kernel(device, "add", WAFER_DTYPE_F32, NULL);
	struct wafer_kernel foreign = *add;
	struct wafer_binary_strided_params sp = {.rank = 0};
	struct wafer_cast_params cp = {
		.count = 4, .dtype_in = WAFER_DTYPE_F32,
		.dtype_out = WAFER_DTYPE_U8};
	int dummy;

	/* Kernel identity, binding count, parameter size and alignment are
	 * the core's to check, once (plugin.h): the same rejections through
	 * the debug-only helper. */
	foreign.impl = &dummy;
	core_checks_alignment = align;
	status_is(launch_kernel(device, queue, &foreign, b, 1, &ew, sizeof ew),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "a foreign kernel entry with the wrong binding count");
	status_is(launch_kernel(device, queue, add, b, 2, &ew, sizeof ew),
		  WAFER_ERROR_INVALID_ARGUMENT, "wrong binding count");
	ok(strstr(last_error, "takes 3 bindings, got 2") != NULL,
	   "  ... says so: %s", last_error);
	status_is(launch_kernel(device, queue, add, b, 3, &ew, 4),
		  WAFER_ERROR_INVALID_ARGUMENT, "wrong parameter size");
	b[1].offset = x.offset + align / 2;
	status_is(launch_kernel(device, queue, add, b, 3, &ew, sizeof ew),
		  WAFER_ERROR_INVALID_ARGUMENT, "a misaligned binding offset");
	core_checks_alignment = 0;
	b[1] = bind_of(y);
	status_is(launch_kernel(device, queue, add, b, 3, &ew, sizeof ew),
		  WAFER_ERROR_OUT_OF_RANGE,
		  "a binding too small for the count");
	ok(strstr(last_error, "binding 1 holds 64 bytes") != NULL,
	   "  ... naming the binding: %s", last_error);
	b[1] = bind_of(x);
	status_is(launch_f32("add_strided", b, 3, &sp, sizeof sp),
		  WAFER_ERROR_INVALID_ARGUMENT, "strided rank 0");
	sp.rank = 2;
	sp.shape[0] = 1u << 20;
	sp.shape[1] = 2;
	sp.a_strides[0] = UINT64_MAX / 2;
	status_is(launch_f32("add_strided", b, 3, &sp, sizeof sp),
		  WAFER_ERROR_OUT_OF_RANGE, "strides that overflow");
	status_is(launch_f32("cast", b, 2, &cp, sizeof cp),
		  WAFER_ERROR_INVALID_ARGUMENT, "cast to u8: not offered");
	{
		struct wafer_rows_params rp = {.rows = 4, .cols = 0};
		struct wafer_matmul_params mp = {.batch = 1, .m = 0, .n = 4,
						 .k = 4};
		status_is(launch_f32("reduce_sum", b, 2, &rp, sizeof rp),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "reduce_sum with cols 0");
		status_is(launch_f32("matmul", b, 3, &mp, sizeof mp),
			  WAFER_ERROR_INVALID_ARGUMENT, "matmul with m 0");
		mp = (struct wafer_matmul_params){
			.batch = 2, .m = 4, .n = 4, .k = 4,
			.batch_stride_c = 8};
		status_is(launch_f32("matmul", b, 3, &mp, sizeof mp),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "matmul whose output matrices overlap");
	}
	status_is(plugin->server->sync(device, queue), WAFER_OK,
		  "nothing was enqueued by the refused launches");
	free_buf(x);
	free_buf(y);
}

/* Timers around work are the plugin-ABI suite's (t/abi); the profiling
 * clock of an empty interval reads exactly 0. */
static void test_timers(void)
{
	void *timer = NULL;
	uint64_t ns = 1;

	plugin->server->timer_begin(device, queue, &timer);
	status_is(plugin->server->timer_end(device, queue, timer, &ns),
		  WAFER_OK, "timer_end with nothing issued between");
	is_int((long long)ns, 0, "  ... 0 ns");
}

/*===----------------------------------------------------------------------===
 * Main
 *===----------------------------------------------------------------------===*/


/*===----------------------------------------------------------------------===
 * Programs (program.c): the caller's OpenCL C
 *===----------------------------------------------------------------------===*/

static const char program_cl[] =
	"typedef struct { ulong n; float a; uint pad; } saxpy_params;\n"
	"__kernel void wafer_test_saxpy(__global float *y, __global const float *x,\n"
	"                               saxpy_params p)\n"
	"{\n"
	"\tsize_t i = get_global_id(0);\n"
	"\tif (i < p.n)\n"
	"\t\ty[i] = p.a * x[i] + y[i];\n"
	"}\n"
	"typedef struct { ulong rows, cols; float scale; uint pad; } tile_params;\n"
	"__kernel void wafer_test_tile2d(__global float *out, __global const float *in,\n"
	"                                tile_params p)\n"
	"{\n"
	"\tsize_t c = get_global_id(0), r = get_global_id(1);\n"
	"\tif (r < p.rows && c < p.cols)\n"
	"\t\tout[c * p.rows + r] = p.scale * in[r * p.cols + c];\n"
	"}\n";

static wafer_status load_cl(const char *text, const char *options, void **out)
{
	struct wafer_program_source src = {
		.struct_size = sizeof src,
		.format = WAFER_PROGRAM_OPENCL_C,
		.data = text,
		.size = strlen(text),
		.name = "test.cl",
	};
	return plugin->server->program_load(device, &src, options, out);
}

static void test_programs(void)
{
	const struct wafer_server_ops *s = plugin->server;
	const wafer_program_format *formats = NULL;
	const struct wafer_kernel *saxpy = NULL, *tile = NULL, *k = NULL;
	struct { uint64_t n; float a; uint32_t pad; } sp = {1000, 3.0f, 0};
	struct { uint64_t rows, cols; float scale; uint32_t pad; } tp = {
		37, 53, 0.5f, 0};
	double x[1000], y[1000], in[37 * 53], got[37 * 53];
	void *program = NULL, *bad = NULL;
	size_t count = 0;
	int wrong = 0;

	if (!WAFER_STRUCT_HAS(s, struct wafer_server_ops, program_release))
		return;
	status_is(s->program_formats(device, &formats, &count), WAFER_OK,
		  "programs: program_formats");
	ok(count >= 1 && formats[0] == WAFER_PROGRAM_OPENCL_C,
	   "programs: opencl-c first (%zu formats)", count);
	if (!status_is(load_cl(program_cl, "-cl-std=CL1.2", &program),
		       WAFER_OK, "programs: OpenCL C builds"))
		return;
	status_is(s->program_kernel(device, program, "wafer_test_saxpy", 2,
				    sizeof sp, &saxpy),
		  WAFER_OK, "programs: wafer_test_saxpy");
	status_is(s->program_kernel(device, program, "wafer_test_tile2d", 2,
				    sizeof tp, &tile),
		  WAFER_OK, "programs: wafer_test_tile2d");
	status_is(s->program_kernel(device, program, "nothing", 2, sizeof sp,
				    &k),
		  WAFER_ERROR_NOT_FOUND, "programs: an unknown kernel");
	status_is(s->program_kernel(device, program, "wafer_test_saxpy", 3,
				    sizeof sp, &k),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "programs: a binding count the kernel does not take");
	like(last_error, "takes 3 arguments, not 4",
	     "programs: the error says how many it takes");
	if (!saxpy || !tile) {
		s->program_release(device, program);
		return;
	}

	/* Bindings at a non-zero offset with guard bytes around them: the
	 * kernel gets a pointer to the binding's first byte. */
	inputs(x, 1000, 1);
	inputs(y, 1000, 2);
	struct buf b[2] = {upload_values(WAFER_DTYPE_F32, y, 1000),
			   upload_values(WAFER_DTYPE_F32, x, 1000)};
	struct wafer_binding bind[2] = {bind_of(b[0]), bind_of(b[1])};
	struct wafer_launch l =
		launch_of(saxpy, bind, 2, &sp, sizeof sp, 1000);
	status_is(s->launch(device, queue, &l), WAFER_OK,
		  "programs: launch saxpy");
	status_is(download_values(WAFER_DTYPE_F32, b[0], 1000, got), WAFER_OK,
		  "programs: download");
	for (int i = 0; i < 1000; i++)
		wrong += got[i] != (double)(3.0f * (float)x[i] + (float)y[i]);
	is_int(wrong, 0, "programs: saxpy y = 3x + y at every element");
	ok(check_guards(b[0]) && check_guards(b[1]),
	   "programs: nothing written outside the bindings");
	free_buf(b[0]);
	free_buf(b[1]);

	/* A 2-D launch whose global size is no multiple of the local. */
	inputs(in, 37 * 53, 3);
	b[0] = new_buf(37 * 53 * 4);
	b[1] = upload_values(WAFER_DTYPE_F32, in, 37 * 53);
	bind[0] = bind_of(b[0]);
	bind[1] = bind_of(b[1]);
	l.kernel = tile;
	l.params = &tp;
	l.params_size = sizeof tp;
	l.global[0] = 53;
	l.global[1] = 37;
	l.local[0] = l.local[1] = 8;
	status_is(s->launch(device, queue, &l), WAFER_OK,
		  "programs: launch tile2d, global 53 x 37, local 8 x 8");
	status_is(download_values(WAFER_DTYPE_F32, b[0], 37 * 53, got),
		  WAFER_OK, "programs: download");
	wrong = 0;
	for (int r = 0; r < 37; r++)
		for (int c = 0; c < 53; c++)
			wrong += got[c * 37 + r] != 0.5 * (float)in[r * 53 + c];
	is_int(wrong, 0, "programs: tile2d transposes and scales");
	ok(check_guards(b[0]), "programs: nothing written past the output");
	free_buf(b[0]);
	free_buf(b[1]);
	s->program_release(device, program);

	static const char broken[] = "__kernel void f(__global float *y)\n"
				     "{\n"
				     "\ty[0] = undeclared;\n"
				     "}\n";
	status_is(load_cl(broken, NULL, &bad), WAFER_ERROR_BUILD,
		  "programs: OpenCL C that does not build: BUILD");
	like(last_error, ":3:", "programs: the build log with its line");
	ok(bad == NULL, "programs: no program from a failed build");
}

/*===----------------------------------------------------------------------===
 * Interop: cl_mem and cl_command_queue out, the caller's in
 *===----------------------------------------------------------------------===*/

/* The OpenCL calls the test makes itself, from the ICD loader the plugin
 * links (as opencl_devices_present does), with the types spelled out;
 * and the numbers of <CL/cl.h> they use. */
static struct {
	void *(*CreateBuffer)(void *, uint64_t, size_t, void *, int32_t *);
	int32_t (*ReleaseMemObject)(void *);
	int32_t (*GetMemObjectInfo)(void *, uint32_t, size_t, void *,
				    size_t *);
	void *(*CreateCommandQueue)(void *, void *, uint64_t, int32_t *);
	int32_t (*ReleaseCommandQueue)(void *);
	int32_t (*GetCommandQueueInfo)(void *, uint32_t, size_t, void *,
				       size_t *);
	void *(*CreateContext)(const intptr_t *, uint32_t, void *const *,
			       void *, void *, int32_t *);
	int32_t (*ReleaseContext)(void *);
	int32_t (*EnqueueReadBuffer)(void *, void *, uint32_t, size_t, size_t,
				     void *, uint32_t, const void *, void *);
	int32_t (*EnqueueWriteBuffer)(void *, void *, uint32_t, size_t, size_t,
				      const void *, uint32_t, const void *,
				      void *);
	int32_t (*Finish)(void *);
} cl;

enum {
	CL_MEM_READ_WRITE_ = 1,
	CL_TRUE_ = 1,
	CL_FALSE_ = 0,
	CL_MEM_REFERENCE_COUNT_ = 0x1105,
	CL_QUEUE_DEVICE_ = 0x1091,
	CL_QUEUE_REFERENCE_COUNT_ = 0x1092,
	CL_QUEUE_OUT_OF_ORDER_ = 1,
	CL_QUEUE_PROFILING_ = 2,
};

static int resolve_cl(void)
{
	static const char *const names[] = {
		"clCreateBuffer",        "clReleaseMemObject",
		"clGetMemObjectInfo",    "clCreateCommandQueue",
		"clReleaseCommandQueue", "clGetCommandQueueInfo",
		"clCreateContext",       "clReleaseContext",
		"clEnqueueReadBuffer",   "clEnqueueWriteBuffer",
		"clFinish",
	};
	return host_resolve(plugin_so, names, sizeof names / sizeof names[0],
			    (void **)&cl, "ICD loader");
}

static uint32_t mem_refs(void *mem)
{
	uint32_t refs = 0;
	cl.GetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT_, sizeof refs, &refs,
			    NULL);
	return refs;
}

static uint32_t queue_refs(void *q)
{
	uint32_t refs = 0;
	cl.GetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT_, sizeof refs,
			       &refs, NULL);
	return refs;
}

static struct wafer_native_buffer opencl_mem(void *mem, size_t offset,
					     size_t size)
{
	return (struct wafer_native_buffer){
		.struct_size = sizeof(struct wafer_native_buffer),
		.kind = WAFER_NATIVE_OPENCL_MEM,
		.object = mem,
		.offset = offset,
		.size = size,
	};
}

/* A fill of |count| floats of |value| at |offset| of |r| on |q|. */
static wafer_status fill_at(void *q, wafer_resource r, size_t offset,
			    uint64_t count, double value)
{
	struct wafer_binding b = binding(r, offset, count * 4);
	struct wafer_fill_params p = {.count = count, .value = value};

	return launch_kernel(device, q,
			     find_kernel(device, "fill", WAFER_DTYPE_F32,
					 NULL),
			     &b, 1, &p, sizeof p);
}

static int all_floats(const unsigned char *bytes, size_t count, float want)
{
	for (size_t i = 0; i < count; i++) {
		float f;
		memcpy(&f, bytes + 4 * i, 4);
		if (f != want)
			return 0;
	}
	return 1;
}

static void test_native_out(void *ctx, void *cq)
{
	const size_t n = 4096;
	unsigned char *a = xmalloc(n), *got = xmalloc(n);
	wafer_resource r = 0;
	struct wafer_native_buffer nb = {.struct_size = sizeof nb};

	for (size_t i = 0; i < n; i++)
		a[i] = (unsigned char)(i * 13 + 5);
	plugin->storage->alloc(device, n, &r);
	plugin->storage->copy_in(device, queue, r, 0, a, n);
	plugin->server->sync(device, queue);
	status_is(plugin->storage->native(device, r, 128, &nb), WAFER_OK,
		  "native of an allocation, 128 bytes in");
	ok(nb.kind == WAFER_NATIVE_OPENCL_MEM &&
		   nb.object == (void *)(uintptr_t)r && nb.offset == 128 &&
		   nb.context == ctx,
	   "  ... its cl_mem, offset 128 and the device's cl_context");
	memset(got, 0, n);
	ok(cl.EnqueueReadBuffer(cq, nb.object, CL_TRUE_, nb.offset, n - 128,
				got, 0, NULL, NULL) == 0 &&
		   memcmp(got, a + 128, n - 128) == 0,
	   "  ... clEnqueueReadBuffer reads copy_in's bytes there");
	plugin->storage->free(device, r);
	free(a);
	free(got);
}

static void test_import(void *ctx, void *cq, void *other_ctx)
{
	const struct wafer_storage_ops *st = plugin->storage;
	const size_t n = 8192;
	unsigned char *a = xmalloc(n), *got = xmalloc(n);
	wafer_resource r = 0;
	struct wafer_native_buffer nb;
	int32_t err = 0;
	void *m = cl.CreateBuffer(ctx, CL_MEM_READ_WRITE_, n, NULL, &err);

	if (!ok(m != NULL, "the test's clCreateBuffer (%d)", (int)err))
		return;
	for (size_t i = 0; i < n; i++)
		a[i] = (unsigned char)(i * 7 + 1);
	cl.EnqueueWriteBuffer(cq, m, CL_TRUE_, 0, n, a, 0, NULL, NULL);
	nb = opencl_mem(m, 0, n);
	status_is(st->import(device, &nb, &r), WAFER_OK,
		  "import of the test's cl_mem");
	ok(r == (wafer_resource)(uintptr_t)m, "  ... the resource is it");
	is_int(mem_refs(m), 2, "  ... retained");
	memset(got, 0, n);
	st->copy_out(device, queue, r, 0, got, n);
	plugin->server->sync(device, queue);
	ok(memcmp(got, a, n) == 0, "  ... copy_out reads the test's bytes");
	status_is(fill_at(queue, r, 1024, 256, 1.25), WAFER_OK,
		  "  ... a fill launched on it");
	plugin->server->sync(device, queue);
	cl.EnqueueReadBuffer(cq, m, CL_TRUE_, 0, n, got, 0, NULL, NULL);
	ok(all_floats(got + 1024, 256, 1.25f) && memcmp(got, a, 1024) == 0,
	   "  ... clEnqueueReadBuffer reads the fill's values");
	st->forget(device, r);
	is_int(mem_refs(m), 1, "  ... forget releases its reference only");
	ok(cl.EnqueueReadBuffer(cq, m, CL_TRUE_, 0, 64, got, 0, NULL, NULL) ==
		   0,
	   "  ... and the test's cl_mem is still valid");

	/* At an offset: the cl_mem itself, the core keeping the offset. */
	nb = opencl_mem(m, align, n - align);
	status_is(st->import(device, &nb, &r), WAFER_OK,
		  "import at offset %zu", align);
	ok(r == (wafer_resource)(uintptr_t)m, "  ... the resource is the "
	   "cl_mem itself");
	st->forget(device, r);
	is_int(mem_refs(m), 1, "  ... and forget releases it");
	nb = opencl_mem(m, 64, n - 63);
	r = 1;
	status_is(st->import(device, &nb, &r), WAFER_ERROR_INVALID_ARGUMENT,
		  "import running past the end from an offset is refused");
	ok(r == 0, "  ... and the resource is 0");
	nb = opencl_mem(m, 0, n + 1);
	status_is(st->import(device, &nb, &r), WAFER_ERROR_INVALID_ARGUMENT,
		  "import past the end of the cl_mem is refused");
	like(last_error, "run past the end", "  ... saying so");
	nb = opencl_mem(m, 0, n);
	nb.kind = WAFER_NATIVE_CUDA_POINTER;
	status_is(st->import(device, &nb, &r), WAFER_ERROR_INVALID_ARGUMENT,
		  "import of another kind is refused");
	like(last_error, "not opencl-mem", "  ... naming the kind wanted");
	is_int(mem_refs(m), 1, "  ... none of them kept a reference");
	cl.ReleaseMemObject(m);

	void *o = other_ctx ? cl.CreateBuffer(other_ctx, CL_MEM_READ_WRITE_, n,
					      NULL, &err)
			    : NULL;
	if (o) {
		nb = opencl_mem(o, 0, n);
		status_is(st->import(device, &nb, &r),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "import of another context's cl_mem is refused");
		like(last_error, "belongs to cl_context", "  ... naming it");
		is_int(mem_refs(o), 1, "  ... not retained");
		cl.ReleaseMemObject(o);
	} else {
		ok(0, "a cl_mem of a second context (%d)", (int)err);
	}
	free(a);
	free(got);
}

static void test_queue_wrap(void *ctx, void *dev_id, void *other_ctx)
{
	const struct wafer_storage_ops *st = plugin->storage;
	const struct wafer_server_ops *sv = plugin->server;
	const size_t n = 4096;
	unsigned char *a = xmalloc(n), *got = xmalloc(n);
	struct wafer_native_queue nq = {.struct_size = sizeof nq};
	void *wq = NULL, *timer = NULL;
	uint64_t ns = 0;
	int32_t err = 0;
	wafer_resource r = 0;
	void *cq = cl.CreateCommandQueue(ctx, dev_id, CL_QUEUE_PROFILING_, &err);
	void *m = cl.CreateBuffer(ctx, CL_MEM_READ_WRITE_, n, NULL, &err);

	if (!ok(cq && m, "the test's queue and buffer"))
		return;
	status_is(sv->queue_wrap(device, cq, &wq), WAFER_OK,
		  "queue_wrap of the test's profiling queue");
	if (!wq)
		return;
	is_int(queue_refs(cq), 2, "  ... retained");
	sv->queue_native(device, wq, &nq);
	ok(nq.queue == cq && nq.context == ctx, "  ... queue_native is it");
	/* The caller's write, then wafer's copy, on the same queue. */
	for (size_t i = 0; i < n; i++)
		a[i] = (unsigned char)(i * 3 + 11);
	st->alloc(device, n, &r);
	cl.EnqueueWriteBuffer(cq, m, CL_FALSE_, 0, n, a, 0, NULL, NULL);
	st->copy(device, wq, r, 0, (wafer_resource)(uintptr_t)m, 0, n);
	st->copy_out(device, wq, r, 0, got, n);
	status_is(sv->timer_begin(device, wq, &timer), WAFER_OK,
		  "  ... a timer on it");
	fill_at(wq, r, 0, 64, 9.0);
	if (timer)
		status_is(sv->timer_end(device, wq, timer, &ns), WAFER_OK,
			  "  ... timer_end (%" PRIu64 " ns)", ns);
	status_is(sv->sync(device, wq), WAFER_OK, "  ... sync");
	ok(memcmp(got, a, n) == 0, "  ... wafer's copy came after the "
	   "caller's write");
	st->copy_out(device, wq, r, 0, got, 256);
	sv->sync(device, wq);
	ok(all_floats(got, 64, 9.0f), "  ... and the fill ran on it");
	sv->queue_destroy(device, wq);
	/* Not its reference count: the ICD (PoCL) holds references of its
	 * own while commands are being retired. */
	ok(cl.EnqueueReadBuffer(cq, m, CL_TRUE_, 0, n, got, 0, NULL, NULL) ==
		   0 && cl.Finish(cq) == 0 && memcmp(got, a, n) == 0,
	   "queue_destroy leaves the test's queue working");
	st->free(device, r);
	cl.ReleaseCommandQueue(cq);

	/* Without profiling: everything but timers. */
	cq = cl.CreateCommandQueue(ctx, dev_id, 0, &err);
	wq = NULL;
	if (cq && sv->queue_wrap(device, cq, &wq) == WAFER_OK) {
		timer = NULL;
		status_is(sv->timer_begin(device, wq, &timer),
			  WAFER_ERROR_NOT_SUPPORTED,
			  "timer_begin on a wrapped queue without profiling "
			  "is refused");
		like(last_error, "CL_QUEUE_PROFILING_ENABLE", "  ... saying why");
		sv->queue_destroy(device, wq);
	} else {
		ok(0, "queue_wrap of a queue without profiling: %s",
		   last_error);
	}
	if (cq)
		cl.ReleaseCommandQueue(cq);

	cq = cl.CreateCommandQueue(ctx, dev_id, CL_QUEUE_OUT_OF_ORDER_, &err);
	if (cq) {
		wq = NULL;
		status_is(sv->queue_wrap(device, cq, &wq),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "queue_wrap of an out-of-order queue is refused");
		like(last_error, "out of order", "  ... saying why");
		is_int(queue_refs(cq), 1, "  ... not retained");
		cl.ReleaseCommandQueue(cq);
	} else {
		diag("no out-of-order queue on this device (%d)", (int)err);
	}

	cq = other_ctx ? cl.CreateCommandQueue(other_ctx, dev_id, 0, &err)
		       : NULL;
	if (cq) {
		wq = NULL;
		status_is(sv->queue_wrap(device, cq, &wq),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "queue_wrap of another context's queue is refused");
		like(last_error, "not", "  ... naming the contexts");
		ok(wq == NULL, "  ... and no queue comes back");
		cl.ReleaseCommandQueue(cq);
	} else {
		ok(0, "a queue of a second context (%d)", (int)err);
	}
	cl.ReleaseMemObject(m);
	free(a);
	free(got);
}

static void test_interop(void)
{
	struct wafer_native_queue nq = {.struct_size = sizeof nq};
	void *dev_id = NULL, *other_ctx = NULL;
	int32_t err = 0;

	if (!resolve_cl())
		return;
	status_is(plugin->server->queue_native(device, queue, &nq), WAFER_OK,
		  "queue_native of the plugin's queue");
	ok(nq.kind == WAFER_NATIVE_OPENCL_MEM && nq.queue && nq.context,
	   "  ... a cl_command_queue and its cl_context");
	cl.GetCommandQueueInfo(nq.queue, CL_QUEUE_DEVICE_, sizeof dev_id,
			       &dev_id, NULL);
	other_ctx = cl.CreateContext(NULL, 1, &dev_id, NULL, NULL, &err);
	test_native_out(nq.context, nq.queue);
	test_import(nq.context, nq.queue, other_ctx);
	test_queue_wrap(nq.context, dev_id, other_ctx);
	if (other_ctx)
		cl.ReleaseContext(other_ctx);
}

int main(void)
{
	struct wafer_device_info info = {.struct_size = sizeof info};
	char platform[256] = "", name[256], type[16] = "cpu";
	char why[256], skip[300];
	uint32_t count = 0;
	unsigned present;
	wafer_status status;

	load_plugin();
	/* Skipped only when the ICD loader itself finds no device; on a
	 * machine with one, the plugin failing to see it fails. */
	present = opencl_devices_present(why, sizeof why);
	if (!present) {
		snprintf(skip, sizeof skip, "no OpenCL device on this machine "
			 "(%s)", why);
		skip_all(skip);
	}
	diag("OpenCL here: %s", why);
	status = init_with(NULL, 0, &state);
	if (!status_is(status, WAFER_OK, "init, with %u OpenCL device(s) "
		       "present", present)) {
		done_testing();
		return exit_status();
	}
	status = plugin->device_count(state, &count);
	if (!ok(status == WAFER_OK && count >= 1, "the plugin finds a device "
		"(%u) of the %u the ICD loader lists", count, present)) {
		diag("%s", last_error);
		done_testing();
		return exit_status();
	}
	plugin->device_info(state, 0, &info);
	/* "<device> (<platform>)": the platform for the filters. */
	{
		char *open = strrchr(info.name, '(');
		snprintf(name, sizeof name, "%s", info.name);
		name[open && open > info.name ? open - info.name - 1 : 0] =
			'\0';
		if (open) {
			snprintf(platform, sizeof platform, "%s", open + 1);
			platform[strcspn(platform, ")")] = '\0';
		}
		if (!(info.capabilities & WAFER_CAP_HOST_MEMORY))
			snprintf(type, sizeof type, "gpu");
	}
	status = plugin->device_open(state, 0, &device);
	if (status == WAFER_OK)
		status = plugin->server->queue_create(device, &queue);
	if (!status_is(status, WAFER_OK, "device_open and queue_create on "
		       "device 0")) {
		done_testing();
		return exit_status();
	}
	diag("device: %s", info.name);

	test_descriptor();
	test_options(name, platform, type, count);
	test_device();
	test_catalogue();
	test_storage();
	test_staging_modes();
	test_noop();
	test_unary();
	test_binary();
	test_scalar();
	test_strided();
	test_copy_strided_and_fill();
	test_cast();
	test_rows();
	test_matmul();
	test_launch_errors();
	test_timers();
	test_programs();
	test_interop();

	plugin->server->queue_destroy(device, queue);
	plugin->device_close(device);
	plugin->shutdown(state);
	done_testing();
	return exit_status();
}
