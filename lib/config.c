/* wafer — SPDX-License-Identifier: MIT
 *
 * config.c: the configuration chain (config.h, wafer.conf(5)).
 *
 * Everything a configuration holds — entries, their strings, the source
 * records — lives in one arena that is freed with the configuration, so
 * every pointer handed out stays valid until wafer__config_destroy, even
 * after the value it came from was overridden. A configuration is a few
 * dozen entries, so lookups are linear scans.
 *
 * Loading and setting are for one thread; once loaded, a configuration
 * may be read from any number of threads (getters only read it and
 * write the calling thread's error detail). */
#include "build-config.h"

/* secure_getenv is a GNU extension; build-config.h includes nothing, so
 * this still comes before the first system header. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/build_tree.h"
#include "lib/config.h"
#include "lib/error.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/memory/u64map.h"


/* Longest line, without its line ending; longer ones are an error. */
#define CONFIG_LINE_MAX 4096
/* Largest file read; anything bigger is not a configuration file (think
 * WAFER_CONFIG=/usr/bin/ls) and is not worth the memory. */
#define CONFIG_FILE_MAX ((size_t)1 << 20)
/* Tolerant loads log this many problems per source, then a count. */
#define CONFIG_LOG_PROBLEMS_MAX 10
/* Bytes of user text quoted in a message, and the buffer that holds them
 * once escaped (\xNN is four bytes) with "..." and a NUL. */
#define EXCERPT_CHARS 48
#define EXCERPT_SIZE (EXCERPT_CHARS * 4 + 4)
/* Room for the reason part of a message ("unknown key ..."). */
#define WHY_SIZE 512
/* Arena blocks; a configuration usually fits in one. */
#define CONFIG_BLOCK_SIZE 4096

/*===----------------------------------------------------------------------===
 * Storage: an arena for strings and records, vectors of pointers
 *===----------------------------------------------------------------------===*/

struct config_block {
	struct config_block *next;
	size_t used;
	size_t size;
	unsigned char data[];
};

struct config_vec {
	void **items;
	size_t count;
	size_t capacity;
};

struct wafer__config {
	struct config_block *blocks;
	struct config_vec entries; /* struct wafer__config_entry *, first set */
	struct config_vec sources; /* wafer_config_source *, applied order */
	/* Hash of (section, key) -> index in entries, so that storing N keys
	 * costs O(N), not O(N^2) (a 1 MiB file holds ~100k lines). A hash
	 * two keys share maps to the first; the other is found by a scan. */
	struct wafer__u64map index;
};

static size_t align_pad(const void *at, size_t align)
{
	return (size_t)(-(uintptr_t)at) & (align - 1);
}

static bool block_fits(const struct config_block *block, size_t size,
		       size_t align)
{
	size_t room = block->size - block->used;
	size_t pad = align_pad(block->data + block->used, align);
	return pad <= room && size <= room - pad;
}

/* |align| is a power of two. Returns NULL when out of host memory. */
static void *config_alloc(struct wafer__config *config, size_t size,
			  size_t align)
{
	struct config_block *block = config->blocks;

	if (!block || !block_fits(block, size, align)) {
		if (size > SIZE_MAX - sizeof *block - align)
			return NULL;
		size_t want = size + align > CONFIG_BLOCK_SIZE
				      ? size + align
				      : CONFIG_BLOCK_SIZE;
		block = malloc(sizeof *block + want);
		if (!block)
			return NULL;
		block->next = config->blocks;
		block->used = 0;
		block->size = want;
		config->blocks = block;
	}
	size_t pad = align_pad(block->data + block->used, align);
	void *at = block->data + block->used + pad;
	block->used += pad + size;
	return at;
}

static char *config_strndup(struct wafer__config *config, const char *text,
			    size_t len)
{
	char *copy = config_alloc(config, len + 1, 1);
	if (copy) {
		memcpy(copy, text, len);
		copy[len] = '\0';
	}
	return copy;
}

static char *config_strdup(struct wafer__config *config, const char *text)
{
	return config_strndup(config, text, strlen(text));
}

static bool vec_push(struct config_vec *vec, void *item)
{
	if (vec->count == vec->capacity) {
		size_t capacity = vec->capacity ? vec->capacity * 2 : 16;
		void **items = realloc(vec->items, capacity * sizeof *items);
		if (!items)
			return false;
		vec->items = items;
		vec->capacity = capacity;
	}
	vec->items[vec->count++] = item;
	return true;
}

static wafer_status out_of_memory(void)
{
	return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY, "config: out of host memory");
}

/*===----------------------------------------------------------------------===
 * Text helpers
 *===----------------------------------------------------------------------===*/

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Trims |text| in place; returns the first non-blank character. */
static char *trim(char *text)
{
	while (is_space(*text))
		text++;
	size_t len = strlen(text);
	while (len && is_space(text[len - 1]))
		len--;
	text[len] = '\0';
	return text;
}

/* |text| made safe to quote in a message: bytes outside printable ASCII
 * become \xNN (binary junk must not reach a terminal raw), and long text
 * is cut with "...". Returns |out|, which holds EXCERPT_SIZE bytes. */
static const char *excerpt(char *out, const char *text)
{
	static const char hex[] = "0123456789abcdef";
	size_t used = 0, shown = 0;

	for (; *text && shown < EXCERPT_CHARS; text++, shown++) {
		unsigned char c = (unsigned char)*text;
		if (c >= 0x20 && c < 0x7f) {
			out[used++] = (char)c;
			continue;
		}
		out[used++] = '\\';
		out[used++] = 'x';
		out[used++] = hex[c >> 4];
		out[used++] = hex[c & 15];
	}
	if (*text) {
		memcpy(out + used, "...", 3);
		used += 3;
	}
	out[used] = '\0';
	return out;
}

