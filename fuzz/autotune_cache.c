/* wafer — SPDX-License-Identifier: MIT
 *
 * fuzz/autotune_cache.c: the autotune cache file reader
 * (lib/autotune/file.c) on any file contents. A file either loads, and
 * then every entry it gave names one of the operation's candidates, or it
 * is ignored; it never crashes the process (a NUL byte once did, in every
 * later process). The seed corpus holds a good file for the operation
 * below, so mutations reach the entries past the header and checksum. */
#include "build-config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/autotune/autotune.h"
#include "lib/log.h"
#include "lib/runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const wafer_tunable tunable = {
	.struct_size = sizeof tunable,
	.name = "fuzz",
};
static const struct wafer_plugin plugin = {
	.struct_size = sizeof plugin,
	.name = "cpu",
	.version = "1.0",
};
static struct wafer_runtime_device device = {
	.plugin = &plugin,
	.backend = "cpu",
	.info = {.struct_size = sizeof device.info, .name = "fuzz device"},
};
static struct wafer__tune_candidate candidates[] = {
	{.name = "fast"},
	{.name = "slow"},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	if (!path[0]) {
		wafer__log_set_level(WAFER_LOG_ERROR);
		snprintf(path, sizeof path, "/tmp/wafer-fuzz-%ld.cache",
			 (long)getpid());
	}
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);

	struct wafer__tune_op op = {
		.tunable = &tunable,
		.device = &device,
		.candidates = candidates,
		.candidate_count = 2,
		.checksum = UINT64_C(0x0123456789abcdef),
		.path = path,
		.warned = true, /* no warning per input */
	};
	wafer__tune_file_load(&op);
	for (size_t i = 0; i < op.entry_count; i++)
		if (strcmp(op.entries[i].winner, "fast") != 0 &&
		    strcmp(op.entries[i].winner, "slow") != 0)
			__builtin_trap();
	free(op.entries);
	return 0;
}
