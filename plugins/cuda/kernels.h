/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels.h: the cuda plugin's kernel descriptors. Each descriptor is one
 * catalogue entry the plugin can offer — (op, variant, dtype), its
 * bindings and parameter block — plus what serving it takes: the CUDA
 * function's name in one of the embedded fatbins, how a launch is shaped,
 * and the oldest GPU it runs on. A device offers the descriptors its GPU
 * and installed libraries allow (kernels.c builds its table at open);
 * each table entry's |impl| points back to its descriptor. */
#ifndef WAFER_PLUGINS_CUDA_KERNELS_H
#define WAFER_PLUGINS_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/plugin.h>

/* The fatbins fatbins.S embeds: one module each, loaded with
 * cuModuleLoadData when a device opens. */
enum cuda_module {
	CUDA_MODULE_ELEMENTWISE,
	CUDA_MODULE_STRIDED,
	CUDA_MODULE_REDUCE,
	CUDA_MODULE_MATMUL,
	CUDA_MODULE_TYPED,
	CUDA_MODULE_COUNT
};

/* Start of each embedded fatbin (fatbins.S). */
extern const unsigned char cuda_fatbin_elementwise[];
extern const unsigned char cuda_fatbin_strided[];
extern const unsigned char cuda_fatbin_reduce[];
extern const unsigned char cuda_fatbin_matmul[];
extern const unsigned char cuda_fatbin_typed[];

/* How launch turns a launch into a grid (kernels.c). */
enum cuda_launch_kind {
	/* One thread; no bindings, no parameters. */
	CUDA_LAUNCH_NOOP,
	/* count elements in every binding (count is the parameter block's
	 * first uint64_t); a grid-stride grid that fills the GPU. fill,
	 * copy, unary, binary, and binary with a scalar. */
	CUDA_LAUNCH_ELEMENTWISE,
	/* struct wafer_binary_strided_params: the output dense, the inputs
	 * read through strides; 32-bit indices when they suffice, else the
	 * descriptor's wide symbol. */
	CUDA_LAUNCH_STRIDED,
	/* struct wafer_strided_copy_params, likewise. */
	CUDA_LAUNCH_GATHER,
	/* struct wafer_cast_params: one function per target dtype,
	 * wafer_cast_<from>_<to>. */
	CUDA_LAUNCH_CAST,
	/* struct wafer_rows_params: a block per row; out holds rows
	 * elements (reductions) or rows x cols (softmax, kind ROWS_FULL). */
	CUDA_LAUNCH_ROWS,
	CUDA_LAUNCH_ROWS_FULL,
	/* struct wafer_matmul_params; one block per tile_m x tile_n tile
	 * of C per batch entry. */
	CUDA_LAUNCH_MATMUL,
	/* struct wafer_matmul_params, run by cuBLAS (cublas.c). */
	CUDA_LAUNCH_CUBLAS,
};

/* The most members of a kernel family (the seven targets of a cast). */
#define CUDA_FAMILY_MAX 7

struct cuda_kernel_desc {
	const char *op;
	const char *variant;
	wafer_dtype dtype;
	uint32_t binding_count;
	size_t params_size;
	/* extern "C" name in the module; NULL for CUDA_LAUNCH_CUBLAS. For
	 * CUDA_LAUNCH_CAST, the prefix the target dtype completes. */
	const char *symbol;
	/* CUDA_LAUNCH_STRIDED and _GATHER: the 64-bit-index version. */
	const char *symbol_wide;
	/* CUDA_LAUNCH_MATMUL: one kernel per layout (symbol_nn, _nt, _tn,
	 * _tt), which needs row and batch strides that are multiples of 4;
	 * other launches go to the |fallback| variant of the same dtype. */
	int layouts;
	const char *fallback;
	enum cuda_module module;
	enum cuda_launch_kind kind;
	/* Oldest compute capability x 10 the kernel runs on. */
	int min_arch;
	/* Block size, and for matmul the C tile a block computes. */
	uint32_t threads;
	uint32_t tile_m, tile_n;
	/* Bytes of one element of every binding. */
	uint32_t element_size;
};

/* All descriptors, in table order: the first entry for an (op, dtype) is
 * the default variant. */
extern const struct cuda_kernel_desc cuda_kernel_descs[];
extern const size_t cuda_kernel_desc_count;

struct cuda_device;
struct cuda_queue;

/* Loads the modules, resolves every descriptor the device can run and
 * builds its table (device->table). Called by device_open with the
 * context current. */
int cuda_kernels_open(struct cuda_device *device);
void cuda_kernels_close(struct cuda_device *device);

/* Checks |launch| against |desc| and issues it on |q| (server.c calls
 * this after finding the descriptor). */
wafer_status cuda_kernels_launch(struct cuda_device *device,
				 struct cuda_queue *q,
				 const struct cuda_kernel_desc *desc,
				 const struct wafer_launch *launch);

#endif
