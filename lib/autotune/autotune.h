/* wafer — SPDX-License-Identifier: MIT
 *
 * autotune.h: the tuner behind include/wafer/autotune.h. One tuner per
 * runtime, created with it (so a bad `[autotune]` value fails the open),
 * shared by every client and device of the runtime. Its parts, one file
 * each:
 *
 *   autotune.c  the public entries; operation states (a tunable on
 *               one device: its resolved candidates and its cache file);
 *               the slow path that finds or measures a choice
 *   settings.c  the [autotune] section and the environment
 *   key.c       keys: anchoring, hashing, text form
 *   index.c     the in-memory choices: lock-free lookups
 *   file.c      the persistent cache: read, merge, atomic write
 *   bench.c     measuring candidates: warm-up, checks, timed rounds,
 *               elimination, progress
 *
 * Locking: lookups in the index take no lock. Everything else — creating
 * operation states, reading and writing files, inserting into the index —
 * runs under the tuner's one (recursive) lock. Measuring does not: it
 * synchronises the client's queue, whose work may wait for another
 * client's (a collective between the two), and that client may be about
 * to look up a key of its own. So while one thread measures a key of an
 * operation on a device, another thread wanting a key of that operation
 * there runs the default candidate for that call, untuned and not
 * recorded, instead of waiting; the measuring thread itself may measure
 * again inside a candidate (a candidate that calls
 * wafer_execute_autotune). */
#ifndef WAFER_CORE_AUTOTUNE_H
#define WAFER_CORE_AUTOTUNE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <wafer/autotune.h>
#include <wafer/wafer.h>

#include "lib/config.h"
#include "lib/runtime.h"

/* Names of operations and candidates: at most this many bytes. */
#define WAFER_TUNE_NAME_MAX 63
/* Candidates per operation, listed and plugin variants together. */
#define WAFER_TUNE_MAX_CANDIDATES 256

/*===----------------------------------------------------------------------===
 * Settings (settings.c)
 *===----------------------------------------------------------------------===*/

enum wafer__tune_mode {
	WAFER_TUNE_OFF,
	WAFER_TUNE_FAST,
	WAFER_TUNE_FULL,
};

enum wafer__tune_progress {
	WAFER_TUNE_PROGRESS_AUTO,   /* stderr is a terminal, tuning > 1 s */
	WAFER_TUNE_PROGRESS_ALWAYS, /* every tuning, terminal or not */
	WAFER_TUNE_PROGRESS_NEVER,
};

struct wafer__tune_settings {
	enum wafer__tune_mode mode;
	/* Candidate runs before timing, and timed rounds. */
	unsigned warmup;
	unsigned samples;
	/* After a round, drop candidates slower than ratio x the best. */
	double eliminate_ratio;
	/* Time with the host clock even where device timers are offered. */
	bool host_timer;
	enum wafer__tune_progress progress;
	/* Directory of the cache files, or NULL: no persistence. */
	char *cache_dir;
	/* Where cache_dir came from, for messages. */
	char cache_dir_origin[64];
};

/* Reads `[autotune]` from |config| (WAFER_AUTOTUNE arrives there as
 * `mode`) and the cache directory from cache_dir, XDG_CACHE_HOME or HOME.
 * A malformed value is WAFER_ERROR_CONFIG naming its origin; with
 * |tolerant| it is logged and the default used instead. */
wafer_status wafer__tune_settings_load(const struct wafer__config *config,
				       bool tolerant,
				       struct wafer__tune_settings *out);
void wafer__tune_settings_fini(struct wafer__tune_settings *settings);
const char *wafer__tune_mode_name(enum wafer__tune_mode mode);

/*===----------------------------------------------------------------------===
 * Keys (key.c)
 *===----------------------------------------------------------------------===*/

/* A key as the tuner keeps it: anchored, unused members zero, no padding
 * with undefined bytes, so that memcmp compares and the words hash. */
struct wafer__tune_key {
	uint32_t dtypes[WAFER_AUTOTUNE_MAX_DTYPES];
	uint32_t dim_count;
	uint32_t exact_dims;
	uint32_t flags;
	uint32_t reserved; /* 0 */
	uint64_t dims[WAFER_AUTOTUNE_MAX_DIMS];
};

