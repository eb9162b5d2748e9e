/* wafer — SPDX-License-Identifier: MIT
 * loader.c: finding, opening and checking one backend plugin (loader.h). */
#include "build-config.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <wafer/plugin.h>

#include "lib/build_tree.h"
#include <wafer/wafer.h>

#include "lib/binary_cache.h"
#include "lib/error.h"
#include "lib/loader.h"
#include "lib/plugin_file.h"
#include "lib/log.h"
#include "lib/value_names.h"


/*===----------------------------------------------------------------------===
 * Small helpers
 *===----------------------------------------------------------------------===*/

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* The calling thread's detail, or |fallback| when the plugin gave none. */
static const char *detail_or(const char *fallback)
{
	const char *detail = wafer__error_detail();
	return detail[0] ? detail : fallback;
}

static wafer_status out_of_memory(const char *what)
{
	return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
			   "plugin loader: out of host memory (%s)", what);
}

/* Records why |p| is not accepted and returns |status| with the reason,
 * the plugin's name and its file as the thread's detail. */
static wafer_status reject(struct wafer__loaded_plugin *p, wafer_status status,
			   const char *format, ...)
	__attribute__((format(printf, 3, 4)));
static wafer_status reject(struct wafer__loaded_plugin *p, wafer_status status,
			   const char *format, ...)
{
	char reason[WAFER_ERROR_DETAIL_MAX];
	va_list ap;

	va_start(ap, format);
	vsnprintf(reason, sizeof reason, format, ap);
	va_end(ap);
	free(p->reason);
	p->reason = strdup(reason); /* NULL on failure: reported as such */
	if (p->path)
		return wafer__fail(status, "%s (%s): %s", p->name, p->path,
				   reason);
	return wafer__fail(status, "%s: %s", p->name, reason);
}

/* Logs a warning about |p| and keeps it in |p->warnings| (one line each),
 * which wafer_runtime_plugin hands to wafer-info: what the loader says
 * about a plugin it accepts is in the report, not only on stderr. */
