/* wafer — SPDX-License-Identifier: MIT
 *
 * vm_ranges.h: a device's list of vm_reserve'd address ranges, for the
 * plugins of this tree. Header-only and not installed. A plugin that
 * keeps more per range puts a struct vm_range first in its own struct,
 * so what vm_range_find returns converts back to it. */
#ifndef WAFER_PLUGINS_COMMON_VM_RANGES_H
#define WAFER_PLUGINS_COMMON_VM_RANGES_H

#include <stddef.h>
#include <stdint.h>

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

#endif
