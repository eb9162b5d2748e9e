/* wafer — SPDX-License-Identifier: MIT
 * old_struct.c: a test plugin whose descriptor's struct_size ends before
 * the required device_open entry. */
#include "build-config.h"

#include <stddef.h>

#include "t/plugins/common.h"

const struct tp_plugin_defaults tp_plugin = {
	.name = "old_struct",
	.version = "1.0",
	.description = "test plugin: descriptor too short",
	.devices = 1,
};

TP_PLUGIN_QUERY(d)
{
	d->struct_size = offsetof(struct wafer_plugin, device_open);
}
