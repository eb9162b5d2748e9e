/* wafer — SPDX-License-Identifier: MIT
 *
 * loader.c: the plugin loader and the runtime, on the test plugins of
 * t/plugins/ — each bad plugin's reason, the good ones accepted with path,
 * version and ABI, backend priority and the default device, selectors,
 * device descriptions and derived capability bits, configuration errors,
 * and device reference counting. Reads no configuration file unless a
 * test asks for one: backend and plugin_path come in as API options. */
#include "build-config.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <wafer/plugin.h>
#include <wafer/interop.h>
#include <wafer/program.h>
#include <wafer/wafer.h>

#include "lib/config.h"
#include "lib/loader.h"
#include "lib/log.h"
#include "lib/runtime.h"
#include "t/plugins/common.h"
#include "t/client_util.h"
#include "t/tap.h"
#include "t/log_capture.h"

/* $T_BUILDDIR/plugins/.libs (the modules) and $T_BUILDDIR/plugins (the
 * not-a-plugin.so made at check time). */
static char plugin_path[8192];
static char libs_dir[4096];

#define MAX_OPTIONS 8

/* Opens a runtime on |backends| from the test plugin directories, with
 * up to MAX_OPTIONS - 2 more options, reading no files unless
 * |read_files|. */
static wafer_status open_runtime_ex(const char *backends,
				    const wafer_option *extra, size_t n_extra,
				    uint32_t flags, int read_files,
				    wafer_runtime **out)
{
	wafer_option options[MAX_OPTIONS] = {
		{"core", "backend", backends},
		{"core", "plugin_path", plugin_path},
	};
	size_t n = 2;

	for (size_t i = 0; i < n_extra && n < MAX_OPTIONS; i++)
		options[n++] = extra[i];
	wafer_runtime_options ro = {
		.struct_size = sizeof ro,
		.options = options,
		.option_count = n,
		.flags = flags | (read_files ? 0 : WAFER_RUNTIME_NO_CONFIG_FILES),
	};
	return wafer_runtime_open(&ro, out);
}

static wafer_runtime *open_runtime(const char *backends,
				   const wafer_option *extra, size_t n_extra)
{
	wafer_runtime *rt = NULL;
	wafer_status status =
		open_runtime_ex(backends, extra, n_extra, 0, 0, &rt);
	if (status != WAFER_OK) {
		diag("runtime_open(%s): %s: %s", backends,
		     wafer_status_string(status), wafer_last_error());
		exit(1);
	}
	return rt;
}

/* The report of plugin |name|; an all-zero report when there is none. */
static wafer_plugin_report report_of(const wafer_runtime *rt, const char *name)
{
	for (size_t i = 0; i < wafer_runtime_plugin_count(rt); i++) {
		wafer_plugin_report r = {.struct_size = sizeof r};
		if (wafer_runtime_plugin(rt, i, &r) == WAFER_OK &&
		    strcmp(r.name, name) == 0)
			return r;
	}
	return (wafer_plugin_report){0};
}

static wafer_device_desc device_at(const wafer_runtime *rt, size_t index)
{
	wafer_device_desc d = {.struct_size = sizeof d};
	if (wafer_runtime_device(rt, index, &d) != WAFER_OK)
		return (wafer_device_desc){0};
	return d;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = s ? strlen(s) : 0, m = strlen(suffix);
	return s && n >= m && strcmp(s + n - m, suffix) == 0;
}

/*===----------------------------------------------------------------------===*/

static void test_bad_plugins(void)
{
	char want[sizeof plugin_path + 256];
	wafer_runtime *rt = open_runtime(
		"abi_major, no_symbol, init_fails, no_devices, "
		"missing_required, null_query, old_struct, not-a-plugin, "
		"nosuch, good",
		NULL, 0);
	wafer_plugin_report r;

	is_int(wafer_runtime_plugin_count(rt), 10, "bad: every listed plugin "
	       "has a report");

	r = report_of(rt, "abi_major");
	is_str(r.reason, "ABI major 999, core speaks 1", "abi_major: reason");
	ok(!r.accepted, "abi_major: not accepted");
	ok(r.abi_major == 999 && r.abi_minor == 7,
	   "abi_major: declared ABI 999.7 reported (%u.%u)", r.abi_major,
	   r.abi_minor);
	ok(ends_with(r.path, "/abi_major.so") && r.path[0] == '/',
	   "abi_major: resolved absolute path %s", r.path);
	ok(r.version == NULL, "abi_major: version unknown across majors");

	r = report_of(rt, "no_symbol");
	is_str(r.reason, "missing wafer_plugin_query", "no_symbol: reason");
	ok(ends_with(r.path, "/no_symbol.so"), "no_symbol: path %s", r.path);

	r = report_of(rt, "init_fails");
	is_str(r.reason,
	       "init failed: WAFER_ERROR_DEVICE: cannot reach the widget "
	       "(code 42)",
	       "init_fails: reason carries status and set_error detail");
	is_str(r.version, "1.0", "init_fails: version known");

	r = report_of(rt, "no_devices");
	is_str(r.reason, "no devices: fake driver missing",
	       "no_devices: reason from device_count");
	is_int(r.device_count, 0, "no_devices: 0 devices");

	r = report_of(rt, "missing_required");
	is_str(r.reason, "missing required entry server.launch",
	       "missing_required: names the entry");

	r = report_of(rt, "null_query");
	is_str(r.reason, "query returned NULL: no descriptor for ABI major 1",
	       "null_query: reason carries set_error detail");

	r = report_of(rt, "old_struct");
	snprintf(want, sizeof want,
		 "struct_size %zu too small for required entry device_open",
		 offsetof(struct wafer_plugin, device_open));
	is_str(r.reason, want, "old_struct: struct_size too small, names entry");

	r = report_of(rt, "not-a-plugin");
	is_str(r.reason, "not loaded: not an ELF file",
	       "not-a-plugin: checked before dlopen");
	ok(ends_with(r.path, "/not-a-plugin.so"), "not-a-plugin: path %s",
	   r.path);

	r = report_of(rt, "nosuch");
	snprintf(want, sizeof want, "not found in: %s", plugin_path);
	is_str(r.reason, want, "nosuch: not found in: every directory");
	ok(r.path == NULL && r.version == NULL && r.abi_major == 0,
	   "nosuch: no path, version or ABI");

	r = report_of(rt, "good");
	ok(r.accepted, "good: accepted");
	is_str(r.reason, "", "good: empty reason");
	snprintf(want, sizeof want, "%s/good.so", libs_dir);
	is_str(r.path, want, "good: resolved path");
	is_str(r.version, "1.2.3", "good: version");
	ok(r.abi_major == WAFER_PLUGIN_ABI_MAJOR &&
		   r.abi_minor == WAFER_PLUGIN_ABI_MINOR,
	   "good: ABI %u.%u", r.abi_major, r.abi_minor);
	is_str(r.description, "test plugin: one host-memory device",
	       "good: description");
	is_int(r.device_count, 1, "good: 1 device");

	is_int(wafer_runtime_device_count(rt), 1, "bad: only good's device");
	wafer_device_desc d = device_at(rt, 0);
	ok(d.backend && strcmp(d.backend, "good") == 0 && d.index == 0,
	   "bad: device 0 is good:0");

	struct wafer_runtime_device *dev = NULL;
	is_status(wafer__runtime_acquire_device(rt, "default", &dev), WAFER_OK,
		  "bad: default skips every bad plugin");
	ok(dev && strcmp(dev->backend, "good") == 0, "bad: default is good");
	wafer__runtime_release_device(rt, dev);

	is_status(wafer__runtime_acquire_device(rt, "init_fails", &dev),
		  WAFER_ERROR_NO_DEVICE, "bad: selecting a rejected backend");
	ok(dev == NULL, "bad: out_device NULL on failure");
	like(wafer_last_error(),
	     "no device matches 'init_fails': init_fails: init failed: "
	     "WAFER_ERROR_DEVICE",
	     "NO_DEVICE detail: the named backend's reason");
	ok(!strstr(wafer_last_error(), "abi_major"),
	   "NO_DEVICE detail: only the named backend's");
	wafer__runtime_acquire_device(rt, "goood", &dev);
	is_str(wafer_last_error(),
	       "no device matches 'goood': no backend 'goood' (did you mean "
	       "good?)",
	       "NO_DEVICE detail: a backend name a typo away");
	wafer_runtime_close(rt);

	/* The same search repeated is not spelled out again. */
	rt = open_runtime("nosuch, nosuch2, nodev", NULL, 0);
	wafer__runtime_acquire_device(rt, "default", &dev);
	snprintf(want, sizeof want,
		 "no device matches 'default': nosuch: not found in: %s; "
		 "nosuch2: not found (same path); nodev: not found (same path)",
		 plugin_path);
	is_str(wafer_last_error(), want,
	       "NO_DEVICE detail: a repeated search is abbreviated");
	wafer_runtime_close(rt);
}

