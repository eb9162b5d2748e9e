/* wafer — SPDX-License-Identifier: MIT
 *
 * program.c: the programs of t/programs.c on the Level Zero test driver
 * (t/levelzero/driver.c) — the native binaries of its modules
 * (program.h) and the emulation of the test's kernels,
 * t/user_kernels/kernels.cl, walking the work-items of the launched
 * groups as the OpenCL C does (emulate.h):
 *
 *   wafer_test_saxpy   (y, x, {ulong n; float a; uint reserved}):
 *                      i = get_global_id(0); i < n: y[i] = a * x[i] + y[i]
 *   wafer_test_tile2d  (out, in, {uint rows, cols; float scale; uint
 *                      reserved}): per group of TILE x TILE items, a
 *                      tile of in (cols x rows) through local memory into
 *                      out (rows x cols), transposed and scaled
 *
 * A group other than TILE x TILE leaves parts of a tile unloaded (NaN
 * here) or unstored, and one larger writes past the local tile: a fault. */
#include "build-config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "t/levelzero/emulate.h"
#include "t/levelzero/program.h"

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

struct saxpy_params {
	uint64_t n;
	float a;
	uint32_t reserved;
};

struct tile_params {
	uint32_t rows, cols;
	float scale;
	uint32_t reserved;
};

#define TILE 16

/* The by-value block, argument |a|; 0 after a fault. */
static int block(struct emulate_launch *l, uint32_t a, void *out, size_t size)
{
	if (a >= l->arg_count || l->args[a].size != size || l->args[a].ptr) {
		emulate_fault(l, "argument %u is not a %zu-byte value", a, size);
		return 0;
	}
	memcpy(out, l->args[a].bytes, size);
	return 1;
}

/* Float |i| through pointer argument |a|, or NULL after a fault. */
static float *elem(struct emulate_launch *l, uint32_t a, uint64_t i)
{
	const struct emulate_arg *g = &l->args[a];

	if (l->faulted)
		return NULL;
	if (a >= l->arg_count || !g->ptr) {
		emulate_fault(l, "argument %u is not a global pointer", a);
		return NULL;
	}
	if (i >= g->reach / sizeof(float)) {
		emulate_fault(l, "argument %u: float %llu is past the %zu bytes "
			      "the device reaches",
			      a, (unsigned long long)i, g->reach);
		return NULL;
	}
	return (float *)g->ptr + i;
}

/* Work-items along dimension |d|. */
static uint64_t items(const struct emulate_launch *l, int d)
{
	return (uint64_t)l->group_count[d] * l->group_size[d];
}

static void saxpy(struct emulate_launch *l)
{
	struct saxpy_params p;
	/* Items of other y and z indices repeat the work (racing, on a
	 * device; in order here). */
	uint64_t reps = items(l, 1) * items(l, 2);

	if (!block(l, 2, &p, sizeof p))
		return;
	for (uint64_t r = 0; r < reps; r++)
		for (uint64_t i = 0; i < items(l, 0) && i < p.n; i++) {
			float *y = elem(l, 0, i);
			const float *x = elem(l, 1, i);
			if (!y || !x)
				return;
			*y = p.a * *x + *y;
		}
}

static void tile2d(struct emulate_launch *l)
{
	struct tile_params p;
	float tile[TILE][TILE + 1];

	if (!block(l, 2, &p, sizeof p))
		return;
	if (l->group_size[0] > TILE || l->group_size[1] > TILE) {
		emulate_fault(l, "a group of %ux%u writes past the %dx%d local "
			      "tile",
			      l->group_size[0], l->group_size[1], TILE, TILE);
		return;
	}
	for (uint64_t z = 0; z < items(l, 2); z++)
	for (uint64_t gy = 0; gy < l->group_count[1]; gy++)
	for (uint64_t gx = 0; gx < l->group_count[0]; gx++) {
		uint64_t c0 = gx * TILE, r0 = gy * TILE;

		for (int i = 0; i < TILE; i++)
			for (int j = 0; j <= TILE; j++)
				tile[i][j] = NAN;
		for (uint64_t lr = 0; lr < l->group_size[1]; lr++)
			for (uint64_t lc = 0; lc < l->group_size[0]; lc++) {
				if (c0 + lr >= p.cols || r0 + lc >= p.rows)
					continue;
				const float *in =
					elem(l, 1, (c0 + lr) * p.rows + r0 + lc);
				if (!in)
					return;
				tile[lr][lc] = *in;
			}
		/* barrier(CLK_LOCAL_MEM_FENCE) */
		for (uint64_t lr = 0; lr < l->group_size[1]; lr++)
			for (uint64_t lc = 0; lc < l->group_size[0]; lc++) {
				if (c0 + lc >= p.cols || r0 + lr >= p.rows)
					continue;
				float *out =
					elem(l, 0, (r0 + lr) * p.cols + c0 + lc);
				if (!out)
					return;
				*out = p.scale * tile[lc][lr];
			}
	}
}

const struct emulate_kernel emulate_program_kernels[] = {
	{"wafer_test_saxpy", saxpy},
	{"wafer_test_tile2d", tile2d},
	{NULL, NULL},
};
