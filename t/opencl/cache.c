/* wafer — SPDX-License-Identifier: MIT
 *
 * opencl_cache.c: what the OpenCL plugin does across processes and when
 * things go wrong — the on-disk cache of program binaries (a second
 * process compiles nothing; a damaged, truncated, foreign or
 * driver-refused file is ignored and rewritten; concurrent writers;
 * where the cache lives), the build-log error path, and a machine with
 * no OpenCL platform.
 *
 * Each scenario runs in a child process: "compiles nothing" is a
 * property of a fresh process, and the ICD loader reads OCL_ICD_VENDORS
 * once per process. The parent never calls OpenCL (forking a process
 * with driver threads is not safe), only forks, reads each child's
 * report from a pipe, and prints the TAP lines. A child counts source
 * builds from the plugin's log ("built <unit> ... from source"). The
 * files are the host's compiled-binary cache (lib/binary_cache.c, linked
 * in and offered by t/standins/opencl_host.h as the core offers it).
 *
 * PoCL keeps its own cache of compiled work-group functions under
 * $XDG_CACHE_HOME/pocl; children that move XDG_CACHE_HOME keep PoCL's
 * where it was (POCL_CACHE_DIR) so the test stays fast. */
#include "build-config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t/standins/opencl_host.h"

static char tmp[4096];

/* What a child reports. */
struct report {
	int ran;           /* the scenario got as far as launching */
	int launch_status; /* of the first launch */
	int again_status;  /* of a second launch on another kernel */
	int correct;       /* the result was right (when status OK) */
	int source_builds;
	uint32_t devices;
	int count_status;
	char error[2048];  /* set_error text after the first launch */
	char again_error[2048];
	char log[8192];
};

/*===----------------------------------------------------------------------===
 * The child side
 *===----------------------------------------------------------------------===*/

/* Opens device 0 with |options|, runs add (and relu) on the elementwise
 * program, and fills |r|. */
static void scenario(const struct wafer_plugin_option *options, size_t n,
		     struct report *r)
{
	enum { N = 1000 };
	void *st = NULL, *dev = NULL, *q = NULL;
	wafer_resource res[3];
	float a[N], b[N], c[N];
	struct wafer_elementwise_params p = {.count = N};
	struct wafer_binding bb[3];

	load_plugin();
	if (init_with(options, n, &st) != WAFER_OK) {
		snprintf(r->error, sizeof r->error, "init: %s", last_error);
		return;
	}
	r->count_status = plugin->device_count(st, &r->devices);
	if (r->count_status != WAFER_OK || r->devices == 0) {
		snprintf(r->error, sizeof r->error, "%s", last_error);
		plugin->shutdown(st);
		return;
	}
	if (plugin->device_open(st, 0, &dev) != WAFER_OK ||
	    plugin->server->queue_create(dev, &q) != WAFER_OK) {
		snprintf(r->error, sizeof r->error, "open: %s", last_error);
		return;
	}
	for (int i = 0; i < 3; i++) {
		plugin->storage->alloc(dev, sizeof a, &res[i]);
		bb[i] = binding(res[i], 0, sizeof a);
	}
	for (int i = 0; i < N; i++) {
		a[i] = (float)i;
		b[i] = 0.5f * (float)(i % 9);
	}
	plugin->storage->copy_in(dev, q, res[1], 0, a, sizeof a);
	plugin->storage->copy_in(dev, q, res[2], 0, b, sizeof b);
	r->ran = 1;
	last_error[0] = '\0';
	r->launch_status = launch_kernel(
		dev, q, find_kernel(dev, "add", WAFER_DTYPE_F32, NULL), bb, 3,
		&p, sizeof p);
	snprintf(r->error, sizeof r->error, "%s", last_error);
	last_error[0] = '\0';
	/* relu into b's buffer: queued after add, so add saw the old b. */
	bb[0] = binding(res[2], 0, sizeof a);
	r->again_status = launch_kernel(
		dev, q, find_kernel(dev, "relu", WAFER_DTYPE_F32, NULL), bb, 2,
		&p, sizeof p);
	snprintf(r->again_error, sizeof r->again_error, "%s", last_error);
	if (r->launch_status == WAFER_OK && r->again_status == WAFER_OK) {
		plugin->storage->copy_out(dev, q, res[0], 0, c, sizeof c);
		r->correct = plugin->server->sync(dev, q) == WAFER_OK;
		for (int i = 0; i < N; i++)
			r->correct &= c[i] == a[i] + b[i];
	}
	for (int i = 0; i < 3; i++)
		plugin->storage->free(dev, res[i]);
	plugin->server->queue_destroy(dev, q);
	plugin->device_close(dev);
	plugin->shutdown(st);
}

