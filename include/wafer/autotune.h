/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * autotune.h: pick the fastest of several ways to run an operation, by
 * measuring them once per input shape and device, and remember the choice
 * in memory and on disk (see wafer_execute_autotune(3), wafer-autotune(7)).
 *
 * A tunable operation (wafer_tunable) is
 *  - candidates: plugin kernel variants named by (kernel, variant) and run
 *    through wafer_execute, and/or client-side functions that may issue
 *    any number of wafer calls (a composition of kernels); with
 *    WAFER_TUNABLE_KERNEL_VARIANTS every variant the device's plugin lists
 *    for the operation's kernel is a candidate too;
 *  - a key function: reduces the inputs to what decides which candidate is
 *    fastest — dtypes, shape dimensions, layout flags. The tuner anchors
 *    each dimension to a power of two (anchor_level sets how coarse) and
 *    adds the device, so a shape of 1000x1000 and one of 1024x1024 share
 *    one measurement;
 *  - optionally a check that tells a right result from a wrong one.
 *
 *   static const wafer_autotune_candidate cands[] = {
 *       {sizeof cands[0], "blocked", .variant = "blocked"},
 *       {sizeof cands[0], "two_pass", .run = my_two_pass},
 *   };
 *   static const wafer_tunable my_op = {
 *       .struct_size = sizeof my_op, .name = "my_op",
 *       .candidates = cands, .candidate_count = 2, .kernel = "my_op",
 *       .bind = my_bind, .key = my_key, .anchor_level = 1,
 *   };
 *   wafer_execute_autotune(client, &my_op, &my_inputs, NULL);
 *
 * First call for a key: every candidate available on the device runs
 * `warmup` times and, if a check is given, is checked; then the survivors
 * run in rounds, each run timed with the plugin's device timers where it
 * offers them (WAFER_CAP_DEVICE_TIMERS) or else between two syncs with the
 * host clock; after every round a candidate whose best time is more than
 * `eliminate_ratio` times the best candidate's is dropped. The candidate
 * with the smallest minimum wins. One that fails (an error from running
 * it or from the sync after it) or gives a wrong answer is disqualified
 * for that key, which is not an error; only when every candidate is
 * disqualified does the call fail, naming each one and why.
 *
 * Later calls with a key of the same anchor look the choice up in an
 * in-memory table without taking a lock: the tuner's own cost on that path
 * is a call of the key function, a hash and a probe (well under 100 ns).
 *
 * Persistence: choices are written to one file per operation, plugin name
 * and version, device name and candidate set under
 * $XDG_CACHE_HOME/wafer/autotune/ ($HOME/.cache/wafer/autotune/ when it is
 * unset; `[autotune] cache_dir` moves it). A file is replaced atomically
 * (temporary file, then rename) under an advisory lock, merging what other
 * processes wrote meanwhile, so any number of processes may tune into one
 * directory at once. A second process with the same cache measures
 * nothing. A corrupted file, or one written for another plugin version,
 * device or candidate set, is ignored with a warning and rewritten.
 *
 * Mode (WAFER_AUTOTUNE or `[autotune] mode`): `fast` (default) measures
 * few samples and drops slow candidates early; `full` measures more and
 * keeps candidates longer; `off` measures nothing, reads and writes no
 * file, and always runs the operation's default candidate (see
 * wafer_tunable.default_candidate).
 *
 * Contract for candidates: every candidate of an operation computes the
 * same result from the same inputs, and may be run several times in a row
 * on them (its outputs do not alias its inputs), since tuning runs each
 * one repeatedly on the caller's own inputs and finally runs the winner
 * once more to leave its result in the outputs.
 *
 * Threads: wafer_execute_autotune may be called from any number of threads
 * (on clients whose channel allows it), and never waits for another
 * thread's measurement: while one thread measures a key of an operation on
 * a device, another thread needing a key of that operation there runs the
 * default candidate for that call (source WAFER_AUTOTUNE_SOURCE_DEFAULT,
 * nothing recorded) and gets the tuned choice on a later call. Waiting
 * could deadlock: the measuring thread synchronises its client's queue,
 * whose work may wait for the other thread's (a collective between two
 * clients, comm.h). Threads that hit the cache never wait. */
#ifndef WAFER_AUTOTUNE_H
#define WAFER_AUTOTUNE_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/types.h>
#include <wafer/wafer.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===
 * Keys
 *===----------------------------------------------------------------------===*/

#define WAFER_AUTOTUNE_MAX_DTYPES 4
#define WAFER_AUTOTUNE_MAX_DIMS 8

/* What decides which candidate is fastest. The tuner zeroes the struct
 * (and sets struct_size) before it calls the key function, so unused
 * members are 0. */
