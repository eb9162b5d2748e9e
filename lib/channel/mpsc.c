/* wafer — SPDX-License-Identifier: MIT
 *
 * mpsc.c: the `mpsc` channel — many producer threads, one runner thread
 * per client that owns the bridge. Commands that return nothing (execute,
 * write, reserve, release, asynchronous read, trim, timer begin) are copied
 * into a node, pushed, and the call returns at once; commands that return
 * something (read, sync, usage, timer end, the interop commands) push a
 * node with a waiter and block until the runner has run it. The one
 * exception is back-pressure: with MPSC_QUEUE_MAX recycled nodes queued
 * or running, a producer sleeps until the runner has handed half of them
 * back, as a driver's launch call blocks when its launch queue is full.
 *
 * The queue is an intrusive multi-producer single-consumer list: a push is
 * one atomic exchange and one store, and the runner pops without any lock,
 * so a burst of commands drains with no lock per command. The runner
 * sleeps on a condition variable only when it finds the queue empty.
 *
 * Nodes are recycled, not freed: a command whose bindings, parameters and
 * upload fit in a fixed-size node (MPSC_NODE_SIZE, packed: only what the
 * command has is copied) takes one from the channel's cache, and the
 * runner hands finished nodes back in batches on a lock-free stack that
 * producers take whole with one exchange (taking all of it leaves no room
 * for ABA). So neither side calls malloc or free per command, and a node
 * goes back and forth between two cores instead of through the allocator's
 * per-thread caches. A queue deeper than the nodes in circulation
 * allocates more; they circulate until the runner goes to sleep, which
 * frees all but MPSC_POOL_MAX (see runner_idle). Larger commands are
 * allocated, and freed by the runner, up to MPSC_LARGE_MAX bytes queued;
 * past that they wait for the runner like reads. Everything left is freed
 * at close.
 *
 * Waiting for a result is adaptive: the runner and a waiting producer
 * poll a little (pause instructions) before they yield the CPU and then
 * sleep, and poll less when polling has not paid (the other side was not
 * running).
 *
 * Errors: a command that fails with nobody waiting for it is deferred in
 * the bridge (wafer__bridge_defer), the one record of deferred failures
 * that every channel shares; the next read or sync the bridge runs
 * reports it (the first failure whole, later ones counted) and clears it,
 * so an error is reported exactly once and never lost. A waiter gets the
 * full text of its command's failure (a heap copy). */
#include "build-config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/channel/channel.h"
#include "lib/error.h"
#include "lib/interop.h"

/* Uploads up to this size are copied into the node and return at once;
 * larger ones wait for the runner instead of doubling their memory. */
#define MPSC_COPY_WRITE_MAX (1u << 20)

/* Recycled nodes: their size, how many a channel keeps at most, and how
 * many the runner hands back at once. */
#define MPSC_NODE_SIZE 512u
#define MPSC_POOL_MAX 1024u
/* Recycled nodes queued or running at most: a producer that would need
 * more waits for the runner. Keeps the nodes in circulation within the
 * caches when the runner is slower than its producers (a GPU launch costs
 * microseconds), instead of streaming an ever longer queue through DRAM. */
#define MPSC_QUEUE_MAX 2048u
/* Bytes of allocated (not recycled) nodes queued or running at most:
 * past it, a command too large for a recycled node is run by the runner
 * from the caller's memory while the caller waits, as uploads over
 * MPSC_COPY_WRITE_MAX always are. Bounds the memory a stream of large
 * uploads can pile up behind a slow runner. */
#define MPSC_LARGE_MAX ((size_t)64 << 20)
#define MPSC_RETIRE_BATCH 32u
/* A producer waiting for a node (MPSC_QUEUE_MAX in use) sleeps until the
 * runner has handed back this many, or has run out of work. */
#define MPSC_STARVED_WAKE (MPSC_QUEUE_MAX / 2)
#define MPSC_TRIM_STEP 256u /* nodes freed between two looks at the queue */

/* Waiting. A producer waiting for a result polls up to waiter_spin
 * times (MPSC_SPIN_MIN to MPSC_SPIN_MAX: spin_adapt), then yields the CPU
 * MPSC_WAITER_YIELDS times, then sleeps. The runner, finding the queue
 * empty, polls up to runner_spin times (1 to MPSC_RUNNER_POLLS; only
 * right after answering a waiter, see runner_idle), then yields
 * MPSC_RUNNER_YIELDS times, then sleeps. */
