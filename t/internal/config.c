/* wafer — SPDX-License-Identifier: MIT
 *
 * t/internal/config.c: the configuration chain (lib/config.h, wafer.conf(5)):
 * syntax, every kind of bad line with its line number, tolerant and
 * strict loads, absent and failed sources, the order of the whole chain,
 * typed getters and lists. Files go into a temporary directory; the
 * environment is a fake passed through wafer__config_paths.getenv, so the
 * real one is never read or changed. */
#include "build-config.h"

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw */
#endif

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/config.h"
#include "lib/log.h"
#include "t/tap.h"

/*===----------------------------------------------------------------------===
 * Fixtures: a temporary directory and a fake environment
 *===----------------------------------------------------------------------===*/

static char tmp_root[4096];

/* tmp_root "/" |rel| in a static buffer (one at a time is enough). */
static const char *tmp_path(const char *rel)
{
	static char path[2][8192];
	static int which;
	which ^= 1;
	snprintf(path[which], sizeof path[which], "%s/%s", tmp_root, rel);
	return path[which];
}

static void make_dirs_for(const char *path)
{
	char buf[8192];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *slash = buf + strlen(tmp_root) + 1; (slash = strchr(slash, '/'));
	     slash++) {
		*slash = '\0';
		mkdir(buf, 0700);
		*slash = '/';
	}
}

/* Writes |len| bytes (-1: strlen) to tmp_root/|rel|; returns its path. */
static const char *write_bytes(const char *rel, const char *text, long len)
{
	const char *path = tmp_path(rel);
	make_dirs_for(path);
	FILE *f = fopen(path, "wb");
	if (!f) {
		diag("cannot write %s: %s", path, strerror(errno));
		exit(1);
	}
	fwrite(text, 1, len < 0 ? strlen(text) : (size_t)len, f);
	fclose(f);
	return path;
}

static const char *write_file(const char *rel, const char *text)
{
	return write_bytes(rel, text, -1);
}

static int remove_one(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	return remove(path);
}

/* Values are copied: callers pass tmp_path() results, which are reused. */
#define FAKE_ENV_MAX 16
static struct {
	const char *name;
	bool set;
	char value[4096];
} fake_env[FAKE_ENV_MAX];

static void env_clear(void)
{
	memset(fake_env, 0, sizeof fake_env);
}

/* |value| NULL: unset. */
static void env_set(const char *name, const char *value)
{
	for (int i = 0; i < FAKE_ENV_MAX; i++) {
		if (!fake_env[i].name || strcmp(fake_env[i].name, name) == 0) {
			fake_env[i].name = name;
			fake_env[i].set = value != NULL;
			snprintf(fake_env[i].value, sizeof fake_env[i].value,
				 "%s", value ? value : "");
			return;
		}
	}
	abort();
}

static const char *fake_getenv(const char *name)
{
	for (int i = 0; i < FAKE_ENV_MAX && fake_env[i].name; i++)
		if (strcmp(fake_env[i].name, name) == 0)
			return fake_env[i].set ? fake_env[i].value : NULL;
	return NULL;
}

static struct wafer__config *new_config(void)
{
	struct wafer__config *config = NULL;
	if (wafer__config_create(&config) != WAFER_OK)
		abort();
	return config;
}

/* The value's origin, or "(unset)". */
static const char *origin_of(const struct wafer__config *config,
			     const char *section, const char *key)
{
	const struct wafer__config_entry *e =
		wafer__config_lookup(config, section, key);
	return e ? e->origin : "(unset)";
}

static const char *at(const char *path, int line)
{
	static char buf[2][8192];
	static int which;
	which ^= 1;
	snprintf(buf[which], sizeof buf[which], "%s:%d", path, line);
	return buf[which];
}

static const wafer_config_source *last_source(const struct wafer__config *c)
{
	size_t n = wafer__config_source_count(c);
	return n ? wafer__config_source_at(c, n - 1) : NULL;
}

/*===----------------------------------------------------------------------===
 * Good files
 *===----------------------------------------------------------------------===*/

static void test_defaults(void)
{
	struct wafer__config *c = new_config();

	is_str(wafer__config_get(c, "core", "backend", NULL),
	       "cuda, opencl, levelzero, cpu", "default backend list");
	is_str(wafer__config_get(c, "core", "channel", NULL), "auto",
	       "default channel");
	is_str(wafer__config_get(c, "core", "log", NULL), "warn", "default log");
	is_str(origin_of(c, "core", "log"), "default", "origin 'default'");
	ok(wafer__config_lookup(c, "memory", "strategy") == NULL,
	   "[memory] strategy has no default here (the memory manager's)");
	is_str(wafer__config_get(c, "core", "nope", "fb"), "fb",
	       "get falls back when unset");
	is_int((long long)wafer__config_source_count(c), 0,
	       "defaults are not a source");
	ok(wafer__config_source_at(c, 0) == NULL, "source_at past the end: NULL");
	wafer__config_destroy(c);
	wafer__config_destroy(NULL);
}

static void test_good_file(void)
{
	static const char text[] =
		"\xef\xbb\xbf# wafer.conf with a byte order mark\r\n" /* 1 */
		"; another comment\r\n"                               /* 2 */
		"\r\n"                                                /* 3 */
		"[core]\r\n"                                          /* 4 */
		"backend = cpu, cuda\r\n"                             /* 5 */
		"  channel\t=\tdirect   \r\n"                         /* 6 */
		"[cpu]\n"                                             /* 7 */
		"threads = 4\n"                                       /* 8 */
		"empty =\n"                                           /* 9 */
		"[memory.pool]\n"                                     /* 10 */
		"  growth_factor = 1.5  \n"                           /* 11 */
		"note = a#b  # a comment\n"                           /* 12 */
		"  [ spaced ]\t# a comment after a header\n"          /* 13 */
		"k = first\n"                                         /* 14 */
		"eq = a=b\n"                                          /* 15 */
		"k = second";                                         /* 16 */
	const char *path = write_file("good/wafer.conf", text);
	struct wafer__config *c = new_config();
	const struct wafer__config_entry *entries[4];

	is_status(wafer__config_load_file(c, path, false), WAFER_OK,
		  "good file loads strictly");
	is_str(wafer__config_get(c, "core", "backend", NULL), "cpu, cuda",
	       "CRLF value");
	is_str(origin_of(c, "core", "backend"), at(path, 5),
	       "origin path:line counts the BOM line as 1");
	is_str(wafer__config_get(c, "core", "channel", NULL), "direct",
	       "blanks and tabs around key and value trimmed");
	is_str(origin_of(c, "core", "log"), "default",
	       "keys the file does not set keep their default");
	is_str(wafer__config_get(c, "cpu", "threads", NULL), "4", "[cpu] threads");
	is_str(wafer__config_get(c, "cpu", "empty", NULL), "", "empty value");
	is_str(wafer__config_get(c, "memory.pool", "growth_factor", NULL), "1.5",
	       "[memory.<strategy>] is free-form");
	is_str(wafer__config_get(c, "memory.pool", "note", NULL), "a#b",
	       "'#' after a blank starts a comment, other '#' stay");
	is_str(wafer__config_get(c, "spaced", "eq", NULL), "a=b",
	       "split at the first '='");
	is_str(wafer__config_get(c, "spaced", "k", NULL), "second",
	       "later line wins; no final newline");
	is_str(origin_of(c, "spaced", "k"), at(path, 16), "origin of override");
	is_int((long long)wafer__config_section(c, "cpu", entries, 4), 2,
	       "section() counts [cpu]");
	ok(!strcmp(entries[0]->key, "threads") && !strcmp(entries[1]->key, "empty"),
	   "section() in first-set order");
	is_int((long long)wafer__config_section(c, "spaced", entries, 1), 2,
	       "section() returns the total past capacity");
	is_str(entries[0]->key, "k", "section() keeps first-set order on override");
	is_int((long long)wafer__config_source_count(c), 1, "one source");
	const wafer_config_source *s = wafer__config_source_at(c, 0);
	ok(s && s->struct_size == sizeof *s && s->state == WAFER_CONFIG_SOURCE_READ,
	   "source READ");
	is_str(s->path, path, "source path");
	is_str(s->detail, "", "no detail");
	wafer__config_destroy(c);
}