static void warn(struct wafer__loaded_plugin *p, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
static void warn(struct wafer__loaded_plugin *p, const char *format, ...)
{
	char line[WAFER_ERROR_DETAIL_MAX];
	size_t had = p->warnings ? strlen(p->warnings) : 0;
	va_list ap;
	char *all;

	va_start(ap, format);
	vsnprintf(line, sizeof line, format, ap);
	va_end(ap);
	wafer__log_warn("loader", "%s (%s): %s", p->name,
			p->path ? p->path : "built in", line);
	all = realloc(p->warnings, had + strlen(line) + 2);
	if (!all)
		return; /* logged; the report goes without it */
	snprintf(all + had, strlen(line) + 2, "%s%s", had ? "\n" : "", line);
	p->warnings = all;
}

/*===----------------------------------------------------------------------===
 * Host services handed to each plugin
 *===----------------------------------------------------------------------===*/

static void host_set_error(const char *format, ...)
	__attribute__((format(printf, 1, 2)));
static void host_set_error(const char *format, ...)
{
	va_list ap;

	va_start(ap, format);
	wafer__vfail(WAFER_OK, format, ap); /* only the text is kept */
	va_end(ap);
}

static void host_log(const struct wafer_host_services *host,
		     wafer_log_level level, const char *format, ...)
	__attribute__((format(printf, 3, 4)));
static void host_log(const struct wafer_host_services *host,
		     wafer_log_level level, const char *format, ...)
{
	const struct wafer__loaded_plugin *p = host ? host->host_data : NULL;
	va_list ap;

	if ((int)level < (int)WAFER_LOG_ERROR)
		level = WAFER_LOG_ERROR;
	if ((int)level > (int)WAFER_LOG_DEBUG)
		level = WAFER_LOG_DEBUG;
	if (!wafer__log_enabled(level))
		return;
	va_start(ap, format);
	wafer__vlog(level, p && p->name ? p->name : "plugin", format, ap);
	va_end(ap);
}

/* The compiled-binary cache (plugin.h), in the plugin's directory. */
static const char *host_cache_dir(const struct wafer_host_services *host)
{
	const struct wafer__loaded_plugin *p = host ? host->host_data : NULL;
	return p ? p->cache_dir : NULL;
}

static wafer_status host_cache_load(const struct wafer_host_services *host,
				    const struct wafer_cache_part *parts,
				    size_t part_count, void **out_data,
				    size_t *out_size)
{
	return wafer__binary_cache_load(host_cache_dir(host), host, parts,
					part_count, out_data, out_size);
}

static wafer_status host_cache_store(const struct wafer_host_services *host,
				     const struct wafer_cache_part *parts,
				     size_t part_count, const void *data,
				     size_t size)
{
	return wafer__binary_cache_store(host_cache_dir(host), host, parts,
					 part_count, data, size);
}

/*===----------------------------------------------------------------------===
 * Finding the file
 *===----------------------------------------------------------------------===*/

/* "/a/b/cuda.so" -> "cuda": the name a path-loaded plugin goes by until
 * its descriptor names it. */
static char *name_from_path(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t len;

	base = base && base[1] ? base + 1 : path;
	len = strlen(base);
	if (len > 3 && strcmp(base + len - 3, ".so") == 0)
		len -= 3;
	return strndup(base, len);
}

/* Absolute, symlink-free form of an existing |path| (kept as is when
 * realpath cannot resolve it). */
static char *resolve_path(const char *path)
{
	char *resolved = realpath(path, NULL);
	return resolved ? resolved : strdup(path);
}

/* 0 when |path| exists, else the errno of stat: ENOENT and ENOTDIR mean
 * "not there"; anything else (ELOOP, EACCES) is a file that is there
 * but cannot be used, and is reported as such. */
static int file_error(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? 0 : errno;
}

static wafer_status check_path(struct wafer__loaded_plugin *p, const char *path)
{
	int err = file_error(path);

	if (wafer__errno_absent(err))
		return reject(p, WAFER_ERROR_NOT_FOUND, "not found: %s", path);
	if (err)
		return reject(p, WAFER_ERROR_PLUGIN, "cannot use %s: %s", path,
			      strerror(err));
	p->path = resolve_path(path);
	return p->path ? WAFER_OK : out_of_memory("plugin path");
}

/* |setting| with each empty element replaced by the built-in directories
 * (build_tree.h), or the built-in directories when unset; NULL when out
 * of memory. */
static char *expand_plugin_path(const char *setting)
{
	const char *builtin = wafer__builtin_plugin_path();
	size_t empties = 0, size, used = 0;
	const char *element;
	char *out;

	if (!setting || !setting[0])
		return strdup(builtin);
	for (element = setting;; element++) {
		const char *end = strchr(element, ':');
		size_t len = end ? (size_t)(end - element) : strlen(element);
		empties += len == 0;
		if (!end)
			break;
		element = end;
	}
	size = strlen(setting) + empties * strlen(builtin) + 1;
	out = malloc(size);
	if (!out)
		return NULL;
	for (element = setting;;) {
		const char *end = strchr(element, ':');
		size_t len = end ? (size_t)(end - element) : strlen(element);
		int n = len ? snprintf(out + used, size - used, "%.*s%s",
				       (int)len, element, end ? ":" : "")
			    : snprintf(out + used, size - used, "%s%s",
				       builtin, end ? ":" : "");
		used += (size_t)n;
		if (!end)
			break;
		element = end + 1;
	}
	return out;
}

/* Looks for <name>.so in each directory of `[core] plugin_path`. */
static wafer_status search_path(struct wafer__loaded_plugin *p,
				const struct wafer__config *config,
				const char *name)
{
	char *path = expand_plugin_path(
		config ? wafer__config_get(config, "core", "plugin_path", NULL)
		       : NULL);
	char searched[WAFER_ERROR_DETAIL_MAX] = "";
	size_t used = 0;
	const char *element;

	if (!path)
		return out_of_memory("plugin path");
	for (element = path;;) {
		const char *end = strchr(element, ':');
		size_t len = end ? (size_t)(end - element) : strlen(element);
		char candidate[PATH_MAX];
		int n = snprintf(candidate, sizeof candidate, "%.*s/%s.so",
				 (int)len, element, name);

		if (len && n > 0 && (size_t)n < sizeof candidate) {
			int err = file_error(candidate);
			if (err == 0) {
				p->path = resolve_path(candidate);
				free(path);
				return p->path ? WAFER_OK
					       : out_of_memory("plugin path");
			}
			if (!wafer__errno_absent(err)) {
				free(path);
				return reject(p, WAFER_ERROR_PLUGIN,
					      "cannot use %s: %s", candidate,
					      strerror(err));
			}
		}
		if (used < sizeof searched) {
			n = snprintf(searched + used, sizeof searched - used,
				     "%s%.*s", used ? ":" : "", (int)len,
				     element);
			if (n > 0)
				used += (size_t)n;
		}
		if (!end)
			break;
		element = end + 1;
	}
	free(path);
	return reject(p, WAFER_ERROR_NOT_FOUND, "not found in: %s", searched);
}

/*===----------------------------------------------------------------------===
 * Checking the descriptor
 *===----------------------------------------------------------------------===*/

/* A required entry: where it lies in its table, and its name in
 * messages. */
struct required_entry {
	const char *label;
	size_t offset;
	size_t end;
};

#define REQUIRED(type, prefix, field)                                          \
	{                                                                      \
		prefix #field, offsetof(type, field),                          \
			offsetof(type, field) + sizeof(((type *)0)->field)     \
	}

#define PLUGIN_REQUIRED(field) REQUIRED(struct wafer_plugin, "", field)
#define STORAGE_REQUIRED(field)                                                \
	REQUIRED(struct wafer_storage_ops, "storage.", field)
#define SERVER_REQUIRED(field)                                                 \
	REQUIRED(struct wafer_server_ops, "server.", field)

/* Required per plugin.h. device_close and queue_destroy are the free
 * entries of device_open and queue_create, so they are required too. */
static const struct required_entry plugin_required[] = {
	PLUGIN_REQUIRED(name), PLUGIN_REQUIRED(init), PLUGIN_REQUIRED(shutdown),
	PLUGIN_REQUIRED(device_count), PLUGIN_REQUIRED(device_info),
	PLUGIN_REQUIRED(device_open), PLUGIN_REQUIRED(device_close),
	PLUGIN_REQUIRED(device_kernels), PLUGIN_REQUIRED(storage),
	PLUGIN_REQUIRED(server),
};

static const struct required_entry storage_required[] = {
	STORAGE_REQUIRED(alloc), STORAGE_REQUIRED(free),
	STORAGE_REQUIRED(copy_in), STORAGE_REQUIRED(copy_out),
	STORAGE_REQUIRED(copy),
};

static const struct required_entry server_required[] = {
	SERVER_REQUIRED(queue_create), SERVER_REQUIRED(queue_destroy),
	SERVER_REQUIRED(launch), SERVER_REQUIRED(sync),
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Checks that a table the plugin gave with |given_size| reaches every
 * required entry and that none is NULL in its normalised copy |table|. */
static wafer_status check_required(struct wafer__loaded_plugin *p,
				   const void *table, size_t given_size,
				   const struct required_entry *entries,
				   size_t count)
{
	for (size_t i = 0; i < count; i++) {
		const unsigned char *bytes =
			(const unsigned char *)table + entries[i].offset;
		bool present = false;

		if (given_size < entries[i].end)
			return reject(p, WAFER_ERROR_PLUGIN,
				      "struct_size %zu too small for required "
				      "entry %s",
				      given_size, entries[i].label);
		for (size_t b = 0; b < entries[i].end - entries[i].offset; b++)
			present = present || bytes[b] != 0;
		if (!present)
			return reject(p, WAFER_ERROR_PLUGIN,
				      "missing required entry %s",
				      entries[i].label);
	}
	return WAFER_OK;
}

/* Copies a table of |given_size| bytes into |dst| of |full_size| bytes:
 * what the plugin lacks reads as NULL, what the core does not know is
 * dropped. */
static void normalise(void *dst, size_t full_size, const void *src,
		      size_t given_size)
{
	memset(dst, 0, full_size);
	memcpy(dst, src, min_size(given_size, full_size));
	*(size_t *)dst = full_size;
}

/* Takes the plugin's table |src| of |given_size| bytes (its struct_size)
 * into |dst| (normalise) and checks the |count| entries it requires. */
static wafer_status take_table(struct wafer__loaded_plugin *p, void *dst,
			       size_t full_size, const void *src,
			       size_t given_size,
			       const struct required_entry *required,
			       size_t count)
{
	normalise(dst, full_size, src, given_size);
	return check_required(p, dst, given_size, required, count);
}

/* take_table of |src| into p->|field|, checked against |required|. */
#define TAKE_TABLE(p, field, src, required)                                    \
	take_table(p, &(p)->field, sizeof (p)->field, src, (src)->struct_size, \
		   required, ARRAY_SIZE(required))

static bool valid_backend_name(const char *name)
{
	if (!name[0])
		return false;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
		      *c == '_'))
			return false;
	return true;
}

