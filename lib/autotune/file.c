/* wafer — SPDX-License-Identifier: MIT
 *
 * file.c: the persistent cache — one text file per operation,
 * plugin name and version, device name and candidate set, named
 * "<op>-<plugin>-<checksum>.cache" in the cache directory:
 *
 *   wafer-autotune 1
 *   op matmul
 *   plugin cpu 0.1.0
 *   device Intel(R) Xeon(R) CPU @ 2.20GHz
 *   candidates 5c0ffee0d15ea5e5 tile64 tile128 openblas
 *   entry 1,1,1,0 0x0 0x0 1024,1024,1024 openblas 5123456
 *   end 1 0123456789abcdef
 *
 * An entry is a key (dtypes, flags, exact-dims mask, anchored dims), the
 * winning candidate and its best time in ns; `end` counts the entries and
 * carries the FNV-1a hash of every byte before it, so a truncated or
 * altered file is told from a good one. The header must match ours
 * byte for byte: anything else is a foreign file, which is ignored (with
 * a warning) like a corrupted one, and replaced by the next write.
 *
 * Writers: the file is only ever replaced whole, by rename(2) of a
 * temporary file from the same directory, so a reader sees the old file
 * or the new one, never a mix. Writers take an flock(2) on "<file>.lock"
 * and reread the file under it before writing, so two processes tuning
 * different keys at once both keep their choices. */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/autotune/autotune.h"
#include "lib/hash.h"
#include "lib/error.h"
#include "lib/file.h"
#include "lib/log.h"

#define FORMAT_LINE "wafer-autotune 1"
/* A cache file larger than this is not one of ours. */
#define MAX_FILE_BYTES (16u << 20)

/*===----------------------------------------------------------------------===
 * A growable text buffer
 *===----------------------------------------------------------------------===*/

struct text {
	char *data;
	size_t used;
	size_t capacity;
	bool failed; /* out of memory: the text is incomplete */
};

