/* wafer — SPDX-License-Identifier: MIT
 *
 * plugin.c: the cpu plugin's descriptor and its one exported symbol,
 * wafer_plugin_query; the plugin's lifetime (init, shutdown) and its
 * devices (count, info, open, close, kernels). Start reading at the
 * descriptor at the bottom of the file.
 *
 * Options, in the [cpu] section of wafer.conf(5):
 *   threads = N   threads a launch may use, the launching thread included;
 *                 0 or absent: one per online core.
 *   devices = N   devices the plugin lists, 1..CPU_MAX_DEVICES (default
 *                 1): each the whole host (its memory, `threads` threads
 *                 of its own), for peer copies and communicators of
 *                 several devices in one process.
 *   cache = off, cache_dir = DIR
 *                 the binary cache of host-c programs (read by the core,
 *                 see wafer.conf(5) [core] cache_dir). */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugins/cpu/cpu_plugin.h"
#include "plugins/cpu/kernels.h"
#include "plugins/cpu/threadpool.h"

/*===----------------------------------------------------------------------===
 * Lifetime and options
 *===----------------------------------------------------------------------===*/

static unsigned online_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		return 1;
	return n > CPU_MAX_THREADS ? CPU_MAX_THREADS : (unsigned)n;
}

/* Parses a count: decimal digits only, 0..|max|. */
static int parse_count(const char *text, unsigned max, unsigned *out_count)
{
	unsigned long n;
	char *end;

	if (!text || text[0] < '0' || text[0] > '9')
		return -1;
	errno = 0;
	n = strtoul(text, &end, 10);
	if (errno || *end || n > max)
		return -1;
	*out_count = (unsigned)n;
	return 0;
}

/* |option|'s value as a count |min|..|max| into *out_count; else
 * WAFER_ERROR_CONFIG, naming where it was set and what it expected. */
static wafer_status option_count(const struct wafer_host_services *host,
				 const struct wafer_plugin_option *option,
				 const char *origin, unsigned min, unsigned max,
				 unsigned *out_count)
{
	unsigned n;

	if (parse_count(option->value, max, &n) == 0 && n >= min) {
		*out_count = n;
		return WAFER_OK;
	}
	host->set_error("%s: [cpu] %s: expected a number %u..%u, got '%s'",
			origin, option->key, min, max,
			option->value ? option->value : "");
	return WAFER_ERROR_CONFIG;
}

/* Applies one `key = value` line of [cpu] to |state|. Unknown keys are
 * logged and ignored, so a configuration written for a newer plugin still
 * loads; a bad value fails init, naming where it was set. */
static wafer_status apply_option(void *state_arg,
				 const struct wafer_plugin_option *option)
{
	struct cpu_state *state = state_arg;
	const struct wafer_host_services *host = state->host;
	const char *origin;

	if (wafer_plugin_option_check(host, "cpu", option, &origin) != WAFER_OK)
		return WAFER_ERROR_INVALID_ARGUMENT;

	if (strcmp(option->key, "threads") == 0)
		return option_count(host, option, origin, 0, CPU_MAX_THREADS,
				    &state->threads);
	if (strcmp(option->key, "devices") == 0)
		return option_count(host, option, origin, 1, CPU_MAX_DEVICES,
				    &state->devices);
	/* The host's binary cache (host-c programs) reads these itself. */
	if (strcmp(option->key, "cache_dir") == 0 ||
	    strcmp(option->key, "cache") == 0)
		return WAFER_OK;
	host->log(host, WAFER_LOG_WARN, "%s: [cpu] unknown option '%s' ignored",
		  origin, option->key);
	return WAFER_OK;
}

static wafer_status cpu_init(const struct wafer_plugin_init_args *args,
			     void **out_state)
{
	struct cpu_state *state;
	wafer_status status;

	*out_state = NULL;
	state = wafer_plugin_init_state(args, "cpu", sizeof *state, &status);
	if (!state)
		return status;
	state->host = args->host;
	state->devices = 1;
	status = wafer_plugin_apply_options(args, apply_option, state);
	if (status != WAFER_OK) {
		free(state);
		return status;
	}
	if (state->threads == 0)
		state->threads = online_cores();
	pthread_mutex_init(&state->mpi_lock, NULL);

	*out_state = state;
	return WAFER_OK;
}

static void cpu_shutdown(void *state_arg)
{
	struct cpu_state *state = state_arg;

	cpu_comm_shutdown(state);
	pthread_mutex_destroy(&state->mpi_lock);
	free(state);
}

/*===----------------------------------------------------------------------===
 * The device
 *===----------------------------------------------------------------------===*/

static wafer_status cpu_device_count(void *state, uint32_t *out_count)
{
	*out_count = ((const struct cpu_state *)state)->devices;
	return WAFER_OK;
}

/* The processor's marketing name from /proc/cpuinfo ("model name" on x86;
 * other architectures may have none), or "host CPU". */
