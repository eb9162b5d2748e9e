/* wafer — SPDX-License-Identifier: MIT
 * no_devices.c: a test plugin that initialises but has no device, as a
 * GPU plugin on a machine without the vendor's driver: device_count
 * returns WAFER_ERROR_NO_DEVICE with the reason. */
#include "build-config.h"

#include "t/plugins/common.h"

TP_PLUGIN("no_devices", "1.0", "test plugin: no driver", 0, 0);

static wafer_status no_devices_count(void *state, uint32_t *out_count)
{
	*out_count = 0;
	tp_host->set_error("fake driver missing");
	return WAFER_ERROR_NO_DEVICE;
}

TP_PLUGIN_QUERY(d)
{
	d->device_count = no_devices_count;
}
