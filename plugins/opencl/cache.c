/* wafer — SPDX-License-Identifier: MIT
 *
 * cache.c: the on-disk cache of OpenCL program binaries, so that a second
 * process on the same device compiles nothing (compiling the catalogue
 * takes seconds on PoCL, and a cl_program loaded from its binary about a
 * millisecond).
 *
 * Where: [opencl] cache_dir, else $XDG_CACHE_HOME/wafer/opencl, else
 * $HOME/.cache/wafer/opencl. One file per program unit and key:
 * <unit>-<16 hex digits>.bin, the digits a hash of the key text, which
 * names everything the binary depends on: the plugin version, platform,
 * device, driver version, build options and a hash of the source. A new
 * driver or a changed kernel therefore gets a new file; old ones are
 * never read again (removing the directory is always safe).
 *
 * A file is a header, the key text and the binary:
 *   "WAFERCL1"  u32 key length  u32 0  u64 binary length  u64 FNV-1a of
 *   the binary, all in host byte order
 * It is read in full and believed only if the magic, the key text, the
 * length and the checksum all match: a truncated or damaged file (a crash
 * while writing, a full disk, a stray edit) is ignored, never handed to
 * the driver, and the program is built from source and the file
 * rewritten. Files are written to a temporary name in the same directory
 * and renamed into place, so a reader sees an old file or a whole new
 * one, never half of one, also when two processes write at once. */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugins/opencl/ocl_plugin.h"

#define CACHE_MAGIC "WAFERCL1"
/* Binaries larger than this are not cached (nor believed when read). */
#define CACHE_MAX_BINARY ((uint64_t)256 << 20)

struct cache_header {
	char magic[8];
	uint32_t key_size;
	uint32_t reserved;
	uint64_t binary_size;
	uint64_t binary_hash;
};

uint64_t ocl_fnv1a(uint64_t hash, const void *data, size_t size)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < size; i++)
		hash = (hash ^ p[i]) * UINT64_C(1099511628211);
	return hash;
}

static const char *env(const char *name)
{
#ifdef HAVE_SECURE_GETENV
	const char *value = secure_getenv(name);
#else
	const char *value = getenv(name);
#endif
	return value && value[0] == '/' ? value : NULL;
}

/* The cache directory, or "" when there is none (no option, no absolute
 * XDG_CACHE_HOME or HOME). */
static void cache_dir(const struct ocl_state *state, char *buf, size_t size)
{
	const char *base;

	buf[0] = '\0';
	if (state->cache_dir)
		snprintf(buf, size, "%s", state->cache_dir);
	else if ((base = env("XDG_CACHE_HOME")))
		snprintf(buf, size, "%s/wafer/opencl", base);
	else if ((base = env("HOME")))
		snprintf(buf, size, "%s/.cache/wafer/opencl", base);
}

void ocl_cache_key(const struct ocl_device *dev, const char *unit,
		   const char *options, const char *const *sources,
		   size_t source_count, struct ocl_cache_key *key)
{
	const struct ocl_device_entry *e = dev->entry;
	uint64_t source_hash = UINT64_C(1469598103934665603);
	char dir[OCL_PATH_MAX];
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
	key->path[0] = '\0';
	if (!dev->state->cache_enabled)
		return;
	cache_dir(dev->state, dir, sizeof dir);
	if (!dir[0])
		return;
	n = snprintf(key->path, sizeof key->path, "%s/%s-%016" PRIx64 ".bin",
		     dir, unit, key->hash);
	if (n < 0 || (size_t)n >= sizeof key->path)
		key->path[0] = '\0';
}

/* Reads all of |fd| (at most |limit| bytes) into a new buffer. */
static unsigned char *read_all(int fd, size_t limit, size_t *out_size)
{
	struct stat st;
	unsigned char *data;
	size_t got = 0;

	if (fstat(fd, &st) != 0 || st.st_size < 0 ||
	    (uint64_t)st.st_size > limit)
		return NULL;
	data = malloc(st.st_size ? (size_t)st.st_size : 1);
	while (data && got < (size_t)st.st_size) {
		ssize_t n = read(fd, data + got, (size_t)st.st_size - got);
		if (n <= 0) {
			free(data);
			return NULL;
		}
		got += (size_t)n;
	}
	*out_size = got;
	return data;
}

