/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels.c: the Level Zero plugin's kernel table (kernels.h) and the
 * host half of every kernel: which entry point of kernels.cl a launch
 * runs, what it passes, and how many work-groups it launches.
 *
 * A table entry's impl is a struct lz_kernel_impl: the family of the
 * operation (how its bindings and parameters map to kernel arguments) and
 * the SPIR-V kernel it runs. Each family has one prepare function that
 * checks the parameter block against the bindings — plugin.h leaves that
 * check to the plugin, and a kernel on a GPU must never be given a count
 * that reaches past its buffer — and fills the dispatch.
 *
 * Coverage: the whole catalogue of plugin.h in f32; fill also in i32;
 * copy and copy_strided also in i32, f16 and bf16; cast between f32, f16,
 * bf16 and i32. Nothing in f64 (many Intel GPUs have no fp64). */
#include "build-config.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "plugins/levelzero/kernels.h"
#include "plugins/levelzero/lz_plugin.h"

const char *const lz_spirv_kernels[LZ_SPIRV_KERNEL_COUNT] = {
#define LZ_NAME(name) #name,
	LZ_SPIRV_KERNELS(LZ_NAME)
#undef LZ_NAME
};

/*===----------------------------------------------------------------------===
 * Families
 *===----------------------------------------------------------------------===*/

enum lz_family {
	LZ_FAMILY_NOOP,
	LZ_FAMILY_FILL,           /* {out}; wafer_fill_params */
	LZ_FAMILY_UNARY,          /* {out, in}; wafer_elementwise_params */
	LZ_FAMILY_BINARY,         /* {out, a, b}; wafer_elementwise_params */
	LZ_FAMILY_SCALAR,         /* {out, a}; wafer_scalar_params */
	LZ_FAMILY_BINARY_STRIDED, /* {out, a, b}; wafer_binary_strided_params */
	LZ_FAMILY_COPY_STRIDED,   /* {out, in}; wafer_strided_copy_params */
	LZ_FAMILY_CAST,           /* {out, in}; wafer_cast_params */
	LZ_FAMILY_ROWS_REDUCE,    /* {out, in}; wafer_rows_params */
	LZ_FAMILY_ROWS_FULL,      /* {out, in}; wafer_rows_params */
	LZ_FAMILY_MATMUL,         /* {out, a, b}; wafer_matmul_params */
};

struct lz_kernel_impl {
	enum lz_family family;
	/* The SPIR-V kernel; cast picks its own by dtype_out. */
	enum lz_spirv_kernel kernel;
	/* Bytes per element of the entry's dtype. */
	size_t element_size;
};

/*===----------------------------------------------------------------------===
 * Checks and launch shapes
 *===----------------------------------------------------------------------===*/

/* Group size along x for a 1-D kernel: the launch's hint when the device
 * takes it, else LZ_GROUP_1D (or the device's largest, if smaller). */
static uint32_t group_size_1d(const struct lz_limits *limits,
			      const uint32_t local[3])
{
	uint32_t max = limits->max_group_size[0];

	if (max > limits->max_total_group_size)
		max = limits->max_total_group_size;
	if (local && local[0] && local[0] <= max)
		return local[0];
	return LZ_GROUP_1D < max ? LZ_GROUP_1D : max;
}

/* Groups to cover |n| items of |size| each, capped at |max| (the kernels'
 * grid-stride loops do the rest). */
static uint32_t groups_for(uint64_t n, uint32_t size, uint32_t max)
{
	uint64_t groups = n / size + (n % size != 0);

	return groups > max ? max : (uint32_t)groups;
}

static void shape_1d(struct lz_dispatch *d, const struct lz_limits *limits,
		     const uint32_t local[3], uint64_t count)
{
	uint32_t size = group_size_1d(limits, local);

	d->group_size[0] = size;
	d->group_size[1] = d->group_size[2] = 1;
	d->group_count[0] = groups_for(count, size, limits->max_group_count[0]);
	d->group_count[1] = d->group_count[2] = count ? 1 : 0;
}

