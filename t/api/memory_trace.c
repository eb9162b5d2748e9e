/* wafer — SPDX-License-Identifier: MIT
 *
 * t/api/memory_trace: `[memory] trace` (lib/memory/record.h) on the default
 * device. Two clients with a trace each write one file each, PATH.<pid>.0
 * and PATH.<pid>.1, holding exactly the reserves and releases they made
 * (a handle left live at close is released there); the built
 * wafer-replay replays the first under every strategy with the peak live
 * bytes the client had, and draws it with --svg. WAFER_MEMORY_TRACE
 * records as the setting does. A trace path that cannot be created
 * fails the client open naming it. Backend-neutral (WAFER_BACKEND). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wafer/wafer.h>

#include "t/tap.h"

static char dir[512];

static wafer_runtime *open_runtime(const char *trace)
{
	wafer_option option = {"memory", "trace", trace};
	wafer_runtime_options options = {
		.struct_size = sizeof options,
		.options = &option,
		.option_count = 1,
	};
	wafer_runtime *rt = NULL;
	if (wafer_runtime_open(&options, &rt) != WAFER_OK)
		bail_out("runtime_open: %s", wafer_last_error());
	return rt;
}

static wafer_client *open_client(wafer_runtime *rt)
{
	wafer_client *c = NULL;
	if (wafer_client_open(rt, "default", NULL, &c) != WAFER_OK)
		bail_out("client_open: %s", wafer_last_error());
	return c;
}

static wafer_handle empty(wafer_client *c, size_t size)
{
	wafer_handle h = WAFER_HANDLE_NULL_INIT;
	if (wafer_empty(c, size, &h) != WAFER_OK)
		bail_out("empty(%zu): %s", size, wafer_last_error());
	return h;
}

/* What a recording holds: its events, checked line by line. */
struct recording {
	int reserves, releases;
	long long bytes;     /* sum of the reserves */
	long long live_peak; /* replayed here, by id */
	int bad_lines;       /* neither comment nor a timed event */
	int time_backwards;
	char header[256];
	char last[256];
};

static int read_recording(const char *path, struct recording *r)
{
	memset(r, 0, sizeof *r);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[256];
	unsigned long long last_t = 0, ids[64] = {0}, sizes[64] = {0};
	long long live = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long long id, bytes, t;
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#') {
			if (!r->header[0])
				snprintf(r->header, sizeof r->header, "%s", line);
			continue;
		}
		snprintf(r->last, sizeof r->last, "%s", line);
		if (sscanf(line, "a %llu %llu t=%llu", &id, &bytes, &t) == 3) {
			r->reserves++;
			r->bytes += (long long)bytes;
			live += (long long)bytes;
			if (live > r->live_peak)
				r->live_peak = live;
			ids[id % 64] = id;
			sizes[id % 64] = bytes;
		} else if (sscanf(line, "f %llu t=%llu", &id, &t) == 2) {
			r->releases++;
			live -= ids[id % 64] == id ? (long long)sizes[id % 64] : 0;
		} else {
			r->bad_lines++;
			continue;
		}
		r->time_backwards += t < last_t;
		last_t = t;
	}
	fclose(f);
	return 1;
}

/* Runs wafer-replay with |args| on |trace|; its output line in |out|. */
static int replay(const char *args, const char *trace, char *out, size_t size)
{
	char command[2048];
	snprintf(command, sizeof command, "'%s/../tools/wafer-replay' %s '%s'",
		 getenv("T_BUILDDIR"), args, trace);
	FILE *p = popen(command, "r");
	out[0] = '\0';
	if (!p)
		return -1;
	if (!fgets(out, (int)size, p))
		out[0] = '\0';
	return pclose(p);
}

static long long field(const char *line, const char *name)
{
	char key[64];
	snprintf(key, sizeof key, " %s=", name);
	const char *at = strstr(line, key);
	return at ? atoll(at + strlen(key)) : -1;
}