/* wafer__loader_load directly: statuses and the thread's detail. */
/* Copies the first |size| bytes of |from| to |to|. */
static void copy_prefix(const char *from, const char *to, size_t size)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	char *buf = calloc(1, size);
	size_t got = in && buf ? fread(buf, 1, size, in) : 0;

	if (out && buf)
		fwrite(buf, 1, got, out);
	if (in)
		fclose(in);
	if (out)
		fclose(out);
	free(buf);
}

/* Files dlopen must never see: each once killed (SIGBUS) or hung every
 * wafer program with it in its plugin path. Each is refused with the
 * file named and the reason. */
static void test_broken_files(struct wafer__config *config)
{
	char dir[] = "/tmp/wafer-loader-XXXXXX", path[4200], good[4200];
	struct wafer__loaded_plugin *p = NULL;
	static const struct {
		const char *name;
		const char *reason;
		wafer_status status;
	} cases[] = {
		{"truncated", "not loaded: truncated: 4096 bytes, ", WAFER_ERROR_PLUGIN},
		{"header", "not loaded: truncated: 20 bytes, shorter than an ELF header",
		 WAFER_ERROR_PLUGIN},
		{"fifo", "not loaded: not a regular file", WAFER_ERROR_PLUGIN},
		{"loop", "cannot use ", WAFER_ERROR_PLUGIN},
		{"directory", "not loaded: not a regular file", WAFER_ERROR_PLUGIN},
	};

	if (!mkdtemp(dir)) {
		ok(0, "files that are not plugins: mkdtemp %s: %s", dir,
		   strerror(errno));
		return;
	}
	snprintf(good, sizeof good, "%s/good.so", libs_dir);
	snprintf(path, sizeof path, "%s/truncated.so", dir);
	copy_prefix(good, path, 4096);
	snprintf(path, sizeof path, "%s/header.so", dir);
	copy_prefix(good, path, 20);
	snprintf(path, sizeof path, "%s/fifo.so", dir);
	mkfifo(path, 0600);
	snprintf(path, sizeof path, "%s/loop.so", dir);
	symlink("loop.so", path);
	snprintf(path, sizeof path, "%s/directory.so", dir);
	mkdir(path, 0700);

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(path, sizeof path, "%s/%s.so", dir, cases[i].name);
		is_status(wafer__loader_load(NULL, path, &p), cases[i].status,
			  "%s.so by path: refused", cases[i].name);
		ok(p && p->reason &&
			   strncmp(p->reason, cases[i].reason,
				   strlen(cases[i].reason)) == 0,
		   "%s.so: '%s...' (%s)", cases[i].name, cases[i].reason,
		   p && p->reason ? p->reason : "");
		ok(strstr(wafer_last_error(), cases[i].name) != NULL,
		   "%s.so: the detail names the file", cases[i].name);
		wafer__loader_unload(p);
	}
	/* And through the search path: the loop is not "not found". */
	wafer__config_set(config, "core", "plugin_path", dir, "test");
	wafer__loader_load(config, "loop", &p);
	ok(p && p->reason && strstr(p->reason, "loop.so") &&
		   strstr(p->reason, strerror(ELOOP)),
	   "loop by name: '%s'", p && p->reason ? p->reason : "");
	wafer__loader_unload(p);
	wafer__loader_load(config, "fifo", &p);
	ok(p && p->reason &&
		   strcmp(p->reason, "not loaded: not a regular file") == 0,
	   "fifo by name: refused without blocking");
	wafer__loader_unload(p);
	wafer__config_set(config, "core", "plugin_path", plugin_path, "test");

	tap_remove_tree(dir);
}

/* Loads the test plugin NAME.so from libs_dir with wafer__loader_load,
 * keeping what it logged in |text|. */
static wafer_status load_logged(const char *name,
				struct wafer__loaded_plugin **p, char *text,
				size_t size)
{
	char path[8192];
	struct log_capture cap;
	wafer_status st = WAFER_ERROR_INTERNAL;

	snprintf(path, sizeof path, "%s/%s.so", libs_dir, name);
	*p = NULL;
	if (log_capture_begin(&cap)) {
		st = wafer__loader_load(NULL, path, p);
		log_capture_end(&cap, text, size);
	}
	return st;
}

