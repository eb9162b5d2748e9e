/* wafer — SPDX-License-Identifier: MIT
 *
 * t/internal/memory_limit: `[memory] limit` (lib/memory/limit.c) and the memory
 * manager's out-of-memory hook, on the fake storage so every count is
 * exact: the limit refuses before storage is asked, names itself, its
 * origin and what is held; the manager trims its cache and retries; the
 * hook gets the figures, may release and ask for one retry, or decline;
 * percentages of the device's memory; bad values name the file and line;
 * and one device's counter is shared by the managers of its clients. */
#include "build-config.h"

#include <pthread.h>

#include "t/standins/fake_storage.h"
#include "t/tap.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

/* Plain chunks rounded to 64 KiB, cached while idle (a large overhead):
 * what storage holds is exactly the sum of the chunks. */
static const char pool_chunks[] =
	"[memory.pool]\nlarge_round = 64K\nsmall_chunk = 64K\n"
	"overhead = 100\n";

/* A manager of strategy pool on |f| with [memory] limit |limit| (NULL:
 * none) charged to |*device|, configured by |extra| too. */
struct limited {
	struct fake_storage f;
	struct wafer__memory_limit limit;
	struct wafer__memory *m;
};

static bool limited_init(struct limited *l, const struct fake_options *opt,
			 const char *limit, const char *extra,
			 uint64_t device_memory, uint64_t *device)
{
	char text[512];
	snprintf(text, sizeof text, "[memory]\n%s%s%s\n%s",
		 limit ? "limit = " : "", limit ? limit : "",
		 limit ? "" : "", extra ? extra : "");
	fake_init(&l->f, opt);
	struct wafer__config *config = fake_config(text);
	l->m = NULL;
	wafer_status status = wafer__memory_limit_init(
		&l->limit, config, device_memory, "fake:0", device);
	if (status == WAFER_OK) {
		l->f.storage.limit = &l->limit;
		status = wafer__memory_create("pool", &l->f.storage, config,
					      &l->m);
	}
	wafer__config_destroy(config);
	return status == WAFER_OK;
}

/* limited_init of plain chunks under a 1M limit. */
static bool limited_1m(struct limited *l, uint64_t *device)
{
	return limited_init(l, NULL, "1M", pool_chunks, 0, device);
}

static size_t limited_fini(struct limited *l)
{
	wafer__memory_destroy(l->m);
	return fake_fini(&l->f);
}

/* Two points: |l| closes with nothing leaked, and its device's counter
 * is back to 0; |prefix| starts their names. */
static void closes_clean(struct limited *l, const uint64_t *device,
			 const char *prefix)
{
	is_int((long long)limited_fini(l), 0, "%sno leak", prefix);
	is_int((long long)*device, 0, "%sthe device's counter is back to 0",
	       prefix);
}

static void test_limit_hit(void)
{
	uint64_t device = 0;
	struct limited l;
	struct wafer__slice a, b;
	ok(limited_1m(&l, &device), "limit 1M: manager created");
	is_status(wafer__memory_reserve(l.m, 700 * KiB, &a), WAFER_OK,
		  "700 KiB under a 1 MiB limit");
	is_int((long long)device, 704 * KiB,
	       "the device counts the 64 KiB-rounded chunk");
	is_status(wafer__memory_reserve(l.m, 400 * KiB, &b),
		  WAFER_ERROR_OUT_OF_MEMORY, "400 KiB more passes the limit");
	const char *detail = wafer__error_detail();
	like(detail, "cannot reserve 409600 bytes: 716800 in use, 720896 "
		     "reserved (strategy pool)",
	     "the detail gives asked, in use and reserved");
	like(detail, "[memory] limit 1M (1048576 bytes, from test.conf:2) "
		     "reached on fake:0",
	     "names the limit, its origin and the device");
	/* 400 KiB is a chunk of 448 KiB (64 KiB rounding). */
	like(detail, "720896 bytes reserved on the device (720896 by this "
		     "client), 458752 more asked",
	     "and what the device holds");
	is_int((long long)l.f.allocs, 1, "storage was not asked past it");
	is_int((long long)l.f.frees, 0, "nothing to trim: no free");
	ok(b.resource == 0 && b.size == 0, "the failed slice is empty");
	wafer__memory_release(l.m, &a);
	closes_clean(&l, &device, "");
}