typedef struct wafer_autotune_key {
	size_t struct_size;
	/* Element types of the inputs and outputs, in an order the operation
	 * chooses; unused ones WAFER_DTYPE_NONE. */
	wafer_dtype dtypes[WAFER_AUTOTUNE_MAX_DTYPES];
	/* Shape dimensions (matmul: m, n, k), anchored by the tuner unless
	 * their bit is set in exact_dims (a batch of 1 is not a batch of 2). */
	uint32_t dim_count;
	uint64_t dims[WAFER_AUTOTUNE_MAX_DIMS];
	uint32_t exact_dims;
	/* Layout flags of the operation's own (transposed, strided, ...):
	 * compared as they are. */
	uint32_t flags;
} wafer_autotune_key;

/* The anchor of dimension |x| at |level|: the smallest power of 2^level
 * at or above |x| (level 1: 1, 2, 4, 8, ...; level 2: 1, 4, 16, 64, ...).
 * Level 0 keeps |x| exact; levels above 16 count as 16; 0 stays 0, and
 * an |x| above the largest anchor that fits in 64 bits anchors to that
 * one. */
WAFER_API uint64_t wafer_autotune_anchor(uint64_t x, uint32_t level);

/*===----------------------------------------------------------------------===
 * Tunable operations
 *===----------------------------------------------------------------------===*/

/* Runs a client-side candidate: any wafer calls on |client| that compute
 * the operation on |inputs| (what was passed to wafer_execute_autotune).
 * |data| is the candidate's own. Return WAFER_OK or the status of the
 * call that failed. It may return before the work ran (the tuner syncs). */
typedef wafer_status (*wafer_autotune_run_fn)(wafer_client *client,
					      const void *inputs,
					      const void *data);

/* Fills the execute arguments of a kernel candidate from |inputs|:
 * dtype, bindings, parameters and launch shape. The tuner then sets
 * kernel and variant to the candidate's and calls wafer_execute. |args|
 * arrives zeroed with struct_size set; pointers stored in it must stay
 * valid until the call after bind returns (point into |inputs|). */
typedef wafer_status (*wafer_autotune_bind_fn)(const void *inputs,
					       wafer_execute_args *args);

/* Reduces |inputs| to |key| (see wafer_autotune_key). Must be cheap — it
 * runs on every call — and must not call into wafer. */
typedef wafer_status (*wafer_autotune_key_fn)(const void *inputs,
					      wafer_autotune_key *key);

/* Judges the result candidate |candidate| left in the outputs of |inputs|
 * (the client was synchronised after it ran): WAFER_OK when right, any
 * other status when wrong, with the reason written to |why| (|why_size|
 * bytes, NUL-terminated). The check may read handles through |client|. */
typedef wafer_status (*wafer_autotune_check_fn)(wafer_client *client,
						const void *inputs,
						const char *candidate,
						char *why, size_t why_size);

/* One candidate. Exactly one of |variant| (a kernel candidate) and |run|
 * (a client-side candidate) is set. */
typedef struct wafer_autotune_candidate {
	size_t struct_size;
	/* Unique within the operation: printable, no blanks, at most 63
	 * bytes. Stored in the cache; part of the candidate-set checksum. */
	const char *name;
	/* Kernel candidate: the plugin kernel (NULL: the operation's
	 * |kernel|) and its variant. A candidate whose kernel the device
	 * lacks for the dtype bind chose is unavailable for that key: it is
	 * skipped, which is no failure. */
	const char *kernel;
	const char *variant;
	/* Client-side candidate. */
	wafer_autotune_run_fn run;
	const void *data;
	/* Since wafer 0.2 (struct_size says whether a caller has it): a
	 * kernel candidate given by ref — a program kernel
	 * (wafer_program_kernel, program.h) or one from wafer_kernel_find —
	 * of the client that runs the operation; kernel and variant are
	 * then ignored. It is launched with what bind chose, like any
	 * kernel candidate, and read from this array at every run, so the
	 * caller may replace it (a program created again); a ref of another
	 * client, or of a released program, disqualifies the candidate. */
	const wafer_kernel_ref *kernel_ref;
} wafer_autotune_candidate;

/* wafer_tunable.flags */
/* Every variant the device's plugin lists for |kernel| (any dtype) is a
 * candidate too, named after the variant, after the listed candidates
 * (a listed candidate of the same name takes its place). */
#define WAFER_TUNABLE_KERNEL_VARIANTS (1u << 0)

/* A tunable operation. The tuner keeps pointers to it, its candidates and
 * their strings for the life of the runtime and identifies the operation
 * by its address: define it static const. */
typedef struct wafer_tunable {
	size_t struct_size;
	/* Operation name, [A-Za-z0-9_.-]+ (at most 63 bytes): in cache file
	 * names, log lines and errors. */
	const char *name;
	const wafer_autotune_candidate *candidates;
	size_t candidate_count;
	/* The plugin kernel of kernel candidates that name none, and whose
	 * variants WAFER_TUNABLE_KERNEL_VARIANTS adds. */
	const char *kernel;
	uint32_t flags;
	/* Required when there are kernel candidates. */
	wafer_autotune_bind_fn bind;
	/* Required. */
	wafer_autotune_key_fn key;
	/* How coarse the anchors of the key's dimensions are (see
	 * wafer_autotune_anchor); 0 keeps them exact. */
	uint32_t anchor_level;
	/* Optional. */
	wafer_autotune_check_fn check;
	/* The candidate mode `off` runs, by name: NULL (or a name that is
	 * unavailable for the key) means the first available candidate in
	 * order — the listed candidates, then the plugin's variants, whose
	 * first is the plugin's default. */
	const char *default_candidate;
} wafer_tunable;

