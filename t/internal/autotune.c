/* wafer — SPDX-License-Identifier: MIT
 *
 * autotune.c: the tuner (include/wafer/autotune.h) on the `tunable` test
 * plugin, whose kernel variants have known costs on a fake device clock
 * (t/plugins/tunable.h), so every choice and every count of benchmark
 * runs below is exact:
 *
 *   anchors and keys; the choice among fast, slow, failing, late-failing
 *   and wrong candidates, with and without a check; every candidate
 *   failing; candidates missing for a dtype; plugin variants as
 *   candidates; malformed tunables; cache hits and their cost; threads;
 *   persistence across processes (the second one measures nothing);
 *   several processes writing one cache at once; corrupted, truncated and
 *   foreign cache files; mode off by option and by WAFER_AUTOTUNE; the
 *   host clock; the mpsc channel; progress output; [autotune] errors.
 *
 * XDG_CACHE_HOME points into a fresh temporary directory; the processes
 * this test starts are itself, run again with a "--child" argument. */
#include "build-config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wafer/autotune.h>
#include <wafer/wafer.h>

#include "t/plugins/tunable.h"
#include "t/client_util.h"
#include "t/tap.h"

static char plugin_path[4096];
static char self_exe[4096];
static char root[4096]; /* temporary directory of this run */

/*===----------------------------------------------------------------------===
 * The operation under test: "work", out = 2 * in
 *===----------------------------------------------------------------------===*/

struct work {
	wafer_handle out, in;
	uint64_t count;
	uint64_t batch; /* an exact dimension of the key */
	wafer_dtype dtype;
	const float *host_in; /* for the check */
};

/* The key's layout flags: 0 but in test_hex_flags. */
static uint32_t work_key_flags;

static wafer_status work_key(const void *inputs, wafer_autotune_key *key)
{
	const struct work *w = inputs;

	key->dtypes[0] = w->dtype;
	key->dim_count = 2;
	key->dims[0] = w->count;
	key->dims[1] = w->batch;
	key->exact_dims = 1u << 1;
	key->flags = work_key_flags;
	return WAFER_OK;
}

/* Lives in the caller's frame until the execute returns (autotune.h). */
static _Thread_local wafer_buffer_binding work_bindings[2];
static _Thread_local struct tunable_params work_params;

static wafer_status work_bind(const void *inputs, wafer_execute_args *args)
{
	const struct work *w = inputs;

	work_bindings[0] = (wafer_buffer_binding){w->out, 0, 0};
	work_bindings[1] = (wafer_buffer_binding){w->in, 0, 0};
	work_params = (struct tunable_params){.count = w->count, .cost = 1};
	args->dtype = w->dtype;
	args->bindings = work_bindings;
	args->binding_count = 2;
	args->params = &work_params;
	args->params_size = sizeof work_params;
	args->global[0] = w->count;
	return WAFER_OK;
}

static wafer_status work_check(wafer_client *client, const void *inputs,
			       const char *candidate, char *why, size_t size)
{
	const struct work *w = inputs;
	float *got = malloc(w->count * sizeof *got);
	wafer_status status = got ? WAFER_OK : WAFER_ERROR_OUT_OF_MEMORY;

	if (status == WAFER_OK)
		status = wafer_read(client, w->out, 0, got,
				    w->count * sizeof *got);
	for (uint64_t i = 0; status == WAFER_OK && i < w->count; i++) {
		if (got[i] != 2 * w->host_in[i]) {
			snprintf(why, size, "out[%" PRIu64 "] is %g, not %g", i,
				 got[i], 2 * w->host_in[i]);
			status = WAFER_ERROR_INTERNAL;
		}
	}
	free(got);
	return status;
}

/* A composition: "fast" twice, so it costs 2 x 2 units. */
static wafer_status work_composed(wafer_client *client, const void *inputs,
				  const void *data)
{
	wafer_execute_args args = {.struct_size = sizeof args};
	wafer_status status = work_bind(inputs, &args);

	args.kernel = TUNABLE_KERNEL;
	args.variant = "fast";
	for (int i = 0; i < 2 && status == WAFER_OK; i++)
		status = wafer_execute(client, &args);
	return status;
}

#define KERNEL_CANDIDATE(name_)                                                \
	{                                                                      \
		.struct_size = sizeof(wafer_autotune_candidate),               \
		.name = name_, .variant = name_,                               \
	}

static const wafer_autotune_candidate work_candidates[] = {
	KERNEL_CANDIDATE("fast"),   KERNEL_CANDIDATE("medium"),
	KERNEL_CANDIDATE("slow"),   KERNEL_CANDIDATE("broken"),
	KERNEL_CANDIDATE("wrong"),
	{
		.struct_size = sizeof(wafer_autotune_candidate),
		.name = "composed",
		.run = work_composed,
	},
};
#define N_WORK (sizeof work_candidates / sizeof work_candidates[0])

static const wafer_tunable work_op = {
	.struct_size = sizeof work_op,
	.name = "work",
	.candidates = work_candidates,
	.candidate_count = N_WORK,
	.kernel = TUNABLE_KERNEL,
	.bind = work_bind,
	.key = work_key,
	.anchor_level = 1,
	.check = work_check,
	.default_candidate = "medium",
};

/* The same without a check: the cheap wrong variant wins. */
static const wafer_tunable work_unchecked = {
	.struct_size = sizeof work_unchecked,
	.name = "work_unchecked",
	.candidates = work_candidates,
	.candidate_count = N_WORK,
	.kernel = TUNABLE_KERNEL,
	.bind = work_bind,
	.key = work_key,
	.anchor_level = 1,
};

static const wafer_autotune_candidate failing_candidates[] = {
	KERNEL_CANDIDATE("broken"),
	KERNEL_CANDIDATE("late"),
	KERNEL_CANDIDATE("wrong"),
};

static const wafer_tunable work_failing = {
	.struct_size = sizeof work_failing,
	.name = "work_failing",
	.candidates = failing_candidates,
	.candidate_count = 3,
	.kernel = TUNABLE_KERNEL,
	.bind = work_bind,
	.key = work_key,
	.anchor_level = 1,
	.check = work_check,
};

/* Kernel candidates only, the default one lacking an f64 kernel. */
static const wafer_tunable work_kernels = {
	.struct_size = sizeof work_kernels,
	.name = "work_kernels",
	.candidates = work_candidates, /* fast, medium */
	.candidate_count = 2,
	.kernel = TUNABLE_KERNEL,
	.bind = work_bind,
	.key = work_key,
	.anchor_level = 1,
	.default_candidate = "fast",
};

/* Every variant of the plugin, behind one listed candidate. */
static const wafer_tunable work_variants = {
	.struct_size = sizeof work_variants,
	.name = "work_variants",
	.candidates = &work_candidates[N_WORK - 1], /* composed */
	.candidate_count = 1,
	.kernel = TUNABLE_KERNEL,
	.flags = WAFER_TUNABLE_KERNEL_VARIANTS,
	.bind = work_bind,
	.key = work_key,
	.anchor_level = 1,
	.check = work_check,
	.default_candidate = "fast",
};

