/* wafer — SPDX-License-Identifier: MIT
 *
 * tunable.c: a test plugin for autotune (t/internal/autotune.c): kernel variants of
 * known cost (tunable.h) and device timers that read a fake clock, so
 * which candidate wins, and how many runs it takes to find out, is the
 * same on every machine and under every sanitizer.
 *
 * Options ([tunable]): those of common.h, and
 *   sleep = 0|1   launches also sleep their cost in real time (for the
 *                 tuner's host-clock path, `[autotune] timer = host`). */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "t/plugins/common.h"
#include "t/plugins/tunable.h"

TP_PLUGIN("tunable", "1.0.0",
	  "test plugin: kernel variants of known cost", 1, 0);

/* The module is loaded once per process however many runtimes open it;
 * the tests open one at a time. */
static int sleep_for_real;

enum behaviour {
	RUNS,     /* computes 2x */
	FAILS,    /* launch returns an error */
	FAILS_LATE, /* launch succeeds; the next sync returns the error */
	WRONG,    /* computes 2x + 1 */
};

struct variant {
	unsigned factor;
	enum behaviour behaviour;
};

static const struct variant fast = {2, RUNS};
static const struct variant medium = {6, RUNS};
static const struct variant slow = {80, RUNS};
static const struct variant broken = {1, FAILS};
static const struct variant late = {1, FAILS_LATE};
static const struct variant wrong = {1, WRONG};

#define WORK(variant_, dtype_, impl_)                                          \
	{                                                                      \
		.struct_size = sizeof(struct wafer_kernel),                    \
		.op = TUNABLE_KERNEL,                                          \
		.variant = (variant_),                                         \
		.dtype = (dtype_),                                             \
		.binding_count = 2,                                            \
		.params_size = sizeof(struct tunable_params),                  \
		.impl = &(impl_),                                              \
	}

static const struct wafer_kernel kernels[] = {
	WORK("fast", WAFER_DTYPE_F32, fast),
	WORK("medium", WAFER_DTYPE_F32, medium),
	WORK("slow", WAFER_DTYPE_F32, slow),
	WORK("broken", WAFER_DTYPE_F32, broken),
	WORK("late", WAFER_DTYPE_F32, late),
	WORK("wrong", WAFER_DTYPE_F32, wrong),
	WORK("medium", WAFER_DTYPE_F64, medium),
};

