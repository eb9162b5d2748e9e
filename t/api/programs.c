/* wafer — SPDX-License-Identifier: MIT
 *
 * programs.c: the caller's own kernels (program.h) on the default
 * device. Backend-neutral: WAFER_BACKEND=<name> runs it on that plugin.
 *
 * Two kernels, wafer_test_saxpy and wafer_test_tile2d (a 2-D transpose
 * through a local tile, with a parameter block), written in every format
 * of t/user_kernels/: host C (kernels.c, and built into a shared object),
 * OpenCL C (kernels.cl, and compiled to SPIR-V at build time), CUDA C
 * (kernels.cu) and PTX (kernels.ptx). Each format the device takes is
 * loaded on its own and checked against a host reference, by ref on the
 * direct, mutex and mpsc channels. Which formats a plugin takes is what
 * it says: each source is offered alone, and one refused with
 * WAFER_ERROR_NOT_SUPPORTED is not taken. A backend of this tree named in
 * |backends| below must also take the formats listed as required there
 * (one it does not is a failure, not a skip). A plugin without the
 * programs group (no WAFER_CAP_PROGRAMS) skips the whole test, saying
 * so.
 *
 * Then the errors (a compile error gives the compiler's log with the
 * line, an unknown kernel, wrong binding counts, a released program or a
 * ref of another client are clean errors), release ordered after queued
 * launches, donation into a program kernel's output, and a second
 * process that compiles nothing: counted from the plugins' "program:
 * compiled" and "program: from cache" debug lines, in child processes
 * with a cache directory of their own. */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wafer/autotune.h>
#include <wafer/ops.h>
#include <wafer/graph.h>
#include <wafer/program.h>
#include <wafer/wafer.h>

#include "t/abi/describe.h"
#include "t/tap.h"
#include "t/user_kernels/sources.h"

extern char **environ;

struct saxpy_params {
	uint64_t n;
	float a;
	uint32_t reserved;
};

struct tile_params {
	uint32_t rows, cols;
	float scale;
	uint32_t reserved;
};

#define N 5000
#define ROWS 37
#define COLS 45

/*===----------------------------------------------------------------------===
 * Sources
 *===----------------------------------------------------------------------===*/

static wafer_runtime *runtime;
static const char *backend;

#define FILES USER_KERNEL_FORMATS
/* After the files, the sources a vendor's description names for its own
 * formats (its source lines: wafer-conformance --abi FILE hands the
 * file over in WAFER_ABI_DESCRIPTION), taken as text. */
#define MAX_FORMATS (FILES + ABI_MAX_OPTIONS)
static size_t FORMATS = FILES;

static wafer_program_source sources[MAX_FORMATS];
static void *source_data[MAX_FORMATS];

/* What the in-tree backends take. |required|: the backend must load
 * them; |optional|: it may refuse them where it documents so (PoCL
 * without SPIR-V support, a CUDA without a usable NVRTC is not one of
 * them: CUDA C is required). |compiled|: the format whose second load
 * must come from the cache; |line_errors|: whether that format's
 * compile errors carry line numbers (text formats). */
static const struct {
	const char *name;
	wafer_program_format required[4];
	wafer_program_format optional[4];
	wafer_program_format compiled;
} backends[] = {
	{"cpu", {WAFER_PROGRAM_HOST_C, WAFER_PROGRAM_HOST_SO}, {0},
	 WAFER_PROGRAM_HOST_C},
	{"opencl", {WAFER_PROGRAM_OPENCL_C}, {WAFER_PROGRAM_SPIRV},
	 WAFER_PROGRAM_OPENCL_C},
	{"cuda", {WAFER_PROGRAM_CUDA_C, WAFER_PROGRAM_PTX},
	 {WAFER_PROGRAM_CUBIN}, WAFER_PROGRAM_CUDA_C},
	{"levelzero", {WAFER_PROGRAM_SPIRV}, {0}, WAFER_PROGRAM_SPIRV},
};
static int backend_index = -1;
/* The formats the device took when offered alone (probe_formats). */
static bool taken[MAX_FORMATS];

static bool listed(const wafer_program_format *list, wafer_program_format f)
{
	for (int i = 0; i < 4 && list[i]; i++)
		if (list[i] == f)
			return true;
	return false;
}

/* A format the device must run: the backend's required ones (for the
 * backends of this tree), else each one it said it takes. */
static bool required(wafer_program_format f)
{
	if (backend_index >= 0)
		return listed(backends[backend_index].required, f);
	for (size_t i = 0; i < FORMATS; i++)
		if (sources[i].format == f)
			return taken[i];
	return false;
}

static void load_sources(void)
{
	user_kernels_load(sources, source_data);
}

/* The description's sources (describe.h: source FORMAT FILE), after the
 * files. */
static void load_vendor_sources(void)
{
	const char *file = getenv("WAFER_ABI_DESCRIPTION");
	static struct abi_description d;

	if (!file || !*file)
		return;
	if (abi_describe_read(file, &d) != 0) {
		diag("%s", d.error);
		return;
	}
	for (size_t i = 0; i < d.source_count && FORMATS < MAX_FORMATS; i++) {
		size_t k = FORMATS++;
		const char *slash = strrchr(d.sources[i].value, '/');
		sources[k] = (wafer_program_source){
			.struct_size = sizeof sources[k],
			.format = (wafer_program_format)d.sources[i].format,
			.name = slash ? slash + 1 : d.sources[i].value,
		};
		source_data[k] =
			user_kernels_read(d.sources[i].value, &sources[k].size);
		sources[k].data = source_data[k];
		diag("%s: %s source %s%s", file,
		     wafer_program_format_name(sources[k].format),
		     d.sources[i].value, source_data[k] ? "" : " (not there)");
	}
	/* The names stay: d lives as long as the test. */
}

