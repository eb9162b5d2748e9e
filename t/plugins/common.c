/* wafer — SPDX-License-Identifier: MIT
 * common.c: the entries the test plugins share (common.h). */
#include "build-config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "t/plugins/common.h"

const struct wafer_host_services *_Atomic tp_host;
/* The states of the runtimes that have the plugin initialised. */
static pthread_mutex_t states_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tp_state *states;
/* The services of the last query: those of the runtime about to call
 * tp_init. */
static const struct wafer_host_services *queried;

/*===----------------------------------------------------------------------===
 * Tables with the required entries only
 *===----------------------------------------------------------------------===*/

const struct wafer_storage_ops tp_storage_ops = {
	.struct_size = sizeof(struct wafer_storage_ops),
	TP_STORAGE_REQUIRED,
	/* stream-ordered, virtual-memory and pinned-host ops left NULL */
};

const struct wafer_server_ops tp_server_ops = {
	.struct_size = sizeof(struct wafer_server_ops),
	TP_SERVER_REQUIRED,
	/* timers left NULL */
};

void tp_describe(const struct wafer_host_services *host,
		 struct wafer_plugin *d)
{
	pthread_mutex_lock(&states_lock);
	queried = host;
	/* A runtime may query and never initialise (and free |host| soon):
	 * while another has a state, its services stay the ones used. */
	if (!states)
		tp_host = host;
	pthread_mutex_unlock(&states_lock);
	*d = (struct wafer_plugin){
		.struct_size = sizeof(struct wafer_plugin),
		.abi_major = WAFER_PLUGIN_ABI_MAJOR,
		.abi_minor = WAFER_PLUGIN_ABI_MINOR,
		.name = tp_plugin.name,
		.version = tp_plugin.version,
		.description = tp_plugin.description,
		.init = tp_init,
		.shutdown = tp_shutdown,
		.device_count = tp_device_count,
		.device_info = tp_device_info,
		.device_open = tp_device_open,
		.device_close = tp_device_close,
		.device_kernels = tp_device_kernels,
		.storage = &tp_storage_ops,
		.server = &tp_server_ops,
	};
}

/*===----------------------------------------------------------------------===
 * Lifetime and devices
 *===----------------------------------------------------------------------===*/

static wafer_status parse_u64(const struct wafer_plugin_option *option,
			      uint64_t max, uint64_t *out)
{
	char *end;

	errno = 0;
	unsigned long long value = strtoull(option->value, &end, 0);
	if (errno || end == option->value || *end || value > max) {
		tp_host->set_error("%s: [%s] %s: expected a number up to %llu, "
				   "got '%s'",
				   option->origin, tp_plugin.name, option->key,
				   (unsigned long long)max, option->value);
		return WAFER_ERROR_CONFIG;
	}
	*out = value;
	return WAFER_OK;
}

static wafer_status apply_option(struct tp_state *s,
				 const struct wafer_plugin_option *option)
{
	uint64_t value;
	wafer_status status = WAFER_OK;

	if (strcmp(option->key, "devices") == 0) {
		status = parse_u64(option, TP_MAX_DEVICES, &value);
		s->device_count = (uint32_t)value;
	} else if (strcmp(option->key, "memory") == 0) {
		status = parse_u64(option, UINT64_MAX, &s->memory_bytes);
	} else if (strcmp(option->key, "caps") == 0) {
		status = parse_u64(option, UINT64_MAX, &s->caps);
	} else if (strcmp(option->key, "vm_granularity") == 0) {
		status = parse_u64(option, SIZE_MAX, &value);
		s->vm_granularity = (size_t)value;
	} else if (strcmp(option->key, "name") == 0) {
		snprintf(s->name, sizeof s->name, "%s [%s]", option->value,
			 option->origin);
	} else {
		tp_host->set_error("unknown option %s (%s)", option->key,
				   option->origin);
		status = WAFER_ERROR_CONFIG;
	}
	return status;
}

