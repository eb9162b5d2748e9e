/* wafer — SPDX-License-Identifier: MIT
 * trace.c: the timeline trace (see trace.h and include/wafer/trace.h). */
#include "build-config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <wafer/trace.h>

#include "lib/bridge.h"
#include "lib/config.h"
#include "lib/error.h"
#include "lib/log.h"
#include "lib/graph.h"
#include "lib/trace.h"
#include "lib/trace_json.h"
#include "lib/tls.h"

atomic_bool wafer__trace_active;
WAFER__TLS_HOT bool wafer__trace_inside;

/* A lane's host-side spans are on tid lane + 1, its device-side spans on
 * DEVICE_TID + lane (tid 0 is left to the viewer). */
#define DEVICE_TID 1000
/* Device spans waiting to be read at once, per client, before a command
 * reads the oldest with a blocking sync. */
#define PENDING_MAX 4096
/* The most text a trace keeps; commands past it are counted, not
 * recorded (a trace left on through a long run stays bounded). */
#define TEXT_MAX ((size_t)256 << 20)
/* wafer_event_record -> wafer_queue_wait arrows remembered. */
#define FLOWS 256

/* A command's device span, bracketed by two timing events. */
struct pending {
	void *start, *end;
	uint32_t lane;
	uint64_t submit_ns; /* its host span's start: the device's is not before */
	char *name;
	char *args; /* JSON members, no braces */
};

/* A client: a process in the view. */
struct client {
	const struct wafer__bridge *bridge;
	uint32_t pid;
	uint32_t lanes_named; /* bit per lane: its thread_name is out */
	/* Device spans: the plugin has timing events (until one fails). */
	bool timing;
	const char *why_host_only; /* when !timing */
	struct {
		void *event; /* recorded and synced: finished about anchor_ns */
		uint64_t anchor_ns;
	} base[WAFER_MAX_QUEUES];
	struct pending *pending;
	size_t pending_count, pending_capacity;
	uint64_t in_use, reserved, allocs, frees, maps, unmaps; /* last counted */
	bool counted;
};

struct trace {
	wafer_runtime *runtime;
	char *path;
	uint64_t start_ns;
	struct wafer__json events;
	struct client **clients;
	size_t client_count;
	uint32_t next_pid;
	struct {
		const void *event;
		uint64_t id;
	} flows[FLOWS];
	uint64_t next_flow;
	uint64_t commands, device_spans, host_only_spans, errors, dropped;
	/* Callers inside the hooks; wafer_trace_end waits for none. */
	unsigned users;
};

/* The running trace and its users; lock guards everything in it (the
 * hooks of different clients run on different threads). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER;
static struct trace *current;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The trace's clock: nanoseconds since it began. */
static uint64_t rel(const struct trace *t, uint64_t ns)
{
	return ns > t->start_ns ? ns - t->start_ns : 0;
}

/*===----------------------------------------------------------------------===
 * Clients and lanes
 *===----------------------------------------------------------------------===*/

static const struct wafer_server_ops *server_of(const struct wafer__bridge *b)
{
	return b->device->plugin->server;
}

static struct client *client_of(struct trace *t, const struct wafer__bridge *b)
{
	for (size_t i = 0; i < t->client_count; i++)
		if (t->clients[i]->bridge == b)
			return t->clients[i];
	struct client **grown =
		realloc(t->clients, (t->client_count + 1) * sizeof *grown);
	struct client *c = calloc(1, sizeof *c);
	if (!grown || !c) {
		free(c);
		if (grown)
			t->clients = grown;
		return NULL;
	}
	t->clients = grown;
	t->clients[t->client_count++] = c;
	c->bridge = b;
	c->pid = ++t->next_pid;
	c->timing = b->lanes.events;
	c->why_host_only = c->timing ? NULL
				     : "the plugin has no events (plugin ABI "
				       "1.5 events group)";
	char name[160];
	snprintf(name, sizeof name, "client %u on %s:%u%s", c->pid,
		 b->device->backend, b->device->index,
		 c->timing ? "" : " (host spans only)");
	wafer__json_event(&t->events, "M", "process_name", c->pid, 0, 0);
	wafer__json_printf(&t->events, ",\"args\":{\"name\":");
	wafer__json_string(&t->events, name);
	wafer__json_printf(&t->events, "}}");
	return c;
}

