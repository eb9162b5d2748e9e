/* wafer — SPDX-License-Identifier: MIT
 * old_minor.c: a test plugin built "before" the optional entries existed:
 * its storage and server tables say struct_size ends after the required
 * entries. The optional entries behind that point are set (as stale
 * bytes would be) and must be ignored: the plugin loads, and the core
 * derives no capability bit from them. */
#include "build-config.h"

#include <stddef.h>

#include "t/plugins/common.h"

TP_PLUGIN("old_minor", "0.9",
	  "test plugin: tables of an older minor", 1, 65536);

static const struct wafer_storage_ops old_storage_ops = {
	.struct_size = offsetof(struct wafer_storage_ops, alloc_async),
	TP_STORAGE_REQUIRED,
	TP_STORAGE_MEMORY,
};

static const struct wafer_server_ops old_server_ops = {
	.struct_size = offsetof(struct wafer_server_ops, timer_begin),
	TP_SERVER_REQUIRED,
	TP_SERVER_TIMERS,
};

TP_PLUGIN_QUERY(d)
{
	d->abi_minor = 0;
	d->storage = &old_storage_ops;
	d->server = &old_server_ops;
}