/*===----------------------------------------------------------------------===
 * Helpers
 *===----------------------------------------------------------------------===*/

#define MAX_OPTIONS 12

/* Opens a runtime on the tunable plugin; |extra| holds "section", "key",
 * "value" triples, ended by NULL. */
static wafer_status open_runtime_status(wafer_runtime **out, uint32_t flags,
					const char *const *extra)
{
	wafer_option options[MAX_OPTIONS] = {
		{"core", "backend", "tunable"},
		{"core", "plugin_path", plugin_path},
	};
	size_t n = 2;

	for (; extra && extra[0] && n < MAX_OPTIONS; extra += 3)
		options[n++] = (wafer_option){extra[0], extra[1], extra[2]};
	wafer_runtime_options ro = {
		.struct_size = sizeof ro,
		.options = options,
		.option_count = n,
		.flags = flags | WAFER_RUNTIME_NO_CONFIG_FILES,
	};
	return wafer_runtime_open(&ro, out);
}

static wafer_runtime *open_runtime(const char *const *extra)
{
	wafer_runtime *rt = NULL;

	check(open_runtime_status(&rt, 0, extra), "runtime_open");
	return rt;
}

static wafer_client *open_client(wafer_runtime *rt, const char *channel)
{
	return open_client_on(rt, "tunable", channel);
}

/* Inputs of |count| elements (1, 2, 3, ...) and an output. */
static struct work make_work(wafer_client *client, uint64_t count,
			     uint64_t batch, wafer_dtype dtype)
{
	size_t element = dtype == WAFER_DTYPE_F64 ? sizeof(double)
						  : sizeof(float);
	float *host = malloc(count * sizeof *host);
	double *host64 = malloc(count * sizeof *host64);
	struct work w = {
		.count = count,
		.batch = batch,
		.dtype = dtype,
		.host_in = host,
	};

	if (!host || !host64)
		check(WAFER_ERROR_OUT_OF_MEMORY, "make_work");
	for (uint64_t i = 0; i < count; i++) {
		host[i] = (float)(i + 1);
		host64[i] = (double)(i + 1);
	}
	check(wafer_create(client,
			dtype == WAFER_DTYPE_F64 ? (void *)host64
						 : (void *)host,
			count * element, &w.in),
	      "create in");
	check(wafer_empty(client, count * element, &w.out), "empty out");
	free(host64);
	return w;
}

static void free_work(wafer_client *client, struct work *w)
{
	wafer_release(client, w->in);
	wafer_release(client, w->out);
	free((void *)w->host_in);
}

/* Whether |w|'s output holds 2 * input (f32). */
static int output_right(wafer_client *client, const struct work *w)
{
	char why[128];

	return work_check(client, w, "", why, sizeof why) == WAFER_OK;
}

static wafer_autotune_stats stats_of(wafer_runtime *rt)
{
	wafer_autotune_stats s = {.struct_size = sizeof s};

	check(wafer_autotune_stats_get(rt, &s), "stats_get");
	return s;
}

/* Runs |op| once on a fresh input of |count| elements. */
/* Whether the suite runs on a queueing channel (WAFER_CHANNEL=mpsc), where
 * a launch's failure surfaces at the next sync instead of from the call. */
static bool queued_channel(void)
{
	const char *channel = getenv("WAFER_CHANNEL");
	return channel && strcmp(channel, "mpsc") == 0;
}

static wafer_status run_op(wafer_client *client, const wafer_tunable *op,
			   uint64_t count, uint64_t batch,
			   wafer_autotune_result *result)
{
	struct work w = make_work(client, count, batch, WAFER_DTYPE_F32);
	wafer_status status = wafer_execute_autotune(client, op, &w, result);

	free_work(client, &w);
	return status;
}

static int file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *text = calloc(1, 1 << 20);
	size_t n = 0;

	if (f && text)
		n = fread(text, 1, (1 << 20) - 1, f);
	if (f)
		fclose(f);
	if (text)
		text[n] = '\0';
	return text;
}

static void write_text(const char *path, const char *text, size_t size)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(text, 1, size, f) != size)
		check(WAFER_ERROR_IO, path);
	fclose(f);
}

/* Points the cache at <root>/<name> for runtimes opened from now on. */
static void use_cache(const char *name)
{
	char dir[4200];

	snprintf(dir, sizeof dir, "%s/%s", root, name);
	setenv("XDG_CACHE_HOME", dir, 1);
}

/* use_cache(|name|), then a runtime and a client on the configured
 * channel. */
static wafer_client *open_cached(const char *name, wafer_runtime **out_rt)
{
	use_cache(name);
	*out_rt = open_runtime(NULL);
	return open_client(*out_rt, NULL);
}

static int saved_stderr = -1;
static char capture_path[4200];

/* Sends stderr (the log) to a file until capture_end. */
static void capture_begin(void)
{
	fflush(stderr);
	snprintf(capture_path, sizeof capture_path, "%s/stderr.txt", root);
	int fd = open(capture_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	saved_stderr = dup(2);
	dup2(fd, 2);
	close(fd);
}

static char *capture_end(void)
{
	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	return read_text(capture_path);
}

/*===----------------------------------------------------------------------===
 * Child processes: this program again
 *===----------------------------------------------------------------------===*/

/* Starts this program with |mode| and |arg|; its stdout goes to a pipe
 * whose read end is returned in |*out_fd|; its stdin is |stdin_fd| (-1:
 * left as it is), and |close_fd| (-1: none) is closed in the child. */
static pid_t spawn(const char *mode, const char *arg, int stdin_fd,
		   int close_fd, int *out_fd)
{
	int p[2];

	if (pipe(p) != 0)
		check(WAFER_ERROR_IO, "pipe");
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		if (stdin_fd >= 0) {
			dup2(stdin_fd, 0);
			close(stdin_fd);
		}
		if (close_fd >= 0)
			close(close_fd);
		execl(self_exe, self_exe, "--child", mode, arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	*out_fd = p[0];
	return pid;
}

/* Waits for |pid|; its output into |buf|; returns its exit status. */
static int reap(pid_t pid, int fd, char *buf, size_t size)
{
	size_t used = 0;
	ssize_t n;
	int status = 0;

	while (used + 1 < size && (n = read(fd, buf + used, size - used - 1)) > 0)
		used += (size_t)n;
	buf[used] = '\0';
	close(fd);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* --child persist: tunes (or finds) two keys and reports the counts. */
static int child_persist(void)
{
	wafer_runtime *rt = open_runtime(NULL);
	wafer_client *client = open_client(rt, NULL);
	wafer_autotune_result r1 = {.struct_size = sizeof r1}, r2 = r1;

	check(run_op(client, &work_op, 1000, 1, &r1), "child 1000");
	check(run_op(client, &work_op, 4096, 1, &r2), "child 4096");
	wafer_autotune_stats s = stats_of(rt);
	printf("tuned=%" PRIu64 " runs=%" PRIu64 " disk=%" PRIu64
	       " winner=%s,%s source=%d,%d\n",
	       s.keys_tuned, s.benchmark_runs, s.disk_hits, r1.candidate,
	       r2.candidate, (int)r1.source, (int)r2.source);
	close_default(rt, client);
	return 0;
}

#define WRITER_KEYS 6
#define WRITERS 4
#define SHARED_BATCH 999

/* --child writer N: waits for its stdin to close, then tunes its own
 * WRITER_KEYS keys and one every writer shares, writing the cache file
 * after each. */
static int child_writer(int n)
{
	char c;
	while (read(0, &c, 1) > 0)
		;
	wafer_runtime *rt = open_runtime(NULL);
	wafer_client *client = open_client(rt, NULL);
	for (int k = 0; k < WRITER_KEYS; k++)
		check(run_op(client, &work_op, 256,
			     (uint64_t)(n * WRITER_KEYS + k + 1), NULL),
		      "writer");
	check(run_op(client, &work_op, 256, SHARED_BATCH, NULL), "shared");
	close_default(rt, client);
	return 0;
}

static int child_main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[2], "persist") == 0)
		return child_persist();
	if (argc >= 4 && strcmp(argv[2], "writer") == 0)
		return child_writer(atoi(argv[3]));
	fprintf(stderr, "unknown child mode\n");
	return 2;
}

