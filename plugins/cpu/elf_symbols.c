/* wafer — SPDX-License-Identifier: MIT
 *
 * elf_symbols.c: the functions a shared object exports, read from its
 * image's .dynsym, so that a program's "no kernel 'x'" can list the
 * kernels it has (elf_symbols.h). Every offset is checked against the
 * image's size: the image is the caller's bytes.
 */
#include "plugins/cpu/elf_symbols.h"

#include <elf.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* |count| records of |size| bytes at |off| lie inside |total| bytes. */
static bool inside(uint64_t off, uint64_t size, uint64_t count,
		   size_t total)
{
	return size && count <= (total / size) && off <= total &&
	       count * size <= total - off;
}

char *cpu_elf_exported_functions(const void *image, size_t size)
{
	const unsigned char *b = image;
	const Elf64_Ehdr *eh = image;
	char *out = NULL;
	size_t used = 0, cap = 0;

	if (size < sizeof *eh || memcmp(b, ELFMAG, SELFMAG) != 0 ||
	    b[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !inside(eh->e_shoff, sizeof(Elf64_Shdr), eh->e_shnum, size))
		return NULL;
	const Elf64_Shdr *sh = (const void *)(b + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		const Elf64_Shdr *str = &sh[sh[i].sh_link];
		if (!inside(sh[i].sh_offset, sizeof(Elf64_Sym),
			    sh[i].sh_size / sizeof(Elf64_Sym), size) ||
		    !inside(str->sh_offset, 1, str->sh_size, size))
			return NULL;
		const Elf64_Sym *sym = (const void *)(b + sh[i].sh_offset);
		const char *names = (const char *)(b + str->sh_offset);
		for (size_t s = 0; s < sh[i].sh_size / sizeof *sym; s++) {
			if (ELF64_ST_TYPE(sym[s].st_info) != STT_FUNC ||
			    ELF64_ST_BIND(sym[s].st_info) == STB_LOCAL ||
			    sym[s].st_shndx == SHN_UNDEF ||
			    sym[s].st_name >= str->sh_size)
				continue;
			const char *name = names + sym[s].st_name;
			size_t len = strnlen(name, str->sh_size - sym[s].st_name);
			/* The toolchain's own entries are no kernels. */
			if (!len || len == str->sh_size - sym[s].st_name ||
			    strcmp(name, "_init") == 0 ||
			    strcmp(name, "_fini") == 0)
				continue;
			if (used + len + 3 > cap) {
				size_t want = (used + len + 3) * 2;
				char *grown = realloc(out, want);
				if (!grown) {
					free(out);
					return NULL;
				}
				out = grown;
				cap = want;
			}
			used += (size_t)sprintf(out + used, "%s%s",
						used ? ", " : "", name);
		}
		break;
	}
	return out;
}