unsigned char *ocl_cache_read(const struct ocl_cache_key *key,
			      size_t *out_size, char *why, size_t why_size)
{
	struct cache_header h;
	size_t size = 0, key_size = strlen(key->text);
	unsigned char *data, *binary = NULL;
	int fd;

	*out_size = 0;
	why[0] = '\0';
	if (!key->path[0])
		return NULL;
	fd = open(key->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			snprintf(why, why_size, "cannot open it: %s",
				 strerror(errno));
		return NULL;
	}
	data = read_all(fd, sizeof h + key_size + CACHE_MAX_BINARY, &size);
	close(fd);
	if (!data) {
		snprintf(why, why_size, "cannot read it, or it is too large");
		return NULL;
	}
	if (size >= sizeof h)
		memcpy(&h, data, sizeof h);
	if (size < sizeof h || memcmp(h.magic, CACHE_MAGIC, 8) != 0)
		snprintf(why, why_size, "not a wafer OpenCL cache file");
	else if (h.key_size != key_size ||
		 size - sizeof h < key_size ||
		 memcmp(data + sizeof h, key->text, key_size) != 0)
		snprintf(why, why_size, "written for another key");
	else if (h.binary_size != size - sizeof h - key_size)
		snprintf(why, why_size, "truncated: %zu bytes of binary, the "
			 "header says %" PRIu64,
			 size - sizeof h - key_size, h.binary_size);
	else if (h.binary_size == 0 ||
		 ocl_fnv1a(UINT64_C(1469598103934665603),
			   data + sizeof h + key_size, (size_t)h.binary_size) !=
			 h.binary_hash)
		snprintf(why, why_size, "checksum mismatch: damaged");
	else if ((binary = malloc((size_t)h.binary_size)))
		memcpy(binary, data + sizeof h + key_size,
		       (size_t)h.binary_size);
	else
		snprintf(why, why_size, "out of host memory");
	free(data);
	if (binary)
		*out_size = (size_t)h.binary_size;
	return binary;
}

/* mkdir -p, each new level 0700 (a cache is the user's own business). */
static int make_dirs(const char *path)
{
	char buf[OCL_PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof buf)
		return -1;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

static int write_all(int fd, const void *data, size_t size)
{
	const char *p = data;

	while (size) {
		ssize_t n = write(fd, p, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		size -= (size_t)n;
	}
	return 0;
}

int ocl_cache_write(const struct ocl_cache_key *key,
		    const unsigned char *binary, size_t size, char *why,
		    size_t why_size)
{
	struct cache_header h = {.magic = CACHE_MAGIC};
	char dir[OCL_PATH_MAX], tmp[OCL_PATH_MAX + 16];
	char *slash;
	int fd, ok;

	why[0] = '\0';
	if (!key->path[0] || size == 0 || size > CACHE_MAX_BINARY)
		return -1;
	snprintf(dir, sizeof dir, "%s", key->path);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	if (make_dirs(dir) != 0) {
		snprintf(why, why_size, "cannot create %s: %s", dir,
			 strerror(errno));
		return -1;
	}
	snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", dir);
	fd = mkstemp(tmp);
	if (fd < 0) {
		snprintf(why, why_size, "cannot create a file in %s: %s", dir,
			 strerror(errno));
		return -1;
	}
	h.key_size = (uint32_t)strlen(key->text);
	h.binary_size = size;
	h.binary_hash = ocl_fnv1a(UINT64_C(1469598103934665603), binary, size);
	ok = write_all(fd, &h, sizeof h) == 0 &&
	     write_all(fd, key->text, h.key_size) == 0 &&
	     write_all(fd, binary, size) == 0;
	if (!ok)
		snprintf(why, why_size, "cannot write %s: %s", tmp,
			 strerror(errno));
	if (close(fd) != 0 && ok) {
		snprintf(why, why_size, "cannot write %s: %s", tmp,
			 strerror(errno));
		ok = 0;
	}
	if (ok && rename(tmp, key->path) != 0) {
		snprintf(why, why_size, "cannot rename %s to %s: %s", tmp,
			 key->path, strerror(errno));
		ok = 0;
	}
	if (!ok)
		unlink(tmp);
	return ok ? 0 : -1;
}
