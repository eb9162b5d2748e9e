/* wafer — SPDX-License-Identifier: MIT
 *
 * overrun.c: why the `direct` memory strategy exists. A kernel that writes
 * one float past its handle corrupts a neighbour silently when handles are
 * slices of pooled chunks; with `direct` every handle is its own storage
 * allocation, so AddressSanitizer (the ASan stage of ./quickstart check)
 * stops the program at the faulty write.
 *
 * Each case runs in a child process (the async test plugin's `overrun`
 * kernel); the parent checks how the child ended. Without sanitizers only
 * the structural part is checked: direct makes one storage allocation per
 * handle, so there is no neighbour inside the allocation to hide an
 * overrun in. */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "t/tap.h"

static wafer_runtime *runtime;

static wafer_client *open_async(const char *memory)
{
	wafer_client *client;
	wafer_client_options options = {.struct_size = sizeof options,
					 .channel = "direct",
					 .memory = memory};
	if (wafer_client_open(runtime, "async", &options, &client)) {
		printf("Bail out! client_open: %s\n", wafer_last_error());
		exit(1);
	}
	return client;
}

/* Runs the overrunning kernel on a 64-float handle; returns normally only
 * when nothing caught the write. */
static void run_overrun(const char *memory)
{
	wafer_client *client = open_async(memory);
	wafer_handle h, neighbour;
	wafer_empty(client, 64 * sizeof(float), &h);
	wafer_empty(client, 64 * sizeof(float), &neighbour);
	wafer_buffer_binding binding = {h, 0, 0};
	struct wafer_elementwise_params params = {64};
	wafer_execute_args args = {
		.struct_size = sizeof args,
		.kernel = "overrun",
		.dtype = WAFER_DTYPE_F32,
		.bindings = &binding,
		.binding_count = 1,
		.params = &params,
		.params_size = sizeof params,
		.global = {64, 1, 1},
	};
	wafer_execute(client, &args);
	wafer_sync(client);
	wafer_release(client, h);
	wafer_release(client, neighbour);
	wafer_client_close(client);
}

/* Forks, runs the overrun with |memory| in the child with its stderr in
 * |log|, and returns the child's wait status. */
static int in_child(const char *memory, const char *log)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (!freopen(log, "w", stderr))
			_exit(99);
		run_overrun(memory);
		_exit(0);
	}
	int status = -1;
	waitpid(pid, &status, 0);
	return status;
}

static int file_contains(const char *path, const char *needle)
{
	char buf[65536];
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

int main(void)
{
	char path[4096], log[4096];
	const char *builddir = getenv("T_BUILDDIR");
	if (!builddir) {
		printf("Bail out! T_BUILDDIR is not set (run through make check)\n");
		return 1;
	}
	snprintf(path, sizeof path, "%s/plugins/.libs", builddir);
	snprintf(log, sizeof log, "%s/overrun-child.log", builddir);
	wafer_option options[] = {{"core", "plugin_path", path},
				  {"core", "backend", "async"}};
	wafer_runtime_options ro = {.struct_size = sizeof ro,
				    .options = options,
				    .option_count = 2,
				    .flags = WAFER_RUNTIME_NO_CONFIG_FILES};
	if (wafer_runtime_open(&ro, &runtime)) {
		printf("Bail out! runtime_open: %s\n", wafer_last_error());
		return 1;
	}

	/* direct: one storage allocation per handle, no slack to hide in. */
	wafer_client *client = open_async("direct");
	wafer_handle h[4];
	wafer_memory_usage u = {.struct_size = sizeof u};
	for (int i = 0; i < 4; i++)
		wafer_empty(client, 256, &h[i]);
	wafer_memory_usage_get(client, &u);
	is_int((long long)u.storage_allocs, 4,
	       "direct: one storage allocation per handle");
	is_int((long long)u.bytes_reserved, 4 * 256,
	       "direct: reserves exactly the bytes asked");
	for (int i = 0; i < 4; i++)
		wafer_release(client, h[i]);
	wafer_memory_usage_get(client, &u);
	is_int((long long)u.storage_frees, 4, "direct: freed at release");
	wafer_client_close(client);

#if defined(WAFER_SANITIZED) && defined(__SANITIZE_ADDRESS__)
	int status = in_child("direct", log);
	ok(!(WIFEXITED(status) && WEXITSTATUS(status) == 0),
	   "direct + ASan: the overrunning kernel stops the program");
	ok(file_contains(log, "heap-buffer-overflow"),
	   "direct + ASan: reported as a heap-buffer-overflow");
	status = in_child("pool", log);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "pool + ASan: the same bug goes unnoticed (why direct exists)");
#else
	diag("not an ASan build: the overrun itself runs in the ASan stage");
#endif
	unlink(log);
	wafer_runtime_close(runtime);
	done_testing();
	return exit_status();
}
