/* wafer — SPDX-License-Identifier: MIT
 * bridge.c: the bridge between a client and its device (see bridge.h). */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/log.h"
#include "lib/bridge.h"
#include "lib/graph.h"
#include "lib/interop.h"
#include "lib/trace.h"
#include "lib/tls.h"

/* Waits for lane |l|; the plugin's status with the device and queue
 * named. Lane 0 is the memory manager's. */
static wafer_status queue_sync(struct wafer__bridge *bridge, uint32_t l)
{
	wafer_status status = wafer__lanes_plugin_sync(&bridge->lanes, l);
	/* Only a successful sync proves queued frees are done. */
	if (status == WAFER_OK && l == 0)
		wafer__memory_after_sync(bridge->memory);
	return status;
}

/* A sync for the memory manager: its failure belongs to the program's
 * next sync or read, so it is deferred rather than dropped. */
static wafer_status memory_sync(struct wafer__bridge *bridge)
{
	wafer_status status = queue_sync(bridge, 0);
	wafer__deferred_record(&bridge->lanes.lane[0].deferred, status);
	return status;
}

/* The result of a call the program waits on (sync, read, close) on lane
 * |l| (lanes.h). */
static wafer_status report(struct wafer__bridge *bridge, uint32_t l,
			   wafer_status status)
{
	return wafer__lanes_report(&bridge->lanes, l, status);
}

/* A sync the program asked for (sync, read, close). */
static wafer_status bridge_sync(struct wafer__bridge *bridge, uint32_t l)
{
	wafer__memory_record_flush(bridge->record);
	return report(bridge, l, queue_sync(bridge, l));
}

/* storage.quiesce: memory goes back to the plugin only once no queued
 * kernel can still read it. Memory comes back in lane 0's order
 * (lanes.h), so lane 0 is the one to wait for. */
static wafer_status bridge_quiesce(void *data)
{
	struct wafer__bridge *bridge = data;
	return bridge->lanes.lane[0].dirty || bridge->queue_foreign
		       ? memory_sync(bridge)
		       : WAFER_OK;
}

/* Every lane's queued work is over (a program's launches may be on any):
 * failures are deferred to each lane's next sync. */
wafer_status wafer__bridge_quiesce_all(struct wafer__bridge *bridge)
{
	wafer_status first = bridge_quiesce(bridge);
	for (uint32_t i = 1; i < WAFER_MAX_QUEUES; i++) {
		struct wafer__lane *lane = &bridge->lanes.lane[i];
		if (!lane->queue || !lane->dirty)
			continue;
		wafer_status status = queue_sync(bridge, i);
		wafer__deferred_record(&lane->deferred, status);
		if (first == WAFER_OK)
			first = status;
	}
	return first;
}

/* storage.sync: the stream strategy's reap. */
static wafer_status bridge_sync_hook(void *data)
{
	return memory_sync(data);
}

/* The client's queue: the plugin's own, or one over the caller's
 * |native_queue| (wafer_client_options.native_queue). Learns the kind of
 * the device's native buffers where the plugin can say. */
static wafer_status open_queue(struct wafer__bridge *bridge, void *native_queue)
{
	struct wafer_runtime_device *device = bridge->device;
	const struct wafer_server_ops *server = device->plugin->server;
	void *queue = NULL;
	wafer_status status;

	if (native_queue && !wafer__interop_server(device->plugin))
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "wafer_client_open: native_queue %p: interop "
				   "not supported by %s",
				   native_queue, device->backend);
	if (native_queue) {
		status = server->queue_wrap(device->device, native_queue,
					    &queue);
		if (status != WAFER_OK)
			return wafer__fail_context(status,
						   "%s: queue_wrap of native "
						   "queue %p",
						   device->backend, native_queue);
		bridge->queue_foreign = true;
	} else {
		status = server->queue_create(device->device, &queue);
		if (status != WAFER_OK)
			return wafer__fail_context(status, "%s: queue_create",
						   device->backend);
	}
	wafer__lanes_init(&bridge->lanes, server, device->device,
			  device->backend,
			  device->info.capabilities & WAFER_CAP_EVENTS, queue);
	bridge->native_kind = WAFER_NATIVE_NONE;
	if (wafer__interop_server(device->plugin)) {
		wafer_native_queue q = {.struct_size = sizeof q};
		if (server->queue_native(device->device, queue, &q) ==
		    WAFER_OK)
			bridge->native_kind = q.kind;
		wafer__error_clear();
	}
	return WAFER_OK;
}

