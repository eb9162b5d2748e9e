/* wafer — SPDX-License-Identifier: MIT
 *
 * wafer-info: what wafer sees on this machine — configuration sources and
 * the settings they produced, every plugin the backend list names (found
 * where, which version and ABI, accepted or why not), the devices, and
 * which device "default" selects and why the backends before it were
 * skipped. Uses the public API only, like any application. See
 * wafer-info(1).
 *
 * Exit status: 0 when a default device exists, 1 when none does (or the
 * runtime could not be opened), 2 for a usage error. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin_util.h>
#include <wafer/wafer.h>

#ifndef WAFER_PLUGINDIR
#define WAFER_PLUGINDIR "the built-in plugin directory"
#endif

static const char usage_text[] =
	"Usage: wafer-info [OPTION]...\n"
	"Show wafer's configuration, backend plugins and devices.\n"
	"\n"
	"  -b, --backend LIST  use LIST (\"cuda, cpu\") as [core] backend\n"
	"  -q, --quiet         print only the default device\n"
	"  -h, --help          show this help and exit\n"
	"  -V, --version       show the version and exit\n"
	"\n"
	"Exit status: 0 if there is a default device, 1 if not, 2 for a\n"
	"usage error. See wafer-info(1).\n";

/* WAFER_CAP_* bit n is named cap_words[n]. The element-type bits say
 * what the hardware has; the dtypes line says what the plugin computes,
 * so they are not shown (NULL). */
static const char *const cap_words[] = {
	NULL, /* f16 */
	NULL, /* bf16 */
	NULL, /* f64 */
	"host-memory",
	"stream-ordered-alloc",
	"virtual-memory",
	"device-timers",
	"pinned-host", /* retired: the core never sets it since ABI 1.1 */
	"programs",
	"peer-copy",   /* storage.copy_peer (ABI 1.4) */
	"collectives", /* the server's comm entries (ABI 1.4) */
	"events",      /* the server's event entries (ABI 1.5): queues overlap */
	"native-graphs", /* the server's graph entries (ABI 1.6) */
	"host-register", /* storage.host_register .. (ABI 1.7) */
};

static void print_caps(uint64_t caps)
{
	const size_t known = sizeof cap_words / sizeof cap_words[0];
	int printed = 0;

	for (unsigned bit = 0; bit < 64; bit++) {
		if (!(caps & (UINT64_C(1) << bit)))
			continue;
		if (bit < known && !cap_words[bit])
			continue;
		if (bit < known)
			printf("%s%s", printed ? " " : "", cap_words[bit]);
		else
			printf("%sbit%u", printed ? " " : "", bit);
		printed = 1;
	}
	printf("%s\n", printed ? "" : "none");
}

static void print_memory(uint64_t bytes)
{
	const double mib = 1024.0 * 1024.0, gib = mib * 1024.0;

	if (bytes >= (UINT64_C(1) << 30))
		printf("%.1f GiB\n", (double)bytes / gib);
	else if (bytes >= (UINT64_C(1) << 20))
		printf("%.1f MiB\n", (double)bytes / mib);
	else
		printf("%" PRIu64 " bytes\n", bytes);
}

static const char *source_state(wafer_config_source_state state)
{
	switch (state) {
	case WAFER_CONFIG_SOURCE_READ: return "read";
	case WAFER_CONFIG_SOURCE_ABSENT: return "absent";
	case WAFER_CONFIG_SOURCE_FAILED: return "FAILED";
	}
	return "?";
}

static void print_sources(const wafer_runtime *rt)
{
	size_t count = wafer_runtime_config_source_count(rt);

	printf("Configuration sources (in the order applied; later wins):\n");
	if (!count)
		printf("  (none)\n");
	for (size_t i = 0; i < count; i++) {
		wafer_config_source src = {.struct_size = sizeof src};

		if (wafer_runtime_config_source(rt, i, &src) != WAFER_OK)
			continue;
		printf("  %-7s %s", source_state(src.state), src.path);
		if (src.state == WAFER_CONFIG_SOURCE_FAILED)
			printf(": %s", src.detail && src.detail[0]
					       ? src.detail
					       : "(no detail)");
		printf("\n");
	}
}