/* The first source of a vendor's own format the device takes. */
static const wafer_program_source *vendor_source(void)
{
	for (size_t i = FILES; i < FORMATS; i++)
		if (taken[i] && sources[i].data)
			return &sources[i];
	return NULL;
}

/* Offers each source alone: what the device does not refuse with
 * NOT_SUPPORTED, it takes. */
static wafer_client *open_client(const char *channel);
static void probe_formats(void)
{
	wafer_client *client = open_client("mutex");

	for (size_t i = 0; i < FORMATS; i++) {
		wafer_program *p = NULL;
		if (!sources[i].data)
			continue;
		taken[i] = wafer_program_create(client, &sources[i], 1, NULL,
						&p) != WAFER_ERROR_NOT_SUPPORTED;
		if (p)
			wafer_program_release(p);
		diag("%s: %s", wafer_program_format_name(sources[i].format),
		     taken[i] ? "taken" : "not taken");
	}
	wafer_client_close(client);
}

static const wafer_program_source *source_of(wafer_program_format f)
{
	for (size_t i = 0; i < FORMATS; i++)
		if (sources[i].format == f)
			return sources[i].data ? &sources[i] : NULL;
	return NULL;
}

/*===----------------------------------------------------------------------===
 * Helpers
 *===----------------------------------------------------------------------===*/

static wafer_client *open_client(const char *channel)
{
	wafer_client *client = NULL;
	wafer_client_options options = {.struct_size = sizeof options,
					 .channel = channel};
	wafer_status status =
		wafer_client_open(runtime, "default", &options, &client);
	if (status != WAFER_OK) {
		printf("Bail out! client_open(%s): %s: %s\n", channel,
		       wafer_status_string(status), wafer_last_error());
		exit(1);
	}
	return client;
}

static float input(size_t i, unsigned seed)
{
	return (float)((int)((i * 2654435761u + seed) >> 7) % 2001 - 1000) /
	       64.0f;
}

static wafer_handle upload(wafer_client *client, const float *data, size_t n)
{
	wafer_handle h = WAFER_HANDLE_NULL_INIT;
	if (wafer_create(client, data, n * sizeof *data, &h) != WAFER_OK)
		diag("create: %s", wafer_last_error());
	return h;
}

static wafer_status run_saxpy(wafer_client *client,
			      const wafer_kernel_ref *ref, wafer_handle y,
			      wafer_handle x, float a, uint64_t n)
{
	wafer_buffer_binding b[2] = {{y, 0, 0}, {x, 0, 0}};
	struct saxpy_params p = {.n = n, .a = a};
	wafer_execute_args args = {
		.struct_size = sizeof args,
		.bindings = b,
		.binding_count = 2,
		.params = &p,
		.params_size = sizeof p,
		.global = {n, 1, 1},
		.kernel_ref = ref,
	};
	return wafer_execute(client, &args);
}

static wafer_status run_tile(wafer_client *client, const wafer_kernel_ref *ref,
			     wafer_handle out, wafer_handle in, float scale)
{
	wafer_buffer_binding b[2] = {{out, 0, 0}, {in, 0, 0}};
	struct tile_params p = {.rows = ROWS, .cols = COLS, .scale = scale};
	wafer_execute_args args = {
		.struct_size = sizeof args,
		.bindings = b,
		.binding_count = 2,
		.params = &p,
		.params_size = sizeof p,
		.global = {COLS, ROWS, 1},
		.local = {16, 16, 1},
		.kernel_ref = ref,
	};
	return wafer_execute(client, &args);
}

/* Releases |a| and |b|, the handles of a run of |kernel|; whether that
 * run and its read back (|status|) worked, with a diag when not. */
static bool ran(wafer_client *client, wafer_handle a, wafer_handle b,
		wafer_status status, const char *what, const char *kernel)
{
	wafer_release(client, a);
	wafer_release(client, b);
	if (status == WAFER_OK)
		return true;
	diag("%s: %s: %s: %s", what, kernel, wafer_status_string(status),
	     wafer_last_error());
	return false;
}

/* Runs saxpy |times| times (a = 0.5, 1.5, ...) and checks y. */
static bool check_saxpy(wafer_client *client, const wafer_kernel_ref *ref,
			int times, const char *what)
{
	static float x[N], y[N], want[N], got[N];
	for (size_t i = 0; i < N; i++) {
		x[i] = input(i, 1);
		y[i] = want[i] = input(i, 2);
	}
	wafer_handle hx = upload(client, x, N), hy = upload(client, y, N);
	wafer_status status = WAFER_OK;
	for (int t = 0; t < times && status == WAFER_OK; t++) {
		float a = 0.5f + (float)t;
		status = run_saxpy(client, ref, hy, hx, a, N);
		for (size_t i = 0; i < N; i++)
			want[i] = a * x[i] + want[i];
	}
	if (status == WAFER_OK)
		status = wafer_read(client, hy, 0, got, sizeof got);
	if (!ran(client, hx, hy, status, what, "saxpy"))
		return false;
	for (size_t i = 0; i < N; i++)
		if (fabsf(got[i] - want[i]) > 1e-4f * (1.0f + fabsf(want[i]))) {
			diag("%s: saxpy y[%zu] = %g, want %g", what, i,
			     (double)got[i], (double)want[i]);
			return false;
		}
	return true;
}

