/* wafer — SPDX-License-Identifier: MIT
 *
 * bridge.h: the bridge between one client and its device (called the
 * "server bridge" in older notes; renamed so as not to be confused with
 * the plugin ABI's server ops). It owns the client's device queue and
 * memory manager, and turns commands naming handle slots into
 * plugin calls naming (resource, offset, size). Channels (lib/channel/)
 * decide on which thread and under which lock wafer__bridge_run() is
 * called; the bridge itself is single-threaded.
 *
 * A command is a tagged union (struct wafer__command below) whose kinds
 * are the rows of one table, lib/command.def. */
#ifndef WAFER_CORE_BRIDGE_H
#define WAFER_CORE_BRIDGE_H

#include <stdbool.h>

#include <wafer/plugin.h>
#include <wafer/wafer.h>

struct wafer__foreign; /* lib/interop.h */

/* A plugin program whose release waits for the client's graphs. */
struct wafer__deferred_program {
	void *loaded;
	struct wafer__deferred_program *next;
};

#include "lib/error.h"
#include "lib/handle_table.h"
#include "lib/memory/memory.h"
#include "lib/memory/record.h"
#include "lib/memory/snapshot.h"
#include "lib/runtime.h"
#include "lib/memory/storage.h"
#include "lib/lanes.h"
#include "lib/tls.h"
#include <wafer/comm.h>
#include <wafer/graph.h>
#include <wafer/queue.h>

/* The command kinds, one per row of lib/command.def. */
enum wafer__command_kind {
#define WAFER_COMMAND(KIND, name, waits, queue, capture, run) WAFER_COMMAND_##KIND,
#include "lib/command.def"
#undef WAFER_COMMAND
};

/* The queues a command may run on (command.def's queue column). */
enum wafer__command_queue {
	/* The command's own queue (wafer__command_lane): the submitting
	 * thread's current queue of the client, or the one a call names. */
	WAFER_COMMAND_QUEUE_LANE,
	/* The client as a whole: its memory manager, handle table, every
	 * queue or none (lib/lanes.h). */
	WAFER_COMMAND_QUEUE_CLIENT,
};

/* What a command does on a queue that is capturing a graph (command.def's
 * capture column). */
enum wafer__command_capture {
	WAFER_COMMAND_CAPTURE_RECORD,
	WAFER_COMMAND_CAPTURE_RUN,
	WAFER_COMMAND_CAPTURE_REFUSE,
};

/* Kernels take at most this many bindings through wafer_execute. */
#define WAFER_MAX_BINDINGS 16

struct wafer__command_binding {
	struct wafer__handle_slot *slot;
	size_t offset;
	size_t size;
};

/* One kernel launch, as the client checked it: the plugin's launch
 * record, complete but for its bindings, which the bridge resolves from
 * |bindings| (handle slots) when it runs. It is the EXECUTE member of a
 * command, so every channel hands the same record to the bridge: the
 * launch path builds one record, never a command and then a launch. */
struct wafer__execute_request {
	struct wafer_launch launch; /* global already at least 1 each */
	const struct wafer__command_binding *bindings;
	uint8_t lane; /* the queue it goes on (lib/lanes.h) */
};

/* A command: its kind and the operands of that kind, one member per kind
 * (READ and READ_ASYNC share `read`, TIMER_BEGIN and TIMER_END `timer`;
 * SYNC, TRIM and PEER_SOURCE have none). Small
 * enough to copy, so a queueing channel copies it with its bindings,
 * parameters and upload bytes (lib/channel/mpsc.c). */
