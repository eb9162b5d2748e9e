/* wafer — SPDX-License-Identifier: MIT
 *
 * t/internal/memory_null: the accounting-only storage wafer-replay runs on —
 * alignment, byte accounting, the vm entries at their granularity, and
 * the contract checks that make a replay catch strategy bugs — and the
 * u64map it (and wafer-replay) keep their tables in. */
#include "build-config.h"

#include "lib/memory/null_storage.h"
#include "lib/memory/u64map.h"
#include "t/tap.h"

#define MiB ((size_t)1 << 20)

static void test_alloc(void)
{
	struct wafer__storage s;
	is_status(wafer__null_storage_init(&s, NULL), WAFER_OK, "init");
	is_int((long long)s.alignment, 256, "default alignment 256");
	is_int((long long)s.vm_granularity, 2 * MiB, "default pages 2 MiB");
	ok(wafer__storage_has_vm(&s), "offers virtual memory");
	ok(wafer__storage_has_async(&s), "offers stream-ordered allocation");

	wafer_resource a, b;
	is_status(wafer__storage_alloc(&s, 1000, &a), WAFER_OK, "alloc 1000");
	is_status(wafer__storage_alloc(&s, 1, &b), WAFER_OK, "alloc 1");
	ok(a && b && a % 256 == 0 && b % 256 == 0, "aligned, non-zero");
	ok(b >= a + 1000 || a >= b + 1, "distinct ranges");
	is_int((long long)wafer__null_storage_bytes(&s), 1001, "1001 bytes held");
	is_int((long long)s.counters.bytes_reserved, 1001, "counters agree");
	wafer__storage_free(&s, a, 1000);
	is_int((long long)wafer__null_storage_live(&s), 1, "one left");
	const char *first;
	is_int((long long)wafer__null_storage_violations(&s, &first), 0,
	       "no violation yet");
	s.ops->free(s.device, a);
	is_int((long long)wafer__null_storage_violations(&s, &first), 1,
	       "a double free is a violation");
	like(first, "free of unknown resource", "and says what");
	wafer__null_storage_fini(&s);
}

static void test_vm(void)
{
	struct wafer__storage s;
	struct wafer__null_storage_options o = {.vm_granularity = 64 << 10};
	is_status(wafer__null_storage_init(&s, &o), WAFER_OK, "init 64K pages");
	wafer_resource r;
	is_status(wafer__storage_vm_reserve(&s, 1000, &r),
		  WAFER_ERROR_INVALID_ARGUMENT, "reserve of 1000 bytes refused");
	is_status(wafer__storage_vm_reserve(&s, 4 * MiB, &r), WAFER_OK,
		  "reserve 4 MiB");
	ok(r % (64 << 10) == 0, "the range starts on a page");
	is_int((long long)wafer__null_storage_bytes(&s), 0, "a range holds none");
	is_status(wafer__storage_vm_map(&s, r, 128 << 10, 128 << 10), WAFER_OK,
		  "map two pages");
	is_int((long long)s.counters.bytes_reserved, 128 << 10, "128 KiB held");
	is_status(wafer__storage_vm_map(&s, r, 192 << 10, 64 << 10),
		  WAFER_ERROR_INVALID_ARGUMENT, "mapping a mapped page fails");
	is_status(wafer__storage_vm_map(&s, r, 100, 64 << 10),
		  WAFER_ERROR_INVALID_ARGUMENT, "an unaligned offset fails");
	is_status(wafer__storage_vm_map(&s, r, 4 * MiB, 64 << 10),
		  WAFER_ERROR_INVALID_ARGUMENT, "past the range fails");
	is_status(wafer__storage_vm_unmap(&s, r, 0, 64 << 10),
		  WAFER_ERROR_INVALID_ARGUMENT, "unmapping an unmapped page fails");
	is_int((long long)wafer__null_storage_violations(&s, NULL), 5,
	       "each counted as a violation");
	is_status(wafer__storage_vm_unmap(&s, r, 128 << 10, 64 << 10), WAFER_OK,
		  "unmap one page");
	is_int((long long)wafer__null_storage_bytes(&s), 64 << 10, "one left");
	wafer__storage_vm_release(&s, r, 64 << 10);
	is_int((long long)wafer__null_storage_bytes(&s), 0,
	       "release drops the mapped page with the range");
	is_int((long long)s.counters.bytes_reserved, 0, "counters agree");
	is_int((long long)wafer__null_storage_live(&s), 0, "nothing held");
	wafer__null_storage_fini(&s);

	struct wafer__null_storage_options plain = {.no_vm = true,
						   .no_async = true};
	wafer__null_storage_init(&s, &plain);
	ok(!wafer__storage_has_vm(&s) && !wafer__storage_has_async(&s),
	   "no_vm, no_async: the entries are left out");
	is_status(wafer__storage_vm_reserve(&s, 2 * MiB, &r),
		  WAFER_ERROR_NOT_SUPPORTED, "vm_reserve: not supported");
	wafer__null_storage_fini(&s);

	struct wafer__null_storage_options bad = {.alignment = 100};
	is_status(wafer__null_storage_init(&s, &bad),
		  WAFER_ERROR_INVALID_ARGUMENT, "alignment 100 refused");
}

