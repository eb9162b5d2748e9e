/* wafer — SPDX-License-Identifier: MIT
 * init_fails.c: a test plugin whose init fails and says why through
 * set_error. */
#include "build-config.h"

#include "t/plugins/common.h"

const struct tp_plugin_defaults tp_plugin = {
	.name = "init_fails",
	.version = "1.0",
	.description = "test plugin: init fails",
	.devices = 1,
};

static wafer_status init_fails_init(const struct wafer_plugin_init_args *args,
				    void **out_state)
{
	*out_state = NULL;
	args->host->set_error("cannot reach the widget (code %d)", 42);
	return WAFER_ERROR_DEVICE;
}

TP_PLUGIN_QUERY(d)
{
	d->init = init_fails_init;
}
