/* wafer — SPDX-License-Identifier: MIT
 *
 * program_images.c: what wafer_program_create and wafer_program_kernel
 * refuse, and that what they accept is the caller's program. Backend-
 * neutral: each part runs where the device takes the format it needs
 * (t/user_kernels/ gives one of each).
 *
 *  - a text source (host C, OpenCL C, CUDA C, PTX) with a NUL byte before
 *    its end is refused naming the offset; trailing NULs are fine;
 *  - a parameter block past the most a kernel takes is refused, and so
 *    are names of a megabyte, whose details echo only their start;
 *  - host-so: an image cut short (SIGBUS inside dlopen before), one that
 *    is only the ELF magic or whose header is zeros, one that declares
 *    65,535 program headers are refused; the whole image loads;
 *  - host-c: a global variable is not a kernel; two live programs with
 *    the same kernel name and different bodies each run their own; a
 *    cached shared object cut short (its checksum made to match) is
 *    refused and compiled again; without a C compiler, the refusal of a
 *    host-c program says why. */
#include "build-config.h"

#include <elf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/program.h>
#include <wafer/wafer.h>

#include "t/client_util.h"
#include "t/tap.h"

/* One point skipped, with why. */
static void skip(const char *why, int n)
{
	for (int i = 0; i < n; i++)
		ok(1, "# SKIP %s", why);
}

static wafer_runtime *runtime;
static wafer_client *client;

static void *read_whole(const char *dir, const char *file, size_t *out_size)
{
	char path[4096];
	snprintf(path, sizeof path, "%s%s%s", getenv(dir) ? getenv(dir) : "",
		 getenv(dir) ? "/" : "", file);
	FILE *f = fopen(path, "rb");
	void *data = NULL;
	*out_size = 0;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0) {
		long n = ftell(f);
		rewind(f);
		data = n > 0 ? malloc((size_t)n) : NULL;
		if (data && fread(data, 1, (size_t)n, f) == (size_t)n)
			*out_size = (size_t)n;
		else {
			free(data);
			data = NULL;
		}
	}
	fclose(f);
	return data;
}

static wafer_program_source source(wafer_program_format format,
				   const void *data, size_t size)
{
	return (wafer_program_source){.struct_size = sizeof(wafer_program_source),
				      .format = format,
				      .name = "t",
				      .data = data,
				      .size = size};
}

static wafer_status create(wafer_program_format format, const void *data,
			   size_t size, wafer_program **out)
{
	wafer_program_source s = source(format, data, size);
	return wafer_program_create(client, &s, 1, NULL, out);
}

/* Whether the device takes |format| (a program of |data| in it is not
 * refused as NOT_SUPPORTED). */
static bool takes(wafer_program_format format, const void *data, size_t size)
{
	wafer_program *p = NULL;
	wafer_status status = create(format, data, size, &p);
	wafer_program_release(p);
	return status != WAFER_ERROR_NOT_SUPPORTED;
}

/*===----------------------------------------------------------------------===
 * Text sources
 *===----------------------------------------------------------------------===*/

static void test_nul(void)
{
	static const char text[] = "/* a */ int x;\0/* b */ int y;\n";
	static const wafer_program_format formats[] = {
		WAFER_PROGRAM_HOST_C, WAFER_PROGRAM_OPENCL_C,
		WAFER_PROGRAM_CUDA_C, WAFER_PROGRAM_PTX};

	for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
		const char *name = wafer_program_format_name(formats[i]);
		wafer_program *p = (wafer_program *)&p;
		is_status(create(formats[i], text, sizeof text - 1, &p),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "%s: a NUL byte inside the source is refused", name);
		like(wafer_last_error(), "NUL byte at offset 14",
		     "%s:   ... naming its offset", name);
		ok(p == NULL, "%s:   ... and no program", name);
	}
}

/* A source of t/user_kernels/ the device takes, with a NUL after it: it
 * builds. */
