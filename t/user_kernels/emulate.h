/* wafer — SPDX-License-Identifier: MIT
 *
 * emulate.h: the kernels of t/user_kernels/ (t/api/programs.c's), emulated on
 * host memory for the stand-in drivers that run no device code —
 * t/standins/fakecuda.c (through t/standins/fakecuda_program.c) and the Level Zero test
 * driver (through t/standins/levelzero/program.c). Each walks the work-items of the
 * launched groups as the kernel source does, so a wrong grid, group or
 * argument gives wrong values:
 *
 *   wafer_test_saxpy   pointers {y, x} f32; params {u64 n; f32 a; u32
 *                      reserved}: i = global x; i < n: y[i] = a * x[i] + y[i]
 *                      (items of other y and z ids repeat it: racing on a
 *                      device, in order here)
 *   wafer_test_tile2d  pointers {out, in} f32; params {u32 rows, cols;
 *                      f32 scale; u32 reserved}: per group of TILE x TILE
 *                      items, a tile of in (cols x rows) through local
 *                      memory into out (rows x cols), transposed and
 *                      scaled. A group other than TILE x TILE leaves parts
 *                      of a tile unloaded (NaN here) or unstored; one
 *                      larger writes past the local tile: a fault.
 *
 * The stand-in gives the launch's shape, the parameter block and its own
 * ways to reach memory and to record a fault. */
#ifndef WAFER_T_USER_KERNELS_EMULATE_H
#define WAFER_T_USER_KERNELS_EMULATE_H

#include <stddef.h>
#include <stdint.h>

#define USER_KERNEL_TILE 16

struct user_kernel_launch {
	uint32_t group_count[3], group_size[3];
	const void *params; /* the parameter block, of the kernel's size */
	/* Float |i| of pointer argument |a|, or NULL when the device cannot
	 * reach it: the stand-in has recorded the fault; the kernel stops. */
	float *(*elem)(void *ctx, int a, uint64_t i);
	/* A group of |x| by |y| items, larger than the local tile. */
	void (*past_tile)(void *ctx, uint32_t x, uint32_t y);
	void *ctx;
};

typedef void user_kernel_fn(const struct user_kernel_launch *launch);

user_kernel_fn user_kernel_saxpy, user_kernel_tile2d;

/* The emulation of kernel |name|, with its count of pointer arguments
 * (they come first) and the size of its parameter block; NULL for a name
 * it does not know. */
user_kernel_fn *user_kernel_emulator(const char *name, int *out_pointers,
				     size_t *out_params_size);

#endif
