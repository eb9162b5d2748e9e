/* wafer — SPDX-License-Identifier: MIT
 * unresolved.c: a well-formed shared object that dlopen refuses, because
 * it needs a symbol nothing defines (as a plugin built without -lm needs
 * tanh): the loader's "dlopen failed: ... undefined symbol" case. */
#include "build-config.h"

#include <stddef.h>

#include <wafer/plugin.h>

extern const struct wafer_plugin *wafer_test_defined_nowhere(void);

WAFER_PLUGIN_EXPORT const struct wafer_plugin *
wafer_plugin_query(uint32_t core_abi_major,
		   const struct wafer_host_services *host)
{
	(void)core_abi_major;
	(void)host;
	return wafer_test_defined_nowhere();
}