static void test_loader_direct(void)
{
	struct wafer__config *config = NULL;
	struct wafer__loaded_plugin *p = NULL;
	char path[8192];
	static const struct {
		const char *name;
		wafer_status status;
	} cases[] = {
		{"nosuch", WAFER_ERROR_NOT_FOUND},
		{"not-a-plugin", WAFER_ERROR_PLUGIN},
		{"unresolved", WAFER_ERROR_PLUGIN},
		{"no_symbol", WAFER_ERROR_PLUGIN},
		{"null_query", WAFER_ERROR_PLUGIN},
		{"abi_major", WAFER_ERROR_ABI_MISMATCH},
		{"missing_required", WAFER_ERROR_PLUGIN},
		{"old_struct", WAFER_ERROR_PLUGIN},
		{"init_fails", WAFER_ERROR_PLUGIN},
		{"no_devices", WAFER_ERROR_NO_DEVICE},
	};

	if (wafer__config_create(&config) != WAFER_OK ||
	    wafer__config_set(config, "core", "plugin_path", plugin_path,
			      "test") != WAFER_OK) {
		diag("config: %s", wafer_last_error());
		exit(1);
	}
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		wafer_status status = wafer__loader_load(config, cases[i].name, &p);
		is_status(status, cases[i].status, "load %s: status",
			  cases[i].name);
		ok(p && !p->accepted && !p->dl && !p->plugin,
		   "load %s: record kept, nothing live", cases[i].name);
		char prefix[128];
		snprintf(prefix, sizeof prefix, "%s", cases[i].name);
		ok(strncmp(wafer_last_error(), prefix, strlen(prefix)) == 0 &&
			   p && p->reason && strstr(wafer_last_error(), p->reason),
		   "load %s: detail names plugin and reason (%s)",
		   cases[i].name, wafer_last_error());
		wafer__loader_unload(p);
	}

	wafer__loader_load(config, "unresolved", &p);
	ok(p && p->reason && strncmp(p->reason, "dlopen failed: ", 15) == 0 &&
		   strstr(p->reason, "wafer_test_defined_nowhere"),
	   "unresolved: dlopen failed, naming the symbol (%s)",
	   p && p->reason ? p->reason : "");
	wafer__loader_unload(p);

	test_broken_files(config);

	is_status(wafer__loader_load(config, "good", &p), WAFER_OK,
		  "load good by name");
	ok(p && p->accepted && p->dl && p->plugin == &p->desc &&
		   p->device_count == 1,
	   "good: live record");
	ok(p && p->plugin->storage == &p->storage &&
		   p->plugin->server == &p->server &&
		   p->storage.alloc_async == NULL && p->server.timer_begin == NULL,
	   "good: normalised tables, optional entries NULL");
	struct wafer_device_info info;
	is_status(wafer__loader_device_info(p, 0, &info), WAFER_OK,
		  "good: device_info");
	ok(info.struct_size == sizeof info && info.alloc_alignment == 64,
	   "good: device_info filled");
	is_status(wafer__loader_device_info(p, 1, &info),
		  WAFER_ERROR_INVALID_ARGUMENT, "good: device_info index 1");
	wafer__loader_unload(p);

	/* A path is opened as given; the descriptor names the backend. */
	snprintf(path, sizeof path, "%s/full.so", libs_dir);
	is_status(wafer__loader_load(NULL, path, &p), WAFER_OK, "load by path");
	ok(p && strcmp(p->name, "full") == 0 && p->device_count == 2,
	   "by path: name from the descriptor");
	ok(p && p->storage.alloc_async && p->server.timer_end,
	   "full: optional entries kept");
	is_int(p ? wafer__loader_derived_caps(p, 4096) : 0,
	       WAFER_CAP_STREAM_ORDERED_ALLOC | WAFER_CAP_VIRTUAL_MEMORY |
		       WAFER_CAP_DEVICE_TIMERS | WAFER_CAP_PROGRAMS,
	       "full: every derived bit; never pinned-host (ABI 1.1)");
	is_int(p ? wafer__loader_derived_caps(p, 0) &
			   WAFER_CAP_VIRTUAL_MEMORY
		 : 1,
	       0, "full: no virtual memory without a granularity");
	wafer__loader_unload(p);

	snprintf(path, sizeof path, "%s/full.so", libs_dir);
	is_status(wafer__loader_load(NULL, path, &p), WAFER_OK, "load full again");
	ok(p && p->storage.native && p->storage.import && p->storage.forget &&
		   p->server.queue_native && p->server.queue_wrap,
	   "full: interop entries (ABI 1.3) kept");
	wafer__loader_unload(p);

	/* Interop entries come in groups: part of one is none of it. */
	{
		char text[8192] = "";
		wafer_status st = load_logged("half_interop", &p, text,
					      sizeof text);

		is_status(st, WAFER_OK, "half_interop: loads");
		ok(p && !p->storage.native && !p->storage.import &&
			   !p->storage.forget && !p->server.queue_native &&
			   !p->server.queue_wrap && p->storage.copy,
		   "half_interop: the partial interop group dropped, the "
		   "rest kept");
		like(text, "interop entries come together; it has native "
		     "import queue_wrap but not forget queue_native: interop "
		     "off",
		     "half_interop: one warning names the five interop "
		     "entries, storage's and server's");
		ok(p && !p->server.program_formats && !p->server.program_load &&
			   !p->server.program_kernel &&
			   !p->server.program_release,
		   "half_interop: three of four program entries are none");
		like(text, "program entries come together; it has "
		     "program_formats program_load program_kernel but not "
		     "program_release: programs off",
		     "half_interop: a warning names the program entries");
		ok(p && p->warnings &&
			   strncmp(p->warnings, "program entries come", 20) == 0 &&
			   strstr(p->warnings, "\ninterop entries come") &&
			   strstr(p->warnings, "\ncomm entries come"),
		   "half_interop: the warnings are kept for the report, one "
		   "a line");
		ok(p && !p->server.comm_id && !p->server.comm_open &&
			   !p->server.comm_close && !p->server.comm_run,
		   "half_interop: three of four comm entries are none");
		like(text, "comm entries come together; it has comm_id "
		     "comm_open comm_close but not comm_run: collectives off",
		     "half_interop: a warning names the comm entries");
		ok(p && !(wafer__loader_derived_caps(p, 0) &
			  (WAFER_CAP_COLLECTIVES | WAFER_CAP_PEER_COPY)),
		   "half_interop: no collectives or peer copy capability");
		wafer__loader_unload(p);
	}

	/* A minor newer than the core's loads, with a warning. */
	{
		char text[4096] = "";
		wafer_status st = load_logged("new_minor", &p, text,
					      sizeof text);
		char want[128];

		snprintf(want, sizeof want,
			 "built for ABI 1.99, newer than this core's 1.%u",
			 (unsigned)WAFER_PLUGIN_ABI_MINOR);
		is_status(st, WAFER_OK, "new_minor: ABI 1.99 loads");
		like(text, want, "new_minor: a warning names both minors");
		ok(p && p->warnings && strstr(p->warnings, want),
		   "new_minor: and is kept for the report");
		wafer__loader_unload(p);
	}

	snprintf(path, sizeof path, "%s/old_minor.so", libs_dir);
	is_status(wafer__loader_load(NULL, path, &p), WAFER_OK,
		  "old minor tables load");
	ok(p && !p->storage.alloc_async && !p->storage.vm_reserve &&
		   !p->storage.host_alloc && !p->server.timer_begin &&
		   !p->storage.native && !p->server.queue_native,
	   "old minor: entries past struct_size read as NULL");
	ok(p && p->storage.struct_size == sizeof p->storage &&
		   p->plugin->storage->copy && p->plugin->server->sync,
	   "old minor: required entries kept, struct_size the core's");
	wafer__loader_unload(p);

	is_status(wafer__loader_load(NULL, "/nonexistent/dir/x.so", &p),
		  WAFER_ERROR_NOT_FOUND, "missing path");
	ok(p && strcmp(p->name, "x") == 0 && p->reason &&
		   strcmp(p->reason, "not found: /nonexistent/dir/x.so") == 0,
	   "missing path: 'not found: <path>' under the file's name");
	wafer__loader_unload(p);

	is_status(wafer__loader_load(NULL, "nosuch", &p), WAFER_ERROR_NOT_FOUND,
		  "no config: built-in directory");
	ok(p && p->reason && strcmp(p->reason, "not found in: " WAFER_PLUGINDIR) == 0,
	   "no config: searched " WAFER_PLUGINDIR);
	wafer__loader_unload(p);

	/* An empty element stands for the built-in directory. */
	wafer__config_set(config, "core", "plugin_path", "/nonexistent:", "test");
	wafer__loader_load(config, "nosuch", &p);
	ok(p && p->reason &&
		   strcmp(p->reason,
			  "not found in: /nonexistent:" WAFER_PLUGINDIR) == 0,
	   "empty path element: built-in directory (%s)",
	   p ? p->reason : "");
	wafer__loader_unload(p);

	is_status(wafer__loader_load(config, "", &p),
		  WAFER_ERROR_INVALID_ARGUMENT, "empty name");
	ok(p == NULL, "empty name: no record");
	wafer__loader_unload(NULL);
	wafer__config_destroy(config);
}

