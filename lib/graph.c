/* wafer — SPDX-License-Identifier: MIT
 * graph.c: graphs (wafer/graph.h; how they work: lib/graph.h). The
 * public calls check their arguments in the caller's thread and send a
 * command; everything else runs on the bridge's thread. */
#include "build-config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bridge.h"
#include "lib/client.h"
#include "lib/comm.h"
#include "lib/error.h"
#include "lib/graph.h"
#include "lib/list.h"
#include "lib/log.h"
#include "lib/queue.h"
#include "lib/trace_json.h"

/* Memory the graphs keep after its handle was released (graph.h): a
 * stand-in slot with the released one's memory, shared by every binding
 * that used it. */
struct held {
	struct wafer__handle_slot slot;
	uint32_t refs;
};

/* A handle slot the steps use. |shadow| is the memory as the steps see
 * it (slice, size, index) and where replayed commands track their lane;
 * |source| the table slot while a handle names it, else |held|. */
struct binding {
	struct wafer__handle_slot shadow;
	struct wafer__handle_slot *source;
	struct held *held;
};

/* Where a launch's binding points: which binding, at which range. */
struct use {
	uint32_t binding;
	size_t offset, size;
};

enum step_kind { STEP_LAUNCH, STEP_COMMAND };

struct step {
	enum step_kind kind;
	/* STEP_LAUNCH: the plugin's launch record, its bindings |resolved|
	 * from |uses| (at capture and at each rebind), its parameters a
	 * copy. */
	struct wafer_launch launch;
	struct use *uses;
	struct wafer_binding *resolved;
	void *params;
	/* STEP_COMMAND: the command as captured, its slots the bindings'
	 * shadows, a write's source |bytes| (a copy). */
	struct wafer__command command;
	void *bytes;
	/* The plugin's graph of this launch and the |native_count| - 1
	 * after it, or NULL. */
	void *native;
	uint32_t native_count;
};

struct wafer_graph {
	wafer_client *client;
	uint32_t lane;	   /* while capturing */
	bool capturing;
	/* The first failure while capturing that left a step out (out of
	 * host memory): the end of capture returns it. */
	wafer_status failed;
	/* A binding's memory could not be kept (graph.h, adopt). */
	bool broken;
	struct step *steps;
	uint32_t step_count, step_cap;
	struct binding **bindings;
	uint32_t binding_count, binding_cap;
	uint32_t launches, native_launches;
	/* The bridge's graphs (bridge->graphs). */
	wafer_graph *prev, *next;
};

/*===----------------------------------------------------------------------===
 * Building
 *===----------------------------------------------------------------------===*/

static wafer_status out_of_memory(wafer_graph *g, const char *what)
{
	if (g->failed == WAFER_OK)
		g->failed = WAFER_ERROR_OUT_OF_MEMORY;
	return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
			   "graph capture on queue %u: out of host memory for "
			   "%s",
			   g->lane, what);
}

static struct step *new_step(wafer_graph *g)
{
	if (g->step_count == g->step_cap) {
		uint32_t cap = g->step_cap ? 2 * g->step_cap : 16;
		struct step *steps = realloc(g->steps, cap * sizeof *steps);
		if (!steps)
			return NULL;
		g->steps = steps;
		g->step_cap = cap;
	}
	struct step *s = &g->steps[g->step_count];
	memset(s, 0, sizeof *s);
	return s;
}

/* The binding of table slot |slot|, added at first use. */
static wafer_status binding_of(wafer_graph *g, struct wafer__handle_slot *slot,
			       uint32_t *out_index)
{
	for (uint32_t i = g->binding_count; i-- > 0;) {
		if (g->bindings[i]->source == slot) {
			*out_index = i;
			return WAFER_OK;
		}
	}
	if (g->binding_count == g->binding_cap) {
		uint32_t cap = g->binding_cap ? 2 * g->binding_cap : 8;
		struct binding **b = realloc(g->bindings, cap * sizeof *b);
		if (!b)
			return out_of_memory(g, "a binding");
		g->bindings = b;
		g->binding_cap = cap;
	}
	struct binding *b = calloc(1, sizeof *b);
	if (!b)
		return out_of_memory(g, "a binding");
	b->shadow.index = slot->index;
	b->shadow.size = slot->size;
	b->shadow.slice = slot->slice;
	b->source = slot;
	slot->graph_refs++;
	*out_index = g->binding_count;
	g->bindings[g->binding_count++] = b;
	return WAFER_OK;
}