static void test_trailing_nul(const wafer_program_source *fat, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		if (fat[i].format == WAFER_PROGRAM_HOST_SO ||
		    !takes(fat[i].format, fat[i].data, fat[i].size))
			continue;
		char *text = malloc(fat[i].size + 2);
		memcpy(text, fat[i].data, fat[i].size);
		text[fat[i].size] = text[fat[i].size + 1] = '\0';
		wafer_program *p = NULL;
		is_status(create(fat[i].format, text, fat[i].size + 2, &p),
			  WAFER_OK, "%s: NULs at the end are fine",
			  wafer_program_format_name(fat[i].format));
		wafer_program_release(p);
		free(text);
		return;
	}
	skip("no text format taken here", 1);
}

static void test_params(const wafer_program_source *fat, size_t count)
{
	wafer_program *p = NULL;
	wafer_status status = wafer_program_create(client, fat, count, NULL, &p);
	if (status == WAFER_ERROR_NOT_SUPPORTED) {
		skip("no format of t/user_kernels/ taken here", 3);
		return;
	}
	check(status, "program_create");
	const wafer_kernel_ref *ref = NULL;
	is_status(wafer_program_kernel(p, "wafer_test_saxpy", 2, SIZE_MAX,
				       &ref),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "params_size SIZE_MAX is refused");
	like(wafer_last_error(), "the most is", "  ... giving the most");
	is_status(wafer_program_kernel(p, "wafer_test_saxpy", 2, 16, &ref),
		  WAFER_OK, "params_size 16 is fine");

	/* A name of a megabyte: refused, and echoed only in part. */
	size_t big = (size_t)1 << 20;
	char *name = malloc(big + 1);
	memset(name, 'k', big);
	name[big] = '\0';
	is_status(wafer_program_kernel(p, name, 2, 16, &ref),
		  WAFER_ERROR_INVALID_ARGUMENT, "a kernel name of 1 MiB is "
		  "refused");
	ok(strlen(wafer_last_error()) < 1024,
	   "  ... its detail echoes a bounded part (%zu bytes)",
	   strlen(wafer_last_error()));
	wafer_execute_args args = {.struct_size = sizeof args,
				   .kernel = name};
	is_status(wafer_execute(client, &args), WAFER_ERROR_INVALID_ARGUMENT,
		  "wafer_execute: a kernel name of 1 MiB is refused");
	ok(strlen(wafer_last_error()) < 1024,
	   "  ... its detail echoes a bounded part (%zu bytes)",
	   strlen(wafer_last_error()));
	wafer_program_source s = fat[0];
	s.name = name;
	wafer_program *q = NULL;
	is_status(wafer_program_create(client, &s, 1, NULL, &q),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "a program source named with 1 MiB is refused");
	ok(strlen(wafer_last_error()) < 1024,
	   "  ... its detail echoes a bounded part (%zu bytes)",
	   strlen(wafer_last_error()));
	free(name);
	check(wafer_program_release(p), "program_release");
}

/*===----------------------------------------------------------------------===
 * host-so images
 *===----------------------------------------------------------------------===*/

static void refused_image(const void *data, size_t size, const char *needle,
			  const char *what)
{
	wafer_program *p = (wafer_program *)&p;
	is_status(create(WAFER_PROGRAM_HOST_SO, data, size, &p),
		  WAFER_ERROR_INVALID_ARGUMENT, "host-so: %s is refused", what);
	like(wafer_last_error(), needle, "  ... '%s'", needle);
	ok(p == NULL, "  ... and no program");
}

