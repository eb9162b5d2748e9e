/* wafer — SPDX-License-Identifier: MIT
 *
 * async.c: a test plugin that behaves like a GPU: every queue has its own
 * worker thread, and launches and copies are queued to it and run later,
 * so the core's ordering, release and error-reporting rules are tested
 * against real asynchrony. Kernels (f32):
 *   fill, copy, add        the standard catalogue
 *   slow_copy {out, in}    sleeps params.count microseconds per call, then
 *                          copies the whole binding
 *   fail {out}             fails when it runs: the error comes back at sync;
 *                          with params.count > 1 its detail is that many
 *                          characters long (a compiler log, say), ending
 *                          in "END OF LOG"
 *   noop {}                does nothing
 *   overrun {out}          writes params.count floats and then one more,
 *                          past the end of its binding: the bug that the
 *                          `direct` memory strategy lets ASan catch
 *   gate {}                params: the address of an int; blocks inside
 *                          launch (on the caller's thread) until the int
 *                          is non-zero — proves a channel returned before
 *                          the plugin was called
 * Storage is host memory; copy_in stages the caller's bytes; allocations
 * of 3 GiB or more fail, to inject out-of-memory. */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <wafer/plugin.h>

static const struct wafer_host_services *host;

/*===----------------------------------------------------------------------===
 * A queue: tasks run in order on a worker thread
 *===----------------------------------------------------------------------===*/

enum task_kind { TASK_COPY, TASK_LAUNCH };

struct task {
	struct task *next;
	enum task_kind kind;
	/* copy: dst <- src (src may point into staged) */
	void *dst;
	const void *src;
	size_t size;
	/* launch */
	const struct wafer_kernel *kernel;
	struct wafer_binding bindings[4];
	uint32_t binding_count;
	unsigned char params[32];
	unsigned char staged[]; /* copy_in's bytes */
};

struct queue {
	pthread_mutex_t lock;
	pthread_cond_t work, idle;
	struct task *first, *last;
	int busy;
	int stop;
	wafer_status error; /* first failure since the last sync */
	char *detail;       /* its text (heap) */
	pthread_t worker;
};

static void *ptr(wafer_resource r, size_t offset)
{
	return (char *)(uintptr_t)r + offset;
}

/* The detail of 'fail' with |count| > 1: |count| characters. */
static char *long_log(uint64_t count)
{
	static const char tail[] = "END OF LOG";
	char *text = malloc(count + 1);
	if (!text)
		return NULL;
	int head = snprintf(text, count + 1, "kernel 'fail' failed on purpose: ");
	for (uint64_t i = (uint64_t)head; i < count; i++)
		text[i] = (char)('a' + i % 26);
	if (count >= sizeof tail + (uint64_t)head)
		memcpy(text + count - (sizeof tail - 1), tail, sizeof tail - 1);
	text[count] = '\0';
	return text;
}

static wafer_status run_kernel(struct task *t, char **detail)
{
	const char *op = t->kernel->op;
	float *out = t->binding_count ? ptr(t->bindings[0].resource,
					    t->bindings[0].offset)
				      : NULL;
	uint64_t count;
	memcpy(&count, t->params, sizeof count);

	if (strcmp(op, "noop") == 0)
		return WAFER_OK;
	if (strcmp(op, "fail") == 0) {
		*detail = count > 1 ? long_log(count)
				    : strdup("kernel 'fail' failed on purpose");
		return WAFER_ERROR_DEVICE;
	}
	if (strcmp(op, "overrun") == 0) {
		for (uint64_t i = 0; i <= count; i++) /* one too many */
			out[i] = 1.0f;
		return WAFER_OK;
	}
	if (strcmp(op, "slow_copy") == 0) {
		struct timespec ts = {0, (long)count * 1000};
		nanosleep(&ts, NULL);
		memmove(out, ptr(t->bindings[1].resource, t->bindings[1].offset),
			t->bindings[0].size);
		return WAFER_OK;
	}
	if (strcmp(op, "fill") == 0) {
		double value;
		memcpy(&value, t->params + 8, sizeof value);
		for (uint64_t i = 0; i < count; i++)
			out[i] = (float)value;
		return WAFER_OK;
	}
	const float *a = ptr(t->bindings[1].resource, t->bindings[1].offset);
	if (strcmp(op, "copy") == 0) {
		memmove(out, a, count * sizeof(float));
		return WAFER_OK;
	}
	const float *b = ptr(t->bindings[2].resource, t->bindings[2].offset);
	for (uint64_t i = 0; i < count; i++)
		out[i] = a[i] + b[i];
	return WAFER_OK;
}

