/* wafer — SPDX-License-Identifier: MIT
 *
 * The functions a shared object's image exports (elf_symbols.c). */
#ifndef WAFER_CPU_ELF_SYMBOLS_H
#define WAFER_CPU_ELF_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>

/* "a, b, c": the defined global functions of the ELF64 image's .dynsym,
 * in table order; NULL when there are none, the image is not such a
 * file, or memory ran out. The caller frees it. */
char *cpu_elf_exported_functions(const void *image, size_t size);

#endif
