/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels.c: the cuda plugin's kernel table and launches.
 *
 * The descriptors below list every (op, variant, dtype) the plugin knows,
 * with the CUDA function serving it (the .cu files under kernels/,
 * embedded as fatbins by fatbins.S). When a device opens, its context loads each module once
 * (cuModuleLoadData: the driver picks the SASS for the GPU, or compiles
 * the PTX for a GPU newer than the SASS) and resolves the functions of
 * the descriptors the GPU can run; those become the device's table.
 *
 * A launch checks what plugin.h promises the core checks too (binding
 * count, parameter block size, that each binding holds what the
 * parameters name), so no kernel ever runs past a binding, then shapes
 * the grid by the descriptor's launch kind. */
#include "build-config.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cuda/cublas.h"
#include "plugins/cuda/cuda_plugin.h"
#include "plugins/cuda/kernels/args.h"

/* Blocks of 256 threads resident per multiprocessor at full occupancy
 * (2048 threads): a grid-stride kernel needs no more than one such wave. */
#define ELEMENTWISE_BLOCKS_PER_SM 8

/* The largest grid y and z extents. */
#define GRID_YZ_MAX 65535u

/*===----------------------------------------------------------------------===
 * The descriptors
 *===----------------------------------------------------------------------===*/

#define NOOP_DESC                                                              \
	{                                                                      \
		.op = WAFER_KERNEL_NOOP, .variant = "default",                 \
		.dtype = WAFER_DTYPE_F32, .binding_count = 0,                  \
		.params_size = 0, .symbol = "wafer_noop",                      \
		.module = CUDA_MODULE_ELEMENTWISE, .kind = CUDA_LAUNCH_NOOP,   \
		.min_arch = 80, .threads = 1,                                  \
	}

/* An entry of |kind| in |module| served by |symbol|. */
#define DESC(op_, dtype_, bindings_, params_, module_, kind_, symbol_,         \
	     wide_, size_)                                                     \
	{                                                                      \
		.op = op_, .variant = "default", .dtype = dtype_,              \
		.binding_count = bindings_, .params_size = sizeof(params_),    \
		.symbol = symbol_, .symbol_wide = wide_, .module = module_,    \
		.kind = kind_, .min_arch = 80, .threads = 256,                 \
		.element_size = size_,                                         \
	}

/* wafer_<op>_<dtype> in f32, f16 and bf16. */
#define EW3(op_, bindings_, params_)                                           \
	DESC(op_, WAFER_DTYPE_F32, bindings_, params_,                         \
	     CUDA_MODULE_ELEMENTWISE, CUDA_LAUNCH_ELEMENTWISE,                 \
	     "wafer_" op_ "_f32", NULL, 4),                                    \
	DESC(op_, WAFER_DTYPE_F16, bindings_, params_,                         \
	     CUDA_MODULE_ELEMENTWISE, CUDA_LAUNCH_ELEMENTWISE,                 \
	     "wafer_" op_ "_f16", NULL, 2),                                    \
	DESC(op_, WAFER_DTYPE_BF16, bindings_, params_,                        \
	     CUDA_MODULE_ELEMENTWISE, CUDA_LAUNCH_ELEMENTWISE,                 \
	     "wafer_" op_ "_bf16", NULL, 2)

#define UNARY(op_) EW3(op_, 2, struct wafer_elementwise_params)
#define BINARY(op_) EW3(op_, 3, struct wafer_elementwise_params)
#define SCALAR(op_) EW3(op_, 2, struct wafer_scalar_params)

/* wafer_<op>_strided_<dtype>, and its _i64 twin. */
#define STRIDED1(op_, dtype_, suffix_, size_)                                  \
	DESC(op_ "_strided", dtype_, 3, struct wafer_binary_strided_params,    \
	     CUDA_MODULE_STRIDED, CUDA_LAUNCH_STRIDED,                         \
	     "wafer_" op_ "_strided_" suffix_,                                 \
	     "wafer_" op_ "_strided_" suffix_ "_i64", size_)
#define STRIDED(op_)                                                           \
	STRIDED1(op_, WAFER_DTYPE_F32, "f32", 4),                              \
	STRIDED1(op_, WAFER_DTYPE_F16, "f16", 2),                              \
	STRIDED1(op_, WAFER_DTYPE_BF16, "bf16", 2)

/* Moves by element size: b32 for f32 and i32, b16 for f16 and bf16. */
#define COPY(dtype_, bits_, size_)                                             \
	DESC(WAFER_KERNEL_COPY, dtype_, 2, struct wafer_elementwise_params,    \
	     CUDA_MODULE_ELEMENTWISE, CUDA_LAUNCH_ELEMENTWISE,                 \
	     "wafer_copy_" bits_, NULL, size_)
