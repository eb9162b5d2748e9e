/* wafer — SPDX-License-Identifier: MIT
 *
 * raise.h: between allocator.c (C) and raise.cc, which throws what
 * allocator.c reports. Not exported (torch.map). */
#ifndef WAFER_TORCH_RAISE_H
#define WAFER_TORCH_RAISE_H

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* wafer_torch_alloc without the exception: NULL when it fails, the
 * reason then in torch_reason() (and on stderr). */
void *torch_alloc_or_null(ssize_t size, int device, void *stream);

/* The calling thread's last reason, "" if none. */
const char *torch_reason(void);

#ifdef __cplusplus
}
#endif

#endif