static void test_load_string(void)
{
	struct wafer__config *c = new_config();
	const char *keep;

	is_status(wafer__config_load_string(c, "inline", "[a]\nx = 1\n\n[b]\ny=2",
					    false),
		  WAFER_OK, "load_string");
	is_str(origin_of(c, "b", "y"), "inline:5", "load_string origin name:line");
	keep = wafer__config_get(c, "a", "x", NULL);
	is_status(wafer__config_load_string(c, "again", "[a]\nx = 3\n", false),
		  WAFER_OK, "override from a second string");
	is_str(keep, "1", "an overridden value's string stays valid");
	is_str(wafer__config_get(c, "a", "x", NULL), "3", "new value visible");
	is_str(last_source(c)->path, "again", "string source named");
	is_status(wafer__config_load_string(c, "e", "", false), WAFER_OK,
		  "empty text");
	is_status(wafer__config_load_string(c, "n", "\n\r\n \t \n", false),
		  WAFER_OK, "blank lines only");
	is_status(wafer__config_load_string(c, "x", NULL, false),
		  WAFER_ERROR_INVALID_ARGUMENT, "NULL text");
	wafer__config_destroy(c);
}

/* ~96k distinct keys (a 1 MiB file) once took 14 s to load: every store
 * scanned every key before it. Each key must land once, in first-set
 * order, with the last value set; a second pass overrides them all. */
static void test_many_keys(void)
{
	enum { KEYS = 96000 };
	size_t size = (size_t)KEYS * 24 + 16;
	char *text = malloc(size), name[32];
	struct wafer__config *c = new_config();
	size_t used = 0, bad = 0;

	used += (size_t)snprintf(text, size, "[many]\n");
	for (int i = 0; i < KEYS; i++)
		used += (size_t)snprintf(text + used, size - used,
					 "k%d = %d\n", i, i);
	is_status(wafer__config_load_string(c, "many", text, false), WAFER_OK,
		  "%d keys load", KEYS);
	for (int i = 0; i < KEYS; i += 997) {
		char want[16];
		snprintf(name, sizeof name, "k%d", i);
		snprintf(want, sizeof want, "%d", i);
		const char *got = wafer__config_get(c, "many", name, NULL);
		bad += !got || strcmp(got, want) != 0;
	}
	is_int((long long)bad, 0, "every sampled key has its value");
	used = (size_t)snprintf(text, size, "[many]\n");
	for (int i = KEYS - 1; i >= 0; i--)
		used += (size_t)snprintf(text + used, size - used,
					 "k%d = x%d\n", i, i);
	is_status(wafer__config_load_string(c, "again", text, false), WAFER_OK,
		  "overriding every key");
	const struct wafer__config_entry *entries[4];
	size_t n = wafer__config_section(c, "many", entries, 4);
	is_int((long long)n, KEYS, "still %d keys, none twice", KEYS);
	is_str(n >= 1 ? entries[0]->key : "", "k0",
	       "first-set order kept across the override");
	is_str(wafer__config_get(c, "many", "k95999", NULL), "x95999",
	       "the override won");
	wafer__config_destroy(c);
	free(text);
}

/* FIFOs as WAFER_CONFIG and in conf.d/ once blocked every program for
 * ever (open waited for a writer): they read as empty now. Blanks around
 * WAFER_CONFIG are trimmed, and a blank-only value is no file. */
static void test_fifos_and_blanks(void)
{
	const struct wafer__config_paths paths = {.getenv = fake_getenv};
	struct wafer__config *c;
	char padded[4200];

	write_file("fifo/sys/wafer.conf", "[t]\na = sys\n");
	write_file("fifo/sys/conf.d/20-ok.conf", "[t]\nb = drop20\n");
	write_file("fifo/extra.conf", "[t]\nc = extra\n");
	ok(mkfifo(tmp_path("fifo/sys/conf.d/10-fifo.conf"), 0600) == 0 &&
		   mkfifo(tmp_path("fifo/named"), 0600) == 0,
	   "made two FIFOs");
	env_clear();
	env_set("WAFER_SYSCONFDIR", tmp_path("fifo/sys"));
	env_set("WAFER_CONFIG", tmp_path("fifo/named"));
	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, NULL, 0, false),
		  WAFER_ERROR_CONFIG,
		  "a FIFO in conf.d/: a strict load returns, refusing it");
	like(wafer_last_error(), "10-fifo.conf: not a regular file",
	     "the error names the FIFO and why");
	wafer__config_destroy(c);
	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, NULL, 0, true), WAFER_OK,
		  "FIFOs in conf.d/ and as WAFER_CONFIG: a tolerant load returns");
	ok(wafer__config_lookup(c, "t", "a") && wafer__config_lookup(c, "t", "b"),
	   "FIFOs: the other files applied");
	wafer__config_destroy(c);

	/* A writer holding the drop-in FIFO open once blocked the read for
	 * ever (SIGALRM ends the test if it does); WAFER_CONFIG may still be
	 * a pipe with a writer that ends. */
	int writer = open(tmp_path("fifo/sys/conf.d/10-fifo.conf"), O_RDWR);
	ok(writer >= 0, "a writer holds the drop-in FIFO open");
	int pipe_fds[2];
	ok(pipe(pipe_fds) == 0 && write(pipe_fds[1], "[t]\nd = piped\n", 15) == 15,
	   "WAFER_CONFIG is a pipe holding a file");
	close(pipe_fds[1]);
	char piped[64];
	snprintf(piped, sizeof piped, "/dev/fd/%d", pipe_fds[0]);
	env_set("WAFER_CONFIG", piped);
	alarm(60);
	c = new_config();
	wafer__config_load_chain(c, &paths, NULL, 0, true);
	alarm(0);
	ok(1, "a held-open FIFO drop-in does not block the load");
	is_str(wafer__config_get(c, "t", "d", NULL), "piped",
	       "the pipe named by WAFER_CONFIG was read");
	wafer__config_destroy(c);
	close(pipe_fds[0]);
	if (writer >= 0)
		close(writer);
	unlink(tmp_path("fifo/sys/conf.d/10-fifo.conf"));

	snprintf(padded, sizeof padded, "  %s \t", tmp_path("fifo/extra.conf"));
	env_set("WAFER_CONFIG", padded);
	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, NULL, 0, false), WAFER_OK,
		  "WAFER_CONFIG with blanks around the name");
	is_str(wafer__config_get(c, "t", "c", NULL), "extra",
	       "the file named between the blanks was read");
	wafer__config_destroy(c);

	env_set("WAFER_CONFIG", NULL);
	c = new_config();
	wafer__config_load_chain(c, &paths, NULL, 0, false);
	size_t unset_sources = wafer__config_source_count(c);
	wafer__config_destroy(c);
	env_set("WAFER_CONFIG", "   ");
	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, NULL, 0, false), WAFER_OK,
		  "WAFER_CONFIG of blanks only");
	is_int((long long)wafer__config_source_count(c), (long long)unset_sources,
	       "blank WAFER_CONFIG: no source for it, as when unset");
	wafer__config_destroy(c);
	env_clear();
}