/* The thread_name of lane |l|'s two tids, once. */
static void name_lane(struct trace *t, struct client *c, uint32_t l)
{
	if (c->lanes_named & (UINT32_C(1) << l))
		return;
	c->lanes_named |= UINT32_C(1) << l;
	char name[64];
	snprintf(name, sizeof name, "queue %u%s host", l,
		 l ? "" : " (default)");
	wafer__json_event(&t->events, "M", "thread_name", c->pid, l + 1, 0);
	wafer__json_printf(&t->events, ",\"args\":{\"name\":\"%s\"}}", name);
	wafer__json_event(&t->events, "M", "thread_sort_index", c->pid, l + 1,
			  0);
	wafer__json_printf(&t->events, ",\"args\":{\"sort_index\":%u}}",
			   2 * l);
	if (!c->timing)
		return;
	snprintf(name, sizeof name, "queue %u%s device", l,
		 l ? "" : " (default)");
	wafer__json_event(&t->events, "M", "thread_name", c->pid,
			  DEVICE_TID + l, 0);
	wafer__json_printf(&t->events, ",\"args\":{\"name\":\"%s\"}}", name);
	wafer__json_event(&t->events, "M", "thread_sort_index", c->pid,
			  DEVICE_TID + l, 0);
	wafer__json_printf(&t->events, ",\"args\":{\"sort_index\":%u}}",
			   2 * l + 1);
}

/* Device spans are off for |c| from now on, for |why|. */
static void host_only(struct client *c, const char *why)
{
	c->timing = false;
	if (!c->why_host_only)
		c->why_host_only = why;
}

/* A sync of the base event this quick puts the anchor within 10 us. */
#define BASE_QUICK_NS 20000u

/* Lane |l|'s base event: recorded, synced, and the host time then. */
static bool base_of(struct trace *t, struct client *c, uint32_t l)
{
	(void)t;
	if (c->base[l].event)
		return true;
	const struct wafer__bridge *b = c->bridge;
	const struct wafer_server_ops *s = server_of(b);
	void *dev = b->device->device, *event = NULL;
	if (s->event_create(dev, WAFER_PLUGIN_EVENT_TIMING, &event) != WAFER_OK) {
		host_only(c, "event_create failed");
		return false;
	}
	/* The event finished between the record and the sync's return: the
	 * middle is off by at most half that time. The first sync on a
	 * queue can be slow (queued work, a worker waking, a context's
	 * first work), and then the middle is far off: record again, a few
	 * times at most, until a sync is quick. The anchor is the last
	 * record's. */
	uint64_t took = UINT64_MAX;
	for (int i = 0; i < 4 && took > BASE_QUICK_NS; i++) {
		uint64_t before = now_ns();
		if (s->event_record(dev, b->lanes.lane[l].queue, event) !=
			    WAFER_OK ||
		    s->event_sync(dev, event) != WAFER_OK) {
			s->event_destroy(dev, event);
			host_only(c, "event_record of a timing event failed");
			return false;
		}
		took = now_ns() - before;
		c->base[l].anchor_ns = before + took / 2;
	}
	c->base[l].event = event;
	return true;
}

/*===----------------------------------------------------------------------===
 * Device spans
 *===----------------------------------------------------------------------===*/

static void pending_free(const struct wafer__bridge *b, struct pending *p)
{
	const struct wafer_server_ops *s = server_of(b);
	if (p->start)
		s->event_destroy(b->device->device, p->start);
	if (p->end)
		s->event_destroy(b->device->device, p->end);
	free(p->name);
	free(p->args);
}