/* "a/b" in a malloc'd string, or NULL when out of host memory. */
static char *path_join(const char *dir, const char *name)
{
	size_t size = strlen(dir) + 1 + strlen(name) + 1;
	char *path = malloc(size);
	if (path)
		snprintf(path, size, "%s/%s", dir, name);
	return path;
}

/*===----------------------------------------------------------------------===
 * Names and the schema of the sections the core owns
 *===----------------------------------------------------------------------===*/

static const char *const core_keys[] = {"backend", "plugin_path", "channel",
					"log", "max_handles", "cache_dir",
					"trace", NULL};
static const char *const memory_keys[] = {"strategy", "limit", "trace", NULL};
/* wafer-autotune(7); values are checked by lib/autotune/settings.c. */
static const char *const autotune_keys[] = {"mode", "cache_dir", "warmup",
					    "samples", "eliminate_ratio",
					    "timer", "progress", NULL};

/* Collectives (lib/comm.c, wafer.conf(5)). */
static const char *const comm_keys[] = {"timeout", NULL};

/* Sections whose keys the core knows; any other section belongs to a
 * plugin or a memory strategy, which checks its own keys. */
static const struct config_schema {
	const char *section;
	const char *const *keys;
} config_schema[] = {
	{"core", core_keys},
	{"memory", memory_keys},
	{"autotune", autotune_keys},
	{"comm", comm_keys},
};

static const struct config_default {
	const char *section;
	const char *key;
	const char *value;
} config_defaults[] = {
	{"core", "backend", "cuda, opencl, levelzero, cpu"},
	/* The client's own default too (wafer.h); kept here so wafer-info
	 * shows it with origin "default". */
	{"core", "channel", "auto"},
	{"core", "log", "warn"},
};

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       is_digit(c) || c == '_' || c == '.' || c == '-';
}

/* Checks |name| against [A-Za-z0-9_.-]+; |what| is "key" or "section
 * name". On failure writes the reason into |why| (WHY_SIZE bytes). */
static bool check_name(const char *what, const char *name, char *why)
{
	char shown[EXCERPT_SIZE], bad[EXCERPT_SIZE];
	const char *c = name;

	if (!*name) {
		snprintf(why, WHY_SIZE, "empty %s", what);
		return false;
	}
	while (is_name_char(*c))
		c++;
	if (!*c)
		return true;
	char one[2] = {*c, '\0'};
	snprintf(why, WHY_SIZE,
		 "invalid character '%s' in %s '%s' (names use A-Z a-z 0-9 _ . -)",
		 excerpt(bad, one), what, excerpt(shown, name));
	return false;
}

static const struct config_schema *find_schema(const char *section)
{
	for (size_t i = 0; i < sizeof config_schema / sizeof *config_schema; i++)
		if (strcmp(config_schema[i].section, section) == 0)
			return &config_schema[i];
	return NULL;
}

/* Checks a key of a section the core owns, and the values the core can
 * judge without loading anything (the log level). Other values — a
 * backend list, a channel, a strategy name — are checked by the part of
 * the core that uses them, which names the origin. */
static bool check_schema(const char *section, const char *key,
			 const char *value, char *why)
{
	const struct config_schema *schema = find_schema(section);
	char shown[EXCERPT_SIZE];
	wafer_log_level level;

	if (!schema)
		return true;
	for (size_t i = 0; schema->keys[i]; i++) {
		if (strcmp(schema->keys[i], key) != 0)
			continue;
		if (strcmp(section, "core") == 0 && strcmp(key, "log") == 0 &&
		    !wafer__log_parse_level(value, &level)) {
			snprintf(why, WHY_SIZE,
				 "[core] log: expected error, warn, info or debug, got '%s'",
				 excerpt(shown, value));
			return false;
		}
		return true;
	}
	size_t used = (size_t)snprintf(why, WHY_SIZE,
				       "unknown key '%s' in [%s] (known:",
				       excerpt(shown, key), section);
	for (size_t i = 0; schema->keys[i] && used < WHY_SIZE; i++)
		used += (size_t)snprintf(why + used, WHY_SIZE - used, "%s %s",
					 i ? "," : "", schema->keys[i]);
	if (used < WHY_SIZE)
		snprintf(why + used, WHY_SIZE - used, ")");
	return false;
}

static bool check_entry(const char *section, const char *key,
			const char *value, char *why)
{
	return check_name("section name", section, why) &&
	       check_name("key", key, why) &&
	       check_schema(section, key, value, why);
}

/*===----------------------------------------------------------------------===
 * Entries and sources
 *===----------------------------------------------------------------------===*/

/* FNV-1a over "section\0key". */
static uint64_t entry_hash(const char *section, const char *key)
{
	return wafer__fnv_string(
		wafer__fnv_byte(wafer__fnv_string(WAFER_FNV_INIT, section), 0), key);
}

static bool entry_is(const struct wafer__config_entry *entry,
		     const char *section, const char *key)
{
	return strcmp(entry->key, key) == 0 &&
	       strcmp(entry->section, section) == 0;
}

static struct wafer__config_entry *find_entry(const struct wafer__config *config,
					      const char *section,
					      const char *key)
{
	uint64_t at;

	if (wafer__u64map_get(&config->index, entry_hash(section, key), &at)) {
		struct wafer__config_entry *entry = config->entries.items[at];
		if (entry_is(entry, section, key))
			return entry;
	} else {
		return NULL; /* every stored entry's hash is in the index */
	}
	for (size_t i = 0; i < config->entries.count; i++) {
		struct wafer__config_entry *entry = config->entries.items[i];
		if (entry_is(entry, section, key))
			return entry;
	}
	return NULL;
}

