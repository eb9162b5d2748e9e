/* wafer — SPDX-License-Identifier: MIT
 *
 * queues.c: `wafer-bench queues [MiB [batches]]` — what several queues of
 * one client buy and cost (wafer-queue(7)), beside the vendor API where
 * the backend has a raw counterpart (raw.h), in the same run:
 *
 *   overlap: |batches| (default 16) batches, each an upload of MiB
 *     (default 64) from host memory and |adds| f32 adds over it, |adds|
 *     chosen so that the adds take about as long as the upload. Once on
 *     one queue, once with the uploads on a second queue (the adds on the
 *     default one; wafer orders them itself, no event written), each
 *     double-buffered; raw: the same on one CUDA stream, and on two
 *     streams ordered by events from pinned host memory:
 *
 *     overlap host=H mib=M batches=K adds=R one_queue_ms=A
 *             two_queues_ms=B gain=A/B [raw_one_ms=C raw_two_ms=D
 *             raw_gain=C/D vs_raw=B/D]
 *
 *   once with H=staged, from ordinary memory (each upload a host copy
 *   into the plugin's staging buffers on the issuing thread, then the
 *   DMA), once with H=registered, from memory registered with
 *   wafer_host_register (the DMA alone, in queue order: what the raw side
 *   does from pinned memory); each balances its own adds.
 *
 *   events: ns per record on one queue + wait on another
 *     (wafer_event_record + wafer_queue_wait), 10,000 pairs then a
 *     sync of both; raw: cuEventRecord + cuStreamWaitEvent, timed in
 *     turns with wafer's, 16 rounds on each of four clients, the best
 *     and the median of each, the driver calls of both on one CPU (see
 *     events()); and the core's share of one command (a wait on an event
 *     never recorded):
 *
 *     events channel=C ns_per_pair=X median_ns=M core_ns_per_command=Z
 *            [raw_ns_per_pair=Y raw_median_ns=N vs_raw=X/Y
 *             median_round_vs_raw=R cpus=D[,C]]
 *
 *   on each channel (direct, mutex, mpsc: the pair is two commands,
 *   and a command costs what its channel's hop costs);
 *
 *   dispatch: ns per wafer_execute of the noop kernel on the default
 *     queue of a client with one queue, and on a second queue (the
 *     thread's selected one) of a client with two, 20,000 each, in
 *     turns, 16 rounds, the best of each:
 *
 *     dispatch_queue default_ns=X second_queue_ns=Y vs_default=Y/X
 *                    median_round_vs_default=R
 *
 * On a backend without events (wafer-info lists no `events`) the gain is
 * about 1: the queues are ordered on the host there. On cpu each queue
 * is a worker thread, and the copy runs on the issuing thread beside the
 * compute queue's worker, both drawing on the same cores. */
#include "build-config.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wafer/plugin.h>
#include <wafer/queue.h>

#include "tools/bench/bench.h"
#include "tools/bench/pin.h"
#include "tools/bench/raw.h"

struct pipeline {
	wafer_client *client;
	wafer_handle in[2], out;
	size_t bytes;
	const void *host;
	unsigned adds;
};

/* ms for |batches| batches; uploads on |copy| (NULL: the default queue). */
static double run_pipeline(struct pipeline *p, unsigned batches,
			   wafer_queue *copy)
{
	wafer_queue *compute = wafer_client_default_queue(p->client);
	size_t count = p->bytes / 4;
	uint64_t start = bench_now_ns();

	for (unsigned k = 0; k < batches; k++) {
		wafer_handle in = p->in[k % 2];
		if (copy)
			wafer_queue_select(copy);
		bench_check(wafer_write(p->client, in, 0, p->host, p->bytes),
			    "write");
		if (copy)
			wafer_queue_select(compute);
		for (unsigned a = 0; a < p->adds; a++)
			bench_add_f32(p->client, p->out, in, in, count);
	}
	if (copy)
		bench_check(wafer_queue_sync(copy), "sync copy queue");
	bench_check(wafer_sync(p->client), "sync");
	return (double)(bench_now_ns() - start) / 1e6;
}

/* Adds per batch so that they take about as long as its upload. Each is
 * timed in a run of several between two syncs: timed alone, an add of
 * tens of microseconds would carry a whole sync's latency, the pipeline
 * would get too few adds, and the copy would be left alone at its end. */
