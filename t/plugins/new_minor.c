/* wafer — SPDX-License-Identifier: MIT
 * new_minor.c: a test plugin built for a minor newer than any core knows
 * (ABI 1.99), otherwise good's: it loads, with a warning that names both
 * minors, which wafer-info shows in the plugin's report. */
#include "build-config.h"

#include "t/plugins/common.h"

TP_PLUGIN("new_minor", "9.9", "test plugin: built for ABI 1.99", 1, 0);

TP_PLUGIN_QUERY(d)
{
	d->abi_minor = 99;
}
