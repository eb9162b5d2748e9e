/* wafer — SPDX-License-Identifier: MIT
 * runtime.c: the runtime — configuration chain, backend plugins in the
 * order of `[core] backend`, their devices, and devices opened on demand
 * for clients (wafer.h, runtime.h).
 *
 * Everything but the open state of devices is fixed once
 * wafer_runtime_open returns, so the listing calls read it without a
 * lock. Each device has its own mutex around its reference count and
 * open/close, so a slow device_open (a CUDA context) holds up only the
 * clients of that device. */
#include "build-config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "lib/autotune/autotune.h"
#include "lib/config.h"
#include "lib/error.h"
#include "lib/loader.h"
#include "lib/log.h"
#include "lib/runtime.h"
#include "lib/trace.h"

/* One device of an accepted plugin. |pub| is what clients get; its
 * |device| and |kernels| are set only while |refs| > 0. */
struct runtime_device {
	struct wafer_runtime_device pub;
	struct wafer__loaded_plugin *owner;
	/* device_info at runtime open, for the device list. */
	struct wafer_device_info listed;
	pthread_mutex_t lock;
	unsigned refs;
};

/* One entry of `[core] backend`, loaded or not. */
struct runtime_backend {
	struct wafer__loaded_plugin *plugin;
	struct runtime_device *devices; /* plugin->device_count of them */
};

struct wafer_runtime {
	struct wafer__config *config;
	struct runtime_backend *backends;
	size_t backend_count;
	size_t device_count; /* over every accepted backend */
	atomic_size_t clients;
	/* Autotune choices of every client and device (lib/autotune/autotune.h). */
	struct wafer__tuner *tuner;
};

/*===----------------------------------------------------------------------===
 * Helpers
 *===----------------------------------------------------------------------===*/

static wafer_status out_of_memory(const char *what)
{
	return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
			   "runtime: out of host memory (%s)", what);
}

static const char *detail_or(const char *fallback)
{
	const char *detail = wafer__error_detail();
	return detail[0] ? detail : fallback;
}

static struct runtime_device *from_public(struct wafer_runtime_device *device)
{
	return (struct runtime_device *)((char *)device -
					 offsetof(struct runtime_device, pub));
}

/*===----------------------------------------------------------------------===
 * Opening: configuration, log level, backends
 *===----------------------------------------------------------------------===*/

static wafer_status apply_log_level(wafer_runtime *rt, bool tolerant)
{
	const struct wafer__config_entry *entry =
		wafer__config_lookup(rt->config, "core", "log");
	wafer_log_level level;

	if (!entry)
		return WAFER_OK;
	if (wafer__log_parse_level(entry->value, &level)) {
		wafer__log_set_level(level);
		return WAFER_OK;
	}
	if (!tolerant)
		return wafer__fail(WAFER_ERROR_CONFIG,
				   "%s: [core] log: expected error, warn, info "
				   "or debug, got '%.64s'",
				   entry->origin, entry->value);
	wafer__log_warn("config",
			"%s: [core] log: expected error, warn, info or debug, "
			"got '%.64s'; the level stays as it was",
			entry->origin, entry->value);
	return WAFER_OK;
}

/* Lists the devices of an accepted backend. A device whose device_info
 * fails is still listed (its index must stay stable) under a name that
 * says so; opening it reports the failure. */
static wafer_status list_devices(struct runtime_backend *b)
{
	struct wafer__loaded_plugin *p = b->plugin;

	b->devices = calloc(p->device_count, sizeof *b->devices);
	if (!b->devices)
		return out_of_memory("device list");
	for (uint32_t i = 0; i < p->device_count; i++) {
		struct runtime_device *d = &b->devices[i];

		d->owner = p;
		d->pub.plugin = p->plugin;
		d->pub.backend = p->name;
		d->pub.index = i;
		pthread_mutex_init(&d->lock, NULL);
		if (wafer__loader_device_info(p, i, &d->listed) != WAFER_OK) {
			wafer__log_warn("core", "%s", wafer__error_detail());
			d->listed.struct_size = sizeof d->listed;
			snprintf(d->listed.name, sizeof d->listed.name,
				 "(device_info failed)");
		}
		d->pub.info = d->listed;
	}
	return WAFER_OK;
}