#define MPSC_SPIN_MIN 8u
#define MPSC_SPIN_MAX 256u
#define MPSC_WAITER_YIELDS 200u
#define MPSC_RUNNER_POLLS 6u
#define MPSC_RUNNER_POLL_PAUSES 2u /* before its first poll; doubling */
#define MPSC_RUNNER_YIELDS 64u

#define MPSC_CACHE_LINE 64

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Busy polling pays when the other side runs on another CPU and answers
 * within the spin; when it answers only once we yield (it was waiting for
 * our CPU), spinning just delays it. So the limit doubles after a wait
 * that the spin ended and halves after one it did not. */
static inline unsigned spin_adapt(unsigned limit, bool spin_ended_it)
{
	if (spin_ended_it)
		return limit < MPSC_SPIN_MAX ? limit * 2 : MPSC_SPIN_MAX;
	return limit > MPSC_SPIN_MIN ? limit / 2 : MPSC_SPIN_MIN;
}

enum { WAIT_PENDING, WAIT_SLEEPING, WAIT_DONE };

/* Lives on the waiting thread's stack. Its lock and condition variable
 * are set up only when that thread goes to sleep (state SLEEPING). */
struct mpsc_waiter {
	atomic_int state;
	wafer_status status;
	pthread_mutex_t lock;
	pthread_cond_t done_cond;
	char *detail; /* a failure's text (heap; NULL: none or no memory) */
};

struct mpsc_link {
	struct mpsc_link *_Atomic next;
};

enum {
	NODE_POOLED = 1u, /* MPSC_NODE_SIZE bytes, recycled */
	NODE_STOP = 2u,   /* the runner's last node */
};

/* The header (two cache lines) holds the command as the bridge runs it:
 * an EXECUTE's request goes to wafer__bridge_execute from here. Bindings,
 * the parameter block and upload bytes follow in `data`, packed, only as
 * many as the command has. */
struct mpsc_node {
	struct mpsc_link link;      /* in the queue, then in a free list */
	struct mpsc_waiter *waiter; /* NULL: nobody waits */
	uint32_t flags;
	uint32_t bytes; /* allocated nodes: their size, for large_bytes */
	struct wafer__command command;
	_Alignas(max_align_t) unsigned char data[];
};

#define MPSC_NODE_DATA (MPSC_NODE_SIZE - offsetof(struct mpsc_node, data))

static inline struct mpsc_node *node_of(struct mpsc_link *link)
{
	return (struct mpsc_node *)link;
}

/* Fields grouped by who writes them, each group on its own cache line so
 * that producers and the runner do not invalidate each other's lines. */
struct mpsc_channel {
	/* Set at create. */
	struct wafer__bridge *bridge;
	pthread_t runner;

	/* The queue's head: producers exchange it. */
	_Alignas(MPSC_CACHE_LINE) struct mpsc_link *_Atomic head;

	/* Producers' node cache, under cache_lock (a spin lock: it is held
	 * for a few instructions). */
	_Alignas(MPSC_CACHE_LINE) atomic_bool cache_lock;
	struct mpsc_node *cache;
	/* Busy polls of a waiting producer (spin_adapt). */
	atomic_uint waiter_spin;

	/* Nodes the runner has finished with: it pushes batches, producers
	 * take the whole stack. pool_count: recycled nodes alive. */
	_Alignas(MPSC_CACHE_LINE) struct mpsc_node *_Atomic returned;
	atomic_uint pool_count;
	/* Bytes of allocated nodes queued or running (MPSC_LARGE_MAX). */
	atomic_size_t large_bytes;
	/* Producers waiting for a node (MPSC_QUEUE_MAX in use). */
	atomic_uint starved;
	/* Nodes handed back since the runner saw them waiting (runner
	 * only). */
	unsigned starved_handed;
	pthread_mutex_t starve_lock;
	pthread_cond_t starve_cond;

	/* Queued when the queue would otherwise be left empty; producers
	 * link behind it. */
	_Alignas(MPSC_CACHE_LINE) struct mpsc_link stub;

	/* Runner thread only: the queue's tail and finished nodes not yet
	 * handed back. */
	_Alignas(MPSC_CACHE_LINE) struct mpsc_link *tail;
	struct mpsc_node *retired, *retired_last;
	unsigned retired_count;
	struct mpsc_node *excess[3]; /* chains to free (trim_begin) */
	unsigned runner_spin; /* spaced polls when idle (runner_idle) */
	bool answered;        /* the last node had a waiter */

