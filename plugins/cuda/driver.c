/* wafer — SPDX-License-Identifier: MIT
 *
 * driver.c: loading the CUDA driver at run time (driver.h). The steps, and
 * the reason each failure gives:
 *
 *   dlopen(libcuda.so.1)         "libcuda.so.1 not found: <dlerror>"
 *   cuDriverGetVersion < 12.0    "driver too old: API version 11080, need
 *                                 12000 (CUDA 12.0)"
 *   cuGetProcAddress_v2 missing  "driver too old: ..." (it came with 12.0)
 *   an entry not resolvable      "cuMemCreate: not offered by the driver
 *                                 at API version 12000 (...)"
 *   cuInit(0) fails              "cuInit: CUDA_ERROR_NO_DEVICE: no
 *                                 CUDA-capable device is detected"
 *
 * cuDriverGetVersion and cuGetProcAddress_v2 are the only symbols looked
 * up by name with dlsym; everything else comes from cuGetProcAddress. */
#include "build-config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "plugins/cuda/driver.h"

/* What dlerror says when the file is simply not there. */
static int not_there(const char *error)
{
	return error && strstr(error, "No such file or directory");
}

/* Resolves one entry at the pinned version. */
static int resolve(struct cuda_driver *driver,
		   __typeof__(cuGetProcAddress) *get_proc, const char *name,
		   void **out, char *why, size_t why_size)
{
	CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;
	CUresult result;

	*out = NULL;
	result = get_proc(name, out, CUDA_DRIVER_API_VERSION,
			  CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found);
	if (result == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS &&
	    *out)
		return 0;
	snprintf(why, why_size,
		 "%s: not offered by the driver at API version %d (driver "
		 "API %d; cuGetProcAddress result %d, query result %d)",
		 name, CUDA_DRIVER_API_VERSION, driver->version, (int)result,
		 (int)found);
	return -1;
}

#define CUDA_DRIVER_RESOLVE(name)                                              \
	if (resolve(driver, get_proc, #name, (void **)&driver->name, why,       \
		    why_size) != 0)                                            \
		return -1;

static int resolve_all(struct cuda_driver *driver,
		       __typeof__(cuGetProcAddress) *get_proc, char *why,
		       size_t why_size)
{
	CUDA_DRIVER_FUNCTIONS(CUDA_DRIVER_RESOLVE)
	return 0;
}

static int load_steps(struct cuda_driver *driver, const char *library,
		      char *why, size_t why_size)
{
	__typeof__(cuDriverGetVersion) *get_version;
	__typeof__(cuGetProcAddress) *get_proc;
	char text[256];
	CUresult result;

	dlerror();
	driver->library = dlopen(library, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!driver->library) {
		const char *error = dlerror();
		snprintf(why, why_size, "%s %s: %s", library,
			 not_there(error) ? "not found" : "cannot be loaded",
			 error ? error : "(no dlerror text)");
		return -1;
	}

	get_version = (__typeof__(get_version))dlsym(driver->library,
						     "cuDriverGetVersion");
	if (!get_version) {
		snprintf(why, why_size,
			 "%s is not a CUDA driver: no cuDriverGetVersion",
			 library);
		return -1;
	}
	result = get_version(&driver->version);
	if (result != CUDA_SUCCESS) {
		snprintf(why, why_size, "cuDriverGetVersion: CUresult %d",
			 (int)result);
		return -1;
	}
	if (driver->version < CUDA_DRIVER_API_VERSION) {
		snprintf(why, why_size,
			 "driver too old: API version %d, need %d (CUDA %d.%d)",
			 driver->version, CUDA_DRIVER_API_VERSION,
			 CUDA_DRIVER_API_VERSION / 1000,
			 CUDA_DRIVER_API_VERSION % 1000 / 10);
		return -1;
	}

	/* CUDA 12.0 and later export the five-argument form as _v2. */
	get_proc = (__typeof__(get_proc))dlsym(driver->library,
					       "cuGetProcAddress_v2");
	if (!get_proc) {
		snprintf(why, why_size,
			 "driver too old: API version %d has no "
			 "cuGetProcAddress_v2, need %d",
			 driver->version, CUDA_DRIVER_API_VERSION);
		return -1;
	}
	if (resolve_all(driver, get_proc, why, why_size) != 0)
		return -1;

	result = driver->cuInit(0);
	if (result != CUDA_SUCCESS) {
		snprintf(why, why_size, "cuInit: %s",
			 cuda_result_text(driver, result, text, sizeof text));
		return -1;
	}
	return 0;
}

int cuda_driver_load(struct cuda_driver *driver, const char *library,
		     char *why, size_t why_size)
{
	memset(driver, 0, sizeof *driver);
	why[0] = '\0';
	if (load_steps(driver, library ? library : "libcuda.so.1", why,
		       why_size) == 0)
		return 0;
	cuda_driver_unload(driver);
	return -1;
}

void cuda_driver_unload(struct cuda_driver *driver)
{
	if (driver->library)
		dlclose(driver->library);
	memset(driver, 0, sizeof *driver);
}

const char *cuda_result_text(const struct cuda_driver *driver, CUresult result,
			     char *buf, size_t size)
{
	const char *name = NULL, *text = NULL;

	if (driver->cuGetErrorName &&
	    driver->cuGetErrorName(result, &name) != CUDA_SUCCESS)
		name = NULL;
	if (driver->cuGetErrorString &&
	    driver->cuGetErrorString(result, &text) != CUDA_SUCCESS)
		text = NULL;
	if (name && text)
		snprintf(buf, size, "%s: %s", name, text);
	else if (name)
		snprintf(buf, size, "%s", name);
	else
		snprintf(buf, size, "CUresult %d", (int)result);
	return buf;
}
