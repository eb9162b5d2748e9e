/* wafer — SPDX-License-Identifier: MIT
 *
 * driver.c: a Level Zero driver for the tests, backed by host memory (see
 * fakeze.h for what it offers the tests and how it is configured).
 *
 * The real oneAPI loader loads it when ZE_ENABLE_ALT_DRIVERS names its
 * path, and reaches it the way it reaches libze_intel_gpu.so.1: through
 * the zeGet*ProcAddrTable exports at the bottom, which fill the loader's
 * dispatch tables. The loader 1.8 also requires the tools (zet) and
 * sysman (zes) table exports to be present before zeInit succeeds; those
 * are exported and left empty (a NULL entry reads "unsupported").
 *
 * Semantics, kept as close to a GPU driver's as a test needs:
 *  - device and host allocations are host memory (device memory starts
 *    filled with 0xa5, not zeros);
 *  - virtual memory is real: a reservation is PROT_NONE address space, a
 *    physical object is a memfd, zeVirtualMemMap maps it there, so bytes
 *    written through a mapping are in the physical object;
 *  - command lists record commands. Submitted work (a regular list its
 *    queue executes, or what is appended to an asynchronous immediate
 *    list) is pending: nothing of it runs until the host synchronises
 *    with it (zeCommandQueueSynchronize, or zeEventHostSynchronize /
 *    zeEventQueryStatus on an event it signals), so the host reads stale
 *    bytes before that. Then it runs the way the specification allows a
 *    device to: the commands between two barriers in any order — here in
 *    reverse (FAKEZE_ORDER), so a command that depends on an earlier one
 *    with no barrier between them reads what was there before;
 *  - kernel launches are checked against the module's SPIR-V, recorded,
 *    and run: each kernel of the module is emulated on host memory by
 *    name (t/standins/levelzero/emulate.h), from the argument bytes the plugin set
 *    and over the groups it launched, so results are real values;
 *  - events are signalled by the commands that name them, with kernel
 *    timestamps from a fake device clock, or by the host
 *    (zeEventHostSignal). A barrier or zeCommandListAppendWaitOnEvents
 *    that waits on events holds back everything after it on its queue or
 *    immediate list until they are signalled: running it first runs, on
 *    the other engines, the work that signals them. Since nothing runs
 *    before the host waits for it, a queue that reads what another
 *    queue writes, with no event wait between them, reads stale bytes:
 *    the other queue's work has not run. An event only the host signals
 *    (a host callback's gate) leaves the work behind it pending.
 * One lock serialises every entry point. A host synchronisation that
 * needs an event only the host can signal waits, the lock released, for
 * another thread's zeEventHostSignal (FAKEZE_HANG_SECONDS at most, then a
 * violation: it would wait forever). */
#include "build-config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#include "t/standins/levelzero/emulate.h"
#include "t/standins/levelzero/fakeze.h"
#include "t/standins/levelzero/program.h"
#include "t/standins/levelzero/spirv.h"

#define EXPORT __attribute__((visibility("default")))

#define MAX_DEVICES 8
#define MAX_VIOLATIONS 256
#define COPY_ORDINAL 0    /* copy-only group: no kernels allowed */
#define COMPUTE_ORDINAL 1 /* compute and copy */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/*===----------------------------------------------------------------------===
 * Configuration, call counts, injected failures, violations
 *===----------------------------------------------------------------------===*/

static struct {
	uint32_t gpus;
	int vpu;
	uint64_t memory;
	size_t page;
	int no_vm;
	int no_immediate;
	uint32_t max_groups;
	int build_fail;       /* 1: every build fails; 2: builds with flags */
	int integrated;
	enum { ORDER_REVERSE, ORDER_FORWARD, ORDER_SHUFFLE } order;
	uint64_t seed;
	uint64_t hang_seconds;
} config;

static size_t env_size(const char *name, size_t fallback)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return fallback;
	n = strtoull(v, &end, 0);
	return *end ? fallback : (size_t)n;
}

static void read_config(void)
{
	config.gpus = (uint32_t)env_size("FAKEZE_DEVICES", 1);
	if (config.gpus > MAX_DEVICES - 1)
		config.gpus = MAX_DEVICES - 1;
	config.vpu = env_size("FAKEZE_VPU", 0) != 0;
	config.memory = env_size("FAKEZE_MEMORY", (size_t)256 << 20);
	config.page = env_size("FAKEZE_PAGE", (size_t)64 << 10);
	config.no_vm = env_size("FAKEZE_NO_VM", 0) != 0;
	config.no_immediate = env_size("FAKEZE_NO_IMMEDIATE", 0) != 0;
	config.max_groups = (uint32_t)env_size("FAKEZE_MAX_GROUPS", 65535);
	const char *fail = getenv("FAKEZE_BUILD_FAIL");
	config.build_fail = !fail || !*fail		 ? 0
			    : strcmp(fail, "flags") == 0 ? 2
							 : 1;
	config.integrated = env_size("FAKEZE_INTEGRATED", 0) != 0;
	const char *order = getenv("FAKEZE_ORDER");
	config.order = !order || !*order || !strcmp(order, "reverse")
			       ? ORDER_REVERSE
		       : !strcmp(order, "forward") ? ORDER_FORWARD
						   : ORDER_SHUFFLE;
	config.seed = env_size("FAKEZE_SEED", 1) | 1;
	config.hang_seconds = env_size("FAKEZE_HANG_SECONDS", 20);
}

struct counter {
	const char *name; /* a string literal: entry point name */
	uint64_t calls;
};
static struct counter counters[96];
static size_t counter_count;

static struct {
	char name[64];
	uint64_t after;
	ze_result_t result;
	int armed;
} injection;

static char *violations[MAX_VIOLATIONS];
static size_t violation_count;

static void violate(const char *format, ...)
	__attribute__((format(printf, 1, 2)));
static void violate(const char *format, ...)
{
	va_list ap;
	char *text = NULL;

	if (violation_count == MAX_VIOLATIONS)
		return;
	va_start(ap, format);
	if (vasprintf(&text, format, ap) < 0)
		text = NULL;
	va_end(ap);
	if (!text)
		return;
	violations[violation_count++] = text;
	/* For tests that run a program which never sees this driver's
	 * API (t/levelzero/ops.sh): every violation, one per line. */
	const char *log = getenv("FAKEZE_VIOLATIONS");
	FILE *f = log && *log ? fopen(log, "a") : NULL;
	if (f) {
		fprintf(f, "%s\n", text);
		fclose(f);
	}
}

/* Every entry point starts here, under the lock: counts the call and
 * returns an injected failure if one is due. */
static ze_result_t enter(const char *name)
{
	size_t i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < counter_count; i++)
		if (counters[i].name == name || !strcmp(counters[i].name, name))
			break;
	if (i == counter_count && counter_count < 96)
		counters[counter_count++].name = name;
	if (i < counter_count)
		counters[i].calls++;
	if (injection.armed && strcmp(injection.name, name) == 0) {
		if (injection.after == 0) {
			injection.armed = 0;
			return injection.result;
		}
		injection.after--;
	}
	return ZE_RESULT_SUCCESS;
}

/* The ze name of the entry point (its function here is fz_<name>). */
#define WHO (__func__ + 3)

#define ENTER()                                                                \
	do {                                                                   \
		ze_result_t injected_ = enter(WHO);                       \
		if (injected_ != ZE_RESULT_SUCCESS)                            \
			return leave(injected_);                               \
	} while (0)

static ze_result_t leave(ze_result_t result)
{
	pthread_mutex_unlock(&lock);
	return result;
}

/*===----------------------------------------------------------------------===
 * Objects
 *===----------------------------------------------------------------------===*/

#define MAGIC 0x5a45f00du

enum kind {
	K_CONTEXT = 1,
	K_QUEUE,
	K_LIST,
	K_POOL,
	K_EVENT,
	K_MODULE,
	K_LOG,
	K_KERNEL,
	K_PHYS,
};

static const char *const kind_names[] = {
	"?", "context", "command queue", "command list", "event pool",
	"event", "module", "build log", "kernel", "physical memory",
};

struct obj {
	uint32_t magic;
	enum kind kind;
	struct obj *prev, *next;
};

static struct obj live = {.prev = &live, .next = &live};
static uint64_t live_objects;

static void *obj_new(enum kind kind, size_t size)
{
	struct obj *o = calloc(1, size);

	if (!o)
		return NULL;
	o->magic = MAGIC;
	o->kind = kind;
	o->next = &live;
	o->prev = live.prev;
	live.prev->next = o;
	live.prev = o;
	live_objects++;
	return o;
}

/* |handle| as a live object of |kind|, or NULL after a violation. */
static void *obj_get(const void *handle, enum kind kind, const char *who)
{
	for (struct obj *o = live.next; o != &live; o = o->next)
		if (o == handle) {
			if (o->kind == kind)
				return o;
			break;
		}
	violate("%s: %p is not a live %s", who, handle, kind_names[kind]);
	return NULL;
}

static void obj_free(void *p)
{
	struct obj *o = p;

	o->prev->next = o->next;
	o->next->prev = o->prev;
	o->magic = 0;
	live_objects--;
	free(o);
}

/* The driver and its devices are static: they live as long as the
 * process, as a real driver's do. */
static struct fake_driver {
	uint32_t magic;
} the_driver = {MAGIC};

static struct fake_device {
	uint32_t magic;
	uint32_t index;
	ze_device_type_t type;
} devices[MAX_DEVICES];
static uint32_t device_count;

static struct fake_device *device_of(ze_device_handle_t h, const char *who)
{
	for (uint32_t i = 0; i < device_count; i++)
		if ((void *)h == &devices[i])
			return &devices[i];
	violate("%s: %p is not a device", who, (void *)h);
	return NULL;
}

struct context {
	struct obj o;
};

/*===----------------------------------------------------------------------===
 * Memory
 *===----------------------------------------------------------------------===*/

enum alloc_kind { A_DEVICE, A_HOST };

struct alloc {
	enum alloc_kind kind;
	struct context *context;
	char *ptr;
	size_t size;
	struct alloc *next;
	struct fake_device *device; /* A_DEVICE: whose memory it is */
};

struct phys {
	struct obj o;
	struct context *context;
	struct fake_device *device;
	int fd;
	size_t size;
	size_t mapped_pages;
};

struct reservation {
	struct context *context;
	char *base;
	size_t size;
	struct phys **pages; /* size / page entries */
	struct reservation *next;
};