/*===----------------------------------------------------------------------===
 * Tests
 *===----------------------------------------------------------------------===*/

static void test_anchor(void)
{
	is_int((long long)wafer_autotune_anchor(0, 1), 0, "anchor(0) = 0");
	is_int((long long)wafer_autotune_anchor(1, 1), 1, "anchor(1) = 1");
	is_int((long long)wafer_autotune_anchor(3, 1), 4, "anchor(3) = 4");
	is_int((long long)wafer_autotune_anchor(4, 1), 4, "anchor(4) = 4");
	is_int((long long)wafer_autotune_anchor(1000, 1), 1024,
	       "anchor(1000) = 1024");
	is_int((long long)wafer_autotune_anchor(1025, 1), 2048,
	       "anchor(1025) = 2048");
	is_int((long long)wafer_autotune_anchor(5, 2), 16,
	       "level 2: anchor(5) = 16 (powers of 4)");
	is_int((long long)wafer_autotune_anchor(65, 3), 512,
	       "level 3: anchor(65) = 512 (powers of 8)");
	is_int((long long)wafer_autotune_anchor(1000, 0), 1000,
	       "level 0 keeps a dimension exact");
	ok(wafer_autotune_anchor(UINT64_MAX, 1) == UINT64_C(1) << 63,
	   "a dimension past the largest anchor gets the largest");
	is_int((long long)wafer_autotune_anchor(3, 40), 65536,
	       "levels above 16 count as 16");
}

/* One key: warm-up, check, rounds, elimination, counted exactly. */
static void test_choice(void)
{
	wafer_runtime *rt;
	wafer_client *client = open_cached("choice", &rt);
	wafer_autotune_result r = {.struct_size = sizeof r};
	struct work w = make_work(client, 1000, 1, WAFER_DTYPE_F32);

	is_status(wafer_execute_autotune(client, &work_op, &w, &r), WAFER_OK,
		  "first call tunes");
	is_str(r.candidate, "fast", "fast wins: slow, failing and wrong lose");
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_TUNED, "source: tuned");
	is_int((long long)r.best_ns, 2 * TUNABLE_UNIT_NS,
	       "its best time is read from the device timer");
	ok(output_right(client, &w), "the caller's output is the winner's");
	wafer_autotune_stats s = stats_of(rt);
	is_int((long long)s.keys_tuned, 1, "one key tuned");
	/* 6 warm-ups; round 1: fast, medium, slow, composed; medium (3x),
	 * slow (40x) and composed (2x) are past 1.5x and dropped; rounds 2
	 * and 3: fast alone. */
	is_int((long long)s.benchmark_runs, 6 + 4 + 2,
	       "12 benchmark runs: losers are eliminated after one round");
	is_int((long long)s.disqualified, 2, "broken and wrong disqualified");
	is_int((long long)s.cache_hits, 0, "no hits yet");

	is_status(wafer_execute_autotune(client, &work_op, &w, &r), WAFER_OK,
		  "second call");
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_MEMORY, "source: memory");
	is_str(r.candidate, "fast", "same choice");
	s = stats_of(rt);
	is_int((long long)s.cache_hits, 1, "one cache hit");
	is_int((long long)s.benchmark_runs, 12, "no more benchmark runs");

	/* Without the check the wrong variant is the cheapest. */
	is_status(wafer_execute_autotune(client, &work_unchecked, &w, &r),
		  WAFER_OK, "an operation without a check");
	is_str(r.candidate, "wrong",
	       "without a check the fast wrong candidate wins");

	char path[4096];
	is_status(wafer_autotune_cache_file(client, &work_op, path, sizeof path),
		  WAFER_OK, "cache file path");
	like(path, "/choice/wafer/autotune/work-tunable-",
	     "under $XDG_CACHE_HOME/wafer/autotune/, named by op and plugin");
	ok(file_exists(path), "the cache file was written");
	char small[8];
	is_status(wafer_autotune_cache_file(client, &work_op, small,
					    sizeof small),
		  WAFER_ERROR_OUT_OF_RANGE, "cache file path: buffer too small");
	free_work(client, &w);
	close_default(rt, client);
}

/* Anchored dimensions share a choice; exact ones do not. */
static void test_keys(void)
{
	wafer_runtime *rt;
	wafer_client *client = open_cached("keys", &rt);
	wafer_autotune_result r = {.struct_size = sizeof r};

	check(run_op(client, &work_op, 1000, 1, &r), "1000");
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_TUNED, "count 1000 is tuned");
	check(run_op(client, &work_op, 1024, 1, &r), "1024");
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_MEMORY,
	       "count 1024 shares anchor 1024 with 1000");
	check(run_op(client, &work_op, 513, 1, &r), "513");
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_MEMORY, "so does 513");
	check(run_op(client, &work_op, 1025, 1, &r), "1025");
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_TUNED,
	       "count 1025 anchors to 2048: a new key");
	check(run_op(client, &work_op, 1000, 2, &r), "batch 2");
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_TUNED,
	       "an exact dimension (batch 2 vs 1) is a new key");
	check(run_op(client, &work_op, 1000, 3, &r), "batch 3");
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_TUNED,
	       "batch 3 is not anchored to 4");
	is_int((long long)stats_of(rt).keys_tuned, 4, "four keys tuned");
	close_default(rt, client);
}

