/* wafer — SPDX-License-Identifier: MIT
 * good.c: a test plugin that loads: one host-memory device, kernels fill
 * and add, and every optional entry NULL (so it is also the "optional
 * entries left NULL are fine" case). */
#include "build-config.h"

#include "t/plugins/common.h"

TP_PLUGIN("good", "1.2.3", "test plugin: one host-memory device", 1, 0);

TP_PLUGIN_QUERY(d)
{
	(void)d;
}
