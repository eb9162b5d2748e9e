/* wafer — SPDX-License-Identifier: MIT
 * old_minor.c: a test plugin built "before" the optional entries existed:
 * its storage and server tables say struct_size ends after the required
 * entries. The optional entries behind that point are set (as stale
 * bytes would be) and must be ignored: the plugin loads, and the core
 * derives no capability bit from them. */
#include "build-config.h"

#include <stddef.h>

#include "t/plugins/common.h"

const struct tp_plugin_defaults tp_plugin = {
	.name = "old_minor",
	.version = "0.9",
	.description = "test plugin: tables of an older minor",
	.devices = 1,
	.vm_granularity = 65536,
};

static const struct wafer_storage_ops old_storage_ops = {
	.struct_size = offsetof(struct wafer_storage_ops, alloc_async),
	.alloc = tp_alloc,
	.free = tp_free,
	.copy_in = tp_copy_in,
	.copy_out = tp_copy_out,
	.copy = tp_copy,
	.alloc_async = tp_alloc_async,
	.free_async = tp_free_async,
	.vm_reserve = tp_vm_reserve,
	.vm_release = tp_vm_release,
	.vm_map = tp_vm_map,
	.vm_unmap = tp_vm_unmap,
	.host_alloc = tp_host_alloc,
	.host_free = tp_host_free,
};

static const struct wafer_server_ops old_server_ops = {
	.struct_size = offsetof(struct wafer_server_ops, timer_begin),
	.queue_create = tp_queue_create,
	.queue_destroy = tp_queue_destroy,
	.launch = tp_launch,
	.sync = tp_sync,
	.timer_begin = tp_timer_begin,
	.timer_end = tp_timer_end,
};

WAFER_PLUGIN_EXPORT const struct wafer_plugin *
wafer_plugin_query(uint32_t core_abi_major,
		   const struct wafer_host_services *host)
{
	static struct wafer_plugin d;

	tp_describe(host, &d);
	d.abi_minor = 0;
	d.storage = &old_storage_ops;
	d.server = &old_server_ops;
	return &d;
}
