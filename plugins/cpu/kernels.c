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

uint64_t cpu_elementwise_count(const void *params)
{
	return CPU_PARAMS(struct wafer_elementwise_params, params).count;
}

uint64_t cpu_scalar_count(const void *params)
{
	return CPU_PARAMS(struct wafer_scalar_params, params).count;
}

uint64_t cpu_fill_count(const void *params)
{
	return CPU_PARAMS(struct wafer_fill_params, params).count;
}

uint64_t cpu_shape_count(uint32_t rank, const uint64_t *shape)
{
	uint64_t n = 1;

	for (uint32_t d = 0; d < rank && d < WAFER_KERNEL_MAX_RANK; d++)
		n *= shape[d];
	return n;
}
