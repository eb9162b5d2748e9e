/* wafer — SPDX-License-Identifier: MIT
 *
 * faults.c: fault injection. A scenario that goes through the client,
 * the operations, donation and autotune (create, add, an in-place relu
 * with donation, a tuned matmul, reads, releases) runs again and again on
 * the cpu plugin behind t/plugins/faulty.c, which fails the k-th storage
 * allocation, virtual-memory map or copy, for k = 1, 2, ... until the
 * scenario makes fewer than k such calls. Without sanitizers, the k-th
 * host malloc (calloc, realloc) made while the scenario runs fails too,
 * through malloc wrappers in this program. For every k:
 *   - each failing call returns an error (none crashes or hangs);
 *   - the same call made again works (the fault happens once);
 *   - the results are right, and once every handle is released the
 *     client holds no memory (under ASan, LSan checks the host side).
 * Clients use the `mutex` channel so that a failure belongs to the call
 * that met it (on `mpsc` it would surface at the next sync). */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>

#include <wafer/ops.h>
#include <wafer/wafer.h>

#include "t/tap.h"
#include "t/client_util.h"

#define N 256  /* elements of the vectors */
#define M 8    /* the matmul is M x M */
#define MAX_K 400

static char plugin_path[4096], faulty_so[4200];
static _Atomic uint64_t *faulty_calls;

/*===----------------------------------------------------------------------===
 * Host malloc faults (not under sanitizers, which own malloc)
 *===----------------------------------------------------------------------===*/

#ifndef WAFER_SANITIZED
#define HOST_FAULTS 1
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *ptr, size_t size);

static _Atomic bool malloc_armed;
static _Atomic uint64_t malloc_calls, malloc_fail_at;

static bool malloc_fails(void)
{
	if (!atomic_load_explicit(&malloc_armed, memory_order_relaxed))
		return false;
	uint64_t n = atomic_fetch_add(&malloc_calls, 1) + 1;
	return n == atomic_load(&malloc_fail_at);
}

/* Default visibility: the build hides symbols, and these must stand in
 * for the C library's in libwafer and the plugins. */
#define EXPORTED __attribute__((visibility("default")))

