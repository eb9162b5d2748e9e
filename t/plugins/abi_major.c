/* wafer — SPDX-License-Identifier: MIT
 * abi_major.c: a test plugin that speaks only ABI major 999. As plugin.h
 * asks, it returns its own descriptor whatever major the core speaks; the
 * core must report both numbers and unload it. */
#include "build-config.h"

#include "t/plugins/common.h"

TP_PLUGIN("abi_major", "999.0.0", "test plugin: from the future", 1, 0);

TP_PLUGIN_QUERY(d)
{
	d->abi_major = 999;
	d->abi_minor = 7;
}