/* Checks the key function's |in| and anchors it into |out|. */
wafer_status wafer__tune_key_make(const wafer_tunable *tunable,
				  const wafer_autotune_key *in,
				  struct wafer__tune_key *out);

/* Hash of a key for one operation on one device. */
uint64_t wafer__tune_key_hash(const struct wafer__tune_key *key,
			      const void *tunable, const void *device);

/* "f32,f32,f32 1024x1024x1024" plus " flags=0x3" when set: for messages. */
void wafer__tune_key_describe(const struct wafer__tune_key *key, char *buf,
			      size_t size);

/* The key's fields in the cache file: "1,1,1,0 0x0 0x0 1024,1024,1024",
 * and back. parse returns false on anything malformed. */
void wafer__tune_key_format(const struct wafer__tune_key *key, char *buf,
			    size_t size);
bool wafer__tune_key_parse(const char *dtypes, const char *flags,
			   const char *exact, const char *dims,
			   struct wafer__tune_key *out);


/*===----------------------------------------------------------------------===
 * Operation states (autotune.c)
 *===----------------------------------------------------------------------===*/

/* One resolved candidate of an operation on a device. Strings are the
 * tuner's own copies: a plugin's table goes away when its device closes. */
struct wafer__tune_candidate {
	char *name;
	char *kernel;  /* kernel candidates */
	char *variant; /* NULL: a client-side candidate or a ref */
	/* A kernel candidate given by ref (a program kernel's): kernel and
	 * variant are NULL, and the ref is read from the tunable's
	 * candidate |listed| at every run, so that the caller may replace
	 * it (a program re-created on another client). */
	bool by_ref;
	size_t listed;
	wafer_autotune_run_fn run;
	const void *data;
};

/* A choice read from or written to the cache file. */
struct wafer__tune_file_entry {
	struct wafer__tune_key key;
	char winner[WAFER_TUNE_NAME_MAX + 1];
	uint64_t best_ns;
	bool tuned_here; /* measured by this process: never dropped */
};

/* A tunable on one device. Created on first use, freed with the tuner;
 * candidates never move, so index entries point into them. */
struct wafer__tune_op {
	struct wafer__tune_op *next;
	const wafer_tunable *tunable;
	const struct wafer_runtime_device *device;
	struct wafer__tune_candidate *candidates;
	size_t candidate_count;
	/* Of the format version, operation, plugin name and version, device
	 * name and candidate names: names the cache file. */
	uint64_t checksum;
	/* Cache file, or NULL when there is no persistence. */
	char *path;
	/* The choices of the file as last read, plus ours. */
	struct wafer__tune_file_entry *entries;
	size_t entry_count;
	size_t entry_capacity;
	/* A bad file was reported once already. */
	bool warned;
	/* The thread measuring a key of this operation on this device, and
	 * how deep (a candidate may tune a key of its own), under the
	 * tuner's lock; measuring_depth 0: none. */
	pthread_t measuring_owner;
	unsigned measuring_depth;
};

/* Whether |op| has a candidate called |name|. */
bool wafer__tune_has_candidate(const struct wafer__tune_op *op,
			       const char *name);

/* Runs |candidate| of |tunable| on |inputs|. */
wafer_status wafer__tune_run(wafer_client *client, const wafer_tunable *tunable,
			     const struct wafer__tune_candidate *candidate,
			     const void *inputs);

/*===----------------------------------------------------------------------===
 * The in-memory index (index.c)
 *===----------------------------------------------------------------------===*/

/* A choice. Immutable once published. */
struct wafer__tune_choice {
	uint64_t hash;
	const wafer_tunable *tunable;
	const struct wafer_runtime_device *device;
	struct wafer__tune_key key;
	const struct wafer__tune_candidate *winner;
	wafer_autotune_source source; /* DEFAULT, or how it was first found */
	uint64_t best_ns;
};

struct wafer__tune_table;