EXPORTED void *malloc(size_t size)
{
	if (malloc_fails()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(size);
}

EXPORTED void *calloc(size_t n, size_t size)
{
	if (malloc_fails()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_calloc(n, size);
}

EXPORTED void *realloc(void *ptr, size_t size)
{
	if (malloc_fails()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_realloc(ptr, size);
}
#else
#define HOST_FAULTS 0
#endif

/*===----------------------------------------------------------------------===
 * The scenario
 *===----------------------------------------------------------------------===*/

struct outcome {
	int failures;   /* calls that failed (and then worked again) */
	int broken;     /* a retry failed, or a result was wrong */
	char why[512];
};

/* Runs |call| (an expression); when it fails, counts the failure and
 * runs it once more, which must work. */
#define STEP(o, what, call)                                                    \
	do {                                                                   \
		if ((call) != WAFER_OK) {                                      \
			(o)->failures++;                                       \
			wafer_status again_ = (call);                          \
			if (again_ != WAFER_OK && !(o)->broken++)               \
				snprintf((o)->why, sizeof (o)->why,            \
					 "%s failed twice: %s", what,          \
					 wafer_last_error());                  \
		}                                                              \
	} while (0)

static void scenario(wafer_client *c, struct outcome *o)
{
	static float a[N], b[N], want[N], x[M * M], w[M * M], xw[M * M];
	float got[N], got_mm[M * M];
	const uint64_t n = N, mm[2] = {M, M};
	wafer_tensor ta = {0}, tb = {0}, tc = {0}, tx = {0}, tw = {0},
		     tm = {0};

	for (int i = 0; i < N; i++) {
		a[i] = (float)(i % 17) - 8.0f;
		b[i] = (float)(i % 5) - 1.5f;
		want[i] = a[i] + b[i] > 0 ? a[i] + b[i] : 0;
	}
	for (int i = 0; i < M * M; i++) {
		x[i] = (float)(i % 7) - 3.0f;
		w[i] = (float)(i % 3);
	}
	for (int i = 0; i < M; i++)
		for (int j = 0; j < M; j++) {
			float s = 0;
			for (int k = 0; k < M; k++)
				s += x[i * M + k] * w[k * M + j];
			xw[i * M + j] = s;
		}

	STEP(o, "create a", wafer_tensor_create(c, WAFER_DTYPE_F32, 1, &n, a, &ta));
	STEP(o, "create b", wafer_tensor_create(c, WAFER_DTYPE_F32, 1, &n, b, &tb));
	STEP(o, "add", wafer_op_add(c, &ta, WAFER_ALWAYS_COPY, &tb,
				    WAFER_ALWAYS_COPY, &tc));
	STEP(o, "relu in place", wafer_op_relu(c, &tc, WAFER_DONATE_INPUT, &tc));
	STEP(o, "create x", wafer_tensor_create(c, WAFER_DTYPE_F32, 2, mm, x, &tx));
	STEP(o, "create w", wafer_tensor_create(c, WAFER_DTYPE_F32, 2, mm, w, &tw));
	STEP(o, "matmul (tuned)", wafer_op_matmul(c, &tx, WAFER_ALWAYS_COPY, &tw,
						  WAFER_ALWAYS_COPY, 0, &tm));
	STEP(o, "read relu", wafer_tensor_read(c, &tc, got, sizeof got));
	STEP(o, "read matmul", wafer_tensor_read(c, &tm, got_mm, sizeof got_mm));
	if (!o->broken && (memcmp(got, want, sizeof got) != 0 ||
			   memcmp(got_mm, xw, sizeof xw) != 0)) {
		o->broken++;
		snprintf(o->why, sizeof o->why, "a wrong result");
	}
	wafer_tensor *all[] = {&ta, &tb, &tc, &tx, &tw, &tm};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (all[i]->handle.bits &&
		    wafer_tensor_release(c, all[i]) != WAFER_OK && !o->broken++)
			snprintf(o->why, sizeof o->why, "release %zu: %s", i,
				 wafer_last_error());
	STEP(o, "sync", wafer_sync(c));
	wafer_memory_usage usage = {.struct_size = sizeof usage};
	STEP(o, "usage", wafer_memory_usage_get(c, &usage));
	if (!o->broken && (usage.bytes_in_use || usage.handles_live)) {
		o->broken++;
		snprintf(o->why, sizeof o->why,
			 "%" PRIu64 " bytes in %" PRIu64 " handles left",
			 usage.bytes_in_use, usage.handles_live);
	}
}

static wafer_status open_faulty_on(const char *channel, const char *strategy,
				   const char *site, uint64_t fail_at,
				   uint64_t fail_count, wafer_runtime **rt,
				   wafer_client **c);

static wafer_status open_client(const char *strategy, const char *site,
				uint64_t fail_at, uint64_t fail_count,
				wafer_runtime **rt, wafer_client **c)
{
	return open_faulty_on("mutex", strategy, site, fail_at, fail_count, rt,
			      c);
}

static wafer_status open_faulty_on(const char *channel, const char *strategy,
				   const char *site, uint64_t fail_at,
				   uint64_t fail_count, wafer_runtime **rt,
				   wafer_client **c)
{
	wafer_client_options co = {
		.struct_size = sizeof co,
		.channel = channel,
		.memory = strategy,
	};
	char k[32], count[32];
	snprintf(k, sizeof k, "%" PRIu64, fail_at);
	snprintf(count, sizeof count, "%" PRIu64, fail_count);
	wafer_option options[] = {
		{"core", "backend", "faulty"},
		{"core", "plugin_path", plugin_path},
		{"faulty", "site", site},
		{"faulty", "fail_at", k},
		{"faulty", "fail_count", count},
		{"autotune", "mode", "fast"},
	};
	*c = NULL;
	wafer_status status = runtime_open_with(
		options, sizeof options / sizeof options[0], rt);
	if (status == WAFER_OK)
		status = wafer_client_open(*rt, "default", &co, c);
	return status;
}

/* Sweeps k over the storage calls of |site| with memory |strategy|;
 * |count| calls fail from the k-th on (2 defeats the core's one retry
 * of an allocation after giving cached memory back). */
static void sweep_storage(const char *strategy, const char *site,
			  uint64_t count)
{
	int injected = 0, recovered = 0, broken = 0;
	uint64_t k;
	char first_why[600] = "";

	for (k = 1; k <= MAX_K; k++) {
		wafer_runtime *rt = NULL;
		wafer_client *c = NULL;
		struct outcome o = {0};
		if (open_client(strategy, site, k, count, &rt, &c) != WAFER_OK) {
			broken++;
			snprintf(first_why, sizeof first_why, "open: %s",
				 wafer_last_error());
			wafer_runtime_close(rt);
			break;
		}
		scenario(c, &o);
		uint64_t calls = atomic_load(faulty_calls);
		wafer_client_close(c);
		wafer_runtime_close(rt);
		if (calls < k)
			break; /* the k-th call never came: swept them all */
		injected++;
		recovered += o.failures > 0;
		if (o.broken && !broken++)
			snprintf(first_why, sizeof first_why, "k=%" PRIu64 ": %s",
				 k, o.why);
	}
	ok(injected > 0 && k <= MAX_K,
	   "%s, %s x%" PRIu64 ": %d faults injected (every %s call of the "
	   "scenario)", strategy, site, count, injected, site);
	is_int(broken, 0, "%s, %s x%" PRIu64 ": each failure a clean error, "
	       "the retry works, nothing lost%s%s", strategy, site, count,
	       broken ? ": " : "", first_why);
	diag("%s, %s x%" PRIu64 ": %d of %d injected failures reached the "
	     "caller (the rest were absorbed: retried, or a candidate "
	     "dropped)", strategy, site, count, recovered, injected);
}

/* An operation given a shared input to donate (it cannot reuse it) whose
 * output reservation fails: on every channel the call fails with
 * WAFER_ERROR_OUT_OF_MEMORY and the input stays the caller's. (mpsc once
 * returned OK, dropped the input and left an output without memory.) */
static void test_donated_shared_input(const char *channel)
{
	const uint64_t n = N;
	static float a[N];
	wafer_runtime *rt = NULL;
	wafer_client *c = NULL;
	wafer_tensor ta = {0}, out = {0};

	/* direct strategy: one allocation per handle; the 2nd is relu's
	 * output, and it fails twice (past the core's one retry). */
	if (open_faulty_on(channel, "direct", "alloc", 2, 2, &rt, &c) !=
		    WAFER_OK ||
	    wafer_tensor_create(c, WAFER_DTYPE_F32, 1, &n, a, &ta) != WAFER_OK ||
	    wafer_retain(c, ta.handle) != WAFER_OK) {
		ok(0, "%s: set up: %s", channel, wafer_last_error());
		wafer_client_close(c);
		wafer_runtime_close(rt);
		return;
	}
	wafer_tensor given = ta;
	is_status(wafer_op_relu(c, &given, WAFER_DONATE_INPUT, &out),
		  WAFER_ERROR_OUT_OF_MEMORY,
		  "%s: donating a shared input, the output's memory refused",
		  channel);
	uint32_t refs = 0;
	is_status(wafer_handle_references(c, ta.handle, &refs), WAFER_OK,
		  "%s:   ... the input is live", channel);
	is_int(refs, 2, "%s:   ... with both references", channel);
	is_status(wafer_sync(c), WAFER_OK,
		  "%s:   ... and nothing is left to report at sync", channel);
	wafer_release(c, ta.handle);
	wafer_release(c, ta.handle);
	wafer_client_close(c);
	wafer_runtime_close(rt);
}

#if HOST_FAULTS
static void sweep_host(const char *strategy)
{
	int injected = 0, broken = 0;
	uint64_t k;
	char first_why[600] = "";

	for (k = 1; k <= 4 * MAX_K; k++) {
		wafer_runtime *rt = NULL;
		wafer_client *c = NULL;
		struct outcome o = {0};
		if (open_client(strategy, "alloc", 0, 1, &rt, &c) != WAFER_OK) {
			broken++;
			snprintf(first_why, sizeof first_why, "open: %s",
				 wafer_last_error());
			wafer_runtime_close(rt);
			break;
		}
		atomic_store(&malloc_calls, 0);
		atomic_store(&malloc_fail_at, k);
		atomic_store(&malloc_armed, true);
		scenario(c, &o);
		atomic_store(&malloc_armed, false);
		uint64_t calls = atomic_load(&malloc_calls);
		wafer_client_close(c);
		wafer_runtime_close(rt);
		if (calls < k)
			break;
		injected++;
		if (o.broken && !broken++)
			snprintf(first_why, sizeof first_why, "k=%" PRIu64 ": %s",
				 k, o.why);
	}
	ok(injected > 0 && k <= 4 * MAX_K,
	   "%s, host malloc: %d faults injected (every malloc of the "
	   "scenario)", strategy, injected);
	is_int(broken, 0, "%s, host malloc: each failure a clean error, the "
	       "retry works, nothing lost%s%s", strategy,
	       broken ? ": " : "", first_why);
}
#endif

int main(void)
{
	const char *builddir = tap_builddir();
	snprintf(plugin_path, sizeof plugin_path, "%s/plugins/.libs", builddir);
	snprintf(faulty_so, sizeof faulty_so, "%s/faulty.so", plugin_path);
	char cpu_so[4300];
	snprintf(cpu_so, sizeof cpu_so, "%s/../plugins/cpu/.libs/cpu.so",
		 builddir);
	setenv("WAFER_TEST_FAULTY_PLUGIN", cpu_so, 1);
	unsetenv("WAFER_AUTOTUNE");
	/* The autotune cache goes where the suite's environment puts it
	 * (XDG_CACHE_HOME: t/xdg-cache, which `make clean` removes). */

	void *shim = dlopen(faulty_so, RTLD_NOW | RTLD_LOCAL);
	faulty_calls = shim ? dlsym(shim, "wafer_test_faulty_calls") : NULL;
	/* Built by make check with this test: missing is a failure. */
	if (!faulty_calls)
		bail_out("cannot load %s: %s", faulty_so,
			 shim ? "no wafer_test_faulty_calls" : dlerror());

	static const char *const strategies[] = {"pool", "direct", "chunked"};
	static const char *const sites[] = {"alloc", "map", "copy"};
	for (size_t s = 0; s < 3; s++)
		for (size_t i = 0; i < 3; i++) {
			if (strcmp(sites[i], "map") == 0 &&
			    strcmp(strategies[s], "pool") != 0)
				continue; /* only pool maps pages */
			sweep_storage(strategies[s], sites[i], 1);
			if (strcmp(sites[i], "copy") != 0)
				sweep_storage(strategies[s], sites[i], 2);
		}
	static const char *const channels[] = {"direct", "mutex", "mpsc"};
	for (size_t i = 0; i < 3; i++)
		test_donated_shared_input(channels[i]);
#if HOST_FAULTS
	sweep_host("pool");
#else
	diag("host malloc faults: not under sanitizers (they own malloc)");
#endif
	done_testing();
	return exit_status();
}
