/* wafer — SPDX-License-Identifier: MIT
 * channel.c: channel lookup by name. */
#include "build-config.h"

#include <string.h>

#include "core/channel/channel.h"
#include "core/error.h"

static const struct wafer_channel_ops *const channels[] = {
	&wafer_channel_direct,
	&wafer_channel_mutex,
};

wafer_status wafer_channel_create(const char *name, const char *origin,
				  struct wafer_server *server,
				  struct wafer_channel *out)
{
	out->ops = NULL;
	out->self = NULL;
	for (size_t i = 0; i < sizeof channels / sizeof channels[0]; i++) {
		if (strcmp(channels[i]->name, name) == 0) {
			wafer_status status =
				channels[i]->create(server, &out->self);
			if (status == WAFER_OK)
				out->ops = channels[i];
			return status;
		}
	}
	return wafer_fail(WAFER_ERROR_CONFIG,
			  "%s: unknown channel '%s' (known: direct, mutex)",
			  origin, name);
}
