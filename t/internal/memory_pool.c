/* wafer — SPDX-License-Identifier: MIT
 *
 * t/internal/memory_pool: the `pool` strategy, with and without virtual memory —
 * splitting and coalescing, best fit, alignment from storage, the small
 * arena, pages mapped on demand and kept when idle, the bound on mapped
 * bytes and the order idle pages go in, placement where a hole is still
 * mapped, max_idle, trim, whole units (unmap = whole), plain chunks
 * without vm, and the out-of-memory retry. */
#include "build-config.h"

#include "lib/memory/null_storage.h"
#include "t/standins/fake_storage.h"
#include "t/tap.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static const struct fake_options vm = {.vm = true};

static unsigned long calls(const struct fake_storage *f)
{
	return f->allocs + f->maps;
}

/* The manager's count of reserved bytes is the storage's own. */
static void books_agree(struct fake_storage *f, struct wafer__memory *m,
			const char *when)
{
	is_int((long long)fake_usage(m).bytes_reserved, (long long)f->bytes,
	       "%s: reserved bytes agree with storage", when);
}

static void test_default(void)
{
	is_str(wafer__memory_default_strategy, "pool", "pool is the default");
	struct fake_storage f;
	fake_init(&f, NULL);
	struct wafer__memory *m;
	is_status(wafer__memory_create(NULL, &f.storage, NULL, &m), WAFER_OK,
		  "create with no name");
	is_str(wafer__memory_strategy_name(m), "pool", "gets pool");
	fake_close(&f, m);
}

static void test_split_coalesce(const struct fake_options *opt,
				const char *what)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, opt, "pool", NULL);
	struct wafer__slice a, b, c;
	wafer__memory_reserve(m, 1000, &a);
	wafer__memory_reserve(m, 1000, &b);
	ok(a.resource == b.resource, "%s: small blocks share a segment", what);
	is_int((long long)b.offset, (long long)(a.offset + 1024),
	       "%s: split right after the first, aligned", what);
	wafer__memory_release(m, &a);
	wafer__memory_release(m, &b);
	unsigned long before = calls(&f);
	wafer__memory_reserve(m, 2048, &c);
	is_int((long long)c.offset, (long long)a.offset,
	       "%s: the two holes coalesced", what);
	is_int((long long)(calls(&f) - before), 0, "%s: no storage call", what);
	memset(fake_ptr(&c), 0xab, 2048);
	wafer__memory_release(m, &c);
	books_agree(&f, m, what);
	is_int((long long)fake_close(&f, m), 0, "%s: no leak", what);
	is_int((long long)f.violations, 0, "%s: storage contract kept", what);
}

static void test_best_fit(const struct fake_options *opt, const char *what)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, opt, "pool", NULL);
	struct wafer__slice x1, h1, x2, h2, x3, s, t;
	wafer__memory_reserve(m, 4096, &x1);
	wafer__memory_reserve(m, 8192, &h1);
	wafer__memory_reserve(m, 4096, &x2);
	wafer__memory_reserve(m, 2048, &h2);
	wafer__memory_reserve(m, 4096, &x3);
	wafer__memory_release(m, &h1);
	wafer__memory_release(m, &h2);
	wafer__memory_reserve(m, 2000, &s);
	is_int((long long)s.offset, (long long)h2.offset,
	       "%s: the smallest hole that fits", what);
	wafer__memory_reserve(m, 5000, &t);
	is_int((long long)t.offset, (long long)h1.offset,
	       "%s: the 8 KiB hole for 5000 bytes", what);
	struct wafer__slice *all[] = {&x1, &x2, &x3, &s, &t};
	for (int i = 0; i < 5; i++)
		wafer__memory_release(m, all[i]);
	fake_close(&f, m);
}

static void test_alignment(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(
		&f, &(struct fake_options){.vm = true, .alignment = 4096},
		"pool", NULL);
	struct wafer__slice s[5];
	size_t sizes[] = {1, 4095, 4097, 3 * MiB + 1, 17};
	bool aligned = true;
	for (int i = 0; i < 5; i++) {
		wafer__memory_reserve(m, sizes[i], &s[i]);
		aligned &= s[i].offset % 4096 == 0;
	}
	ok(aligned, "every offset a multiple of the storage alignment");
	is_int((long long)s[2].offset, (long long)(s[1].offset + 4096),
	       "4095 bytes take one 4 KiB unit");
	for (int i = 0; i < 5; i++)
		wafer__memory_release(m, &s[i]);
	fake_close(&f, m);
}