/* One entry of a group: its name and where it is in the normalised
 * storage (|server| false) or server table. */
struct group_entry {
	const char *name;
	bool server;
	size_t offset;
};

#define STORAGE_ENTRY(field) {#field, false, offsetof(struct wafer_storage_ops, field)}
#define SERVER_ENTRY(field) {#field, true, offsetof(struct wafer_server_ops, field)}

/* The groups of plugin.h, with the minor that added each: programs and
 * figure (ABI 1.2); interop (1.3), one group of five, since the core
 * learns the device's buffer kind from queue_native before it hands
 * import a buffer; collectives and peer copy (1.4); events (1.5: without
 * them the core orders a client's queues on the host); native graphs
 * (1.6: without them the core replays graphs); registered host memory
 * (1.7: without it copies are staged); sub-communicators and grouped
 * collectives (1.7: without them wafer_comm_split is not supported and
 * each collective is issued alone); vm maps in pieces (1.7: without it a
 * vm_map call per piece). A group is |name| in messages; |off| is the
 * feature that goes without it; its entries end at the first without a
 * name. */
static const struct entry_group {
	unsigned since;
	const char *name;
	const char *off;
	struct group_entry entries[8]; /* the largest group, events */
} entry_groups[] = {
	{2, "program", "programs",
	 {SERVER_ENTRY(program_formats), SERVER_ENTRY(program_load),
	  SERVER_ENTRY(program_kernel), SERVER_ENTRY(program_release)}},
	{2, "figure", "figures", {STORAGE_ENTRY(figure)}},
	{3, "interop", "interop",
	 {STORAGE_ENTRY(native), STORAGE_ENTRY(import), STORAGE_ENTRY(forget),
	  SERVER_ENTRY(queue_native), SERVER_ENTRY(queue_wrap)}},
	{4, "comm", "collectives",
	 {SERVER_ENTRY(comm_id), SERVER_ENTRY(comm_open),
	  SERVER_ENTRY(comm_close), SERVER_ENTRY(comm_run)}},
	{4, "copy_peer", "peer copy (staged through the host)",
	 {STORAGE_ENTRY(copy_peer)}},
	{5, "event", "events (queues ordered on the host)",
	 {SERVER_ENTRY(event_create), SERVER_ENTRY(event_destroy),
	  SERVER_ENTRY(event_record), SERVER_ENTRY(queue_wait_event),
	  SERVER_ENTRY(event_sync), SERVER_ENTRY(event_query),
	  SERVER_ENTRY(event_elapsed), SERVER_ENTRY(queue_callback)}},
	{6, "graph", "native graphs (the core replays them)",
	 {SERVER_ENTRY(graph_begin), SERVER_ENTRY(graph_end),
	  SERVER_ENTRY(graph_launch), SERVER_ENTRY(graph_destroy)}},
	{7, "host memory", "registered host memory (copies from it are staged)",
	 {STORAGE_ENTRY(host_register), STORAGE_ENTRY(host_unregister),
	  STORAGE_ENTRY(copy_in_registered),
	  STORAGE_ENTRY(copy_out_registered)}},
	{7, "comm_split", "sub-communicators", {SERVER_ENTRY(comm_split)}},
	{7, "comm_group", "grouped collectives (each issued alone)",
	 {SERVER_ENTRY(comm_group_begin), SERVER_ENTRY(comm_group_end)}},
	{7, "vm_map_pieces", "vm maps in pieces (a vm_map call each)",
	 {STORAGE_ENTRY(vm_map_pieces)}},
};