/* Writes |p|'s device span, its events found finished at |done_ns|. */
static void resolve_one(struct trace *t, struct client *c, struct pending *p,
			uint64_t done_ns)
{
	const struct wafer__bridge *b = c->bridge;
	const struct wafer_server_ops *s = server_of(b);
	void *dev = b->device->device;
	uint64_t from = 0, to = 0;
	void *base = c->base[p->lane].event;
	wafer_status st = c->timing && base ? WAFER_OK : WAFER_ERROR_NOT_SUPPORTED;
	if (st == WAFER_OK)
		st = s->event_elapsed(dev, base, p->start, &from);
	if (st == WAFER_OK)
		st = s->event_elapsed(dev, base, p->end, &to);
	if (st == WAFER_OK) {
		uint64_t begin = c->base[p->lane].anchor_ns + from;
		uint64_t end = c->base[p->lane].anchor_ns + to;
		/* The clocks are matched at one point only (base_of): a span
		 * is never shown before the host issued it, nor after the host
		 * saw it finished. */
		if (begin < p->submit_ns)
			begin = p->submit_ns;
		if (begin > done_ns)
			begin = done_ns;
		if (end > done_ns)
			end = done_ns;
		if (end < begin)
			end = begin;
		wafer__json_event(&t->events, "X", p->name, c->pid,
				  DEVICE_TID + p->lane, rel(t, begin));
		wafer__json_printf(&t->events,
				   ",\"dur\":%" PRIu64 ".%03u,\"cat\":\"device\","
				   "\"args\":{%s}}",
				   (end - begin) / 1000,
				   (unsigned)((end - begin) % 1000), p->args);
		t->device_spans++;
	} else if (c->timing && st == WAFER_ERROR_NOT_SUPPORTED) {
		host_only(c, "event_elapsed: the device has no timers");
	} /* else the queue failed: that span is lost, not the others */
	pending_free(b, p);
}

/* Reads |c|'s device spans whose work has finished, oldest first, up to
 * the first that has not; all of them, waiting, where |wait|. */
static void resolve(struct trace *t, struct client *c, bool wait)
{
	const struct wafer__bridge *b = c->bridge;
	const struct wafer_server_ops *s = server_of(b);
	size_t done = 0;
	for (; done < c->pending_count; done++) {
		struct pending *p = &c->pending[done];
		wafer_status st =
			wait ? s->event_sync(b->device->device, p->end)
			     : s->event_query(b->device->device, p->end);
		if (st == WAFER_ERROR_NOT_READY)
			break;
		resolve_one(t, c, p, now_ns());
	}
	if (done == 0)
		return;
	memmove(c->pending, c->pending + done,
		(c->pending_count - done) * sizeof *c->pending);
	c->pending_count -= done;
}

/* Frees |c|'s base events (after resolve(.., true)). */
static void drop_bases(struct client *c)
{
	const struct wafer__bridge *b = c->bridge;
	for (uint32_t l = 0; l < WAFER_MAX_QUEUES; l++)
		if (c->base[l].event) {
			server_of(b)->event_destroy(b->device->device,
						    c->base[l].event);
			c->base[l].event = NULL;
		}
}

/*===----------------------------------------------------------------------===
 * What a command says
 *===----------------------------------------------------------------------===*/

/* A command as the hooks see it: a bridge command, or a launch of the
 * direct and mutex channels (x without c). */
struct view {
	enum wafer__command_kind kind;
	uint32_t lane;
	const struct wafer__command *c;
	const struct wafer__execute_request *x;
};

static uint64_t handle_id(const struct wafer__bridge *b,
			  struct wafer__handle_slot *slot)
{
	return slot ? wafer__handle_table_handle(b->handles, slot).bits : 0;
}

/* Whether the command issues work on its queue's device: bracketed by
 * timing events. */
static bool on_device(enum wafer__command_kind kind)
{
	switch (kind) {
	case WAFER_COMMAND_EXECUTE:
	case WAFER_COMMAND_WRITE:
	case WAFER_COMMAND_READ:
	case WAFER_COMMAND_READ_ASYNC:
	case WAFER_COMMAND_COLLECTIVE:
	case WAFER_COMMAND_PEER_COPY:
	case WAFER_COMMAND_GRAPH_LAUNCH:
		return true;
	default:
		return false;
	}
}