static void read_model_name(char *buf, size_t size)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(buf, size, "host CPU");
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (strncmp(line, "model name", 10) != 0 || !colon)
			continue;
		char *name = colon + 1 + strspn(colon + 1, " \t");
		name[strcspn(name, "\n")] = '\0';
		if (*name)
			snprintf(buf, size, "%s", name);
		break;
	}
	fclose(f);
}

static uint64_t physical_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES);
	long page_size = sysconf(_SC_PAGESIZE);

	if (pages < 1 || page_size < 1)
		return 0;
	return (uint64_t)pages * (uint64_t)page_size;
}

static wafer_status cpu_device_info(void *state, uint32_t index,
				    struct wafer_device_info *out)
{
	const struct cpu_state *st = state;
	struct wafer_device_info info = {
		.struct_size = out->struct_size,
		.memory_bytes = physical_memory(),
		.capabilities = WAFER_CAP_HOST_MEMORY | WAFER_CAP_F64,
		.alloc_alignment = CPU_ALIGNMENT,
		.vm_granularity = (size_t)sysconf(_SC_PAGESIZE),
		.compute_units = st->threads,
	};
	char model[WAFER_DEVICE_NAME_MAX];

	if (wafer_plugin_device_index_check(st->host, "cpu", index,
					    st->devices))
		return WAFER_ERROR_NOT_FOUND;
	read_model_name(model, sizeof model);
	if (st->devices == 1)
		snprintf(info.name, sizeof info.name, "cpu: %.80s (%u threads)",
			 model, st->threads);
	else
		snprintf(info.name, sizeof info.name,
			 "cpu: %.80s (%u threads, device %u of %u)", model,
			 st->threads, index, st->devices);

	/* Fill a whole struct as we know it, then hand over the part the
	 * core knows (an older core's is smaller, a newer one's larger). */
	return wafer_plugin_device_info_copy(out, &info);
}

static wafer_status cpu_device_open(void *state, uint32_t index,
				    void **out_device)
{
	const struct cpu_state *st = state;
	struct cpu_device *dev;
	int error;

	*out_device = NULL;
	if (wafer_plugin_device_index_check(st->host, "cpu", index,
					    st->devices))
		return WAFER_ERROR_NOT_FOUND;
	dev = wafer_plugin_calloc(st->host, sizeof *dev, "cpu: out of host memory");
	if (!dev)
		return WAFER_ERROR_OUT_OF_MEMORY;
	dev->state = st;
	dev->page_size = (size_t)sysconf(_SC_PAGESIZE);
	error = cpu_pool_create(st->threads, &dev->pool);
	if (error) {
		st->host->set_error("cpu: cannot start %u worker threads: %s",
				    st->threads - 1, strerror(error));
		free(dev);
		return WAFER_ERROR_DEVICE;
	}
	pthread_mutex_init(&dev->queues_lock, NULL);
	cpu_storage_open(dev);
	*out_device = dev;
	return WAFER_OK;
}

static void cpu_device_close(void *device)
{
	struct cpu_device *dev = device;

	cpu_storage_close(dev);
	cpu_pool_destroy(dev->pool);
	pthread_mutex_destroy(&dev->queues_lock);
	free(dev);
}

static wafer_status cpu_device_kernels(void *device,
				       const struct wafer_kernel **out_kernels,
				       size_t *out_count)
{
	*out_kernels = cpu_kernel_table(out_count);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The descriptor and the entry point
 *===----------------------------------------------------------------------===*/

static const struct wafer_plugin cpu_plugin = {
	WAFER_PLUGIN_DESCRIPTOR(cpu),
	.name = "cpu",
	.version = PACKAGE_VERSION,
	.description = "host memory and threaded C kernels (reference backend)",
};

/* The same plugin without the comm entries, for where the MPI module is
 * not installed: the core derives WAFER_CAP_COLLECTIVES from the entries,
 * and a cpu device that claimed collectives it cannot run would mislead
 * wafer-info and every caller that asks. Only the file is looked for
 * here; libmpi is loaded by the first communicator (comm.c), and a module
 * that is there but cannot load is reported then, with the reason. */
static struct wafer_plugin cpu_plugin_without_comm;
static pthread_once_t without_comm_once = PTHREAD_ONCE_INIT;

static void make_without_comm(void)
{
	cpu_plugin_without_comm = cpu_plugin;
	cpu_plugin_without_comm.server = &cpu_server_ops_without_comm;
}

const struct wafer_plugin *wafer_plugin_query(
	uint32_t core_abi_major, const struct wafer_host_services *host)
{
	char path[PATH_MAX];

	if (cpu_mpi_module_path(path, sizeof path) == 0 &&
	    access(path, F_OK) == 0)
		return &cpu_plugin;
	pthread_once(&without_comm_once, make_without_comm);
	return &cpu_plugin_without_comm;
}
