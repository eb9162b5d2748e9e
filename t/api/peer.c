/* wafer — SPDX-License-Identifier: MIT
 *
 * peer.c: wafer_copy_peer (comm.h, wafer_copy_peer(3)) on each channel
 * (direct, mutex, mpsc):
 *
 *  - between two clients of the default backend (WAFER_BACKEND picks
 *    another): on two of its devices when the runtime lists two, else
 *    on one device twice; and within one client;
 *  - the values, also when the source was written just before the copy
 *    (queued) and overwritten and released just after it (ordering on
 *    both clients);
 *  - the path, from the library's debug log: device to device where the
 *    plugin has copy_peer (WAFER_CAP_PEER_COPY), else staged through the
 *    host;
 *  - errors: a null, released or foreign handle, NULL arguments, clients
 *    of two runtimes; each leaves the output null and nothing behind;
 *  - cpu and the default backend, when they differ and both are there:
 *    staged through the host, both ways;
 *  - the same on the test plugin t/plugins/collective.c (four devices, a
 *    memcpy copy_peer), which runs the two-device cases under every
 *    sanitizer. */
#include "build-config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/comm.h>
#include <wafer/wafer.h>

#include "t/client_util.h"
#include "t/log_capture.h"
#include "t/tap.h"

#define N 1000
#define BYTES (N * sizeof(float))

static const char *const channels[] = {"direct", "mutex", "mpsc"};
static char plugin_dir[4096];

static wafer_runtime *open_runtime(const char *backends, const char *log)
{
	wafer_option options[3] = {{"core", "log", log}};
	wafer_runtime_options ro = {.struct_size = sizeof ro,
				    .options = options,
				    .option_count = 1};
	wafer_runtime *rt;

	if (backends) {
		/* The test plugin: only it, from the build tree. */
		options[1] = (wafer_option){"core", "backend", backends};
		options[2] = (wafer_option){"core", "plugin_path", plugin_dir};
		ro.option_count = 3;
		ro.flags = WAFER_RUNTIME_NO_CONFIG_FILES;
	}
	check(wafer_runtime_open(&ro, &rt), "runtime_open");
	return rt;
}

static wafer_handle create_values(wafer_client *c, float scale)
{
	return create_ramp(c, N, scale);
}

static void write_values(wafer_client *c, wafer_handle h, float scale)
{
	float data[N];

	for (int i = 0; i < N; i++)
		data[i] = (float)i * scale;
	check(wafer_write(c, h, 0, data, sizeof data), "write");
}

/* Whether |h| of |c| holds i * scale at each i. */
static bool holds(wafer_client *c, wafer_handle h, float scale)
{
	size_t size;

	return wafer_handle_size(c, h, &size) == WAFER_OK && size == BYTES &&
	       holds_ramp(c, h, N, scale);
}

/* Two points named |what|: neither |a| nor |b| holds anything; then
 * closes both. */
static void close_clean(wafer_client *a, wafer_client *b, const char *what)
{
	ok_clean(a, what);
	ok_clean(b, what);
	check(wafer_client_close(a), "close");
	check(wafer_client_close(b), "close");
}

/* Copies from |a| to |b|, where |a| and |b| may be one client. */
static void test_values(const char *label, wafer_client *a, wafer_client *b)
{
	wafer_handle src = create_values(a, 1), dst = {0};

	is_status(wafer_copy_peer(a, src, b, &dst), WAFER_OK,
		  "[%s] copy_peer", label);
	ok(dst.bits && holds(b, dst, 1), "[%s]   ... the values arrive",
	   label);
	ok(holds(a, src, 1), "[%s]   ... the source unchanged", label);
	check(wafer_release(b, dst), "release");

	/* Written just before (queued on mpsc), overwritten and released
	 * just after: the copy has the bytes of the write before it. */
	write_values(a, src, 2);
	is_status(wafer_copy_peer(a, src, b, &dst), WAFER_OK,
		  "[%s] copy_peer after a write", label);
	write_values(a, src, 3);
	check(wafer_release(a, src), "release");
	ok(holds(b, dst, 2),
	   "[%s]   ... has the write before it, not the one after", label);

	/* And the copy comes before what the destination does next. */
	write_values(b, dst, 4);
	ok(holds(b, dst, 4), "[%s]   ... then a write to it wins", label);
	check(wafer_release(b, dst), "release");
}