/* Sets a value that was already checked. An override keeps the entry's
 * place in first-set order. */
static wafer_status config_store(struct wafer__config *config,
				 const char *section, const char *key,
				 const char *value, const char *origin)
{
	struct wafer__config_entry *entry = find_entry(config, section, key);
	const char *value_copy = config_strdup(config, value);
	const char *origin_copy = config_strdup(config, origin);

	if (!value_copy || !origin_copy)
		return out_of_memory();
	if (!entry) {
		entry = config_alloc(config, sizeof *entry,
				     alignof(struct wafer__config_entry));
		if (!entry)
			return out_of_memory();
		entry->section = config_strdup(config, section);
		entry->key = config_strdup(config, key);
		if (!entry->section || !entry->key ||
		    !vec_push(&config->entries, entry))
			return out_of_memory();
		uint64_t hash = entry_hash(section, key);
		if (!wafer__u64map_get(&config->index, hash, NULL) &&
		    !wafer__u64map_put(&config->index, hash,
				       config->entries.count - 1)) {
			config->entries.count--;
			return out_of_memory();
		}
	}
	entry->value = value_copy;
	entry->origin = origin_copy;
	return WAFER_OK;
}

/* Appends a source record (state READ, no detail) for |path|. */
static wafer_status add_source(struct wafer__config *config, const char *path,
			       wafer_config_source **out_source)
{
	wafer_config_source *source =
		config_alloc(config, sizeof *source, alignof(wafer_config_source));

	*out_source = NULL;
	if (!source)
		return out_of_memory();
	*source = (wafer_config_source){
		.struct_size = sizeof *source,
		.path = config_strdup(config, path),
		.state = WAFER_CONFIG_SOURCE_READ,
		.detail = "",
	};
	if (!source->path || !vec_push(&config->sources, source))
		return out_of_memory();
	*out_source = source;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Loading one source: problems are fatal (strict) or recorded (tolerant)
 *===----------------------------------------------------------------------===*/

struct config_load {
	struct wafer__config *config;
	wafer_config_source *source;
	bool tolerant;
	unsigned problems;
};

static wafer_status load_begin(struct config_load *load,
			       struct wafer__config *config, const char *path,
			       bool tolerant)
{
	*load = (struct config_load){.config = config, .tolerant = tolerant};
	return add_source(config, path, &load->source);
}

/* Reports "|where|: why". The first problem of a source marks it FAILED
 * and becomes its detail. Strict: returns WAFER_ERROR_CONFIG with the
 * message as the thread's error. Tolerant: logs a warning and returns
 * WAFER_OK so the caller goes on with the next line. */
static wafer_status load_problem(struct config_load *load, const char *where,
				 const char *format, ...)
	__attribute__((format(printf, 3, 4)));
static wafer_status load_problem(struct config_load *load, const char *where,
				 const char *format, ...)
{
	char why[WHY_SIZE];
	va_list ap;

	va_start(ap, format);
	vsnprintf(why, sizeof why, format, ap);
	va_end(ap);

	size_t size = strlen(where) + 2 + strlen(why) + 1;
	char *message = malloc(size);
	if (!message)
		return out_of_memory();
	snprintf(message, size, "%s: %s", where, why);

	load->problems++;
	if (load->source->state != WAFER_CONFIG_SOURCE_FAILED) {
		load->source->state = WAFER_CONFIG_SOURCE_FAILED;
		load->source->detail = config_strdup(load->config, message);
		if (!load->source->detail) {
			load->source->detail = "";
			free(message);
			return out_of_memory();
		}
	}
	wafer_status status = WAFER_OK;
	if (!load->tolerant)
		status = wafer__fail(WAFER_ERROR_CONFIG, "%s", message);
	else if (load->problems <= CONFIG_LOG_PROBLEMS_MAX)
		wafer__log_warn("config", "%s (ignored)", message);
	free(message);
	return status;
}

static void load_end(const struct config_load *load)
{
	if (load->problems > CONFIG_LOG_PROBLEMS_MAX)
		wafer__log_warn("config", "%s: %u more problems not shown",
				load->source->path,
				load->problems - CONFIG_LOG_PROBLEMS_MAX);
}

/* Checks and applies one value of the source being loaded. */
static wafer_status load_value(struct config_load *load, const char *origin,
			       const char *section, const char *key,
			       const char *value)
{
	char why[WHY_SIZE];

	if (!check_entry(section, key, value, why))
		return load_problem(load, origin, "%s", why);
	return config_store(load->config, section, key, value, origin);
}

/*===----------------------------------------------------------------------===
 * The INI parser
 *===----------------------------------------------------------------------===*/

struct config_parse {
	const char *section; /* arena copy; NULL before the first header */
	bool skipping;       /* after a bad header: its keys are dropped */
	char *origin;        /* "path:line" of the current line */
};

static wafer_status parse_header(struct config_load *load,
				 struct config_parse *parse, char *text)
{
	char shown[EXCERPT_SIZE], why[WHY_SIZE];
	char *close = strchr(text, ']');

	/* Until this header proves good, keys below it go nowhere: putting
	 * them into the previous section would be a silent surprise, and the
	 * header's own problem was reported. */
	parse->section = NULL;
	parse->skipping = true;
	if (!close)
		return load_problem(load, parse->origin,
				    "unterminated section header '%s' (missing ']')",
				    excerpt(shown, text));
	*close = '\0';
	char *name = trim(text + 1);
	char *rest = trim(close + 1);
	if (!*name)
		return load_problem(load, parse->origin, "empty section name '[]'");
	if (!check_name("section name", name, why))
		return load_problem(load, parse->origin, "%s", why);
	if (*rest)
		return load_problem(load, parse->origin,
				    "unexpected text '%s' after '[%s]'",
				    excerpt(shown, rest), name);
	parse->section = config_strdup(load->config, name);
	if (!parse->section)
		return out_of_memory();
	parse->skipping = false;
	return WAFER_OK;
}

static wafer_status parse_assignment(struct config_load *load,
				     struct config_parse *parse, char *text)
{
	char shown[EXCERPT_SIZE], why[WHY_SIZE];
	char *equals = strchr(text, '=');

	if (!equals)
		return load_problem(load, parse->origin,
				    "expected 'key = value', '[section]' or a comment, got '%s'",
				    excerpt(shown, text));
	*equals = '\0';
	char *key = trim(text);
	char *value = trim(equals + 1);
	if (!*key)
		return load_problem(load, parse->origin, "empty key before '='");
	if (!check_name("key", key, why))
		return load_problem(load, parse->origin, "%s", why);
	if (parse->skipping)
		return WAFER_OK;
	if (!parse->section)
		return load_problem(load, parse->origin,
				    "key '%s' before any [section] header", key);
	return load_value(load, parse->origin, parse->section, key, value);
}

/* Cuts a trailing comment: '#' after a blank, so "a#b" keeps its '#'
 * and "cpu  # fallback" is "cpu". */
static void cut_comment(char *text)
{
	for (char *c = text + 1; *c; c++) {
		if (*c == '#' && is_space(c[-1])) {
			*c = '\0';
			return;
		}
	}
}

static wafer_status parse_line(struct config_load *load,
			       struct config_parse *parse, char *line)
{
	char *text = trim(line);

	if (!*text || *text == '#' || *text == ';')
		return WAFER_OK;
	cut_comment(text);
	text = trim(text);
	if (*text == '[')
		return parse_header(load, parse, text);
	return parse_assignment(load, parse, text);
}

/* Parses |len| bytes of |text| (not NUL-terminated; may hold NULs) as the
 * source being loaded. Accepts LF and CRLF line ends, a UTF-8 byte order
 * mark at the start and a missing final newline. */
static wafer_status parse_text(struct config_load *load, const char *text,
			       size_t len)
{
	const char *path = load->source->path;
	const char *end = text + len;
	struct config_parse parse = {0};
	char line[CONFIG_LINE_MAX + 1];
	wafer_status status = WAFER_OK;

	size_t origin_size = strlen(path) + 24;
	parse.origin = malloc(origin_size);
	if (!parse.origin)
		return out_of_memory();
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		text += 3;
	for (size_t number = 1; text < end && status == WAFER_OK; number++) {
		const char *newline = memchr(text, '\n', (size_t)(end - text));
		const char *stop = newline ? newline : end;
		size_t n = (size_t)(stop - text);

		if (n && text[n - 1] == '\r')
			n--;
		snprintf(parse.origin, origin_size, "%s:%zu", path, number);
		if (n > CONFIG_LINE_MAX) {
			status = load_problem(load, parse.origin,
					      "line longer than %d characters",
					      CONFIG_LINE_MAX);
		} else if (memchr(text, '\0', n)) {
			status = load_problem(load, parse.origin,
					      "NUL byte in line");
		} else {
			memcpy(line, text, n);
			line[n] = '\0';
			status = parse_line(load, &parse, line);
		}
		text = newline ? newline + 1 : end;
	}
	free(parse.origin);
	return status;
}

/*===----------------------------------------------------------------------===
 * Files and drop-in directories
 *===----------------------------------------------------------------------===*/

/* Reads a whole file into a malloc'd buffer. Returns 0, or an errno
 * value: ENOENT/ENOTDIR (absent), EISDIR, EFBIG (over CONFIG_FILE_MAX),
 * ENODEV (not a regular file, with |regular_only|), ENOMEM, or whatever
 * open/read said. Without |regular_only| a pipe works too
 * (WAFER_CONFIG=<(...)); the files in the usual places must be regular,
 * since a FIFO there that a writer holds open would block every program
 * for ever. */
static int read_file(const char *path, bool regular_only, char **out_text,
		     size_t *out_len)
{
	struct stat st;
	size_t len = 0, capacity = 4096;
	char *text = NULL;
	int err = 0;

	*out_text = NULL;
	*out_len = 0;
	/* O_NONBLOCK: a FIFO with no writer must not block the open (and
	 * every wafer program with it). A pipe is then read blocking, to its
	 * end: one with no writer reads as empty. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		return EISDIR;
	}
	if (regular_only && !S_ISREG(st.st_mode)) {
		close(fd);
		return ENODEV;
	}
	int fd_flags = fcntl(fd, F_GETFL);
	if (fd_flags == -1 || fcntl(fd, F_SETFL, fd_flags & ~O_NONBLOCK) == -1) {
		err = errno;
		close(fd);
		return err;
	}
	for (;;) {
		if (len == capacity || !text) {
			if (text)
				capacity *= 2;
			char *grown = realloc(text, capacity);
			if (!grown) {
				err = ENOMEM;
				break;
			}
			text = grown;
		}
		ssize_t got = read(fd, text + len, capacity - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = errno;
			break;
		}
		if (got == 0)
			break;
		len += (size_t)got;
		if (len > CONFIG_FILE_MAX) {
			err = EFBIG;
			break;
		}
	}
	close(fd);
	if (err) {
		free(text);
		return err;
	}
	*out_text = text;
	*out_len = len;
	return 0;
}

static const char *describe_errno(int err)
{
	if (err == EFBIG)
		return "larger than 1 MiB: not a configuration file";
	if (err == ENODEV)
		return "not a regular file (only WAFER_CONFIG may name a "
		       "pipe or FIFO)";
	return strerror(err);
}

static wafer_status load_path(struct wafer__config *config, const char *path,
			      bool regular_only, bool tolerant)
{
	struct config_load load;
	char *text;
	size_t len;

	if (!config || !path)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "config: load_file needs a config and a path");
	wafer_status status = load_begin(&load, config, path, tolerant);
	if (status != WAFER_OK)
		return status;
	int err = read_file(path, regular_only, &text, &len);
	if (wafer__errno_absent(err)) {
		load.source->state = WAFER_CONFIG_SOURCE_ABSENT;
		wafer__log_debug("config", "%s: not there", path);
		return WAFER_OK;
	}
	if (err == ENOMEM)
		return out_of_memory();
	if (err)
		return load_problem(&load, path, "%s", describe_errno(err));
	status = parse_text(&load, text, len);
	free(text);
	load_end(&load);
	if (status == WAFER_OK)
		wafer__log_debug("config", "%s: read", path);
	return status;
}

wafer_status wafer__config_load_file(struct wafer__config *config,
				     const char *path, bool tolerant)
{
	return load_path(config, path, false, tolerant);
}

/* A file in one of the usual places: a regular file, or a problem. */
static wafer_status load_usual_file(struct wafer__config *config,
				    const char *path, bool tolerant)
{
	return load_path(config, path, true, tolerant);
}

wafer_status wafer__config_load_string(struct wafer__config *config,
				       const char *name, const char *text,
				       bool tolerant)
{
	struct config_load load;

	if (!config || !text)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "config: load_string needs a config and a text");
	wafer_status status =
		load_begin(&load, config, name ? name : "<string>", tolerant);
	if (status != WAFER_OK)
		return status;
	status = parse_text(&load, text, strlen(text));
	load_end(&load);
	return status;
}

/* Drop-ins are "*.conf", but not hidden files: editors and package
 * managers leave ".#x.conf" and the like next to the real ones. */
static bool is_dropin_name(const char *name)
{
	size_t len = strlen(name);
	return name[0] != '.' && len > 5 && strcmp(name + len - 5, ".conf") == 0;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(names[i]);
	free(names);
}

/* Lists the drop-in names in |dir|, sorted. Returns 0 or an errno value. */
static int list_dropins(const char *dir, char ***out_names, size_t *out_count)
{
	struct config_vec names = {0};
	struct dirent *ent;
	int err = 0;

	*out_names = NULL;
	*out_count = 0;
	DIR *d = opendir(dir);
	if (!d)
		return errno;
	for (;;) {
		errno = 0;
		ent = readdir(d);
		if (!ent) {
			err = errno;
			break;
		}
		if (!is_dropin_name(ent->d_name))
			continue;
		char *name = strdup(ent->d_name);
		if (!name || !vec_push(&names, name)) {
			free(name);
			err = ENOMEM;
			break;
		}
	}
	closedir(d);
	if (err) {
		free_names((char **)names.items, names.count);
		return err;
	}
	if (names.count)
		qsort(names.items, names.count, sizeof *names.items,
		      compare_names);
	*out_names = (char **)names.items;
	*out_count = names.count;
	return 0;
}

wafer_status wafer__config_load_dir(struct wafer__config *config,
				    const char *dir, bool tolerant)
{
	struct config_load load;
	wafer_status status = WAFER_OK;
	char **names;
	size_t count;

	if (!config || !dir)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "config: load_dir needs a config and a directory");
	int err = list_dropins(dir, &names, &count);
	if (err == ENOMEM)
		return out_of_memory();
	if (err) {
		/* The directory itself is a source only when it could not be
		 * listed, so wafer-info shows where drop-ins were looked for. */
		status = load_begin(&load, config, dir, tolerant);
		if (status != WAFER_OK)
			return status;
		if (wafer__errno_absent(err)) {
			load.source->state = WAFER_CONFIG_SOURCE_ABSENT;
			return WAFER_OK;
		}
		return load_problem(&load, dir, "%s", describe_errno(err));
	}
	for (size_t i = 0; i < count && status == WAFER_OK; i++) {
		char *path = path_join(dir, names[i]);
		status = path ? load_usual_file(config, path, tolerant)
			      : out_of_memory();
		free(path);
	}
	free_names(names, count);
	return status;
}

