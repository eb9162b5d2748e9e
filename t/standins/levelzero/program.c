/* wafer — SPDX-License-Identifier: MIT
 *
 * program.c: the programs of t/api/programs.c on the Level Zero test driver
 * (t/standins/levelzero/driver.c) — the native binaries of its modules
 * (program.h), and the test's kernels, t/user_kernels/kernels.cl, run by
 * their emulation (t/user_kernels/emulate.h) on the arguments the plugin
 * set (emulate.h): (y, x, {ulong n; float a; uint reserved}) and (out,
 * in, {uint rows, cols; float scale; uint reserved}). */
#include "build-config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "t/standins/levelzero/emulate.h"
#include "t/standins/levelzero/program.h"
#include "t/user_kernels/emulate.h"

/*===----------------------------------------------------------------------===
 * Native binaries
 *===----------------------------------------------------------------------===*/

static const char native_magic[16] = "fakeze native 1";

void *fakeze_native_wrap(const void *code, size_t size, size_t *out_size)
{
	unsigned char *native = malloc(sizeof native_magic + size);

	*out_size = 0;
	if (!native)
		return NULL;
	memcpy(native, native_magic, sizeof native_magic);
	memcpy(native + sizeof native_magic, code, size);
	*out_size = sizeof native_magic + size;
	return native;
}

int fakeze_native_unwrap(const void **code, size_t *size)
{
	if (!*code || *size <= sizeof native_magic ||
	    memcmp(*code, native_magic, sizeof native_magic) != 0)
		return 0;
	*code = (const unsigned char *)*code + sizeof native_magic;
	*size -= sizeof native_magic;
	return 1;
}

/*===----------------------------------------------------------------------===
 * Kernels
 *===----------------------------------------------------------------------===*/

static float *elem(void *ctx, int a, uint64_t i)
{
	return (float *)emulate_at(ctx, (uint32_t)a, i, sizeof(float));
}

static void past_tile(void *ctx, uint32_t x, uint32_t y)
{
	emulate_fault(ctx, "a group of %ux%u writes past the %dx%d local tile",
		      x, y, USER_KERNEL_TILE, USER_KERNEL_TILE);
}

/* The kernel the launch names: its pointer arguments, then its parameter
 * block by value. */
static void run(struct emulate_launch *l)
{
	unsigned char params[64];
	int pointers;
	size_t size;
	user_kernel_fn *fn = user_kernel_emulator(l->kernel, &pointers, &size);

	if (!fn || size > sizeof params ||
	    !emulate_value(l, (uint32_t)pointers, params, size))
		return;
	struct user_kernel_launch u = {
		.group_count = {l->group_count[0], l->group_count[1],
				l->group_count[2]},
		.group_size = {l->group_size[0], l->group_size[1],
			       l->group_size[2]},
		.params = params,
		.elem = elem,
		.past_tile = past_tile,
		.ctx = l,
	};
	fn(&u);
}

const struct emulate_kernel emulate_program_kernels[] = {
	{"wafer_test_saxpy", run},
	{"wafer_test_tile2d", run},
	{NULL, NULL},
};