/* A launch's bindings from its uses and the bindings' memory now. */
static void resolve(const wafer_graph *g, struct step *s)
{
	for (uint32_t i = 0; i < s->launch.binding_count; i++) {
		const struct use *u = &s->uses[i];
		const struct wafer__slice *slice =
			&g->bindings[u->binding]->shadow.slice;
		s->resolved[i] = (struct wafer_binding){
			.struct_size = sizeof(struct wafer_binding),
			.resource = slice->resource,
			.offset = slice->offset + u->offset,
			.size = u->size,
		};
	}
}

static void free_step(struct step *s)
{
	free(s->uses);
	free(s->resolved);
	free(s->params);
	free(s->bytes);
}

static wafer_status record_launch(wafer_graph *g,
				  const struct wafer__execute_request *r)
{
	const struct wafer_kernel *kernel = r->launch.kernel;
	uint32_t n = r->launch.binding_count;
	for (uint32_t i = 0; i < n; i++) {
		wafer_status status =
			wafer__bridge_check_backed(r->bindings[i].slot, kernel->op);
		if (status != WAFER_OK)
			return status;
	}
	struct step *s = new_step(g);
	if (!s)
		return out_of_memory(g, "a step");
	s->kind = STEP_LAUNCH;
	s->launch = r->launch;
	s->uses = calloc(n ? n : 1, sizeof *s->uses);
	s->resolved = calloc(n ? n : 1, sizeof *s->resolved);
	s->params = r->launch.params_size ? malloc(r->launch.params_size)
					  : NULL;
	if (!s->uses || !s->resolved || (r->launch.params_size && !s->params)) {
		free_step(s);
		return out_of_memory(g, "a launch");
	}
	if (s->params)
		memcpy(s->params, r->launch.params, r->launch.params_size);
	s->launch.params = s->params;
	for (uint32_t i = 0; i < n; i++) {
		const struct wafer__command_binding *b = &r->bindings[i];
		wafer_status status = binding_of(g, b->slot, &s->uses[i].binding);
		if (status != WAFER_OK) {
			free_step(s);
			return status;
		}
		s->uses[i].offset = b->offset;
		s->uses[i].size = b->size;
	}
	resolve(g, s);
	s->launch.bindings = s->resolved;
	g->step_count++;
	g->launches++;
	return WAFER_OK;
}

/* A write (its bytes copied), a host callback or a collective. */
static wafer_status record_command(wafer_graph *g,
				   const struct wafer__command *c)
{
	struct step *s = new_step(g);
	if (!s)
		return out_of_memory(g, "a step");
	s->kind = STEP_COMMAND;
	s->command = *c;
	if (c->kind == WAFER_COMMAND_WRITE) {
		uint32_t index;
		wafer_status status =
			wafer__bridge_check_backed(c->write.slot, "write");
		if (status == WAFER_OK)
			status = binding_of(g, c->write.slot, &index);
		if (status != WAFER_OK)
			return status;
		s->bytes = malloc(c->write.size);
		if (!s->bytes)
			return out_of_memory(g, "a write's bytes");
		memcpy(s->bytes, c->write.src, c->write.size);
		s->command.write.src = s->bytes;
		s->command.write.registered = false;
		s->command.write.slot = &g->bindings[index]->shadow;
	} else if (c->kind == WAFER_COMMAND_COLLECTIVE) {
		/* Its operands become the graph's bindings, as a launch's
		 * do; the communicator is checked again at each replay. */
		struct wafer__handle_slot **ends[2] = {&s->command.collective.src,
						       &s->command.collective.dst};
		for (int e = 0; e < 2; e++) {
			uint32_t index;
			if (!*ends[e])
				continue;
			wafer_status status = wafer__bridge_check_backed(
				*ends[e], "collective");
			if (status == WAFER_OK)
				status = binding_of(g, *ends[e], &index);
			if (status != WAFER_OK)
				return status;
			*ends[e] = &g->bindings[index]->shadow;
		}
	}
	g->step_count++;
	return WAFER_OK;
}

