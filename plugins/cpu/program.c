/* wafer — SPDX-License-Identifier: MIT
 *
 * program.c: the cpu plugin's programs — the caller's own host kernels
 * (program.h, host_kernel.h).
 *
 *   host-so  an ELF shared object image: loaded from memory (a memfd, or
 *            an unlinked temporary file where there is none) with dlopen
 *            RTLD_NOW | RTLD_LOCAL, so each program has its own copy of
 *            its statics;
 *   host-c   C source: compiled with the system's C compiler ($CC, else
 *            `cc` on PATH) into a shared object, which goes into the
 *            host's binary cache (a second process compiles nothing) and
 *            is then loaded like a host-so image. Without a compiler the
 *            format is not offered, so a fat program falls through to its
 *            host-so source.
 *
 * A kernel is found by dlsym. A launch calls it on ranges of dimension 0
 * split over the device's thread pool, like the catalogue's kernels. The
 * cpu backend is synchronous: when program_release runs, no launch of the
 * program is running, so it dlcloses at once. Reading and writing files
 * goes through the core's lib/file.c, compiled into the plugin (which
 * links nothing of libwafer). */
#include "build-config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wafer/host_kernel.h>

#include "lib/file.h"
#include "lib/plugin_file.h"
#include "plugins/cpu/cpu_plugin.h"
#include "plugins/cpu/elf_symbols.h"
#include "plugins/cpu/kernels.h"
#include "plugins/cpu/threadpool.h"
#include "plugins/common/program_load.h"
#include "plugins/common/program_kernels.h"

extern char **environ;

#ifndef WAFER_INCLUDEDIR
#error "WAFER_INCLUDEDIR must name the installed include directory (local.mk)"
#endif

struct cpu_program_kernel {
	/* First: head.entry.impl points back here. */
	struct wafer_plugin_program_kernel head;
	wafer_host_kernel_fn *fn;
};

struct cpu_program {
	void *dl;
	int fd; /* the file its image was staged in (load_image) */
	char *name;
	char *exported; /* "a, b": its functions, for "no kernel" errors */
	struct program_kernels kernels;
};

/*===----------------------------------------------------------------------===
 * The C compiler
 *===----------------------------------------------------------------------===*/

#define CC_MAX_ARGS 32

/* The most bindings a launch through wafer_execute has (the core's
 * limit, checked by wafer_program_kernel). */
#define CPU_PROGRAM_MAX_BINDINGS 16

/* The compiler command ($CC split at blanks, its first word resolved on
 * PATH) and the header directory, found once per process: both depend
 * only on the environment and on where this plugin lies. */
static struct {
	char text[4096];          /* the words, NUL-separated */
	char *argv[CC_MAX_ARGS];  /* into |text| */
	int argc;                 /* 0: no compiler */
	char why[512];            /* why not, when argc is 0 */
	char include[4096];       /* -I directory for <wafer/host_kernel.h> */
} cc;
static pthread_once_t cc_once = PTHREAD_ONCE_INIT;

static bool executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

/* |name| on PATH into |out|; false when it is not there. */
static bool find_on_path(const char *name, char *out, size_t size)
{
	const char *path = wafer__file_getenv("PATH");

	if (strchr(name, '/')) {
		snprintf(out, size, "%s", name);
		return executable(out);
	}
	if (!path)
		path = "/usr/bin:/bin";
	for (const char *p = path;;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int n = snprintf(out, size, "%.*s/%s", (int)len,
				 len ? p : ".", name);
		if (n > 0 && (size_t)n < size && executable(out))
			return true;
		if (!end)
			return false;
		p = end + 1;
	}
}

/* Where <wafer/host_kernel.h> is: the source tree's include directory
 * when this plugin runs from its build tree (uninstalled), else the
 * installed one. */
static void find_include(void)
{
	Dl_info info;
	const char *here = "";
	if (dladdr((void *)find_include, &info) && info.dli_fname)
		here = info.dli_fname;
#if defined(WAFER_BUILDDIR) && defined(WAFER_SOURCE_INCLUDEDIR)
	size_t n = strlen(WAFER_BUILDDIR);
	if (strncmp(here, WAFER_BUILDDIR, n) == 0 && here[n] == '/') {
		snprintf(cc.include, sizeof cc.include, "%s",
			 WAFER_SOURCE_INCLUDEDIR);
		return;
	}
#endif
	snprintf(cc.include, sizeof cc.include, "%s", WAFER_INCLUDEDIR);
}

