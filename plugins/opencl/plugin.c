/* wafer — SPDX-License-Identifier: MIT
 *
 * plugin.c: the OpenCL plugin's descriptor and its one exported symbol,
 * wafer_plugin_query; init with the [opencl] options, the platforms and
 * devices it finds, and device info, open and close. Start reading at
 * the descriptor at the bottom of the file.
 *
 * Options, in the [opencl] section of wafer.conf(5) (see wafer-opencl(7)):
 *   platform = TEXT      only platforms whose name contains TEXT
 *                        (case-insensitive)
 *   device = TEXT        only devices whose name contains TEXT
 *   type = LIST          device types to use: gpu, cpu, accelerator,
 *                        custom, all (comma-separated; default all)
 *   build_options = TEXT more options for clBuildProgram
 *   cache = on|off       the on-disk cache of program binaries (on)
 *   cache_dir = DIR      where it lives (default
 *                        $XDG_CACHE_HOME/wafer/opencl); the core reads
 *                        both for the host's binary cache (plugin.h),
 *                        the plugin checks them
 *   clblast = on|off     offer CLBlast's GEMM as a matmul variant (on;
 *                        only when the plugin was built with CLBlast)
 *   staging = auto|always|never
 *                        how uploads reach the device (storage.c): through
 *                        pinned staging memory where it helps (auto),
 *                        always, or never (blocking writes)
 *
 * Devices are numbered GPUs first, then accelerators, then the rest, then
 * CPUs, each group in the order the ICD loader lists the platforms, so
 * opencl:0 is the fastest kind of device present. */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/opencl/ocl_plugin.h"

/*===----------------------------------------------------------------------===
 * Options
 *===----------------------------------------------------------------------===*/

/* Parses on/off in the usual spellings; -1 when it is neither. */
static int parse_bool(const char *text)
{
	static const char *const on[] = {"on", "yes", "true", "1"};
	static const char *const off[] = {"off", "no", "false", "0"};

	for (size_t i = 0; text && i < 4; i++) {
		if (strcasecmp(text, on[i]) == 0)
			return 1;
		if (strcasecmp(text, off[i]) == 0)
			return 0;
	}
	return -1;
}

/* Parses a device type list ("gpu, accelerator") into CL_DEVICE_TYPE_*
 * bits; 0 when a word is unknown or the list is empty. */
static cl_device_type parse_types(const char *text)
{
	static const struct {
		const char *name;
		cl_device_type bits;
	} types[] = {
		{"gpu", CL_DEVICE_TYPE_GPU},
		{"cpu", CL_DEVICE_TYPE_CPU},
		{"accelerator", CL_DEVICE_TYPE_ACCELERATOR},
		{"custom", CL_DEVICE_TYPE_CUSTOM},
		{"all", CL_DEVICE_TYPE_ALL},
	};
	cl_device_type mask = 0;
	const char *p = text;

	while (p && *p) {
		size_t n, i;

		p += strspn(p, ", \t");
		n = strcspn(p, ", \t");
		if (n == 0)
			break;
		for (i = 0; i < sizeof types / sizeof types[0]; i++)
			if (strlen(types[i].name) == n &&
			    strncasecmp(p, types[i].name, n) == 0)
				break;
		if (i == sizeof types / sizeof types[0])
			return 0;
		mask |= types[i].bits;
		p += n;
	}
	return mask;
}

/* Replaces *|slot| by a copy of |value| (NULL or "" clears it). */
static int set_text(char **slot, const char *value)
{
	free(*slot);
	*slot = NULL;
	if (!value || !*value)
		return 0;
	*slot = strdup(value);
	return *slot ? 0 : -1;
}

/* Applies one `key = value` line of [opencl]. Unknown keys are logged and
 * ignored, so a configuration written for a newer plugin still loads; a
 * bad value fails init, naming where it was set. */
