/* wafer — SPDX-License-Identifier: MIT
 *
 * wafer-replay: runs a memory strategy over a recorded allocation trace
 * against an accounting-only storage and reports what it cost — peak bytes
 * reserved against peak bytes live, and storage calls, overall and in the
 * second half of the trace (the steady state of a training loop). See
 * wafer-replay(1).
 *
 * The whole trace is parsed (and checked) before the replay starts, so a
 * malformed line is reported with its number before any work is done and
 * the timing covers the strategy alone. */
#include "build-config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wafer/wafer.h>

#include "lib/config.h"
#include "lib/error.h"
#include "lib/log.h"
#include "lib/memory/memory.h"
#include "lib/memory/null_storage.h"
#include "lib/memory/snapshot.h"
#include "tools/replay_backend.h"
#include "lib/memory/u64map.h"
#include "tools/replay_svg.h"
#include "tools/trace.h"
#include "tools/trace_file.h"

/*===----------------------------------------------------------------------===
 * The trace
 *===----------------------------------------------------------------------===*/

static void die(const char *format, ...) __attribute__((format(printf, 1, 2),
							 noreturn));
static void die(const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	fputs("wafer-replay: ", stderr);
	vfprintf(stderr, format, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/*===----------------------------------------------------------------------===
 * Options
 *===----------------------------------------------------------------------===*/

/* Bytes with an optional K, M, G suffix (powers of 1024; "KiB" too). */
static size_t parse_size(const char *option, const char *text)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	unsigned shift = 0;
	if (end == text || errno)
		goto bad;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	}
	if (shift && strcmp(end, "iB") == 0)
		end += 2;
	if (*end || v == 0 || v > (SIZE_MAX >> shift))
		goto bad;
	return (size_t)v << shift;
bad:
	die("%s: expected a positive size like 65536, 64K or 2M, got '%s'",
	    option, text);
}

/* A positive decimal count (an event number). */
static size_t parse_count(const char *option, const char *text)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (end == text || *end || errno || v == 0 || v > SIZE_MAX - 1 ||
	    *text == '-')
		die("%s: expected a positive event number, got '%s'", option,
		    text);
	return (size_t)v;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: wafer-replay [--strategy S] [--storage null|BACKEND] "
		"[--granularity B]\n"
		"                    [--alignment B] [--no-vm] [--whole-maps] "
		"[--svg FILE]\n"
		"                    [--snapshot[=EVENT]]\n"
		"                    [--config FILE] [--option SECTION.KEY=VALUE]... "
		"TRACE\n"
		"Replays an allocation trace (a <id> <bytes> / f <id> lines, "
		"plain or gzip)\n"
		"with a memory strategy on an accounting-only storage.\n"
		"Strategies:");
	for (size_t i = 0; wafer__memory_strategies[i]; i++)
		fprintf(out, " %s%s", wafer__memory_strategies[i]->name,
			strcmp(wafer__memory_strategies[i]->name,
			       wafer__memory_default_strategy) ? ""
							      : " (default)");
	fprintf(out, ".\nSee wafer-replay(1).\n");
}

struct options {
	const char *strategy;
	const char *svg;
	const char *trace;
	/* --snapshot: print the memory after this many events (0: none;
	 * SIZE_MAX: after the last). */
	size_t snapshot_at;
	struct wafer__null_storage_options storage;
	/* NULL: the null storage; else a device selector ("cpu", "cuda:0"). */
	const char *backend;
	/* Strategy options: none unless --config or --option gives some, so
	 * a replay does not depend on the machine's wafer.conf. */
	struct wafer__config *config;
};

/* SECTION.KEY=VALUE, split at the last '.' before '=': "memory.pool.
 * overhead=0.05" sets [memory.pool] overhead. */
