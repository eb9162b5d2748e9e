/* wafer — SPDX-License-Identifier: MIT
 * newer_cpu.c: the cpu plugin of this build declaring ABI 1.99, a minor
 * newer than any core's, for the plugin-ABI suite (t/abi/newer_cpu.backend):
 * the core loads such a plugin with a warning and uses what it knows,
 * so the suite must judge it by its own minor and pass it as it passes
 * cpu. The cpu plugin is found beside this one in the build tree
 * ($T_BUILDDIR/../plugins/cpu/.libs/cpu.so). */
#include "build-config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>

static struct wafer_plugin newer;

WAFER_PLUGIN_EXPORT const struct wafer_plugin *
wafer_plugin_query(uint32_t core_abi_major,
		   const struct wafer_host_services *host)
{
	const char *builddir = getenv("T_BUILDDIR");
	wafer_plugin_query_fn query;
	const struct wafer_plugin *cpu;
	char path[4096];
	void *so, *symbol;

	snprintf(path, sizeof path, "%s/../plugins/cpu/.libs/cpu.so",
		 builddir ? builddir : ".");
	so = dlopen(path, RTLD_NOW | RTLD_LOCAL); /* kept while we live */
	symbol = so ? dlsym(so, WAFER_PLUGIN_QUERY_SYMBOL) : NULL;
	if (!symbol) {
		host->set_error("newer_cpu: %s: %s", path, dlerror());
		return NULL;
	}
	memcpy(&query, &symbol, sizeof query); /* object to function pointer */
	cpu = query(core_abi_major, host);
	if (!cpu || cpu->struct_size != sizeof newer)
		return cpu;
	newer = *cpu;
	newer.abi_minor = 99;
	return &newer;
}