static bool listed_before(char **items, size_t count, const char *item)
{
	for (size_t i = 0; i < count; i++)
		if (items[i] && strcmp(items[i], item) == 0)
			return true;
	return false;
}

/* Loads every plugin `[core] backend` names, in order. A plugin that is
 * missing or rejected is recorded with its reason; only running out of
 * memory fails. */
static wafer_status load_backends(wafer_runtime *rt)
{
	const struct wafer__config_entry *entry =
		wafer__config_lookup(rt->config, "core", "backend");
	const char *list = entry ? entry->value : "";
	char *none = NULL;
	size_t count = wafer__config_split_list(list, &none, 0);
	wafer_status status = WAFER_OK;
	char **items;

	free(none);
	if (count == 0) {
		wafer__log_info("core", "[core] backend lists no backends (%s)",
				entry ? entry->origin : "unset");
		return WAFER_OK;
	}
	items = calloc(count, sizeof *items);
	rt->backends = calloc(count, sizeof *rt->backends);
	if (!items || !rt->backends) {
		free(items);
		return out_of_memory("backend list");
	}
	if (wafer__config_split_list(list, items, count) != count) {
		/* It returns 0, having freed its items, when out of memory. */
		status = out_of_memory("backend list");
		goto out;
	}
	for (size_t i = 0; i < count && status == WAFER_OK; i++) {
		struct runtime_backend *b = &rt->backends[rt->backend_count];

		if (listed_before(items, i, items[i])) {
			wafer__log_warn("core", "%s: [core] backend lists %s "
					"twice; the second is ignored",
					entry->origin, items[i]);
			continue;
		}
		/* The record comes back also for a rejected plugin; only
		 * running out of memory leaves none. */
		wafer__loader_load(rt->config, items[i], &b->plugin);
		if (!b->plugin) {
			status = WAFER_ERROR_OUT_OF_MEMORY;
			break;
		}
		rt->backend_count++;
		if (!b->plugin->accepted)
			continue;
		status = list_devices(b);
		if (status == WAFER_OK)
			rt->device_count += b->plugin->device_count;
	}
	wafer__error_clear();
	if (status == WAFER_ERROR_OUT_OF_MEMORY)
		status = out_of_memory("loading backends");
out:
	for (size_t i = 0; i < count; i++)
		free(items[i]);
	free(items);
	return status;
}

static void free_runtime(wafer_runtime *rt)
{
	wafer__trace_runtime_closing(rt);
	wafer__tuner_destroy(rt->tuner);
	for (size_t i = rt->backend_count; i-- > 0;) {
		struct runtime_backend *b = &rt->backends[i];
		struct wafer__loaded_plugin *p = b->plugin;

		for (uint32_t k = 0; b->devices && k < p->device_count; k++) {
			struct runtime_device *d = &b->devices[k];

			if (d->refs) {
				wafer__log_warn("core",
						"%s:%u still acquired %u time%s "
						"at runtime close; closing it",
						p->name, k, d->refs,
						d->refs == 1 ? "" : "s");
				wafer__kernel_table_fini(&d->pub.kernel_table);
				p->desc.device_close(d->pub.device);
			}
			pthread_mutex_destroy(&d->lock);
		}
		free(b->devices);
		wafer__loader_unload(p);
	}
	free(rt->backends);
	wafer__config_destroy(rt->config);
	free(rt);
}