static void test_priority(void)
{
	wafer_runtime *rt = open_runtime("no_devices, full, good", NULL, 0);
	struct wafer_runtime_device *dev = NULL;
	wafer_device_desc d;

	is_int(wafer_runtime_device_count(rt), 3, "priority: 3 devices");
	d = device_at(rt, 0);
	ok(d.backend && !strcmp(d.backend, "full") && d.index == 0,
	   "priority: list starts with full:0");
	d = device_at(rt, 1);
	ok(d.backend && !strcmp(d.backend, "full") && d.index == 1,
	   "priority: then full:1");
	d = device_at(rt, 2);
	ok(d.backend && !strcmp(d.backend, "good") && d.index == 0,
	   "priority: then good:0");
	is_status(wafer__runtime_acquire_device(rt, "default", &dev), WAFER_OK,
		  "priority: default");
	ok(dev && !strcmp(dev->backend, "full") && dev->index == 0,
	   "priority: first backend with a device wins");
	wafer__runtime_release_device(rt, dev);
	wafer_runtime_close(rt);

	rt = open_runtime("good, full", NULL, 0);
	is_status(wafer__runtime_acquire_device(rt, "default", &dev), WAFER_OK,
		  "priority reversed: default");
	ok(dev && !strcmp(dev->backend, "good"), "priority reversed: good");
	wafer__runtime_release_device(rt, dev);
	d = device_at(rt, 1);
	ok(d.backend && !strcmp(d.backend, "full") && d.index == 0,
	   "priority reversed: full:0 after good:0");
	wafer_runtime_close(rt);

	rt = open_runtime("good", NULL, 0);
	ok(wafer_runtime_plugin_count(rt) == 1 &&
		   report_of(rt, "full").name == NULL,
	   "a plugin found but not listed is not loaded");
	wafer_runtime_close(rt);

	rt = open_runtime("good, good", NULL, 0);
	is_int(wafer_runtime_plugin_count(rt), 1, "a name listed twice loads once");
	wafer_runtime_close(rt);

	rt = open_runtime("", NULL, 0);
	is_int(wafer_runtime_plugin_count(rt), 0, "empty backend list");
	is_status(wafer__runtime_acquire_device(rt, "default", &dev),
		  WAFER_ERROR_NO_DEVICE, "empty backend list: no default");
	like(wafer_last_error(), "lists no backends",
	     "empty backend list: detail says so");
	wafer_runtime_close(rt);

	rt = open_runtime("nosuch, no_devices", NULL, 0);
	is_status(wafer__runtime_acquire_device(rt, "default", &dev),
		  WAFER_ERROR_NO_DEVICE, "no accepted backend: NO_DEVICE");
	like(wafer_last_error(),
	     "no device matches 'default': nosuch: not found in: ",
	     "no accepted backend: first reason");
	like(wafer_last_error(), "; no_devices: no devices: fake driver missing",
	     "no accepted backend: second reason");
	wafer_runtime_close(rt);
}

static void test_selectors(void)
{
	wafer_runtime *rt = open_runtime("no_devices, full, good", NULL, 0);
	static const struct {
		const char *selector, *backend;
		uint32_t index;
	} good[] = {
		{"default", "full", 0}, {"full", "full", 0},
		{"full:1", "full", 1},  {"good:0", "good", 0},
		{"full:01", "full", 1}, {"good", "good", 0},
	};
	static const char *const bad[] = {
		"", "full:", "full:x", "full:-1", ":0", "full:1:2", "full:+1",
		" full", "full ", "full:1x", "full:99999999999", "Default!",
	};
	struct wafer_runtime_device *dev;

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		dev = NULL;
		wafer_status status = wafer__runtime_acquire_device(
			rt, good[i].selector, &dev);
		ok(status == WAFER_OK && dev &&
			   !strcmp(dev->backend, good[i].backend) &&
			   dev->index == good[i].index,
		   "selector '%s' -> %s:%u", good[i].selector,
		   good[i].backend, good[i].index);
		wafer__runtime_release_device(rt, dev);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		dev = (void *)1;
		is_status(wafer__runtime_acquire_device(rt, bad[i], &dev),
			  WAFER_ERROR_INVALID_ARGUMENT, "bad selector '%s'",
			  bad[i]);
		ok(dev == NULL, "bad selector '%s': out NULL", bad[i]);
	}
	like(wafer_last_error(), "expected 'default', '<backend>' or",
	     "bad selector: detail says what is expected");

	is_status(wafer__runtime_acquire_device(rt, NULL, &dev),
		  WAFER_ERROR_INVALID_ARGUMENT, "NULL selector");
	is_status(wafer__runtime_acquire_device(NULL, "default", &dev),
		  WAFER_ERROR_INVALID_ARGUMENT, "NULL runtime");
	is_status(wafer__runtime_acquire_device(rt, "default", NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "NULL out_device");

	is_status(wafer__runtime_acquire_device(rt, "full:2", &dev),
		  WAFER_ERROR_NO_DEVICE, "full:2: index past the devices");
	is_str(wafer_last_error(),
	       "no device matches 'full:2': full has 2 devices (full:0 to "
	       "full:1)",
	       "full:2: detail says which devices there are");
	is_status(wafer__runtime_acquire_device(rt, "good:1", &dev),
		  WAFER_ERROR_NO_DEVICE, "good:1: index past the one device");
	is_str(wafer_last_error(),
	       "no device matches 'good:1': good has 1 device (good:0)",
	       "good:1: detail names the one device");
	is_status(wafer__runtime_acquire_device(rt, "no_devices", &dev),
		  WAFER_ERROR_NO_DEVICE, "backend without devices");
	is_status(wafer__runtime_acquire_device(rt, "cuda", &dev),
		  WAFER_ERROR_NO_DEVICE, "backend not listed");
	is_str(wafer_last_error(),
	       "no device matches 'cuda': no backend 'cuda' in [core] backend "
	       "(no_devices, full, good)",
	       "backend not listed: detail says so and lists the backends");
	wafer_runtime_close(rt);
}

