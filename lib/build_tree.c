/* wafer — SPDX-License-Identifier: MIT
 *
 * The built-in directories: where plugins and the system configuration
 * are looked for when nothing (WAFER_PLUGIN_PATH, [core] plugin_path,
 * WAFER_SYSCONFDIR) says otherwise.
 *
 * Installed, they are the configured $(pkglibdir)/plugins and
 * $(sysconfdir)/wafer. A libwafer.so.0 that runs from its build tree
 * ($(abs_top_builddir)/.libs: a program, the Python module or
 * libwafer-torch.so linked against the build tree) uses that tree's
 * plugins and the source tree's etc/ instead, as ./uninstalled sets
 * them, so nothing installed on the machine is mixed with what was just
 * built and no wrapper is needed. The library finds where it was loaded
 * from with dladdr(3); the test programs that link the core statically
 * are not in .libs and keep the configured directories.
 */
#define _GNU_SOURCE
#include "build-config.h"

#include "lib/build_tree.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#ifndef WAFER_BUILDDIR
#error "WAFER_BUILDDIR must name the build tree (Makefile.am)"
#endif

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static bool in_build_tree;

static void detect(void)
{
	Dl_info info;
	char lib[PATH_MAX], libs[PATH_MAX];
	size_t n;

	if (!dladdr((void *)detect, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, lib) ||
	    !realpath(WAFER_BUILDDIR "/.libs", libs))
		return;
	n = strlen(libs);
	in_build_tree = strncmp(lib, libs, n) == 0 && lib[n] == '/' &&
			!strchr(lib + n + 1, '/');
}

bool wafer__running_from_build_tree(void)
{
	pthread_once(&detect_once, detect);
	return in_build_tree;
}

const char *wafer__builtin_plugin_path(void)
{
	return wafer__running_from_build_tree() ? WAFER_BUILD_PLUGIN_PATH
					       : WAFER_PLUGINDIR;
}

const char *wafer__builtin_sysconfdir(void)
{
	return wafer__running_from_build_tree() ? WAFER_SRCDIR "/etc"
					       : WAFER_SYSCONFDIR "/wafer";
}