WAFER_API wafer_status wafer_runtime_open(const wafer_runtime_options *options,
					  wafer_runtime **out_runtime)
{
	const uint32_t known_flags = WAFER_RUNTIME_TOLERATE_CONFIG_ERRORS |
				     WAFER_RUNTIME_NO_CONFIG_FILES;
	const wafer_option *api_options = NULL;
	size_t option_count = 0;
	uint32_t flags = 0;
	wafer_runtime *rt;
	wafer_status status;

	if (!out_runtime)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_runtime_open: out_runtime is NULL");
	*out_runtime = NULL;
	if (options) {
		if (options->struct_size < sizeof(size_t))
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "wafer_runtime_open: "
					   "options->struct_size is %zu",
					   options->struct_size);
		if (WAFER_STRUCT_HAS(options, wafer_runtime_options,
				     option_count)) {
			api_options = options->options;
			option_count = options->option_count;
		}
		if (WAFER_STRUCT_HAS(options, wafer_runtime_options, flags))
			flags = options->flags;
		if (option_count && !api_options)
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "wafer_runtime_open: option_count "
					   "is %zu but options is NULL",
					   option_count);
		if (flags & ~known_flags)
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "wafer_runtime_open: unknown flags "
					   "0x%x",
					   (unsigned)(flags & ~known_flags));
	}
	bool tolerant = flags & WAFER_RUNTIME_TOLERATE_CONFIG_ERRORS;

	rt = calloc(1, sizeof *rt);
	if (!rt)
		return out_of_memory("runtime");
	atomic_init(&rt->clients, 0);
	status = wafer__config_create(&rt->config);
	if (status == WAFER_OK) {
		struct wafer__config_paths paths = {
			.no_files = flags & WAFER_RUNTIME_NO_CONFIG_FILES,
		};
		status = wafer__config_load_chain(rt->config, &paths,
						  api_options, option_count,
						  tolerant);
	}
	if (status == WAFER_OK)
		status = apply_log_level(rt, tolerant);
	if (status == WAFER_OK)
		status = wafer__tuner_create(rt->config, tolerant, &rt->tuner);
	if (status == WAFER_OK)
		status = load_backends(rt);
	if (status == WAFER_OK)
		status = wafer__trace_runtime_opened(rt, rt->config);
	if (status != WAFER_OK) {
		char detail[WAFER_ERROR_DETAIL_MAX];
		snprintf(detail, sizeof detail, "%s", wafer__error_detail());
		free_runtime(rt);
		return wafer__fail(status, "%s", detail);
	}
	wafer__log_info("core", "runtime: %zu backend%s, %zu device%s",
			rt->backend_count, rt->backend_count == 1 ? "" : "s",
			rt->device_count, rt->device_count == 1 ? "" : "s");
	*out_runtime = rt;
	return WAFER_OK;
}

WAFER_API void wafer_runtime_close(wafer_runtime *runtime)
{
	size_t clients;

	if (!runtime)
		return;
	clients = atomic_load(&runtime->clients);
	if (clients) {
		wafer__log_error("core",
				 "wafer_runtime_close: %zu client%s still open; "
				 "leaking the runtime rather than unloading "
				 "plugins under %s",
				 clients, clients == 1 ? "" : "s",
				 clients == 1 ? "it" : "them");
		return;
	}
	free_runtime(runtime);
}

/*===----------------------------------------------------------------------===
 * Listing: devices, sources, plugins, values
 *===----------------------------------------------------------------------===*/

/* A listing call asked for entry |index| of the runtime's |count|
 * |what|s. */
static wafer_status out_of_range(const char *call, size_t index,
				 size_t count, const char *what)
{
	return wafer__fail(WAFER_ERROR_OUT_OF_RANGE,
			   "%s: index %zu, runtime has %zu %s%s", call, index,
			   count, what, count == 1 ? "" : "s");
}

WAFER_API size_t wafer_runtime_device_count(const wafer_runtime *runtime)
{
	return runtime ? runtime->device_count : 0;
}