/* Opens device 0 with |options| and loads a program of the caller's
 * (program_load, an OpenCL C source) and its kernel: r->launch_status
 * is program_load's, r->again_status program_kernel's, r->correct both
 * fine. */
static void program_scenario(const struct wafer_plugin_option *options,
			     size_t n, struct report *r)
{
	static const char text[] =
		"__kernel void wafer_cut(__global float *y, float a)\n"
		"{ y[get_global_id(0)] *= a; }\n";
	struct wafer_program_source source = {
		.struct_size = sizeof source,
		.format = WAFER_PROGRAM_OPENCL_C,
		.data = text,
		.size = sizeof text - 1,
		.name = "cut.cl",
	};
	void *st = NULL, *dev = NULL, *program = NULL;
	const struct wafer_kernel *kernel = NULL;

	load_plugin();
	if (init_with(options, n, &st) != WAFER_OK ||
	    plugin->device_open(st, 0, &dev) != WAFER_OK) {
		snprintf(r->error, sizeof r->error, "open: %.2000s", last_error);
		return;
	}
	r->ran = 1;
	r->launch_status = plugin->server->program_load(dev, &source, NULL,
							&program);
	if (r->launch_status == WAFER_OK) {
		r->again_status = plugin->server->program_kernel(
			dev, program, "wafer_cut", 1, sizeof(float), &kernel);
		r->correct = r->again_status == WAFER_OK && kernel;
		plugin->server->program_release(dev, program);
	}
	snprintf(r->error, sizeof r->error, "%.2000s", last_error);
	plugin->device_close(dev);
	plugin->shutdown(st);
}

/* r->devices: the OpenCL devices the ICD loader lists (not the plugin);
 * r->error: what it found, or why nothing. */
static void probe_devices(const struct wafer_plugin_option *options, size_t n,
			  struct report *r)
{
	(void)options;
	(void)n;
	load_plugin();
	r->devices = opencl_devices_present(r->error, sizeof r->error);
}

/* Runs |fn| in a child with |env| ("NAME=value" or "NAME" to unset,
 * NULL-terminated) and returns its report. */
static struct report in_child(void (*fn)(const struct wafer_plugin_option *,
					 size_t, struct report *),
			      const struct wafer_plugin_option *options,
			      size_t n, const char *const *env)
{
	struct report r;
	int fds[2], status;
	pid_t pid;
	size_t got = 0;

	memset(&r, 0, sizeof r);
	if (pipe(fds) != 0)
		return r;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		for (size_t i = 0; env && env[i]; i++) {
			const char *eq = strchr(env[i], '=');
			if (eq) {
				char name[256];
				snprintf(name, sizeof name, "%.*s",
					 (int)(eq - env[i]), env[i]);
				setenv(name, eq + 1, 1);
			} else {
				unsetenv(env[i]);
			}
		}
		fn(options, n, &r);
		r.source_builds = source_builds;
		memcpy(r.log, log_text, sizeof r.log - 1); /* the head */
		if (write(fds[1], &r, sizeof r) != (ssize_t)sizeof r)
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	while (pid > 0 && got < sizeof r) {
		ssize_t k = read(fds[0], (char *)&r + got, sizeof r - got);
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fds[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	if (got != sizeof r) {
		memset(&r, 0, sizeof r);
		snprintf(r.error, sizeof r.error, "the child died (%zu bytes "
			 "of its report)", got);
	}
	return r;
}

/*===----------------------------------------------------------------------===
 * Files
 *===----------------------------------------------------------------------===*/

/* Number of entries in |dir| whose name starts with |prefix| and ends
 * with |suffix|; the last one's path in |path|. Binaries are the host
 * cache's <hash>.bin files (lib/binary_cache.c), temporary files
 * .tmp-*. */
static int count_files(const char *dir, const char *prefix,
		       const char *suffix, char *path, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name), slen = strlen(suffix);
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 ||
		    len < slen || strcmp(e->d_name + len - slen, suffix) != 0)
			continue;
		n++;
		if (path)
			snprintf(path, size, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	return n;
}

static long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static unsigned char *read_file(const char *path, size_t *out_size)
{
	long size = file_size(path);
	unsigned char *data;
	FILE *f;

	if (size < 0 || !(f = fopen(path, "rb")))
		return NULL;
	data = malloc((size_t)size + 1);
	if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
		free(data);
		data = NULL;
	}
	fclose(f);
	*out_size = (size_t)size;
	return data;
}