static void text_add(struct text *t, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
static void text_add(struct text *t, const char *format, ...)
{
	va_list ap;

	for (;;) {
		if (t->failed)
			return;
		size_t room = t->capacity - t->used;
		va_start(ap, format);
		int n = vsnprintf(t->data ? t->data + t->used : NULL, room,
				  format, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if ((size_t)n < room) {
			t->used += (size_t)n;
			return;
		}
		size_t capacity = t->capacity ? 2 * t->capacity : 4096;
		while (capacity < t->used + (size_t)n + 1)
			capacity *= 2;
		char *data = realloc(t->data, capacity);
		if (!data) {
			t->failed = true;
			return;
		}
		t->data = data;
		t->capacity = capacity;
	}
}

/* Device names come from plugins: keep the file one record per line. */
static void add_printable(struct text *t, const char *s)
{
	for (; *s; s++)
		text_add(t, "%c", (unsigned char)*s < 0x20 ? '?' : *s);
}

/* The header lines every file of |op| starts with. */
static void add_header(struct text *t, const struct wafer__tune_op *op)
{
	text_add(t, FORMAT_LINE "\nop %s\nplugin ", op->tunable->name);
	add_printable(t, op->device->backend);
	text_add(t, " ");
	add_printable(t, op->device->plugin->version
				 ? op->device->plugin->version
				 : "?");
	text_add(t, "\ndevice ");
	add_printable(t, op->device->info.name);
	text_add(t, "\ncandidates %016" PRIx64, op->checksum);
	for (size_t i = 0; i < op->candidate_count; i++)
		text_add(t, " %s", op->candidates[i].name);
	text_add(t, "\n");
}

/*===----------------------------------------------------------------------===
 * Paths
 *===----------------------------------------------------------------------===*/

wafer_status wafer__tune_file_path(const struct wafer__tune_settings *settings,
				   struct wafer__tune_op *op)
{
	struct text t = {0};

	op->path = NULL;
	if (!settings->cache_dir)
		return WAFER_OK;
	text_add(&t, "%s/%s-", settings->cache_dir, op->tunable->name);
	/* Plugin names are [a-z0-9_]+ (plugin.h); keep the file name safe
	 * whatever a plugin says. */
	for (const char *c = op->device->backend; *c; c++)
		text_add(&t, "%c",
			 ((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9'))
				 ? *c
				 : '_');
	text_add(&t, "-%016" PRIx64 ".cache", op->checksum);
	if (t.failed) {
		free(t.data);
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "autotune: out of host memory");
	}
	op->path = t.data;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Reading
 *===----------------------------------------------------------------------===*/

/* Reads the whole of |path|. *out_data NULL and WAFER_OK: no such file. */
static wafer_status read_file(const char *path, char **out_data,
			      size_t *out_size, char *why, size_t why_size)
{
	int err = wafer__file_read(path, MAX_FILE_BYTES, out_data, out_size);
	if (err == ENOENT)
		return WAFER_OK;
	if (err == EFBIG)
		snprintf(why, why_size, "not a regular file of at most %u bytes",
			 MAX_FILE_BYTES);
	else if (err == ENOMEM)
		snprintf(why, why_size, "out of host memory");
	else if (err)
		snprintf(why, why_size, "cannot open: %s", strerror(err));
	if (err)
		return err == ENOMEM ? WAFER_ERROR_OUT_OF_MEMORY
				     : WAFER_ERROR_IO;
	return WAFER_OK;
}

/* Splits |line| (modified) at single blanks into at most |max| fields. */
static size_t split(char *line, char **fields, size_t max)
{
	size_t n = 0;

	while (n < max) {
		fields[n++] = line;
		char *blank = strchr(line, ' ');
		if (!blank)
			return n;
		*blank = '\0';
		line = blank + 1;
	}
	return max + 1; /* too many */
}

static bool parse_entry(const struct wafer__tune_op *op, char *line,
			struct wafer__tune_file_entry *out)
{
	char *f[8];
	uint64_t ns;
	char *end;

	if (split(line, f, 7) != 7 || strcmp(f[0], "entry") != 0 ||
	    !wafer__tune_key_parse(f[1], f[2], f[3], f[4], &out->key) ||
	    strlen(f[5]) > WAFER_TUNE_NAME_MAX ||
	    !wafer__tune_has_candidate(op, f[5]))
		return false;
	errno = 0;
	if (f[6][0] < '0' || f[6][0] > '9')
		return false;
	ns = strtoull(f[6], &end, 10);
	if (errno || *end)
		return false;
	snprintf(out->winner, sizeof out->winner, "%s", f[5]);
	out->best_ns = ns;
	out->tuned_here = false;
	return true;
}

struct parsed {
	struct wafer__tune_file_entry *entries;
	size_t count;
	size_t capacity;
};

static bool parsed_put(struct parsed *p, const struct wafer__tune_file_entry *e)
{
	for (size_t i = 0; i < p->count; i++) {
		if (memcmp(&p->entries[i].key, &e->key, sizeof e->key) == 0) {
			bool mine = p->entries[i].tuned_here;
			p->entries[i] = *e;
			p->entries[i].tuned_here |= mine;
			return true;
		}
	}
	if (p->count == p->capacity) {
		size_t capacity = p->capacity ? 2 * p->capacity : 16;
		void *grown = realloc(p->entries, capacity * sizeof *p->entries);
		if (!grown)
			return false;
		p->entries = grown;
		p->capacity = capacity;
	}
	p->entries[p->count++] = *e;
	return true;
}

/* Parses |data| (|size| bytes, NUL-terminated, modified) as a file of
 * |op|. On failure writes the reason into |why|. */
static bool parse_file(const struct wafer__tune_op *op, char *data,
		       size_t size, struct parsed *out, char *why,
		       size_t why_size)
{
	struct text header = {0};
	bool good = false;

	add_header(&header, op);
	if (header.failed) {
		snprintf(why, why_size, "out of host memory");
		goto done;
	}
	if (size < header.used || memcmp(data, header.data, header.used) != 0) {
		/* Say which header line differs: the usual foreign file is
		 * one of another plugin version or candidate set. */
		size_t at = 0, start, end;
		char shown[81];
		while (at < header.used && at < size && data[at] == header.data[at])
			at++;
		for (start = at; start > 0 && data[start - 1] != '\n'; start--)
			;
		for (end = start; end < size && data[end] != '\n' &&
				  end - start < sizeof shown - 1;
		     end++)
			shown[end - start] = (unsigned char)data[end] < 0x20 ||
						     (unsigned char)data[end] >= 0x7f
					     ? '?'
					     : data[end];
		shown[end - start] = '\0';
		snprintf(why, why_size,
			 "written for another operation, plugin version, "
			 "device or candidate set, or not a cache file (line "
			 "'%s')",
			 shown);
		goto done;
	}
	/* A NUL byte would end the line scan below early: no file of ours
	 * has one. */
	if (memchr(data, '\0', size)) {
		snprintf(why, why_size, "corrupted: it holds a NUL byte");
		goto done;
	}
	/* The last line is "end <entries> <hash of everything before>":
	 * hash before the entries are parsed, which cuts the text up. */
	if (size == header.used || data[size - 1] != '\n') {
		snprintf(why, why_size, "truncated: no final line break");
		goto done;
	}
	size_t end_start = size - 1;
	while (end_start > header.used && data[end_start - 1] != '\n')
		end_start--;
	if (strncmp(data + end_start, "end ", 4) != 0) {
		snprintf(why, why_size, "truncated: it does not end in an "
			 "'end' line");
		goto done;
	}
	uint64_t hash = wafer__fnv_bytes(WAFER_FNV_INIT, data, end_start);
	data[size - 1] = '\0';
	const char *trailer = data + end_start + 4;

	char *line = data + header.used;
	size_t number = 5, entries = 0;
	while (line < data + end_start) {
		number++;
		char *eol = strchr(line, '\n');
		if (!eol) { /* cannot happen: no NUL, and the end line follows */
			snprintf(why, why_size, "line %zu: malformed entry",
				 number);
			goto done;
		}
		*eol = '\0';
		struct wafer__tune_file_entry e;
		if (!parse_entry(op, line, &e)) {
			snprintf(why, why_size, "line %zu: malformed entry",
				 number);
			goto done;
		}
		if (!parsed_put(out, &e)) {
			snprintf(why, why_size, "out of host memory");
			goto done;
		}
		entries++;
		line = eol + 1;
	}
	char want[64];
	snprintf(want, sizeof want, "%zu %016" PRIx64, entries, hash);
	if (strcmp(trailer, want) != 0) {
		snprintf(why, why_size,
			 "line %zu: the checksum or count does not match the "
			 "contents",
			 number + 1);
		goto done;
	}
	good = true;
done:
	free(header.data);
	return good;
}

/* Replaces op->entries by what |path| holds plus this process's own. */
static void load_locked(struct wafer__tune_op *op)
{
	struct parsed p = {0};
	char why[256] = "";
	char *data;
	size_t size;

	wafer_status status = read_file(op->path, &data, &size, why, sizeof why);
	if (status == WAFER_OK && data &&
	    !parse_file(op, data, size, &p, why, sizeof why)) {
		status = WAFER_ERROR_IO;
		p.count = 0; /* a bad file counts as empty */
	}
	free(data);
	if (status != WAFER_OK && !op->warned) {
		op->warned = true;
		wafer__log_warn("autotune",
				"ignoring cache file %s: %s; it will be "
				"rewritten",
				op->path, why);
	}
	/* Our own choices survive whatever happened to the file. */
	for (size_t i = 0; i < op->entry_count; i++) {
		if (op->entries[i].tuned_here && !parsed_put(&p, &op->entries[i])) {
			free(p.entries);
			return; /* out of memory: keep what we had */
		}
	}
	free(op->entries);
	op->entries = p.entries;
	op->entry_count = p.count;
	op->entry_capacity = p.capacity;
}

void wafer__tune_file_load(struct wafer__tune_op *op)
{
	if (op->path)
		load_locked(op);
}

const struct wafer__tune_file_entry *
wafer__tune_file_find(const struct wafer__tune_op *op,
		      const struct wafer__tune_key *key)
{
	for (size_t i = 0; i < op->entry_count; i++)
		if (memcmp(&op->entries[i].key, key, sizeof *key) == 0)
			return &op->entries[i];
	return NULL;
}

/*===----------------------------------------------------------------------===
 * Writing
 *===----------------------------------------------------------------------===*/

/* mkdir -p for the directory part of |path|. */
static int make_parents(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash || slash == path)
		return 0;
	char *dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return ENOMEM;
	int err = wafer__file_make_dirs(dir, 0755);
	free(dir);
	return err;
}

/* Writes op->entries to a temporary file and renames it over op->path. */
static wafer_status replace_file(const struct wafer__tune_op *op, char *why,
				 size_t why_size)
{
	struct text t = {0};
	char key[256];

	add_header(&t, op);
	for (size_t i = 0; i < op->entry_count; i++) {
		const struct wafer__tune_file_entry *e = &op->entries[i];
		wafer__tune_key_format(&e->key, key, sizeof key);
		text_add(&t, "entry %s %s %" PRIu64 "\n", key, e->winner,
			 e->best_ns);
	}
	uint64_t hash = t.data ? wafer__fnv_bytes(WAFER_FNV_INIT, t.data,
						t.used)
			       : 0;
	text_add(&t, "end %zu %016" PRIx64 "\n", op->entry_count, hash);
	if (t.failed) {
		free(t.data);
		snprintf(why, why_size, "out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}

	size_t len = strlen(op->path);
	char *tmp = malloc(len + 16);
	if (!tmp) {
		free(t.data);
		snprintf(why, why_size, "out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	/* ".<name>.XXXXXX" beside the file: rename stays in one directory. */
	const char *slash = strrchr(op->path, '/');
	size_t dir_len = slash ? (size_t)(slash - op->path) + 1 : 0;
	snprintf(tmp, len + 16, "%.*s.%s.XXXXXX", (int)dir_len, op->path,
		 op->path + dir_len);
	wafer_status status = WAFER_OK;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, why_size, "cannot create %s: %s", tmp,
			 strerror(errno));
		status = WAFER_ERROR_IO;
	} else {
		fchmod(fd, 0644);
		status = wafer__file_write_all(fd, t.data, t.used) == 0
				 ? WAFER_OK
				 : WAFER_ERROR_IO;
		if (status == WAFER_OK && fsync(fd) != 0)
			status = WAFER_ERROR_IO;
		if (close(fd) != 0)
			status = WAFER_ERROR_IO;
		if (status != WAFER_OK)
			snprintf(why, why_size, "cannot write %s: %s", tmp,
				 strerror(errno));
		if (status == WAFER_OK && rename(tmp, op->path) != 0) {
			snprintf(why, why_size, "cannot rename %s: %s", tmp,
				 strerror(errno));
			status = WAFER_ERROR_IO;
		}
		if (status != WAFER_OK)
			unlink(tmp);
	}
	free(tmp);
	free(t.data);
	return status;
}

static bool add_entry(struct wafer__tune_op *op,
		      const struct wafer__tune_file_entry *entry)
{
	struct parsed p = {
		.entries = op->entries,
		.count = op->entry_count,
		.capacity = op->entry_capacity,
	};
	bool ok = parsed_put(&p, entry);

	op->entries = p.entries;
	op->entry_count = p.count;
	op->entry_capacity = p.capacity;
	return ok;
}

wafer_status wafer__tune_file_store(struct wafer__tune_op *op,
				    const struct wafer__tune_file_entry *entry)
{
	char why[512] = "";
	wafer_status status = WAFER_OK;
	int lock_fd = -1;

	if (!add_entry(op, entry))
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "autotune: out of host memory");
	if (!op->path)
		return WAFER_OK;

	int err = make_parents(op->path);
	if (err) {
		snprintf(why, sizeof why, "cannot create its directory: %s",
			 strerror(err));
		status = WAFER_ERROR_IO;
		goto out;
	}
	size_t len = strlen(op->path);
	char *lock_path = malloc(len + 6);
	if (!lock_path) {
		snprintf(why, sizeof why, "out of host memory");
		status = WAFER_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	snprintf(lock_path, len + 6, "%s.lock", op->path);
	lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX) != 0) {
		snprintf(why, sizeof why, "cannot lock %s: %s", lock_path,
			 strerror(errno));
		free(lock_path);
		status = WAFER_ERROR_IO;
		goto out;
	}
	free(lock_path);
	/* Whatever other processes wrote since we last read, merged with
	 * ours (which load_locked keeps). */
	load_locked(op);
	status = replace_file(op, why, sizeof why);
	if (status == WAFER_OK)
		op->warned = false; /* a later bad file is news again */
out:
	if (lock_fd >= 0)
		close(lock_fd); /* drops the flock */
	if (status != WAFER_OK) {
		wafer__log_warn("autotune",
				"cannot write cache file %s: %s; the choice "
				"lasts only for this process",
				op->path, why);
		return wafer__fail(status, "autotune: cache file %s: %s",
				   op->path, why);
	}
	return WAFER_OK;
}
