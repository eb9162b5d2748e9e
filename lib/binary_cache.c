/* wafer — SPDX-License-Identifier: MIT
 *
 * binary_cache.c: the compiled-binary cache of the host services
 * (plugin.h: cache_load, cache_store), so that a second process compiles
 * nothing — the opencl plugin's catalogue and every plugin's programs
 * (program.h) go through it.
 *
 * One directory per plugin (wafer__binary_cache_dir), one file per key:
 * <16 hex digits>.bin, the digits a hash of the key. The key is what the
 * binary depends on, as the plugin's parts name it (source bytes, format,
 * options, device, driver and plugin versions); each part is stored with
 * its length in front, so that no two lists of parts make one key. A
 * changed driver or source therefore gets a new file; old ones are never
 * read again (removing the directory is always safe).
 *
 * A file is a header, the key and the binary:
 *   "WAFERBC1"  u32 key length  u32 0  u64 binary length  u64 FNV-1a of
 *   the binary, all in host byte order
 * It is read in full and believed only if the magic, the key, the length
 * and the checksum all match: a truncated or damaged file (a crash while
 * writing, a full disk, a stray edit) is logged and is a miss, never
 * handed to a driver, and the plugin builds again and rewrites it. Files
 * are written to a temporary name in the same directory and renamed into
 * place, so a reader sees an old file or a whole new one, never half of
 * one, also when two processes write at once; they are the user's own
 * (0600 in 0700 directories), and a file someone else owns, or a link, is
 * not believed. */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/binary_cache.h"
#include "lib/config.h"
#include "lib/error.h"
#include "lib/file.h"
#include "lib/hash.h"

#define CACHE_MAGIC "WAFERBC1"
/* Binaries larger than this are not cached (nor believed when read). */
#define CACHE_MAX_BINARY ((uint64_t)256 << 20)
/* Keys larger than this (the source is part of it) are not cached. */
#define CACHE_MAX_KEY ((size_t)64 << 20)

struct cache_header {
	char magic[8];
	uint32_t key_size;
	uint32_t reserved;
	uint64_t binary_size;
	uint64_t binary_hash;
};

/*===----------------------------------------------------------------------===
 * Where
 *===----------------------------------------------------------------------===*/

static bool is_off(const char *value)
{
	return strcmp(value, "off") == 0 || strcmp(value, "no") == 0 ||
	       strcmp(value, "false") == 0 || strcmp(value, "0") == 0;
}

wafer_status wafer__binary_cache_dir(const struct wafer__config *config,
				     const char *plugin, char **out_dir)
{
	const struct wafer__config_entry *own = NULL, *off = NULL, *core = NULL;
	const char *origin;
	int n = 0;
	char *dir = NULL;

	*out_dir = NULL;
	if (config) {
		own = wafer__config_lookup(config, plugin, "cache_dir");
		off = wafer__config_lookup(config, plugin, "cache");
		core = wafer__config_lookup(config, "core", "cache_dir");
	}
	if ((off && is_off(off->value)) || (core && is_off(core->value)))
		return WAFER_OK;
	/* Binaries from the cache are loaded as code (a host-c program's
	 * shared object): a relative directory would load them from
	 * whatever the working directory is. */
	const struct wafer__config_entry *set = own && own->value[0] ? own
		: core && core->value[0] ? core : NULL;
	if (set && set->value[0] != '/')
		return wafer__fail(WAFER_ERROR_CONFIG,
				   "%s: [%s] cache_dir '%.200s' is relative: "
				   "give an absolute path (binaries are loaded "
				  "from there, and a relative path would be "
				  "the working directory's)",
				  set->origin, set->section, set->value);
	if (own && own->value[0])
		dir = strdup(own->value);
	else if (core && core->value[0])
		n = asprintf(&dir, "%s/%s", core->value, plugin);
	else if (!(dir = wafer__file_cache_path(plugin, &origin)) &&
		 errno == ENOENT)
		return WAFER_OK; /* nowhere to keep it: the cache is off */
	if (n < 0 || !dir)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "%s: out of host memory (cache directory)",
				   plugin);
	*out_dir = dir;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Keys
 *===----------------------------------------------------------------------===*/

/* The key: each part as a u64 length and its bytes. */
struct key {
	unsigned char *bytes;
	size_t size;
	uint64_t hash;
};

