/* wafer — SPDX-License-Identifier: MIT
 * missing_required.c: a test plugin whose server table lacks the required
 * launch entry. */
#include "build-config.h"

#include "t/plugins/common.h"

TP_PLUGIN("missing_required", "1.0", "test plugin: no launch", 1, 0);

static const struct wafer_server_ops no_launch_server_ops = {
	.struct_size = sizeof(struct wafer_server_ops),
	.queue_create = tp_queue_create,
	.queue_destroy = tp_queue_destroy,
	.launch = NULL, /* required */
	.sync = tp_sync,
};

TP_PLUGIN_QUERY(d)
{
	d->server = &no_launch_server_ops;
}
