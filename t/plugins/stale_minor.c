/* wafer — SPDX-License-Identifier: MIT
 * stale_minor.c: a test plugin that declares ABI 1.1 but, built with a
 * later header and its abi_minor set by hand, fills entries of later
 * minors (interop, 1.3; vendor_names, 1.7). A plugin is judged by the
 * minor it declares: the loader drops those groups, saying so. */
#include "build-config.h"

#include "t/plugins/common.h"

const struct tp_plugin_defaults tp_plugin = {
	.name = "stale_minor",
	.version = "1.1",
	.description = "test plugin: declares 1.1, sets later entries",
	.devices = 1,
};

TP_STORAGE_OPS(stale_storage_ops, TP_STORAGE_INTEROP);

TP_SERVER_OPS(stale_server_ops, TP_SERVER_INTEROP);

static const struct wafer_vendor_name names[] = {
	{sizeof names[0], WAFER_VENDOR_PROGRAM_FORMAT,
	 WAFER_PROGRAM_VENDOR + 9, "stale-isa"},
};

TP_PLUGIN_QUERY(d)
{
	d->abi_minor = 1;
	d->storage = &stale_storage_ops;
	d->server = &stale_server_ops;
	d->vendor_names = names;
	d->vendor_name_count = 1;
}