static struct alloc *allocs;
static struct reservation *reservations;
static uint64_t device_bytes, host_bytes, physical_bytes, reserved_bytes,
	mapped_bytes;

static struct alloc *find_alloc(const void *p, size_t size)
{
	for (struct alloc *a = allocs; a; a = a->next)
		if ((const char *)p >= a->ptr &&
		    (const char *)p < a->ptr + a->size)
			return size <= (size_t)(a->ptr + a->size - (const char *)p)
				       ? a
				       : NULL;
	return NULL;
}

static struct reservation *find_reservation(const void *p)
{
	for (struct reservation *r = reservations; r; r = r->next)
		if ((const char *)p >= r->base &&
		    (const char *)p < r->base + r->size)
			return r;
	return NULL;
}

/* Can the device touch [p, p + size)? Device and host allocations and
 * mapped pages of a reservation; never pageable memory. */
static int device_accessible(const void *p, size_t size)
{
	struct reservation *r;

	if (!p)
		return 0;
	if (find_alloc(p, size))
		return 1;
	r = find_reservation(p);
	if (!r || size > (size_t)(r->base + r->size - (const char *)p))
		return 0;
	size_t first = ((const char *)p - r->base) / config.page;
	size_t last = ((const char *)p + (size ? size : 1) - 1 - r->base) /
		      config.page;
	for (size_t i = first; i <= last; i++)
		if (!r->pages[i])
			return 0;
	return 1;
}

/* How many bytes from |p| on the device can reach: to the end of its
 * allocation, or of the run of mapped pages it is in; 0 for any other
 * address. What an emulated kernel may touch through a pointer. */
static size_t device_reach(const void *p)
{
	struct alloc *a = find_alloc(p, 1);
	struct reservation *r;

	if (a)
		return (size_t)(a->ptr + a->size - (const char *)p);
	r = find_reservation(p);
	if (!r)
		return 0;
	size_t page = ((const char *)p - r->base) / config.page;
	size_t end = page;
	while (end < r->size / config.page && r->pages[end])
		end++;
	if (end == page)
		return 0;
	return (size_t)(r->base + end * config.page - (const char *)p);
}

static uint64_t device_use(void)
{
	return device_bytes + physical_bytes;
}

/*===----------------------------------------------------------------------===
 * Events and the device clock
 *===----------------------------------------------------------------------===*/

/* Starts FAKEZE_TICKS * 1.5 before the kernel timestamps wrap. */
static uint64_t device_clock =
	(UINT64_C(1) << FAKEZE_TIMESTAMP_BITS) - FAKEZE_TICKS * 3 / 2;

struct pool {
	struct obj o;
	struct context *context;
	ze_event_pool_flags_t flags;
	uint32_t count;
	uint32_t events;
};

struct event {
	struct obj o;
	struct pool *pool;
	uint32_t index;
	int signalled;
	uint64_t start, end;
};

static void signal_event(struct event *e, uint64_t start, uint64_t end)
{
	const uint64_t mask = (UINT64_C(1) << FAKEZE_TIMESTAMP_BITS) - 1;

	if (!e)
		return;
	e->signalled = 1;
	e->start = start & mask;
	e->end = end & mask;
}

/*===----------------------------------------------------------------------===
 * Modules and kernels
 *===----------------------------------------------------------------------===*/

/* The flags of the last module built, for the tests. */
static char last_build_flags[256];

struct module {
	struct obj o;
	struct context *context;
	struct spv_module spv;
	uint32_t kernels;
	void *native; /* zeModuleGetNativeBinary's (program.h) */
	size_t native_size;
};

struct build_log {
	struct obj o;
	char text[256];
};

struct kernel {
	struct obj o;
	struct module *module;
	const struct spv_kernel *spv;
	emulate_fn *emulate;
	struct fakeze_arg args[FAKEZE_MAX_ARGS];
	int set[FAKEZE_MAX_ARGS];
	uint32_t group_size[3];
	int group_size_set;
};

static struct fakeze_launch *launches;
static size_t launch_count, launch_cap;

/*===----------------------------------------------------------------------===
 * Command lists
 *===----------------------------------------------------------------------===*/

enum cmd_kind { C_COPY, C_LAUNCH, C_BARRIER };

/* What a launch runs: the kernel's emulation and the launch as recorded
 * (argument bytes, group size and counts). */
struct kernel;

struct exec {
	emulate_fn *emulate;
	const struct kernel *kernel; /* for the in-use check; never read */
	unsigned char global[FAKEZE_MAX_ARGS]; /* pointer arguments */
	struct fakeze_launch rec;
};

struct list;

/* The most events one command waits on. */
#define MAX_WAITS 8

struct cmd {
	enum cmd_kind kind;
	void *dst;
	const void *src;
	size_t size;
	struct event *signal;
	/* C_BARRIER: what runs after it waits for these too. */
	struct event *waits[MAX_WAITS];
	uint32_t wait_count;
	struct exec *exec;  /* C_LAUNCH */
	int owned;          /* exec is this command's to free */
	struct list *from;  /* the regular list it was executed from */
};

/* Submitted work not yet run: a queue's, or an immediate list's. */
struct engine {
	struct cmd *cmds;
	size_t count, cap;
	int busy; /* being drained (a wait inside it runs other engines) */
};

struct list {
	struct obj o;
	struct context *context;
	struct fake_device *device;
	uint32_t ordinal;
	int immediate;
	int synchronous; /* an immediate list in ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS */
	int closed;
	struct engine cmds; /* a regular list's commands, recorded */
	struct engine work; /* an immediate list's, submitted */
};

struct queue {
	struct obj o;
	struct context *context;
	uint32_t ordinal;
	struct engine work;
};

static ze_result_t engine_push(struct engine *e, const struct cmd *c)
{
	if (e->count == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 16;
		struct cmd *grown = realloc(e->cmds, cap * sizeof *grown);
		if (!grown)
			return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
		e->cmds = grown;
		e->cap = cap;
	}
	e->cmds[e->count++] = *c;
	return ZE_RESULT_SUCCESS;
}

/* Forgets the first |n| commands of |e|. */
static void engine_drop(struct engine *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (e->cmds[i].owned)
			free(e->cmds[i].exec);
	if (n && e->count > n)
		memmove(e->cmds, e->cmds + n, (e->count - n) * sizeof *e->cmds);
	e->count -= n;
}

static void engine_free(struct engine *e)
{
	engine_drop(e, e->count);
	free(e->cmds);
	e->cmds = NULL;
	e->cap = 0;
}

/* Runs a launch: the emulation reads and writes device memory (host
 * memory here) through the arguments the plugin set. */
static void run_launch(const struct exec *x)
{
	struct emulate_launch l = {0};

	l.kernel = x->rec.kernel;
	memcpy(l.group_size, x->rec.group_size, sizeof l.group_size);
	memcpy(l.group_count, x->rec.group_count, sizeof l.group_count);
	l.arg_count = x->rec.arg_count;
	for (uint32_t i = 0; i < l.arg_count; i++) {
		l.args[i].bytes = x->rec.args[i].bytes;
		l.args[i].size = x->rec.args[i].size;
		if (!x->global[i])
			continue;
		memcpy(&l.args[i].ptr, x->rec.args[i].bytes, sizeof(void *));
		l.args[i].reach = device_reach(l.args[i].ptr);
	}
	x->emulate(&l);
}

void emulate_fault(struct emulate_launch *l, const char *format, ...)
{
	va_list ap;
	char text[200];

	if (l->faulted++)
		return;
	va_start(ap, format);
	vsnprintf(text, sizeof text, format, ap);
	va_end(ap);
	violate("kernel %s (%ux%ux%u groups of %ux%ux%u): %s", l->kernel,
		l->group_count[0], l->group_count[1], l->group_count[2],
		l->group_size[0], l->group_size[1], l->group_size[2], text);
}

static void run_cmd(const struct cmd *c)
{
	uint64_t start = device_clock;

	switch (c->kind) {
	case C_COPY:
		memmove(c->dst, c->src, c->size);
		device_clock += FAKEZE_TICKS;
		break;
	case C_LAUNCH:
		run_launch(c->exec);
		device_clock += FAKEZE_TICKS;
		break;
	case C_BARRIER:
		break;
	}
	signal_event(c->signal, start, device_clock);
}

static int ranges_overlap(const void *a, size_t an, const void *b, size_t bn)
{
	return (const char *)a < (const char *)b + bn &&
	       (const char *)b < (const char *)a + an;
}

/* Two copies of one segment may run at the same time: one writing what
 * the other reads or writes is a race, undefined whatever order the
 * driver picks. (Launches are not checked: what a kernel touches is not
 * known before it runs.) */
static void check_races(const struct cmd *cmds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			const struct cmd *a = &cmds[i], *b = &cmds[j];
			if (a->kind != C_COPY || b->kind != C_COPY)
				continue;
			if (ranges_overlap(a->dst, a->size, b->dst, b->size) ||
			    ranges_overlap(a->dst, a->size, b->src, b->size) ||
			    ranges_overlap(b->dst, b->size, a->src, a->size))
				violate("copies %p <- %p (%zu) and %p <- %p "
					"(%zu) race: no barrier between them",
					a->dst, a->src, a->size, b->dst, b->src,
					b->size);
		}
}

static uint64_t shuffle_state;

/* Runs |n| commands with no barrier between them, in the order
 * FAKEZE_ORDER picks: the specification lets them run in any order. */
static void run_segment(const struct cmd *cmds, size_t n)
{
	size_t order[64];

	check_races(cmds, n);
	for (size_t done = 0; done < n; done += 64) {
		size_t m = n - done < 64 ? n - done : 64;
		const struct cmd *part = cmds + (config.order == ORDER_REVERSE
							 ? n - done - m
							 : done);
		for (size_t i = 0; i < m; i++)
			order[i] = config.order == ORDER_REVERSE ? m - 1 - i : i;
		if (config.order == ORDER_SHUFFLE) {
			if (!shuffle_state)
				shuffle_state = config.seed;
			for (size_t i = m; i > 1; i--) {
				shuffle_state ^= shuffle_state << 13;
				shuffle_state ^= shuffle_state >> 7;
				shuffle_state ^= shuffle_state << 17;
				size_t k = shuffle_state % i, t = order[i - 1];
				order[i - 1] = order[k];
				order[k] = t;
			}
		}
		for (size_t i = 0; i < m; i++)
			run_cmd(&part[order[i]]);
	}
}