static void test_arenas(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, &vm, "pool", NULL);
	struct wafer__slice a, b, c;
	wafer__memory_reserve(m, 100, &a);
	wafer__memory_reserve(m, 2 * MiB, &b);
	wafer__memory_reserve(m, MiB, &c);
	ok(a.resource != b.resource, "small and large in different segments");
	ok(c.resource == a.resource, "small_max (1 MiB) itself is small");
	wafer__memory_release(m, &a);
	wafer__memory_release(m, &b);
	wafer__memory_release(m, &c);
	fake_close(&f, m);

	m = fake_open(&f, &vm, "pool", "[memory.pool]\nsmall_max = 64K\n");
	wafer__memory_reserve(m, 100, &a);
	wafer__memory_reserve(m, 65 * KiB, &b);
	ok(a.resource != b.resource, "small_max = 64K moves 65 KiB to large");
	wafer__memory_release(m, &a);
	wafer__memory_release(m, &b);
	fake_close(&f, m);
}

static void test_pages(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, &vm, "pool", NULL);
	struct wafer__slice a, b;
	wafer__memory_reserve(m, 100 * KiB, &a);
	is_int((long long)f.maps, 1, "one map call");
	is_int((long long)fake_usage(m).bytes_reserved, 128 * KiB,
	       "100 KiB on 64 KiB pages: two pages mapped");
	memset(fake_ptr(&a), 1, 100 * KiB);
	wafer__memory_release(m, &a);
	is_int((long long)f.unmaps, 0, "release keeps the pages (lazy)");
	is_int((long long)fake_usage(m).bytes_reserved, 128 * KiB,
	       "still mapped");
	wafer__memory_reserve(m, 100 * KiB, &b);
	is_int((long long)f.maps, 1, "the same size again: no new map");
	is_int((long long)fake_usage(m).reuse_hits, 1, "a reuse hit");
	wafer__memory_release(m, &b);
	books_agree(&f, m, "pages");
	wafer__memory_trim_cache(m);
	is_int((long long)fake_usage(m).bytes_reserved, 0, "trim: 0 reserved");
	is_int((long long)f.count, 0, "trim: the segment went too");
	fake_close(&f, m);
}

static void test_bound(void)
{
	struct fake_storage f;
	fake_init(&f, &vm);
	struct wafer__memory *m =
		fake_memory(&f, "pool", "[memory.pool]\noverhead = 0\n");
	struct wafer__slice a, b, c;
	wafer__memory_reserve(m, 2 * MiB, &a);
	wafer__memory_reserve(m, 2 * MiB, &b);
	wafer__memory_release(m, &a);
	wafer__memory_reserve(m, 3 * MiB, &c);
	is_int((long long)f.unmaps, 1, "past the bound: the idle pages went");
	is_int((long long)fake_usage(m).bytes_reserved, 5 * MiB,
	       "reserved = the 5 MiB in use");
	is_int((long long)fake_usage(m).peak_reserved, 5 * MiB,
	       "unmapped before mapping: the peak stayed at 5 MiB");
	books_agree(&f, m, "bound");
	wafer__memory_release(m, &b);
	wafer__memory_release(m, &c);
	fake_close(&f, m);

	m = fake_open(&f, &vm, "pool", "[memory.pool]\noverhead = 1\n");
	wafer__memory_reserve(m, 2 * MiB, &a);
	wafer__memory_reserve(m, 2 * MiB, &b);
	wafer__memory_release(m, &a);
	wafer__memory_reserve(m, 3 * MiB, &c);
	is_int((long long)f.unmaps, 0, "overhead = 1: idle pages stay");
	is_int((long long)fake_usage(m).bytes_reserved, 7 * MiB,
	       "reserved 7 MiB for 5 in use");
	wafer__memory_release(m, &b);
	wafer__memory_release(m, &c);
	fake_close(&f, m);
}

