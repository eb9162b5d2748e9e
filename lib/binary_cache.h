/* wafer — SPDX-License-Identifier: MIT
 *
 * binary_cache.h: the compiled-binary cache that the host services offer
 * every plugin (cache_load, cache_store in plugin.h): one directory per
 * plugin, one file per key. */
#ifndef WAFER_CORE_BINARY_CACHE_H
#define WAFER_CORE_BINARY_CACHE_H

#include <stddef.h>

#include <wafer/plugin.h>

struct wafer__config;

/* The cache directory of plugin |plugin| in |*out_dir| (free it), or NULL
 * when it has none: `[<plugin>] cache_dir` (the whole directory, as the
 * opencl plugin has always read it), else `[core] cache_dir`/<plugin>,
 * else $XDG_CACHE_HOME/wafer/<plugin>, else $HOME/.cache/wafer/<plugin>.
 * `[<plugin>] cache = off` or `[core] cache_dir = off` turn it off. Fails
 * only for want of host memory. |config| may be NULL (environment
 * only). */
wafer_status wafer__binary_cache_dir(const struct wafer__config *config,
				     const char *plugin, char **out_dir);

/* The binary stored under the key |parts| in directory |dir| (NULL: the
 * cache is off: a miss). Problems with a file are logged through
 * |host|->log and are a miss. */
wafer_status wafer__binary_cache_load(const char *dir,
				      const struct wafer_host_services *host,
				      const struct wafer_cache_part *parts,
				      size_t part_count, void **out_data,
				      size_t *out_size);
void wafer__binary_cache_free(void *data);
wafer_status wafer__binary_cache_store(const char *dir,
				       const struct wafer_host_services *host,
				       const struct wafer_cache_part *parts,
				       size_t part_count, const void *data,
				       size_t size);

#endif
