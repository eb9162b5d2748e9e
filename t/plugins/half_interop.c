/* wafer — SPDX-License-Identifier: MIT
 * half_interop.c: a test plugin with part of each group of interop entries
 * (ABI 1.3): storage native and import without forget, server queue_wrap
 * without queue_native; three of the four comm entries (ABI 1.4), no
 * comm_run; and three of the four program entries (ABI 1.2), no
 * program_release. It loads; the loader drops each group with a warning,
 * so interop, collectives and programs read as not supported. */
#include "build-config.h"

#include <string.h>

#include "t/plugins/common.h"

TP_PLUGIN("half_interop", "1.0",
	  "test plugin: interop and comm entries in part", 1, 0);

TP_STORAGE_OPS(half_storage_ops, .native = tp_native, .import = tp_import);

/* Never called: the loader drops them. */
static wafer_status half_comm_id(void *device, wafer_comm_id *out_id)
{
	memset(out_id, 0, sizeof *out_id);
	return WAFER_OK;
}

static wafer_status half_comm_open(void *device,
				   const struct wafer_comm_open_args *args,
				   void **out_comm)
{
	*out_comm = NULL;
	return WAFER_ERROR_INTERNAL;
}

static void half_comm_close(void *device, void *comm)
{
}

static wafer_status half_program_formats(void *device,
					 const wafer_program_format **out,
					 size_t *out_count)
{
	*out = NULL;
	*out_count = 0;
	return WAFER_ERROR_INTERNAL;
}

static wafer_status half_program_load(void *device,
				      const struct wafer_program_source *source,
				      const char *options, void **out_program)
{
	*out_program = NULL;
	return WAFER_ERROR_INTERNAL;
}

static wafer_status half_program_kernel(void *device, void *program,
					const char *name,
					uint32_t binding_count,
					size_t params_size,
					const struct wafer_kernel **out_kernel)
{
	*out_kernel = NULL;
	return WAFER_ERROR_INTERNAL;
}

TP_SERVER_OPS(half_server_ops, .queue_wrap = tp_queue_wrap,
	      .comm_id = half_comm_id, .comm_open = half_comm_open,
	      .comm_close = half_comm_close,
	      .program_formats = half_program_formats,
	      .program_load = half_program_load,
	      .program_kernel = half_program_kernel);

TP_PLUGIN_TABLES(half_storage_ops, half_server_ops)
