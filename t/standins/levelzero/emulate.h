/* wafer — SPDX-License-Identifier: MIT
 *
 * emulate.h: how the test driver (t/standins/levelzero/driver.c) runs a kernel.
 * There is no GPU: each kernel a module may hold is emulated on host
 * memory by a C function found by the kernel's name. The function reads
 * its arguments from the bytes the plugin passed to
 * zeKernelSetArgumentValue, laid out as the kernel's OpenCL C signature
 * declares them, and walks the work-items of the groups the plugin
 * launched the way the kernel does, so a wrong argument, a wrong order of
 * arguments or a wrong launch shape gives a wrong value.
 *
 * Each access through a pointer argument is checked against what the
 * device can reach from that pointer (the rest of its allocation or run
 * of mapped pages): a kernel sent past its buffer is a violation, and the
 * emulation stops instead of touching memory that is not there.
 *
 * The tables: emulate_find (driver.c) looks a name up in every table of
 * its list emulate_tables[], NULL-name-terminated arrays of struct
 * emulate_kernel; a file emulating more kernels (user programs) adds its
 * table there. */
#ifndef WAFER_T_LEVELZERO_EMULATE_H
#define WAFER_T_LEVELZERO_EMULATE_H

#include <stddef.h>
#include <stdint.h>

#include "t/standins/levelzero/fakeze.h"

struct emulate_arg {
	const unsigned char *bytes; /* as set, |size| of them */
	uint32_t size;
	/* A global pointer argument: its value, and how many bytes from it
	 * the device can reach (0 for any other kind of argument). */
	unsigned char *ptr;
	size_t reach;
};

struct emulate_launch {
	const char *kernel;
	uint32_t group_size[3];
	uint32_t group_count[3];
	uint32_t arg_count;
	struct emulate_arg args[FAKEZE_MAX_ARGS];
	/* Set by emulate_fault; the emulation then stops. */
	int faulted;
};

typedef void emulate_fn(struct emulate_launch *launch);

struct emulate_kernel {
	const char *name;
	emulate_fn *run;
};

/* The emulation of kernel |name|, or NULL. */
emulate_fn *emulate_find(const char *name);

/* Records a violation against the launch (the driver's list of them) and
 * marks it faulted. */
void emulate_fault(struct emulate_launch *launch, const char *format, ...)
	__attribute__((format(printf, 2, 3)));

/* By-value argument |a| of |size| bytes, into |out|: 1, or 0 and a
 * fault when the plugin set something else (emulate_plugin.c). */
int emulate_value(struct emulate_launch *launch, uint32_t a, void *out,
		  size_t size);

/* Element |i| of |size| bytes through pointer argument |a|, or NULL
 * after a fault: the launch faulted already, |a| is not a pointer, or the
 * element is past what the device reaches from it (emulate_plugin.c). */
unsigned char *emulate_at(struct emulate_launch *launch, uint32_t a,
			  uint64_t i, size_t size);

/* The kernels of plugins/levelzero/kernels.cl (emulate_plugin.c). */
extern const struct emulate_kernel emulate_plugin_kernels[];
/* The kernels of t/user_kernels/kernels.cl, t/api/programs.c's (program.c). */
extern const struct emulate_kernel emulate_program_kernels[];

#endif