static bool check_tile(wafer_client *client, const wafer_kernel_ref *ref,
		       const char *what)
{
	static float in[ROWS * COLS], got[ROWS * COLS];
	for (size_t i = 0; i < ROWS * COLS; i++)
		in[i] = input(i, 3);
	wafer_handle hin = upload(client, in, ROWS * COLS);
	wafer_handle hout = WAFER_HANDLE_NULL_INIT;
	wafer_status status = wafer_empty(client, sizeof got, &hout);
	if (status == WAFER_OK)
		status = run_tile(client, ref, hout, hin, 2.0f);
	if (status == WAFER_OK)
		status = wafer_read(client, hout, 0, got, sizeof got);
	if (!ran(client, hin, hout, status, what, "tile2d"))
		return false;
	for (size_t r = 0; r < ROWS; r++)
		for (size_t c = 0; c < COLS; c++)
			if (got[r * COLS + c] != 2.0f * in[c * ROWS + r]) {
				diag("%s: tile2d out[%zu][%zu] = %g, want %g",
				     what, r, c, (double)got[r * COLS + c],
				     (double)(2.0f * in[c * ROWS + r]));
				return false;
			}
	return true;
}

/* Creates a program from |source| alone. */
static wafer_status create_one(wafer_client *client,
			       const wafer_program_source *source,
			       const char *options, wafer_program **out)
{
	return wafer_program_create(client, source, 1, options, out);
}

/* Kernel |name| of |p|, two bindings and a |params_size| block: its ref,
 * or NULL and a diag. */
static const wafer_kernel_ref *kernel_of(wafer_program *p, const char *name,
					 size_t params_size)
{
	const wafer_kernel_ref *ref = NULL;

	if (wafer_program_kernel(p, name, 2, params_size, &ref) != WAFER_OK)
		diag("%s: %s", name, wafer_last_error());
	return ref;
}

static const wafer_kernel_ref *saxpy_of(wafer_program *p)
{
	return kernel_of(p, "wafer_test_saxpy", sizeof(struct saxpy_params));
}

/* A client on mpsc, a program of |source| on it and the program's saxpy
 * (NULL, with a diag, where they fail: what follows fails then). */
static wafer_client *saxpy_client(const wafer_program_source *source,
				  wafer_program **p,
				  const wafer_kernel_ref **saxpy)
{
	wafer_client *client = open_client("mpsc");

	if (create_one(client, source, NULL, p) != WAFER_OK)
		diag("program_create: %s", wafer_last_error());
	*saxpy = saxpy_of(*p);
	return client;
}

static void get_kernels(wafer_program *p, const wafer_kernel_ref **saxpy,
			const wafer_kernel_ref **tile)
{
	*saxpy = saxpy_of(p);
	*tile = kernel_of(p, "wafer_test_tile2d", sizeof(struct tile_params));
}

/*===----------------------------------------------------------------------===
 * Every format, every channel
 *===----------------------------------------------------------------------===*/

static void test_format(wafer_program_format f)
{
	const char *name = wafer_program_format_name(f);
	const wafer_program_source *source = source_of(f);
	static const char *const channels[] = {"direct", "mutex", "mpsc"};

	if (!source) {
		/* A format this build could not make its test source for
		 * (SPIR-V needs clang and llvm-spirv at build time) is a
		 * skip, not a pass; one the backend requires, a failure. */
		if (required(f))
			ok(0, "%s: %s source missing, but required", backend,
			   name);
		else
			ok(1, "%s: %s source # SKIP not built here", backend,
			   name);
		return;
	}
	for (size_t c = 0; c < 3; c++) {
		wafer_client *client = open_client(channels[c]);
		wafer_program *p = NULL;
		wafer_status status = create_one(client, source, NULL, &p);
		if (status == WAFER_ERROR_NOT_SUPPORTED && !required(f)) {
			like(wafer_last_error(), "takes",
			     "%s: %s not taken; the error says what is", backend,
			     name);
			wafer_client_close(client);
			return;
		}
		if (!is_status(status, WAFER_OK, "%s: %s program on %s",
			       backend, name, channels[c])) {
			diag("%s", wafer_last_error());
			wafer_client_close(client);
			continue;
		}
		const wafer_kernel_ref *saxpy = NULL, *tile = NULL;
		get_kernels(p, &saxpy, &tile);
		char what[128];
		snprintf(what, sizeof what, "%s/%s", name, channels[c]);
		ok(saxpy && check_saxpy(client, saxpy, 3, what),
		   "  ... saxpy by ref, three launches: right (%s)", what);
		ok(tile && check_tile(client, tile, what),
		   "  ... tile2d with its parameter block: right (%s)", what);
		ok(saxpy_of(p) == saxpy,
		   "  ... asking again gives the same ref");
		is_status(wafer_program_release(p), WAFER_OK, "  ... released");
		is_status(wafer_client_close(client), WAFER_OK,
			  "  ... client closed clean");
	}
}

/* All sources at once: the device takes the first it can. */
static void test_fat(void)
{
	wafer_client *client = open_client("mpsc");
	wafer_program_source all[FORMATS];
	size_t n = 0;
	for (size_t i = 0; i < FORMATS; i++)
		if (sources[i].data)
			all[n++] = sources[i];
	wafer_program *p = NULL;
	wafer_status status = wafer_program_create(client, all, n, NULL, &p);
	if (is_status(status, WAFER_OK, "a fat program of %zu formats", n)) {
		const wafer_kernel_ref *saxpy = NULL, *tile = NULL;
		get_kernels(p, &saxpy, &tile);
		ok(saxpy && check_saxpy(client, saxpy, 1, "fat"),
		   "  ... saxpy right");
		ok(tile && check_tile(client, tile, "fat"), "  ... tile2d right");
	} else {
		diag("%s", wafer_last_error());
	}
	wafer_program_release(p);
	wafer_client_close(client);
}

