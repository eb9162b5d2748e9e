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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cuda/cublas.h"
#include "plugins/cuda/cuda_plugin.h"
#include "plugins/cuda/kernels/args.h"

/* Blocks of 256 threads resident per multiprocessor at full occupancy
 * (2048 threads): a grid-stride kernel needs no more than one such wave. */
#define ELEMENTWISE_THREADS 256
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

/* An elementwise entry: symbol wafer_<op>_<suffix>. */
#define EW(op_, bindings_, params_, dtype_, suffix_, size_)                    \
	{                                                                      \
		.op = op_, .variant = "default", .dtype = dtype_,              \
		.binding_count = bindings_, .params_size = sizeof(params_),    \
		.symbol = "wafer_" op_ "_" suffix_,                            \
		.module = CUDA_MODULE_ELEMENTWISE,                             \
		.kind = CUDA_LAUNCH_ELEMENTWISE, .min_arch = 80,               \
		.threads = ELEMENTWISE_THREADS, .element_size = size_,         \
	}

/* The three element types of an elementwise op. */
#define EW3(op_, bindings_, params_)                                           \
	EW(op_, bindings_, params_, WAFER_DTYPE_F32, "f32", 4),                \
	EW(op_, bindings_, params_, WAFER_DTYPE_F16, "f16", 2),                \
	EW(op_, bindings_, params_, WAFER_DTYPE_BF16, "bf16", 2)

#ifdef WAFER_KERNEL_MATMUL
/* A matmul kernel: symbol wafer_matmul_<suffix>_<variant>, computing
 * tm x tn of C per block (the numbers in kernels/matmul.cu). */
#define MM(variant_, dtype_, suffix_, size_, tm_, tn_)                         \
	{                                                                      \
		.op = WAFER_KERNEL_MATMUL, .variant = variant_,                \
		.dtype = dtype_, .binding_count = 3,                           \
		.params_size = sizeof(struct wafer_matmul_params),             \
		.symbol = "wafer_matmul_" suffix_ "_" variant_,                \
		.module = CUDA_MODULE_MATMUL, .kind = CUDA_LAUNCH_MATMUL,      \
		.min_arch = 80, .threads = 256, .tile_m = tm_, .tile_n = tn_,  \
		.element_size = size_,                                         \
	}

#define MM_CUBLAS(dtype_, size_)                                               \
	{                                                                      \
		.op = WAFER_KERNEL_MATMUL, .variant = "cublas",                \
		.dtype = dtype_, .binding_count = 3,                           \
		.params_size = sizeof(struct wafer_matmul_params),             \
		.kind = CUDA_LAUNCH_CUBLAS, .min_arch = 80,                    \
		.element_size = size_,                                         \
	}
#endif

/* Table order matters: the first entry of an (op, dtype) is its default
 * variant. */
const struct cuda_kernel_desc cuda_kernel_descs[] = {
	NOOP_DESC,
	EW3(WAFER_KERNEL_FILL, 1, struct wafer_fill_params),
	EW3(WAFER_KERNEL_COPY, 2, struct wafer_elementwise_params),
	EW3(WAFER_KERNEL_RELU, 2, struct wafer_elementwise_params),
	EW3(WAFER_KERNEL_ADD, 3, struct wafer_elementwise_params),
	EW3(WAFER_KERNEL_MUL, 3, struct wafer_elementwise_params),
#ifdef WAFER_KERNEL_MATMUL
	MM("tile64", WAFER_DTYPE_F32, "f32", 4, 64, 64),
	MM("tile128", WAFER_DTYPE_F32, "f32", 4, 128, 128),
	MM("tile128k16", WAFER_DTYPE_F32, "f32", 4, 128, 128),
	MM("tile128x64", WAFER_DTYPE_F32, "f32", 4, 128, 64),
	MM("tf32", WAFER_DTYPE_F32, "f32", 4, 128, 128),
	MM_CUBLAS(WAFER_DTYPE_F32, 4),
	MM("tile64", WAFER_DTYPE_F16, "f16", 2, 64, 64),
	MM("tile128", WAFER_DTYPE_F16, "f16", 2, 128, 128),
	MM("wmma", WAFER_DTYPE_F16, "f16", 2, 128, 128),
	MM_CUBLAS(WAFER_DTYPE_F16, 2),
	MM("tile64", WAFER_DTYPE_BF16, "bf16", 2, 64, 64),
	MM("tile128", WAFER_DTYPE_BF16, "bf16", 2, 128, 128),
	MM("wmma", WAFER_DTYPE_BF16, "bf16", 2, 128, 128),
	MM_CUBLAS(WAFER_DTYPE_BF16, 2),
#endif
};