	/* Sleeping runner and its wake-up. */
	_Alignas(MPSC_CACHE_LINE) atomic_bool sleeping;
	pthread_mutex_t sleep_lock;
	pthread_cond_t wake;
};

/*===----------------------------------------------------------------------===
 * The queue
 *===----------------------------------------------------------------------===*/

/* Links |link| at the head. Wait-free: one exchange, one store. The
 * exchange is sequentially consistent: with the load of `sleeping` after
 * it, it pairs with the runner's store of `sleeping` and load of `head`
 * (see runner_idle), so that a wake-up is never lost. */
static void enqueue(struct mpsc_channel *ch, struct mpsc_link *link)
{
	atomic_store_explicit(&link->next, NULL, memory_order_relaxed);
	struct mpsc_link *prev = atomic_exchange(&ch->head, link);
	atomic_store_explicit(&prev->next, link, memory_order_release);
}

static void push(struct mpsc_channel *ch, struct mpsc_node *node)
{
	enqueue(ch, &node->link);
	/* Seen as sleeping: the runner holds sleep_lock from before it set
	 * the flag until it waits, so this signal cannot be lost. */
	if (atomic_load(&ch->sleeping)) {
		pthread_mutex_lock(&ch->sleep_lock);
		pthread_cond_signal(&ch->wake);
		pthread_mutex_unlock(&ch->sleep_lock);
	}
}

/* Starts loading the header of the node the runner pops next while it
 * runs this one. */
static inline void prefetch_node(const struct mpsc_link *link)
{
	const char *p = (const char *)link;
	__builtin_prefetch(p);
	__builtin_prefetch(p + MPSC_CACHE_LINE);
	__builtin_prefetch(p + 2 * MPSC_CACHE_LINE);
}

/* Asks for the line at |p| in a state that can be written: a node that a
 * producer fills next was last touched by the runner, on another core. */
static inline void prefetch_write(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	/* PREFETCHW; a no-op on processors that lack it. */
	__asm__ __volatile__("prefetchw %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p, 1);
#endif
}

/* The oldest node, or NULL when the queue is empty or a producer is
 * between its exchange and its link store (the caller tries again; that
 * producer wakes the runner if it sleeps). Runner thread only. */
static struct mpsc_node *pop(struct mpsc_channel *ch)
{
	struct mpsc_link *tail = ch->tail;
	struct mpsc_link *next =
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
		if (next != &ch->stub)
			prefetch_node(next);
		return node_of(tail);
	}
	if (tail != atomic_load_explicit(&ch->head, memory_order_acquire))
		return NULL; /* a push is half done */
	/* tail is the only node: queue the stub behind it to detach it. */
	enqueue(ch, &ch->stub);
	next = atomic_load_explicit(&tail->next, memory_order_acquire);
	if (next) {
		ch->tail = next;
		return node_of(tail);
	}
	return NULL;
}

/*===----------------------------------------------------------------------===
 * Node recycling
 *===----------------------------------------------------------------------===*/

static void cache_lock(struct mpsc_channel *ch)
{
	while (atomic_exchange_explicit(&ch->cache_lock, true,
					memory_order_acquire)) {
		unsigned spins = 0;
		while (atomic_load_explicit(&ch->cache_lock,
					    memory_order_relaxed)) {
			if (++spins < 64)
				cpu_relax();
			else
				sched_yield();
		}
	}
}

static void cache_unlock(struct mpsc_channel *ch)
{
	atomic_store_explicit(&ch->cache_lock, false, memory_order_release);
}

/* A recycled node of MPSC_NODE_SIZE bytes, or NULL. */
static struct mpsc_node *take_recycled(struct mpsc_channel *ch)
{
	cache_lock(ch);
	struct mpsc_node *node = ch->cache;
	if (!node && atomic_load_explicit(&ch->returned, memory_order_relaxed))
		node = atomic_exchange_explicit(&ch->returned, NULL,
						memory_order_acquire);
	if (node) {
		struct mpsc_node *next = node_of(atomic_load_explicit(
			&node->link.next, memory_order_relaxed));
		ch->cache = next;
		cache_unlock(ch);
		/* The header of the node the next command takes. */
		if (next) {
			prefetch_write(next);
			prefetch_write((char *)next + MPSC_CACHE_LINE);
			prefetch_write((char *)next + 2 * MPSC_CACHE_LINE);
		}
		return node;
	}
	cache_unlock(ch);
	return NULL;
}

