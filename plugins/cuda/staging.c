/* wafer — SPDX-License-Identifier: MIT
 *
 * staging.c: uploads and downloads through pinned staging buffers, with
 * asynchronous copies on the queue's stream.
 *
 * Why: a copy between the GPU and pageable memory cannot be asynchronous
 * — the driver stages it itself, and a download to pageable memory
 * returns only once the copy is done, which waits for everything queued
 * before it. Through page-locked buffers both directions queue like a
 * kernel and return at once.
 *
 * The contracts (plugin.h), and how they are kept:
 *
 *   copy_in: |src| may be reused as soon as the call returns. The bytes
 *     are copied into a staging buffer first; the DMA from that buffer
 *     runs later, in stream order. The buffer is busy until an event
 *     recorded after the copy completes.
 *
 *   copy_out: the bytes are in |dst| when sync on the queue returns. The
 *     DMA lands in a staging buffer; the final memcpy into |dst| happens
 *     on the calling thread, never in a stream callback: in sync, after
 *     cuStreamSynchronize succeeded, or earlier when the plugin itself
 *     waits for that buffer's event (below) or sees it complete. A host
 *     callback (cuLaunchHostFunc) would hold the stream for as long as the
 *     memcpy takes, stalling the work queued behind a large read; here
 *     the GPU goes on while the host copies. If the stream failed, |dst|
 *     is left alone and sync returns the error.
 *
 * Each queue keeps its staged copies in a FIFO, oldest first. Events
 * complete in stream order, so buffers are retired from the head: a
 * finished upload's buffer goes back to the pool, a finished download's
 * bytes go to |dst| first. Later downloads into the same |dst| therefore
 * land after earlier ones, as the order of the calls says.
 *
 * The pool: buffers of power-of-two sizes from 64 KiB to staging_chunk,
 * per device, shared by its queues, holding at most staging_limit pinned
 * bytes. A copy larger than a chunk goes in chunks, so a large transfer
 * pipelines: the host copies chunk i while the DMA engine moves chunk
 * i - 1. When the pool is at its limit, a queue waits for its own oldest
 * staged copy and reuses that buffer; when it has none in flight (the
 * other queues hold the pool), the copy goes straight from or to pageable
 * memory instead — correct, only slower. staging_limit = 0 makes every
 * copy take that path. */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cuda/cuda_plugin.h"

/*===----------------------------------------------------------------------===
 * The pool
 *===----------------------------------------------------------------------===*/

static unsigned class_of(size_t size)
{
	unsigned c = 0;

	while ((CUDA_STAGING_MIN << c) < size)
		c++;
	return c;
}

static size_t class_size(unsigned c)
{
	return CUDA_STAGING_MIN << c;
}

static void destroy_buffer(struct cuda_device *dev, struct cuda_staging *b)
{
	if (b->done)
		dev->drv->cuEventDestroy(b->done);
	if (b->host)
		dev->drv->cuMemFreeHost(b->host);
	free(b);
}

static struct cuda_staging *new_buffer(struct cuda_device *dev, size_t size)
{
	const struct cuda_driver *drv = dev->drv;
	struct cuda_staging *b = calloc(1, sizeof *b);
	char text[256];
	CUresult result = CUDA_ERROR_OUT_OF_MEMORY;

	if (b) {
		b->size = size;
		result = drv->cuMemHostAlloc(&b->host, size, 0);
		if (result != CUDA_SUCCESS)
			b->host = NULL;
		else
			result = drv->cuEventCreate(&b->done,
						    CU_EVENT_DISABLE_TIMING);
	}
	if (result == CUDA_SUCCESS)
		return b;
	if (b)
		destroy_buffer(dev, b);
	/* Pinned memory may be scarce (a locked-memory limit): the copies
	 * still work, unstaged. Said once per device. */
	if (!dev->staging.failed) {
		dev->staging.failed = 1;
		dev->host->log(dev->host, WAFER_LOG_WARN,
			       "cuda:%" PRIu32 ": cannot pin a %zu-byte "
			       "staging buffer (%s); copies that find no "
			       "buffer go unstaged",
			       dev->index, size,
			       cuda_result_text(drv, result, text,
						sizeof text));
	}
	return NULL;
}

/* A free buffer of class |c|, or a new one within the limit (dropping
 * free buffers of other classes to make room), or NULL. */
static struct cuda_staging *pool_take(struct cuda_device *dev, unsigned c)
{
	struct cuda_staging_pool *pool = &dev->staging;
	struct cuda_staging *b, *victims = NULL;
	size_t need = class_size(c);

