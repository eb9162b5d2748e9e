/* wafer — SPDX-License-Identifier: MIT
 *
 * file.h: the few file operations the core's caches share — the
 * autotune cache (lib/autotune/file.c) and the plugins' compiled-binary
 * cache (lib/binary_cache.c): reading a whole file, writing a buffer
 * whole, creating a directory with its parents. Both caches replace
 * their files by writing a temporary file and renaming it. */
#ifndef WAFER_CORE_FILE_H
#define WAFER_CORE_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* Reads the whole regular file |path| of at most |limit| bytes into a new
 * buffer (free it), NUL-terminated past |*out_size| bytes. Returns 0, or
 * an errno value: ENOENT and ENOTDIR when it is not there, EFBIG when it
 * is larger than |limit| or not a regular file, ENOMEM, or what open or
 * read said. |*out_data| is NULL on failure. */
int wafer__file_read(const char *path, size_t limit, char **out_data,
		     size_t *out_size);

/* Writes all |size| bytes of |data| to |fd| (retrying after EINTR);
 * 0, or -1 with errno set. */
int wafer__file_write_all(int fd, const void *data, size_t size);

/* Creates directory |dir| and any missing parent, each new one with
 * |mode|; an existing one is fine. 0, or an errno value. */
int wafer__file_make_dirs(const char *dir, mode_t mode);

/* Environment variable |name| as the core reads paths from it: with
 * secure_getenv where there is one (a set-user-ID program reads none);
 * NULL when unset or empty. */
const char *wafer__file_getenv(const char *name);

/* The user's cache directory for |leaf|: "$XDG_CACHE_HOME/wafer/<leaf>",
 * else "$HOME/.cache/wafer/<leaf>" (each variable used only when it holds
 * an absolute path, read with secure_getenv), as a new string, with the
 * variable it came from in |*out_origin| ("XDG_CACHE_HOME", "HOME").
 * NULL with errno ENOENT when neither is set, ENOMEM when out of memory. */
char *wafer__file_cache_path(const char *leaf, const char **out_origin);

#endif