static void test_failures(void)
{
	wafer_runtime *rt;
	wafer_client *client = open_cached("failures", &rt);
	wafer_autotune_result r = {.struct_size = sizeof r};

	is_status(run_op(client, &work_failing, 100, 1, &r),
		  WAFER_ERROR_DEVICE, "every candidate failing is an error");
	const char *e = wafer_last_error();
	like(e, "every candidate failed", "the error says so");
	/* A queueing channel (mpsc) reports a launch's failure at the sync
	 * after it, not from the launch call. */
	like(e, queued_channel() ? "broken (sync: WAFER_ERROR_DEVICE"
				 : "broken (run: WAFER_ERROR_DEVICE",
	     "names broken, failing to run");
	like(e, "late (sync: WAFER_ERROR_DEVICE", "names late, failing at sync");
	like(e, "wrong (wrong result", "names wrong, with a wrong result");
	ok(r.candidate == NULL, "no candidate reported");
	is_int((long long)stats_of(rt).keys_tuned, 0, "nothing was tuned");
	struct work w = make_work(client, 100, 1, WAFER_DTYPE_F32);
	is_status(wafer_sync(client), WAFER_OK,
		  "no failure is left behind for the next sync");
	free_work(client, &w);

	/* f64: the plugin has only "medium"; composed runs "fast" f64,
	 * which it lacks, and fails. */
	w = make_work(client, 64, 1, WAFER_DTYPE_F64);
	is_status(wafer_execute_autotune(client, &work_unchecked, &w, &r),
		  WAFER_OK, "f64: tuned among what the device has");
	is_str(r.candidate, "medium",
	       "f64: the only kernel variant there is wins");
	is_status(wafer_execute_autotune(client, &work_failing, &w, &r),
		  WAFER_ERROR_NOT_SUPPORTED,
		  "no candidate available for f64: not supported");
	like(wafer_last_error(), "no candidate is available on tunable:0",
	     "and the error says where");
	is_status(wafer_autotune_execute_candidate(client, &work_op, &w, "fast"),
		  WAFER_ERROR_NOT_SUPPORTED,
		  "execute_candidate: fast has no f64 kernel");
	free_work(client, &w);

	w = make_work(client, 64, 1, WAFER_DTYPE_F32);
	is_status(wafer_autotune_execute_candidate(client, &work_op, &w, "slow"),
		  WAFER_OK, "execute_candidate runs one candidate");
	ok(output_right(client, &w), "and its result is there");
	is_status(wafer_autotune_execute_candidate(client, &work_op, &w, "none"),
		  WAFER_ERROR_NOT_FOUND, "execute_candidate: unknown name");
	free_work(client, &w);
	close_default(rt, client);
}

static void test_variants(void)
{
	wafer_runtime *rt;
	wafer_client *client = open_cached("variants", &rt);
	const char *names[16];
	size_t n = 0;

	is_status(wafer_autotune_candidates(client, &work_variants, names, 16,
					    &n),
		  WAFER_OK, "candidates of an operation with plugin variants");
	is_int((long long)n, 7, "the listed one and six variants");
	if (n == 7) {
		is_str(names[0], "composed", "listed candidates come first");
		is_str(names[1], "fast", "then the plugin's, in its order");
		is_str(names[6], "wrong", "every f32 variant");
	}
	wafer_autotune_result r = {.struct_size = sizeof r};
	check(run_op(client, &work_variants, 300, 1, &r), "variants");
	is_str(r.candidate, "fast", "fast wins among the plugin's variants");
	wafer_autotune_stats s = stats_of(rt);
	is_int((long long)s.disqualified, 3, "broken, late and wrong lose");
	is_int((long long)s.benchmark_runs, 7 + 4 + 2,
	       "7 warm-ups, 4 in round one, then fast alone");
	is_status(wafer_autotune_candidates(client, &work_variants, NULL, 0, &n),
		  WAFER_OK, "counting only");
	is_int((long long)n, 7, "still 7");
	close_default(rt, client);
}

static wafer_status nop_run(wafer_client *client, const void *inputs,
			    const void *data)
{
	return WAFER_OK;
}

static wafer_status nop_key(const void *inputs, wafer_autotune_key *key)
{
	key->dtypes[0] = WAFER_DTYPE_F32;
	key->dim_count = 3;
	key->dims[0] = key->dims[1] = key->dims[2] = *(const uint64_t *)inputs;
	return WAFER_OK;
}

/* Two candidates: a single one would need no tuning and no cache. */
static const wafer_autotune_candidate nop_candidates[] = {
	{.struct_size = sizeof nop_candidates[0], .name = "nop", .run = nop_run},
	{.struct_size = sizeof nop_candidates[0], .name = "nop2", .run = nop_run},
};

static const wafer_tunable nop_op = {
	.struct_size = sizeof nop_op,
	.name = "nop",
	.candidates = nop_candidates,
	.candidate_count = 2,
	.key = nop_key,
	.anchor_level = 1,
};