wafer_status wafer__bridge_init(struct wafer__bridge *bridge,
				struct wafer_runtime_device *device,
				struct wafer__handle_table *handles,
				const struct wafer__config *config,
				const char *memory_strategy,
				void *native_queue)
{
	const struct wafer_plugin *plugin = device->plugin;
	memset(bridge, 0, sizeof *bridge);
	bridge->device = device;
	bridge->handles = handles;
	bridge->launch = plugin->server->launch;
	bridge->plugin_device = device->device;

	char name[48];
	snprintf(name, sizeof name, "%s:%u", device->backend, device->index);
	wafer_status status = wafer__memory_limit_init(
		&bridge->limit, config, device->info.memory_bytes, name,
		&device->memory_reserved);
	if (status != WAFER_OK)
		return status;
	status = open_queue(bridge, native_queue);
	if (status != WAFER_OK)
		return status;
	bridge->storage = (struct wafer__storage){
		.ops = plugin->storage,
		.device = device->device,
		.queue = bridge->lanes.lane[0].queue,
		.alignment = device->info.alloc_alignment,
		.vm_granularity = device->info.vm_granularity,
		.quiesce = bridge_quiesce,
		.sync = bridge_sync_hook,
		.quiesce_data = bridge,
		.limit = &bridge->limit,
	};
	status = wafer__memory_create(memory_strategy, &bridge->storage, config,
				      &bridge->memory);
	if (status == WAFER_OK) {
		char who[160];
		snprintf(who, sizeof who, "client on %s:%u, strategy %s",
			 device->backend, device->index,
			 wafer__memory_strategy_name(bridge->memory));
		status = wafer__memory_record_open(config, who, &bridge->record);
		if (status != WAFER_OK)
			wafer__memory_destroy(bridge->memory);
	}
	if (status != WAFER_OK) {
		plugin->server->queue_destroy(device->device,
					      bridge->lanes.lane[0].queue);
		wafer__lanes_fini(&bridge->lanes);
		return status;
	}
	return WAFER_OK;
}

WAFER__TLS_HOT struct wafer__bridge *wafer__bridge_in_oom;

wafer_status wafer__bridge_refuse_in_oom(void)
{
	return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
			   "called from the client's out-of-memory handler "
			   "(or an import's release callback on the mpsc "
			  "runner), which runs on the thread that owns the "
			  "client and may only release handles (see "
			  "wafer_memory_set_oom_handler(3), "
			  "wafer_handle_import(3)); waiting here would "
			  "deadlock");
}

/* Imported memory (lib/interop.h) never was the strategy's: the plugin
 * forgets it once the queued work that may use it is over (its owner may
 * reuse it at once; a failed sync is deferred, and the work is over all
 * the same), and its release callback waits on the bridge's list for the
 * channel to run it outside the client's lock. */
void wafer__bridge_release_memory(struct wafer__bridge *bridge, uint32_t l,
				  struct wafer__handle_slot *slot)
{
	struct wafer__foreign *foreign = slot->foreign;

	/* Lane 0 waits for the slot's last use elsewhere; a failure to
	 * order is the default queue's, and the release goes on. */
	wafer__deferred_record(&bridge->lanes.lane[0].deferred,
			       wafer__lanes_before_release(&bridge->lanes, l,
							   slot));

	if (foreign) {
		bridge_quiesce(bridge);
		bridge->device->plugin->storage->forget(bridge->device->device,
							slot->slice.resource);
		slot->foreign = NULL;
		slot->slice = (struct wafer__slice){0};
		foreign->next = bridge->released;
		bridge->released = foreign;
		return;
	}
	wafer__memory_release(bridge->memory, &slot->slice);
}

/* Releases a slot's memory, recorded under its slot index (record.h).
 * Graphs that use it keep it instead (lib/graph.h); the trace records the
 * release all the same, as the handle's index is free from here on. */
static void release_slot(struct wafer__bridge *bridge, uint32_t l,
			 struct wafer__handle_slot *slot)
{
	if (!slot->foreign)
		wafer__memory_record_release(bridge->record, slot->index);
	if (slot->graph_refs && wafer__graph_adopt(bridge, slot)) {
		slot->slice = (struct wafer__slice){0};
		slot->foreign = NULL;
		return;
	}
	wafer__bridge_release_memory(bridge, l, slot);
}

static void release_leaked(struct wafer__handle_slot *slot, void *data)
{
	struct wafer__bridge *bridge = data;
	if (slot->slice.resource)
		release_slot(bridge, 0, slot);
}

/* Closes every lane but the default one; the first failure of each is
 * logged, the first of all returned. */