/* One point: the good plugin, given [good] |key| = |value|, is not used,
 * for |reason|. */
static void good_refused(const char *key, const char *value,
			 const char *reason, const char *what)
{
	wafer_option o[] = {{"good", key, value}};
	wafer_runtime *rt = open_runtime("good", o, 1);

	is_str(report_of(rt, "good").reason, reason, "%s", what);
	wafer_runtime_close(rt);
}

static void test_devices(void)
{
	const uint64_t derived = WAFER_CAP_STREAM_ORDERED_ALLOC |
				 WAFER_CAP_VIRTUAL_MEMORY |
				 WAFER_CAP_DEVICE_TIMERS |
				 WAFER_CAP_PROGRAMS; /* never PINNED_HOST */
	const uint64_t base = WAFER_CAP_HOST_MEMORY | WAFER_CAP_F64;
	wafer_runtime *rt = open_runtime("good, full, old_minor", NULL, 0);
	wafer_device_desc d;

	d = device_at(rt, 0);
	is_str(d.name, "good device 0", "good:0 name");
	ok(d.memory_bytes == (UINT64_C(1) << 30), "good:0 memory 1 GiB");
	is_int((long long)d.capabilities, (long long)base,
	       "good:0: NULL optional entries, no derived bits");
	d = device_at(rt, 2);
	ok(d.backend && !strcmp(d.backend, "full") && d.index == 1,
	   "full:1 listed third");
	is_int((long long)d.capabilities, (long long)(base | derived),
	       "full:1: every derived bit");
	d = device_at(rt, 3);
	is_int((long long)d.capabilities, (long long)base,
	       "old_minor:0: entries past struct_size give no bits");

	/* struct_size: only the fields the caller has are written. */
	wafer_device_desc small;
	memset(&small, 0xab, sizeof small);
	small.struct_size = offsetof(wafer_device_desc, name);
	is_status(wafer_runtime_device(rt, 0, &small), WAFER_OK,
		  "short desc: OK");
	ok(small.struct_size == offsetof(wafer_device_desc, name) &&
		   !strcmp(small.backend, "good") && small.index == 0,
	   "short desc: leading fields filled");
	ok(small.memory_bytes == UINT64_C(0xabababababababab),
	   "short desc: fields past struct_size untouched");
	d = (wafer_device_desc){0};
	is_status(wafer_runtime_device(rt, 0, &d), WAFER_ERROR_INVALID_ARGUMENT,
		  "desc with struct_size 0");
	d = (wafer_device_desc){.struct_size = sizeof d, .name = "stale"};
	is_status(wafer_runtime_device(rt, 4, &d), WAFER_ERROR_OUT_OF_RANGE,
		  "device index past the end");
	ok(d.name == NULL && d.backend == NULL, "past the end: desc cleared");
	wafer_plugin_report r = {.struct_size = sizeof r};
	is_status(wafer_runtime_plugin(rt, 3, &r), WAFER_ERROR_OUT_OF_RANGE,
		  "plugin index past the end");
	wafer_config_source s = {.struct_size = sizeof s};
	is_status(wafer_runtime_config_source(rt, 99, &s),
		  WAFER_ERROR_OUT_OF_RANGE, "source index past the end");
	wafer_runtime_close(rt);

	/* Bits the plugin claims but the core derives are replaced. */
	char caps[32];
	snprintf(caps, sizeof caps, "%llu",
		 (unsigned long long)(WAFER_CAP_HOST_MEMORY |
				      WAFER_CAP_DEVICE_TIMERS |
				      WAFER_CAP_VIRTUAL_MEMORY));
	wafer_option claim[] = {{"good", "caps", caps}};
	rt = open_runtime("good", claim, 1);
	d = device_at(rt, 0);
	is_int((long long)d.capabilities, (long long)WAFER_CAP_HOST_MEMORY,
	       "claimed derived bits without the entries are dropped");
	wafer_runtime_close(rt);

	wafer_option no_vm[] = {{"full", "vm_granularity", "0"}};
	rt = open_runtime("full", no_vm, 1);
	d = device_at(rt, 0);
	is_int((long long)d.capabilities,
	       (long long)(base | (derived & ~WAFER_CAP_VIRTUAL_MEMORY)),
	       "vm entries without a granularity: no virtual-memory bit");
	wafer_runtime_close(rt);

	/* The plugin's own section arrives as options with origins. */
	wafer_option named[] = {{"good", "name", "Test Dev"},
				{"good", "memory", "1048576"},
				{"full", "name", "not for good"}};
	rt = open_runtime("good", named, 3);
	d = device_at(rt, 0);
	is_str(d.name, "Test Dev [options]", "[good] name reached the plugin "
	       "with its origin");
	ok(d.memory_bytes == 1048576, "[good] memory reached the plugin");
	wafer_runtime_close(rt);

	good_refused("devices", "0", "no devices: device_count returned 0",
		     "device_count 0 without a reason");
	good_refused("bogus", "1",
		     "init failed: WAFER_ERROR_CONFIG: unknown option bogus "
		     "(options)",
		     "plugin rejects an unknown option of its section");
}

/*===----------------------------------------------------------------------===*/

struct thread_arg {
	wafer_runtime *rt;
	int failures;
};

static void *acquire_loop(void *p)
{
	struct thread_arg *arg = p;
	for (int i = 0; i < 2000; i++) {
		struct wafer_runtime_device *dev = NULL;
		if (wafer__runtime_acquire_device(arg->rt, "full:1", &dev) !=
			    WAFER_OK ||
		    !dev->device) {
			arg->failures++;
			continue;
		}
		wafer__runtime_release_device(arg->rt, dev);
	}
	return NULL;
}