static void find_compiler(void)
{
	const char *command = wafer__file_getenv("CC");
	char first[4096];
	size_t used = 0;

	find_include();
	if (!command)
		command = "cc";
	for (const char *p = command; *p;) {
		p += strspn(p, " \t");
		size_t len = strcspn(p, " \t");
		if (!len)
			break;
		if (cc.argc == CC_MAX_ARGS - 1 || used + len + 1 > sizeof cc.text) {
			snprintf(cc.why, sizeof cc.why,
				 "the compiler command '%s' is too long",
				 command);
			cc.argc = 0;
			return;
		}
		memcpy(cc.text + used, p, len);
		cc.text[used + len] = '\0';
		cc.argv[cc.argc++] = cc.text + used;
		used += len + 1;
		p += len;
	}
	if (!cc.argc) {
		snprintf(cc.why, sizeof cc.why, "CC is blank");
		return;
	}
	if (!find_on_path(cc.argv[0], first, sizeof first)) {
		snprintf(cc.why, sizeof cc.why,
			 "no C compiler: '%s' is not an executable%s (set CC)",
			 cc.argv[0],
			 strchr(cc.argv[0], '/') ? "" : " on PATH");
		cc.argc = 0;
		return;
	}
	/* The resolved path replaces the first word. */
	if (used + strlen(first) + 1 > sizeof cc.text) {
		snprintf(cc.why, sizeof cc.why, "the compiler path is too long");
		cc.argc = 0;
		return;
	}
	strcpy(cc.text + used, first);
	cc.argv[0] = cc.text + used;
}

static bool have_compiler(const struct cpu_device *dev)
{
	pthread_once(&cc_once, find_compiler);
	if (!cc.argc) {
		const struct wafer_host_services *host = dev->state->host;
		host->log(host, WAFER_LOG_DEBUG,
			  "program: host-c not offered: %s", cc.why);
	}
	return cc.argc > 0;
}

/*===----------------------------------------------------------------------===
 * Formats
 *===----------------------------------------------------------------------===*/

static const wafer_program_format with_cc[] = {WAFER_PROGRAM_HOST_C,
					       WAFER_PROGRAM_HOST_SO};
static const wafer_program_format without_cc[] = {WAFER_PROGRAM_HOST_SO};

