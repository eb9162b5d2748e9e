/* wafer — SPDX-License-Identifier: MIT
 *
 * plugin_file.c: what the loader checks of a plugin file, and the cpu
 * plugin of a program image, before dlopen.
 *
 * dlopen maps the file's segments and touches them: a FIFO blocks it for
 * ever, and a file cut short (a half-copied package, a full disk) kills
 * the process with SIGBUS when a mapped page lies past the end of the
 * file. Neither can be caught once dlopen runs, so the loader first opens
 * the file without blocking, checks it is a regular file, reads its ELF
 * header and program headers, and checks every segment the loader maps
 * lies inside the file. Whatever passes is left to dlopen, whose errors
 * are ordinary. glibc copies the program headers onto the caller's stack
 * when they are not in the first block it reads, so their number is
 * bounded too (65,535 of them would take 3.6 MB of stack). The cpu
 * plugin compiles this file in and checks each program image (host-so,
 * or a host-c program's cached object) the same way on the memory file
 * it stages the image in. */
#include "build-config.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/plugin_file.h"

#if UINTPTR_MAX > 0xffffffffu
typedef Elf64_Ehdr elf_header;
typedef Elf64_Phdr elf_segment;
#define ELF_CLASS ELFCLASS64
#else
typedef Elf32_Ehdr elf_header;
typedef Elf32_Phdr elf_segment;
#define ELF_CLASS ELFCLASS32
#endif

/* Reads exactly |size| bytes at |offset|; false on a short read. */
static bool read_at(int fd, void *buf, size_t size, uint64_t offset)
{
	size_t got = 0;

	while (got < size) {
		ssize_t n = pread(fd, (char *)buf + got, size - got,
				  (off_t)(offset + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return true;
}

/* The most program headers a file may have: shared objects that linkers
 * write have about a dozen. */
#define MAX_SEGMENTS 256

static bool check_segments(int fd, const elf_header *h, uint64_t size,
			   char *why, size_t why_size)
{
	uint64_t table_end =
		(uint64_t)h->e_phoff + (uint64_t)h->e_phnum * h->e_phentsize;

	if (h->e_phnum == 0 || h->e_phentsize != sizeof(elf_segment)) {
		snprintf(why, why_size, "no program headers: not a shared object");
		return false;
	}
	if (h->e_phnum > MAX_SEGMENTS) {
		snprintf(why, why_size, "%u program headers, the most taken is %d",
			 (unsigned)h->e_phnum, MAX_SEGMENTS);
		return false;
	}
	if (table_end > size) {
		snprintf(why, why_size,
			 "truncated: %llu bytes, its program headers end at %llu",
			 (unsigned long long)size,
			 (unsigned long long)table_end);
		return false;
	}
	for (unsigned i = 0; i < h->e_phnum; i++) {
		elf_segment s;
		if (!read_at(fd, &s, sizeof s,
			     h->e_phoff + (uint64_t)i * sizeof s)) {
			snprintf(why, why_size, "cannot read program header %u", i);
			return false;
		}
		uint64_t end = (uint64_t)s.p_offset + s.p_filesz;
		if (s.p_type != PT_NULL && (end < s.p_offset || end > size)) {
			snprintf(why, why_size,
				 "truncated: %llu bytes, segment %u ends at %llu",
				 (unsigned long long)size, i,
				 (unsigned long long)end);
			return false;
		}
	}
	return true;
}

bool wafer__elf_fd_check(int fd, char *why, size_t why_size)
{
	struct stat st;
	elf_header h;

	if (fstat(fd, &st) != 0) {
		snprintf(why, why_size, "cannot stat: %s", strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(why, why_size, "not a regular file");
	} else if ((uint64_t)st.st_size < SELFMAG ||
		   !read_at(fd, &h, SELFMAG, 0) ||
		   memcmp(h.e_ident, ELFMAG, SELFMAG) != 0) {
		snprintf(why, why_size, "not an ELF file");
	} else if ((uint64_t)st.st_size < sizeof h ||
		   !read_at(fd, &h, sizeof h, 0)) {
		snprintf(why, why_size, "truncated: %llu bytes, shorter than an "
			 "ELF header", (unsigned long long)st.st_size);
	} else if (h.e_ident[EI_CLASS] != ELF_CLASS) {
		snprintf(why, why_size, "an ELF file of another word size");
	} else if (h.e_type != ET_DYN) {
		snprintf(why, why_size, "not a shared object (ELF type %u)",
			 (unsigned)h.e_type);
	} else {
		return check_segments(fd, &h, (uint64_t)st.st_size, why,
				      why_size);
	}
	return false;
}

bool wafer__plugin_file_check(const char *path, char *why, size_t why_size)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0) {
		snprintf(why, why_size, "cannot open: %s", strerror(errno));
		return false;
	}
	bool good = wafer__elf_fd_check(fd, why, why_size);
	close(fd);
	return good;
}
