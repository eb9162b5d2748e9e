/* wafer — SPDX-License-Identifier: MIT
 *
 * t/internal/memory_stream: the `stream` strategy on a fake storage whose
 * free_async takes effect only when the queue is synchronised, like a
 * GPU's. Live and pending bytes are counted apart; a reap retires only
 * what a successful sync covered; a failed sync leaves every entry queued
 * and the counts agree with the queue afterwards. */
#include "build-config.h"

#include "t/standins/fake_storage.h"
#include "t/tap.h"

static struct wafer__memory_strategy_stats stats(const struct wafer__memory *m)
{
	struct wafer__memory_strategy_stats s;
	wafer__memory_strategy_stats(m, &s);
	return s;
}

static const struct fake_options deferred = {
	.async = true,
	.defer_frees = true,
};

static void test_books(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, &deferred, "stream", NULL);
	struct wafer__slice a, b;
	wafer__memory_reserve(m, 1000, &a);
	wafer__memory_reserve(m, 3000, &b);
	is_int((long long)stats(m).live_bytes, 4000, "live counts both");
	is_int((long long)stats(m).pending_bytes, 0, "nothing pending");
	wafer__memory_release(m, &a);
	is_int((long long)stats(m).live_bytes, 3000, "live drops at release");
	is_int((long long)stats(m).pending_bytes, 1000, "pending holds it");
	is_int((long long)fake_pending(&f), 1, "the queue holds the free");
	is_int((long long)f.syncs, 0, "release does not synchronise");

	/* The client synchronised its queue: pending frees have run. */
	fake_sync(&f);
	wafer__memory_after_sync(m);
	is_int((long long)stats(m).pending_bytes, 0, "after_sync retires them");

	wafer__memory_release(m, &b);
	unsigned long syncs = f.syncs;
	wafer__memory_trim_cache(m);
	is_int((long long)(f.syncs - syncs), 1, "trim reaps: one queue sync");
	is_int((long long)stats(m).pending_bytes, 0, "pending is zero");
	is_int((long long)fake_pending(&f), 0, "and so is the queue");
	wafer__memory_trim_cache(m);
	is_int((long long)(f.syncs - syncs), 1,
	       "nothing pending: no sync for nothing");
	is_int((long long)fake_close(&f, m), 0, "no leak");
}

static void test_failed_sync(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, &deferred, "stream", NULL);
	struct wafer__slice s[4];
	for (int i = 0; i < 4; i++)
		wafer__memory_reserve(m, (size_t)(i + 1) * 1000, &s[i]);
	wafer__memory_release(m, &s[0]);
	wafer__memory_release(m, &s[1]);
	is_int((long long)stats(m).pending_bytes, 3000, "3000 pending");

	f.fail_syncs = 1;
	wafer__memory_trim_cache(m);
	is_int((long long)stats(m).pending_bytes, 3000,
	       "the sync failed: nothing retired");
	is_int((long long)fake_pending(&f), 2, "the queue still has both");
	wafer__memory_release(m, &s[2]);
	is_int((long long)stats(m).pending_bytes, 6000,
	       "a later release adds to what stayed queued");

	wafer__memory_trim_cache(m);
	is_int((long long)stats(m).pending_bytes, 0,
	       "the next reap retires all three");
	is_int((long long)fake_pending(&f), 0, "queue and books agree");
	is_int((long long)stats(m).live_bytes, 4000, "live untouched");
	wafer__memory_release(m, &s[3]);
	is_int((long long)fake_close(&f, m), 0, "no leak");
}

static void test_max_pending(void)
{
	struct fake_storage f;
	fake_init(&f, &deferred);
	struct wafer__memory *m =
		fake_memory(&f, "stream", "[memory.stream]\nmax_pending = 4K\n");
	struct wafer__slice s[3];
	for (int i = 0; i < 3; i++)
		wafer__memory_reserve(m, 2048, &s[i]);
	wafer__memory_release(m, &s[0]);
	wafer__memory_release(m, &s[1]);
	is_int((long long)f.syncs, 0, "4096 pending: at the bound, no reap");
	wafer__memory_release(m, &s[2]);
	is_int((long long)f.syncs, 1, "past the bound: one reap");
	is_int((long long)stats(m).pending_bytes, 0, "pending retired");
	fake_close(&f, m);
}

static void test_out_of_memory(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, &deferred, "stream", NULL);
	struct wafer__slice a, b;
	wafer__memory_reserve(m, 1000, &a);
	wafer__memory_release(m, &a);
	f.fail_every = 1;
	unsigned long syncs = f.syncs;
	is_status(wafer__memory_reserve(m, 123, &b), WAFER_ERROR_OUT_OF_MEMORY,
		  "storage full: out of memory");
	like(wafer__error_detail(), "cannot reserve 123 bytes", "sizes given");
	is_int((long long)(f.syncs - syncs), 1,
	       "the retry reaped pending frees first");
	is_int((long long)stats(m).pending_bytes, 0, "and retired them");
	ok(b.resource == 0 && b.size == 0, "slice cleared on failure");
	f.fail_every = 0;
	is_status(wafer__memory_reserve(m, 123, &b), WAFER_OK,
		  "storage back: the strategy works");
	wafer__memory_release(m, &b);
	fake_close(&f, m);
}

static void test_no_async(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, NULL, "stream", NULL);
	ok(m != NULL, "a plugin without alloc_async still gets a manager");
	struct wafer__slice a;
	wafer__memory_reserve(m, 1000, &a);
	is_int((long long)f.allocs, 1, "plain alloc");
	wafer__memory_release(m, &a);
	is_int((long long)f.frees, 1, "plain free at release");
	ok(f.quiesces >= 1, "which waited for the queue first");
	is_int((long long)stats(m).pending_bytes, 0, "nothing pending");
	is_int((long long)fake_close(&f, m), 0, "no leak");
}

int main(void)
{
	test_books();
	test_failed_sync();
	test_max_pending();
	test_out_of_memory();
	test_no_async();
	done_testing();
	return exit_status();
}