WAFER_API wafer_status wafer_runtime_device(const wafer_runtime *runtime,
					    size_t index,
					    wafer_device_desc *out_desc)
{
	wafer_status status = WAFER__CHECK_OUT_STRUCT(
		"wafer_runtime_device", runtime, out_desc);
	size_t left = index;

	if (status != WAFER_OK)
		return status;
	for (size_t i = 0; i < runtime->backend_count; i++) {
		const struct runtime_backend *b = &runtime->backends[i];
		const struct wafer__loaded_plugin *p = b->plugin;

		if (!p->accepted)
			continue;
		if (left < p->device_count) {
			const struct runtime_device *d = &b->devices[left];
			wafer_device_desc desc = {
				.struct_size = sizeof desc,
				.backend = p->name,
				.index = (uint32_t)left,
				.name = d->listed.name,
				.memory_bytes = d->listed.memory_bytes,
				.capabilities = d->listed.capabilities,
			};
			wafer__copy_out_struct(out_desc, &desc, sizeof desc);
			return WAFER_OK;
		}
		left -= p->device_count;
	}
	return out_of_range("wafer_runtime_device", index,
			    runtime->device_count, "device");
}

WAFER_API size_t wafer_runtime_config_source_count(const wafer_runtime *runtime)
{
	return runtime ? wafer__config_source_count(runtime->config) : 0;
}

WAFER_API wafer_status wafer_runtime_config_source(const wafer_runtime *runtime,
						   size_t index,
						   wafer_config_source *out_source)
{
	wafer_status status = WAFER__CHECK_OUT_STRUCT(
		"wafer_runtime_config_source", runtime, out_source);
	size_t count;

	if (status != WAFER_OK)
		return status;
	count = wafer__config_source_count(runtime->config);
	if (index >= count)
		return out_of_range("wafer_runtime_config_source", index,
				    count, "source");
	wafer_config_source source = *wafer__config_source_at(runtime->config,
							      index);
	source.struct_size = sizeof source;
	wafer__copy_out_struct(out_source, &source, sizeof source);
	return WAFER_OK;
}

WAFER_API size_t wafer_runtime_plugin_count(const wafer_runtime *runtime)
{
	return runtime ? runtime->backend_count : 0;
}

WAFER_API wafer_status wafer_runtime_plugin(const wafer_runtime *runtime,
					    size_t index,
					    wafer_plugin_report *out_report)
{
	wafer_status status = WAFER__CHECK_OUT_STRUCT(
		"wafer_runtime_plugin", runtime, out_report);

	if (status != WAFER_OK)
		return status;
	if (index >= runtime->backend_count)
		return out_of_range("wafer_runtime_plugin", index,
				    runtime->backend_count, "plugin");
	const struct wafer__loaded_plugin *p = runtime->backends[index].plugin;
	wafer_plugin_report report = {
		.struct_size = sizeof report,
		.name = p->name,
		.path = p->path,
		.version = p->version,
		.description = p->description,
		.abi_major = p->abi_major,
		.abi_minor = p->abi_minor,
		.accepted = p->accepted,
		.device_count = p->accepted ? p->device_count : 0,
		.reason = p->reason ? p->reason : "(out of memory)",
		.warnings = p->warnings ? p->warnings : "",
		.vendor_names = p->vendor_names ? p->vendor_names : "",
	};
	wafer__copy_out_struct(out_report, &report, sizeof report);
	return WAFER_OK;
}

WAFER_API const char *wafer_runtime_config_value(const wafer_runtime *runtime,
						 const char *section,
						 const char *key,
						 const char **out_origin)
{
	const struct wafer__config_entry *entry = NULL;

	if (runtime && section && key)
		entry = wafer__config_lookup(runtime->config, section, key);
	if (out_origin)
		*out_origin = entry ? entry->origin : NULL;
	return entry ? entry->value : NULL;
}

/*===----------------------------------------------------------------------===
 * Core-internal: configuration and devices for clients
 *===----------------------------------------------------------------------===*/

struct wafer__tuner *wafer__runtime_tuner(const wafer_runtime *runtime)
{
	return runtime->tuner;
}

const struct wafer__config *wafer__runtime_get_config(const wafer_runtime *runtime)
{
	return runtime ? runtime->config : NULL;
}

