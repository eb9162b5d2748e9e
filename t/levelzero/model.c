/* wafer — SPDX-License-Identifier: MIT
 *
 * levelzero_model.c: the test driver (t/standins/levelzero/driver.c) catches the
 * mistakes a Level Zero host program can make about when and in which
 * order the device runs its commands. The test calls Level Zero itself,
 * through the real loader, the way a careless plugin would, and checks
 * that each mistake shows as a wrong value or a violation:
 *
 *  - two dependent commands with no barrier between them (the
 *    specification lets them overlap): the second reads the stale bytes,
 *    and two copies that touch each other's bytes are a race;
 *  - the host reading what the device writes before it synchronised;
 *  - freeing memory that submitted work still uses;
 *  - a kernel name the module does not have, arguments in the wrong
 *    order, a count that sends a kernel past its buffer;
 *  - a list that reads what another list writes with no event wait
 *    between them: the other list's work has not run, the bytes are
 *    stale; with the wait they are right; work behind an event only the
 *    host signals runs once another thread signals it.
 * And the same programs written correctly give the right values: the
 * driver runs the plugin's kernels (emulated from kernels.cl). */
#include "build-config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <level_zero/ze_api.h>

#include "plugins/levelzero/kernels.h"
#include "t/tap.h"

/* After tap.h: fakeze_bind_or_end uses it. */
#include "t/standins/levelzero/fakeze.h"

#define COMPUTE 1 /* the driver's compute queue group */
#define N 1024    /* floats per buffer */

static const struct fakeze_api *fz;
static ze_context_handle_t ctx;
static ze_device_handle_t dev;
static ze_module_handle_t module;

static int ze_ok(ze_result_t r, const char *what)
{
	if (r != ZE_RESULT_SUCCESS)
		diag("%s: 0x%x", what, (unsigned)r);
	return r == ZE_RESULT_SUCCESS;
}

/* The violations since the last clear, shown; returns whether one of
 * them contains |needle| (any violation, with NULL). */
static int violated(const char *needle)
{
	int found = 0;

	for (size_t i = 0; i < fz->violation_count(); i++) {
		const char *v = fz->violation(i);
		diag("violation: %s", v);
		if (!needle || strstr(v, needle))
			found = 1;
	}
	return found;
}

static float *alloc_device(void)
{
	ze_device_mem_alloc_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
	void *p = NULL;

	if (!ze_ok(zeMemAllocDevice(ctx, &desc, N * 4, 64, dev, &p),
		   "zeMemAllocDevice"))
		abort();
	return p;
}

static float *alloc_host(void)
{
	ze_host_mem_alloc_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
	void *p = NULL;

	if (!ze_ok(zeMemAllocHost(ctx, &desc, N * 4, 64, &p), "zeMemAllocHost"))
		abort();
	return p;
}

static void fill_host(float *p, float base)
{
	for (int i = 0; i < N; i++)
		p[i] = base + (float)i;
}

/* Every element of |p| (host-visible) is f(i). */
#define ALL(p, expr)                                                           \
	({                                                                     \
		int all_ = 1;                                                  \
		for (int i = 0; all_ && i < N; i++)                            \
			all_ = (p)[i] == (expr);                               \
		all_;                                                          \
	})

/*===----------------------------------------------------------------------===
 * Regular command lists on a queue
 *===----------------------------------------------------------------------===*/

struct lq {
	ze_command_queue_handle_t q;
	ze_command_list_handle_t l;
};

static struct lq lq_new(void)
{
	ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
				      .ordinal = COMPUTE};
	ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC,
				     .commandQueueGroupOrdinal = COMPUTE};
	struct lq x = {0};

	if (!ze_ok(zeCommandQueueCreate(ctx, dev, &qd, &x.q), "queue") ||
	    !ze_ok(zeCommandListCreate(ctx, dev, &ld, &x.l), "list"))
		abort();
	return x;
}

static void lq_free(struct lq *x)
{
	zeCommandListDestroy(x->l);
	zeCommandQueueDestroy(x->q);
}

static int lq_execute(struct lq *x)
{
	return ze_ok(zeCommandListClose(x->l), "close") &&
	       ze_ok(zeCommandQueueExecuteCommandLists(x->q, 1, &x->l, NULL),
		     "execute");
}

