/* wafer — SPDX-License-Identifier: MIT
 *
 * nvrtc.c: NVRTC through dlopen (nvrtc.h). The prototypes come from the
 * toolkit's <nvrtc.h>; nothing links against the library.
 *
 * A compilation asks for SASS of the GPU's own architecture (sm_90 on an
 * H100 or H200): the CUBIN loads without the driver compiling anything.
 * A GPU newer than this NVRTC knows gets PTX of the newest architecture it
 * does know, which the driver compiles at load (PTX runs on every later
 * GPU). */
#include "build-config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvrtc.h>

#include "plugins/cuda/cuda_plugin.h"
#include "plugins/cuda/nvrtc.h"

#define NVRTC_FUNCTIONS(X)                                                     \
	X(nvrtcGetErrorString)                                                 \
	X(nvrtcVersion)                                                        \
	X(nvrtcGetNumSupportedArchs)                                           \
	X(nvrtcGetSupportedArchs)                                              \
	X(nvrtcCreateProgram)                                                  \
	X(nvrtcDestroyProgram)                                                 \
	X(nvrtcCompileProgram)                                                 \
	X(nvrtcGetProgramLogSize)                                              \
	X(nvrtcGetProgramLog)                                                  \
	X(nvrtcGetPTXSize)                                                     \
	X(nvrtcGetPTX)                                                         \
	X(nvrtcGetCUBINSize)                                                   \
	X(nvrtcGetCUBIN)

#define NVRTC_MEMBER(name) __typeof__(name) *name;

/* The most architectures we keep of the list NVRTC gives. */
#define NVRTC_ARCHS_MAX 64

/* The most options a compilation takes: the caller's and the target. */
#define NVRTC_OPTIONS_MAX 64

struct cuda_nvrtc {
	struct cuda_library library;
	char version[16];
	int archs[NVRTC_ARCHS_MAX];
	int arch_count;
	NVRTC_FUNCTIONS(NVRTC_MEMBER)
};

/*===----------------------------------------------------------------------===
 * Loading
 *===----------------------------------------------------------------------===*/