static void write_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(data, 1, size, f);
		fclose(f);
	}
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = UINT64_C(1469598103934665603);
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * UINT64_C(1099511628211);
	return h;
}

/*===----------------------------------------------------------------------===
 * Scenarios
 *===----------------------------------------------------------------------===*/

static void test_cache(const char *pocl_env)
{
	char dir[4200], file[4400], other[4400];
	const char *env[] = {pocl_env, NULL};
	struct wafer_plugin_option opts[2];
	struct report r;
	unsigned char *data;
	size_t size;
	uint32_t key_size;

	snprintf(dir, sizeof dir, "%s/cache", tmp);
	opts[0] = option("cache_dir", dir, "test");

	r = in_child(scenario, opts, 1, env);
	ok(r.ran && r.launch_status == WAFER_OK && r.correct,
	   "first process: add and relu run and are right%s%s",
	   r.error[0] ? ": " : "", r.error);
	is_int(r.source_builds, 1, "  ... it built the elementwise program "
	       "from source");
	is_int(count_files(dir, "", ".bin", file, sizeof file), 1,
	       "  ... and wrote one cache file");
	is_int(count_files(dir, ".tmp-", "", NULL, 0), 0,
	       "  ... leaving no temporary file behind");

	r = in_child(scenario, opts, 1, env);
	ok(r.ran && r.correct, "second process: right results");
	is_int(r.source_builds, 0,
	       "  ... and no clBuildProgram from source: the binary came "
	       "from the cache");
	like(r.log, "loaded elementwise", "  ... the log says so");

	/* One flipped byte in the binary. */
	data = read_file(file, &size);
	if (data) {
		data[size - size / 3] ^= 0x40;
		write_file(file, data, size);
		free(data);
	}
	r = in_child(scenario, opts, 1, env);
	ok(r.ran && r.correct, "a damaged cache file: still right results");
	is_int(r.source_builds, 1, "  ... built from source once");
	like(r.log, "checksum mismatch", "  ... the log says why the file "
	     "was ignored");
	r = in_child(scenario, opts, 1, env);
	is_int(r.source_builds, 0, "  ... and the rewritten file serves the "
	       "next process");

	/* Cut in half. */
	data = read_file(file, &size);
	if (data) {
		write_file(file, data, size / 2);
		free(data);
	}
	r = in_child(scenario, opts, 1, env);
	ok(r.ran && r.correct && r.source_builds == 1,
	   "a truncated cache file: rebuilt, right results");
	like(r.log, "truncated", "  ... named as truncated");

	/* Not a cache file at all. */
	write_file(file, "#!/bin/sh\necho hello\n", 21);
	r = in_child(scenario, opts, 1, env);
	ok(r.ran && r.correct && r.source_builds == 1,
	   "a foreign file in the cache's place: rebuilt");
	like(r.log, "not a wafer cache file", "  ... named as such");

	/* A well-formed file whose binary the driver refuses: header, key
	 * and checksum right, the binary garbage. */
	data = read_file(file, &size);
	if (data && size > 40) {
		memcpy(&key_size, data + 8, sizeof key_size);
		size_t start = 32 + key_size;
		for (size_t i = start; i < size; i++)
			data[i] = (unsigned char)(i * 2654435761u >> 13);
		uint64_t h = fnv1a(data + start, size - start);
		memcpy(data + 24, &h, sizeof h);
		write_file(file, data, size);
	}
	free(data);
	r = in_child(scenario, opts, 1, env);
	ok(r.ran && r.correct && r.source_builds == 1,
	   "a checksummed binary the driver refuses: rebuilt");
	like(r.log, "the driver refused it", "  ... the log says so");
	r = in_child(scenario, opts, 1, env);
	is_int(r.source_builds, 0, "  ... and cached again");

	/* Other build options: another key, another file. */
	opts[1] = option("build_options", "-DWAFER_TEST_KEY=1", "test");
	r = in_child(scenario, opts, 2, env);
	ok(r.ran && r.correct && r.source_builds == 1,
	   "other build options: built from source");
	is_int(count_files(dir, "", ".bin", NULL, 0), 2,
	       "  ... into a second file beside the first");
	r = in_child(scenario, opts, 2, env);
	is_int(r.source_builds, 0, "  ... which the next process uses");

	/* cache = off: nothing read, nothing written. */
	snprintf(other, sizeof other, "%s/off", tmp);
	opts[0] = option("cache_dir", other, "test");
	opts[1] = option("cache", "off", "test");
	r = in_child(scenario, opts, 2, env);
	ok(r.ran && r.correct && r.source_builds == 1,
	   "cache = off: built from source");
	ok(file_size(other) < 0, "  ... and no directory or file made");
}

