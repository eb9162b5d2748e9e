/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * program.h: the caller's own kernels. A program is compiled or loaded at
 * run time from sources the caller offers in one or more formats at once
 * (a "fat" program: CUDA C, PTX, OpenCL C, SPIR-V, host C, ...); the
 * client's device takes the first one, in the caller's order, that it
 * accepts. Its kernels are launched by wafer_execute through a kernel ref,
 * exactly like the kernels of the plugin's catalogue:
 *
 *   wafer_program_source src[] = {
 *       {sizeof src[0], WAFER_PROGRAM_CUDA_C, cu_text, cu_size, "saxpy.cu"},
 *       {sizeof src[0], WAFER_PROGRAM_OPENCL_C, cl_text, cl_size, "saxpy.cl"},
 *       {sizeof src[0], WAFER_PROGRAM_HOST_C, c_text, c_size, "saxpy.c"},
 *   };
 *   wafer_program *p;  const wafer_kernel_ref *saxpy;
 *   wafer_program_create(client, src, 3, NULL, &p);
 *   wafer_program_kernel(p, "saxpy", 2, sizeof(struct saxpy_params), &saxpy);
 *   args.kernel_ref = saxpy;  wafer_execute(client, &args);
 *   ...  wafer_program_release(p);
 *
 * The calling convention every format follows (one pointer per binding,
 * then the parameter block by value; the launch shape) is in
 * wafer-program(7); host kernels are declared with <wafer/host_kernel.h>.
 * Compiled binaries are cached on disk per plugin, device and driver
 * version, so a second process compiles nothing. */
#ifndef WAFER_PROGRAM_H
#define WAFER_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/wafer.h>

#ifdef __cplusplus
extern "C" {
#endif

/* wafer_program_format and wafer_program_source are in wafer/types.h
 * (the plugin ABI passes them on): formats WAFER_PROGRAM_CUDA_C, _PTX,
 * _CUBIN, _OPENCL_C, _SPIRV, _HOST_C and _HOST_SO; a source is
 * {struct_size, format, data, size, name}. */

/* "cuda-c", "ptx", "cubin", "opencl-c", "spirv", "host-c", "host-so";
 * "none" for WAFER_PROGRAM_NONE, "vendor-0x10001" and the like for a
 * vendor's own format (types.h; it lives until the calling thread's
 * eighth next such name) and "unknown" for other values. Never
 * NULL. */
WAFER_API const char *wafer_program_format_name(wafer_program_format format);

typedef struct wafer_program wafer_program;

/* Builds or loads a program on |client|'s device from the first of
 * |sources| (|count| > 0, in the caller's order) whose format the device
 * accepts. |options|: NULL, or build options handed to the compiler
 * ("-DTILE=16"). Errors:
 *   WAFER_ERROR_NOT_SUPPORTED  no source in a format the device takes
 *       ("cpu:0 takes host-c, host-so; offered: ptx, opencl-c"), or the
 *       device's plugin has no programs at all;
 *   WAFER_ERROR_BUILD  it did not compile or link: wafer_last_error()
 *       holds the compiler's whole log, with its line numbers. */
WAFER_API wafer_status wafer_program_create(wafer_client *client,
					    const wafer_program_source *sources,
					    size_t count, const char *options,
					    wafer_program **out_program);

/* A ref to kernel |name| of |program|, taking exactly |binding_count|
 * bindings and a parameter block of exactly |params_size| bytes (checked
 * by wafer_execute like a catalogue kernel's). Launch it with
 * wafer_execute_args.kernel_ref on the program's client. Valid until the
 * program is released; an unknown name is WAFER_ERROR_NOT_FOUND. Asking
 * twice for one name with the same counts gives the same ref. */
WAFER_API wafer_status wafer_program_kernel(wafer_program *program,
					    const char *name,
					    uint32_t binding_count,
					    size_t params_size,
					    const wafer_kernel_ref **out_kernel);

/* Releases |program|. Launches of its kernels issued before run first
 * (the release is ordered like a handle's); its refs are invalid from
 * now on (wafer_execute returns WAFER_ERROR_INVALID_HANDLE). Every
 * program still alive when its client closes is released then. NULL is
 * a no-op returning WAFER_OK. */
WAFER_API wafer_status wafer_program_release(wafer_program *program);

#ifdef __cplusplus
}
#endif

#endif /* WAFER_PROGRAM_H */
