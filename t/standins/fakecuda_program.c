/* wafer — SPDX-License-Identifier: MIT
 *
 * fakecuda_program.c: the programs of t/api/programs.c on the stand-in driver
 * (t/standins/fakecuda.c). The stand-in runs no device code; it takes the images a
 * program loads — PTX text, and the CUBIN that NVRTC (real, from the
 * toolkit) compiles from the test's CUDA C — and runs the test's kernels,
 * t/user_kernels/kernels.cu, by their emulation on host memory
 * (t/user_kernels/emulate.h), over the grid and block they were launched
 * with, so a wrong grid or a wrong argument shows in the results.
 *
 * Any other kernel a program holds is found (cuModuleGetFunction) and runs
 * as a no-op; one it does not hold is CUDA_ERROR_NOT_FOUND. */
#include "build-config.h"

#include <stdio.h>
#include <string.h>

#include "t/standins/fakecuda_program.h"
#include "t/user_kernels/emulate.h"

/*===----------------------------------------------------------------------===
 * Images
 *===----------------------------------------------------------------------===*/

static uint64_t read_le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int is_elf(const unsigned char *p)
{
	return memcmp(p, "\177ELF", 4) == 0 && p[4] == 2;
}

/* PTX starts with comments, blank lines or a directive. */
static int is_ptx(const char *p)
{
	p += strspn(p, " \t\r\n");
	return p[0] == '.' || (p[0] == '/' && (p[1] == '/' || p[1] == '*'));
}

size_t fakecuda_program_image_size(const void *image)
{
	const unsigned char *p = image;

	if (is_elf(p)) {
		uint64_t shoff = read_le(p + 0x28, 8);
		uint64_t shsize = read_le(p + 0x3a, 2);
		uint64_t shnum = read_le(p + 0x3c, 2);
		return (size_t)(shoff + shsize * shnum);
	}
	if (is_ptx(image))
		return strlen(image) + 1;
	return 0;
}

/* The line of |text| at which |at| is. */
static int line_of(const char *text, const char *at)
{
	int line = 1;

	for (const char *p = text; p < at; p++)
		line += *p == '\n';
	return line;
}

CUresult fakecuda_program_check(const void *image, unsigned count,
				 const CUjit_option *keys, void **values)
{
	const char *text = image;
	const char *missing = NULL;
	char scratch[1], *log = scratch;
	size_t size = sizeof scratch;

	for (unsigned i = 0; i < count; i++) {
		if (keys[i] == CU_JIT_ERROR_LOG_BUFFER && values[i])
			log = values[i];
		if (keys[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
			size = (size_t)(uintptr_t)values[i];
	}
	if (log == scratch)
		size = sizeof scratch;
	if (size)
		log[0] = '\0';
	if (is_elf(image) || !is_ptx(text))
		return CUDA_SUCCESS;
	if (!strstr(text, ".version"))
		missing = ".version";
	else if (!strstr(text, ".target"))
		missing = ".target";
	if (!missing)
		return CUDA_SUCCESS;
	/* Where the directive should have been: the first line with code. */
	snprintf(log, size,
		 "ptxas application ptx input, line %d; fatal   : Missing %s "
		 "directive at start of file",
		 line_of(text, text + strspn(text, " \t\r\n")), missing);
	return CUDA_ERROR_INVALID_PTX;
}

int fakecuda_program_has_kernel(const void *image, size_t size,
				const char *name)
{
	char want[192];
	int n;

	if (is_elf(image))
		n = snprintf(want, sizeof want, ".text.%s", name) + 1;
	else
		n = snprintf(want, sizeof want, ".entry %s(", name);
	return n > 0 && (size_t)n < sizeof want &&
	       memmem(image, size, want, (size_t)n) != NULL;
}

/*===----------------------------------------------------------------------===
 * Kernels
 *===----------------------------------------------------------------------===*/

struct cuda_ctx {
	const struct fakecuda_program_launch *l;
	/* Per pointer argument, the bytes the driver already said it
	 * reaches: it is asked only past them. */
	uint64_t known[2];
};

static float *elem(void *ctx, int a, uint64_t i)
{
	struct cuda_ctx *c = ctx;
	uint64_t need = (i + 1) * sizeof(float);

	if (need > c->known[a]) {
		if (!c->l->reach(c->l->ptr[a], need))
			return NULL;
		c->known[a] = need;
	}
	return (float *)c->l->ptr[a] + i;
}

static void past_tile(void *ctx, uint32_t x, uint32_t y)
{
	struct cuda_ctx *c = ctx;

	(void)x, (void)y;
	c->l->reach(0, 1); /* shared memory past the tile */
}

static void run(const struct fakecuda_program_launch *l, user_kernel_fn *fn)
{
	struct cuda_ctx c = {.l = l};
	struct user_kernel_launch u = {
		.group_count = {l->grid[0], l->grid[1], l->grid[2]},
		.group_size = {l->block[0], l->block[1], l->block[2]},
		.params = l->params,
		.elem = elem,
		.past_tile = past_tile,
		.ctx = &c,
	};

	fn(&u);
}

/* fakecuda_program_fn is given no name: one function a kernel. */
static void saxpy(const struct fakecuda_program_launch *l)
{
	run(l, user_kernel_saxpy);
}

static void tile2d(const struct fakecuda_program_launch *l)
{
	run(l, user_kernel_tile2d);
}

fakecuda_program_fn *fakecuda_program_emulator(const char *name,
					       int *out_pointers,
					       size_t *out_params_size)
{
	user_kernel_fn *fn =
		user_kernel_emulator(name, out_pointers, out_params_size);

	if (fn == user_kernel_saxpy)
		return saxpy;
	if (fn == user_kernel_tile2d)
		return tile2d;
	return NULL;
}
