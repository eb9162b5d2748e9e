/* wafer — SPDX-License-Identifier: MIT
 * collective.c: a test plugin with the scale-out entries of ABI 1.4:
 * storage.copy_peer (a memcpy: its memory is host memory and its queues
 * run work at once) and the server's comm entries over the in-process
 * engine t/standins/inproc_comm.c, where ranks are the threads of this process.
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

#include "t/standins/inproc_comm.h"
#include "t/plugins/common.h"

const struct tp_plugin_defaults tp_plugin = {
	.name = "collective",
	.version = "1.0",
	.description = "test plugin: peer copies and collectives in process",
	.devices = 4,
};

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
	_Static_assert(sizeof out_id->bytes == INPROC_COMM_ID_BYTES,
		       "a wafer_comm_id is an inproc_comm id");
	inproc_comm_id_new(out_id->bytes);
	return WAFER_OK;
}

static wafer_status status_of(inproc_comm_status s)
{
	switch (s) {
	case INPROC_COMM_OK:
		return WAFER_OK;
	case INPROC_COMM_INVALID:
	case INPROC_COMM_MISMATCH:
		return WAFER_ERROR_INVALID_ARGUMENT;
	case INPROC_COMM_NO_MEMORY:
		return WAFER_ERROR_OUT_OF_MEMORY;
	case INPROC_COMM_TIMEOUT:
		return WAFER_ERROR_DEVICE;
	}
	return WAFER_ERROR_INTERNAL;
}

static wafer_status collective_comm_open(void *device,
					 const struct wafer_comm_open_args *args,
					 void **out_comm)
{
	struct tp_device *d = device;
	inproc_comm *comm;
	inproc_comm_status s;
	const char *fail;

	*out_comm = NULL;
	if (args->native) {
		tp_host->set_error("collective: native communicator %p: this "
				   "plugin has no transport of its own",
				   args->native);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	s = inproc_comm_join(args->id->bytes, args->rank, args->size,
			     JOIN_TIMEOUT_MS, &comm);
	if (s != INPROC_COMM_OK) {
		tp_host->set_error("collective:%u: rank %u of %u: %s", d->index,
				   args->rank, args->size,
				   inproc_comm_status_text(s));
		return status_of(s);
	}
	fail = getenv("T_COLLECTIVE_FAIL_RANK");
	if (fail && strtoul(fail, NULL, 10) == args->rank) {
		inproc_comm_leave(comm);
		tp_host->set_error("collective:%u: rank %u refused "
				   "(T_COLLECTIVE_FAIL_RANK)",
				   d->index, args->rank);
		return WAFER_ERROR_DEVICE;
	}
	*out_comm = comm;
	return WAFER_OK;
}

static void collective_comm_close(void *device, void *comm)
{
	inproc_comm_leave(comm);
}

static bool dtype_of(wafer_dtype dtype, inproc_comm_dtype *out)
{
	switch (dtype) {
	case WAFER_DTYPE_F32:
		*out = INPROC_COMM_F32;
		return true;
	case WAFER_DTYPE_F16:
		*out = INPROC_COMM_F16;
		return true;
	case WAFER_DTYPE_BF16:
		*out = INPROC_COMM_BF16;
		return true;
	case WAFER_DTYPE_F64:
		*out = INPROC_COMM_F64;
		return true;
	case WAFER_DTYPE_I32:
		*out = INPROC_COMM_I32;
		return true;
	default:
		return false;
	}
}

/* Runs at once on the calling thread, as every launch here does; it
 * waits for the other ranks inside the engine. */
static wafer_status collective_comm_run(void *device, void *queue, void *comm,
					const struct wafer_collective *c)
{
	void *src = (char *)(uintptr_t)c->src + c->src_offset;
	void *dst = (char *)(uintptr_t)c->dst + c->dst_offset;
	inproc_comm_op op = c->op == WAFER_REDUCE_MAX ? INPROC_COMM_MAX
						      : INPROC_COMM_SUM;
	inproc_comm_dtype dtype;
	inproc_comm_status s = INPROC_COMM_INVALID;

	if (!dtype_of(c->dtype, &dtype)) {
		tp_host->set_error("collective: dtype %d not supported",
				   (int)c->dtype);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	switch (c->kind) {
	case WAFER_COLLECTIVE_ALL_REDUCE:
		s = inproc_comm_all_reduce(comm, src, dst, c->count, dtype, op);
		break;
	case WAFER_COLLECTIVE_BROADCAST:
		s = inproc_comm_broadcast(comm, src, dst, c->count, dtype,
					  c->root);
		break;
	case WAFER_COLLECTIVE_ALL_GATHER:
		s = inproc_comm_all_gather(comm, src, dst, c->count, dtype);
		break;
	case WAFER_COLLECTIVE_REDUCE_SCATTER:
		s = inproc_comm_reduce_scatter(comm, src, dst, c->count, dtype,
					       op);
		break;
	}
	if (s != INPROC_COMM_OK)
		tp_host->set_error("collective: kind %d on rank %u: %s",
				   (int)c->kind, inproc_comm_rank(comm),
				   inproc_comm_status_text(s));
	return status_of(s);
}

static const struct wafer_storage_ops collective_storage_ops = {
	.struct_size = sizeof(struct wafer_storage_ops),
	.alloc = tp_alloc,
	.free = tp_free,
	.copy_in = tp_copy_in,
	.copy_out = tp_copy_out,
	.copy = tp_copy,
	.copy_peer = collective_copy_peer,
};

static const struct wafer_server_ops collective_server_ops = {
	.struct_size = sizeof(struct wafer_server_ops),
	.queue_create = tp_queue_create,
	.queue_destroy = tp_queue_destroy,
	.launch = tp_launch,
	.sync = tp_sync,
	.comm_id = collective_comm_id,
	.comm_open = collective_comm_open,
	.comm_close = collective_comm_close,
	.comm_run = collective_comm_run,
};

WAFER_PLUGIN_EXPORT const struct wafer_plugin *
wafer_plugin_query(uint32_t core_abi_major,
		   const struct wafer_host_services *host)
{
	static struct wafer_plugin d;

	tp_describe(host, &d);
	d.storage = &collective_storage_ops;
	d.server = &collective_server_ops;
	return &d;
}
