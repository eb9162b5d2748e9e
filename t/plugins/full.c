/* wafer — SPDX-License-Identifier: MIT
 * full.c: a test plugin that offers every optional entry (stream-ordered
 * allocation, virtual memory, pinned host memory, timers, programs,
 * interop), so
 * the core derives every capability bit; two devices, for "full:1"
 * selectors. Its program entries are there to be seen, not used: it
 * takes host-so and loads none. */
#include "build-config.h"

#include "t/plugins/common.h"

TP_PLUGIN("full", "2.0.0", "test plugin: every optional entry", 2, 65536);

TP_STORAGE_OPS(full_storage_ops, TP_STORAGE_MEMORY, TP_STORAGE_INTEROP);

/* A vendor's own format beside a standard one (types.h). */
#define FULL_PROGRAM_ISA ((wafer_program_format)(WAFER_PROGRAM_VENDOR + 1))
static const wafer_program_format full_formats[] = {WAFER_PROGRAM_HOST_SO,
						    FULL_PROGRAM_ISA};

static wafer_status full_program_formats(void *device,
					 const wafer_program_format **out,
					 size_t *out_count)
{
	*out = full_formats;
	*out_count = sizeof full_formats / sizeof full_formats[0];
	return WAFER_OK;
}

static wafer_status full_program_load(void *device,
				      const struct wafer_program_source *source,
				      const char *options, void **out_program)
{
	*out_program = NULL;
	tp_host->set_error("full: programs are declared, never loaded");
	return WAFER_ERROR_NOT_SUPPORTED;
}

static wafer_status full_program_kernel(void *device, void *program,
					const char *name, uint32_t bindings,
					size_t params_size,
					const struct wafer_kernel **out_kernel)
{
	*out_kernel = NULL;
	return WAFER_ERROR_NOT_FOUND;
}

static void full_program_release(void *device, void *program)
{
}

TP_SERVER_OPS(full_server_ops, TP_SERVER_TIMERS, TP_SERVER_INTEROP,
	      .program_formats = full_program_formats,
	      .program_load = full_program_load,
	      .program_kernel = full_program_kernel,
	      .program_release = full_program_release);

TP_PLUGIN_TABLES(full_storage_ops, full_server_ops)