/* Where the segment holding command |k| of |e| ends: a barrier is a
 * segment of its own, else the next barrier or the end. */
static size_t segment_end(const struct engine *e, size_t k)
{
	if (e->cmds[k].kind == C_BARRIER)
		return k + 1;
	while (k < e->count && e->cmds[k].kind != C_BARRIER)
		k++;
	return k;
}

static int complete_signal(const struct event *ev, int run);

/* Are the events |c| waits on signalled? The work that signals them runs
 * now if it is pending on another engine (the device runs what a wait
 * needs); an event only the host signals stays as it is. */
static int waits_met(const struct cmd *c)
{
	for (uint32_t i = 0; i < c->wait_count; i++) {
		if (!c->waits[i]->signalled)
			complete_signal(c->waits[i], 1);
		if (!c->waits[i]->signalled)
			return 0;
	}
	return 1;
}

/* Completes the first |upto| commands of |e| (a segment boundary), or
 * those before a barrier whose events are not signalled yet; 1 when all
 * of them ran. An engine waiting (through another) on itself makes no
 * progress: a device would hang there. */
static int drain(struct engine *e, size_t upto)
{
	size_t i = 0;

	if (e->busy)
		return 0;
	e->busy = 1;
	while (i < upto && waits_met(&e->cmds[i])) {
		size_t j = segment_end(e, i);
		if (j > upto)
			j = upto;
		run_segment(e->cmds + i, j - i);
		i = j;
	}
	engine_drop(e, i);
	e->busy = 0;
	return i == upto;
}

/* Broadcast when an event may have become signalled or reachable: the
 * host signalled one, or new work was submitted. */
static pthread_cond_t host_signalled = PTHREAD_COND_INITIALIZER;

/* When a host wait of |timeout| ns from now gives up: FAKEZE_HANG_SECONDS
 * at most, so that a test which would hang fails instead. */
static struct timespec deadline_of(uint64_t timeout)
{
	struct timespec t;
	uint64_t limit = config.hang_seconds * UINT64_C(1000000000);