/* The pages idle longest go first. */
static void test_idle_order(void)
{
	struct fake_storage f;
	fake_init(&f, &vm);
	struct wafer__memory *m =
		fake_memory(&f, "pool", "[memory.pool]\noverhead = 0.25\n");
	struct wafer__slice a, b, c, d, e, g, h;
	wafer__memory_reserve(m, 2 * MiB, &a);
	wafer__memory_reserve(m, 2 * MiB, &b);
	wafer__memory_reserve(m, 2 * MiB, &c);
	wafer__memory_reserve(m, 2 * MiB, &d);
	wafer__memory_release(m, &a); /* idle longest */
	wafer__memory_release(m, &c);
	/* 8 MiB mapped, bound 1.25 x 8 = 10: 3 more need 1 MiB given back. */
	wafer__memory_reserve(m, 3 * MiB, &e);
	is_int((long long)f.unmaps, 1, "one unmap call");
	is_int((long long)fake_usage(m).bytes_reserved, 9 * MiB,
	       "a's 2 MiB went: 8 - 2 + 3");
	unsigned long maps = f.maps;
	wafer__memory_reserve(m, 2 * MiB, &g);
	is_int((long long)g.offset, (long long)c.offset,
	       "c's pages stayed mapped: 2 MiB lands there");
	is_int((long long)(f.maps - maps), 0, "without a map call");
	wafer__memory_reserve(m, 2 * MiB, &h);
	is_int((long long)h.offset, (long long)a.offset,
	       "a's hole needs its pages mapped again");
	is_int((long long)(f.maps - maps), 1, "one map call");
	struct wafer__slice *all[] = {&b, &d, &e, &g, &h};
	for (int i = 0; i < 5; i++)
		wafer__memory_release(m, all[i]);
	books_agree(&f, m, "idle order");
	is_int((long long)fake_close(&f, m), 0, "no leak");
}

/* A big block goes where its hole is still mapped, not at the hole's
 * start when those pages went back to storage. */
static void test_window(void)
{
	struct fake_storage f;
	fake_init(&f, &vm);
	struct wafer__memory *m =
		fake_memory(&f, "pool", "[memory.pool]\noverhead = 0\n");
	struct wafer__slice a, b, c, d, e, x, g;
	wafer__memory_reserve(m, 2 * MiB, &a);
	wafer__memory_reserve(m, 2 * MiB, &b);
	wafer__memory_reserve(m, 2 * MiB, &c);
	wafer__memory_reserve(m, 2 * MiB, &d);
	wafer__memory_reserve(m, 2 * MiB, &e);
	wafer__memory_release(m, &a);
	/* Too big for a's hole: mapped at the top, a's pages go back. */
	wafer__memory_reserve(m, 2 * MiB + 64 * KiB, &x);
	is_int((long long)f.unmaps, 1, "window: a's idle pages unmapped");
	wafer__memory_release(m, &b);
	wafer__memory_release(m, &c);
	/* One hole of 6 MiB: its first 2 unmapped, the next 4 mapped. */
	unsigned long maps = f.maps, unmaps = f.unmaps;
	wafer__memory_reserve(m, 4 * MiB, &g);
	is_int((long long)g.offset, (long long)b.offset,
	       "window: 4 MiB lands on b's and c's mapped pages");
	is_int((long long)(f.maps - maps), 0, "window: without a map call");
	is_int((long long)(f.unmaps - unmaps), 0, "window: nor an unmap");
	struct wafer__slice h;
	wafer__memory_reserve(m, 2 * MiB, &h);
	is_int((long long)h.offset, (long long)a.offset,
	       "window: the hole's front stayed a free block");
	struct wafer__slice *all[] = {&d, &e, &x, &g, &h};
	for (int i = 0; i < 5; i++)
		wafer__memory_release(m, all[i]);
	books_agree(&f, m, "window");
	is_int((long long)fake_close(&f, m), 0, "window: no leak");
}

static void test_max_idle(void)
{
	struct fake_storage f;
	fake_init(&f, &vm);
	struct wafer__memory *m =
		fake_memory(&f, "pool", "[memory.pool]\nmax_idle = 1M\n");
	struct wafer__slice a, b;
	wafer__memory_reserve(m, 4 * MiB, &a);
	wafer__memory_reserve(m, 512 * KiB, &b);
	wafer__memory_release(m, &b);
	is_int((long long)f.unmaps, 0, "512 KiB idle: under max_idle");
	wafer__memory_release(m, &a);
	ok(fake_usage(m).bytes_reserved <= MiB,
	   "4 MiB idle: unmapped down to max_idle");
	books_agree(&f, m, "max_idle");
	fake_close(&f, m);
}

static void test_chunks(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, NULL, "pool", NULL);
	struct wafer__slice a, b, c;
	wafer__memory_reserve(m, 100, &a);
	is_int((long long)fake_usage(m).bytes_reserved, 2 * MiB,
	       "no vm: the small arena takes a 2 MiB chunk");
	wafer__memory_reserve(m, 3 * MiB, &b);
	is_int((long long)fake_usage(m).bytes_reserved, 6 * MiB,
	       "3 MiB rounds to a 4 MiB chunk");
	wafer__memory_reserve(m, 200, &c);
	is_int((long long)f.allocs, 2, "the small chunk serves the next too");
	wafer__memory_release(m, &a);
	wafer__memory_release(m, &b);
	wafer__memory_release(m, &c);
	is_int((long long)f.frees, 0, "free chunks stay cached");
	wafer__memory_trim_cache(m);
	is_int((long long)fake_usage(m).bytes_reserved, 0, "trim frees them");
	fake_close(&f, m);

	m = fake_open(&f, NULL, "pool", "[memory.pool]\noverhead = 0\n");
	wafer__memory_reserve(m, 3 * MiB, &a);
	wafer__memory_release(m, &a);
	wafer__memory_reserve(m, 5 * MiB, &b);
	is_int((long long)f.frees, 1,
	       "no vm, past the bound: the idle chunk is freed first");
	is_int((long long)fake_usage(m).peak_reserved, 6 * MiB,
	       "so the peak is the new chunk alone");
	wafer__memory_release(m, &b);
	is_int((long long)fake_close(&f, m), 0, "no leak");
}