const size_t cuda_kernel_desc_count =
	sizeof cuda_kernel_descs / sizeof cuda_kernel_descs[0];

static const unsigned char *const module_images[CUDA_MODULE_COUNT] = {
	[CUDA_MODULE_ELEMENTWISE] = cuda_fatbin_elementwise,
	[CUDA_MODULE_MATMUL] = cuda_fatbin_matmul,
};

static const char *const module_names[CUDA_MODULE_COUNT] = {
	[CUDA_MODULE_ELEMENTWISE] = "elementwise",
	[CUDA_MODULE_MATMUL] = "matmul",
};

const struct cuda_kernel_desc *
cuda_kernel_desc_of(const struct wafer_kernel *kernel)
{
	uintptr_t p, first = (uintptr_t)&cuda_kernel_descs[0];
	uintptr_t end = (uintptr_t)&cuda_kernel_descs[cuda_kernel_desc_count];

	if (!WAFER_STRUCT_HAS(kernel, struct wafer_kernel, impl))
		return NULL;
	p = (uintptr_t)kernel->impl;
	if (p < first || p >= end ||
	    (p - first) % sizeof(struct cuda_kernel_desc) != 0)
		return NULL;
	return kernel->impl;
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

int cuda_kernels_open(struct cuda_device *device)
{
	const struct cuda_driver *drv = device->drv;
	const struct cuda_state *st = device->state;
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
	device->functions = calloc(cuda_kernel_desc_count,
				   sizeof *device->functions);
	device->table = calloc(cuda_kernel_desc_count, sizeof *device->table);
	if (!device->functions || !device->table) {
		cuda_kernels_close(device);
		st->host->set_error("cuda: out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	device->table_count = 0;
	for (size_t i = 0; i < cuda_kernel_desc_count; i++) {
		const struct cuda_kernel_desc *d = &cuda_kernel_descs[i];

		if (!offered(device, d))
			continue;
		if (d->symbol) {
			result = drv->cuModuleGetFunction(
				&device->functions[i],
				device->modules[d->module], d->symbol);
			if (result != CUDA_SUCCESS) {
				cuda_kernels_close(device);
				return cuda_fail(st, result,
						 "cuModuleGetFunction(%s, %s)",
						 module_names[d->module],
						 d->symbol);
			}
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
	free(device->table);
	device->functions = NULL;
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
};

static wafer_status invalid(const struct cuda_device *dev, const char *format,
			    ...) __attribute__((format(printf, 2, 3)));
static wafer_status invalid(const struct cuda_device *dev, const char *format,
			    ...)
{
	char text[512];
	va_list ap;

	va_start(ap, format);
	vsnprintf(text, sizeof text, format, ap);
	va_end(ap);
	dev->host->set_error("cuda: launch %s", text);
	return WAFER_ERROR_INVALID_ARGUMENT;
}

static wafer_status resolve(const struct cuda_device *dev,
			    const struct cuda_kernel_desc *d,
			    const struct wafer_launch *launch,
			    struct resolved *r)
{
	if (launch->binding_count != d->binding_count ||
	    (d->binding_count && !launch->bindings))
		return invalid(dev, "%s: takes %" PRIu32 " bindings, got %" PRIu32,
			       d->op, d->binding_count,
			       launch->bindings ? launch->binding_count : 0);
	if (launch->params_size != d->params_size ||
	    (d->params_size && !launch->params) ||
	    d->params_size > sizeof r->params)
		return invalid(dev, "%s: takes a %zu-byte parameter block, "
			       "got %zu bytes",
			       d->op, d->params_size,
			       launch->params ? launch->params_size : 0);
	r->binding_count = d->binding_count;
	for (uint32_t i = 0; i < d->binding_count; i++) {
		const struct wafer_binding *b =
			cuda_abi_array_at(launch->bindings, i);
		if (!WAFER_STRUCT_HAS(b, struct wafer_binding, size) ||
		    !b->resource)
			return invalid(dev, "%s: binding %" PRIu32
				       " is malformed or names no resource",
				       d->op, i);
		if (b->offset % CUDA_ALIGNMENT)
			return invalid(dev, "%s: binding %" PRIu32 " offset %zu "
				       "is not a multiple of %d",
				       d->op, i, b->offset, CUDA_ALIGNMENT);
		r->ptr[i] = cuda_ptr(b->resource) + b->offset;
		r->size[i] = b->size;
	}
	r->params_size = d->params_size;
	if (d->params_size)
		memcpy(r->params, launch->params, d->params_size);
	return WAFER_OK;
}

static wafer_status issue(struct cuda_device *dev, struct cuda_queue *q,
			  const struct cuda_kernel_desc *d, unsigned gx,
			  unsigned gy, unsigned gz, void **args)
{
	CUfunction fn = dev->functions[d - cuda_kernel_descs];
	CUresult result;

	result = dev->drv->cuLaunchKernel(fn, gx, gy, gz, d->threads, 1, 1, 0,
					  q->stream, args, NULL);
	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result,
				 "cuLaunchKernel(%s, grid %ux%ux%u, block %u)",
				 d->symbol, gx, gy, gz, d->threads);
	return WAFER_OK;
}

static wafer_status launch_elementwise(struct cuda_device *dev,
				       struct cuda_queue *q,
				       const struct cuda_kernel_desc *d,
				       struct resolved *r)
{
	void *args[MAX_BINDINGS + 1];
	uint64_t count, vectors, blocks, cap;

	/* Every elementwise parameter block starts with the count. */
	memcpy(&count, r->params, sizeof count);
	for (uint32_t i = 0; i < r->binding_count; i++)
		if (count > r->size[i] / d->element_size)
			return invalid(dev, "%s: binding %" PRIu32 " holds %zu "
				       "bytes, too few for %" PRIu64
				       " elements",
				       d->op, i, r->size[i], count);
	if (count == 0)
		return WAFER_OK;
	vectors = (count + (16 / d->element_size) - 1) /
		  (16 / d->element_size);
	blocks = (vectors + d->threads - 1) / d->threads;
	cap = (uint64_t)dev->sm_count * ELEMENTWISE_BLOCKS_PER_SM;
	if (blocks > cap)
		blocks = cap;
	for (uint32_t i = 0; i < r->binding_count; i++)
		args[i] = &r->ptr[i];
	args[r->binding_count] = r->params;
	return issue(dev, q, d, (unsigned)blocks, 1, 1, args);
}

#ifdef WAFER_KERNEL_MATMUL

/* Elements a batch of |batch| matrices of |per| elements at |stride|
 * apart spans, or 0 on overflow. */
static uint64_t batch_span(uint64_t batch, uint64_t stride, uint64_t per)
{
	uint64_t span;

	if (batch == 1 || stride == 0)
		return per;
	if (__builtin_mul_overflow(batch - 1, stride, &span) ||
	    __builtin_add_overflow(span, per, &span))
		return 0;
	return span;
}

/* Checks a matmul parameter block and that every binding holds what it
 * names. */
static wafer_status check_matmul(const struct cuda_device *dev,
				 const struct cuda_kernel_desc *d,
				 const struct wafer_matmul_params *p,
				 const struct resolved *r)
{
	uint64_t mk, kn, mn, need[3];
	static const char *const names[3] = {"out", "a", "b"};

	if (!p->m || !p->n || !p->k || !p->batch || p->transpose_a > 1 ||
	    p->transpose_b > 1)
		return invalid(dev, "matmul: m %" PRIu64 ", n %" PRIu64
			       ", k %" PRIu64 ", batch %" PRIu64
			       " must be >= 1 and transposes 0 or 1",
			       p->m, p->n, p->k, p->batch);
	if (__builtin_mul_overflow(p->m, p->k, &mk) ||
	    __builtin_mul_overflow(p->k, p->n, &kn) ||
	    __builtin_mul_overflow(p->m, p->n, &mn))
		return invalid(dev, "matmul: %" PRIu64 "x%" PRIu64 "x%" PRIu64
			       " overflows", p->m, p->n, p->k);
	if (p->batch > 1 && p->batch_stride_c < mn)
		return invalid(dev, "matmul: batch_stride_c %" PRIu64
			       " is less than m x n = %" PRIu64,
			       p->batch_stride_c, mn);
	need[0] = batch_span(p->batch, p->batch_stride_c, mn);
	need[1] = batch_span(p->batch, p->batch_stride_a, mk);
	need[2] = batch_span(p->batch, p->batch_stride_b, kn);
	for (int i = 0; i < 3; i++)
		if (!need[i] || need[i] > r->size[i] / d->element_size)
			return invalid(dev, "matmul: binding %d (%s) holds %zu "
				       "bytes, too few for %" PRIu64
				       " elements",
				       i, names[i], r->size[i], need[i]);
	return WAFER_OK;
}

static wafer_status launch_matmul(struct cuda_device *dev,
				  struct cuda_queue *q,
				  const struct cuda_kernel_desc *d,
				  struct resolved *r)
{
	struct wafer_matmul_params p;
	struct cuda_matmul_args a;
	wafer_status status;
	uint64_t gx, rows_max, e = d->element_size;

	memcpy(&p, r->params, sizeof p);
	status = check_matmul(dev, d, &p, r);
	if (status != WAFER_OK)
		return status;
	if (d->kind == CUDA_LAUNCH_CUBLAS)
		return cuda_cublas_matmul(dev, q, d->dtype, &p, r->ptr[0],
					  r->ptr[1], r->ptr[2]);

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
		return invalid(dev, "matmul: n = %" PRIu64 " is too large",
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
			status = issue(dev, q, d, (unsigned)gx,
				       (unsigned)((rows + d->tile_m - 1) /
						  d->tile_m),
				       (unsigned)gz, args);
			if (status != WAFER_OK)
				return status;
		}
	}
	return WAFER_OK;
}

#endif /* WAFER_KERNEL_MATMUL */

wafer_status cuda_kernels_launch(struct cuda_device *device,
				 struct cuda_queue *q,
				 const struct cuda_kernel_desc *desc,
				 const struct wafer_launch *launch)
{
	struct resolved r;
	wafer_status status;

	if (!device->functions[desc - cuda_kernel_descs] &&
	    desc->kind != CUDA_LAUNCH_CUBLAS)
		return invalid(device, "%s (%s): not offered on cuda:%" PRIu32,
			       desc->op, desc->variant, device->index);
	status = resolve(device, desc, launch, &r);
	if (status != WAFER_OK)
		return status;
	switch (desc->kind) {
	case CUDA_LAUNCH_NOOP:
		return issue(device, q, desc, 1, 1, 1, NULL);
	case CUDA_LAUNCH_ELEMENTWISE:
		return launch_elementwise(device, q, desc, &r);
#ifdef WAFER_KERNEL_MATMUL
	case CUDA_LAUNCH_MATMUL:
	case CUDA_LAUNCH_CUBLAS:
		return launch_matmul(device, q, desc, &r);
#else
	case CUDA_LAUNCH_MATMUL:
	case CUDA_LAUNCH_CUBLAS:
		break;
#endif
	}
	device->host->set_error("cuda: launch %s: unknown launch kind %d",
				desc->op, (int)desc->kind);
	return WAFER_ERROR_INTERNAL;
}
