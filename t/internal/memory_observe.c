/* wafer — SPDX-License-Identifier: MIT
 *
 * t/internal/memory_observe: what the memory manager tells about itself, on the
 * fake storage (t/standins/fake_storage.h), which counts every call it gets:
 *
 *  - wafer_memory_usage's calls per storage entry equal the fake's own
 *    counts for every strategy, and add up to the storage_* sums;
 *  - failed storage calls and reserves retried after a trim;
 *  - snapshots (lib/memory/snapshot.h): pool's segments, page runs and
 *    blocks with and without virtual memory, the chunks of the other
 *    strategies, live blocks named by the handles attached to them. */
#include "build-config.h"

#include "lib/memory/snapshot.h"
#include "t/standins/fake_storage.h"
#include "t/tap.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

/*===----------------------------------------------------------------------===
 * Counters
 *===----------------------------------------------------------------------===*/

/* A few steps of a loop: sizes that repeat, one that grows, a trim. */
static void workload(struct wafer__memory *m)
{
	struct wafer__slice s[4];
	for (int step = 0; step < 3; step++) {
		wafer__memory_reserve(m, 1000, &s[0]);
		wafer__memory_reserve(m, 300 * KiB, &s[1]);
		wafer__memory_reserve(m, (size_t)(2 + step) * MiB, &s[2]);
		wafer__memory_release(m, &s[0]);
		wafer__memory_reserve(m, 4000, &s[3]);
		wafer__memory_release(m, &s[1]);
		wafer__memory_release(m, &s[2]);
		wafer__memory_release(m, &s[3]);
		wafer__memory_after_sync(m);
	}
	wafer__memory_trim_cache(m);
}

static void test_counts(const char *strategy, const struct fake_options *opt,
			const char *what)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, opt, strategy, NULL);
	if (!m) {
		ok(0, "%s: created", what);
		return;
	}
	workload(m);
	wafer_memory_usage u = fake_usage(m);
	is_int((long long)u.calls_alloc, (long long)f.per.alloc,
	       "%s: calls_alloc as the storage saw them (%lu)", what,
	       f.per.alloc);
	is_int((long long)u.calls_free, (long long)f.per.free,
	       "%s: calls_free (%lu)", what, f.per.free);
	is_int((long long)u.calls_alloc_async, (long long)f.per.alloc_async,
	       "%s: calls_alloc_async (%lu)", what, f.per.alloc_async);
	is_int((long long)u.calls_free_async, (long long)f.per.free_async,
	       "%s: calls_free_async (%lu)", what, f.per.free_async);
	is_int((long long)u.calls_vm_reserve, (long long)f.per.vm_reserve,
	       "%s: calls_vm_reserve (%lu)", what, f.per.vm_reserve);
	is_int((long long)u.calls_vm_release, (long long)f.per.vm_release,
	       "%s: calls_vm_release (%lu)", what, f.per.vm_release);
	is_int((long long)u.calls_vm_map, (long long)f.per.vm_map,
	       "%s: calls_vm_map (%lu)", what, f.per.vm_map);
	is_int((long long)u.calls_vm_unmap, (long long)f.per.vm_unmap,
	       "%s: calls_vm_unmap (%lu)", what, f.per.vm_unmap);
	ok(u.calls_alloc + u.calls_alloc_async + u.calls_vm_reserve > 0,
	   "%s: the workload made storage calls", what);
	is_int((long long)u.storage_allocs,
	       (long long)(u.calls_alloc + u.calls_alloc_async +
			   u.calls_vm_reserve),
	       "%s: storage_allocs is their sum", what);
	is_int((long long)u.storage_frees,
	       (long long)(u.calls_free + u.calls_free_async +
			   u.calls_vm_release),
	       "%s: storage_frees is theirs", what);
	is_int((long long)u.storage_failures, 0, "%s: no failure", what);
	is_int((long long)u.reserve_retries, 0, "%s: no retry", what);
	wafer__memory_destroy(m);
	fake_drain(&f); /* stream's last frees wait for a queue sync */
	is_int((long long)fake_fini(&f), 0, "%s: no leak", what);
}

/* Every acquiring call fails: the reserve fails, trims and retries once,
 * and both failed calls are counted. */