static wafer_status apply_option(void *state_arg,
				 const struct wafer_plugin_option *option)
{
	struct ocl_state *state = state_arg;
	const struct wafer_host_services *host = state->host;
	const char *origin;
	const char *key, *value;
	char **text = NULL;
	int flag;

	if (wafer_plugin_option_check(host, OCL_NAME, option, &origin) != WAFER_OK)
		return WAFER_ERROR_INVALID_ARGUMENT;
	key = option->key;
	value = option->value ? option->value : "";

	if (strcmp(key, "platform") == 0)
		text = &state->platform_filter;
	else if (strcmp(key, "device") == 0)
		text = &state->device_filter;
	else if (strcmp(key, "build_options") == 0)
		text = &state->build_options;
	else if (strcmp(key, "cache_dir") == 0)
		text = &state->cache_dir;
	if (text) {
		if (set_text(text, value) == 0)
			return WAFER_OK;
		host->set_error(OCL_NAME ": out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}

	if (strcmp(key, "type") == 0) {
		state->type_mask = parse_types(value);
		if (state->type_mask)
			return WAFER_OK;
		host->set_error("%s: [opencl] type: expected a list of gpu, "
				"cpu, accelerator, custom, all; got '%s'",
				origin, value);
		return WAFER_ERROR_CONFIG;
	}
	if (strcmp(key, "staging") == 0) {
		static const char *const modes[] = {"auto", "always", "never"};
		for (int i = 0; i < 3; i++) {
			if (strcasecmp(value, modes[i]) == 0) {
				state->staging = i;
				return WAFER_OK;
			}
		}
		host->set_error("%s: [opencl] staging: expected auto, always "
				"or never, got '%s'",
				origin, value);
		return WAFER_ERROR_CONFIG;
	}
	if (strcmp(key, "cache") == 0 || strcmp(key, "clblast") == 0) {
		flag = parse_bool(value);
		if (flag < 0) {
			host->set_error("%s: [opencl] %s: expected on or off, "
					"got '%s'",
					origin, key, value);
			return WAFER_ERROR_CONFIG;
		}
		if (key[1] == 'a')
			state->cache_enabled = flag;
		else
			state->clblast_enabled = flag;
		return WAFER_OK;
	}
	host->log(host, WAFER_LOG_WARN,
		  "%s: [opencl] unknown option '%s' ignored", origin, key);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Enumeration
 *===----------------------------------------------------------------------===*/

/* A string property of a platform or device; "" when it cannot be read.
 * Long values are cut to the buffer. */
static void platform_text(cl_platform_id platform, cl_platform_info what,
			  char *buf, size_t size)
{
	buf[0] = '\0';
	if (clGetPlatformInfo(platform, what, size, buf, NULL) != CL_SUCCESS)
		buf[0] = '\0';
	buf[size - 1] = '\0';
}

static void device_text(cl_device_id device, cl_device_info what, char *buf,
			size_t size)
{
	char *big;
	size_t need = 0;

	buf[0] = '\0';
	if (clGetDeviceInfo(device, what, 0, NULL, &need) != CL_SUCCESS ||
	    need == 0)
		return;
	if (need <= size) {
		if (clGetDeviceInfo(device, what, size, buf, NULL) !=
		    CL_SUCCESS)
			buf[0] = '\0';
		buf[size - 1] = '\0';
		return;
	}
	big = malloc(need); /* CL_DEVICE_EXTENSIONS can be long */
	if (big && clGetDeviceInfo(device, what, need, big, NULL) == CL_SUCCESS)
		snprintf(buf, size, "%s", big);
	free(big);
}

static const char *type_name(cl_device_type type)
{
	if (type & CL_DEVICE_TYPE_GPU)
		return "gpu";
	if (type & CL_DEVICE_TYPE_ACCELERATOR)
		return "accelerator";
	if (type & CL_DEVICE_TYPE_CPU)
		return "cpu";
	return "custom";
}

/* Sort key: GPUs, accelerators, custom devices, CPUs. */
static int type_rank(cl_device_type type)
{
	if (type & CL_DEVICE_TYPE_GPU)
		return 0;
	if (type & CL_DEVICE_TYPE_ACCELERATOR)
		return 1;
	if (type & CL_DEVICE_TYPE_CPU)
		return 3;
	return 2;
}

/* Appends "text" to the list of devices seen, for the message when none
 * passes the filters. */
static void note_seen(char *seen, size_t size, const char *text)
{
	size_t used = strlen(seen);

	if (used + 4 >= size)
		return;
	snprintf(seen + used, size - used, "%s%s", used ? "; " : "", text);
}

static int matches(const char *text, const char *filter)
{
	return !filter || strcasestr(text, filter) != NULL;
}

/* Adds the devices of |platform| that pass the filters to state->devices
 * (which has room for |capacity|). */
static void add_platform_devices(struct ocl_state *state,
				 cl_platform_id platform, size_t capacity,
				 char *seen, size_t seen_size)
{
	char platform_name[OCL_TEXT_MAX], line[2 * OCL_TEXT_MAX + 32];
	cl_device_id ids[64];
	cl_uint n = 0;

	platform_text(platform, CL_PLATFORM_NAME, platform_name,
		      sizeof platform_name);
	if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 64, ids, &n) !=
	    CL_SUCCESS)
		n = 0; /* CL_DEVICE_NOT_FOUND: a platform with no device */
	if (n > 64)
		n = 64;
	for (cl_uint i = 0; i < n; i++) {
		struct ocl_device_entry entry, *e = &entry;
		cl_bool available = CL_TRUE;

		memset(e, 0, sizeof *e);
		e->platform = platform;
		e->id = ids[i];
		clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof e->type,
				&e->type, NULL);
		clGetDeviceInfo(ids[i], CL_DEVICE_AVAILABLE, sizeof available,
				&available, NULL);
		device_text(ids[i], CL_DEVICE_NAME, e->name, sizeof e->name);
		snprintf(line, sizeof line, "%.120s: %.200s (%s%s)",
			 platform_name, e->name, type_name(e->type),
			 available ? "" : ", not available");
		note_seen(seen, seen_size, line);

		if (!available || !(e->type & state->type_mask) ||
		    !matches(platform_name, state->platform_filter) ||
		    !matches(e->name, state->device_filter) ||
		    state->device_count >= capacity)
			continue;
		snprintf(e->platform_name, sizeof e->platform_name, "%s",
			 platform_name);
		platform_text(platform, CL_PLATFORM_VERSION,
			      e->platform_version, sizeof e->platform_version);
		device_text(ids[i], CL_DEVICE_VENDOR, e->vendor,
			    sizeof e->vendor);
		device_text(ids[i], CL_DRIVER_VERSION, e->driver_version,
			    sizeof e->driver_version);
		device_text(ids[i], CL_DEVICE_VERSION, e->device_version,
			    sizeof e->device_version);
		state->devices[state->device_count++] = entry;
	}
}