static void arg(struct lz_dispatch *d, const void *value, size_t size)
{
	d->args[d->arg_count].value = value;
	d->args[d->arg_count].size = size;
	d->arg_count++;
}

/* Bindings 0..n-1 as the first n (pointer) arguments. */
static void arg_pointers(struct lz_dispatch *d, void *const ptrs[], uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		d->ptrs[i] = ptrs[i];
		arg(d, &d->ptrs[i], sizeof d->ptrs[i]);
	}
}

/* A 64-bit argument in word |w|. */
static void arg_u64(struct lz_dispatch *d, uint32_t w, uint64_t value)
{
	d->words[w] = value;
	arg(d, &d->words[w], sizeof(uint64_t));
}

/* A 32-bit argument (float, int or uint, as bits) in word |w|. */
static void arg_32(struct lz_dispatch *d, uint32_t w, const void *value)
{
	memcpy(&d->words[w], value, 4);
	arg(d, &d->words[w], 4);
}

/* The parameter block itself, by value (the kernel's struct is laid out
 * field for field like plugin.h's). */
static void arg_block(struct lz_dispatch *d, const void *params, size_t size)
{
	memcpy(d->block, params, size);
	arg(d, d->block, size);
}

/*===----------------------------------------------------------------------===
 * One prepare function per family
 *===----------------------------------------------------------------------===*/

struct prep {
	const struct wafer_kernel *entry;
	const struct lz_kernel_impl *impl;
	void *const *ptrs;
	const void *params;
	const uint32_t *local;
	const struct lz_limits *limits;
	/* For the reach checks of <wafer/plugin_util.h>, and the host and
	 * names every failure is reported with (wafer_plugin_reach_fail). */
	struct wafer_plugin_reach reach;
};

static wafer_status prep_noop(const struct prep *p, struct lz_dispatch *d)
{
	for (int i = 0; i < 3; i++)
		d->group_size[i] = d->group_count[i] = 1;
	return WAFER_OK;
}

/* out[i] = value converted to the dtype: f32 rounds, i32 truncates toward
 * zero and saturates (NaN gives 0), as cast does. */
static wafer_status prep_fill(const struct prep *p, struct lz_dispatch *d)
{
	struct wafer_fill_params fp;
	wafer_status status;

	memcpy(&fp, p->params, sizeof fp);
	status = wafer_plugin_check_holds(&p->reach, 0, fp.count,
					  p->impl->element_size);
	if (status != WAFER_OK)
		return status;
	arg_pointers(d, p->ptrs, 1);
	arg_u64(d, 1, fp.count);
	if (p->entry->dtype == WAFER_DTYPE_I32) {
		int32_t v;
		if (isnan(fp.value))
			v = 0;
		else if (fp.value >= 2147483647.0)
			v = INT32_MAX;
		else if (fp.value <= -2147483648.0)
			v = INT32_MIN;
		else
			v = (int32_t)fp.value;
		arg_32(d, 2, &v);
	} else {
		float v = (float)fp.value;
		arg_32(d, 2, &v);
	}
	shape_1d(d, p->limits, p->local, fp.count);
	return WAFER_OK;
}

/* The counted families' arguments once |status|, their check, is
 * WAFER_OK: |pointers| bindings, then |count| (a 64-bit argument), over
 * |count| work-items. */
static wafer_status counted_args(const struct prep *p, struct lz_dispatch *d,
				 wafer_status status, uint32_t pointers,
				 uint64_t count)
{
	if (status != WAFER_OK)
		return status;
	arg_pointers(d, p->ptrs, pointers);
	arg_u64(d, 0, count);
	shape_1d(d, p->limits, p->local, count);
	return WAFER_OK;
}

/* unary (and copy) and binary: every binding holds count elements. */
static wafer_status prep_elementwise(const struct prep *p,
				     struct lz_dispatch *d)
{
	struct wafer_elementwise_params ep;
	uint32_t n = p->entry->binding_count;
	wafer_status status;

	memcpy(&ep, p->params, sizeof ep);
	status = wafer_plugin_check_count(&p->reach, ep.count,
					  p->impl->element_size);
	return counted_args(p, d, status, n, ep.count);
}

