/* wafer — SPDX-License-Identifier: MIT
 *
 * program_ids.c: program ids and their kernel refs (program.h,
 * lib/program_table.h) on the default device, on the direct, mutex and
 * mpsc channels. Backend-neutral: WAFER_BACKEND=<name> runs it on that
 * plugin; one without the programs group skips, saying so.
 *
 *  - create, kernel and release cycles in a long-lived client leave the
 *    process's program table at the size it had (a released program's
 *    slot is reused, not kept);
 *  - a released program's id and its kernel refs are refused
 *    (WAFER_ERROR_INVALID_HANDLE, naming the id), also once a later
 *    program took its slot: that program is never reached through them;
 *  - the ids of a program left live at client close are refused after;
 *  - threads creating, running and releasing programs on one client
 *    (mutex and mpsc) each run their own.
 *
 * The program is t/user_kernels/' saxpy, offered in every format there
 * (the device takes the first it can; host-so before host-c, so that
 * the cpu plugin compiles nothing per cycle). */
#include "build-config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/program.h>
#include <wafer/wafer.h>

#include "lib/program_table.h"
#include "t/tap.h"
#include "t/client_util.h"
#include "t/user_kernels/sources.h"

#define N 64
#define CYCLES 300

struct saxpy_params {
	uint64_t n;
	float a;
	uint32_t reserved;
};

static wafer_program_source all[USER_KERNEL_FORMATS];
static void *data[USER_KERNEL_FORMATS];
static wafer_program_source sources[USER_KERNEL_FORMATS];
static size_t source_count;

/* Those there, host-so first. */
static void load_sources(void)
{
	user_kernels_load(all, data);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < USER_KERNEL_FORMATS; i++)
			if (all[i].data &&
			    (all[i].format == WAFER_PROGRAM_HOST_SO) == !pass)
				sources[source_count++] = all[i];
}

static wafer_program *create(wafer_client *c)
{
	wafer_program *p = NULL;
	check(wafer_program_create(c, sources, source_count, NULL, &p),
	      "wafer_program_create");
	return p;
}

static const wafer_kernel_ref *saxpy(wafer_program *p)
{
	const wafer_kernel_ref *ref = NULL;
	check(wafer_program_kernel(p, "wafer_test_saxpy", 2,
				   sizeof(struct saxpy_params), &ref),
	      "wafer_program_kernel");
	return ref;
}

static wafer_status run(wafer_client *c, const wafer_kernel_ref *ref,
			wafer_handle y, wafer_handle x, float a)
{
	struct saxpy_params params = {.n = N, .a = a};
	wafer_buffer_binding bindings[2] = {{.handle = y}, {.handle = x}};
	wafer_execute_args args = {
		.struct_size = sizeof args,
		.kernel_ref = ref,
		.bindings = bindings,
		.binding_count = 2,
		.params = &params,
		.params_size = sizeof params,
		.global = {N, 1, 1},
	};
	return wafer_execute(c, &args);
}

/* y[0] after y = a * x + y with y and x all ones: 1 + a on success. */
static float run_once(wafer_client *c, const wafer_kernel_ref *ref, float a,
		      wafer_status *out_status)
{
	float ones[N], got[N];
	wafer_handle x, y;

	for (int i = 0; i < N; i++)
		ones[i] = 1.0f;
	check(wafer_create(c, ones, sizeof ones, &x), "x");
	check(wafer_create(c, ones, sizeof ones, &y), "y");
	*out_status = run(c, ref, y, x, a);
	check(wafer_read(c, y, 0, got, sizeof got), "read y");
	check(wafer_sync(c), "sync");
	wafer_release(c, x);
	wafer_release(c, y);
	return got[0];
}

