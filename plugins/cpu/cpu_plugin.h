/* wafer — SPDX-License-Identifier: MIT
 *
 * cpu_plugin.h: what the files of the cpu plugin share — the plugin instance, the
 * open device, and the ops tables each file provides. Reading order for a
 * vendor writing a plugin:
 *
 *   plugin.c     the descriptor and wafer_plugin_query; init (options),
 *                device info, device open/close
 *   storage.c    wafer_storage_ops: memory, copies, virtual memory
 *   server.c     wafer_server_ops: queues, launch, sync, timers
 *   event.c      events and host callbacks on synchronous queues
 *   kernels.c    the kernel table and the f32 kernels behind it
 *   program.c    the caller's own kernels: programs of host C or a
 *                shared object
 *   threadpool.c how a launch is spread over the cores
 *   comm.c       collectives, through the MPI module cpu-mpi.so
 *                (comm_mpi.c, loaded on first use)
 *
 * Nothing here is exported: the plugin is built with -fvisibility=hidden
 * and a version script, so wafer_plugin_query is its only dynamic symbol.
 * The plugin never links libwafer; it reaches the core only through the
 * host services table it is given. */
#ifndef WAFER_PLUGINS_CPU_CPU_PLUGIN_H
#define WAFER_PLUGINS_CPU_CPU_PLUGIN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <wafer/plugin.h>
#include <wafer/plugin_util.h>

/* Every allocation and every binding offset is a multiple of this: one
 * cache line, and the widest vector load (AVX-512) the kernels could use. */
#define CPU_ALIGNMENT 64

/* The most threads `threads = N` may ask for. */
#define CPU_MAX_THREADS 1024

/* The most devices `devices = N` may ask for. */
#define CPU_MAX_DEVICES 64

struct cpu_mpi_ops;

/* The plugin instance: one per init, freed by shutdown. Read-only after
 * init, so every thread may use it without locking, except the MPI
 * module's part (comm.c), which is under mpi_lock. */
struct cpu_state {
	/* The core's services: set_error and log. Checked by init. */
	const struct wafer_host_services *host;
	/* Threads a device runs kernels on, the calling thread included. */
	unsigned threads;
	/* Devices the plugin lists (`devices = N`, default 1): the same
	 * host memory and cores each, so that one process can try what
	 * several devices need (peer copies, wafer_comm_open_group). */
	unsigned devices;
	/* The MPI module, loaded by the first communicator (comm.c). */
	pthread_mutex_t mpi_lock;
	void *mpi_dl;
	const struct cpu_mpi_ops *mpi;
	/* This instance holds a reference on MPI (the module's acquire). */
	int mpi_acquired;
};

struct cpu_pool;
struct vm_range;

/* An open device. The core may call storage and server entries on it from
 * several threads at once (plugin.h), so everything mutable is either
 * locked or owned by a queue. */
struct cpu_device {
	const struct cpu_state *state;
	/* Runs the kernels (threadpool.h); safe for concurrent launches. */
	struct cpu_pool *pool;
	/* sysconf(_SC_PAGESIZE): the granularity of the vm_* entries. */
	size_t page_size;
	/* Address ranges from vm_reserve, with their sizes: munmap needs the
	 * size, and vm_map checks bounds against it. */
	pthread_mutex_t vm_lock;
	struct vm_range *vm_ranges;
	/* The device's queues (queue.c), drained before memory is freed. */
	pthread_mutex_t queues_lock;
	struct cpu_queue *queues;
	/* How many there are (written under queues_lock): with one, a
	 * launch on it runs on the calling thread when nothing is queued
	 * (cpu_queue_inline). */
	atomic_uint queue_count;
};

