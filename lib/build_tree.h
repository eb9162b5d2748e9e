/* wafer — SPDX-License-Identifier: MIT
 *
 * The built-in plugin and configuration directories: the installed ones,
 * or the build tree's when libwafer runs from there (build_tree.c). */
#ifndef WAFER_CORE_BUILD_TREE_H
#define WAFER_CORE_BUILD_TREE_H

#include <stdbool.h>

/* Whether this libwafer is the build tree's .libs/libwafer.so. */
bool wafer__running_from_build_tree(void);
/* The plugin directories searched when [core] plugin_path is unset (and
 * what an empty element of it stands for): colon-separated. */
const char *wafer__builtin_plugin_path(void);
/* The directory holding wafer.conf and conf.d when WAFER_SYSCONFDIR is
 * unset. */
const char *wafer__builtin_sysconfdir(void);

#endif