/*===----------------------------------------------------------------------===
 * Errors
 *===----------------------------------------------------------------------===*/

/* The first required text format of the backend, for the error tests. */
static const wafer_program_source *text_source(void)
{
	static const wafer_program_format text[] = {
		WAFER_PROGRAM_HOST_C, WAFER_PROGRAM_OPENCL_C,
		WAFER_PROGRAM_CUDA_C};
	for (size_t i = 0; i < 3; i++)
		if (required(text[i]))
			return source_of(text[i]);
	return vendor_source();
}

/* Any source the device takes: the required ones first. */
static const wafer_program_source *some_source(void)
{
	for (size_t i = 0; i < FORMATS; i++)
		if (required(sources[i].format) && sources[i].data)
			return &sources[i];
	return NULL;
}

static void test_compile_error(void)
{
	const wafer_program_source *good = text_source();
	if (!good) {
		ok(1, "# SKIP %s takes no source text", backend);
		return;
	}
	/* Line 3 names something undeclared. */
	static const char broken[] =
		"/* line 1 */\n"
		"/* line 2 */\n"
		"int broken_fn(void) { return wafer_undeclared_thing; }\n";
	wafer_program_source src = *good;
	src.data = broken;
	src.size = sizeof broken - 1;
	src.name = "broken";
	wafer_client *client = open_client("mutex");
	wafer_program *p = (wafer_program *)1;
	is_status(wafer_program_create(client, &src, 1, NULL, &p),
		  WAFER_ERROR_BUILD, "a compile error: WAFER_ERROR_BUILD");
	ok(p == NULL, "  ... no program");
	const char *log = wafer_last_error();
	like(log, "wafer_undeclared_thing", "  ... the compiler's log");
	ok(strstr(log, ":3:") || strstr(log, "(3)") || strstr(log, "line 3"),
	   "  ... with the line number: %s", log);
	like(log, "broken", "  ... naming the source");

	/* A long log is kept whole: 15 errors (clang stops after 20), more
	 * than the 1 KiB a short message takes. */
	static char many[8192];
	size_t used = (size_t)snprintf(many, sizeof many, "/* many */\n");
	for (int i = 0; i < 15; i++)
		used += (size_t)snprintf(many + used, sizeof many - used,
					 "int f%d(void) { return "
					 "wafer_undeclared_%d; }\n",
					 i, i);
	src.data = many;
	src.size = used;
	is_status(wafer_program_create(client, &src, 1, NULL, &p),
		  WAFER_ERROR_BUILD, "15 compile errors: WAFER_ERROR_BUILD");
	log = wafer_last_error();
	ok(strlen(log) > 1024 && strstr(log, "wafer_undeclared_0") &&
		   strstr(log, "wafer_undeclared_14"),
	   "  ... the whole log, first error to last (%zu bytes)",
	   strlen(log));
	wafer_client_close(client);
}

