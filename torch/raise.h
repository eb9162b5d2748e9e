/* wafer — SPDX-License-Identifier: MIT
 *
 * raise.h: between allocator.c (C) and raise.cc, which throws what
 * allocator.c reports. Not exported (torch.map). */
#ifndef WAFER_TORCH_RAISE_H
#define WAFER_TORCH_RAISE_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* wafer_torch_alloc without the exception: NULL when it fails, the
 * reason then in torch_reason() (and on stderr). */
void *torch_alloc_or_null(ssize_t size, int device, void *stream);

/* The calling thread's last reason, "" if none. */
const char *torch_reason(void);

/* graph_pool.cc: 1 and the pool in |out_pool| when an allocation on
 * (|device|, |stream|) belongs to the private pool of a graph PyTorch is
 * capturing, else 0. */
int torch_pool_of(int device, void *stream, uint64_t out_pool[2]);

/* allocator.c: PyTorch released the graph pool (a, b) of |device|: its
 * memory goes back to the device as its blocks are freed. */
void torch_pool_release(int device, uint64_t a, uint64_t b);

#ifdef __cplusplus
}
#endif

#endif