static wafer_status close_lanes(struct wafer__bridge *bridge)
{
	wafer_status first = WAFER_OK;
	for (uint32_t i = 1; i < WAFER_MAX_QUEUES; i++) {
		if (!bridge->lanes.lane[i].queue)
			continue;
		wafer_status status = wafer__lanes_close(&bridge->lanes, i);
		if (status == WAFER_OK)
			continue;
		wafer__log_warn("core", "client closed: queue %u: %s", i,
				wafer__error_detail());
		if (first == WAFER_OK)
			first = status;
	}
	return first;
}

wafer_status wafer__bridge_fini(struct wafer__bridge *bridge)
{
	wafer__trace_bridge_closed(bridge);
	wafer_status status = close_lanes(bridge);
	wafer_status own = bridge_sync(bridge, 0);
	if (status == WAFER_OK)
		status = own;
	/* Graphs first: their memory goes back, or to the handles'. */
	wafer__graph_bridge_fini(bridge);
	uint64_t leaked = wafer__handle_table_live(bridge->handles);
	if (leaked)
		wafer__log_info("core",
				"client closed with %llu live handle(s); "
				"freeing them",
				(unsigned long long)leaked);
	wafer__handle_table_for_each_live(bridge->handles, release_leaked,
					  bridge);
	wafer__memory_destroy(bridge->memory);
	wafer__memory_record_close(bridge->record);
	bridge->device->plugin->server->queue_destroy(
		bridge->device->device, bridge->lanes.lane[0].queue);
	/* Only what freeing the leaked handles found: the program has had
	 * its last report. */
	wafer__lanes_fini(&bridge->lanes);
	wafer__foreign_notify(wafer__bridge_take_released(bridge));
	return status;
}

wafer_status wafer__bridge_check_backed(const struct wafer__handle_slot *slot,
					const char *what)
{
	if (slot->slice.resource)
		return WAFER_OK;
	return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
			   "%s: handle slot %u has no memory (reserving its "
			  "%zu bytes failed)",
			  what, slot->index, slot->size);
}

wafer_status wafer__bridge_execute(struct wafer__bridge *bridge,
				   struct wafer__execute_request *r)
{
	if (__builtin_expect(bridge->capturing, 0) && bridge->capture[r->lane])
		return wafer__graph_capture_execute(bridge, r);
	if (wafer__trace_on())
		return wafer__trace_execute(bridge, r);
	struct wafer_binding bindings[WAFER_MAX_BINDINGS];
	const struct wafer_kernel *kernel = r->launch.kernel;
	for (uint32_t i = 0; i < r->launch.binding_count; i++) {
		const struct wafer__command_binding *b = &r->bindings[i];
		wafer_status status = wafer__bridge_check_backed(b->slot, kernel->op);
		if (status != WAFER_OK)
			return status;
		bindings[i] = (struct wafer_binding){
			.struct_size = sizeof(struct wafer_binding),
			.resource = b->slot->slice.resource,
			.offset = b->slot->slice.offset + b->offset,
			.size = b->size,
		};
	}
	r->launch.bindings = bindings;
	struct wafer__lane *lane = &bridge->lanes.lane[r->lane];
	if (__builtin_expect(bridge->lanes.multi, 0)) {
		struct wafer__handle_slot *slots[WAFER_MAX_BINDINGS];
		for (uint32_t i = 0; i < r->launch.binding_count; i++)
			slots[i] = r->bindings[i].slot;
		wafer_status status = wafer__lanes_touch_slow(
			&bridge->lanes, r->lane, slots, r->launch.binding_count);
		if (status != WAFER_OK)
			return status;
	}
	lane->dirty = true;
	wafer_status status =
		bridge->launch(bridge->plugin_device, lane->queue, &r->launch);
	if (status != WAFER_OK && r->lane)
		return wafer__fail_context(status, "kernel '%s' (%s) on %s queue %u",
					   kernel->op, kernel->variant,
					   bridge->device->backend, r->lane);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "kernel '%s' (%s) on %s",
					   kernel->op, kernel->variant,
					   bridge->device->backend);
	return WAFER_OK;
}

/* The client offers timers only where the plugin has both entries
 * (WAFER_CAP_DEVICE_TIMERS); the checks here guard the bridge anyway. */
wafer_status wafer__bridge_run_timer_begin(struct wafer__bridge *bridge,
					   struct wafer__command *c)
{
	const struct wafer_server_ops *ops = bridge->device->plugin->server;
	void **timer_slot = c->timer.slot;