wafer_status tp_init(const struct wafer_plugin_init_args *args,
		     void **out_state)
{
	struct tp_state *s = calloc(1, sizeof *s);

	*out_state = NULL;
	if (!s) {
		tp_host->set_error("%s: out of memory", tp_plugin.name);
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	s->device_count = tp_plugin.devices;
	s->memory_bytes = UINT64_C(1) << 30;
	s->caps = WAFER_CAP_HOST_MEMORY | WAFER_CAP_F64;
	s->vm_granularity = tp_plugin.vm_granularity;
	for (size_t i = 0; i < args->option_count; i++) {
		wafer_status status = apply_option(s, &args->options[i]);
		if (status != WAFER_OK) {
			free(s);
			return status;
		}
	}
	for (uint32_t i = 0; i < TP_MAX_DEVICES; i++)
		s->devices[i].index = i;
	pthread_mutex_lock(&states_lock);
	s->host = queried;
	if (!states)
		tp_host = queried;
	s->next = states;
	states = s;
	pthread_mutex_unlock(&states_lock);
	tp_host->log(tp_host, WAFER_LOG_DEBUG, "init: %u device(s)",
		     s->device_count);
	*out_state = s;
	return WAFER_OK;
}

void tp_shutdown(void *state)
{
	struct tp_state *s = state, **p;

	pthread_mutex_lock(&states_lock);
	for (p = &states; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	/* This runtime's services go with it: the next call uses another
	 * runtime's, which stay while it has the plugin. */
	if (states)
		tp_host = states->host;
	pthread_mutex_unlock(&states_lock);
	free(state);
}

wafer_status tp_device_count(void *state, uint32_t *out_count)
{
	*out_count = ((struct tp_state *)state)->device_count;
	return WAFER_OK;
}

wafer_status tp_device_info(void *state, uint32_t index,
			    struct wafer_device_info *out)
{
	const struct tp_state *s = state;

	if (index >= s->device_count) {
		tp_host->set_error("no device %u", index);
		return WAFER_ERROR_NOT_FOUND;
	}
	if (s->name[0])
		snprintf(out->name, sizeof out->name, "%s", s->name);
	else
		snprintf(out->name, sizeof out->name, "%s device %u",
			 tp_plugin.name, index);
	out->memory_bytes = s->memory_bytes;
	out->capabilities = s->caps;
	out->alloc_alignment = 64;
	out->vm_granularity = s->vm_granularity;
	out->compute_units = 1;
	return WAFER_OK;
}

wafer_status tp_device_open(void *state, uint32_t index, void **out_device)
{
	struct tp_state *s = state;

	*out_device = NULL;
	if (index >= s->device_count) {
		tp_host->set_error("no device %u", index);
		return WAFER_ERROR_NOT_FOUND;
	}
	s->devices[index].open_count++;
	*out_device = &s->devices[index];
	return WAFER_OK;
}

/* Logs, so that a test sees a close its plugin's state does not outlive
 * (t/internal/loader.c: a device still acquired at runtime close). */
void tp_device_close(void *device)
{
	struct tp_device *d = device;

	d->close_count++;
	tp_host->log(tp_host, WAFER_LOG_DEBUG, "device_close: device %u",
		     d->index);
}

/*===----------------------------------------------------------------------===
 * Kernels: f32 fill and add, run at once
 *===----------------------------------------------------------------------===*/

struct tp_kernel_impl {
	wafer_status (*run)(const struct wafer_launch *launch);
};

static float *binding_f32(const struct wafer_launch *launch, uint32_t i,
			  uint64_t count)
{
	const struct wafer_binding *b = &launch->bindings[i];

	if (count > b->size / sizeof(float))
		return NULL;
	return (float *)((char *)(uintptr_t)b->resource + b->offset);
}

static wafer_status run_fill(const struct wafer_launch *launch)
{
	const struct wafer_fill_params *p = launch->params;
	float *out = binding_f32(launch, 0, p->count);

	if (!out) {
		tp_host->set_error("fill: %llu elements past the binding",
				   (unsigned long long)p->count);
		return WAFER_ERROR_OUT_OF_RANGE;
	}
	for (uint64_t i = 0; i < p->count; i++)
		out[i] = (float)p->value;
	return WAFER_OK;
}

static wafer_status run_add(const struct wafer_launch *launch)
{
	const struct wafer_elementwise_params *p = launch->params;
	float *out = binding_f32(launch, 0, p->count);
	const float *a = binding_f32(launch, 1, p->count);
	const float *b = binding_f32(launch, 2, p->count);

	if (!out || !a || !b) {
		tp_host->set_error("add: %llu elements past a binding",
				   (unsigned long long)p->count);
		return WAFER_ERROR_OUT_OF_RANGE;
	}
	for (uint64_t i = 0; i < p->count; i++)
		out[i] = a[i] + b[i];
	return WAFER_OK;
}

static const struct tp_kernel_impl fill_impl = {run_fill};
static const struct tp_kernel_impl add_impl = {run_add};

static const struct wafer_kernel tp_kernels[] = {
	{
		.struct_size = sizeof(struct wafer_kernel),
		.op = WAFER_KERNEL_FILL,
		.variant = "default",
		.dtype = WAFER_DTYPE_F32,
		.binding_count = 1,
		.params_size = sizeof(struct wafer_fill_params),
		.impl = &fill_impl,
	},
	{
		.struct_size = sizeof(struct wafer_kernel),
		.op = WAFER_KERNEL_ADD,
		.variant = "default",
		.dtype = WAFER_DTYPE_F32,
		.binding_count = 3,
		.params_size = sizeof(struct wafer_elementwise_params),
		.impl = &add_impl,
	},
};

wafer_status tp_device_kernels(void *device,
			       const struct wafer_kernel **out_kernels,
			       size_t *out_count)
{
	*out_kernels = tp_kernels;
	*out_count = sizeof tp_kernels / sizeof tp_kernels[0];
	return WAFER_OK;
}

wafer_status tp_launch(void *device, void *queue,
		       const struct wafer_launch *launch)
{
	const struct tp_kernel_impl *impl = launch->kernel->impl;

	if (launch->binding_count != launch->kernel->binding_count ||
	    launch->params_size != launch->kernel->params_size) {
		tp_host->set_error("%s: %u bindings, %zu params bytes",
				   launch->kernel->op, launch->binding_count,
				   launch->params_size);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	return impl->run(launch);
}

/*===----------------------------------------------------------------------===
 * Storage and queues: host memory, synchronous
 *===----------------------------------------------------------------------===*/

static void *host_bytes(wafer_resource resource, size_t offset)
{
	return (char *)(uintptr_t)resource + offset;
}

wafer_status tp_alloc(void *device, size_t size, wafer_resource *out_resource)
{
	void *p = aligned_alloc(64, (size + 63) & ~(size_t)63);

	*out_resource = 0;
	if (!p) {
		tp_host->set_error("aligned_alloc(%zu) failed", size);
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	*out_resource = (wafer_resource)(uintptr_t)p;
	return WAFER_OK;
}

void tp_free(void *device, wafer_resource resource)
{
	free((void *)(uintptr_t)resource);
}

wafer_status tp_copy_in(void *device, void *queue, wafer_resource dst,
			size_t dst_offset, const void *src, size_t size)
{
	memcpy(host_bytes(dst, dst_offset), src, size);
	return WAFER_OK;
}

wafer_status tp_copy_out(void *device, void *queue, wafer_resource src,
			 size_t src_offset, void *dst, size_t size)
{
	memcpy(dst, host_bytes(src, src_offset), size);
	return WAFER_OK;
}

wafer_status tp_copy(void *device, void *queue, wafer_resource dst,
		     size_t dst_offset, wafer_resource src, size_t src_offset,
		     size_t size)
{
	memmove(host_bytes(dst, dst_offset), host_bytes(src, src_offset), size);
	return WAFER_OK;
}

wafer_status tp_queue_create(void *device, void **out_queue)
{
	/* A real allocation, so a queue the core forgets to destroy shows
	 * up as a leak under the sanitizers. It holds the native queue it
	 * wraps (tp_queue_wrap), NULL for its own. */
	*out_queue = calloc(1, sizeof(void *));
	if (!*out_queue) {
		tp_host->set_error("queue: out of memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	((struct tp_device *)device)->queues_live++;
	return WAFER_OK;
}

void tp_queue_destroy(void *device, void *queue)
{
	((struct tp_device *)device)->queues_live--;
	free(queue);
}

wafer_status tp_sync(void *device, void *queue)
{
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Optional entries
 *===----------------------------------------------------------------------===*/

wafer_status tp_alloc_async(void *device, void *queue, size_t size,
			    wafer_resource *out_resource)
{
	return tp_alloc(device, size, out_resource);
}

wafer_status tp_free_async(void *device, void *queue, wafer_resource resource)
{
	tp_free(device, resource);
	return WAFER_OK;
}

/* The whole range is backed at once and map and unmap do nothing: enough
 * to offer the entries, which is all the loader tests look at. */
wafer_status tp_vm_reserve(void *device, size_t size, wafer_resource *out_range)
{
	return tp_alloc(device, size, out_range);
}

void tp_vm_release(void *device, wafer_resource range)
{
	tp_free(device, range);
}

wafer_status tp_vm_map(void *device, wafer_resource range, size_t offset,
		       size_t size)
{
	return WAFER_OK;
}

wafer_status tp_vm_unmap(void *device, wafer_resource range, size_t offset,
			 size_t size)
{
	return WAFER_OK;
}

wafer_status tp_host_alloc(void *device, size_t size, void **out_ptr)
{
	*out_ptr = malloc(size ? size : 1);
	if (!*out_ptr) {
		tp_host->set_error("host_alloc(%zu) failed", size);
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	return WAFER_OK;
}

void tp_host_free(void *device, void *ptr)
{
	free(ptr);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

wafer_status tp_timer_begin(void *device, void *queue, void **out_timer)
{
	uint64_t *start = malloc(sizeof *start);

	*out_timer = start;
	if (!start) {
		tp_host->set_error("timer: out of memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	*start = now_ns();
	return WAFER_OK;
}

wafer_status tp_timer_end(void *device, void *queue, void *timer,
			  uint64_t *out_ns)
{
	*out_ns = now_ns() - *(uint64_t *)timer;
	free(timer);
	return WAFER_OK;
}

wafer_status tp_native(void *device, wafer_resource resource, size_t offset,
		       struct wafer_native_buffer *out)
{
	out->kind = WAFER_NATIVE_HOST_POINTER;
	out->address = (uint64_t)resource + offset;
	return WAFER_OK;
}

wafer_status tp_import(void *device, const struct wafer_native_buffer *buffer,
		       wafer_resource *out_resource)
{
	*out_resource = (wafer_resource)buffer->address;
	return WAFER_OK;
}

void tp_forget(void *device, wafer_resource resource)
{
}

wafer_status tp_queue_native(void *device, void *queue,
			     struct wafer_native_queue *out)
{
	out->kind = WAFER_NATIVE_HOST_POINTER;
	out->queue = *(void **)queue;
	return WAFER_OK;
}

/* Any pointer stands for a caller's queue: the queue remembers it. */
wafer_status tp_queue_wrap(void *device, void *native, void **out_queue)
{
	wafer_status status = tp_queue_create(device, out_queue);
	if (status == WAFER_OK)
		*(void **)*out_queue = native;
	return status;
}
