/* wafer — SPDX-License-Identifier: MIT
 *
 * program_kernels.h: a program's kernels behind the lock that
 * program_kernel takes around them, for the plugins of this tree (cpu,
 * cuda, opencl, levelzero). Header-only and not installed: a vendor's
 * plugin keeps <wafer/plugin_util.h> plain C and pairs its
 * wafer_plugin_program_kernels with a lock of its own, as these do. */
#ifndef WAFER_PLUGINS_COMMON_PROGRAM_KERNELS_H
#define WAFER_PLUGINS_COMMON_PROGRAM_KERNELS_H

#include <pthread.h>

#include <wafer/plugin_util.h>

/* program_kernel may be called from several threads at once: |lock|
 * guards |table|. */
struct program_kernels {
	pthread_mutex_t lock;
	struct wafer_plugin_program_kernels table;
};

/* An empty table of program |program|'s kernels; the names are kept, not
 * copied. |max_bindings| 0: any number. */
static inline void program_kernels_init(struct program_kernels *pk,
					const struct wafer_host_services *host,
					const char *plugin, const char *program,
					uint32_t max_bindings)
{
	pthread_mutex_init(&pk->lock, NULL);
	pk->table = (struct wafer_plugin_program_kernels){
		.host = host,
		.plugin = plugin,
		.program = program,
		.max_bindings = max_bindings,
	};
}

/* wafer_plugin_program_kernel_get under the lock: the kernel of |name| and
 * the declared counts, made by |make| (with |ctx|) the first time. */
static inline wafer_status
program_kernels_get(struct program_kernels *pk, const char *name,
		    uint32_t binding_count, size_t params_size, size_t size,
		    wafer_plugin_program_kernel_make_fn *make, void *ctx,
		    const struct wafer_kernel **out_kernel)
{
	wafer_status status;

	pthread_mutex_lock(&pk->lock);
	status = wafer_plugin_program_kernel_get(&pk->table, name,
						 binding_count, params_size,
						 size, make, ctx, out_kernel);
	pthread_mutex_unlock(&pk->lock);
	return status;
}

/* The calling convention of opencl's and levelzero's program kernels: a
 * pointer per binding of |k|, then the parameter block when it has one.
 * WAFER_OK when the driver says the kernel takes that many (|args|), else
 * WAFER_ERROR_INVALID_ARGUMENT through set_error: "<plugin>: kernel K of
 * P takes N arguments, not W (B bindings and the parameter block)". */
static inline wafer_status
program_kernel_args_check(const struct program_kernels *pk,
			  const struct wafer_plugin_program_kernel *k,
			  uint32_t args)
{
	uint32_t bindings = k->entry.binding_count;
	int block = k->entry.params_size != 0;

	if (args == bindings + block)
		return WAFER_OK;
	pk->table.host->set_error("%s: kernel %s of %s takes %" PRIu32
				  " arguments, not %" PRIu32 " (%" PRIu32
				  " bindings%s)",
				  pk->table.plugin, k->name, pk->table.program,
				  args, bindings + block, bindings,
				  block ? " and the parameter block" : "");
	return WAFER_ERROR_INVALID_ARGUMENT;
}

/* program_release's part: every kernel through |destroy| (NULL: nothing
 * to undo), then the lock. */
static inline void
program_kernels_release(struct program_kernels *pk,
			wafer_plugin_program_kernel_destroy_fn *destroy)
{
	wafer_plugin_program_kernels_release(&pk->table, destroy);
	pthread_mutex_destroy(&pk->lock);
}

#endif
