/* wafer — SPDX-License-Identifier: MIT
 *
 * stress.c: 16 threads share one client and each issues a long random mix
 * of operations (empty, create, write, read, read_async, execute, retain,
 * release, sync, usage) on its own handles and on a few shared read-only
 * ones. Every read is checked against a host-side model, and when all
 * threads are done the memory in use is back where it started.
 *
 * WAFER_STRESS_OPS sets the operations per thread (default 100000);
 * WAFER_STRESS_CHANNEL the channel (default: every one but direct, which
 * is for one thread only). Backend-neutral: WAFER_BACKEND picks the
 * device. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "t/tap.h"
#include "t/client_util.h"

#define THREADS 16
#define LOCAL_HANDLES 8
#define SHARED_HANDLES 4
#define ELEMS 64 /* floats per handle */

static wafer_client *client;
static wafer_handle shared[SHARED_HANDLES];
static long ops_per_thread = 100000;

struct slot {
	wafer_handle handle;
	int live;
	float model[ELEMS]; /* what the device holds */
};

struct worker {
	int id;
	unsigned seed;
	long errors;
	long wrong;
	long reads;
	char first_error[256];
	struct slot slots[LOCAL_HANDLES];
};

static unsigned next_random(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

static void note_error(struct worker *w, const char *what, wafer_status s)
{
	if (s == WAFER_OK)
		return;
	if (!w->errors++)
		snprintf(w->first_error, sizeof w->first_error, "%s: %s: %s",
			 what, wafer_status_string(s), wafer_last_error());
}

static void check_read(struct worker *w, const float *got, const float *want)
{
	w->reads++;
	if (memcmp(got, want, ELEMS * sizeof(float)) != 0)
		w->wrong++;
}

static wafer_status run(const char *op, const wafer_handle *h, size_t n,
			const void *params, size_t params_size)
{
	return execute_f32(client, op, h, n, params, params_size, ELEMS);
}

/* One random operation on the worker's slots. */
static void step(struct worker *w)
{
	struct slot *s = &w->slots[next_random(&w->seed) % LOCAL_HANDLES];
	struct slot *t = &w->slots[next_random(&w->seed) % LOCAL_HANDLES];
	unsigned choice = next_random(&w->seed) % 12;
	float buf[ELEMS];

	if (!s->live) { /* bring it to life: create or empty + fill */
		for (int i = 0; i < ELEMS; i++)
			s->model[i] = (float)((w->id * 131 + i) % 97);
		if (choice & 1) {
			note_error(w, "create",
				   wafer_create(client, s->model,
						sizeof s->model, &s->handle));
		} else {
			struct wafer_fill_params p = {ELEMS, 2.0};
			note_error(w, "empty",
				   wafer_empty(client, sizeof s->model,
					       &s->handle));
			note_error(w, "fill",
				   run("fill", &s->handle, 1, &p, sizeof p));
			for (int i = 0; i < ELEMS; i++)
				s->model[i] = 2.0f;
		}
		s->live = 1;
		return;
	}
	struct wafer_elementwise_params ep = {ELEMS};
	switch (choice) {
	case 0: /* add a shared input into s */
	case 1: {
		int k = (int)(next_random(&w->seed) % SHARED_HANDLES);
		wafer_handle h[3] = {s->handle, s->handle, shared[k]};
		note_error(w, "add", run("add", h, 3, &ep, sizeof ep));
		for (int i = 0; i < ELEMS; i++)
			s->model[i] += (float)(k + 1);
		break;
	}
	case 2: /* t = s + t */
		if (!t->live || t == s)
			break;
		{
			wafer_handle h[3] = {t->handle, s->handle, t->handle};
			note_error(w, "add", run("add", h, 3, &ep, sizeof ep));
			for (int i = 0; i < ELEMS; i++)
				t->model[i] += s->model[i];
		}
		break;
	case 3: /* copy s into t */
		if (!t->live || t == s)
			break;
		{
			wafer_handle h[2] = {t->handle, s->handle};
			note_error(w, "copy", run("copy", h, 2, &ep, sizeof ep));
			memcpy(t->model, s->model, sizeof t->model);
		}
		break;
	case 4:
	case 5:
		note_error(w, "read",
			   wafer_read(client, s->handle, 0, buf, sizeof buf));
		check_read(w, buf, s->model);
		break;
	case 6:
		note_error(w, "read_async",
			   wafer_read_async(client, s->handle, 0, buf,
					    sizeof buf));
		note_error(w, "sync", wafer_sync(client));
		check_read(w, buf, s->model);
		break;
	case 7: /* overwrite a few elements */
		for (int i = 0; i < 8; i++)
			s->model[i] = (float)(w->id + i);
		note_error(w, "write",
			   wafer_write(client, s->handle, 0, s->model,
				       8 * sizeof(float)));
		break;
	case 8: /* an extra reference, dropped again */
		note_error(w, "retain", wafer_retain(client, s->handle));
		note_error(w, "release", wafer_release(client, s->handle));
		break;
	case 9:
	case 10:
		note_error(w, "release", wafer_release(client, s->handle));
		s->live = 0;
		break;
	default: {
		wafer_memory_usage u = {.struct_size = sizeof u};
		note_error(w, "usage", wafer_memory_usage_get(client, &u));
		break;
	}
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	for (long i = 0; i < ops_per_thread; i++)
		step(w);
	for (int i = 0; i < LOCAL_HANDLES; i++) {
		if (!w->slots[i].live)
			continue;
		float buf[ELEMS];
		note_error(w, "read", wafer_read(client, w->slots[i].handle, 0,
						 buf, sizeof buf));
		check_read(w, buf, w->slots[i].model);
		note_error(w, "release",
			   wafer_release(client, w->slots[i].handle));
	}
	return NULL;
}

static void stress(wafer_runtime *runtime, const char *channel)
{
	wafer_client_options options = {.struct_size = sizeof options,
					 .channel = channel};
	if (wafer_client_open(runtime, "default", &options, &client)) {
		printf("Bail out! client_open: %s\n", wafer_last_error());
		exit(1);
	}
	wafer_memory_usage before = {.struct_size = sizeof before};
	wafer_memory_usage_get(client, &before);
	for (int k = 0; k < SHARED_HANDLES; k++) {
		float v[ELEMS];
		for (int i = 0; i < ELEMS; i++)
			v[i] = (float)(k + 1);
		wafer_create(client, v, sizeof v, &shared[k]);
	}

	static struct worker workers[THREADS];
	pthread_t threads[THREADS];
	for (int t = 0; t < THREADS; t++) {
		memset(&workers[t], 0, sizeof workers[t]);
		workers[t].id = t;
		workers[t].seed = 7919u * (unsigned)(t + 1);
		pthread_create(&threads[t], NULL, worker_main, &workers[t]);
	}
	long errors = 0, wrong = 0, reads = 0;
	for (int t = 0; t < THREADS; t++) {
		pthread_join(threads[t], NULL);
		errors += workers[t].errors;
		wrong += workers[t].wrong;
		reads += workers[t].reads;
		if (workers[t].errors)
			diag("thread %d: %s", t, workers[t].first_error);
	}
	for (int k = 0; k < SHARED_HANDLES; k++)
		wafer_release(client, shared[k]);
	is_status(wafer_sync(client), WAFER_OK, "%s: final sync", channel);
	is_int(errors, 0, "%s: %d threads x %ld ops: no errors", channel,
	       THREADS, ops_per_thread);
	is_int(wrong, 0, "%s: all %ld reads match the model", channel, reads);
	wafer_memory_usage after = {.struct_size = sizeof after};
	wafer_memory_usage_get(client, &after);
	is_int((long long)after.bytes_in_use, (long long)before.bytes_in_use,
	       "%s: memory in use back to its start", channel);
	is_int((long long)after.handles_live, (long long)before.handles_live,
	       "%s: no handle left live", channel);
	is_status(wafer_client_close(client), WAFER_OK, "%s: close", channel);
}

int main(void)
{
	const char *ops = getenv("WAFER_STRESS_OPS");
	const char *only = getenv("WAFER_STRESS_CHANNEL");
	if (ops)
		ops_per_thread = strtol(ops, NULL, 10);
	wafer_runtime *runtime;
	if (wafer_runtime_open(NULL, &runtime)) {
		printf("Bail out! runtime_open: %s\n", wafer_last_error());
		return 1;
	}
	if (only) {
		stress(runtime, only);
	} else {
		stress(runtime, "mutex");
		stress(runtime, "mpsc");
	}
	wafer_runtime_close(runtime);
	done_testing();
	return exit_status();
}