/* MPSC_QUEUE_MAX nodes are queued or running: sleeps until the runner
 * has handed back MPSC_STARVED_WAKE of them (or has nothing left to
 * run). Not polling: the runner has work for a long while, and a
 * producer that yields or spins meanwhile slows it down (on a sibling
 * hardware thread it takes half the core: an H200 host's event pairs
 * on mpsc took 1.9x the raw pair's time in some runs). */
static struct mpsc_node *wait_for_node(struct mpsc_channel *ch)
{
	struct mpsc_node *node;
	pthread_mutex_lock(&ch->starve_lock);
	/* Sequentially consistent, paired with hand_back's exchange and
	 * load of `starved`: either this load sees the nodes handed back,
	 * or hand_back sees this producer and wakes it. */
	atomic_fetch_add(&ch->starved, 1);
	while (!(node = take_recycled(ch)) && !atomic_load(&ch->returned))
		pthread_cond_wait(&ch->starve_cond, &ch->starve_lock);
	atomic_fetch_sub(&ch->starved, 1);
	pthread_mutex_unlock(&ch->starve_lock);
	return node ? node : take_recycled(ch);
}

/* A recycled node, a new one while fewer than MPSC_QUEUE_MAX are in use,
 * or one the runner hands back. */
static struct mpsc_node *take_node(struct mpsc_channel *ch)
{
	struct mpsc_node *node;
	while (!(node = take_recycled(ch))) {
		/* The runner itself, in the client's out-of-memory handler,
		 * must not wait for the runner: it takes one more node. */
		if (atomic_load_explicit(&ch->pool_count,
					 memory_order_relaxed) < MPSC_QUEUE_MAX ||
		    wafer__bridge_in_oom == ch->bridge) {
			node = aligned_alloc(MPSC_CACHE_LINE, MPSC_NODE_SIZE);
			if (!node)
				return NULL;
			atomic_fetch_add_explicit(&ch->pool_count, 1,
						  memory_order_relaxed);
			node->flags = NODE_POOLED;
			return node;
		}
		if ((node = wait_for_node(ch)))
			return node;
	}
	return node;
}

/* Hands the runner's finished nodes to the producers, and wakes those
 * waiting for nodes once enough are back or, |idle|, the runner has no
 * more work. Runner only. */
static void hand_back(struct mpsc_channel *ch, bool idle)
{
	struct mpsc_node *first = ch->retired;
	unsigned count = ch->retired_count;
	if (first) {
		struct mpsc_node *top = atomic_load_explicit(
			&ch->returned, memory_order_relaxed);
		do
			atomic_store_explicit(&ch->retired_last->link.next,
					      top ? &top->link : NULL,
					      memory_order_relaxed);
		while (!atomic_compare_exchange_weak_explicit(
			&ch->returned, &top, first, memory_order_seq_cst,
			memory_order_relaxed));
		ch->retired = NULL;
		ch->retired_last = NULL;
		ch->retired_count = 0;
	}
	/* Also with nothing to hand back: going idle, the runner must wake
	 * a producer that it let sleep through the last batches. */
	if (!atomic_load(&ch->starved))
		return;
	ch->starved_handed += count;
	if (!idle && ch->starved_handed < MPSC_STARVED_WAKE)
		return;
	ch->starved_handed = 0;
	pthread_mutex_lock(&ch->starve_lock);
	pthread_cond_broadcast(&ch->starve_cond);
	pthread_mutex_unlock(&ch->starve_lock);
}

/* The runner is done with |node|: keep it for reuse (runner_idle trims),
 * or free it when it is not a recycled one. */
static void retire(struct mpsc_channel *ch, struct mpsc_node *node)
{
	if (!(node->flags & NODE_POOLED)) {
		atomic_fetch_sub_explicit(&ch->large_bytes, node->bytes,
					  memory_order_relaxed);
		free(node);
		return;
	}
	atomic_store_explicit(&node->link.next,
			      ch->retired ? &ch->retired->link : NULL,
			      memory_order_relaxed);
	if (!ch->retired)
		ch->retired_last = node;
	ch->retired = node;
	if (++ch->retired_count >= MPSC_RETIRE_BATCH)
		hand_back(ch, false);
}

static struct mpsc_node *chain_next(struct mpsc_node *node)
{
	return node_of(
		atomic_load_explicit(&node->link.next, memory_order_relaxed));
}

/* Takes everything recycled that is not in the queue (the runner's, the
 * stack, the cache), keeps MPSC_POOL_MAX nodes in ch->retired and leaves
 * the rest in ch->excess for trim_step to free. Runner only. */
