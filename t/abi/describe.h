/* wafer — SPDX-License-Identifier: MIT
 *
 * describe.h: the per-backend description the plugin-ABI suite reads
 * (t/abi/<backend>.backend; its form is in t/abi/README and wafer-plugin(7)).
 * One directive a line, `#` starts a comment, ${VAR} is the environment
 * variable VAR:
 *   plugin NAME|PATH        NAME.so on $WAFER_PLUGIN_PATH, then the
 *                           installed plugin directory; or a path
 *   option KEY VALUE        an init option (repeatable)
 *   env VAR VALUE           set before the plugin is loaded
 *   version VERSION         the version the descriptor must state
 *   offers GROUP...         optional groups the plugin must offer (a
 *                           group left out is judged by what the plugin
 *                           sets: NULL entries are a skip)
 *   unsupported NAME WHY    a group or test of the suite the plugin does
 *                           not support, skipped with WHY
 *   source FORMAT FILE      the suite's test kernels (wafer_test_saxpy,
 *                           wafer_test_tile2d) in program format FORMAT
 *                           (a number: 0x10001), for a format the suite
 *                           has no source in; FILE is relative to the
 *                           description's folder (repeatable) */
#ifndef WAFER_T_ABI_DESCRIBE_H
#define WAFER_T_ABI_DESCRIBE_H

#include <stddef.h>

#define ABI_MAX_OPTIONS 32

struct abi_pair {
	char *key;
	char *value;
	unsigned long format; /* source lines: the key as a number */
};

struct abi_description {
	char path[1024]; /* the description file */
	char *plugin;
	char *version;
	char offers[512]; /* " async vm timers " */
	struct abi_pair options[ABI_MAX_OPTIONS];
	size_t option_count;
	struct abi_pair env[ABI_MAX_OPTIONS];
	size_t env_count;
	struct abi_pair unsupported[ABI_MAX_OPTIONS];
	size_t unsupported_count;
	struct abi_pair sources[ABI_MAX_OPTIONS];
	size_t source_count;
	char error[1200];
};

/* Reads |file|; 0, or -1 with |d->error| naming the file and line. */
int abi_describe_read(const char *file, struct abi_description *d);
/* The path of the plugin's .so; -1 with |d->error| when not found. */
int abi_plugin_path(struct abi_description *d, char *out, size_t size);
/* The reason |name| is listed unsupported, or NULL. */
const char *abi_unsupported(const struct abi_description *d,
			    const char *name);
/* 1 when the description promises optional group |name|. */
int abi_offers(const struct abi_description *d, const char *name);
/* The file of a source line for program format |format|, or NULL. */
const char *abi_source(const struct abi_description *d,
		       unsigned long format);
void abi_describe_free(struct abi_description *d);

#endif