	*timer_slot = NULL;
	if (!WAFER_STRUCT_HAS(ops, struct wafer_server_ops, timer_end) ||
	    !ops->timer_begin || !ops->timer_end)
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "%s has no device timers",
				   bridge->device->backend);
	struct wafer__lane *lane = &bridge->lanes.lane[wafer__command_lane(c)];
	lane->dirty = true;
	wafer_status status = ops->timer_begin(bridge->device->device,
					       lane->queue, timer_slot);
	if (status != WAFER_OK) {
		*timer_slot = NULL;
		return wafer__fail_context(status, "%s: timer_begin",
					   bridge->device->backend);
	}
	return WAFER_OK;
}

wafer_status wafer__bridge_run_timer_end(struct wafer__bridge *bridge,
					 struct wafer__command *c)
{
	const struct wafer_server_ops *ops = bridge->device->plugin->server;
	void **timer_slot = c->timer.slot;
	uint64_t *elapsed_ns = c->timer.elapsed_ns;
	void *timer = *timer_slot;

	*timer_slot = NULL;
	*elapsed_ns = 0;
	if (!timer)
		return wafer__fail(WAFER_ERROR_INTERNAL,
				   "%s: timer_end without a timer (timer_begin "
				  "failed)",
				  bridge->device->backend);
	wafer_status status = ops->timer_end(
		bridge->device->device,
		bridge->lanes.lane[wafer__command_lane(c)].queue, timer,
		elapsed_ns);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s: timer_end",
					   bridge->device->backend);
	return WAFER_OK;
}

/* The plugin frees a program only once no queued launch uses it: the
 * launches of it were issued before this command, on any queue, so a
 * sync of each (whose failure is deferred like a memory sync's) makes it
 * safe. */
wafer_status wafer__bridge_run_program_release(struct wafer__bridge *bridge,
					       struct wafer__command *c)
{
	if (bridge->graphs) {
		/* A graph may launch its kernels: it goes with the last
		 * graph (or, out of host memory, at client close). */
		struct wafer__deferred_program *held = malloc(sizeof *held);
		if (held) {
			*held = (struct wafer__deferred_program){
				c->program.loaded, bridge->programs_held};
			bridge->programs_held = held;
			return WAFER_OK;
		}
		wafer__log_warn("core", "out of memory: a program a graph may "
				"use is freed now");
	}
	wafer_status status = wafer__bridge_quiesce_all(bridge);
	bridge->device->plugin->server->program_release(bridge->device->device,
							c->program.loaded);
	return status;
}

void wafer__bridge_release_held_programs(struct wafer__bridge *bridge)
{
	if (!bridge->programs_held)
		return;
	wafer__bridge_quiesce_all(bridge);
	while (bridge->programs_held) {
		struct wafer__deferred_program *held = bridge->programs_held;
		bridge->programs_held = held->next;
		bridge->device->plugin->server->program_release(
			bridge->device->device, held->loaded);
		free(held);
	}
}

static void attach_handle(struct wafer__handle_slot *slot, void *data)
{
	struct wafer__bridge *bridge = data;
	/* Imported memory is no block of the strategy's. */
	if (slot->slice.resource && !slot->foreign)
		wafer__memory_snapshot_attach(
			bridge->snapshot, &slot->slice,
			wafer__handle_table_handle(bridge->handles, slot));
}

/* The memory manager's snapshot, each live block named by its handle. */
wafer_status wafer__bridge_run_snapshot(struct wafer__bridge *bridge,
					struct wafer__command *c)
{
	struct wafer_memory_snapshot *out = c->snapshot.out;
	wafer_status status = wafer__memory_snapshot_take(bridge->memory, out);
	if (status != WAFER_OK)
		return status;
	bridge->snapshot = out;
	wafer__handle_table_for_each_live(bridge->handles, attach_handle,
					  bridge);
	bridge->snapshot = NULL;
	if (out->failed)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "memory snapshot: out of host memory after "
				   "%zu items", out->count);
	wafer__memory_snapshot_sort(out);
	return WAFER_OK;
}

wafer_status wafer__bridge_run_execute(struct wafer__bridge *bridge,
				       struct wafer__command *c)
{
	return wafer__bridge_execute(bridge, &c->execute);
}

wafer_status wafer__bridge_run_reserve(struct wafer__bridge *bridge,
				       struct wafer__command *c)
{
	uint32_t l = wafer__command_lane(c);
	wafer_status status = wafer__memory_reserve(
		bridge->memory, c->reserve.size, &c->reserve.slot->slice);
	if (status == WAFER_OK) {
		/* The memory is the handle's either way: a failure to order
		 * it is the queue's, for its next sync. */
		wafer__deferred_record(&bridge->lanes.lane[l].deferred,
				       wafer__lanes_reserved(&bridge->lanes, l,
							     c->reserve.slot));
		wafer__memory_record_reserve(bridge->record,
					     c->reserve.slot->index,
					     c->reserve.size);
	}
	return status;
}

