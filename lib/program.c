/* wafer — SPDX-License-Identifier: MIT
 *
 * program.c: the caller's own kernels (program.h): choosing the source a
 * device takes, loading it through the plugin's program entries, handing
 * out kernel refs, and releasing in queue order. The records behind
 * programs and refs are kept as program_table.h says. */
#include "build-config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/program.h>

#include "lib/client.h"
#include "lib/error.h"
#include "lib/list.h"
#include "lib/loader.h"
#include "lib/log.h"
#include "lib/program_table.h"

/* A slot of the process's table (program_table.h): the record of the
 * program it holds now, or of the last one it held. */
struct wafer_program {
	uint32_t index;      /* 1-based */
	uint32_t generation; /* of the program it holds or last held */
	uint32_t next_free;  /* index of the next free slot; 0: none */
	wafer_client *client; /* NULL: free */
	struct wafer_runtime_device *device;
	void *loaded; /* the plugin's program */
	wafer_program_format format;
	/* For messages: the source's name, else its format; kept after
	 * release. */
	char name[96];
	/* Its kernels, in the order wafer_program_kernel first asked for
	 * them (a ref's kernel index). */
	const struct wafer_kernel **kernels;
	size_t kernel_count, kernel_capacity;
	struct wafer_program *prev, *next; /* its client's live programs */
};

/*===----------------------------------------------------------------------===
 * The table
 *===----------------------------------------------------------------------===*/

#define PROGRAM_MARK ((uintptr_t)0xA)
#define REF_MARK ((uintptr_t)0xB)
#define MARK_SHIFT (sizeof(uintptr_t) * 8 - 4)
#define SLOT_SHIFT WAFER_PROGRAM_KERNEL_BITS
#define GENERATION_SHIFT (SLOT_SHIFT + WAFER_PROGRAM_SLOT_BITS)
#define FIELD(bits) (((uintptr_t)1 << (bits)) - 1)
_Static_assert(GENERATION_SHIFT + WAFER_PROGRAM_GENERATION_BITS <= MARK_SHIFT,
	       "a program id's fields overlap its mark");

#define BLOCK_SLOTS 1024u
#define MAX_SLOTS ((uint32_t)FIELD(WAFER_PROGRAM_SLOT_BITS))
#define MAX_GENERATION ((uint32_t)FIELD(WAFER_PROGRAM_GENERATION_BITS))
#define MAX_KERNELS ((size_t)FIELD(WAFER_PROGRAM_KERNEL_BITS) + 1)

static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct wafer_program *blocks[MAX_SLOTS / BLOCK_SLOTS + 1];
static uint32_t next_unused = 1; /* under the lock */
static uint32_t free_head;       /* under the lock */

static uintptr_t encode(uintptr_t mark, const struct wafer_program *p,
			size_t kernel)
{
	return mark << MARK_SHIFT |
	       (uintptr_t)p->generation << GENERATION_SHIFT |
	       (uintptr_t)p->index << SLOT_SHIFT | kernel;
}

static wafer_program *program_id(const struct wafer_program *slot)
{
	return (wafer_program *)encode(PROGRAM_MARK, slot, 0);
}

/* The slot |id| names, whatever its generation; NULL when |id| has not
 * |mark| or names no slot ever used. Under the lock. */
static struct wafer_program *slot_of(uintptr_t id, uintptr_t mark,
				     uint32_t *out_generation,
				     size_t *out_kernel)
{
	uint32_t index =
		(uint32_t)(id >> SLOT_SHIFT & FIELD(WAFER_PROGRAM_SLOT_BITS));
	if (id >> MARK_SHIFT != mark || !index || index >= next_unused)
		return NULL;
	*out_generation = (uint32_t)(id >> GENERATION_SHIFT &
				     FIELD(WAFER_PROGRAM_GENERATION_BITS));
	*out_kernel = id & FIELD(WAFER_PROGRAM_KERNEL_BITS);
	if (mark == PROGRAM_MARK && *out_kernel)
		return NULL;
	return &blocks[index / BLOCK_SLOTS][index % BLOCK_SLOTS];
}

/* The live program |program| names, or NULL with the error recorded for
 * |call|. Under the lock. */