/* whole_maps: a vm_map is one physical allocation, and an unmap must
 * cover whole ones (as cuMemUnmap); without it, every page is one. */
static void test_whole_maps(void)
{
	struct wafer__storage s;
	struct wafer__null_storage_options o = {.vm_granularity = 64 << 10,
					       .whole_maps = true};
	wafer_resource r;
	uint64_t made, gone;
	wafer__null_storage_init(&s, &o);
	wafer__storage_vm_reserve(&s, 4 * MiB, &r);
	is_status(wafer__storage_vm_map(&s, r, 0, 192 << 10), WAFER_OK,
		  "whole: map three pages in one call");
	is_status(wafer__storage_vm_map(&s, r, 192 << 10, 64 << 10), WAFER_OK,
		  "whole: and the fourth in another");
	wafer__null_storage_phys(&s, &made, &gone);
	is_int((long long)made, 2, "two physical allocations");
	is_status(wafer__storage_vm_unmap(&s, r, 64 << 10, 64 << 10),
		  WAFER_ERROR_INVALID_ARGUMENT, "unmapping the middle fails");
	const char *first;
	is_int((long long)wafer__null_storage_violations(&s, &first), 1,
	       "a violation");
	like(first, "cuts a mapping", "naming the cut");
	is_status(wafer__storage_vm_unmap(&s, r, 0, 128 << 10),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "unmapping the front of a mapping fails");
	is_status(wafer__storage_vm_unmap(&s, r, 0, 256 << 10), WAFER_OK,
		  "unmapping both mappings at once works");
	wafer__null_storage_phys(&s, &made, &gone);
	is_int((long long)gone, 2, "two physical allocations given back");
	is_int((long long)wafer__null_storage_bytes(&s), 0, "none held");
	wafer__storage_vm_release(&s, r, 0);
	wafer__null_storage_fini(&s);

	o.whole_maps = false;
	wafer__null_storage_init(&s, &o);
	wafer__storage_vm_reserve(&s, 4 * MiB, &r);
	wafer__storage_vm_map(&s, r, 0, 192 << 10);
	is_status(wafer__storage_vm_unmap(&s, r, 64 << 10, 64 << 10), WAFER_OK,
		  "pages: unmapping the middle page works");
	wafer__null_storage_phys(&s, &made, &gone);
	ok(made == 3 && gone == 1, "pages: one physical allocation a page "
	   "(%llu made, %llu given back)", (unsigned long long)made,
	   (unsigned long long)gone);
	is_int((long long)wafer__null_storage_violations(&s, NULL), 0,
	       "pages: no violation");
	wafer__storage_vm_release(&s, r, 128 << 10);
	wafer__null_storage_fini(&s);
}

static void test_u64map(void)
{
	struct wafer__u64map map = {0};
	enum { N = 20000 };
	bool all = true;
	for (uint64_t k = 0; k < N; k++)
		all &= wafer__u64map_put(&map, k * 4096, k);
	ok(all && map.count == N, "20000 keys in");
	/* Remove every third key, in an order unrelated to the slots:
	 * 7919 is prime to the count of multiples of 3 below N. */
	const uint64_t thirds = (N + 2) / 3;
	for (uint64_t i = 0; i < thirds; i++)
		all &= wafer__u64map_remove(&map, (i * 7919) % thirds * 3 * 4096,
					    NULL);
	ok(all && map.count == N - thirds, "every third key removed");
	uint64_t value;
	size_t found = 0, right = 0;
	for (uint64_t k = 0; k < N; k++) {
		if (wafer__u64map_get(&map, k * 4096, &value)) {
			found++;
			right += value == k;
		}
	}
	is_int((long long)found, (long long)map.count,
	       "every key left is found after backward-shift deletes");
	is_int((long long)right, (long long)found, "with its value");
	ok(!wafer__u64map_get(&map, 3 * 4096, NULL), "a removed key is gone");
	ok(wafer__u64map_put(&map, 3 * 4096, 99) &&
		   wafer__u64map_get(&map, 3 * 4096, &value) && value == 99,
	   "and can come back");
	ok(wafer__u64map_put(&map, 3 * 4096, 100) &&
		   wafer__u64map_get(&map, 3 * 4096, &value) && value == 100,
	   "put replaces");
	ok(!wafer__u64map_remove(&map, 12345, NULL), "removing a stranger: false");
	wafer__u64map_fini(&map);
	ok(map.count == 0 && !wafer__u64map_get(&map, 0, NULL),
	   "fini leaves it empty");
}

int main(void)
{
	test_alloc();
	test_vm();
	test_whole_maps();
	test_u64map();
	done_testing();
	return exit_status();
}