static void test_malformed(void)
{
	wafer_runtime *rt = open_runtime(NULL);
	wafer_client *client = open_client(rt, NULL);
	uint64_t size = 8;
	wafer_tunable op = nop_op;

	op.key = NULL;
	is_status(wafer_execute_autotune(client, &op, &size, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "no key function");
	like(wafer_last_error(), "no key function", "named");

	wafer_autotune_candidate two[2] = {nop_candidates[0], nop_candidates[0]};
	op = nop_op;
	op.name = "twice";
	op.candidates = two;
	op.candidate_count = 2;
	is_status(wafer_execute_autotune(client, &op, &size, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "duplicate candidate names");
	like(wafer_last_error(), "two candidates are named nop", "named");

	two[1].name = "both";
	two[1].variant = "fast";
	is_status(wafer_execute_autotune(client, &op, &size, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "variant and run both set");
	like(wafer_last_error(), "exactly one of variant", "named");

	two[1].run = NULL;
	is_status(wafer_execute_autotune(client, &op, &size, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "a kernel candidate, no kernel");
	op.kernel = TUNABLE_KERNEL;
	is_status(wafer_execute_autotune(client, &op, &size, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "a kernel candidate, no bind");
	like(wafer_last_error(), "needs the operation's bind", "named");

	two[1].name = "has blank";
	is_status(wafer_execute_autotune(client, &op, &size, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "a name with a blank");
	op = nop_op;
	op.name = "../escape";
	is_status(wafer_execute_autotune(client, &op, &size, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "an operation name that would leave the cache directory");
	is_status(wafer_execute_autotune(NULL, &nop_op, &size, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "NULL client");
	wafer_autotune_result small = {.struct_size = 4};
	is_status(wafer_execute_autotune(client, &nop_op, &size, &small),
		  WAFER_ERROR_INVALID_ARGUMENT, "result struct too small");
	wafer_autotune_stats s = {.struct_size = 2};
	is_status(wafer_autotune_stats_get(rt, &s),
		  WAFER_ERROR_INVALID_ARGUMENT, "stats struct_size too small");
	/* An older caller's stats struct: only what it has is written. */
	struct {
		size_t struct_size;
		uint64_t keys_tuned;
		uint64_t canary;
	} old = {offsetof(wafer_autotune_stats, benchmark_runs), 0, 77};
	is_status(wafer_autotune_stats_get(rt, (wafer_autotune_stats *)&old),
		  WAFER_OK, "stats into an older, shorter struct");
	is_int((long long)old.canary, 77, "nothing written past it");

	/* Last: the tuner knows operations by address, and this one is on
	 * the stack. */
	op = nop_op;
	op.name = "single";
	op.candidate_count = 1;
	wafer_autotune_result r = {.struct_size = sizeof r};
	is_status(wafer_execute_autotune(client, &op, &size, &r), WAFER_OK,
		  "a single candidate");
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_DEFAULT,
	       "a single candidate runs as the default, unmeasured");
	is_int((long long)stats_of(rt).benchmark_runs, 0, "no benchmark runs");
	close_default(rt, client);
}

/* The tuner's own cost on a hit, with a candidate that does nothing. */
static void test_hit_cost(void)
{
	wafer_runtime *rt = open_runtime(NULL);
	wafer_client *client = open_client(rt, "direct");
	uint64_t size = 4096;
	/* Many short batches, the fastest counts: a batch that another
	 * process's time slice lands in is slower, not the tuner. */
	const int calls = 10000, batches = 100;
	double best = 1e30;

	check(wafer_execute_autotune(client, &nop_op, &size, NULL), "nop");
	uint64_t runs_after_tuning = stats_of(rt).benchmark_runs;
	for (int batch = 0; batch < batches; batch++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int i = 0; i < calls; i++)
			wafer_execute_autotune(client, &nop_op, &size, NULL);
		clock_gettime(CLOCK_MONOTONIC, &b);
		double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 +
			     (double)(b.tv_nsec - a.tv_nsec)) /
			    calls;
		if (ns < best)
			best = ns;
	}
	/* The cost is reported, not judged: timings belong to benchmarks,
	 * and this machine may be loaded. */
	diag("cache hit: %.1f ns per wafer_execute_autotune (fastest batch)",
	     best);
	is_int((long long)stats_of(rt).cache_hits, (long long)batches * calls,
	       "every call after the first was a cache hit");
	is_int((long long)stats_of(rt).benchmark_runs,
	       (long long)runs_after_tuning, "  ... and ran no benchmark");
	close_default(rt, client);
}

#define THREADS 4
#define THREAD_KEYS 8

struct thread_job {
	wafer_runtime *rt;
	int failures;
};

/* Each thread has its own client (its own queue and fake clock, so no
 * thread's launches land inside another's timed runs) and runs every
 * key many times. */
static void *thread_main(void *arg)
{
	struct thread_job *job = arg;
	wafer_client *client = open_client(job->rt, "mutex");
	struct work w[THREAD_KEYS];

	for (int k = 0; k < THREAD_KEYS; k++)
		w[k] = make_work(client, 64, (uint64_t)k + 1, WAFER_DTYPE_F32);
	for (int i = 0; i < 200; i++) {
		for (int k = 0; k < THREAD_KEYS; k++) {
			wafer_autotune_result r = {.struct_size = sizeof r};
			/* fast, or the default (medium) while another
			 * thread measures (nobody waits for that). */
			if (wafer_execute_autotune(client, &work_op, &w[k],
						   &r) != WAFER_OK ||
			    (strcmp(r.candidate, "fast") != 0 &&
			     (strcmp(r.candidate, "medium") != 0 ||
			      r.source != WAFER_AUTOTUNE_SOURCE_DEFAULT)))
				job->failures++;
		}
	}
	for (int k = 0; k < THREAD_KEYS; k++) {
		if (!output_right(client, &w[k]))
			job->failures++;
		free_work(client, &w[k]);
	}
	wafer_client_close(client);
	return NULL;
}

static void test_threads(void)
{
	use_cache("threads");
	wafer_runtime *rt = open_runtime(NULL);
	pthread_t threads[THREADS];
	struct thread_job jobs[THREADS];
	int failures = 0;

	for (int t = 0; t < THREADS; t++) {
		jobs[t] = (struct thread_job){.rt = rt};
		pthread_create(&threads[t], NULL, thread_main, &jobs[t]);
	}
	for (int t = 0; t < THREADS; t++) {
		pthread_join(threads[t], NULL);
		failures += jobs[t].failures;
	}
	is_int(failures, 0, "%d threads x %d keys: every call chose fast, "
	       "or the default while another thread measured",
	       THREADS, THREAD_KEYS);
	wafer_autotune_stats s = stats_of(rt);
	is_int((long long)s.keys_tuned, THREAD_KEYS,
	       "each key was tuned exactly once");
	is_int((long long)(s.cache_hits + s.keys_tuned + s.disk_hits +
			   s.default_runs),
	       (long long)THREADS * 200 * THREAD_KEYS,
	       "every other call was a hit or a default run");
	wafer_runtime_close(rt);
}

/* A thread measuring a key does not make another thread wait: the
 * measuring thread's candidate waits until a second client's call of the
 * same operation has returned (as a collective waits for the other rank,
 * examples/mlp --data-parallel=2), which it does at once with the
 * default. Before, the second call waited for the tuner's lock, held
 * through the measurement: a deadlock, bounded here at 30 s. */
static pthread_mutex_t handshake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t handshake_cond = PTHREAD_COND_INITIALIZER;
static bool measuring_started, second_returned;

static wafer_status handshake_run(wafer_client *client, const void *inputs,
				  const void *data)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	pthread_mutex_lock(&handshake_lock);
	if (!measuring_started) { /* the first run waits, the rest do not */
		measuring_started = true;
		pthread_cond_broadcast(&handshake_cond);
		while (!second_returned &&
		       pthread_cond_timedwait(&handshake_cond, &handshake_lock,
					      &until) == 0)
			;
	}
	pthread_mutex_unlock(&handshake_lock);
	return WAFER_OK;
}

static const wafer_autotune_candidate handshake_candidates[] = {
	{.struct_size = sizeof handshake_candidates[0], .name = "first",
	 .run = handshake_run},
	{.struct_size = sizeof handshake_candidates[0], .name = "second",
	 .run = handshake_run},
};

static const wafer_tunable handshake_op = {
	.struct_size = sizeof handshake_op,
	.name = "handshake",
	.candidates = handshake_candidates,
	.candidate_count = 2,
	.key = nop_key,
	.anchor_level = 1,
	.default_candidate = "second",
};

struct handshake_job {
	wafer_client *client;
	wafer_status status;
};

static void *handshake_measure(void *arg)
{
	struct handshake_job *job = arg;
	uint64_t size = 4;

	job->status = wafer_execute_autotune(job->client, &handshake_op, &size,
					     NULL);
	return NULL;
}

static void test_no_wait_for_measuring(void)
{
	use_cache("handshake");
	wafer_runtime *rt = open_runtime(NULL);
	struct handshake_job job = {.client = open_client(rt, "mutex")};
	wafer_client *other = open_client(rt, "mutex");
	wafer_autotune_result r = {.struct_size = sizeof r};
	uint64_t size = 4;
	pthread_t thread;

	if (pthread_create(&thread, NULL, handshake_measure, &job))
		bail_out("pthread_create");
	pthread_mutex_lock(&handshake_lock);
	while (!measuring_started)
		pthread_cond_wait(&handshake_cond, &handshake_lock);
	pthread_mutex_unlock(&handshake_lock);
	wafer_status st = wafer_execute_autotune(other, &handshake_op, &size,
						 &r);
	pthread_mutex_lock(&handshake_lock);
	second_returned = true;
	pthread_cond_broadcast(&handshake_cond);
	pthread_mutex_unlock(&handshake_lock);
	pthread_join(thread, NULL);
	is_status(st, WAFER_OK, "a call while another thread measures the key");
	ok(r.candidate && strcmp(r.candidate, "second") == 0 &&
		   r.source == WAFER_AUTOTUNE_SOURCE_DEFAULT,
	   "  ... runs the default at once, untuned (%s)",
	   r.candidate ? r.candidate : "none");
	is_status(job.status, WAFER_OK, "the measuring thread finishes");
	is_int((long long)stats_of(rt).keys_tuned, 1, "  ... and tuned the key");
	wafer_client_close(job.client);
	wafer_client_close(other);
	wafer_runtime_close(rt);
}

static void test_persistence(void)
{
	char out[512];
	int fd;

	wafer_runtime *rt;
	wafer_client *client = open_cached("persist", &rt);
	wafer_autotune_result r = {.struct_size = sizeof r};
	check(run_op(client, &work_op, 1000, 1, &r), "1000");
	check(run_op(client, &work_op, 4096, 1, &r), "4096");
	is_int((long long)stats_of(rt).keys_tuned, 2, "first process: 2 keys");
	close_default(rt, client);

	pid_t pid = spawn("persist", "", -1, -1, &fd);
	is_int(reap(pid, fd, out, sizeof out), 0, "second process ran");
	like(out, "tuned=0 runs=0 disk=2 winner=fast,fast source=1,1",
	     "second process: zero benchmark runs, both choices from disk");

	/* And a second runtime in this process reads it just the same. */
	rt = open_runtime(NULL);
	client = open_client(rt, "mpsc");
	check(run_op(client, &work_op, 1000, 1, &r), "again");
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_DISK, "new runtime: from disk");
	is_int((long long)r.best_ns, 2 * TUNABLE_UNIT_NS,
	       "with the time measured then");
	wafer_autotune_stats s = stats_of(rt);
	is_int((long long)s.benchmark_runs, 0, "new runtime: no benchmarks");
	is_int((long long)s.disk_hits, 1, "one disk hit");
	/* A new key on the mpsc channel: timers go through the runner. */
	check(run_op(client, &work_op, 8192, 1, &r), "mpsc");
	is_str(r.candidate, "fast", "tuned on mpsc with device timers");
	is_int((long long)r.best_ns, 2 * TUNABLE_UNIT_NS,
	       "device time through the mpsc channel");
	is_int((long long)stats_of(rt).benchmark_runs, 12,
	       "the same 12 runs as on a direct client");
	close_default(rt, client);
}

/* Flags that print with a hex letter (0xa) are read back, and the other
 * keys of the file stay (they were once "malformed": retuned in every
 * process, and the rewrite dropped the file's other keys). */
static void test_hex_flags(void)
{
	wafer_autotune_result r = {.struct_size = sizeof r};

	wafer_runtime *rt;
	wafer_client *client = open_cached("hexflags", &rt);
	check(run_op(client, &work_op, 1000, 1, &r), "flags 0");
	work_key_flags = 0xa;
	check(run_op(client, &work_op, 1000, 1, &r), "flags 0xa");
	work_key_flags = 0xbeef0;
	check(run_op(client, &work_op, 1000, 1, &r), "flags 0xbeef0");
	is_int((long long)stats_of(rt).keys_tuned, 3, "three keys tuned");
	close_default(rt, client);

	capture_begin();
	rt = open_runtime(NULL);
	client = open_client(rt, NULL);
	for (uint32_t flags = 0; flags < 3; flags++) {
		work_key_flags = flags == 0 ? 0 : flags == 1 ? 0xa : 0xbeef0;
		check(run_op(client, &work_op, 1000, 1, &r), "again");
		is_int(r.source, WAFER_AUTOTUNE_SOURCE_DISK,
		       "flags 0x%x: read back from the file", work_key_flags);
	}
	work_key_flags = 0;
	wafer_autotune_stats s = stats_of(rt);
	close_default(rt, client);
	char *log = capture_end();
	is_int((long long)s.keys_tuned, 0, "second runtime tunes nothing");
	is_int((long long)s.disk_hits, 3, "all three keys from disk");
	ok(!strstr(log, "ignoring"), "no key is called malformed");
	free(log);
}

static void test_writers(void)
{
	int start[2], fds[WRITERS];
	pid_t pids[WRITERS];
	char out[256];
	char arg[16];

	use_cache("writers");
	if (pipe(start) != 0)
		check(WAFER_ERROR_IO, "pipe");
	for (int i = 0; i < WRITERS; i++) {
		snprintf(arg, sizeof arg, "%d", i);
		pids[i] = spawn("writer", arg, start[0], start[1], &fds[i]);
	}
	close(start[0]);
	close(start[1]); /* go */
	int failed = 0;
	for (int i = 0; i < WRITERS; i++)
		failed += reap(pids[i], fds[i], out, sizeof out) != 0;
	is_int(failed, 0, "%d processes tuned into one cache at once", WRITERS);

	capture_begin();
	wafer_runtime *rt = open_runtime(NULL);
	wafer_client *client = open_client(rt, NULL);
	for (int n = 0; n < WRITERS; n++)
		for (int k = 0; k < WRITER_KEYS; k++)
			check(run_op(client, &work_op, 256,
				     (uint64_t)(n * WRITER_KEYS + k + 1),
				     NULL),
			      "reader");
	check(run_op(client, &work_op, 256, SHARED_BATCH, NULL), "shared");
	wafer_autotune_stats s = stats_of(rt);
	close_default(rt, client);
	char *log = capture_end();
	is_int((long long)s.keys_tuned, 0,
	       "no key is lost: a later process tunes nothing");
	is_int((long long)s.disk_hits, WRITERS * WRITER_KEYS + 1,
	       "every writer's keys and the shared one are in the file");
	ok(!strstr(log, "ignoring"), "the merged file is well-formed");
	free(log);
}

/* Damages the cache file of work_op with |damage|, then expects the next
 * runtime to warn with |warning|, retune, and leave a good file. */
static void check_damage(const char *what, void (*damage)(const char *path),
			 const char *warning)
{
	char path[4096];
	wafer_autotune_result r = {.struct_size = sizeof r};

	wafer_runtime *rt;
	wafer_client *client = open_cached("damage", &rt);
	check(run_op(client, &work_op, 1000, 1, &r), "prepare");
	check(wafer_autotune_cache_file(client, &work_op, path, sizeof path),
	      "path");
	close_default(rt, client);

	damage(path);
	capture_begin();
	rt = open_runtime(NULL);
	client = open_client(rt, NULL);
	wafer_status status = run_op(client, &work_op, 1000, 1, &r);
	wafer_autotune_stats s = stats_of(rt);
	close_default(rt, client);
	char *log = capture_end();
	is_status(status, WAFER_OK, "%s: the call works", what);
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_TUNED, "%s: the key is retuned",
	       what);
	is_int((long long)s.keys_tuned, 1, "%s: one key tuned", what);
	like(log, "ignoring cache file", "%s: warned", what);
	like(log, warning, "%s: the warning says why", what);
	free(log);

	rt = open_runtime(NULL);
	client = open_client(rt, NULL);
	check(run_op(client, &work_op, 1000, 1, &r), "after");
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_DISK,
	       "%s: the file was rewritten and is read again", what);
	close_default(rt, client);
	unlink(path);
}

static void damage_garbage(const char *path)
{
	write_text(path, "\x7f" "ELF\x02\x01\x01\x00 not a cache\n", 20);
}

static void damage_truncate(const char *path)
{
	char *text = read_text(path);
	char *end = strstr(text, "end ");
	write_text(path, text, end ? (size_t)(end - text) : 0);
	free(text);
}

static void damage_flip(const char *path)
{
	char *text = read_text(path);
	char *entry = strstr(text, "entry ");
	if (entry)
		entry[6] = entry[6] == '1' ? '2' : '1'; /* the first dtype */
	write_text(path, text, strlen(text));
	free(text);
}

static void damage_foreign(const char *path)
{
	char *text = read_text(path);
	char *version = strstr(text, "plugin tunable 1.0.0");
	if (version)
		memcpy(version, "plugin tunable 0.9.0", 20);
	write_text(path, text, strlen(text));
	free(text);
}

/* A NUL byte inside an entry line once made every later process crash. */
static void damage_nul(const char *path)
{
	char *text = read_text(path);
	size_t size = strlen(text);
	char *entry = strstr(text, "entry ");
	if (entry)
		entry[7] = '\0';
	write_text(path, text, size);
	free(text);
}

/* A FIFO at the cache file's path once blocked the open for ever: it is
 * refused as not a regular file (SIGALRM ends the test if it blocks). */
static void damage_fifo(const char *path)
{
	unlink(path);
	if (mkfifo(path, 0600) != 0)
		diag("mkfifo %s: %s", path, strerror(errno));
}

static void test_damage(void)
{
	alarm(120);
	check_damage("a FIFO", damage_fifo, "not a regular file");
	alarm(0);
	check_damage("a NUL byte in an entry", damage_nul, "NUL byte");
	check_damage("garbage", damage_garbage, "not a cache file");
	check_damage("truncated", damage_truncate, "truncated");
	check_damage("a changed entry", damage_flip, "checksum");
	check_damage("another plugin version", damage_foreign,
		     "plugin tunable 0.9.0");
}

static void test_off(void)
{
	static const char *const off[] = {"autotune", "mode", "off", NULL};
	char path[4096];
	char dir[4200];

	use_cache("off");
	wafer_runtime *rt = open_runtime(off);
	wafer_client *client = open_client(rt, NULL);
	wafer_autotune_result r = {.struct_size = sizeof r};
	struct work w = make_work(client, 1000, 1, WAFER_DTYPE_F32);

	is_status(wafer_execute_autotune(client, &work_op, &w, &r), WAFER_OK,
		  "mode off");
	is_str(r.candidate, "medium", "off: the documented default runs");
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_DEFAULT, "source: default");
	ok(output_right(client, &w), "off: its result is right");
	check(wafer_execute_autotune(client, &work_op, &w, &r), "again");
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_DEFAULT, "still the default");
	check(wafer_execute_autotune(client, &work_unchecked, &w, &r),
	      "unchecked");
	is_str(r.candidate, "fast",
	       "off, no default named: the first available candidate");
	free_work(client, &w);
	w = make_work(client, 16, 1, WAFER_DTYPE_F64);
	check(wafer_execute_autotune(client, &work_kernels, &w, &r), "f64");
	is_str(r.candidate, "medium",
	       "off, the default lacks the dtype: the first available one");
	free_work(client, &w);
	wafer_autotune_stats s = stats_of(rt);
	is_int((long long)s.benchmark_runs, 0, "off: no benchmark runs");
	is_int((long long)s.default_runs, 4, "four default runs");
	is_status(wafer_autotune_cache_file(client, &work_op, path, sizeof path),
		  WAFER_ERROR_NOT_FOUND, "off: no cache file");
	snprintf(dir, sizeof dir, "%s/off", root);
	ok(!file_exists(dir), "off: nothing was written");
	close_default(rt, client);

	setenv("WAFER_AUTOTUNE", "off", 1);
	rt = open_runtime(NULL);
	unsetenv("WAFER_AUTOTUNE");
	client = open_client(rt, NULL);
	check(run_op(client, &work_op, 100, 1, &r), "env off");
	is_int(r.source, WAFER_AUTOTUNE_SOURCE_DEFAULT,
	       "WAFER_AUTOTUNE=off turns tuning off");
	is_str(wafer_runtime_config_value(rt, "autotune", "mode", NULL), "off",
	       "and shows as [autotune] mode");
	close_default(rt, client);
}