static void test_channel(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	wafer_status status;
	char id[64];

	/* Cycles: the table ends at the size it had after the first. */
	wafer_program *p = create(c);
	saxpy(p);
	check(wafer_program_release(p), "release");
	size_t before = wafer__program_slots_used();
	for (int i = 0; i < CYCLES; i++) {
		p = create(c);
		saxpy(p);
		check(wafer_program_release(p), "release");
	}
	size_t after = wafer__program_slots_used();
	ok(after == before,
	   "%s: %d create/kernel/release cycles leave the program table at "
	   "its size (%zu slots before, %zu after)",
	   channel, CYCLES, before, after);

	/* A released program's id and refs, before and after its slot is
	 * taken again. */
	wafer_program *old = create(c);
	const wafer_kernel_ref *old_ref = saxpy(old);
	is_int((long long)run_once(c, old_ref, 2.0f, &status), 3,
	       "%s: the program runs", channel);
	is_status(status, WAFER_OK, "%s:   ... with WAFER_OK", channel);
	check(wafer_program_release(old), "release");
	snprintf(id, sizeof id, "%p", (void *)old);

	for (int round = 0; round < 2; round++) {
		const char *when = round ? "after a new program took its slot"
					 : "after release";
		const wafer_kernel_ref *ref = (const void *)1;
		is_status(wafer_program_kernel(old, "wafer_test_saxpy", 2,
					       sizeof(struct saxpy_params),
					       &ref),
			  WAFER_ERROR_INVALID_HANDLE,
			  "%s: wafer_program_kernel of a released program's "
			  "id is refused %s",
			  channel, when);
		ok(ref == NULL, "%s:   ... no ref", channel);
		like(wafer_last_error(), id, "%s:   ... naming the id %s",
		     channel, id);
		float y0 = run_once(c, old_ref, 2.0f, &status);
		is_status(status, WAFER_ERROR_INVALID_HANDLE,
			  "%s: a released program's kernel ref is refused %s",
			  channel, when);
		is_int((long long)y0, 1, "%s:   ... and runs nothing",
		       channel);
		if (round == 0) {
			size_t slots = wafer__program_slots_used();
			wafer_program *new = create(c);
			const wafer_kernel_ref *new_ref = saxpy(new);
			ok(wafer__program_slots_used() == slots,
			   "%s: a new program takes a freed slot", channel);
			ok(new != old && new_ref != old_ref,
			   "%s:   ... under a new id", channel);
			is_status(wafer_program_release(old),
				  WAFER_ERROR_INVALID_HANDLE,
				  "%s: releasing the old id again is refused",
				  channel);
			is_int((long long)run_once(c, new_ref, 3.0f,
						   &status),
			       4, "%s:   ... and the new program still runs",
			       channel);
			is_status(status, WAFER_OK, "%s:   ... with WAFER_OK",
				  channel);
			p = new;
		}
	}

	/* A program left live at close: its ids die with the client. */
	check(wafer_client_close(c), "close");
	is_status(wafer_program_release(p), WAFER_ERROR_INVALID_HANDLE,
		  "%s: a program's id is refused after its client closed",
		  channel);
	c = open_client_on(rt, "default", channel);
	is_int((long long)run_once(c, old_ref, 2.0f, &status), 1,
	       "%s: a stale ref runs nothing on a new client", channel);
	ok(status != WAFER_OK, "%s:   ... refused (%s)", channel,
	   wafer_status_string(status));
	check(wafer_client_close(c), "close");
}

/* Threads creating, launching and releasing programs on one client at
 * once: each sees only its own programs run, and the table stays at one
 * slot per thread. */
#define THREADS 4
#define THREAD_CYCLES 40

struct worker {
	wafer_client *c;
	int good;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	wafer_status status;

	for (int i = 0; i < THREAD_CYCLES; i++) {
		wafer_program *p = create(w->c);
		float a = (float)(i % 5);
		if (run_once(w->c, saxpy(p), a, &status) == 1.0f + a &&
		    status == WAFER_OK && wafer_program_release(p) == WAFER_OK)
			w->good++;
	}
	return NULL;
}

static void test_threads(wafer_runtime *rt, const char *channel)
{
	wafer_client *c = open_client_on(rt, "default", channel);
	struct worker workers[THREADS];
	pthread_t threads[THREADS];
	size_t before = wafer__program_slots_used();
	int good = 0;

	for (int t = 0; t < THREADS; t++) {
		workers[t] = (struct worker){c, 0};
		pthread_create(&threads[t], NULL, work, &workers[t]);
	}
	for (int t = 0; t < THREADS; t++) {
		pthread_join(threads[t], NULL);
		good += workers[t].good;
	}
	is_int(good, THREADS * THREAD_CYCLES,
	       "%s: %d threads each creating, running and releasing %d "
	       "programs on one client: all right",
	       channel, THREADS, THREAD_CYCLES);
	ok(wafer__program_slots_used() <= before + THREADS,
	   "%s:   ... the table grew by at most one slot per thread (%zu "
	   "before, %zu after)",
	   channel, before, wafer__program_slots_used());
	check(wafer_client_close(c), "close");
}

int main(void)
{
	static const char *const channels[] = {"direct", "mutex", "mpsc"};
	wafer_runtime *rt = NULL;
	wafer_client *c = NULL;

	open_default(NULL, &rt, &c);
	if (!(caps_of(c, NULL) & WAFER_CAP_PROGRAMS)) {
		close_default(rt, c);
		skip_all("the device has no programs group");
	}
	load_sources();
	/* A vendor's plugin that takes none of the suite's formats (its
	 * own, as the installed sim example's): t/api/programs runs its
	 * sources from the description; the ids are the core's, the same
	 * for every plugin, and are checked on the others. */
	wafer_program *probe = NULL;
	wafer_status st = wafer_program_create(c, sources, source_count, NULL,
					       &probe);
	if (st == WAFER_OK)
		wafer_program_release(probe);
	close_default(rt, c);
	if (st == WAFER_ERROR_NOT_SUPPORTED) {
		for (size_t i = 0; i < USER_KERNEL_FORMATS; i++)
			free(data[i]);
		skip_all("the device takes none of the suite's program formats "
			 "(t/api/programs runs a vendor's own sources)");
	}
	rt = NULL;
	check(wafer_runtime_open(NULL, &rt), "runtime");
	for (size_t i = 0; i < sizeof channels / sizeof channels[0]; i++)
		test_channel(rt, channels[i]);
	/* direct is one thread at a time. */
	test_threads(rt, "mutex");
	test_threads(rt, "mpsc");
	wafer_runtime_close(rt);
	for (size_t i = 0; i < USER_KERNEL_FORMATS; i++)
		free(data[i]);
	done_testing();
	return 0;
}