/*===----------------------------------------------------------------------===
 * The chain
 *===----------------------------------------------------------------------===*/

/* Environment variables that set a value; add a row to add one (and a
 * line to wafer.conf(5)). */
static const struct config_env_var {
	const char *name;
	const char *section;
	const char *key;
} config_env_vars[] = {
	{"WAFER_BACKEND", "core", "backend"},
	{"WAFER_PLUGIN_PATH", "core", "plugin_path"},
	{"WAFER_LOG", "core", "log"},
	{"WAFER_CHANNEL", "core", "channel"},
	{"WAFER_MEMORY", "memory", "strategy"},
	{"WAFER_MEMORY_LIMIT", "memory", "limit"},
	{"WAFER_MEMORY_TRACE", "memory", "trace"},
	{"WAFER_TRACE", "core", "trace"},
	{"WAFER_AUTOTUNE", "autotune", "mode"},
	{"WAFER_OPENCL_TYPE", "opencl", "type"},
};

/* Under setuid or setgid secure_getenv returns NULL, so such a program
 * reads neither WAFER_CONFIG nor the user's file nor WAFER_* values. */
static const char *config_real_getenv(const char *name)
{
#ifdef HAVE_SECURE_GETENV
	return secure_getenv(name);
#else
	return getenv(name);
#endif
}

