/* wafer — SPDX-License-Identifier: MIT
 *
 * value_names.c: the one place that names program formats and native
 * kinds (value_names.h): the core's own values, and the vendors' from the
 * table of names their plugins gave. The table only grows: a name handed
 * out stays valid however many runtimes come and go, so
 * wafer_program_format_name and wafer_native_kind_name never return a
 * pointer into an unloaded plugin. Readers take no lock: an entry is
 * written before the count that publishes it. */
#include "build-config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <wafer/interop.h>
#include <wafer/plugin.h>
#include <wafer/program.h>

#include "lib/value_names.h"

/* Names for a few plugins' worth of formats and kinds. */
#define VENDOR_NAMES_MAX 256

static struct {
	uint32_t what;
	uint32_t value;
	char name[WAFER_VENDOR_NAME_MAX];
} table[VENDOR_NAMES_MAX];
static atomic_size_t table_count;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

const char *wafer__vendor_what(uint32_t what)
{
	return what == WAFER_VENDOR_NATIVE_KIND ? "native kind"
						: "program format";
}

static const char *registered(uint32_t what, uint32_t value)
{
	size_t n = atomic_load_explicit(&table_count, memory_order_acquire);

	for (size_t i = 0; i < n; i++)
		if (table[i].what == what && table[i].value == value)
			return table[i].name;
	return NULL;
}

/* The name of an enum |value| of kind |what| (WAFER_VENDOR_PROGRAM_FORMAT
 * or _NATIVE_KIND) that the core's own switch does not know: the name a
 * loaded plugin gave it, else "vendor-0x10001" inside the vendor range
 * [first, last] (types.h), else "unknown". An unnamed one is kept in
 * the calling thread's ring of 8, so it lives until the thread's eighth
 * next such name. */
static const char *vendor_value_name(uint32_t what, int value, int first,
				     int last)
{
	static _Thread_local char ring[8][24];
	static _Thread_local unsigned next;
	const char *known;
	char *name;

	if (value < first || value > last)
		return "unknown";
	known = registered(what, (uint32_t)value);
	if (known)
		return known;
	name = ring[next++ % 8];
	snprintf(name, sizeof ring[0], "vendor-%#x", (unsigned)value);
	return name;
}

WAFER_API const char *wafer_program_format_name(wafer_program_format format)
{
	switch (format) {
	case WAFER_PROGRAM_NONE: return "none";
	case WAFER_PROGRAM_CUDA_C: return "cuda-c";
	case WAFER_PROGRAM_PTX: return "ptx";
	case WAFER_PROGRAM_CUBIN: return "cubin";
	case WAFER_PROGRAM_OPENCL_C: return "opencl-c";
	case WAFER_PROGRAM_SPIRV: return "spirv";
	case WAFER_PROGRAM_HOST_C: return "host-c";
	case WAFER_PROGRAM_HOST_SO: return "host-so";
	default: break;
	}
	return vendor_value_name(WAFER_VENDOR_PROGRAM_FORMAT, format,
				 WAFER_PROGRAM_VENDOR, WAFER_PROGRAM_VENDOR_LAST);
}

WAFER_API const char *wafer_native_kind_name(wafer_native_kind kind)
{
	switch (kind) {
	case WAFER_NATIVE_NONE: return "none";
	case WAFER_NATIVE_HOST_POINTER: return "host-pointer";
	case WAFER_NATIVE_CUDA_POINTER: return "cuda-pointer";
	case WAFER_NATIVE_OPENCL_MEM: return "opencl-mem";
	case WAFER_NATIVE_LEVELZERO_POINTER: return "levelzero-pointer";
	default: break;
	}
	return vendor_value_name(WAFER_VENDOR_NATIVE_KIND, kind,
				 WAFER_NATIVE_VENDOR, WAFER_NATIVE_VENDOR_LAST);
}

/* A name the core gives one of its own values, which a vendor's would
 * make ambiguous in every message. */
static int core_name(const char *name)
{
	for (int v = WAFER_PROGRAM_NONE; v <= WAFER_PROGRAM_HOST_SO; v++)
		if (strcmp(name, wafer_program_format_name(v)) == 0)
			return 1;
	for (int v = WAFER_NATIVE_NONE; v <= WAFER_NATIVE_LEVELZERO_POINTER;
	     v++)
		if (strcmp(name, wafer_native_kind_name(v)) == 0)
			return 1;
	return strcmp(name, "unknown") == 0 ||
	       strncmp(name, "vendor-", 7) == 0;
}

static int well_formed(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n >= WAFER_VENDOR_NAME_MAX)
		return 0;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
		      *c == '_' || *c == '.' || *c == '-'))
			return 0;
	return 1;
}

int wafer__vendor_name_register(uint32_t what, uint32_t value,
				const char *name, char *why, size_t why_size)
{
	uint32_t first = what == WAFER_VENDOR_NATIVE_KIND
				 ? WAFER_NATIVE_VENDOR
				 : WAFER_PROGRAM_VENDOR;
	uint32_t last = what == WAFER_VENDOR_NATIVE_KIND
				? WAFER_NATIVE_VENDOR_LAST
				: WAFER_PROGRAM_VENDOR_LAST;
	const char *had;
	int result = -1;

	if (what != WAFER_VENDOR_PROGRAM_FORMAT &&
	    what != WAFER_VENDOR_NATIVE_KIND) {
		snprintf(why, why_size,
			 "what is %u, neither WAFER_VENDOR_PROGRAM_FORMAT "
			 "nor _NATIVE_KIND",
			 what);
		return -1;
	}
	if (value < first || value > last) {
		snprintf(why, why_size,
			 "%s %#x is outside the vendor range %#x to %#x",
			 wafer__vendor_what(what), value, first, last);
		return -1;
	}
	if (!well_formed(name) || core_name(name)) {
		snprintf(why, why_size,
			 "%s %#x: name '%.40s' is %s", wafer__vendor_what(what),
			 value, name ? name : "(null)",
			 well_formed(name) ? "one the core uses"
					   : "not 1 to 31 of [a-z0-9_.-]");
		return -1;
	}
	pthread_mutex_lock(&table_lock);
	had = registered(what, value);
	if (had && strcmp(had, name) != 0) {
		snprintf(why, why_size,
			 "%s %#x is named '%s' already; '%s' is not used",
			 wafer__vendor_what(what), value, had, name);
	} else if (had) {
		result = 0;
	} else {
		size_t n = atomic_load_explicit(&table_count,
						memory_order_relaxed);
		if (n == VENDOR_NAMES_MAX) {
			snprintf(why, why_size,
				 "%s %#x: the core's table of %d vendor names "
				 "is full",
				 wafer__vendor_what(what), value,
				 VENDOR_NAMES_MAX);
		} else {
			table[n].what = what;
			table[n].value = value;
			snprintf(table[n].name, sizeof table[n].name, "%s",
				 name);
			atomic_store_explicit(&table_count, n + 1,
					      memory_order_release);
			result = 0;
		}
	}
	pthread_mutex_unlock(&table_lock);
	return result;
}