wafer_status wafer__graph_refuse(int kind, uint32_t lane)
{
	return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
			   "%s on queue %u: not allowed while the queue "
			   "captures a graph (it waits for the device, orders "
			  "with another queue or names what a replay could "
			  "outlive); end the capture "
			  "(wafer_queue_end_capture) or issue it on another "
			  "queue",
			  wafer__command_name((enum wafer__command_kind)kind),
			  lane);
}

wafer_status wafer__graph_capture(struct wafer__bridge *bridge,
				  struct wafer__command *c)
{
	uint32_t l = wafer__command_lane(c);
	wafer_graph *g = bridge->capture[l];

	if (wafer__command_capture(c->kind) == WAFER_COMMAND_CAPTURE_REFUSE)
		return wafer__graph_refuse(c->kind, l);
	if (c->kind == WAFER_COMMAND_EXECUTE)
		return record_launch(g, &c->execute);
	return record_command(g, c);
}

wafer_status wafer__graph_capture_execute(struct wafer__bridge *bridge,
					  struct wafer__execute_request *r)
{
	return record_launch(bridge->capture[r->lane], r);
}

/*===----------------------------------------------------------------------===
 * Native graphs: each run of launches recorded by the plugin
 *===----------------------------------------------------------------------===*/

static void drop_native(struct wafer__bridge *bridge, wafer_graph *g)
{
	const struct wafer_server_ops *server = bridge->device->plugin->server;
	for (uint32_t i = 0; i < g->step_count; i++) {
		if (g->steps[i].native)
			server->graph_destroy(bridge->plugin_device,
					      g->steps[i].native);
		g->steps[i].native = NULL;
		g->steps[i].native_count = 0;
	}
	g->native_launches = 0;
}

/* Steps [first, first + n) recorded by the plugin on the bridge's own
 * graph queue; NULL (and the core replays them) where it cannot. */
static void *record_native(struct wafer__bridge *bridge, wafer_graph *g,
			   uint32_t first, uint32_t n)
{
	const struct wafer_server_ops *server = bridge->device->plugin->server;
	void *dev = bridge->plugin_device, *native = NULL;
	wafer_status status = WAFER_OK;

	if (!bridge->graph_queue)
		status = server->queue_create(dev, &bridge->graph_queue);
	if (status == WAFER_OK)
		status = server->graph_begin(dev, bridge->graph_queue);
	if (status != WAFER_OK) {
		wafer__log_debug("core", "native graph: %s: %s",
				 bridge->device->backend,
				 wafer__error_detail());
		wafer__error_clear();
		return NULL;
	}
	for (uint32_t i = first; i < first + n && status == WAFER_OK; i++)
		status = bridge->launch(dev, bridge->graph_queue,
					&g->steps[i].launch);
	wafer_status ended = server->graph_end(dev, bridge->graph_queue,
					       &native);
	if (status == WAFER_OK)
		status = ended;
	if (status != WAFER_OK) {
		if (ended == WAFER_OK && native)
			server->graph_destroy(dev, native);
		wafer__log_debug("core",
				 "native graph of %u launches: %s; the core "
				 "replays them",
				 n, wafer__error_detail());
		wafer__error_clear();
		return NULL;
	}
	return native;
}

/* Where the plugin has native graphs: one for each run of two or more
 * launches. */
