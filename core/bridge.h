/* wafer — SPDX-License-Identifier: MIT
 *
 * bridge.h: the bridge between one client and its device (called the
 * "server bridge" in older notes; renamed so as not to be confused with
 * the plugin ABI's server ops). It owns the client's device queue and
 * memory manager, and turns commands naming handle slots into
 * plugin calls naming (resource, offset, size). Channels (core/channel/)
 * decide on which thread and under which lock wafer_bridge_run() is
 * called; the bridge itself is single-threaded.
 *
 * A command is a tagged union (struct wafer_command below). */
#ifndef WAFER_CORE_BRIDGE_H
#define WAFER_CORE_BRIDGE_H

#include <stdbool.h>

#include <wafer/plugin.h>
#include <wafer/wafer.h>

struct wafer_foreign; /* core/interop.h */

#include "core/error.h"
#include "core/handle_table.h"
#include "core/memory/memory.h"
#include "core/memory/record.h"
#include "core/memory/snapshot.h"
#include "core/runtime.h"
#include "core/memory/storage.h"
#include "core/lanes.h"
#include <wafer/queue.h>

enum wafer_command_kind {
	WAFER_COMMAND_RESERVE,    /* reserve: memory for a new handle */
	WAFER_COMMAND_WRITE,      /* write */
	WAFER_COMMAND_READ,       /* read; waits */
	WAFER_COMMAND_READ_ASYNC, /* read; the bytes arrive by the next sync */
	WAFER_COMMAND_EXECUTE,    /* execute: one kernel launch */
	WAFER_COMMAND_RELEASE,    /* release: last reference gone */
	WAFER_COMMAND_SYNC,       /* no operands; waits for the queue */
	WAFER_COMMAND_USAGE,      /* usage */
	WAFER_COMMAND_TRIM,       /* no operands */
	/* Device timers (autotune): BEGIN stores the plugin's timer in
	 * *timer_slot; END takes it from there, waits for the work between
	 * and stores the nanoseconds in *elapsed_ns. BEGIN returns nothing,
	 * so a queueing channel need not wait for it; END waits. */
	WAFER_COMMAND_TIMER_BEGIN, /* timer */
	WAFER_COMMAND_TIMER_END,   /* timer; waits */
	/* A program was released (program.h): once the queue has finished
	 * the launches issued before, the plugin's program_release. */
	WAFER_COMMAND_PROGRAM_RELEASE, /* program */
	/* wafer_memory_snapshot: the memory manager's segments and blocks,
	 * each live block named by its handle; waits. */
	WAFER_COMMAND_SNAPSHOT, /* snapshot */
	/* Interop (core/interop.h), each waits: a handle over foreign
	 * memory (the plugin's import), a handle's memory as the backend
	 * knows it (native), the queue as the backend knows it, after
	 * everything issued before was submitted to it. */
	WAFER_COMMAND_IMPORT,       /* import */
	WAFER_COMMAND_NATIVE,       /* native */
	WAFER_COMMAND_QUEUE_NATIVE, /* queue_native */
	/* Scale-out (comm.h). A collective is queued like a launch, its
	 * handles resolved when it runs (core/comm.c). A peer copy runs on
	 * the destination client's bridge and waits until the plugin has
	 * issued it on both queues (core/copy_peer.c): the source may be
	 * released at once after. PEER_SOURCE runs on the source client's
	 * bridge just before: everything submitted to the source before it
	 * has reached its queue, which is marked as used. */
	WAFER_COMMAND_COLLECTIVE,  /* collective */
	WAFER_COMMAND_PEER_COPY,   /* peer_copy; waits */
	WAFER_COMMAND_PEER_SOURCE, /* no operands; waits */
	/* Queues and events (core/queue.c, core/event.c, core/lanes.h). */
	WAFER_COMMAND_QUEUE_OPEN,    /* queue_open; waits */
	WAFER_COMMAND_QUEUE_CLOSE,   /* no operands; waits */
	WAFER_COMMAND_EVENT_RECORD,  /* event */
	WAFER_COMMAND_QUEUE_WAIT,    /* event */
	WAFER_COMMAND_EVENT_RELEASE, /* event */
	WAFER_COMMAND_CALLBACK,      /* callback */
	/* Everything submitted before has been issued; waits. */
	WAFER_COMMAND_FLUSH, /* no operands */
};

/* Kernels take at most this many bindings through wafer_execute. */
#define WAFER_MAX_BINDINGS 16

struct wafer_command_binding {
	struct wafer_handle_slot *slot;
	size_t offset;
	size_t size;
};

/* One kernel launch, as the client checked it: the plugin's launch
 * record, complete but for its bindings, which the bridge resolves from
 * |bindings| (handle slots) when it runs. It is the EXECUTE member of a
 * command, so every channel hands the same record to the bridge: the
 * launch path builds one record, never a command and then a launch. */
struct wafer_execute_request {
	struct wafer_launch launch; /* global already at least 1 each */
	const struct wafer_command_binding *bindings;
	uint8_t lane; /* the queue it goes on (core/lanes.h) */
};

/* A command: its kind and the operands of that kind, one member per kind
 * (READ and READ_ASYNC share `read`; SYNC and TRIM have none). Small
 * enough to copy, so a queueing channel copies it with its bindings,
 * parameters and upload bytes (core/channel/mpsc.c). */
