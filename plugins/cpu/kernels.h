/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels.h: the cpu plugin's kernels. Each wafer_kernel entry's
 * plugin-private |impl| points to a struct cpu_kernel_impl; server.c's
 * launch checks the launch against the entry, resolves the bindings to host
 * pointers, runs the impl's check and then its run function.
 *
 * The kernels live in several files, one family each, and each file
 * exports one struct cpu_kernel_set (its part of the table). kernels.c
 * joins the sets listed in kernel_sets.def, in that order, into the table
 * device_kernels returns; the first entry for an (op, dtype) is the
 * default variant. Adding kernels — a faster matmul variant, a new
 * reduction — is a new file plus one line in kernel_sets.def (and the file
 * in local.mk):
 *
 *   // matmul_avx2.c
 *   static const struct wafer_kernel entries[] = {
 *           CPU_KERNEL(WAFER_KERNEL_MATMUL, "avx2", WAFER_DTYPE_F32, 3,
 *                      struct wafer_matmul_params, avx2_impl),
 *   };
 *   CPU_KERNEL_SET_DEFINE(matmul_avx2, entries);
 *
 *   // kernel_sets.def
 *   CPU_KERNEL_SET(matmul_avx2)
 */
#ifndef WAFER_PLUGINS_CPU_KERNELS_H
#define WAFER_PLUGINS_CPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <wafer/plugin.h>
#include <wafer/plugin_util.h>

struct cpu_pool;

/* The most bindings any cpu kernel takes. */
#define CPU_MAX_BINDINGS 3

/* The fewest elements worth a thread of their own: launches of fewer than
 * two grains run inline on the launching thread. Measured on a 2-vCPU
 * x86-64 VM (gcc 12 -O2): add on 1000 floats costs 0.16 us per launch,
 * 64K floats about 10 us inline, and waking a worker costs 5-10 us; on that
 * shared machine two threads paid off only from about 1M elements, while a
 * dedicated many-core host wakes workers faster. 32K is the middle ground:
 * a range is at least ~5 us of work. Kernels doing more per element (exp,
 * a reduction row) scale it down. Tune it here, in one place. */
#define CPU_GRAIN 32768

/* Loops walk their range in blocks of CPU_BLOCK elements. Each block is
 * first computed into a local array and then stored, so every input of a
 * block is read before any of its output is written. That makes exact
 * aliasing (out == in, which plugin.h allows) correct without `restrict`,
 * which exact aliasing would turn into undefined behaviour — and the
 * fixed-length inner loops vectorise at plain -O2, where gcc's "very
 * cheap" cost model refuses a loop over a run-time length (it would need a
 * scalar epilogue or an alias check). Checked with gcc 12, -O2
 * -fopt-info-vec: the compute loop of every block is "vectorized using 16
 * byte vectors" (SSE2, the x86-64 baseline) and its store loop becomes
 * four 16-byte stores; only the tail of a range, under CPU_BLOCK
 * elements, runs scalar. */
#define CPU_BLOCK 16

/* out[i + j] = |expr| for whole CPU_BLOCKs from |i| on while they fit
 * below |end|, leaving |i| at the first index not done; |expr| reads the
 * element's inputs through i and j. Each block is computed before it is
 * stored, so out may alias an input exactly. */
#define CPU_BLOCKED(i, end, out, expr)                                         \
	for (; (i) + CPU_BLOCK <= (end); (i) += CPU_BLOCK) {                   \
		float block_[CPU_BLOCK];                                       \
		for (size_t j = 0; j < CPU_BLOCK; j++)                         \
			block_[j] = (expr);                                    \
		for (size_t j = 0; j < CPU_BLOCK; j++)                         \
			(out)[(i) + j] = block_[j];                            \
	}

/* A launch as a cpu kernel sees it: the bindings resolved to host
 * addresses (already offset), their sizes in bytes, the parameter block,
 * and the pool to spread the work over. */
struct cpu_kernel_args {
	uint32_t binding_count;
	/* What a check reports through, and the sizes it checks against
	 * (|size| below): see wafer_plugin_check_* in plugin_util.h. */
	struct wafer_plugin_reach reach;
	void *data[CPU_MAX_BINDINGS];
	size_t size[CPU_MAX_BINDINGS];
	const void *params;
	struct cpu_pool *pool;
};

struct cpu_kernel_impl {
	/* The common check, for kernels that work on |count| elements of
	 * every binding: launch reads the count from the parameter block
	 * with this and checks each binding holds count * element_size
	 * bytes before anything runs (the core checks too; the plugin still
	 * never writes past a binding). NULL when |check| is given. */
	uint64_t (*count)(const void *params);
	size_t element_size;
	/* Kernels of another shape (strided, rows, matmul, cast) check their
	 * parameters and bindings themselves, with the wafer_plugin_check_*
	 * helpers on args->reach: WAFER_OK when the launch is sound, else
	 * WAFER_ERROR_OUT_OF_RANGE (a binding too small for what the
	 * parameters reach) or WAFER_ERROR_INVALID_ARGUMENT (a malformed
	 * parameter block), with the reason set through set_error. */
	wafer_status (*check)(const struct cpu_kernel_args *args);
	/* Runs the kernel to completion on the calling thread and the pool.
	 * A failure here happened while running: launch keeps it for the
	 * next sync, as plugin.h asks of every backend. (The kernels cannot
	 * fail once checked; a vendor's device may.) */
	wafer_status (*run)(const struct cpu_kernel_args *args);
};