static wafer_status prep_scalar(const struct prep *p, struct lz_dispatch *d)
{
	struct wafer_scalar_params sp;
	wafer_status status;
	float scalar;
	uint32_t first;

	memcpy(&sp, p->params, sizeof sp);
	if (sp.scalar_first > 1) {
		return wafer_plugin_reach_fail(&p->reach,
					       WAFER_ERROR_INVALID_ARGUMENT,
					       "scalar_first is %" PRIu32
					       ", not 0 or 1",
					       sp.scalar_first);
	}
	status = wafer_plugin_check_count(&p->reach, sp.count,
					  p->impl->element_size);
	status = counted_args(p, d, status, 2, sp.count);
	if (status != WAFER_OK)
		return status;
	scalar = (float)sp.scalar;
	first = sp.scalar_first;
	arg_32(d, 1, &scalar);
	arg_32(d, 2, &first);
	return WAFER_OK;
}

/* The strided families' arguments once |status|, their check, is
 * WAFER_OK: |pointers| bindings, the parameter block as it came (|block|
 * bytes) and |count| work-items. */
static wafer_status strided_args(const struct prep *p, struct lz_dispatch *d,
				 wafer_status status, uint32_t pointers,
				 size_t block, uint64_t count)
{
	if (status != WAFER_OK)
		return status;
	arg_pointers(d, p->ptrs, pointers);
	arg_block(d, p->params, block);
	shape_1d(d, p->limits, p->local, count);
	return WAFER_OK;
}

static wafer_status prep_binary_strided(const struct prep *p,
					struct lz_dispatch *d)
{
	struct wafer_binary_strided_params bp;
	uint64_t count = 0;
	wafer_status status;

	memcpy(&bp, p->params, sizeof bp);
	status = wafer_plugin_check_binary_strided(&p->reach, &bp,
						   p->impl->element_size,
						   &count, NULL, NULL);
	return strided_args(p, d, status, 3, sizeof bp, count);
}

static wafer_status prep_copy_strided(const struct prep *p,
				      struct lz_dispatch *d)
{
	struct wafer_strided_copy_params cp;
	uint64_t count = 0;
	wafer_status status;

	memcpy(&cp, p->params, sizeof cp);
	status = wafer_plugin_check_copy_strided(&p->reach, &cp,
						 p->impl->element_size, &count,
						 NULL);
	return strided_args(p, d, status, 2, sizeof cp, count);
}

/* cast_<in>_<out>; the diagonal is a plain copy of the element width. */
static const enum lz_spirv_kernel cast_kernels[4][4] = {
	{LZ_K_copy_b32, LZ_K_cast_f32_f16, LZ_K_cast_f32_bf16, LZ_K_cast_f32_i32},
	{LZ_K_cast_f16_f32, LZ_K_copy_b16, LZ_K_cast_f16_bf16, LZ_K_cast_f16_i32},
	{LZ_K_cast_bf16_f32, LZ_K_cast_bf16_f16, LZ_K_copy_b16, LZ_K_cast_bf16_i32},
	{LZ_K_cast_i32_f32, LZ_K_cast_i32_f16, LZ_K_cast_i32_bf16, LZ_K_copy_b32},
};

static wafer_status prep_cast(const struct prep *p, struct lz_dispatch *d)
{
	struct wafer_cast_params cp;
	int in, out;
	wafer_status status;

	memcpy(&cp, p->params, sizeof cp);
	in = wafer_plugin_cast_slot(cp.dtype_in);
	out = wafer_plugin_cast_slot(cp.dtype_out);
	if (cp.dtype_in != (uint32_t)p->entry->dtype || out < 0 || in < 0) {
		return wafer_plugin_reach_fail(
			&p->reach, WAFER_ERROR_INVALID_ARGUMENT,
			"from dtype %" PRIu32 " to %" PRIu32
			" is not offered by the %d entry (it converts to f32, "
			"f16, bf16 and i32)",
			cp.dtype_in, cp.dtype_out, (int)p->entry->dtype);
	}
	status = wafer_plugin_check_holds(&p->reach, 0, cp.count,
					  wafer_plugin_dtype_size(cp.dtype_out));
	if (status == WAFER_OK)
		status = wafer_plugin_check_holds(
			&p->reach, 1, cp.count,
			wafer_plugin_dtype_size(cp.dtype_in));
	d->kernel = cast_kernels[in][out];
	return counted_args(p, d, status, 2, cp.count);
}