static void test_refcount(void)
{
	wafer_runtime *rt = open_runtime("full, good", NULL, 0);
	struct wafer_runtime_device *a = NULL, *b = NULL;
	struct tp_device *td;

	is_status(wafer__runtime_acquire_device(rt, "good", &a), WAFER_OK,
		  "acquire good");
	if (!a) {
		wafer_runtime_close(rt);
		return;
	}
	td = a->device;
	ok(td && td->open_count == 1 && td->close_count == 0,
	   "first acquire opens the device");
	ok(a->kernel_count == 2 && !strcmp(a->kernels[0].op, "fill") &&
		   !strcmp(a->kernels[1].op, "add"),
	   "kernel table from device_kernels");
	ok(a->info.struct_size == sizeof a->info &&
		   a->info.alloc_alignment == 64 &&
		   !strcmp(a->info.name, "good device 0"),
	   "device_info at open");
	ok(a->plugin && !strcmp(a->plugin->name, "good") &&
		   a->plugin->storage->alloc_async == NULL,
	   "descriptor with its tables");

	is_status(wafer__runtime_acquire_device(rt, "good:0", &b), WAFER_OK,
		  "acquire good:0 again");
	ok(b == a && td->open_count == 1, "second acquire shares the device");

	wafer_device_desc desc;
	wafer__runtime_describe_device(a, &desc);
	ok(desc.struct_size == sizeof desc && !strcmp(desc.backend, "good") &&
		   desc.index == 0 && !strcmp(desc.name, "good device 0") &&
		   desc.capabilities ==
			   (WAFER_CAP_HOST_MEMORY | WAFER_CAP_F64),
	   "describe_device");

	/* The plugin's tables work through the descriptor. */
	const struct wafer_plugin *pl = a->plugin;
	void *queue = NULL;
	wafer_resource res = 0;
	float out[16] = {0};
	struct wafer_fill_params fill = {.count = 16, .value = 3.5};
	struct wafer_binding binding = {sizeof binding, 0, 0, sizeof out};
	int launched = pl->server->queue_create(a->device, &queue) == WAFER_OK &&
		       pl->storage->alloc(a->device, sizeof out, &res) == WAFER_OK;
	binding.resource = res;
	struct wafer_launch launch = {
		.struct_size = sizeof launch,
		.kernel = &a->kernels[0],
		.bindings = &binding,
		.binding_count = 1,
		.params = &fill,
		.params_size = sizeof fill,
		.global = {16, 1, 1},
	};
	launched = launched &&
		   pl->server->launch(a->device, queue, &launch) == WAFER_OK &&
		   pl->server->sync(a->device, queue) == WAFER_OK &&
		   pl->storage->copy_out(a->device, queue, res, 0, out,
					 sizeof out) == WAFER_OK;
	ok(launched && out[0] == 3.5f && out[15] == 3.5f,
	   "fill through the plugin's tables");
	if (res)
		pl->storage->free(a->device, res);
	if (queue)
		pl->server->queue_destroy(a->device, queue);

	wafer__runtime_release_device(rt, b);
	ok(td->close_count == 0 && a->device == td,
	   "release of one of two references keeps it open");
	wafer__runtime_release_device(rt, a);
	ok(td->close_count == 1 && a->device == NULL && a->kernels == NULL,
	   "last release closes it");
	is_status(wafer__runtime_acquire_device(rt, "good", &a), WAFER_OK,
		  "acquire after close");
	ok(td->open_count == 2, "reopened on next acquire");
	wafer__runtime_release_device(rt, a);
	ok(td->close_count == 2, "closed again");

	/* Concurrent acquire/release of one device. */
	struct thread_arg args[4];
	pthread_t threads[4];
	for (int i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){rt, 0};
		pthread_create(&threads[i], NULL, acquire_loop, &args[i]);
	}
	int failures = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(threads[i], NULL);
		failures += args[i].failures;
	}
	is_status(wafer__runtime_acquire_device(rt, "full:1", &a), WAFER_OK,
		  "threads: acquire full:1 afterwards");
	td = a->device;
	ok(failures == 0 && td->open_count == td->close_count + 1,
	   "threads: %d failures, opens %d = closes %d + 1", failures,
	   td->open_count, td->close_count);
	wafer__runtime_release_device(rt, a);

	/* A device still acquired at close is closed (with a warning): the
	 * plugin's device_close logs at debug level (t/plugins/common.c),
	 * and the device's state is gone with the plugin after close. */
	is_status(wafer__runtime_acquire_device(rt, "full:0", &a), WAFER_OK,
		  "acquire and leave acquired at close");
	{
		char text[8192] = "";
		struct log_capture cap;

		if (log_capture_begin(&cap)) {
			wafer__log_set_level(WAFER_LOG_DEBUG);
			wafer_runtime_close(rt);
			wafer__log_set_level(WAFER_LOG_WARN);
			log_capture_end(&cap, text, sizeof text);
			like(text, "full:0 still acquired 1 time at runtime "
			     "close; closing it",
			     "runtime_close with a device still acquired "
			     "warns naming it");
			like(text, "wafer[full] debug: device_close: device 0",
			     "  ... and closes it in the plugin");
		} else {
			wafer_runtime_close(rt);
		}
	}
}

static void test_clients(void)
{
	wafer_runtime *rt = open_runtime("good", NULL, 0);
	wafer_client *client = NULL;
	wafer_device_desc d = {.struct_size = sizeof d};
	float ys[4] = {0};

	/* A client counts; closing the runtime under it leaks instead. */
	wafer__runtime_client_opened(rt);
	wafer_runtime_close(rt); /* logs an error, keeps everything */
	is_int(wafer_runtime_device_count(rt), 1,
	       "close with a client open leaves the runtime alive");
	wafer__runtime_client_closed(rt);

	/* The client API on a test plugin device. */
	is_status(wafer_client_open(rt, "good", NULL, &client), WAFER_OK,
		  "client on good");
	if (client) {
		is_status(wafer_client_device(client, &d), WAFER_OK,
			  "client device");
		is_str(d.name, "good device 0", "client device name");
		wafer_handle h = WAFER_HANDLE_NULL_INIT;
		is_status(wafer_empty(client, sizeof ys, &h), WAFER_OK,
			  "client: empty");
		is_status(fill_floats(client, h, 4, 2.0), WAFER_OK,
			  "client: fill");
		is_status(wafer_read(client, h, 0, ys, sizeof ys), WAFER_OK,
			  "client: read");
		ok(ys[0] == 2.0f && ys[3] == 2.0f, "client: filled");
		wafer_release(client, h);
		is_status(wafer_client_close(client), WAFER_OK,
			  "client close");
	}
	wafer_runtime_close(rt);
}

/*===----------------------------------------------------------------------===*/

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		diag("cannot write %s", path);
		exit(1);
	}
}