/* Defines |name|, a cpu_kernel_impl that runs |run_| after |check_|
 * (kernels of another shape), or after the common check of |count_|
 * elements of |size_| bytes in every binding. */
#define CPU_CHECKED_IMPL(name, check_, run_)                                   \
	static const struct cpu_kernel_impl name = {.check = check_,          \
						    .run = run_}
/* |name|(args) is |fn_|(args, |arg_|): one function serves kernels
 * that differ by an argument (an element size, an operation). */
#define CPU_BIND(name, fn_, arg_)                                              \
	static wafer_status name(const struct cpu_kernel_args *args)           \
	{                                                                      \
		return fn_(args, arg_);                                        \
	}
/* A kernel stamped from an element function |fn_|: name_##_range runs
 * |loop_|(ctx, begin, end, |fn_|), an inline loop over the job, so gcc
 * inlines |fn_| into it; run_##name_ is |runner_|(args, name_##_range,
 * |grain_|), which makes the job and spreads the count over the pool. */
#define CPU_LOOP_KERNEL(name_, loop_, fn_, runner_, grain_)                    \
	static void name_##_range(void *ctx, size_t begin, size_t end)         \
	{                                                                      \
		loop_(ctx, begin, end, fn_);                                   \
	}                                                                      \
	static wafer_status run_##name_(const struct cpu_kernel_args *args)    \
	{                                                                      \
		return runner_(args, name_##_range, grain_);                   \
	}
/* A checked impl running |runner_|(args, |arg_|). */
#define CPU_CHECKED_IMPL_OF(name, check_, runner_, arg_)                       \
	CPU_BIND(name##_run, runner_, arg_)                                    \
	CPU_CHECKED_IMPL(name, check_, name##_run)
#define CPU_COUNTED_IMPL(name, count_, size_, run_)                            \
	static const struct cpu_kernel_impl name = {                          \
		.count = count_, .element_size = size_, .run = run_}

/* One file's part of the kernel table. */
struct cpu_kernel_set {
	const struct wafer_kernel *entries;
	size_t count;
};

/* A table entry: variant |variant_| of |op_| for |dtype_|. */
#define CPU_KERNEL(op_, variant_, dtype_, bindings_, params_type_, impl_)      \
	{                                                                      \
		.struct_size = sizeof(struct wafer_kernel),                    \
		.op = (op_),                                                   \
		.variant = (variant_),                                         \
		.dtype = (dtype_),                                             \
		.binding_count = (bindings_),                                  \
		.params_size = sizeof(params_type_),                           \
		.impl = &(impl_),                                              \
	}

/* The default f32 variant of |op_|. */
#define CPU_F32_KERNEL(op_, bindings_, params_type_, impl_)                    \
	CPU_KERNEL(op_, "default", WAFER_DTYPE_F32, bindings_, params_type_,   \
		   impl_)

/* Exports a file's entries as set |name_| (listed in kernel_sets.def). */
#define CPU_KERNEL_SET_DEFINE(name_, entries_)                                 \
	const struct cpu_kernel_set cpu_kernel_set_##name_ = {                 \
		.entries = (entries_),                                         \
		.count = sizeof(entries_) / sizeof((entries_)[0]),             \
	}

#define CPU_KERNEL_SET(name_) extern const struct cpu_kernel_set cpu_kernel_set_##name_;
#include "plugins/cpu/kernel_sets.def"
#undef CPU_KERNEL_SET

/* The table device_kernels returns: the sets joined once, static, the same
 * for every device. */
const struct wafer_kernel *cpu_kernel_table(size_t *out_count);

/*===----------------------------------------------------------------------===
 * Helpers the kernel files share
 *===----------------------------------------------------------------------===*/

/* The parameter block may sit at any address (the core may have copied it
 * into a command buffer), so it is copied out, never cast and read. Its
 * size was checked against the table entry before any of this runs. */
#define CPU_PARAMS(type_, params_)                                             \
	({                                                                     \
		type_ p_;                                                      \
		memcpy(&p_, (params_), sizeof p_);                             \
		p_;                                                            \
	})

/* The element counts of the common parameter blocks, for
 * CPU_COUNTED_IMPL (defined in kernels.c). */
uint64_t cpu_elementwise_count(const void *params);
uint64_t cpu_scalar_count(const void *params);
uint64_t cpu_fill_count(const void *params);
/* The element count of a view of |rank| dimensions (strided kernels). */
uint64_t cpu_shape_count(uint32_t rank, const uint64_t *shape);

/* copy of |element_size|-byte elements (kernels_basic.c), for every
 * dtype's copy. */
wafer_status cpu_run_copy(const struct cpu_kernel_args *args,
			  size_t element_size);
/* copy_strided of elements of |element_size| (8, 4, 2 or 1) bytes
 * (kernels_strided.c): its check and its run. */
wafer_status cpu_check_gather(const struct cpu_kernel_args *args,
			      size_t element_size);
wafer_status cpu_run_gather(const struct cpu_kernel_args *args,
			    size_t element_size);

/* The checks of matmul (matmul.c) and of the reductions over rows
 * (kernels_reduce.c), shared by their further variants (matmul_*.c,
 * reduce_split.c). */
wafer_status cpu_check_matmul(const struct cpu_kernel_args *args);
wafer_status cpu_check_reduce(const struct cpu_kernel_args *args);

#endif