static void test_failures(void)
{
	struct fake_storage f;
	fake_init(&f, NULL);
	f.fail_every = 1;
	struct wafer__memory *m = fake_memory(&f, "direct", NULL);
	struct wafer__slice s;
	is_status(wafer__memory_reserve(m, 4096, &s), WAFER_ERROR_OUT_OF_MEMORY,
		  "a reserve the storage refuses fails");
	wafer_memory_usage u = fake_usage(m);
	is_int((long long)u.calls_alloc, 2, "two alloc calls: one and its retry");
	is_int((long long)u.storage_failures, (long long)f.failures,
	       "storage_failures as the storage saw them (%lu)", f.failures);
	is_int((long long)u.storage_failures, 2, "both failed");
	is_int((long long)u.reserve_retries, 1, "one retry after the trim");
	is_int((long long)u.bytes_reserved, 0, "nothing reserved");

	/* A later success adds a call but no failure and no retry. */
	f.fail_every = 0;
	is_status(wafer__memory_reserve(m, 4096, &s), WAFER_OK,
		  "the next reserve succeeds");
	u = fake_usage(m);
	is_int((long long)u.calls_alloc, 3, "three alloc calls");
	is_int((long long)u.storage_failures, 2, "still two failures");
	is_int((long long)u.reserve_retries, 1, "still one retry");
	wafer__memory_release(m, &s);
	is_int((long long)fake_close(&f, m), 0, "failures: no leak");
}

/*===----------------------------------------------------------------------===
 * Snapshots
 *===----------------------------------------------------------------------===*/

/* The items as text, one per '|': "S<n> <arena> <size>/<mapped> p<page>",
 * "P<offset>+<size> m|u", "B<offset>+<size> L<requested> h<handle>" or
 * "B<offset>+<size> F". */
static const char *describe(const struct wafer_memory_snapshot *s)
{
	static char text[4096];
	size_t used = 0;
	text[0] = '\0';
	for (size_t i = 0; i < s->count && used < sizeof text; i++) {
		const wafer_memory_item *it = &s->items[i];
		const char *sep = i ? "|" : "";
		int n = 0;
		switch (it->kind) {
		case WAFER_MEMORY_ITEM_SEGMENT:
			n = snprintf(text + used, sizeof text - used,
				     "%sS%u %s %llu/%llu p%llu", sep,
				     it->segment, it->arena,
				     (unsigned long long)it->size,
				     (unsigned long long)it->mapped_bytes,
				     (unsigned long long)it->page_size);
			break;
		case WAFER_MEMORY_ITEM_PAGES:
			n = snprintf(text + used, sizeof text - used,
				     "%sP%llu+%llu %s", sep,
				     (unsigned long long)it->offset,
				     (unsigned long long)it->size,
				     it->mapped ? "m" : "u");
			break;
		case WAFER_MEMORY_ITEM_BLOCK:
			if (it->live)
				n = snprintf(text + used, sizeof text - used,
					     "%sB%llu+%llu L%llu h%llu", sep,
					     (unsigned long long)it->offset,
					     (unsigned long long)it->size,
					     (unsigned long long)it->requested,
					     (unsigned long long)
						     it->handle.bits);
			else
				n = snprintf(text + used, sizeof text - used,
					     "%sB%llu+%llu F", sep,
					     (unsigned long long)it->offset,
					     (unsigned long long)it->size);
			break;
		}
		used += (size_t)n;
	}
	return text;
}

static wafer_handle handle_of(uint64_t bits)
{
	wafer_handle h = {bits};
	return h;
}

/* Pool with vm (64 KiB pages, 8 GiB ranges): a small segment with one
 * mapped page holding a live block and the hole its released neighbour
 * left, coalesced with the rest; a large segment with 2 MiB mapped. */
