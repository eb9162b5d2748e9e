/* wafer — SPDX-License-Identifier: MIT
 *
 * t/internal/memory_property: every strategy (and the interesting option sets of
 * each) under a random workload on the fake storage, checking after every
 * step that
 *   - live ranges never overlap (host addresses of resource + offset),
 *   - the bytes written into each live slice survive,
 *   - bytes in use and their peak agree with a shadow count, and the
 *     storage counters with the fake storage's own,
 * and at the end that releasing everything brings in-use to zero, trim
 * brings reserved to zero, and destroy leaves storage empty.
 *
 * Then the same workload with storage failing every k-th acquiring call
 * (k = 2, 3, 5, 7, 11): each reserve either succeeds or returns
 * WAFER_ERROR_OUT_OF_MEMORY with a cleared slice and nothing changed;
 * nothing leaks; and with storage healthy again the manager keeps working.
 *
 * MEMORY_SEED=n in the environment changes the seed. */
#include "build-config.h"

#include "t/standins/fake_storage.h"
#include "t/tap.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define MAX_LIVE 160

struct variant {
	const char *strategy;
	const char *options; /* INI text or NULL */
	struct fake_options storage;
	const char *label;
};

static const struct variant variants[] = {
	{"exact", NULL, {.vm = true}, "exact"},
	{"direct", NULL, {.vm = true, .async = true}, "direct"},
	{"chunked", NULL, {0}, "chunked defaults"},
	{"chunked", "[memory.chunked]\nslice_ratio = 0.3\n"
		    "dealloc = reserves:17\n", {0}, "chunked ratio 0.3"},
	{"chunked", "[memory.chunked]\nslice_ratio = 0\nslice_max = 64K\n"
		    "dealloc = never\n", {0}, "chunked slice_max"},
	{"buckets", NULL, {0}, "buckets"},
	{"buckets", "[memory.buckets]\nbucket_cap = 256K\n", {0},
	 "buckets capped"},
	{"stream", NULL, {.async = true, .defer_frees = true}, "stream"},
	{"stream", "[memory.stream]\nmax_pending = 1M\n",
	 {.async = true, .defer_frees = true}, "stream max_pending"},
	{"stream", NULL, {0}, "stream without async"},
	{"pool", NULL, {.vm = true}, "pool vm"},
	{"pool", "[memory.pool]\noverhead = 0\nva_size = 16M\n"
		 "max_idle = 1M\nsmall_max = 64K\n", {.vm = true},
	 "pool vm tight"},
	{"pool", NULL, {.vm = true, .alignment = 4096, .granularity = 128 * KiB},
	 "pool vm 4K-aligned"},
	{"pool", NULL, {0}, "pool chunks"},
	{"pool", "[memory.pool]\noverhead = 0\nsmall_chunk = 300K\n"
		 "large_round = 1000000\n", {0}, "pool chunks tight"},
};

struct live {
	struct wafer__slice slice;
	size_t size;
	unsigned char seed;
};

struct run {
	struct fake_storage f;
	struct wafer__memory *m;
	struct live live[MAX_LIVE];
	size_t count;
	uint64_t shadow, shadow_peak;
	uint64_t rng;
	unsigned problems; /* checks failed; reported once per run */
	char first_problem[300];
};

static uint64_t next_random(struct run *r)
{
	/* xorshift64*: fast, reproducible from the seed */
	r->rng ^= r->rng >> 12;
	r->rng ^= r->rng << 25;
	r->rng ^= r->rng >> 27;
	return r->rng * UINT64_C(2685821657736338717);
}

static size_t random_size(struct run *r)
{
	unsigned kind = (unsigned)(next_random(r) % 100);
	uint64_t x = next_random(r);
	if (kind < 50)
		return 1 + x % 4096;
	if (kind < 80)
		return 4096 + x % (256 * KiB);
	if (kind < 95)
		return 256 * KiB + x % (2 * MiB);
	return 2 * MiB + x % (6 * MiB);
}

static void problem(struct run *r, const char *what)
{
	if (r->problems++ == 0)
		snprintf(r->first_problem, sizeof r->first_problem, "%s", what);
}

/* Writes a pattern at the ends of the slice and every 4 KiB between:
 * enough to catch an overlapping or moved block, cheap for 8 MiB ones. */
#define PATTERN_EDGE 512
#define PATTERN_STRIDE 4096

static unsigned char pattern(unsigned char seed, size_t i)
{
	return (unsigned char)(seed + i * 131);
}

static void for_pattern(struct live *l, int check, struct run *r)
{
	unsigned char *p = fake_ptr(&l->slice);
	size_t n = l->size;
	for (size_t i = 0; i < n; i++) {
		if (i == PATTERN_EDGE && n > 2 * PATTERN_EDGE) {
			/* Skip to the tail, touching one byte per stride. */
			for (size_t j = i; j < n - PATTERN_EDGE;
			     j += PATTERN_STRIDE) {
				if (check && p[j] != pattern(l->seed, j))
					problem(r, "contents changed (middle)");
				else if (!check)
					p[j] = pattern(l->seed, j);
			}
			i = n - PATTERN_EDGE;
		}
		if (check && p[i] != pattern(l->seed, i)) {
			problem(r, "contents changed");
			return;
		}
		if (!check)
			p[i] = pattern(l->seed, i);
	}
}