static void test_errors(void)
{
	const wafer_program_source *source = some_source();
	wafer_client *client = open_client("mutex");
	wafer_program *p = NULL;
	const wafer_kernel_ref *ref = (const wafer_kernel_ref *)1;

	is_status(wafer_program_create(NULL, source, 1, NULL, &p),
		  WAFER_ERROR_INVALID_ARGUMENT, "create: NULL client");
	is_status(wafer_program_create(client, source, 0, NULL, &p),
		  WAFER_ERROR_INVALID_ARGUMENT, "create: no sources");
	wafer_program_source empty = {.struct_size = sizeof empty,
				      .format = WAFER_PROGRAM_HOST_C};
	is_status(wafer_program_create(client, &empty, 1, NULL, &p),
		  WAFER_ERROR_INVALID_ARGUMENT, "create: a source of no bytes");

	/* Formats nobody here takes with the ones the device takes. */
	wafer_program_source foreign[2];
	size_t n = 0;
	for (size_t i = 0; i < FORMATS && n < 2; i++)
		if (sources[i].data && !required(sources[i].format) &&
		    !taken[i] &&
		    (backend_index < 0 ||
		     !listed(backends[backend_index].optional,
			     sources[i].format)))
			foreign[n++] = sources[i];
	if (n) {
		is_status(wafer_program_create(client, foreign, n, NULL, &p),
			  WAFER_ERROR_NOT_SUPPORTED,
			  "only formats the device does not take: "
			  "NOT_SUPPORTED");
		like(wafer_last_error(), "takes", "  ... saying what it takes");
		like(wafer_last_error(),
		     wafer_program_format_name(foreign[0].format),
		     "  ... and what was offered: %s", wafer_last_error());
	}

	/* A file's name where the shared object's bytes belong. */
	if (required(WAFER_PROGRAM_HOST_SO)) {
		static const char path[] = "/tmp/kernels.so";
		wafer_program_source named = {
			.struct_size = sizeof named,
			.format = WAFER_PROGRAM_HOST_SO,
			.data = path,
			.size = sizeof path - 1,
		};
		is_status(wafer_program_create(client, &named, 1, NULL, &p),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "host-so: a file name in place of its bytes");
		like(wafer_last_error(), "pass the file's contents, not its path",
		     "  ... says to pass the contents: %s", wafer_last_error());
	}

	if (!source) {
		ok(1, "# SKIP %s takes none of the suite's sources", backend);
		wafer_client_close(client);
		return;
	}
	if (!is_status(wafer_program_create(client, source, 1, NULL, &p),
		       WAFER_OK, "a program for the error cases")) {
		diag("%s", wafer_last_error());
		wafer_client_close(client);
		return;
	}
	is_status(wafer_program_kernel(p, "wafer_no_such_kernel", 2, 16, &ref),
		  WAFER_ERROR_NOT_FOUND, "an unknown kernel name: NOT_FOUND");
	ok(ref == NULL, "  ... no ref");
	like(wafer_last_error(), "wafer_no_such_kernel", "  ... naming it");
	like(wafer_last_error(), source->name ? source->name : "program",
	     "  ... and the program");
	if (strcmp(backend, "cuda") == 0) {
		ok(1, "# SKIP the CUDA driver API lists no module's functions "
		      "before CUDA 12.4 (cuModuleEnumerateFunctions)");
	} else {
		const char *has = strstr(wafer_last_error(), "it has: ");
		ok(has && strstr(has, "wafer_test_saxpy") &&
			   !strstr(wafer_last_error(), "/proc/"),
		   "  ... listing the kernels it has, not an internal path: %s",
		   wafer_last_error());
	}

	const wafer_kernel_ref *saxpy = saxpy_of(p);
	float data[64] = {0};
	wafer_handle h = upload(client, data, 64);
	wafer_buffer_binding one = {h, 0, 0};
	struct saxpy_params params = {.n = 64, .a = 1};
	wafer_execute_args args = {
		.struct_size = sizeof args,
		.bindings = &one,
		.binding_count = 1,
		.params = &params,
		.params_size = sizeof params,
		.global = {64, 1, 1},
		.kernel_ref = saxpy,
	};
	is_status(wafer_execute(client, &args), WAFER_ERROR_INVALID_ARGUMENT,
		  "one binding for a kernel declared with two");
	like(wafer_last_error(), "wafer_test_saxpy", "  ... naming the kernel");
	like(wafer_last_error(), "takes 2", "  ... and what it takes");
	wafer_buffer_binding two[2] = {{h, 0, 0}, {h, 0, 0}};
	args.bindings = two;
	args.binding_count = 2;
	args.params_size = 8;
	is_status(wafer_execute(client, &args), WAFER_ERROR_INVALID_ARGUMENT,
		  "a parameter block of the wrong size");

	/* Another client's ref. */
	wafer_client *other = open_client("mutex");
	args.params_size = sizeof params;
	wafer_buffer_binding b2[2];
	wafer_handle ho = upload(other, data, 64);
	b2[0] = b2[1] = (wafer_buffer_binding){ho, 0, 0};
	args.bindings = b2;
	is_status(wafer_execute(other, &args), WAFER_ERROR_INVALID_ARGUMENT,
		  "a ref of another client's program");
	wafer_release(other, ho);
	wafer_client_close(other);

	is_status(wafer_program_release(p), WAFER_OK, "release");
	args.bindings = two;
	is_status(wafer_execute(client, &args), WAFER_ERROR_INVALID_HANDLE,
		  "a ref of a released program: INVALID_HANDLE");
	like(wafer_last_error(), "released", "  ... saying so");
	is_status(wafer_program_kernel(p, "wafer_test_saxpy", 2,
				       sizeof(struct saxpy_params), &ref),
		  WAFER_ERROR_INVALID_HANDLE,
		  "wafer_program_kernel of a released program");
	is_status(wafer_program_release(p), WAFER_ERROR_INVALID_HANDLE,
		  "releasing it twice");
	is_status(wafer_program_release(NULL), WAFER_OK, "releasing NULL");
	wafer_release(client, h);
	is_status(wafer_client_close(client), WAFER_OK, "client closed clean");
}

/* x = 1 and y = i, uploaded: after k saxpy launches with a = 1, y is
 * i + k (ramp_plus checks it). */
static void upload_ones_and_ramp(wafer_client *client, wafer_handle *hx,
				 wafer_handle *hy)
{
	static float x[N], y[N];
	for (size_t i = 0; i < N; i++) {
		x[i] = 1.0f;
		y[i] = (float)i;
	}
	*hx = upload(client, x, N);
	*hy = upload(client, y, N);
}

/* Whether |hy| reads back as i + |plus| at every i. */
static bool ramp_plus(wafer_client *client, wafer_handle hy, float plus)
{
	static float y[N];
	bool right = wafer_read(client, hy, 0, y, sizeof y) == WAFER_OK;
	for (size_t i = 0; right && i < N; i++)
		right = y[i] == (float)i + plus;
	return right;
}

/* On mpsc the release is queued: launches issued before it run first. */
static void test_release_order(void)
{
	const wafer_program_source *source = some_source();
	if (!source)
		return;
	wafer_program *p = NULL;
	const wafer_kernel_ref *saxpy = NULL;
	wafer_client *client = saxpy_client(source, &p, &saxpy);
	wafer_handle hx, hy;
	upload_ones_and_ramp(client, &hx, &hy);
	wafer_status status = WAFER_OK;
	for (int t = 0; t < 50 && status == WAFER_OK; t++)
		status = run_saxpy(client, saxpy, hy, hx, 1.0f, N);
	is_status(status, WAFER_OK, "mpsc: 50 launches queued");
	is_status(wafer_program_release(p), WAFER_OK,
		  "  ... the program released right after");
	ok(ramp_plus(client, hy, 50.0f), "  ... every launch ran before the program went");
	wafer_release(client, hx);
	wafer_release(client, hy);

	/* A program left alive is released when its client closes. */
	wafer_program_create(client, source, 1, NULL, &p);
	is_status(wafer_client_close(client), WAFER_OK,
		  "a client closed with a live program");
}

