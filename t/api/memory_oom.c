/* wafer — SPDX-License-Identifier: MIT
 *
 * t/api/memory_oom: `[memory] limit` and wafer_memory_set_oom_handler through
 * the client API, on every channel. Backend-neutral (t/cuda/cuda.sh runs it on
 * the stand-in driver): sizes are multiples of 2 MiB, so what a device
 * holds is the same whether its storage maps pages (cpu, cuda) or
 * allocates chunks. Checks that a reserve past the limit fails naming it,
 * that the handler gets the figures, may release a handle and retry (on
 * the thread the channel runs commands on: the caller's on direct and
 * mutex, the runner's on mpsc), or decline; that the limit is the
 * device's, shared by its clients; percentages; WAFER_MEMORY_LIMIT; and
 * bad values. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <wafer/wafer.h>

#include "t/tap.h"

#define MiB ((size_t)1 << 20)

static char dir[] = "/tmp/wafer-memory-oom.XXXXXX";
static char conf[sizeof dir + 16];

/* The caller's WAFER_CONFIG (t/backend-opencl.conf picks PoCL's device),
 * which the file written here starts with, and the line of its limit. */
static char *caller_conf;
static int limit_line;

/* A runtime reading "[memory]\nlimit = |limit|" from a file, after the
 * caller's configuration. */
static wafer_runtime *open_runtime(const char *limit)
{
	FILE *f = fopen(conf, "w");
	if (!f)
		bail_out("cannot write %s", conf);
	limit_line = 2;
	if (caller_conf) {
		fprintf(f, "%s\n", caller_conf);
		for (const char *c = caller_conf; *c; c++)
			limit_line += *c == '\n';
		limit_line++;
	}
	fprintf(f, "[memory]\nlimit = %s\n", limit);
	fclose(f);
	setenv("WAFER_CONFIG", conf, 1);
	wafer_runtime *runtime = NULL;
	if (wafer_runtime_open(NULL, &runtime) != WAFER_OK)
		bail_out("runtime_open: %s", wafer_last_error());
	return runtime;
}

static wafer_client *open_client(wafer_runtime *runtime, const char *channel)
{
	wafer_client *client = NULL;
	wafer_client_options options = {
		.struct_size = sizeof options,
		.channel = channel,
		.memory = "pool",
	};
	if (wafer_client_open(runtime, "default", &options, &client) !=
	    WAFER_OK)
		bail_out("client_open(%s): %s", channel, wafer_last_error());
	return client;
}

/* The detail of the last failed reserve(). */
static char last_detail[2048];

/* A reserve's outcome on any channel: mpsc reports a queued reserve's
 * failure at the next sync, and its handle (without memory) is released
 * here. */
static wafer_status reserve(wafer_client *client, size_t size,
			    wafer_handle *out)
{
	wafer_status status = wafer_empty(client, size, out);
	if (status == WAFER_OK) {
		status = wafer_sync(client);
		if (status != WAFER_OK) {
			snprintf(last_detail, sizeof last_detail, "%s",
				 wafer_last_error());
			wafer_release(client, *out);
			return status;
		}
	}
	snprintf(last_detail, sizeof last_detail, "%s",
		 status == WAFER_OK ? "" : wafer_last_error());
	return status;
}

struct handler_data {
	wafer_handle release; /* released by the handler when set */
	wafer_oom_action answer;
	int calls;
	wafer_oom_info info;
	char detail[1024];
	pthread_t thread;
	wafer_status release_status;
	bool try_sync;              /* call wafer_sync from the handler */
	wafer_status sync_status;
	char sync_detail[512];
	uint64_t in_use_after; /* the client's in use after its release */
	bool try_close;             /* call wafer_client_close from it */
	wafer_status close_status;
	char close_detail[512];
	bool try_alloc;             /* call wafer_empty on the client */
	wafer_status alloc_status;
};

