/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * host_kernel.h: how a host kernel — a kernel of a WAFER_PROGRAM_HOST_C
 * or WAFER_PROGRAM_HOST_SO program (program.h), run by the cpu plugin —
 * is declared. A kernel is a C function with external linkage and
 * default visibility taking one argument block:
 *
 *   #include <wafer/host_kernel.h>
 *   struct saxpy_params { uint64_t n; float a; uint32_t pad; };
 *   WAFER_HOST_KERNEL(saxpy)
 *   {
 *       struct saxpy_params p;
 *       memcpy(&p, args->params, sizeof p);
 *       float *y = args->bindings[0];
 *       const float *x = args->bindings[1];
 *       for (uint64_t i = args->begin; i < args->end && i < p.n; i++)
 *           y[i] = p.a * x[i] + y[i];
 *   }
 *
 * The plugin may split dimension 0 of the launch across its threads and
 * call the kernel concurrently, each call with its own [begin, end): a
 * kernel writes only what its range owns. This header needs nothing but
 * the C standard library. */
#ifndef WAFER_HOST_KERNEL_H
#define WAFER_HOST_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct wafer_host_kernel_args {
	size_t struct_size;
	/* bindings[i] is binding i's first byte; binding_sizes[i] its size
	 * in bytes. */
	void *const *bindings;
	const size_t *binding_sizes;
	uint32_t binding_count;
	/* The parameter block (params_size bytes as the caller declared;
	 * NULL when 0). It may sit at any address: copy it out with memcpy. */
	const void *params;
	size_t params_size;
	/* Total work items per dimension, each at least 1. */
	uint64_t global[3];
	/* This call's share of dimension 0: items [begin, end). Dimensions 1
	 * and 2 are whole in every call. */
	uint64_t begin, end;
};

typedef void wafer_host_kernel_fn(const struct wafer_host_kernel_args *args);

#if defined(__GNUC__)
#define WAFER_HOST_KERNEL_VISIBLE __attribute__((visibility("default")))
#else
#define WAFER_HOST_KERNEL_VISIBLE
#endif

/* Declares (so that -Wmissing-prototypes is content) and defines kernel
 * |name|; the body follows. */
#ifdef __cplusplus
#define WAFER_HOST_KERNEL_LINKAGE extern "C" WAFER_HOST_KERNEL_VISIBLE
#else
#define WAFER_HOST_KERNEL_LINKAGE WAFER_HOST_KERNEL_VISIBLE
#endif
#define WAFER_HOST_KERNEL(name)                                                \
	WAFER_HOST_KERNEL_LINKAGE void name(                                   \
		const struct wafer_host_kernel_args *args);                    \
	WAFER_HOST_KERNEL_LINKAGE void name(                                   \
		const struct wafer_host_kernel_args *args)

#ifdef __cplusplus
}
#endif

#endif /* WAFER_HOST_KERNEL_H */