#define GATHER(dtype_, bits_, size_)                                           \
	DESC(WAFER_KERNEL_COPY_STRIDED, dtype_, 2,                             \
	     struct wafer_strided_copy_params, CUDA_MODULE_STRIDED,            \
	     CUDA_LAUNCH_GATHER, "wafer_copy_strided_" bits_,                  \
	     "wafer_copy_strided_" bits_ "_i64", size_)

/* From |dtype_| to each of f32, f16, bf16, i32: wafer_cast_<from>_<to>. */
#define CAST(dtype_, from_, size_)                                             \
	DESC(WAFER_KERNEL_CAST, dtype_, 2, struct wafer_cast_params,           \
	     CUDA_MODULE_STRIDED, CUDA_LAUNCH_CAST, "wafer_cast_" from_, NULL, \
	     size_)

#define ROWS3(op_, kind_)                                                      \
	DESC(op_, WAFER_DTYPE_F32, 2, struct wafer_rows_params,                \
	     CUDA_MODULE_REDUCE, kind_, "wafer_" op_ "_f32", NULL, 4),          \
	DESC(op_, WAFER_DTYPE_F16, 2, struct wafer_rows_params,                \
	     CUDA_MODULE_REDUCE, kind_, "wafer_" op_ "_f16", NULL, 2),          \
	DESC(op_, WAFER_DTYPE_BF16, 2, struct wafer_rows_params,               \
	     CUDA_MODULE_REDUCE, kind_, "wafer_" op_ "_bf16", NULL, 2)

/* A matmul kernel: symbol wafer_matmul_<suffix>_<variant>, computing
 * tm x tn of C per block (the numbers in kernels/matmul.cu). */
#define MM_FIELDS(variant_, dtype_, suffix_, size_, tm_, tn_)                  \
	.op = WAFER_KERNEL_MATMUL, .variant = variant_, .dtype = dtype_,       \
	.binding_count = 3,                                                    \
	.params_size = sizeof(struct wafer_matmul_params),                     \
	.symbol = "wafer_matmul_" suffix_ "_" variant_,                        \
	.module = CUDA_MODULE_MATMUL, .kind = CUDA_LAUNCH_MATMUL,              \
	.min_arch = 80, .threads = 256, .tile_m = tm_, .tile_n = tn_,          \
	.element_size = size_
#define MM(...) {MM_FIELDS(__VA_ARGS__)}

/* Register-blocked, one kernel per layout; tile64 serves what they
 * cannot. */
#define MM_REG(...)                                                            \
	{MM_FIELDS(__VA_ARGS__), .layouts = 1, .fallback = "tile64"}

#define MM_CUBLAS(dtype_, size_)                                               \
	{                                                                      \
		.op = WAFER_KERNEL_MATMUL, .variant = "cublas",                \
		.dtype = dtype_, .binding_count = 3,                           \
		.params_size = sizeof(struct wafer_matmul_params),             \
		.kind = CUDA_LAUNCH_CUBLAS, .min_arch = 80,                    \
		.element_size = size_,                                         \
	}

/* The matmul variants of f16 and bf16, the default first. */
#define MM_16BIT(dtype_, name_)                                                \
	MM("tile64", dtype_, name_, 2, 64, 64),                                \
		MM("tile128", dtype_, name_, 2, 128, 128),                     \
		MM_REG("reg128", dtype_, name_, 2, 128, 128),                  \
		MM_REG("reg128x64", dtype_, name_, 2, 128, 64),                \
		MM("wmma", dtype_, name_, 2, 128, 128),                        \
		MM_CUBLAS(dtype_, 2)

/* typed.cu: float64, int32, int64 and uint8 (T4 stamps an entry per
 * type). |s_| completes the kernel's name. */
#define TYPED(op_, dtype_, bindings_, params_, kind_, s_, wide_, size_)        \
	DESC(op_, dtype_, bindings_, params_, CUDA_MODULE_TYPED, kind_,        \
	     "wafer_" s_, wide_, size_)
#define T4(M, ...)                                                             \
	M(__VA_ARGS__, WAFER_DTYPE_F64, "f64", 8),                             \
	M(__VA_ARGS__, WAFER_DTYPE_I32, "i32", 4),                             \
	M(__VA_ARGS__, WAFER_DTYPE_I64, "i64", 8),                             \
	M(__VA_ARGS__, WAFER_DTYPE_U8, "u8", 1)
#define T_EW(op_, bindings_, params_, dtype_, s_, size_)                       \
	TYPED(op_, dtype_, bindings_, params_, CUDA_LAUNCH_ELEMENTWISE,        \
	      op_ "_" s_, NULL, size_)
