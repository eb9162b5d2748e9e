/* wafer — SPDX-License-Identifier: MIT
 *
 * direct.c: the `direct` channel — the command runs at once in the
 * caller's thread with no lock. Only for clients used by one thread at a
 * time; it exists so that such programs pay nothing for thread safety. */
#include "build-config.h"

#include "core/channel/channel.h"
#include "core/interop.h"

static wafer_status direct_create(struct wafer_bridge *bridge, void **out_self)
{
	*out_self = bridge;
	return WAFER_OK;
}

static void direct_destroy(void *self)
{
}

static wafer_status direct_submit(void *self, struct wafer_command *command)
{
	struct wafer_bridge *bridge = self;
	/* From the client's out-of-memory handler a reserve would call the
	 * handler again, and so on until the stack overflows; the handler
	 * releases through wafer_client_drop, which bypasses the channel. */
	if (__builtin_expect(wafer_bridge_in_oom == bridge, 0))
		return wafer_bridge_refuse_in_oom();
	wafer_status status = wafer_bridge_run(bridge, command);
	/* Released imported memory: its callbacks, after the command. */
	if (__builtin_expect(bridge->released != NULL, 0))
		wafer_foreign_notify(wafer_bridge_take_released(bridge));
	return status;
}

static wafer_status direct_execute(void *self,
				   struct wafer_execute_request *request)
{
	if (__builtin_expect(wafer_bridge_in_oom == self, 0))
		return wafer_bridge_refuse_in_oom();
	return wafer_bridge_execute(self, request);
}

WAFER_CHANNEL_OPS(direct);