static void trim_begin(struct mpsc_channel *ch)
{
	struct mpsc_node *chains[3] = {ch->retired, NULL, NULL};
	ch->retired = ch->retired_last = NULL;
	ch->retired_count = 0;
	chains[1] = atomic_exchange_explicit(&ch->returned, NULL,
					     memory_order_acquire);
	cache_lock(ch);
	chains[2] = ch->cache;
	ch->cache = NULL;
	cache_unlock(ch);

	unsigned kept = 0, n_excess = 0;
	for (int i = 0; i < 3; i++) {
		struct mpsc_node *node = chains[i];
		for (; node && kept < MPSC_POOL_MAX; kept++) {
			struct mpsc_node *next = chain_next(node);
			atomic_store_explicit(&node->link.next,
					      ch->retired ? &ch->retired->link
							  : NULL,
					      memory_order_relaxed);
			if (!ch->retired)
				ch->retired_last = node;
			ch->retired = node;
			node = next;
		}
		if (node)
			ch->excess[n_excess++] = node;
	}
	hand_back(ch, true);
}

/* Frees up to MPSC_TRIM_STEP nodes of ch->excess; false once none is
 * left. Runner only. */
static bool trim_step(struct mpsc_channel *ch)
{
	unsigned freed = 0;
	for (int i = 0; i < 3 && freed < MPSC_TRIM_STEP; i++) {
		struct mpsc_node *node = ch->excess[i];
		for (; node && freed < MPSC_TRIM_STEP; freed++) {
			struct mpsc_node *next = chain_next(node);
			free(node);
			node = next;
		}
		ch->excess[i] = node;
	}
	if (!freed)
		return false;
	atomic_fetch_sub_explicit(&ch->pool_count, freed, memory_order_relaxed);
	return ch->excess[0] || ch->excess[1] || ch->excess[2];
}

static void free_chain(struct mpsc_node *node)
{
	while (node) {
		struct mpsc_node *next = chain_next(node);
		free(node);
		node = next;
	}
}

/*===----------------------------------------------------------------------===
 * The runner
 *===----------------------------------------------------------------------===*/

static void complete(struct mpsc_waiter *waiter, wafer_status status,
		     const char *detail)
{
	waiter->status = status;
	waiter->detail = status != WAFER_OK ? strdup(detail) : NULL;
	int expected = WAIT_PENDING;
	if (atomic_compare_exchange_strong_explicit(
		    &waiter->state, &expected, WAIT_DONE, memory_order_acq_rel,
		    memory_order_acquire))
		return; /* The waiter's stack frame may be gone from here on. */
	/* It sleeps, or holds its lock on the way to sleeping. */
	pthread_mutex_lock(&waiter->lock);
	atomic_store_explicit(&waiter->state, WAIT_DONE, memory_order_release);
	pthread_cond_signal(&waiter->done_cond);
	pthread_mutex_unlock(&waiter->lock);
	/* The waiter's stack frame may be gone from here on. */
}

static void run_node(struct mpsc_channel *ch, struct mpsc_node *node)
{
	wafer__error_clear();
	wafer_status status = wafer__bridge_run(ch->bridge, &node->command);
	struct mpsc_waiter *waiter = node->waiter;
	ch->answered = waiter != NULL;
	if (!waiter) {
		if (status != WAFER_OK)
			wafer__bridge_defer(ch->bridge, &node->command, status);
		retire(ch, node);
		return;
	}
	/* The node is on the waiter's stack: done with it. A read or sync
	 * has reported deferred failures through the bridge already. */
	complete(waiter, status, status ? wafer__error_detail() : "");
}

/* Released imported memory: its callbacks run here, on the runner, which
 * owns the bridge as in the out-of-memory handler: a release from a
 * callback runs at once and a call that would wait for the runner is
 * refused (wafer__bridge_in_oom). */
static void notify_released(struct mpsc_channel *ch)
{
	struct wafer__bridge *outer = wafer__bridge_in_oom;
	struct wafer__foreign *released;

	wafer__bridge_in_oom = ch->bridge;
	while ((released = wafer__bridge_take_released(ch->bridge)))
		wafer__foreign_notify(released);
	wafer__bridge_in_oom = outer;
}

/* The queue looked empty: hands back finished nodes, then polls, yields
 * and finally sleeps until a node comes. */