/* The file `make install` ships must pass a strict load. */
static void test_shipped_file(void)
{
	const char *srcdir = getenv("T_SRCDIR");
	char path[4096];

	if (!srcdir) {
		ok(0, "etc/wafer.conf: T_SRCDIR not set (run by make check), "
		      "so the shipped file cannot be found");
		return;
	}
	snprintf(path, sizeof path, "%s/../etc/wafer.conf", srcdir);
	struct wafer__config *c = new_config();
	is_status(wafer__config_load_file(c, path, false), WAFER_OK,
		  "shipped etc/wafer.conf loads strictly");
	ok(last_source(c)->state == WAFER_CONFIG_SOURCE_READ,
	   "shipped etc/wafer.conf READ");
	wafer__config_destroy(c);
}

/*===----------------------------------------------------------------------===
 * Bad lines
 *===----------------------------------------------------------------------===*/

struct bad_case {
	const char *what;
	const char *before; /* two lines, so the bad one is line 3 */
	const char *bad;
	size_t bad_len; /* 0: strlen */
	const char *reason;
};

static const struct bad_case bad_cases[] = {
	{"unterminated header", "#\n[cpu]\n", "[core", 0,
	 "unterminated section header '[core' (missing ']')"},
	{"empty section name", "#\n[cpu]\n", "[]", 0, "empty section name '[]'"},
	{"blank section name", "#\n[cpu]\n", "[  ]", 0, "empty section name '[]'"},
	{"bad char in section", "#\n[cpu]\n", "[co re]", 0,
	 "invalid character ' ' in section name 'co re' (names use A-Z a-z 0-9 _ . -)"},
	{"bracket in section", "#\n[cpu]\n", "[[core]", 0,
	 "invalid character '[' in section name '[core' (names use A-Z a-z 0-9 _ . -)"},
	{"junk after ]", "#\n[cpu]\n", "[core] junk", 0,
	 "unexpected text 'junk' after '[core]'"},
	{"junk then comment after ]", "#\n[cpu]\n", "[core]x # c", 0,
	 "unexpected text 'x' after '[core]'"},
	{"no '='", "#\n[cpu]\n", "just words", 0,
	 "expected 'key = value', '[section]' or a comment, got 'just words'"},
	{"empty key", "#\n[cpu]\n", " = x", 0, "empty key before '='"},
	{"bad char in key", "#\n[cpu]\n", "k!y = 1", 0,
	 "invalid character '!' in key 'k!y' (names use A-Z a-z 0-9 _ . -)"},
	{"space in key", "#\n[cpu]\n", "two words = 1", 0,
	 "invalid character ' ' in key 'two words' (names use A-Z a-z 0-9 _ . -)"},
	{"key before section", "# no header yet\n\n", "backend = cpu", 0,
	 "key 'backend' before any [section] header"},
	{"unknown [core] key", "#\n[core]\n", "backends = cpu", 0,
	 "unknown key 'backends' in [core] (known: backend, plugin_path, channel, log, max_handles, cache_dir, trace)"},
	{"unknown [memory] key", "#\n[memory]\n", "strategies = pool", 0,
	 "unknown key 'strategies' in [memory] (known: strategy, limit, trace)"},
	{"bad [core] log", "#\n[core]\n", "log = loud", 0,
	 "[core] log: expected error, warn, info or debug, got 'loud'"},
	{"NUL byte", "#\n[cpu]\n", "a\0b = 1", 7, "NUL byte in line"},
	{"binary junk", "#\n[cpu]\n", "\x01\x02\xff\xfe", 0,
	 "expected 'key = value', '[section]' or a comment, got '\\x01\\x02\\xff\\xfe'"},
	{"CR inside a line", "#\n[cpu]\n", "a\rb", 0,
	 "expected 'key = value', '[section]' or a comment, got 'a\\x0db'"},
};

/* The bad line is line 3; "[after]" and "key = yes" follow on lines 4
 * and 5, so a tolerant load must still apply them. */
static void test_bad_case(const struct bad_case *bc, int index)
{
	char rel[64], text[256], want[8192];
	size_t before = strlen(bc->before);
	size_t bad = bc->bad_len ? bc->bad_len : strlen(bc->bad);
	static const char after[] = "\n[after]\nkey = yes\n";

	memcpy(text, bc->before, before);
	memcpy(text + before, bc->bad, bad);
	memcpy(text + before + bad, after, sizeof after - 1);
	snprintf(rel, sizeof rel, "bad/%02d.conf", index);
	const char *path = write_bytes(rel, text,
				       (long)(before + bad + sizeof after - 1));
	snprintf(want, sizeof want, "%s:3: %s", path, bc->reason);

	struct wafer__config *c = new_config();
	is_status(wafer__config_load_file(c, path, false), WAFER_ERROR_CONFIG,
		  "%s: strict load fails", bc->what);
	is_str(wafer_last_error(), want, "%s: error names file:3", bc->what);
	const wafer_config_source *s = last_source(c);
	ok(s && s->state == WAFER_CONFIG_SOURCE_FAILED &&
		   strcmp(s->detail, want) == 0,
	   "%s: source FAILED with the same detail", bc->what);
	ok(!wafer__config_lookup(c, "after", "key"),
	   "%s: strict stops at the bad line", bc->what);
	wafer__config_destroy(c);

	c = new_config();
	is_status(wafer__config_load_file(c, path, true), WAFER_OK,
		  "%s: tolerant load succeeds", bc->what);
	is_str(origin_of(c, "after", "key"), at(path, 5),
	       "%s: tolerant applies the lines after it", bc->what);
	s = last_source(c);
	ok(s && s->state == WAFER_CONFIG_SOURCE_FAILED &&
		   strcmp(s->detail, want) == 0,
	   "%s: tolerant records the problem", bc->what);
	wafer__config_destroy(c);
}