static void print_setting(const wafer_runtime *rt, const char *section,
			  const char *key, const char *unset)
{
	const char *origin = NULL;
	const char *value =
		wafer_runtime_config_value(rt, section, key, &origin);
	char name[64];

	snprintf(name, sizeof name, "[%s] %s", section, key);
	if (value)
		printf("  %-18s %s  (%s)\n", name, value[0] ? value : "\"\"",
		       origin ? origin : "?");
	else
		printf("  %-18s (unset: %s)\n", name, unset);
}

static void print_settings(const wafer_runtime *rt)
{
	printf("\nSettings:\n");
	print_setting(rt, "core", "backend", "no backends");
	print_setting(rt, "core", "plugin_path", WAFER_PLUGINDIR);
	print_setting(rt, "core", "channel", "the library's default");
	print_setting(rt, "core", "log", "warn");
	print_setting(rt, "memory", "strategy", "the library's default");
}

/* The ABI the plugin was built for, beside the core's when they differ
 * (wafer-plugin(7), Versions: an older plugin is held to its minor's
 * rules, a newer one's later entries go unused). */
static void print_abi(const wafer_plugin_report *r)
{
	printf("      ABI:     %u.%u", r->abi_major, r->abi_minor);
	if (r->abi_major == WAFER_PLUGIN_ABI_MAJOR &&
	    r->abi_minor < WAFER_PLUGIN_ABI_MINOR)
		printf(" (the core speaks %u.%u)",
		       (unsigned)WAFER_PLUGIN_ABI_MAJOR,
		       (unsigned)WAFER_PLUGIN_ABI_MINOR);
	else if (r->abi_major == WAFER_PLUGIN_ABI_MAJOR &&
		 r->abi_minor > WAFER_PLUGIN_ABI_MINOR)
		printf(" (newer than the core's %u.%u: see the warning)",
		       (unsigned)WAFER_PLUGIN_ABI_MAJOR,
		       (unsigned)WAFER_PLUGIN_ABI_MINOR);
	printf("\n");
}

/* A report's text of one entry a line (|lines|, NULL when the library's
 * report is older than ours), each line after |label|. */
static void print_lines(const char *label, const char *lines)
{
	while (lines && *lines) {
		const char *end = strchr(lines, '\n');
		int len = end ? (int)(end - lines) : (int)strlen(lines);

		printf("      %-8s %.*s\n", label, len, lines);
		lines = end ? end + 1 : NULL;
	}
}

static void print_plugins(const wafer_runtime *rt)
{
	size_t count = wafer_runtime_plugin_count(rt);

	printf("\nPlugins (in [core] backend order):\n");
	if (!count)
		printf("  (none: [core] backend names no plugin)\n");
	for (size_t i = 0; i < count; i++) {
		wafer_plugin_report r = {.struct_size = sizeof r};

		if (wafer_runtime_plugin(rt, i, &r) != WAFER_OK)
			continue;
		if (r.accepted)
			printf("  %s: accepted, %u device%s\n", r.name,
			       r.device_count, r.device_count == 1 ? "" : "s");
		else
			printf("  %s: %s\n", r.name, r.reason);
		if (r.path)
			printf("      path:    %s\n", r.path);
		if (r.version)
			printf("      version: %s\n", r.version);
		if (r.abi_major || r.abi_minor)
			print_abi(&r);
		if (r.description && r.description[0])
			printf("      about:   %s\n", r.description);
		print_lines("names:", WAFER_STRUCT_HAS(&r, wafer_plugin_report,
						       vendor_names)
					      ? r.vendor_names
					      : NULL);
		print_lines("warning:", WAFER_STRUCT_HAS(&r, wafer_plugin_report,
							 warnings)
						? r.warnings
						: NULL);
	}
}

/* The element types the device computes in: those its plugin has an add
 * kernel of (a client opened on it to ask). */