static bool is_selector_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/* Parses "<backend>" or "<backend>:<N>" (N decimal, no sign). */
static wafer_status parse_selector(const char *selector, size_t *out_name_len,
				   uint32_t *out_index)
{
	const char *c = selector;
	uint64_t index = 0;

	*out_name_len = 0;
	*out_index = 0;
	while (is_selector_name_char(*c))
		c++;
	if (c == selector || (*c && *c != ':'))
		goto bad;
	*out_name_len = (size_t)(c - selector);
	if (*c == ':') {
		if (!c[1])
			goto bad;
		for (c++; *c; c++) {
			if (*c < '0' || *c > '9')
				goto bad;
			index = index * 10 + (uint64_t)(*c - '0');
			if (index > UINT32_MAX)
				goto bad;
		}
	}
	*out_index = (uint32_t)index;
	return WAFER_OK;
bad:
	*out_name_len = 0;
	return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
			   "device selector '%.64s': expected 'default', "
			   "'<backend>' or '<backend>:<index>'",
			   selector);
}

/* Whether backend |i| was not found in the very directories an earlier
 * one was not found in: the detail then says so instead of repeating a
 * long plugin path, so the reasons after it fit. */
static bool same_search_as_before(const wafer_runtime *rt, size_t i)
{
	const char *reason = rt->backends[i].plugin->reason;

	if (!reason || strncmp(reason, "not found in: ", 14) != 0)
		return false;
	for (size_t k = 0; k < i; k++) {
		const char *earlier = rt->backends[k].plugin->reason;
		if (earlier && strcmp(earlier, reason) == 0)
			return true;
	}
	return false;
}

/* WAFER_ERROR_NO_DEVICE for "default", with every backend's state:
 * "no device matches 'default': cuda: not found in: ...; cpu: 0 devices". */
static wafer_status no_device(const wafer_runtime *rt, const char *selector)
{
	char detail[WAFER_ERROR_DETAIL_MAX];
	size_t used = 0;
	int n;

#define APPEND(...)                                                            \
	do {                                                                   \
		if (used < sizeof detail) {                                    \
			n = snprintf(detail + used, sizeof detail - used,      \
				     __VA_ARGS__);                             \
			if (n > 0)                                             \
				used += (size_t)n;                             \
		}                                                              \
	} while (0)

	APPEND("no device matches '%.64s': ", selector);
	if (!rt->backend_count)
		APPEND("[core] backend lists no backends");
	for (size_t i = 0; i < rt->backend_count; i++) {
		const struct wafer__loaded_plugin *p = rt->backends[i].plugin;
		const char *reason = p->reason ? p->reason : "(out of memory)";

		if (p->accepted)
			APPEND("%s%s: %u device%s", i ? "; " : "", p->name,
			       p->device_count,
			       p->device_count == 1 ? "" : "s");
		else if (same_search_as_before(rt, i))
			APPEND("%s%s: not found (same path)", i ? "; " : "",
			       p->name);
		else
			APPEND("%s%s: %s", i ? "; " : "", p->name, reason);
	}
#undef APPEND
	return wafer__fail(WAFER_ERROR_NO_DEVICE, "%s", detail);
}

/* The selector names backend |p|: it has no such device ("cpu has 1
 * device (cpu:0)"), or none at all and the loader's reason for it. Only
 * that backend is spoken of: the others are not what was asked for. */
static wafer_status no_such_device(const char *selector,
				   const struct wafer__loaded_plugin *p)
{
	if (!p->accepted)
		return wafer__fail(WAFER_ERROR_NO_DEVICE,
				   "no device matches '%.64s': %s: %s", selector,
				   p->name, p->reason ? p->reason : "rejected");
	if (p->device_count == 1)
		return wafer__fail(WAFER_ERROR_NO_DEVICE,
				   "no device matches '%.64s': %s has 1 device "
				   "(%s:0)",
				   selector, p->name, p->name);
	return wafer__fail(WAFER_ERROR_NO_DEVICE,
			   "no device matches '%.64s': %s has %u devices "
			   "(%s:0 to %s:%u)",
			   selector, p->name, p->device_count, p->name, p->name,
			   p->device_count - 1);
}