static int lq_sync(struct lq *x)
{
	return ze_ok(zeCommandQueueSynchronize(x->q, UINT64_MAX), "sync") &&
	       ze_ok(zeCommandListReset(x->l), "reset");
}

static void copy(struct lq *x, void *dst, const void *src)
{
	ze_ok(zeCommandListAppendMemoryCopy(x->l, dst, src, N * 4, NULL, 0,
					    NULL),
	      "copy");
}

static void barrier(struct lq *x)
{
	ze_ok(zeCommandListAppendBarrier(x->l, NULL, 0, NULL), "barrier");
}

/* host -> device -> host, with or without a barrier between. */
static void test_copies(void)
{
	struct lq x = lq_new();
	float *in = alloc_host(), *out = alloc_host(), *d = alloc_device();

	fill_host(in, 1.0f);
	fill_host(out, -1.0f);
	fz->clear();
	copy(&x, d, in);
	copy(&x, out, d);
	lq_execute(&x);
	ok(ALL(out, -1.0f + (float)i),
	   "executed, not synchronised: the host still reads what was there");
	lq_sync(&x);
	ok(!ALL(out, 1.0f + (float)i),
	   "two dependent copies, no barrier: the second ran first and "
	   "moved stale bytes");
	ok(violated("race"), "  ... and the driver names the race");

	fz->clear();
	fill_host(out, -1.0f);
	copy(&x, d, in);
	barrier(&x);
	copy(&x, out, d);
	lq_execute(&x);
	lq_sync(&x);
	ok(ALL(out, 1.0f + (float)i) && !violated(NULL),
	   "with a barrier between them: the bytes arrive, no violation");

	/* Memory freed while submitted work uses it. */
	fz->clear();
	float *tmp = alloc_device();
	copy(&x, tmp, in);
	lq_execute(&x);
	zeMemFree(ctx, tmp);
	ok(violated("zeMemFree"),
	   "freeing memory a submitted copy uses, before synchronising, is a "
	   "violation");
	lq_sync(&x);

	zeMemFree(ctx, in);
	zeMemFree(ctx, out);
	zeMemFree(ctx, d);
	lq_free(&x);
}

/*===----------------------------------------------------------------------===
 * An immediate command list and its event
 *===----------------------------------------------------------------------===*/

/* An asynchronous immediate list of the compute group. */
static ze_command_list_handle_t immediate_list(void)
{
	ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
				      .ordinal = COMPUTE,
				      .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS};
	ze_command_list_handle_t l;

	if (!ze_ok(zeCommandListCreateImmediate(ctx, dev, &qd, &l), "immediate"))
		abort();
	return l;
}

/* |n| host-visible events of a pool of their own, in |ev|. */
static ze_event_pool_handle_t host_events(uint32_t n, ze_event_handle_t *ev)
{
	ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
				   .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
				   .count = n};
	ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC};
	ze_event_pool_handle_t pool;

	if (!ze_ok(zeEventPoolCreate(ctx, &pd, 1, &dev, &pool), "pool"))
		abort();
	for (uint32_t i = 0; i < n; i++) {
		ed.index = i;
		if (!ze_ok(zeEventCreate(pool, &ed, &ev[i]), "event"))
			abort();
	}
	return pool;
}

static void test_immediate(void)
{
	ze_command_list_handle_t l = immediate_list();
	ze_event_handle_t ev;
	ze_event_pool_handle_t pool = host_events(1, &ev);
	float *in = alloc_host(), *out = alloc_host(), *d = alloc_device();

	fz->clear();
	fill_host(in, 5.0f);
	fill_host(out, 0.0f);
	zeCommandListAppendMemoryCopy(l, d, in, N * 4, NULL, 0, NULL);
	zeCommandListAppendBarrier(l, NULL, 0, NULL);
	zeCommandListAppendMemoryCopy(l, out, d, N * 4, NULL, 0, NULL);
	zeCommandListAppendBarrier(l, ev, 0, NULL);
	ok(ALL(out, 0.0f + (float)i),
	   "immediate list: appended is not done; the host reads stale bytes");
	ok(zeEventHostSynchronize(ev, UINT64_MAX) == ZE_RESULT_SUCCESS &&
		   ALL(out, 5.0f + (float)i),
	   "  ... until it waits for the event the last barrier signals");
	ok(!violated(NULL), "  ... no violation");

	zeEventDestroy(ev);
	zeEventPoolDestroy(pool);
	zeCommandListDestroy(l);
	zeMemFree(ctx, in);
	zeMemFree(ctx, out);
	zeMemFree(ctx, d);
}