static struct mpsc_node *runner_idle(struct mpsc_channel *ch)
{
	struct mpsc_node *node;
	hand_back(ch, true);
	/* Right after answering a waiter, the next command of a round trip
	 * is on its way: poll for it, each poll after twice as many pauses
	 * as the last. Not while commands stream in with nobody waiting:
	 * polling the line that producers write slows them down, and after
	 * a yield a few nodes have gathered (wafer-bench dispatch measures
	 * both). One poll more after polling found the command, one fewer
	 * after it did not (the producer may be waiting for this CPU). */
	unsigned rounds = ch->answered ? ch->runner_spin : 0;
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned p = 0; p < (MPSC_RUNNER_POLL_PAUSES << r); p++)
			cpu_relax();
		if ((node = pop(ch))) {
			if (rounds < MPSC_RUNNER_POLLS)
				ch->runner_spin = rounds + 1;
			return node;
		}
	}
	if (rounds > 1)
		ch->runner_spin = rounds - 1;
	for (unsigned spin = 0; spin < MPSC_RUNNER_YIELDS; spin++) {
		sched_yield();
		if ((node = pop(ch)))
			return node;
	}
	/* A queue deeper than MPSC_POOL_MAX allocates nodes, and they keep
	 * circulating while the runner has work: freeing them as it
	 * finishes them would put malloc and free back on both sides just
	 * when the queue is long, and again at every burst (a GPU queue
	 * refills after each sync). Before sleeping, the runner frees what
	 * is past the bound, a step at a time so that a command coming in
	 * meanwhile waits for one step at most. */
	if (!(ch->excess[0] || ch->excess[1] || ch->excess[2]) &&
	    atomic_load_explicit(&ch->pool_count, memory_order_relaxed) >
		    MPSC_POOL_MAX)
		trim_begin(ch);
	while (trim_step(ch))
		if ((node = pop(ch)))
			return node;
	pthread_mutex_lock(&ch->sleep_lock);
	/* Sequentially consistent store, then load of head: a producer that
	 * exchanged head before this load is seen here (head differs from
	 * tail), and one that exchanges it after sees `sleeping` and
	 * signals. Sleep only on a queue that is really empty: with a push
	 * half done, its producer may have read `sleeping` as false. */
	atomic_store(&ch->sleeping, true);
	while (!(node = pop(ch))) {
		if (atomic_load(&ch->head) == ch->tail) {
			pthread_cond_wait(&ch->wake, &ch->sleep_lock);
		} else {
			pthread_mutex_unlock(&ch->sleep_lock);
			sched_yield();
			pthread_mutex_lock(&ch->sleep_lock);
		}
	}
	atomic_store_explicit(&ch->sleeping, false, memory_order_relaxed);
	pthread_mutex_unlock(&ch->sleep_lock);
	return node;
}

static void *runner_main(void *arg)
{
	struct mpsc_channel *ch = arg;
	for (;;) {
		struct mpsc_node *node = pop(ch);
		if (!node)
			node = runner_idle(ch);
		if (node->flags & NODE_STOP) {
			hand_back(ch, true);
			complete(node->waiter, WAFER_OK, "");
			return NULL;
		}
		run_node(ch, node);
		if (__builtin_expect(ch->bridge->released != NULL, 0))
			notify_released(ch);
	}
}

/*===----------------------------------------------------------------------===
 * Producers
 *===----------------------------------------------------------------------===*/

static void wait_done(struct mpsc_channel *ch, struct mpsc_waiter *waiter)
{
	unsigned limit =
		atomic_load_explicit(&ch->waiter_spin, memory_order_relaxed);
	for (unsigned spin = 0; spin < limit; spin++) {
		if (atomic_load_explicit(&waiter->state, memory_order_acquire) ==
		    WAIT_DONE) {
			if (limit < MPSC_SPIN_MAX)
				atomic_store_explicit(&ch->waiter_spin,
						      spin_adapt(limit, true),
						      memory_order_relaxed);
			return;
		}
		cpu_relax();
	}
	if (limit > MPSC_SPIN_MIN)
		atomic_store_explicit(&ch->waiter_spin,
				      spin_adapt(limit, false),
				      memory_order_relaxed);
	for (unsigned spin = 0; spin < MPSC_WAITER_YIELDS; spin++) {
		if (atomic_load_explicit(&waiter->state, memory_order_acquire) ==
		    WAIT_DONE)
			return;
		sched_yield();
	}
	pthread_mutex_init(&waiter->lock, NULL);
	pthread_cond_init(&waiter->done_cond, NULL);
	pthread_mutex_lock(&waiter->lock);
	int expected = WAIT_PENDING;
	/* Release: the runner that sees SLEEPING uses the lock set up above. */
	if (atomic_compare_exchange_strong_explicit(
		    &waiter->state, &expected, WAIT_SLEEPING,
		    memory_order_acq_rel, memory_order_acquire)) {
		while (atomic_load_explicit(&waiter->state,
					    memory_order_acquire) != WAIT_DONE)
			pthread_cond_wait(&waiter->done_cond, &waiter->lock);
	}
	pthread_mutex_unlock(&waiter->lock);
	pthread_cond_destroy(&waiter->done_cond);
	pthread_mutex_destroy(&waiter->lock);
}