/* Levenshtein distance of two short names, capped at 9. */
static unsigned name_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[65];

	if (la > 64 || lb > 64)
		return 9;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb] < 9 ? row[lb] : 9;
}

/* The selector names no backend of [core] backend: the nearest name
 * when one is a typo away ("did you mean cpu?"), and the list. */
static wafer_status no_such_backend(const wafer_runtime *rt,
				    const char *selector, const char *name)
{
	const char *nearest = NULL;
	unsigned best = 3; /* at most 2 edits count as a typo */
	char list[512] = "";
	size_t used = 0;

	for (size_t i = 0; i < rt->backend_count; i++) {
		const char *b = rt->backends[i].plugin->name;
		unsigned d = name_distance(name, b);
		int n;

		if (d < best) {
			best = d;
			nearest = b;
		}
		n = snprintf(list + used, sizeof list - used, "%s%s",
			     used ? ", " : "", b);
		if (n > 0 && (size_t)n < sizeof list - used)
			used += (size_t)n;
	}
	if (nearest)
		return wafer__fail(WAFER_ERROR_NO_DEVICE,
				   "no device matches '%.64s': no backend '%s' "
				   "(did you mean %s?)",
				   selector, name, nearest);
	return wafer__fail(WAFER_ERROR_NO_DEVICE,
			   "no device matches '%.64s': no backend '%s' in "
			   "[core] backend (%s)",
			   selector, name, used ? list : "it lists none");
}

static wafer_status resolve_selector(wafer_runtime *rt, const char *selector,
				     struct runtime_device **out_device)
{
	size_t name_len;
	uint32_t index;
	wafer_status status;
	bool listed = false;

	*out_device = NULL;
	if (strcmp(selector, "default") == 0) {
		for (size_t i = 0; i < rt->backend_count; i++) {
			if (rt->backends[i].plugin->accepted) {
				*out_device = &rt->backends[i].devices[0];
				return WAFER_OK;
			}
		}
		return no_device(rt, selector);
	}
	status = parse_selector(selector, &name_len, &index);
	if (status != WAFER_OK)
		return status;
	const struct wafer__loaded_plugin *named = NULL;
	for (size_t i = 0; i < rt->backend_count; i++) {
		const struct runtime_backend *b = &rt->backends[i];
		const char *name = b->plugin->name;

		if (strlen(name) != name_len ||
		    strncmp(name, selector, name_len) != 0)
			continue;
		listed = true;
		if (b->plugin->accepted && index < b->plugin->device_count) {
			*out_device = &b->devices[index];
			return WAFER_OK;
		}
		if (!named || (b->plugin->accepted && !named->accepted))
			named = b->plugin;
	}
	if (listed)
		return no_such_device(selector, named);
	char name[128];
	snprintf(name, sizeof name, "%.*s", (int)name_len, selector);
	return no_such_backend(rt, selector, name);
}

/* Closes |device| without letting the plugin's messages replace the
 * calling thread's error detail. */
static void close_quietly(const struct wafer_plugin *plugin, void *device)
{
	char detail[WAFER_ERROR_DETAIL_MAX];

	snprintf(detail, sizeof detail, "%s", wafer__error_detail());
	plugin->device_close(device);
	wafer__fail(WAFER_OK, "%s", detail);
}

