/* wafer — SPDX-License-Identifier: MIT
 *
 * cache.c: the OpenCL plugin's program binaries on disk, so that a second
 * process on the same device compiles nothing (compiling the catalogue
 * takes seconds on PoCL, and a cl_program loaded from its binary about a
 * millisecond). The files are the host's compiled-binary cache
 * (plugin.h: cache_load, cache_store; the core's binary_cache.c), the one
 * mechanism of every plugin: $XDG_CACHE_HOME/wafer/opencl, or `[opencl]
 * cache_dir`, off with `[opencl] cache = off`; written atomically,
 * checked on reading, a damaged file ignored (and logged) and rewritten.
 *
 * What this file adds is the key: the text naming everything a binary
 * depends on — the plugin version, platform, device, driver version,
 * build options, unit and a hash of the source. A new driver or a
 * changed kernel therefore gets a new entry; old ones are never read
 * again (removing the directory is always safe). */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/opencl/ocl_plugin.h"

uint64_t ocl_fnv1a(uint64_t hash, const void *data, size_t size)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < size; i++)
		hash = (hash ^ p[i]) * UINT64_C(1099511628211);
	return hash;
}

void ocl_cache_key(const struct ocl_device *dev, const char *unit,
		   const char *options, const char *const *sources,
		   size_t source_count, struct ocl_cache_key *key)
{
	const struct ocl_device_entry *e = dev->entry;
	uint64_t source_hash = UINT64_C(1469598103934665603);
	int n;

	for (size_t i = 0; i < source_count; i++)
		source_hash = ocl_fnv1a(source_hash, sources[i],
					strlen(sources[i]) + 1);
	n = snprintf(key->text, sizeof key->text,
		     "wafer opencl plugin %s\n"
		     "platform: %s / %s\n"
		     "device: %s / %s / %s\n"
		     "driver: %s\n"
		     "options: %s\n"
		     "unit: %s\n"
		     "source: %016" PRIx64 "\n",
		     PACKAGE_VERSION, e->platform_name, e->platform_version,
		     e->name, e->vendor, e->device_version, e->driver_version,
		     options, unit, source_hash);
	if (n < 0 || (size_t)n >= sizeof key->text)
		key->text[sizeof key->text - 1] = '\0';
	key->hash = ocl_fnv1a(UINT64_C(1469598103934665603), key->text,
			      strlen(key->text));
	/* Not a file name any more (the host names its files): what the
	 * log lines of kernels_build.c say a binary came from, "" when there is
	 * no cache to use. */
	key->host = ocl_host(dev);
	key->path[0] = '\0';
	if (dev->state->cache_enabled && wafer_plugin_has_cache(key->host))
		snprintf(key->path, sizeof key->path,
			 "the binary cache (key %016" PRIx64 ")", key->hash);
}

static const struct wafer_cache_part *key_parts(const struct ocl_cache_key *key,
						struct wafer_cache_part *part)
{
	*part = (struct wafer_cache_part){
		.struct_size = sizeof *part,
		.data = key->text,
		.size = strlen(key->text),
	};
	return part;
}

unsigned char *ocl_cache_read(const struct ocl_cache_key *key,
			      size_t *out_size, char *why, size_t why_size)
{
	const struct wafer_host_services *host = key->host;
	struct wafer_cache_part part;
	unsigned char *binary = NULL;
	void *data;
	size_t size;

	*out_size = 0;
	why[0] = '\0'; /* the host logs why it did not believe a file */
	(void)why_size;
	if (!key->path[0] ||
	    host->cache_load(host, key_parts(key, &part), 1, &data, &size) !=
		    WAFER_OK)
		return NULL;
	/* The caller frees with free(): a copy out of the host's buffer. */
	binary = malloc(size);
	if (binary) {
		memcpy(binary, data, size);
		*out_size = size;
	}
	host->cache_free(data);
	return binary;
}

int ocl_cache_write(const struct ocl_cache_key *key,
		    const unsigned char *binary, size_t size, char *why,
		    size_t why_size)
{
	const struct wafer_host_services *host = key->host;
	struct wafer_cache_part part;

	why[0] = '\0'; /* the host logs why a store failed */
	(void)why_size;
	if (!key->path[0] || size == 0)
		return -1;
	return host->cache_store(host, key_parts(key, &part), 1, binary,
				 size) == WAFER_OK
		       ? 0
		       : -1;
}
