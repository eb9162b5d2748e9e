/* wafer — SPDX-License-Identifier: MIT
 *
 * spirv.h: just enough of a SPIR-V reader for the test driver to know the
 * kernels of a module the way a real driver does: their names, the size of
 * each argument as zeKernelSetArgumentValue must pass it, which arguments
 * are global pointers, and a required work-group size. With it the driver
 * refuses a kernel name that is not in the module, an argument of the
 * wrong size or index, and a group size the kernel was not compiled for —
 * the mistakes a plugin's host code can make against its own kernels. */
#ifndef WAFER_T_LEVELZERO_SPIRV_H
#define WAFER_T_LEVELZERO_SPIRV_H

#include <stddef.h>
#include <stdint.h>

#define SPV_MAX_ARGS 16

enum spv_arg_kind {
	SPV_ARG_VALUE,   /* a scalar or a by-value struct: |size| bytes */
	SPV_ARG_GLOBAL,  /* a pointer to global (CrossWorkgroup) memory */
	SPV_ARG_LOCAL,   /* a pointer to local memory: the size is the
			  * allocation, the value NULL */
	SPV_ARG_OTHER,   /* anything else (images, samplers, ...) */
};

struct spv_arg {
	enum spv_arg_kind kind;
	size_t size;
};

struct spv_kernel {
	char name[64];
	uint32_t arg_count;
	struct spv_arg args[SPV_MAX_ARGS];
	/* OpExecutionMode LocalSize; all 0 when the kernel has none. */
	uint32_t local_size[3];
};

struct spv_module {
	uint32_t version; /* (major << 16) | (minor << 8), as in the header */
	uint32_t kernel_count;
	struct spv_kernel *kernels;
};

/* Reads |size| bytes of SPIR-V. Returns 0, or -1 with a reason in
 * |error| (the module is then empty). */
int spv_parse(const void *code, size_t size, struct spv_module *out,
	      char *error, size_t error_size);
void spv_free(struct spv_module *module);
const struct spv_kernel *spv_find(const struct spv_module *module,
				  const char *name);

#endif