/* Opens |d| for its first reference. Called with d->lock held. */
static wafer_status open_device(struct runtime_device *d)
{
	const struct wafer__loaded_plugin *p = d->owner;
	const struct wafer_plugin *plugin = p->plugin;
	const struct wafer_kernel *kernels = NULL;
	struct wafer_device_info info;
	size_t kernel_count = 0;
	void *device = NULL;
	wafer_status status;

	wafer__error_clear();
	status = plugin->device_open(p->state, d->pub.index, &device);
	if (status != WAFER_OK)
		return wafer__fail(status, "%s:%u: device_open: %s", p->name,
				   d->pub.index,
				   detail_or(wafer_status_string(status)));
	status = wafer__loader_device_info(p, d->pub.index, &info);
	if (status != WAFER_OK) {
		close_quietly(plugin, device);
		return status;
	}
	wafer__error_clear();
	status = plugin->device_kernels(device, &kernels, &kernel_count);
	if (status == WAFER_OK && kernel_count && !kernels)
		status = wafer__fail(WAFER_ERROR_PLUGIN,
				     "a NULL table of %zu kernels",
				     kernel_count);
	if (status != WAFER_OK) {
		char detail[WAFER_ERROR_DETAIL_MAX];
		snprintf(detail, sizeof detail, "%s",
			 detail_or(wafer_status_string(status)));
		close_quietly(plugin, device);
		return wafer__fail(status, "%s:%u: device_kernels: %s",
				   p->name, d->pub.index, detail);
	}
	status = wafer__kernel_table_init(&d->pub.kernel_table, p->name,
					  kernels, kernel_count);
	if (status != WAFER_OK) {
		close_quietly(plugin, device);
		return status;
	}
	d->pub.device = device;
	d->pub.info = info;
	d->pub.kernels = kernels;
	d->pub.kernel_count = kernel_count;
	wafer__log_info("core", "opened %s:%u (%s), %zu kernel%s", p->name,
			d->pub.index, info.name, kernel_count,
			kernel_count == 1 ? "" : "s");
	return WAFER_OK;
}

wafer_status wafer__runtime_acquire_device(wafer_runtime *runtime,
					   const char *selector,
					   struct wafer_runtime_device **out_device)
{
	struct runtime_device *d;
	wafer_status status;

	if (!out_device)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer__runtime_acquire_device: out_device "
				   "is NULL");
	*out_device = NULL;
	if (!runtime || !selector)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer__runtime_acquire_device: %s is NULL",
				   runtime ? "selector" : "runtime");
	status = resolve_selector(runtime, selector, &d);
	if (status != WAFER_OK)
		return status;

	pthread_mutex_lock(&d->lock);
	if (d->refs == 0)
		status = open_device(d);
	if (status == WAFER_OK)
		d->refs++;
	pthread_mutex_unlock(&d->lock);
	if (status != WAFER_OK)
		return status;
	*out_device = &d->pub;
	return WAFER_OK;
}

void wafer__runtime_release_device(wafer_runtime *runtime,
				   struct wafer_runtime_device *device)
{
	struct runtime_device *d;

	if (!runtime || !device)
		return;
	d = from_public(device);
	pthread_mutex_lock(&d->lock);
	if (d->refs == 0) {
		wafer__log_error("core",
				 "release of %s:%u, which is not acquired",
				 d->pub.backend, d->pub.index);
	} else if (--d->refs == 0) {
		wafer__kernel_table_fini(&d->pub.kernel_table);
		d->owner->plugin->device_close(d->pub.device);
		d->pub.device = NULL;
		d->pub.kernels = NULL;
		d->pub.kernel_count = 0;
		wafer__log_info("core", "closed %s:%u", d->pub.backend,
				d->pub.index);
	}
	pthread_mutex_unlock(&d->lock);
}

void wafer__runtime_describe_device(const struct wafer_runtime_device *device,
				    wafer_device_desc *out_desc)
{
	if (!out_desc)
		return;
	*out_desc = (wafer_device_desc){.struct_size = sizeof *out_desc};
	if (!device)
		return;
	out_desc->backend = device->backend;
	out_desc->index = device->index;
	out_desc->name = device->info.name;
	out_desc->memory_bytes = device->info.memory_bytes;
	out_desc->capabilities = device->info.capabilities;
}

void wafer__runtime_client_opened(wafer_runtime *runtime)
{
	if (runtime)
		atomic_fetch_add(&runtime->clients, 1);
}

void wafer__runtime_client_closed(wafer_runtime *runtime)
{
	if (!runtime)
		return;
	size_t before = atomic_load(&runtime->clients);
	while (before &&
	       !atomic_compare_exchange_weak(&runtime->clients, &before,
					     before - 1))
		;
	if (!before)
		wafer__log_error("core", "a client closed that was never "
			       "counted as open");
}
