/* wafer — SPDX-License-Identifier: MIT
 *
 * fakecuda_program.c: the programs of t/programs.c on the stand-in driver
 * (t/fakecuda.c). The stand-in runs no device code; it takes the images a
 * program loads — PTX text, and the CUBIN that NVRTC (real, from the
 * toolkit) compiles from the test's CUDA C — and emulates the test's
 * kernels by name on host memory, over the grid and block they were
 * launched with, so a wrong grid or a wrong argument shows in the
 * results:
 *
 *   wafer_test_saxpy   {y, x} f32; params {u64 n; f32 a; u32 reserved}:
 *                      i = global x; i < n: y[i] = a * x[i] + y[i]
 *   wafer_test_tile2d  {out, in} f32; params {u32 rows, cols; f32 scale;
 *                      u32 reserved}: c = global x, r = global y; inside:
 *                      out[r * cols + c] = scale * in[c * rows + r]
 * (t/programs/kernels.cu; tile2d works in tiles of 16 x 16 threads). Each
 * walks the threads of the launched blocks as the kernel does, so a grid
 * or block the plugin got wrong gives wrong values.
 *
 * Any other kernel a program holds is found (cuModuleGetFunction) and runs
 * as a no-op; one it does not hold is CUDA_ERROR_NOT_FOUND. */
#include "build-config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "t/fakecuda_program.h"

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

struct saxpy_params {
	uint64_t n;
	float a;
	uint32_t reserved;
};

struct tile2d_params {
	uint32_t rows, cols;
	float scale;
	uint32_t reserved;
};

/* Threads the launch has along dimension |d|. */
static uint64_t threads(const struct fakecuda_program_launch *l, int d)
{
	return (uint64_t)l->grid[d] * l->block[d];
}

/* Whether pointer argument |a| reaches element |i| (floats), asking the
 * driver only past what it already said yes to (|*known| bytes). */
static int reaches(const struct fakecuda_program_launch *l, int a, uint64_t i,
		   uint64_t *known)
{
	uint64_t need = (i + 1) * 4;

	if (need <= *known)
		return 1;
	if (!l->reach(l->ptr[a], need))
		return 0;
	*known = need;
	return 1;
}

/* Every thread of the grid, as the kernel: i = blockIdx.x * blockDim.x +
 * threadIdx.x. Threads of other y and z indices repeat it (racing, on a
 * GPU; in order here). */
static void saxpy(const struct fakecuda_program_launch *l)
{
	struct saxpy_params p;
	uint64_t n, reps = threads(l, 1) * threads(l, 2), ky = 0, kx = 0;

	memcpy(&p, l->params, sizeof p);
	/* The threads that pass the kernel's bounds check. */
	n = threads(l, 0) < p.n ? threads(l, 0) : p.n;
	if (n == 0 || !reaches(l, 0, n - 1, &ky) || !reaches(l, 1, n - 1, &kx))
		return;
	float *y = (float *)l->ptr[0];
	const float *x = (const float *)l->ptr[1];
	for (uint64_t r = 0; r < reps; r++)
		for (uint64_t i = 0; i < n; i++)
			y[i] = p.a * x[i] + y[i];
}

#define TILE 16

/* Block by block, as the kernel: its threads (lc, lr) load tile[lr][lc]
 * from in, then, after the barrier, store tile[lc][lr] to out. A block
 * other than TILE x TILE leaves parts of a tile unloaded (NaN here) or
 * unstored, and one larger writes past the tile: a fault. */
static void tile2d(const struct fakecuda_program_launch *l)
{
	struct tile2d_params p;
	float tile[TILE][TILE + 1];
	uint64_t kin = 0, kout = 0;

	memcpy(&p, l->params, sizeof p);
	if (l->block[0] > TILE || l->block[1] > TILE) {
		l->reach(0, 1); /* shared memory past the tile */
		return;
	}
	float *out = (float *)l->ptr[0];
	const float *in = (const float *)l->ptr[1];
	for (uint64_t z = 0; z < threads(l, 2); z++)
	for (uint64_t by = 0; by < l->grid[1]; by++)
	for (uint64_t bx = 0; bx < l->grid[0]; bx++) {
		uint64_t c0 = bx * TILE, r0 = by * TILE;

		for (int i = 0; i < TILE; i++)
			for (int j = 0; j <= TILE; j++)
				tile[i][j] = NAN;
		for (uint64_t lr = 0; lr < l->block[1]; lr++)
			for (uint64_t lc = 0; lc < l->block[0]; lc++) {
				uint64_t i = (c0 + lr) * p.rows + r0 + lc;
				if (c0 + lr >= p.cols || r0 + lc >= p.rows)
					continue;
				if (!reaches(l, 1, i, &kin))
					return;
				tile[lr][lc] = in[i];
			}
		for (uint64_t lr = 0; lr < l->block[1]; lr++)
			for (uint64_t lc = 0; lc < l->block[0]; lc++) {
				uint64_t o = (r0 + lr) * p.cols + c0 + lc;
				if (c0 + lc >= p.cols || r0 + lr >= p.rows)
					continue;
				if (!reaches(l, 0, o, &kout))
					return;
				out[o] = p.scale * tile[lc][lr];
			}
	}
}

fakecuda_program_fn *fakecuda_program_emulator(const char *name,
					       int *out_pointers,
					       size_t *out_params_size)
{
	if (strcmp(name, "wafer_test_saxpy") == 0) {
		*out_pointers = 2;
		*out_params_size = sizeof(struct saxpy_params);
		return saxpy;
	}
	if (strcmp(name, "wafer_test_tile2d") == 0) {
		*out_pointers = 2;
		*out_params_size = sizeof(struct tile2d_params);
		return tile2d;
	}
	return NULL;
}