/* Reductions and softmax: one group of LZ_ROW_GROUP items per row. */
static wafer_status prep_rows(const struct prep *p, struct lz_dispatch *d)
{
	struct wafer_rows_params rp;
	wafer_status status;

	memcpy(&rp, p->params, sizeof rp);
	if (p->limits->max_group_size[0] < LZ_ROW_GROUP ||
	    p->limits->max_total_group_size < LZ_ROW_GROUP) {
		return wafer_plugin_reach_fail(&p->reach,
					       WAFER_ERROR_NOT_SUPPORTED,
					       "the device's work-groups hold "
					       "fewer than %d items",
					       LZ_ROW_GROUP);
	}
	status = wafer_plugin_check_rows(&p->reach, &rp, p->impl->element_size,
					 p->impl->family == LZ_FAMILY_ROWS_FULL,
					 NULL);
	if (status != WAFER_OK)
		return status;
	arg_pointers(d, p->ptrs, 2);
	arg_u64(d, 0, rp.rows);
	arg_u64(d, 1, rp.cols);
	d->group_size[0] = LZ_ROW_GROUP;
	d->group_size[1] = d->group_size[2] = 1;
	d->group_count[0] = groups_for(rp.rows, 1, p->limits->max_group_count[0]);
	d->group_count[1] = d->group_count[2] = rp.rows ? 1 : 0;
	return WAFER_OK;
}

static wafer_status prep_matmul(const struct prep *p, struct lz_dispatch *d)
{
	struct wafer_matmul_params mp;
	wafer_status status;

	memcpy(&mp, p->params, sizeof mp);
	status = wafer_plugin_check_matmul(&p->reach, &mp,
					   p->impl->element_size, NULL);
	if (status != WAFER_OK)
		return status;
	if (p->limits->max_group_size[0] < LZ_TILE ||
	    p->limits->max_group_size[1] < LZ_TILE ||
	    p->limits->max_total_group_size < LZ_TILE * LZ_TILE) {
		return wafer_plugin_reach_fail(&p->reach,
					       WAFER_ERROR_NOT_SUPPORTED,
					       "the device's work-groups hold "
					       "fewer than %d x %d items",
					       LZ_TILE, LZ_TILE);
	}
	arg_pointers(d, p->ptrs, 3);
	arg_block(d, p->params, sizeof mp);
	d->group_size[0] = d->group_size[1] = LZ_TILE;
	d->group_size[2] = 1;
	d->group_count[0] = groups_for(mp.n, LZ_TILE, p->limits->max_group_count[0]);
	d->group_count[1] = groups_for(mp.m, LZ_TILE, p->limits->max_group_count[1]);
	d->group_count[2] = groups_for(mp.batch, 1, p->limits->max_group_count[2]);
	return WAFER_OK;
}