static void build_native(struct wafer__bridge *bridge, wafer_graph *g)
{
	const struct wafer_server_ops *server = bridge->device->plugin->server;
	if (!server->graph_begin)
		return;
	for (uint32_t i = 0; i < g->step_count;) {
		uint32_t n = 0;
		while (i + n < g->step_count &&
		       g->steps[i + n].kind == STEP_LAUNCH)
			n++;
		if (n >= 2) {
			g->steps[i].native = record_native(bridge, g, i, n);
			if (g->steps[i].native) {
				g->steps[i].native_count = n;
				g->native_launches += n;
			}
		}
		i += n ? n : 1;
	}
	/* Only while recording: a queue the plugin runs nothing on could
	 * still cost it (cpu runs launches on the calling thread only while
	 * a device has one queue). */
	if (bridge->graph_queue)
		server->queue_destroy(bridge->plugin_device, bridge->graph_queue);
	bridge->graph_queue = NULL;
}

/*===----------------------------------------------------------------------===
 * Memory the graphs keep
 *===----------------------------------------------------------------------===*/

static void held_drop(struct wafer__bridge *bridge, struct held *h)
{
	if (--h->refs)
		return;
	wafer__bridge_release_memory(bridge, 0, &h->slot);
	free(h);
}

bool wafer__graph_adopt(struct wafer__bridge *bridge,
			struct wafer__handle_slot *slot)
{
	struct held *h = calloc(1, sizeof *h);
	for (wafer_graph *g = bridge->graphs; g; g = g->next) {
		for (uint32_t i = 0; i < g->binding_count; i++) {
			struct binding *b = g->bindings[i];
			if (b->source != slot)
				continue;
			b->source = NULL;
			b->held = h;
			if (h)
				h->refs++;
			else
				g->broken = true;
		}
	}
	slot->graph_refs = 0;
	if (!h)
		return false;
	h->slot.index = slot->index;
	h->slot.size = slot->size;
	h->slot.slice = slot->slice;
	h->slot.foreign = slot->foreign;
	h->slot.lane = slot->lane;
	h->slot.lane_at = slot->lane_at;
	return true;
}

/* Lets go of binding |b|'s memory. */
static void unbind(struct wafer__bridge *bridge, struct binding *b)
{
	if (b->source)
		b->source->graph_refs--;
	else if (b->held)
		held_drop(bridge, b->held);
	b->source = NULL;
	b->held = NULL;
}

static void destroy(struct wafer__bridge *bridge, wafer_graph *g)
{
	WAFER__LIST_UNLINK(bridge->graphs, g, prev, next);
	drop_native(bridge, g);
	for (uint32_t i = 0; i < g->binding_count; i++) {
		unbind(bridge, g->bindings[i]);
		free(g->bindings[i]);
	}
	for (uint32_t i = 0; i < g->step_count; i++)
		free_step(&g->steps[i]);
	free(g->bindings);
	free(g->steps);
	free(g);
	if (!bridge->graphs)
		wafer__bridge_release_held_programs(bridge);
}

void wafer__graph_bridge_fini(struct wafer__bridge *bridge)
{
	while (bridge->graphs) {
		wafer_graph *g = bridge->graphs;
		if (g->capturing)
			wafer__log_warn("core",
					"client closed while queue %u captured "
					"a graph: the capture (%u steps) is "
					"discarded",
					g->lane, g->step_count);
		destroy(bridge, g);
	}
	memset(bridge->capture, 0, sizeof bridge->capture);
	bridge->capturing = 0;
	if (bridge->graph_queue)
		bridge->device->plugin->server->queue_destroy(
			bridge->plugin_device, bridge->graph_queue);
	bridge->graph_queue = NULL;
}

/*===----------------------------------------------------------------------===
 * On the bridge's thread (lib/command.def)
 *===----------------------------------------------------------------------===*/

wafer_status wafer__graph_run_begin(struct wafer__bridge *bridge,
				    struct wafer__command *c)
{
	uint32_t l = wafer__command_lane(c);
	wafer_graph *g = c->graph.graph;