static wafer_oom_action handler(wafer_client *client,
				const wafer_oom_info *info, void *user)
{
	struct handler_data *d = user;
	d->calls++;
	d->info = *info;
	snprintf(d->detail, sizeof d->detail, "%s", info->detail);
	d->thread = pthread_self();
	if (d->try_sync) {
		d->sync_status = wafer_sync(client);
		snprintf(d->sync_detail, sizeof d->sync_detail, "%s",
			 wafer_last_error());
	}
	if (d->try_close) {
		d->close_status = wafer_client_close(client);
		snprintf(d->close_detail, sizeof d->close_detail, "%s",
			 wafer_last_error());
	}
	if (d->try_alloc) {
		wafer_handle h = {0};
		d->alloc_status = wafer_empty(client, 4096, &h);
	}
	if (d->release.bits) {
		d->release_status = wafer_release(client, d->release);
		d->release.bits = 0;
	}
	return d->answer;
}

/* Two points: reserving 4 MiB more on |client|, past the limit, ends in
 * |want| (|what|), and calls the handler (its data |d|) once. */
static void reserve_past(wafer_client *client, const char *channel,
			 const struct handler_data *d, wafer_handle *c,
			 wafer_status want, const char *what)
{
	is_status(reserve(client, 4 * MiB, c), want, "%s: %s", channel, what);
	is_int(d->calls, 1, "%s: %s: the handler was called once", channel,
	       what);
}

