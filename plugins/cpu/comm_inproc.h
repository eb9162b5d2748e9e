/* wafer — SPDX-License-Identifier: MIT
 *
 * comm_inproc.h: the comm entries of plugin.h over the in-process engine
 * (inproc_comm.h): ranks are clients of one process, each on its own
 * thread (wafer_comm_open_group), on host memory. The cpu plugin's
 * communicators when it lists several devices (comm.c); the test plugin
 * t/plugins/collective.c runs on them too. |who| names the caller in
 * errors ("cpu:1"). */
#ifndef WAFER_PLUGINS_CPU_COMM_INPROC_H
#define WAFER_PLUGINS_CPU_COMM_INPROC_H

#include <wafer/plugin.h>

/* A new id, unique in this process. */
void comm_inproc_id(wafer_comm_id *out_id);

/* Joins |args->id| as |args->rank| of |args->size|, waiting up to
 * |timeout_ms| for the other ranks (0: for ever). */
wafer_status comm_inproc_open(const struct wafer_host_services *host,
			      const char *who,
			      const struct wafer_comm_open_args *args,
			      unsigned timeout_ms, void **out_comm);

void comm_inproc_close(void *comm);

/* plugin.h's comm_split: the new group's ranks wait up to |timeout_ms|
 * for each other. */
wafer_status comm_inproc_split(const struct wafer_host_services *host,
			       const char *who, void *comm, int32_t color,
			       int32_t key, unsigned timeout_ms,
			       void **out_comm, uint32_t *out_rank,
			       uint32_t *out_size);

/* Runs |c| at once, on host pointers |src| and |dst| (offsets added);
 * it waits inside for the other ranks' same call. float32, float16,
 * bfloat16, float64 and int32; another dtype is NOT_SUPPORTED. */
wafer_status comm_inproc_run(const struct wafer_host_services *host,
			     void *comm, const struct wafer_collective *c,
			     const void *src, void *dst);

#endif