static void check_books(struct run *r)
{
	wafer_memory_usage u = fake_usage(r->m);
	if (u.bytes_in_use != r->shadow)
		problem(r, "bytes in use differ from the shadow count");
	if (u.peak_in_use != r->shadow_peak)
		problem(r, "peak in use differs from the shadow peak");
	uint64_t pending = 0;
	for (size_t i = 0; i < r->f.count; i++)
		if (r->f.objects[i].pending_free)
			pending += r->f.objects[i].size;
	/* A stream-ordered free counts as done for the books when queued;
	 * the fake frees it at the next sync. */
	if (u.bytes_reserved != r->f.bytes - pending)
		problem(r, "reserved bytes differ from what storage holds");
	if (u.storage_allocs != r->f.allocs || u.storage_frees != r->f.frees ||
	    u.storage_maps != r->f.maps || u.storage_unmaps != r->f.unmaps)
		problem(r, "storage call counts differ from the storage's");
	if (r->f.violations)
		problem(r, r->f.first_violation);
}

static void reserve_one(struct run *r, bool may_fail)
{
	size_t size = random_size(r);
	struct live *l = &r->live[r->count];
	wafer_status status = wafer__memory_reserve(r->m, size, &l->slice);
	if (status != WAFER_OK) {
		if (!may_fail || status != WAFER_ERROR_OUT_OF_MEMORY)
			problem(r, "reserve failed");
		if (l->slice.resource || l->slice.size || l->slice.token)
			problem(r, "slice not cleared after a failure");
		if (!strstr(wafer__error_detail(), "cannot reserve"))
			problem(r, "out-of-memory detail lacks the sizes");
		return;
	}
	if (l->slice.size != size || !l->slice.resource ||
	    l->slice.offset % r->f.opt.alignment)
		problem(r, "slice size, resource or alignment wrong");
	uintptr_t lo = (uintptr_t)fake_ptr(&l->slice), hi = lo + size;
	for (size_t i = 0; i < r->count; i++) {
		uintptr_t olo = (uintptr_t)fake_ptr(&r->live[i].slice);
		uintptr_t ohi = olo + r->live[i].size;
		if (lo < ohi && olo < hi)
			problem(r, "two live ranges overlap");
	}
	l->size = size;
	l->seed = (unsigned char)next_random(r);
	for_pattern(l, 0, r);
	r->count++;
	r->shadow += size;
	if (r->shadow > r->shadow_peak)
		r->shadow_peak = r->shadow;
}

static void release_one(struct run *r, size_t i)
{
	struct live *l = &r->live[i];
	for_pattern(l, 1, r);
	wafer__memory_release(r->m, &l->slice);
	r->shadow -= l->size;
	r->live[i] = r->live[--r->count];
}

static void workload(struct run *r, int steps, bool may_fail)
{
	for (int step = 0; step < steps; step++) {
		unsigned what = (unsigned)(next_random(r) % 1000);
		if (r->count < MAX_LIVE &&
		    (r->count == 0 || what < 540))
			reserve_one(r, may_fail);
		else
			release_one(r, next_random(r) % r->count);
		if (what >= 990)
			wafer__memory_trim_cache(r->m);
		else if (what >= 980)
			wafer__memory_after_sync(r->m);
		if (what % 97 == 0)
			for (size_t i = 0; i < r->count; i++)
				for_pattern(&r->live[i], 1, r);
		check_books(r);
		if (r->problems)
			return;
	}
}

static bool start(struct run *r, const struct variant *v, uint64_t seed)
{
	memset(r, 0, sizeof *r);
	r->rng = seed | 1;
	fake_init(&r->f, &v->storage);
	r->m = fake_memory(&r->f, v->strategy, v->options);
	return r->m != NULL;
}

/* Releases everything, trims, destroys; reports the end state. */
static void finish(struct run *r, const char *label)
{
	while (r->count)
		release_one(r, r->count - 1);
	is_int((long long)fake_usage(r->m).bytes_in_use, 0,
	       "%s: all released: in use 0", label);
	wafer__memory_trim_cache(r->m);
	is_int((long long)fake_usage(r->m).bytes_reserved, 0,
	       "%s: trimmed: reserved 0", label);
	wafer__memory_destroy(r->m);
	size_t leaked = fake_fini(&r->f);
	is_int((long long)leaked, 0, "%s: destroyed: storage empty", label);
	if (!ok(r->problems == 0 && r->f.violations == 0,
		"%s: every check held", label))
		diag("%u problems; first: %s", r->problems,
		     r->problems ? r->first_problem : r->f.first_violation);
}

int main(void)
{
	uint64_t seed = 0x5eed5eedULL;
	const char *env = getenv("MEMORY_SEED");
	if (env)
		seed = strtoull(env, NULL, 0);
	diag("seed %llu", (unsigned long long)seed);

	static struct run r;
	for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
		const char *label = variants[v].label;
		if (!ok(start(&r, &variants[v], seed + v), "%s: created", label))
			continue;
		workload(&r, 1500, false);
		ok(r.shadow_peak > 0, "%s: the workload ran (peak %llu)", label,
		   (unsigned long long)r.shadow_peak);
		finish(&r, label);
	}

	static const unsigned long every[] = {2, 3, 5, 7, 11};
	for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
		for (size_t k = 0; k < sizeof every / sizeof every[0]; k++) {
			char label[128];
			snprintf(label, sizeof label, "%s, failing every %lu",
				 variants[v].label, every[k]);
			if (!start(&r, &variants[v], seed + 100 * v + k)) {
				ok(0, "%s: created", label);
				continue;
			}
			r.f.fail_every = every[k];
			workload(&r, 300, true);
			unsigned long failures = r.f.failures;
			r.f.fail_every = 0;
			size_t before = r.count;
			for (int i = 0; i < 20 && r.count < MAX_LIVE; i++)
				reserve_one(&r, false);
			check_books(&r);
			ok(failures > 0 && r.count > before,
			   "%s: %lu injected failures, then it keeps working",
			   label, failures);
			finish(&r, label);
		}
	}
	done_testing();
	return exit_status();
}
