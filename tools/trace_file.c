/* wafer — SPDX-License-Identifier: MIT
 *
 * trace_file.c: reads a trace file line by line through zlib (which reads
 * plain files as they are). Only a regular file, opened without
 * blocking (a FIFO once blocked the open for ever, and /dev/zero fed one
 * line without end), with lines of at most MAX_LINE bytes. */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "tools/trace_file.h"

/* An event line is a few dozen bytes; named fields add some. */
#define MAX_LINE 4096

/* Reads one line of any length into |*buf|: 1 with a line, 0 at end of
 * file, -1 with the reason in |why|. */
static int read_line(gzFile in, const char *path, char **buf, size_t *size,
		     char *why, size_t why_size)
{
	size_t used = 0;
	for (;;) {
		if (used >= MAX_LINE) {
			snprintf(why, why_size, "%s: a line longer than %d "
				 "bytes: not a trace", path, MAX_LINE);
			return -1;
		}
		if (used + 2 > *size) {
			size_t grown = *size ? *size * 2 : 256;
			char *b = realloc(*buf, grown);
			if (!b) {
				snprintf(why, why_size, "%s: out of host "
					 "memory reading the trace", path);
				return -1;
			}
			*buf = b;
			*size = grown;
		}
		if (!gzgets(in, *buf + used, (int)(*size - used))) {
			int err;
			const char *msg = gzerror(in, &err);
			if (err != Z_OK && err != Z_STREAM_END) {
				snprintf(why, why_size, "%s: %s", path,
					 err == Z_ERRNO ? strerror(errno) : msg);
				return -1;
			}
			return used > 0;
		}
		used += strlen(*buf + used);
		if (used && (*buf)[used - 1] == '\n')
			return 1;
	}
}

bool wafer_trace_load(const char *path, struct wafer_trace *t, char *why,
		      size_t why_size)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		snprintf(why, why_size, "%s: %s", path, strerror(errno));
		return false;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, why_size, "%s: not a regular file (a trace is "
			 "read from a file, plain or gzip)", path);
		close(fd);
		return false;
	}
	errno = 0;
	gzFile in = gzdopen(fd, "rb");
	if (!in) {
		snprintf(why, why_size, "%s: %s", path,
			 errno ? strerror(errno) : "cannot open");
		close(fd);
		return false;
	}
	gzbuffer(in, 1 << 16);

	char *buf = NULL, reason[256];
	size_t size = 0;
	int got;
	bool ok = true;
	while (ok && (got = read_line(in, path, &buf, &size, why,
				      why_size)) != 0) {
		if (got < 0)
			ok = false;
		else if (!wafer_trace_add_line(t, buf, reason, sizeof reason)) {
			snprintf(why, why_size, "%s:%u: %s", path, t->lines,
				 reason);
			ok = false;
		}
	}
	free(buf);
	gzclose(in);
	if (ok && t->count == 0) {
		snprintf(why, why_size, "%s: no events", path);
		ok = false;
	}
	return ok;
}
