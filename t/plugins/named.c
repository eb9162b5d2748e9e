/* wafer — SPDX-License-Identifier: MIT
 * named.c: a test plugin, otherwise good's, that names its vendor values
 * (ABI 1.7): a program format and a native kind the core takes, and three
 * entries it must skip with a warning each (a value outside the vendor
 * range, a name of the core's own, a value named twice). */
#include "build-config.h"

#include "t/plugins/common.h"

const struct tp_plugin_defaults tp_plugin = {
	.name = "named",
	.version = "1.0",
	.description = "test plugin: names for its vendor values",
	.devices = 1,
};

#define NAME(what, value, name)                                                \
	{sizeof(struct wafer_vendor_name), (what), (value), (name)}
static const struct wafer_vendor_name names[] = {
	NAME(WAFER_VENDOR_PROGRAM_FORMAT, WAFER_PROGRAM_VENDOR + 1, "acme-isa"),
	NAME(WAFER_VENDOR_NATIVE_KIND, WAFER_NATIVE_VENDOR + 2, "acme-buffer"),
	NAME(WAFER_VENDOR_PROGRAM_FORMAT, WAFER_PROGRAM_SPIRV, "acme-spirv"),
	NAME(WAFER_VENDOR_PROGRAM_FORMAT, WAFER_PROGRAM_VENDOR + 3, "host-c"),
	NAME(WAFER_VENDOR_PROGRAM_FORMAT, WAFER_PROGRAM_VENDOR + 1, "acme-il"),
};

TP_PLUGIN_QUERY(d)
{
	d->vendor_names = names;
	d->vendor_name_count = sizeof names / sizeof names[0];
}