/* Stable insertion sort by type rank: few devices, and equal ranks keep
 * the loader's order. */
static void sort_devices(struct ocl_state *state)
{
	for (uint32_t i = 1; i < state->device_count; i++) {
		struct ocl_device_entry e = state->devices[i];
		uint32_t j = i;

		while (j > 0 && type_rank(state->devices[j - 1].type) >
					type_rank(e.type)) {
			state->devices[j] = state->devices[j - 1];
			j--;
		}
		state->devices[j] = e;
	}
}

/* Describes the filters in force, for the "no device" message. */
static void describe_filters(const struct ocl_state *state, char *buf,
			     size_t size)
{
	static const cl_device_type bits[] = {
		CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_CPU,
		CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_CUSTOM};
	size_t used = 0;

	buf[0] = '\0';
	if (state->type_mask != CL_DEVICE_TYPE_ALL) {
		used += (size_t)snprintf(buf, size, "type =");
		for (size_t i = 0; i < 4 && used < size; i++)
			if (state->type_mask & bits[i])
				used += (size_t)snprintf(buf + used,
							 size - used, " %s",
							 type_name(bits[i]));
	}
	if (state->platform_filter && used < size)
		used += (size_t)snprintf(buf + used, size - used,
					 "%splatform = '%s'",
					 used ? ", " : "",
					 state->platform_filter);
	if (state->device_filter && used < size)
		snprintf(buf + used, size - used, "%sdevice = '%s'",
			 used ? ", " : "", state->device_filter);
}