static struct wafer_program *live_program(const wafer_program *program,
					  const char *call)
{
	uint32_t generation;
	size_t kernel;
	struct wafer_program *p =
		slot_of((uintptr_t)program, PROGRAM_MARK, &generation, &kernel);
	if (!p) {
		wafer__fail(WAFER_ERROR_INVALID_HANDLE,
			    "%s: program %p is not a program (ids come from "
			    "wafer_program_create)",
			    call, (const void *)program);
		return NULL;
	}
	if (!p->client || p->generation != generation) {
		wafer__fail(WAFER_ERROR_INVALID_HANDLE,
			    "%s: program %p was released (or its client "
			    "closed)%s%s%s",
			    call, (const void *)program,
			    p->generation == generation ? "; it was '" : "",
			    p->generation == generation ? p->name : "",
			    p->generation == generation ? "'" : "");
		return NULL;
	}
	return p;
}

/* A free slot, generation set; NULL when out of host memory or slots.
 * Under the lock. */
static struct wafer_program *take_slot(void)
{
	struct wafer_program *p;
	if (free_head) {
		p = &blocks[free_head / BLOCK_SLOTS][free_head % BLOCK_SLOTS];
		free_head = p->next_free;
		p->generation++;
	} else {
		uint32_t index = next_unused;
		if (index > MAX_SLOTS)
			return NULL;
		struct wafer_program **block = &blocks[index / BLOCK_SLOTS];
		if (!*block && !(*block = calloc(BLOCK_SLOTS, sizeof **block)))
			return NULL;
		next_unused++;
		p = &(*block)[index % BLOCK_SLOTS];
		p->index = index;
		p->generation = 1;
	}
	p->next_free = 0;
	return p;
}

/* Ends the program in |p| (its ids are refused from now on) and puts the
 * slot back, unless its generations are spent. Its name stays for
 * messages until the slot is reused. Under the lock. */
static void free_slot(struct wafer__program_table *table,
		      struct wafer_program *p)
{
	WAFER__LIST_UNLINK(table->live, p, prev, next);
	table->count--;
	free(p->kernels);
	p->kernels = NULL;
	p->kernel_count = p->kernel_capacity = 0;
	p->client = NULL;
	p->device = NULL;
	p->loaded = NULL;
	p->prev = p->next = NULL;
	if (p->generation < MAX_GENERATION) {
		p->next_free = free_head;
		free_head = p->index;
	}
}

size_t wafer__program_slots_used(void)
{
	pthread_rwlock_rdlock(&table_lock);
	size_t used = next_unused - 1;
	pthread_rwlock_unlock(&table_lock);
	return used;
}

wafer_status wafer__program_table_init(struct wafer__program_table *table)
{
	memset(table, 0, sizeof *table);
	return WAFER_OK;
}

void wafer__program_table_fini(struct wafer__program_table *table,
			       struct wafer_runtime_device *device)
{
	const struct wafer_server_ops *server = device->plugin->server;
	size_t live = 0;

	pthread_rwlock_wrlock(&table_lock);
	while (table->live) {
		struct wafer_program *p = table->live;
		server->program_release(device->device, p->loaded);
		free_slot(table, p);
		live++;
	}
	pthread_rwlock_unlock(&table_lock);
	if (live)
		wafer__log_info("core",
				"client closed with %zu live program(s); "
				"releasing them",
				live);
}

bool wafer__program_ref_deref(wafer_client *client, const void *ref,
			      const struct wafer_kernel **out_kernel,
			      wafer_status *out_status)
{
	uint32_t generation;
	size_t kernel;
	*out_kernel = NULL;
	if ((uintptr_t)ref >> MARK_SHIFT != REF_MARK)
		return false;
	pthread_rwlock_rdlock(&table_lock);
	struct wafer_program *p =
		slot_of((uintptr_t)ref, REF_MARK, &generation, &kernel);
	if (!p || (p->generation == generation && p->client &&
		   kernel >= p->kernel_count))
		*out_status = wafer__fail(
			WAFER_ERROR_INVALID_ARGUMENT,
			"wafer_execute: kernel_ref %p is no kernel wafer_"
			"program_kernel handed out",
			ref);
	else if (!p->client || p->generation != generation)
		*out_status = wafer__fail(
			WAFER_ERROR_INVALID_HANDLE,
			"wafer_execute: kernel_ref %p is a kernel of a program "
			"that was released (or whose client closed)%s%s%s",
			ref, p->generation == generation ? ": '" : "",
			p->generation == generation ? p->name : "",
			p->generation == generation ? "'" : "");
	else if (p->client != client)
		*out_status = wafer__fail(
			WAFER_ERROR_INVALID_ARGUMENT,
			"wafer_execute: kernel_ref %p is a kernel of program "
			"'%s' of another client (refs from wafer_kernel_find "
			"and wafer_program_kernel are valid for the client "
			"that made them)",
			ref, p->name);
	else
		*out_kernel = p->kernels[kernel];
	pthread_rwlock_unlock(&table_lock);
	return true;
}

