/* wafer — SPDX-License-Identifier: MIT
 * binary_cache.c: the compiled-binary cache (binary_cache.h). */
#include "build-config.h"

#include <stdlib.h>

#include "core/binary_cache.h"

wafer_status wafer_binary_cache_load(const char *dir,
				     const struct wafer_host_services *host,
				     const struct wafer_cache_part *parts,
				     size_t part_count, void **out_data,
				     size_t *out_size)
{
	(void)dir, (void)host, (void)parts, (void)part_count;
	*out_data = NULL;
	*out_size = 0;
	return WAFER_ERROR_NOT_FOUND;
}

void wafer_binary_cache_free(void *data)
{
	free(data);
}

wafer_status wafer_binary_cache_store(const char *dir,
				      const struct wafer_host_services *host,
				      const struct wafer_cache_part *parts,
				      size_t part_count, const void *data,
				      size_t size)
{
	(void)dir, (void)host, (void)parts, (void)part_count, (void)data,
		(void)size;
	return WAFER_ERROR_NOT_SUPPORTED;
}

wafer_status wafer_binary_cache_dir(const struct wafer_config *config,
				    const char *plugin, char **out_dir)
{
	(void)config, (void)plugin;
	*out_dir = NULL;
	return WAFER_OK;
}