static void test_trim_retry(void)
{
	uint64_t device = 0;
	struct limited l;
	struct wafer__slice a, b;
	limited_1m(&l, &device);
	wafer__memory_reserve(l.m, 512 * KiB, &a);
	wafer__memory_release(l.m, &a);
	is_int((long long)fake_usage(l.m).bytes_reserved, 512 * KiB,
	       "a released chunk stays cached");
	is_status(wafer__memory_reserve(l.m, 768 * KiB, &b), WAFER_OK,
		  "768 KiB fits once the cache is trimmed");
	is_int((long long)l.f.frees, 1, "the trim freed the cached chunk");
	is_int((long long)l.f.allocs, 2,
	       "storage asked twice: the refused try never reached it");
	is_int((long long)device, 768 * KiB, "the device holds the new chunk");
	is_int((long long)fake_usage(l.m).bytes_reserved, 768 * KiB,
	       "and so does the manager");
	wafer__memory_release(l.m, &b);
	is_int((long long)limited_fini(&l), 0, "no leak");
}

/* The hook under test: records what it got, releases |release| if set,
 * answers |retry|. */
struct hook {
	struct wafer__memory *m;
	struct wafer__slice *release;
	bool retry;
	bool unblock;        /* fail_every = 0 on |f| before retrying */
	struct fake_storage *f;
	int calls;
	wafer_oom_info info;
	char detail[512];
};

static bool hook_fn(void *data, const wafer_oom_info *info)
{
	struct hook *h = data;
	h->calls++;
	h->info = *info;
	snprintf(h->detail, sizeof h->detail, "%s", info->detail);
	/* The hook's own calls may overwrite the thread's detail. */
	wafer__fail(WAFER_ERROR_INTERNAL, "clobbered by the hook");
	if (h->release) {
		wafer__memory_release(h->m, h->release);
		h->release = NULL;
	}
	if (h->unblock)
		h->f->fail_every = 0;
	return h->retry;
}

static void test_hook_release_retry(void)
{
	uint64_t device = 0;
	struct limited l;
	struct wafer__slice a, b, c;
	limited_1m(&l, &device);
	wafer__memory_reserve(l.m, 512 * KiB, &a);
	wafer__memory_reserve(l.m, 256 * KiB, &b);
	struct hook h = {.m = l.m, .release = &a, .retry = true};
	wafer__memory_set_oom(l.m, hook_fn, &h);
	is_status(wafer__memory_reserve(l.m, 500 * KiB, &c), WAFER_OK,
		  "the hook released a block and the retry succeeded");
	is_int(h.calls, 1, "the hook was called once");
	is_int((long long)h.info.size, 500 * KiB, "info: size asked");
	is_int((long long)h.info.bytes_in_use, 768 * KiB, "info: in use");
	is_int((long long)h.info.bytes_reserved, 768 * KiB, "info: reserved");
	is_int((long long)h.info.device_reserved, 768 * KiB,
	       "info: the device's reserved");
	is_int((long long)h.info.limit, 1 * MiB, "info: the limit");
	like(h.detail, "[memory] limit 1M", "info: the detail");
	is_int((long long)l.f.allocs, 2, "the retry reused the block: no alloc");
	is_int((long long)l.f.frees, 0, "and freed nothing");
	ok(c.resource == a.resource, "in the released chunk");
	is_int((long long)fake_usage(l.m).bytes_in_use, 756 * KiB,
	       "in use: b and c");
	wafer__memory_release(l.m, &b);
	wafer__memory_release(l.m, &c);
	is_int((long long)limited_fini(&l), 0, "no leak");
}