static void test_long_lines(void)
{
	static char text[5200];
	struct wafer__config *c = new_config();

	/* Exactly 4096 characters is fine, CR not counted. */
	memcpy(text, "[t]\nk = ", 8);
	memset(text + 8, 'v', 4092);
	memcpy(text + 8 + 4092, "\r\n", 3);
	is_status(wafer__config_load_string(c, "max", text, false), WAFER_OK,
		  "a 4096-character line is accepted");
	is_int((long long)strlen(wafer__config_get(c, "t", "k", "")), 4092,
	       "its value is whole");

	memset(text + 8, 'v', 4093);
	memcpy(text + 8 + 4093, "\n[u]\nx = 1\n", 12);
	is_status(wafer__config_load_string(c, "long", text, false),
		  WAFER_ERROR_CONFIG, "a 4097-character line is not");
	is_str(wafer_last_error(), "long:2: line longer than 4096 characters",
	       "too long names the line");
	is_status(wafer__config_load_string(c, "long", text, true), WAFER_OK,
		  "tolerant skips it");
	is_str(origin_of(c, "u", "x"), "long:4", "and goes on");
	wafer__config_destroy(c);
}

static void test_tolerant_vs_strict(void)
{
	static const char text[] = "[cpu]\n"    /* 1 */
				   "a = 1\n"    /* 2 */
				   "bad line\n" /* 3 */
				   "[core\n"    /* 4 */
				   "b = 2\n"    /* 5: under a bad header */
				   "[cpu]\n"    /* 6 */
				   "c = 3\n"    /* 7 */
				   "also bad\n" /* 8 */
				   "d = 4\n";   /* 9 */
	const char *path = write_file("mixed.conf", text);
	struct wafer__config *c = new_config();

	is_status(wafer__config_load_file(c, path, true), WAFER_OK,
		  "tolerant: three bad lines, OK");
	ok(wafer__config_get(c, "cpu", "a", NULL) &&
		   wafer__config_get(c, "cpu", "c", NULL) &&
		   wafer__config_get(c, "cpu", "d", NULL),
	   "tolerant: every good line applied");
	ok(!wafer__config_lookup(c, "cpu", "b") &&
		   !wafer__config_lookup(c, "core", "b"),
	   "tolerant: keys under a bad header go nowhere");
	like(last_source(c)->detail, ":3: expected", "detail is the first problem");
	wafer__config_destroy(c);

	c = new_config();
	is_status(wafer__config_load_file(c, path, false), WAFER_ERROR_CONFIG,
		  "strict: fails");
	is_str(wafer__config_get(c, "cpu", "a", NULL), "1",
	       "strict: lines before the bad one were applied");
	ok(!wafer__config_lookup(c, "cpu", "c"), "strict: nothing after it");
	like(wafer_last_error(), ":3: ", "strict: error names line 3");
	wafer__config_destroy(c);
}

/*===----------------------------------------------------------------------===
 * Absent and failed sources, drop-in directories
 *===----------------------------------------------------------------------===*/

static void test_sources(void)
{
	struct wafer__config *c = new_config();
	char want[8192];

	is_status(wafer__config_load_file(c, tmp_path("none.conf"), false),
		  WAFER_OK, "missing file is not an error");
	ok(last_source(c)->state == WAFER_CONFIG_SOURCE_ABSENT,
	   "missing file: ABSENT");
	is_str(last_source(c)->detail, "", "ABSENT has no detail");
	is_status(wafer__config_load_file(c, tmp_path("none.conf/x"), false),
		  WAFER_OK, "path through a file (ENOTDIR) is absent too");

	const char *dir = tmp_path("isdir/wafer.conf");
	make_dirs_for(dir);
	mkdir(dir, 0700);
	snprintf(want, sizeof want, "%s: %s", dir, strerror(EISDIR));
	is_status(wafer__config_load_file(c, dir, false), WAFER_ERROR_CONFIG,
		  "a directory named wafer.conf fails a strict load");
	is_str(wafer_last_error(), want, "detail: path: Is a directory");
	ok(last_source(c)->state == WAFER_CONFIG_SOURCE_FAILED &&
		   !strcmp(last_source(c)->detail, want),
	   "source FAILED with detail");
	is_status(wafer__config_load_file(c, dir, true), WAFER_OK,
		  "tolerant: a directory is recorded, not fatal");
	ok(last_source(c)->state == WAFER_CONFIG_SOURCE_FAILED,
	   "tolerant: source FAILED");

	const char *locked = write_file("locked.conf", "[cpu]\nthreads = 1\n");
	chmod(locked, 0);
	snprintf(want, sizeof want, "%s: %s", locked, strerror(EACCES));
	if (geteuid() != 0) {
		is_status(wafer__config_load_file(c, locked, false),
			  WAFER_ERROR_CONFIG, "permission denied fails");
		is_str(last_source(c)->detail, want,
		       "detail: path: Permission denied");
	} else {
		/* root reads mode-000 files: check as nobody, in a child. The
		 * child opens the directory to nobody first. */
		chmod(tmp_root, 0755);
		pid_t pid = fork();
		if (pid == 0) {
			if (setgid(65534) || setuid(65534))
				_exit(3);
			struct wafer__config *child;
			wafer__config_create(&child);
			wafer_status st =
				wafer__config_load_file(child, locked, false);
			_exit(st != WAFER_ERROR_CONFIG ? 1
			      : strcmp(wafer_last_error(), want) ? 2 : 0);
		}
		int wstatus = -1;
		waitpid(pid, &wstatus, 0);
		chmod(tmp_root, 0700);
		ok(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 1 &&
			   WEXITSTATUS(wstatus) != 3,
		   "permission denied fails (checked as nobody)");
		ok(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0,
		   "detail: path: Permission denied (checked as nobody)");
	}
	chmod(locked, 0600);

	is_status(wafer__config_load_file(c, NULL, false),
		  WAFER_ERROR_INVALID_ARGUMENT, "NULL path");
	is_status(wafer__config_load_file(NULL, dir, false),
		  WAFER_ERROR_INVALID_ARGUMENT, "NULL config");
	wafer__config_destroy(c);
}

