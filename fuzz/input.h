/* wafer — SPDX-License-Identifier: MIT
 *
 * fuzz/input.h: a harness's input read as a stream of big-endian values
 * (fuzz/view.c, fuzz/dlpack.c). Past the end, every value is 0. */
#ifndef WAFER_FUZZ_INPUT_H
#define WAFER_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
	const uint8_t *data;
	size_t size;
};

/* The next |bytes| bytes (at most 8) as one value. */
static inline uint64_t take(struct input *in, size_t bytes)
{
	uint64_t v = 0;
	for (size_t i = 0; i < bytes && in->size; i++, in->data++, in->size--)
		v = v << 8 | *in->data;
	return v;
}

#endif