static const struct wafer_cache_part *part_at(const struct wafer_cache_part *parts,
					      size_t i)
{
	return (const void *)((const char *)parts + i * parts[0].struct_size);
}

static bool make_key(const struct wafer_cache_part *parts, size_t count,
		     struct key *key)
{
	size_t size = 0;

	memset(key, 0, sizeof *key);
	if (!count || parts[0].struct_size < sizeof *parts)
		return false;
	for (size_t i = 0; i < count; i++) {
		size_t n = part_at(parts, i)->size;
		if (n > CACHE_MAX_KEY || size > CACHE_MAX_KEY - n - 8)
			return false;
		size += 8 + n;
	}
	key->bytes = malloc(size ? size : 1);
	if (!key->bytes)
		return false;
	for (size_t i = 0; i < count; i++) {
		const struct wafer_cache_part *p = part_at(parts, i);
		uint64_t n = p->size;
		memcpy(key->bytes + key->size, &n, 8);
		if (n)
			memcpy(key->bytes + key->size + 8, p->data, p->size);
		key->size += 8 + p->size;
	}
	key->hash = wafer__fnv_bytes(WAFER_FNV_INIT, key->bytes, key->size);
	return true;
}

static bool key_path(const char *dir, const struct key *key, char **out)
{
	return asprintf(out, "%s/%016" PRIx64 ".bin", dir, key->hash) >= 0;
}

/*===----------------------------------------------------------------------===
 * Reading
 *===----------------------------------------------------------------------===*/

/* The binary of file |data| (|size| bytes) for |key|, or NULL with the
 * reason in |why|. */
static void *check_file(const unsigned char *data, size_t size,
			const struct key *key, size_t *out_size, char *why,
			size_t why_size)
{
	struct cache_header h;
	void *binary;

	if (size >= sizeof h)
		memcpy(&h, data, sizeof h);
	if (size < sizeof h || memcmp(h.magic, CACHE_MAGIC, 8) != 0) {
		snprintf(why, why_size, "not a wafer cache file");
		return NULL;
	}
	if (h.key_size == key->size && size - sizeof h < key->size) {
		snprintf(why, why_size, "truncated: %zu bytes of its key, the "
			 "header says %" PRIu32,
			 size - sizeof h, h.key_size);
		return NULL;
	}
	if (h.key_size != key->size ||
	    memcmp(data + sizeof h, key->bytes, key->size) != 0) {
		snprintf(why, why_size, "written for another key");
		return NULL;
	}
	if (h.binary_size != size - sizeof h - key->size) {
		snprintf(why, why_size,
			 "truncated: %zu bytes of binary, the header says "
			 "%" PRIu64,
			 size - sizeof h - key->size, h.binary_size);
		return NULL;
	}
	const unsigned char *start = data + sizeof h + key->size;
	if (h.binary_size == 0 ||
	    wafer__fnv_bytes(WAFER_FNV_INIT, start, (size_t)h.binary_size) !=
		    h.binary_hash) {
		snprintf(why, why_size, "checksum mismatch: damaged");
		return NULL;
	}
	binary = malloc((size_t)h.binary_size);
	if (!binary) {
		snprintf(why, why_size, "out of host memory");
		return NULL;
	}
	memcpy(binary, start, (size_t)h.binary_size);
	*out_size = (size_t)h.binary_size;
	return binary;
}