/* A graph (wafer_graph(3)) that launches a program's kernel keeps the
 * plugin's program alive after wafer_program_release until the graph
 * goes. */
static void test_graph(void)
{
	const wafer_program_source *source = some_source();
	if (!source)
		return;
	wafer_program *p = NULL;
	const wafer_kernel_ref *saxpy = NULL;
	wafer_client *client = saxpy_client(source, &p, &saxpy);
	wafer_queue *q = wafer_client_default_queue(client);
	wafer_graph *g = NULL;
	wafer_handle hx, hy;
	upload_ones_and_ramp(client, &hx, &hy);
	wafer_queue_begin_capture(q);
	is_status(run_saxpy(client, saxpy, hy, hx, 2.0f, N), WAFER_OK,
		  "graph: a program kernel is captured");
	is_status(wafer_queue_end_capture(q, &g), WAFER_OK,
		  "  ... into a graph");
	is_status(wafer_program_release(p), WAFER_OK,
		  "  ... the program released while the graph lives");
	for (int t = 0; t < 3; t++)
		wafer_graph_launch(g, q);
	ok(ramp_plus(client, hy, 6.0f), "  ... three replays after the release ran its kernel");
	is_status(wafer_graph_release(g), WAFER_OK,
		  "  ... the graph released, the program goes with it");
	wafer_release(client, hx);
	wafer_release(client, hy);
	is_status(wafer_client_close(client), WAFER_OK, "  ... client close");
}

/* Donation: an operation donated a program kernel's output takes its
 * buffer over; the old handle then fails as a binding too. */
static void test_donation(void)
{
	const wafer_program_source *source = some_source();
	if (!source)
		return;
	wafer_program *p = NULL;
	const wafer_kernel_ref *saxpy = NULL;
	wafer_client *client = saxpy_client(source, &p, &saxpy);
	static float x[N], y[N];
	for (size_t i = 0; i < N; i++) {
		x[i] = (float)i;
		y[i] = -2.0f * (float)i;
	}
	wafer_handle hx = upload(client, x, N), hy = upload(client, y, N);
	/* y = x + y = -i */
	is_status(run_saxpy(client, saxpy, hy, hx, 1.0f, N), WAFER_OK,
		  "a program kernel writes y");
	uint64_t shape[1] = {N};
	wafer_tensor ty = wafer_tensor_view(hy, WAFER_DTYPE_F32, 1, shape), out;
	wafer_memory_usage before = {.struct_size = sizeof before}, after;
	after = before;
	wafer_memory_usage_get(client, &before);
	wafer_status neg = wafer_op_neg(client, &ty, WAFER_DONATE_INPUT, &out);
	bool have_neg = neg == WAFER_OK;
	if (neg == WAFER_ERROR_NOT_SUPPORTED) {
		/* A catalogue kernel the plugin does not offer is a skip. */
		ok(1, "# SKIP donation into neg: %s", wafer_last_error());
	} else if (!have_neg) {
		ok(0, "wafer_op_neg: %s", wafer_last_error());
	} else {
		wafer_memory_usage_get(client, &after);
		is_int((long long)after.bytes_in_use,
		       (long long)before.bytes_in_use,
		       "neg of it with DONATE_INPUT: in its buffer");
		is_status(run_saxpy(client, saxpy, hy, hx, 1.0f, N),
			  WAFER_ERROR_DONATED,
			  "  ... the donated handle as a binding: DONATED");
		/* out = i; out = 1 * x + out = 2i, launched on the new
		 * handle. */
		is_status(run_saxpy(client, saxpy, out.handle, hx, 1.0f, N),
			  WAFER_OK, "  ... the new handle works");
		bool right = wafer_read(client, out.handle, 0, y, sizeof y) ==
			     WAFER_OK;
		for (size_t i = 0; right && i < N; i++)
			right = y[i] == 2.0f * (float)i;
		ok(right, "  ... right values");
		wafer_release(client, out.handle);
	}
	wafer_release(client, hx);
	wafer_program_release(p);
	wafer_client_close(client);
}

/*===----------------------------------------------------------------------===
 * Autotune
 *===----------------------------------------------------------------------===*/

struct tile_inputs {
	wafer_buffer_binding bindings[2];
	struct tile_params params;
};

static wafer_status tile_bind(const void *inputs, wafer_execute_args *args)
{
	const struct tile_inputs *in = inputs;
	args->bindings = in->bindings;
	args->binding_count = 2;
	args->params = &in->params;
	args->params_size = sizeof in->params;
	args->global[0] = in->params.cols;
	args->global[1] = in->params.rows;
	args->global[2] = 1;
	args->local[0] = args->local[1] = 16;
	args->local[2] = 1;
	return WAFER_OK;
}

static wafer_status tile_key(const void *inputs, wafer_autotune_key *key)
{
	const struct tile_inputs *in = inputs;
	key->dtypes[0] = WAFER_DTYPE_F32;
	key->dim_count = 2;
	key->dims[0] = in->params.rows;
	key->dims[1] = in->params.cols;
	return WAFER_OK;
}

/* Filled with refs once the programs exist; the tunable is identified by
 * its address, the candidates by name. */
