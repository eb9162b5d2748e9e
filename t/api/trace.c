/* wafer — SPDX-License-Identifier: MIT
 *
 * trace.c: the timeline trace (wafer_trace_begin(3)) on the default
 * device, on every channel:
 *   - the file is trace-event JSON in the schema wafer-trace(1) checks
 *     (tools/timeline.c, the tool's own rule): spans ordered and nested
 *     per lane, everything inside the trace's duration, each flow end
 *     after its start;
 *   - every kernel is a span named by it, with its grid and handles;
 *     device spans where the plugin has the events group, else the file
 *     says host spans only;
 *   - wafer_event_record -> wafer_queue_wait is an arrow between lanes;
 *   - the last memory counter of a client is what wafer_memory_usage_get
 *     says;
 *   - autotune's device-timed measurements are a counter;
 *   - a failing kernel (the `async` test plugin's "fail") is an error
 *     event with its detail, and wafer_last_error still says it whole;
 *   - [core] trace (WAFER_TRACE) writes the file at runtime close; one
 *     trace at a time; a path that cannot be created fails at begin. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wafer/autotune.h>
#include <wafer/graph.h>
#include <wafer/ops.h>
#include <wafer/plugin.h>
#include <wafer/queue.h>
#include <wafer/trace.h>
#include <wafer/wafer.h>

#include "t/tap.h"
#include "t/client_util.h"
#include "tools/timeline.h"

static char dir[4096];
static const char *const channels[] = {"direct", "mutex", "mpsc"};

/* |path| parsed and checked, or NULL (one failed point). */
static struct json *load(const char *path, const char *what)
{
	char *text = timeline_read_file(path);
	char error[256] = "";
	struct json *root = text ? json_parse(text, error, sizeof error) : NULL;
	free(text);
	ok(root != NULL, "%s: the file is JSON%s%s", what, *error ? ": " : "",
	   error);
	if (!root)
		return NULL;
	bool good = timeline_check(root, error, sizeof error);
	ok(good, "%s: in the trace-event schema, ordered and nested per lane, "
		 "inside the trace%s%s",
	   what, good ? "" : ": ", good ? "" : error);
	return root;
}

static const char *str(const struct json *e, const char *key)
{
	const struct json *v = json_get(e, key);
	return v && v->type == JSON_STRING ? v->string : "";
}

static double num(const struct json *e, const char *key)
{
	const struct json *v = json_get(e, key);
	return v && v->type == JSON_NUMBER ? v->number : -1;
}

/* How many events have phase |ph|, name |name| (NULL: any) and category
 * |cat| (NULL: any). */
static size_t count(const struct json *root, const char *ph,
		    const char *name, const char *cat)
{
	const struct json *events = json_get(root, "traceEvents");
	size_t n = 0;
	for (size_t i = 0; i < events->count; i++) {
		const struct json *e = &events->items[i];
		n += !strcmp(str(e, "ph"), ph) &&
		     (!name || !strcmp(str(e, "name"), name)) &&
		     (!cat || !strcmp(str(e, "cat"), cat));
	}
	return n;
}

/* The last event of phase |ph|, name |name| and, for a span, category
 * host. */
static const struct json *last(const struct json *root, const char *ph,
			       const char *name)
{
	const struct json *events = json_get(root, "traceEvents");
	const struct json *found = NULL;
	for (size_t i = 0; i < events->count; i++)
		if (!strcmp(str(&events->items[i], "ph"), ph) &&
		    !strcmp(str(&events->items[i], "name"), name) &&
		    strcmp(str(&events->items[i], "cat"), "device"))
			found = &events->items[i];
	return found;
}

/* Every device span starts no earlier than the host span of its command:
 * on each lane the device spans, in order, pair with the host spans of
 * the same names, in order (wafer_trace_begin(3): "a span is shown no
 * earlier than the command was issued"). The number of spans that do
 * not, or -1 when a device span has no host span to pair with. */