/* The span's name and its args (JSON members) into |args|. */
static const char *describe(const struct wafer__bridge *b,
			    const struct view *v, struct wafer__json *args)
{
	const struct wafer__command *c = v->c;
	struct wafer__handle_slot *slot = NULL;
	size_t bytes = 0;
	switch (v->kind) {
	case WAFER_COMMAND_EXECUTE: {
		const struct wafer__execute_request *x = v->x;
		const struct wafer_launch *l = &x->launch;
		wafer__json_printf(args, "\"command\":\"execute\",\"kernel\":");
		wafer__json_string(args, l->kernel->op);
		wafer__json_printf(args, ",\"variant\":");
		wafer__json_string(args, l->kernel->variant);
		wafer__json_printf(args,
				   ",\"grid\":[%" PRIu64 ",%" PRIu64
				   ",%" PRIu64 "],\"block\":[%u,%u,%u],"
				   "\"handles\":[",
				   l->global[0], l->global[1], l->global[2],
				   l->local[0], l->local[1], l->local[2]);
		for (uint32_t i = 0; i < l->binding_count; i++) {
			wafer__json_printf(args, "%s%" PRIu64, i ? "," : "",
					   handle_id(b, x->bindings[i].slot));
			bytes += x->bindings[i].size;
		}
		wafer__json_printf(args, "],\"bytes\":%zu", bytes);
		return l->kernel->op;
	}
	case WAFER_COMMAND_RESERVE:
		slot = c->reserve.slot;
		bytes = c->reserve.size;
		break;
	case WAFER_COMMAND_WRITE:
		slot = c->write.slot;
		bytes = c->write.size;
		break;
	case WAFER_COMMAND_READ:
	case WAFER_COMMAND_READ_ASYNC:
		slot = c->read.slot;
		bytes = c->read.size;
		break;
	case WAFER_COMMAND_RELEASE:
		slot = c->release.slot;
		bytes = slot->size;
		break;
	case WAFER_COMMAND_PEER_COPY:
		slot = c->peer_copy.dst;
		bytes = c->peer_copy.size;
		break;
	case WAFER_COMMAND_COLLECTIVE:
		slot = c->collective.dst;
		break;
	case WAFER_COMMAND_GRAPH_LAUNCH:
		wafer__graph_describe(c->graph.graph, args);
		break;
	default:
		break;
	}
	if (slot)
		wafer__json_printf(args, "\"handle\":%" PRIu64 ",\"bytes\":%zu,",
				   handle_id(b, slot), bytes);
	wafer__json_printf(args, "\"command\":\"%s\"",
			   wafer__command_name(v->kind));
	return wafer__command_name(v->kind);
}

/* The arrow of a wafer_event_record (start) to a wafer_queue_wait on it
 * (end), at |ts| inside the command's span. */
static void flow(struct trace *t, struct client *c, const struct view *v,
		 uint64_t ts)
{
	const void *event = v->c->event.event;
	if (v->kind == WAFER_COMMAND_EVENT_RECORD) {
		uint64_t id = ++t->next_flow;
		t->flows[id % FLOWS].event = event;
		t->flows[id % FLOWS].id = id;
		wafer__json_event(&t->events, "s", "event", c->pid, v->lane + 1,
				  ts);
		wafer__json_printf(&t->events,
				   ",\"cat\":\"wait\",\"id\":%" PRIu64 "}", id);
		return;
	}
	for (uint64_t i = 0; i < FLOWS; i++) {
		uint64_t at = (t->next_flow - i) % FLOWS;
		if (t->flows[at].id && t->flows[at].event == event) {
			wafer__json_event(&t->events, "f", "event", c->pid,
					  v->lane + 1, ts);
			wafer__json_printf(&t->events,
					   ",\"cat\":\"wait\",\"bp\":\"e\","
					   "\"id\":%" PRIu64 "}",
					   t->flows[at].id);
			return;
		}
	}
}

/* The memory manager's counters, where they changed. */
static void count_memory(struct trace *t, struct client *c, uint64_t ts)
{
	wafer_memory_usage u = {.struct_size = sizeof u};
	wafer__memory_get_usage(c->bridge->memory, &u);
	if (c->counted && u.bytes_in_use == c->in_use &&
	    u.bytes_reserved == c->reserved && u.storage_allocs == c->allocs &&
	    u.storage_frees == c->frees && u.storage_maps == c->maps &&
	    u.storage_unmaps == c->unmaps)
		return;
	c->counted = true;
	c->in_use = u.bytes_in_use;
	c->reserved = u.bytes_reserved;
	c->allocs = u.storage_allocs;
	c->frees = u.storage_frees;
	c->maps = u.storage_maps;
	c->unmaps = u.storage_unmaps;
	wafer__json_event(&t->events, "C", "memory", c->pid, 0, ts);
	wafer__json_printf(&t->events,
			   ",\"args\":{\"in_use\":%" PRIu64 ",\"reserved\":%" PRIu64
			   "}}",
			   c->in_use, c->reserved);
	wafer__json_event(&t->events, "C", "storage calls", c->pid, 0, ts);
	wafer__json_printf(&t->events,
			   ",\"args\":{\"allocs\":%" PRIu64 ",\"frees\":%" PRIu64
			   ",\"maps\":%" PRIu64 ",\"unmaps\":%" PRIu64 "}}",
			   c->allocs, c->frees, c->maps, c->unmaps);
}

