/* wafer — SPDX-License-Identifier: MIT
 * good.c: a test plugin that loads: one host-memory device, kernels fill
 * and add, and every optional entry NULL (so it is also the "optional
 * entries left NULL are fine" case). */
#include "build-config.h"

#include "t/plugins/common.h"

const struct tp_plugin_defaults tp_plugin = {
	.name = "good",
	.version = "1.2.3",
	.description = "test plugin: one host-memory device",
	.devices = 1,
};

TP_PLUGIN_QUERY(d)
{
	(void)d;
}