/*===----------------------------------------------------------------------===
 * Two immediate lists ordered by events
 *===----------------------------------------------------------------------===*/

struct signaller {
	ze_event_handle_t gate;
	float *seen; /* what the host-side thread found before it signalled */
	const float *out;
};

/* A host callback the Level Zero way: signals the gate from the host. */
static void *signal_later(void *data)
{
	struct signaller *s = data;

	*s->seen = s->out[0];
	ze_ok(zeEventHostSignal(s->gate), "zeEventHostSignal");
	return NULL;
}

/* |up| copies |in| to |d| and signals |written|; |down| waits on |gate|,
 * copies |d| to |out| and signals |done|. */
static void copy_via_gate(ze_command_list_handle_t up,
			  ze_command_list_handle_t down, float *d,
			  const float *in, float *out,
			  ze_event_handle_t written, ze_event_handle_t gate,
			  ze_event_handle_t done)
{
	zeCommandListAppendMemoryCopy(up, d, in, N * 4, NULL, 0, NULL);
	zeCommandListAppendBarrier(up, written, 0, NULL);
	zeCommandListAppendWaitOnEvents(down, 1, &gate);
	zeCommandListAppendMemoryCopy(down, out, d, N * 4, NULL, 0, NULL);
	zeCommandListAppendBarrier(down, done, 0, NULL);
}

static void test_cross_list(void)
{
	ze_command_list_handle_t a = immediate_list(), b = immediate_list();
	ze_event_handle_t ev[4];
	ze_event_pool_handle_t pool = host_events(4, ev);
	float *in = alloc_host(), *out = alloc_host(), *d = alloc_device();

	fz->clear();

	/* a uploads, b downloads, no wait between: b runs alone. */
	fill_host(in, 7.0f);
	fill_host(out, 0.0f);
	zeCommandListAppendMemoryCopy(a, d, in, N * 4, NULL, 0, NULL);
	zeCommandListAppendMemoryCopy(b, out, d, N * 4, NULL, 0, NULL);
	zeCommandListAppendBarrier(b, ev[0], 0, NULL);
	zeEventHostSynchronize(ev[0], UINT64_MAX);
	ok(!ALL(out, 7.0f + (float)i),
	   "two lists, no event wait: the reader's copy ran before the "
	   "writer's (stale bytes)");
	zeCommandListAppendBarrier(a, ev[1], 0, NULL);
	zeEventHostSynchronize(ev[1], UINT64_MAX);

	/* The same with a's barrier signalling an event b waits on. */
	zeEventHostReset(ev[0]);
	zeEventHostReset(ev[1]);
	fill_host(in, 9.0f);
	fill_host(out, 0.0f);
	copy_via_gate(a, b, d, in, out, ev[1], ev[1], ev[0]);
	ok(zeEventHostSynchronize(ev[0], UINT64_MAX) == ZE_RESULT_SUCCESS &&
		   ALL(out, 9.0f + (float)i),
	   "  ... with b waiting on an event a signals: the right bytes");

	/* b waits on an event only the host signals: a host wait on b
	 * returns once another thread signalled it, after the work before
	 * the gate ran. */
	zeEventHostReset(ev[0]);
	float seen = -1.0f;
	struct signaller sig = {ev[2], &seen, out};
	fill_host(in, 11.0f);
	copy_via_gate(b, b, d, in, out, ev[3], ev[2], ev[0]);
	ok(zeEventQueryStatus(ev[0]) == ZE_RESULT_NOT_READY,
	   "  ... behind a gate only the host signals, the work waits");
	ok(zeEventHostSynchronize(ev[3], UINT64_MAX) == ZE_RESULT_SUCCESS,
	   "  ... the work before the gate runs");
	pthread_t thread;
	pthread_create(&thread, NULL, signal_later, &sig);
	ok(zeEventHostSynchronize(ev[0], UINT64_MAX) == ZE_RESULT_SUCCESS &&
		   ALL(out, 11.0f + (float)i),
	   "  ... and the rest once another thread signals it");
	pthread_join(thread, NULL);
	ok(seen == 9.0f, "  ... not before (the host saw %g)", (double)seen);
	ok(!violated(NULL), "  ... no violation");

	for (uint32_t i = 0; i < 4; i++)
		zeEventDestroy(ev[i]);
	zeEventPoolDestroy(pool);
	zeCommandListDestroy(a);
	zeCommandListDestroy(b);
	zeMemFree(ctx, in);
	zeMemFree(ctx, out);
	zeMemFree(ctx, d);
}

