/* wafer — SPDX-License-Identifier: MIT
 * null_query.c: a test plugin that cannot describe itself: its query
 * returns NULL after set_error. */
#include "build-config.h"

#include <stddef.h>

#include <wafer/plugin.h>

WAFER_PLUGIN_EXPORT const struct wafer_plugin *
wafer_plugin_query(uint32_t core_abi_major,
		   const struct wafer_host_services *host)
{
	host->set_error("no descriptor for ABI major %u", core_abi_major);
	return NULL;
}