/* Pushes a node whose result the caller needs and waits for it. The node
 * lives on the caller's stack: the runner is done with it when it
 * completes the waiter. */
static wafer_status push_and_wait(struct mpsc_channel *ch,
				  const struct wafer__command *command,
				  uint32_t flags)
{
	/* From the client's out-of-memory handler, this thread is the
	 * runner: it would wait for itself. */
	if (__builtin_expect(wafer__bridge_in_oom == ch->bridge, 0))
		return wafer__bridge_refuse_in_oom();
	struct mpsc_waiter waiter;
	atomic_init(&waiter.state, WAIT_PENDING);
	struct mpsc_node node = {
		.waiter = &waiter,
		.flags = flags,
		.command = *command,
	};
	push(ch, &node);
	wait_done(ch, &waiter);
	if (waiter.status != WAFER_OK) {
		wafer__fail(waiter.status, "%s",
			    waiter.detail ? waiter.detail
					 : wafer_status_string(waiter.status));
		free(waiter.detail);
	}
	return waiter.status;
}

static inline size_t round16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

/* A node for a command that needs |bytes| of data: recycled when they
 * fit, else allocated within MPSC_LARGE_MAX; NULL with *out_wait set when
 * the command must be run from the caller's memory while it waits, NULL
 * alone when out of memory. */
static inline struct mpsc_node *node_for(struct mpsc_channel *ch, size_t bytes,
					 bool *out_wait)
{
	*out_wait = false;
	if (bytes <= MPSC_NODE_DATA)
		return take_node(ch);
	size_t size = offsetof(struct mpsc_node, data) + bytes;
	if (size > MPSC_LARGE_MAX) {
		*out_wait = true;
		return NULL;
	}
	size_t queued = atomic_fetch_add_explicit(&ch->large_bytes, size,
						  memory_order_relaxed);
	if (queued && queued + size > MPSC_LARGE_MAX) {
		atomic_fetch_sub_explicit(&ch->large_bytes, size,
					  memory_order_relaxed);
		*out_wait = true;
		return NULL;
	}
	struct mpsc_node *node = malloc(size);
	if (node) {
		node->flags = 0;
		node->bytes = (uint32_t)size;
	} else {
		atomic_fetch_sub_explicit(&ch->large_bytes, size,
					  memory_order_relaxed);
	}
	return node;
}

static wafer_status no_node(size_t bytes)
{
	return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
			   "mpsc: cannot queue a command of %zu bytes", bytes);
}

/* Copies the launch |r| into |node| as an EXECUTE command, its
 * parameter block and bindings packed behind it. */
static inline void pack_execute(struct mpsc_node *node,
				const struct wafer__execute_request *r,
				size_t params)
{
	node->command.kind = WAFER_COMMAND_EXECUTE;
	struct wafer__execute_request *e = &node->command.execute;
	*e = *r;
	unsigned char *data = node->data;
	if (r->launch.params_size) {
		memcpy(data, r->launch.params, r->launch.params_size);
		e->launch.params = data;
		data += params;
	}
	if (r->launch.binding_count) {
		memcpy(data, r->bindings,
		       r->launch.binding_count *
			       sizeof(struct wafer__command_binding));
		e->bindings = (const struct wafer__command_binding *)(void *)data;
	}
}

/* The launch path: the request goes into a node as the command's execute
 * member, which the runner hands to wafer__bridge_execute as it is. */
static wafer_status mpsc_execute(void *self, struct wafer__execute_request *r)
{
	struct mpsc_channel *ch = self;
	size_t params = round16(r->launch.params_size);
	size_t bytes = params + round16(r->launch.binding_count *
					sizeof(struct wafer__command_binding));
	bool wait;
	struct mpsc_node *node = node_for(ch, bytes, &wait);
	if (!node) {
		if (!wait)
			return no_node(bytes);
		struct wafer__command command = {
			.kind = WAFER_COMMAND_EXECUTE,
			.execute = *r,
		};
		return push_and_wait(ch, &command, 0);
	}
	node->waiter = NULL;
	pack_execute(node, r, params);
	push(ch, node);
	return WAFER_OK;
}