wafer_status wafer__binary_cache_load(const char *dir,
				      const struct wafer_host_services *host,
				      const struct wafer_cache_part *parts,
				      size_t part_count, void **out_data,
				      size_t *out_size)
{
	struct key key;
	char *path = NULL, why[512] = "", *data = NULL;
	size_t size = 0;
	int err;

	*out_data = NULL;
	*out_size = 0;
	if (!dir || !parts || !make_key(parts, part_count, &key))
		return WAFER_ERROR_NOT_FOUND;
	if (!key_path(dir, &key, &path))
		goto out;
	/* What is loaded from here may be code (a host-c program's shared
	 * object): only the user's own files are believed. */
	struct stat st;
	if (lstat(path, &st) != 0) {
		if (!wafer__errno_absent(errno))
			snprintf(why, sizeof why, "cannot read it: %s",
				 strerror(errno));
		goto out;
	}
	if (st.st_uid != geteuid() || !S_ISREG(st.st_mode)) {
		snprintf(why, sizeof why, "not a regular file of this user");
		goto out;
	}
	err = wafer__file_read(path,
			       sizeof(struct cache_header) + key.size +
				      CACHE_MAX_BINARY,
			      &data, &size);
	if (!err)
		*out_data = check_file((unsigned char *)data, size, &key,
				       out_size, why, sizeof why);
	else if (err == EFBIG)
		snprintf(why, sizeof why, "too large, or not a regular file");
	else if (!wafer__errno_absent(err))
		snprintf(why, sizeof why, "cannot read it: %s", strerror(err));
out:
	if (why[0] && host && host->log)
		host->log(host, WAFER_LOG_INFO, "ignoring cache file %s: %s",
			  path, why);
	else if (*out_data && host && host->log)
		/* The plugin may still refuse what it holds: this names the
		 * file its refusal is about. */
		host->log(host, WAFER_LOG_DEBUG, "read cache file %s", path);
	free(data);
	free(path);
	free(key.bytes);
	return *out_data ? WAFER_OK : WAFER_ERROR_NOT_FOUND;
}

void wafer__binary_cache_free(void *data)
{
	free(data);
}

/*===----------------------------------------------------------------------===
 * Writing
 *===----------------------------------------------------------------------===*/

/* Writes |h|, the key and the binary to a temporary file in |dir| and
 * renames it to |path|; the reason in |why| on failure. */
static int write_file(const char *dir, const char *path,
		      const struct cache_header *h, const struct key *key,
		      const void *binary, size_t size, char *why,
		      size_t why_size)
{
	char *tmp = NULL;
	int fd, ok;

	int err = wafer__file_make_dirs(dir, 0700);
	if (err) {
		snprintf(why, why_size, "cannot create %s: %s", dir,
			 strerror(err));
		return -1;
	}
	if (asprintf(&tmp, "%s/.tmp-XXXXXX", dir) < 0) {
		snprintf(why, why_size, "out of host memory");
		return -1;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		snprintf(why, why_size, "cannot create a file in %s: %s", dir,
			 strerror(errno));
		free(tmp);
		return -1;
	}
	ok = wafer__file_write_all(fd, h, sizeof *h) == 0 &&
	     wafer__file_write_all(fd, key->bytes, key->size) == 0 &&
	     wafer__file_write_all(fd, binary, size) == 0;
	if (!ok)
		snprintf(why, why_size, "cannot write %s: %s", tmp,
			 strerror(errno));
	if (close(fd) != 0 && ok) {
		snprintf(why, why_size, "cannot write %s: %s", tmp,
			 strerror(errno));
		ok = 0;
	}
	if (ok && rename(tmp, path) != 0) {
		snprintf(why, why_size, "cannot rename %s to %s: %s", tmp,
			 path, strerror(errno));
		ok = 0;
	}
	if (!ok)
		unlink(tmp);
	free(tmp);
	return ok ? 0 : -1;
}

wafer_status wafer__binary_cache_store(const char *dir,
				       const struct wafer_host_services *host,
				       const struct wafer_cache_part *parts,
				       size_t part_count, const void *data,
				       size_t size)
{
	struct cache_header h = {.magic = CACHE_MAGIC};
	struct key key;
	char *path = NULL, why[512] = "";
	wafer_status status = WAFER_ERROR_IO;

	if (!dir)
		return WAFER_OK; /* the cache is off */
	if (!parts || !data || size == 0 || size > CACHE_MAX_BINARY)
		return WAFER_ERROR_INVALID_ARGUMENT;
	if (!make_key(parts, part_count, &key) || key.size > UINT32_MAX) {
		free(key.bytes);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (!key_path(dir, &key, &path)) {
		snprintf(why, sizeof why, "out of host memory");
		goto out;
	}
	h.key_size = (uint32_t)key.size;
	h.binary_size = size;
	h.binary_hash = wafer__fnv_bytes(WAFER_FNV_INIT, data, size);
	if (write_file(dir, path, &h, &key, data, size, why, sizeof why) == 0)
		status = WAFER_OK;
out:
	if (status != WAFER_OK && host && host->log)
		host->log(host, WAFER_LOG_INFO, "binary not cached: %s", why);
	free(path);
	free(key.bytes);
	return status;
}