/*===----------------------------------------------------------------------===
 * Kernels of the plugin's module, emulated
 *===----------------------------------------------------------------------===*/

static ze_kernel_handle_t kernel(const char *name)
{
	ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
			       .pKernelName = name};
	ze_kernel_handle_t k = NULL;

	if (!ze_ok(zeKernelCreate(module, &kd, &k), name))
		return NULL;
	zeKernelSetGroupSize(k, 256, 1, 1);
	return k;
}

static void launch(struct lq *x, ze_kernel_handle_t k, uint32_t groups)
{
	ze_group_count_t g = {groups, 1, 1};

	ze_ok(zeCommandListAppendLaunchKernel(x->l, k, &g, NULL, 0, NULL),
	      "launch");
}

/* fill_f32(out, ulong count, float value) */
static void set_fill(ze_kernel_handle_t k, float *out, uint64_t count,
		     float value)
{
	zeKernelSetArgumentValue(k, 0, sizeof out, &out);
	zeKernelSetArgumentValue(k, 1, sizeof count, &count);
	zeKernelSetArgumentValue(k, 2, sizeof value, &value);
}

/* sub_f32(out, in_a, in_b, ulong count) */
static void set_sub(ze_kernel_handle_t k, float *out, float *a, float *b,
		    uint64_t count)
{
	zeKernelSetArgumentValue(k, 0, sizeof out, &out);
	zeKernelSetArgumentValue(k, 1, sizeof a, &a);
	zeKernelSetArgumentValue(k, 2, sizeof b, &b);
	zeKernelSetArgumentValue(k, 3, sizeof count, &count);
}

/* Every kernel kernels.h lists can be created: the driver emulates it. */
static void test_every_kernel(void)
{
#define NAME(name) #name,
	static const char *const names[] = {LZ_SPIRV_KERNELS(NAME)};
#undef NAME
	size_t missing = 0;

	fz->clear();
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
				       .pKernelName = names[i]};
		ze_kernel_handle_t k = NULL;
		if (zeKernelCreate(module, &kd, &k) == ZE_RESULT_SUCCESS)
			zeKernelDestroy(k);
		else if (missing++ < 5)
			diag("zeKernelCreate(%s) fails", names[i]);
	}
	ok(missing == 0 && !violated(NULL),
	   "each of the %zu kernels of the module has an emulation in the "
	   "test driver",
	   sizeof names / sizeof names[0]);
}

