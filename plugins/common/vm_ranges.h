/* wafer — SPDX-License-Identifier: MIT
 *
 * vm_ranges.h: a device's list of vm_reserve'd address ranges, for the
 * plugins of this tree. Header-only and not installed. A plugin that
 * keeps more per range puts a struct vm_range first in its own struct,
 * so what vm_range_find returns converts back to it. */
#ifndef WAFER_PLUGINS_COMMON_VM_RANGES_H
#define WAFER_PLUGINS_COMMON_VM_RANGES_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <wafer/plugin_util.h>

/* One reserved range: [base, base + size). */
struct vm_range {
	uintptr_t base;
	size_t size;
	struct vm_range *next;
};

/* Puts |r| on |*list|. Called with the lock that guards the list held. */
static inline void vm_range_add(struct vm_range **list, struct vm_range *r)
{
	r->next = *list;
	*list = r;
}

/* The range of |*list| starting at |base|, or NULL; with |unlink|, also
 * taken off the list (the caller frees it). Called with the lock that
 * guards the list held. */
static inline struct vm_range *vm_range_find(struct vm_range **list,
					     uintptr_t base, int unlink)
{
	for (struct vm_range **p = list; *p; p = &(*p)->next) {
		struct vm_range *r = *p;
		if (r->base != base)
			continue;
		if (unlink)
			*p = r->next;
		return r;
	}
	return NULL;
}

/* vm_map's and vm_unmap's opening, for a plugin that keeps each page's
 * state: takes |lock| (the one guarding |*list|), finds the range at
 * |range| and checks that [offset, offset + size) is whole pages of
 * |page| bytes in it, every one |mapped| (1) or not (0), as |page_mapped|
 * tells (wafer_plugin_vm_pages_check). On WAFER_OK |lock| is held and
 * *out_r is the range; on a failure |lock| is not held. */
static inline wafer_status vm_range_lock_pages(
	pthread_mutex_t *lock, struct vm_range **list,
	const struct wafer_host_services *host, const char *plugin,
	const char *what, wafer_resource range, size_t offset, size_t size,
	size_t page, int mapped, wafer_plugin_vm_page_mapped_fn *page_mapped,
	struct vm_range **out_r)
{
	pthread_mutex_lock(lock);
	struct vm_range *r = vm_range_find(list, range, 0);
	wafer_status status = wafer_plugin_vm_pages_check(
		host, plugin, what, range, r ? r->size : 0, offset, size, page,
		mapped, page_mapped, r);

	if (status != WAFER_OK) {
		pthread_mutex_unlock(lock);
		return status;
	}
	*out_r = r;
	return WAFER_OK;
}

#endif
