/* wafer — SPDX-License-Identifier: MIT
 *
 * tap.h: a small Test Anything Protocol emitter for the test programs in
 * t/. Output is read by automake's tap-driver.sh (make check) and by
 * prove. A test program calls plan() or ends with done_testing(), and
 * returns exit_status().
 *
 *   ok(cond, "name %d", i)         pass when cond is true
 *   is_int(got, want, "name")      integers, diagnostics on mismatch
 *   is_str(got, want, "name")      strings (NULL-safe)
 *   like(got, "needle", "name")    strstr(got, needle) != NULL
 *   is_status(got, want, "name")   wafer_status, prints wafer_last_error()
 *   fails_saying(got, want, "needle", "name") is_status, then one point
 *                                  more: wafer_last_error() says needle
 *   skip_all("why")                plan 0 tests and exit 0 (1..0 # SKIP):
 *                                  only for something optional the machine
 *                                  genuinely lacks, named in "why"
 *   bail_out("why %s", x)          stop the whole test as failed (Bail out!)
 *   diag("text")                   comment line on stderr-safe stdout
 *   tap_builddir()                 $T_BUILDDIR (the build tree's t/), or
 *                                  a bail-out when make check did not set it
 *   tap_mkdtemp(dir, size, "name") a fresh $T_BUILDDIR/name.XXXXXX in |dir|
 *   tap_remove_tree(path)          rm -rf |path|, a diag when it fails
 *
 * Header-only so each test is one file. */
#ifndef WAFER_T_TAP_H
#define WAFER_T_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/wafer.h>

static int tap_run, tap_failed, tap_planned = -1;

static inline void plan(int n)
{
	tap_planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

static inline void diag(const char *format, ...)
	__attribute__((format(printf, 1, 2)));
static inline void diag(const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	printf("# ");
	vprintf(format, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

static inline int tap_vok(int pass, const char *format, va_list ap)
{
	tap_run++;
	if (!pass)
		tap_failed++;
	printf("%sok %d - ", pass ? "" : "not ", tap_run);
	vprintf(format, ap);
	printf("\n");
	fflush(stdout);
	return pass;
}

static inline int ok(int pass, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
static inline int ok(int pass, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	tap_vok(pass, format, ap);
	va_end(ap);
	return pass;
}

#define TAP_CHECK(pass, diagnostics, format)                                   \
	do {                                                                   \
		va_list ap;                                                    \
		va_start(ap, format);                                          \
		int tap_pass_ = tap_vok(pass, format, ap);                     \
		va_end(ap);                                                    \
		if (!tap_pass_) {                                              \
			diagnostics;                                           \
		}                                                              \
		return tap_pass_;                                              \
	} while (0)

static inline int is_int(long long got, long long want, const char *format, ...)
	__attribute__((format(printf, 3, 4)));
static inline int is_int(long long got, long long want, const char *format, ...)
{
	TAP_CHECK(got == want, diag("got %lld, want %lld", got, want), format);
}

static inline int is_str(const char *got, const char *want,
			 const char *format, ...)
	__attribute__((format(printf, 3, 4)));
static inline int is_str(const char *got, const char *want,
			 const char *format, ...)
{
	int pass = (got == NULL && want == NULL) ||
		   (got && want && strcmp(got, want) == 0);
	TAP_CHECK(pass,
		  diag("got '%s', want '%s'", got ? got : "(null)",
		       want ? want : "(null)"),
		  format);
}

static inline int like(const char *got, const char *needle,
		       const char *format, ...)
	__attribute__((format(printf, 3, 4)));
static inline int like(const char *got, const char *needle,
		       const char *format, ...)
{
	int pass = got && strstr(got, needle) != NULL;
	TAP_CHECK(pass,
		  diag("'%s' does not contain '%s'", got ? got : "(null)",
		       needle),
		  format);
}

static inline int is_status(wafer_status got, wafer_status want,
			    const char *format, ...)
	__attribute__((format(printf, 3, 4)));
static inline int is_status(wafer_status got, wafer_status want,
			    const char *format, ...)
{
	TAP_CHECK(got == want,
		  diag("got %s, want %s; detail: %s", wafer_status_string(got),
		       wafer_status_string(want), wafer_last_error()),
		  format);
}

/* is_status, and one point more: wafer_last_error() says |needle|. */
static inline int fails_saying(wafer_status got, wafer_status want,
			       const char *needle, const char *format, ...)
	__attribute__((format(printf, 4, 5)));
static inline int fails_saying(wafer_status got, wafer_status want,
			       const char *needle, const char *format, ...)
{
	char name[512];
	va_list ap;

	va_start(ap, format);
	vsnprintf(name, sizeof name, format, ap);
	va_end(ap);
	int pass = is_status(got, want, "%s", name);
	return like(wafer_last_error(), needle, "%s:   ... the error says '%s'",
		    name, needle) && pass;
}

static inline void skip_all(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	fflush(stdout);
	exit(0);
}

static inline void bail_out(const char *format, ...)
	__attribute__((format(printf, 1, 2), noreturn));
static inline void bail_out(const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	printf("Bail out! ");
	vprintf(format, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	exit(1);
}

static inline const char *tap_builddir(void)
{
	const char *builddir = getenv("T_BUILDDIR");

	if (!builddir)
		bail_out("T_BUILDDIR is not set (run through make check)");
	return builddir;
}

static inline void tap_mkdtemp(char *dir, size_t size, const char *name)
{
	snprintf(dir, size, "%s/%s.XXXXXX", tap_builddir(), name);
	if (!mkdtemp(dir))
		bail_out("mkdtemp %s failed", dir);
}

static inline void tap_remove_tree(const char *path)
{
	char command[8300];

	snprintf(command, sizeof command, "rm -rf '%s'", path);
	if (system(command) != 0)
		diag("could not remove %s", path);
}

static inline void done_testing(void)
{
	if (tap_planned < 0)
		printf("1..%d\n", tap_run);
	fflush(stdout);
}

static inline int exit_status(void)
{
	if (tap_planned >= 0 && tap_planned != tap_run) {
		diag("planned %d tests but ran %d", tap_planned, tap_run);
		return 1;
	}
	return tap_failed ? 1 : 0;
}

#endif