static void print_dtypes(wafer_runtime *rt, const char *selector)
{
	static const wafer_dtype all[] = {
		WAFER_DTYPE_F32, WAFER_DTYPE_F16, WAFER_DTYPE_BF16,
		WAFER_DTYPE_F64, WAFER_DTYPE_I32, WAFER_DTYPE_I64,
		WAFER_DTYPE_U8,
	};
	wafer_client *c;
	int printed = 0;

	if (wafer_client_open(rt, selector, NULL, &c) != WAFER_OK) {
		printf("(cannot open: %s)\n", wafer_last_error());
		return;
	}
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
		const wafer_kernel_ref *k;

		if (wafer_kernel_find(c, "add", NULL, all[i], &k) != WAFER_OK)
			continue;
		printf("%s%s", printed ? " " : "",
		       wafer_plugin_dtype_name(all[i]));
		printed = 1;
	}
	printf("%s\n", printed ? "" : "none");
	wafer_client_close(c);
}

static void print_devices(wafer_runtime *rt)
{
	size_t count = wafer_runtime_device_count(rt);

	printf("\nDevices:\n");
	if (!count)
		printf("  (none)\n");
	for (size_t i = 0; i < count; i++) {
		wafer_device_desc d = {.struct_size = sizeof d};
		char id[96];

		if (wafer_runtime_device(rt, i, &d) != WAFER_OK)
			continue;
		snprintf(id, sizeof id, "%s:%u", d.backend, d.index);
		printf("  %-10s %s\n", id, d.name);
		printf("  %-10s memory:       ", "");
		print_memory(d.memory_bytes);
		printf("  %-10s capabilities: ", "");
		print_caps(d.capabilities);
		printf("  %-10s computes in:  ", "");
		print_dtypes(rt, id);
	}
}

/* The default device is the first one listed: devices come in backend
 * order, and only accepted plugins (those with a device) have any.
 * Returns 1 when there is one. */
static int print_default(const wafer_runtime *rt, int quiet)
{
	wafer_device_desc d = {.struct_size = sizeof d};
	int found = wafer_runtime_device_count(rt) > 0 &&
		    wafer_runtime_device(rt, 0, &d) == WAFER_OK;
	size_t count = wafer_runtime_plugin_count(rt);

	if (quiet) {
		if (found)
			printf("%s:%u %s\n", d.backend, d.index, d.name);
		else
			fprintf(stderr, "wafer-info: no default device\n");
		return found;
	}
	if (found)
		printf("\nDefault device: %s:%u (%s)\n", d.backend, d.index,
		       d.name);
	else
		printf("\nDefault device: none\n");
	for (size_t i = 0; i < count; i++) {
		wafer_plugin_report r = {.struct_size = sizeof r};

		if (wafer_runtime_plugin(rt, i, &r) != WAFER_OK)
			continue;
		if (r.accepted)
			break;
		printf("  skipped %s: %s\n", r.name, r.reason);
	}
	return found;
}

int main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{"backend", required_argument, NULL, 'b'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	wafer_option backend = {"core", "backend", NULL};
	wafer_runtime_options options = {
		.struct_size = sizeof options,
		.flags = WAFER_RUNTIME_TOLERATE_CONFIG_ERRORS,
	};
	wafer_runtime *rt;
	wafer_status status;
	int quiet = 0, c, found;

	while ((c = getopt_long(argc, argv, "b:qhV", long_options, NULL)) !=
	       -1) {
		switch (c) {
		case 'b':
			backend.value = optarg;
			options.options = &backend;
			options.option_count = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf("wafer-info (wafer) %s\n",
			       wafer_version_string());
			return 0;
		default:
			fputs(usage_text, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "wafer-info: unexpected argument '%s'\n%s",
			argv[optind], usage_text);
		return 2;
	}

	status = wafer_runtime_open(&options, &rt);
	if (status != WAFER_OK) {
		fprintf(stderr, "wafer-info: cannot open the runtime: %s: %s\n",
			wafer_status_string(status), wafer_last_error());
		return 1;
	}
	if (!quiet) {
		printf("wafer %s\n\n", wafer_version_string());
		print_sources(rt);
		print_settings(rt);
		print_plugins(rt);
		print_devices(rt);
	}
	found = print_default(rt, quiet);
	wafer_runtime_close(rt);
	return found ? 0 : 1;
}