#define T_BINARY(op_, dtype_, s_, size_)                                       \
	T_EW(op_, 3, struct wafer_elementwise_params, dtype_, s_, size_),      \
	T_EW(op_ "_scalar", 2, struct wafer_scalar_params, dtype_, s_, size_), \
	TYPED(op_ "_strided", dtype_, 3, struct wafer_binary_strided_params,   \
	      CUDA_LAUNCH_STRIDED, op_ "_strided_" s_,                         \
	      "wafer_" op_ "_strided_" s_ "_i64", size_)
#define T_ROWS(op_, kind_, dtype_, s_, size_)                                  \
	TYPED(op_, dtype_, 2, struct wafer_rows_params, kind_, op_ "_" s_,     \
	      NULL, size_)
#define T_MATMUL(dtype_, s_, size_)                                            \
	{                                                                      \
		.op = WAFER_KERNEL_MATMUL, .variant = "tile64",                \
		.dtype = dtype_, .binding_count = 3,                           \
		.params_size = sizeof(struct wafer_matmul_params),             \
		.symbol = "wafer_matmul_" s_ "_tile64",                        \
		.module = CUDA_MODULE_TYPED, .kind = CUDA_LAUNCH_MATMUL,       \
		.min_arch = 80, .threads = 256, .tile_m = 64, .tile_n = 64,    \
		.element_size = size_,                                         \
	}
/* Moves by element size. */
#define T_COPY(dtype_, bits_, size_)                                           \
	TYPED(WAFER_KERNEL_COPY, dtype_, 2, struct wafer_elementwise_params,   \
	      CUDA_LAUNCH_ELEMENTWISE, "copy_" bits_, NULL, size_),            \
	TYPED(WAFER_KERNEL_COPY_STRIDED, dtype_, 2,                            \
	      struct wafer_strided_copy_params, CUDA_LAUNCH_GATHER,            \
	      "copy_strided_" bits_, "wafer_copy_strided_" bits_ "_i64", size_)

/* A catalogue row's dtypes (catalogue.def) in typed.cu: ANY is all four,
 * FLOAT float64 alone. */
#define TYPED_ANY(M, ...) T4(M, __VA_ARGS__)
#define TYPED_FLOAT(M, ...) M(__VA_ARGS__, WAFER_DTYPE_F64, "f64", 8)
/* The launch of a catalogue row kernel by its output. */
#define ROWS_KIND_REDUCE CUDA_LAUNCH_ROWS
#define ROWS_KIND_FULL CUDA_LAUNCH_ROWS_FULL

/* Table order matters: the first entry of an (op, dtype) is its default
 * variant. */
