/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels_build.c: the OpenCL C programs, built per device at the first launch
 * of any of their kernels. The catalogue is split into a few units
 * (ocl_plugin.h, enum ocl_unit) so a program that only adds numbers never
 * compiles softmax; each unit is the shared prelude cl/common.cl followed
 * by cl/<unit>.cl, embedded at build time (sources.c, made by embed.awk).
 *
 * A unit comes from the binary cache (cache.c) when it has a good entry,
 * else from source; a source build is logged at info level ("built ...
 * from source") and its binary written to the cache. When a build fails,
 * the error names the unit, the device and the OpenCL error, and carries
 * the head of the build log; the whole log goes to the log at error
 * level. The failure is remembered, so later launches fail at once with
 * the same detail. */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/opencl/ocl_plugin.h"

/* sources.c, generated from cl/<name>.cl */
extern const char ocl_cl_common[];
extern const char ocl_cl_elementwise[];
extern const char ocl_cl_strided[];
extern const char ocl_cl_rows[];
extern const char ocl_cl_matmul[];

static const struct {
	const char *name;
	const char *source;
} units[OCL_UNIT_COUNT] = {
	[OCL_UNIT_ELEMENTWISE] = {"elementwise", ocl_cl_elementwise},
	[OCL_UNIT_STRIDED] = {"strided", ocl_cl_strided},
	[OCL_UNIT_ROWS] = {"rows", ocl_cl_rows},
	[OCL_UNIT_MATMUL] = {"matmul", ocl_cl_matmul},
};

/* How much of the build log goes into the error detail; the rest is in
 * the log. */
#define LOG_IN_DETAIL 1200

const char *ocl_unit_name(enum ocl_unit unit)
{
	return unit < OCL_UNIT_COUNT ? units[unit].name : "?";
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The options every build of |dev| uses: OpenCL C 1.2, which every
 * platform compiles; correctly rounded division and square root where
 * the device offers them (the catalogue wants div exact); then the
 * user's [opencl] build_options. */
static void build_options(const struct ocl_device *dev, char *buf,
			  size_t size)
{
	const char *extra = dev->state->build_options;

	snprintf(buf, size, "-cl-std=CL1.2%s%s%s",
		 dev->exact_div_sqrt ? " -cl-fp32-correctly-rounded-divide-sqrt"
				     : "",
		 extra ? " " : "", extra ? extra : "");
}

char *ocl_build_log(const struct ocl_device *dev, cl_program program)
{
	size_t size = 0;
	char *log;

	if (clGetProgramBuildInfo(program, dev->entry->id, CL_PROGRAM_BUILD_LOG,
				  0, NULL, &size) != CL_SUCCESS)
		size = 0;
	log = malloc(size + 1);
	if (!log)
		return NULL;
	if (size == 0 ||
	    clGetProgramBuildInfo(program, dev->entry->id, CL_PROGRAM_BUILD_LOG,
				  size, log, NULL) != CL_SUCCESS)
		size = 0;
	log[size] = '\0';
	return log;
}

/* Remembers a failed build in |p| with its detail, logs the whole build
 * log, and sets the error. */
static wafer_status build_failed(struct ocl_device *dev, enum ocl_unit unit,
				 struct ocl_unit_program *p, cl_program program,
				 cl_int err, const char *options)
{
	const struct wafer_host_services *host = ocl_host(dev);
	char *log = program ? ocl_build_log(dev, program) : NULL;
	const char *text = log ? log + strspn(log, " \t\r\n") : "";
	size_t need = strlen(text) + 1024;
	wafer_status status = ocl_status_of(err);

	/* Options the compiler refused can only be the user's. */
	if (err == CL_INVALID_BUILD_OPTIONS ||
	    err == CL_INVALID_COMPILER_OPTIONS)
		status = WAFER_ERROR_CONFIG;
	else if (status == WAFER_ERROR_INTERNAL)
		status = WAFER_ERROR_DEVICE;
	p->status = status;
	free(p->error);
	p->error = malloc(need);
	if (p->error)
		snprintf(p->error, need,
			 OCL_NAME ": clBuildProgram(%s) on %s: %s (%d) with "
				  "options '%s'%s%.*s",
			 units[unit].name, dev->entry->name,
			 ocl_error_name(err), (int)err, options,
			 *text ? "; build log: " : "", LOG_IN_DETAIL, text);
	if (*text)
		host->log(host, WAFER_LOG_ERROR,
			  "building %s for %s failed; build log:\n%s",
			  units[unit].name, dev->entry->name, text);
	host->set_error("%s", p->error ? p->error : "program build failed");
	free(log);
	return status;
}

/* Builds |unit| from source: the slow path, seconds on PoCL. */
static wafer_status build_from_source(struct ocl_device *dev,
				      enum ocl_unit unit, const char *options,
				      const char *const *sources,
				      struct ocl_unit_program *p)
{
	const struct wafer_host_services *host = ocl_host(dev);
	double start = now_ms();
	cl_program program;
	cl_int err;

	program = clCreateProgramWithSource(dev->context, 2,
					    (const char **)sources, NULL, &err);
	if (!program)
		return build_failed(dev, unit, p, NULL, err, options);
	err = clBuildProgram(program, 1, &dev->entry->id, options, NULL, NULL);
	if (err != CL_SUCCESS) {
		build_failed(dev, unit, p, program, err, options);
		clReleaseProgram(program);
		return p->status;
	}
	host->log(host, WAFER_LOG_INFO,
		  "built %s for %s from source in %.0f ms", units[unit].name,
		  dev->entry->name, now_ms() - start);
	p->program = program;
	return WAFER_OK;
}

/* Loads |unit| from a cached binary; 0 when there is none or it does not
 * load (then the caller builds from source and rewrites the file). */
static int load_cached(struct ocl_device *dev, enum ocl_unit unit,
		       const char *options, const struct ocl_cache_key *key,
		       struct ocl_unit_program *p)
{
	const struct wafer_host_services *host = ocl_host(dev);
	char why[512];
	size_t size;
	unsigned char *binary = ocl_cache_read(key, &size, why, sizeof why);
	const unsigned char *bin = binary;
	cl_program program = NULL;
	cl_int err = CL_SUCCESS, binary_status = CL_SUCCESS;

	if (binary && !ocl_binary_check(binary, size, why, sizeof why)) {
		free(binary);
		binary = NULL;
	}
	if (binary) {
		program = clCreateProgramWithBinary(dev->context, 1,
						    &dev->entry->id, &size,
						    &bin, &binary_status, &err);
		if (program && binary_status == CL_SUCCESS)
			err = clBuildProgram(program, 1, &dev->entry->id,
					     options, NULL, NULL);
		else if (program)
			err = binary_status;
		free(binary);
		if (program && err == CL_SUCCESS) {
			host->log(host, WAFER_LOG_DEBUG,
				  "loaded %s for %s from %s", units[unit].name,
				  dev->entry->name, key->path);
			p->program = program;
			return 1;
		}
		if (program)
			clReleaseProgram(program);
		snprintf(why, sizeof why, "the driver refused it: %s (%d)",
			 ocl_error_name(err), (int)err);
	}
	if (why[0])
		host->log(host, WAFER_LOG_INFO,
			  "ignoring cache file %s: %s; building from source",
			  key->path, why);
	return 0;
}

/* Writes the built program's binary to the cache; a failure only costs
 * the next process a build, so it is logged, not returned. */
static void store_binary(struct ocl_device *dev, cl_program program,
			 const struct ocl_cache_key *key)
{
	const struct wafer_host_services *host = ocl_host(dev);
	unsigned char *binary;
	size_t size = 0;
	char why[512] = "";

	if (!key->path[0] ||
	    clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size,
			     &size, NULL) != CL_SUCCESS ||
	    size == 0)
		return;
	binary = malloc(size);
	if (!binary)
		return;
	if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof binary,
			     &binary, NULL) == CL_SUCCESS &&
	    ocl_cache_write(key, binary, size, why, sizeof why) != 0 && why[0])
		host->log(host, WAFER_LOG_INFO,
			  "program binary not cached: %s", why);
	free(binary);
}