/* Where |e| lies in the plugin's normalised tables. */
static unsigned char *entry_at(struct wafer__loaded_plugin *p,
			       const struct group_entry *e)
{
	return (e->server ? (unsigned char *)&p->server
			  : (unsigned char *)&p->storage) +
	       e->offset;
}

/* Entries used in groups: a group the plugin gave only part of is
 * dropped with a warning naming what it has, what it lacks and the
 * feature that goes off, as if it had none, so that the rest of the core
 * may test one entry of a group and use them all. So is a group added in
 * ABI 1.|since| that a plugin declaring an older minor sets: it is
 * judged by the minor it declares. */
static void whole_group(struct wafer__loaded_plugin *p,
			const struct entry_group *g)
{
	char has[160] = "", lacks[sizeof has] = "";
	size_t count = 0, n = 0;

	for (; n < ARRAY_SIZE(g->entries) && g->entries[n].name; n++) {
		const unsigned char *entry = entry_at(p, &g->entries[n]);
		bool given = false;
		char *list;
		size_t used;

		for (size_t b = 0; b < sizeof(void (*)(void)); b++)
			given = given || entry[b] != 0;
		list = given ? has : lacks;
		used = strlen(list);
		snprintf(list + used, sizeof has - used, " %s",
			 g->entries[n].name);
		count += given;
	}
	if (!count)
		return;
	if (p->abi_minor < g->since)
		warn(p, "declares ABI 1.%u but sets%s, which came in 1.%u: %s "
			"off",
		     p->abi_minor, has, g->since, g->off);
	else if (count == n)
		return;
	else
		warn(p, "%s entries come together; it has%s but not%s: %s off",
		     g->name, has, lacks, g->off);
	for (size_t i = 0; i < n; i++)
		memset(entry_at(p, &g->entries[i]), 0, sizeof(void (*)(void)));
}