	if (bridge->capture[l]) /* the client refused it first */
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_queue_begin_capture: queue %u is "
				   "capturing already",
				   l);
	g->lane = l;
	g->capturing = true;
	WAFER__LIST_PUSH(bridge->graphs, g, prev, next);
	bridge->capture[l] = g;
	bridge->capturing++;
	return WAFER_OK;
}

wafer_status wafer__graph_run_end(struct wafer__bridge *bridge,
				  struct wafer__command *c)
{
	uint32_t l = wafer__command_lane(c);
	wafer_graph *g = bridge->capture[l];

	if (!g)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_queue_end_capture: queue %u is not "
				   "capturing (wafer_queue_begin_capture)",
				   l);
	bridge->capture[l] = NULL;
	bridge->capturing--;
	g->capturing = false;
	if (g->failed != WAFER_OK) {
		wafer_status failed = g->failed;
		destroy(bridge, g);
		return wafer__fail(failed,
				   "wafer_queue_end_capture: queue %u: a call "
				   "failed while capturing and left the graph "
				   "incomplete; the capture is discarded",
				   l);
	}
	build_native(bridge, g);
	*c->graph.out = g;
	return WAFER_OK;
}

wafer_status wafer__graph_run_launch(struct wafer__bridge *bridge,
				     struct wafer__command *c)
{
	uint32_t l = wafer__command_lane(c);
	wafer_graph *g = c->graph.graph;
	struct wafer__lane *lane = &bridge->lanes.lane[l];
	const struct wafer_server_ops *server = bridge->device->plugin->server;
	void *dev = bridge->plugin_device;

	if (g->broken)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "wafer_graph_launch: graph %p lost the "
				   "memory of a released handle (out of host "
				  "memory when it was released)",
				  (void *)g);
	if (bridge->lanes.multi && g->binding_count) {
		/* The replay is one use of every handle it binds, after
		 * their last uses on other queues. */
		struct wafer__handle_slot *one[1];
		for (uint32_t i = 0; i < g->binding_count; i++) {
			struct binding *b = g->bindings[i];
			one[0] = b->source ? b->source : &b->held->slot;
			wafer_status status = wafer__lanes_touch_slow(
				&bridge->lanes, l, one, 1);
			if (status != WAFER_OK)
				return status;
		}
	}
	lane->dirty = true;
	for (uint32_t i = 0; i < g->step_count;) {
		struct step *s = &g->steps[i];
		wafer_status status;
		if (s->native) {
			status = server->graph_launch(dev, lane->queue, s->native);
			i += s->native_count;
		} else if (s->kind == STEP_LAUNCH) {
			status = bridge->launch(dev, lane->queue, &s->launch);
			i++;
		} else if (s->command.kind == WAFER_COMMAND_COLLECTIVE &&
			   !wafer__comm_is_open(s->command.collective.token)) {
			status = wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					     "its communicator %p was closed "
					     "after the capture; capture again "
					     "on an open one",
					     (const void *)s->command.collective
						     .token);
			i++;
		} else {
			struct wafer__command replay = s->command;
			replay.queue = (uint8_t)(l + 1);
			status = wafer__bridge_run(bridge, &replay);
			i++;
		}
		if (status != WAFER_OK)
			return wafer__fail_context(status,
						   "graph %p step %u on %s "
						   "queue %u",
						   (void *)g, i - 1,
						   bridge->device->backend, l);
	}
	return WAFER_OK;
}