/*===----------------------------------------------------------------------===
 * The hooks
 *===----------------------------------------------------------------------===*/

static struct trace *enter(void)
{
	pthread_mutex_lock(&lock);
	struct trace *t = current;
	if (t)
		t->users++;
	pthread_mutex_unlock(&lock);
	return t;
}

static void leave(struct trace *t)
{
	pthread_mutex_lock(&lock);
	if (--t->users == 0)
		pthread_cond_broadcast(&idle);
	pthread_mutex_unlock(&lock);
}

/* Runs |v| with |run| on |b|, traced. The trace's lock is held around
 * its own work, never around the command. */
static wafer_status traced(struct wafer__bridge *b, const struct view *v,
			   wafer_status (*run)(struct wafer__bridge *, void *),
			   void *arg)
{
	struct trace *t = enter();
	if (!t) {
		wafer__trace_inside = true;
		wafer_status status = run(b, arg);
		wafer__trace_inside = false;
		return status;
	}
	const struct wafer_server_ops *s = server_of(b);
	void *dev = b->device->device;
	uint32_t l = v->lane < WAFER_MAX_QUEUES ? v->lane : 0;

	pthread_mutex_lock(&lock);
	struct client *c = t->events.length < TEXT_MAX ? client_of(t, b) : NULL;
	if (!c)
		t->dropped++;
	bool timed = c && c->timing && on_device(v->kind) &&
		     b->lanes.lane[l].queue && base_of(t, c, l);
	void *start = NULL;
	if (timed && (s->event_create(dev, WAFER_PLUGIN_EVENT_TIMING, &start) !=
			      WAFER_OK ||
		      s->event_record(dev, b->lanes.lane[l].queue, start) !=
			      WAFER_OK)) {
		if (start)
			s->event_destroy(dev, start);
		start = NULL;
		timed = false;
	}
	pthread_mutex_unlock(&lock);

	uint64_t begin = now_ns();
	wafer__trace_inside = true;
	wafer_status status = run(b, arg);
	wafer__trace_inside = false;
	uint64_t end = now_ns();

	/* The caller reads the failure's detail after this: kept whole
	 * across the trace's own plugin calls. */
	char *detail = status != WAFER_OK ? strdup(wafer__error_detail()) : NULL;

	pthread_mutex_lock(&lock);
	if (!c)
		goto out;
	t->commands++;
	name_lane(t, c, l);
	struct wafer__json args = {0};
	const char *name = describe(b, v, &args);
	wafer__json_event(&t->events, "X", name, c->pid, l + 1,
			  rel(t, begin));
	wafer__json_printf(&t->events,
			   ",\"dur\":%" PRIu64 ".%03u,\"cat\":\"host\","
			   "\"args\":{%s}}",
			   (end - begin) / 1000, (unsigned)((end - begin) % 1000),
			   args.data ? args.data : "");
	if (v->kind == WAFER_COMMAND_EVENT_RECORD ||
	    v->kind == WAFER_COMMAND_QUEUE_WAIT)
		flow(t, c, v, rel(t, begin));
	if (v->kind == WAFER_COMMAND_TIMER_END && status == WAFER_OK) {
		wafer__json_event(&t->events, "C", "autotune measurement",
				  c->pid, 0, rel(t, end));
		wafer__json_printf(&t->events,
				   ",\"args\":{\"device_ns\":%" PRIu64 "}}",
				   *v->c->timer.elapsed_ns);
	}
	if (status != WAFER_OK) {
		t->errors++;
		wafer__json_event(&t->events, "i", "error", c->pid, l + 1,
				  rel(t, end));
		wafer__json_printf(&t->events,
				   ",\"s\":\"t\",\"cat\":\"error\",\"args\":{"
				   "%s,\"status\":\"%s\",\"detail\":",
				   args.data ? args.data : "",
				   wafer_status_string(status));
		wafer__json_string(&t->events, detail);
		wafer__json_printf(&t->events, "}}");
	}
	count_memory(t, c, rel(t, end));

	void *stop = NULL;
	if (timed && (s->event_create(dev, WAFER_PLUGIN_EVENT_TIMING, &stop) !=
			      WAFER_OK ||
		      !b->lanes.lane[l].queue ||
		      s->event_record(dev, b->lanes.lane[l].queue, stop) !=
			      WAFER_OK)) {
		if (stop)
			s->event_destroy(dev, stop);
		stop = NULL;
	}
	if (start && !stop) {
		/* Read at a sync like the others; it names no span. */
		s->event_sync(dev, start);
		s->event_destroy(dev, start);
		start = NULL;
	}
	if (!timed)
		t->host_only_spans += on_device(v->kind);
	if (start && stop && c->pending_count == c->pending_capacity) {
		size_t cap = c->pending_capacity ? 2 * c->pending_capacity : 64;
		struct pending *grown = realloc(c->pending, cap * sizeof *grown);
		if (grown) {
			c->pending = grown;
			c->pending_capacity = cap;
		}
	}
	if (start && stop && c->pending_count < c->pending_capacity) {
		c->pending[c->pending_count++] = (struct pending){
			.start = start,
			.end = stop,
			.lane = l,
			.submit_ns = begin,
			.name = strdup(name),
			.args = args.data ? strdup(args.data) : strdup(""),
		};
	} else if (start) {
		struct pending p = {.start = start, .end = stop};
		s->event_sync(dev, stop);
		pending_free(b, &p);
	}
	wafer__json_free(&args);
	/* After a sync or read the spans are ready; a queue that closes
	 * takes its base event with it. */
	if (c->pending_count >= PENDING_MAX || v->kind == WAFER_COMMAND_SYNC ||
	    v->kind == WAFER_COMMAND_READ || v->kind == WAFER_COMMAND_QUEUE_CLOSE)
		resolve(t, c, c->pending_count >= PENDING_MAX ||
				      v->kind == WAFER_COMMAND_QUEUE_CLOSE);
	if (v->kind == WAFER_COMMAND_QUEUE_CLOSE && status == WAFER_OK &&
	    c->base[l].event) {
		s->event_destroy(dev, c->base[l].event);
		c->base[l].event = NULL;
	}
out:
	pthread_mutex_unlock(&lock);
	leave(t);
	if (detail) {
		wafer__fail(status, "%s", detail);
		free(detail);
	}
	return status;
}

