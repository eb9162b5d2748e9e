/* wafer — SPDX-License-Identifier: MIT
 *
 * settings.c: the `[autotune]` section (wafer-autotune(7)).
 *
 *   mode            off | fast | full        (WAFER_AUTOTUNE; default fast)
 *   warmup          runs before timing       (fast 1, full 3)
 *   samples         timed rounds             (fast 3, full 10)
 *   eliminate_ratio drop a candidate slower than this times the best
 *                   after a round            (fast 1.5, full 4; > 1)
 *   timer           auto | host              (auto: device timers where
 *                                             the plugin has them)
 *   progress        auto | always | never    (auto: on a terminal, when
 *                                             tuning takes over a second)
 *   cache_dir       the cache files' directory (default
 *                   $XDG_CACHE_HOME/wafer/autotune, else
 *                   $HOME/.cache/wafer/autotune)
 *
 * The environment is read once, when the runtime opens. */
#include "build-config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/autotune/autotune.h"
#include "lib/error.h"
#include "lib/file.h"
#include "lib/log.h"

#define SECTION "autotune"

/* The most a `warmup` or `samples` value may ask: more only costs time. */
#define MAX_RUNS 1000

const char *wafer__tune_mode_name(enum wafer__tune_mode mode)
{
	switch (mode) {
	case WAFER_TUNE_OFF: return "off";
	case WAFER_TUNE_FAST: return "fast";
	case WAFER_TUNE_FULL: return "full";
	}
	return "unknown";
}

/* A malformed value: an error, or with |tolerant| a warning (the caller
 * keeps its default). */
static wafer_status bad_value(bool tolerant, wafer_status status)
{
	if (!tolerant)
		return status;
	wafer__log_warn("autotune", "%s; using the default",
			wafer__error_detail());
	wafer__error_clear();
	return WAFER_OK;
}

/* Looks |key| up and matches it against |names| (case-insensitive);
 * stores the index in |*out| when set and known. */
static wafer_status get_choice(const struct wafer__config *config,
			       const char *key, const char *const *names,
			       const char *expected, bool tolerant, int *out)
{
	const struct wafer__config_entry *e =
		wafer__config_lookup(config, SECTION, key);

	if (!e)
		return WAFER_OK;
	for (int i = 0; names[i]; i++) {
		if (strcasecmp(e->value, names[i]) == 0) {
			*out = i;
			return WAFER_OK;
		}
	}
	return bad_value(tolerant,
			 wafer__fail(WAFER_ERROR_CONFIG,
				     "%s: [" SECTION "] %s: expected %s, got '%s'",
				     e->origin, key, expected, e->value));
}

static wafer_status get_runs(const struct wafer__config *config,
			     const char *key, unsigned min, bool tolerant,
			     unsigned *inout)
{
	uint64_t value;
	wafer_status status =
		wafer__config_get_uint(config, SECTION, key, *inout, &value);

	if (status == WAFER_OK && (value < min || value > MAX_RUNS)) {
		const struct wafer__config_entry *e =
			wafer__config_lookup(config, SECTION, key);
		status = wafer__fail(WAFER_ERROR_CONFIG,
				     "%s: [" SECTION "] %s: expected %u to %d, "
				     "got %llu",
				     e->origin, key, min, MAX_RUNS,
				     (unsigned long long)value);
	}
	if (status != WAFER_OK)
		return bad_value(tolerant, status);
	*inout = (unsigned)value;
	return WAFER_OK;
}

static wafer_status get_ratio(const struct wafer__config *config,
			      bool tolerant, double *inout)
{
	double value;
	wafer_status status = wafer__config_get_double(
		config, SECTION, "eliminate_ratio", *inout, &value);

	if (status == WAFER_OK && !(value > 1.0)) {
		const struct wafer__config_entry *e = wafer__config_lookup(
			config, SECTION, "eliminate_ratio");
		status = wafer__fail(WAFER_ERROR_CONFIG,
				     "%s: [" SECTION "] eliminate_ratio: "
				     "expected a number above 1, got %s",
				     e->origin, e->value);
	}
	if (status != WAFER_OK)
		return bad_value(tolerant, status);
	*inout = value;
	return WAFER_OK;
}

/* `cache_dir`, else the XDG default. NULL (and no error) when neither it
 * nor XDG_CACHE_HOME nor HOME is set. */
static wafer_status find_cache_dir(const struct wafer__config *config,
				   struct wafer__tune_settings *out)
{
	const struct wafer__config_entry *e =
		wafer__config_lookup(config, SECTION, "cache_dir");
	const char *origin;

	if (e && e->value[0]) {
		out->cache_dir = strdup(e->value);
		snprintf(out->cache_dir_origin, sizeof out->cache_dir_origin,
			 "%s", e->origin);
		goto check;
	}
	out->cache_dir = wafer__file_cache_path("autotune", &origin);
	if (!out->cache_dir && errno == ENOENT)
		return WAFER_OK;
	if (origin)
		snprintf(out->cache_dir_origin, sizeof out->cache_dir_origin,
			 "%s", origin);
check:
	if (!out->cache_dir)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "autotune: out of host memory");
	return WAFER_OK;
}

wafer_status wafer__tune_settings_load(const struct wafer__config *config,
				       bool tolerant,
				       struct wafer__tune_settings *out)
{
	static const char *const modes[] = {"off", "fast", "full", NULL};
	static const char *const timers[] = {"auto", "host", NULL};
	static const char *const progress[] = {"auto", "always", "never", NULL};
	int mode = WAFER_TUNE_FAST, timer = 0,
	    shown = WAFER_TUNE_PROGRESS_AUTO;
	wafer_status status;

	memset(out, 0, sizeof *out);
	status = get_choice(config, "mode", modes, "off, fast or full",
			    tolerant, &mode);
	if (status == WAFER_OK)
		status = get_choice(config, "timer", timers, "auto or host",
				    tolerant, &timer);
	if (status == WAFER_OK)
		status = get_choice(config, "progress", progress,
				    "auto, always or never", tolerant, &shown);
	if (status != WAFER_OK)
		return status;
	out->mode = (enum wafer__tune_mode)mode;
	out->host_timer = timer == 1;
	out->progress = (enum wafer__tune_progress)shown;

	/* The mode sets the defaults the other keys override. */
	bool full = out->mode == WAFER_TUNE_FULL;
	out->warmup = full ? 3 : 1;
	out->samples = full ? 10 : 3;
	out->eliminate_ratio = full ? 4.0 : 1.5;
	status = get_runs(config, "warmup", 0, tolerant, &out->warmup);
	if (status == WAFER_OK)
		status = get_runs(config, "samples", 1, tolerant,
				  &out->samples);
	if (status == WAFER_OK)
		status = get_ratio(config, tolerant, &out->eliminate_ratio);
	if (status == WAFER_OK && out->mode != WAFER_TUNE_OFF)
		status = find_cache_dir(config, out);
	if (status != WAFER_OK)
		wafer__tune_settings_fini(out);
	return status;
}

void wafer__tune_settings_fini(struct wafer__tune_settings *settings)
{
	free(settings->cache_dir);
	settings->cache_dir = NULL;
}
