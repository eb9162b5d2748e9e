/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels.c: the OpenCL plugin's kernel table and launches. Every entry
 * of the table points (|impl|) at a descriptor below: the catalogue
 * operation, dtype and variant, the family that says how its bindings
 * and parameters become OpenCL kernel arguments and a work size, and the
 * OpenCL C function and program unit that run it (cl/<unit>.cl).
 *
 * A launch, in order: find our descriptor, check the bindings and the
 * parameter block against it, check that every element the parameters
 * reach lies inside its binding (the core checks too; an out-of-bounds
 * write on a GPU corrupts memory silently), then enqueue. Most families
 * run an OpenCL C kernel, created per queue at first use from the unit's
 * program; fill and copy are clEnqueueFillBuffer / clEnqueueCopyBuffer,
 * and the clblast matmul variant calls CLBlast.
 *
 * Bindings reach kernels as the buffer and an element offset (binding
 * offsets are multiples of the device alignment, hence of every element
 * size). */
#include "build-config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/opencl/ocl_plugin.h"

/*===----------------------------------------------------------------------===
 * Descriptors
 *===----------------------------------------------------------------------===*/

enum family {
	FAM_NOOP,
	FAM_FILL,         /* clEnqueueFillBuffer */
	FAM_COPY,         /* clEnqueueCopyBuffer */
	FAM_UNARY,        /* {out, in}, count */
	FAM_BINARY,       /* {out, a, b}, count */
	FAM_SCALAR,       /* {out, a}, count, scalar */
	FAM_STRIDED,      /* {out, a, b}, strided views */
	FAM_COPY_STRIDED, /* {out, in}, strided view */
	FAM_CAST,         /* {out, in}, one kernel per output dtype */
	FAM_ROWS,         /* {out, in}, a work-group per row */
	FAM_MATMUL,       /* {out, a, b}, 3-D */
	FAM_CLBLAST,      /* matmul through CLBlast */
};

/* What a descriptor needs of the device to be offered. */
#define NEEDS_CLBLAST 1u
#define NEEDS_GROUP256 2u /* a 16x16 reqd_work_group_size */
#define NEEDS_FP64 4u     /* cl_khr_fp64: the float64 kernels */

struct ocl_kernel_desc {
	const char *op;
	const char *variant;
	wafer_dtype dtype;
	enum family family;
	enum ocl_unit unit;
	/* The OpenCL C kernel; for casts the prefix "cast_<in>" to which
	 * "_<out>" is added; NULL where no kernel runs. */
	const char *function;
	/* matmul: the C tile one work-group computes (64, 16; 1: naive). */
	unsigned tile;
	unsigned needs;
};

#define DESC(op_, variant_, dt_, fam_, unit_, fn_, tile_, needs_)              \
	{.op = (op_), .variant = (variant_), .dtype = (dt_), .family = (fam_), \
	 .unit = (unit_), .function = (fn_), .tile = (tile_), .needs = (needs_)}
#define F32 WAFER_DTYPE_F32
#define F16 WAFER_DTYPE_F16
#define BF16 WAFER_DTYPE_BF16
#define I32 WAFER_DTYPE_I32
#define I64 WAFER_DTYPE_I64
#define F64 WAFER_DTYPE_F64
#define EW OCL_UNIT_ELEMENTWISE
#define ST OCL_UNIT_STRIDED

/* An operation in f32 and f16, running <fn>_f32 / <fn>_f16. */
#define FLOATS(op, fam, unit, fn)                                              \
	DESC(op, "default", F32, fam, unit, fn "_f32", 0, 0),                  \
		DESC(op, "default", F16, fam, unit, fn "_f16", 0, 0)
/* An operation on all four storage types without a kernel of its own. */
#define ALL_TYPES(op, fam, fn32, fn16)                                         \
	DESC(op, "default", F32, fam, ST, fn32, 0, 0),                         \
		DESC(op, "default", F16, fam, ST, fn16, 0, 0),                 \
		DESC(op, "default", BF16, fam, ST, fn16, 0, 0),                \
		DESC(op, "default", I32, fam, ST, fn32, 0, 0)
/* An operation computing in int32, int64 and float64 (cl_khr_fp64), each
 * running <fn>_<dt> with its own arithmetic. */
#define WIDE(op, fam, unit, fn)                                                \
	DESC(op, "default", I32, fam, unit, fn "_i32", 0, 0),                  \
		DESC(op, "default", I64, fam, unit, fn "_i64", 0, 0),          \
		DESC(op, "default", F64, fam, unit, fn "_f64", 0, NEEDS_FP64)