static void test_pool_vm(void)
{
	struct fake_storage f;
	struct wafer__memory *m =
		fake_open(&f, &(struct fake_options){.vm = true}, "pool", NULL);
	struct wafer__slice a, b, c;
	wafer__memory_reserve(m, 1000, &a);
	wafer__memory_reserve(m, 3000, &b);
	wafer__memory_reserve(m, 2 * MiB, &c);
	wafer__memory_release(m, &b);

	struct wafer_memory_snapshot s;
	is_status(wafer__memory_snapshot_take(m, &s), WAFER_OK, "pool vm: taken");
	wafer__memory_snapshot_attach(&s, &a, handle_of(41));
	wafer__memory_snapshot_attach(&s, &c, handle_of(42));
	wafer__memory_snapshot_sort(&s);
	is_str(describe(&s),
	       "S0 small 8589934592/65536 p65536"
	       "|P0+65536 m|P65536+8589869056 u"
	       "|B0+1024 L1000 h41|B1024+8589933568 F"
	       "|S1 large 8589934592/2097152 p65536"
	       "|P0+2097152 m|P2097152+8587837440 u"
	       "|B0+2097152 L2097152 h42|B2097152+8587837440 F",
	       "pool vm: segments, page runs, blocks with their handles");
	wafer__memory_snapshot_fini(&s);

	/* Released and trimmed: the segments go, nothing is listed. */
	wafer__memory_release(m, &a);
	wafer__memory_release(m, &c);
	wafer__memory_trim_cache(m);
	is_status(wafer__memory_snapshot_take(m, &s), WAFER_OK,
		  "pool vm: taken after trim");
	is_int((long long)s.count, 0, "pool vm: empty after trim");
	wafer__memory_snapshot_fini(&s);
	is_int((long long)fake_close(&f, m), 0, "pool vm: no leak");
}

/* Pool without vm: one 2 MiB chunk in the small arena, not paged. */
static void test_pool_chunks(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, NULL, "pool", NULL);
	struct wafer__slice a, b;
	wafer__memory_reserve(m, 1000, &a);
	wafer__memory_reserve(m, 3000, &b);
	struct wafer_memory_snapshot s;
	is_status(wafer__memory_snapshot_take(m, &s), WAFER_OK,
		  "pool chunks: taken");
	wafer__memory_snapshot_attach(&s, &b, handle_of(7));
	wafer__memory_snapshot_sort(&s);
	is_str(describe(&s),
	       "S0 small 2097152/2097152 p0"
	       "|B0+1024 L1000 h0|B1024+3072 L3000 h7|B4096+2093056 F",
	       "pool chunks: no pages; a block without a handle attached "
	       "has none");
	wafer__memory_snapshot_fini(&s);
	wafer__memory_release(m, &a);
	wafer__memory_release(m, &b);
	is_int((long long)fake_close(&f, m), 0, "pool chunks: no leak");
}

/* A strategy without its own snapshot: its chunks, and the blocks of the
 * handles attached; a slice on no listed segment adds nothing. */
static void test_generic(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, NULL, "exact", NULL);
	struct wafer__slice a, b, c;
	wafer__memory_reserve(m, 1000, &a);
	wafer__memory_reserve(m, 5000, &b);
	wafer__memory_reserve(m, 300, &c);
	wafer__memory_release(m, &c); /* cached by exact */
	struct wafer_memory_snapshot s;
	is_status(wafer__memory_snapshot_take(m, &s), WAFER_OK, "exact: taken");
	struct wafer__slice stranger = {.resource = 12345, .size = 8};
	wafer__memory_snapshot_attach(&s, &stranger, handle_of(9));
	wafer__memory_snapshot_attach(&s, &b, handle_of(2));
	wafer__memory_snapshot_attach(&s, &a, handle_of(1));
	wafer__memory_snapshot_sort(&s);
	/* Newest chunk first: 512 (cached), 5120, 1024. */
	is_str(describe(&s),
	       "S0 exact 512/512 p0"
	       "|S1 exact 5120/5120 p0|B0+5000 L5000 h2"
	       "|S2 exact 1024/1024 p0|B0+1000 L1000 h1",
	       "exact: every chunk, the live ones with their handles");
	wafer__memory_snapshot_fini(&s);
	wafer__memory_release(m, &a);
	wafer__memory_release(m, &b);
	is_int((long long)fake_close(&f, m), 0, "exact: no leak");
}

int main(void)
{
	static const struct fake_options vm = {.vm = true};
	static const struct fake_options async = {.async = true,
						  .defer_frees = true};
	test_counts("pool", &vm, "pool vm");
	test_counts("pool", NULL, "pool chunks");
	test_counts("stream", &async, "stream");
	test_counts("direct", NULL, "direct");
	test_counts("exact", NULL, "exact");
	test_counts("chunked", NULL, "chunked");
	test_counts("buckets", NULL, "buckets");
	test_failures();
	test_pool_vm();
	test_pool_chunks();
	test_generic();
	done_testing();
	return exit_status();
}
