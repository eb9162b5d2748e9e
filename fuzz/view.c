/* wafer — SPDX-License-Identifier: MIT
 *
 * fuzz/view.c: view and shape arithmetic (lib/ops/view.c) on fuzzed
 * shapes, strides and offsets: reshape, slice and transpose of a view,
 * broadcasting two shapes, coalescing dimensions. No device is needed:
 * these run before any handle is looked up. Besides "no crash, no
 * undefined behaviour", each result is checked against its contract. */
#include "build-config.h"

#include <stdint.h>
#include <string.h>

#include <wafer/ops.h>

#include "lib/ops/internal.h"
#include "fuzz/input.h"

/* Mostly small dimensions, sometimes huge ones (overflow paths). */
static uint64_t take_dim(struct input *in)
{
	uint8_t kind = (uint8_t)take(in, 1);
	return kind < 200 ? kind % 9 : take(in, 8);
}

static void take_shape(struct input *in, uint32_t *rank, uint64_t *shape)
{
	*rank = (uint32_t)(take(in, 1) % (WAFER_MAX_RANK + 2));
	for (uint32_t d = 0; d < WAFER_MAX_RANK; d++)
		shape[d] = d < *rank ? take_dim(in) : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = {data, size};
	uint32_t rank_a, rank_b, rank_c;
	uint64_t a[WAFER_MAX_RANK], b[WAFER_MAX_RANK], c[WAFER_MAX_RANK + 1];
	wafer_handle handle = {take(&in, 8) | 1};

	take_shape(&in, &rank_a, a);
	take_shape(&in, &rank_b, b);

	wafer_tensor t = wafer_tensor_view(handle, WAFER_DTYPE_F32,
					   rank_a > WAFER_MAX_RANK ? 0 : rank_a, a);
	t.rank = rank_a; /* may be past the limit: must be refused */
	wafer_tensor out;
	uint64_t count_a, count_b;
	bool fits_a = wafer__view_shape_count_fits(rank_a > WAFER_MAX_RANK ? 0 : rank_a,
						   a, &count_a);
	bool fits_b = wafer__view_shape_count_fits(rank_b > WAFER_MAX_RANK ? 0 : rank_b,
						   b, &count_b);
	if (wafer_tensor_reshape(&t, rank_b, b, &out) == WAFER_OK &&
	    (!fits_a || !fits_b || count_a != count_b || out.rank != rank_b))
		__builtin_trap(); /* reshape kept the element count */
	uint32_t d0 = (uint32_t)take(&in, 1) % 10, d1 = (uint32_t)take(&in, 1) % 10;
	if (wafer_tensor_transpose(&t, d0, d1, &out) == WAFER_OK &&
	    (out.shape[d0] != t.shape[d1] || out.shape[d1] != t.shape[d0]))
		__builtin_trap();
	uint64_t start = take_dim(&in), length = take_dim(&in);
	if (wafer_tensor_slice(&t, d0, start, length, &out) == WAFER_OK &&
	    (d0 >= t.rank || out.shape[d0] != length ||
	     length > t.shape[d0] || start > t.shape[d0] - length))
		__builtin_trap();

	if (rank_a <= WAFER_MAX_RANK && rank_b <= WAFER_MAX_RANK &&
	    wafer__view_broadcast_shape("fuzz", rank_a, a, rank_b, b, &rank_c,
					c) == WAFER_OK) {
		if (rank_c != (rank_a > rank_b ? rank_a : rank_b))
			__builtin_trap();
		for (uint32_t d = 0; d < rank_c; d++) {
			uint64_t x = d + rank_a >= rank_c ? a[d + rank_a - rank_c] : 1;
			uint64_t y = d + rank_b >= rank_c ? b[d + rank_b - rank_c] : 1;
			if (c[d] != (x == 1 ? y : x) || (x != y && x != 1 && y != 1))
				__builtin_trap();
		}
	}

	/* Coalescing keeps the element count of a shape with no size 0. */
	if (rank_a >= 1 && rank_a <= WAFER_MAX_RANK && fits_a && count_a) {
		uint64_t shape[WAFER_MAX_RANK], s1[WAFER_MAX_RANK], s2[WAFER_MAX_RANK];
		uint64_t *strides[2] = {s1, s2};
		uint32_t rank = rank_a;
		memcpy(shape, a, sizeof shape);
		wafer__view_dense_strides(rank, shape, s1);
		for (uint32_t d = 0; d < WAFER_MAX_RANK; d++)
			s2[d] = take(&in, 1) % 4;
		wafer__view_coalesce(&rank, shape, strides, 2);
		uint64_t after;
		if (rank < 1 || rank > rank_a ||
		    !wafer__view_shape_count_fits(rank, shape, &after) ||
		    after != count_a)
			__builtin_trap();
	}
	return 0;
}