/*===----------------------------------------------------------------------===
 * Create
 *===----------------------------------------------------------------------===*/

/* The largest parameter block a program kernel takes: more than any
 * device passes to a kernel (CUDA: 32,764 bytes). */
#define WAFER_PROGRAM_MAX_PARAMS 65536

/* The smallest wafer_program_source a caller may pass: up to |size|. */
#define SOURCE_MIN_SIZE                                                        \
	(offsetof(wafer_program_source, size) + sizeof(size_t))

/* A source in a text format may end in NUL bytes (a string literal's
 * size) but hold none before: some compilers stop at the first and
 * silently drop the kernels after it, others compile every byte. */
static wafer_status check_text(const wafer_program_source *s, size_t i)
{
	switch (s->format) {
	case WAFER_PROGRAM_CUDA_C:
	case WAFER_PROGRAM_PTX:
	case WAFER_PROGRAM_OPENCL_C:
	case WAFER_PROGRAM_HOST_C:
		break;
	default:
		return WAFER_OK;
	}
	const char *text = s->data;
	size_t end = s->size;
	while (end && text[end - 1] == '\0')
		end--;
	const char *nul = memchr(text, '\0', end);
	if (nul)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_program_create: sources[%zu] (%s, "
				  "%zu bytes) holds a NUL byte at offset %zu, "
				  "before its end: text must not",
				  i, wafer_program_format_name(s->format),
				  s->size, (size_t)(nul - text));
	return WAFER_OK;
}

/* Checks the caller's sources and copies source |i| into |*out| at the
 * full struct size (fields the caller's struct lacks are 0). */
static wafer_status get_source(const wafer_program_source *sources, size_t i,
			       wafer_program_source *out)
{
	size_t stride = sources[0].struct_size;
	if (stride < SOURCE_MIN_SIZE)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_program_create: sources[0]."
				   "struct_size is %zu, expected %zu",
				   stride, sizeof *out);
	const wafer_program_source *s =
		(const void *)((const char *)sources + i * stride);
	memset(out, 0, sizeof *out);
	memcpy(out, s, stride < sizeof *out ? stride : sizeof *out);
	out->struct_size = sizeof *out;
	if (!out->data || out->size == 0)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_program_create: sources[%zu] (%s) "
				   "has %s",
				   i, wafer_program_format_name(out->format),
				   out->data ? "size 0" : "no data");
	if (out->name) {
		wafer_status status = wafer__check_name(
			"wafer_program_create", "a source's name", out->name);
		if (status != WAFER_OK)
			return status;
	}
	if ((out->format <= WAFER_PROGRAM_NONE ||
	     out->format > WAFER_PROGRAM_HOST_SO) &&
	    (out->format < WAFER_PROGRAM_VENDOR ||
	     out->format > WAFER_PROGRAM_VENDOR_LAST))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_program_create: sources[%zu] has "
				   "the unknown format %d",
				   i, (int)out->format);
	return check_text(out, i);
}

/* "a, b, c" of |formats| into |buf|. */
static void format_list(char *buf, size_t size,
			const wafer_program_format *formats, size_t count)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < count && used < size; i++) {
		int n = snprintf(buf + used, size - used, "%s%s",
				 i ? ", " : "",
				 wafer_program_format_name(formats[i]));
		if (n < 0)
			break;
		used += (size_t)n;
	}
	if (!count)
		snprintf(buf, size, "nothing");
}

/* Copies into |out| the first of the caller's sources whose format the
 * device takes. */