/*===----------------------------------------------------------------------===
 * Running
 *===----------------------------------------------------------------------===*/

/* Where wafer_execute_autotune's choice came from. */
typedef enum wafer_autotune_source {
	WAFER_AUTOTUNE_SOURCE_MEMORY = 0, /* in-memory cache hit */
	WAFER_AUTOTUNE_SOURCE_DISK = 1,   /* read from the persistent cache */
	WAFER_AUTOTUNE_SOURCE_TUNED = 2,  /* measured by this call */
	/* Mode off, or only one candidate available for the key: the
	 * default candidate, nothing measured. */
	WAFER_AUTOTUNE_SOURCE_DEFAULT = 3,
} wafer_autotune_source;

typedef struct wafer_autotune_result {
	size_t struct_size;
	/* Name of the candidate that ran; lives as long as the runtime. */
	const char *candidate;
	wafer_autotune_source source;
	/* Best measured time of that candidate for this key, in nanoseconds
	 * (from the measurement or the cache file); 0 in mode off. */
	uint64_t best_ns;
} wafer_autotune_result;

/* Runs the fastest candidate of |op| on |inputs|, tuning first when this
 * key has not been measured on the client's device (see the top of this
 * header for how, and what it costs). |out_result| may be NULL.
 *
 * Errors: WAFER_ERROR_INVALID_ARGUMENT for a malformed |op| (no key
 * function, duplicate or malformed candidate names, kernel candidates and
 * no bind), naming the problem; WAFER_ERROR_NOT_SUPPORTED when no
 * candidate is available on the device for the key; when every available
 * candidate failed or was wrong, the first one's status, with every
 * candidate and its reason in wafer_last_error(). After a successful
 * choice, the status of running the chosen candidate. A failure to read or
 * write the cache file is logged, never returned. */
WAFER_API wafer_status wafer_execute_autotune(wafer_client *client,
					      const wafer_tunable *op,
					      const void *inputs,
					      wafer_autotune_result *out_result);

/* Runs candidate |candidate| of |op| on |inputs|, without tuning or
 * caching: for benchmarks that compare candidates and for tests.
 * WAFER_ERROR_NOT_FOUND when |op| has no such candidate, and
 * WAFER_ERROR_NOT_SUPPORTED when it is unavailable for |inputs|. */
WAFER_API wafer_status wafer_autotune_execute_candidate(wafer_client *client,
							const wafer_tunable *op,
							const void *inputs,
							const char *candidate);

/* Names of the candidates of |op| on the client's device, in order (the
 * listed ones, then the plugin's variants). Stores up to |capacity| names
 * (living as long as the runtime) and the total in |*out_count|. */
WAFER_API wafer_status wafer_autotune_candidates(wafer_client *client,
						 const wafer_tunable *op,
						 const char **out_names,
						 size_t capacity,
						 size_t *out_count);

/* The path of the persistent cache file of |op| on the client's device,
 * written into |buf| (|size| bytes) whether or not it exists yet.
 * WAFER_ERROR_NOT_FOUND when there is none: mode off, or no cache
 * directory could be determined; WAFER_ERROR_OUT_OF_RANGE when |size| is
 * too small. */
WAFER_API wafer_status wafer_autotune_cache_file(wafer_client *client,
						 const wafer_tunable *op,
						 char *buf, size_t size);

/*===----------------------------------------------------------------------===
 * Statistics
 *===----------------------------------------------------------------------===*/

/* Counts since the runtime was opened, over all its clients. */
typedef struct wafer_autotune_stats {
	size_t struct_size;
	/* Keys measured (tuned) in this process. */
	uint64_t keys_tuned;
	/* Candidate runs made to measure: warm-ups and timed samples. */
	uint64_t benchmark_runs;
	/* Calls answered from the in-memory cache. */
	uint64_t cache_hits;
	/* Keys whose choice came from the persistent cache file. */
	uint64_t disk_hits;
	/* Candidates disqualified (failed or wrong) while tuning a key. */
	uint64_t disqualified;
	/* Calls that ran the default candidate (mode off, or the only one
	 * available for the key). */
	uint64_t default_runs;
} wafer_autotune_stats;

WAFER_API wafer_status wafer_autotune_stats_get(const wafer_runtime *runtime,
						wafer_autotune_stats *out_stats);

#ifdef __cplusplus
}
#endif

#endif /* WAFER_AUTOTUNE_H */