struct wafer__tune_index {
	struct wafer__tune_table *_Atomic current;
	/* Tables replaced by a larger one: readers may still be in them, so
	 * they are freed with the index. */
	struct wafer__tune_table *retired;
};

wafer_status wafer__tune_index_init(struct wafer__tune_index *index);
/* Frees the tables and every choice. No lookup may be running. */
void wafer__tune_index_fini(struct wafer__tune_index *index);

/* The choice for (tunable, device, key) with |hash|, or NULL. Lock-free;
 * safe against a concurrent insert. */
const struct wafer__tune_choice *
wafer__tune_index_find(const struct wafer__tune_index *index, uint64_t hash,
		       const wafer_tunable *tunable, const void *device,
		       const struct wafer__tune_key *key);

/* Publishes a copy of |choice|. Callers hold the tuner's lock (one writer
 * at a time) and looked the key up first. */
wafer_status wafer__tune_index_insert(struct wafer__tune_index *index,
				      const struct wafer__tune_choice *choice,
				      const struct wafer__tune_choice **out);

/*===----------------------------------------------------------------------===
 * The persistent cache (file.c)
 *===----------------------------------------------------------------------===*/

/* Sets op->path (NULL when |settings| has no cache directory). */
wafer_status wafer__tune_file_path(const struct wafer__tune_settings *settings,
				   struct wafer__tune_op *op);

/* Rereads op->path into op->entries, keeping the entries tuned here. A
 * missing file is no problem; a corrupted or foreign one is reported
 * (once per operation) as a warning and ignored. Never fails: at worst
 * op->entries holds only this process's choices. */
void wafer__tune_file_load(struct wafer__tune_op *op);

/* Adds |entry| to op->entries and rewrites the file: under an flock on
 * "<path>.lock" it rereads the file, merges, writes a temporary file in
 * the same directory and renames it over the old one. A failure is
 * logged as a warning and returned (the caller goes on regardless). */
wafer_status wafer__tune_file_store(struct wafer__tune_op *op,
				    const struct wafer__tune_file_entry *entry);

/* The entry for |key| in op->entries, or NULL. */
const struct wafer__tune_file_entry *
wafer__tune_file_find(const struct wafer__tune_op *op,
		      const struct wafer__tune_key *key);

/*===----------------------------------------------------------------------===
 * Measuring (bench.c)
 *===----------------------------------------------------------------------===*/

struct wafer__tune_stats {
	_Atomic uint64_t keys_tuned;
	_Atomic uint64_t benchmark_runs;
	_Atomic uint64_t cache_hits;
	_Atomic uint64_t disk_hits;
	_Atomic uint64_t disqualified;
	_Atomic uint64_t default_runs;
};

struct wafer__tune_bench {
	wafer_client *client;
	const wafer_tunable *tunable;
	const struct wafer__tune_op *op;
	const void *inputs;
	const struct wafer__tune_settings *settings;
	struct wafer__tune_stats *stats;
	/* Indices into op->candidates of the candidates available for the
	 * key, in order. */
	const size_t *available;
	size_t available_count;
	/* Key as text, for progress, log lines and errors. */
	const char *key_text;
	/* Time with timer_begin/timer_end instead of the host clock. */
	bool device_timers;
};

/* Measures the available candidates and returns the winner (an index
 * into op->candidates) and its best time. When every candidate failed,
 * returns the first failure's status with each candidate's reason. */
wafer_status wafer__tune_measure(const struct wafer__tune_bench *bench,
				 size_t *out_winner, uint64_t *out_best_ns);

/*===----------------------------------------------------------------------===
 * The tuner
 *===----------------------------------------------------------------------===*/

struct wafer__tuner {
	struct wafer__tune_settings settings;
	struct wafer__tune_index index;
	struct wafer__tune_stats stats;
	pthread_mutex_t lock; /* recursive; see the top of this file */
	struct wafer__tune_op *ops;
	/* "no cache directory" was logged. */
	bool warned_no_dir;
};

wafer_status wafer__tuner_create(const struct wafer__config *config,
				 bool tolerant, struct wafer__tuner **out_tuner);
void wafer__tuner_destroy(struct wafer__tuner *tuner);

#endif
