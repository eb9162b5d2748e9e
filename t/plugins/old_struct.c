/* wafer — SPDX-License-Identifier: MIT
 * old_struct.c: a test plugin whose descriptor's struct_size ends before
 * the required device_open entry. */
#include "build-config.h"

#include <stddef.h>

#include "t/plugins/common.h"

TP_PLUGIN("old_struct", "1.0", "test plugin: descriptor too short", 1, 0);

TP_PLUGIN_QUERY(d)
{
	d->struct_size = offsetof(struct wafer_plugin, device_open);
}
