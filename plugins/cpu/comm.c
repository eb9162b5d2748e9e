/* wafer — SPDX-License-Identifier: MIT
 *
 * comm.c: the cpu plugin's collectives (the server's comm entries of ABI
 * 1.4, wafer-comm(7)). With `devices = N` above 1 the ranks are clients of
 * this process on cpu:0 .. cpu:N-1, each on its own thread
 * (wafer_comm_open_group), and the in-process engine carries them
 * (comm_inproc.h). Otherwise they run through MPI, one rank per process, in the
 * module cpu-mpi.so (comm_mpi.c): cpu.so itself never links libmpi, so a
 * process without Open MPI loads it as before. The module is loaded the
 * first time a communicator is asked for, from the directory cpu.so was
 * loaded from. Where it is not installed the plugin has no comm entries
 * at all (plugin.c), so the core reports collectives as not supported;
 * where it is there but cannot be loaded, every comm entry reports
 * NOT_SUPPORTED, saying why. Nothing else changes either way.
 *
 * A collective runs on the calling thread once its queue has run what was
 * issued before it (queue.c), and before anything issued after it. */
#include "build-config.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "plugins/cpu/comm_inproc.h"
#include "plugins/cpu/comm_mpi.h"
#include "plugins/cpu/cpu_plugin.h"

/* cpu-mpi.so in the directory of the object this function lives in
 * (cpu.so). */
int cpu_mpi_module_path(char *buf, size_t size)
{
	const char *slash = NULL;
	Dl_info info;
	int n;

	if (dladdr((void *)cpu_mpi_module_path, &info) && info.dli_fname &&
	    (slash = strrchr(info.dli_fname, '/')))
		n = snprintf(buf, size, "%.*s/%s",
			     (int)(slash - info.dli_fname), info.dli_fname,
			     CPU_MPI_MODULE);
	else /* then dlopen searches the library path */
		n = snprintf(buf, size, "%s", CPU_MPI_MODULE);
	return n >= 0 && (size_t)n < size ? 0 : -1;
}

/* Loads the module once per plugin instance; with |acquire|, also takes
 * the instance's reference on MPI (initialising it if the application
 * has not). Called with mpi_lock held. */
static wafer_status load_module(struct cpu_state *state, int acquire)
{
	const struct wafer_host_services *host = state->host;
	char path[PATH_MAX];

	if (!state->mpi) {
		cpu_mpi_query_fn query;
		const struct cpu_mpi_ops *ops;
		void *dl;

		if (cpu_mpi_module_path(path, sizeof path) != 0) {
			host->set_error("cpu: collectives need cpu-mpi.so "
					"(configure --with-mpi): its path is "
					"longer than %d bytes",
					PATH_MAX);
			return WAFER_ERROR_NOT_SUPPORTED;
		}
		/* RTLD_NODELETE: Open MPI cannot be unloaded and loaded
		 * again in one process (nor is it made to be unloaded at
		 * all: its libraries register exit handlers). */
		dl = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
		if (!dl) {
			host->set_error("cpu: collectives need cpu-mpi.so "
					"(configure --with-mpi): %s",
					dlerror());
			return WAFER_ERROR_NOT_SUPPORTED;
		}
		*(void **)&query = dlsym(dl, CPU_MPI_QUERY_SYMBOL);
		ops = query ? query() : NULL;
		if (!ops || ops->version != CPU_MPI_VERSION) {
			host->set_error("cpu: collectives need cpu-mpi.so "
					"(configure --with-mpi): %s is not the "
					"module of this cpu plugin (%s)",
					path,
					!query ? "no " CPU_MPI_QUERY_SYMBOL
					       : "another version");
			dlclose(dl);
			return WAFER_ERROR_NOT_SUPPORTED;
		}
		state->mpi_dl = dl;
		state->mpi = ops;
		host->log(host, WAFER_LOG_DEBUG, "cpu: MPI module %s loaded",
			  path);
	}
	if (acquire && !state->mpi_acquired) {
		wafer_status status = state->mpi->acquire(host);
		if (status != WAFER_OK)
			return status;
		state->mpi_acquired = 1;
	}
	return WAFER_OK;
}

static wafer_status module(struct cpu_device *dev, int acquire)
{
	/* The instance is read-only to devices but for its MPI part, which
	 * is under mpi_lock (cpu_plugin.h). */
	struct cpu_state *state = (struct cpu_state *)dev->state;
	wafer_status status;

	pthread_mutex_lock(&state->mpi_lock);
	status = load_module(state, acquire);
	pthread_mutex_unlock(&state->mpi_lock);
	return status;
}

/* How long the ranks of an in-process communicator wait for each other:
 * they open on threads of one process, so seconds mean a rank that will
 * never come. */
#define INPROC_JOIN_TIMEOUT_MS 60000

/* Whether |dev|'s communicators are in-process (devices = N > 1). */
static int in_process(const struct cpu_device *dev)
{
	return dev->state->devices > 1;
}

/* MPI finds its peers through the MPI communicator: the id is all zeros.
 * Still NOT_SUPPORTED without the module, so that a caller learns it
 * before sending ids around. */
wafer_status cpu_comm_id(void *device, wafer_comm_id *out_id)
{
	if (in_process(device)) {
		comm_inproc_id(out_id);
		return WAFER_OK;
	}
	wafer_status status = module(device, 0);

	memset(out_id, 0, sizeof *out_id);
	return status;
}

wafer_status cpu_comm_open(void *device,
			   const struct wafer_comm_open_args *args,
			   void **out_comm)
{
	struct cpu_device *dev = device;

	if (in_process(dev))
		return comm_inproc_open(dev->state->host, "cpu", args,
					INPROC_JOIN_TIMEOUT_MS, out_comm);
	wafer_status status = module(dev, 1);

	*out_comm = NULL;
	if (status != WAFER_OK)
		return status;
	return dev->state->mpi->open(dev->state->host, args->rank, args->size,
				     args->native, out_comm);
}

void cpu_comm_close(void *device, void *comm)
{
	struct cpu_device *dev = device;

	if (comm && in_process(dev))
		comm_inproc_close(comm);
	else if (comm)
		dev->state->mpi->close(comm);
}

wafer_status cpu_comm_split(void *device, void *comm, int32_t color,
			    int32_t key, void **out_comm, uint32_t *out_rank,
			    uint32_t *out_size)
{
	struct cpu_device *dev = device;

	if (in_process(dev))
		return comm_inproc_split(dev->state->host, "cpu", comm, color,
					 key, INPROC_JOIN_TIMEOUT_MS, out_comm,
					 out_rank, out_size);
	return dev->state->mpi->split(comm, color, key, out_comm, out_rank,
				      out_size);
}

wafer_status cpu_comm_run(void *device, void *queue, void *comm,
			  const struct wafer_collective *c)
{
	struct cpu_device *dev = device;
	const char *src = (const char *)cpu_resource_ptr(c->src);
	char *dst = (char *)cpu_resource_ptr(c->dst);

	cpu_queue_drain(queue);
	/* A broadcast's non-root ranks may pass no source. */
	if (src)
		src += c->src_offset;
	if (in_process(dev))
		return comm_inproc_run(dev->state->host, comm, c, src,
				       dst + c->dst_offset);
	return dev->state->mpi->run(comm, c, src, dst + c->dst_offset);
}

void cpu_comm_shutdown(struct cpu_state *state)
{
	if (state->mpi_acquired)
		state->mpi->release(state->host);
	if (state->mpi_dl)
		dlclose(state->mpi_dl);
	state->mpi_acquired = 0;
	state->mpi_dl = NULL;
	state->mpi = NULL;
}