struct wafer_command {
	enum wafer_command_kind kind;
	/* The queue it goes on: 0, the submitting thread's current queue of
	 * the client (wafer_queue_select); else lane |queue| - 1. The client
	 * resolves it at submit, so the bridge always reads a lane + 1. An
	 * EXECUTE carries its lane in execute.lane. */
	uint8_t queue;
	union {
		struct {
			struct wafer_handle_slot *slot;
			size_t size;
			/* The caller needs the outcome now: a queueing
			 * channel waits for it rather than deferring a
			 * failure to the next sync. */
			bool wait;
		} reserve;
		struct {
			struct wafer_handle_slot *slot;
			size_t offset;
			size_t size;
			const void *src;
		} write;
		struct {
			struct wafer_handle_slot *slot;
			size_t offset;
			size_t size;
			void *dst;
		} read;
		struct wafer_execute_request execute;
		struct {
			struct wafer_handle_slot *slot;
		} release;
		struct {
			wafer_memory_usage *out;
		} usage;
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
			struct wafer_handle_slot *slot;
			const wafer_native_buffer *buffer; /* whole struct */
			struct wafer_foreign *foreign;
		} import;
		struct {
			struct wafer_handle_slot *slot;
			wafer_native_buffer *out; /* whole struct */
		} native;
		struct {
			wafer_native_queue *out; /* whole struct */
		} queue_native;
		struct {
			void *comm; /* the plugin's */
			/* NULL for a broadcast's src off the root. */
			struct wafer_handle_slot *src;
			struct wafer_handle_slot *dst;
			/* Complete but for the resources and offsets. */
			struct wafer_collective args;
		} collective;
		struct {
			struct wafer_handle_slot *dst;
			const struct wafer_bridge *src_bridge;
			struct wafer_handle_slot *src;
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
	};
};

/* The lane a resolved command runs on. */
static inline uint32_t wafer_command_lane(const struct wafer_command *c)
{
	return c->kind == WAFER_COMMAND_EXECUTE ? c->execute.lane
						: (uint32_t)c->queue - 1;
}

struct wafer_bridge {
	struct wafer_runtime_device *device;
	struct wafer_handle_table *handles;
	/* The client's queues; lane 0, the default queue, is the one the
	 * memory manager works on (core/lanes.h). */
	struct wafer_lanes lanes;
	struct wafer_storage storage;
	/* [memory] limit of the device, as this client read it; the storage
	 * wrapper charges it (core/memory/limit.h). */
	struct wafer_memory_limit limit;
	struct wafer_memory *memory;
	/* `[memory] trace`: the reserves and releases, or NULL. */
	struct wafer_memory_record *record;
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
	 * (wafer_bridge_take_released, core/interop.h). */
	struct wafer_foreign *released;
	/* Failures found after the call that caused them returned (queued
	 * work that failed at a sync the memory manager needed, before
	 * freeing or unmapping, or the stream strategy's reap; commands a
	 * queueing channel ran with nobody waiting: wafer_bridge_defer) are
	 * kept by the lane they belong to (lanes.lane[i].deferred). That
	 * lane's next sync or read reports them, so a status is never lost
	 * and never reported twice, on every channel. */
};

/* Creates the queue (over the caller's |native_queue| with the plugin's
 * queue_wrap where it is not NULL) and the memory manager (strategy
 * |memory_strategy|, NULL: from config). */
wafer_status wafer_bridge_init(struct wafer_bridge *bridge,
			       struct wafer_runtime_device *device,
			       struct wafer_handle_table *handles,
			       const struct wafer_config *config,
			       const char *memory_strategy,
			       void *native_queue);

/* Synchronises, releases every live slot's memory, destroys the memory
 * manager and the queue, then runs the release callbacks of imported
 * memory. Returns the sync's status. */
wafer_status wafer_bridge_fini(struct wafer_bridge *bridge);

/* Runs |command|. An EXECUTE's request is handed to
 * wafer_bridge_execute as it is (its launch.bindings is filled in). */
wafer_status wafer_bridge_run(struct wafer_bridge *bridge,
			      struct wafer_command *command);

/* Keeps the failure |status| of a command that nobody waits for (with
 * the calling thread's detail) for the next sync or read: the mpsc
 * runner's deferred errors. Runs on the bridge's thread. */
static inline void wafer_bridge_defer(struct wafer_bridge *bridge,
				      const struct wafer_command *command,
				      wafer_status status)
{
	wafer_deferred_record(
		&bridge->lanes.lane[wafer_command_lane(command)].deferred,
		status);
}

/* The bridge whose client's out-of-memory handler the calling thread is
 * running (core/client.c sets it around the call), else NULL. The thread
 * then owns that bridge mid-reserve: a release from the handler runs on
 * it at once, and a channel refuses any call that would wait for the
 * bridge (its own lock, its own runner) with wafer_bridge_refuse_in_oom
 * instead of deadlocking. */
extern _Thread_local struct wafer_bridge *wafer_bridge_in_oom;

/* WAFER_ERROR_INVALID_ARGUMENT: "a call from the client's out-of-memory
 * handler ...". The mpsc runner sets wafer_bridge_in_oom around the
 * release callbacks of imported memory too, for the same reason. */
wafer_status wafer_bridge_refuse_in_oom(void);

/* Runs one launch: the EXECUTE command, and the direct and mutex
 * channels' launch path. Sets request->launch.bindings. */
wafer_status wafer_bridge_execute(struct wafer_bridge *bridge,
				  struct wafer_execute_request *request);

/* The imported memory released since the last call, whose callbacks the
 * caller runs (wafer_foreign_notify, core/interop.h) once it no longer
 * holds the client's lock. Called where the bridge is run (under the
 * mutex channel's lock). */
static inline struct wafer_foreign *
wafer_bridge_take_released(struct wafer_bridge *bridge)
{
	struct wafer_foreign *list = bridge->released;
	bridge->released = NULL;
	return list;
}

#endif