static wafer_autotune_candidate tile_candidates[2] = {
	{.struct_size = sizeof(wafer_autotune_candidate), .name = "first"},
	{.struct_size = sizeof(wafer_autotune_candidate), .name = "second"},
};
static const wafer_tunable tile_op = {
	.struct_size = sizeof tile_op,
	.name = "t_programs_tile2d",
	.candidates = tile_candidates,
	.candidate_count = 2,
	.bind = tile_bind,
	.key = tile_key,
};

/* Two programs' tile2d kernels as the candidates of one operation. */
static void test_autotune(void)
{
	const wafer_program_source *source = some_source();
	if (!source)
		return;
	wafer_client *client = open_client("mutex");
	wafer_program *p[2] = {NULL, NULL};
	const wafer_kernel_ref *saxpy, *tile[2] = {NULL, NULL};
	for (int i = 0; i < 2; i++) {
		wafer_program_create(client, source, 1, NULL, &p[i]);
		get_kernels(p[i], &saxpy, &tile[i]);
		tile_candidates[i].kernel_ref = tile[i];
	}
	static float in[ROWS * COLS], got[ROWS * COLS];
	for (size_t i = 0; i < ROWS * COLS; i++)
		in[i] = input(i, 4);
	wafer_handle hin = upload(client, in, ROWS * COLS), hout;
	wafer_empty(client, sizeof got, &hout);
	struct tile_inputs inputs = {
		.bindings = {{hout, 0, 0}, {hin, 0, 0}},
		.params = {.rows = ROWS, .cols = COLS, .scale = -1.0f},
	};
	wafer_autotune_result result = {.struct_size = sizeof result};
	wafer_status status =
		wafer_execute_autotune(client, &tile_op, &inputs, &result);
	is_status(status, WAFER_OK,
		  "autotune over two program kernels by ref");
	if (status != WAFER_OK)
		diag("%s", wafer_last_error());
	ok(result.candidate && (strcmp(result.candidate, "first") == 0 ||
				strcmp(result.candidate, "second") == 0),
	   "  ... one of them ran (%s)",
	   result.candidate ? result.candidate : "none");
	bool right = wafer_read(client, hout, 0, got, sizeof got) == WAFER_OK;
	for (size_t r = 0; right && r < ROWS; r++)
		for (size_t c = 0; right && c < COLS; c++)
			right = got[r * COLS + c] == -in[c * ROWS + r];
	ok(right, "  ... and left the right result");

	/* A released program's candidate is disqualified, not fatal. */
	wafer_program_release(p[0]);
	is_status(wafer_autotune_execute_candidate(client, &tile_op, &inputs,
						   "first"),
		  WAFER_ERROR_INVALID_HANDLE,
		  "running the released program's candidate: INVALID_HANDLE");
	is_status(wafer_autotune_execute_candidate(client, &tile_op, &inputs,
						   "second"),
		  WAFER_OK, "  ... the other one still runs");
	/* The refs are read at every run: a new program's takes its place. */
	wafer_program_create(client, source, 1, NULL, &p[0]);
	get_kernels(p[0], &saxpy, &tile[0]);
	tile_candidates[0].kernel_ref = tile[0];
	is_status(wafer_autotune_execute_candidate(client, &tile_op, &inputs,
						   "first"),
		  WAFER_OK, "  ... a new program's ref in its place runs");
	wafer_program_release(p[0]);
	wafer_release(client, hin);
	wafer_release(client, hout);
	wafer_program_release(p[1]);
	wafer_client_close(client);
}

/*===----------------------------------------------------------------------===
 * A second process compiles nothing
 *===----------------------------------------------------------------------===*/

/* The child: loads |format|'s source with the cache in |dir|. Its
 * WAFER_LOG=debug lines go to stderr, which the parent counts. */
static int child_main(const char *format_number, const char *dir)
{
	wafer_program_format f = (wafer_program_format)atoi(format_number);
	wafer_option option = {"core", "cache_dir", dir};
	wafer_runtime_options options = {.struct_size = sizeof options,
					 .options = &option,
					 .option_count = 1};
	wafer_client *client = NULL;
	wafer_program *p = NULL;
	const wafer_kernel_ref *saxpy = NULL;

	/* Format 0: every source at once (a fat program). */
	load_sources();
	load_vendor_sources();
	wafer_program_source all[FORMATS];
	size_t n = 0;
	for (size_t i = 0; i < FORMATS; i++)
		if (sources[i].data && (!f || sources[i].format == f))
			all[n++] = sources[i];
	if (wafer_runtime_open(&options, &runtime) != WAFER_OK ||
	    wafer_client_open(runtime, "default", NULL, &client) != WAFER_OK ||
	    !n || wafer_program_create(client, all, n, NULL, &p) != WAFER_OK ||
	    !(saxpy = saxpy_of(p)) ||
	    !check_saxpy(client, saxpy, 1, "child")) {
		fprintf(stderr, "child failed: %s\n", wafer_last_error());
		return 1;
	}
	wafer_program_release(p);
	wafer_client_close(client);
	wafer_runtime_close(runtime);
	return 0;
}

struct child_counts {
	int ran;
	int compiled;
	int cached;
	int no_cc; /* "host-c not offered" lines */
};

/* Runs the child for format |f| (0: all) with cache directory |dir| and,
 * when not NULL, the environment setting |extra| ("NAME=value"). */