static wafer_status run_command(struct wafer__bridge *b, void *c)
{
	return wafer__bridge_run(b, c);
}

static wafer_status run_execute(struct wafer__bridge *b, void *r)
{
	return wafer__bridge_execute(b, r);
}

wafer_status wafer__trace_run(struct wafer__bridge *bridge,
			      struct wafer__command *c)
{
	struct view v = {.kind = c->kind,
			 .lane = wafer__command_lane(c),
			 .c = c,
			 .x = c->kind == WAFER_COMMAND_EXECUTE ? &c->execute
							       : NULL};
	if (wafer__command_queue(c->kind) == WAFER_COMMAND_QUEUE_CLIENT)
		v.lane = 0;
	return traced(bridge, &v, run_command, c);
}

wafer_status wafer__trace_execute(struct wafer__bridge *bridge,
				  struct wafer__execute_request *r)
{
	struct view v = {.kind = WAFER_COMMAND_EXECUTE, .lane = r->lane, .x = r};
	return traced(bridge, &v, run_execute, r);
}

static void forget_client(struct trace *t, size_t i)
{
	struct client *c = t->clients[i];
	resolve(t, c, true);
	drop_bases(c);
	free(c->pending);
	free(c);
	t->clients[i] = t->clients[--t->client_count];
}

void wafer__trace_bridge_closed(struct wafer__bridge *bridge)
{
	struct trace *t = enter();
	if (!t)
		return;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < t->client_count; i++)
		if (t->clients[i]->bridge == bridge) {
			forget_client(t, i);
			break;
		}
	pthread_mutex_unlock(&lock);
	leave(t);
}

/*===----------------------------------------------------------------------===
 * Begin and end
 *===----------------------------------------------------------------------===*/