static void test_dropins(void)
{
	struct wafer__config *c = new_config();

	write_file("d/20-b.conf", "[cpu]\nthreads = 20\nb = 1\n");
	write_file("d/10-a.conf", "[cpu]\nthreads = 10\na = 1\n");
	write_file("d/README", "not a config file\n");
	write_file("d/30-c.conf.disabled", "[cpu]\nthreads = 30\n");
	write_file("d/.40-hidden.conf", "[cpu]\nthreads = 40\n");
	write_file("d/9-late.conf", "[cpu]\nlast = 9\n");
	mkdir(tmp_path("d/sub"), 0700);

	is_status(wafer__config_load_dir(c, tmp_path("d"), false), WAFER_OK,
		  "load_dir");
	is_int((long long)wafer__config_source_count(c), 3,
	       "only the three *.conf files are sources");
	is_str(wafer__config_source_at(c, 0)->path, tmp_path("d/10-a.conf"),
	       "10-a.conf first");
	is_str(wafer__config_source_at(c, 1)->path, tmp_path("d/20-b.conf"),
	       "20-b.conf second");
	is_str(wafer__config_source_at(c, 2)->path, tmp_path("d/9-late.conf"),
	       "9-late.conf last (strcmp order, not numeric)");
	is_str(wafer__config_get(c, "cpu", "threads", NULL), "20",
	       "the later drop-in wins");
	ok(wafer__config_lookup(c, "cpu", "a") && wafer__config_lookup(c, "cpu", "b"),
	   "keys of both drop-ins present");

	is_status(wafer__config_load_dir(c, tmp_path("no-such.d"), false),
		  WAFER_OK, "missing directory is not an error");
	ok(last_source(c)->state == WAFER_CONFIG_SOURCE_ABSENT &&
		   !strcmp(last_source(c)->path, tmp_path("no-such.d")),
	   "missing directory recorded ABSENT");
	is_status(wafer__config_load_dir(c, tmp_path("d/10-a.conf"), false),
		  WAFER_OK, "a file where the directory should be: absent");
	wafer__config_destroy(c);

	c = new_config();
	write_file("e/10-ok.conf", "[cpu]\nx = 1\n");
	write_file("e/20-bad.conf", "[cpu]\noops\n");
	write_file("e/30-ok.conf", "[cpu]\ny = 1\n");
	is_status(wafer__config_load_dir(c, tmp_path("e"), false),
		  WAFER_ERROR_CONFIG, "strict: a bad drop-in stops the directory");
	like(wafer_last_error(), "/e/20-bad.conf:2: expected",
	     "strict: error names the drop-in and line");
	ok(wafer__config_lookup(c, "cpu", "x") && !wafer__config_lookup(c, "cpu", "y"),
	   "strict: drop-ins after the bad one not read");
	wafer__config_destroy(c);
}

/*===----------------------------------------------------------------------===
 * The chain
 *===----------------------------------------------------------------------===*/

/* One file per level; each sets the [t] keys from its level on, so the
 * value of [t] <level> shows which source won. */
static void write_chain_tree(void)
{
	write_file("chain/sys/wafer.conf",
		   "[core]\nbackend = cpu\nchannel = sys\nplugin_path = sys\n"
		   "[t]\na = sys\nb = sys\nc = sys\nd = sys\ne = sys\nf = sys\n");
	write_file("chain/sys/conf.d/20-b.conf", "[t]\nc = drop20\nd = drop20\n");
	write_file("chain/sys/conf.d/10-a.conf",
		   "[t]\nb = drop10\nc = drop10\nd = drop10\n");
	write_file("chain/sys/conf.d/README", "[t]\nb = readme\n");
	write_file("chain/xdg/wafer/wafer.conf",
		   "[t]\nd = user\ne = user\n[core]\nchannel = user\n");
	write_file("chain/home/.config/wafer/wafer.conf", "[t]\nd = home\n");
	write_file("chain/extra.conf",
		   "[t]\ne = extra\nf = extra\n[core]\nplugin_path = extra\n");
	write_file("chain/other/wafer.conf", "[t]\na = other\n");
}

static void chain_env(void)
{
	env_clear();
	env_set("WAFER_SYSCONFDIR", tmp_path("chain/sys"));
	env_set("XDG_CONFIG_HOME", tmp_path("chain/xdg"));
	env_set("HOME", tmp_path("chain/home"));
	env_set("WAFER_CONFIG", tmp_path("chain/extra.conf"));
	env_set("WAFER_CHANNEL", "direct");
	env_set("WAFER_PLUGIN_PATH", "/env/plugins");
	env_set("WAFER_MEMORY", "  pool ");
	env_set("WAFER_MEMORY_TRACE", "/tmp/run.trace");
	env_set("WAFER_OPENCL_TYPE", "all");
	env_set("WAFER_LOG", "info");
	env_set("WAFER_BACKEND", "");
}

static void test_chain_order(void)
{
	const struct wafer__config_paths paths = {.getenv = fake_getenv};
	const wafer_option options[] = {
		{"core", "log", "debug"},
		{"t", "f", "opt"},
	};
	struct wafer__config *c = new_config();
	const char *expect_paths[] = {
		"chain/sys/wafer.conf", "chain/sys/conf.d/10-a.conf",
		"chain/sys/conf.d/20-b.conf", "chain/xdg/wafer/wafer.conf",
		"chain/extra.conf",
	};

	write_chain_tree();
	chain_env();
	is_status(wafer__config_load_chain(c, &paths, options, 2, false), WAFER_OK,
		  "whole chain loads");
	is_int((long long)wafer__config_source_count(c), 7,
	       "7 sources: system, 2 drop-ins, user, WAFER_CONFIG, env, options");
	for (size_t i = 0; i < 5; i++) {
		const wafer_config_source *s = wafer__config_source_at(c, i);
		ok(s && !strcmp(s->path, tmp_path(expect_paths[i])) &&
			   s->state == WAFER_CONFIG_SOURCE_READ,
		   "source %zu: %s", i, expect_paths[i]);
	}
	is_str(wafer__config_source_at(c, 5)->path, "environment",
	       "source 5: environment");
	is_str(wafer__config_source_at(c, 6)->path, "options", "source 6: options");

	is_str(origin_of(c, "t", "a"), at(tmp_path("chain/sys/wafer.conf"), 6),
	       "system file sets what nothing later does");
	is_str(wafer__config_get(c, "t", "b", NULL), "drop10",
	       "drop-in beats system file (README ignored)");
	is_str(wafer__config_get(c, "t", "c", NULL), "drop20",
	       "20-b.conf beats 10-a.conf");
	is_str(wafer__config_get(c, "t", "d", NULL), "user",
	       "XDG user file beats drop-ins; $HOME/.config unused");
	is_str(wafer__config_get(c, "t", "e", NULL), "extra",
	       "WAFER_CONFIG beats user file");
	is_str(wafer__config_get(c, "t", "f", NULL), "opt",
	       "options beat WAFER_CONFIG");
	is_str(origin_of(c, "t", "f"), "options", "origin 'options'");
	is_str(wafer__config_get(c, "core", "backend", NULL), "cpu",
	       "empty WAFER_BACKEND counts as unset");
	is_str(wafer__config_get(c, "core", "channel", NULL), "direct",
	       "WAFER_CHANNEL beats user file");
	is_str(origin_of(c, "core", "channel"), "environment WAFER_CHANNEL",
	       "origin 'environment WAFER_CHANNEL'");
	is_str(wafer__config_get(c, "core", "plugin_path", NULL), "/env/plugins",
	       "WAFER_PLUGIN_PATH beats WAFER_CONFIG");
	is_str(wafer__config_get(c, "memory", "strategy", NULL), "pool",
	       "WAFER_MEMORY sets [memory] strategy, trimmed");
	is_str(origin_of(c, "memory", "strategy"), "environment WAFER_MEMORY",
	       "origin of WAFER_MEMORY");
	is_str(wafer__config_get(c, "memory", "trace", NULL), "/tmp/run.trace",
	       "WAFER_MEMORY_TRACE sets [memory] trace");
	is_str(origin_of(c, "memory", "trace"), "environment WAFER_MEMORY_TRACE",
	       "origin of WAFER_MEMORY_TRACE");
	is_str(wafer__config_get(c, "opencl", "type", NULL), "all",
	       "WAFER_OPENCL_TYPE sets [opencl] type (PoCL's CPU devices)");
	is_str(wafer__config_get(c, "core", "log", NULL), "debug",
	       "option beats WAFER_LOG");
	wafer__config_destroy(c);
}