static void test_two_clients(void)
{
	char trace[600], path0[700], path1[700];
	snprintf(trace, sizeof trace, "%s/run.trace", dir);
	snprintf(path0, sizeof path0, "%s.%ld.0", trace, (long)getpid());
	snprintf(path1, sizeof path1, "%s.%ld.1", trace, (long)getpid());

	wafer_runtime *rt = open_runtime(trace);
	wafer_client *a = open_client(rt);
	wafer_client *b = open_client(rt);
	/* Client a, bytes live after each step: 1000, 4000, 3000, 3500,
	 * 5548 (the peak), 2548, 2048, 0, 100. */
	wafer_handle h1 = empty(a, 1000), h2 = empty(a, 3000);
	wafer_release(a, h1);
	wafer_handle h3 = empty(a, 500);
	unsigned char bytes[2048] = {1};
	wafer_handle h4;
	is_status(wafer_create(a, bytes, sizeof bytes, &h4), WAFER_OK,
		  "create on the traced client");
	wafer_release(a, h2);
	wafer_release(a, h3);
	wafer_release(a, h4);
	wafer_handle kept = empty(a, 100); /* left live at close */
	(void)kept;
	/* Client b: one handle. */
	wafer_handle hb = empty(b, 64);
	wafer_release(b, hb);
	is_status(wafer_client_close(b), WAFER_OK, "close client b");
	is_status(wafer_client_close(a), WAFER_OK, "close client a");
	wafer_runtime_close(rt);

	struct recording r;
	ok(read_recording(path0, &r), "client a wrote %s", path0);
	like(r.header, "# wafer memory trace, process ",
	     "its header names the process");
	like(r.header, "strategy ", "and the strategy");
	is_int(r.reserves, 5, "five reserves recorded");
	is_int(r.releases, 5, "five releases, the one at close included");
	is_int(r.bytes, 1000 + 3000 + 500 + 2048 + 100, "their bytes");
	is_int(r.live_peak, 5548, "peak live bytes as the client had them");
	is_int(r.bad_lines, 0, "every line an event with t=");
	is_int(r.time_backwards, 0, "times never go back");
	like(r.last, "f ", "the last line is the release at close");

	struct recording rb;
	ok(read_recording(path1, &rb), "client b wrote its own file %s",
	   path1);
	is_int(rb.reserves, 1, "client b: one reserve");
	is_int(rb.releases, 1, "client b: one release");
	is_int(rb.bytes, 64, "client b: its bytes");

	static const char *const strategies[] = {
		"exact", "direct", "chunked", "buckets", "stream", "pool",
	};
	for (size_t i = 0; i < sizeof strategies / sizeof *strategies; i++) {
		char args[64], line[1024];
		snprintf(args, sizeof args, "--strategy %s", strategies[i]);
		is_int(replay(args, path0, line, sizeof line), 0,
		       "wafer-replay %s replays the recording", args);
		is_int(field(line, "peak_live"), 5548,
		       "  %s: peak_live is the client's", strategies[i]);
		is_int(field(line, "events"), 10, "  %s: ten events",
		       strategies[i]);
	}

	char svg[700], line[1024];
	snprintf(svg, sizeof svg, "%s/run.svg", dir);
	snprintf(line, sizeof line, "--svg '%s'", svg);
	char out[1024];
	is_int(replay(line, path0, out, sizeof out), 0,
	       "wafer-replay --svg draws the recording");
	FILE *f = fopen(svg, "r");
	char text[65536] = "";
	size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
	text[n] = '\0';
	if (f)
		fclose(f);
	like(text, "<svg ", "the file is an SVG");
	ok(n > 7 && strcmp(text + n - 7, "</svg>\n") == 0,
	   "  ending with </svg>");
	remove(svg);
	remove(path0);
	remove(path1);
}

static void test_bad_path(void)
{
	char trace[600];
	snprintf(trace, sizeof trace, "%s/no/such/dir/x.trace", dir);
	wafer_runtime *rt = open_runtime(trace);
	wafer_client *c = NULL;
	is_status(wafer_client_open(rt, "default", NULL, &c), WAFER_ERROR_IO,
		  "a trace that cannot be created fails the open");
	like(wafer_last_error(), "/no/such/dir/x.trace.",
	     "naming the file");
	like(wafer_last_error(), "options: [memory] trace",
	     "and where the setting came from");
	ok(c == NULL, "no client");
	wafer_runtime_close(rt);
}

/* WAFER_MEMORY_TRACE alone (no option): one file, named after it. */
static void test_environment(void)
{
	char trace[600], prefix[64], path[1400] = "";
	snprintf(trace, sizeof trace, "%s/env.trace", dir);
	snprintf(prefix, sizeof prefix, "env.trace.%ld.", (long)getpid());
	setenv("WAFER_MEMORY_TRACE", trace, 1);
	wafer_runtime *rt = NULL;
	if (wafer_runtime_open(NULL, &rt) != WAFER_OK)
		bail_out("runtime_open: %s", wafer_last_error());
	unsetenv("WAFER_MEMORY_TRACE");
	wafer_client *c = open_client(rt);
	wafer_handle h = empty(c, 4096);
	wafer_release(c, h);
	wafer_client_close(c);
	wafer_runtime_close(rt);

	int files = 0;
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
			files++;
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		}
	if (d)
		closedir(d);
	is_int(files, 1, "WAFER_MEMORY_TRACE: one file %s<n>", prefix);
	struct recording r;
	ok(read_recording(path, &r), "  readable");
	is_int(r.reserves, 1, "  its reserve");
	is_int(r.bytes, 4096, "  of 4096 bytes");
	is_int(r.releases, 1, "  and its release");
	remove(path);
}

int main(void)
{
	tap_mkdtemp(dir, sizeof dir, "memory_trace");
	test_two_clients();
	test_environment();
	test_bad_path();
	rmdir(dir);
	done_testing();
	return exit_status();
}
