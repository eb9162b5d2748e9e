/* wafer — SPDX-License-Identifier: MIT
 *
 * torch_catch.h: calling wafer_torch_alloc from C and catching what it
 * throws (torch_catch.cc). */
#ifndef WAFER_T_CUDA_TORCH_CATCH_H
#define WAFER_T_CUDA_TORCH_CATCH_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void *(*torch_catch_alloc_fn)(ssize_t size, int device, void *stream);

/* Calls |alloc|: 0 when it returned (the pointer in *out), 1 when it threw
 * a std::runtime_error (its what() in |what|), 2 for anything else. */
int torch_catch_alloc(torch_catch_alloc_fn alloc, ssize_t size, int device,
		      void *stream, void **out, char *what, size_t what_size);

/* The CUDA-graph pool hooks of libwafer-torch.so, called with the C++
 * arguments PyTorch passes: wafer_torch_begin_allocate_to_pool |begin|
 * with a filter that takes |stream| only; |fn| (end or release) of pool
 * (a, b). */
void torch_catch_begin_pool(void *begin, int device, unsigned long long a,
			    unsigned long long b, void *stream);
void torch_catch_pool_call(void *fn, int device, unsigned long long a,
			   unsigned long long b);

#ifdef __cplusplus
}
#endif

#endif