static void test_config(void)
{
	char dir[] = "/tmp/wafer-loader-XXXXXX";
	char file[256], want[512], name[512];
	wafer_runtime *rt = NULL;
	wafer_status status;

	/* Values and origins. */
	rt = open_runtime("good", NULL, 0);
	const char *origin = "x";
	is_str(wafer_runtime_config_value(rt, "core", "backend", &origin),
	       "good", "config value: [core] backend");
	is_str(origin, "options", "config value: origin options");
	ok(wafer_runtime_config_value(rt, "core", "nosuch", &origin) == NULL &&
		   origin == NULL,
	   "config value: unset key NULL, origin NULL");
	ok(wafer_runtime_config_value(NULL, "core", "backend", NULL) == NULL,
	   "config value: NULL runtime");
	int any_file = 0;
	for (size_t i = 0; i < wafer_runtime_config_source_count(rt); i++) {
		wafer_config_source s = {.struct_size = sizeof s};
		if (wafer_runtime_config_source(rt, i, &s) == WAFER_OK &&
		    s.path[0] == '/')
			any_file = 1;
	}
	ok(!any_file && wafer_runtime_config_source_count(rt) >= 1,
	   "NO_CONFIG_FILES: no file among the sources");
	wafer_runtime_close(rt);

	if (!mkdtemp(dir)) {
		diag("mkdtemp failed");
		exit(1);
	}
	snprintf(file, sizeof file, "%s/broken.conf", dir);
	write_file(file, "[good]\n"
			 "name = From File\n"
			 "this line is broken\n"
			 "memory = 2097152\n");
	setenv("WAFER_CONFIG", file, 1);

	rt = (void *)1;
	status = open_runtime_ex("good", NULL, 0, 0, 1, &rt);
	is_status(status, WAFER_ERROR_CONFIG, "broken line fails runtime_open");
	ok(rt == NULL, "broken line: out_runtime NULL");
	snprintf(want, sizeof want, "%s:3", file);
	like(wafer_last_error(), want, "broken line: detail names file:line");

	status = open_runtime_ex("good", NULL, 0,
				 WAFER_RUNTIME_TOLERATE_CONFIG_ERRORS, 1, &rt);
	is_status(status, WAFER_OK, "tolerant: runtime opens");
	if (rt) {
		int found = 0;
		for (size_t i = 0; i < wafer_runtime_config_source_count(rt);
		     i++) {
			wafer_config_source s = {.struct_size = sizeof s};
			wafer_runtime_config_source(rt, i, &s);
			if (strcmp(s.path, file) == 0) {
				found = 1;
				is_int(s.state, WAFER_CONFIG_SOURCE_FAILED,
				       "tolerant: file FAILED");
				like(s.detail, want,
				     "tolerant: source detail file:line");
			}
		}
		ok(found, "tolerant: the file is a source");
		wafer_device_desc d = device_at(rt, 0);
		snprintf(name, sizeof name, "From File [%s:2]", file);
		is_str(d.name, name, "tolerant: good lines applied, with origin");
		ok(d.memory_bytes == 2097152,
		   "tolerant: lines after the broken one applied");
		wafer_runtime_close(rt);
	}
	unsetenv("WAFER_CONFIG");
	unlink(file);
	rmdir(dir);

	wafer_option loud[] = {{"core", "log", "loud"}};
	is_status(open_runtime_ex("good", loud, 1, 0, 0, &rt),
		  WAFER_ERROR_CONFIG, "[core] log = loud fails");
	like(wafer_last_error(), "log", "[core] log: detail names the key");

	/* Option struct checks. */
	wafer_runtime_options bad = {.struct_size = 0};
	is_status(wafer_runtime_open(&bad, &rt), WAFER_ERROR_INVALID_ARGUMENT,
		  "options struct_size 0");
	bad = (wafer_runtime_options){.struct_size = sizeof bad,
				      .flags = 1u << 30};
	is_status(wafer_runtime_open(&bad, &rt), WAFER_ERROR_INVALID_ARGUMENT,
		  "unknown flag");
	bad = (wafer_runtime_options){.struct_size = sizeof bad,
				      .option_count = 1};
	is_status(wafer_runtime_open(&bad, &rt), WAFER_ERROR_INVALID_ARGUMENT,
		  "option_count without options");
	is_status(wafer_runtime_open(NULL, NULL), WAFER_ERROR_INVALID_ARGUMENT,
		  "NULL out_runtime");
	ok(wafer_runtime_device_count(NULL) == 0 &&
		   wafer_runtime_plugin_count(NULL) == 0 &&
		   wafer_runtime_config_source_count(NULL) == 0,
	   "NULL runtime counts 0");
	wafer_runtime_close(NULL);
}

/* The host's log prefixes the plugin's name. */
static void test_plugin_log(void)
{
	char text[8192] = "";
	wafer_option debug[] = {{"core", "log", "debug"}};
	wafer_runtime *rt = NULL;
	struct log_capture cap;

	if (!log_capture_begin(&cap))
		return;
	open_runtime_ex("good", debug, 1, 0, 0, &rt);
	wafer_runtime_close(rt);
	log_capture_end(&cap, text, sizeof text);
	like(text, "wafer[good] debug: init: 1 device(s)",
	     "plugin log lines carry the plugin's name");
	char want[64];
	snprintf(want, sizeof want, "good.so (ABI %d.%d, 1 device)",
		 WAFER_PLUGIN_ABI_MAJOR, WAFER_PLUGIN_ABI_MINOR);
	like(text, want, "accepted plugin logged with path and ABI");
	wafer__log_set_level(WAFER_LOG_WARN);
}

/* One point: creating a program of |src| in |format| on |c| fails with
 * |want|. */
static void create_refused(wafer_client *c, wafer_program_source src,
			   wafer_program_format format, wafer_status want,
			   const char *what)
{
	wafer_program *prog = NULL;

	src.format = format;
	is_status(wafer_program_create(c, &src, 1, NULL, &prog), want, "%s",
		  what);
}

/* Vendor values of the closed enums (types.h): a format of the vendor's
 * own reaches the plugin that lists it, and every message names it. */
