/* wafer — SPDX-License-Identifier: MIT
 *
 * plugin_file.h: the checks a plugin file passes before dlopen (see
 * plugin_file.c for why). */
#ifndef WAFER_CORE_PLUGIN_FILE_H
#define WAFER_CORE_PLUGIN_FILE_H

#include <stdbool.h>
#include <stddef.h>

/* True when |path| is a regular file holding an ELF shared object of this
 * machine's word size whose program headers and segments lie inside the
 * file. Otherwise false with the reason in |why| ("not a regular file",
 * "truncated: 4096 bytes, segment 3 ends at 20480", ...). Never blocks. */
bool wafer__plugin_file_check(const char *path, char *why, size_t why_size);

/* The same checks of the open file |fd| (a program image staged in a
 * memory file): its ELF header, at most 256 program headers, each
 * segment inside the file. Reads with pread; never blocks. */
bool wafer__elf_fd_check(int fd, char *why, size_t why_size);

#endif
