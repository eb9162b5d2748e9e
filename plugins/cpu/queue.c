/* wafer — SPDX-License-Identifier: MIT
 *
 * queue.c: a cpu queue is a worker thread running the queue's tasks in
 * the order they were issued, so two queues of a device run at once (a
 * copy beside a kernel, two kernels side by side), as two streams of a
 * GPU do.
 *
 * The issuing thread (the client's bridge) puts a task at the tail and
 * returns; the worker takes tasks from the head. A task is one allocation
 * that holds what it needs (a launch's parameter block is copied into
 * it), so nothing of the caller's has to outlive the issuing call.
 *
 * What must see the queue's earlier work finished on the calling thread
 * (a host copy that returns the bytes, a collective, a caller's program,
 * a timer) drains the queue first and runs on the calling thread: the
 * issuing thread is the only one adding tasks, so nothing starts on the
 * worker meanwhile. Memory is freed only when every queue of the device
 * is drained (cpu_device_drain), as cuMemFree waits for the device. */
#include "build-config.h"

#include <stdlib.h>

#include "plugins/cpu/cpu_plugin.h"

static void *worker(void *arg)
{
	struct cpu_queue *q = arg;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->head && !q->stop)
			pthread_cond_wait(&q->work, &q->lock);
		struct cpu_task *t = q->head;
		if (!t)
			break; /* stopped, and nothing left */
		q->head = t->next;
		if (!q->head)
			q->tail = NULL;
		pthread_mutex_unlock(&q->lock);
		t->run(t, q); /* frees t */
		pthread_mutex_lock(&q->lock);
		if (--q->pending == 0)
			pthread_cond_broadcast(&q->idle);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

wafer_status cpu_queue_new(struct cpu_device *dev, struct cpu_queue **out)
{
	struct cpu_queue *q = calloc(1, sizeof *q);

	*out = NULL;
	if (!q) {
		dev->state->host->set_error("cpu: cannot allocate a queue");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	q->dev = dev;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->work, NULL);
	pthread_cond_init(&q->idle, NULL);
	int error = pthread_create(&q->thread, NULL, worker, q);
	if (error) {
		pthread_cond_destroy(&q->idle);
		pthread_cond_destroy(&q->work);
		pthread_mutex_destroy(&q->lock);
		free(q);
		dev->state->host->set_error("cpu: cannot start a queue's "
					    "worker thread (error %d); close "
					    "queues or clients to free threads",
					    error);
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&dev->queues_lock);
	q->next = dev->queues;
	dev->queues = q;
	atomic_fetch_add(&dev->queue_count, 1);
	pthread_mutex_unlock(&dev->queues_lock);
	*out = q;
	return WAFER_OK;
}

void cpu_queue_free(struct cpu_queue *q)
{
	struct cpu_device *dev = q->dev;

	pthread_mutex_lock(&dev->queues_lock);
	for (struct cpu_queue **p = &dev->queues; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			atomic_fetch_sub(&dev->queue_count, 1);
			break;
		}
	pthread_mutex_unlock(&dev->queues_lock);
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->thread, NULL); /* runs what is left first */
	wafer_plugin_deferred_clear(&q->failed);
	pthread_cond_destroy(&q->idle);
	pthread_cond_destroy(&q->work);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

void cpu_queue_push(struct cpu_queue *q, struct cpu_task *t)
{
	t->next = NULL;
	pthread_mutex_lock(&q->lock);
	if (q->tail)
		q->tail->next = t;
	else
		q->head = t;
	q->tail = t;
	q->pending++;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
}

void cpu_queue_drain(struct cpu_queue *q)
{
	pthread_mutex_lock(&q->lock);
	while (q->pending)
		pthread_cond_wait(&q->idle, &q->lock);
	pthread_mutex_unlock(&q->lock);
}

bool cpu_queue_idle(struct cpu_queue *q)
{
	pthread_mutex_lock(&q->lock);
	bool idle = q->pending == 0;
	pthread_mutex_unlock(&q->lock);
	return idle;
}

bool cpu_queue_inline(struct cpu_queue *q)
{
	return atomic_load_explicit(&q->dev->queue_count,
				    memory_order_relaxed) == 1 &&
	       cpu_queue_idle(q);
}

void cpu_device_drain(struct cpu_device *dev)
{
	pthread_mutex_lock(&dev->queues_lock);
	for (struct cpu_queue *q = dev->queues; q; q = q->next)
		cpu_queue_drain(q);
	pthread_mutex_unlock(&dev->queues_lock);
}

void cpu_queue_fail(struct cpu_queue *q, wafer_status status,
		    const char *what, const char *detail)
{
	pthread_mutex_lock(&q->lock);
	wafer_plugin_deferred_set(&q->failed, status, "cpu: %s (%s) failed "
				  "while running", what, detail);
	pthread_mutex_unlock(&q->lock);
}

wafer_status cpu_queue_report(struct cpu_queue *q)
{
	cpu_queue_drain(q);
	pthread_mutex_lock(&q->lock);
	wafer_status status =
		wafer_plugin_deferred_report(&q->failed, q->dev->state->host);
	pthread_mutex_unlock(&q->lock);
	return status;
}