static void test_channel(const char *channel)
{
	wafer_runtime *runtime = open_runtime("8M");
	wafer_client *client = open_client(runtime, channel);
	wafer_handle a, b, c;
	bool direct_or_mutex = strcmp(channel, "mpsc") != 0;
	bool queued = strcmp(channel, "direct") != 0;
	is_status(reserve(client, 4 * MiB, &a), WAFER_OK, "%s: 4 MiB", channel);
	is_status(reserve(client, 2 * MiB, &b), WAFER_OK, "%s: 2 MiB", channel);

	/* No handler: the limit's error. */
	is_status(reserve(client, 4 * MiB, &c), WAFER_ERROR_OUT_OF_MEMORY,
		  "%s: 4 MiB more passes an 8M limit", channel);
	const char *detail = last_detail;
	like(detail, "cannot reserve 4194304 bytes: 6291456 in use",
	     "%s: the detail gives asked and in use", channel);
	char want[256];
	snprintf(want, sizeof want,
		 "[memory] limit 8M (8388608 bytes, from %s:%d) reached on ",
		 conf, limit_line);
	like(detail, want, "%s: names the limit and its file and line",
	     channel);
	like(detail, "6291456 bytes reserved on the device",
	     "%s: and what the device holds", channel);

	/* A handler that declines: the same error. */
	struct handler_data d = {.answer = WAFER_OOM_FAIL};
	is_status(wafer_memory_set_oom_handler(client, handler, &d), WAFER_OK,
		  "%s: handler set", channel);
	reserve_past(client, channel, &d, &c, WAFER_ERROR_OUT_OF_MEMORY,
		     "declined: out of memory");
	like(last_detail, want, "%s: declined: the limit's detail",
	     channel);

	/* A handler that closes its client, or reserves on it, is refused
	 * and changes nothing: the reserve that called it fails as
	 * declined, and the client goes on. (On mpsc a reserve from the
	 * runner is queued behind the handler, which may wait for nothing.)
	 */
	d = (struct handler_data){.answer = WAFER_OOM_FAIL, .try_close = true,
				  .try_alloc = direct_or_mutex};
	reserve_past(client, channel, &d, &c, WAFER_ERROR_OUT_OF_MEMORY,
		     "close and reserve in the handler: out of memory");
	is_status(d.close_status, WAFER_ERROR_INVALID_ARGUMENT,
		  "%s: wafer_client_close inside the handler is refused",
		  channel);
	like(d.close_detail, "out-of-memory handler",
	     "%s: and says why", channel);
	if (direct_or_mutex)
		is_status(d.alloc_status, WAFER_ERROR_INVALID_ARGUMENT,
			  "%s: a reserve inside the handler is refused",
			  channel);
	is_status(reserve(client, 1 * MiB, &c), WAFER_OK,
		  "%s: the client is whole after the refused close", channel);
	wafer_release(client, c);

	/* A handler that releases a and retries; on mutex and mpsc it also
	 * tries a call that would wait for the client (refused: it would
	 * wait for itself). */
	d = (struct handler_data){.release = a, .answer = WAFER_OOM_RETRY,
				  .try_sync = queued};
	reserve_past(client, channel, &d, &c, WAFER_OK,
		     "the handler released 4 MiB, the retry succeeded");
	is_status(d.release_status, WAFER_OK,
		  "%s: wafer_release inside the handler", channel);
	is_int((long long)d.info.size, 4 * MiB, "%s: info: size", channel);
	is_int((long long)d.info.bytes_in_use, 6 * MiB, "%s: info: in use",
	       channel);
	is_int((long long)d.info.bytes_reserved, 6 * MiB,
	       "%s: info: reserved", channel);
	is_int((long long)d.info.device_reserved, 6 * MiB,
	       "%s: info: the device's", channel);
	is_int((long long)d.info.limit, 8 * MiB, "%s: info: limit", channel);
	like(d.detail, want, "%s: info: the detail", channel);
	if (strcmp(channel, "mpsc") == 0)
		ok(!pthread_equal(d.thread, pthread_self()),
		   "mpsc: the handler ran on the runner thread");
	else
		ok(pthread_equal(d.thread, pthread_self()),
		   "%s: the handler ran on the caller's thread", channel);
	if (queued) {
		is_status(d.sync_status, WAFER_ERROR_INVALID_ARGUMENT,
			  "%s: wafer_sync inside the handler is refused",
			  channel);
		like(d.sync_detail, "called from the client's out-of-memory "
				    "handler",
		     "%s: and says why", channel);
	}
	is_status(wafer_retain(client, a), WAFER_ERROR_INVALID_HANDLE,
		  "%s: the released handle is dead", channel);

	/* c is usable. */
	static uint32_t in[1024], out[1024];
	for (int i = 0; i < 1024; i++)
		in[i] = (uint32_t)i * 2654435761u;
	wafer_write(client, c, 4 * MiB - sizeof in, in, sizeof in);
	is_status(wafer_read(client, c, 4 * MiB - sizeof in, out, sizeof out),
		  WAFER_OK, "%s: read back from the new handle", channel);
	ok(memcmp(in, out, sizeof in) == 0, "%s: the bytes round-trip",
	   channel);
	wafer_memory_usage u = {.struct_size = sizeof u};
	wafer_memory_usage_get(client, &u);
	is_int((long long)u.bytes_in_use, 6 * MiB, "%s: in use: b and c",
	       channel);

	/* Removed: no call. */
	d.calls = 0;
	wafer_memory_set_oom_handler(client, NULL, NULL);
	is_status(reserve(client, 4 * MiB, &a), WAFER_ERROR_OUT_OF_MEMORY,
		  "%s: no handler: out of memory", channel);
	is_int(d.calls, 0, "%s: a removed handler is not called", channel);

	wafer_release(client, b);
	wafer_release(client, c);
	is_status(wafer_client_close(client), WAFER_OK, "%s: close", channel);
	wafer_runtime_close(runtime);
}

/* Two clients of one device share its limit. */
static void test_shared(void)
{
	wafer_runtime *runtime = open_runtime("8M");
	wafer_client *one = open_client(runtime, "direct");
	wafer_client *two = open_client(runtime, "direct");
	wafer_handle a, b;
	is_status(reserve(one, 6 * MiB, &a), WAFER_OK, "shared: 6 MiB on one");
	is_status(reserve(two, 4 * MiB, &b), WAFER_ERROR_OUT_OF_MEMORY,
		  "shared: 4 MiB on two passes the device's limit");
	like(last_detail,
	     "6291456 bytes reserved on the device (0 by this client)",
	     "shared: the detail tells the device's from the client's");
	wafer_release(one, a);
	wafer_memory_trim(one);
	is_status(reserve(two, 4 * MiB, &b), WAFER_OK,
		  "shared: fits once one gave its memory back");
	wafer_release(two, b);
	wafer_client_close(one);
	wafer_client_close(two);
	wafer_runtime_close(runtime);
}

