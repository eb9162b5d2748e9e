/* wafer — SPDX-License-Identifier: MIT
 *
 * program_table.h: a client's programs (program.h) and the kernel refs
 * they hand out. The records a caller holds pointers to — a program and
 * each ref of its kernels — stay allocated until the client closes and
 * are never reused, so a released program or a ref of one is recognised
 * by a flag rather than dereferenced after a free: its use is
 * WAFER_ERROR_INVALID_HANDLE in every build. What a program holds on the
 * device (the plugin's program and its kernels) goes at release, in
 * queue order (WAFER_COMMAND_PROGRAM_RELEASE). A released program costs
 * its client a few dozen bytes until the client closes.
 *
 * Refs live in blocks that are never moved, so wafer_execute checks that
 * a ref is one of its client's with a range test per block, without a
 * lock and without touching memory that is not the client's (as the
 * catalogue refs of kernel_table.h are checked). */
#ifndef WAFER_CORE_PROGRAM_TABLE_H
#define WAFER_CORE_PROGRAM_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <wafer/plugin.h>

#define WAFER_PROGRAM_REF_BLOCK 64

/* What a program kernel's wafer_kernel_ref points at. */
struct wafer__program_ref {
	/* The plugin's entry; NULL once the program was released. */
	const struct wafer_kernel *_Atomic kernel;
	struct wafer_program *program;
};

struct wafer__program_ref_block {
	struct wafer__program_ref refs[WAFER_PROGRAM_REF_BLOCK];
	struct wafer__program_ref_block *next; /* older block */
};

struct wafer__program_table {
	/* Serialises create, kernel and release of the client's programs
	 * (not launches). */
	pthread_mutex_t lock;
	/* Newest block first; a block is published whole (release store)
	 * and never unlinked before the table's fini. */
	struct wafer__program_ref_block *_Atomic blocks;
	size_t used; /* refs used in the newest block; under |lock| */
	struct wafer_program *programs; /* every record, newest first */
};

wafer_status wafer__program_table_init(struct wafer__program_table *table);

/* Client close, after the client's queue was synchronised for the last
 * time: releases what each live program holds on |device| and frees
 * every record. */
struct wafer_runtime_device;
void wafer__program_table_fini(struct wafer__program_table *table,
			       struct wafer_runtime_device *device);

/* Whether |ref| is one of |table|'s program refs: then its kernel in
 * |*out_kernel|, or NULL when its program was released. */
static inline bool
wafer__program_table_deref(struct wafer__program_table *table, const void *ref,
			   const struct wafer_kernel **out_kernel)
{
	struct wafer__program_ref_block *b =
		atomic_load_explicit(&table->blocks, memory_order_acquire);
	for (; b; b = b->next) {
		uintptr_t offset = (uintptr_t)ref - (uintptr_t)b->refs;
		if (offset >= sizeof b->refs ||
		    offset % sizeof(struct wafer__program_ref))
			continue;
		const struct wafer__program_ref *r = ref;
		*out_kernel = atomic_load_explicit(&r->kernel,
						   memory_order_acquire);
		return true;
	}
	return false;
}

/* The detail of a launch of a released program's ref |ref| (one for
 * which deref gave NULL): WAFER_ERROR_INVALID_HANDLE. */
wafer_status wafer__program_ref_released(const void *ref);

#endif
