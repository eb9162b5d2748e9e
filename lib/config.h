/* wafer — SPDX-License-Identifier: MIT
 *
 * config.h: the configuration chain (wafer.conf(5)). INI files, drop-in
 * directories, environment variables and API options are applied in
 * order into one table; a later source overrides an earlier one key by
 * key. Each value remembers where it came from, so every error can name
 * "file:line".
 *
 * Order (later wins), applied by wafer__config_load_chain():
 *   1. built-in defaults                      origin "default"
 *   2. $(sysconfdir)/wafer/wafer.conf
 *   3. $(sysconfdir)/wafer/conf.d/ *.conf     sorted by file name
 *   4. $XDG_CONFIG_HOME/wafer/wafer.conf      ($HOME/.config when unset)
 *   5. the file named by WAFER_CONFIG
 *   6. environment variables (secure_getenv)  origin "environment WAFER_X"
 *   7. API options (wafer_runtime_options)    origin "options"
 *
 * Syntax: `[section]` headers, `key = value` lines, blank lines, and
 * comment lines starting with '#' or ';'; a '#' after a blank starts a
 * comment that runs to the end of the line ("threads = 4  # per socket";
 * "a#b" keeps its '#'). Names are [A-Za-z0-9_.-]+ and case-sensitive;
 * values are trimmed and may be empty. A key before any section header is
 * an error, and so is an unknown key in [core] or [memory]; other
 * sections belong to plugins and memory strategies, which check their own
 * keys. Lines end in LF or CRLF and hold at most 4096 characters; a UTF-8
 * byte order mark at the start of a file is skipped.
 *
 * Threads: load and set from one thread; a loaded configuration may then
 * be read (lookup, get, section, sources) from any number of threads. */
#ifndef WAFER_CORE_CONFIG_H
#define WAFER_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <wafer/wafer.h>

struct wafer__config;

/* One value, with the place that set it last. Every string and record a
 * configuration hands out (entries, their strings, sources) stays valid
 * until wafer__config_destroy, also after a later source overrode it. */
struct wafer__config_entry {
	const char *section;
	const char *key;
	const char *value;
	const char *origin; /* "path:line", "environment WAFER_LOG", ... */
};

/* Where the chain's files and directories are; tests point these at
 * temporary directories. NULL members fall back to the built-in paths
 * and the real environment. The system directory is $WAFER_SYSCONFDIR
 * when that is set (it names the directory holding wafer.conf and
 * conf.d/, like the source tree's etc/), else SYSCONFDIR "/wafer" (the
 * source tree's etc/ for a libwafer run from its build tree: build_tree.h).
 * Every variable is read through |getenv|; an empty one counts as unset. */
struct wafer__config_paths {
	const char *system_file;   /* default: <system dir>/wafer.conf */
	const char *dropin_dir;    /* default: <system dir>/conf.d */
	/* Environment lookup; default secure_getenv. Tests pass a fake. */
	const char *(*getenv)(const char *name);
	/* true: read no files (WAFER_RUNTIME_NO_CONFIG_FILES); defaults,
	 * environment and options still apply. */
	bool no_files;
};

/* Creates an empty configuration holding only the built-in defaults. */
wafer_status wafer__config_create(struct wafer__config **out_config);
void wafer__config_destroy(struct wafer__config *config);

/* Applies the whole chain into |config|. With |tolerant| false the first
 * malformed line or unreadable file stops the load and returns
 * WAFER_ERROR_CONFIG with "path:line: reason" as detail; with |tolerant|
 * true every good line of every source is applied, each bad one is
 * logged as a warning and recorded in its source's detail, and the call
 * returns WAFER_OK. Missing files are never an error (state ABSENT).
 * |paths| and |options| may be NULL. */
wafer_status wafer__config_load_chain(struct wafer__config *config,
				      const struct wafer__config_paths *paths,
				      const wafer_option *options,
				      size_t option_count, bool tolerant);

/* Parses one file (or pipe) and applies it. A missing file is recorded
 * as ABSENT and returns WAFER_OK. */
wafer_status wafer__config_load_file(struct wafer__config *config,
				     const char *path, bool tolerant);

/* Applies every *.conf in |dir|, sorted by name (strcmp). A missing
 * directory is not an error; a drop-in that is not a regular file (a
 * FIFO) is a problem, never read. */
wafer_status wafer__config_load_dir(struct wafer__config *config,
				    const char *dir, bool tolerant);

/* Parses |text| as if it were a file called |name| (tests, API). */
wafer_status wafer__config_load_string(struct wafer__config *config,
				       const char *name, const char *text,
				       bool tolerant);

/* Sets one value (environment, options). Validates names and the keys
 * of [core] and [memory] like the parser does; a problem is
 * WAFER_ERROR_CONFIG with "origin: reason". |origin| NULL: "options". */
wafer_status wafer__config_set(struct wafer__config *config, const char *section,
			       const char *key, const char *value,
			       const char *origin);

/* The entry for section/key, or NULL when unset. */
const struct wafer__config_entry *
wafer__config_lookup(const struct wafer__config *config, const char *section,
		     const char *key);

/* The value for section/key, or |fallback| when unset. */
const char *wafer__config_get(const struct wafer__config *config,
			      const char *section, const char *key,
			      const char *fallback);

/* Every entry of |section| in first-set order (to hand a plugin its
 * section). Stores up to |capacity| pointers and returns how many there
 * are in total. */
size_t wafer__config_section(const struct wafer__config *config,
			     const char *section,
			     const struct wafer__config_entry **out_entries,
			     size_t capacity);

/* Typed getters. When the key is unset they store |fallback| and return
 * WAFER_OK; when the value does not parse they store |fallback| and
 * return WAFER_ERROR_CONFIG with
 * "origin: [section] key: expected ..., got '...'".
 *   bool:  1/0, true/false, yes/no, on/off (case-insensitive)
 *   size:  bytes with an optional suffix (case-insensitive, blanks
 *          allowed before it): B; K, M, G, T and KiB/MiB/GiB/TiB
 *          (powers of 1024); KB/MB/GB/TB (powers of 1000)
 *   uint:  a decimal integer
 *   double: a finite decimal number */
wafer_status wafer__config_get_bool(const struct wafer__config *config,
				    const char *section, const char *key,
				    bool fallback, bool *out_value);
wafer_status wafer__config_get_size(const struct wafer__config *config,
				    const char *section, const char *key,
				    uint64_t fallback, uint64_t *out_value);
wafer_status wafer__config_get_uint(const struct wafer__config *config,
				    const char *section, const char *key,
				    uint64_t fallback, uint64_t *out_value);
wafer_status wafer__config_get_double(const struct wafer__config *config,
				      const char *section, const char *key,
				      double fallback, double *out_value);

/* Splits a comma-separated list ("cuda, opencl, cpu") into trimmed,
 * non-empty items. Returns the number of items, stores up to |capacity|
 * (each item a malloc'd string the caller frees with free()) and sets
 * the slots past the last item to NULL. Out of host memory it frees what
 * it stored and returns 0. */
size_t wafer__config_split_list(const char *text, char **out_items,
				size_t capacity);

/* The sources applied so far, in order, for wafer-info. */
size_t wafer__config_source_count(const struct wafer__config *config);
const wafer_config_source *
wafer__config_source_at(const struct wafer__config *config, size_t index);

#endif