static void test_hook_declines(void)
{
	uint64_t device = 0;
	struct limited l;
	struct wafer__slice a, c;
	limited_1m(&l, &device);
	wafer__memory_reserve(l.m, 768 * KiB, &a);
	struct hook h = {.m = l.m};
	wafer__memory_set_oom(l.m, hook_fn, &h);
	is_status(wafer__memory_reserve(l.m, 500 * KiB, &c),
		  WAFER_ERROR_OUT_OF_MEMORY, "declined: out of memory");
	is_int(h.calls, 1, "the hook was asked once");
	like(wafer__error_detail(), "[memory] limit 1M (1048576 bytes",
	     "the detail is the limit's, not the hook's");
	like(wafer__error_detail(), "cannot reserve 512000 bytes: 786432 in use",
	     "with the manager's figures");

	/* Asking for a retry without releasing anything: one retry only. */
	h = (struct hook){.m = l.m, .retry = true};
	is_status(wafer__memory_reserve(l.m, 500 * KiB, &c),
		  WAFER_ERROR_OUT_OF_MEMORY, "a retry that cannot succeed fails");
	is_int(h.calls, 1, "the hook is not asked again");
	is_int((long long)l.f.allocs, 1, "storage never asked past the limit");

	/* Removed: no hook. */
	wafer__memory_set_oom(l.m, NULL, NULL);
	h.calls = 0;
	is_status(wafer__memory_reserve(l.m, 500 * KiB, &c),
		  WAFER_ERROR_OUT_OF_MEMORY, "no hook: out of memory");
	is_int(h.calls, 0, "a removed hook is not called");
	wafer__memory_release(l.m, &a);
	is_int((long long)limited_fini(&l), 0, "no leak");
}

/* A storage failure, no limit: the hook is asked the same way. */
static void test_hook_storage_oom(void)
{
	uint64_t device = 0;
	struct limited l;
	struct wafer__slice a;
	limited_init(&l, NULL, NULL, pool_chunks, 0, &device);
	struct hook h = {.m = l.m, .retry = true, .unblock = true, .f = &l.f};
	wafer__memory_set_oom(l.m, hook_fn, &h);
	l.f.fail_every = 1;
	is_status(wafer__memory_reserve(l.m, 100 * KiB, &a), WAFER_OK,
		  "storage full: the hook makes room, the retry succeeds");
	is_int(h.calls, 1, "the hook was asked once");
	is_int((long long)h.info.limit, 0, "info: no limit");
	like(h.detail, "injected", "info: the storage's reason");
	is_int((long long)l.f.failures, 2, "two refused allocs before it");
	is_int((long long)device, 128 * KiB,
	       "the counter is kept without a limit");
	wafer__memory_release(l.m, &a);
	is_int((long long)limited_fini(&l), 0, "no leak");
}

/* With virtual memory the limit applies to mapped pages. */
static void test_vm(void)
{
	static const struct fake_options vm = {.vm = true};
	uint64_t device = 0;
	struct limited l;
	struct wafer__slice a, b;
	limited_init(&l, &vm, "256K", NULL, 0, &device);
	is_status(wafer__memory_reserve(l.m, 200 * KiB, &a), WAFER_OK,
		  "vm: 200 KiB maps four 64 KiB pages");
	is_int((long long)device, 256 * KiB, "vm: the device counts them");
	is_status(wafer__memory_reserve(l.m, 100 * KiB, &b),
		  WAFER_ERROR_OUT_OF_MEMORY, "vm: a fifth page passes 256K");
	is_int((long long)l.f.maps, 1, "vm: the refused map never reached "
					"storage");
	wafer__memory_release(l.m, &a);
	is_status(wafer__memory_reserve(l.m, 100 * KiB, &b), WAFER_OK,
		  "vm: fits in the idle pages");
	wafer__memory_release(l.m, &b);
	closes_clean(&l, &device, "vm: ");
}

static void test_percent(void)
{
	uint64_t device = 0;
	struct limited l;
	static const struct {
		const char *limit;
		uint64_t device_bytes;
		long long want;
		const char *what;
	} good[] = {
		{"50%", 4 * MiB, 2 * MiB, "50% of 4 MiB"},
		{"12.5 %", 8 * MiB, 1 * MiB, "12.5% of 8 MiB"},
		{"100%", 1000, 1000, "100% is all of it"},
		{"2G", 0, 2LL << 30, "a size with a suffix"},
	};
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		ok(limited_init(&l, NULL, good[i].limit, NULL,
				good[i].device_bytes, &device),
		   "%s", good[i].limit);
		is_int((long long)l.limit.bytes, good[i].want, "%s",
		       good[i].what);
		limited_fini(&l);
	}

	static const char *const bad[] = {
		"0%", "150%", "-5%", "%", "50%x", "abc", "0", "12Q", "nan%",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		ok(!limited_init(&l, NULL, bad[i], NULL, 4 * MiB, &device),
		   "'%s' is refused", bad[i]);
		like(wafer__error_detail(), "test.conf:2: [memory] limit: expected",
		     "'%s': the detail names file, line and key", bad[i]);
		ok(l.m == NULL, "'%s': no manager", bad[i]);
		fake_fini(&l.f);
	}
	ok(!limited_init(&l, NULL, "80%", NULL, 0, &device),
	   "a percentage of an unknown size is refused");
	like(wafer__error_detail(), "test.conf:2: [memory] limit: 80% of the "
				   "device's memory, but the device does not "
				   "report its memory size",
	     "and says why");
	fake_fini(&l.f);
}

