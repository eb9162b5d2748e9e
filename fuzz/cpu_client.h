/* wafer — SPDX-License-Identifier: MIT
 *
 * fuzz/cpu_client.h: a client on the cpu plugin of this build tree, for
 * harnesses whose calls need one (fuzz/program_image.c, fuzz/dlpack.c).
 * fuzz/run.sh runs the harnesses from the build tree's top, where the
 * plugin is plugins/cpu/.libs/cpu.so. Opened once per process. */
#ifndef WAFER_FUZZ_CPU_CLIENT_H
#define WAFER_FUZZ_CPU_CLIENT_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include <wafer/wafer.h>

static inline wafer_client *fuzz_cpu_client(void)
{
	static wafer_client *client;
	if (client)
		return client;
	char dir[PATH_MAX];
	if (!realpath("plugins/cpu/.libs", dir)) {
		fprintf(stderr, "fuzz: run from the build tree's top "
				"(plugins/cpu/.libs not found)\n");
		abort();
	}
	const wafer_option options[] = {{"core", "plugin_path", dir},
					{"core", "backend", "cpu"},
					{"core", "cache_dir", "off"}};
	const wafer_runtime_options o = {.struct_size = sizeof o,
					 .options = options,
					 .option_count = 3};
	wafer_runtime *runtime;
	if (wafer_runtime_open(&o, &runtime) != WAFER_OK ||
	    wafer_client_open(runtime, "default", NULL, &client) != WAFER_OK) {
		fprintf(stderr, "fuzz: no cpu client: %s\n",
			wafer_last_error());
		abort();
	}
	return client;
}

#endif
