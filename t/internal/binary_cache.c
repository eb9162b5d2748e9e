/* wafer — SPDX-License-Identifier: MIT
 *
 * binary_cache.c: the host's compiled-binary cache (lib/binary_cache.c,
 * plugin.h cache_load/cache_store) driven directly: a store is loaded
 * back whole; other parts, other part boundaries or another directory
 * miss; a damaged, truncated or foreign file is a miss that the log
 * explains; no directory stores nothing; and where the directory comes
 * from ([<plugin>] cache_dir, [core] cache_dir, off, XDG_CACHE_HOME,
 * HOME). The cache's use by plugins is in t/opencl/cache and t/api/programs. */
#include "build-config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t/tap.h"

#include "t/standins/fake_host.h"

#include "lib/binary_cache.h"
#include "lib/config.h"

static char tmp[4096];

static struct wafer_cache_part part(const char *text)
{
	return (struct wafer_cache_part){sizeof(struct wafer_cache_part), text,
					 strlen(text)};
}

/* The one .bin file in |dir|, or "". */
static void only_file(const char *dir, char *path, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	path[0] = '\0';
	while (d && (e = readdir(d)))
		if (strstr(e->d_name, ".bin"))
			snprintf(path, size, "%s/%s", dir, e->d_name);
	if (d)
		closedir(d);
}

static int loads(const char *dir, const struct wafer_cache_part *parts,
		 size_t n, const char *want)
{
	void *data = (void *)1;
	size_t size = 1;
	wafer_status s = wafer__binary_cache_load(dir, &fake_host, parts, n,
						  &data, &size);
	int good = s == WAFER_OK && size == strlen(want) &&
		   memcmp(data, want, size) == 0;
	if (s != WAFER_OK && (data != NULL || size != 0))
		good = -1; /* outputs not cleared on a miss */
	wafer__binary_cache_free(s == WAFER_OK ? data : NULL);
	return good;
}

static void test_store_load(void)
{
	char dir[4200], file[4800];
	snprintf(dir, sizeof dir, "%s/a/b", tmp);
	struct wafer_cache_part key[2] = {part("source text"), part("-O2")};
	static const char binary[] = "\177ELF pretend binary";

	is_int(loads(dir, key, 2, binary), 0, "an empty cache: a miss");
	is_status(wafer__binary_cache_store(dir, &fake_host, key, 2, binary,
					    sizeof binary - 1),
		  WAFER_OK, "store (the directories are made)");
	struct stat st;
	ok(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700,
	   "  ... the directory is the user's only");
	only_file(dir, file, sizeof file);
	ok(stat(file, &st) == 0 && (st.st_mode & 0777) == 0600,
	   "  ... and so is the file");
	is_int(loads(dir, key, 2, binary), 1, "load: the same bytes");

	struct wafer_cache_part other[2] = {part("source text"), part("-O3")};
	is_int(loads(dir, other, 2, binary), 0, "other options: a miss");
	struct wafer_cache_part moved[2] = {part("source tex"), part("t-O2")};
	is_int(loads(dir, moved, 2, binary), 0,
	       "the same bytes cut elsewhere: a miss");
	is_int(loads(NULL, key, 2, binary), 0, "no directory: a miss");
	is_status(wafer__binary_cache_store(NULL, &fake_host, key, 2, binary,
					    sizeof binary - 1),
		  WAFER_OK, "no directory: a store does nothing");

	/* Damage: a flipped byte of the binary, then half the file. */
	FILE *f = fopen(file, "r+b");
	if (f) {
		fseek(f, -3, SEEK_END);
		fputc('!', f);
		fclose(f);
	}
	log_reset();
	is_int(loads(dir, key, 2, binary), 0, "a damaged file: a miss");
	like(log_text, "checksum mismatch", "  ... logged: %s", log_text);
	wafer__binary_cache_store(dir, &fake_host, key, 2, binary,
				  sizeof binary - 1);
	is_int(loads(dir, key, 2, binary), 1, "  ... rewritten, it loads");
	if (truncate(file, 40) != 0)
		diag("truncate failed");
	log_reset();
	is_int(loads(dir, key, 2, binary), 0, "a truncated file: a miss");
	like(log_text, "truncated", "  ... logged");
	f = fopen(file, "wb");
	if (f) {
		fputs("#!/bin/sh\n", f);
		fclose(f);
	}
	log_reset();
	is_int(loads(dir, key, 2, binary), 0, "a foreign file: a miss");
	like(log_text, "not a wafer cache file", "  ... logged");
}

/* Where: the core's rule, given a config with |section|.|key| = |value|
 * (NULL: nothing set). */
static char *where(const char *section, const char *key, const char *value)
{
	struct wafer__config *config = NULL;
	char *dir = NULL;
	wafer__config_create(&config);
	if (section)
		wafer__config_set(config, section, key, value, "test");
	if (wafer__binary_cache_dir(config, "acme", &dir) != WAFER_OK)
		diag("wafer__binary_cache_dir: %s", wafer_last_error());
	wafer__config_destroy(config);
	return dir;
}

static void test_where(void)
{
	char *d;
	setenv("XDG_CACHE_HOME", "/x", 1);
	setenv("HOME", "/h", 1);
	is_str(d = where(NULL, NULL, NULL), "/x/wafer/acme",
	       "default: $XDG_CACHE_HOME/wafer/<plugin>");
	free(d);
	unsetenv("XDG_CACHE_HOME");
	is_str(d = where(NULL, NULL, NULL), "/h/.cache/wafer/acme",
	       "without it: $HOME/.cache/wafer/<plugin>");
	free(d);
	setenv("XDG_CACHE_HOME", "relative", 1);
	is_str(d = where(NULL, NULL, NULL), "/h/.cache/wafer/acme",
	       "a relative XDG_CACHE_HOME is ignored");
	free(d);
	unsetenv("HOME");
	unsetenv("XDG_CACHE_HOME");
	ok((d = where(NULL, NULL, NULL)) == NULL,
	   "neither: no cache");
	free(d);
	is_str(d = where("core", "cache_dir", "/c"), "/c/acme",
	       "[core] cache_dir: <dir>/<plugin>");
	free(d);
	is_str(d = where("acme", "cache_dir", "/mine"), "/mine",
	       "[acme] cache_dir: that directory");
	free(d);
	ok((d = where("core", "cache_dir", "off")) == NULL,
	   "[core] cache_dir = off: none");
	free(d);
	ok((d = where("acme", "cache", "off")) == NULL,
	   "[acme] cache = off: none");
	free(d);

	/* Relative: refused, naming the entry (binaries are loaded from
	 * there as code). */
	static const char *const sections[] = {"core", "acme"};
	for (int i = 0; i < 2; i++) {
		struct wafer__config *config = NULL;
		wafer__config_create(&config);
		wafer__config_set(config, sections[i], "cache_dir", "cache",
				  "test:3");
		d = NULL;
		is_status(wafer__binary_cache_dir(config, "acme", &d),
			  WAFER_ERROR_CONFIG, "[%s] cache_dir = cache (relative) "
			  "is refused", sections[i]);
		like(wafer_last_error(), "test:3: [", "  ... naming the entry");
		like(wafer_last_error(), "is relative", "  ... and why");
		ok(d == NULL, "  ... no directory");
		wafer__config_destroy(config);
	}
}

int main(void)
{
	snprintf(tmp, sizeof tmp, "%s/wafer-binary-cache.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmp)) {
		printf("Bail out! mkdtemp failed\n");
		return 1;
	}
	test_store_load();
	test_where();
	tap_remove_tree(tmp);
	done_testing();
	return exit_status();
}