static int device_before_host(const struct json *root)
{
	const struct json *events = json_get(root, "traceEvents");
	int bad = 0;
	for (size_t d = 0; d < events->count; d++) {
		const struct json *dev = &events->items[d];
		if (strcmp(str(dev, "ph"), "X") || strcmp(str(dev, "cat"), "device"))
			continue;
		/* The k-th device span of a name on a lane is the k-th host
		 * span of that name on the lane's host side, whose tid is
		 * tid - 1000 + 1 (lib/trace.c, DEVICE_TID). */
		double pid = num(dev, "pid"), tid = num(dev, "tid");
		const char *name = str(dev, "name");
		size_t k = 0;
		for (size_t e = 0; e < d; e++)
			k += !strcmp(str(&events->items[e], "ph"), "X") &&
			     !strcmp(str(&events->items[e], "name"), name) &&
			     num(&events->items[e], "pid") == pid &&
			     num(&events->items[e], "tid") == tid;
		const struct json *host = NULL;
		for (size_t h = 0; h < events->count && !host; h++) {
			const struct json *e = &events->items[h];
			if (!strcmp(str(e, "ph"), "X") &&
			    !strcmp(str(e, "cat"), "host") &&
			    num(e, "pid") == pid &&
			    num(e, "tid") == tid - 1000 + 1 &&
			    !strcmp(str(e, "name"), name) && k-- == 0)
				host = e;
		}
		if (!host)
			return -1;
		bad += num(dev, "ts") < num(host, "ts");
	}
	return bad;
}

static void test_channel(wafer_runtime *rt, const char *channel)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s.json", dir, channel);
	wafer_client *c = open_client_on(rt, "default", channel);
	bool events = caps_of(c, NULL) & WAFER_CAP_EVENTS;

	is_status(wafer_trace_begin(rt, path), WAFER_OK, "%s: begin", channel);
	is_status(wafer_trace_begin(rt, path), WAFER_ERROR_NOT_READY,
		  "%s: a second begin is refused", channel);
	enum { n = 1024 };
	wafer_handle a, b;
	check(wafer_empty(c, n * sizeof(float), &a), "empty");
	check(wafer_empty(c, n * sizeof(float), &b), "empty");
	check(fill_floats(c, a, n, 1.0), "fill");
	static float host[n];
	check(wafer_write(c, b, 0, host, sizeof host), "write");
	wafer_queue *q;
	wafer_event *ev;
	check(wafer_queue_open(c, &q), "queue_open");
	check(wafer_event_create(c, 0, &ev), "event_create");
	check(wafer_event_record(ev, wafer_client_default_queue(c)), "record");
	check(wafer_queue_wait(q, ev), "queue_wait");
	wafer_queue *was = wafer_queue_select(q);
	check(fill_floats(c, b, n, 2.0), "fill on the second queue");
	wafer_queue_select(was);
	check(wafer_queue_sync(q), "queue_sync");
	check(wafer_read(c, a, 0, host, sizeof host), "read");
	check(wafer_release(c, b), "release");
	check(wafer_sync(c), "sync");
	wafer_memory_usage usage = {.struct_size = sizeof usage};
	check(wafer_memory_usage_get(c, &usage), "usage");
	is_status(wafer_trace_end(rt), WAFER_OK, "%s: end writes the file",
		  channel);
	is_status(wafer_trace_end(rt), WAFER_ERROR_NOT_FOUND,
		  "%s: a second end finds no trace", channel);
	check(wafer_event_release(ev), "event_release");
	check(wafer_queue_close(q), "queue_close");
	check(wafer_release(c, a), "release");
	check(wafer_client_close(c), "client_close");

	struct json *root = load(path, channel);
	if (!root)
		return;
	is_int(count(root, "X", "fill", "host"), 2,
	       "%s: both fills are host spans named by the kernel", channel);
	const struct json *fill = last(root, "X", "fill");
	const struct json *grid = json_get(json_get(fill, "args"), "grid");
	const struct json *handles = json_get(json_get(fill, "args"), "handles");
	ok(grid && grid->count == 3 && handles && handles->count == 1,
	   "%s: a kernel span has its grid and its handle", channel);
	ok(fill && num(fill, "tid") == 2,
	   "%s: the second queue's fill is on lane 2 (queue 1)", channel);
	const struct json *other = json_get(root, "otherData");
	if (events) {
		ok(count(root, "X", "fill", "device") == 2 &&
			   count(root, "X", "write", "device") == 1,
		   "%s: the plugin has events: device spans for the fills "
		   "and the write",
		   channel);
		is_str(str(other, "device_timing"), "events",
		       "%s: the file says where device times came from",
		       channel);
		is_int(device_before_host(root), 0,
		       "%s: no device span starts before its command's host "
		       "span", channel);
	} else {
		is_int(count(root, "X", NULL, "device"), 0,
		       "%s: no events group: no device spans", channel);
		like(str(other, "device_timing"), "host spans only",
		     "%s: and the file says so", channel);
	}
	ok(count(root, "s", "event", NULL) == 1 &&
		   count(root, "f", "event", NULL) == 1,
	   "%s: the event record and the queue wait on it are an arrow",
	   channel);
	const struct json *memory = json_get(last(root, "C", "memory"), "args");
	ok(memory && num(memory, "in_use") == (double)usage.bytes_in_use &&
		   num(memory, "reserved") == (double)usage.bytes_reserved,
	   "%s: the last memory counter is wafer_memory_usage_get's "
	   "(%.0f / %.0f, %llu / %llu)",
	   channel, num(memory, "in_use"), num(memory, "reserved"),
	   (unsigned long long)usage.bytes_in_use,
	   (unsigned long long)usage.bytes_reserved);
	ok(last(root, "C", "storage calls") != NULL,
	   "%s: storage calls are counted", channel);
	is_int(count(root, "i", "error", NULL), 0, "%s: no error events",
	       channel);
	json_free(root);
	unlink(path);
}