/* Finds every platform and device and keeps those that pass the filters.
 * Never fails init: when there is no device, the reason is kept for
 * device_count. */
static void enumerate(struct ocl_state *state)
{
	cl_platform_id platforms[32];
	cl_uint n = 0;
	cl_int err;
	size_t capacity = 0;
	char seen[768] = "", filters[256];

	err = clGetPlatformIDs(32, platforms, &n);
	if (err == CL_SUCCESS && n == 0)
		err = -1001; /* CL_PLATFORM_NOT_FOUND_KHR */
	if (err != CL_SUCCESS) {
		state->enum_status = WAFER_ERROR_NO_DEVICE;
		snprintf(state->enum_error, sizeof state->enum_error,
			 "clGetPlatformIDs: %s (%d): the OpenCL ICD loader "
			 "found no platform (drivers are listed in "
			 "/etc/OpenCL/vendors, or OCL_ICD_VENDORS / "
			 "OCL_ICD_FILENAMES)",
			 ocl_error_name(err), (int)err);
		return;
	}
	if (n > 32)
		n = 32;
	for (cl_uint p = 0; p < n; p++) {
		cl_uint count = 0;
		if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL,
				   &count) == CL_SUCCESS)
			capacity += count > 64 ? 64 : count;
	}
	state->devices =
		calloc(capacity ? capacity : 1, sizeof *state->devices);
	if (!state->devices) {
		state->enum_status = WAFER_ERROR_OUT_OF_MEMORY;
		snprintf(state->enum_error, sizeof state->enum_error,
			 "out of host memory listing %zu devices", capacity);
		return;
	}
	for (cl_uint p = 0; p < n; p++)
		add_platform_devices(state, platforms[p], capacity, seen,
				     sizeof seen);
	sort_devices(state);
	if (state->device_count)
		return;

	state->enum_status = WAFER_ERROR_NO_DEVICE;
	describe_filters(state, filters, sizeof filters);
	if (!seen[0])
		snprintf(state->enum_error, sizeof state->enum_error,
			 "%u OpenCL platform%s but no device", (unsigned)n,
			 n == 1 ? "" : "s");
	else
		snprintf(state->enum_error, sizeof state->enum_error,
			 "no OpenCL device matches [opencl] %s; found: %s "
			 "(to use them, set [opencl] type = all in wafer.conf "
			 "or WAFER_OPENCL_TYPE=all)",
			 filters, seen);
}

/*===----------------------------------------------------------------------===
 * Lifetime
 *===----------------------------------------------------------------------===*/

static void free_state(struct ocl_state *state)
{
	free(state->platform_filter);
	free(state->device_filter);
	free(state->build_options);
	free(state->cache_dir);
	free(state->devices);
	free(state);
}

static wafer_status ocl_init(const struct wafer_plugin_init_args *args,
			     void **out_state)
{
	struct ocl_state *state;
	wafer_status status;

	*out_state = NULL;
	state = wafer_plugin_init_state(args, OCL_NAME, sizeof *state, &status);
	if (!state)
		return status;
	state->host = args->host;
	/* CPU OpenCL devices (PoCL) are opt-in: the cpu plugin serves the
	 * host's cores better, and "default" should not land on them. */
	state->type_mask = CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR;
	state->cache_enabled = 1;
	state->clblast_enabled = 1;
	status = wafer_plugin_apply_options(args, apply_option, state);
	if (status != WAFER_OK) {
		free_state(state);
		return status;
	}

	enumerate(state);
	for (uint32_t i = 0; i < state->device_count; i++)
		state->host->log(state->host, WAFER_LOG_INFO,
				 "opencl:%u is %s (%s) on %s, driver %s", i,
				 state->devices[i].name,
				 type_name(state->devices[i].type),
				 state->devices[i].platform_name,
				 state->devices[i].driver_version);
	*out_state = state;
	return WAFER_OK;
}