static void test_out_of_memory(void)
{
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, &vm, "pool", NULL);
	struct wafer__slice a, b;
	f.fail_every = 1;
	is_status(wafer__memory_reserve(m, 123, &a), WAFER_ERROR_OUT_OF_MEMORY,
		  "storage full");
	like(wafer__error_detail(),
	     "cannot reserve 123 bytes: 0 in use, 0 reserved (strategy pool)",
	     "the detail gives asked, in use and reserved");
	like(wafer__error_detail(), "injected", "and the storage's reason");
	f.fail_every = 0;

	/* One failing map: the manager trims (unmapping the idle 4 MiB) and
	 * retries, and the retry's map succeeds. */
	wafer__memory_reserve(m, 4 * MiB, &a);
	wafer__memory_release(m, &a);
	wafer__memory_reserve(m, 100, &b);
	f.failures = 0;
	f.fail_every = 1000;
	f.acquires = 999; /* the next acquiring call is the 1000th */
	is_status(wafer__memory_reserve(m, 8 * MiB, &a), WAFER_OK,
		  "a failed map is retried after trim");
	is_int((long long)f.failures, 1, "one injected failure");
	ok(f.unmaps >= 1, "the trim unmapped idle pages");
	f.fail_every = 0;
	books_agree(&f, m, "after the retry");
	memset(fake_ptr(&a), 7, 8 * MiB);
	wafer__memory_release(m, &a);
	wafer__memory_release(m, &b);
	wafer__memory_trim_cache(m);
	is_int((long long)fake_usage(m).bytes_reserved, 0, "trim: 0 reserved");
	is_int((long long)fake_close(&f, m), 0, "no leak");
	is_int((long long)f.violations, 0, "storage contract kept");
}

/* unmap = whole on a storage where each vm_map is one physical
 * allocation and an unmap must cover whole ones (the null storage's
 * whole_maps, checking it): blocks are mapped in units of a quarter of
 * their span at most, and only whole idle units go back. The units of
 * one block are one vm_map_pieces call, or with |pieces| false (a
 * plugin without it) one vm_map call each. */