/* The async plugin's "fail" fails in its queue: the sync that finds it
 * is an error event with the kernel's detail. */
static void test_error(const char *channel)
{
	char path[4200], plugins[4200];
	snprintf(path, sizeof path, "%s/error-%s.json", dir, channel);
	snprintf(plugins, sizeof plugins, "%s/plugins/.libs", tap_builddir());
	wafer_runtime *rt = open_runtime_on("async", plugins);
	wafer_client *c = open_client_on(rt, "async", channel);
	wafer_handle h;
	check(wafer_empty(c, 64, &h), "empty");
	check(wafer_trace_begin(rt, path), "begin");
	wafer_buffer_binding binding = {h, 0, 0};
	struct wafer_elementwise_params params = {1};
	wafer_execute_args args = execute_args_f32("fail", &binding, 1, &params,
						   sizeof params, 1);
	wafer_execute(c, &args);
	is_status(wafer_sync(c), WAFER_ERROR_DEVICE,
		  "%s: the failing kernel is reported", channel);
	like(wafer_last_error(), "kernel 'fail' failed on purpose",
	     "%s: with its detail, whole while tracing", channel);
	check(wafer_trace_end(rt), "end");
	check(wafer_release(c, h), "release");
	check(wafer_client_close(c), "close");
	wafer_runtime_close(rt);
	struct json *root = load(path, channel);
	if (!root)
		return;
	const struct json *error = last(root, "i", "error");
	const struct json *eargs = json_get(error, "args");
	ok(error && !strcmp(str(eargs, "command"), "sync") &&
		   strstr(str(eargs, "detail"), "kernel 'fail'"),
	   "%s: an error event names the command and the kernel's failure",
	   channel);
	is_int(num(json_get(root, "otherData"), "errors"), 1,
	       "%s: counted once", channel);
	json_free(root);
	unlink(path);
}

/* A graph replayed twice: each replay is one span named graph_launch,
 * whose args say what it ran (three fills), on the device too where
 * the plugin has events. */
static void test_graph(wafer_runtime *rt)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/graph.json", dir);
	wafer_client *c = open_client_on(rt, "default", NULL);
	bool events = caps_of(c, NULL) & WAFER_CAP_EVENTS;
	enum { n = 256 };
	wafer_handle h;
	wafer_graph *g;
	wafer_queue *q = wafer_client_default_queue(c);
	check(wafer_empty(c, n * sizeof(float), &h), "empty");
	check(wafer_queue_begin_capture(q), "begin_capture");
	for (int i = 0; i < 3; i++)
		check(fill_floats(c, h, n, i), "fill");
	check(wafer_queue_end_capture(q, &g), "end_capture");
	check(wafer_trace_begin(rt, path), "begin");
	check(wafer_graph_launch(g, q), "launch");
	check(wafer_graph_launch(g, q), "launch");
	check(wafer_sync(c), "sync");
	check(wafer_trace_end(rt), "end");
	check(wafer_graph_release(g), "graph_release");
	check(wafer_release(c, h), "release");
	check(wafer_client_close(c), "close");
	struct json *root = load(path, "graph");
	if (!root)
		return;
	is_int(count(root, "X", "graph_launch", "host"), 2,
	       "graph: each replay is one host span");
	is_int(count(root, "X", "graph_launch", "device"), events ? 2 : 0,
	       "graph: and one device span %s",
	       events ? "(events)" : "none (no events group)");
	const struct json *e = last(root, "X", "graph_launch");
	const struct json *args = e ? json_get(e, "args") : NULL;
	const struct json *kernels = args ? json_get(args, "kernels") : NULL;
	ok(args && num(args, "steps") == 3 && num(args, "launches") == 3 &&
		   kernels && num(kernels, "fill") == 3,
	   "graph: its args say it ran 3 steps, 3 launches of fill");
	json_free(root);
	unlink(path);
}

/* A matmul tuned afresh: where autotune timed candidates on the device,
 * each measurement is an "autotune measurement" counter. */