void wafer__graph_describe(const wafer_graph *g, struct wafer__json *args)
{
	enum { most = 32 }; /* distinct kernels listed */
	const char *names[most];
	uint32_t counts[most], distinct = 0, others = 0;

	for (uint32_t i = 0; i < g->step_count; i++) {
		if (g->steps[i].kind != STEP_LAUNCH)
			continue;
		const char *op = g->steps[i].launch.kernel->op;
		uint32_t k = 0;
		while (k < distinct && strcmp(names[k], op) != 0)
			k++;
		if (k == distinct && distinct == most) {
			others++;
			continue;
		}
		if (k == distinct) {
			names[distinct] = op;
			counts[distinct++] = 0;
		}
		counts[k]++;
	}
	wafer__json_printf(args,
			   "\"graph\":\"%p\",\"steps\":%u,\"launches\":%u,"
			   "\"native_launches\":%u,\"kernels\":{",
			   (const void *)g, g->step_count, g->launches,
			   g->native_launches);
	for (uint32_t k = 0; k < distinct; k++) {
		wafer__json_printf(args, "%s", k ? "," : "");
		wafer__json_string(args, names[k]);
		wafer__json_printf(args, ":%u", counts[k]);
	}
	wafer__json_printf(args, "}");
	if (others)
		wafer__json_printf(args, ",\"other_launches\":%u", others);
	wafer__json_printf(args, ",");
}

wafer_status wafer__graph_run_rebind(struct wafer__bridge *bridge,
				     struct wafer__command *c)
{
	wafer_graph *g = c->graph.graph;
	struct wafer__handle_slot *from = c->graph.from, *to = c->graph.to;
	bool found = false;

	wafer_status status = wafer__bridge_check_backed(to, "wafer_graph_rebind");
	if (status != WAFER_OK)
		return status;
	for (uint32_t i = 0; i < g->binding_count; i++) {
		struct binding *b = g->bindings[i];
		if (b->source != from)
			continue;
		if (to->size != b->shadow.size)
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "wafer_graph_rebind: the new handle "
					   "has %zu bytes, the one it replaces "
					  "%zu",
					  to->size, b->shadow.size);
		found = true;
	}
	if (!found)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_graph_rebind: graph %p does not use "
				   "the handle of slot %u (a handle its steps "
				  "used at capture or got from an earlier "
				  "rebind)",
				  (void *)g, from->index);
	if (from == to)
		return WAFER_OK;
	for (uint32_t i = 0; i < g->binding_count; i++) {
		struct binding *b = g->bindings[i];
		if (b->source != from)
			continue;
		unbind(bridge, b);
		b->source = to;
		to->graph_refs++;
		b->shadow.slice = to->slice;
	}
	for (uint32_t i = 0; i < g->step_count; i++)
		if (g->steps[i].kind == STEP_LAUNCH)
			resolve(g, &g->steps[i]);
	/* The native graphs hold the old memory: record them anew. */
	if (g->native_launches) {
		drop_native(bridge, g);
		build_native(bridge, g);
	}
	return WAFER_OK;
}

wafer_status wafer__graph_run_info(struct wafer__bridge *bridge,
				   struct wafer__command *c)
{
	wafer_graph *g = c->graph.graph;
	wafer_graph_info *out = c->graph.info;
	(void)bridge;

	out->steps = g->step_count;
	out->launches = g->launches;
	out->native_launches = g->native_launches;
	out->handles = g->binding_count;
	out->held_bytes = 0;
	for (uint32_t i = 0; i < g->binding_count; i++)
		if (g->bindings[i]->held)
			out->held_bytes += g->bindings[i]->shadow.size;
	return WAFER_OK;
}

wafer_status wafer__graph_run_release(struct wafer__bridge *bridge,
				      struct wafer__command *c)
{
	destroy(bridge, c->graph.graph);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The public calls
 *===----------------------------------------------------------------------===*/

static wafer_status submit_on(wafer_queue *queue, struct wafer__command *c)
{
	c->queue = (uint8_t)(queue->lane + 1);
	return wafer__client_submit(queue->client, c);
}

static uint32_t lane_bit(const wafer_queue *queue)
{
	return UINT32_C(1) << queue->lane;
}

WAFER_API wafer_status wafer_queue_begin_capture(wafer_queue *queue)
{
	if (!queue)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_queue_begin_capture: queue is NULL");
	struct wafer__client_queues *queues = wafer__client_queues(queue->client);
	wafer_graph *g = calloc(1, sizeof *g);
	if (!g)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "wafer_queue_begin_capture: out of memory");
	g->client = queue->client;
	/* Set first, so that from here on the calls the capture refuses
	 * fail in their caller's thread. */
	if (atomic_fetch_or(&queues->capturing, lane_bit(queue)) &
	    lane_bit(queue)) {
		free(g);
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_queue_begin_capture: queue %u is "
				   "capturing already",
				   queue->lane);
	}
	struct wafer__command c = {
		.kind = WAFER_COMMAND_GRAPH_BEGIN,
		.graph = {.graph = g},
	};
	wafer_status status = submit_on(queue, &c);
	if (status != WAFER_OK) {
		atomic_fetch_and(&queues->capturing, ~lane_bit(queue));
		free(g);
	}
	return status;
}

