/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels.c: the cpu plugin's kernel table, joined from the sets of the
 * kernel files (kernel_sets.def), and the checks the files share.
 *
 * Kernel files, one family each:
 *   kernels_basic.c        noop, fill, copy
 *   kernels_elementwise.c  unary, binary and scalar kernels on dense data
 *   kernels_strided.c      copy_strided and the _strided binary kernels
 *   kernels_cast.c         cast between f32, f16, bf16 and i32
 *   kernels_reduce.c       reductions and softmax over rows
 *   matmul.c               the default (cache-blocked) matmul
 *   kernels_math.h         exp, log, tanh, ... written to vectorise */
#include "build-config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>

#include "plugins/cpu/kernels.h"

/* Room for every entry of every set; cpu_kernel_table stops at it (a
 * plugin bug the catalogue test would show as missing kernels). */
#define CPU_MAX_KERNELS 256

static const struct cpu_kernel_set *const sets[] = {
#define CPU_KERNEL_SET(name_) &cpu_kernel_set_##name_,
#include "plugins/cpu/kernel_sets.def"
#undef CPU_KERNEL_SET
};

static struct wafer_kernel table[CPU_MAX_KERNELS];
static size_t table_count;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void join_sets(void)
{
	for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++)
		for (size_t i = 0; i < sets[s]->count; i++)
			if (table_count < CPU_MAX_KERNELS)
				table[table_count++] = sets[s]->entries[i];
}

const struct wafer_kernel *cpu_kernel_table(size_t *out_count)
{
	pthread_once(&table_once, join_sets);
	*out_count = table_count;
	return table;
}

const struct wafer_kernel *cpu_kernel_find(const struct wafer_kernel *kernel)
{
	size_t count;
	const struct wafer_kernel *entries = cpu_kernel_table(&count);

	if (!WAFER_STRUCT_HAS(kernel, struct wafer_kernel, impl))
		return NULL;
	/* The core passes our own entries back: found by address, without
	 * the scan (which matters for kernels late in the table). */
	uintptr_t offset = (uintptr_t)kernel - (uintptr_t)entries;
	if (offset < count * sizeof *entries && offset % sizeof *entries == 0)
		return kernel;
	for (size_t i = 0; i < count; i++)
		if (kernel->impl == entries[i].impl &&
		    kernel->dtype == entries[i].dtype)
			return &entries[i];
	return NULL;
}

wafer_status cpu_check_binding(const struct cpu_kernel_args *args, uint32_t i,
			       uint64_t elements, size_t element_size,
			       char *why, size_t size)
{
	uint64_t bytes;

	if (!__builtin_mul_overflow(elements, (uint64_t)element_size, &bytes) &&
	    bytes <= args->size[i])
		return WAFER_OK;
	snprintf(why, size,
		 "binding %" PRIu32 " holds %zu bytes, too few for %" PRIu64
		 " elements of %zu bytes",
		 i, args->size[i], elements, element_size);
	return WAFER_ERROR_OUT_OF_RANGE;
}

wafer_status cpu_check_strided(uint32_t rank, const uint64_t *shape,
			       const uint64_t *strides, uint64_t offset,
			       uint64_t *out_span, uint64_t *out_count,
			       char *why, size_t size)
{
	uint64_t last = offset, count = 1;

	*out_span = *out_count = 0;
	if (rank == 0 || rank > WAFER_KERNEL_MAX_RANK) {
		snprintf(why, size, "rank %" PRIu32 " is not 1..%d", rank,
			 WAFER_KERNEL_MAX_RANK);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	for (uint32_t d = 0; d < rank; d++) {
		uint64_t step;
		if (shape[d] == 0) {
			snprintf(why, size, "shape[%" PRIu32 "] is 0", d);
			return WAFER_ERROR_INVALID_ARGUMENT;
		}
		if (__builtin_mul_overflow(shape[d] - 1, strides[d], &step) ||
		    __builtin_add_overflow(last, step, &last) ||
		    __builtin_mul_overflow(count, shape[d], &count) ||
		    last == UINT64_MAX) {
			snprintf(why, size, "the view's extent overflows");
			return WAFER_ERROR_OUT_OF_RANGE;
		}
	}
	*out_span = last + 1;
	*out_count = count;
	return WAFER_OK;
}