static void test_autotune(void)
{
	char path[4200], cache[4200];
	snprintf(path, sizeof path, "%s/autotune.json", dir);
	snprintf(cache, sizeof cache, "%s/cache", dir);
	wafer_option options[] = {{"autotune", "mode", "full"},
				  {"autotune", "cache_dir", cache}};
	wafer_runtime_options ro = {.struct_size = sizeof ro,
				    .options = options,
				    .option_count = 2};
	wafer_runtime *rt;
	wafer_client *c;
	open_default(&ro, &rt, &c);
	/* The skeleton plugin has fill but no matmul. */
	if (!needs_f32_kernels(c, "trace", "autotune", "matmul", NULL)) {
		close_default(rt, c);
		return;
	}
	bool timers = caps_of(c, NULL) & WAFER_CAP_DEVICE_TIMERS;
	enum { n = 64 };
	static float v[n * n];
	const uint64_t shape[] = {n, n};
	wafer_tensor a = upload_f32(c, 2, shape, v), out;
	check(wafer_trace_begin(rt, path), "begin");
	check(wafer_op_matmul(c, &a, WAFER_ALWAYS_COPY, &a, WAFER_ALWAYS_COPY, 0,
			      &out),
	      "matmul");
	check(wafer_sync(c), "sync");
	check(wafer_trace_end(rt), "end");
	wafer_autotune_stats stats = {.struct_size = sizeof stats};
	check(wafer_autotune_stats_get(rt, &stats), "autotune_stats");
	check(wafer_tensor_release(c, &a), "release");
	check(wafer_tensor_release(c, &out), "release");
	close_default(rt, c);
	struct json *root = load(path, "autotune");
	if (!root)
		return;
	size_t measured = count(root, "C", "autotune measurement", NULL);
	if (timers && stats.benchmark_runs)
		ok(measured > 0,
		   "autotune: %llu candidate runs timed on the device: %zu "
		   "measurements in the trace",
		   (unsigned long long)stats.benchmark_runs, measured);
	else
		is_int(measured, 0,
		       "autotune: nothing timed on the device (%s), no "
		       "measurement in the trace",
		       timers ? "one candidate" : "no device timers");
	json_free(root);
	unlink(path);
}

/* [core] trace, here through WAFER_TRACE: from runtime open to close. */
static void test_config(void)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/config.json", dir);
	setenv("WAFER_TRACE", path, 1);
	wafer_runtime *rt;
	wafer_client *c;
	open_default(NULL, &rt, &c);
	unsetenv("WAFER_TRACE");
	is_status(wafer_trace_begin(rt, path), WAFER_ERROR_NOT_READY,
		  "config: the configured trace is running");
	wafer_handle h;
	check(wafer_empty(c, 256, &h), "empty");
	check(fill_floats(c, h, 64, 3.0), "fill");
	check(wafer_release(c, h), "release");
	close_default(rt, c);
	struct json *root = load(path, "config");
	if (root) {
		is_int(count(root, "X", "fill", "host"), 1,
		       "config: the kernel is in the file written at close");
		json_free(root);
	}
	unlink(path);
}

static void test_bad_path(void)
{
	wafer_runtime *rt;
	wafer_client *c;
	open_default(NULL, &rt, &c);
	char path[4200];
	snprintf(path, sizeof path, "%s/no/such/dir/x.json", dir);
	is_status(wafer_trace_begin(rt, path), WAFER_ERROR_IO,
		  "a path that cannot be created fails at begin");
	like(wafer_last_error(), "no/such/dir", "  naming it");
	is_status(wafer_trace_end(rt), WAFER_ERROR_NOT_FOUND,
		  "  and no trace runs");
	close_default(rt, c);
}

int main(void)
{
	tap_mkdtemp(dir, sizeof dir, "trace");
	wafer_runtime *rt;
	wafer_client *c;
	open_default(NULL, &rt, &c);
	/* A plugin without the catalogue's fill (a vendor's skeleton):
	 * one skip naming it. */
	if (!needs_f32_kernels(c, "trace", "t/api/trace", "fill", NULL)) {
		close_default(rt, c);
		rmdir(dir);
		done_testing();
		return exit_status();
	}
	for (size_t i = 0; i < sizeof channels / sizeof *channels; i++)
		test_channel(rt, channels[i]);
	for (size_t i = 0; i < sizeof channels / sizeof *channels; i++)
		test_error(channels[i]);
	test_graph(rt);
	close_default(rt, c);
	test_autotune();
	test_config();
	test_bad_path();
	/* The autotune cache the test made in it, too. */
	tap_remove_tree(dir);
	done_testing();
	return exit_status();
}
