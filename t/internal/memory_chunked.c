/* wafer — SPDX-License-Identifier: MIT
 *
 * t/internal/memory_chunked: the `chunked` strategy's rules — exact-size reuse,
 * the slice ratio at its boundary, slice_min/slice_max, free slices
 * dropped at the next reserve, each deallocation mode (reserves, seconds
 * on a fake clock, never), trim, and option errors. */
#include "build-config.h"

#include "t/standins/fake_storage.h"
#include "t/tap.h"

static uint64_t fake_now;
static uint64_t fake_clock(void)
{
	return fake_now;
}

#define SECOND UINT64_C(1000000000)

static void test_exact_reuse(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, NULL, "chunked", NULL);
	struct wafer__slice a, b;
	is_status(wafer__memory_reserve(m, 1000, &a), WAFER_OK, "reserve 1000");
	is_int((long long)f.allocs, 1, "one chunk allocated");
	is_int((long long)fake_usage(m).bytes_reserved, 1024,
	       "chunk is the size aligned to 256");
	wafer__memory_release(m, &a);
	is_status(wafer__memory_reserve(m, 1010, &b), WAFER_OK, "reserve 1010");
	is_int((long long)f.allocs, 1, "same aligned size: the chunk is reused");
	ok(b.resource == a.resource && b.offset == 0, "same chunk, offset 0");
	is_int((long long)fake_usage(m).reuse_hits, 1, "counted as a reuse hit");
	wafer__memory_release(m, &b);
	is_int((long long)fake_close(&f, m), 0, "destroy frees every chunk");
}

static void test_slice_ratio(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(
		&f, NULL, "chunked",
		"[memory.chunked]\nslice_ratio = 0.5\n" "dealloc = never\n");
	struct wafer__slice big, s, t, u;
	wafer__memory_reserve(m, 4096, &big);
	wafer__memory_release(m, &big);

	is_status(wafer__memory_reserve(m, 2048, &s), WAFER_OK,
		  "reserve 2048 with a free 4096 chunk");
	is_int((long long)f.allocs, 1, "ratio 0.5 exactly: sliced, no alloc");
	ok(s.resource == big.resource && s.offset == 0,
	   "the slice is the start of the chunk");

	is_status(wafer__memory_reserve(m, 2048, &t), WAFER_OK,
		  "reserve 2048 again");
	is_int((long long)f.allocs, 2,
	       "a chunk carries one slice: the second gets a new chunk");
	ok(t.resource != big.resource, "a different chunk");

	wafer__memory_release(m, &s);
	wafer__memory_release(m, &t);
	is_status(wafer__memory_reserve(m, 4096, &u), WAFER_OK,
		  "reserve 4096 after releasing the slice");
	is_int((long long)f.allocs, 2,
	       "the released slice was dropped: its chunk is whole again");
	ok(u.resource == big.resource, "the 4096 chunk is taken whole");
	wafer__memory_release(m, &u);

	/* Just under the ratio: 1792 < 0.5 * 4096. The free chunks are 4096
	 * and 2048; 1792 >= 0.5 * 2048, so the smaller one is sliced. */
	is_status(wafer__memory_reserve(m, 1792, &s), WAFER_OK,
		  "reserve 1792");
	is_int((long long)f.allocs, 2, "sliced from the 2048 chunk");
	ok(s.resource == t.resource, "the smallest chunk the ratio allows");
	is_status(wafer__memory_reserve(m, 1792, &u), WAFER_OK,
		  "reserve 1792 again");
	is_int((long long)f.allocs, 3,
	       "1792 < 0.5 * 4096: the 4096 chunk refuses, new chunk");
	wafer__memory_release(m, &s);
	wafer__memory_release(m, &u);
	is_int((long long)fake_close(&f, m), 0, "no leak");
}

static void test_slice_bounds(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(
		&f, NULL, "chunked",
		"[memory.chunked]\nslice_ratio = 0\n"
		"slice_min = 3000\nslice_max = 3K\n" "dealloc = never\n");
	struct wafer__slice big, s;
	wafer__memory_reserve(m, 8192, &big);
	wafer__memory_release(m, &big);
	wafer__memory_reserve(m, 2048, &s);
	is_int((long long)f.allocs, 2, "2048 < slice_min: not sliced");
	wafer__memory_release(m, &s);
	wafer__memory_reserve(m, 3072, &s);
	is_int((long long)f.allocs, 2, "3072 within [slice_min, slice_max]: "
	       "sliced");
	ok(s.resource == big.resource, "from the 8192 chunk");
	wafer__memory_release(m, &s);
	wafer__memory_reserve(m, 4096, &s);
	is_int((long long)f.allocs, 3, "4096 > slice_max: not sliced");
	wafer__memory_release(m, &s);
	fake_close(&f, m);
}

