/* wafer — SPDX-License-Identifier: MIT
 *
 * loader.h: loads one backend plugin (a `.so` exporting
 * wafer_plugin_query, see plugin.h) and decides whether the runtime can
 * use it. The runtime (lib/runtime.c) calls it once per name of the
 * `[core] backend` list.
 *
 * Search: a name containing '/' is a path and is opened as it is;
 * otherwise `<name>.so` is looked for in each directory of `[core]
 * plugin_path` (colon-separated; WAFER_PLUGIN_PATH sets it through the
 * configuration chain), first hit wins. When plugin_path is unset or
 * empty the built-in directories are searched (WAFER_PLUGINDIR, or the
 * build tree's plugins for a libwafer run from there: build_tree.h); an empty
 * element of the list ("/opt/x:" or "/a::/b") also stands for it, as in
 * MANPATH, so a user can add a directory in front of the system one.
 *
 * A plugin is accepted when it opens (dlopen RTLD_NOW | RTLD_LOCAL),
 * exports the query symbol, returns a descriptor for the core's ABI major
 * with every required entry, initialises, and reports at least one
 * device. Otherwise the loader says why, in words that lead the reason
 * text (and wafer-info shows verbatim):
 *
 *   not found in: <dir>:<dir>...        no <name>.so in any directory
 *   not found: <path>                   a path that names no file
 *   dlopen failed: <dlerror()>
 *   missing wafer_plugin_query
 *   query returned NULL: <plugin's detail>
 *   ABI major <theirs>, core speaks <ours>
 *   struct_size <n> too small for required entry <entry>
 *   missing required entry <entry>      e.g. "server.launch"
 *   init failed: <status>: <plugin's detail>
 *   no devices: <plugin's detail, or "device_count returned 0">
 *
 * A NULL optional entry (stream-ordered allocation, virtual memory, host
 * memory, timers) never rejects a plugin: the feature reads as not
 * supported. The loader keeps a normalised copy of the descriptor and of
 * its storage and server tables, each at the core's full struct size with
 * the entries a smaller (older-minor) plugin table lacks set to NULL, so
 * the rest of the core may read any field of them directly.
 *
 * Each plugin gets its own wafer_host_services: set_error writes the
 * calling thread's error detail (wafer_last_error), log writes a line
 * prefixed with the plugin's name ("wafer[cpu] info: ..."). The plugin's
 * init receives its own configuration section ([<name>]) as options, with
 * the origin of each value. */
#ifndef WAFER_CORE_LOADER_H
#define WAFER_CORE_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "lib/config.h"

/* One plugin the loader looked for. The report fields are filled as far
 * as loading got; the live fields only for an accepted plugin. */
struct wafer__loaded_plugin {
	/* Backend name: the name as asked for, or for a path the
	 * descriptor's name (the file's base name until it is known). */
	char *name;
	/* Resolved (absolute) file; NULL when none was found. */
	char *path;
	/* From the descriptor once it was read for the core's ABI major;
	 * NULL before that. */
	char *version;
	char *description;
	/* As the plugin declared them; 0 when unknown. */
	uint32_t abi_major;
	uint32_t abi_minor;
	uint32_t device_count;
	bool accepted;
	/* "" when accepted, else why not (see above). */
	char *reason;
	/* NULL, or what the loader warned about (a partial group it
	 * dropped, a newer minor), one line each. */
	char *warnings;
	/* NULL, or the names of its vendor values the core took
	 * ("sim-c (program format 0x10001)"), one line each. */
	char *vendor_names;

	/* Live plugin (accepted only; NULL/0 otherwise). */
	void *dl;
	void *state; /* from plugin->init */
	/* The normalised descriptor: points at |desc|, whose storage and
	 * server point at |storage| and |server|. */
	const struct wafer_plugin *plugin;
	struct wafer_plugin desc;
	struct wafer_storage_ops storage;
	struct wafer_server_ops server;
	/* Handed to the plugin; lives as long as it is loaded. */
	struct wafer_host_services host;
	/* The plugin's compiled-binary cache directory (host cache_load,
	 * cache_store); NULL: none, or the cache is off. */
	char *cache_dir;
	bool initialised;
};

/* Loads and checks the plugin |name_or_path|, reading `[core]
 * plugin_path` and the plugin's section from |config| (NULL: built-in
 * directory, no options).
 *
 * |*out_plugin| receives the record in every case but running out of
 * host memory, also when the plugin was rejected, because the caller
 * reports it; only an accepted record has a live plugin. Returns WAFER_OK
 * when accepted, else the reason's status with "<name> (<path>): <reason>"
 * as detail: WAFER_ERROR_NOT_FOUND (no file), WAFER_ERROR_ABI_MISMATCH,
 * WAFER_ERROR_NO_DEVICE (no devices), WAFER_ERROR_PLUGIN (everything
 * else), WAFER_ERROR_OUT_OF_MEMORY (and *out_plugin NULL). Release the
 * record with wafer__loader_unload either way. */
wafer_status wafer__loader_load(const struct wafer__config *config,
				const char *name_or_path,
				struct wafer__loaded_plugin **out_plugin);

/* Shuts an accepted plugin down (every device must be closed), unloads
 * it and frees the record. NULL is a no-op. */
void wafer__loader_unload(struct wafer__loaded_plugin *plugin);

/* For a message saying |plugin| lacks an optional group added in ABI
 * 1.|since|: " (built for ABI 1.1; the group came in 1.3)" when the
 * plugin targets an older minor (it is judged by that minor's rules), ""
 * otherwise. In the calling thread's buffer, valid until its next call. */
const char *wafer__loader_minor_note(const struct wafer_plugin *plugin,
				     unsigned since);

/* Calls the plugin's device_info for device |index| with struct_size set,
 * makes the name a terminated string, checks alloc_alignment (a power of
 * two, at least 16), and replaces the derived capability bits
 * (WAFER_CAP_STREAM_ORDERED_ALLOC, _VIRTUAL_MEMORY, _DEVICE_TIMERS,
 * _PROGRAMS, _PEER_COPY, _COLLECTIVES)
 * with what the optional entries offer; _PINNED_HOST is always cleared
 * (host_alloc is retired in ABI 1.1). On failure |*out|
 * is zeroed and the detail reads "<name>:<index>: device_info: ...". */
wafer_status wafer__loader_device_info(const struct wafer__loaded_plugin *plugin,
				       uint32_t index,
				       struct wafer_device_info *out);

/* The capability bits the core derives from |plugin|'s optional entries
 * (and |vm_granularity| > 0 for virtual memory). */
uint64_t wafer__loader_derived_caps(const struct wafer__loaded_plugin *plugin,
				    size_t vm_granularity);

#endif