#define NVRTC_SYMBOL_OF(name)                                                  \
	CUDA_SYMBOL(struct cuda_nvrtc, name, #name)

static const struct cuda_symbol symbols[] = {
	NVRTC_FUNCTIONS(NVRTC_SYMBOL_OF)
};

/* The version and the architectures it compiles for, in |offers|; -1 if
 * NVRTC cannot say (then it is not used). */
static int describe(const struct wafer_host_services *host, void *table,
		    char *offers, size_t size)
{
	struct cuda_nvrtc *n = table;
	int major = 0, minor = 0, count = 0;

	if (n->nvrtcVersion(&major, &minor) != NVRTC_SUCCESS ||
	    n->nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS ||
	    count <= 0 || count > NVRTC_ARCHS_MAX ||
	    n->nvrtcGetSupportedArchs(n->archs) != NVRTC_SUCCESS) {
		host->log(host, WAFER_LOG_WARN,
			  "NVRTC from %s does not say its version or "
			  "architectures; not used",
			  n->library.path);
		return -1;
	}
	n->arch_count = count;
	snprintf(n->version, sizeof n->version, "%d.%d", major, minor);
	snprintf(offers, size, "NVRTC %s, programs in CUDA C (sm_%d to sm_%d)",
		 n->version, n->archs[0], n->archs[n->arch_count - 1]);
	return 0;
}

const struct cuda_nvrtc *cuda_nvrtc_get(struct cuda_state *state)
{
	static const char *const names[] = {
		"libnvrtc.so.13",
		"libnvrtc.so.12",
		"libnvrtc.so",
		WAFER_CUDA_LIBDIR "/libnvrtc.so.13",
		WAFER_CUDA_LIBDIR "/libnvrtc.so.12",
		WAFER_CUDA_LIBDIR "/libnvrtc.so",
	};
	static const struct cuda_library_kind kind = {
		.what = "NVRTC",
		CUDA_LIBRARY_FILES(names, symbols, struct cuda_nvrtc),
		.ready = describe,
		.searched = "libnvrtc.so.13, .12",
		.without = "programs in PTX and CUBIN only",
	};

	if (!state->options.nvrtc)
		return NULL;
	return cuda_library_get(state->host, &state->nvrtc, &kind,
				state->options.nvrtc_library);
}

const char *cuda_nvrtc_version(const struct cuda_nvrtc *nvrtc)
{
	return nvrtc->version;
}

void cuda_nvrtc_target(const struct cuda_nvrtc *nvrtc, int arch, char *buf,
		       size_t size, int *out_cubin)
{
	int newest = nvrtc->archs[0];

	for (int i = 0; i < nvrtc->arch_count; i++) {
		if (nvrtc->archs[i] == arch) {
			snprintf(buf, size, "sm_%d", arch);
			*out_cubin = 1;
			return;
		}
		if (nvrtc->archs[i] > newest)
			newest = nvrtc->archs[i];
	}
	/* Older than anything NVRTC knows cannot happen for the GPUs the
	 * plugin offers (CUDA_MIN_ARCH); newer gets the newest PTX. */
	snprintf(buf, size, "compute_%d", newest < arch ? newest : arch);
	*out_cubin = 0;
}

/*===----------------------------------------------------------------------===
 * Compiling
 *===----------------------------------------------------------------------===*/

/* Splits |text| at white space into |argv| (pointing into |buf|, a copy).
 * Returns the count, or -1 when there are more than |max|. */
static int split_options(const char *text, char *buf, const char **argv,
			 int max)
{
	int count = 0;
	char *p = buf;

	strcpy(buf, text);
	for (;;) {
		p += strspn(p, " \t\r\n");
		if (!*p)
			return count;
		if (count == max)
			return -1;
		argv[count++] = p;
		p += strcspn(p, " \t\r\n");
		if (*p)
			*p++ = '\0';
	}
}

static int names_arch(const char *option)
{
	return strncmp(option, "-arch", 5) == 0 ||
	       strncmp(option, "--gpu-architecture", 18) == 0;
}

static wafer_status nvrtc_fail(const struct cuda_nvrtc *n,
			       const struct wafer_host_services *host,
			       nvrtcResult result, const char *what,
			       const char *name)
{
	host->set_error("cuda: %s (%s): %s", what, name,
			n->nvrtcGetErrorString(result));
	return result == NVRTC_ERROR_OUT_OF_MEMORY ? WAFER_ERROR_OUT_OF_MEMORY
						   : WAFER_ERROR_INTERNAL;
}

/* NVRTC's log of |prog| (malloc'd; "" when it has none). */
static char *program_log(const struct cuda_nvrtc *n, nvrtcProgram prog)
{
	size_t size = 0;
	char *log;

	if (n->nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS)
		size = 0;
	log = malloc(size + 1);
	if (!log)
		return NULL;
	if (size && n->nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
		size = 0;
	log[size] = '\0';
	return log;
}

/* The compiled image: CUBIN when there is one, else PTX. */
static wafer_status take_image(const struct cuda_nvrtc *n,
			       const struct wafer_host_services *host,
			       nvrtcProgram prog, const char *name,
			       void **out_image, size_t *out_size)
{
	size_t size = 0;
	int cubin = 1;
	nvrtcResult r;
	char *image;

	if (n->nvrtcGetCUBINSize(prog, &size) != NVRTC_SUCCESS || size == 0) {
		cubin = 0;
		r = n->nvrtcGetPTXSize(prog, &size);
		if (r != NVRTC_SUCCESS)
			return nvrtc_fail(n, host, r, "nvrtcGetPTXSize", name);
	}
	image = malloc(size + 1);
	if (!image) {
		host->set_error("cuda: %s: %zu bytes of compiled code: out of "
				"host memory",
				name, size);
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	r = cubin ? n->nvrtcGetCUBIN(prog, image) : n->nvrtcGetPTX(prog, image);
	if (r != NVRTC_SUCCESS) {
		free(image);
		return nvrtc_fail(n, host, r, cubin ? "nvrtcGetCUBIN"
						    : "nvrtcGetPTX",
				  name);
	}
	if (!cubin) {
		/* The PTX size counts its NUL; make sure it is there. */
		image[size] = '\0';
		size = strlen(image) + 1;
	}
	*out_image = image;
	*out_size = size;
	return WAFER_OK;
}

wafer_status cuda_nvrtc_compile(const struct cuda_nvrtc *n,
				const struct wafer_host_services *host,
				const char *source, size_t size,
				const char *name, const char *options,
				const char *target, void **out_image,
				size_t *out_size)
{
	const char *argv[NVRTC_OPTIONS_MAX + 1];
	char arch[64], *text = NULL, *buf = NULL, *log;
	nvrtcProgram prog = NULL;
	wafer_status status = WAFER_OK;
	nvrtcResult r;
	int argc = 0, own_arch = 0;

	*out_image = NULL;
	*out_size = 0;
	text = malloc(size + 1);
	buf = malloc(options ? strlen(options) + 1 : 1);
	if (!text || !buf) {
		free(text);
		free(buf);
		host->set_error("cuda: %s: out of host memory", name);
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	/* NVRTC reads the source up to its NUL. */
	memcpy(text, source, size);
	text[size] = '\0';
	if (options) {
		argc = split_options(options, buf, argv, NVRTC_OPTIONS_MAX);
		if (argc < 0) {
			host->set_error("cuda: %s: more than %d build options",
					name, NVRTC_OPTIONS_MAX);
			status = WAFER_ERROR_INVALID_ARGUMENT;
			goto out;
		}
	}
	for (int i = 0; i < argc; i++)
		own_arch |= names_arch(argv[i]);
	if (!own_arch) {
		snprintf(arch, sizeof arch, "--gpu-architecture=%s", target);
		argv[argc++] = arch;
	}

	r = n->nvrtcCreateProgram(&prog, text, name, 0, NULL, NULL);
	if (r != NVRTC_SUCCESS) {
		status = nvrtc_fail(n, host, r, "nvrtcCreateProgram", name);
		goto out;
	}
	r = n->nvrtcCompileProgram(prog, argc, argv);
	if (r == NVRTC_ERROR_COMPILATION || r == NVRTC_ERROR_INVALID_OPTION) {
		log = program_log(n, prog);
		/* The log as NVRTC wrote it, line numbers and all. */
		host->set_error("cuda: NVRTC %s could not compile %s for %s "
				"(%s):\n%s",
				n->version, name, own_arch ? "the options' "
							     "architecture"
							   : target,
				n->nvrtcGetErrorString(r),
				log && *log ? log : "(NVRTC gave no log)");
		free(log);
		status = WAFER_ERROR_BUILD;
		goto out;
	}
	if (r != NVRTC_SUCCESS) {
		status = nvrtc_fail(n, host, r, "nvrtcCompileProgram", name);
		goto out;
	}
	status = take_image(n, host, prog, name, out_image, out_size);
out:
	if (prog)
		n->nvrtcDestroyProgram(&prog);
	free(text);
	free(buf);
	return status;
}