static void *worker_main(void *arg)
{
	struct queue *q = arg;
	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->first && !q->stop)
			pthread_cond_wait(&q->work, &q->lock);
		if (!q->first)
			break;
		struct task *t = q->first;
		q->first = t->next;
		if (!q->first)
			q->last = NULL;
		q->busy = 1;
		pthread_mutex_unlock(&q->lock);

		char *detail = NULL;
		wafer_status status = WAFER_OK;
		if (t->kind == TASK_COPY)
			memmove(t->dst, t->src, t->size);
		else
			status = run_kernel(t, &detail);
		free(t);

		pthread_mutex_lock(&q->lock);
		if (status != WAFER_OK && q->error == WAFER_OK) {
			q->error = status;
			q->detail = detail;
			detail = NULL;
		}
		free(detail);
		q->busy = 0;
		if (!q->first)
			pthread_cond_broadcast(&q->idle);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

static void enqueue(struct queue *q, struct task *t)
{
	t->next = NULL;
	pthread_mutex_lock(&q->lock);
	if (q->last)
		q->last->next = t;
	else
		q->first = t;
	q->last = t;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
}

static wafer_status queue_create(void *device, void **out_queue)
{
	struct queue *q = calloc(1, sizeof *q);
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->work, NULL);
	pthread_cond_init(&q->idle, NULL);
	pthread_create(&q->worker, NULL, worker_main, q);
	*out_queue = q;
	return WAFER_OK;
}

static void queue_destroy(void *device, void *queue)
{
	struct queue *q = queue;
	pthread_mutex_lock(&q->lock);
	q->stop = 1;
	pthread_cond_signal(&q->work);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->worker, NULL);
	free(q->detail);
	pthread_cond_destroy(&q->idle);
	pthread_cond_destroy(&q->work);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

static wafer_status queue_sync(void *device, void *queue)
{
	struct queue *q = queue;
	pthread_mutex_lock(&q->lock);
	while (q->first || q->busy)
		pthread_cond_wait(&q->idle, &q->lock);
	wafer_status status = q->error;
	if (status != WAFER_OK)
		host->set_error("%s", q->detail ? q->detail : "out of memory");
	q->error = WAFER_OK;
	free(q->detail);
	q->detail = NULL;
	pthread_mutex_unlock(&q->lock);
	return status;
}

static wafer_status launch(void *device, void *queue,
			   const struct wafer_launch *l)
{
	if (strcmp(l->kernel->op, "gate") == 0) {
		volatile int *flag;
		memcpy(&flag, l->params, sizeof flag);
		while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE))
			sched_yield();
		return WAFER_OK;
	}
	struct task *t = calloc(1, sizeof *t);
	t->kind = TASK_LAUNCH;
	t->kernel = l->kernel;
	t->binding_count = l->binding_count;
	memcpy(t->bindings, l->bindings, l->binding_count * sizeof t->bindings[0]);
	memcpy(t->params, l->params, l->params_size);
	enqueue(queue, t);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Storage
 *===----------------------------------------------------------------------===*/

