/* wafer — SPDX-License-Identifier: MIT
 *
 * comm_inproc.c: plugin.h's comm entries over the in-process engine
 * (comm_inproc.h). */
#include "build-config.h"

#include <stdbool.h>
#include <stdint.h>

#include <wafer/plugin_util.h>

#include "plugins/cpu/comm_inproc.h"
#include "plugins/cpu/inproc_comm.h"

_Static_assert(sizeof(((wafer_comm_id *)0)->bytes) == INPROC_COMM_ID_BYTES,
	       "a wafer_comm_id is an inproc_comm id");

void comm_inproc_id(wafer_comm_id *out_id)
{
	inproc_comm_id_new(out_id->bytes);
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
	case INPROC_COMM_ABORTED:
		return WAFER_ERROR_DEVICE;
	}
	return WAFER_ERROR_INTERNAL;
}

wafer_status comm_inproc_open(const struct wafer_host_services *host,
			      const char *who,
			      const struct wafer_comm_open_args *args,
			      unsigned timeout_ms, void **out_comm)
{
	inproc_comm *comm;
	inproc_comm_status s;

	*out_comm = NULL;
	if (args->native) {
		host->set_error("%s: native communicator %p: the ranks of an "
				"in-process communicator are this process's "
				"clients; it takes none",
				who, args->native);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	s = inproc_comm_join(args->id->bytes, args->rank, args->size,
			     timeout_ms, &comm);
	if (s == INPROC_COMM_TIMEOUT) {
		host->set_error("%s: rank %u of %u: the other ranks did not "
				"join within %u s (open the ranks from threads "
				"of their own: wafer_comm_open_group)",
				who, args->rank, args->size, timeout_ms / 1000);
		return status_of(s);
	}
	if (s != INPROC_COMM_OK) {
		host->set_error("%s: rank %u of %u: %s", who, args->rank,
				args->size, inproc_comm_status_text(s));
		return status_of(s);
	}
	*out_comm = comm;
	return WAFER_OK;
}

void comm_inproc_close(void *comm)
{
	inproc_comm_leave(comm);
}

wafer_status comm_inproc_split(const struct wafer_host_services *host,
			       const char *who, void *comm, int32_t color,
			       int32_t key, unsigned timeout_ms,
			       void **out_comm, uint32_t *out_rank,
			       uint32_t *out_size)
{
	inproc_comm *sub;
	inproc_comm_status s =
		inproc_comm_split(comm, color, key, timeout_ms, &sub);

	*out_comm = NULL;
	if (s != INPROC_COMM_OK) {
		host->set_error("%s: split of rank %u (colour %d, key %d): %s",
				who, inproc_comm_rank(comm), (int)color,
				(int)key, inproc_comm_status_text(s));
		return status_of(s);
	}
	if (sub) {
		*out_rank = inproc_comm_rank(sub);
		*out_size = inproc_comm_size(sub);
	}
	*out_comm = sub;
	return WAFER_OK;
}

static bool dtype_of(wafer_dtype dtype, inproc_comm_dtype *out)
{
	switch (dtype) {
	case WAFER_DTYPE_F32: *out = INPROC_COMM_F32; return true;
	case WAFER_DTYPE_F16: *out = INPROC_COMM_F16; return true;
	case WAFER_DTYPE_BF16: *out = INPROC_COMM_BF16; return true;
	case WAFER_DTYPE_F64: *out = INPROC_COMM_F64; return true;
	case WAFER_DTYPE_I32: *out = INPROC_COMM_I32; return true;
	default: return false;
	}
}

wafer_status comm_inproc_run(const struct wafer_host_services *host,
			     void *comm, const struct wafer_collective *c,
			     const void *src, void *dst)
{
	inproc_comm_op op = c->op == WAFER_REDUCE_MAX ? INPROC_COMM_MAX
						      : INPROC_COMM_SUM;
	inproc_comm_dtype dtype;
	inproc_comm_status s = INPROC_COMM_INVALID;

	if (!dtype_of(c->dtype, &dtype)) {
		host->set_error("in-process collectives: %s is not supported "
				"(float32, float16, bfloat16, float64, int32)",
				wafer_plugin_dtype_name(c->dtype));
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
	case WAFER_COLLECTIVE_SEND:
		s = inproc_comm_send(comm, src, c->count, dtype, c->root);
		break;
	case WAFER_COLLECTIVE_RECV:
		s = inproc_comm_recv(comm, dst, c->count, dtype, c->root);
		break;
	}
	if (s != INPROC_COMM_OK)
		host->set_error("in-process collective (kind %d) on rank %u: %s",
				(int)c->kind, inproc_comm_rank(comm),
				inproc_comm_status_text(s));
	return status_of(s);
}
