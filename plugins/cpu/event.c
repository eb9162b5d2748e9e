/* wafer — SPDX-License-Identifier: MIT
 *
 * event.c: the cpu plugin's events and host callbacks (ABI 1.5).
 *
 * A queue is a worker thread (queue.c). Recording an event puts a task
 * on the queue that marks the event complete, with the host clock's time
 * (device time is host time here); waiting on one puts a task that
 * blocks that queue's worker until the event is complete; a host
 * callback is a task that calls it on the worker.
 *
 * An event counts its records: the n-th record is complete when its
 * task has run. A wait, sync or query looks at the record made last
 * before it; an event never recorded is complete. */
#include "build-config.h"

#include <stdlib.h>

#include "plugins/cpu/cpu_plugin.h"

struct cpu_event {
	pthread_mutex_t lock;
	pthread_cond_t done;
	uint64_t recorded;  /* records issued */
	uint64_t completed; /* the highest record whose task has run */
	uint64_t stamp_ns;  /* when that one ran */
	uint64_t waits;     /* wait tasks queued and not yet finished */
};

/* A task naming an event and one of its records. */
struct event_task {
	struct cpu_task task;
	struct cpu_event *event;
	uint64_t record;
};

wafer_status cpu_event_create(void *device, uint32_t flags, void **out_event)
{
	struct cpu_device *dev = device;
	struct cpu_event *e = calloc(1, sizeof *e);

	(void)flags;
	*out_event = e;
	if (!e) {
		dev->state->host->set_error("cpu: cannot allocate an event");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->done, NULL);
	return WAFER_OK;
}

/* Waits until record |n| of |e| is complete. */
static void wait_for(struct cpu_event *e, uint64_t n)
{
	pthread_mutex_lock(&e->lock);
	while (e->completed < n)
		pthread_cond_wait(&e->done, &e->lock);
	pthread_mutex_unlock(&e->lock);
}

static uint64_t last_record(struct cpu_event *e)
{
	pthread_mutex_lock(&e->lock);
	uint64_t n = e->recorded;
	pthread_mutex_unlock(&e->lock);
	return n;
}

/* Records and waits still queued name the event: they finish first. */
void cpu_event_destroy(void *device, void *event)
{
	struct cpu_event *e = event;

	(void)device;
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	while (e->completed < e->recorded || e->waits)
		pthread_cond_wait(&e->done, &e->lock);
	pthread_mutex_unlock(&e->lock);
	pthread_cond_destroy(&e->done);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

/* |dev|'s out-of-memory report for a task of |what|. */
static struct event_task *new_task(struct cpu_device *dev, const char *what)
{
	struct event_task *t = malloc(sizeof *t);

	if (!t)
		dev->state->host->set_error("cpu: %s: cannot allocate a task",
					    what);
	return t;
}

static void run_record(struct cpu_task *task, struct cpu_queue *queue)
{
	struct event_task *t = (struct event_task *)task;
	struct cpu_event *e = t->event;

	(void)queue;
	pthread_mutex_lock(&e->lock);
	if (e->completed < t->record) {
		e->completed = t->record;
		e->stamp_ns = cpu_now_ns();
	}
	pthread_cond_broadcast(&e->done);
	pthread_mutex_unlock(&e->lock);
	free(t);
}

wafer_status cpu_event_record(void *device, void *queue, void *event)
{
	struct event_task *t = new_task(device, "event_record");
	struct cpu_event *e = event;

	if (!t)
		return WAFER_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&e->lock);
	t->record = ++e->recorded;
	pthread_mutex_unlock(&e->lock);
	t->event = e;
	t->task.run = run_record;
	cpu_queue_push(queue, &t->task);
	return WAFER_OK;
}

static void run_wait(struct cpu_task *task, struct cpu_queue *queue)
{
	struct event_task *t = (struct event_task *)task;
	struct cpu_event *e = t->event;

	(void)queue;
	wait_for(e, t->record);
	pthread_mutex_lock(&e->lock);
	e->waits--;
	pthread_cond_broadcast(&e->done);
	pthread_mutex_unlock(&e->lock);
	free(t);
}

wafer_status cpu_queue_wait_event(void *device, void *queue, void *event)
{
	struct cpu_event *e = event;
	uint64_t n = last_record(e);

	if (n == 0)
		return WAFER_OK; /* never recorded: complete */
	struct event_task *t = new_task(device, "queue_wait_event");
	if (!t)
		return WAFER_ERROR_OUT_OF_MEMORY;
	t->event = e;
	t->record = n;
	t->task.run = run_wait;
	pthread_mutex_lock(&e->lock);
	e->waits++;
	pthread_mutex_unlock(&e->lock);
	cpu_queue_push(queue, &t->task);
	return WAFER_OK;
}

wafer_status cpu_event_sync(void *device, void *event)
{
	(void)device;
	wait_for(event, last_record(event));
	return WAFER_OK;
}

wafer_status cpu_event_query(void *device, void *event)
{
	struct cpu_event *e = event;

	(void)device;
	pthread_mutex_lock(&e->lock);
	bool done = e->completed >= e->recorded;
	pthread_mutex_unlock(&e->lock);
	return done ? WAFER_OK : WAFER_ERROR_NOT_READY;
}

wafer_status cpu_event_elapsed(void *device, void *start, void *end,
			       uint64_t *out_ns)
{
	struct cpu_event *s = start, *e = end;
	struct cpu_device *dev = device;

	*out_ns = 0;
	uint64_t s_n = last_record(s), e_n = last_record(e);
	if (!s_n || !e_n) {
		dev->state->host->set_error("cpu: event_elapsed: an event was "
					    "never recorded");
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	wait_for(s, s_n);
	wait_for(e, e_n);
	pthread_mutex_lock(&s->lock);
	uint64_t s_ns = s->stamp_ns;
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&e->lock);
	uint64_t e_ns = e->stamp_ns;
	pthread_mutex_unlock(&e->lock);
	*out_ns = e_ns > s_ns ? e_ns - s_ns : 0;
	return WAFER_OK;
}

/* A host callback: |fn(arg)| on the queue's worker. */
struct callback_task {
	struct cpu_task task;
	void (*fn)(void *arg);
	void *arg;
};

static void run_callback(struct cpu_task *task, struct cpu_queue *queue)
{
	struct callback_task *t = (struct callback_task *)task;

	(void)queue;
	t->fn(t->arg);
	free(t);
}

wafer_status cpu_queue_callback(void *device, void *queue,
				void (*fn)(void *arg), void *arg)
{
	struct cpu_device *dev = device;
	struct callback_task *t = malloc(sizeof *t);

	if (!t) {
		dev->state->host->set_error("cpu: queue_callback: cannot "
					    "allocate a task");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	t->fn = fn;
	t->arg = arg;
	t->task.run = run_callback;
	cpu_queue_push(queue, &t->task);
	return WAFER_OK;
}
