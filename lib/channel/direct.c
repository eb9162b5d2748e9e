/* wafer — SPDX-License-Identifier: MIT
 *
 * direct.c: the `direct` channel — the command runs at once in the
 * caller's thread with no lock. Only for clients used by one thread at a
 * time; it exists so that such programs pay nothing for thread safety.
 *
 * A second thread calling while one is inside is refused, in every
 * build, with an error naming the channel (running both would corrupt
 * the client): one compare-and-swap marks the client as used by the
 * calling thread, one store ends that. A call from inside a call on the
 * same thread (a release callback calling the client) is fine. */
#include "build-config.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/channel/channel.h"
#include "lib/error.h"
#include "lib/interop.h"
#include "lib/tls.h"

struct direct {
	struct wafer__bridge *bridge;
	/* The thread inside a call (its this_thread's address), or 0. */
	_Atomic uintptr_t user;
	/* The client was closed from inside a call on this channel (an
	 * import's release callback may close it): the outermost call frees
	 * the channel when it returns, not the close under it. */
	bool destroy_pending;
};

/* Its address tells the live threads apart. */
static WAFER__TLS_HOT char this_thread;

static wafer_status direct_create(struct wafer__bridge *bridge, void **out_self)
{
	struct direct *d = malloc(sizeof *d);
	if (!d)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "direct channel: out of host memory");
	d->bridge = bridge;
	atomic_init(&d->user, 0);
	d->destroy_pending = false;
	*out_self = d;
	return WAFER_OK;
}

static void direct_destroy(void *self)
{
	struct direct *d = self;

	if (atomic_load_explicit(&d->user, memory_order_relaxed) ==
	    (uintptr_t)&this_thread) {
		d->destroy_pending = true;
		return;
	}
	free(d);
}

/* Marks the client as used by the calling thread; |*outer| false for a
 * call from inside one on the same thread (which leaves the mark). */
static wafer_status enter(struct direct *d, bool *outer)
{
	uintptr_t me = (uintptr_t)&this_thread, user = 0;
	*outer = atomic_compare_exchange_strong_explicit(
		&d->user, &user, me, memory_order_acquire, memory_order_relaxed);
	if (*outer || user == me)
		return WAFER_OK;
	return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
			   "client on the direct channel called from two "
			   "threads at once: direct is for one thread at a "
			   "time (use the mutex or mpsc channel, "
			  "wafer_client_options.channel or [core] channel, "
			  "to share a client between threads)");
}

/* enter, after refusing a call from the client's out-of-memory handler:
 * a reserve from there would call the handler again, and so on until the
 * stack overflows (the handler releases through wafer__client_drop,
 * which bypasses the channel). */
static wafer_status enter_checked(struct direct *d, bool *outer)
{
	if (__builtin_expect(wafer__bridge_in_oom == d->bridge, 0))
		return wafer__bridge_refuse_in_oom();
	return enter(d, outer);
}

static void leave(struct direct *d, bool outer)
{
	if (outer)
		atomic_store_explicit(&d->user, 0, memory_order_release);
}

/* A command (|command|) or a launch (|request|), in the caller's
 * thread. */
static wafer_status direct_run(struct direct *d,
			       struct wafer__command *command,
			       struct wafer__execute_request *request)
{
	bool outer;
	wafer_status status = enter_checked(d, &outer);
	if (status != WAFER_OK)
		return status;
	status = command ? wafer__bridge_run(d->bridge, command)
			 : wafer__bridge_execute(d->bridge, request);
	/* Released imported memory: its callbacks, after the command. One
	 * may close the client; then nothing of the client is touched after
	 * them but |d|, which the outermost call frees (direct_destroy). */
	if (__builtin_expect(d->bridge->released != NULL, 0))
		wafer__foreign_notify(wafer__bridge_take_released(d->bridge));
	if (__builtin_expect(d->destroy_pending, 0)) {
		if (outer)
			free(d);
		return status;
	}
	leave(d, outer);
	return status;
}

static wafer_status direct_submit(void *self, struct wafer__command *command)
{
	return direct_run(self, command, NULL);
}

static wafer_status direct_execute(void *self,
				   struct wafer__execute_request *request)
{
	return direct_run(self, NULL, request);
}

WAFER_CHANNEL_OPS(direct);