/* Two clients' managers on one device: one counter, one limit. */
static void test_shared_device(void)
{
	uint64_t device = 0;
	struct limited one, two;
	struct wafer__slice a, b;
	limited_1m(&one, &device);
	limited_1m(&two, &device);
	wafer__memory_reserve(one.m, 768 * KiB, &a);
	is_status(wafer__memory_reserve(two.m, 512 * KiB, &b),
		  WAFER_ERROR_OUT_OF_MEMORY,
		  "the second client meets the first one's bytes");
	like(wafer__error_detail(), "786432 bytes reserved on the device (0 by "
				   "this client), 524288 more asked",
	     "the detail tells the device's from the client's");
	wafer__memory_release(one.m, &a);
	wafer__memory_trim_cache(one.m);
	is_status(wafer__memory_reserve(two.m, 512 * KiB, &b), WAFER_OK,
		  "once the first gave its memory back, it fits");
	is_int((long long)device, 512 * KiB, "the device holds the second's");
	wafer__memory_release(two.m, &b);
	limited_fini(&one);
	limited_fini(&two);
	is_int((long long)device, 0, "counter back to 0");
}

/* Managers on several threads charging one device: the counter never
 * passes the limit and comes back to 0. */
struct racer {
	struct limited l;
	unsigned seed;
	uint64_t *device;
	int over;      /* times the device's counter was seen past 1 MiB */
	int refused;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	struct wafer__slice held[8] = {{0}};
	for (int i = 0; i < 20000; i++) {
		struct wafer__slice *s = &held[rand_r(&r->seed) % 8];
		if (s->resource) {
			wafer__memory_release(r->l.m, s);
			s->resource = 0;
			if (i % 7 == 0)
				wafer__memory_trim_cache(r->l.m);
			continue;
		}
		size_t size = 1 + (size_t)rand_r(&r->seed) % (200 * KiB);
		if (wafer__memory_reserve(r->l.m, size, s) != WAFER_OK)
			r->refused++;
		if (__atomic_load_n(r->device, __ATOMIC_RELAXED) > 1 * MiB)
			r->over++;
	}
	for (int k = 0; k < 8; k++)
		if (held[k].resource)
			wafer__memory_release(r->l.m, &held[k]);
	return NULL;
}

static void test_threads(void)
{
	uint64_t device = 0;
	struct racer r[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		r[i] = (struct racer){.seed = 17u * (unsigned)i + 1,
				      .device = &device};
		limited_init(&r[i].l, NULL, "1M",
			     "[memory.pool]\nlarge_round = 64K\n"
			     "small_chunk = 64K\n",
			     0, &device);
	}
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, race, &r[i]);
	int over = 0, refused = 0;
	size_t leaked = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		over += r[i].over;
		refused += r[i].refused;
	}
	for (int i = 0; i < 4; i++)
		leaked += limited_fini(&r[i].l);
	is_int(over, 0, "threads: the device never held more than its limit");
	ok(refused > 0, "threads: the limit was met (%d refusals)", refused);
	is_int((long long)leaked, 0, "threads: no leak");
	is_int((long long)device, 0, "threads: the counter is back to 0");
}

int main(void)
{
	test_limit_hit();
	test_trim_retry();
	test_hook_release_retry();
	test_hook_declines();
	test_hook_storage_oom();
	test_vm();
	test_percent();
	test_shared_device();
	test_threads();
	done_testing();
	return exit_status();
}