static void test_chain_locations(void)
{
	struct wafer__config_paths paths = {.getenv = fake_getenv};
	struct wafer__config *c;

	chain_env();
	env_set("XDG_CONFIG_HOME", NULL);
	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, NULL, 0, false), WAFER_OK,
		  "chain without XDG_CONFIG_HOME");
	is_str(wafer__config_get(c, "t", "d", NULL), "home",
	       "unset XDG_CONFIG_HOME: $HOME/.config/wafer/wafer.conf");
	is_str(wafer__config_source_at(c, 3)->path,
	       tmp_path("chain/home/.config/wafer/wafer.conf"),
	       "home file is the user source");
	is_str(last_source(c)->path, "environment", "no options: no source");
	wafer__config_destroy(c);

	env_set("XDG_CONFIG_HOME", "");
	c = new_config();
	wafer__config_load_chain(c, &paths, NULL, 0, false);
	is_str(wafer__config_get(c, "t", "d", NULL), "home",
	       "empty XDG_CONFIG_HOME: $HOME/.config");
	wafer__config_destroy(c);

	env_set("XDG_CONFIG_HOME", "relative/dir");
	c = new_config();
	wafer__config_load_chain(c, &paths, NULL, 0, false);
	is_str(wafer__config_get(c, "t", "d", NULL), "home",
	       "relative XDG_CONFIG_HOME is ignored (XDG rules)");
	wafer__config_destroy(c);

	env_clear();
	env_set("WAFER_SYSCONFDIR", tmp_path("chain/sys"));
	c = new_config();
	wafer__config_load_chain(c, &paths, NULL, 0, false);
	is_int((long long)wafer__config_source_count(c), 3,
	       "no HOME, XDG, WAFER_CONFIG or WAFER_*: only system files");
	is_str(wafer__config_get(c, "core", "log", NULL), "warn",
	       "defaults survive under the files");
	wafer__config_destroy(c);

	env_set("WAFER_CONFIG", tmp_path("chain/missing.conf"));
	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, NULL, 0, false), WAFER_OK,
		  "missing WAFER_CONFIG file is not an error");
	ok(last_source(c)->state == WAFER_CONFIG_SOURCE_ABSENT &&
		   !strcmp(last_source(c)->path, tmp_path("chain/missing.conf")),
	   "missing WAFER_CONFIG recorded ABSENT");
	wafer__config_destroy(c);

	/* Members of wafer__config_paths beat WAFER_SYSCONFDIR. */
	env_set("WAFER_CONFIG", NULL);
	paths.system_file = tmp_path("chain/other/wafer.conf");
	paths.dropin_dir = tmp_path("chain/other/conf.d");
	c = new_config();
	wafer__config_load_chain(c, &paths, NULL, 0, false);
	is_str(wafer__config_source_at(c, 0)->path,
	       tmp_path("chain/other/wafer.conf"), "paths.system_file used");
	ok(wafer__config_source_at(c, 1)->state == WAFER_CONFIG_SOURCE_ABSENT &&
		   !strcmp(wafer__config_source_at(c, 1)->path,
			   tmp_path("chain/other/conf.d")),
	   "paths.dropin_dir used (absent)");
	is_str(wafer__config_get(c, "t", "a", NULL), "other",
	       "WAFER_SYSCONFDIR not read when paths say where");
	wafer__config_destroy(c);

	/* no_files: environment and options only. */
	chain_env();
	paths = (struct wafer__config_paths){.getenv = fake_getenv, .no_files = true};
	const wafer_option one = {"cpu", "threads", "2"};
	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, &one, 1, false), WAFER_OK,
		  "no_files chain");
	is_int((long long)wafer__config_source_count(c), 2,
	       "no_files: environment and options only");
	ok(!wafer__config_lookup(c, "t", "a"), "no_files: no file read");
	is_str(wafer__config_get(c, "cpu", "threads", NULL), "2",
	       "no_files: options applied");
	wafer__config_destroy(c);
}

