/* wafer — SPDX-License-Identifier: MIT
 *
 * program_table.h: the programs (program.h) of every client of the
 * process and the kernel refs they hand out. A wafer_program pointer and
 * a program kernel's wafer_kernel_ref pointer are not addresses but ids,
 *
 *     program:  mark 0xA | generation | slot
 *     kernel:   mark 0xB | generation | slot | kernel index
 *
 * (field widths below), so a released program or a ref of one is
 * recognised by comparison instead of being dereferenced: its use is
 * WAFER_ERROR_INVALID_HANDLE in every build, also once a later program
 * took its slot (the slot's generation moved on). A release frees the
 * slot's kernels at once and puts the slot back on the free list, so a
 * long-lived client that creates and releases programs does not grow.
 * What a program holds on the device (the plugin's program and its
 * kernels) goes at release, in queue order
 * (WAFER_COMMAND_PROGRAM_RELEASE).
 *
 * The slots are the process's, not a client's: wafer_program_kernel and
 * wafer_program_release name no client, so the id alone must find it.
 * A slot remembers its client; a slot whose generation reaches the
 * largest an id carries is retired, never reused, so no id is issued
 * twice in a process. Slots live in blocks that are never moved or
 * freed, behind one read-write lock: launches read, create, kernel and
 * release write. Program kernel refs are told from the catalogue's
 * (kernel_table.h) by address first: a catalogue ref is a pointer the
 * library handed out, an id has its top bit set, which no user-space
 * address of the platforms wafer runs on has. */
#ifndef WAFER_CORE_PROGRAM_TABLE_H
#define WAFER_CORE_PROGRAM_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <wafer/plugin.h>
#include <wafer/program.h>

#if UINTPTR_MAX > UINT32_MAX
#define WAFER_PROGRAM_KERNEL_BITS 14
#define WAFER_PROGRAM_SLOT_BITS 20
#define WAFER_PROGRAM_GENERATION_BITS 24
#else
#define WAFER_PROGRAM_KERNEL_BITS 8
#define WAFER_PROGRAM_SLOT_BITS 10
#define WAFER_PROGRAM_GENERATION_BITS 10
#endif

/* A client's live programs, for its close. Under the table's lock. */
struct wafer__program_table {
	struct wafer_program *live; /* newest first */
	size_t count;
};

wafer_status wafer__program_table_init(struct wafer__program_table *table);

/* Client close, after the client's queue was synchronised for the last
 * time: releases what each live program holds on |device| and frees
 * their slots (their ids are refused from then on). */
struct wafer_runtime_device;
void wafer__program_table_fini(struct wafer__program_table *table,
			       struct wafer_runtime_device *device);

/* Whether |ref| is a program kernel ref: then its kernel in
 * |*out_kernel| when it is one of |client|'s live programs, else NULL
 * with the reason recorded (WAFER_ERROR_INVALID_HANDLE or
 * WAFER_ERROR_INVALID_ARGUMENT in |*out_status|). */
bool wafer__program_ref_deref(wafer_client *client, const void *ref,
			      const struct wafer_kernel **out_kernel,
			      wafer_status *out_status);

/* The slots the process has ever used (live, free or retired): what a
 * long-lived client's create and release cycles must keep bounded. */
size_t wafer__program_slots_used(void);

#endif
