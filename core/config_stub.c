/* wafer — SPDX-License-Identifier: MIT
 *
 * config_stub.c: TEMPORARY link stand-in for the config getters the memory
 * strategies call, until branch `config` (core/config.c) is merged into
 * `memory`. It parses nothing: every lookup answers "unset", which is what
 * a NULL configuration means to the strategies anyway. Deleted by the
 * merge. */
#include "build-config.h"

#include "core/config.h"

const struct wafer_config_entry *
wafer_config_lookup(const struct wafer_config *config, const char *section,
		    const char *key)
{
	return NULL;
}

size_t wafer_config_section(const struct wafer_config *config,
			    const char *section,
			    const struct wafer_config_entry **out_entries,
			    size_t capacity)
{
	return 0;
}

wafer_status wafer_config_get_size(const struct wafer_config *config,
				   const char *section, const char *key,
				   uint64_t fallback, uint64_t *out_value)
{
	*out_value = fallback;
	return WAFER_OK;
}

wafer_status wafer_config_get_uint(const struct wafer_config *config,
				   const char *section, const char *key,
				   uint64_t fallback, uint64_t *out_value)
{
	*out_value = fallback;
	return WAFER_OK;
}

wafer_status wafer_config_get_double(const struct wafer_config *config,
				     const char *section, const char *key,
				     double fallback, double *out_value)
{
	*out_value = fallback;
	return WAFER_OK;
}
