/* wafer — SPDX-License-Identifier: MIT
 *
 * comm_mpi.h: what the cpu plugin (comm.c) and its MPI module, cpu-mpi.so
 * (comm_mpi.c), say to each other. The plugin must not link libmpi: a
 * process without Open MPI still loads cpu.so. So the collectives live in
 * a module of their own, linked with libmpi, which the plugin dlopens from
 * its own directory at the first communicator and asks for this table
 * through its one exported symbol. Both are built from this tree, so the
 * version only guards against a stale module left beside a newer plugin.
 *
 * Pointers, not resources: the plugin turns resources and offsets into
 * host addresses before calling run. Errors are set through the host
 * services (set_error) like any plugin entry's. */
#ifndef WAFER_PLUGINS_CPU_COMM_MPI_H
#define WAFER_PLUGINS_CPU_COMM_MPI_H

#include <stdint.h>

#include <wafer/plugin.h>

#define CPU_MPI_MODULE "cpu-mpi.so"
#define CPU_MPI_QUERY_SYMBOL "cpu_mpi_query"
#define CPU_MPI_VERSION 2

struct cpu_mpi_ops {
	uint32_t version; /* CPU_MPI_VERSION */
	/* Takes a reference on MPI for one plugin instance: the first
	 * reference initialises MPI (MPI_THREAD_MULTIPLE) when the caller
	 * has not; the last release finalises it if it was ours. */
	wafer_status (*acquire)(const struct wafer_host_services *host);
	void (*release)(const struct wafer_host_services *host);
	/* A communicator over |native| (an MPI_Comm *, or NULL for
	 * MPI_COMM_WORLD), duplicated so wafer's messages never meet the
	 * caller's. MPI's rank and size must be |rank| and |size|. */
	wafer_status (*open)(const struct wafer_host_services *host,
			     uint32_t rank, uint32_t size, void *native,
			     void **out_comm);
	void (*close)(void *comm);
	/* Runs |c| to completion on the calling thread; |src| and |dst| are
	 * the host addresses of c->src + c->src_offset and c->dst +
	 * c->dst_offset. */
	wafer_status (*run)(void *comm, const struct wafer_collective *c,
			    const void *src, void *dst);
	/* plugin.h's comm_split: MPI_Comm_split (colour -1 is
	 * MPI_UNDEFINED). Since version 2. */
	wafer_status (*split)(void *comm, int32_t color, int32_t key,
			      void **out_comm, uint32_t *out_rank,
			      uint32_t *out_size);
};

/* The module's one exported symbol. */
typedef const struct cpu_mpi_ops *(*cpu_mpi_query_fn)(void);

#endif