/* A set, non-empty variable, or NULL: an empty variable counts as unset,
 * as XDG_CONFIG_HOME does. */
static const char *lookup_env(const char *(*get)(const char *),
			      const char *name)
{
	const char *value = get(name);
	return value && *value ? value : NULL;
}

/* Applies |value| (trimmed, like a file's) from the source |load|. */
static wafer_status load_trimmed(struct config_load *load, const char *origin,
				 const char *section, const char *key,
				 const char *value)
{
	char *copy = strdup(value);
	if (!copy)
		return out_of_memory();
	wafer_status status = load_value(load, origin, section, key, trim(copy));
	free(copy);
	return status;
}

static wafer_status load_environment(struct wafer__config *config,
				     const char *(*get)(const char *),
				     bool tolerant)
{
	struct config_load load = {0};
	wafer_status status = WAFER_OK;
	const size_t count = sizeof config_env_vars / sizeof *config_env_vars;

	for (size_t i = 0; i < count && status == WAFER_OK; i++) {
		const struct config_env_var *var = &config_env_vars[i];
		const char *value = lookup_env(get, var->name);
		char origin[64];

		if (!value)
			continue;
		if (!load.source) {
			status = load_begin(&load, config, "environment",
					    tolerant);
			if (status != WAFER_OK)
				return status;
		}
		snprintf(origin, sizeof origin, "environment %s", var->name);
		status = load_trimmed(&load, origin, var->section, var->key,
				      value);
	}
	return status;
}