/* Cuts the binary in cache file |file| (as written at |size| bytes in
 * |whole|) to |cut| bytes and gives it a matching length and checksum,
 * so that only the binary's own structure can tell. */
static void forge_cut(const char *file, const unsigned char *whole,
		      size_t size, size_t cut)
{
	uint32_t key_size;
	memcpy(&key_size, whole + 8, sizeof key_size);
	size_t start = 32 + key_size;
	if (start + cut > size)
		cut = size - start;
	unsigned char *data = malloc(start + cut);
	if (!data)
		return;
	memcpy(data, whole, start + cut);
	uint64_t length = cut, h = fnv1a(data + start, cut);
	memcpy(data + 16, &length, sizeof length);
	memcpy(data + 24, &h, sizeof h);
	write_file(file, data, start + cut);
	free(data);
}

/* A cached binary cut short, its length and checksum made to match: a
 * PoCL binary must never reach the driver (PoCL aborts on one), the build
 * runs again from source; another driver's goes to its driver, which
 * refuses it (built again) or takes it, and the program must run right.
 * For the catalogue's programs and for a caller's. */
static void test_cut_binaries(const char *pocl_env)
{
	static const struct {
		const char *what;
		void (*fn)(const struct wafer_plugin_option *, size_t,
			   struct report *);
		const char *compiled; /* the log's word for a build */
	} kinds[] = {
		{"the catalogue's elementwise program", scenario,
		 " from source in "},
		{"a caller's program", program_scenario, "program: compiled"},
	};
	const char *env[] = {pocl_env, NULL};

	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		char dir[4200], file[4400];
		struct wafer_plugin_option opt;
		struct report r;
		size_t size;

		snprintf(dir, sizeof dir, "%s/cut%zu", tmp, k);
		opt = option("cache_dir", dir, "test");
		r = in_child(kinds[k].fn, &opt, 1, env);
		if (!ok(r.ran && r.correct &&
				count_files(dir, "", ".bin", file,
					    sizeof file) == 1,
			"%s: built and cached%s%s", kinds[k].what,
			r.error[0] ? ": " : "", r.error))
			continue;
		unsigned char *whole = read_file(file, &size);
		if (!whole)
			continue;
		uint32_t key_size;
		memcpy(&key_size, whole + 8, sizeof key_size);
		size_t binary = size - 32 - key_size;
		/* wafer walks PoCL's binaries itself (binary_check.c); other
		 * drivers check theirs, and one may rightly take a binary
		 * cut short: NVIDIA's is PTX text, whole without its final
		 * NUL. */
		int pocl = binary >= 8 &&
			    memcmp(whole + size - binary, "poclbin", 8) == 0;
		const size_t cuts[] = {8, 40, 90, 1000, binary / 2,
				       binary - 1};
		for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
			if (cuts[c] >= binary)
				continue;
			forge_cut(file, whole, size, cuts[c]);
			r = in_child(kinds[k].fn, &opt, 1, env);
			ok(r.ran && r.correct,
			   "%s: its cached binary cut to %zu of %zu bytes "
			   "(checksum matching): no crash, it loads%s%s",
			   kinds[k].what, cuts[c], binary,
			   r.error[0] ? ": " : "", r.error);
			if (pocl)
				like(r.log, kinds[k].compiled,
				     "  ... built again from source");
			else /* "it loads" above is the check */
				diag("  ... %s by a driver that checks its "
				     "own binaries",
				     strstr(r.log, kinds[k].compiled)
					     ? "built again"
					     : "taken");
			like(r.log, ".bin", "  ... the log names the cache "
			     "file");
		}
		/* Whole again (the last rebuild rewrote it): served. */
		r = in_child(kinds[k].fn, &opt, 1, env);
		ok(r.ran && r.correct && !strstr(r.log, kinds[k].compiled),
		   "%s: the rewritten file serves the next process",
		   kinds[k].what);
		free(whole);
	}
}