static void test_dealloc_reserves(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(
		&f, NULL, "chunked",
		"[memory.chunked]\ndealloc = reserves:3\n" "slice_ratio = 1\n");
	struct wafer__slice a, b, c;
	wafer__memory_reserve(m, 1024, &a); /* reserve 1 */
	wafer__memory_release(m, &a);
	wafer__memory_reserve(m, 4096, &b); /* reserve 2 */
	wafer__memory_release(m, &b);
	is_int((long long)f.frees, 0, "two reserves: free chunks are kept");
	wafer__memory_reserve(m, 8192, &c); /* reserve 3: deallocation */
	is_int((long long)f.frees, 2, "third reserve: both free chunks freed");
	is_int((long long)fake_usage(m).bytes_reserved, 8192,
	       "only the live chunk is left");
	wafer__memory_release(m, &c);
	wafer__memory_reserve(m, 8192, &c); /* reserve 1 of the next period */
	is_int((long long)f.allocs, 3, "the period restarts: 8192 reused");
	wafer__memory_release(m, &c);
	fake_close(&f, m);
}

static void test_dealloc_seconds(void)
{
	struct fake_storage f;
	fake_init(&f, NULL);
	fake_now = 100 * SECOND;
	wafer__memory_clock_ns = fake_clock;
	struct wafer__memory *m = fake_memory(
		&f, "chunked", "[memory.chunked]\ndealloc = seconds: 5\n");
	struct wafer__slice a, b;
	wafer__memory_reserve(m, 1024, &a);
	wafer__memory_release(m, &a);
	fake_now += 4 * SECOND;
	wafer__memory_reserve(m, 4096, &b);
	is_int((long long)f.frees, 0, "after 4 s: nothing freed");
	wafer__memory_release(m, &b);
	fake_now += 2 * SECOND;
	wafer__memory_reserve(m, 4096, &b);
	is_int((long long)f.frees, 2, "after 6 s: the free chunks went back");
	wafer__memory_release(m, &b);
	fake_now += 1 * SECOND;
	wafer__memory_reserve(m, 4096, &b);
	is_int((long long)f.frees, 2, "1 s into the next period: kept");
	wafer__memory_release(m, &b);
	fake_close(&f, m);
}

static void test_dealloc_never_and_trim(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(
		&f, NULL, "chunked",
		"[memory.chunked]\ndealloc = never\n");
	struct wafer__slice s;
	for (int i = 0; i < 50; i++) {
		wafer__memory_reserve(m, (size_t)(i % 5 + 1) * 4096, &s);
		wafer__memory_release(m, &s);
	}
	is_int((long long)f.frees, 0, "never: 50 reserves free nothing");
	ok(fake_usage(m).bytes_reserved > 0, "free chunks stay cached");
	wafer__memory_trim_cache(m);
	is_int((long long)fake_usage(m).bytes_reserved, 0,
	       "trim gives every free chunk back");
	is_int((long long)f.count, 0, "storage holds nothing");
	fake_close(&f, m);
}

static void test_options(void)
{
	static const struct fake_bad_option bad[] = {
		{"[memory.chunked]\ndealloc = sometimes\n", "dealloc"},
		{"[memory.chunked]\ndealloc = reserves:0\n", "reserves:N"},
		{"[memory.chunked]\ndealloc = seconds:x\n", "seconds:N"},
		{"[memory.chunked]\nslice_ratio = 1.5\n", "slice_ratio"},
		{"[memory.chunked]\nslice_min = lots\n", "slice_min"},
		{"[memory.chunked]\nslice_rate = 0.5\n", "unknown option"},
	};
	fake_refuses_each(NULL, "chunked", bad, sizeof bad / sizeof bad[0]);
}

int main(void)
{
	test_exact_reuse();
	test_slice_ratio();
	test_slice_bounds();
	test_dealloc_reserves();
	test_dealloc_seconds();
	test_dealloc_never_and_trim();
	test_options();
	done_testing();
	return exit_status();
}