static void whole_groups(struct wafer__loaded_plugin *p)
{
	for (size_t i = 0; i < ARRAY_SIZE(entry_groups); i++)
		whole_group(p, &entry_groups[i]);
}

/* A minor only appends (plugin.h), so a plugin built for a newer one
 * works through what this core knows; it loads, with a warning that what
 * it added later is not used. */
static void newer_minor(struct wafer__loaded_plugin *p)
{
	if (p->abi_minor > WAFER_PLUGIN_ABI_MINOR)
		warn(p,
		     "built for ABI %u.%u, newer than this core's %u.%u: "
		     "what it has of ABI %u.%u and later is not used (a wafer "
		     "of that release uses it all)",
		     p->abi_major, p->abi_minor,
		     (unsigned)WAFER_PLUGIN_ABI_MAJOR,
		     (unsigned)WAFER_PLUGIN_ABI_MINOR, p->abi_major,
		     (unsigned)WAFER_PLUGIN_ABI_MINOR + 1);
}

const char *wafer__loader_minor_note(const struct wafer_plugin *plugin,
				     unsigned since)
{
	static _Thread_local char note[80];

	if (plugin->abi_minor >= since)
		return "";
	snprintf(note, sizeof note,
		 " (built for ABI 1.%u; the group came in 1.%u)",
		 plugin->abi_minor, since);
	return note;
}

/* The names the plugin gives its vendor values (ABI 1.7): each one the
 * core accepts is registered (value_names.h) and listed in
 * |p->vendor_names| for its report; one it does not is a warning. */
static void vendor_names(struct wafer__loaded_plugin *p)
{
	const struct wafer_vendor_name *names = p->desc.vendor_names;
	size_t count = p->desc.vendor_name_count, stride, had;

	if (!names != !count) {
		warn(p, "vendor_names and vendor_name_count come together; "
			"it has one but not the other: vendor names off");
		return;
	}
	if (!names)
		return;
	if (p->abi_minor < 7) {
		warn(p, "declares ABI 1.%u but sets vendor_names, which came "
			"in 1.7: vendor names off", p->abi_minor);
		return;
	}
	stride = names->struct_size;
	if (stride < offsetof(struct wafer_vendor_name, name) +
			     sizeof names->name) {
		warn(p, "vendor_names: struct_size %zu too small: vendor "
			"names off", stride);
		return;
	}
	for (size_t i = 0; i < count; i++) {
		const struct wafer_vendor_name *n =
			(const void *)((const char *)names + i * stride);
		char why[256], line[WAFER_VENDOR_NAME_MAX + 40], *all;

		if (wafer__vendor_name_register(n->what, n->value, n->name,
						why, sizeof why) != 0) {
			warn(p, "vendor_names[%zu]: %s", i, why);
			continue;
		}
		snprintf(line, sizeof line, "%s (%s %#x)", n->name,
			 wafer__vendor_what(n->what), n->value);
		had = p->vendor_names ? strlen(p->vendor_names) : 0;
		all = realloc(p->vendor_names, had + strlen(line) + 2);
		if (!all)
			return; /* registered; the report goes without it */
		snprintf(all + had, strlen(line) + 2, "%s%s", had ? "\n" : "",
			 line);
		p->vendor_names = all;
	}
}