struct wafer__command {
	enum wafer__command_kind kind;
	/* The queue it goes on: 0, the submitting thread's current queue of
	 * the client (wafer_queue_select); else lane |queue| - 1. The client
	 * resolves it at submit, so the bridge always reads a lane + 1. An
	 * EXECUTE carries its lane in execute.lane. */
	uint8_t queue;
	union {
		struct {
			struct wafer__handle_slot *slot;
			size_t size;
			/* The caller needs the outcome now: the
			 * command waits (command.def) rather than
			 * deferring a failure to the next sync. */
			bool wait;
		} reserve;
		struct {
			struct wafer__handle_slot *slot;
			size_t offset;
			size_t size;
			const void *src;
			/* |src| lies in registered host memory
			 * (lib/host.h): copied in queue order, not
			 * before the call returns. */
			bool registered;
		} write;
		struct {
			struct wafer__handle_slot *slot;
			size_t offset;
			size_t size;
			void *dst;
			bool registered; /* |dst| is (lib/host.h) */
		} read;
		struct wafer__execute_request execute;
		struct {
			struct wafer__handle_slot *slot;
		} release;
		struct {
			wafer_memory_usage *out;
		} usage;
		struct {
			void *ptr;
			size_t size;
		} host; /* HOST_REGISTER, HOST_UNREGISTER */
		struct {
			void **slot;
			uint64_t *elapsed_ns; /* TIMER_END only */
		} timer;
		struct {
			void *loaded; /* the plugin's program */
		} program;
		struct {
			struct wafer_memory_snapshot *out;
		} snapshot;
		struct {
			struct wafer__handle_slot *slot;
			const wafer_native_buffer *buffer; /* whole struct */
			struct wafer__foreign *foreign;
		} import;
		struct {
			struct wafer__handle_slot *slot;
			wafer_native_buffer *out; /* whole struct */
		} native;
		struct {
			wafer_native_queue *out; /* whole struct */
		} queue_native;
		struct {
			void *comm; /* the plugin's */
			/* The caller's: a graph's replay checks it is
			 * still open before it uses |comm|. */
			const wafer_comm *token;
			/* NULL for a broadcast's src off the root. */
			struct wafer__handle_slot *src;
			struct wafer__handle_slot *dst;
			/* Complete but for the resources and offsets. */
			struct wafer_collective args;
		} collective;
		struct {
			bool begin; /* else end */
		} comm_group;
		struct {
			struct wafer__handle_slot *dst;
			const struct wafer__bridge *src_bridge;
			struct wafer__handle_slot *src;
			size_t size;
		} peer_copy;
		struct {
			uint32_t *out_lane;
			void *native; /* NULL, or the caller's to wrap */
		} queue_open;
		struct {
			wafer_event *event;
		} event;
		struct {
			wafer_status (*fn)(void *user);
			void *user;
		} callback;
		struct {
			wafer_graph *graph;
			/* GRAPH_END: where the graph goes; GRAPH_REBIND:
			 * the slots that change places, |to| with at
			 * least |from|'s bytes. */
			wafer_graph **out;
			struct wafer__handle_slot *from, *to;
			wafer_graph_info *info; /* GRAPH_INFO */
		} graph;
	};
};

/* The lane a resolved command runs on. */
static inline uint32_t wafer__command_lane(const struct wafer__command *c)
{
	return c->kind == WAFER_COMMAND_EXECUTE ? c->execute.lane
						: (uint32_t)c->queue - 1;
}

