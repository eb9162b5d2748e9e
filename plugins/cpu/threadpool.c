/* wafer — SPDX-License-Identifier: MIT
 *
 * threadpool.c: a fork-join pool (threadpool.h). One job at a time: the
 * submitter publishes it under the pool's lock and wakes the workers; every
 * thread, the submitter included, then claims ranges of it until none is
 * left, and the submitter waits until the last claimed range has finished.
 *
 * Everything shared is read and written under |lock|, and each range's
 * results are published by the unlock that follows it, so the pool is
 * correct by plain mutex reasoning (and ThreadSanitizer agrees). */
#include "build-config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "plugins/cpu/threadpool.h"

struct cpu_pool {
	unsigned threads; /* workers + the submitting thread */

	/* Serialises submitters: the pool runs one job at a time. */
	pthread_mutex_t submit;

	/* Guards every field below. */
	pthread_mutex_t lock;
	pthread_cond_t job_posted; /* workers wait here */
	pthread_cond_t job_done;   /* the submitter waits here */
	bool stopping;
	/* Bumped for every job, so a worker can tell a new job from a
	 * spurious wake-up. */
	uint64_t generation;

	/* The current job: [0, count) split into |ranges| ranges. */
	cpu_range_fn fn;
	void *ctx;
	size_t count;
	unsigned ranges;
	unsigned next_range;     /* first range nobody claimed yet */
	unsigned ranges_running; /* claimed or unclaimed, not yet finished */

	pthread_t workers[]; /* threads - 1 of them */
};

/* Start of range |k| of |ranges| equal parts of [0, count). */
static size_t range_start(size_t count, unsigned ranges, unsigned k)
{
	/* count = q * ranges + r; written so that nothing overflows
	 * (r * k < ranges * ranges). Range sizes differ by at most one. */
	return count / ranges * k + count % ranges * k / ranges;
}

/* Claims and runs ranges of the current job until all are claimed. Called
 * and returns with pool->lock held; runs each range with it released. */
static void run_ranges(struct cpu_pool *pool)
{
	while (pool->next_range < pool->ranges) {
		unsigned k = pool->next_range++;
		cpu_range_fn fn = pool->fn;
		void *ctx = pool->ctx;
		size_t begin = range_start(pool->count, pool->ranges, k);
		size_t end = range_start(pool->count, pool->ranges, k + 1);

		pthread_mutex_unlock(&pool->lock);
		fn(ctx, begin, end);
		pthread_mutex_lock(&pool->lock);

		if (--pool->ranges_running == 0)
			pthread_cond_signal(&pool->job_done);
	}
}

static void *worker_main(void *arg)
{
	struct cpu_pool *pool = arg;
	uint64_t seen = 0;

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		while (!pool->stopping && pool->generation == seen)
			pthread_cond_wait(&pool->job_posted, &pool->lock);
		if (pool->stopping)
			break;
		/* If we slept through whole jobs, the others ran them; only
		 * the current one matters. */
		seen = pool->generation;
		run_ranges(pool);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

/* Asks the first |started| workers to stop, joins them and frees the
 * pool. */
static void destroy_pool(struct cpu_pool *pool, unsigned started)
{
	pthread_mutex_lock(&pool->lock);
	pool->stopping = true;
	pthread_cond_broadcast(&pool->job_posted);
	pthread_mutex_unlock(&pool->lock);

	for (unsigned i = 0; i < started; i++)
		pthread_join(pool->workers[i], NULL);

	pthread_cond_destroy(&pool->job_done);
	pthread_cond_destroy(&pool->job_posted);
	pthread_mutex_destroy(&pool->lock);
	pthread_mutex_destroy(&pool->submit);
	free(pool);
}

/* Starts the workers with every signal blocked (a new thread inherits the
 * creating thread's mask). Returns how many started and sets *out_error. */
static unsigned start_workers(struct cpu_pool *pool, int *out_error)
{
	sigset_t all, saved;
	unsigned started = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	*out_error = 0;
	while (started < pool->threads - 1) {
		*out_error = pthread_create(&pool->workers[started], NULL,
					   worker_main, pool);
		if (*out_error)
			break;
		started++;
	}
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	return started;
}

int cpu_pool_create(unsigned threads, struct cpu_pool **out_pool)
{
	struct cpu_pool *pool;
	unsigned started;
	int error;

	*out_pool = NULL;
	if (threads == 0)
		return EINVAL;
	pool = calloc(1, sizeof *pool + (threads - 1) * sizeof(pthread_t));
	if (!pool)
		return ENOMEM;
	pool->threads = threads;
	pthread_mutex_init(&pool->submit, NULL);
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->job_posted, NULL);
	pthread_cond_init(&pool->job_done, NULL);

	started = start_workers(pool, &error);
	if (error) {
		destroy_pool(pool, started);
		return error;
	}
	*out_pool = pool;
	return 0;
}

void cpu_pool_destroy(struct cpu_pool *pool)
{
	if (pool)
		destroy_pool(pool, pool->threads - 1);
}

void cpu_pool_parallel_for(struct cpu_pool *pool, size_t count, size_t grain,
			   cpu_range_fn fn, void *ctx)
{
	size_t ranges = count / (grain ? grain : 1);

	if (ranges > pool->threads)
		ranges = pool->threads;
	if (ranges < 2) {
		/* Not worth a wake-up: run it here, touching no shared
		 * state, so concurrent small launches never wait. */
		if (count)
			fn(ctx, 0, count);
		return;
	}

	pthread_mutex_lock(&pool->submit);
	pthread_mutex_lock(&pool->lock);
	pool->fn = fn;
	pool->ctx = ctx;
	pool->count = count;
	pool->ranges = (unsigned)ranges;
	pool->next_range = 0;
	pool->ranges_running = (unsigned)ranges;
	pool->generation++;
	pthread_cond_broadcast(&pool->job_posted);

	run_ranges(pool);
	while (pool->ranges_running)
		pthread_cond_wait(&pool->job_done, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
	pthread_mutex_unlock(&pool->submit);
}
