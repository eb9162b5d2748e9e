/* wafer — SPDX-License-Identifier: MIT
 * init_fails.c: a test plugin whose init fails and says why through
 * set_error. */
#include "build-config.h"

#include "t/plugins/common.h"

TP_PLUGIN("init_fails", "1.0", "test plugin: init fails", 1, 0);

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