const struct cuda_kernel_desc cuda_kernel_descs[] = {
	NOOP_DESC,
	EW3(WAFER_KERNEL_FILL, 1, struct wafer_fill_params),
	COPY(WAFER_DTYPE_F32, "b32", 4),
	COPY(WAFER_DTYPE_F16, "b16", 2),
	COPY(WAFER_DTYPE_BF16, "b16", 2),
	COPY(WAFER_DTYPE_I32, "b32", 4),

	/* The catalogue's unary, binary (with its scalar and strided
	 * forms) and row kernels. */
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference)                   \
	UNARY(WAFER_KERNEL_##NAME),
#define WAFER_CATALOGUE_BINARY(name, NAME, reference)                          \
	BINARY(WAFER_KERNEL_##NAME), SCALAR(WAFER_KERNEL_##NAME##_SCALAR),     \
		STRIDED(WAFER_KERNEL_##NAME),
#define WAFER_CATALOGUE_ROWS(name, NAME, dtypes, output)                       \
	ROWS3(WAFER_KERNEL_##NAME, ROWS_KIND_##output),
#include <wafer/catalogue.def>

	GATHER(WAFER_DTYPE_F32, "b32", 4),
	GATHER(WAFER_DTYPE_F16, "b16", 2),
	GATHER(WAFER_DTYPE_BF16, "b16", 2),
	GATHER(WAFER_DTYPE_I32, "b32", 4),

	CAST(WAFER_DTYPE_F32, "f32", 4),
	CAST(WAFER_DTYPE_F16, "f16", 2),
	CAST(WAFER_DTYPE_BF16, "bf16", 2),
	CAST(WAFER_DTYPE_I32, "i32", 4),

	MM("tile64", WAFER_DTYPE_F32, "f32", 4, 64, 64),
	MM("tile128", WAFER_DTYPE_F32, "f32", 4, 128, 128),
	MM_REG("reg128", WAFER_DTYPE_F32, "f32", 4, 128, 128),
	MM_REG("reg128k16", WAFER_DTYPE_F32, "f32", 4, 128, 128),
	MM_REG("reg128x64", WAFER_DTYPE_F32, "f32", 4, 128, 64),
	MM_REG("warp128", WAFER_DTYPE_F32, "f32", 4, 128, 128),
	MM_REG("warp128x256", WAFER_DTYPE_F32, "f32", 4, 128, 256),
	MM("tf32", WAFER_DTYPE_F32, "f32", 4, 128, 128),
	MM_CUBLAS(WAFER_DTYPE_F32, 4),
	MM_16BIT(WAFER_DTYPE_F16, "f16"),
	MM_16BIT(WAFER_DTYPE_BF16, "bf16"),

	CAST(WAFER_DTYPE_U8, "u8", 1),
	CAST(WAFER_DTYPE_F64, "f64", 8),
	CAST(WAFER_DTYPE_I64, "i64", 8),
	T4(T_EW, WAFER_KERNEL_FILL, 1, struct wafer_fill_params),
	T_COPY(WAFER_DTYPE_F64, "b64", 8),
	T_COPY(WAFER_DTYPE_I64, "b64", 8),
	T_COPY(WAFER_DTYPE_U8, "b8", 1),
	/* The catalogue's again, in the dtypes each row allows. */
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference)                   \
	TYPED_##dtypes(T_EW, WAFER_KERNEL_##NAME, 2,                           \
		       struct wafer_elementwise_params),
#define WAFER_CATALOGUE_BINARY(name, NAME, reference)                          \
	TYPED_ANY(T_BINARY, WAFER_KERNEL_##NAME),
#define WAFER_CATALOGUE_ROWS(name, NAME, dtypes, output)                       \
	TYPED_##dtypes(T_ROWS, WAFER_KERNEL_##NAME, ROWS_KIND_##output),
#include <wafer/catalogue.def>
	T_MATMUL(WAFER_DTYPE_F64, "f64", 8),
	T_MATMUL(WAFER_DTYPE_I32, "i32", 4),
	T_MATMUL(WAFER_DTYPE_I64, "i64", 8),
	T_MATMUL(WAFER_DTYPE_U8, "u8", 1),
	MM_CUBLAS(WAFER_DTYPE_F64, 8),
};

const size_t cuda_kernel_desc_count =
	sizeof cuda_kernel_descs / sizeof cuda_kernel_descs[0];

static const unsigned char *const module_images[CUDA_MODULE_COUNT] = {
	[CUDA_MODULE_ELEMENTWISE] = cuda_fatbin_elementwise,
	[CUDA_MODULE_STRIDED] = cuda_fatbin_strided,
	[CUDA_MODULE_REDUCE] = cuda_fatbin_reduce,
	[CUDA_MODULE_MATMUL] = cuda_fatbin_matmul,
	[CUDA_MODULE_TYPED] = cuda_fatbin_typed,
};

static const char *const module_names[CUDA_MODULE_COUNT] = {
	[CUDA_MODULE_ELEMENTWISE] = "elementwise",
	[CUDA_MODULE_STRIDED] = "strided",
	[CUDA_MODULE_REDUCE] = "reduce",
	[CUDA_MODULE_MATMUL] = "matmul",
	[CUDA_MODULE_TYPED] = "typed",
};

/* The dtypes a cast converts into, in the order of device->family[i]
 * (and of strided.cu's CAST_TO_ALL). */
static const char *const cast_names[CUDA_FAMILY_MAX] = {
	"f32", "f16", "bf16", "i32", "u8", "f64", "i64"};

/* |dtype|'s place in cast_names; -1 if no cast makes it. */
static int cast_target(uint32_t dtype)
{
	static const wafer_dtype order[CUDA_FAMILY_MAX] = {
		WAFER_DTYPE_F32, WAFER_DTYPE_F16, WAFER_DTYPE_BF16,
		WAFER_DTYPE_I32, WAFER_DTYPE_U8,  WAFER_DTYPE_F64,
		WAFER_DTYPE_I64};

	for (int i = 0; i < CUDA_FAMILY_MAX; i++)
		if (order[i] == dtype)
			return i;
	return -1;
}

/*===----------------------------------------------------------------------===
 * Opening a device
 *===----------------------------------------------------------------------===*/

/* Whether |device| offers |d|: its GPU is new enough, and for cuBLAS the
 * library loaded and has the dtype. */
static int offered(const struct cuda_device *device,
		   const struct cuda_kernel_desc *d)
{
	if (d->min_arch > device->arch)
		return 0;
	if (d->kind == CUDA_LAUNCH_CUBLAS)
		return device->cublas &&
		       cuda_cublas_has_dtype(device->cublas, d->dtype);
	return 1;
}

static wafer_status get_function(struct cuda_device *device,
				 enum cuda_module module, const char *name,
				 CUfunction *out)
{
	CUresult result = device->drv->cuModuleGetFunction(
		out, device->modules[module], name);

	if (result == CUDA_SUCCESS)
		return WAFER_OK;
	*out = NULL;
	return cuda_fail(device->state, result, "cuModuleGetFunction(%s, %s)",
			 module_names[module], name);
}

/* The functions of family descriptor |i|: its symbol followed by each of
 * the |n| suffixes; the table entry takes the first (it needs a non-NULL
 * function too). */
static wafer_status resolve_family(struct cuda_device *device, size_t i,
				   const char *const *suffixes, int n)
{
	const struct cuda_kernel_desc *d = &cuda_kernel_descs[i];
	wafer_status status = WAFER_OK;
	char name[128];

	for (int t = 0; t < n && status == WAFER_OK; t++) {
		snprintf(name, sizeof name, "%s_%s", d->symbol, suffixes[t]);
		status = get_function(device, d->module, name,
				      &device->family[i][t]);
	}
	device->functions[i] = device->family[i][0];
	return status;
}

/* The functions behind descriptor |i|. */
static wafer_status resolve_desc(struct cuda_device *device, size_t i)
{
	static const char *const layouts[4] = {"nn", "nt", "tn", "tt"};
	const struct cuda_kernel_desc *d = &cuda_kernel_descs[i];
	wafer_status status;

	if (!d->symbol)
		return WAFER_OK;
	if (d->kind == CUDA_LAUNCH_CAST)
		return resolve_family(device, i, cast_names, CUDA_FAMILY_MAX);
	if (d->layouts)
		return resolve_family(device, i, layouts, 4);
	status = get_function(device, d->module, d->symbol,
			      &device->functions[i]);
	if (status == WAFER_OK && d->symbol_wide)
		status = get_function(device, d->module, d->symbol_wide,
				      &device->wide[i]);
	return status;
}

int cuda_kernels_open(struct cuda_device *device)
{
	const struct cuda_driver *drv = device->drv;
	const struct cuda_state *st = device->state;
	size_t n = cuda_kernel_desc_count;
	wafer_status status;
	CUresult result;

	for (int m = 0; m < CUDA_MODULE_COUNT; m++) {
		result = drv->cuModuleLoadData(&device->modules[m],
					       module_images[m]);
		if (result != CUDA_SUCCESS) {
			device->modules[m] = NULL;
			cuda_kernels_close(device);
			return cuda_fail(st, result,
					 "cuModuleLoadData(%s) on GPU %d "
					 "(compute %d.%d)",
					 module_names[m], device->ordinal,
					 device->arch / 10, device->arch % 10);
		}
	}
	device->functions = calloc(n, sizeof *device->functions);
	device->wide = calloc(n, sizeof *device->wide);
	device->family = calloc(n, sizeof *device->family);
	device->table = calloc(n, sizeof *device->table);
	if (!device->functions || !device->wide || !device->family ||
	    !device->table) {
		cuda_kernels_close(device);
		st->host->set_error("cuda: out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	device->table_count = 0;
	for (size_t i = 0; i < n; i++) {
		const struct cuda_kernel_desc *d = &cuda_kernel_descs[i];

		if (!offered(device, d))
			continue;
		status = resolve_desc(device, i);
		if (status != WAFER_OK) {
			cuda_kernels_close(device);
			return status;
		}
		device->table[device->table_count++] = (struct wafer_kernel){
			.struct_size = sizeof(struct wafer_kernel),
			.op = d->op,
			.variant = d->variant,
			.dtype = d->dtype,
			.binding_count = d->binding_count,
			.params_size = d->params_size,
			.impl = d,
		};
	}
	return WAFER_OK;
}

void cuda_kernels_close(struct cuda_device *device)
{
	for (int m = 0; m < CUDA_MODULE_COUNT; m++) {
		if (device->modules[m])
			device->drv->cuModuleUnload(device->modules[m]);
		device->modules[m] = NULL;
	}
	free(device->functions);
	free(device->wide);
	free(device->family);
	free(device->table);
	device->functions = NULL;
	device->wide = NULL;
	device->family = NULL;
	device->table = NULL;
	device->table_count = 0;
}

/*===----------------------------------------------------------------------===
 * Launches
 *===----------------------------------------------------------------------===*/

/* The most bindings any descriptor takes, and the largest parameter
 * block. */
#define MAX_BINDINGS 4
#define MAX_PARAMS 1024

/* A launch resolved against its descriptor. */
struct resolved {
	uint32_t binding_count;
	CUdeviceptr ptr[MAX_BINDINGS];
	size_t size[MAX_BINDINGS];
	/* The parameter block, copied to aligned storage: the core's copy
	 * may sit at any address. */
	_Alignas(16) unsigned char params[MAX_PARAMS];
	size_t params_size;
	/* For the reach checks of <wafer/plugin_util.h>. */
	struct wafer_plugin_reach reach;
};


/* Resolves |launch| (which the core checked against the table entry:
 * binding count, parameter size, bindings inside their handles and
 * aligned) into device pointers and an aligned copy of the parameters. */
static wafer_status resolve(const struct cuda_device *dev,
			    const struct cuda_kernel_desc *d,
			    const struct wafer_launch *launch,
			    struct resolved *r)
{
	wafer_status status = WAFER_PLUGIN_DEBUG_CHECK_LAUNCH(
		dev->host, "cuda", launch, CUDA_ALIGNMENT);

	if (status != WAFER_OK)
		return status;
	if (d->params_size > sizeof r->params ||
	    d->binding_count > MAX_BINDINGS) {
		dev->host->set_error("cuda: launch %s: a descriptor past the "
				     "plugin's limits",
				     d->op);
		return WAFER_ERROR_INTERNAL;
	}
	r->binding_count = d->binding_count;
	for (uint32_t i = 0; i < d->binding_count; i++) {
		const struct wafer_binding *b =
			wafer_plugin_array_at(launch->bindings, i);
		r->ptr[i] = cuda_ptr(b->resource) + b->offset;
		r->size[i] = b->size;
	}
	r->params_size = d->params_size;
	if (d->params_size)
		memcpy(r->params, launch->params, d->params_size);
	r->reach = (struct wafer_plugin_reach){
		.host = dev->host,
		.plugin = "cuda",
		.kernel = d->op,
		.sizes = r->size,
		.binding_count = d->binding_count,
	};
	return WAFER_OK;
}

static wafer_status issue(struct cuda_device *dev, struct cuda_queue *q,
			  const struct cuda_kernel_desc *d, CUfunction fn,
			  unsigned gx, unsigned gy, unsigned gz, void **args)
{
	CUresult result;

	result = dev->drv->cuLaunchKernel(fn, gx, gy, gz, d->threads, 1, 1, 0,
					  q->stream, args, NULL);
	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result,
				 "cuLaunchKernel(%s, grid %ux%ux%u, block %u)",
				 d->symbol ? d->symbol : d->op, gx, gy, gz,
				 d->threads);
	return WAFER_OK;
}

/* Blocks for a grid-stride kernel over |items| work items of which each
 * thread takes |per_thread| per step: enough to fill the GPU once. */
static unsigned grid_for(const struct cuda_device *dev,
			 const struct cuda_kernel_desc *d, uint64_t items,
			 uint64_t per_thread)
{
	uint64_t units = (items + per_thread - 1) / per_thread;
	uint64_t blocks = (units + d->threads - 1) / d->threads;
	uint64_t cap = (uint64_t)dev->sm_count * ELEMENTWISE_BLOCKS_PER_SM;

	if (blocks > cap)
		blocks = cap;
	return blocks ? (unsigned)blocks : 1;
}

/* issue() of a 1-D grid of |blocks|, passing the pointers of |r| and
 * then its parameter block, as every kernel but matmul takes them. */
static wafer_status issue_1d(struct cuda_device *dev, struct cuda_queue *q,
			     const struct cuda_kernel_desc *d, CUfunction fn,
			     unsigned blocks, struct resolved *r)
{
	void *args[MAX_BINDINGS + 1];

	for (uint32_t i = 0; i < r->binding_count; i++)
		args[i] = &r->ptr[i];
	args[r->binding_count] = r->params;
	return issue(dev, q, d, fn, blocks, 1, 1, args);
}

static wafer_status launch_elementwise(struct cuda_device *dev,
				       struct cuda_queue *q,
				       const struct cuda_kernel_desc *d,
				       struct resolved *r, CUfunction fn)
{
	wafer_status status;
	uint64_t count;

	/* Every elementwise parameter block starts with the count. */
	memcpy(&count, r->params, sizeof count);
	status = wafer_plugin_check_count(&r->reach, count, d->element_size);
	if (status != WAFER_OK)
		return status;
	if (count == 0)
		return WAFER_OK;
	return issue_1d(dev, q, d, fn,
			grid_for(dev, d, count, 16 / d->element_size), r);
}

/* 32-bit indices serve a launch whose every index, and the grid-stride
 * step past the last one, stays below 2^31. */
#define NARROW_LIMIT (UINT64_C(1) << 31)

static wafer_status launch_strided(struct cuda_device *dev,
				   struct cuda_queue *q,
				   const struct cuda_kernel_desc *d,
				   struct resolved *r, size_t index)
{
	struct wafer_binary_strided_params p;
	uint64_t count, ra, rb;
	wafer_status status;

	memcpy(&p, r->params, sizeof p);
	status = wafer_plugin_check_binary_strided(&r->reach, &p,
						   d->element_size, &count,
						   &ra, &rb);
	if (status != WAFER_OK)
		return status;
	int narrow = count < NARROW_LIMIT && ra < NARROW_LIMIT &&
		     rb < NARROW_LIMIT;
	return issue_1d(dev, q, d,
			narrow ? dev->functions[index] : dev->wide[index],
			grid_for(dev, d, count, 1), r);
}

static wafer_status launch_gather(struct cuda_device *dev,
				  struct cuda_queue *q,
				  const struct cuda_kernel_desc *d,
				  struct resolved *r, size_t index)
{
	struct wafer_strided_copy_params p;
	uint64_t count, rin;
	wafer_status status;

	memcpy(&p, r->params, sizeof p);
	status = wafer_plugin_check_copy_strided(&r->reach, &p,
						 d->element_size, &count, &rin);
	if (status != WAFER_OK)
		return status;
	int narrow = count < NARROW_LIMIT && rin < NARROW_LIMIT;
	return issue_1d(dev, q, d,
			narrow ? dev->functions[index] : dev->wide[index],
			grid_for(dev, d, count, 1), r);
}

static wafer_status launch_cast(struct cuda_device *dev, struct cuda_queue *q,
				const struct cuda_kernel_desc *d,
				struct resolved *r, size_t index)
{
	struct wafer_cast_params p;
	wafer_status status;
	int target;

	memcpy(&p, r->params, sizeof p);
	target = cast_target(p.dtype_out);
	if ((wafer_dtype)p.dtype_in != d->dtype || target < 0)
		return wafer_plugin_reach_fail(
			&r->reach, WAFER_ERROR_INVALID_ARGUMENT,
			"from %s to %s on the entry for %s (targets: float32, "
			"float16, bfloat16, int32, uint8, float64, int64)",
			wafer_plugin_dtype_name(p.dtype_in),
			wafer_plugin_dtype_name(p.dtype_out),
			wafer_plugin_dtype_name(d->dtype));
	if ((status = wafer_plugin_check_holds(
		     &r->reach, 0, p.count,
		     wafer_plugin_dtype_size(p.dtype_out))) ||
	    (status = wafer_plugin_check_holds(&r->reach, 1, p.count,
					       d->element_size)))
		return status;
	if (p.count == 0)
		return WAFER_OK;
	return issue_1d(dev, q, d, dev->family[index][target],
			grid_for(dev, d, p.count, 1), r);
}

static wafer_status launch_rows(struct cuda_device *dev, struct cuda_queue *q,
				const struct cuda_kernel_desc *d,
				struct resolved *r, CUfunction fn)
{
	struct wafer_rows_params p;
	wafer_status status;
	uint64_t blocks;

	memcpy(&p, r->params, sizeof p);
	status = wafer_plugin_check_rows(&r->reach, &p, d->element_size,
					 d->kind == CUDA_LAUNCH_ROWS_FULL, NULL);
	if (status != WAFER_OK)
		return status;
	/* A block per row, up to a few waves; the kernel loops past that. */
	blocks = (uint64_t)dev->sm_count * 32;
	if (blocks > p.rows)
		blocks = p.rows;
	return issue_1d(dev, q, d, fn, (unsigned)blocks, r);
}

/* The descriptor of |d|'s fallback variant (same op and dtype). */
static const struct cuda_kernel_desc *
fallback_of(const struct cuda_kernel_desc *d)
{
	for (size_t i = 0; i < cuda_kernel_desc_count; i++) {
		const struct cuda_kernel_desc *f = &cuda_kernel_descs[i];
		if (f->dtype == d->dtype && strcmp(f->op, d->op) == 0 &&
		    strcmp(f->variant, d->fallback) == 0)
			return f;
	}
	return NULL;
}

/* Whether the layout-specific kernels can take |p|: 4-element vectors
 * along every stored row, batch entries that keep that alignment, and k
 * below 2^31 (their k indices are ints). */
static int layouts_fit(const struct wafer_matmul_params *p)
{
	uint64_t lda = p->transpose_a ? p->m : p->k;
	uint64_t ldb = p->transpose_b ? p->k : p->n;

	return lda % 4 == 0 && ldb % 4 == 0 && p->k < (UINT64_C(1) << 31) &&
	       (p->batch == 1 ||
		(p->batch_stride_a % 4 == 0 && p->batch_stride_b % 4 == 0 &&
		 p->batch_stride_c % 4 == 0));
}

static wafer_status launch_matmul(struct cuda_device *dev,
				  struct cuda_queue *q,
				  const struct cuda_kernel_desc *d,
				  struct resolved *r, CUfunction fn)
{
	struct wafer_matmul_params p;
	struct cuda_matmul_args a;
	wafer_status status;
	uint64_t gx, rows_max, e = d->element_size;

	memcpy(&p, r->params, sizeof p);
	status = wafer_plugin_check_matmul(&r->reach, &p, d->element_size,
					   NULL);
	if (status != WAFER_OK)
		return status;
	if (d->kind == CUDA_LAUNCH_CUBLAS)
		return cuda_cublas_matmul(dev, q, d->dtype, &p, r->ptr[0],
					  r->ptr[1], r->ptr[2]);
	if (d->layouts) {
		if (layouts_fit(&p)) {
			fn = dev->family[d - cuda_kernel_descs]
					[p.transpose_a * 2 + p.transpose_b];
		} else {
			const struct cuda_kernel_desc *f = fallback_of(d);
			if (!f || !dev->functions[f - cuda_kernel_descs]) {
				dev->host->set_error("cuda: launch matmul (%s): "
						     "no fallback for this "
						     "layout",
						     d->variant);
				return WAFER_ERROR_INVALID_ARGUMENT;
			}
			d = f;
			fn = dev->functions[f - cuda_kernel_descs];
		}
	}

	a = (struct cuda_matmul_args){
		.n = p.n,
		.k = p.k,
		.lda = p.transpose_a ? p.m : p.k,
		.ldb = p.transpose_b ? p.k : p.n,
		.ldc = p.n,
		.stride_a = p.batch_stride_a,
		.stride_b = p.batch_stride_b,
		.stride_c = p.batch_stride_c,
		.trans_a = p.transpose_a,
		.trans_b = p.transpose_b,
	};
	gx = (p.n + d->tile_n - 1) / d->tile_n;
	if (gx > INT_MAX)
		return wafer_plugin_reach_fail(&r->reach,
					       WAFER_ERROR_INVALID_ARGUMENT,
					       "n = %" PRIu64 " is too large",
					       p.n);
	/* Grid y (row tiles) and z (batch) stop at 65535: larger problems
	 * go in several launches over parts of C. */
	rows_max = (uint64_t)GRID_YZ_MAX * d->tile_m;
	for (uint64_t z0 = 0; z0 < p.batch; z0 += GRID_YZ_MAX) {
		uint64_t gz = p.batch - z0 < GRID_YZ_MAX ? p.batch - z0
							 : GRID_YZ_MAX;
		for (uint64_t r0 = 0; r0 < p.m; r0 += rows_max) {
			uint64_t rows = p.m - r0 < rows_max ? p.m - r0
							    : rows_max;
			uint64_t off_a = z0 * p.batch_stride_a +
					 (p.transpose_a ? r0 : r0 * a.lda);
			uint64_t off_b = z0 * p.batch_stride_b;
			uint64_t off_c = z0 * p.batch_stride_c + r0 * a.ldc;
			CUdeviceptr pc = r->ptr[0] + off_c * e;
			CUdeviceptr pa = r->ptr[1] + off_a * e;
			CUdeviceptr pb = r->ptr[2] + off_b * e;
			void *args[4] = {&pc, &pa, &pb, &a};

			a.m = rows;
			status = issue(dev, q, d, fn, (unsigned)gx,
				       (unsigned)((rows + d->tile_m - 1) /
						  d->tile_m),
				       (unsigned)gz, args);
			if (status != WAFER_OK)
				return status;
		}
	}
	return WAFER_OK;
}

wafer_status cuda_kernels_launch(struct cuda_device *device,
				 struct cuda_queue *q,
				 const struct cuda_kernel_desc *desc,
				 const struct wafer_launch *launch)
{
	size_t index = (size_t)(desc - cuda_kernel_descs);
	CUfunction fn = device->functions[index];
	struct resolved r;
	wafer_status status;

	if (!offered(device, desc) || (desc->symbol && !fn)) {
		device->host->set_error("cuda: launch %s (%s): not offered on "
					"cuda:%" PRIu32,
					desc->op, desc->variant, device->index);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	status = resolve(device, desc, launch, &r);
	if (status != WAFER_OK)
		return status;
	switch (desc->kind) {
	case CUDA_LAUNCH_NOOP:
		return issue(device, q, desc, fn, 1, 1, 1, NULL);
	case CUDA_LAUNCH_ELEMENTWISE:
		return launch_elementwise(device, q, desc, &r, fn);
	case CUDA_LAUNCH_STRIDED:
		return launch_strided(device, q, desc, &r, index);
	case CUDA_LAUNCH_GATHER:
		return launch_gather(device, q, desc, &r, index);
	case CUDA_LAUNCH_CAST:
		return launch_cast(device, q, desc, &r, index);
	case CUDA_LAUNCH_ROWS:
	case CUDA_LAUNCH_ROWS_FULL:
		return launch_rows(device, q, desc, &r, fn);
	case CUDA_LAUNCH_MATMUL:
	case CUDA_LAUNCH_CUBLAS:
		return launch_matmul(device, q, desc, &r, fn);
	}
	device->host->set_error("cuda: launch %s: unknown launch kind %d",
				desc->op, (int)desc->kind);
	return WAFER_ERROR_INTERNAL;
}