/*===----------------------------------------------------------------------===
 * A host clock the test drives
 *===----------------------------------------------------------------------===*/

/* The tuner's host timer reads clock_gettime(CLOCK_MONOTONIC), and the
 * tunable plugin with `sleep = 1` spends each launch's cost in nanosleep.
 * This program defines both (t/local.mk links it with -rdynamic, so the
 * library and the plugin call these): while host_clock_fake is set,
 * CLOCK_MONOTONIC reads fake_now_ns and nanosleep adds to it and returns
 * at once, so what the host timer measures is exactly what the launches
 * "slept", whatever else the machine does. Otherwise both go to the
 * kernel, the clock shifted by clock_offset_ns so that it never runs
 * backwards after a fake stretch. */
static int host_clock_fake;
static uint64_t fake_now_ns, clock_offset_ns, fake_sleeps;

static uint64_t kernel_monotonic_ns(void)
{
	struct timespec ts;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) +
	       (uint64_t)ts.tv_nsec;
}

/* Default visibility: the build hides symbols, and these must stand in
 * for libc's in the library and the plugin. */
#define EXPORTED __attribute__((visibility("default")))

EXPORTED int clock_gettime(clockid_t id, struct timespec *ts)
{
	uint64_t ns;

	if (id != CLOCK_MONOTONIC)
		return (int)syscall(SYS_clock_gettime, id, ts);
	if (__atomic_load_n(&host_clock_fake, __ATOMIC_ACQUIRE))
		ns = __atomic_load_n(&fake_now_ns, __ATOMIC_ACQUIRE);
	else
		ns = kernel_monotonic_ns() +
		     __atomic_load_n(&clock_offset_ns, __ATOMIC_ACQUIRE);
	ts->tv_sec = (time_t)(ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
	return 0;
}

EXPORTED int nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (!__atomic_load_n(&host_clock_fake, __ATOMIC_ACQUIRE))
		return (int)syscall(SYS_nanosleep, req, rem);
	__atomic_add_fetch(&fake_now_ns,
			   (uint64_t)req->tv_sec * UINT64_C(1000000000) +
				   (uint64_t)req->tv_nsec,
			   __ATOMIC_ACQ_REL);
	__atomic_add_fetch(&fake_sleeps, 1, __ATOMIC_ACQ_REL);
	if (rem)
		*rem = (struct timespec){0, 0};
	return 0;
}