/* Copies a command with its upload bytes (WRITE) or, for an EXECUTE,
 * its bindings and parameters into a node and pushes it; the runner
 * recycles or frees the node. */
static wafer_status push_copy(struct mpsc_channel *ch,
			      struct wafer__command *command)
{
	if (command->kind == WAFER_COMMAND_EXECUTE)
		return mpsc_execute(ch, &command->execute);
	size_t upload = command->kind == WAFER_COMMAND_WRITE &&
				!command->write.registered
				? command->write.size
				: 0;
	bool wait;
	struct mpsc_node *node = node_for(ch, upload, &wait);
	if (!node) {
		if (!wait)
			return no_node(upload);
		return push_and_wait(ch, command, 0);
	}
	node->waiter = NULL;
	node->command = *command;
	if (upload) {
		memcpy(node->data, command->write.src, upload);
		node->command.write.src = node->data;
	}
	push(ch, node);
	return WAFER_OK;
}

static wafer_status mpsc_submit(void *self, struct wafer__command *command)
{
	struct mpsc_channel *ch = self;
	/* The row says whether the caller waits (lib/command.def); a
	 * large write waits too rather than copy its bytes, unless they
	 * are registered (the caller keeps them until the write ran). */
	if (wafer__command_waits(command) ||
	    (command->kind == WAFER_COMMAND_WRITE &&
	     !command->write.registered &&
	     command->write.size > MPSC_COPY_WRITE_MAX))
		return push_and_wait(ch, command, 0);
	return push_copy(ch, command);
}

/*===----------------------------------------------------------------------===
 * Lifetime
 *===----------------------------------------------------------------------===*/

static wafer_status mpsc_create(struct wafer__bridge *bridge, void **out_self)
{
	struct mpsc_channel *ch =
		aligned_alloc(_Alignof(struct mpsc_channel), sizeof *ch);
	*out_self = NULL;
	if (!ch)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY, "out of host memory");
	memset(ch, 0, sizeof *ch);
	ch->bridge = bridge;
	atomic_init(&ch->stub.next, NULL);
	atomic_init(&ch->head, &ch->stub);
	ch->tail = &ch->stub;
	atomic_init(&ch->cache_lock, false);
	ch->cache = NULL;
	atomic_init(&ch->returned, NULL);
	atomic_init(&ch->pool_count, 0);
	atomic_init(&ch->large_bytes, 0);
	atomic_init(&ch->starved, 0);
	pthread_mutex_init(&ch->starve_lock, NULL);
	pthread_cond_init(&ch->starve_cond, NULL);
	atomic_init(&ch->waiter_spin, MPSC_SPIN_MAX);
	ch->runner_spin = MPSC_RUNNER_POLLS;
	atomic_init(&ch->sleeping, false);
	pthread_mutex_init(&ch->sleep_lock, NULL);
	pthread_cond_init(&ch->wake, NULL);
	int err = pthread_create(&ch->runner, NULL, runner_main, ch);
	if (err) {
		pthread_cond_destroy(&ch->starve_cond);
		pthread_mutex_destroy(&ch->starve_lock);
		pthread_cond_destroy(&ch->wake);
		pthread_mutex_destroy(&ch->sleep_lock);
		free(ch);
		return wafer__fail(WAFER_ERROR_INTERNAL,
				   "mpsc: cannot start the runner thread: %s",
				   strerror(err));
	}
	*out_self = ch;
	return WAFER_OK;
}

/* Runs everything queued, stops the runner and joins it, and frees the
 * recycled nodes. A failure still unreported is logged by the caller's
 * final sync (client close syncs before destroying the channel). */
static void mpsc_destroy(void *self)
{
	struct mpsc_channel *ch = self;
	struct wafer__command none = {.kind = WAFER_COMMAND_SYNC, .queue = 1};
	push_and_wait(ch, &none, NODE_STOP);
	pthread_join(ch->runner, NULL);
	free_chain(ch->retired);
	free_chain(atomic_load_explicit(&ch->returned, memory_order_acquire));
	free_chain(ch->cache);
	for (int i = 0; i < 3; i++)
		free_chain(ch->excess[i]);
	pthread_cond_destroy(&ch->starve_cond);
	pthread_mutex_destroy(&ch->starve_lock);
	pthread_cond_destroy(&ch->wake);
	pthread_mutex_destroy(&ch->sleep_lock);
	free(ch);
}

WAFER_CHANNEL_OPS(mpsc);
