/* wafer — SPDX-License-Identifier: MIT
 *
 * program.h: the test driver's side of the programs of t/api/programs.c
 * (t/standins/levelzero/program.c): the "native binary" of a module, which the
 * plugin caches and hands back as ZE_MODULE_FORMAT_NATIVE. The test
 * driver compiles nothing, so its native binary is the module's SPIR-V
 * behind a header naming the driver: what a real driver's is not, but
 * enough to tell its own from anything else. The kernels of t/api/programs
 * are emulated like the plugin's (emulate.h: emulate_program_kernels). */
#ifndef WAFER_T_LEVELZERO_PROGRAM_H
#define WAFER_T_LEVELZERO_PROGRAM_H

#include <stddef.h>

/* A malloc'd native binary of the SPIR-V |code| (|size| bytes), its size
 * in |*out_size|; NULL when out of memory. */
void *fakeze_native_wrap(const void *code, size_t size, size_t *out_size);

/* The SPIR-V inside native binary |*code| (|*size| bytes), in place:
 * returns 1, or 0 when it is not one this driver made. */
int fakeze_native_unwrap(const void **code, size_t *size);

#endif