static wafer_status load_options(struct wafer__config *config,
				 const wafer_option *options, size_t count,
				 bool tolerant)
{
	struct config_load load;
	wafer_status status;

	if (!count)
		return WAFER_OK;
	status = load_begin(&load, config, "options", tolerant);
	if (status == WAFER_OK && !options)
		return load_problem(&load, "options",
				    "%zu options but the array is NULL", count);
	for (size_t i = 0; i < count && status == WAFER_OK; i++) {
		const wafer_option *option = &options[i];

		if (!option->section || !option->key || !option->value)
			status = load_problem(&load, "options",
					      "option %zu has a NULL section, key or value",
					      i);
		else
			status = load_trimmed(&load, "options", option->section,
					      option->key, option->value);
	}
	if (load.source)
		load_end(&load);
	return status;
}

/* The files of the chain, malloc'd; user_file is NULL when neither
 * XDG_CONFIG_HOME nor HOME says where it is. */
struct chain_files {
	char *system_file;
	char *dropin_dir;
	char *user_file;
};

static void free_chain_files(struct chain_files *files)
{
	free(files->system_file);
	free(files->dropin_dir);
	free(files->user_file);
	*files = (struct chain_files){0};
}

/* The XDG base directory rules: XDG_CONFIG_HOME when set to an absolute
 * path, else $HOME/.config. */
static char *user_config_file(const char *(*get)(const char *), bool *oom)
{
	const char *xdg = lookup_env(get, "XDG_CONFIG_HOME");
	const char *home = lookup_env(get, "HOME");
	char *path = NULL;

	if (xdg && xdg[0] == '/')
		path = path_join(xdg, "wafer/wafer.conf");
	else if (home)
		path = path_join(home, ".config/wafer/wafer.conf");
	else
		return NULL;
	*oom = !path;
	return path;
}

/* Member of |paths| > $WAFER_SYSCONFDIR (the directory that holds
 * wafer.conf and conf.d, as the source tree's etc/ does) > the
 * built-in directory (build_tree.h). */
static wafer_status resolve_chain_files(const struct wafer__config_paths *paths,
					const char *(*get)(const char *),
					struct chain_files *files)
{
	const char *env_dir = lookup_env(get, "WAFER_SYSCONFDIR");
	char *dir = strdup(env_dir ? env_dir : wafer__builtin_sysconfdir());
	bool oom = !dir;

	*files = (struct chain_files){0};
	if (dir) {
		files->system_file = paths && paths->system_file
					     ? strdup(paths->system_file)
					     : path_join(dir, "wafer.conf");
		files->dropin_dir = paths && paths->dropin_dir
					    ? strdup(paths->dropin_dir)
					    : path_join(dir, "conf.d");
		files->user_file = user_config_file(get, &oom);
		oom = oom || !files->system_file || !files->dropin_dir;
	}
	free(dir);
	if (oom) {
		free_chain_files(files);
		return out_of_memory();
	}
	return WAFER_OK;
}

/* The file WAFER_CONFIG names. Absent is fine for the usual places, but
 * this one was asked for by name: a typo should not pass unnoticed. */
static wafer_status load_named_file(struct wafer__config *config,
				    const char *path, bool tolerant)
{
	wafer_status status = wafer__config_load_file(config, path, tolerant);
	if (status != WAFER_OK)
		return status;
	const wafer_config_source *source =
		config->sources.items[config->sources.count - 1];
	if (source->state == WAFER_CONFIG_SOURCE_ABSENT)
		wafer__log_warn("config", "WAFER_CONFIG names %s, which does not exist",
				path);
	return WAFER_OK;
}

