/* wafer — SPDX-License-Identifier: MIT
 *
 * interop.h (core): what the bridge and the channels use of interop
 * (lib/interop.c; the public calls are in include/wafer/interop.h).
 *
 * Imported memory. wafer_handle_import gives a handle whose slot has
 * |foreign| set: its slice's resource comes from the plugin's import and
 * the memory strategy never sees it (so wafer_memory_usage_get counts it
 * nowhere but in handles_live). The slot keeps it whatever happens to the
 * handle's name: a donation (ops.h) ends the generation but keeps the slot
 * and so the memory, under the output's handle. The one place that frees
 * a slot's memory (release_slot in lib/bridge.c: the last release, and
 * close with the handle alive) gives foreign memory back instead: it
 * waits for the queued work, calls the plugin's forget, and puts the
 * record on the bridge's |released| list. The channel that ran the
 * command then takes the list (wafer__bridge_take_released) and calls
 * wafer__foreign_notify once it holds no lock of the client: the caller's
 * release callback runs once, after forget, on the thread that ran the
 * release (the caller's for direct and mutex, the runner's for mpsc,
 * close's at close). */
#ifndef WAFER_CORE_INTEROP_H
#define WAFER_CORE_INTEROP_H

#include <wafer/interop.h>
#include <wafer/plugin.h>

#include "lib/bridge.h"

struct wafer__foreign {
	wafer_import_release_fn release; /* may be NULL */
	void *user_data;
	struct wafer__foreign *next; /* on wafer__bridge.released */
};

/* Calls the release callback of each record on |list| and frees it. */
void wafer__foreign_notify(struct wafer__foreign *list);

/* The bridge's side of the commands (IMPORT, NATIVE, QUEUE_NATIVE) are
 * rows of lib/command.def; their run functions are in interop.c. */

/* Whether |plugin| has the interop entries of ABI 1.3 (the loader keeps a
 * group only whole): the storage ones (native, import, forget), the
 * server ones (queue_native, queue_wrap). */
static inline bool wafer__interop_storage(const struct wafer_plugin *plugin)
{
	return plugin->storage->native != NULL;
}

static inline bool wafer__interop_server(const struct wafer_plugin *plugin)
{
	return plugin->server->queue_native != NULL;
}

#endif