	pthread_mutex_lock(&pool->lock);
	b = pool->free[c];
	if (b) {
		pool->free[c] = b->next;
		pthread_mutex_unlock(&pool->lock);
		b->next = NULL;
		return b;
	}
	for (unsigned k = CUDA_STAGING_CLASSES; k-- > 0 &&
						pool->bytes + need > pool->limit;) {
		while (pool->free[k] && pool->bytes + need > pool->limit) {
			struct cuda_staging *v = pool->free[k];
			pool->free[k] = v->next;
			pool->bytes -= v->size;
			v->next = victims;
			victims = v;
		}
	}
	int room = pool->bytes + need <= pool->limit;
	if (room)
		pool->bytes += need;
	pthread_mutex_unlock(&pool->lock);

	while (victims) {
		struct cuda_staging *v = victims;
		victims = v->next;
		destroy_buffer(dev, v);
	}
	if (!room)
		return NULL;
	b = new_buffer(dev, need);
	if (!b) {
		pthread_mutex_lock(&pool->lock);
		pool->bytes -= need;
		pthread_mutex_unlock(&pool->lock);
	}
	return b;
}

static void pool_give(struct cuda_device *dev, struct cuda_staging *b)
{
	struct cuda_staging_pool *pool = &dev->staging;
	unsigned c = class_of(b->size);

	b->dst = NULL;
	b->bytes = 0;
	pthread_mutex_lock(&pool->lock);
	b->next = pool->free[c];
	pool->free[c] = b;
	pthread_mutex_unlock(&pool->lock);
}

wafer_status cuda_staging_open(struct cuda_device *device)
{
	struct cuda_staging_pool *pool = &device->staging;
	const struct cuda_options *o = &device->state->options;

	memset(pool, 0, sizeof *pool);
	pthread_mutex_init(&pool->lock, NULL);
	pool->limit = o->staging_limit;
	pool->chunk = o->staging_chunk;
	return WAFER_OK;
}

void cuda_staging_close(struct cuda_device *device)
{
	struct cuda_staging_pool *pool = &device->staging;

	/* The core destroys every queue before it closes the device, and a
	 * queue gives its buffers back then: all of them are free. */
	for (unsigned c = 0; c < CUDA_STAGING_CLASSES; c++) {
		while (pool->free[c]) {
			struct cuda_staging *b = pool->free[c];
			pool->free[c] = b->next;
			destroy_buffer(device, b);
		}
	}
	pthread_mutex_destroy(&pool->lock);
}

/*===----------------------------------------------------------------------===
 * A queue's staged copies
 *===----------------------------------------------------------------------===*/

static void fifo_push(struct cuda_queue *q, struct cuda_staging *b)
{
	b->next = NULL;
	if (q->tail)
		q->tail->next = b;
	else
		q->head = b;
	q->tail = b;
}

static struct cuda_staging *fifo_pop(struct cuda_queue *q)
{
	struct cuda_staging *b = q->head;

	q->head = b->next;
	if (!q->head)
		q->tail = NULL;
	b->next = NULL;
	return b;
}

/* The copy that used |b| is complete (or failed, !deliver): a download's
 * bytes go to the caller, and the buffer back to the pool. */
static void retire(struct cuda_device *dev, struct cuda_staging *b,
		   int deliver)
{
	if (b->dst && deliver)
		memcpy(b->dst, b->host, b->bytes);
	pool_give(dev, b);
}

/* Keeps the first failure for sync, like a kernel's. */
static void defer_error(struct cuda_device *dev, struct cuda_queue *q,
			CUresult result, const char *what)
{
	char text[256];
	wafer_status status = cuda_status(result);

	wafer_plugin_deferred_set(&q->failed,
				  status == WAFER_OK ? WAFER_ERROR_DEVICE : status,
				  "cuda: %s: %s", what,
				  cuda_result_text(dev->drv, result, text,
						   sizeof text));
}

/* Waits for the oldest staged copy of |q| and retires it. */
static void finish_oldest(struct cuda_device *dev, struct cuda_queue *q)
{
	struct cuda_staging *b = fifo_pop(q);
	CUresult result = dev->drv->cuEventSynchronize(b->done);

	if (result != CUDA_SUCCESS)
		defer_error(dev, q, result,
			    b->dst ? "staged download" : "staged upload");
	retire(dev, b, result == CUDA_SUCCESS);
}

/* Retires the staged copies at the head of |q| that have completed,
 * without waiting. */
static void retire_completed(struct cuda_device *dev, struct cuda_queue *q)
{
	while (q->head &&
	       dev->drv->cuEventQuery(q->head->done) == CUDA_SUCCESS)
		retire(dev, fifo_pop(q), 1);
}

/* A buffer of at least |size| (<= chunk) bytes for |q|, or NULL when the
 * pool is at its limit and |q| has nothing in flight to wait for. */
