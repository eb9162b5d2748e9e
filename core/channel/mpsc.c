/* wafer — SPDX-License-Identifier: MIT
 *
 * mpsc.c: the `mpsc` channel — many producer threads, one runner thread
 * per client that owns the server. Commands that return nothing (execute,
 * write, reserve, release, asynchronous read, trim, timer begin) are copied
 * into a node, pushed, and the call returns at once; commands that return
 * something (read, sync, usage, timer end) push a node with a waiter and
 * block until the runner has run it.
 *
 * The queue is an intrusive multi-producer single-consumer list: a push is
 * one atomic exchange and one store, and the runner pops without any lock,
 * so a burst of commands drains with no lock per command. The runner
 * sleeps on a condition variable only when it finds the queue empty.
 *
 * Errors: a command that fails with nobody waiting for it leaves its
 * status and detail in `failure`; the next read or sync reports it (with
 * any later ones appended to the detail) and clears it, so an error is
 * reported exactly once and never lost. */
#include "build-config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/channel/channel.h"
#include "core/error.h"

/* Uploads up to this size are copied into the node and return at once;
 * larger ones wait for the runner instead of doubling their memory. */
#define MPSC_COPY_WRITE_MAX (1u << 20)

struct mpsc_waiter {
	pthread_mutex_t lock;
	pthread_cond_t done_cond;
	atomic_bool done;
	wafer_status status;
	char detail[WAFER_ERROR_DETAIL_MAX];
};

struct mpsc_node {
	struct mpsc_node *_Atomic next;
	struct wafer_command command;
	struct mpsc_waiter *waiter; /* NULL: nobody waits */
	bool stop;                  /* the runner's last node */
	struct wafer_command_binding bindings[WAFER_MAX_BINDINGS];
	/* Copied parameter block, then copied upload bytes. */
	_Alignas(max_align_t) unsigned char payload[];
};

struct mpsc_channel {
	struct wafer_server *server;
	pthread_t runner;

	/* The queue: producers exchange `head`; the runner owns `tail`. */
	struct mpsc_node *_Atomic head;
	struct mpsc_node *tail;
	struct mpsc_node stub;

	/* Sleeping runner and its wake-up. */
	pthread_mutex_t sleep_lock;
	pthread_cond_t wake;
	atomic_bool sleeping;

	/* First failure nobody waited for, reported by the next read/sync.
	 * Touched by the runner thread only. */
	wafer_status failure;
	char failure_detail[WAFER_ERROR_DETAIL_MAX];
};

//===----------------------------------------------------------------------===//
// The queue
//===----------------------------------------------------------------------===//

/* Links |node| at the head. Wait-free: one exchange, one store. */
static void enqueue(struct mpsc_channel *ch, struct mpsc_node *node)
{
	atomic_store_explicit(&node->next, NULL, memory_order_relaxed);
	struct mpsc_node *prev = atomic_exchange(&ch->head, node);
	atomic_store_explicit(&prev->next, node, memory_order_release);
}

static void push(struct mpsc_channel *ch, struct mpsc_node *node)
{
	enqueue(ch, node);
	/* Seen as sleeping: the runner holds sleep_lock from before it set
	 * the flag until it waits, so this signal cannot be lost. */
	if (atomic_load(&ch->sleeping)) {
		pthread_mutex_lock(&ch->sleep_lock);
		pthread_cond_signal(&ch->wake);
		pthread_mutex_unlock(&ch->sleep_lock);
	}
}

/* The oldest node, or NULL when the queue is empty or a producer is
 * between its exchange and its link store (the caller tries again; that
 * producer wakes the runner if it sleeps). Runner thread only. */
static struct mpsc_node *pop(struct mpsc_channel *ch)
{
	struct mpsc_node *tail = ch->tail;
	struct mpsc_node *next =
		atomic_load_explicit(&tail->next, memory_order_acquire);
	if (tail == &ch->stub) {
		if (!next)
			return NULL;
		ch->tail = next;
		tail = next;
		next = atomic_load_explicit(&tail->next, memory_order_acquire);
	}
	if (next) {
		ch->tail = next;
		return tail;
	}
	if (tail != atomic_load(&ch->head))
		return NULL; /* a push is half done */
	/* tail is the only node: queue the stub behind it to detach it. */
	enqueue(ch, &ch->stub);
	next = atomic_load_explicit(&tail->next, memory_order_acquire);
	if (next) {
		ch->tail = next;
		return tail;
	}
	return NULL;
}