static void test_images(const void *so, size_t size)
{
	static const size_t cuts[] = {1000, 2000, 4096, 7532, 8192};
	char what[128];

	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		if (cuts[i] >= size)
			continue;
		snprintf(what, sizeof what, "the first %zu of %zu bytes",
			 cuts[i], size);
		refused_image(so, cuts[i], "truncated", what);
	}
	snprintf(what, sizeof what, "the first half of %zu bytes", size);
	refused_image(so, size / 2, "truncated", what);
	refused_image("\177ELF", 4, "shorter than an ELF header",
		      "the 4-byte ELF magic alone");
	refused_image("\177ELX\2\1\1", 7, "not an ELF file",
		      "a wrong magic");

	unsigned char header[sizeof(Elf64_Ehdr)] = {0};
	memcpy(header, ELFMAG, SELFMAG);
	refused_image(header, sizeof header, "another word size",
		      "an ELF header of zeros");

	unsigned char *many = malloc(size);
	memcpy(many, so, size);
	Elf64_Ehdr h;
	memcpy(&h, many, sizeof h);
	h.e_phnum = 65535;
	memcpy(many, &h, sizeof h);
	refused_image(many, size, "program headers",
		      "an image declaring 65,535 program headers");
	free(many);

	wafer_program *p = NULL;
	is_status(create(WAFER_PROGRAM_HOST_SO, so, size, &p), WAFER_OK,
		  "host-so: the whole image loads");
	wafer_program_release(p);
}

/*===----------------------------------------------------------------------===
 * host-c programs
 *===----------------------------------------------------------------------===*/

static void test_data_symbol(void)
{
	static const char text[] =
		"#include <wafer/host_kernel.h>\n"
		"int wafer_test_data[64] = {1};\n"
		"WAFER_HOST_KERNEL(wafer_test_fn) { (void)args; }\n";
	wafer_program *p = NULL;
	check(create(WAFER_PROGRAM_HOST_C, text, sizeof text - 1, &p),
	      "program_create");
	const wafer_kernel_ref *ref = (const wafer_kernel_ref *)&ref;
	is_status(wafer_program_kernel(p, "wafer_test_data", 1, 0, &ref),
		  WAFER_ERROR_NOT_FOUND, "host-c: a global variable is not a "
		  "kernel");
	like(wafer_last_error(), "not a function", "  ... says so");
	ok(ref == NULL, "  ... and no ref");
	is_status(wafer_program_kernel(p, "wafer_test_fn", 1, 0, &ref),
		  WAFER_OK, "host-c: its function is");
	check(wafer_program_release(p), "program_release");
}

/* Runs |p|'s wafer_test_set on 4 uint32s; what it wrote to the first. */
static uint32_t run_set(wafer_program *p)
{
	const wafer_kernel_ref *ref = NULL;
	uint32_t out[4] = {0};
	wafer_handle h;
	check(wafer_program_kernel(p, "wafer_test_set", 1, 0, &ref), "kernel");
	check(wafer_create(client, out, sizeof out, &h), "create");
	wafer_buffer_binding b = {h, 0, 0};
	wafer_execute_args args = {.struct_size = sizeof args,
				   .bindings = &b,
				   .binding_count = 1,
				   .global = {4, 1, 1},
				   .kernel_ref = ref};
	check(wafer_execute(client, &args), "execute");
	check(wafer_read(client, h, 0, out, sizeof out), "read");
	wafer_release(client, h);
	return out[0];
}

