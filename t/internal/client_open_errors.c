/* wafer — SPDX-License-Identifier: MIT
 *
 * client_open_errors.c: what wafer_client_open(3) returns when the device
 * cannot be had, on the test plugins of t/plugins/:
 *  - WAFER_ERROR_NO_DEVICE when no accepted backend has the device (a
 *    plugin whose init failed, one without devices, an index past the
 *    devices), the text listing every backend with its reason;
 *  - WAFER_ERROR_DEVICE and WAFER_ERROR_PLUGIN when the plugin fails to
 *    open the device or to create a queue (t/plugins/open_fails.c), the
 *    text being the plugin's.
 * Each stores NULL in *out_client and leaves nothing behind: the device a
 * failed open acquired is closed again with no queue alive, and the
 * runtime still opens clients on the device that works.
 *
 * The runtime reads no configuration file: backend and plugin_path come
 * in as options, as in t/internal/loader. It looks into the test plugin's device
 * (t/plugins/common.h) through the core's runtime.h. */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "lib/runtime.h"
#include "t/plugins/common.h"
#include "t/client_util.h"
#include "t/tap.h"

static char plugin_path[4096];

static wafer_runtime *open_runtime(const char *backends)
{
	return open_runtime_on(backends, plugin_path);
}

/* wafer_client_open(rt, selector) fails with |want|, stores NULL and
 * says |detail|. */
static void open_fails(wafer_runtime *rt, const char *selector,
		       wafer_status want, const char *detail)
{
	wafer_client *client = (wafer_client *)&client; /* not NULL */
	is_status(wafer_client_open(rt, selector, NULL, &client), want,
		  "client_open('%s')", selector);
	ok(client == NULL, "  ... *out_client is NULL");
	like(wafer_last_error(), detail, "  ... detail: '%s'", detail);
}

/* open_fails, and one point more: the detail does not name |other|. */
static void open_fails_without(wafer_runtime *rt, const char *selector,
			       wafer_status want, const char *detail,
			       const char *other, const char *what)
{
	open_fails(rt, selector, want, detail);
	ok(!strstr(wafer_last_error(), other), "%s", what);
}

static void test_no_device(void)
{
	wafer_runtime *rt = open_runtime("init_fails, no_devices");
	static const char *const reasons =
		"init_fails: init failed: WAFER_ERROR_DEVICE: cannot reach the "
		"widget (code 42); no_devices: no devices: fake driver missing";

	open_fails(rt, "default", WAFER_ERROR_NO_DEVICE, reasons);
	/* A backend by name: its own reason only, not every backend's. */
	open_fails_without(rt, "init_fails", WAFER_ERROR_NO_DEVICE,
			   "no device matches 'init_fails': init_fails: "
			   "init failed: WAFER_ERROR_DEVICE: cannot reach the "
			   "widget (code 42)",
			   "no_devices", "  ... and no other backend's");
	open_fails_without(rt, "no_devices:0", WAFER_ERROR_NO_DEVICE,
			   "no device matches 'no_devices:0': no_devices: "
			   "no devices: fake driver missing",
			   "init_fails", "  ... and no other backend's");
	/* A typo of a listed backend; a name far from every one. */
	open_fails(rt, "no_device", WAFER_ERROR_NO_DEVICE,
		   "no device matches 'no_device': no backend 'no_device' "
		   "(did you mean no_devices?)");
	open_fails(rt, "zzz", WAFER_ERROR_NO_DEVICE,
		   "no device matches 'zzz': no backend 'zzz' in [core] backend "
		   "(init_fails, no_devices)");
	wafer_runtime_close(rt);
}

static void test_open_fails(void)
{
	wafer_runtime *rt =
		open_runtime("init_fails, no_devices, open_fails");
	struct wafer_runtime_device *device;

	/* An index past the three devices: how many there are. */
	open_fails_without(rt, "open_fails:3", WAFER_ERROR_NO_DEVICE,
			   "no device matches 'open_fails:3': open_fails has "
			   "3 devices (open_fails:0 to open_fails:2)",
			   "init_fails",
			   "  ... and not every backend's reason");

	/* device_open fails: the plugin's status and text, each time
	 * (nothing is left half open). "default" is this device too: the
	 * first device of the first backend that has one. */
	open_fails(rt, "open_fails:0", WAFER_ERROR_DEVICE,
		   "open_fails:0: device_open: device 0 is wedged");
	open_fails(rt, "open_fails:0", WAFER_ERROR_DEVICE,
		   "device 0 is wedged");
	open_fails(rt, "default", WAFER_ERROR_DEVICE, "device 0 is wedged");

	/* queue_create fails after the device opened: the device is
	 * closed again and no queue is left. */
	open_fails(rt, "open_fails:1", WAFER_ERROR_PLUGIN,
		   "open_fails: queue_create: no free hardware queue");
	is_status(wafer__runtime_acquire_device(rt, "open_fails:1", &device),
		  WAFER_OK, "open_fails:1 can be acquired afterwards");
	if (device) {
		const struct tp_device *td = device->device;
		ok(td->open_count == 2 && td->close_count == 1 &&
			   td->queues_live == 0,
		   "  ... the failed client open closed it again and left "
		   "no queue (opens %d, closes %d, queues %d)",
		   td->open_count, td->close_count, td->queues_live);
		wafer__runtime_release_device(rt, device);
	}

	/* The device that works still serves a client. */
	wafer_client *client = NULL;
	is_status(wafer_client_open(rt, "open_fails:2", NULL, &client),
		  WAFER_OK, "client_open('open_fails:2') after the failures");
	if (client) {
		wafer_handle h;
		float ys[4] = {0};
		int worked = wafer_empty(client, sizeof ys, &h) == WAFER_OK &&
			     fill_floats(client, h, 4, 2.5) == WAFER_OK &&
			     wafer_read(client, h, 0, ys, sizeof ys) == WAFER_OK;
		ok(worked && ys[0] == 2.5f && ys[3] == 2.5f,
		   "  ... which fills a buffer");
		wafer_release(client, h);
		is_status(wafer_client_close(client), WAFER_OK,
			  "  ... and closes");
	}
	wafer_runtime_close(rt);
}

int main(void)
{
	const char *builddir = getenv("T_BUILDDIR");

	if (!builddir)
		skip_all("T_BUILDDIR is not set (run through make check)");
	snprintf(plugin_path, sizeof plugin_path, "%s/plugins/.libs",
		 builddir);

	test_no_device();
	test_open_fails();
	done_testing();
	return exit_status();
}