WAFER_API wafer_status wafer_queue_end_capture(wafer_queue *queue,
					       wafer_graph **out_graph)
{
	if (out_graph)
		*out_graph = NULL;
	if (!queue || !out_graph)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_queue_end_capture: %s is NULL",
				   !queue ? "queue" : "out_graph");
	struct wafer__client_queues *queues = wafer__client_queues(queue->client);
	if (!(atomic_load(&queues->capturing) & lane_bit(queue)))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_queue_end_capture: queue %u is not "
				   "capturing (wafer_queue_begin_capture)",
				   queue->lane);
	wafer_graph *g = NULL;
	struct wafer__command c = {
		.kind = WAFER_COMMAND_GRAPH_END,
		.graph = {.out = &g},
	};
	wafer_status status = submit_on(queue, &c);
	atomic_fetch_and(&queues->capturing, ~lane_bit(queue));
	*out_graph = g;
	return status;
}

WAFER_API wafer_status wafer_graph_launch(wafer_graph *graph,
					  wafer_queue *queue)
{
	if (!graph || !queue)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_graph_launch: %s is NULL",
				   !graph ? "graph" : "queue");
	if (graph->client != queue->client)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_graph_launch: graph %p and queue %u "
				   "belong to different clients",
				   (void *)graph, queue->lane);
	struct wafer__command c = {
		.kind = WAFER_COMMAND_GRAPH_LAUNCH,
		.graph = {.graph = graph},
	};
	return submit_on(queue, &c);
}

WAFER_API wafer_status wafer_graph_rebind(wafer_graph *graph,
					  wafer_handle from, wafer_handle to)
{
	if (!graph)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_graph_rebind: graph is NULL");
	struct wafer__handle_table *handles = wafer__client_handles(graph->client);
	struct wafer__handle_slot *from_slot, *to_slot;
	wafer_status status = wafer__handle_table_lookup(
		handles, from, "wafer_graph_rebind (from)", &from_slot);
	if (status == WAFER_OK)
		status = wafer__handle_table_lookup(
			handles, to, "wafer_graph_rebind (to)", &to_slot);
	if (status != WAFER_OK)
		return status;
	struct wafer__command c = {
		.kind = WAFER_COMMAND_GRAPH_REBIND,
		.graph = {.graph = graph, .from = from_slot, .to = to_slot},
	};
	return wafer__client_submit(graph->client, &c);
}

WAFER_API wafer_status wafer_graph_info_get(wafer_graph *graph,
					    wafer_graph_info *out_info)
{
	wafer_status checked = WAFER__CHECK_OUT_STRUCT(
		"wafer_graph_info_get", graph, out_info);
	if (checked != WAFER_OK)
		return checked;
	wafer_graph_info info = {.struct_size = sizeof info};
	struct wafer__command c = {
		.kind = WAFER_COMMAND_GRAPH_INFO,
		.graph = {.graph = graph, .info = &info},
	};
	wafer_status status = wafer__client_submit(graph->client, &c);
	wafer__copy_out_struct(out_info, &info, sizeof info);
	return status;
}

WAFER_API wafer_status wafer_graph_release(wafer_graph *graph)
{
	if (!graph)
		return WAFER_OK;
	struct wafer__command c = {
		.kind = WAFER_COMMAND_GRAPH_RELEASE,
		.graph = {.graph = graph},
	};
	return wafer__client_submit(graph->client, &c);
}