static wafer_status storage_alloc(void *device, size_t size,
				  wafer_resource *out)
{
	void *p = NULL;
	if (size >= (UINT64_C(3) << 30) || posix_memalign(&p, 64, size) != 0) {
		host->set_error("async: cannot allocate %zu bytes", size);
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	*out = (wafer_resource)(uintptr_t)p;
	return WAFER_OK;
}

static void storage_free(void *device, wafer_resource r)
{
	free((void *)(uintptr_t)r);
}

static wafer_status copy_in(void *device, void *queue, wafer_resource dst,
			    size_t offset, const void *src, size_t size)
{
	struct task *t = malloc(sizeof *t + size);
	*t = (struct task){.kind = TASK_COPY, .dst = ptr(dst, offset),
			   .size = size};
	memcpy(t->staged, src, size);
	t->src = t->staged;
	enqueue(queue, t);
	return WAFER_OK;
}

static wafer_status copy_out(void *device, void *queue, wafer_resource src,
			     size_t offset, void *dst, size_t size)
{
	struct task *t = malloc(sizeof *t);
	*t = (struct task){.kind = TASK_COPY, .dst = dst,
			   .src = ptr(src, offset), .size = size};
	enqueue(queue, t);
	return WAFER_OK;
}

static wafer_status copy(void *device, void *queue, wafer_resource dst,
			 size_t dst_offset, wafer_resource src,
			 size_t src_offset, size_t size)
{
	return copy_out(device, queue, src, src_offset, ptr(dst, dst_offset),
			size);
}

/*===----------------------------------------------------------------------===
 * Plugin
 *===----------------------------------------------------------------------===*/

#define KERNEL(name, bindings, params)                                         \
	{                                                                      \
		.struct_size = sizeof(struct wafer_kernel), .op = name,        \
		.variant = "default", .dtype = WAFER_DTYPE_F32,                \
		.binding_count = bindings, .params_size = params,              \
	}

static const struct wafer_kernel kernels[] = {
	KERNEL("fill", 1, sizeof(struct wafer_fill_params)),
	KERNEL("copy", 2, sizeof(struct wafer_elementwise_params)),
	KERNEL("add", 3, sizeof(struct wafer_elementwise_params)),
	KERNEL("slow_copy", 2, sizeof(struct wafer_elementwise_params)),
	KERNEL("fail", 1, sizeof(struct wafer_elementwise_params)),
	KERNEL("overrun", 1, sizeof(struct wafer_elementwise_params)),
	KERNEL("noop", 0, 0),
	KERNEL("gate", 0, sizeof(void *)),
};

static wafer_status init(const struct wafer_plugin_init_args *args,
			 void **out_state)
{
	*out_state = NULL;
	return WAFER_OK;
}

static void plugin_shutdown(void *state)
{
}

static wafer_status device_count(void *state, uint32_t *out)
{
	*out = 1;
	return WAFER_OK;
}

static wafer_status device_info(void *state, uint32_t index,
				struct wafer_device_info *out)
{
	snprintf(out->name, sizeof out->name, "asynchronous test device");
	out->memory_bytes = UINT64_C(1) << 32;
	out->alloc_alignment = 64;
	out->compute_units = 1;
	return WAFER_OK;
}

static wafer_status device_open(void *state, uint32_t index, void **out)
{
	*out = (void *)1;
	return WAFER_OK;
}

static void device_close(void *device)
{
}

static wafer_status device_kernels(void *device,
				   const struct wafer_kernel **out, size_t *count)
{
	*out = kernels;
	*count = sizeof kernels / sizeof kernels[0];
	return WAFER_OK;
}

static const struct wafer_storage_ops storage_ops = {
	.struct_size = sizeof(struct wafer_storage_ops),
	.alloc = storage_alloc,
	.free = storage_free,
	.copy_in = copy_in,
	.copy_out = copy_out,
	.copy = copy,
};

static const struct wafer_server_ops server_ops = {
	.struct_size = sizeof(struct wafer_server_ops),
	.queue_create = queue_create,
	.queue_destroy = queue_destroy,
	.launch = launch,
	.sync = queue_sync,
};

static const struct wafer_plugin plugin = {
	.struct_size = sizeof(struct wafer_plugin),
	.abi_major = WAFER_PLUGIN_ABI_MAJOR,
	.abi_minor = WAFER_PLUGIN_ABI_MINOR,
	.name = "async",
	.version = "1.0.0",
	.description = "test plugin: asynchronous queues on worker threads",
	.init = init,
	.shutdown = plugin_shutdown,
	.device_count = device_count,
	.device_info = device_info,
	.device_open = device_open,
	.device_close = device_close,
	.device_kernels = device_kernels,
	.storage = &storage_ops,
	.server = &server_ops,
};

WAFER_PLUGIN_EXPORT const struct wafer_plugin *
wafer_plugin_query(uint32_t core_abi_major,
		   const struct wafer_host_services *services)
{
	host = services;
	return &plugin;
}