static unsigned balance(struct pipeline *p)
{
	const unsigned run = 4, adds = 32;
	size_t count = p->bytes / 4;
	double up = INFINITY, add = INFINITY;

	for (int i = 0; i < 3; i++) {
		uint64_t t = bench_now_ns();
		for (unsigned u = 0; u < run; u++)
			bench_check(wafer_write(p->client, p->in[u % 2], 0,
						p->host, p->bytes),
				    "write");
		bench_check(wafer_sync(p->client), "sync");
		up = fmin(up, (double)(bench_now_ns() - t) / run);
		t = bench_now_ns();
		for (unsigned a = 0; a < adds; a++)
			bench_add_f32(p->client, p->out, p->in[0], p->in[0],
				      count);
		bench_check(wafer_sync(p->client), "sync");
		add = fmin(add, (double)(bench_now_ns() - t) / adds);
	}
	double r = round(up / add);
	return r < 1 ? 1 : r > 1000 ? 1000 : (unsigned)r;
}

static void overlap(wafer_runtime *runtime, const struct bench_raw *raw,
		    size_t mib, unsigned batches, bool registered)
{
	struct pipeline p = {.bytes = mib << 20};
	float *host = aligned_alloc(4096, p.bytes);
	wafer_queue *copy;

	if (!host) {
		fprintf(stderr, "wafer-bench queues: no host memory\n");
		exit(1);
	}
	for (size_t i = 0; i < p.bytes / 4; i++)
		host[i] = (float)(i % 1000) * 0.25f;
	p.host = host;
	p.client = bench_open_client(runtime, NULL, NULL);
	if (registered)
		bench_check(wafer_host_register(p.client, host, p.bytes),
			    "host_register");
	bench_check(wafer_empty(p.client, p.bytes, &p.in[0]), "empty");
	bench_check(wafer_empty(p.client, p.bytes, &p.in[1]), "empty");
	bench_check(wafer_empty(p.client, p.bytes, &p.out), "empty");
	bench_check(wafer_write(p.client, p.in[1], 0, host, p.bytes), "write");
	p.adds = balance(&p);
	bench_check(wafer_queue_open(p.client, &copy), "queue_open");
	run_pipeline(&p, 2, copy); /* warm: the second queue's buffers */
	double one = INFINITY, two = INFINITY;
	for (int s = 0; s < 3; s++) {
		one = fmin(one, run_pipeline(&p, batches, NULL));
		two = fmin(two, run_pipeline(&p, batches, copy));
	}
	printf("overlap host=%s mib=%zu batches=%u adds=%u one_queue_ms=%.3f "
	       "two_queues_ms=%.3f gain=%.3f",
	       registered ? "registered" : "staged", mib, batches, p.adds, one,
	       two, one / two);
	if (raw && raw->overlap_ms) {
		double raw_one = raw->overlap_ms(p.bytes, batches, p.adds, 0);
		double raw_two = raw->overlap_ms(p.bytes, batches, p.adds, 1);
		if (raw_one > 0 && raw_two > 0)
			printf(" raw=%s raw_one_ms=%.3f raw_two_ms=%.3f "
			       "raw_gain=%.3f vs_raw=%.3f",
			       raw->overlap_what, raw_one, raw_two,
			       raw_one / raw_two, two / raw_two);
	}
	printf("\n");
	fflush(stdout);
	bench_check(wafer_queue_close(copy), "queue_close");
	if (registered)
		bench_check(wafer_host_unregister(p.client, host),
			    "host_unregister");
	bench_check(wafer_client_close(p.client), "client_close");
	free(host);
}

/* ns per pair over |pairs| pairs: record on |a|, wait on |b|, then a
 * sync of both. */
static double wafer_pair_ns(wafer_queue *a, wafer_queue *b, wafer_event *e,
			    unsigned pairs)
{
	uint64_t start = bench_now_ns();
	for (unsigned i = 0; i < pairs; i++) {
		wafer_event_record(e, a);
		wafer_queue_wait(b, e);
	}
	bench_check(wafer_queue_sync(b), "sync");
	bench_check(wafer_queue_sync(a), "sync");
	return (double)(bench_now_ns() - start) / pairs;
}

/* The core's share of a command: a wait on an event never recorded goes
 * through the channel and the bridge like any command but stops before
 * the plugin (it is complete). */