static void test_chain_errors(void)
{
	const struct wafer__config_paths paths = {.getenv = fake_getenv};
	const char *bad = write_file("broken/sys/conf.d/10-bad.conf",
				     "[cpu]\nthreads\n[t]\nx = after\n");
	struct wafer__config *c;
	char want[8192];

	snprintf(want, sizeof want,
		 "%s:2: expected 'key = value', '[section]' or a comment, got 'threads'",
		 bad);
	write_file("broken/sys/wafer.conf", "[t]\na = sys\n");
	write_file("broken/sys/conf.d/20-ok.conf", "[t]\nb = drop20\n");
	write_file("broken/extra.conf", "[t]\nc = extra\n");
	env_clear();
	env_set("WAFER_SYSCONFDIR", tmp_path("broken/sys"));
	env_set("WAFER_CONFIG", tmp_path("broken/extra.conf"));
	env_set("WAFER_BACKEND", "cpu");

	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, NULL, 0, false),
		  WAFER_ERROR_CONFIG, "strict chain: a bad drop-in line fails");
	is_str(wafer_last_error(), want, "strict chain: error names file:line");
	is_int((long long)wafer__config_source_count(c), 2,
	       "strict chain: stops at the bad source");
	ok(!wafer__config_lookup(c, "t", "c") &&
		   !strcmp(wafer__config_get(c, "core", "backend", ""),
			   "cuda, opencl, levelzero, cpu"),
	   "strict chain: later files and the environment not applied");
	wafer__config_destroy(c);

	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, NULL, 0, true), WAFER_OK,
		  "tolerant chain: OK");
	is_int((long long)wafer__config_source_count(c), 5,
	       "tolerant chain: every source recorded");
	const wafer_config_source *s = wafer__config_source_at(c, 1);
	ok(s->state == WAFER_CONFIG_SOURCE_FAILED && !strcmp(s->detail, want),
	   "tolerant chain: the bad drop-in FAILED with detail");
	ok(wafer__config_source_at(c, 2)->state == WAFER_CONFIG_SOURCE_READ,
	   "tolerant chain: the next drop-in READ");
	ok(wafer__config_lookup(c, "t", "x") && wafer__config_lookup(c, "t", "c"),
	   "tolerant chain: good lines after the problem applied");
	is_str(wafer__config_get(c, "core", "backend", NULL), "cpu",
	       "tolerant chain: environment applied");
	wafer__config_destroy(c);

	/* A bad environment value. */
	env_clear();
	env_set("WAFER_SYSCONFDIR", tmp_path("chain/sys"));
	env_set("WAFER_LOG", "loud");
	env_set("WAFER_MEMORY", "pool");
	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, NULL, 0, false),
		  WAFER_ERROR_CONFIG, "strict: bad WAFER_LOG fails");
	is_str(wafer_last_error(),
	       "environment WAFER_LOG: [core] log: expected error, warn, info or debug, got 'loud'",
	       "bad WAFER_LOG names the variable");
	wafer__config_destroy(c);
	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, NULL, 0, true), WAFER_OK,
		  "tolerant: bad WAFER_LOG recorded");
	s = last_source(c);
	ok(!strcmp(s->path, "environment") &&
		   s->state == WAFER_CONFIG_SOURCE_FAILED &&
		   !strncmp(s->detail, "environment WAFER_LOG: ", 23),
	   "environment source FAILED with detail");
	is_str(wafer__config_get(c, "core", "log", NULL), "warn",
	       "the bad value was not applied");
	is_str(wafer__config_get(c, "memory", "strategy", NULL), "pool",
	       "the other variables were");
	wafer__config_destroy(c);

	/* Bad options. */
	const wafer_option bad_options[] = {
		{"core", "nope", "1"},
		{"core", NULL, "x"},
		{"bad section", "k", "v"},
		{"cpu", "threads", "3"},
	};
	env_clear();
	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, bad_options, 4, false),
		  WAFER_ERROR_CONFIG, "strict: unknown [core] option fails");
	is_str(wafer_last_error(),
	       "options: unknown key 'nope' in [core] (known: backend, plugin_path, channel, log, max_handles, cache_dir, trace)",
	       "bad option named");
	wafer__config_destroy(c);
	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, bad_options + 1, 1, false),
		  WAFER_ERROR_CONFIG, "strict: NULL key fails");
	is_str(wafer_last_error(),
	       "options: option 0 has a NULL section, key or value",
	       "NULL key named");
	wafer__config_destroy(c);
	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, bad_options, 4, true),
		  WAFER_OK, "tolerant: bad options skipped");
	is_str(wafer__config_get(c, "cpu", "threads", NULL), "3",
	       "tolerant: the good option applied");
	wafer__config_destroy(c);
	c = new_config();
	is_status(wafer__config_load_chain(c, &paths, NULL, 3, false),
		  WAFER_ERROR_CONFIG, "options count without an array fails");
	is_str(wafer_last_error(), "options: 3 options but the array is NULL",
	       "NULL options array named");
	wafer__config_destroy(c);
	is_status(wafer__config_load_chain(NULL, NULL, NULL, 0, false),
		  WAFER_ERROR_INVALID_ARGUMENT, "NULL config");
}

/*===----------------------------------------------------------------------===
 * set, typed getters, lists
 *===----------------------------------------------------------------------===*/

static void test_set(void)
{
	struct wafer__config *c = new_config();

	is_status(wafer__config_set(c, "cpu", "threads", "8", "test"), WAFER_OK,
		  "set a plugin key");
	is_str(origin_of(c, "cpu", "threads"), "test", "set keeps the origin");
	is_status(wafer__config_set(c, "core", "log", "DEBUG", NULL), WAFER_OK,
		  "log level is case-insensitive");
	is_str(origin_of(c, "core", "log"), "options", "NULL origin: options");
	is_status(wafer__config_set(c, "core", "log", "chatty", "api"),
		  WAFER_ERROR_CONFIG, "set validates [core] log");
	like(wafer_last_error(), "api: [core] log: expected", "names the origin");
	is_status(wafer__config_set(c, "core", "colour", "x", "api"),
		  WAFER_ERROR_CONFIG, "set rejects unknown [core] keys");
	is_status(wafer__config_set(c, "memory", "strategy", "anything", "api"),
		  WAFER_OK, "strategy names are checked by the memory manager");
	is_status(wafer__config_set(c, "cu da", "k", "v", "api"),
		  WAFER_ERROR_CONFIG, "set rejects bad section names");
	is_status(wafer__config_set(c, "cuda", "", "v", "api"),
		  WAFER_ERROR_CONFIG, "set rejects empty keys");
	is_str(wafer_last_error(), "api: empty key", "empty key message");
	is_status(wafer__config_set(c, "cuda", "k", NULL, "api"),
		  WAFER_ERROR_INVALID_ARGUMENT, "set rejects NULL value");
	wafer__config_destroy(c);
}

struct getter_case {
	const char *value;
	int ok;
	uint64_t want;
};

static void test_uint_and_size(void)
{
	static const struct getter_case uints[] = {
		{"0", 1, 0},
		{"42", 1, 42},
		{"18446744073709551615", 1, UINT64_MAX},
		{"18446744073709551616", 0, 0},
		{"99999999999999999999999", 0, 0},
		{"-1", 0, 0},
		{"+1", 0, 0},
		{"12abc", 0, 0},
		{"0x10", 0, 0},
		{"1 2", 0, 0},
		{"", 0, 0},
	};
	static const struct getter_case sizes[] = {
		{"4096", 1, 4096},
		{"4K", 1, 4096},
		{"4k", 1, 4096},
		{"4 KiB", 1, 4096},
		{"3M", 1, 3u << 20},
		{"2GiB", 1, UINT64_C(2) << 30},
		{"1T", 1, UINT64_C(1) << 40},
		{"1KB", 1, 1000},
		{"5 MB", 1, 5000000},
		{"2GB", 1, 2000000000},
		{"1TB", 1, 1000000000000},
		{"512B", 1, 512},
		{"16777215T", 1, UINT64_C(16777215) << 40},
		{"16777216T", 0, 0},
		{"18446744073709551616", 0, 0},
		{"4Q", 0, 0},
		{"4KiBs", 0, 0},
		{"1.5G", 0, 0},
		{"K", 0, 0},
		{"-4K", 0, 0},
		{"", 0, 0},
	};
	struct wafer__config *c = new_config();
	uint64_t got;

	for (size_t i = 0; i < sizeof uints / sizeof *uints; i++) {
		wafer__config_set(c, "t", "n", uints[i].value, "uint.conf:7");
		wafer_status st = wafer__config_get_uint(c, "t", "n", 77, &got);
		if (uints[i].ok)
			ok(st == WAFER_OK && got == uints[i].want,
			   "uint '%s'", uints[i].value);
		else
			ok(st == WAFER_ERROR_CONFIG && got == 77 &&
				   strstr(wafer_last_error(), "uint.conf:7: [t] n: expected a decimal integer"),
			   "uint '%s' is an error naming the origin",
			   uints[i].value);
	}
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		wafer__config_set(c, "t", "s", sizes[i].value, "size.conf:3");
		wafer_status st = wafer__config_get_size(c, "t", "s", 77, &got);
		if (sizes[i].ok)
			ok(st == WAFER_OK && got == sizes[i].want, "size '%s'",
			   sizes[i].value);
		else
			ok(st == WAFER_ERROR_CONFIG && got == 77 &&
				   strstr(wafer_last_error(), "size.conf:3: [t] s: expected a size"),
			   "size '%s' is an error naming the origin",
			   sizes[i].value);
	}
	is_status(wafer__config_get_uint(c, "t", "unset", 5, &got), WAFER_OK,
		  "unset uint");
	is_int((long long)got, 5, "unset uint: fallback");
	is_status(wafer__config_get_size(c, "t", "unset", 6, &got), WAFER_OK,
		  "unset size");
	is_int((long long)got, 6, "unset size: fallback");

	wafer__config_set(c, "t", "s", "\x01junk", "size.conf:3");
	wafer__config_get_size(c, "t", "s", 0, &got);
	like(wafer_last_error(), "got '\\x01junk'", "bad value quoted safely");
	wafer__config_destroy(c);
}

