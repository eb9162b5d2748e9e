/* wafer — SPDX-License-Identifier: MIT
 * full.c: a test plugin that offers every optional entry (stream-ordered
 * allocation, virtual memory, pinned host memory, timers), so the core
 * derives every capability bit; two devices, for "full:1" selectors. */
#include "build-config.h"

#include "t/plugins/common.h"

const struct tp_plugin_defaults tp_plugin = {
	.name = "full",
	.version = "2.0.0",
	.description = "test plugin: every optional entry",
	.devices = 2,
	.vm_granularity = 65536,
};

static const struct wafer_storage_ops full_storage_ops = {
	.struct_size = sizeof(struct wafer_storage_ops),
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

static const struct wafer_server_ops full_server_ops = {
	.struct_size = sizeof(struct wafer_server_ops),
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
	d.storage = &full_storage_ops;
	d.server = &full_server_ops;
	return &d;
}