static void test_whole(bool pieces)
{
	struct wafer__storage s;
	struct wafer__null_storage_options o = {.whole_maps = true};
	struct wafer_storage_ops without;
	is_status(wafer__null_storage_init(&s, &o), WAFER_OK,
		  "whole: null storage, 2 MiB pages (%s)",
		  pieces ? "vm_map_pieces" : "without vm_map_pieces");
	if (!pieces) {
		without = *s.ops;
		without.vm_map_pieces = NULL;
		s.ops = &without;
	}
	struct wafer__config *config =
		fake_config("[memory.pool]\noverhead = 0\nunmap = whole\n");
	struct wafer__memory *m;
	is_status(wafer__memory_create("pool", &s, config, &m), WAFER_OK,
		  "whole: pool with unmap = whole");
	struct wafer__slice a, b, c, d;
	uint64_t made, gone;
	wafer__memory_reserve(m, 24 * MiB, &a);
	wafer__null_storage_phys(&s, &made, &gone);
	is_int((long long)made, 6, "24 MiB: 6 units of 2 pages (a quarter)");
	is_int((long long)s.counters.calls_vm_map, pieces ? 1 : 6,
	       "  ... in %d vm_map call%s", pieces ? 1 : 6, pieces ? "" : "s");
	wafer__memory_reserve(m, 2 * MiB, &b);
	wafer__memory_release(m, &a);
	wafer__memory_reserve(m, 4 * MiB, &c);
	is_int((long long)c.offset, (long long)a.offset,
	       "4 MiB lands in the mapped hole");
	wafer__memory_reserve(m, 30 * MiB, &d);
	wafer__null_storage_phys(&s, &made, &gone);
	is_int((long long)made, 6 + 1 + 8, "30 MiB past b: 8 more units");
	is_int((long long)gone, 5,
	       "overhead 0: the hole's 5 idle units went, not the one in use");
	is_int((long long)s.counters.bytes_reserved, 36 * MiB,
	       "36 MiB mapped: 4 + 2 + 30");
	wafer__memory_release(m, &c);
	wafer__memory_release(m, &b);
	wafer__memory_release(m, &d);
	wafer__memory_trim_cache(m);
	is_int((long long)s.counters.bytes_reserved, 0, "trim: 0 reserved");
	wafer__memory_destroy(m);
	wafer__config_destroy(config);
	const char *first;
	is_int((long long)wafer__null_storage_violations(&s, &first), 0,
	       "no unmap cut a mapping");
	is_int((long long)wafer__null_storage_live(&s), 0, "whole: no leak");
	wafer__null_storage_fini(&s);
	if (!pieces)
		return;

	/* unit caps a unit: 64 MiB is 8 units of 8 MiB by default (a
	 * quarter would be 16), 4 of 16 MiB (a quarter) with unit = 16M, 16
	 * of 4 MiB with unit = 4M. */
	static const struct {
		const char *text;
		long long units;
	} caps[] = {
		{"[memory.pool]\nunmap = whole\n", 8},
		{"[memory.pool]\nunmap = whole\nunit = 16M\n", 4},
		{"[memory.pool]\nunmap = whole\nunit = 4M\n", 16},
		{"[memory.pool]\n", 1},
	};
	for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
		wafer__null_storage_init(&s, &o);
		config = fake_config(caps[i].text);
		wafer__memory_create("pool", &s, config, &m);
		wafer__memory_reserve(m, 64 * MiB, &a);
		wafer__null_storage_phys(&s, &made, &gone);
		is_int((long long)made, caps[i].units,
		       "64 MiB block: %lld maps (%zu)", caps[i].units, i);
		wafer__memory_release(m, &a);
		wafer__memory_destroy(m);
		wafer__config_destroy(config);
		is_int((long long)wafer__null_storage_violations(&s, NULL), 0,
		       "  storage contract kept");
		wafer__null_storage_fini(&s);
	}
}

static void test_options(void)
{
	static const struct fake_bad_option bad[] = {
		{"[memory.pool]\noverhead = -1\n", "overhead"},
		{"[memory.pool]\noverhead = much\n", "overhead"},
		{"[memory.pool]\nsmall_max = big\n", "small_max"},
		{"[memory.pool]\nslack = 1\n", "unknown option 'slack'"},
		{"[memory.pool]\nunmap = some\n", "unmap: expected whole or pages"},
		{"[memory.pool]\nunit = big\n", "unit"},
	};
	fake_refuses_each(&vm, "pool", bad, sizeof bad / sizeof bad[0]);
}

/* Many free blocks of one size (holes between live ones): keeping and
 * searching the bins costs about log n steps per operation, not n. */
static void test_many_holes(void)
{
	enum { N = 20000 };
	struct fake_storage f;
	struct wafer__memory *m = fake_open(&f, NULL, "pool", NULL);
	static struct wafer__slice s[N];
	for (int i = 0; i < N; i++)
		wafer__memory_reserve(m, 1000, &s[i]);
	for (int i = 0; i < N; i += 2)
		wafer__memory_release(m, &s[i]);
	for (int i = 0; i < N; i += 2)
		wafer__memory_reserve(m, 1000, &s[i]);
	for (int i = N - 2; i >= 0; i -= 2)
		wafer__memory_release(m, &s[i]);
	struct wafer__memory_strategy_stats st;
	wafer__memory_strategy_stats(m, &st);
	ok(st.free_steps < (uint64_t)N * 64,
	   "no vm: %d holes of one size cost %llu bin steps (< 64 per op)", N / 2,
	   (unsigned long long)st.free_steps);
	for (int i = 0; i < N; i += 2)
		wafer__memory_reserve(m, 1000, &s[i]);
	for (int i = 0; i < N; i++)
		wafer__memory_release(m, &s[i]);
	is_int((long long)fake_close(&f, m), 0, "many holes: no leak");
}

int main(void)
{
	test_default();
	test_split_coalesce(&vm, "vm");
	test_split_coalesce(NULL, "chunks");
	test_best_fit(&vm, "vm");
	test_best_fit(NULL, "chunks");
	test_alignment();
	test_arenas();
	test_pages();
	test_bound();
	test_idle_order();
	test_window();
	test_max_idle();
	test_whole(true);
	test_whole(false);
	test_chunks();
	test_many_holes();
	test_out_of_memory();
	test_options();
	done_testing();
	return exit_status();
}