static void test_vendor_values(void)
{
	const wafer_program_format isa = WAFER_PROGRAM_VENDOR + 1;
	wafer_runtime *rt = open_runtime("full", NULL, 0);
	wafer_program_source src = {.struct_size = sizeof src,
				    .format = isa,
				    .data = "\x7f" "acme",
				    .size = 5};
	wafer_client *c = NULL;

	is_str(wafer_program_format_name(isa), "vendor-0x10001",
	       "a vendor format's name");
	is_str(wafer_program_format_name(WAFER_PROGRAM_VENDOR_LAST + 1),
	       "unknown", "past the vendor range: unknown");
	is_str(wafer_native_kind_name(WAFER_NATIVE_VENDOR + 2),
	       "vendor-0x10002", "a vendor kind of buffer's name");
	if (!rt || wafer_client_open(rt, "full", NULL, &c) != WAFER_OK) {
		ok(0, "client on full: %s", wafer_last_error());
		wafer_runtime_close(rt);
		return;
	}
	create_refused(c, src, isa, WAFER_ERROR_NOT_SUPPORTED,
		       "a vendor format the plugin lists reaches its program_load");
	like(wafer_last_error(), "programs are declared, never loaded",
	     "vendor format: the plugin's own answer");
	create_refused(c, src, WAFER_PROGRAM_VENDOR + 2,
		       WAFER_ERROR_NOT_SUPPORTED,
		       "a vendor format the plugin does not list: not supported");
	like(wafer_last_error(), "vendor-0x10001",
	     "the message names the vendor format the device takes");
	like(wafer_last_error(), "vendor-0x10002", "and the one offered");
	create_refused(c, src, WAFER_PROGRAM_VENDOR_LAST + 1,
		       WAFER_ERROR_INVALID_ARGUMENT,
		       "past the vendor range: an unknown format");
	wafer_client_close(c);
	wafer_runtime_close(rt);
}

/* Names for vendor values (ABI 1.7): the loader takes the good ones for
 * every message, the plugin's report lists them, and each bad one is a
 * warning. Runs after test_vendor_values: the names last as long as the
 * process. */
static void test_vendor_names(void)
{
	wafer_runtime *rt = open_runtime("named, full", NULL, 0);
	wafer_plugin_report r = report_of(rt, "named");
	wafer_program_source src = {.struct_size = sizeof src,
				    .format = WAFER_PROGRAM_VENDOR + 2,
				    .data = "\x7f" "acme",
				    .size = 5};
	wafer_program *prog = NULL;
	wafer_client *c = NULL;

	ok(r.accepted, "named: accepted");
	is_str(r.vendor_names,
	       "acme-isa (program format 0x10001)\n"
	       "acme-buffer (native kind 0x10002)",
	       "named: the names it gave, in its report");
	like(r.warnings, "vendor_names[2]: program format 0x5 is outside "
			 "the vendor range",
	     "named: a value outside the vendor range is a warning");
	like(r.warnings, "vendor_names[3]: program format 0x10003: name "
			 "'host-c' is one the core uses",
	     "named: a name of the core's is a warning");
	like(r.warnings, "vendor_names[4]: program format 0x10001 is "
			 "named 'acme-isa' already",
	     "named: a value named twice is a warning");
	is_str(wafer_program_format_name(WAFER_PROGRAM_VENDOR + 1), "acme-isa",
	       "wafer_program_format_name gives the plugin's name");
	is_str(wafer_native_kind_name(WAFER_NATIVE_VENDOR + 2), "acme-buffer",
	       "wafer_native_kind_name gives the plugin's name");
	is_str(wafer_program_format_name(WAFER_PROGRAM_VENDOR + 3),
	       "vendor-0x10003", "an unnamed vendor format keeps its number");
	is_str(wafer_program_format_name(WAFER_PROGRAM_SPIRV), "spirv",
	       "the core's own names stay");
	if (wafer_client_open(rt, "full", NULL, &c) != WAFER_OK) {
		ok(0, "client on full: %s", wafer_last_error());
	} else {
		is_status(wafer_program_create(c, &src, 1, NULL, &prog),
			  WAFER_ERROR_NOT_SUPPORTED,
			  "full: a vendor format it does not list");
		like(wafer_last_error(), ", acme-isa; offered",
		     "the message names the format by the name it was given");
		wafer_client_close(c);
	}
	wafer_runtime_close(rt);
	is_str(wafer_program_format_name(WAFER_PROGRAM_VENDOR + 1), "acme-isa",
	       "the name outlives the runtime");
}

/* A group a plugin lacks because it targets a minor from before the
 * group: the core's message says so, and the tests' skips with it. */
static void test_minor_notes(void)
{
	wafer_runtime *rt = open_runtime("old_minor", NULL, 0);
	wafer_program_source src = {.struct_size = sizeof src,
				    .format = WAFER_PROGRAM_HOST_C,
				    .data = "x",
				    .size = 1};
	wafer_native_queue q = {.struct_size = sizeof q};
	wafer_program *prog = NULL;
	wafer_client *c = NULL;

	if (wafer_client_open(rt, "old_minor", NULL, &c) != WAFER_OK) {
		ok(0, "client on old_minor: %s", wafer_last_error());
		wafer_runtime_close(rt);
		return;
	}
	is_status(wafer_program_create(c, &src, 1, NULL, &prog),
		  WAFER_ERROR_NOT_SUPPORTED, "old_minor: no programs");
	like(wafer_last_error(),
	     "not supported by plugin old_minor (built for ABI 1.0; the "
	     "group came in 1.2)",
	     "  ... the message names the minor it targets");
	is_status(wafer_client_native_queue(c, &q), WAFER_ERROR_NOT_SUPPORTED,
		  "old_minor: no interop");
	like(wafer_last_error(), "(built for ABI 1.0; the group came in 1.3)",
	     "  ... the message names the minor it targets");
	wafer_client_close(c);
	wafer_runtime_close(rt);

	/* Declaring 1.1 while setting later entries: they are not used. */
	rt = open_runtime("stale_minor", NULL, 0);
	wafer_plugin_report r = report_of(rt, "stale_minor");
	like(r.warnings,
	     "declares ABI 1.1 but sets native import forget queue_native "
	     "queue_wrap, which came in 1.3: interop off",
	     "stale_minor: the interop group it declares no minor for is "
	     "dropped, saying so");
	like(r.warnings,
	     "declares ABI 1.1 but sets vendor_names, which came in 1.7",
	     "  ... and its vendor names");
	is_str(r.vendor_names, "", "  ... none taken");
	is_str(wafer_program_format_name(WAFER_PROGRAM_VENDOR + 9),
	       "vendor-0x10009", "  ... nor registered");
	if (wafer_client_open(rt, "stale_minor", NULL, &c) == WAFER_OK) {
		is_status(wafer_client_native_queue(c, &q),
			  WAFER_ERROR_NOT_SUPPORTED, "  ... no interop");
		wafer_client_close(c);
	}
	wafer_runtime_close(rt);
}

int main(void)
{
	const char *builddir = tap_builddir();

	snprintf(libs_dir, sizeof libs_dir, "%s/plugins/.libs", builddir);
	snprintf(plugin_path, sizeof plugin_path, "%s:%s/plugins", libs_dir,
		 builddir);
	/* The loader reports resolved paths. */
	char *resolved = realpath(libs_dir, NULL);
	if (resolved) {
		snprintf(libs_dir, sizeof libs_dir, "%s", resolved);
		free(resolved);
	}

	test_bad_plugins();
	test_loader_direct();
	test_priority();
	test_selectors();
	test_devices();
	test_refcount();
	test_clients();
	test_config();
	test_plugin_log();
	test_vendor_values();
	test_vendor_names();
	test_minor_notes();
	done_testing();
	return exit_status();
}
