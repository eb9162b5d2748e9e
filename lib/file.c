/* wafer — SPDX-License-Identifier: MIT
 * file.c: reading, writing and directories for the core's caches
 * (file.h). */
#include "build-config.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/file.h"

int wafer__file_read(const char *path, size_t limit, char **out_data,
		     size_t *out_size)
{
	struct stat st;
	size_t got = 0;
	int err = 0;

	*out_data = NULL;
	*out_size = 0;
	/* O_NONBLOCK: a FIFO at |path| must not block the open; it is then
	 * refused as not a regular file (where O_NONBLOCK changes nothing). */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) != 0) {
		err = errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (uint64_t)st.st_size > limit) {
		close(fd);
		return EFBIG;
	}
	size_t size = (size_t)st.st_size;
	char *data = malloc(size + 1);
	if (!data) {
		close(fd);
		return ENOMEM;
	}
	while (got < size) {
		ssize_t n = read(fd, data + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = errno;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (err) {
		free(data);
		return err;
	}
	/* A file that shrank while read is what it now is. */
	data[got] = '\0';
	*out_data = data;
	*out_size = got;
	return 0;
}

int wafer__file_write_all(int fd, const void *data, size_t size)
{
	const char *p = data;

	while (size) {
		ssize_t n = write(fd, p, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		p += n;
		size -= (size_t)n;
	}
	return 0;
}

int wafer__file_make_dirs(const char *dir, mode_t mode)
{
	char *copy = strdup(dir);
	int err = 0;

	if (!copy)
		return ENOMEM;
	for (char *p = copy + 1; !err; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(copy, mode) != 0 && errno != EEXIST)
			err = errno;
		*p = c;
		if (c == '\0')
			break;
	}
	free(copy);
	return err;
}

const char *wafer__file_getenv(const char *name)
{
#ifdef HAVE_SECURE_GETENV
	const char *value = secure_getenv(name);
#else
	const char *value = getenv(name);
#endif
	return value && value[0] ? value : NULL;
}

static const char *absolute_env(const char *name)
{
	const char *value = wafer__file_getenv(name);
	return value && value[0] == '/' ? value : NULL;
}

char *wafer__file_cache_path(const char *leaf, const char **out_origin)
{
	const char *base, *middle;
	char *path;

	if ((base = absolute_env("XDG_CACHE_HOME"))) {
		*out_origin = "XDG_CACHE_HOME";
		middle = "/wafer/";
	} else if ((base = absolute_env("HOME"))) {
		*out_origin = "HOME";
		middle = "/.cache/wafer/";
	} else {
		*out_origin = NULL;
		errno = ENOENT;
		return NULL;
	}
	if (asprintf(&path, "%s%s%s", base, middle, leaf) < 0) {
		errno = ENOMEM;
		return NULL;
	}
	return path;
}