/* Blocks until a node is available. */
static struct mpsc_node *pop_wait(struct mpsc_channel *ch)
{
	struct mpsc_node *node;
	for (int spin = 0; spin < 64; spin++) {
		node = pop(ch);
		if (node)
			return node;
		sched_yield();
	}
	pthread_mutex_lock(&ch->sleep_lock);
	atomic_store(&ch->sleeping, true);
	while (!(node = pop(ch)))
		pthread_cond_wait(&ch->wake, &ch->sleep_lock);
	atomic_store(&ch->sleeping, false);
	pthread_mutex_unlock(&ch->sleep_lock);
	return node;
}

//===----------------------------------------------------------------------===//
// The runner
//===----------------------------------------------------------------------===//

/* Keeps the first unreported failure; later ones are appended to its
 * detail so that none is lost. */
static void record_failure(struct mpsc_channel *ch, wafer_status status,
			   const char *detail)
{
	if (ch->failure == WAFER_OK) {
		ch->failure = status;
		snprintf(ch->failure_detail, sizeof ch->failure_detail, "%s",
			 detail);
		return;
	}
	size_t used = strlen(ch->failure_detail);
	if (used < sizeof ch->failure_detail - 1)
		snprintf(ch->failure_detail + used,
			 sizeof ch->failure_detail - used, "; then %s: %s",
			 wafer_status_string(status), detail);
}

static bool reports_failures(enum wafer_command_kind kind)
{
	return kind == WAFER_COMMAND_READ || kind == WAFER_COMMAND_SYNC;
}

static void complete(struct mpsc_waiter *waiter, wafer_status status,
		     const char *detail)
{
	waiter->status = status;
	snprintf(waiter->detail, sizeof waiter->detail, "%s", detail);
	pthread_mutex_lock(&waiter->lock);
	atomic_store_explicit(&waiter->done, true, memory_order_release);
	pthread_cond_signal(&waiter->done_cond);
	pthread_mutex_unlock(&waiter->lock);
	/* The waiter's stack frame may be gone from here on. */
}

static void run_node(struct mpsc_channel *ch, struct mpsc_node *node)
{
	wafer_error_clear();
	wafer_status status = wafer_server_run(ch->server, &node->command);
	if (!node->waiter) {
		if (status != WAFER_OK)
			record_failure(ch, status, wafer_error_detail());
		free(node);
		return;
	}
	if (reports_failures(node->command.kind) && ch->failure != WAFER_OK) {
		if (status != WAFER_OK)
			record_failure(ch, status, wafer_error_detail());
		wafer_status failure = ch->failure;
		ch->failure = WAFER_OK;
		complete(node->waiter, failure, ch->failure_detail);
		return;
	}
	complete(node->waiter, status, status ? wafer_error_detail() : "");
}

static void *runner_main(void *arg)
{
	struct mpsc_channel *ch = arg;
	for (;;) {
		struct mpsc_node *node = pop_wait(ch);
		if (node->stop) {
			complete(node->waiter, WAFER_OK, "");
			return NULL;
		}
		run_node(ch, node);
	}
}

//===----------------------------------------------------------------------===//
// Producers
//===----------------------------------------------------------------------===//

static void waiter_init(struct mpsc_waiter *waiter)
{
	pthread_mutex_init(&waiter->lock, NULL);
	pthread_cond_init(&waiter->done_cond, NULL);
	atomic_init(&waiter->done, false);
}

/* Pushes a node whose result the caller needs and waits for it. The node
 * lives on the caller's stack: the runner is done with it when it
 * signals. */