/* Reads the descriptor |d| the query returned into |p|. */
static wafer_status check_descriptor(struct wafer__loaded_plugin *p,
				     const struct wafer_plugin *d, bool by_path)
{
	static const struct required_entry abi_fields[] = {
		PLUGIN_REQUIRED(abi_major), PLUGIN_REQUIRED(abi_minor)};
	wafer_status status;

	/* struct_size, abi_major and abi_minor are read before anything
	 * else: they stay where they are in every major. */
	if (d->struct_size < abi_fields[1].end)
		return reject(p, WAFER_ERROR_PLUGIN,
			      "struct_size %zu too small for required entry "
			      "abi_minor",
			      d->struct_size);
	p->abi_major = d->abi_major;
	p->abi_minor = d->abi_minor;
	if (d->abi_major != WAFER_PLUGIN_ABI_MAJOR)
		return reject(p, WAFER_ERROR_ABI_MISMATCH,
			      "ABI major %u, core speaks %u", d->abi_major,
			      (unsigned)WAFER_PLUGIN_ABI_MAJOR);

	/* The descriptor's storage and server are required: the second and
	 * third tables are there once the first passes. */
	status = TAKE_TABLE(p, desc, d, plugin_required);
	if (status == WAFER_OK)
		status = TAKE_TABLE(p, storage, p->desc.storage,
				    storage_required);
	if (status == WAFER_OK)
		status = TAKE_TABLE(p, server, p->desc.server, server_required);
	if (status != WAFER_OK)
		return status;
	p->desc.storage = &p->storage;
	p->desc.server = &p->server;
	p->plugin = &p->desc;
	newer_minor(p);
	whole_groups(p);
	vendor_names(p);

	if (!valid_backend_name(p->desc.name))
		return reject(p, WAFER_ERROR_PLUGIN,
			      "invalid name '%.64s' (want [a-z0-9_]+)",
			      p->desc.name);
	p->version = strdup(p->desc.version ? p->desc.version : "unknown");
	p->description =
		strdup(p->desc.description ? p->desc.description : "");
	if (!p->version || !p->description)
		return out_of_memory("plugin version");
	if (by_path) {
		char *name = strdup(p->desc.name);
		if (!name)
			return out_of_memory("plugin name");
		free(p->name);
		p->name = name;
	} else if (strcmp(p->name, p->desc.name) != 0) {
		wafer__log_warn("loader",
				"%s declares the name '%s'; it is known as "
				"'%s', as listed",
				p->path, p->desc.name, p->name);
	}
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Opening, querying, initialising
 *===----------------------------------------------------------------------===*/

static wafer_status open_and_query(struct wafer__loaded_plugin *p, bool by_path)
{
	wafer_plugin_query_fn query;
	const struct wafer_plugin *d;
	void *symbol;

	char unfit[256];
	if (!wafer__plugin_file_check(p->path, unfit, sizeof unfit))
		return reject(p, WAFER_ERROR_PLUGIN, "not loaded: %s", unfit);
	dlerror();
	p->dl = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
	if (!p->dl) {
		const char *why = dlerror();
		return reject(p, WAFER_ERROR_PLUGIN, "dlopen failed: %s",
			      why ? why : "unknown error");
	}
	dlerror();
	symbol = dlsym(p->dl, WAFER_PLUGIN_QUERY_SYMBOL);
	if (!symbol)
		return reject(p, WAFER_ERROR_PLUGIN,
			      "missing " WAFER_PLUGIN_QUERY_SYMBOL);
	memcpy(&query, &symbol, sizeof query); /* object to function pointer */

	p->host = (struct wafer_host_services){
		.struct_size = sizeof p->host,
		.abi_major = WAFER_PLUGIN_ABI_MAJOR,
		.abi_minor = WAFER_PLUGIN_ABI_MINOR,
		.set_error = host_set_error,
		.log = host_log,
		.host_data = p,
		.cache_load = host_cache_load,
		.cache_free = wafer__binary_cache_free,
		.cache_store = host_cache_store,
	};
	wafer__error_clear();
	d = query(WAFER_PLUGIN_ABI_MAJOR, &p->host);
	if (!d)
		return reject(p, WAFER_ERROR_PLUGIN, "query returned NULL: %s",
			      detail_or("(no detail)"));
	return check_descriptor(p, d, by_path);
}

/* The plugin's config section as init options; strings stay owned by
 * |config|. */
static wafer_status plugin_options(const struct wafer__config *config,
				   const char *section,
				   struct wafer_plugin_option **out_options,
				   size_t *out_count)
{
	const struct wafer__config_entry *none = NULL;
	const struct wafer__config_entry **entries;
	struct wafer_plugin_option *options;
	size_t count;

	*out_options = NULL;
	*out_count = 0;
	if (!config)
		return WAFER_OK;
	count = wafer__config_section(config, section, &none, 0);
	if (count == 0)
		return WAFER_OK;
	entries = calloc(count, sizeof *entries);
	options = calloc(count, sizeof *options);
	if (!entries || !options) {
		free(entries);
		free(options);
		return out_of_memory("plugin options");
	}
	count = min_size(count,
			 wafer__config_section(config, section, entries, count));
	for (size_t i = 0; i < count; i++)
		options[i] = (struct wafer_plugin_option){
			.struct_size = sizeof options[i],
			.key = entries[i]->key,
			.value = entries[i]->value,
			.origin = entries[i]->origin,
		};
	free(entries);
	*out_options = options;
	*out_count = count;
	return WAFER_OK;
}

static wafer_status init_plugin(struct wafer__loaded_plugin *p,
				const struct wafer__config *config)
{
	struct wafer_plugin_option *options;
	size_t option_count;
	void *state = NULL;
	wafer_status status;

	/* Before init: a plugin may build (and cache) binaries there. */
	status = wafer__binary_cache_dir(config, p->name, &p->cache_dir);
	if (status != WAFER_OK)
		return status;
	status = plugin_options(config, p->name, &options, &option_count);
	if (status != WAFER_OK)
		return status;
	struct wafer_plugin_init_args args = {
		.struct_size = sizeof args,
		.options = options,
		.option_count = option_count,
		.host = &p->host,
	};
	wafer__error_clear();
	status = p->desc.init(&args, &state);
	free(options);
	if (status != WAFER_OK)
		return reject(p, WAFER_ERROR_PLUGIN, "init failed: %s: %s",
			      wafer_status_string(status),
			      detail_or("(no detail)"));
	p->state = state;
	p->initialised = true;
	return WAFER_OK;
}

static wafer_status count_devices(struct wafer__loaded_plugin *p)
{
	uint32_t count = 0;
	wafer_status status;

	wafer__error_clear();
	status = p->desc.device_count(p->state, &count);
	if (status != WAFER_OK)
		return reject(p, WAFER_ERROR_NO_DEVICE, "no devices: %s",
			      detail_or(wafer_status_string(status)));
	if (count == 0)
		return reject(p, WAFER_ERROR_NO_DEVICE,
			      "no devices: device_count returned 0");
	p->device_count = count;
	return WAFER_OK;
}

/* Shuts down and unloads whatever of |p| is live; the report stays. */
static void unload_live(struct wafer__loaded_plugin *p)
{
	if (p->initialised)
		p->desc.shutdown(p->state);
	p->initialised = false;
	p->state = NULL;
	p->plugin = NULL;
	p->accepted = false;
	if (p->dl)
		dlclose(p->dl);
	p->dl = NULL;
}

static wafer_status load_steps(struct wafer__loaded_plugin *p,
			       const struct wafer__config *config,
			       const char *name_or_path, bool by_path)
{
	wafer_status status;

	status = by_path ? check_path(p, name_or_path)
			 : search_path(p, config, name_or_path);
	if (status == WAFER_OK)
		status = open_and_query(p, by_path);
	if (status == WAFER_OK)
		status = init_plugin(p, config);
	if (status == WAFER_OK)
		status = count_devices(p);
	return status;
}

/*===----------------------------------------------------------------------===
 * Public (core-internal) entries
 *===----------------------------------------------------------------------===*/

wafer_status wafer__loader_load(const struct wafer__config *config,
				const char *name_or_path,
				struct wafer__loaded_plugin **out_plugin)
{
	struct wafer__loaded_plugin *p;
	bool by_path;
	wafer_status status;

	if (!out_plugin)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer__loader_load: out_plugin is NULL");
	*out_plugin = NULL;
	if (!name_or_path || !name_or_path[0])
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer__loader_load: empty plugin name");
	p = calloc(1, sizeof *p);
	if (!p)
		return out_of_memory("plugin record");
	by_path = strchr(name_or_path, '/') != NULL;
	p->name = by_path ? name_from_path(name_or_path) : strdup(name_or_path);
	p->reason = strdup("");
	if (!p->name || !p->reason) {
		wafer__loader_unload(p);
		return out_of_memory("plugin name");
	}

	status = load_steps(p, config, name_or_path, by_path);
	if (status == WAFER_OK) {
		p->accepted = true;
		wafer__log_info("loader",
				"loaded %s %s from %s (ABI %u.%u, %u device%s)",
				p->name, p->version, p->path, p->abi_major,
				p->abi_minor, p->device_count,
				p->device_count == 1 ? "" : "s");
		*out_plugin = p;
		return WAFER_OK;
	}

	/* Keep the reason across the plugin's shutdown and dlclose, which
	 * may set an error of their own. */
	char detail[WAFER_ERROR_DETAIL_MAX];
	snprintf(detail, sizeof detail, "%s", wafer__error_detail());
	unload_live(p);
	if (status == WAFER_ERROR_OUT_OF_MEMORY) {
		wafer__loader_unload(p);
		return wafer__fail(status, "%s", detail);
	}
	/* "Not there" and "there but no device" are normal on a machine
	 * without that vendor's hardware; anything else is worth a look. */
	if (status == WAFER_ERROR_NOT_FOUND || status == WAFER_ERROR_NO_DEVICE)
		wafer__log_info("loader", "skipping %s", detail);
	else
		wafer__log_warn("loader", "rejected %s", detail);
	*out_plugin = p;
	return wafer__fail(status, "%s", detail);
}

void wafer__loader_unload(struct wafer__loaded_plugin *plugin)
{
	if (!plugin)
		return;
	unload_live(plugin);
	free(plugin->name);
	free(plugin->path);
	free(plugin->version);
	free(plugin->description);
	free(plugin->reason);
	free(plugin->warnings);
	free(plugin->vendor_names);
	free(plugin->cache_dir);
	free(plugin);
}

uint64_t wafer__loader_derived_caps(const struct wafer__loaded_plugin *plugin,
				    size_t vm_granularity)
{
	const struct wafer_storage_ops *s = &plugin->storage;
	const struct wafer_server_ops *q = &plugin->server;
	uint64_t caps = 0;

	if (s->alloc_async && s->free_async)
		caps |= WAFER_CAP_STREAM_ORDERED_ALLOC;
	if (s->vm_reserve && s->vm_release && s->vm_map && s->vm_unmap &&
	    vm_granularity > 0)
		caps |= WAFER_CAP_VIRTUAL_MEMORY;
	if (q->timer_begin && q->timer_end)
		caps |= WAFER_CAP_DEVICE_TIMERS;
	if (q->program_formats) /* the whole group (whole_groups) */
		caps |= WAFER_CAP_PROGRAMS;
	if (s->copy_peer)
		caps |= WAFER_CAP_PEER_COPY;
	if (q->comm_id) /* the whole group (whole_groups) */
		caps |= WAFER_CAP_COLLECTIVES;
	if (q->event_create) /* the whole group (whole_groups) */
		caps |= WAFER_CAP_EVENTS;
	if (q->graph_begin) /* the whole group (whole_groups) */
		caps |= WAFER_CAP_NATIVE_GRAPHS;
	if (s->host_register) /* the whole group (whole_groups) */
		caps |= WAFER_CAP_HOST_REGISTER;
	/* WAFER_CAP_PINNED_HOST is no longer derived: host_alloc/host_free
	 * are retired in ABI 1.1. It stays in DERIVED_CAPS so that a plugin
	 * claiming it has it cleared: the core never sets it. */
	return caps;
}

#define DERIVED_CAPS                                                           \
	(WAFER_CAP_STREAM_ORDERED_ALLOC | WAFER_CAP_VIRTUAL_MEMORY |           \
	 WAFER_CAP_DEVICE_TIMERS | WAFER_CAP_PINNED_HOST | WAFER_CAP_PROGRAMS |   \
	 WAFER_CAP_PEER_COPY | WAFER_CAP_COLLECTIVES | WAFER_CAP_EVENTS |     \
	 WAFER_CAP_NATIVE_GRAPHS | WAFER_CAP_HOST_REGISTER)

wafer_status wafer__loader_device_info(const struct wafer__loaded_plugin *plugin,
				       uint32_t index,
				       struct wafer_device_info *out)
{
	struct wafer_device_info info;
	wafer_status status;

	if (!out)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer__loader_device_info: out is NULL");
	memset(out, 0, sizeof *out);
	if (!plugin || !plugin->accepted)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer__loader_device_info: plugin %s",
				   plugin ? "not loaded" : "is NULL");
	if (index >= plugin->device_count)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s:%u: device_info: %s has %u device%s",
				   plugin->name, index, plugin->name,
				   plugin->device_count,
				   plugin->device_count == 1 ? "" : "s");

	memset(&info, 0, sizeof info);
	info.struct_size = sizeof info;
	wafer__error_clear();
	status = plugin->desc.device_info(plugin->state, index, &info);
	if (status != WAFER_OK)
		return wafer__fail(status, "%s:%u: device_info: %s",
				   plugin->name, index,
				   detail_or(wafer_status_string(status)));
	info.struct_size = sizeof info;
	info.name[WAFER_DEVICE_NAME_MAX - 1] = '\0';
	if (info.alloc_alignment < 16 ||
	    (info.alloc_alignment & (info.alloc_alignment - 1)) != 0)
		return wafer__fail(WAFER_ERROR_PLUGIN,
				   "%s:%u: device_info: alloc_alignment %zu is "
				   "not a power of two >= 16",
				   plugin->name, index, info.alloc_alignment);
	info.capabilities = (info.capabilities & ~DERIVED_CAPS) |
			    wafer__loader_derived_caps(plugin,
						       info.vm_granularity);
	*out = info;
	return WAFER_OK;
}