static void set_option(struct options *o, const char *text)
{
	const char *eq = strchr(text, '=');
	const char *dot = NULL;
	for (const char *c = text; eq && c < eq; c++)
		if (*c == '.')
			dot = c;
	if (!eq || !dot || dot == text || dot + 1 == eq)
		die("--option %s: expected SECTION.KEY=VALUE, like "
		    "memory.pool.overhead=0.05", text);
	char section[128], key[128];
	snprintf(section, sizeof section, "%.*s", (int)(dot - text), text);
	snprintf(key, sizeof key, "%.*s", (int)(eq - dot - 1), dot + 1);
	if (wafer__config_set(o->config, section, key, eq + 1, "--option") !=
	    WAFER_OK)
		die("--option %s: %s", text, wafer__error_detail());
}

static void parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_NO_VM = 256, OPT_ALIGNMENT, OPT_CONFIG, OPT_SNAPSHOT,
	       OPT_WHOLE_MAPS };
	static const struct option longopts[] = {
		{"strategy", required_argument, NULL, 's'},
		{"storage", required_argument, NULL, 'b'},
		{"granularity", required_argument, NULL, 'g'},
		{"alignment", required_argument, NULL, OPT_ALIGNMENT},
		{"no-vm", no_argument, NULL, OPT_NO_VM},
		{"whole-maps", no_argument, NULL, OPT_WHOLE_MAPS},
		{"svg", required_argument, NULL, 'S'},
		{"snapshot", optional_argument, NULL, OPT_SNAPSHOT},
		{"config", required_argument, NULL, OPT_CONFIG},
		{"option", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	int c;
	if (wafer__config_create(&o->config) != WAFER_OK)
		die("%s", wafer__error_detail());
	while ((c = getopt_long(argc, argv, "s:g:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			o->strategy = optarg;
			break;
		case 'b':
			o->backend = strcmp(optarg, "null") ? optarg : NULL;
			break;
		case 'g':
			o->storage.vm_granularity =
				parse_size("--granularity", optarg);
			break;
		case OPT_ALIGNMENT:
			o->storage.alignment = parse_size("--alignment", optarg);
			break;
		case OPT_NO_VM:
			o->storage.no_vm = true;
			break;
		case OPT_WHOLE_MAPS:
			o->storage.whole_maps = true;
			break;
		case 'S':
			o->svg = optarg;
			break;
		case OPT_SNAPSHOT:
			o->snapshot_at = optarg ? parse_count("--snapshot", optarg)
						: SIZE_MAX;
			break;
		case OPT_CONFIG:
			if (wafer__config_load_file(o->config, optarg, false) !=
			    WAFER_OK)
				die("%s", wafer__error_detail());
			if (wafer__config_source_count(o->config) &&
			    wafer__config_source_at(
				    o->config,
				    wafer__config_source_count(o->config) - 1)
					    ->state == WAFER_CONFIG_SOURCE_ABSENT)
				die("--config %s: no such file", optarg);
			break;
		case 'o':
			set_option(o, optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("wafer-replay %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		exit(2);
	}
	/* Whole maps need a pool that unmaps whole units; a pool told
	 * otherwise is left so, and the null storage reports its cuts. */
	if (o->storage.whole_maps &&
	    !wafer__config_lookup(o->config, "memory.pool", "unmap") &&
	    wafer__config_set(o->config, "memory.pool", "unmap", "whole",
			      "--whole-maps") != WAFER_OK)
		die("%s", wafer__error_detail());
	o->trace = argv[optind];
}

/*===----------------------------------------------------------------------===
 * The replay
 *===----------------------------------------------------------------------===*/

static uint64_t storage_ops(const struct wafer__storage *s)
{
	const struct wafer__storage_counters *c = &s->counters;
	return c->allocs + c->frees + c->maps + c->unmaps;
}

/* "alloc:3,free:3": the storage calls per plugin entry, the entries
 * never called left out ("none" when there were no calls), so a reader
 * sees where the calls went (a vm_unmap costs more than a vm_map). */
static void format_calls(const wafer_memory_usage *u, char *buf, size_t size)
{
	const struct {
		const char *name;
		uint64_t count;
	} kinds[] = {
		{"alloc", u->calls_alloc},
		{"free", u->calls_free},
		{"alloc_async", u->calls_alloc_async},
		{"free_async", u->calls_free_async},
		{"vm_reserve", u->calls_vm_reserve},
		{"vm_release", u->calls_vm_release},
		{"vm_map", u->calls_vm_map},
		{"vm_unmap", u->calls_vm_unmap},
	};
	size_t used = 0;
	snprintf(buf, size, "none");
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
		if (kinds[i].count && used < size)
			used += (size_t)snprintf(buf + used, size - used,
						 "%s%s:%" PRIu64,
						 used ? "," : "",
						 kinds[i].name, kinds[i].count);
}

/* Prints |memory|'s snapshot after |events| events: live blocks are
 * named by the trace line of their allocation (|lines|, per slot). */
static void print_snapshot(FILE *out, struct wafer__memory *memory,
			   const struct wafer__slice *slices,
			   const uint32_t *lines, uint32_t slots,
			   size_t events)
{
	struct wafer_memory_snapshot s;
	if (wafer__memory_snapshot_take(memory, &s) != WAFER_OK)
		die("%s", wafer__error_detail());
	for (uint32_t i = 0; i < slots; i++)
		if (slices[i].size)
			wafer__memory_snapshot_attach(
				&s, &slices[i], (wafer_handle){lines[i]});
	if (s.failed)
		die("memory snapshot: out of host memory");
	wafer__memory_snapshot_sort(&s);
	fprintf(out, "snapshot after event %zu: %" PRIu32 " segments\n", events,
	       s.segments);
	for (size_t i = 0; i < s.count; i++) {
		const wafer_memory_item *it = &s.items[i];
		uint64_t end = it->offset + it->size;
		switch (it->kind) {
		case WAFER_MEMORY_ITEM_SEGMENT:
			fprintf(out, "segment %" PRIu32 " %s: %" PRIu64
			       " bytes, %" PRIu64 " mapped", it->segment,
			       it->arena, it->size, it->mapped_bytes);
			if (it->page_size)
				fprintf(out, ", pages of %" PRIu64, it->page_size);
			fprintf(out, "\n");
			break;
		case WAFER_MEMORY_ITEM_PAGES:
			fprintf(out, "  pages [%" PRIu64 ", %" PRIu64 ") %s\n",
			       it->offset, end,
			       it->mapped ? "mapped" : "unmapped");
			break;
		case WAFER_MEMORY_ITEM_BLOCK:
			if (it->live)
				fprintf(out, "  block [%" PRIu64 ", %" PRIu64
				       ") live: %" PRIu64 " bytes, trace line "
				       "%" PRIu64 "\n", it->offset, end,
				       it->requested, it->handle.bits);
			else
				fprintf(out, "  block [%" PRIu64 ", %" PRIu64
				       ") free\n", it->offset, end);
			break;
		}
	}
	wafer__memory_snapshot_fini(&s);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* The null storage also checks the strategy kept the storage contract
 * and freed every object: a replay doubles as a strategy check. */
static int check_null_storage(struct wafer__storage *storage, const char *name)
{
	int rc = 0;
	const char *first;
	uint64_t violations = wafer__null_storage_violations(storage, &first);
	if (violations) {
		fprintf(stderr, "wafer-replay: strategy %s broke the storage "
			"contract %" PRIu64 " times; first: %s\n", name,
			violations, first);
		rc = 1;
	}
	if (wafer__null_storage_bytes(storage) !=
	    storage->counters.bytes_reserved) {
		fprintf(stderr, "wafer-replay: storage holds %" PRIu64
			" bytes but the counters say %" PRIu64 "\n",
			wafer__null_storage_bytes(storage),
			storage->counters.bytes_reserved);
		rc = 1;
	}
	if (wafer__null_storage_live(storage)) {
		fprintf(stderr, "wafer-replay: strategy %s leaked %zu storage "
			"objects\n", name, wafer__null_storage_live(storage));
		rc = 1;
	}
	wafer__null_storage_fini(storage);
	return rc;
}

int main(int argc, char **argv)
{
	struct options o = {0};
	parse_options(argc, argv, &o);
	wafer_log_level level;
	const char *log = getenv("WAFER_LOG");
	if (log && wafer__log_parse_level(log, &level))
		wafer__log_set_level(level);

	struct wafer_trace t = {0};
	char why[512];
	if (!wafer_trace_load(o.trace, &t, why, sizeof why))
		die("%s", why);

	struct wafer__storage storage;
	struct replay_backend backend;
	if (o.backend) {
		if (replay_backend_open(o.backend, &backend, &storage) !=
		    WAFER_OK)
			die("--storage %s: %s", o.backend, wafer__error_detail());
	} else if (wafer__null_storage_init(&storage, &o.storage) != WAFER_OK) {
		die("%s", wafer__error_detail());
	}
	struct wafer__memory *memory;
	if (wafer__memory_create(o.strategy, &storage, o.config, &memory) !=
	    WAFER_OK)
		die("%s", wafer__error_detail());

	struct wafer__slice *slices = calloc(t.slots, sizeof *slices);
	uint32_t *lines = o.snapshot_at ? calloc(t.slots + 1, sizeof *lines)
					: NULL;
	if (o.snapshot_at && !lines)
		die("out of host memory for %zu events", t.count);
	if (o.snapshot_at > t.count)
		o.snapshot_at = t.count;
	struct replay_svg_series series = {0};
	if (o.svg) {
		series.count = t.count;
		series.events = t.events;
		series.slots = t.slots;
		series.in_use = malloc(t.count * sizeof(uint64_t));
		series.reserved = malloc(t.count * sizeof(uint64_t));
	}
	if (!slices || (o.svg && (!series.in_use || !series.reserved)))
		die("out of host memory for %zu events", t.count);

	/* The steady state: events [half, count), the trace's second half. */
	size_t half = t.count / 2;
	uint64_t ops_at_half = 0;
	FILE *snapshot;
	char *snapshot_text = NULL;
	size_t snapshot_size = 0;
	uint64_t start = now_ns();
	for (size_t i = 0; i < t.count; i++) {
		const struct wafer_trace_event *e = &t.events[i];
		if (i == half)
			ops_at_half = storage_ops(&storage);
		if (e->size) {
			if (wafer__memory_reserve(memory, e->size,
						  &slices[e->slot]) != WAFER_OK)
				die("%s:%u: %s", o.trace, e->line,
				    wafer__error_detail());
			if (lines)
				lines[e->slot] = e->line;
		} else {
			wafer__memory_release(memory, &slices[e->slot]);
			slices[e->slot].size = 0;
		}
		if (o.svg) {
			wafer_memory_usage u;
			wafer__memory_get_usage(memory, &u);
			series.in_use[i] = u.bytes_in_use;
			series.reserved[i] = u.bytes_reserved;
		}
		if (i + 1 == o.snapshot_at) {
			/* Printed after the result line, and not timed. */
			uint64_t paused = now_ns();
			snapshot = open_memstream(&snapshot_text,
						  &snapshot_size);
			if (!snapshot)
				die("out of host memory for the snapshot");
			print_snapshot(snapshot, memory, slices, lines,
				       t.slots, i + 1);
			fclose(snapshot);
			start += now_ns() - paused;
		}
	}
	uint64_t elapsed = now_ns() - start;

	wafer_memory_usage u = {.struct_size = sizeof u};
	wafer__memory_get_usage(memory, &u);
	uint64_t ops = storage_ops(&storage);
	double ratio = u.peak_in_use ? (double)u.peak_reserved /
					       (double)u.peak_in_use
				     : 0.0;
	const char *name = wafer__memory_strategy_name(memory);
	char calls[256], pages[128] = "";
	format_calls(&u, calls, sizeof calls);
	/* On virtual memory, the pages mapped and unmapped over the run: on
	 * a real driver the time goes with them, not with the calls. */
	if (storage.vm_granularity && (u.calls_vm_map || u.calls_vm_unmap))
		snprintf(pages, sizeof pages,
			 " pages=map:%" PRIu64 ",unmap:%" PRIu64,
			 storage.counters.bytes_mapped / storage.vm_granularity,
			 storage.counters.bytes_unmapped /
				 storage.vm_granularity);
	/* The physical allocations behind them, as the null storage made
	 * them: one a page, or with --whole-maps one a vm_map call. */
	if (!o.backend && *pages) {
		uint64_t made, gone;
		size_t used = strlen(pages);
		wafer__null_storage_phys(&storage, &made, &gone);
		snprintf(pages + used, sizeof pages - used,
			 " phys=map:%" PRIu64 ",unmap:%" PRIu64, made, gone);
	}
	/* stream's ratio counts live and pending bytes; the driver's pool
	 * keeps freed memory cached behind them. Its own high-water mark,
	 * where the plugin keeps one, is what the device really held. */
	char driver[128] = "";
	uint64_t high = 0;
	if ((u.calls_alloc_async || u.calls_free_async) &&
	    storage.ops->figure &&
	    storage.ops->figure(storage.device,
				WAFER_STORAGE_FIGURE_ASYNC_RESERVED_HIGH,
				&high) == WAFER_OK)
		snprintf(driver, sizeof driver,
			 " driver_reserved=%" PRIu64 " driver_ratio=%.3f", high,
			 u.peak_in_use ? (double)high / (double)u.peak_in_use
				       : 0.0);
	printf("strategy=%s events=%zu peak_live=%" PRIu64
	       " peak_reserved=%" PRIu64 " ratio=%.3f%s storage_ops=%" PRIu64
	       " steady_ops=%" PRIu64 " calls=%s%s failures=%" PRIu64
	       " retries=%" PRIu64 " ns_per_event=%.1f\n",
	       name, t.count, u.peak_in_use, u.peak_reserved, ratio, driver, ops,
	       ops - ops_at_half, calls, pages, u.storage_failures,
	       u.reserve_retries, (double)elapsed / (double)t.count);
	if (snapshot_text)
		fputs(snapshot_text, stdout);
	free(snapshot_text);
	fflush(stdout);

	int rc = 0;
	if (o.svg) {
		struct replay_svg_info info = {
			.title = base_name(o.trace),
			.strategy = name,
			.peak_live = u.peak_in_use,
			.peak_reserved = u.peak_reserved,
			.half = half,
		};
		if (replay_svg_write(o.svg, &series, &info) != 0) {
			fprintf(stderr, "wafer-replay: %s: %s\n", o.svg,
				strerror(errno));
			rc = 1;
		}
	}

	/* Give everything back and check that the strategy did: a replay
	 * doubles as a leak and contract check of the strategy. */
	for (uint32_t s = 0; s < t.slots; s++)
		if (slices[s].size)
			wafer__memory_release(memory, &slices[s]);
	wafer__memory_trim_cache(memory);
	if (storage.counters.bytes_reserved) {
		fprintf(stderr, "wafer-replay: strategy %s still holds %" PRIu64
			" bytes after releasing everything and trimming\n",
			name, storage.counters.bytes_reserved);
		rc = 1;
	}
	wafer__memory_destroy(memory);
	if (o.backend)
		replay_backend_close(&backend);
	else if (check_null_storage(&storage, name) != 0)
		rc = 1;
	wafer__config_destroy(o.config);
	free(series.in_use);
	free(series.reserved);
	free(slices);
	free(lines);
	wafer_trace_fini(&t);
	return rc;
}
