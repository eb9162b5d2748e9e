/* wafer — SPDX-License-Identifier: MIT
 *
 * fakecuda_program.h: what t/standins/fakecuda.c asks t/standins/fakecuda_program.c about
 * the programs of t/api/programs.c — the code images the stand-in driver
 * takes besides the plugin's fatbins, and the program kernels it
 * emulates by name. */
#ifndef WAFER_T_FAKECUDA_PROGRAM_H
#define WAFER_T_FAKECUDA_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

/* The bytes of a program image: PTX text up to and with its NUL, or a
 * 64-bit ELF (a CUBIN) up to the end of its section headers; 0 when
 * |image| is neither. */
size_t fakecuda_program_image_size(const void *image);

/* What cuModuleLoadDataEx's JIT would say of |image|: CUDA_SUCCESS, or
 * CUDA_ERROR_INVALID_PTX with a ptxas-like message, naming the line, in
 * the error log buffer of the JIT options |keys| and |values| (a PTX
 * without its .version or .target directive). */
CUresult fakecuda_program_check(const void *image, unsigned count,
				 const CUjit_option *keys, void **values);

/* Whether program image |image| (|size| bytes) holds kernel |name|: a
 * PTX .entry, or a CUBIN's .text.<name> section. */
int fakecuda_program_has_kernel(const void *image, size_t size,
				const char *name);

/* One launch of a program kernel, as the stream runs it. */
struct fakecuda_program_launch {
	const uintptr_t *ptr;        /* the pointer arguments */
	const unsigned char *params; /* the block after them */
	unsigned grid[3], block[3];
	/* 1 when [p, p + bytes) is device memory; otherwise 0, and the
	 * context has the sticky CUDA_ERROR_ILLEGAL_ADDRESS. */
	int (*reach)(uintptr_t p, uint64_t bytes);
};

typedef void fakecuda_program_fn(const struct fakecuda_program_launch *l);

/* The emulation of program kernel |name|, with its pointer count and
 * parameter block size; NULL for a name it does not know. */
fakecuda_program_fn *fakecuda_program_emulator(const char *name,
					       int *out_pointers,
					       size_t *out_params_size);

#endif