static void fake_host_clock(bool on)
{
	uint64_t now = kernel_monotonic_ns();

	if (on) {
		__atomic_store_n(&fake_now_ns, now + clock_offset_ns,
				 __ATOMIC_RELEASE);
		__atomic_store_n(&host_clock_fake, 1, __ATOMIC_RELEASE);
		return;
	}
	if (fake_now_ns > now + clock_offset_ns)
		__atomic_store_n(&clock_offset_ns, fake_now_ns - now,
				 __ATOMIC_RELEASE);
	__atomic_store_n(&host_clock_fake, 0, __ATOMIC_RELEASE);
}

static void test_host_clock(void)
{
	static const char *const host[] = {"autotune", "timer", "host",
					   "tunable", "sleep", "1", NULL};

	use_cache("host");
	wafer_runtime *rt = open_runtime(host);
	wafer_client *client = open_client(rt, NULL);
	wafer_autotune_result r = {.struct_size = sizeof r};

	/* A batch of 10 on the host clock: fast "sleeps" 2 units per call,
	 * medium 6, composed 4, each unit TUNABLE_SLEEP_NS of the fake
	 * clock; the device timers (TUNABLE_UNIT_NS a unit) are not used. */
	fake_host_clock(true);
	check(run_op(client, &work_op, 100, 10, &r), "host clock");
	fake_host_clock(false);
	is_str(r.candidate, "fast", "host clock: fast wins");
	is_int((long long)r.best_ns, 2 * TUNABLE_SLEEP_NS,
	       "  ... its time is the host clock's, per call, not the "
	       "device timer's");
	ok(fake_sleeps > 0, "  ... measured over launches that slept (%" PRIu64
	   ")", fake_sleeps);
	is_int((long long)stats_of(rt).benchmark_runs, 12,
	       "  ... in the same 12 runs as with device timers");
	close_default(rt, client);
}

