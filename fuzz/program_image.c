/* wafer — SPDX-License-Identifier: MIT
 *
 * fuzz/program_image.c: program sources as a caller hands them over.
 * The first byte picks what the rest is:
 *   - host-so bytes: staged in a memory file and checked as the cpu
 *     plugin checks an image before dlopen (lib/plugin_file.c). Nothing
 *     is loaded (a shared object's constructors are code: running one is
 *     what host-so means). An image the check passes must have its ELF
 *     header, at most 256 program headers and every segment inside it.
 *   - text in a format the cpu device does not take (OpenCL C, CUDA C,
 *     PTX), with NULs anywhere and a declared size from 1 to all of it,
 *     or a stride (struct_size) and name taken from the input, through
 *     wafer_program_create: refused with a status and a bounded detail,
 *     never a program. */
#include "build-config.h"

#include <elf.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <wafer/program.h>

#include "lib/file.h"
#include "lib/plugin_file.h"
#include "fuzz/cpu_client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void image(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-image", MFD_CLOEXEC);
	char why[256];
	if (fd < 0 || (size && wafer__file_write_all(fd, data, size) != 0))
		abort();
	bool good = wafer__elf_fd_check(fd, why, sizeof why);
	close(fd);
	if (!good)
		return;
	Elf64_Ehdr h;
	if (size < sizeof h)
		__builtin_trap();
	memcpy(&h, data, sizeof h);
	if (h.e_phnum == 0 || h.e_phnum > 256 ||
	    h.e_phoff + (uint64_t)h.e_phnum * sizeof(Elf64_Phdr) > size)
		__builtin_trap();
	for (unsigned i = 0; i < h.e_phnum; i++) {
		Elf64_Phdr s;
		memcpy(&s, data + h.e_phoff + i * sizeof s, sizeof s);
		if (s.p_type != PT_NULL &&
		    (s.p_offset + s.p_filesz < s.p_offset ||
		     s.p_offset + s.p_filesz > size))
			__builtin_trap();
	}
}

static void text(const uint8_t *data, size_t size)
{
	static const wafer_program_format formats[] = {
		WAFER_PROGRAM_OPENCL_C, WAFER_PROGRAM_CUDA_C,
		WAFER_PROGRAM_PTX, WAFER_PROGRAM_NONE, (wafer_program_format)99};
	if (size < 4)
		return;
	/* The source's fields from the first bytes, its text the rest. */
	wafer_program_source s[2];
	memset(s, 0, sizeof s);
	s[0].struct_size = data[0] < 200 ? sizeof s[0] : data[0];
	s[0].format = formats[data[1] % 5];
	s[0].name = data[2] & 1 ? (const char *)data + 3 : NULL;
	if (s[0].name && !memchr(s[0].name, '\0', size - 3))
		s[0].name = NULL; /* a name is a string */
	s[0].data = data + 3;
	s[0].size = data[2] & 2 ? size - 3 : (size - 3) / 2;
	s[1] = s[0];
	wafer_program *p = (wafer_program *)&p;
	wafer_status status = wafer_program_create(fuzz_cpu_client(), s, 1,
						   NULL, &p);
	if (status == WAFER_OK || p != NULL ||
	    strlen(wafer_last_error()) > 4096)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		image(data + 1, size - 1);
	else
		text(data + 1, size - 1);
	return 0;
}