static wafer_status load_chain_files(struct wafer__config *config,
				     const struct wafer__config_paths *paths,
				     const char *(*get)(const char *),
				     bool tolerant)
{
	struct chain_files files;
	const char *env_extra = lookup_env(get, "WAFER_CONFIG");
	/* Blanks around the name are trimmed, as for every variable; a
	 * blank-only value counts as unset. */
	char *extra_copy = env_extra ? strdup(env_extra) : NULL;
	if (env_extra && !extra_copy)
		return out_of_memory();
	const char *extra = extra_copy ? trim(extra_copy) : NULL;
	if (extra && !*extra)
		extra = NULL;
	wafer_status status = resolve_chain_files(paths, get, &files);

	if (status != WAFER_OK) {
		free(extra_copy);
		return status;
	}
	status = load_usual_file(config, files.system_file, tolerant);
	if (status == WAFER_OK)
		status = wafer__config_load_dir(config, files.dropin_dir,
						tolerant);
	if (status == WAFER_OK && files.user_file)
		status = load_usual_file(config, files.user_file, tolerant);
	if (status == WAFER_OK && extra)
		status = load_named_file(config, extra, tolerant);
	free_chain_files(&files);
	free(extra_copy);
	return status;
}

wafer_status wafer__config_load_chain(struct wafer__config *config,
				      const struct wafer__config_paths *paths,
				      const wafer_option *options,
				      size_t option_count, bool tolerant)
{
	const char *(*get)(const char *) =
		paths && paths->getenv ? paths->getenv : config_real_getenv;
	wafer_status status = WAFER_OK;

	if (!config)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "config: load_chain needs a config");
	if (!(paths && paths->no_files))
		status = load_chain_files(config, paths, get, tolerant);
	if (status == WAFER_OK)
		status = load_environment(config, get, tolerant);
	if (status == WAFER_OK)
		status = load_options(config, options, option_count, tolerant);
	return status;
}

/*===----------------------------------------------------------------------===
 * Create, set, look up
 *===----------------------------------------------------------------------===*/

wafer_status wafer__config_create(struct wafer__config **out_config)
{
	const size_t count = sizeof config_defaults / sizeof *config_defaults;

	if (!out_config)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "config: create needs out_config");
	*out_config = NULL;
	struct wafer__config *config = calloc(1, sizeof *config);
	if (!config)
		return out_of_memory();
	for (size_t i = 0; i < count; i++) {
		const struct config_default *d = &config_defaults[i];
		wafer_status status = config_store(config, d->section, d->key,
						   d->value, "default");
		if (status != WAFER_OK) {
			wafer__config_destroy(config);
			return status;
		}
	}
	*out_config = config;
	return WAFER_OK;
}

void wafer__config_destroy(struct wafer__config *config)
{
	if (!config)
		return;
	while (config->blocks) {
		struct config_block *next = config->blocks->next;
		free(config->blocks);
		config->blocks = next;
	}
	free(config->entries.items);
	free(config->sources.items);
	wafer__u64map_fini(&config->index);
	free(config);
}

wafer_status wafer__config_set(struct wafer__config *config, const char *section,
			       const char *key, const char *value,
			       const char *origin)
{
	char why[WHY_SIZE];

	if (!config || !section || !key || !value)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "config: set needs a section, a key and a value");
	if (!origin)
		origin = "options";
	if (!check_entry(section, key, value, why))
		return wafer__fail(WAFER_ERROR_CONFIG, "%s: %s", origin, why);
	return config_store(config, section, key, value, origin);
}

const struct wafer__config_entry *
wafer__config_lookup(const struct wafer__config *config, const char *section,
		     const char *key)
{
	if (!config || !section || !key)
		return NULL;
	return find_entry(config, section, key);
}

const char *wafer__config_get(const struct wafer__config *config,
			      const char *section, const char *key,
			      const char *fallback)
{
	const struct wafer__config_entry *entry =
		wafer__config_lookup(config, section, key);
	return entry ? entry->value : fallback;
}

size_t wafer__config_section(const struct wafer__config *config,
			     const char *section,
			     const struct wafer__config_entry **out_entries,
			     size_t capacity)
{
	size_t count = 0;

	if (!config || !section)
		return 0;
	for (size_t i = 0; i < config->entries.count; i++) {
		const struct wafer__config_entry *entry = config->entries.items[i];
		if (strcmp(entry->section, section) != 0)
			continue;
		if (count < capacity)
			out_entries[count] = entry;
		count++;
	}
	return count;
}

size_t wafer__config_source_count(const struct wafer__config *config)
{
	return config ? config->sources.count : 0;
}

const wafer_config_source *
wafer__config_source_at(const struct wafer__config *config, size_t index)
{
	if (!config || index >= config->sources.count)
		return NULL;
	return config->sources.items[index];
}

/*===----------------------------------------------------------------------===
 * Typed getters and lists
 *===----------------------------------------------------------------------===*/

static wafer_status bad_value(const struct wafer__config_entry *entry,
			      const char *expected)
{
	char shown[EXCERPT_SIZE];
	return wafer__fail(WAFER_ERROR_CONFIG, "%s: [%s] %s: expected %s, got '%s'",
			   entry->origin, entry->section, entry->key, expected,
			   excerpt(shown, entry->value));
}

/* Parses the decimal digits at |*text| and advances past them. False on
 * no digits or a value past UINT64_MAX. */
static bool parse_digits(const char **text, uint64_t *out_value)
{
	const char *c = *text;
	uint64_t value = 0;

	if (!is_digit(*c))
		return false;
	for (; is_digit(*c); c++) {
		unsigned digit = (unsigned)(*c - '0');
		if (value > (UINT64_MAX - digit) / 10)
			return false;
		value = value * 10 + digit;
	}
	*text = c;
	*out_value = value;
	return true;
}