wafer_status cpu_program_formats(void *device,
					const wafer_program_format **out_formats,
					size_t *out_count)
{
	if (have_compiler(device)) {
		*out_formats = with_cc;
		*out_count = sizeof with_cc / sizeof with_cc[0];
	} else {
		*out_formats = without_cc;
		*out_count = 1;
		/* Why, for the core's message when host-c was all the caller
		 * offered (wafer_program_create). */
		struct cpu_device *dev = device;
		dev->state->host->set_error("cpu: host-c not offered: %s",
					    cc.why);
	}
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Loading a shared object from memory
 *===----------------------------------------------------------------------===*/

/* A temporary directory's base: $TMPDIR, else /tmp. */
static const char *tmp_base(void)
{
	const char *t = wafer__file_getenv("TMPDIR");
	return t ? t : "/tmp";
}

/* Where bytes that should be a shared object read as a file's name
 * ("/tmp/k.so", "./k.so"): a hint that the caller passed the path. */
static bool looks_like_path(const void *image, size_t size)
{
	const char *c = image;

	if (size == 0 || size > 4096 || (c[0] != '/' && c[0] != '.'))
		return false;
	for (size_t i = 0; i < size; i++)
		if ((unsigned char)c[i] < ' ' && !(c[i] == 0 && i == size - 1))
			return false;
	return true;
}

/* Stages |image| in a file of its own: a memfd, else a temporary file
 * (|*temporary|, to unlink once loaded); its path (for dlopen) in
 * |path|. -1 on failure, with the error set. */
static int stage_image(const struct cpu_device *dev, const char *name,
		       const void *image, size_t size, char *path,
		       size_t path_size, bool *temporary)
{
	const struct wafer_host_services *host = dev->state->host;
	int fd = memfd_create("wafer-program", MFD_CLOEXEC);

	*temporary = fd < 0;
	if (!*temporary) {
		snprintf(path, path_size, "/proc/self/fd/%d", fd);
	} else {
		snprintf(path, path_size, "%s/wafer-program-XXXXXX.so",
			 tmp_base());
		fd = mkstemps(path, 3);
	}
	if (fd < 0 || wafer__file_write_all(fd, image, size) != 0) {
		host->set_error("cpu: program %s: cannot stage its shared "
				"object (%s): %s",
				name, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		if (*temporary)
			unlink(path);
		fd = -1;
	}
	return fd;
}

/* dlopens the shared object |image|; the program's |name| is for the
 * message. The image is checked first as plugin files are
 * (lib/plugin_file.h): dlopen of a file cut short dies of SIGBUS. The
 * file it was staged in stays open in |*out_fd| while the program lives:
 * dlopen matches a path it loaded before by name, and a memfd's path
 * /proc/self/fd/N is unique only while N is open. A path that is still
 * loaded (a released program that dlclose kept) is refused rather than
 * handed back as another program. */
static wafer_status load_image(const struct cpu_device *dev, const char *name,
			       const void *image, size_t size, void **out_dl,
			       int *out_fd, char **out_exported)
{
	const struct wafer_host_services *host = dev->state->host;
	char path[4200], why[256];
	bool temporary;
	wafer_status status = WAFER_OK;

	*out_dl = NULL;
	*out_fd = -1;
	if ((size < 4 || memcmp(image, "\177ELF", 4) != 0) &&
	    looks_like_path(image, size)) {
		host->set_error("cpu: program %s: the host-so image (%zu "
				"bytes) is not an ELF shared object: it reads "
				"as the file name '%.*s'; pass the file's "
				"contents, not its path",
				name, size, (int)strnlen(image, size),
				(const char *)image);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	int fd = stage_image(dev, name, image, size, path, sizeof path,
			     &temporary);
	if (fd < 0)
		return WAFER_ERROR_IO;
	void *dl = NULL;
	if (!wafer__elf_fd_check(fd, why, sizeof why)) {
		host->set_error("cpu: program %s: the host-so image (%zu "
				"bytes) is not a loadable ELF shared object: "
				"%s",
				name, size, why);
		status = WAFER_ERROR_INVALID_ARGUMENT;
	} else if ((dl = dlopen(path, RTLD_LAZY | RTLD_NOLOAD))) {
		dlclose(dl);
		dl = NULL;
		host->set_error("cpu: program %s: an object named %s is still "
				"loaded; its image would be taken for this "
				"one's",
				name, path);
		status = WAFER_ERROR_INTERNAL;
	} else {
		dlerror();
		dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		const char *dl_why = dl ? NULL : dlerror();
		if (!dl) {
			host->set_error("cpu: program %s: dlopen failed: %s",
					name, dl_why ? dl_why : "unknown error");
			status = WAFER_ERROR_BUILD;
		}
	}
	if (temporary)
		unlink(path);
	if (!dl) {
		close(fd);
		return status;
	}
	*out_dl = dl;
	*out_fd = fd;
	free(*out_exported);
	*out_exported = cpu_elf_exported_functions(image, size);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Compiling host C
 *===----------------------------------------------------------------------===*/

/* |name| if it is a plain file name ([A-Za-z0-9_.-], at most 64 bytes,
 * not starting with '.'), for the compiler's messages; else
 * "program.c". */
static const char *source_file_name(const char *name)
{
	if (!name || !name[0] || name[0] == '.' || strlen(name) > 64)
		return "program.c";
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' ||
		      *c == '-'))
			return "program.c";
	return name;
}

/* The whole of |path| (logs and shared objects are small), or NULL. */
static void *read_file(const char *path, size_t *out_size)
{
	char *data;
	int err = wafer__file_read(path, (size_t)1 << 30, &data, out_size);
	if (err)
		errno = err;
	return err ? NULL : data;
}

/* Splits |options| at blanks into |argv| from |argc| on (the copy in
 * |buf|); false when there are too many. */
static bool split_options(const char *options, char *buf, char **argv,
			  int *argc, int max)
{
	if (!options)
		return true;
	strcpy(buf, options);
	for (char *p = strtok(buf, " \t\n"); p; p = strtok(NULL, " \t\n")) {
		if (*argc >= max)
			return false;
		argv[(*argc)++] = p;
	}
	return true;
}

/* Runs the compiler on |source| in a fresh temporary directory; on
 * success the shared object's bytes in |*out_image|. A failure of the
 * compiler is WAFER_ERROR_BUILD with its output, whole and as it wrote
 * it. */
static wafer_status compile(const struct cpu_device *dev,
			    const struct wafer_program_source *source,
			    const char *options, void **out_image,
			    size_t *out_size)
{
	const struct wafer_host_services *host = dev->state->host;
	const char *file = source_file_name(source->name);
	char dir[4200], src[4400], so[4400], log[4400], include[4200];
	char *argv[CC_MAX_ARGS + 256];
	char *option_buf = NULL;
	int argc = 0, fd, exit_status = -1;
	wafer_status status = WAFER_OK;
	pid_t pid;

	*out_image = NULL;
	*out_size = 0;
	snprintf(dir, sizeof dir, "%s/wafer-cc-XXXXXX", tmp_base());
	if (!mkdtemp(dir)) {
		host->set_error("cpu: cannot create a directory for the C "
				"compiler in %s: %s",
				tmp_base(), strerror(errno));
		return WAFER_ERROR_IO;
	}
	snprintf(src, sizeof src, "%s/%s", dir, file);
	snprintf(so, sizeof so, "%s/program.so", dir);
	snprintf(log, sizeof log, "%s/compiler.log", dir);
	snprintf(include, sizeof include, "-I%s", cc.include);

	/* The #line keeps the compiler's messages about the caller's text
	 * and lines, not the temporary file. */
	fd = open(src, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || dprintf(fd, "#line 1 \"%s\"\n", file) < 0 ||
	    wafer__file_write_all(fd, source->data, source->size) != 0 ||
	    wafer__file_write_all(fd, "\n", 1) != 0) {
		host->set_error("cpu: cannot write %s: %s", src,
				strerror(errno));
		if (fd >= 0)
			close(fd);
		status = WAFER_ERROR_IO;
		goto out;
	}
	close(fd);

	for (int i = 0; i < cc.argc; i++)
		argv[argc++] = cc.argv[i];
	argv[argc++] = "-shared";
	argv[argc++] = "-fPIC";
	argv[argc++] = "-O2";
	argv[argc++] = include;
	option_buf = malloc(options ? strlen(options) + 1 : 1);
	if (!option_buf ||
	    !split_options(options, option_buf, argv, &argc,
			   CC_MAX_ARGS + 256 - 8)) {
		host->set_error("cpu: program %s: %s", file,
				option_buf ? "too many build options"
					   : "out of host memory");
		status = WAFER_ERROR_INVALID_ARGUMENT;
		goto out;
	}
	argv[argc++] = "-o";
	argv[argc++] = so;
	/* The caller's name need not end in .c. */
	argv[argc++] = "-x";
	argv[argc++] = "c";
	argv[argc++] = src;
	argv[argc] = NULL;

	posix_spawn_file_actions_t actions;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&actions, 1, log,
					 O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&actions, 1, 2);
	int err = posix_spawn(&pid, argv[0], &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	if (err) {
		host->set_error("cpu: cannot run the C compiler %s: %s",
				argv[0], strerror(err));
		status = WAFER_ERROR_BUILD;
		goto out;
	}
	while (waitpid(pid, &exit_status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(exit_status) || WEXITSTATUS(exit_status) != 0) {
		size_t log_size;
		char *text = read_file(log, &log_size);
		host->set_error("cpu: program %s did not compile (%s, exit "
				"status %d):\n%s",
				file, argv[0],
				WIFEXITED(exit_status)
					? WEXITSTATUS(exit_status)
					: -1,
				text ? text : "(no output)");
		free(text);
		status = WAFER_ERROR_BUILD;
		goto out;
	}
	*out_image = read_file(so, out_size);
	if (!*out_image) {
		host->set_error("cpu: program %s: cannot read %s: %s", file, so,
				strerror(errno));
		status = WAFER_ERROR_IO;
	}
out:
	free(option_buf);
	unlink(src);
	unlink(so);
	unlink(log);
	rmdir(dir);
	return status;
}

/* The program from its cached shared object (wafer_plugin_cached_build's
 * load). */
static wafer_status load_cached(void *ctx, const void *image, size_t size)
{
	const struct program_build *b = ctx;
	struct cpu_program *p = b->program;

	return load_image(b->device, p->name, image, size, &p->dl, &p->fd,
			  &p->exported);
}

/* The source compiled and loaded; its shared object is stored. */
static wafer_status compile_and_load(void *ctx, void **out_image,
				     size_t *out_size)
{
	const struct program_build *b = ctx;
	struct cpu_program *p = b->program;
	void *image;
	size_t size;
	wafer_status status;

	status = compile(b->device, b->source, b->options, &image, &size);
	if (status != WAFER_OK)
		return status;
	status = load_image(b->device, p->name, image, size, &p->dl, &p->fd,
			    &p->exported);
	return program_compiled(status, image, size, out_image, out_size);
}

/* A host-c program from the host's cache, or compiled (and stored
 * there). */
static wafer_status load_host_c(struct cpu_device *dev,
				const struct wafer_program_source *source,
				const char *options, struct cpu_program *p)
{
	char command[4400];
	size_t used = 0;

	/* Everything the image depends on: the plugin (and so the header's
	 * ABI), the compiler command, the options, the source. */
	for (int i = 0; i < cc.argc && used < sizeof command; i++)
		used += (size_t)snprintf(command + used, sizeof command - used,
					 "%s ", cc.argv[i]);
	static const char what[] = "wafer cpu plugin " PACKAGE_VERSION
				   " host-c -shared -fPIC -O2\n";
	const struct wafer_cache_part parts[] = {
		wafer_plugin_cache_part(what, sizeof what - 1),
		wafer_plugin_cache_text(command),
		wafer_plugin_cache_text(options ? options : ""),
		wafer_plugin_cache_text(p->name),
		wafer_plugin_cache_part(source->data, source->size),
	};
	struct program_build b = {
		dev->state->host, dev, p, source, options, p->name, "host-c",
	};

	return program_cached_build(&b, parts, sizeof parts / sizeof parts[0],
				    load_cached, compile_and_load);
}

wafer_status cpu_program_load(void *device,
				     const struct wafer_program_source *source,
				     const char *options, void **out_program)
{
	struct cpu_device *dev = device;
	const struct wafer_host_services *host = dev->state->host;
	const char *name = source->name ? source->name
		: source->format == WAFER_PROGRAM_HOST_C ? "host-c"
							 : "host-so";
	wafer_status status;

	*out_program = NULL;
	struct cpu_program *p = calloc(1, sizeof *p);
	if (!p || !(p->name = strdup(name))) {
		free(p);
		host->set_error("cpu: out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	if (source->format == WAFER_PROGRAM_HOST_C) {
		if (!have_compiler(dev)) {
			host->set_error("cpu: program %s: host-c: %s", name,
					cc.why);
			status = WAFER_ERROR_NOT_SUPPORTED;
			goto fail;
		}
		status = load_host_c(dev, source, options, p);
	} else if (source->format == WAFER_PROGRAM_HOST_SO) {
		status = load_image(dev, name, source->data, source->size,
				    &p->dl, &p->fd, &p->exported);
	} else {
		host->set_error("cpu: program %s: format %d is not one the "
				"cpu plugin takes",
				name, (int)source->format);
		status = WAFER_ERROR_NOT_SUPPORTED;
	}
	if (status != WAFER_OK)
		goto fail;
	program_kernels_init(&p->kernels, host, "cpu", p->name, 0);
	*out_program = p;
	return WAFER_OK;
fail:
	free(p->exported);
	free(p->name);
	free(p);
	return status;
}

/*===----------------------------------------------------------------------===
 * Kernels and launches
 *===----------------------------------------------------------------------===*/

/* The function of |kernel|'s name (wafer_plugin_program_kernel_get's
 * make). */
static wafer_status make_kernel(void *ctx, void *kernel)
{
	const struct cpu_program *p = ctx;
	struct cpu_program_kernel *k = kernel;
	void *symbol;

	dlerror();
	symbol = dlsym(p->dl, k->head.name);
	if (!symbol) {
		/* dlerror's text names the staged file (/proc/self/fd/N), of
		 * no use to the caller: say what the program has instead. */
		p->kernels.table.host->set_error("cpu: no kernel '%s' in program "
					   "%s (it has: %s)",
					   k->head.name, p->name,
					   p->exported ? p->exported : "none");
		return WAFER_ERROR_NOT_FOUND;
	}
	/* Only functions are kernels: a launch of a variable would jump
	 * into data. */
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (!dladdr1(symbol, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
	    (ELF64_ST_TYPE(sym->st_info) != STT_FUNC &&
	     ELF64_ST_TYPE(sym->st_info) != STT_GNU_IFUNC)) {
		p->kernels.table.host->set_error("cpu: program %s: '%s' is not a "
					   "function (%s), so not a kernel",
					   p->name, k->head.name,
					   sym ? "a data symbol"
					       : "no symbol table entry");
		return WAFER_ERROR_NOT_FOUND;
	}
	memcpy(&k->fn, &symbol, sizeof k->fn); /* object to function */
	return WAFER_OK;
}

wafer_status cpu_program_kernel(void *device, void *program,
				const char *name, uint32_t binding_count,
				size_t params_size,
				const struct wafer_kernel **out_kernel)
{
	struct cpu_program *p = program;

	(void)device;
	return program_kernels_get(&p->kernels, name, binding_count,
				   params_size,
				   sizeof(struct cpu_program_kernel),
				   make_kernel, p, out_kernel);
}

struct range_call {
	wafer_host_kernel_fn *fn;
	struct wafer_host_kernel_args args;
};

static void run_range(void *ctx, size_t begin, size_t end)
{
	const struct range_call *call = ctx;
	struct wafer_host_kernel_args args = call->args;
	args.begin = begin;
	args.end = end;
	call->fn(&args);
}

wafer_status cpu_program_launch(struct cpu_device *dev,
				const struct wafer_launch *launch)
{
	const struct cpu_program_kernel *k =
		(const struct cpu_program_kernel *)launch->kernel->impl;
	void *data[CPU_PROGRAM_MAX_BINDINGS];
	size_t sizes[CPU_PROGRAM_MAX_BINDINGS];
	uint32_t n = launch->binding_count;

	if (n > CPU_PROGRAM_MAX_BINDINGS) {
		dev->state->host->set_error("cpu: kernel %s: %u bindings, the "
					    "most is %d",
					    k->head.name, n,
					    CPU_PROGRAM_MAX_BINDINGS);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct wafer_binding *b =
			wafer_plugin_array_at(launch->bindings, i);
		data[i] = (char *)cpu_resource_ptr(b->resource) + b->offset;
		sizes[i] = b->size;
	}
	struct range_call call = {
		.fn = k->fn,
		.args = {
			.struct_size = sizeof call.args,
			.bindings = data,
			.binding_sizes = sizes,
			.binding_count = n,
			.params = launch->params_size ? launch->params : NULL,
			.params_size = launch->params_size,
			.global = {launch->global[0], launch->global[1],
				   launch->global[2]},
		},
	};
	/* A range of dimension 0 is worth a thread at about CPU_GRAIN items
	 * of the whole launch: the cost of an item is the caller's, and
	 * this is the catalogue's guess for a cheap one. Smaller launches
	 * run here at once, without the pool's arithmetic (a launch by ref
	 * should cost what a catalogue kernel's does). */
	uint64_t g0 = launch->global[0];
	uint64_t inner = launch->global[1] * launch->global[2];
	if (g0 < 2 * CPU_GRAIN && inner < 2 * CPU_GRAIN &&
	    g0 * inner < 2 * CPU_GRAIN) {
		call.args.begin = 0;
		call.args.end = g0;
		k->fn(&call.args);
		return WAFER_OK;
	}
	uint64_t grain = inner >= CPU_GRAIN ? 1 : CPU_GRAIN / inner;
	cpu_pool_parallel_for(dev->pool, (size_t)g0, (size_t)grain, run_range,
			      &call);
	return WAFER_OK;
}

void cpu_program_release(void *device, void *program)
{
	struct cpu_program *p = program;

	(void)device;
	dlclose(p->dl);
	close(p->fd);
	program_kernels_release(&p->kernels, NULL);
	free(p->exported);
	free(p->name);
	free(p);
}