static double core_ns(wafer_client *client, wafer_queue *b, unsigned waits)
{
	wafer_event *never;
	double best = INFINITY;

	bench_check(wafer_event_create(client, 0, &never), "event_create");
	for (int s = 0; s < 3; s++) {
		uint64_t start = bench_now_ns();
		for (unsigned i = 0; i < waits; i++)
			wafer_queue_wait(b, never);
		best = fmin(best, (double)(bench_now_ns() - start) / waits);
	}
	bench_check(wafer_queue_sync(b), "sync");
	bench_check(wafer_event_release(never), "event_release");
	return best;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof *v, by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Where wafer's calls are made from: on mpsc the caller leaves the CPU
 * of the runner (|runner|), which makes the driver calls. */
static void wafer_side(const struct bench_pin *pin, bool runner)
{
	if (runner)
		bench_pin_to(pin, pin->caller);
}

/* Back on the CPU of the driver calls for the raw ones, once an mpsc
 * runner there has had a moment to go to sleep. */
static void raw_side(const struct bench_pin *pin, bool runner)
{
	if (runner && pin->on) {
		bench_pin_to(pin, pin->driver);
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
	}
}

/* wafer's pair on |channel| and the raw pair in turns: many short
 * samples (a few ms each), which of the two goes first alternating, on
 * four clients one after the other, the best and the median of each and
 * the median of the rounds' ratios (two samples a moment apart). Where
 * there is a raw pair, the driver calls of both run on one CPU (pin.h
 * says why): the caller's own for raw, direct and mutex; for mpsc the
 * runner's, which a client opened from that CPU starts on, while its
 * caller moves to another CPU for wafer's rounds. */
static void events(wafer_runtime *runtime, const char *channel,
		   const struct bench_raw *raw)
{
	enum { clients = 4, rounds = 16, all = clients * rounds };
	const unsigned pairs = 10000;
	double best = INFINITY, raw_best = INFINITY, core = INFINITY;
	double ns[all], raw_ns[all], ratio[all];
	bool has_raw = raw && raw->event_pair_ns;
	bool runner = strcmp(channel, "mpsc") == 0;
	struct bench_pin pin = {.on = false};
	char cpus[32] = "any";

	if (has_raw)
		bench_pin_begin(&pin);
	if (pin.on && runner)
		snprintf(cpus, sizeof cpus, "%d,%d", pin.driver, pin.caller);
	else if (pin.on)
		snprintf(cpus, sizeof cpus, "%d", pin.driver);
	for (unsigned k = 0; k < clients; k++) {
		raw_side(&pin, runner);
		wafer_client *client = bench_open_client(runtime, channel, NULL);
		wafer_queue *a = wafer_client_default_queue(client), *b;
		wafer_event *e;

		bench_check(wafer_queue_open(client, &b), "queue_open");
		bench_check(wafer_event_create(client, 0, &e), "event_create");
		wafer_side(&pin, runner);
		wafer_pair_ns(a, b, e, pairs); /* the runner and driver warm */
		for (unsigned r = k * rounds; r < (k + 1) * rounds; r++) {
			if (has_raw && r % 2 == 0) {
				raw_side(&pin, runner);
				raw_ns[r] = raw->event_pair_ns(pairs, 0, 1);
			}
			wafer_side(&pin, runner);
			ns[r] = wafer_pair_ns(a, b, e, pairs);
			if (has_raw && r % 2 == 1) {
				raw_side(&pin, runner);
				raw_ns[r] = raw->event_pair_ns(pairs, 0, 1);
			}
			best = fmin(best, ns[r]);
			if (has_raw) {
				raw_best = fmin(raw_best, raw_ns[r]);
				ratio[r] = ns[r] / raw_ns[r];
			}
		}
		wafer_side(&pin, runner);
		core = fmin(core, core_ns(client, b, 100000));
		bench_check(wafer_event_release(e), "event_release");
		bench_check(wafer_client_close(client), "client_close");
	}
	bench_pin_end(&pin);
	printf("events channel=%s ns_per_pair=%.1f median_ns=%.1f "
	       "core_ns_per_command=%.1f",
	       channel, best, median(ns, all), core);
	if (has_raw && raw_best > 0)
		printf(" raw=%s raw_ns_per_pair=%.1f raw_median_ns=%.1f "
		       "vs_raw=%.3f median_round_vs_raw=%.3f cpus=%s",
		       raw->event_what, raw_best, median(raw_ns, all),
		       best / raw_best, median(ratio, all), cpus);
	printf("\n");
	fflush(stdout);
}

/* ns per noop execute over |launches| on the calling thread's current
 * queue, then a sync. */
static double noop_ns(wafer_client *client, unsigned launches)
{
	wafer_execute_args args = {
		.struct_size = sizeof args,
		.kernel = WAFER_KERNEL_NOOP,
		.dtype = WAFER_DTYPE_NONE,
		.global = {1, 1, 1},
	};
	uint64_t start = bench_now_ns();

	for (unsigned i = 0; i < launches; i++)
		wafer_execute(client, &args);
	bench_check(wafer_sync(client), "sync");
	return (double)(bench_now_ns() - start) / launches;
}

/* noop_ns on |queue| (selected for the call). */
static double noop_on_ns(wafer_client *client, wafer_queue *queue,
			 unsigned launches)
{
	wafer_queue *was = wafer_queue_select(queue);
	double ns = noop_ns(client, launches);
	wafer_queue_select(was);
	return ns;
}

/* The two clients' launches in turns, 16 rounds, which goes first
 * alternating, the best of each and the median of the rounds' ratios.
 * Each client's runner thread would run at its own speed (pin.h): where
 * there is a raw counterpart (a GPU) both start on one CPU, and the
 * caller launches from another. */
static void dispatch(wafer_runtime *runtime, const struct bench_raw *raw)
{
	enum { rounds = 16 };
	const unsigned launches = 20000;
	struct bench_pin pin = {.on = false};

	if (raw)
		bench_pin_begin(&pin);
	wafer_client *one = bench_open_client(runtime, NULL, NULL);
	wafer_client *two = bench_open_client(runtime, NULL, NULL);
	wafer_queue *second;
	double base = INFINITY, other = INFINITY, ratio[rounds];

	bench_check(wafer_queue_open(two, &second), "queue_open");
	bench_pin_to(&pin, pin.caller);
	noop_ns(one, launches); /* both runners warm */
	noop_on_ns(two, second, launches);
	for (unsigned r = 0; r < rounds; r++) {
		double x = r % 2 ? 0 : noop_ns(one, launches);
		double y = noop_on_ns(two, second, launches);
		if (r % 2)
			x = noop_ns(one, launches);
		base = fmin(base, x);
		other = fmin(other, y);
		ratio[r] = y / x;
	}
	bench_check(wafer_client_close(two), "client_close");
	bench_check(wafer_client_close(one), "client_close");
	bench_pin_end(&pin);
	printf("dispatch_queue default_ns=%.1f second_queue_ns=%.1f "
	       "vs_default=%.3f median_round_vs_default=%.3f\n",
	       base, other, other / base, median(ratio, rounds));
	fflush(stdout);
}

int bench_queues(int argc, char **argv)
{
	char *end = NULL;
	unsigned long mib = argc > 1 ? strtoul(argv[1], &end, 10) : 64;
	unsigned long batches = argc > 2 ? strtoul(argv[2], NULL, 10) : 16;
	wafer_runtime *runtime;
	wafer_client *probe;
	wafer_device_desc device = {.struct_size = sizeof device};

	if ((end && *end) || mib == 0 || mib > 4096 || batches < 2 ||
	    batches > 100000) {
		fprintf(stderr, "usage: wafer-bench queues [MiB (1..4096) "
				"[batches (2..100000)]]\n");
		return 2;
	}
	bench_check(wafer_runtime_open(NULL, &runtime), "runtime_open");
	probe = bench_open_client(runtime, NULL, NULL);
	bench_check(wafer_client_device(probe, &device), "client_device");
	bench_check(wafer_client_close(probe), "client_close");
	const struct bench_raw *raw = bench_raw_for(&device);
	printf("# %s:%u (%s), events %s\n", device.backend, device.index,
	       device.name,
	       device.capabilities & WAFER_CAP_EVENTS ? "yes" : "no");
	overlap(runtime, raw, mib, (unsigned)batches, false);
	overlap(runtime, raw, mib, (unsigned)batches, true);
	/* What entering the context costs the raw pair, then wafer's pair on
	 * each channel (the pair is two commands, and what a command costs
	 * is the channel's) in turns with the raw pair. */
	if (raw && raw->event_pair_ns)
		printf("events_raw_context alone_ns=%.1f set_each_ns=%.1f "
		       "get_each_ns=%.1f none_current_ns=%.1f\n",
		       raw->event_pair_ns(100000, 0, 3),
		       raw->event_pair_ns(100000, 1, 3),
		       raw->event_pair_ns(100000, 2, 3),
		       raw->event_pair_ns(100000, 3, 3));
	static const char *const channels[] = {"direct", "mutex", "mpsc"};
	for (size_t i = 0; i < sizeof channels / sizeof *channels; i++)
		events(runtime, channels[i], raw);
	dispatch(runtime, raw);
	wafer_runtime_close(runtime);
	return 0;
}