WAFER_API wafer_status wafer_trace_begin(wafer_runtime *runtime,
					 const char *path)
{
	wafer_status status = wafer__check_not_null(
		"wafer_trace_begin", runtime, "runtime", path, "path", "", "");
	if (status != WAFER_OK)
		return status;
	FILE *f = fopen(path, "w");
	if (!f)
		return wafer__fail(WAFER_ERROR_IO,
				   "wafer_trace_begin: cannot create '%s': %s",
				   path, strerror(errno));
	fclose(f);
	struct trace *t = calloc(1, sizeof *t);
	if (!t || !(t->path = strdup(path))) {
		free(t);
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "wafer_trace_begin: out of host memory");
	}
	t->runtime = runtime;
	t->start_ns = now_ns();
	pthread_mutex_lock(&lock);
	bool busy = current != NULL;
	if (!busy) {
		current = t;
		atomic_store_explicit(&wafer__trace_active, true,
				      memory_order_relaxed);
	}
	pthread_mutex_unlock(&lock);
	if (busy) {
		free(t->path);
		free(t);
		return wafer__fail(WAFER_ERROR_NOT_READY,
				   "wafer_trace_begin: a trace is already "
				   "being recorded in this process (one at a "
				   "time; end it with wafer_trace_end)");
	}
	wafer__log_info("core", "tracing commands to %s", path);
	return WAFER_OK;
}

WAFER_API wafer_status wafer_trace_end(wafer_runtime *runtime)
{
	pthread_mutex_lock(&lock);
	struct trace *t = current;
	if (!t || t->runtime != runtime) {
		pthread_mutex_unlock(&lock);
		return wafer__fail(WAFER_ERROR_NOT_FOUND,
				   "wafer_trace_end: no trace of this runtime "
				   "is being recorded (wafer_trace_begin)");
	}
	current = NULL;
	atomic_store_explicit(&wafer__trace_active, false,
			      memory_order_relaxed);
	while (t->users)
		pthread_cond_wait(&idle, &lock);
	/* Work not synced yet: its spans are read now, waiting for it. */
	while (t->client_count)
		forget_client(t, t->client_count - 1);
	pthread_mutex_unlock(&lock);
	uint64_t end = now_ns();

	struct wafer__json other = {0};
	wafer__json_printf(&other,
			   "\"producer\":\"wafer " PACKAGE_VERSION "\","
			   "\"pid\":%ld,\"duration_ns\":%" PRIu64
			   ",\"commands\":%" PRIu64 ",\"device_spans\":%" PRIu64
			   ",\"host_only_spans\":%" PRIu64 ",\"errors\":%" PRIu64
			   ",\"dropped_commands\":%" PRIu64
			   ",\"device_timing\":\"%s\",\"complete\":%s",
			   (long)getpid(), end - t->start_ns, t->commands,
			   t->device_spans, t->host_only_spans, t->errors,
			   t->dropped,
			   t->device_spans ? "events"
			   : t->host_only_spans
				   ? "none: host spans only (the plugin has no "
				     "timing events)"
				   : "none",
			   t->events.failed || t->dropped ? "false" : "true");
	bool written = !other.failed &&
		       wafer__json_write_file(t->path, &t->events, &other);
	int err = errno;
	wafer__json_free(&other);
	wafer__json_free(&t->events);
	free(t->clients);
	wafer_status status = WAFER_OK;
	if (!written)
		status = wafer__fail(WAFER_ERROR_IO,
				     "wafer_trace_end: writing '%s' failed: %s",
				     t->path, strerror(err));
	else
		wafer__log_info("core", "trace written to %s", t->path);
	free(t->path);
	free(t);
	return status;
}

wafer_status wafer__trace_runtime_opened(wafer_runtime *runtime,
					 const struct wafer__config *config)
{
	const struct wafer__config_entry *e =
		wafer__config_lookup(config, "core", "trace");
	if (!e || !*e->value)
		return WAFER_OK;
	wafer_status status = wafer_trace_begin(runtime, e->value);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s: [core] trace", e->origin);
	return WAFER_OK;
}

void wafer__trace_runtime_closing(wafer_runtime *runtime)
{
	pthread_mutex_lock(&lock);
	bool ours = current && current->runtime == runtime;
	pthread_mutex_unlock(&lock);
	if (ours && wafer_trace_end(runtime) != WAFER_OK)
		wafer__log_warn("core", "%s", wafer__error_detail());
}