static void test_settings(void)
{
	static const char *const always[] = {"autotune", "progress", "always",
					     "autotune", "mode", "full", NULL};
	static const char *const bad[][4] = {
		{"autotune", "mode", "sometimes", "expected off, fast or full"},
		{"autotune", "samples", "0", "samples: expected 1 to"},
		{"autotune", "warmup", "many", "warmup"},
		{"autotune", "eliminate_ratio", "0.5", "above 1"},
		{"autotune", "timer", "wall", "expected auto or host"},
		{"autotune", "progress", "sometimes", "auto, always or never"},
		{"autotune", "colour", "blue", "unknown key 'colour' in [autotune]"},
	};
	char moved[4200], path[4096];
	wafer_runtime *rt;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *extra[] = {bad[i][0], bad[i][1], bad[i][2], NULL};
		rt = NULL;
		is_status(open_runtime_status(&rt, 0, extra), WAFER_ERROR_CONFIG,
			  "[autotune] %s = %s is refused", bad[i][1], bad[i][2]);
		like(wafer_last_error(), bad[i][3], "with the reason");
		ok(rt == NULL, "and no runtime");
	}
	const char *tolerated[] = {"autotune", "mode", "sometimes", NULL};
	capture_begin();
	wafer_status status = open_runtime_status(
		&rt, WAFER_RUNTIME_TOLERATE_CONFIG_ERRORS, tolerated);
	char *log = capture_end();
	is_status(status, WAFER_OK, "tolerant: a bad mode is only a warning");
	like(log, "using the default", "which says so");
	free(log);
	wafer_runtime_close(rt);

	snprintf(moved, sizeof moved, "%s/moved/here", root);
	const char *dir[] = {"autotune", "cache_dir", moved, NULL};
	rt = open_runtime(dir);
	wafer_client *client = open_client(rt, NULL);
	check(run_op(client, &work_op, 100, 1, NULL), "moved");
	check(wafer_autotune_cache_file(client, &work_op, path, sizeof path),
	      "path");
	ok(strncmp(path, moved, strlen(moved)) == 0 && file_exists(path),
	   "[autotune] cache_dir moves the cache (%s)", path);
	close_default(rt, client);

	use_cache("progress");
	rt = open_runtime(always);
	client = open_client(rt, NULL);
	capture_begin();
	wafer_autotune_result r = {.struct_size = sizeof r};
	status = run_op(client, &work_op, 100, 1, &r);
	log = capture_end();
	is_status(status, WAFER_OK, "mode full");
	is_str(r.candidate, "fast", "full: fast wins too");
	like(log, "wafer autotune: work float32 128x1: measuring 6 candidates",
	     "progress = always: a line when tuning starts");
	like(log, "wafer autotune: work float32 128x1: fast (2 us)",
	     "and one with the choice");
	/* full: 3 warm-ups each (broken stops at its first, or on a
	 * queueing channel at the sync after its three) = 16 or 18; round
	 * one runs fast, medium, slow and composed; only slow (40x) is past
	 * 4x the best, so 9 more rounds run fast, medium (3x) and composed
	 * (2x). */
	wafer_autotune_stats s = stats_of(rt);
	is_int((long long)s.benchmark_runs,
	       (queued_channel() ? 18 : 16) + 4 + 9 * 3,
	       "full: more warm-ups and rounds, a wider margin (%" PRIu64 ")",
	       s.benchmark_runs);
	free(log);
	close_default(rt, client);
}

int main(int argc, char **argv)
{
	const char *builddir = getenv("T_BUILDDIR");
	ssize_t n;

	if (!builddir) {
		printf("Bail out! T_BUILDDIR is not set (run through make check)\n");
		return 1;
	}
	snprintf(plugin_path, sizeof plugin_path, "%s/plugins/.libs", builddir);
	n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
	if (n <= 0) {
		printf("Bail out! /proc/self/exe: %s\n", strerror(errno));
		return 1;
	}
	self_exe[n] = '\0';
	if (argc >= 2 && strcmp(argv[1], "--child") == 0)
		return child_main(argc, argv);

	snprintf(root, sizeof root, "%s/autotune-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	unsetenv("WAFER_AUTOTUNE");

	test_anchor();
	test_choice();
	test_keys();
	test_failures();
	test_variants();
	test_malformed();
	test_hit_cost();
	test_threads();
	test_no_wait_for_measuring();
	test_persistence();
	test_writers();
	test_hex_flags();
	test_damage();
	test_off();
	test_host_clock();
	test_settings();

	char command[4200];
	snprintf(command, sizeof command, "rm -rf '%s'", root);
	if (!tap_failed && system(command) != 0)
		diag("could not remove %s", root);
	else if (tap_failed)
		diag("left %s for a look", root);
	done_testing();
	return exit_status();
}