static void test_same_names(void)
{
	static const char one[] =
		"#include <stdint.h>\n#include <wafer/host_kernel.h>\n"
		"WAFER_HOST_KERNEL(wafer_test_set) {\n"
		"  for (uint64_t i = args->begin; i < args->end; i++)\n"
		"    ((uint32_t *)args->bindings[0])[i] = 1; }\n";
	static const char two[] =
		"#include <stdint.h>\n#include <wafer/host_kernel.h>\n"
		"WAFER_HOST_KERNEL(wafer_test_set) {\n"
		"  for (uint64_t i = args->begin; i < args->end; i++)\n"
		"    ((uint32_t *)args->bindings[0])[i] = 2; }\n";
	wafer_program *a = NULL, *b = NULL;

	check(create(WAFER_PROGRAM_HOST_C, one, sizeof one - 1, &a), "one");
	check(create(WAFER_PROGRAM_HOST_C, two, sizeof two - 1, &b), "two");
	is_int(run_set(a), 1, "host-c: the first of two live programs with "
	       "one kernel name runs its own body");
	is_int(run_set(b), 2, "host-c: the second runs its own, not the "
	       "first's");
	check(wafer_program_release(a), "release one");
	/* A third after the first is gone: its own too. */
	wafer_program *c = NULL;
	check(create(WAFER_PROGRAM_HOST_C, one, sizeof one - 1, &c), "three");
	is_int(run_set(c), 1, "host-c: a program made after one was released "
	       "runs its own body");
	is_int(run_set(b), 2, "host-c: and the second still its own");
	check(wafer_program_release(b), "release two");
	check(wafer_program_release(c), "release three");
}

/* A host-c program's cached shared object cut in half, its header's
 * length and checksum made to match (lib/binary_cache.c's format): the
 * next program of that source finds it, refuses it and compiles again,
 * where dlopen of it died of SIGBUS. */
static void test_cut_cache(void)
{
	static const char text[] =
		"#include <stdint.h>\n#include <wafer/host_kernel.h>\n"
		"WAFER_HOST_KERNEL(wafer_test_set) {\n"
		"  for (uint64_t i = args->begin; i < args->end; i++)\n"
		"    ((uint32_t *)args->bindings[0])[i] = 3; }\n";
	char dir[] = "/tmp/wafer-program-images.XXXXXX";
	if (!mkdtemp(dir))
		bail_out("mkdtemp failed");
	const wafer_option option = {"core", "cache_dir", dir};
	const wafer_runtime_options options = {.struct_size = sizeof options,
					       .options = &option,
					       .option_count = 1};
	wafer_runtime *saved_runtime = runtime;
	wafer_client *saved_client = client;
	wafer_program *p = NULL;

	for (int round = 0; round < 2; round++) {
		check(wafer_runtime_open(&options, &runtime), "runtime_open");
		check(wafer_client_open(runtime, "default", NULL, &client),
		      "client_open");
		is_status(create(WAFER_PROGRAM_HOST_C, text, sizeof text - 1,
				 &p),
			  WAFER_OK, "host-c: %s", round ? "a program whose "
			  "cached object was cut short builds again" :
			  "a program compiled into a fresh cache");
		if (p)
			is_int(run_set(p), 3, "  ... and runs");
		wafer_program_release(p);
		check(wafer_client_close(client), "client_close");
		wafer_runtime_close(runtime);
		if (round)
			break;

		/* Cut every cached file's binary in half. */
		char cmd[4300];
		snprintf(cmd, sizeof cmd, "find %s -name '*.bin'", dir);
		FILE *list = popen(cmd, "r");
		char path[4096];
		int cut = 0;
		while (list && fgets(path, sizeof path, list)) {
			path[strcspn(path, "\n")] = '\0';
			size_t size;
			unsigned char *data = read_whole("T_NONE", path, &size);
			struct {
				char magic[8];
				uint32_t key_size, reserved;
				uint64_t binary_size, binary_hash;
			} h;
			if (!data || size < sizeof h)
				continue;
			memcpy(&h, data, sizeof h);
			h.binary_size /= 2;
			size_t start = sizeof h + h.key_size;
			h.binary_hash = UINT64_C(1469598103934665603);
			for (size_t i = 0; i < h.binary_size; i++)
				h.binary_hash = (h.binary_hash ^ data[start + i]) *
						UINT64_C(1099511628211);
			memcpy(data, &h, sizeof h);
			FILE *f = fopen(path, "wb");
			if (f && fwrite(data, 1, start + h.binary_size, f) ==
					 start + h.binary_size)
				cut++;
			if (f)
				fclose(f);
			free(data);
		}
		if (list)
			pclose(list);
		ok(cut > 0, "host-c: its cached object cut in half (%d file)",
		   cut);
	}
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		diag("%s failed", cmd);
	runtime = saved_runtime;
	client = saved_client;
}