wafer_status wafer__config_get_bool(const struct wafer__config *config,
				    const char *section, const char *key,
				    bool fallback, bool *out_value)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off"};
	const struct wafer__config_entry *entry =
		wafer__config_lookup(config, section, key);

	*out_value = fallback;
	if (!entry)
		return WAFER_OK;
	for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
		if (strcasecmp(entry->value, yes[i]) == 0) {
			*out_value = true;
			return WAFER_OK;
		}
		if (strcasecmp(entry->value, no[i]) == 0) {
			*out_value = false;
			return WAFER_OK;
		}
	}
	return bad_value(entry, "a boolean (1/0, true/false, yes/no, on/off)");
}

wafer_status wafer__config_get_uint(const struct wafer__config *config,
				    const char *section, const char *key,
				    uint64_t fallback, uint64_t *out_value)
{
	const struct wafer__config_entry *entry =
		wafer__config_lookup(config, section, key);
	uint64_t value;

	*out_value = fallback;
	if (!entry)
		return WAFER_OK;
	const char *c = entry->value;
	if (!parse_digits(&c, &value) || *c)
		return bad_value(entry,
				 "a decimal integer from 0 to 18446744073709551615");
	*out_value = value;
	return WAFER_OK;
}

static const struct size_suffix {
	const char *name;
	uint64_t scale;
} size_suffixes[] = {
	{"", 1},
	{"B", 1},
	{"K", UINT64_C(1) << 10},
	{"M", UINT64_C(1) << 20},
	{"G", UINT64_C(1) << 30},
	{"T", UINT64_C(1) << 40},
	{"KiB", UINT64_C(1) << 10},
	{"MiB", UINT64_C(1) << 20},
	{"GiB", UINT64_C(1) << 30},
	{"TiB", UINT64_C(1) << 40},
	{"KB", UINT64_C(1000)},
	{"MB", UINT64_C(1000000)},
	{"GB", UINT64_C(1000000000)},
	{"TB", UINT64_C(1000000000000)},
};

wafer_status wafer__config_get_size(const struct wafer__config *config,
				    const char *section, const char *key,
				    uint64_t fallback, uint64_t *out_value)
{
	const struct wafer__config_entry *entry =
		wafer__config_lookup(config, section, key);
	const char *expected =
		"a size in bytes below 16 EiB with an optional suffix "
		"K, M, G, T, KiB, MiB, GiB, TiB (1024) or KB, MB, GB, TB (1000)";
	uint64_t value;

	*out_value = fallback;
	if (!entry)
		return WAFER_OK;
	const char *c = entry->value;
	if (!parse_digits(&c, &value))
		return bad_value(entry, expected);
	while (is_space(*c))
		c++;
	for (size_t i = 0; i < sizeof size_suffixes / sizeof *size_suffixes;
	     i++) {
		const struct size_suffix *s = &size_suffixes[i];
		if (strcasecmp(c, s->name) != 0)
			continue;
		if (value > UINT64_MAX / s->scale)
			return bad_value(entry, expected);
		*out_value = value * s->scale;
		return WAFER_OK;
	}
	return bad_value(entry, expected);
}

/* [+-]digits[.digits][e[+-]digits], at least one digit before the
 * exponent: what strtod takes, minus hex, inf, nan and leading blanks. */
static bool is_decimal_number(const char *c)
{
	size_t digits = 0;

	if (*c == '+' || *c == '-')
		c++;
	for (; is_digit(*c); c++)
		digits++;
	if (*c == '.')
		for (c++; is_digit(*c); c++)
			digits++;
	if (!digits)
		return false;
	if (*c == 'e' || *c == 'E') {
		c++;
		if (*c == '+' || *c == '-')
			c++;
		if (!is_digit(*c))
			return false;
		while (is_digit(*c))
			c++;
	}
	return *c == '\0';
}

wafer_status wafer__config_get_double(const struct wafer__config *config,
				      const char *section, const char *key,
				      double fallback, double *out_value)
{
	const struct wafer__config_entry *entry =
		wafer__config_lookup(config, section, key);
	const char *expected = "a finite decimal number";

	*out_value = fallback;
	if (!entry)
		return WAFER_OK;
	if (!is_decimal_number(entry->value))
		return bad_value(entry, expected);
	/* The file says "0.5" whatever LC_NUMERIC the application chose. */
	locale_t c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	if (!c_locale)
		return out_of_memory();
	locale_t previous = uselocale(c_locale);
	double value = strtod(entry->value, NULL);
	uselocale(previous);
	freelocale(c_locale);
	if (!isfinite(value))
		return bad_value(entry, expected);
	*out_value = value;
	return WAFER_OK;
}

size_t wafer__config_split_list(const char *text, char **out_items,
				size_t capacity)
{
	size_t count = 0;

	for (const char *item = text; item;) {
		const char *comma = strchr(item, ',');
		const char *end = comma ? comma : item + strlen(item);
		const char *next = comma ? comma + 1 : NULL;

		while (item < end && is_space(*item))
			item++;
		while (end > item && is_space(end[-1]))
			end--;
		if (item < end) {
			if (count < capacity) {
				out_items[count] = strndup(item, (size_t)(end - item));
				if (!out_items[count]) {
					for (size_t i = 0; i < count; i++) {
						free(out_items[i]);
						out_items[i] = NULL;
					}
					return 0;
				}
			}
			count++;
		}
		item = next;
	}
	for (size_t i = count; i < capacity; i++)
		out_items[i] = NULL;
	return count;
}
