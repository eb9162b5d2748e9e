/* wafer — SPDX-License-Identifier: MIT
 *
 * host.h: host memory a client registered (wafer_host_register). The
 * client keeps the ranges, sorted by address, so that a write or read
 * can tell in the caller's thread whether its host bytes lie inside one
 * (and then skip the staging copy: command.def's WRITE, READ_ASYNC); the
 * bridge registers them with the plugin (storage.host_register), after
 * the queued copies have run. */
#ifndef WAFER_CORE_HOST_H
#define WAFER_CORE_HOST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <wafer/wafer.h>

struct wafer__bridge;
struct wafer__command;
struct wafer_runtime_device;

struct wafer__host_range {
	uintptr_t base;
	size_t size;
};

struct wafer__host_ranges {
	/* Serialises register and unregister (each waits for the bridge). */
	pthread_mutex_t change;
	/* Guards the array: it changes or moves only under both locks, so
	 * register and unregister read it under |change|, lookups under
	 * this one (taken only while count is not 0). */
	pthread_mutex_t lock;
	atomic_size_t count;
	size_t capacity;
	struct wafer__host_range *ranges;
};

void wafer__host_ranges_init(struct wafer__host_ranges *ranges);
/* After the client's queues are closed: what the program left registered
 * is unregistered from the plugin (logged), and the ranges freed.
 * |device| may be NULL when none is registered. */
void wafer__host_ranges_fini(struct wafer__host_ranges *ranges,
			     struct wafer_runtime_device *device);

/* Whether [ptr, ptr+size) lies inside one registered range, and the
 * plugin copies from it directly (the storage group of ABI 1.7). */
bool wafer__host_direct(struct wafer__host_ranges *ranges,
			const struct wafer_runtime_device *device,
			const void *ptr, size_t size);

#endif