static wafer_status push_and_wait(struct mpsc_channel *ch,
				  const struct wafer_command *command, bool stop)
{
	struct mpsc_waiter waiter;
	struct mpsc_node node = {.command = *command, .stop = stop};
	waiter_init(&waiter);
	node.waiter = &waiter;
	push(ch, &node);

	/* Round trips are short: spin a little before sleeping. */
	for (int spin = 0; spin < 200; spin++) {
		if (atomic_load_explicit(&waiter.done, memory_order_acquire))
			break;
		sched_yield();
	}
	pthread_mutex_lock(&waiter.lock);
	while (!atomic_load_explicit(&waiter.done, memory_order_acquire))
		pthread_cond_wait(&waiter.done_cond, &waiter.lock);
	pthread_mutex_unlock(&waiter.lock);
	pthread_cond_destroy(&waiter.done_cond);
	pthread_mutex_destroy(&waiter.lock);
	if (waiter.status != WAFER_OK)
		return wafer_fail(waiter.status, "%s", waiter.detail);
	return WAFER_OK;
}

/* Copies a command with its bindings, parameters and upload bytes into a
 * node the runner frees, and pushes it. */
static wafer_status push_copy(struct mpsc_channel *ch,
			      const struct wafer_command *command)
{
	size_t params = (command->params_size + 15) & ~(size_t)15;
	size_t upload = command->kind == WAFER_COMMAND_WRITE ? command->size : 0;
	struct mpsc_node *node = malloc(sizeof *node + params + upload);
	if (!node)
		return wafer_fail(WAFER_ERROR_OUT_OF_MEMORY,
				  "mpsc: cannot queue a command of %zu bytes",
				  params + upload);
	node->command = *command;
	node->waiter = NULL;
	node->stop = false;
	if (command->binding_count) {
		memcpy(node->bindings, command->bindings,
		       command->binding_count * sizeof node->bindings[0]);
		node->command.bindings = node->bindings;
	}
	if (command->params_size) {
		memcpy(node->payload, command->params, command->params_size);
		node->command.params = node->payload;
	}
	if (upload) {
		memcpy(node->payload + params, command->src, upload);
		node->command.src = node->payload + params;
	}
	push(ch, node);
	return WAFER_OK;
}

static wafer_status mpsc_submit(void *self, const struct wafer_command *command)
{
	struct mpsc_channel *ch = self;
	switch (command->kind) {
	case WAFER_COMMAND_READ:
	case WAFER_COMMAND_SYNC:
	case WAFER_COMMAND_USAGE:
	case WAFER_COMMAND_TIMER_END:
		return push_and_wait(ch, command, false);
	case WAFER_COMMAND_WRITE:
		if (command->size > MPSC_COPY_WRITE_MAX)
			return push_and_wait(ch, command, false);
		return push_copy(ch, command);
	default:
		return push_copy(ch, command);
	}
}

//===----------------------------------------------------------------------===//
// Lifetime
//===----------------------------------------------------------------------===//

static wafer_status mpsc_create(struct wafer_server *server, void **out_self)
{
	struct mpsc_channel *ch = calloc(1, sizeof *ch);
	*out_self = NULL;
	if (!ch)
		return wafer_fail(WAFER_ERROR_OUT_OF_MEMORY, "out of host memory");
	ch->server = server;
	atomic_init(&ch->stub.next, NULL);
	atomic_init(&ch->head, &ch->stub);
	ch->tail = &ch->stub;
	atomic_init(&ch->sleeping, false);
	pthread_mutex_init(&ch->sleep_lock, NULL);
	pthread_cond_init(&ch->wake, NULL);
	int err = pthread_create(&ch->runner, NULL, runner_main, ch);
	if (err) {
		pthread_cond_destroy(&ch->wake);
		pthread_mutex_destroy(&ch->sleep_lock);
		free(ch);
		return wafer_fail(WAFER_ERROR_INTERNAL,
				  "mpsc: cannot start the runner thread: %s",
				  strerror(err));
	}
	*out_self = ch;
	return WAFER_OK;
}

/* Runs everything queued, stops the runner and joins it. A failure still
 * unreported is logged by the caller's final sync (client close syncs
 * before destroying the channel). */
static void mpsc_destroy(void *self)
{
	struct mpsc_channel *ch = self;
	struct wafer_command none = {.kind = WAFER_COMMAND_SYNC};
	push_and_wait(ch, &none, true);
	pthread_join(ch->runner, NULL);
	pthread_cond_destroy(&ch->wake);
	pthread_mutex_destroy(&ch->sleep_lock);
	free(ch);
}

const struct wafer_channel_ops wafer_channel_mpsc = {
	.name = "mpsc",
	.create = mpsc_create,
	.destroy = mpsc_destroy,
	.submit = mpsc_submit,
};