wafer_status ocl_unit_program_get(struct ocl_device *dev, enum ocl_unit unit,
				  cl_program *out_program)
{
	struct ocl_unit_program *p = &dev->programs[unit];
	const char *sources[2] = {ocl_cl_common, units[unit].source};
	struct ocl_cache_key *key;
	char options[1024];
	wafer_status status = WAFER_OK;

	pthread_mutex_lock(&dev->program_lock);
	if (p->program || p->status != WAFER_OK)
		goto done;
	key = malloc(sizeof *key);
	if (!key) {
		pthread_mutex_unlock(&dev->program_lock);
		ocl_host(dev)->set_error(OCL_NAME ": out of host memory");
		*out_program = NULL;
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	build_options(dev, options, sizeof options);
	ocl_cache_key(dev, units[unit].name, options, sources, 2, key);
	if (!load_cached(dev, unit, options, key, p) &&
	    build_from_source(dev, unit, options, sources, p) == WAFER_OK)
		store_binary(dev, p->program, key);
	free(key);
done:
	*out_program = p->program;
	status = p->status;
	if (status != WAFER_OK)
		ocl_host(dev)->set_error(
			"%s", p->error ? p->error : "program build failed");
	pthread_mutex_unlock(&dev->program_lock);
	return status;
}

void ocl_unit_programs_release(struct ocl_device *dev)
{
	for (int u = 0; u < OCL_UNIT_COUNT; u++) {
		struct ocl_unit_program *p = &dev->programs[u];
		if (p->program)
			clReleaseProgram(p->program);
		free(p->error);
		memset(p, 0, sizeof *p);
	}
}
