/* wafer — SPDX-License-Identifier: MIT
 *
 * mutex.c: the `mutex` channel — one lock per client around the bridge;
 * every command runs in the caller's thread. Safe for any number of
 * threads; they take turns. */
#include "build-config.h"

#include <pthread.h>
#include <stdlib.h>

#include "lib/channel/channel.h"
#include "lib/error.h"
#include "lib/interop.h"

struct mutex_channel {
	pthread_mutex_t lock;
	struct wafer__bridge *bridge;
};

static wafer_status mutex_create(struct wafer__bridge *bridge, void **out_self)
{
	struct mutex_channel *ch = malloc(sizeof *ch);
	*out_self = NULL;
	if (!ch)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY, "out of host memory");
	if (pthread_mutex_init(&ch->lock, NULL) != 0) {
		free(ch);
		return wafer__fail(WAFER_ERROR_INTERNAL, "pthread_mutex_init failed");
	}
	ch->bridge = bridge;
	*out_self = ch;
	return WAFER_OK;
}

static void mutex_destroy(void *self)
{
	struct mutex_channel *ch = self;
	pthread_mutex_destroy(&ch->lock);
	free(ch);
}

static wafer_status mutex_submit(void *self, struct wafer__command *command)
{
	struct mutex_channel *ch = self;
	/* From the client's out-of-memory handler, this thread holds the
	 * lock already. */
	if (__builtin_expect(wafer__bridge_in_oom == ch->bridge, 0))
		return wafer__bridge_refuse_in_oom();
	pthread_mutex_lock(&ch->lock);
	wafer_status status = wafer__bridge_run(ch->bridge, command);
	struct wafer__foreign *released = wafer__bridge_take_released(ch->bridge);
	pthread_mutex_unlock(&ch->lock);
	/* Released imported memory: its callbacks, without the lock (they
	 * may call the client). */
	if (__builtin_expect(released != NULL, 0))
		wafer__foreign_notify(released);
	return status;
}

static wafer_status mutex_execute(void *self,
				  struct wafer__execute_request *request)
{
	struct mutex_channel *ch = self;
	if (__builtin_expect(wafer__bridge_in_oom == ch->bridge, 0))
		return wafer__bridge_refuse_in_oom();
	pthread_mutex_lock(&ch->lock);
	wafer_status status = wafer__bridge_execute(ch->bridge, request);
	pthread_mutex_unlock(&ch->lock);
	return status;
}

WAFER_CHANNEL_OPS(mutex);