/* queue.c: a queue is a worker thread running its tasks in order. */
struct cpu_queue;
struct cpu_graph;
struct cpu_task {
	/* Runs on the worker and frees the task. */
	void (*run)(struct cpu_task *task, struct cpu_queue *queue);
	struct cpu_task *next;
};
struct cpu_queue {
	struct cpu_device *dev;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work, idle;
	struct cpu_task *head, *tail;
	/* Tasks pushed and not finished (the running one included). */
	size_t pending;
	bool stop;
	/* Failures of work that ran; sync reports the first. Under lock. */
	struct wafer_plugin_deferred failed;
	/* Between graph_begin and graph_end: where launches go instead of
	 * being queued (graph.h). The issuing thread's only. */
	struct cpu_graph *recording;
	struct cpu_queue *next; /* on dev->queues */
};
wafer_status cpu_queue_new(struct cpu_device *dev, struct cpu_queue **out);
/* Runs what is left on the queue, then frees it. */
void cpu_queue_free(struct cpu_queue *queue);
/* Puts |task| at the tail (the issuing thread only). */
void cpu_queue_push(struct cpu_queue *queue, struct cpu_task *task);
/* Waits until every task pushed has finished. */
void cpu_queue_drain(struct cpu_queue *queue);
bool cpu_queue_idle(struct cpu_queue *queue);
/* Whether a launch on |queue| may run on the calling thread instead of
 * its worker: it is the device's only queue and nothing is queued on it,
 * so the order is the same and there is nothing to overlap with (a
 * handoff to the worker costs more than a small kernel). */
bool cpu_queue_inline(struct cpu_queue *queue);
/* cpu_queue_drain of every queue of |dev|. */
void cpu_device_drain(struct cpu_device *dev);
/* Keeps a failure of work that ran for the queue's next sync. */
void cpu_queue_fail(struct cpu_queue *queue, wafer_status status,
		    const char *what, const char *detail);
/* Drains, then returns the first failure kept (and forgets them). */
wafer_status cpu_queue_report(struct cpu_queue *queue);

/* storage.c */
extern const struct wafer_storage_ops cpu_storage_ops;
/* Prepares and tears down a device's storage bookkeeping. close releases
 * any range the core left reserved (a core bug; logged). */
void cpu_storage_open(struct cpu_device *device);
void cpu_storage_close(struct cpu_device *device);

/* server.c: with the comm entries (comm.c), and without them for where
 * the MPI module is not installed (plugin.c chooses). */
extern const struct wafer_server_ops cpu_server_ops;
extern const struct wafer_server_ops cpu_server_ops_without_comm;

/* event.c: events and host callbacks (the server's ABI 1.5 entries) */
WAFER_PLUGIN_EVENT_ENTRIES(cpu);

/* The host's monotonic clock in nanoseconds: device time on cpu, where
 * work has finished when the call that issued it returns. */
static inline uint64_t cpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) +
	       (uint64_t)ts.tv_nsec;
}

/* comm.c: the server's comm entries; where the MPI module should be
 * (cpu-mpi.so beside cpu.so: 0, or -1 when the path does not fit); and
 * shutdown's part: gives back the instance's reference on MPI and
 * unloads the module. */
int cpu_mpi_module_path(char *buf, size_t size);
wafer_status cpu_comm_id(void *device, wafer_comm_id *out_id);
wafer_status cpu_comm_open(void *device,
			   const struct wafer_comm_open_args *args,
			   void **out_comm);
void cpu_comm_close(void *device, void *comm);
wafer_status cpu_comm_split(void *device, void *comm, int32_t color,
			    int32_t key, void **out_comm, uint32_t *out_rank,
			    uint32_t *out_size);
wafer_status cpu_comm_run(void *device, void *queue, void *comm,
			  const struct wafer_collective *c);
void cpu_comm_shutdown(struct cpu_state *state);

/* program.c: the caller's own kernels (host-c, host-so), the server's
 * program entries, and the launch of one of their kernels (server.c
 * hands it every launch of a program kernel's). */
WAFER_PLUGIN_PROGRAM_ENTRIES(cpu);
wafer_status cpu_program_launch(struct cpu_device *device,
				const struct wafer_launch *launch);

/* A resource is a host address widened to 64 bits (plugin.h). */
static inline void *cpu_resource_ptr(wafer_resource resource)
{
	return (void *)(uintptr_t)resource;
}

static inline wafer_resource cpu_ptr_resource(void *ptr)
{
	return (wafer_resource)(uintptr_t)ptr;
}

#endif