static struct child_counts run_child(const char *self, wafer_program_format f,
				     const char *dir, const char *extra)
{
	struct child_counts counts = {0};
	char number[16], line[8192];
	int fds[2];

	/* Everything the child needs is made before the fork: between fork
	 * and exec only async-signal-safe calls. */
	snprintf(number, sizeof number, "%d", (int)f);
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 3, sizeof *env);
	if (!env || pipe(fds) != 0) {
		free(env);
		return counts;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "WAFER_LOG=", 10) != 0)
			env[k++] = environ[i];
	env[k++] = "WAFER_LOG=debug";
	if (extra)
		env[k++] = (char *)extra;
	char *const args[] = {(char *)self, "--child", number, (char *)dir,
			      NULL};
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execve(self, args, env);
		_exit(127);
	}
	free(env);
	close(fds[1]);
	FILE *f_in = fdopen(fds[0], "r");
	while (f_in && fgets(line, sizeof line, f_in)) {
		if (strstr(line, "program: compiled"))
			counts.compiled++;
		if (strstr(line, "program: from cache"))
			counts.cached++;
		if (strstr(line, "host-c not offered"))
			counts.no_cc++;
		if (strstr(line, "child failed"))
			diag("%s", line);
	}
	if (f_in)
		fclose(f_in);
	int status = 0;
	waitpid(pid, &status, 0);
	counts.ran = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	return counts;
}

/* The format whose second load must come from the cache: the backend's
 * own, else the first text format the device takes. */
static wafer_program_format compiled_format(void)
{
	static const wafer_program_format text[] = {
		WAFER_PROGRAM_HOST_C, WAFER_PROGRAM_OPENCL_C,
		WAFER_PROGRAM_CUDA_C};

	if (backend_index >= 0)
		return backends[backend_index].compiled;
	for (size_t i = 0; i < 3; i++)
		if (required(text[i]) && source_of(text[i]))
			return text[i];
	return vendor_source() ? vendor_source()->format : WAFER_PROGRAM_NONE;
}

static void test_second_process(const char *self)
{
	wafer_program_format f = compiled_format();
	if (f == WAFER_PROGRAM_NONE) {
		ok(1, "# SKIP %s takes none of the suite's source texts",
		   backend);
		return;
	}
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/programs-cache.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	struct child_counts first = run_child(self, f, dir, NULL);
	ok(first.ran, "first process: %s program runs",
	   wafer_program_format_name(f));
	is_int(first.compiled, 1, "  ... compiled once");
	struct child_counts second = run_child(self, f, dir, NULL);
	ok(second.ran, "second process: runs");
	is_int(second.compiled, 0, "  ... compiling nothing");
	is_int(second.cached, 1, "  ... the binary came from the cache");
	struct child_counts off = run_child(self, f, "off", NULL);
	ok(off.ran && off.compiled == 1 && off.cached == 0,
	   "[core] cache_dir = off: compiled again, nothing from a cache");
	/* The cpu plugin without a C compiler: host-c is not offered, so a
	 * fat program falls through to its host-so source. */
	if (strcmp(backend, "cpu") == 0) {
		struct child_counts no_cc =
			run_child(self, 0, dir, "CC=/nonexistent/cc");
		ok(no_cc.ran && no_cc.compiled == 0 && no_cc.cached == 0,
		   "cpu without a C compiler: a fat program runs its host-so");
		ok(no_cc.no_cc > 0, "  ... the log says why host-c is not "
		   "offered");
	}
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--child") == 0)
		return child_main(argv[2], argv[3]);
	if (!getenv("T_SRCDIR") || !getenv("T_BUILDDIR"))
		skip_all("T_SRCDIR/T_BUILDDIR not set (run through make check)");
	if (wafer_runtime_open(NULL, &runtime) != WAFER_OK) {
		printf("Bail out! runtime_open: %s\n", wafer_last_error());
		return 1;
	}
	wafer_client *probe = open_client("mutex");
	wafer_device_desc desc = {.struct_size = sizeof desc};
	wafer_client_device(probe, &desc);
	if (!(desc.capabilities & WAFER_CAP_PROGRAMS)) {
		static char why[512];
		wafer_program_source one = {.struct_size = sizeof one,
					    .format = WAFER_PROGRAM_HOST_C,
					    .data = "",
					    .size = 1};
		wafer_program *none = NULL;
		/* The core's message says why, and for a plugin built for a
		 * minor before programs, which (it is judged by it). */
		wafer_program_create(probe, &one, 1, NULL, &none);
		snprintf(why, sizeof why, "%s does not offer the programs "
			 "group (no WAFER_CAP_PROGRAMS): %s", desc.backend,
			 wafer_last_error());
		wafer_client_close(probe);
		wafer_runtime_close(runtime);
		skip_all(why);
	}
	static char name[64];
	snprintf(name, sizeof name, "%s", desc.backend);
	backend = name;
	wafer_client_close(probe);
	for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
		if (strcmp(backends[i].name, backend) == 0)
			backend_index = (int)i;
	diag("backend %s", backend);
	load_sources();
	load_vendor_sources();
	probe_formats();

	for (size_t i = 0; i < FORMATS; i++) {
		wafer_program_format f = sources[i].format;
		if (backend_index >= 0 ? required(f) ||
				listed(backends[backend_index].optional, f)
				       : taken[i])
			test_format(f);
		else if (backend_index < 0 && sources[i].data)
			ok(1, "# SKIP %s does not take %s", backend,
			   wafer_program_format_name(f));
	}
	if (some_source())
		test_fat();
	else
		ok(1, "# SKIP %s takes none of the suite's sources", backend);
	test_compile_error();
	test_errors();
	test_release_order();
	test_graph();
	test_donation();
	test_autotune();
	test_second_process("/proc/self/exe");

	for (size_t i = 0; i < FORMATS; i++)
		free(source_data[i]);
	wafer_runtime_close(runtime);
	done_testing();
	return exit_status();
}
