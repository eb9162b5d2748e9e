/* wafer — SPDX-License-Identifier: MIT
 * no_symbol.c: a test "plugin" that loads but exports no
 * wafer_plugin_query: only a near miss of it. Linked without the plugin
 * version script (which would hide this symbol and insist on the real
 * one). */
#include "build-config.h"

#include <stddef.h>

#include <wafer/plugin.h>

WAFER_PLUGIN_EXPORT const struct wafer_plugin *
wafer_plugin_query_v1(uint32_t core_abi_major,
		      const struct wafer_host_services *host);

WAFER_PLUGIN_EXPORT const struct wafer_plugin *
wafer_plugin_query_v1(uint32_t core_abi_major,
		      const struct wafer_host_services *host)
{
	return NULL;
}