/* In a child with CC naming no compiler (the cpu plugin looks for one
 * once per process): a program offered only as host-c is refused, and
 * the refusal says why host-c is not taken. */
static int child_no_cc(void)
{
	static const char text[] = "int wafer_test_probe;\n";
	check(wafer_runtime_open(NULL, &runtime), "runtime_open");
	check(wafer_client_open(runtime, "default", NULL, &client),
	      "client_open");
	wafer_program *p = NULL;
	wafer_status status = create(WAFER_PROGRAM_HOST_C, text,
				     sizeof text - 1, &p);
	printf("%s\n%s\n", wafer_status_string(status), wafer_last_error());
	wafer_client_close(client);
	wafer_runtime_close(runtime);
	return 0;
}

static void test_no_cc(const char *self)
{
	char cmd[4400], out[4096] = "";
	snprintf(cmd, sizeof cmd, "CC=/nonexistent/wafer-cc '%s' no-cc", self);
	FILE *f = popen(cmd, "r");
	size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
	out[n] = '\0';
	if (f)
		pclose(f);
	like(out, "WAFER_ERROR_NOT_SUPPORTED", "host-c with CC naming no "
	     "compiler: not supported");
	like(out, "offered: host-c; cpu: host-c not offered: no C compiler: "
	     "'/nonexistent/wafer-cc' is not an executable",
	     "  ... and the refusal says why");
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "no-cc") == 0)
		return child_no_cc();
	static const struct {
		wafer_program_format format;
		const char *dir, *file;
	} files[] = {
		{WAFER_PROGRAM_HOST_C, "T_SRCDIR", "user_kernels/kernels.c"},
		{WAFER_PROGRAM_HOST_SO, "T_BUILDDIR",
		 "user_kernels/.libs/kernels.so"},
		{WAFER_PROGRAM_OPENCL_C, "T_SRCDIR", "user_kernels/kernels.cl"},
		{WAFER_PROGRAM_CUDA_C, "T_SRCDIR", "user_kernels/kernels.cu"},
		{WAFER_PROGRAM_PTX, "T_SRCDIR", "user_kernels/kernels.ptx"},
	};
	enum { FILES = sizeof files / sizeof files[0] };
	wafer_program_source fat[FILES];
	size_t count = 0;
	const void *so = NULL;
	size_t so_size = 0;

	for (size_t i = 0; i < FILES; i++) {
		size_t size;
		void *data = read_whole(files[i].dir, files[i].file, &size);
		if (!data)
			bail_out("cannot read %s", files[i].file);
		fat[count++] = source(files[i].format, data, size);
		if (files[i].format == WAFER_PROGRAM_HOST_SO) {
			so = data;
			so_size = size;
		}
	}
	check(wafer_runtime_open(NULL, &runtime), "runtime_open");
	check(wafer_client_open(runtime, "default", NULL, &client),
	      "client_open");

	test_nul();
	test_trailing_nul(fat, count);
	test_params(fat, count);
	if (takes(WAFER_PROGRAM_HOST_SO, so, so_size))
		test_images(so, so_size);
	else
		skip("the device does not take host-so", 1);
	static const char probe[] = "int wafer_test_probe;\n";
	if (takes(WAFER_PROGRAM_HOST_C, probe, sizeof probe - 1)) {
		test_data_symbol();
		test_same_names();
		test_cut_cache();
		test_no_cc(argv[0]);
	} else {
		skip("the device does not take host-c", 1);
	}

	check(wafer_client_close(client), "client_close");
	wafer_runtime_close(runtime);
	for (size_t i = 0; i < count; i++)
		free((void *)fat[i].data);
	done_testing();
	return exit_status();
}