static void ocl_shutdown(void *state)
{
	ocl_clblast_shutdown();
	free_state(state);
}

/*===----------------------------------------------------------------------===
 * Devices
 *===----------------------------------------------------------------------===*/

static wafer_status ocl_device_count(void *state, uint32_t *out_count)
{
	const struct ocl_state *st = state;

	*out_count = st->device_count;
	if (st->device_count)
		return WAFER_OK;
	st->host->set_error("%s", st->enum_error);
	return st->enum_status;
}

static const struct ocl_device_entry *entry_at(const struct ocl_state *st,
					       uint32_t index)
{
	if (wafer_plugin_device_index_check(st->host, OCL_NAME, index,
					    st->device_count))
		return NULL;
	return &st->devices[index];
}

/* Whether the space-separated extension list has |name|. */
int ocl_has_extension(const char *extensions, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = extensions; (p = strstr(p, name)); p += n)
		if ((p == extensions || p[-1] == ' ') &&
		    (p[n] == ' ' || p[n] == '\0'))
			return 1;
	return 0;
}

/* What the device offers, read once per open and per info. */
struct device_props {
	cl_ulong global_mem, max_alloc;
	cl_uint base_align_bits, compute_units;
	size_t max_work_group;
	cl_bool host_unified;
	cl_device_fp_config fp32;
	int fp16, fp64;
};

static void read_props(cl_device_id id, struct device_props *p)
{
	char *extensions;
	size_t need = 0;

	memset(p, 0, sizeof *p);
	clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof p->global_mem,
			&p->global_mem, NULL);
	clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof p->max_alloc,
			&p->max_alloc, NULL);
	clGetDeviceInfo(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN,
			sizeof p->base_align_bits, &p->base_align_bits, NULL);
	clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS,
			sizeof p->compute_units, &p->compute_units, NULL);
	clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE,
			sizeof p->max_work_group, &p->max_work_group, NULL);
	clGetDeviceInfo(id, CL_DEVICE_HOST_UNIFIED_MEMORY,
			sizeof p->host_unified, &p->host_unified, NULL);
	clGetDeviceInfo(id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof p->fp32,
			&p->fp32, NULL);
	if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &need) ==
		    CL_SUCCESS &&
	    need && (extensions = malloc(need))) {
		if (clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, need, extensions,
				    NULL) == CL_SUCCESS) {
			p->fp16 = ocl_has_extension(extensions, "cl_khr_fp16");
			p->fp64 = ocl_has_extension(extensions, "cl_khr_fp64");
		}
		free(extensions);
	}
}

/* Slices are placed on the device's base-address alignment (what a
 * sub-buffer would need, and what keeps loads coalesced), at least 64
 * bytes and at most a page. PoCL asks for 128, NVIDIA for 512. */
static size_t alignment_of(const struct device_props *p)
{
	size_t align = p->base_align_bits / 8;
	size_t a = 64;

	while (a < align && a < 4096)
		a *= 2;
	return a;
}

static wafer_status ocl_device_info(void *state, uint32_t index,
				    struct wafer_device_info *out)
{
	const struct ocl_state *st = state;
	const struct ocl_device_entry *e = entry_at(st, index);
	struct wafer_device_info info = {.struct_size = out->struct_size};
	struct device_props p;

	if (!e)
		return WAFER_ERROR_NOT_FOUND;
	read_props(e->id, &p);
	snprintf(info.name, sizeof info.name, "%.80s (%.40s)", e->name,
		 e->platform_name);
	info.memory_bytes = p.global_mem;
	info.capabilities = (p.fp16 ? WAFER_CAP_F16 : 0) |
			    (p.fp64 ? WAFER_CAP_F64 : 0) |
			    (p.host_unified ? WAFER_CAP_HOST_MEMORY : 0);
	info.alloc_alignment = alignment_of(&p);
	info.vm_granularity = 0;
	info.compute_units = p.compute_units;