static void test_kernels(void)
{
	struct lq x = lq_new();
	float *a = alloc_device(), *b = alloc_device(), *c = alloc_device();
	float *back = alloc_host();
	ze_kernel_handle_t fill_a = kernel("fill_f32"), fill_b = kernel("fill_f32");
	ze_kernel_handle_t sub = kernel("sub_f32");

	ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
			       .pKernelName = "sub_f23"};
	ze_kernel_handle_t none = NULL;
	fz->clear();
	is_int(zeKernelCreate(module, &kd, &none),
	       ZE_RESULT_ERROR_INVALID_KERNEL_NAME,
	       "zeKernelCreate of a name the module lacks: "
	       "ZE_RESULT_ERROR_INVALID_KERNEL_NAME");
	ok(violated("sub_f23"), "  ... a violation naming it");
	if (!fill_a || !fill_b || !sub) {
		ok(0, "the plugin's kernels are in the module");
		return;
	}

	/* Written right: c = a - b, with a = 7, b = 2 over N elements and a
	 * barrier between the fills and the subtraction. */
	fz->clear();
	set_fill(fill_a, a, N, 7.0f);
	set_fill(fill_b, b, N, 2.0f);
	set_sub(sub, c, a, b, N);
	launch(&x, fill_a, 2); /* 512 items: the grid-stride loop goes round */
	launch(&x, fill_b, 4);
	barrier(&x);
	launch(&x, sub, 4);
	barrier(&x);
	copy(&x, back, c);
	lq_execute(&x);
	lq_sync(&x);
	ok(ALL(back, 5.0f), "fill, fill, barrier, sub: 7 - 2 = 5 everywhere");
	ok(!violated(NULL), "  ... no violation");

	/* No barrier between the fills and sub: sub runs on the stale a and
	 * b (the 3 and 1 of before). */
	fz->clear();
	set_fill(fill_a, a, N, 3.0f);
	set_fill(fill_b, b, N, 1.0f);
	launch(&x, fill_a, 4);
	launch(&x, fill_b, 4);
	lq_execute(&x);
	lq_sync(&x);
	set_fill(fill_a, a, N, 9.0f);
	set_fill(fill_b, b, N, 4.0f);
	launch(&x, fill_a, 4);
	launch(&x, fill_b, 4);
	launch(&x, sub, 4);
	barrier(&x);
	copy(&x, back, c);
	lq_execute(&x);
	lq_sync(&x);
	ok(ALL(back, 2.0f),
	   "fill, fill, sub with no barrier: sub reads the stale 3 and 1 "
	   "(2, not 9 - 4 = 5)");

	/* Arguments in the wrong order give the wrong value. */
	set_sub(sub, c, b, a, N);
	launch(&x, sub, 4);
	barrier(&x);
	copy(&x, back, c);
	lq_execute(&x);
	lq_sync(&x);
	ok(ALL(back, -5.0f), "sub with a and b swapped: 4 - 9 = -5");

	/* A count past the buffer: a violation, and the emulation stops
	 * rather than write past it. */
	fz->clear();
	set_fill(fill_a, a, 2 * N, 1.0f);
	launch(&x, fill_a, 8);
	lq_execute(&x);
	lq_sync(&x);
	ok(violated("past the"), "fill with a count past its buffer is a "
				 "violation naming the element");

	zeKernelDestroy(fill_a);
	zeKernelDestroy(fill_b);
	zeKernelDestroy(sub);
	zeMemFree(ctx, a);
	zeMemFree(ctx, b);
	zeMemFree(ctx, c);
	zeMemFree(ctx, back);
	lq_free(&x);
}

int main(void)
{
	const char *builddir = getenv("T_BUILDDIR");
	char driver_path[4096];
	void *driver;
	ze_driver_handle_t drv;
	uint32_t n = 1;

	if (!builddir)
		skip_all("T_BUILDDIR is not set (run through make check)");
	unsetenv("FAKEZE_ORDER");
	unsetenv("FAKEZE_DEVICES");
	unsetenv("FAKEZE_MEMORY");
	fz = fakeze_bind_or_end(builddir, driver_path, sizeof driver_path,
				&driver);

	ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
	ze_module_desc_t md = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
			       .format = ZE_MODULE_FORMAT_IL_SPIRV,
			       .inputSize = lz_spirv_module_size,
			       .pInputModule = lz_spirv_module};
	if (!ok(ze_ok(zeInit(0), "zeInit") &&
			ze_ok(zeDriverGet(&n, &drv), "zeDriverGet") &&
			ze_ok(zeDeviceGet(drv, &n, &dev), "zeDeviceGet") &&
			ze_ok(zeContextCreate(drv, &cd, &ctx), "context") &&
			ze_ok(zeModuleCreate(ctx, dev, &md, &module, NULL),
			      "zeModuleCreate"),
		"the loader reaches the test driver; the plugin's module "
		"builds")) {
		done_testing();
		return exit_status();
	}

	test_copies();
	test_immediate();
	test_cross_list();
	test_every_kernel();
	test_kernels();

	zeModuleDestroy(module);
	zeContextDestroy(ctx);
	struct fakeze_usage u;
	fz->usage(&u);
	ok(u.objects == 0 && u.device_bytes == 0 && u.host_bytes == 0,
	   "nothing left alive in the driver");
	done_testing();
	return exit_status();
}