struct wafer__bridge {
	struct wafer_runtime_device *device;
	struct wafer__handle_table *handles;
	/* The client's queues; lane 0, the default queue, is the one the
	 * memory manager works on (lib/lanes.h). */
	struct wafer__lanes lanes;
	struct wafer__storage storage;
	/* [memory] limit of the device, as this client read it; the storage
	 * wrapper charges it (lib/memory/limit.h). */
	struct wafer__memory_limit limit;
	struct wafer__memory *memory;
	/* `[memory] trace`: the reserves and releases, or NULL. */
	struct wafer__memory_record *record;
	/* The snapshot being taken (run_snapshot), for its callback. */
	struct wafer_memory_snapshot *snapshot;
	/* device->plugin->server->launch and device->device, kept here: four
	 * dependent loads fewer on every launch. */
	wafer_status (*launch)(void *device, void *queue,
			       const struct wafer_launch *launch);
	void *plugin_device;
	/* The default queue wraps the caller's (wafer_client_options.native_queue):
	 * the caller's own work on it is invisible here, so it is never
	 * known to be idle. */
	bool queue_foreign;
	/* The kind of the device's native buffers (the plugin's
	 * queue_native, asked once at init), WAFER_NATIVE_NONE where the
	 * plugin has no interop server entries. Read by the client's
	 * threads: written before the channel exists. */
	wafer_native_kind native_kind;
	/* Imported memory given back to the plugin (forget) whose release
	 * callbacks are still to run: the channel runs them once the
	 * command that released it is done and the client's lock is free
	 * (wafer__bridge_take_released, lib/interop.h). */
	struct wafer__foreign *released;
	/* Failures found after the call that caused them returned (queued
	 * work that failed at a sync the memory manager needed, before
	 * freeing or unmapping, or the stream strategy's reap; commands a
	 * queueing channel ran with nobody waiting: wafer__bridge_defer) are
	 * kept by the lane they belong to (lanes.lane[i].deferred). That
	 * lane's next sync or read reports them, so a status is never lost
	 * and never reported twice, on every channel. */
	/* Graphs (lib/graph.h): the one each lane is capturing (NULL: none),
	 * how many lanes capture, and every graph of the client alive. */
	wafer_graph *capture[WAFER_MAX_QUEUES];
	uint32_t capturing;
	wafer_graph *graphs;
	/* The queue the plugin records native graphs on while a capture
	 * ends or a graph is rebound (the program never sees it). */
	void *graph_queue;
	/* Programs released while a graph lived, which may launch their
	 * kernels: freed when the last graph goes (lib/graph.c). */
	struct wafer__deferred_program *programs_held;
};

/* Creates the queue (over the caller's |native_queue| with the plugin's
 * queue_wrap where it is not NULL) and the memory manager (strategy
 * |memory_strategy|, NULL: from config). */
wafer_status wafer__bridge_init(struct wafer__bridge *bridge,
				struct wafer_runtime_device *device,
				struct wafer__handle_table *handles,
				const struct wafer__config *config,
				const char *memory_strategy,
				void *native_queue);

/* Synchronises, releases every live slot's memory, destroys the memory
 * manager and the queue, then runs the release callbacks of imported
 * memory. Returns the sync's status. */
wafer_status wafer__bridge_fini(struct wafer__bridge *bridge);

/* Runs |command|: its row's run function (lib/command.def). The one
 * path every command takes to the device, on every channel. An
 * EXECUTE's request is handed to wafer__bridge_execute as it is (its
 * launch.bindings is filled in). */
wafer_status wafer__bridge_run(struct wafer__bridge *bridge,
			       struct wafer__command *command);

/* The run functions of the rows, each in its feature's file. */
#define WAFER_COMMAND(KIND, name, waits, queue, capture, run) \
	wafer_status run(struct wafer__bridge *bridge, struct wafer__command *c);
#include "lib/command.def"
#undef WAFER_COMMAND

/* Whether the caller of |c| waits for its answer (the row's waits). */
static inline bool wafer__command_waits(const struct wafer__command *c)
{
	switch (c->kind) {
#define WAFER_COMMAND(KIND, name, waits, queue, capture, run) \
	case WAFER_COMMAND_##KIND:                    \
		return (waits);
#include "lib/command.def"
#undef WAFER_COMMAND
	}
	return true;
}

/* The constant columns of a row of command.def (its waits is an
 * expression over the command: wafer__command_waits). */
struct wafer__command_row {
	const char *name;
	enum wafer__command_queue queue;
	enum wafer__command_capture capture;
};