	clock_gettime(CLOCK_REALTIME, &t);
	if (timeout > limit)
		timeout = limit;
	t.tv_sec += (time_t)(timeout / 1000000000u);
	t.tv_nsec += (long)(timeout % 1000000000u);
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* Waits, the lock released, for another thread's zeEventHostSignal; 0
 * once |deadline| passed. */
static int await_host(const struct timespec *deadline)
{
	return pthread_cond_timedwait(&host_signalled, &lock, deadline) == 0;
}

/* Every engine with submitted work: the queues' and the immediate
 * lists'. */
static struct engine *engine_of(struct obj *o)
{
	if (o->kind == K_QUEUE)
		return &((struct queue *)o)->work;
	if (o->kind == K_LIST && ((struct list *)o)->immediate)
		return &((struct list *)o)->work;
	return NULL;
}

/* Runs the pending work up to the last command that signals |ev| (or,
 * without |run|, drops it unrun); 0 when no pending command signals it.
 * (The last: an earlier one is work a host left behind that a device
 * would have finished by now.) */
static int complete_signal(const struct event *ev, int run)
{
	for (struct obj *o = live.next; o != &live; o = o->next) {
		struct engine *e = engine_of(o);
		size_t last = SIZE_MAX;
		for (size_t k = 0; e && k < e->count; k++)
			if (e->cmds[k].signal == ev)
				last = k;
		if (last != SIZE_MAX) {
			if (!run)
				engine_drop(e, segment_end(e, last));
			else if (!drain(e, segment_end(e, last)))
				return 0;
			return 1;
		}
	}
	return 0;
}

/* Does |c| touch [lo, lo + size)? A launch, through any of its global
 * pointer arguments. */
static int cmd_touches(const struct cmd *c, const void *lo, size_t size)
{
	if (c->kind == C_COPY)
		return ranges_overlap(c->dst, c->size, lo, size) ||
		       ranges_overlap(c->src, c->size, lo, size);
	if (c->kind != C_LAUNCH)
		return 0;
	for (uint32_t i = 0; i < c->exec->rec.arg_count; i++) {
		void *p;
		if (!c->exec->global[i])
			continue;
		memcpy(&p, c->exec->rec.args[i].bytes, sizeof p);
		if (ranges_overlap(p, 1, lo, size))
			return 1;
	}
	return 0;
}

enum use { USE_MEMORY, USE_LIST, USE_EVENT, USE_KERNEL };

static int cmd_uses(const struct cmd *c, enum use use, const void *what,
		    size_t size)
{
	switch (use) {
	case USE_MEMORY:
		return cmd_touches(c, what, size);
	case USE_LIST:
		return c->from == what;
	case USE_EVENT:
		for (uint32_t i = 0; i < c->wait_count; i++)
			if (c->waits[i] == what)
				return 1;
		return c->signal == what;
	case USE_KERNEL:
		return c->kind == C_LAUNCH && (const void *)c->exec->kernel == what;
	}
	return 0;
}

/* The host is about to free or change |what|: pending work that still
 * uses it is a violation (the host did not synchronise first). That work
 * is then completed, so the driver itself never touches freed memory. */
static void settle(enum use use, const void *what, size_t size,
		   const char *who)
{
	for (struct obj *o = live.next; o != &live; o = o->next) {
		struct engine *e = engine_of(o);
		size_t last = SIZE_MAX;
		for (size_t k = 0; e && k < e->count; k++)
			if (cmd_uses(&e->cmds[k], use, what, size))
				last = k;
		if (last == SIZE_MAX)
			continue;
		violate("%s(%p): submitted work not yet complete still uses "
			"it (the host never synchronised with it)",
			who, what);
		/* What cannot run now (it waits on an event) is dropped,
		 * as a lost device would. */
		if (!drain(e, segment_end(e, last)))
			engine_drop(e, segment_end(e, last));
	}
}

/* Appends |c| to |l|: submits it at once on an immediate list. */
static ze_result_t append(struct list *l, struct cmd *c)
{
	ze_result_t r;

	c->owned = c->exec != NULL;
	if (l->immediate) {
		r = engine_push(&l->work, c);
		if (r == ZE_RESULT_SUCCESS && l->synchronous)
			drain(&l->work, l->work.count);
		pthread_cond_broadcast(&host_signalled);
	} else if (l->closed) {
		violate("append to a closed command list");
		r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
	} else {
		r = engine_push(&l->cmds, c);
	}
	if (r != ZE_RESULT_SUCCESS && c->owned)
		free(c->exec);
	return r;
}

/* The events an append waits on, checked, into |c|. */
static ze_result_t waits_of(struct cmd *c, uint32_t count,
			    ze_event_handle_t *events, const char *who)
{
	if (count > MAX_WAITS) {
		violate("%s: %u events (the test driver takes %d)", who, count,
			MAX_WAITS);
		return ZE_RESULT_ERROR_INVALID_SIZE;
	}
	if (count && !events)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	for (uint32_t i = 0; i < count; i++) {
		c->waits[i] = obj_get(events[i], K_EVENT, who);
		if (!c->waits[i])
			return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
	}
	c->wait_count = count;
	return ZE_RESULT_SUCCESS;
}

/* The signal event of an append, checked. */
static int signal_of(ze_event_handle_t h, const char *who, struct event **out)
{
	*out = NULL;
	if (!h)
		return 1;
	*out = obj_get(h, K_EVENT, who);
	return *out != NULL;
}

/*===----------------------------------------------------------------------===
 * Global, driver and device entry points
 *===----------------------------------------------------------------------===*/

static ze_result_t fz_zeInit(ze_init_flags_t flags)
{
	ENTER();
	read_config();
	device_count = 0;
	for (uint32_t i = 0; i < config.gpus; i++)
		devices[device_count++] = (struct fake_device){
			MAGIC, i, ZE_DEVICE_TYPE_GPU};
	if (config.vpu)
		devices[device_count++] = (struct fake_device){
			MAGIC, device_count, ZE_DEVICE_TYPE_VPU};
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeDriverGet(uint32_t *count, ze_driver_handle_t *drivers)
{
	ENTER();
	if (*count && drivers)
		drivers[0] = (ze_driver_handle_t)&the_driver;
	*count = 1;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeDriverGetApiVersion(ze_driver_handle_t driver,
					 ze_api_version_t *version)
{
	ENTER();
	*version = ZE_API_VERSION_1_4;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeDeviceGet(ze_driver_handle_t driver, uint32_t *count,
			       ze_device_handle_t *out)
{
	ENTER();
	if ((void *)driver != &the_driver) {
		violate("zeDeviceGet: %p is not the driver", (void *)driver);
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	}
	if (*count == 0 || !out) {
		*count = device_count;
		return leave(ZE_RESULT_SUCCESS);
	}
	if (*count > device_count)
		*count = device_count;
	for (uint32_t i = 0; i < *count; i++)
		out[i] = (ze_device_handle_t)&devices[i];
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeDeviceGetProperties(ze_device_handle_t h,
					 ze_device_properties_t *p)
{
	ENTER();
	struct fake_device *d = device_of(h, WHO);
	if (!d)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	int v12 = p->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2;
	if (!v12 && p->stype != ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES)
		violate("zeDeviceGetProperties: stype 0x%x", (unsigned)p->stype);
	ze_structure_type_t stype = p->stype;
	void *next = p->pNext;
	memset(p, 0, sizeof *p);
	p->stype = stype;
	p->pNext = next;
	p->type = d->type;
	p->vendorId = 0x8086;
	p->deviceId = 0xfa4e;
	p->flags = config.integrated ? ZE_DEVICE_PROPERTY_FLAG_INTEGRATED : 0;
	p->coreClockRate = 1000;
	p->maxMemAllocSize = config.memory;
	p->numThreadsPerEU = 8;
	p->physicalEUSimdWidth = 8;
	p->numEUsPerSubslice = 8;
	p->numSubslicesPerSlice = 4;
	p->numSlices = 1;
	/* 1.2 units: ticks per second; before: nanoseconds per tick. */
	p->timerResolution = v12 ? FAKEZE_HZ : 1000000000u / FAKEZE_HZ;
	p->timestampValidBits = 36;
	p->kernelTimestampValidBits = FAKEZE_TIMESTAMP_BITS;
	snprintf(p->name, sizeof p->name, "wafer test %s %u (host memory)",
		 d->type == ZE_DEVICE_TYPE_GPU ? "GPU" : "VPU", d->index);
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeDeviceGetComputeProperties(ze_device_handle_t h,
						ze_device_compute_properties_t *p)
{
	ENTER();
	if (!device_of(h, WHO))
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	p->maxTotalGroupSize = 1024;
	p->maxGroupSizeX = 1024;
	p->maxGroupSizeY = 1024;
	p->maxGroupSizeZ = 64;
	p->maxGroupCountX = config.max_groups;
	p->maxGroupCountY = config.max_groups;
	p->maxGroupCountZ = config.max_groups;
	p->maxSharedLocalMemory = 64 << 10;
	p->numSubGroupSizes = 2;
	p->subGroupSizes[0] = 8;
	p->subGroupSizes[1] = 16;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeDeviceGetModuleProperties(ze_device_handle_t h,
					       ze_device_module_properties_t *p)
{
	ENTER();
	if (!device_of(h, WHO))
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	p->spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
	p->flags = ZE_DEVICE_MODULE_FLAG_FP16; /* no fp64, like many GPUs */
	p->maxArgumentsSize = 2048;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeDeviceGetMemoryProperties(ze_device_handle_t h,
					       uint32_t *count,
					       ze_device_memory_properties_t *p)
{
	ENTER();
	if (!device_of(h, WHO))
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (*count && p) {
		p[0].totalSize = config.memory;
		snprintf(p[0].name, sizeof p[0].name, "host");
	}
	*count = 1;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t
fz_zeDeviceGetCommandQueueGroupProperties(ze_device_handle_t h, uint32_t *count,
				       ze_command_queue_group_properties_t *p)
{
	ENTER();
	if (!device_of(h, WHO))
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (*count && p) {
		/* A copy engine first, so a plugin must look for compute. */
		p[0].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
		p[0].numQueues = 1;
		if (*count > 1) {
			p[1].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE |
				     ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
			p[1].numQueues = 1;
		}
		*count = *count > 2 ? 2 : *count;
		return leave(ZE_RESULT_SUCCESS);
	}
	*count = 2;
	return leave(ZE_RESULT_SUCCESS);
}

/*===----------------------------------------------------------------------===
 * Contexts, queues, lists
 *===----------------------------------------------------------------------===*/

static ze_result_t fz_zeContextCreate(ze_driver_handle_t driver,
				   const ze_context_desc_t *desc,
				   ze_context_handle_t *out)
{
	ENTER();
	if ((void *)driver != &the_driver) {
		violate("zeContextCreate: %p is not the driver", (void *)driver);
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	}
	struct context *c = obj_new(K_CONTEXT, sizeof *c);
	if (!c)
		return leave(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	*out = (ze_context_handle_t)c;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeContextDestroy(ze_context_handle_t h)
{
	ENTER();
	struct context *c = obj_get(h, K_CONTEXT, WHO);
	if (!c)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	for (struct alloc *a = allocs; a; a = a->next)
		if (a->context == c)
			violate("zeContextDestroy: %zu-byte allocation at %p "
				"still alive",
				a->size, (void *)a->ptr);
	for (struct reservation *r = reservations; r; r = r->next)
		if (r->context == c)
			violate("zeContextDestroy: reservation at %p still "
				"alive",
				(void *)r->base);
	obj_free(c);
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeCommandQueueCreate(ze_context_handle_t hc,
					ze_device_handle_t hd,
					const ze_command_queue_desc_t *desc,
					ze_command_queue_handle_t *out)
{
	ENTER();
	struct context *c = obj_get(hc, K_CONTEXT, WHO);
	if (!c || !device_of(hd, WHO))
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (desc->ordinal > COMPUTE_ORDINAL)
		return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	struct queue *q = obj_new(K_QUEUE, sizeof *q);
	if (!q)
		return leave(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	q->context = c;
	q->ordinal = desc->ordinal;
	*out = (ze_command_queue_handle_t)q;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeCommandQueueDestroy(ze_command_queue_handle_t h)
{
	ENTER();
	struct queue *q = obj_get(h, K_QUEUE, WHO);
	if (!q)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (q->work.count) {
		violate("zeCommandQueueDestroy: %zu submitted commands not yet "
			"complete (the host never synchronised with them)",
			q->work.count);
		drain(&q->work, q->work.count);
	}
	engine_free(&q->work);
	obj_free(q);
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeCommandQueueExecuteCommandLists(
	ze_command_queue_handle_t h, uint32_t n, ze_command_list_handle_t *lists,
	ze_fence_handle_t fence)
{
	ENTER();
	struct queue *q = obj_get(h, K_QUEUE, WHO);
	if (!q)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	for (uint32_t i = 0; i < n; i++) {
		struct list *l = obj_get(lists[i], K_LIST, WHO);
		if (!l)
			return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
		if (l->immediate || !l->closed || l->ordinal != q->ordinal) {
			violate("zeCommandQueueExecuteCommandLists: list is "
				"immediate, not closed, or of another group");
			return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
		}
	}
	/* Submitted, not run: the commands run when the host synchronises.
	 * Lists of one call may overlap too: a segment runs on from one
	 * list into the next. */
	for (uint32_t i = 0; i < n; i++) {
		struct list *l = (struct list *)lists[i];
		for (size_t k = 0; k < l->cmds.count; k++) {
			struct cmd c = l->cmds.cmds[k];
			c.owned = 0;
			c.from = l;
			ze_result_t r = engine_push(&q->work, &c);
			if (r != ZE_RESULT_SUCCESS)
				return leave(r);
		}
	}
	pthread_cond_broadcast(&host_signalled);
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeCommandQueueSynchronize(ze_command_queue_handle_t h,
					     uint64_t timeout)
{
	ze_result_t injected = enter(WHO);
	struct queue *q = obj_get(h, K_QUEUE, WHO);
	if (!q)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (injected != ZE_RESULT_SUCCESS) {
		/* As a lost device: what was submitted never runs. */
		engine_drop(&q->work, q->work.count);
		return leave(injected);
	}
	struct timespec deadline = deadline_of(timeout);
	while (!drain(&q->work, q->work.count))
		if (!timeout || !await_host(&deadline)) {
			if (timeout == UINT64_MAX)
				violate("zeCommandQueueSynchronize: waits "
					"forever (a barrier waits on an event "
					"nothing signals)");
			return leave(ZE_RESULT_NOT_READY);
		}
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t new_list(ze_context_handle_t hc, ze_device_handle_t hd,
			    uint32_t ordinal, int immediate, int synchronous,
			    ze_command_list_handle_t *out, const char *who)
{
	struct context *c = obj_get(hc, K_CONTEXT, who);
	struct fake_device *d = device_of(hd, who);

	if (!c || !d)
		return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
	if (ordinal > COMPUTE_ORDINAL) {
		violate("%s: ordinal %u", who, ordinal);
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	}
	struct list *l = obj_new(K_LIST, sizeof *l);
	if (!l)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	l->context = c;
	l->device = d;
	l->ordinal = ordinal;
	l->immediate = immediate;
	l->synchronous = synchronous;
	*out = (ze_command_list_handle_t)l;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t fz_zeCommandListCreate(ze_context_handle_t hc,
				       ze_device_handle_t hd,
				       const ze_command_list_desc_t *desc,
				       ze_command_list_handle_t *out)
{
	ENTER();
	return leave(new_list(hc, hd, desc->commandQueueGroupOrdinal, 0, 0,
			      out, WHO));
}

static ze_result_t fz_zeCommandListCreateImmediate(
	ze_context_handle_t hc, ze_device_handle_t hd,
	const ze_command_queue_desc_t *desc, ze_command_list_handle_t *out)
{
	ENTER();
	if (config.no_immediate)
		return leave(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
	return leave(new_list(hc, hd, desc->ordinal, 1,
			      desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS,
			      out, WHO));
}

static ze_result_t fz_zeCommandListDestroy(ze_command_list_handle_t h)
{
	ENTER();
	struct list *l = obj_get(h, K_LIST, WHO);
	if (!l)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	settle(USE_LIST, l, 0, WHO);
	if (l->work.count) {
		violate("zeCommandListDestroy: %zu commands of the immediate "
			"list not yet complete (the host never synchronised "
			"with them)",
			l->work.count);
		drain(&l->work, l->work.count);
	}
	engine_free(&l->cmds);
	engine_free(&l->work);
	obj_free(l);
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeCommandListClose(ze_command_list_handle_t h)
{
	ENTER();
	struct list *l = obj_get(h, K_LIST, WHO);
	if (!l)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (l->immediate)
		violate("zeCommandListClose on an immediate list");
	l->closed = 1;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeCommandListReset(ze_command_list_handle_t h)
{
	ENTER();
	struct list *l = obj_get(h, K_LIST, WHO);
	if (!l)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (l->immediate)
		violate("zeCommandListReset on an immediate list");
	settle(USE_LIST, l, 0, WHO);
	l->closed = 0;
	engine_drop(&l->cmds, l->cmds.count);
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeCommandListAppendBarrier(ze_command_list_handle_t h,
					      ze_event_handle_t signal,
					      uint32_t wait_count,
					      ze_event_handle_t *waits)
{
	ENTER();
	struct list *l = obj_get(h, K_LIST, WHO);
	struct cmd c = {.kind = C_BARRIER};
	if (!l || !signal_of(signal, WHO, &c.signal))
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	ze_result_t r = waits_of(&c, wait_count, waits, WHO);
	return leave(r == ZE_RESULT_SUCCESS ? append(l, &c) : r);
}

/* Modelled as a barrier that waits: stricter than the specification
 * (which orders only what follows), never looser. */
static ze_result_t fz_zeCommandListAppendWaitOnEvents(ze_command_list_handle_t h,
						   uint32_t count,
						   ze_event_handle_t *events)
{
	ENTER();
	struct list *l = obj_get(h, K_LIST, WHO);
	struct cmd c = {.kind = C_BARRIER};
	if (!l)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (!count)
		violate("zeCommandListAppendWaitOnEvents: no events");
	ze_result_t r = waits_of(&c, count, events, WHO);
	return leave(r == ZE_RESULT_SUCCESS ? append(l, &c) : r);
}

static ze_result_t fz_zeCommandListAppendMemoryCopy(ze_command_list_handle_t h,
						 void *dst, const void *src,
						 size_t size,
						 ze_event_handle_t signal,
						 uint32_t wait_count,
						 ze_event_handle_t *waits)
{
	ENTER();
	struct list *l = obj_get(h, K_LIST, WHO);
	struct cmd c = {.kind = C_COPY, .dst = dst, .src = src, .size = size};
	if (!l || !signal_of(signal, WHO, &c.signal))
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (!device_accessible(dst, size) || !device_accessible(src, size)) {
		violate("zeCommandListAppendMemoryCopy(%p <- %p, %zu): memory "
			"the device cannot reach (pageable, freed, unmapped "
			"or out of bounds)",
			dst, src, size);
		return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	}
	if ((const char *)dst < (const char *)src + size &&
	    (const char *)src < (const char *)dst + size) {
		violate("zeCommandListAppendMemoryCopy(%p <- %p, %zu): "
			"overlapping regions",
			dst, src, size);
		return leave(ZE_RESULT_ERROR_OVERLAPPING_REGIONS);
	}
	return leave(append(l, &c));
}

/*===----------------------------------------------------------------------===
 * Events
 *===----------------------------------------------------------------------===*/

static ze_result_t fz_zeEventPoolCreate(ze_context_handle_t hc,
				     const ze_event_pool_desc_t *desc,
				     uint32_t device_count_,
				     ze_device_handle_t *devs,
				     ze_event_pool_handle_t *out)
{
	ENTER();
	struct context *c = obj_get(hc, K_CONTEXT, WHO);
	if (!c)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (desc->count == 0)
		return leave(ZE_RESULT_ERROR_INVALID_SIZE);
	struct pool *p = obj_new(K_POOL, sizeof *p);
	if (!p)
		return leave(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	p->context = c;
	p->flags = desc->flags;
	p->count = desc->count;
	*out = (ze_event_pool_handle_t)p;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeEventPoolDestroy(ze_event_pool_handle_t h)
{
	ENTER();
	struct pool *p = obj_get(h, K_POOL, WHO);
	if (!p)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (p->events)
		violate("zeEventPoolDestroy: %u events still alive", p->events);
	obj_free(p);
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeEventCreate(ze_event_pool_handle_t hp,
				 const ze_event_desc_t *desc,
				 ze_event_handle_t *out)
{
	ENTER();
	struct pool *p = obj_get(hp, K_POOL, WHO);
	if (!p)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (desc->index >= p->count) {
		violate("zeEventCreate: index %u of a pool of %u", desc->index,
			p->count);
		return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	}
	struct event *e = obj_new(K_EVENT, sizeof *e);
	if (!e)
		return leave(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	e->pool = p;
	e->index = desc->index;
	p->events++;
	*out = (ze_event_handle_t)e;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeEventDestroy(ze_event_handle_t h)
{
	ENTER();
	struct event *e = obj_get(h, K_EVENT, WHO);
	if (!e)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	settle(USE_EVENT, e, 0, WHO);
	e->pool->events--;
	obj_free(e);
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeEventHostSynchronize(ze_event_handle_t h, uint64_t timeout)
{
	ze_result_t injected = enter(WHO);
	struct event *e = obj_get(h, K_EVENT, WHO);
	if (!e)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (injected != ZE_RESULT_SUCCESS) {
		/* As a lost device: what the host waited for never runs. */
		complete_signal(e, 0);
		return leave(injected);
	}
	/* The device finishes what signals the event while the host
	 * waits (any timeout: this device is never slow), unless that work
	 * waits for the host itself (zeEventHostSignal on another thread). */
	struct timespec deadline = deadline_of(timeout);
	while (!e->signalled) {
		complete_signal(e, 1);
		if (e->signalled)
			break;
		if (!timeout || !await_host(&deadline)) {
			if (timeout == UINT64_MAX)
				violate("zeEventHostSynchronize: waits forever "
					"for an event nothing will signal");
			return leave(ZE_RESULT_NOT_READY);
		}
	}
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeEventHostSignal(ze_event_handle_t h)
{
	ENTER();
	struct event *e = obj_get(h, K_EVENT, WHO);
	if (!e)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	signal_event(e, device_clock, device_clock);
	pthread_cond_broadcast(&host_signalled);
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeEventHostReset(ze_event_handle_t h)
{
	ENTER();
	struct event *e = obj_get(h, K_EVENT, WHO);
	if (!e)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	e->signalled = 0;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeEventQueryStatus(ze_event_handle_t h)
{
	ENTER();
	struct event *e = obj_get(h, K_EVENT, WHO);
	if (!e)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	/* A host polling the event sees the device finish it. */
	if (!e->signalled)
		complete_signal(e, 1);
	return leave(e->signalled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY);
}

static ze_result_t fz_zeEventQueryKernelTimestamp(ze_event_handle_t h,
					       ze_kernel_timestamp_result_t *out)
{
	ENTER();
	struct event *e = obj_get(h, K_EVENT, WHO);
	if (!e)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (!(e->pool->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP)) {
		violate("zeEventQueryKernelTimestamp: the pool has no "
			"ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP");
		return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	}
	if (!e->signalled)
		return leave(ZE_RESULT_NOT_READY);
	out->global.kernelStart = out->context.kernelStart = e->start;
	out->global.kernelEnd = out->context.kernelEnd = e->end;
	return leave(ZE_RESULT_SUCCESS);
}

/*===----------------------------------------------------------------------===
 * Memory entry points
 *===----------------------------------------------------------------------===*/

static ze_result_t new_alloc(enum alloc_kind kind, ze_context_handle_t hc,
			     struct fake_device *device, size_t size,
			     size_t alignment, void **out, const char *who)
{
	struct context *c = obj_get(hc, K_CONTEXT, who);
	struct alloc *a;
	void *p = NULL;

	*out = NULL;
	if (!c)
		return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
	if (size == 0)
		return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
	if (alignment & (alignment - 1))
		return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
	if (kind == A_DEVICE && size > config.memory - device_use())
		return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
	if (alignment < 64)
		alignment = 64;
	a = malloc(sizeof *a);
	if (!a || posix_memalign(&p, alignment, size) != 0) {
		free(a);
		return kind == A_DEVICE ? ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY
					: ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	}
	memset(p, kind == A_DEVICE ? 0xa5 : 0x5a, size);
	*a = (struct alloc){kind, c, p, size, allocs, device};
	allocs = a;
	if (kind == A_DEVICE)
		device_bytes += size;
	else
		host_bytes += size;
	*out = p;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t fz_zeMemAllocDevice(ze_context_handle_t hc,
				    const ze_device_mem_alloc_desc_t *desc,
				    size_t size, size_t alignment,
				    ze_device_handle_t hd, void **out)
{
	ENTER();
	struct fake_device *d = device_of(hd, WHO);
	if (!d)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	return leave(new_alloc(A_DEVICE, hc, d, size, alignment, out, WHO));
}

static ze_result_t fz_zeMemAllocHost(ze_context_handle_t hc,
				  const ze_host_mem_alloc_desc_t *desc,
				  size_t size, size_t alignment, void **out)
{
	ENTER();
	return leave(new_alloc(A_HOST, hc, NULL, size, alignment, out, WHO));
}

/* As a driver answers it: device or host memory of this context (an
 * allocation, or a mapped page of a reservation: device memory of its
 * physical object's device); anything else, another context's memory
 * included, is ZE_MEMORY_TYPE_UNKNOWN with no device, and still
 * ZE_RESULT_SUCCESS. */
static ze_result_t fz_zeMemGetAllocProperties(
	ze_context_handle_t hc, const void *ptr,
	ze_memory_allocation_properties_t *props, ze_device_handle_t *hd)
{
	ENTER();
	struct context *c = obj_get(hc, K_CONTEXT, WHO);
	if (!c)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (!props)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
	struct fake_device *device = NULL;
	ze_memory_type_t type = ZE_MEMORY_TYPE_UNKNOWN;
	struct alloc *a = find_alloc(ptr, 1);
	struct reservation *r = a ? NULL : find_reservation(ptr);
	if (a && a->context == c) {
		type = a->kind == A_DEVICE ? ZE_MEMORY_TYPE_DEVICE
					   : ZE_MEMORY_TYPE_HOST;
		device = a->device;
		props->id = (uint64_t)(uintptr_t)a->ptr;
		props->pageSize = 0;
	} else if (r && r->context == c) {
		struct phys *page =
			r->pages[((const char *)ptr - r->base) / config.page];
		if (page) {
			type = ZE_MEMORY_TYPE_DEVICE;
			device = page->device;
			props->id = (uint64_t)(uintptr_t)r->base;
			props->pageSize = config.page;
		}
	}
	props->type = type;
	if (hd)
		*hd = (ze_device_handle_t)device;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeMemFree(ze_context_handle_t hc, void *ptr)
{
	ENTER();
	if (!obj_get(hc, K_CONTEXT, WHO))
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	for (struct alloc **p = &allocs; *p; p = &(*p)->next) {
		struct alloc *a = *p;
		if (a->ptr != ptr)
			continue;
		settle(USE_MEMORY, a->ptr, a->size, WHO);
		*p = a->next;
		if (a->kind == A_DEVICE)
			device_bytes -= a->size;
		else
			host_bytes -= a->size;
		free(a->ptr);
		free(a);
		return leave(ZE_RESULT_SUCCESS);
	}
	violate("zeMemFree(%p): not an allocation", ptr);
	return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
}

/*===----------------------------------------------------------------------===
 * Virtual memory
 *===----------------------------------------------------------------------===*/

static ze_result_t fz_zeVirtualMemQueryPageSize(ze_context_handle_t hc,
					     ze_device_handle_t hd, size_t size,
					     size_t *pagesize)
{
	ENTER();
	if (!obj_get(hc, K_CONTEXT, WHO) || !device_of(hd, WHO))
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (config.no_vm)
		return leave(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
	*pagesize = config.page;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeVirtualMemReserve(ze_context_handle_t hc,
				       const void *start, size_t size,
				       void **out)
{
	ENTER();
	struct context *c = obj_get(hc, K_CONTEXT, WHO);
	if (!c)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (config.no_vm)
		return leave(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
	if (size == 0 || size % config.page)
		return leave(ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
	/* Over-reserve to place the range on a page boundary. */
	size_t span = size + config.page;
	char *raw = mmap(NULL, span, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return leave(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	char *base = (char *)(((uintptr_t)raw + config.page - 1) &
			      ~(uintptr_t)(config.page - 1));
	if (base > raw)
		munmap(raw, base - raw);
	if (raw + span > base + size)
		munmap(base + size, raw + span - (base + size));
	struct reservation *r = calloc(1, sizeof *r);
	if (r)
		r->pages = calloc(size / config.page, sizeof *r->pages);
	if (!r || !r->pages) {
		free(r);
		munmap(base, size);
		return leave(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	}
	r->context = c;
	r->base = base;
	r->size = size;
	r->next = reservations;
	reservations = r;
	reserved_bytes += size;
	*out = base;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeVirtualMemFree(ze_context_handle_t hc, const void *ptr,
				    size_t size)
{
	ENTER();
	if (!obj_get(hc, K_CONTEXT, WHO))
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	for (struct reservation **p = &reservations; *p; p = &(*p)->next) {
		struct reservation *r = *p;
		if (r->base != ptr)
			continue;
		if (r->size != size) {
			violate("zeVirtualMemFree(%p, %zu): reserved %zu", ptr,
				size, r->size);
			return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
		}
		for (size_t i = 0; i < size / config.page; i++)
			if (r->pages[i]) {
				violate("zeVirtualMemFree(%p): page %zu still "
					"mapped",
					ptr, i);
				return leave(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
			}
		*p = r->next;
		munmap(r->base, r->size);
		reserved_bytes -= r->size;
		free(r->pages);
		free(r);
		return leave(ZE_RESULT_SUCCESS);
	}
	violate("zeVirtualMemFree(%p): not a reservation", ptr);
	return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
}

static ze_result_t fz_zePhysicalMemCreate(ze_context_handle_t hc,
				       ze_device_handle_t hd,
				       ze_physical_mem_desc_t *desc,
				       ze_physical_mem_handle_t *out)
{
	ENTER();
	struct context *c = obj_get(hc, K_CONTEXT, WHO);
	struct fake_device *d = c ? device_of(hd, WHO) : NULL;
	if (!c || !d)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (desc->size == 0 || desc->size % config.page)
		return leave(ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
	if (desc->size > config.memory - device_use())
		return leave(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
	int fd = memfd_create("fakeze-physical", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)desc->size) != 0) {
		if (fd >= 0)
			close(fd);
		return leave(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
	}
	struct phys *p = obj_new(K_PHYS, sizeof *p);
	if (!p) {
		close(fd);
		return leave(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	}
	p->context = c;
	p->device = d;
	p->fd = fd;
	p->size = desc->size;
	physical_bytes += desc->size;
	*out = (ze_physical_mem_handle_t)p;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zePhysicalMemDestroy(ze_context_handle_t hc,
					ze_physical_mem_handle_t h)
{
	ENTER();
	struct phys *p = obj_get(h, K_PHYS, WHO);
	if (!obj_get(hc, K_CONTEXT, WHO) || !p)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (p->mapped_pages) {
		violate("zePhysicalMemDestroy: %zu pages still mapped",
			p->mapped_pages);
		return leave(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
	}
	close(p->fd);
	physical_bytes -= p->size;
	obj_free(p);
	return leave(ZE_RESULT_SUCCESS);
}

/* The reservation holding [ptr, ptr + size), page-aligned, or NULL after
 * a violation. */
static struct reservation *vm_span(const void *ptr, size_t size,
				   const char *who)
{
	struct reservation *r = find_reservation(ptr);

	if (!r || size == 0 ||
	    size > (size_t)(r->base + r->size - (const char *)ptr) ||
	    ((const char *)ptr - r->base) % config.page || size % config.page) {
		violate("%s(%p, %zu): not a page-aligned part of a "
			"reservation",
			who, ptr, size);
		return NULL;
	}
	return r;
}

static ze_result_t fz_zeVirtualMemMap(ze_context_handle_t hc, const void *ptr,
				   size_t size, ze_physical_mem_handle_t hp,
				   size_t offset,
				   ze_memory_access_attribute_t access)
{
	ENTER();
	struct phys *p = obj_get(hp, K_PHYS, WHO);
	struct reservation *r = vm_span(ptr, size, WHO);
	if (!obj_get(hc, K_CONTEXT, WHO) || !p || !r)
		return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	if (offset % config.page || offset > p->size ||
	    size > p->size - offset) {
		violate("zeVirtualMemMap: [%zu, +%zu) of a %zu-byte physical "
			"object",
			offset, size, p->size);
		return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	}
	size_t first = ((const char *)ptr - r->base) / config.page;
	for (size_t i = first; i < first + size / config.page; i++)
		if (r->pages[i]) {
			violate("zeVirtualMemMap(%p, %zu): page %zu already "
				"mapped",
				ptr, size, i);
			return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
		}
	int prot = access == ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE
			   ? PROT_READ | PROT_WRITE
		   : access == ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY ? PROT_READ
								   : PROT_NONE;
	if (mmap((void *)ptr, size, prot, MAP_SHARED | MAP_FIXED, p->fd,
		 (off_t)offset) == MAP_FAILED)
		return leave(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	for (size_t i = first; i < first + size / config.page; i++)
		r->pages[i] = p;
	p->mapped_pages += size / config.page;
	mapped_bytes += size;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeVirtualMemUnmap(ze_context_handle_t hc, const void *ptr,
				     size_t size)
{
	ENTER();
	struct reservation *r = vm_span(ptr, size, WHO);
	if (!obj_get(hc, K_CONTEXT, WHO) || !r)
		return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	size_t first = ((const char *)ptr - r->base) / config.page;
	for (size_t i = first; i < first + size / config.page; i++)
		if (!r->pages[i]) {
			violate("zeVirtualMemUnmap(%p, %zu): page %zu is not "
				"mapped",
				ptr, size, i);
			return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
		}
	settle(USE_MEMORY, ptr, size, WHO);
	if (mmap((void *)ptr, size, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
		 0) == MAP_FAILED)
		return leave(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	for (size_t i = first; i < first + size / config.page; i++) {
		r->pages[i]->mapped_pages--;
		r->pages[i] = NULL;
	}
	mapped_bytes -= size;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t
fz_zeVirtualMemSetAccessAttribute(ze_context_handle_t hc, const void *ptr,
			       size_t size, ze_memory_access_attribute_t access)
{
	ENTER();
	struct reservation *r = vm_span(ptr, size, WHO);
	if (!obj_get(hc, K_CONTEXT, WHO) || !r)
		return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	if (!device_accessible(ptr, size)) {
		violate("zeVirtualMemSetAccessAttribute(%p, %zu): not mapped",
			ptr, size);
		return leave(ZE_RESULT_ERROR_INVALID_ARGUMENT);
	}
	mprotect((void *)ptr, size,
		 access == ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE
			 ? PROT_READ | PROT_WRITE
		 : access == ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY ? PROT_READ
								 : PROT_NONE);
	return leave(ZE_RESULT_SUCCESS);
}

/*===----------------------------------------------------------------------===
 * Modules and kernels
 *===----------------------------------------------------------------------===*/

static ze_result_t new_log(ze_module_build_log_handle_t *out, const char *text)
{
	if (!out)
		return ZE_RESULT_SUCCESS;
	struct build_log *log = obj_new(K_LOG, sizeof *log);
	*out = (ze_module_build_log_handle_t)log;
	if (!log)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	snprintf(log->text, sizeof log->text, "%s", text);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t fz_zeModuleCreate(ze_context_handle_t hc, ze_device_handle_t hd,
				  const ze_module_desc_t *desc,
				  ze_module_handle_t *out,
				  ze_module_build_log_handle_t *log)
{
	ENTER();
	struct context *c = obj_get(hc, K_CONTEXT, WHO);
	char why[200] = "";
	if (log)
		*log = NULL;
	if (!c || !device_of(hd, WHO))
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	const void *code = desc->pInputModule;
	size_t code_size = desc->inputSize;
	if (desc->format == ZE_MODULE_FORMAT_NATIVE &&
	    !fakeze_native_unwrap(&code, &code_size)) {
		new_log(log, "error: not a native binary of this driver");
		return leave(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY);
	}
	if (desc->format != ZE_MODULE_FORMAT_IL_SPIRV &&
	    desc->format != ZE_MODULE_FORMAT_NATIVE) {
		violate("zeModuleCreate: format %d", (int)desc->format);
		return leave(ZE_RESULT_ERROR_INVALID_ENUMERATION);
	}
	const char *flags = desc->pBuildFlags ? desc->pBuildFlags : "";
	if (config.build_fail == 1 || (config.build_fail == 2 && *flags)) {
		char text[200];
		snprintf(text, sizeof text,
			 "error: the test driver was told to fail "
			 "(FAKEZE_BUILD_FAIL; flags '%s')",
			 flags);
		new_log(log, text);
		return leave(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
	}
	snprintf(last_build_flags, sizeof last_build_flags, "%s", flags);
	struct module *m = obj_new(K_MODULE, sizeof *m);
	if (!m)
		return leave(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	if (spv_parse(code, code_size, &m->spv, why, sizeof why) != 0 ||
	    m->spv.version > 0x00010200u) {
		char text[256];
		snprintf(text, sizeof text, "error: %s",
			 why[0] ? why : "SPIR-V version above 1.2");
		violate("zeModuleCreate: %s", text);
		spv_free(&m->spv);
		obj_free(m);
		new_log(log, text);
		return leave(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
	}
	m->context = c;
	m->native = fakeze_native_wrap(code, code_size, &m->native_size);
	new_log(log, "");
	*out = (ze_module_handle_t)m;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeModuleDestroy(ze_module_handle_t h)
{
	ENTER();
	struct module *m = obj_get(h, K_MODULE, WHO);
	if (!m)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (m->kernels)
		violate("zeModuleDestroy: %u kernels still alive", m->kernels);
	spv_free(&m->spv);
	free(m->native);
	obj_free(m);
	return leave(ZE_RESULT_SUCCESS);
}

/* For the programs of t/api/programs.c (program.h). */
static ze_result_t fz_zeModuleGetNativeBinary(ze_module_handle_t h,
					      size_t *size, uint8_t *binary)
{
	ENTER();
	struct module *m = obj_get(h, K_MODULE, WHO);
	if (!m || !size)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (!m->native)
		return leave(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	if (binary && *size >= m->native_size)
		memcpy(binary, m->native, m->native_size);
	*size = m->native_size;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeModuleGetKernelNames(ze_module_handle_t h,
					     uint32_t *count,
					     const char **names)
{
	ENTER();
	struct module *m = obj_get(h, K_MODULE, WHO);
	if (!m || !count)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	for (uint32_t i = 0; names && i < *count && i < m->spv.kernel_count;
	     i++)
		names[i] = m->spv.kernels[i].name;
	*count = m->spv.kernel_count;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeModuleBuildLogDestroy(ze_module_build_log_handle_t h)
{
	ENTER();
	struct build_log *log = obj_get(h, K_LOG, WHO);
	if (!log)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	obj_free(log);
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeModuleBuildLogGetString(ze_module_build_log_handle_t h,
					     size_t *size, char *text)
{
	ENTER();
	struct build_log *log = obj_get(h, K_LOG, WHO);
	if (!log)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	size_t need = strlen(log->text) + 1;
	if (text && *size >= need)
		memcpy(text, log->text, need);
	*size = need;
	return leave(ZE_RESULT_SUCCESS);
}

/* Every table of emulated kernels (emulate.h). */
static const struct emulate_kernel *const emulate_tables[] = {
	emulate_plugin_kernels,
	emulate_program_kernels,
};

emulate_fn *emulate_find(const char *name)
{
	for (size_t t = 0; t < sizeof emulate_tables / sizeof *emulate_tables;
	     t++)
		for (const struct emulate_kernel *k = emulate_tables[t]; k->name;
		     k++)
			if (strcmp(k->name, name) == 0)
				return k->run;
	return NULL;
}

static ze_result_t fz_zeKernelCreate(ze_module_handle_t hm,
				  const ze_kernel_desc_t *desc,
				  ze_kernel_handle_t *out)
{
	ENTER();
	struct module *m = obj_get(hm, K_MODULE, WHO);
	if (!m)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	const struct spv_kernel *spv = spv_find(&m->spv, desc->pKernelName);
	if (!spv) {
		violate("zeKernelCreate: no kernel '%s' in the module",
			desc->pKernelName);
		return leave(ZE_RESULT_ERROR_INVALID_KERNEL_NAME);
	}
	/* A kernel runs by emulation: one the driver cannot run is refused
	 * as if the module lacked it. */
	emulate_fn *emulate = emulate_find(spv->name);
	if (!emulate) {
		violate("zeKernelCreate: kernel '%s' has no emulation in the "
			"test driver (t/standins/levelzero/emulate.h)",
			desc->pKernelName);
		return leave(ZE_RESULT_ERROR_INVALID_KERNEL_NAME);
	}
	struct kernel *k = obj_new(K_KERNEL, sizeof *k);
	if (!k)
		return leave(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
	k->module = m;
	k->spv = spv;
	k->emulate = emulate;
	m->kernels++;
	*out = (ze_kernel_handle_t)k;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeKernelDestroy(ze_kernel_handle_t h)
{
	ENTER();
	struct kernel *k = obj_get(h, K_KERNEL, WHO);
	if (!k)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	settle(USE_KERNEL, k, 0, WHO);
	k->module->kernels--;
	obj_free(k);
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeKernelSetGroupSize(ze_kernel_handle_t h, uint32_t x,
					uint32_t y, uint32_t z)
{
	ENTER();
	struct kernel *k = obj_get(h, K_KERNEL, WHO);
	if (!k)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	const uint32_t *want = k->spv->local_size;
	if (!x || !y || !z || x > 1024 || y > 1024 || z > 64 ||
	    (uint64_t)x * y * z > 1024) {
		violate("zeKernelSetGroupSize(%s, %u, %u, %u): beyond the "
			"device's limits",
			k->spv->name, x, y, z);
		return leave(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
	}
	if (want[0] && (want[0] != x || want[1] != y || want[2] != z)) {
		violate("zeKernelSetGroupSize(%s, %u, %u, %u): the kernel "
			"requires %u x %u x %u",
			k->spv->name, x, y, z, want[0], want[1], want[2]);
		return leave(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
	}
	k->group_size[0] = x;
	k->group_size[1] = y;
	k->group_size[2] = z;
	k->group_size_set = 1;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeKernelSetArgumentValue(ze_kernel_handle_t h,
					    uint32_t index, size_t size,
					    const void *value)
{
	ENTER();
	struct kernel *k = obj_get(h, K_KERNEL, WHO);
	if (!k)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (index >= k->spv->arg_count) {
		violate("zeKernelSetArgumentValue(%s, %u): the kernel takes %u "
			"arguments",
			k->spv->name, index, k->spv->arg_count);
		return leave(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX);
	}
	const struct spv_arg *want = &k->spv->args[index];
	if (want->kind != SPV_ARG_LOCAL &&
	    (size != want->size || !value || size > FAKEZE_ARG_BYTES)) {
		violate("zeKernelSetArgumentValue(%s, %u): %zu bytes at %p, "
			"the kernel's argument has %zu",
			k->spv->name, index, size, value, want->size);
		return leave(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
	}
	k->args[index].size = (uint32_t)size;
	if (value)
		memcpy(k->args[index].bytes, value, size);
	k->set[index] = 1;
	return leave(ZE_RESULT_SUCCESS);
}

static ze_result_t fz_zeKernelSuggestGroupSize(ze_kernel_handle_t h, uint32_t gx,
					    uint32_t gy, uint32_t gz,
					    uint32_t *x, uint32_t *y,
					    uint32_t *z)
{
	ENTER();
	struct kernel *k = obj_get(h, K_KERNEL, WHO);
	if (!k)
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	*x = k->spv->local_size[0] ? k->spv->local_size[0] : 64;
	*y = k->spv->local_size[0] ? k->spv->local_size[1] : 1;
	*z = k->spv->local_size[0] ? k->spv->local_size[2] : 1;
	return leave(ZE_RESULT_SUCCESS);
}

/* Checks a launch the way a driver would before it runs, and records it. */
static ze_result_t check_launch(struct list *l, struct kernel *k,
				const ze_group_count_t *g, struct exec **out)
{
	if (l->ordinal != COMPUTE_ORDINAL)
		violate("launch %s on a list of the copy-only group",
			k->spv->name);
	if (!k->group_size_set)
		violate("launch %s: group size never set", k->spv->name);
	if (!g->groupCountX || !g->groupCountY || !g->groupCountZ ||
	    g->groupCountX > config.max_groups ||
	    g->groupCountY > config.max_groups ||
	    g->groupCountZ > config.max_groups) {
		violate("launch %s: group counts %u x %u x %u outside 1..%u",
			k->spv->name, g->groupCountX, g->groupCountY,
			g->groupCountZ, config.max_groups);
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	}
	for (uint32_t i = 0; i < k->spv->arg_count; i++) {
		if (!k->set[i]) {
			violate("launch %s: argument %u never set", k->spv->name,
				i);
			return ZE_RESULT_ERROR_INVALID_ARGUMENT;
		}
		if (k->spv->args[i].kind == SPV_ARG_GLOBAL) {
			void *p;
			memcpy(&p, k->args[i].bytes, sizeof p);
			if (!device_accessible(p, 1)) {
				violate("launch %s: argument %u = %p is not "
					"device memory",
					k->spv->name, i, p);
				return ZE_RESULT_ERROR_INVALID_ARGUMENT;
			}
		}
	}
	if (launch_count == launch_cap) {
		size_t cap = launch_cap ? 2 * launch_cap : 64;
		struct fakeze_launch *grown =
			realloc(launches, cap * sizeof *grown);
		if (!grown)
			return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
		launches = grown;
		launch_cap = cap;
	}
	struct fakeze_launch *rec = &launches[launch_count++];
	memset(rec, 0, sizeof *rec);
	snprintf(rec->kernel, sizeof rec->kernel, "%s", k->spv->name);
	memcpy(rec->group_size, k->group_size, sizeof rec->group_size);
	rec->group_count[0] = g->groupCountX;
	rec->group_count[1] = g->groupCountY;
	rec->group_count[2] = g->groupCountZ;
	rec->arg_count = k->spv->arg_count;
	memcpy(rec->args, k->args, sizeof rec->args);
	rec->immediate = l->immediate;
	/* What runs is a copy: the kernel's arguments may change before. */
	struct exec *x = calloc(1, sizeof *x);
	if (!x)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	x->emulate = k->emulate;
	x->kernel = k;
	for (uint32_t i = 0; i < k->spv->arg_count && i < FAKEZE_MAX_ARGS; i++)
		x->global[i] = k->spv->args[i].kind == SPV_ARG_GLOBAL;
	x->rec = *rec;
	*out = x;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t fz_zeCommandListAppendLaunchKernel(
	ze_command_list_handle_t h, ze_kernel_handle_t hk,
	const ze_group_count_t *groups, ze_event_handle_t signal,
	uint32_t wait_count, ze_event_handle_t *waits)
{
	ENTER();
	struct list *l = obj_get(h, K_LIST, WHO);
	struct kernel *k = obj_get(hk, K_KERNEL, WHO);
	struct cmd c = {.kind = C_LAUNCH};
	if (!l || !k || !signal_of(signal, WHO, &c.signal))
		return leave(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
	if (wait_count)
		violate("zeCommandListAppendLaunchKernel: waits on events");
	ze_result_t r = check_launch(l, k, groups, &c.exec);
	if (r != ZE_RESULT_SUCCESS)
		return leave(r);
	return leave(append(l, &c));
}

/*===----------------------------------------------------------------------===
 * The test interface (fakeze.h)
 *===----------------------------------------------------------------------===*/

static size_t api_launch_count(void)
{
	pthread_mutex_lock(&lock);
	size_t n = launch_count;
	pthread_mutex_unlock(&lock);
	return n;
}

static int api_launch_get(size_t i, struct fakeze_launch *out)
{
	int found = 0;

	pthread_mutex_lock(&lock);
	if (i < launch_count) {
		*out = launches[i];
		found = 1;
	}
	pthread_mutex_unlock(&lock);
	return found;
}

static uint64_t api_calls(const char *name)
{
	uint64_t n = 0;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < counter_count; i++)
		if (strcmp(counters[i].name, name) == 0)
			n = counters[i].calls;
	pthread_mutex_unlock(&lock);
	return n;
}

static size_t api_violation_count(void)
{
	pthread_mutex_lock(&lock);
	size_t n = violation_count;
	pthread_mutex_unlock(&lock);
	return n;
}

static const char *api_violation(size_t i)
{
	pthread_mutex_lock(&lock);
	const char *v = i < violation_count ? violations[i] : NULL;
	pthread_mutex_unlock(&lock);
	return v;
}

static void api_clear(void)
{
	pthread_mutex_lock(&lock);
	launch_count = 0;
	for (size_t i = 0; i < counter_count; i++)
		counters[i].calls = 0;
	for (size_t i = 0; i < violation_count; i++)
		free(violations[i]);
	violation_count = 0;
	injection.armed = 0;
	pthread_mutex_unlock(&lock);
}

static void api_fail(const char *name, uint64_t after, int result)
{
	pthread_mutex_lock(&lock);
	snprintf(injection.name, sizeof injection.name, "%s", name);
	injection.after = after;
	injection.result = (ze_result_t)result;
	injection.armed = 1;
	pthread_mutex_unlock(&lock);
}

static void api_usage(struct fakeze_usage *out)
{
	pthread_mutex_lock(&lock);
	*out = (struct fakeze_usage){
		.objects = live_objects,
		.device_bytes = device_bytes,
		.host_bytes = host_bytes,
		.physical_bytes = physical_bytes,
		.reserved_bytes = reserved_bytes,
		.mapped_bytes = mapped_bytes,
	};
	pthread_mutex_unlock(&lock);
}

static int api_read(const void *ptr, void *dst, size_t size)
{
	int ok;

	pthread_mutex_lock(&lock);
	ok = device_accessible(ptr, size);
	if (ok)
		memcpy(dst, ptr, size);
	pthread_mutex_unlock(&lock);
	return ok;
}

static const char *api_build_flags(void)
{
	return last_build_flags;
}

static void api_set_clock(uint64_t ticks)
{
	pthread_mutex_lock(&lock);
	device_clock = ticks;
	pthread_mutex_unlock(&lock);
}

static const struct fakeze_api api = {
	.launch_count = api_launch_count,
	.launch_get = api_launch_get,
	.calls = api_calls,
	.violation_count = api_violation_count,
	.violation = api_violation,
	.clear = api_clear,
	.fail = api_fail,
	.usage = api_usage,
	.read = api_read,
	.set_clock = api_set_clock,
	.build_flags = api_build_flags,
};

/* What the driver keeps for the tests goes when the last user unloads it
 * (what the plugin left allocated is the plugin's leak, and shows). */
__attribute__((destructor)) static void unload(void)
{
	free(launches);
	launches = NULL;
	launch_count = launch_cap = 0;
	for (size_t i = 0; i < violation_count; i++)
		free(violations[i]);
	violation_count = 0;
}

EXPORT const struct fakeze_api *fakeze_get_api(void);
const struct fakeze_api *fakeze_get_api(void)
{
	return &api;
}

/*===----------------------------------------------------------------------===
 * The tables the loader asks for
 *===----------------------------------------------------------------------===*/

static ze_result_t check_version(ze_api_version_t version, const void *table)
{
	if (!table)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	if (ZE_MAJOR_VERSION(version) != ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT))
		return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
	return ZE_RESULT_SUCCESS;
}

#define TABLE(name, type, fill)                                                \
	EXPORT ze_result_t ZE_APICALL name(ze_api_version_t version,           \
					   type *t);                           \
	ze_result_t ZE_APICALL name(ze_api_version_t version, type *t)         \
	{                                                                      \
		ze_result_t r = check_version(version, t);                     \
		if (r == ZE_RESULT_SUCCESS) {                                  \
			fill                                                   \
		}                                                              \
		return r;                                                      \
	}

TABLE(zeGetGlobalProcAddrTable, ze_global_dditable_t, {
	t->pfnInit = fz_zeInit;
})
TABLE(zeGetDriverProcAddrTable, ze_driver_dditable_t, {
	t->pfnGet = fz_zeDriverGet;
	t->pfnGetApiVersion = fz_zeDriverGetApiVersion;
})
TABLE(zeGetDeviceProcAddrTable, ze_device_dditable_t, {
	t->pfnGet = fz_zeDeviceGet;
	t->pfnGetProperties = fz_zeDeviceGetProperties;
	t->pfnGetComputeProperties = fz_zeDeviceGetComputeProperties;
	t->pfnGetModuleProperties = fz_zeDeviceGetModuleProperties;
	t->pfnGetMemoryProperties = fz_zeDeviceGetMemoryProperties;
	t->pfnGetCommandQueueGroupProperties =
		fz_zeDeviceGetCommandQueueGroupProperties;
})
TABLE(zeGetContextProcAddrTable, ze_context_dditable_t, {
	t->pfnCreate = fz_zeContextCreate;
	t->pfnDestroy = fz_zeContextDestroy;
})
TABLE(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t, {
	t->pfnCreate = fz_zeCommandQueueCreate;
	t->pfnDestroy = fz_zeCommandQueueDestroy;
	t->pfnExecuteCommandLists = fz_zeCommandQueueExecuteCommandLists;
	t->pfnSynchronize = fz_zeCommandQueueSynchronize;
})
TABLE(zeGetCommandListProcAddrTable, ze_command_list_dditable_t, {
	t->pfnCreate = fz_zeCommandListCreate;
	t->pfnCreateImmediate = fz_zeCommandListCreateImmediate;
	t->pfnDestroy = fz_zeCommandListDestroy;
	t->pfnClose = fz_zeCommandListClose;
	t->pfnReset = fz_zeCommandListReset;
	t->pfnAppendBarrier = fz_zeCommandListAppendBarrier;
	t->pfnAppendWaitOnEvents = fz_zeCommandListAppendWaitOnEvents;
	t->pfnAppendMemoryCopy = fz_zeCommandListAppendMemoryCopy;
	t->pfnAppendLaunchKernel = fz_zeCommandListAppendLaunchKernel;
})
TABLE(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t, {
	t->pfnCreate = fz_zeEventPoolCreate;
	t->pfnDestroy = fz_zeEventPoolDestroy;
})
TABLE(zeGetEventProcAddrTable, ze_event_dditable_t, {
	t->pfnCreate = fz_zeEventCreate;
	t->pfnDestroy = fz_zeEventDestroy;
	t->pfnHostSynchronize = fz_zeEventHostSynchronize;
	t->pfnHostSignal = fz_zeEventHostSignal;
	t->pfnHostReset = fz_zeEventHostReset;
	t->pfnQueryStatus = fz_zeEventQueryStatus;
	t->pfnQueryKernelTimestamp = fz_zeEventQueryKernelTimestamp;
})
TABLE(zeGetMemProcAddrTable, ze_mem_dditable_t, {
	t->pfnAllocDevice = fz_zeMemAllocDevice;
	t->pfnAllocHost = fz_zeMemAllocHost;
	t->pfnFree = fz_zeMemFree;
	t->pfnGetAllocProperties = fz_zeMemGetAllocProperties;
})
TABLE(zeGetModuleProcAddrTable, ze_module_dditable_t, {
	t->pfnCreate = fz_zeModuleCreate;
	t->pfnDestroy = fz_zeModuleDestroy;
	t->pfnGetNativeBinary = fz_zeModuleGetNativeBinary;
	t->pfnGetKernelNames = fz_zeModuleGetKernelNames;
})
TABLE(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t, {
	t->pfnDestroy = fz_zeModuleBuildLogDestroy;
	t->pfnGetString = fz_zeModuleBuildLogGetString;
})
TABLE(zeGetKernelProcAddrTable, ze_kernel_dditable_t, {
	t->pfnCreate = fz_zeKernelCreate;
	t->pfnDestroy = fz_zeKernelDestroy;
	t->pfnSetGroupSize = fz_zeKernelSetGroupSize;
	t->pfnSuggestGroupSize = fz_zeKernelSuggestGroupSize;
	t->pfnSetArgumentValue = fz_zeKernelSetArgumentValue;
})
TABLE(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t, {
	t->pfnCreate = fz_zePhysicalMemCreate;
	t->pfnDestroy = fz_zePhysicalMemDestroy;
})
TABLE(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t, {
	t->pfnReserve = fz_zeVirtualMemReserve;
	t->pfnFree = fz_zeVirtualMemFree;
	t->pfnQueryPageSize = fz_zeVirtualMemQueryPageSize;
	t->pfnMap = fz_zeVirtualMemMap;
	t->pfnUnmap = fz_zeVirtualMemUnmap;
	t->pfnSetAccessAttribute = fz_zeVirtualMemSetAccessAttribute;
})

/* Tables this driver fills with nothing: the loader 1.8 wants each export
 * to exist, and reads a NULL entry as "unsupported". */
#define EMPTY(name, type) TABLE(name, type, {})
EMPTY(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
EMPTY(zeGetImageProcAddrTable, ze_image_dditable_t)
EMPTY(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)
EMPTY(zeGetFenceProcAddrTable, ze_fence_dditable_t)
EMPTY(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
EMPTY(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)
EMPTY(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
EMPTY(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)
EMPTY(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)
EMPTY(zetGetDeviceProcAddrTable, zet_device_dditable_t)
EMPTY(zetGetContextProcAddrTable, zet_context_dditable_t)
EMPTY(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
EMPTY(zetGetModuleProcAddrTable, zet_module_dditable_t)
EMPTY(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
EMPTY(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
EMPTY(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)
EMPTY(zetGetMetricProcAddrTable, zet_metric_dditable_t)
EMPTY(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
EMPTY(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
EMPTY(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
EMPTY(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
EMPTY(zetGetDebugProcAddrTable, zet_debug_dditable_t)
EMPTY(zesGetDriverProcAddrTable, zes_driver_dditable_t)
EMPTY(zesGetDeviceProcAddrTable, zes_device_dditable_t)
EMPTY(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
EMPTY(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
EMPTY(zesGetPowerProcAddrTable, zes_power_dditable_t)
EMPTY(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
EMPTY(zesGetEngineProcAddrTable, zes_engine_dditable_t)
EMPTY(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
EMPTY(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
EMPTY(zesGetMemoryProcAddrTable, zes_memory_dditable_t)
EMPTY(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
EMPTY(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)
EMPTY(zesGetPsuProcAddrTable, zes_psu_dditable_t)
EMPTY(zesGetFanProcAddrTable, zes_fan_dditable_t)
EMPTY(zesGetLedProcAddrTable, zes_led_dditable_t)
EMPTY(zesGetRasProcAddrTable, zes_ras_dditable_t)
EMPTY(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)