static wafer_status choose_source(struct wafer_runtime_device *device,
				  const wafer_program_source *sources,
				  size_t count, wafer_program_source *out)
{
	const struct wafer_server_ops *server = device->plugin->server;
	const wafer_program_format *formats = NULL;
	size_t format_count = 0;
	wafer_program_format offered[64];
	wafer_status status;

	/* A plugin may say why it leaves a format out (the cpu plugin
	 * without a C compiler): that goes into the refusal below. */
	wafer__error_clear();
	status = server->program_formats(device->device, &formats,
					 &format_count);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s:%u: program_formats",
					   device->backend, device->index);
	char why[512];
	snprintf(why, sizeof why, "%s", wafer__error_detail());
	for (size_t i = 0; i < count; i++) {
		status = get_source(sources, i, out);
		if (status != WAFER_OK)
			return status;
		if (i < sizeof offered / sizeof offered[0])
			offered[i] = out->format;
		for (size_t f = 0; f < format_count; f++)
			if (formats[f] == out->format)
				return WAFER_OK;
	}
	char takes[256], gave[256];
	format_list(takes, sizeof takes, formats, format_count);
	format_list(gave, sizeof gave, offered,
		    count < sizeof offered / sizeof offered[0]
			    ? count
			    : sizeof offered / sizeof offered[0]);
	return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
			   "wafer_program_create: %s:%u takes %s; offered: "
			   "%s%s%s",
			   device->backend, device->index, takes, gave,
			   why[0] ? "; " : "", why);
}

WAFER_API wafer_status wafer_program_create(wafer_client *client,
					    const wafer_program_source *sources,
					    size_t count, const char *options,
					    wafer_program **out_program)
{
	wafer_status status = WAFER__CHECK_OUT_POINTER(
		"wafer_program_create", client, sources, out_program);
	if (status != WAFER_OK)
		return status;
	if (count == 0)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_program_create: count is 0");
	struct wafer_runtime_device *device =
		wafer__client_runtime_device(client);
	const struct wafer_server_ops *server = device->plugin->server;
	wafer_program_source source;

	/* Bad arguments are reported as such on every backend. */
	for (size_t i = 0; i < count; i++) {
		status = get_source(sources, i, &source);
		if (status != WAFER_OK)
			return status;
	}
	if (!(device->info.capabilities & WAFER_CAP_PROGRAMS))
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "wafer_program_create: programs not "
				   "supported by plugin %s%s",
				   device->backend,
				   wafer__loader_minor_note(device->plugin, 2));

	status = choose_source(device, sources, count, &source);
	if (status != WAFER_OK)
		return status;
	char name[sizeof ((struct wafer_program *)0)->name];
	snprintf(name, sizeof name, "%s",
		 source.name ? source.name
			     : wafer_program_format_name(source.format));
	void *loaded = NULL;

	wafer__error_clear();
	status = server->program_load(device->device, &source, options,
				      &loaded);
	if (status == WAFER_OK && !loaded)
		status = wafer__fail(WAFER_ERROR_INTERNAL,
				     "program_load returned no program");
	if (status != WAFER_OK)
		/* A build log stays as the compiler wrote it: the context
		 * goes in front. */
		return wafer__fail_context(
			status, "wafer_program_create(%s, %s) on %s:%u", name,
			wafer_program_format_name(source.format),
			device->backend, device->index);
	struct wafer__program_table *table = wafer__client_programs(client);
	pthread_rwlock_wrlock(&table_lock);
	struct wafer_program *p = take_slot();
	if (p) {
		p->client = client;
		p->device = device;
		p->loaded = loaded;
		p->format = source.format;
		memcpy(p->name, name, sizeof name);
		WAFER__LIST_PUSH(table->live, p, prev, next);
		table->count++;
		*out_program = program_id(p);
	}
	pthread_rwlock_unlock(&table_lock);
	if (!p) {
		server->program_release(device->device, loaded);
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "wafer_program_create(%s): out of host "
				   "memory, or %u programs are live at once",
				   name, MAX_SLOTS);
	}
	wafer__log_debug("core", "program %s (%s) loaded on %s:%u as %p", name,
			 wafer_program_format_name(source.format),
			 device->backend, device->index,
			 (const void *)*out_program);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Kernels
 *===----------------------------------------------------------------------===*/

