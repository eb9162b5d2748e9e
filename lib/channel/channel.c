/* wafer — SPDX-License-Identifier: MIT
 * channel.c: channel lookup by name. */
#include "build-config.h"

#include <string.h>

#include "lib/channel/channel.h"
#include "lib/error.h"

static const struct wafer__channel_ops *const channels[] = {
	&wafer__channel_direct,
	&wafer__channel_mutex,
	&wafer__channel_mpsc,
};

/* `auto`: a queue and a runner thread pay off when the device works
 * asynchronously (GPUs); for a backend whose kernels run on host threads
 * the caller's thread under a lock is the cheaper path (wafer-bench
 * channel measures both). */
static const char *resolve_auto(const struct wafer__bridge *bridge)
{
	uint64_t caps = bridge->device->info.capabilities;
	return (caps & WAFER_CAP_HOST_MEMORY) ? "mutex" : "mpsc";
}

wafer_status wafer__channel_create(const char *name, const char *origin,
				   struct wafer__bridge *bridge,
				   struct wafer__channel *out)
{
	*out = (struct wafer__channel){0};
	if (strcmp(name, "auto") == 0)
		name = resolve_auto(bridge);
	for (size_t i = 0; i < sizeof channels / sizeof channels[0]; i++) {
		if (strcmp(channels[i]->name, name) == 0) {
			wafer_status status =
				channels[i]->create(bridge, &out->self);
			if (status == WAFER_OK) {
				out->ops = channels[i];
				out->execute = channels[i]->execute;
			}
			return status;
		}
	}
	return wafer__fail(WAFER_ERROR_CONFIG,
			   "%s: unknown channel '%s' (known: auto, direct, mutex, mpsc)",
			   origin, name);
}
