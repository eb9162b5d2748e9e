/* wafer — SPDX-License-Identifier: MIT
 *
 * comm_backends.h: what the backend-neutral tests of several ranks in
 * one process share (t/api/comm_split, t/api/comm_group): clients on
 * the first devices of a backend, and a run on the default backend and
 * on the test plugin t/plugins/collective.c. Include after tap.h and
 * client_util.h. */
#ifndef WAFER_T_COMM_BACKENDS_H
#define WAFER_T_COMM_BACKENDS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <wafer/wafer.h>

/* |n| clients of |channel| on |backend|:0 .. n-1, whose devices have
 * collectives: 0; else -1, what opened closed again and |*why| set. */
static inline int t_comm_open_clients(wafer_runtime *rt, const char *backend,
				      const char *channel, int n,
				      wafer_client **clients,
				      const char **why)
{
	wafer_client_options options = {.struct_size = sizeof options,
					 .channel = channel};
	char sel[64];
	int opened;

	*why = "";
	for (opened = 0; opened < n; opened++) {
		snprintf(sel, sizeof sel, "%s:%d", backend, opened);
		if (wafer_client_open(rt, sel, &options, &clients[opened]) !=
		    WAFER_OK) {
			*why = "fewer devices than ranks (cpu: [cpu] devices "
			       "= N; cuda: a GPU a rank)";
			break;
		}
	}
	if (opened == n &&
	    !(caps_of(clients[0], NULL) & WAFER_CAP_COLLECTIVES))
		*why = "no collectives";
	if (!**why)
		return 0;
	while (opened-- > 0)
		wafer_client_close(clients[opened]);
	return -1;
}

/* test(runtime, backend, default_backend) on the default backend, then
 * on the test plugin (a skip point without T_BUILDDIR). */
static inline void t_comm_on_backends(void (*test)(wafer_runtime *rt,
						   const char *backend,
						   bool default_backend))
{
	wafer_runtime *rt;
	wafer_client *c;
	const char *backend = open_default(NULL, &rt, &c);
	const char *builddir = getenv("T_BUILDDIR");

	check(wafer_client_close(c), "close");
	test(rt, backend, true);
	wafer_runtime_close(rt);
	if (builddir) {
		char dir[4096];

		snprintf(dir, sizeof dir, "%s/plugins/.libs", builddir);
		rt = open_runtime_on("collective", dir);
		test(rt, "collective", false);
		wafer_runtime_close(rt);
	} else {
		ok(1, "test plugin collective # SKIP T_BUILDDIR is not set");
	}
}

#endif