/* float64 only (exp and the rest). */
#define F64_ONLY(op, fam, unit, fn)                                            \
	DESC(op, "default", F64, fam, unit, fn "_f64", 0, NEEDS_FP64)
/* Moves of the 8-byte types, no arithmetic. */
#define WIDE_MOVES(op, fam, fn)                                                \
	DESC(op, "default", I64, fam, ST, fn, 0, 0),                           \
		DESC(op, "default", F64, fam, ST, fn, 0, NEEDS_FP64)
/* A catalogue kernel (catalogue.def) in f32 and f16, and in the wider
 * types its row's |dtypes| allows: ANY, WIDE's; FLOAT, float64 alone. */
#define TYPED_ANY WIDE
#define TYPED_FLOAT F64_ONLY
#define CATALOGUE(op, fam, unit, fn, dtypes)                                   \
	FLOATS(op, fam, unit, fn), TYPED_##dtypes(op, fam, unit, fn)
#define MATMUL(variant, dt, fn, tile, needs)                                   \
	DESC(WAFER_KERNEL_MATMUL, variant, dt, FAM_MATMUL, OCL_UNIT_MATMUL,    \
	     fn, tile, needs)

/* The order is the table's: for each (op, dtype) the first variant is the
 * default one. */
static const struct ocl_kernel_desc descs[] = {
	DESC(WAFER_KERNEL_NOOP, "default", F32, FAM_NOOP, EW, "noop", 0, 0),
	ALL_TYPES(WAFER_KERNEL_FILL, FAM_FILL, NULL, NULL),
	ALL_TYPES(WAFER_KERNEL_COPY, FAM_COPY, NULL, NULL),

	/* The catalogue's unary, binary (with its scalar and strided
	 * forms) and row kernels, in the dtypes each row allows. */
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference)                   \
	CATALOGUE(WAFER_KERNEL_##NAME, FAM_UNARY, EW, #name, dtypes),
#define WAFER_CATALOGUE_BINARY(name, NAME, reference)                          \
	CATALOGUE(WAFER_KERNEL_##NAME, FAM_BINARY, EW, #name, ANY),            \
		CATALOGUE(WAFER_KERNEL_##NAME##_SCALAR, FAM_SCALAR, EW,        \
			  #name "_scalar", ANY),                               \
		CATALOGUE(WAFER_KERNEL_##NAME##_STRIDED, FAM_STRIDED, ST,      \
			  #name "_strided", ANY),
#define WAFER_CATALOGUE_ROWS(name, NAME, dtypes, output)                       \
	CATALOGUE(WAFER_KERNEL_##NAME, FAM_ROWS, OCL_UNIT_ROWS, #name, dtypes),
#include <wafer/catalogue.def>

	ALL_TYPES(WAFER_KERNEL_COPY_STRIDED, FAM_COPY_STRIDED,
		  "copy_strided_b32", "copy_strided_b16"),
	DESC(WAFER_KERNEL_CAST, "default", F32, FAM_CAST, ST, "cast_f32", 0, 0),
	DESC(WAFER_KERNEL_CAST, "default", F16, FAM_CAST, ST, "cast_f16", 0, 0),
	DESC(WAFER_KERNEL_CAST, "default", BF16, FAM_CAST, ST, "cast_bf16", 0,
	     0),
	DESC(WAFER_KERNEL_CAST, "default", I32, FAM_CAST, ST, "cast_i32", 0, 0),

	/* Matmul candidates for autotune; tile64 is the default. */
	MATMUL("tile64", F32, "matmul_tile64_f32", 64, NEEDS_GROUP256),
	MATMUL("tile16", F32, "matmul_tile16_f32", 16, NEEDS_GROUP256),
	MATMUL("naive", F32, "matmul_naive_f32", 1, 0),
	DESC(WAFER_KERNEL_MATMUL, "clblast", F32, FAM_CLBLAST, OCL_UNIT_COUNT,
	     NULL, 0, NEEDS_CLBLAST),
	MATMUL("tile64", F16, "matmul_tile64_f16", 64, NEEDS_GROUP256),
	MATMUL("tile16", F16, "matmul_tile16_f16", 16, NEEDS_GROUP256),
	MATMUL("naive", F16, "matmul_naive_f16", 1, 0),
	DESC(WAFER_KERNEL_MATMUL, "clblast", F16, FAM_CLBLAST, OCL_UNIT_COUNT,
	     NULL, 0, NEEDS_CLBLAST),

	/* int32, int64, float64: the T-stamped kernels of the units. */
	WIDE_MOVES(WAFER_KERNEL_FILL, FAM_FILL, NULL),
	WIDE_MOVES(WAFER_KERNEL_COPY, FAM_COPY, NULL),
	WIDE_MOVES(WAFER_KERNEL_COPY_STRIDED, FAM_COPY_STRIDED,
		   "copy_strided_b64"),
	DESC(WAFER_KERNEL_CAST, "default", I64, FAM_CAST, ST, "cast_i64", 0, 0),
	DESC(WAFER_KERNEL_CAST, "default", F64, FAM_CAST, ST, "cast_f64", 0,
	     NEEDS_FP64),
	MATMUL("naive", I32, "matmul_naive_i32", 1, 0),
	MATMUL("naive", I64, "matmul_naive_i64", 1, 0),
	MATMUL("naive", F64, "matmul_naive_f64", 1, NEEDS_FP64),
};

#define DESC_COUNT (sizeof descs / sizeof descs[0])

size_t ocl_kernel_slot_count(void)
{
	return DESC_COUNT * OCL_DTYPE_SLOTS;
}

/* Bindings and parameter block of each family, as plugin.h defines them. */
static const struct {
	uint32_t bindings;
	size_t params;
} family_shapes[] = {
	[FAM_NOOP] = {0, 0},
	[FAM_FILL] = {1, sizeof(struct wafer_fill_params)},
	[FAM_COPY] = {2, sizeof(struct wafer_elementwise_params)},
	[FAM_UNARY] = {2, sizeof(struct wafer_elementwise_params)},
	[FAM_BINARY] = {3, sizeof(struct wafer_elementwise_params)},
	[FAM_SCALAR] = {2, sizeof(struct wafer_scalar_params)},
	[FAM_STRIDED] = {3, sizeof(struct wafer_binary_strided_params)},
	[FAM_COPY_STRIDED] = {2, sizeof(struct wafer_strided_copy_params)},
	[FAM_CAST] = {2, sizeof(struct wafer_cast_params)},
	[FAM_ROWS] = {2, sizeof(struct wafer_rows_params)},
	[FAM_MATMUL] = {3, sizeof(struct wafer_matmul_params)},
	[FAM_CLBLAST] = {3, sizeof(struct wafer_matmul_params)},
};

static void family_shape(enum family fam, uint32_t *bindings, size_t *params)
{
	*bindings = family_shapes[fam].bindings;
	*params = family_shapes[fam].params;
}

static const char *const slot_names[OCL_DTYPE_SLOTS] = {
	"f32", "f16", "bf16", "i32", "i64", "f64"};

/* The cast kernel of target |dtype| among slot_names, or -1. */
static int cast_slot(uint32_t dtype)
{
	switch (dtype) {
	case WAFER_DTYPE_I64:
		return 4;
	case WAFER_DTYPE_F64:
		return 5;
	default:
		return wafer_plugin_cast_slot(dtype);
	}
}

/*===----------------------------------------------------------------------===
 * The device's table
 *===----------------------------------------------------------------------===*/

static int offered_on(const struct ocl_device *dev,
		      const struct ocl_kernel_desc *d)
{
	if ((d->needs & NEEDS_CLBLAST) && !ocl_clblast_available(dev, d->dtype))
		return 0;
	if ((d->needs & NEEDS_GROUP256) && dev->max_work_group < 256)
		return 0;
	if ((d->needs & NEEDS_FP64) && !dev->has_fp64)
		return 0;
	return 1;
}

wafer_status ocl_kernels_open(struct ocl_device *dev)
{
	size_t n = 0;

	dev->kernels = calloc(DESC_COUNT, sizeof *dev->kernels);
	dev->offered = calloc(DESC_COUNT, 1);
	if (!dev->kernels || !dev->offered) {
		ocl_host(dev)->set_error(OCL_NAME ": out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	for (size_t i = 0; i < DESC_COUNT; i++) {
		const struct ocl_kernel_desc *d = &descs[i];
		struct wafer_kernel *k = &dev->kernels[n];

		if (!offered_on(dev, d))
			continue;
		dev->offered[i] = 1;
		k->struct_size = sizeof *k;
		k->op = d->op;
		k->variant = d->variant;
		k->dtype = d->dtype;
		family_shape(d->family, &k->binding_count, &k->params_size);
		k->impl = d;
		n++;
	}
	dev->kernel_count = n;
	return WAFER_OK;
}

void ocl_kernels_close(struct ocl_device *dev)
{
	free(dev->kernels);
	free(dev->offered);
	dev->kernels = NULL;
	dev->offered = NULL;
	dev->kernel_count = 0;
}

/*===----------------------------------------------------------------------===
 * Launch: checks
 *===----------------------------------------------------------------------===*/

/* Every parameter block a launch may carry, copied out of the core's
 * (which may sit at any address). */
union params {
	struct wafer_fill_params fill;
	struct wafer_elementwise_params ew;
	struct wafer_scalar_params scalar;
	struct wafer_binary_strided_params strided;
	struct wafer_strided_copy_params copy;
	struct wafer_cast_params cast;
	struct wafer_rows_params rows;
	struct wafer_matmul_params mm;
};

/* A launch being prepared. */
struct job {
	struct ocl_queue *q;
	const struct ocl_kernel_desc *desc;
	const char *name; /* op, for messages */
	struct ocl_bound bind[OCL_MAX_BINDINGS];
	size_t elem[OCL_MAX_BINDINGS]; /* element size of each binding */
	size_t sizes[OCL_MAX_BINDINGS]; /* bytes of each binding */
	struct wafer_plugin_reach reach;
	union params p;
	const uint32_t *local_hint; /* launch->local */
};

static wafer_status bad_params(const struct job *j, const char *why)
{
	return wafer_plugin_reach_fail(&j->reach, WAFER_ERROR_INVALID_ARGUMENT,
				       "%s", why);
}

/* Checks that every element the parameters reach lies in its binding,
 * with the reach checks of <wafer/plugin_util.h>. */
static wafer_status check_extents(struct job *j)
{
	const union params *p = &j->p;
	const struct wafer_plugin_reach *r = &j->reach;
	size_t e = j->elem[0];
	wafer_status s;

	switch (j->desc->family) {
	case FAM_NOOP:
		return WAFER_OK;
	case FAM_FILL:
		return wafer_plugin_check_count(r, p->fill.count, e);
	case FAM_COPY:
	case FAM_UNARY:
	case FAM_BINARY:
		return wafer_plugin_check_count(r, p->ew.count, e);
	case FAM_SCALAR:
		return wafer_plugin_check_count(r, p->scalar.count, e);
	case FAM_STRIDED:
		return wafer_plugin_check_binary_strided(r, &p->strided, e,
							 NULL, NULL, NULL);
	case FAM_COPY_STRIDED:
		return wafer_plugin_check_copy_strided(r, &p->copy, e, NULL,
						       NULL);
	case FAM_CAST:
		if (p->cast.dtype_in != (uint32_t)j->desc->dtype ||
		    cast_slot(p->cast.dtype_out) < 0 ||
		    (p->cast.dtype_out == WAFER_DTYPE_F64 &&
		     !j->q->device->has_fp64))
			return bad_params(j, "dtype_in must be the entry's "
					     "dtype, dtype_out one of float32, "
					     "float16, bfloat16, int32, int64 "
					     "and float64 (with cl_khr_fp64)");
		j->elem[0] = wafer_plugin_dtype_size(p->cast.dtype_out);
		s = wafer_plugin_check_holds(r, 0, p->cast.count, j->elem[0]);
		return s == WAFER_OK
			       ? wafer_plugin_check_holds(r, 1, p->cast.count, e)
			       : s;
	case FAM_ROWS:
		return wafer_plugin_check_rows(
			r, &p->rows, e,
			strcmp(j->desc->op, WAFER_KERNEL_SOFTMAX) == 0, NULL);
	case FAM_MATMUL:
	case FAM_CLBLAST:
		return wafer_plugin_check_matmul(r, &p->mm, e, NULL);
	}
	return WAFER_OK;
}

/* Fills |j| for |launch|. The core checked the launch against our table
 * (plugin.h: kernel identity, binding count, parameter size, bindings
 * inside their handles and aligned); a plugin built with
 * -DWAFER_PLUGIN_DEBUG checks that again. What is left is the kernel's
 * own: how far the parameter block reaches. Every failure here is the
 * caller's and nothing has been enqueued. */
static wafer_status prepare(struct ocl_queue *q,
			    const struct wafer_launch *launch, struct job *j)
{
	struct ocl_device *dev = q->device;
	const struct wafer_host_services *host = ocl_host(dev);
	wafer_status status;

	memset(j, 0, sizeof *j);
	status = WAFER_PLUGIN_DEBUG_CHECK_LAUNCH(host, OCL_NAME, launch,
						 dev->alignment);
	if (status != WAFER_OK)
		return status;
	j->q = q;
	j->desc = launch->kernel->impl;
	j->name = j->desc->op;
	j->local_hint = launch->local;
	if (launch->params_size)
		memcpy(&j->p, launch->params,
		       launch->params_size < sizeof j->p ? launch->params_size
							 : sizeof j->p);
	for (uint32_t i = 0; i < launch->binding_count; i++) {
		const struct wafer_binding *b =
			wafer_plugin_array_at(launch->bindings, i);
		j->bind[i].mem = ocl_resource_mem(b->resource);
		j->bind[i].offset = b->offset;
		j->bind[i].size = b->size;
		j->sizes[i] = b->size;
		j->elem[i] = wafer_plugin_dtype_size(j->desc->dtype);
	}
	j->elem[0] = wafer_plugin_dtype_size(j->desc->dtype);
	j->reach = (struct wafer_plugin_reach){
		.host = host,
		.plugin = OCL_NAME,
		.kernel = j->name,
		.sizes = j->sizes,
		.binding_count = launch->binding_count,
	};
	return check_extents(j);
}

/*===----------------------------------------------------------------------===
 * Launch: kernels and arguments
 *===----------------------------------------------------------------------===*/

/* The queue's cl_kernel for descriptor |d| (sub-function |sub|), created
 * at its first use; builds the unit's program first if need be. */
static wafer_status queue_kernel(struct ocl_queue *q,
				 const struct ocl_kernel_desc *d, int sub,
				 cl_kernel *out_kernel, size_t *out_wg)
{
	struct ocl_device *dev = q->device;
	size_t slot = (size_t)(d - descs) * OCL_DTYPE_SLOTS + (size_t)sub;
	char name[64];
	cl_program program;
	wafer_status status;
	cl_int err;

	if (q->kernels[slot]) {
		*out_kernel = q->kernels[slot];
		*out_wg = q->kernel_wg[slot];
		return WAFER_OK;
	}
	status = ocl_unit_program_get(dev, d->unit, &program);
	if (status != WAFER_OK)
		return status;
	if (d->family == FAM_CAST)
		snprintf(name, sizeof name, "%s_%s", d->function,
			 slot_names[sub]);
	else
		snprintf(name, sizeof name, "%s", d->function);
	q->kernels[slot] = clCreateKernel(program, name, &err);
	if (!q->kernels[slot])
		return ocl_fail(ocl_host(dev), err, "clCreateKernel(%s)", name);
	if (clGetKernelWorkGroupInfo(q->kernels[slot], dev->entry->id,
				     CL_KERNEL_WORK_GROUP_SIZE,
				     sizeof q->kernel_wg[slot],
				     &q->kernel_wg[slot], NULL) != CL_SUCCESS ||
	    q->kernel_wg[slot] == 0)
		q->kernel_wg[slot] = 1;
	*out_kernel = q->kernels[slot];
	*out_wg = q->kernel_wg[slot];
	return WAFER_OK;
}

/* Sets arguments in order, keeping the first error. */
struct args {
	cl_kernel kernel;
	cl_uint next;
	cl_int err;
};

static void arg(struct args *a, size_t size, const void *value)
{
	if (a->err == CL_SUCCESS)
		a->err = clSetKernelArg(a->kernel, a->next, size, value);
	a->next++;
}

static void arg_u64(struct args *a, uint64_t v)
{
	cl_ulong x = v;
	arg(a, sizeof x, &x);
}

static void arg_u32(struct args *a, uint32_t v)
{
	cl_uint x = v;
	arg(a, sizeof x, &x);
}

static void arg_f32(struct args *a, float v)
{
	cl_float x = v;
	arg(a, sizeof x, &x);
}

/* Bindings 0 to |n| - 1, each as its buffer and its offset in elements. */
static void arg_bindings(struct args *a, const struct job *j, int n)
{
	for (int i = 0; i < n; i++) {
		arg(a, sizeof(cl_mem), &j->bind[i].mem);
		arg_u64(a, j->bind[i].offset / j->elem[i]);
	}
}

/* Elements in a shape of |rank| dimensions. */
static uint64_t shape_count(const uint64_t *shape, uint32_t rank)
{
	uint64_t n = 1;

	for (uint32_t i = 0; i < rank; i++)
		n *= shape[i];
	return n;
}

static void arg_vec8(struct args *a, const uint64_t *v)
{
	cl_ulong8 x;

	for (int i = 0; i < 8; i++)
		x.s[i] = v[i];
	arg(a, sizeof x, &x);
}

/* Largest power of two <= n (n >= 1). */
static size_t floor_pow2(size_t n)
{
	size_t p = 1;

	while (p * 2 <= n)
		p *= 2;
	return p;
}

/* Enqueues |kernel| over |dims| dimensions and hands its event to the
 * running timers. */
static wafer_status enqueue(const struct job *j, cl_kernel kernel,
			    cl_uint dims, const size_t *global,
			    const size_t *local)
{
	struct ocl_queue *q = j->q;
	cl_event event, *ev = ocl_queue_timing(q) ? &event : NULL;
	cl_int err;

	err = ocl_enqueue_ndrange(q, kernel, dims, global, local, ev);
	if (err != CL_SUCCESS)
		return ocl_fail(ocl_host(q->device), err,
				"clEnqueueNDRangeKernel(%s %s)", j->name,
				j->desc->variant);
	return ocl_queue_done(q, ev);
}

/* A 1-D launch of |n| items: work-groups of 256 (or what the kernel
 * allows, or the launch's hint when it fits), the global size rounded up
 * to whole groups; the kernels skip items past n. */
static wafer_status enqueue_1d(const struct job *j, cl_kernel kernel,
			       size_t wg, uint64_t n)
{
	size_t local = floor_pow2(wg < 256 ? wg : 256), global;

	if (n == 0)
		return WAFER_OK;
	if (j->local_hint[0] && j->local_hint[0] <= wg)
		local = j->local_hint[0];
	global = ((size_t)n + local - 1) / local * local;
	return enqueue(j, kernel, 1, &global, &local);
}

static wafer_status args_failed(const struct job *j, const struct args *a)
{
	return ocl_fail(ocl_host(j->q->device), a->err,
			"clSetKernelArg(%s %s, argument %u)", j->name,
			j->desc->variant, a->next - 1);
}

/*===----------------------------------------------------------------------===
 * Launch: one function per family
 *===----------------------------------------------------------------------===*/

/* Host-side rounding of fill values and scalars to the element type:
 * |v| rounded to nearest even with |bits| significant bits, exponents
 * down to |emin| (below that, subnormals: a fixed last place), and
 * +-infinity past |max|. The result is exact in a double and a float. */
static double round_format(double v, int bits, int emin, double max)
{
	double r;
	int e;

	if (v != v || v == 0 || isinf(v))
		return v;
	frexp(v, &e); /* |v| = m 2^e, m in [0.5, 1): leading bit 2^(e-1) */
	if (e - 1 < emin)
		e = emin + 1;
	r = ldexp(nearbyint(ldexp(v, bits - e)), e - bits);
	return fabs(r) > max ? copysign(INFINITY, v) : r;
}

#define HALF_MAX 65504.0
#define BF16_MAX 0x1.fep127

/* The f16 encoding of a value that round_format made exact. */
static uint16_t half_encode(double r)
{
	uint16_t sign = signbit(r) ? 0x8000u : 0;
	double a = fabs(r), m;
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

static uint16_t half_bits(double v)
{
	return half_encode(round_format(v, 11, -14, HALF_MAX));
}

/* bf16 is the upper half of a float: round, then the float's bits. */
static uint16_t bf16_bits(double v)
{
	union { float f; uint32_t u; } x;

	if (v != v)
		return 0x7fc0u;
	x.f = (float)round_format(v, 8, -126, BF16_MAX);
	return (uint16_t)(x.u >> 16);
}

/* A double as the dtype stores it, as the float the kernels compute
 * with: "s = scalar converted to the dtype". */
static float as_dtype(double v, wafer_dtype dtype)
{
	if (dtype == WAFER_DTYPE_F16)
		return (float)round_format(v, 11, -14, HALF_MAX);
	if (dtype == WAFER_DTYPE_BF16)
		return (float)round_format(v, 8, -126, BF16_MAX);
	return (float)v;
}

/* A scalar operand in the kernel's compute type: float for f32, f16 and
 * bf16 (rounded to the dtype first), else the dtype itself. */
static void arg_scalar(struct args *a, double v, wafer_dtype dtype)
{
	cl_int i;
	cl_long l;
	cl_double d;

	switch (dtype) {
	case WAFER_DTYPE_I32:
		i = wafer_plugin_double_to_i32(v);
		arg(a, sizeof i, &i);
		break;
	case WAFER_DTYPE_I64:
		l = wafer_plugin_double_to_i64(v);
		arg(a, sizeof l, &l);
		break;
	case WAFER_DTYPE_F64:
		d = v;
		arg(a, sizeof d, &d);
		break;
	default:
		arg_f32(a, as_dtype(v, dtype));
	}
}

static wafer_status run_fill(const struct job *j)
{
	struct ocl_queue *q = j->q;
	const struct ocl_bound *out = &j->bind[0];
	cl_event event, *ev = ocl_queue_timing(q) ? &event : NULL;
	union { float f; int32_t i; uint16_t h; double d; int64_t l; } pattern;
	size_t size = j->elem[0];
	cl_int err;

	if (j->p.fill.count == 0)
		return WAFER_OK;
	switch (j->desc->dtype) {
	case WAFER_DTYPE_F16: pattern.h = half_bits(j->p.fill.value); break;
	case WAFER_DTYPE_BF16: pattern.h = bf16_bits(j->p.fill.value); break;
	case WAFER_DTYPE_I32: pattern.i = wafer_plugin_double_to_i32(j->p.fill.value); break;
	case WAFER_DTYPE_I64: pattern.l = wafer_plugin_double_to_i64(j->p.fill.value); break;
	case WAFER_DTYPE_F64: pattern.d = j->p.fill.value; break;
	default: pattern.f = (float)j->p.fill.value; break;
	}
	err = ocl_enqueue_fill(q, out->mem, &pattern, size, out->offset,
			       (size_t)j->p.fill.count * size, ev);
	if (err != CL_SUCCESS)
		return ocl_fail(ocl_host(q->device), err,
				"clEnqueueFillBuffer(%" PRIu64 " elements)",
				j->p.fill.count);
	return ocl_queue_done(q, ev);
}

/* copy, and cast to the same type: a buffer copy (nothing when out and
 * in are the same slice). */
static wafer_status run_copy(const struct job *j, uint64_t count)
{
	size_t bytes = (size_t)count * j->elem[1];

	if (count == 0)
		return WAFER_OK;
	return ocl_storage_ops.copy(j->q->device, j->q,
				    ocl_mem_resource(j->bind[0].mem),
				    j->bind[0].offset,
				    ocl_mem_resource(j->bind[1].mem),
				    j->bind[1].offset, bytes);
}

/* noop, unary, binary, scalar, strided, copy_strided and cast: a 1-D
 * kernel, bindings first, then the family's parameters. */
static wafer_status run_1d(const struct job *j)
{
	const union params *p = &j->p;
	const struct ocl_kernel_desc *d = j->desc;
	int sub = 0;
	uint64_t n = 1;
	struct args a = {0};
	size_t wg;
	wafer_status status;

	if (d->family == FAM_CAST) {
		if (p->cast.dtype_out == (uint32_t)d->dtype)
			return run_copy(j, p->cast.count);
		sub = cast_slot(p->cast.dtype_out);
	}
	status = queue_kernel(j->q, d, sub, &a.kernel, &wg);
	if (status != WAFER_OK)
		return status;

	switch (d->family) {
	case FAM_NOOP: {
		size_t one = 1;
		return enqueue(j, a.kernel, 1, &one, &one);
	}
	case FAM_UNARY:
	case FAM_BINARY:
		arg_bindings(&a, j, d->family == FAM_UNARY ? 2 : 3);
		arg_u64(&a, n = p->ew.count);
		break;
	case FAM_SCALAR:
		arg_bindings(&a, j, 2);
		arg_u64(&a, n = p->scalar.count);
		arg_scalar(&a, p->scalar.scalar, d->dtype);
		arg_u32(&a, p->scalar.scalar_first ? 1 : 0);
		break;
	case FAM_STRIDED:
		arg_bindings(&a, j, 3);
		arg_u32(&a, p->strided.rank);
		arg_vec8(&a, p->strided.shape);
		arg_vec8(&a, p->strided.a_strides);
		arg_vec8(&a, p->strided.b_strides);
		arg_u64(&a, p->strided.a_offset);
		arg_u64(&a, p->strided.b_offset);
		arg_u64(&a, n = shape_count(p->strided.shape, p->strided.rank));
		break;
	case FAM_COPY_STRIDED:
		arg_bindings(&a, j, 2);
		arg_u32(&a, p->copy.rank);
		arg_vec8(&a, p->copy.shape);
		arg_vec8(&a, p->copy.strides);
		arg_u64(&a, p->copy.offset);
		arg_u64(&a, n = shape_count(p->copy.shape, p->copy.rank));
		break;
	case FAM_CAST:
		arg_bindings(&a, j, 2);
		arg_u64(&a, n = p->cast.count);
		break;
	default:
		return bad_params(j, "internal: not a 1-D family");
	}
	if (a.err != CL_SUCCESS)
		return args_failed(j, &a);
	return enqueue_1d(j, a.kernel, wg, n);
}

/* Reductions and softmax: one work-group per row, as wide as the row
 * needs up to 256 items (a power of two for the tree in rows.cl). */
static wafer_status run_rows(const struct job *j)
{
	const struct wafer_rows_params *p = &j->p.rows;
	struct args a = {0};
	size_t wg, local, global;
	wafer_status status;

	if (p->rows == 0)
		return WAFER_OK;
	status = queue_kernel(j->q, j->desc, 0, &a.kernel, &wg);
	if (status != WAFER_OK)
		return status;
	local = floor_pow2(wg < 256 ? wg : 256);
	while (local > 1 && local / 2 >= p->cols)
		local /= 2;
	arg_bindings(&a, j, 2);
	arg_u64(&a, p->rows);
	arg_u64(&a, p->cols);
	/* Room for 8-byte elements: int64 and float64 reduce in their own
	 * type. */
	arg(&a, local * sizeof(cl_double), NULL);
	if (a.err != CL_SUCCESS)
		return args_failed(j, &a);
	global = (size_t)p->rows * local;
	return enqueue(j, a.kernel, 1, &global, &local);
}

static wafer_status run_matmul(const struct job *j)
{
	const struct wafer_matmul_params *p = &j->p.mm;
	unsigned tile = j->desc->tile;
	struct args a = {0};
	size_t wg, global[3], local[3] = {16, 16, 1};
	wafer_status status;

	if (!p->batch || !p->m || !p->n || !p->k)
		return WAFER_OK;
	status = queue_kernel(j->q, j->desc, 0, &a.kernel, &wg);
	if (status != WAFER_OK)
		return status;
	arg_bindings(&a, j, 3);
	arg_u64(&a, p->m);
	arg_u64(&a, p->n);
	arg_u64(&a, p->k);
	arg_u32(&a, p->transpose_a ? 1 : 0);
	arg_u32(&a, p->transpose_b ? 1 : 0);
	arg_u64(&a, p->batch_stride_a);
	arg_u64(&a, p->batch_stride_b);
	arg_u64(&a, p->batch_stride_c);
	if (a.err != CL_SUCCESS)
		return args_failed(j, &a);
	global[2] = (size_t)p->batch;
	if (tile == 1) {
		/* naive: any group shape; 16x16 where the kernel allows it,
		 * the global size rounded up to it. */
		size_t side = wg >= 256 ? 16 : floor_pow2(wg) >= 16 ? 4 : 1;
		local[0] = local[1] = side;
		global[0] = ((size_t)p->n + side - 1) / side * side;
		global[1] = ((size_t)p->m + side - 1) / side * side;
	} else {
		/* tile x tile elements of C per 16x16 group. */
		global[0] = ((size_t)p->n + tile - 1) / tile * 16;
		global[1] = ((size_t)p->m + tile - 1) / tile * 16;
	}
	return enqueue(j, a.kernel, 3, global, local);
}

static wafer_status run_clblast(const struct job *j)
{
	const struct wafer_matmul_params *p = &j->p.mm;
	cl_event event, *ev = ocl_queue_timing(j->q) ? &event : NULL;
	wafer_status status;

	if (!p->batch || !p->m || !p->n || !p->k)
		return WAFER_OK;
	status = ocl_clblast_gemm(j->q, j->bind, p, j->desc->dtype, ev);
	return status == WAFER_OK ? ocl_queue_done(j->q, ev) : status;
}

wafer_status ocl_kernels_launch(struct ocl_queue *q,
				const struct wafer_launch *launch)
{
	struct job j;
	wafer_status status = prepare(q, launch, &j);

	if (status != WAFER_OK)
		return status;
	switch (j.desc->family) {
	case FAM_FILL:
		return run_fill(&j);
	case FAM_COPY:
		return run_copy(&j, j.p.ew.count);
	case FAM_ROWS:
		return run_rows(&j);
	case FAM_MATMUL:
		return run_matmul(&j);
	case FAM_CLBLAST:
		/* CLBlast enqueues on its own: not recorded (graph.c). */
		if (j.q->recording)
			return ocl_fail(ocl_host(j.q->device),
					CL_INVALID_OPERATION,
					"CLBlast's matmul cannot be recorded "
					"into a command buffer");
		return run_clblast(&j);
	default:
		return run_1d(&j);
	}
}
