/* wafer — SPDX-License-Identifier: MIT
 *
 * client_watch.c: the record that tells what a client handed out whether
 * the client is still open (client_watch.h). A count of callers inside
 * instead of holding the lock across their call: a release made inside
 * may run a release callback that enters the same record again (an
 * export of this client imported back into it), which a held lock would
 * deadlock on. */
#include "build-config.h"

#include <pthread.h>
#include <stdlib.h>

#include "lib/client_watch.h"
#include "lib/error.h"

struct wafer__client_watch {
	pthread_mutex_t lock;
	pthread_cond_t idle; /* signalled when |inside| drops to 0 */
	wafer_client *client; /* NULL once closed */
	unsigned inside;
	unsigned refs;
};

struct wafer__client_watch *wafer__client_watch_create(wafer_client *client)
{
	struct wafer__client_watch *w = calloc(1, sizeof *w);

	if (!w) {
		wafer__fail(WAFER_ERROR_OUT_OF_MEMORY, "out of host memory");
		return NULL;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->idle, NULL);
	w->client = client;
	w->refs = 1;
	return w;
}

wafer_client *wafer__client_watch_enter(struct wafer__client_watch *w)
{
	pthread_mutex_lock(&w->lock);
	wafer_client *client = w->client;
	w->inside++;
	pthread_mutex_unlock(&w->lock);
	return client;
}

void wafer__client_watch_leave(struct wafer__client_watch *w)
{
	pthread_mutex_lock(&w->lock);
	if (--w->inside == 0)
		pthread_cond_broadcast(&w->idle);
	pthread_mutex_unlock(&w->lock);
}

void wafer__client_watch_hold(struct wafer__client_watch *w)
{
	pthread_mutex_lock(&w->lock);
	w->refs++;
	pthread_mutex_unlock(&w->lock);
}

void wafer__client_watch_put(struct wafer__client_watch *w)
{
	pthread_mutex_lock(&w->lock);
	unsigned refs = --w->refs;
	pthread_mutex_unlock(&w->lock);
	if (refs)
		return;
	pthread_cond_destroy(&w->idle);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

void wafer__client_watch_close(struct wafer__client_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->client = NULL;
	while (w->inside)
		pthread_cond_wait(&w->idle, &w->lock);
	pthread_mutex_unlock(&w->lock);
	wafer__client_watch_put(w);
}
