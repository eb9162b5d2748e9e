/* wafer — SPDX-License-Identifier: MIT
 *
 * graph.h: graphs (wafer/graph.h) as the bridge sees them.
 *
 * Capture happens on the bridge, where every command arrives in the
 * channel's order: while a lane captures (bridge->capture[lane]), a
 * command on it whose row says RECORD (lib/command.def) becomes a step of
 * the graph instead of running, one that says REFUSE fails, and one that
 * says RUN runs as on any lane. The client refuses the REFUSE kinds in
 * the caller's thread before they are queued (wafer__graph_refuse), so
 * even a command that does not wait fails at its call.
 *
 * A step keeps what running it again needs and nothing to check: a
 * launch its plugin launch record with the bindings resolved to memory; a
 * write its bytes; a host callback its function. The handle slots the
 * steps use are the graph's bindings: each remembers the memory it had at
 * capture (or at the last rebind) and the table slot behind it while a
 * handle names it (slot->graph_refs counts the graphs' bindings on it).
 * When that handle is released, its memory is not given back but kept by
 * the graphs that use it (wafer__graph_adopt) until the last of them is
 * released, so a replay never writes memory someone else has.
 *
 * Where the plugin has the graphs group, each run of launches becomes one
 * native graph at the end of capture (and after a rebind): the core
 * issues the run's launches on a queue of its own that the plugin
 * records. */
#ifndef WAFER_CORE_GRAPH_H
#define WAFER_CORE_GRAPH_H

#include <stdbool.h>

#include <wafer/graph.h>

struct wafer__bridge;
struct wafer__command;
struct wafer__execute_request;
struct wafer__handle_slot;

/* Whether |c| is on a capturing lane and its row says RECORD or REFUSE:
 * then wafer__graph_capture, not its run function, handles it. */
static inline bool wafer__graph_captures(const struct wafer__bridge *bridge,
					 const struct wafer__command *c);

/* Records |c| into the graph its lane captures, or refuses it. */
wafer_status wafer__graph_capture(struct wafer__bridge *bridge,
				  struct wafer__command *c);

/* Records a launch into the graph lane |request->lane| captures (the
 * direct and mutex channels' launch path). */
wafer_status wafer__graph_capture_execute(struct wafer__bridge *bridge,
					  struct wafer__execute_request *request);

/* |slot|'s handle was released and graphs use its memory: they keep it
 * (and an import's release callback waits for them). Returns false
 * when there was no memory to keep it in (the graphs that used it then
 * fail their next launch). */
bool wafer__graph_adopt(struct wafer__bridge *bridge,
			struct wafer__handle_slot *slot);

/* Client close: discards the captures still open (logged) and frees
 * every graph, after the device finished with them. */
void wafer__graph_bridge_fini(struct wafer__bridge *bridge);

/* For the trace (lib/trace.c): |graph|'s JSON members — its step and
 * launch counts, and each kernel it launches with how many times, in
 * the order of first launch (the device runs a native graph as one
 * unit, so a replay is one span that says what it ran). */
struct wafer__json;
void wafer__graph_describe(const wafer_graph *graph, struct wafer__json *args);

/* The client side: WAFER_ERROR_INVALID_ARGUMENT naming the call when a
 * command of |kind| may not be issued on capturing lane |lane|. */
wafer_status wafer__graph_refuse(int kind, uint32_t lane);

#include "lib/bridge.h"

static inline bool wafer__graph_captures(const struct wafer__bridge *bridge,
					 const struct wafer__command *c)
{
	return wafer__command_queue(c->kind) == WAFER_COMMAND_QUEUE_LANE &&
	       bridge->capture[wafer__command_lane(c)] &&
	       wafer__command_capture(c->kind) != WAFER_COMMAND_CAPTURE_RUN;
}

#endif