/* Sets LC_NUMERIC to de_DE.UTF-8 (decimal comma), compiling the locale
 * into the test's temporary directory with localedef when the system has
 * not generated it. */
static int decimal_comma_locale(void)
{
	if (setlocale(LC_NUMERIC, "de_DE.UTF-8"))
		return 1;
	char command[4096];
	snprintf(command, sizeof command,
		 "localedef -i de_DE -f UTF-8 -c %s/de_DE.UTF-8 >/dev/null 2>&1",
		 tmp_root);
	if (system(command) != 0)
		return 0;
	setenv("LOCPATH", tmp_root, 1);
	return setlocale(LC_NUMERIC, "de_DE.UTF-8") != NULL;
}

static void test_bool_and_double(void)
{
	static const char *const trues[] = {"1", "true", "TRUE", "yes", "On"};
	static const char *const falses[] = {"0", "false", "No", "off", "OFF"};
	static const char *const bad_bools[] = {"2", "maybe", "", "y", "truee"};
	static const struct {
		const char *value;
		int ok;
		double want;
	} doubles[] = {
		{"0.5", 1, 0.5},   {"-1e3", 1, -1000.0}, {"+2.", 1, 2.0},
		{".25", 1, 0.25},  {"3", 1, 3.0},        {"1E-2", 1, 0.01},
		{"1e999", 0, 0},   {"nan", 0, 0},        {"inf", 0, 0},
		{"0x1p3", 0, 0},   {"1,5", 0, 0},        {"", 0, 0},
		{".", 0, 0},       {"1e", 0, 0},         {"1.5x", 0, 0},
		{"- 1", 0, 0},
	};
	struct wafer__config *c = new_config();
	bool b;
	double d;

	for (size_t i = 0; i < 5; i++) {
		wafer__config_set(c, "t", "b", trues[i], "o");
		ok(wafer__config_get_bool(c, "t", "b", false, &b) == WAFER_OK && b,
		   "bool '%s' is true", trues[i]);
		wafer__config_set(c, "t", "b", falses[i], "o");
		ok(wafer__config_get_bool(c, "t", "b", true, &b) == WAFER_OK && !b,
		   "bool '%s' is false", falses[i]);
		wafer__config_set(c, "t", "b", bad_bools[i], "bool.conf:2");
		ok(wafer__config_get_bool(c, "t", "b", true, &b) ==
				   WAFER_ERROR_CONFIG &&
			   b && strstr(wafer_last_error(), "bool.conf:2: [t] b: expected a boolean"),
		   "bool '%s' is an error", bad_bools[i]);
	}
	ok(wafer__config_get_bool(c, "t", "unset", true, &b) == WAFER_OK && b,
	   "unset bool: fallback");

	for (size_t i = 0; i < sizeof doubles / sizeof *doubles; i++) {
		wafer__config_set(c, "t", "d", doubles[i].value, "double.conf:9");
		wafer_status st = wafer__config_get_double(c, "t", "d", -7.0, &d);
		if (doubles[i].ok)
			ok(st == WAFER_OK && d == doubles[i].want, "double '%s'",
			   doubles[i].value);
		else
			ok(st == WAFER_ERROR_CONFIG && d == -7.0 &&
				   strstr(wafer_last_error(), "double.conf:9: [t] d: expected a finite decimal number"),
			   "double '%s' is an error", doubles[i].value);
	}
	ok(wafer__config_get_double(c, "t", "unset", 1.25, &d) == WAFER_OK &&
		   d == 1.25,
	   "unset double: fallback");

	/* A decimal-comma locale in the application must not change how
	 * the file is read. */
	if (decimal_comma_locale()) {
		wafer__config_set(c, "t", "d", "0.5", "o");
		ok(wafer__config_get_double(c, "t", "d", 0, &d) == WAFER_OK &&
			   d == 0.5,
		   "double is read in the C locale");
		setlocale(LC_NUMERIC, "C");
	} else {
		ok(0, "double in a decimal-comma locale: cannot set de_DE.UTF-8 "
		      "(install the Debian package 'locales')");
	}
	wafer__config_destroy(c);
}

static void test_split_list(void)
{
	char *items[4];
	size_t n;

	n = wafer__config_split_list(" cuda, opencl,,  cpu ,\t", items, 4);
	is_int((long long)n, 3, "three items, empties skipped");
	ok(n == 3 && !strcmp(items[0], "cuda") && !strcmp(items[1], "opencl") &&
		   !strcmp(items[2], "cpu") && items[3] == NULL,
	   "items trimmed, spare slots NULL");
	for (size_t i = 0; i < n && i < 4; i++)
		free(items[i]);

	n = wafer__config_split_list("a,b,c,d,e,f", items, 2);
	is_int((long long)n, 6, "count past capacity");
	ok(!strcmp(items[0], "a") && !strcmp(items[1], "b"),
	   "first two stored");
	free(items[0]);
	free(items[1]);

	is_int((long long)wafer__config_split_list("", items, 4), 0, "empty: 0");
	is_int((long long)wafer__config_split_list(" , ,", items, 4), 0,
	       "only commas: 0");
	is_int((long long)wafer__config_split_list(NULL, items, 4), 0, "NULL: 0");
	is_int((long long)wafer__config_split_list("x y, z", NULL, 0), 2,
	       "count only; inner blanks kept");
}

int main(void)
{
	const char *tmpdir = getenv("TMPDIR");

	/* Tolerant loads warn on stderr by design; keep the test quiet. */
	wafer__log_set_level(WAFER_LOG_ERROR);
	snprintf(tmp_root, sizeof tmp_root, "%s/wafer-config-XXXXXX",
		 tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (!mkdtemp(tmp_root)) {
		printf("Bail out! mkdtemp %s: %s\n", tmp_root, strerror(errno));
		return 1;
	}

	test_defaults();
	test_good_file();
	test_load_string();
	test_many_keys();
	test_shipped_file();
	for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++)
		test_bad_case(&bad_cases[i], (int)i);
	test_long_lines();
	test_tolerant_vs_strict();
	test_sources();
	test_dropins();
	test_chain_order();
	test_chain_locations();
	test_chain_errors();
	test_fifos_and_blanks();
	test_set();
	test_uint_and_size();
	test_bool_and_double();
	test_split_list();

	nftw(tmp_root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	done_testing();
	return exit_status();
}