wafer_status lz_prepare(const struct wafer_host_services *host,
			const struct wafer_kernel *entry,
			void *const ptrs[], const size_t sizes[],
			const void *params, const uint32_t local[3],
			const struct lz_limits *limits, struct lz_dispatch *d)
{
	const struct lz_kernel_impl *impl = entry->impl;
	const struct prep p = {
		.entry = entry,
		.impl = impl,
		.ptrs = ptrs,
		.params = params,
		.local = local,
		.limits = limits,
		.reach = {
			.host = host,
			.plugin = "levelzero",
			.kernel = entry->op,
			.sizes = sizes,
			.binding_count = entry->binding_count,
		},
	};

	memset(d, 0, offsetof(struct lz_dispatch, block));
	d->kernel = impl->kernel;
	switch (impl->family) {
	case LZ_FAMILY_NOOP:
		return prep_noop(&p, d);
	case LZ_FAMILY_FILL:
		return prep_fill(&p, d);
	case LZ_FAMILY_UNARY:
	case LZ_FAMILY_BINARY:
		return prep_elementwise(&p, d);
	case LZ_FAMILY_SCALAR:
		return prep_scalar(&p, d);
	case LZ_FAMILY_BINARY_STRIDED:
		return prep_binary_strided(&p, d);
	case LZ_FAMILY_COPY_STRIDED:
		return prep_copy_strided(&p, d);
	case LZ_FAMILY_CAST:
		return prep_cast(&p, d);
	case LZ_FAMILY_ROWS_REDUCE:
	case LZ_FAMILY_ROWS_FULL:
		return prep_rows(&p, d);
	case LZ_FAMILY_MATMUL:
		return prep_matmul(&p, d);
	}
	host->set_error("levelzero: launch %s: unknown family %d", entry->op,
			(int)impl->family);
	return WAFER_ERROR_INTERNAL;
}

/*===----------------------------------------------------------------------===
 * The kernel table
 *===----------------------------------------------------------------------===*/

#define IMPL(name_, family_, kernel_, esize_)                                  \
	static const struct lz_kernel_impl name_ = {                           \
		.family = (family_),                                           \
		.kernel = (kernel_),                                           \
		.element_size = (esize_),                                      \
	}

IMPL(noop_impl, LZ_FAMILY_NOOP, LZ_K_noop, 0);
IMPL(fill_f32_impl, LZ_FAMILY_FILL, LZ_K_fill_f32, 4);
IMPL(fill_i32_impl, LZ_FAMILY_FILL, LZ_K_fill_i32, 4);
IMPL(copy_b32_impl, LZ_FAMILY_UNARY, LZ_K_copy_b32, 4);
IMPL(copy_b16_impl, LZ_FAMILY_UNARY, LZ_K_copy_b16, 2);
IMPL(copy_strided_b32_impl, LZ_FAMILY_COPY_STRIDED, LZ_K_copy_strided_b32, 4);
IMPL(copy_strided_b16_impl, LZ_FAMILY_COPY_STRIDED, LZ_K_copy_strided_b16, 2);
/* cast picks cast_kernels[in][out] at launch; the kernel here is unused. */
IMPL(cast_f32_impl, LZ_FAMILY_CAST, LZ_K_copy_b32, 4);
IMPL(cast_f16_impl, LZ_FAMILY_CAST, LZ_K_copy_b16, 2);
IMPL(cast_bf16_impl, LZ_FAMILY_CAST, LZ_K_copy_b16, 2);
IMPL(cast_i32_impl, LZ_FAMILY_CAST, LZ_K_copy_b32, 4);
IMPL(matmul_impl, LZ_FAMILY_MATMUL, LZ_K_matmul_f32, 4);