/* Two processes building into an empty directory at once. */
static void test_concurrent(const char *pocl_env)
{
	char dir[4200];
	const char *env[] = {pocl_env, NULL};
	struct wafer_plugin_option opt;
	pid_t pids[2];
	int good = 1;

	snprintf(dir, sizeof dir, "%s/race", tmp);
	opt = option("cache_dir", dir, "test");
	for (int i = 0; i < 2; i++) {
		fflush(stdout);
		pids[i] = fork();
		if (pids[i] == 0) {
			struct report r;
			memset(&r, 0, sizeof r);
			putenv((char *)pocl_env);
			scenario(&opt, 1, &r);
			_exit(r.ran && r.correct ? 0 : 1);
		}
	}
	for (int i = 0; i < 2; i++) {
		int status = 1;
		waitpid(pids[i], &status, 0);
		good &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	ok(good, "two processes filling an empty cache at once both run");
	is_int(count_files(dir, "", ".bin", NULL, 0), 1,
	       "  ... one cache file results");
	is_int(count_files(dir, ".tmp-", "", NULL, 0), 0, "  ... no temporary "
	       "files remain");
	{
		struct report r = in_child(scenario, &opt, 1, env);
		is_int(r.source_builds, 0, "  ... and it is whole: the next "
		       "process builds nothing");
	}
}

/* Where the cache lives without cache_dir. */
static void test_location(const char *pocl_env)
{
	char xdg[4200], home[4200], want[4400], env1[4300], env2[4300];
	const char *with_xdg[] = {pocl_env, env1, NULL};
	const char *with_home[] = {pocl_env, "XDG_CACHE_HOME", env2, NULL};
	struct report r;

	snprintf(xdg, sizeof xdg, "%s/xdg", tmp);
	snprintf(home, sizeof home, "%s/home", tmp);
	snprintf(env1, sizeof env1, "XDG_CACHE_HOME=%s", xdg);
	snprintf(env2, sizeof env2, "HOME=%s", home);

	r = in_child(scenario, NULL, 0, with_xdg);
	snprintf(want, sizeof want, "%s/wafer/opencl", xdg);
	ok(r.ran && r.correct &&
		   count_files(want, "", ".bin", NULL, 0) == 1,
	   "default place: $XDG_CACHE_HOME/wafer/opencl");
	r = in_child(scenario, NULL, 0, with_home);
	snprintf(want, sizeof want, "%s/.cache/wafer/opencl", home);
	ok(r.ran && r.correct &&
		   count_files(want, "", ".bin", NULL, 0) == 1,
	   "without XDG_CACHE_HOME: $HOME/.cache/wafer/opencl");
}

static void test_build_failure(const char *pocl_env)
{
	char dir[4200];
	const char *env[] = {pocl_env, NULL};
	struct wafer_plugin_option opts[2];
	struct report r;

	snprintf(dir, sizeof dir, "%s/broken", tmp);
	opts[0] = option("cache_dir", dir, "test");
	/* Turns a function name of the shared prelude into a number: the
	 * kind of error a compiler reports in a few lines. */
	opts[1] = option("build_options", "-Dbf16_from_float=1", "test");
	r = in_child(scenario, opts, 2, env);
	ok(r.ran, "a program that does not compile: the device opens");
	is_int(r.launch_status, WAFER_ERROR_DEVICE,
	       "  ... the launch fails with WAFER_ERROR_DEVICE");
	like(r.error, "clBuildProgram(elementwise)",
	     "  ... naming the program");
	like(r.error, "CL_BUILD_PROGRAM_FAILURE (-11)",
	     "  ... and the OpenCL error");
	like(r.error, "build log: ", "  ... with the build log");
	like(r.error, "-Dbf16_from_float=1", "  ... and the options");
	is_int(r.again_status, WAFER_ERROR_DEVICE,
	       "  ... the next launch from that program fails too");
	ok(strcmp(r.error, r.again_error) == 0,
	   "  ... at once, with the same detail (no second compile)");
	like(r.log, "build log:", "  ... the whole log is logged");
	is_int(r.source_builds, 0, "  ... nothing was built");
	is_int(count_files(dir, "", ".bin", NULL, 0), 0,
	       "  ... and nothing cached");

	opts[1] = option("build_options", "-cl-no-such-option", "test");
	r = in_child(scenario, opts, 2, env);
	ok(r.launch_status == WAFER_ERROR_CONFIG ||
		   r.launch_status == WAFER_ERROR_DEVICE,
	   "an option the compiler does not know fails the launch (%d)",
	   r.launch_status);
	like(r.error, "-cl-no-such-option", "  ... naming it: %s", r.error);
}

static void test_no_platform(void)
{
	char empty[4200], env1[4300];
	const char *env[] = {env1, "OCL_ICD_FILENAMES", NULL};
	struct report r;

	snprintf(empty, sizeof empty, "%s/no-vendors", tmp);
	mkdir(empty, 0700);
	snprintf(env1, sizeof env1, "OCL_ICD_VENDORS=%s", empty);
	r = in_child(scenario, NULL, 0, env);
	ok(!r.ran && r.devices == 0, "no OpenCL platform: init succeeds, "
	   "zero devices");
	is_int(r.count_status, WAFER_ERROR_NO_DEVICE,
	       "  ... device_count says WAFER_ERROR_NO_DEVICE");
	like(r.error, "clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR (-1001)",
	     "  ... with the loader's reason: %s", r.error);
}

int main(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *builddir = tap_builddir();
	char pocl[4200] = "T_OPENCL_UNUSED=1", so[4200];
	struct report present, probe;

	/* The parent must not load the plugin: the ICD loader could read
	 * its vendors before a child sets OCL_ICD_VENDORS. */
	snprintf(so, sizeof so, "%s/../plugins/opencl/.libs/opencl.so",
		 builddir);
	/* This test is built only when configure builds the plugin. */
	if (file_size(so) < 0)
		bail_out("%s: configure built the OpenCL plugin, but it is not "
			 "there", so);
	snprintf(tmp, sizeof tmp, "%s/wafer-opencl-cache.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmp)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	if (!getenv("POCL_CACHE_DIR") && xdg && *xdg)
		snprintf(pocl, sizeof pocl, "POCL_CACHE_DIR=%s/pocl", xdg);

	test_no_platform();
	/* The rest needs a device: skipped only when the ICD loader finds
	 * none; with one present, the plugin must open and use it. */
	present = in_child(probe_devices, NULL, 0, NULL);
	if (present.devices == 0) {
		ok(1, "the cache, concurrency, location and build-log points "
		   "# SKIP no OpenCL device on this machine (%s)",
		   present.error);
	} else {
		probe = in_child(scenario, NULL, 0, NULL);
		ok(probe.ran && probe.correct, "the plugin opens and runs on "
		   "one of the %u device(s) the ICD loader lists: %s",
		   present.devices, probe.error);
		test_cache(pocl);
		test_cut_binaries(pocl);
		test_concurrent(pocl);
		test_location(pocl);
		test_build_failure(pocl);
	}
	tap_remove_tree(tmp);
	done_testing();
	return exit_status();
}
