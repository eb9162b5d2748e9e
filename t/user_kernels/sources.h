/* wafer — SPDX-License-Identifier: MIT
 *
 * sources.h: the files of t/user_kernels/ as program sources, for the
 * tests of program.h. user_kernels_load(sources, data) reads each one
 * (from $T_SRCDIR or $T_BUILDDIR) into data[i] (malloc'd; NULL, with a
 * diag, when it is not there) and describes it in sources[i], in the
 * order of user_kernel_files: the order a fat program offers them.
 *
 * Header-only, like tap.h (include it after tap.h). */
#ifndef WAFER_T_USER_KERNELS_SOURCES_H
#define WAFER_T_USER_KERNELS_SOURCES_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <wafer/program.h>

static const struct {
	wafer_program_format format;
	const char *dir; /* "src" or "build" */
	const char *file;
} user_kernel_files[] = {
	{WAFER_PROGRAM_CUDA_C, "src", "user_kernels/kernels.cu"},
	{WAFER_PROGRAM_PTX, "src", "user_kernels/kernels.ptx"},
	{WAFER_PROGRAM_OPENCL_C, "src", "user_kernels/kernels.cl"},
	{WAFER_PROGRAM_SPIRV, "build", "user_kernels/kernels.spv"},
	{WAFER_PROGRAM_HOST_C, "src", "user_kernels/kernels.c"},
	{WAFER_PROGRAM_HOST_SO, "build", "user_kernels/.libs/kernels.so"},
};
#define USER_KERNEL_FORMATS                                                    \
	(sizeof user_kernel_files / sizeof user_kernel_files[0])

static inline void *user_kernels_read(const char *path, size_t *out_size)
{
	struct stat st;
	void *data = NULL;
	FILE *f = fopen(path, "rb");

	*out_size = 0;
	if (!f)
		return NULL;
	if (fstat(fileno(f), &st) == 0 && st.st_size > 0) {
		data = malloc((size_t)st.st_size);
		if (data && fread(data, 1, (size_t)st.st_size, f) !=
				    (size_t)st.st_size) {
			free(data);
			data = NULL;
		}
		if (data)
			*out_size = (size_t)st.st_size;
	}
	fclose(f);
	return data;
}

static inline void user_kernels_load(wafer_program_source *sources,
				     void **data)
{
	const char *src = getenv("T_SRCDIR"), *build = getenv("T_BUILDDIR");
	char path[4096];

	for (size_t i = 0; i < USER_KERNEL_FORMATS; i++) {
		snprintf(path, sizeof path, "%s/%s",
			 strcmp(user_kernel_files[i].dir, "src") == 0 ? src
								     : build,
			 user_kernel_files[i].file);
		sources[i] = (wafer_program_source){
			.struct_size = sizeof sources[i],
			.format = user_kernel_files[i].format,
			.name = strrchr(user_kernel_files[i].file, '/') + 1,
		};
		data[i] = user_kernels_read(path, &sources[i].size);
		sources[i].data = data[i];
		if (!data[i])
			diag("%s: not there (%s)", path, strerror(errno));
	}
}

#endif
