/* wafer — SPDX-License-Identifier: MIT
 *
 * log_capture.h: what the library logs (to stderr) between two points of
 * a test, so the test can look for a line:
 *
 *   struct log_capture cap;
 *   if (log_capture_begin(&cap)) {
 *           ...calls...
 *           log_capture_end(&cap, text, sizeof text);
 *   }
 *
 * Header-only, like tap.h (include it after tap.h): a capture that cannot
 * be set up is a failed point. */
#ifndef WAFER_T_LOG_CAPTURE_H
#define WAFER_T_LOG_CAPTURE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

struct log_capture {
	char path[64];
	int fd, saved;
};

static inline int log_capture_begin(struct log_capture *c)
{
	snprintf(c->path, sizeof c->path, "/tmp/wafer-log-XXXXXX");
	c->fd = mkstemp(c->path);
	c->saved = c->fd < 0 ? -1 : dup(2);
	if (c->fd < 0 || c->saved < 0) {
		ok(0, "log capture set up: %s", strerror(errno));
		if (c->fd >= 0) {
			close(c->fd);
			unlink(c->path);
		}
		return 0;
	}
	fflush(stderr);
	dup2(c->fd, 2);
	return 1;
}

/* Restores stderr; |text| gets what was written meanwhile (cut to
 * |size| - 1 bytes). */
static inline void log_capture_end(struct log_capture *c, char *text,
				   size_t size)
{
	ssize_t n;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	lseek(c->fd, 0, SEEK_SET);
	n = read(c->fd, text, size - 1);
	text[n > 0 ? n : 0] = '\0';
	close(c->fd);
	unlink(c->path);
}

/* How many times |needle| occurs in |text|. */
static inline int log_count(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(text, needle); p;
	     p = strstr(p + strlen(needle), needle))
		n++;
	return n;
}

#endif