/* 1% of the device's memory; a reserve past it fails without storage
 * holding a byte, whatever the device's size. */
static void test_percent(void)
{
	wafer_runtime *runtime = open_runtime("1%");
	wafer_client *client = open_client(runtime, "direct");
	wafer_device_desc desc = {.struct_size = sizeof desc};
	wafer_client_device(client, &desc);
	uint64_t limit = desc.memory_bytes / 100;
	struct handler_data d = {.answer = WAFER_OOM_FAIL};
	wafer_memory_set_oom_handler(client, handler, &d);
	wafer_handle a;
	is_status(reserve(client, (size_t)limit + 4 * MiB, &a),
		  WAFER_ERROR_OUT_OF_MEMORY, "1%%: past it: out of memory");
	is_int((long long)d.info.limit, (long long)limit,
	       "1%%: the limit is a hundredth of %llu bytes",
	       (unsigned long long)desc.memory_bytes);
	char want[128];
	snprintf(want, sizeof want, "[memory] limit 1%% (%llu bytes",
		 (unsigned long long)limit);
	like(last_detail, want, "1%%: the detail gives the bytes");
	wafer_memory_usage u = {.struct_size = sizeof u};
	wafer_memory_usage_get(client, &u);
	/* (An address range may have been reserved: it holds no bytes.) */
	is_int((long long)u.storage_maps, 0, "1%%: no page was mapped");
	is_int((long long)u.peak_reserved, 0, "1%%: no byte was ever held");
	wafer_client_close(client);
	wafer_runtime_close(runtime);
}

/* WAFER_MEMORY_LIMIT comes after the files. */
static void test_environment(void)
{
	setenv("WAFER_MEMORY_LIMIT", "4M", 1);
	wafer_runtime *runtime = open_runtime("8M");
	unsetenv("WAFER_MEMORY_LIMIT");
	wafer_client *client = open_client(runtime, "direct");
	wafer_handle a;
	is_status(reserve(client, 6 * MiB, &a), WAFER_ERROR_OUT_OF_MEMORY,
		  "environment: 6 MiB passes WAFER_MEMORY_LIMIT=4M");
	like(last_detail, "[memory] limit 4M (4194304 bytes, from environment "
			  "WAFER_MEMORY_LIMIT)",
	     "environment: the detail names the variable");
	wafer_client_close(client);
	wafer_runtime_close(runtime);
}

static void test_bad_value(void)
{
	wafer_runtime *runtime = open_runtime("120%");
	wafer_client *client = NULL;
	is_status(wafer_client_open(runtime, "default", NULL, &client),
		  WAFER_ERROR_CONFIG, "120%%: the client does not open");
	char want[128];
	snprintf(want, sizeof want, "%s:%d: [memory] limit: expected", conf,
		 limit_line);
	like(wafer_last_error(), want, "120%%: names the file and line");
	wafer_runtime_close(runtime);
}

int main(void)
{
	if (!mkdtemp(dir))
		bail_out("mkdtemp failed");
	snprintf(conf, sizeof conf, "%s/wafer.conf", dir);
	unsetenv("WAFER_MEMORY_LIMIT"); /* the limits here are the files' */
	const char *caller = getenv("WAFER_CONFIG");
	FILE *f = caller ? fopen(caller, "r") : NULL;
	if (f) {
		static char text[1 << 16];
		size_t n = fread(text, 1, sizeof text - 1, f);
		fclose(f);
		text[n] = '\0';
		caller_conf = text;
	}
	test_channel("direct");
	test_channel("mutex");
	test_channel("mpsc");
	test_shared();
	test_percent();
	test_environment();
	test_bad_value();
	unlink(conf);
	rmdir(dir);
	done_testing();
	return exit_status();
}
