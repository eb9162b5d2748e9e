/* wafer — SPDX-License-Identifier: MIT
 * limit.c: `[memory] limit`, per device (limit.h). */
#include "build-config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/memory/limit.h"

static const char limit_expected[] =
	"a size in bytes (suffix K, M, G, T, KiB, MiB, GiB, TiB or KB, MB, "
	"GB, TB) or a percentage of the device's memory above 0 and up to "
	"100 (80%)";

static wafer_status bad_limit(const struct wafer__config_entry *e,
			      const char *expected)
{
	return wafer__fail(WAFER_ERROR_CONFIG,
			   "%s: [memory] limit: expected %s, got '%s'",
			   e->origin, expected, e->value);
}

/* "80%", "12.5 %": the fraction of |device_memory|, rounded down. */
static wafer_status parse_percent(const struct wafer__config_entry *e,
				  const char *percent, uint64_t device_memory,
				  uint64_t *out_bytes)
{
	char *end;
	errno = 0;
	double value = strtod(e->value, &end);
	while (end < percent && (*end == ' ' || *end == '\t'))
		end++;
	if (end != percent || end == e->value || errno || percent[1] != '\0' ||
	    !isfinite(value) || !(value > 0 && value <= 100))
		return bad_limit(e, limit_expected);
	if (!device_memory)
		return wafer__fail(WAFER_ERROR_CONFIG,
				   "%s: [memory] limit: %s of the device's "
				   "memory, but the device does not report its "
				   "memory size; give a size in bytes",
				   e->origin, e->value);
	*out_bytes = (uint64_t)((long double)device_memory * value / 100);
	if (!*out_bytes)
		*out_bytes = 1;
	return WAFER_OK;
}

wafer_status wafer__memory_limit_init(struct wafer__memory_limit *limit,
				      const struct wafer__config *config,
				      uint64_t device_memory,
				      const char *device_name,
				      uint64_t *device_reserved)
{
	memset(limit, 0, sizeof *limit);
	limit->device_reserved = device_reserved;
	snprintf(limit->device, sizeof limit->device, "%s", device_name);
	const struct wafer__config_entry *e =
		config ? wafer__config_lookup(config, "memory", "limit") : NULL;
	if (!e)
		return WAFER_OK;
	const char *percent = strchr(e->value, '%');
	wafer_status status;
	if (percent) {
		status = parse_percent(e, percent, device_memory,
				       &limit->bytes);
	} else {
		status = wafer__config_get_size(config, "memory", "limit", 0,
						&limit->bytes);
		/* The size parser's text knows nothing of percentages. */
		if (status != WAFER_OK)
			status = bad_limit(e, limit_expected);
		else if (!limit->bytes)
			status = bad_limit(e, "a limit above 0 bytes (leave "
					      "the key out for none)");
	}
	if (status != WAFER_OK) {
		limit->bytes = 0;
		return status;
	}
	snprintf(limit->text, sizeof limit->text, "%s", e->value);
	snprintf(limit->origin, sizeof limit->origin, "%s", e->origin);
	return WAFER_OK;
}

wafer_status wafer__memory_limit_charge(struct wafer__memory_limit *limit,
					uint64_t bytes, uint64_t client_reserved)
{
	uint64_t *counter = limit->device_reserved;
	uint64_t now = __atomic_load_n(counter, __ATOMIC_RELAXED);
	do {
		if (limit->bytes &&
		    (bytes > limit->bytes || now > limit->bytes - bytes))
			return wafer__fail(
				WAFER_ERROR_OUT_OF_MEMORY,
				"[memory] limit %s (%llu bytes, from %s) reached "
				"on %s: %llu bytes reserved on the device (%llu "
				"by this client), %llu more asked",
				limit->text, (unsigned long long)limit->bytes,
				limit->origin, limit->device,
				(unsigned long long)now,
				(unsigned long long)client_reserved,
				(unsigned long long)bytes);
	} while (!__atomic_compare_exchange_n(counter, &now, now + bytes, true,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return WAFER_OK;
}

void wafer__memory_limit_credit(struct wafer__memory_limit *limit,
				uint64_t bytes)
{
	__atomic_fetch_sub(limit->device_reserved, bytes, __ATOMIC_RELAXED);
}

uint64_t wafer__memory_limit_device_reserved(const struct wafer__memory_limit *limit)
{
	return __atomic_load_n(limit->device_reserved, __ATOMIC_RELAXED);
}
