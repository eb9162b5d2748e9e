/* wafer — SPDX-License-Identifier: MIT
 *
 * program.c: the caller's own kernels (program.h). */
#include "build-config.h"

#include <wafer/program.h>

#include "core/error.h"

WAFER_API const char *wafer_program_format_name(wafer_program_format format)
{
	switch (format) {
	case WAFER_PROGRAM_NONE: return "none";
	case WAFER_PROGRAM_CUDA_C: return "cuda-c";
	case WAFER_PROGRAM_PTX: return "ptx";
	case WAFER_PROGRAM_CUBIN: return "cubin";
	case WAFER_PROGRAM_OPENCL_C: return "opencl-c";
	case WAFER_PROGRAM_SPIRV: return "spirv";
	case WAFER_PROGRAM_HOST_C: return "host-c";
	case WAFER_PROGRAM_HOST_SO: return "host-so";
	}
	return "unknown";
}

WAFER_API wafer_status wafer_program_create(wafer_client *client,
					    const wafer_program_source *sources,
					    size_t count, const char *options,
					    wafer_program **out_program)
{
	(void)client, (void)sources, (void)count, (void)options;
	if (out_program)
		*out_program = NULL;
	return wafer_fail(WAFER_ERROR_NOT_SUPPORTED,
			  "wafer_program_create: not implemented yet");
}

WAFER_API wafer_status wafer_program_kernel(wafer_program *program,
					    const char *name,
					    uint32_t binding_count,
					    size_t params_size,
					    const wafer_kernel_ref **out_kernel)
{
	(void)program, (void)name, (void)binding_count, (void)params_size;
	if (out_kernel)
		*out_kernel = NULL;
	return wafer_fail(WAFER_ERROR_NOT_SUPPORTED,
			  "wafer_program_kernel: not implemented yet");
}

WAFER_API wafer_status wafer_program_release(wafer_program *program)
{
	(void)program;
	return WAFER_OK;
}
