/* wafer — SPDX-License-Identifier: MIT
 *
 * channel.h: how a client's calls reach its bridge. Each channel is one
 * file under lib/channel/ behind this ops table:
 *   direct  runs the command in the caller's thread, no locking: for
 *           single-threaded programs, the cheapest path;
 *   mutex   runs it in the caller's thread under one lock per client;
 *   mpsc    queues it to one runner thread per client; calls that return
 *           no result return at once, unless thousands of commands are
 *           already queued (back-pressure; see mpsc.c).
 * Whatever the channel, commands one thread submits run in order, and a
 * command that returns a result (read, sync, usage, timer end) has run
 * when submit returns. */
#ifndef WAFER_CORE_CHANNEL_CHANNEL_H
#define WAFER_CORE_CHANNEL_CHANNEL_H

#include "lib/bridge.h"

struct wafer__channel_ops {
	const char *name;
	wafer_status (*create)(struct wafer__bridge *bridge, void **out_self);
	/* Runs or finishes everything submitted, then frees the channel. */
	void (*destroy)(void *self);
	/* |command| is the caller's: a queueing channel copies it. */
	wafer_status (*submit)(void *self, struct wafer__command *command);
	/* The launch path: as submit with an EXECUTE command whose execute
	 * member is |request|, without building the command. */
	wafer_status (*execute)(void *self,
				struct wafer__execute_request *request);
};

struct wafer__channel {
	const struct wafer__channel_ops *ops;
	void *self;
	/* ops->execute, kept here: one dependent load fewer per launch. */
	wafer_status (*execute)(void *self,
				struct wafer__execute_request *request);
};

/* Defines channel |id|'s ops table from its id_create, id_destroy,
 * id_submit and id_execute: each channel file ends with it. */
#define WAFER_CHANNEL_OPS(id)                                                  \
	const struct wafer__channel_ops wafer__channel_##id = {                \
		.name = #id,                                                   \
		.create = id##_create,                                         \
		.destroy = id##_destroy,                                       \
		.submit = id##_submit,                                         \
		.execute = id##_execute,                                       \
	}

extern const struct wafer__channel_ops wafer__channel_direct;
extern const struct wafer__channel_ops wafer__channel_mutex;
extern const struct wafer__channel_ops wafer__channel_mpsc;

/* Creates channel |name|; |origin| (where the name came from) goes into
 * the error for an unknown name. */
wafer_status wafer__channel_create(const char *name, const char *origin,
				   struct wafer__bridge *bridge,
				   struct wafer__channel *out_channel);

static inline wafer_status wafer__channel_submit(struct wafer__channel *channel,
						 struct wafer__command *command)
{
	return channel->ops->submit(channel->self, command);
}

/* The launch path: wafer_execute and the operations come through here. */
static inline wafer_status
wafer__channel_execute(struct wafer__channel *channel,
		       struct wafer__execute_request *request)
{
	return channel->execute(channel->self, request);
}

static inline void wafer__channel_destroy(struct wafer__channel *channel)
{
	if (channel->ops)
		channel->ops->destroy(channel->self);
	channel->ops = NULL;
}

#endif