WAFER_API wafer_status wafer_program_kernel(wafer_program *program,
					    const char *name,
					    uint32_t binding_count,
					    size_t params_size,
					    const wafer_kernel_ref **out_kernel)
{
	wafer_status status = WAFER__CHECK_OUT_POINTER(
		"wafer_program_kernel", program, name, out_kernel);
	if (status == WAFER_OK)
		status = wafer__check_name("wafer_program_kernel",
					   "the kernel name", name);
	if (status != WAFER_OK)
		return status;
	if (binding_count > WAFER_MAX_BINDINGS)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_program_kernel(%s): %u bindings, "
				   "the most is %d",
				   name, binding_count, WAFER_MAX_BINDINGS);
	if (params_size > WAFER_PROGRAM_MAX_PARAMS)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_program_kernel(%s): a parameter "
				   "block of %zu bytes, the most is %d",
				   name, params_size, WAFER_PROGRAM_MAX_PARAMS);
	/* Under the write lock: the plugin's lookup is quick, and a launch
	 * must not see the kernel array while it grows. */
	pthread_rwlock_wrlock(&table_lock);
	struct wafer_program *p =
		live_program(program, "wafer_program_kernel");
	if (!p) {
		status = WAFER_ERROR_INVALID_HANDLE;
		goto out;
	}
	struct wafer_runtime_device *device = p->device;
	for (size_t i = 0; i < p->kernel_count; i++) {
		const struct wafer_kernel *k = p->kernels[i];
		if (k->binding_count == binding_count &&
		    k->params_size == params_size && strcmp(k->op, name) == 0) {
			*out_kernel = (const wafer_kernel_ref *)encode(
				REF_MARK, p, i);
			goto out;
		}
	}
	if (p->kernel_count == MAX_KERNELS) {
		status = wafer__fail(WAFER_ERROR_OUT_OF_RANGE,
				     "wafer_program_kernel(%s): program '%s' "
				     "has handed out %zu kernels, the most",
				     name, p->name, MAX_KERNELS);
		goto out;
	}
	if (p->kernel_count == p->kernel_capacity) {
		size_t capacity = p->kernel_capacity ? 2 * p->kernel_capacity
						     : 4;
		const struct wafer_kernel **kernels =
			realloc(p->kernels, capacity * sizeof *kernels);
		if (!kernels) {
			status = wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
					     "wafer_program_kernel: out of "
					     "host memory");
			goto out;
		}
		p->kernels = kernels;
		p->kernel_capacity = capacity;
	}
	const struct wafer_kernel *kernel = NULL;
	wafer__error_clear();
	status = device->plugin->server->program_kernel(
		device->device, p->loaded, name, binding_count, params_size,
		&kernel);
	if (status == WAFER_OK && !kernel)
		status = wafer__fail(WAFER_ERROR_INTERNAL,
				     "program_kernel returned no kernel");
	if (status != WAFER_OK) {
		status = wafer__fail_context(
			status, "wafer_program_kernel(%s) of program '%s' on "
				"%s:%u",
			name, p->name, device->backend, device->index);
		goto out;
	}
	p->kernels[p->kernel_count] = kernel;
	*out_kernel = (const wafer_kernel_ref *)encode(REF_MARK, p,
						       p->kernel_count++);
out:
	pthread_rwlock_unlock(&table_lock);
	return status;
}

/*===----------------------------------------------------------------------===
 * Release
 *===----------------------------------------------------------------------===*/

WAFER_API wafer_status wafer_program_release(wafer_program *program)
{
	if (!program)
		return WAFER_OK;
	pthread_rwlock_wrlock(&table_lock);
	struct wafer_program *p =
		live_program(program, "wafer_program_release");
	wafer_client *client = p ? p->client : NULL;
	void *loaded = p ? p->loaded : NULL;
	if (p)
		free_slot(wafer__client_programs(client), p);
	pthread_rwlock_unlock(&table_lock);
	if (!p)
		return WAFER_ERROR_INVALID_HANDLE;
	/* Launches of its kernels issued before this run first: the
	 * plugin's program goes in queue order. */
	return wafer__client_release_program(client, loaded);
}