/* What a WRITE or READ of |*slot| (|what|: "write" or "read") does before
 * its copy: checks that the handle has memory, orders the copy after the
 * handle's earlier use on other lanes and marks the command's lane, set
 * in |out_lane|, dirty. */
static wafer_status begin_copy(struct wafer__bridge *bridge,
			       struct wafer__command *c,
			       struct wafer__handle_slot **slot,
			       const char *what, struct wafer__lane **out_lane)
{
	uint32_t l = wafer__command_lane(c);
	wafer_status status = wafer__bridge_check_backed(*slot, what);
	if (status == WAFER_OK)
		status = wafer__lanes_touch(&bridge->lanes, l, slot, 1);
	if (status != WAFER_OK)
		return status;
	*out_lane = &bridge->lanes.lane[l];
	(*out_lane)->dirty = true;
	return WAFER_OK;
}

wafer_status wafer__bridge_run_write(struct wafer__bridge *bridge,
				     struct wafer__command *c)
{
	struct wafer__lane *lane;
	wafer_status status =
		begin_copy(bridge, c, &c->write.slot, "write", &lane);
	if (status != WAFER_OK)
		return status;
	const struct wafer__slice *slice = &c->write.slot->slice;
	const struct wafer_storage_ops *storage = bridge->device->plugin->storage;
	return (c->write.registered ? storage->copy_in_registered
				    : storage->copy_in)(
		bridge->plugin_device, lane->queue, slice->resource,
		slice->offset + c->write.offset, c->write.src, c->write.size);
}

/* Issues the copy of a READ or READ_ASYNC. */
static wafer_status issue_read(struct wafer__bridge *bridge,
			       struct wafer__command *c)
{
	struct wafer__lane *lane;
	wafer_status status = begin_copy(bridge, c, &c->read.slot, "read", &lane);
	if (status != WAFER_OK)
		return status;
	const struct wafer__slice *slice = &c->read.slot->slice;
	const struct wafer_storage_ops *storage = bridge->device->plugin->storage;
	return (c->read.registered ? storage->copy_out_registered
				   : storage->copy_out)(
		bridge->plugin_device, lane->queue, slice->resource,
		slice->offset + c->read.offset, c->read.dst, c->read.size);
}

wafer_status wafer__bridge_run_read(struct wafer__bridge *bridge,
				    struct wafer__command *c)
{
	uint32_t l = wafer__command_lane(c);
	wafer_status status = issue_read(bridge, c);
	if (status == WAFER_OK)
		status = queue_sync(bridge, l);
	return report(bridge, l, status);
}

wafer_status wafer__bridge_run_read_async(struct wafer__bridge *bridge,
					  struct wafer__command *c)
{
	return issue_read(bridge, c);
}

/* Queue order keeps the memory safe for work issued before this release;
 * strategies that give memory back to the plugin quiesce first
 * (storage.c). */
wafer_status wafer__bridge_run_release(struct wafer__bridge *bridge,
				       struct wafer__command *c)
{
	if (c->release.slot->slice.resource)
		release_slot(bridge, wafer__command_lane(c), c->release.slot);
	wafer__handle_table_recycle(bridge->handles, c->release.slot);
	return WAFER_OK;
}

wafer_status wafer__bridge_run_sync(struct wafer__bridge *bridge,
				    struct wafer__command *c)
{
	return bridge_sync(bridge, wafer__command_lane(c));
}

wafer_status wafer__bridge_run_usage(struct wafer__bridge *bridge,
				     struct wafer__command *c)
{
	wafer__memory_get_usage(bridge->memory, c->usage.out);
	return WAFER_OK;
}

wafer_status wafer__bridge_run_trim(struct wafer__bridge *bridge,
				    struct wafer__command *c)
{
	(void)c;
	wafer__memory_trim_cache(bridge->memory);
	return WAFER_OK;
}

/* The one run path: the row's run function. */
wafer_status wafer__bridge_run(struct wafer__bridge *bridge,
			       struct wafer__command *c)
{
	if (__builtin_expect(bridge->capturing, 0) &&
	    wafer__graph_captures(bridge, c))
		return wafer__graph_capture(bridge, c);
	if (wafer__trace_on())
		return wafer__trace_run(bridge, c);
	switch (c->kind) {
#define WAFER_COMMAND(KIND, name, waits, queue, capture, run) \
	case WAFER_COMMAND_##KIND:                    \
		return run(bridge, c);
#include "lib/command.def"
#undef WAFER_COMMAND
	}
	return wafer__fail(WAFER_ERROR_INTERNAL, "unknown command %d", c->kind);
}