	/* Hand over the part of the struct the core knows. */
	return wafer_plugin_device_info_copy(out, &info);
}

/* Errors the driver reports on its own (a kernel that faulted, a lost
 * device) arrive here, possibly on a driver thread. */
static void CL_CALLBACK context_notify(const char *text, const void *info,
				       size_t info_size, void *data)
{
	const struct wafer_host_services *host = data;

	host->log(host, WAFER_LOG_WARN, "OpenCL driver: %s", text);
}

static wafer_status open_context(struct ocl_device *dev)
{
	const struct wafer_host_services *host = ocl_host(dev);
	const struct ocl_device_entry *e = dev->entry;
	cl_context_properties props[] = {
		CL_CONTEXT_PLATFORM, (cl_context_properties)e->platform, 0};
	cl_int err;

	dev->context = clCreateContext(props, 1, &e->id, context_notify,
				       (void *)host, &err);
	if (!dev->context)
		return ocl_fail(host, err, "clCreateContext(%s)", e->name);
	dev->util_queue = clCreateCommandQueue(dev->context, e->id, 0, &err);
	if (!dev->util_queue)
		return ocl_fail(host, err, "clCreateCommandQueue(%s)", e->name);
	return WAFER_OK;
}

static void ocl_device_close(void *device);

static wafer_status ocl_device_open(void *state, uint32_t index,
				    void **out_device)
{
	const struct ocl_state *st = state;
	const struct ocl_device_entry *e = entry_at(st, index);
	struct ocl_device *dev;
	struct device_props p;
	wafer_status status;

	*out_device = NULL;
	if (!e)
		return WAFER_ERROR_NOT_FOUND;
	dev = wafer_plugin_calloc(st->host, sizeof *dev,
				  OCL_NAME ": out of host memory");
	if (!dev)
		return WAFER_ERROR_OUT_OF_MEMORY;
	dev->state = st;
	dev->entry = e;
	pthread_mutex_init(&dev->program_lock, NULL);
	read_props(e->id, &p);
	dev->alignment = alignment_of(&p);
	dev->max_alloc = p.max_alloc;
	dev->max_work_group = p.max_work_group ? p.max_work_group : 1;
	dev->host_unified = p.host_unified;
	dev->has_fp16 = p.fp16;
	dev->has_fp64 = p.fp64;
	dev->exact_div_sqrt =
		(p.fp32 & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;

	ocl_graph_probe(dev);
	status = open_context(dev);
	if (status == WAFER_OK)
		status = ocl_kernels_open(dev);
	if (status != WAFER_OK) {
		ocl_device_close(dev);
		return status;
	}
	*out_device = dev;
	return WAFER_OK;
}

static void ocl_device_close(void *device)
{
	struct ocl_device *dev = device;

	ocl_kernels_close(dev);
	ocl_unit_programs_release(dev);
	if (dev->util_queue)
		clReleaseCommandQueue(dev->util_queue);
	if (dev->context)
		clReleaseContext(dev->context);
	pthread_mutex_destroy(&dev->program_lock);
	free(dev);
}

static wafer_status ocl_device_kernels(void *device,
				       const struct wafer_kernel **out_kernels,
				       size_t *out_count)
{
	struct ocl_device *dev = device;

	*out_kernels = dev->kernels;
	*out_count = dev->kernel_count;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The descriptor and the entry point
 *===----------------------------------------------------------------------===*/

static const struct wafer_plugin ocl_plugin = {
	WAFER_PLUGIN_DESCRIPTOR(ocl),
	.name = OCL_NAME,
	.version = PACKAGE_VERSION,
	.description = "OpenCL through the ICD loader (OpenCL C kernels, "
		       "cached program binaries)",
};

WAFER_PLUGIN_QUERY_RETURNS(ocl_plugin)
