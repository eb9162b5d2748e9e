/* wafer — SPDX-License-Identifier: MIT
 *
 * emulate.c: the kernels of t/user_kernels/ on host memory, for the
 * stand-in drivers (emulate.h says what each does). */
#include "build-config.h"

#include <math.h>
#include <string.h>

#include "t/user_kernels/emulate.h"

#define TILE USER_KERNEL_TILE

struct saxpy_params {
	uint64_t n;
	float a;
	uint32_t reserved;
};

struct tile2d_params {
	uint32_t rows, cols;
	float scale;
	uint32_t reserved;
};

/* Work-items along dimension |d|. */
static uint64_t items(const struct user_kernel_launch *l, int d)
{
	return (uint64_t)l->group_count[d] * l->group_size[d];
}

/* As the kernel: i = get_global_id(0) (blockIdx.x * blockDim.x +
 * threadIdx.x); i < n. */
void user_kernel_saxpy(const struct user_kernel_launch *l)
{
	struct saxpy_params p;
	uint64_t n, reps = items(l, 1) * items(l, 2);

	memcpy(&p, l->params, sizeof p);
	n = items(l, 0) < p.n ? items(l, 0) : p.n;
	/* The last element first: a launch past a buffer faults before it
	 * writes anything. */
	if (n == 0 || !l->elem(l->ctx, 0, n - 1) || !l->elem(l->ctx, 1, n - 1))
		return;
	for (uint64_t r = 0; r < reps; r++)
		for (uint64_t i = 0; i < n; i++) {
			float *y = l->elem(l->ctx, 0, i);
			const float *x = l->elem(l->ctx, 1, i);
			if (!y || !x)
				return;
			*y = p.a * *x + *y;
		}
}

/* Group by group, as the kernel: its items (lc, lr) load tile[lr][lc]
 * from in, then, after the barrier, store tile[lc][lr] to out. */
void user_kernel_tile2d(const struct user_kernel_launch *l)
{
	struct tile2d_params p;
	float tile[TILE][TILE + 1];

	memcpy(&p, l->params, sizeof p);
	if (l->group_size[0] > TILE || l->group_size[1] > TILE) {
		l->past_tile(l->ctx, l->group_size[0], l->group_size[1]);
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
				uint64_t i = (c0 + lr) * p.rows + r0 + lc;
				const float *in = l->elem(l->ctx, 1, i);
				if (!in)
					return;
				tile[lr][lc] = *in;
			}
		/* barrier(CLK_LOCAL_MEM_FENCE), __syncthreads() */
		for (uint64_t lr = 0; lr < l->group_size[1]; lr++)
			for (uint64_t lc = 0; lc < l->group_size[0]; lc++) {
				if (c0 + lc >= p.cols || r0 + lr >= p.rows)
					continue;
				uint64_t o = (r0 + lr) * p.cols + c0 + lc;
				float *out = l->elem(l->ctx, 0, o);
				if (!out)
					return;
				*out = p.scale * tile[lc][lr];
			}
	}
}

static const struct {
	const char *name;
	user_kernel_fn *run;
	size_t params_size;
} kernels[] = {
	{"wafer_test_saxpy", user_kernel_saxpy, sizeof(struct saxpy_params)},
	{"wafer_test_tile2d", user_kernel_tile2d, sizeof(struct tile2d_params)},
};

user_kernel_fn *user_kernel_emulator(const char *name, int *out_pointers,
				     size_t *out_params_size)
{
	for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
		if (strcmp(name, kernels[k].name) == 0) {
			*out_pointers = 2;
			*out_params_size = kernels[k].params_size;
			return kernels[k].run;
		}
	return NULL;
}
