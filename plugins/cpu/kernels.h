/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels.h: the cpu plugin's kernel table. Each wafer_kernel entry's
 * plugin-private |impl| points to a struct cpu_kernel_impl; server.c's
 * launch checks the launch against the entry, resolves the bindings to host
 * pointers and calls the impl's run function. */
#ifndef WAFER_PLUGINS_CPU_KERNELS_H
#define WAFER_PLUGINS_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/plugin.h>

struct cpu_pool;

/* The most bindings any cpu kernel takes. */
#define CPU_MAX_BINDINGS 3

/* A launch as a cpu kernel sees it: the bindings resolved to host
 * addresses (already offset), their sizes in bytes, the parameter block,
 * and the pool to spread the work over. */
struct cpu_kernel_args {
	uint32_t binding_count;
	void *data[CPU_MAX_BINDINGS];
	size_t size[CPU_MAX_BINDINGS];
	const void *params;
	struct cpu_pool *pool;
};

struct cpu_kernel_impl {
	/* Every standard kernel works on |count| elements of every binding;
	 * launch reads the count from the parameter block with this and
	 * checks each binding holds count * element_size bytes before
	 * anything runs (the core checks too; the plugin still never writes
	 * past a binding). A kernel of another shape needs its own check. */
	uint64_t (*count)(const void *params);
	size_t element_size;
	/* Runs the kernel to completion on the calling thread and the pool.
	 * A failure here happened while running: launch keeps it for the
	 * next sync, as plugin.h asks of every backend. (The f32 kernels
	 * cannot fail once checked; a vendor's device may.) */
	wafer_status (*run)(const struct cpu_kernel_args *args);
};

/* The table device_kernels returns: static, the same for every device. */
const struct wafer_kernel *cpu_kernel_table(size_t *out_count);

/* Our own table entry for |kernel|, or NULL when it is not one of ours (a
 * kernel of another plugin, or garbage). Matches on |impl|, so a copy of
 * an entry is recognised too; the caller then trusts only the returned
 * entry's fields. */
const struct wafer_kernel *cpu_kernel_find(const struct wafer_kernel *kernel);

#endif