static struct cuda_staging *acquire(struct cuda_device *dev,
				    struct cuda_queue *q, size_t size)
{
	unsigned c = class_of(size);

	for (;;) {
		struct cuda_staging *b = pool_take(dev, c);
		if (b)
			return b;
		if (!q->head)
			return NULL;
		finish_oldest(dev, q);
	}
}

void cuda_staging_retire_all(struct cuda_device *device, struct cuda_queue *q,
			     int deliver)
{
	while (q->head)
		retire(device, fifo_pop(q), deliver);
}

/*===----------------------------------------------------------------------===
 * Uploads and downloads
 *===----------------------------------------------------------------------===*/

/* Unstaged: from pageable memory the driver copies |src| into its own
 * buffer before it returns, so |src| is free at once here too. */
static wafer_status direct_upload(struct cuda_device *dev, struct cuda_queue *q,
				  CUdeviceptr dst, const void *src,
				  size_t size)
{
	CUresult result = dev->drv->cuMemcpyHtoDAsync(dst, src, size,
						      q->stream);

	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result,
				 "cuMemcpyHtoDAsync(%zu, unstaged)", size);
	return WAFER_OK;
}

/* Unstaged: into pageable memory the copy returns once it is done. The
 * stream is synchronised as well, so the bytes are there whatever the
 * driver does. Called only with no staged copy of |q| pending, so no
 * earlier download can land in |dst| after this one. */
static wafer_status direct_download(struct cuda_device *dev,
				    struct cuda_queue *q, void *dst,
				    CUdeviceptr src, size_t size)
{
	CUresult result = dev->drv->cuMemcpyDtoHAsync(dst, src, size,
						      q->stream);

	if (result == CUDA_SUCCESS)
		result = dev->drv->cuStreamSynchronize(q->stream);
	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result,
				 "cuMemcpyDtoHAsync(%zu, unstaged)", size);
	return WAFER_OK;
}

/* The copy using |b| was issued but its event could not be recorded: wait
 * for the whole stream instead, so the buffer is safe to reuse. */
static wafer_status untracked(struct cuda_device *dev, struct cuda_queue *q,
			      struct cuda_staging *b, CUresult result)
{
	CUresult synced = dev->drv->cuStreamSynchronize(q->stream);

	retire(dev, b, synced == CUDA_SUCCESS);
	return cuda_fail(dev->state, result, "cuEventRecord (staging)");
}

/* An upload (|up|: host to dev) or a download (dev to host) through the
 * staging buffers, a chunk at a time, in the device's context; without a
 * buffer to be had, the rest goes direct. Nothing for 0 bytes. */
static wafer_status staging_copy(struct cuda_device *device,
				 struct cuda_queue *q, CUdeviceptr dev,
				 char *host, size_t size, int up)
{
	const struct cuda_driver *drv = device->drv;
	wafer_status status;
	CUresult result;

	if (size == 0)
		return WAFER_OK;
	status = cuda_enter(device);
	if (status != WAFER_OK)
		return status;
	retire_completed(device, q);
	while (size) {
		size_t n = size < device->staging.chunk ? size
							: device->staging.chunk;
		struct cuda_staging *b = acquire(device, q, n);
		if (!b)
			return up ? direct_upload(device, q, dev, host, size)
				  : direct_download(device, q, host, dev, size);
		if (up) {
			memcpy(b->host, host, n);
			result = drv->cuMemcpyHtoDAsync(dev, b->host, n,
							q->stream);
		} else {
			result = drv->cuMemcpyDtoHAsync(b->host, dev, n,
							q->stream);
		}
		if (result != CUDA_SUCCESS) {
			pool_give(device, b);
			return cuda_fail(device->state, result, "%s(%zu)",
					 up ? "cuMemcpyHtoDAsync"
					    : "cuMemcpyDtoHAsync",
					 n);
		}
		/* A download's bytes go to |host| when the buffer retires. */
		b->dst = up ? NULL : host;
		b->bytes = n;
		result = drv->cuEventRecord(b->done, q->stream);
		if (result != CUDA_SUCCESS)
			return untracked(device, q, b, result);
		fifo_push(q, b);
		dev += n;
		host += n;
		size -= n;
	}
	return WAFER_OK;
}

wafer_status cuda_staging_upload(struct cuda_device *device,
				 struct cuda_queue *q, CUdeviceptr dst,
				 const void *src, size_t size)
{
	/* Only read: staging_copy writes to |host| for downloads alone. */
	return staging_copy(device, q, dst, (char *)src, size, 1);
}

wafer_status cuda_staging_download(struct cuda_device *device,
				   struct cuda_queue *q, void *dst,
				   CUdeviceptr src, size_t size)
{
	return staging_copy(device, q, src, dst, size, 0);
}