static wafer_status tunable_kernels(void *device,
				    const struct wafer_kernel **out_kernels,
				    size_t *out_count)
{
	*out_kernels = kernels;
	*out_count = sizeof kernels / sizeof kernels[0];
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Queues: a fake clock and a deferred error
 *===----------------------------------------------------------------------===*/

struct tunable_queue {
	uint64_t clock_ns;
	wafer_status deferred;
};

static wafer_status tunable_queue_create(void *device, void **out_queue)
{
	*out_queue = calloc(1, sizeof(struct tunable_queue));
	if (!*out_queue) {
		tp_host->set_error("tunable: out of memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	return WAFER_OK;
}

static void tunable_queue_destroy(void *device, void *queue)
{
	free(queue);
}

static wafer_status tunable_sync(void *device, void *queue)
{
	struct tunable_queue *q = queue;
	wafer_status status = q->deferred;

	q->deferred = WAFER_OK;
	if (status != WAFER_OK)
		tp_host->set_error("tunable: variant late failed while running");
	return status;
}

static wafer_status tunable_timer_begin(void *device, void *queue,
					void **out_timer)
{
	uint64_t *start = malloc(sizeof *start);

	*out_timer = start;
	if (!start) {
		tp_host->set_error("tunable: out of memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	*start = ((struct tunable_queue *)queue)->clock_ns;
	return WAFER_OK;
}

static wafer_status tunable_timer_end(void *device, void *queue, void *timer,
				      uint64_t *out_ns)
{
	*out_ns = ((struct tunable_queue *)queue)->clock_ns - *(uint64_t *)timer;
	free(timer);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The kernel
 *===----------------------------------------------------------------------===*/

static void *binding_at(const struct wafer_launch *launch, uint32_t i,
			size_t bytes)
{
	const struct wafer_binding *b = &launch->bindings[i];

	if (b->size < bytes)
		return NULL;
	return (char *)(uintptr_t)b->resource + b->offset;
}

static void compute(const struct wafer_launch *launch, const void *in,
		    void *out, uint64_t count, float extra)
{
	if (launch->kernel->dtype == WAFER_DTYPE_F64) {
		const double *x = in;
		double *y = out;
		for (uint64_t i = 0; i < count; i++)
			y[i] = 2 * x[i] + extra;
	} else {
		const float *x = in;
		float *y = out;
		for (uint64_t i = 0; i < count; i++)
			y[i] = 2 * x[i] + extra;
	}
}

static wafer_status tunable_launch(void *device, void *queue,
				   const struct wafer_launch *launch)
{
	struct tunable_queue *q = queue;
	const struct variant *v = launch->kernel->impl;
	struct tunable_params p;
	size_t element = launch->kernel->dtype == WAFER_DTYPE_F64
				 ? sizeof(double)
				 : sizeof(float);

	if (launch->binding_count != 2 || launch->params_size != sizeof p) {
		tp_host->set_error("tunable: malformed launch");
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	memcpy(&p, launch->params, sizeof p);
	void *out = binding_at(launch, 0, p.count * element);
	const void *in = binding_at(launch, 1, p.count * element);
	if (!out || !in) {
		tp_host->set_error("tunable: %llu elements past a binding",
				   (unsigned long long)p.count);
		return WAFER_ERROR_OUT_OF_RANGE;
	}
	if (v->behaviour == FAILS) {
		tp_host->set_error("tunable: variant %s always fails",
				   launch->kernel->variant);
		return WAFER_ERROR_DEVICE;
	}
	uint64_t units = p.cost * v->factor;
	q->clock_ns += units * TUNABLE_UNIT_NS;
	if (sleep_for_real && units) {
		uint64_t ns = units * TUNABLE_SLEEP_NS;
		struct timespec ts = {
			.tv_sec = (time_t)(ns / 1000000000u),
			.tv_nsec = (long)(ns % 1000000000u),
		};
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	if (v->behaviour == FAILS_LATE) {
		q->deferred = WAFER_ERROR_DEVICE;
		return WAFER_OK;
	}
	compute(launch, in, out, p.count, v->behaviour == WRONG ? 1.0f : 0.0f);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The descriptor
 *===----------------------------------------------------------------------===*/

/* Takes `sleep` out of the options and hands the rest to tp_init. */
static wafer_status tunable_init(const struct wafer_plugin_init_args *args,
				 void **out_state)
{
	struct wafer_plugin_option rest[32];
	struct wafer_plugin_init_args forwarded = *args;
	size_t n = 0;

	sleep_for_real = 0;
	for (size_t i = 0; i < args->option_count; i++) {
		if (strcmp(args->options[i].key, "sleep") == 0)
			sleep_for_real = atoi(args->options[i].value);
		else if (n < sizeof rest / sizeof rest[0])
			rest[n++] = args->options[i];
	}
	forwarded.options = rest;
	forwarded.option_count = n;
	return tp_init(&forwarded, out_state);
}

static const struct wafer_server_ops tunable_server_ops = {
	.struct_size = sizeof(struct wafer_server_ops),
	.queue_create = tunable_queue_create,
	.queue_destroy = tunable_queue_destroy,
	.launch = tunable_launch,
	.sync = tunable_sync,
	.timer_begin = tunable_timer_begin,
	.timer_end = tunable_timer_end,
};

TP_PLUGIN_QUERY(d)
{
	d->init = tunable_init;
	d->device_kernels = tunable_kernels;
	d->server = &tunable_server_ops;
}