/* |kind|'s row, or NULL for a value that is no kind. */
static inline const struct wafer__command_row *
wafer__command_row(enum wafer__command_kind kind)
{
	static const struct wafer__command_row rows[] = {
#define WAFER_COMMAND(KIND, name, waits, queue, capture, run)  \
	[WAFER_COMMAND_##KIND] = {name, WAFER_COMMAND_QUEUE_##queue, \
				  WAFER_COMMAND_CAPTURE_##capture},
#include "lib/command.def"
#undef WAFER_COMMAND
	};
	return (size_t)kind < sizeof rows / sizeof rows[0] ? &rows[kind]
							   : NULL;
}

/* The name of |kind| (the row's name), for messages. */
static inline const char *wafer__command_name(enum wafer__command_kind kind)
{
	const struct wafer__command_row *row = wafer__command_row(kind);
	return row ? row->name : "unknown command";
}

/* The queue |kind| runs on (the row's queue). */
static inline enum wafer__command_queue
wafer__command_queue(enum wafer__command_kind kind)
{
	const struct wafer__command_row *row = wafer__command_row(kind);
	return row ? row->queue : WAFER_COMMAND_QUEUE_CLIENT;
}

/* What |kind| does on a capturing queue (the row's capture). */
static inline enum wafer__command_capture
wafer__command_capture(enum wafer__command_kind kind)
{
	const struct wafer__command_row *row = wafer__command_row(kind);
	return row ? row->capture : WAFER_COMMAND_CAPTURE_REFUSE;
}

/* WAFER_ERROR_OUT_OF_MEMORY where |slot| has no memory: its reservation
 * failed in a queueing channel and was reported already, so any later
 * use (named |what|) fails here. */
wafer_status wafer__bridge_check_backed(const struct wafer__handle_slot *slot,
					const char *what);

/* Keeps the failure |status| of a command that nobody waits for (with
 * the calling thread's detail) for the next sync or read: the mpsc
 * runner's deferred errors. Runs on the bridge's thread. */
static inline void wafer__bridge_defer(struct wafer__bridge *bridge,
				       const struct wafer__command *command,
				       wafer_status status)
{
	wafer__deferred_record(
		&bridge->lanes.lane[wafer__command_lane(command)].deferred,
		status);
}

/* The bridge whose client's out-of-memory handler the calling thread is
 * running (lib/client.c sets it around the call), else NULL. The thread
 * then owns that bridge mid-reserve: a release from the handler runs on
 * it at once, and a channel refuses any call that would wait for the
 * bridge (its own lock, its own runner) with wafer__bridge_refuse_in_oom
 * instead of deadlocking. */
extern WAFER__TLS_HOT struct wafer__bridge *wafer__bridge_in_oom;

/* WAFER_ERROR_INVALID_ARGUMENT: "a call from the client's out-of-memory
 * handler ...". The mpsc runner sets wafer__bridge_in_oom around the
 * release callbacks of imported memory too, for the same reason. */
wafer_status wafer__bridge_refuse_in_oom(void);

/* Gives |slot|'s memory back (to the memory manager, or an import to
 * its owner), released from lane |l|, in lane 0's order; the memory
 * trace records nothing (a handle's release is recorded where it is
 * released). Graphs give back the memory they kept this way. */
void wafer__bridge_release_memory(struct wafer__bridge *bridge, uint32_t l,
				  struct wafer__handle_slot *slot);

/* The plugin's programs released while graphs lived (they may launch
 * their kernels) are freed: the last graph went. */
void wafer__bridge_release_held_programs(struct wafer__bridge *bridge);

/* Waits for every queue of the client; a failure of queued work is
 * deferred to its queue's next sync (and the first returned). */
wafer_status wafer__bridge_quiesce_all(struct wafer__bridge *bridge);

/* Runs one launch: the EXECUTE command, and the direct and mutex
 * channels' launch path. Sets request->launch.bindings. */
wafer_status wafer__bridge_execute(struct wafer__bridge *bridge,
				   struct wafer__execute_request *request);

/* The imported memory released since the last call, whose callbacks the
 * caller runs (wafer__foreign_notify, lib/interop.h) once it no longer
 * holds the client's lock. Called where the bridge is run (under the
 * mutex channel's lock). */
static inline struct wafer__foreign *
wafer__bridge_take_released(struct wafer__bridge *bridge)
{
	struct wafer__foreign *list = bridge->released;
	bridge->released = NULL;
	return list;
}

#endif