static void test_errors(const char *label, wafer_client *a, wafer_client *b)
{
	wafer_handle src = create_values(a, 1), dead = create_values(a, 1);
	wafer_handle foreign = create_values(b, 1);
	wafer_handle dst;

	check(wafer_release(a, dead), "release");
	dst.bits = 42;
	is_status(wafer_copy_peer(a, (wafer_handle){0}, b, &dst),
		  WAFER_ERROR_INVALID_HANDLE, "[%s] copy_peer of a null handle",
		  label);
	ok(dst.bits == 0, "[%s]   ... out handle null", label);
	is_status(wafer_copy_peer(a, dead, b, &dst),
		  WAFER_ERROR_INVALID_HANDLE,
		  "[%s] copy_peer of a released handle", label);
	like(wafer_last_error(), "wafer_copy_peer", "[%s]   ... names the call",
	     label);
	if (a != b) {
		is_status(wafer_copy_peer(a, foreign, b, &dst),
			  WAFER_ERROR_INVALID_HANDLE,
			  "[%s] copy_peer of the other client's handle", label);
		like(wafer_last_error(), "belongs to another client",
		     "[%s]   ... says so", label);
	}
	is_status(wafer_copy_peer(NULL, src, b, &dst),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] src_client NULL", label);
	is_status(wafer_copy_peer(a, src, NULL, &dst),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] dst_client NULL", label);
	is_status(wafer_copy_peer(a, src, b, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "[%s] out_dst NULL", label);
	ok(dst.bits == 0, "[%s]   ... out handle null throughout", label);
	check(wafer_release(a, src), "release");
	check(wafer_release(b, foreign), "release");
}

/* Clients of two runtimes never share a peer copy. The other runtime is
 * on the default backend: the test plugins keep their host services in
 * a global, so one of them loaded by two runtimes at once would log
 * through the one closed first. */
static void test_two_runtimes(const char *label, const char *channel,
			      wafer_client *a)
{
	wafer_runtime *other = open_runtime(NULL, "debug");
	wafer_client *c = open_client_on(other, "default", channel);
	wafer_handle src = create_values(a, 1), dst = {.bits = 42};

	is_status(wafer_copy_peer(a, src, c, &dst),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "[%s] copy_peer to a client of another runtime", label);
	like(wafer_last_error(), "two runtimes", "[%s]   ... says so", label);
	ok(dst.bits == 0, "[%s]   ... out handle null", label);
	check(wafer_release(a, src), "release");
	ok_clean(c, label);
	check(wafer_client_close(c), "close");
	wafer_runtime_close(other);
}

/* One copy from |a| to |b| with the debug log captured: which path. */
static void test_path(const char *label, wafer_client *a, wafer_client *b,
		      bool device)
{
	wafer_handle src = create_values(a, 5), dst = {0};
	struct log_capture cap;
	char text[16384] = "";
	wafer_status st = WAFER_ERROR_INTERNAL;

	if (log_capture_begin(&cap)) {
		st = wafer_copy_peer(a, src, b, &dst);
		log_capture_end(&cap, text, sizeof text);
	}
	is_status(st, WAFER_OK, "[%s] copy_peer, log captured", label);
	ok(dst.bits && holds(b, dst, 5), "[%s]   ... the values arrive",
	   label);
	is_int(log_count(text, device ? "copy_peer: device"
				      : "copy_peer: staged through the host"),
	       1, "[%s]   ... %s", label,
	       device ? "device to device" : "staged through the host");
	is_int(log_count(text, device ? "copy_peer: staged"
				      : "copy_peer: device"),
	       0, "[%s]   ... and not the other way", label);
	check(wafer_release(a, src), "release");
	if (dst.bits)
		check(wafer_release(b, dst), "release");
}

/* The runtime's devices of |backend|. */
static size_t devices_of(wafer_runtime *rt, const char *backend)
{
	wafer_device_desc d = {.struct_size = sizeof d};
	size_t n = 0;

	for (size_t i = 0; i < wafer_runtime_device_count(rt); i++)
		if (wafer_runtime_device(rt, i, &d) == WAFER_OK &&
		    strcmp(d.backend, backend) == 0)
			n++;
	return n;
}

/* Every case on two clients of |backends| (NULL: the default backend)
 * and on each channel. */
static void test_backend(const char *backends)
{
	wafer_runtime *rt = open_runtime(backends, "debug");

	for (size_t ch = 0; ch < 3; ch++) {
		const char *label = channels[ch], *backend;
		wafer_client *a = open_client_on(rt, "default", label);
		bool device = caps_of(a, &backend) & WAFER_CAP_PEER_COPY;
		char sel[2][64], name[160];
		wafer_client *b;

		if (devices_of(rt, backend) >= 2) {
			snprintf(sel[0], sizeof sel[0], "%s:0", backend);
			snprintf(sel[1], sizeof sel[1], "%s:1", backend);
			check(wafer_client_close(a), "close");
			a = open_client_on(rt, sel[0], label);
		} else {
			snprintf(sel[0], sizeof sel[0], "default");
			snprintf(sel[1], sizeof sel[1], "default");
		}
		b = open_client_on(rt, sel[1], label);
		snprintf(name, sizeof name, "%s %s, %s -> %s", label, backend,
			 sel[0], sel[1]);
		if (ch == 0)
			diag("%s: peer copy %s", backend,
			     device ? "on the device" : "through the host");
		test_values(name, a, b);
		test_path(name, a, b, device);
		test_errors(name, a, b);
		snprintf(name, sizeof name, "%s %s, within %s", label, backend,
			 sel[0]);
		test_values(name, a, a);
		test_path(name, a, a, device);
		test_errors(name, a, a);
		snprintf(name, sizeof name, "%s %s", label, backend);
		test_two_runtimes(name, label, a);

		close_clean(a, b, label);
	}
	wafer_runtime_close(rt);
	/* The log level is the process's: back to the default. */
	wafer_runtime_close(open_runtime(backends, "warn"));
}

/* cpu and the default backend in one runtime (the backend list of the
 * configuration, WAFER_BACKEND included, is replaced by both): staged
 * through the host both ways, on each channel. */
static void test_cross_backend(void)
{
	wafer_runtime *rt;
	wafer_client *c;
	const char *name;
	char backend[64], list[96];

	check(wafer_runtime_open(NULL, &rt), "runtime_open");
	c = open_client_on(rt, "default", "direct");
	caps_of(c, &name);
	snprintf(backend, sizeof backend, "%s", name);
	check(wafer_client_close(c), "close");
	wafer_runtime_close(rt);
	if (strcmp(backend, "cpu") == 0) {
		diag("cpu <-> cpu: the default backend is cpu, nothing to cross");
		return;
	}
	snprintf(list, sizeof list, "%s, cpu", backend);
	{
		wafer_option options[] = {{"core", "backend", list},
					  {"core", "log", "debug"}};
		wafer_runtime_options ro = {.struct_size = sizeof ro,
					    .options = options,
					    .option_count = 2};
		check(wafer_runtime_open(&ro, &rt), "runtime_open");
	}
	if (!devices_of(rt, "cpu") || !devices_of(rt, backend)) {
		ok(1, "cpu <-> %s # SKIP the runtime does not list both",
		   backend);
		wafer_runtime_close(rt);
		return;
	}
	for (size_t ch = 0; ch < 3; ch++) {
		const char *label = channels[ch];
		wafer_client *cpu = open_client_on(rt, "cpu", label);
		wafer_client *dev = open_client_on(rt, backend, label);
		char what[160];

		snprintf(what, sizeof what, "%s cpu -> %s", label, backend);
		test_values(what, cpu, dev);
		test_path(what, cpu, dev, false);
		snprintf(what, sizeof what, "%s %s -> cpu", label, backend);
		test_values(what, dev, cpu);
		test_path(what, dev, cpu, false);
		close_clean(cpu, dev, what);
	}
	wafer_runtime_close(rt);
	wafer_runtime_close(open_runtime(NULL, "warn"));
}

int main(void)
{
	const char *builddir = getenv("T_BUILDDIR");

	test_backend(NULL);
	test_cross_backend();
	if (builddir) {
		snprintf(plugin_dir, sizeof plugin_dir, "%s/plugins/.libs",
			 builddir);
		test_backend("collective");
	} else {
		ok(1, "test plugin collective # SKIP T_BUILDDIR is not set");
	}
	done_testing();
	return exit_status();
}