/* <name>_impl of each catalogue row (and <name>_scalar_impl,
 * <name>_strided_impl of a binary one), running the row's _f32 kernels. */
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference)                   \
	IMPL(name##_impl, LZ_FAMILY_UNARY, LZ_K_##name##_f32, 4);
#define WAFER_CATALOGUE_BINARY(name, NAME, reference)                          \
	IMPL(name##_impl, LZ_FAMILY_BINARY, LZ_K_##name##_f32, 4);             \
	IMPL(name##_scalar_impl, LZ_FAMILY_SCALAR, LZ_K_##name##_scalar_f32,   \
	     4);                                                               \
	IMPL(name##_strided_impl, LZ_FAMILY_BINARY_STRIDED,                    \
	     LZ_K_##name##_strided_f32, 4);
#define WAFER_CATALOGUE_ROWS(name, NAME, dtypes, output)                       \
	IMPL(name##_impl, LZ_FAMILY_ROWS_##output, LZ_K_##name##_f32, 4);
#include <wafer/catalogue.def>

#define ENTRY(op_, dtype_, bindings_, params_size_, impl_)                     \
	{                                                                      \
		.struct_size = sizeof(struct wafer_kernel),                    \
		.op = (op_),                                                   \
		.variant = "default",                                          \
		.dtype = (dtype_),                                             \
		.binding_count = (bindings_),                                  \
		.params_size = (params_size_),                                 \
		.impl = &(impl_),                                              \
	}
#define F32 WAFER_DTYPE_F32
#define EW sizeof(struct wafer_elementwise_params)
#define COPY_STRIDED(dtype, impl)                                              \
	ENTRY(WAFER_KERNEL_COPY_STRIDED, dtype, 2,                             \
	      sizeof(struct wafer_strided_copy_params), impl)
#define CAST(dtype, impl)                                                      \
	ENTRY(WAFER_KERNEL_CAST, dtype, 2, sizeof(struct wafer_cast_params), impl)

/* Bindings and parameter blocks as the catalogue in plugin.h defines them;
 * every catalogue row in f32. */
static const struct wafer_kernel kernel_table[] = {
	ENTRY(WAFER_KERNEL_NOOP, F32, 0, 0, noop_impl),
	ENTRY(WAFER_KERNEL_FILL, F32, 1, sizeof(struct wafer_fill_params),
	      fill_f32_impl),
	ENTRY(WAFER_KERNEL_FILL, WAFER_DTYPE_I32, 1,
	      sizeof(struct wafer_fill_params), fill_i32_impl),
	ENTRY(WAFER_KERNEL_COPY, F32, 2, EW, copy_b32_impl),
	ENTRY(WAFER_KERNEL_COPY, WAFER_DTYPE_I32, 2, EW, copy_b32_impl),
	ENTRY(WAFER_KERNEL_COPY, WAFER_DTYPE_F16, 2, EW, copy_b16_impl),
	ENTRY(WAFER_KERNEL_COPY, WAFER_DTYPE_BF16, 2, EW, copy_b16_impl),
	/* The catalogue's unary and binary kernels, a binary one with its
	 * scalar and strided forms. */
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference)                   \
	ENTRY(WAFER_KERNEL_##NAME, F32, 2, EW, name##_impl),
#define WAFER_CATALOGUE_BINARY(name, NAME, reference)                          \
	ENTRY(WAFER_KERNEL_##NAME, F32, 3, EW, name##_impl),                   \
		ENTRY(WAFER_KERNEL_##NAME##_SCALAR, F32, 2,                    \
		      sizeof(struct wafer_scalar_params), name##_scalar_impl), \
		ENTRY(WAFER_KERNEL_##NAME##_STRIDED, F32, 3,                   \
		      sizeof(struct wafer_binary_strided_params),              \
		      name##_strided_impl),
#include <wafer/catalogue.def>
	COPY_STRIDED(F32, copy_strided_b32_impl),
	COPY_STRIDED(WAFER_DTYPE_I32, copy_strided_b32_impl),
	COPY_STRIDED(WAFER_DTYPE_F16, copy_strided_b16_impl),
	COPY_STRIDED(WAFER_DTYPE_BF16, copy_strided_b16_impl),
	CAST(F32, cast_f32_impl),
	CAST(WAFER_DTYPE_F16, cast_f16_impl),
	CAST(WAFER_DTYPE_BF16, cast_bf16_impl),
	CAST(WAFER_DTYPE_I32, cast_i32_impl),
	/* The catalogue's row kernels. */
#define WAFER_CATALOGUE_ROWS(name, NAME, dtypes, output)                       \
	ENTRY(WAFER_KERNEL_##NAME, F32, 2, sizeof(struct wafer_rows_params),   \
	      name##_impl),
#include <wafer/catalogue.def>
	ENTRY(WAFER_KERNEL_MATMUL, F32, 3, sizeof(struct wafer_matmul_params),
	      matmul_impl),
};

#define KERNEL_COUNT (sizeof kernel_table / sizeof kernel_table[0])

const struct wafer_kernel *lz_kernel_table(size_t *out_count)
{
	*out_count = KERNEL_COUNT;
	return kernel_table;
}

