/* wafer — SPDX-License-Identifier: MIT
 *
 * t/internal/memory_buckets: the `buckets` strategy — power-of-two rounding, hit
 * and miss counts, LIFO reuse within a bucket, idempotent release, trim,
 * and the per-bucket byte cap. */
#include "build-config.h"

#include "t/standins/fake_storage.h"
#include "t/tap.h"

static struct wafer__memory_strategy_stats stats(const struct wafer__memory *m)
{
	struct wafer__memory_strategy_stats s;
	wafer__memory_strategy_stats(m, &s);
	return s;
}

static void test_rounding(void)
{
	static const struct {
		size_t ask, bucket;
	} cases[] = {
		{1, 256}, {255, 256}, {256, 256}, {1000, 1024}, {1024, 1024},
		{1025, 2048}, {3000, 4096}, {65537, 131072},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct fake_storage f;
		struct wafer__memory *m = fake_open(&f, NULL, "buckets", NULL);
		struct wafer__slice s;
		wafer__memory_reserve(m, cases[i].ask, &s);
		is_int((long long)fake_usage(m).bytes_reserved,
		       (long long)cases[i].bucket, "%zu bytes -> bucket %zu",
		       cases[i].ask, cases[i].bucket);
		wafer__memory_release(m, &s);
		fake_close(&f, m);
	}
}

static void test_hits(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, NULL, "buckets", NULL);
	struct wafer__slice a, b, c;
	wafer__memory_reserve(m, 1000, &a);
	wafer__memory_reserve(m, 1024, &b);
	is_int((long long)stats(m).misses, 2, "two misses");
	wafer__memory_release(m, &a);
	wafer__memory_release(m, &b);
	is_int((long long)stats(m).cached_bytes, 2048, "both cached");
	wafer__memory_reserve(m, 900, &c);
	is_int((long long)stats(m).hits, 1, "same bucket: a hit");
	ok(c.resource == b.resource, "LIFO: the last released comes first");
	is_int((long long)f.allocs, 2, "no storage call for the hit");
	wafer__memory_release(m, &c);
	struct wafer__slice d;
	wafer__memory_reserve(m, 2048, &d);
	is_int((long long)stats(m).misses, 3,
	       "another bucket misses, though 2048 bytes are cached");
	wafer__memory_release(m, &d);
	wafer__memory_trim_cache(m);
	is_int((long long)fake_usage(m).bytes_reserved, 0, "trim drops all");
	is_int((long long)stats(m).cached_bytes, 0, "nothing cached");
	is_int((long long)f.count, 0, "storage holds nothing");
	fake_close(&f, m);
}

/* Through the ops table: the manager counts bytes per release, the
 * strategy is what must not corrupt its list. */
static void test_idempotent_release(void)
{
	struct fake_storage f;
	fake_init(&f, NULL);
	const struct wafer__memory_strategy_ops *ops =
		wafer__memory_strategy_find("buckets");
	void *self;
	is_status(ops->create(&f.storage, NULL, &self), WAFER_OK, "create");
	struct wafer__slice a, b, c;
	ops->reserve(self, 512, &a);
	ops->release(self, &a);
	ops->release(self, &a);
	ops->reserve(self, 512, &b);
	ops->reserve(self, 512, &c);
	ok(b.resource == a.resource, "the buffer comes back once");
	ok(c.resource != b.resource,
	   "released twice, handed out once: no two owners");
	is_int((long long)f.allocs, 2, "the second reserve allocated");
	ops->release(self, &b);
	ops->release(self, &c);
	ops->release(self, &c);
	ops->trim(self);
	is_int((long long)f.count, 0, "trim frees each buffer once");
	is_int((long long)f.violations, 0, "no double free reached storage");
	ops->destroy(self);
	fake_fini(&f);
}

static void test_cap(void)
{
	struct fake_storage f;
	fake_init(&f, NULL);
	struct wafer__memory *m =
		fake_memory(&f, "buckets", "[memory.buckets]\nbucket_cap = 2K\n");
	struct wafer__slice s[3], big;
	for (int i = 0; i < 3; i++)
		wafer__memory_reserve(m, 1024, &s[i]);
	wafer__memory_reserve(m, 4096, &big);
	for (int i = 0; i < 3; i++)
		wafer__memory_release(m, &s[i]);
	is_int((long long)f.frees, 1, "the third 1 KiB buffer passed the cap");
	is_int((long long)stats(m).cached_bytes, 2048, "the bucket holds 2 KiB");
	wafer__memory_release(m, &big);
	is_int((long long)f.frees, 2, "a 4 KiB buffer never fits a 2 KiB cap");
	is_int((long long)fake_close(&f, m), 0, "no leak");
	fake_refuses(NULL, "buckets", "[memory.buckets]\nbucket_cap = -1\n",
		     "bucket_cap", "bucket_cap = -1");
}

int main(void)
{
	test_rounding();
	test_hits();
	test_idempotent_release();
	test_cap();
	done_testing();
	return exit_status();
}
