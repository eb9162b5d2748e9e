/* wafer — SPDX-License-Identifier: MIT
 * collective.c: a test plugin with the scale-out entries of ABI 1.4
 * (and comm_split of 1.7):
 * storage.copy_peer (a memcpy: its memory is host memory and its queues
 * run work at once) and the server's comm entries over the in-process
 * engine plugins/cpu/inproc_comm.c, where ranks are the threads of this process.
 * Four devices, so one process holds a communicator of four clients
 * (wafer_comm_open_group); t/api/comm and t/api/peer run on it under every
 * sanitizer. Native communicators (wafer_comm_options.native) are
 * refused. T_COLLECTIVE_FAIL_RANK=r in the environment makes rank r's
 * comm_open fail once the group formed (so the other ranks open: t/api/comm
 * checks that wafer_comm_open_group closes them again). */
#include "build-config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/comm_inproc.h"
#include "t/plugins/common.h"

TP_PLUGIN("collective", "1.0",
	  "test plugin: peer copies and collectives in process", 4, 0);

/* A rank whose peers do not come fails instead of hanging the test
 * that got it wrong; no correct test comes near it. */
#define JOIN_TIMEOUT_MS 120000u

static wafer_status collective_copy_peer(void *device, void *queue,
					 wafer_resource dst, size_t dst_offset,
					 void *src_device, void *src_queue,
					 wafer_resource src, size_t src_offset,
					 size_t size)
{
	memmove((char *)(uintptr_t)dst + dst_offset,
		(const char *)(uintptr_t)src + src_offset, size);
	return WAFER_OK;
}

static wafer_status collective_comm_id(void *device, wafer_comm_id *out_id)
{
	comm_inproc_id(out_id);
	return WAFER_OK;
}

static wafer_status collective_comm_open(void *device,
					 const struct wafer_comm_open_args *args,
					 void **out_comm)
{
	struct tp_device *d = device;
	wafer_status status = comm_inproc_open(tp_host, "collective", args,
					       JOIN_TIMEOUT_MS, out_comm);
	const char *fail = getenv("T_COLLECTIVE_FAIL_RANK");

	if (status == WAFER_OK && fail &&
	    strtoul(fail, NULL, 10) == args->rank) {
		comm_inproc_close(*out_comm);
		*out_comm = NULL;
		tp_host->set_error("collective:%u: rank %u refused "
				   "(T_COLLECTIVE_FAIL_RANK)",
				   d->index, args->rank);
		return WAFER_ERROR_DEVICE;
	}
	return status;
}

static void collective_comm_close(void *device, void *comm)
{
	comm_inproc_close(comm);
}

static wafer_status collective_comm_split(void *device, void *comm,
					  int32_t color, int32_t key,
					  void **out_comm, uint32_t *out_rank,
					  uint32_t *out_size)
{
	return comm_inproc_split(tp_host, "collective", comm, color, key,
				 JOIN_TIMEOUT_MS, out_comm, out_rank,
				 out_size);
}

/* Runs at once on the calling thread, as every launch here does; it
 * waits for the other ranks inside the engine. */
static wafer_status collective_comm_run(void *device, void *queue, void *comm,
					const struct wafer_collective *c)
{
	return comm_inproc_run(tp_host, comm, c,
			       (const char *)(uintptr_t)c->src + c->src_offset,
			       (char *)(uintptr_t)c->dst + c->dst_offset);
}

TP_STORAGE_OPS(collective_storage_ops, .copy_peer = collective_copy_peer);

TP_SERVER_OPS(collective_server_ops, .comm_id = collective_comm_id,
	      .comm_open = collective_comm_open,
	      .comm_close = collective_comm_close,
	      .comm_run = collective_comm_run,
	      .comm_split = collective_comm_split);

TP_PLUGIN_TABLES(collective_storage_ops, collective_server_ops)
