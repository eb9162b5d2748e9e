/* wafer — SPDX-License-Identifier: MIT
 *
 * program.c: the caller's own kernels (program.h): choosing the source a
 * device takes, loading it through the plugin's program entries, handing
 * out kernel refs, and releasing in queue order. The records behind
 * programs and refs are kept as program_table.h says. */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/program.h>

#include "lib/client.h"
#include "lib/error.h"
#include "lib/loader.h"
#include "lib/log.h"
#include "lib/program_table.h"

struct wafer_program {
	wafer_client *client;
	struct wafer_runtime_device *device;
	/* The plugin's program; NULL once released (under the table's
	 * lock). */
	void *loaded;
	wafer_program_format format;
	/* For messages: the source's name, else its format. */
	char name[96];
	struct wafer_program *next;
};

/*===----------------------------------------------------------------------===
 * The table
 *===----------------------------------------------------------------------===*/

wafer_status wafer__program_table_init(struct wafer__program_table *table)
{
	memset(table, 0, sizeof *table);
	if (pthread_mutex_init(&table->lock, NULL) != 0)
		return wafer__fail(WAFER_ERROR_INTERNAL,
				   "pthread_mutex_init failed");
	atomic_init(&table->blocks, NULL);
	return WAFER_OK;
}

void wafer__program_table_fini(struct wafer__program_table *table,
			       struct wafer_runtime_device *device)
{
	const struct wafer_server_ops *server = device->plugin->server;
	size_t live = 0;

	for (struct wafer_program *p = table->programs, *next; p; p = next) {
		next = p->next;
		if (p->loaded) {
			server->program_release(device->device, p->loaded);
			live++;
		}
		free(p);
	}
	if (live)
		wafer__log_info("core",
				"client closed with %zu live program(s); "
				"releasing them",
				live);
	struct wafer__program_ref_block *b =
		atomic_load_explicit(&table->blocks, memory_order_relaxed);
	while (b) {
		struct wafer__program_ref_block *next = b->next;
		free(b);
		b = next;
	}
	pthread_mutex_destroy(&table->lock);
}

wafer_status wafer__program_ref_released(const void *ref)
{
	const struct wafer__program_ref *r = ref;
	return wafer__fail(WAFER_ERROR_INVALID_HANDLE,
			   "wafer_execute: kernel_ref %p is a kernel of "
			   "program '%s', which was released",
			   ref, r->program->name);
}

/* Calls |fn| on every ref of |table| in use. Under the lock. */
static void for_each_ref(struct wafer__program_table *table,
			 bool (*fn)(struct wafer__program_ref *, void *),
			 void *data)
{
	struct wafer__program_ref_block *b =
		atomic_load_explicit(&table->blocks, memory_order_relaxed);
	size_t used = table->used;
	for (; b; b = b->next, used = WAFER_PROGRAM_REF_BLOCK)
		for (size_t i = 0; i < used; i++)
			if (!fn(&b->refs[i], data))
				return;
}

/* A new ref; NULL when out of host memory. Under the lock. */
static struct wafer__program_ref *new_ref(struct wafer__program_table *table)
{
	struct wafer__program_ref_block *head =
		atomic_load_explicit(&table->blocks, memory_order_relaxed);
	if (!head || table->used == WAFER_PROGRAM_REF_BLOCK) {
		struct wafer__program_ref_block *b = calloc(1, sizeof *b);
		if (!b)
			return NULL;
		for (size_t i = 0; i < WAFER_PROGRAM_REF_BLOCK; i++)
			atomic_init(&b->refs[i].kernel, NULL);
		b->next = head;
		atomic_store_explicit(&table->blocks, b, memory_order_release);
		table->used = 0;
		head = b;
	}
	return &head->refs[table->used++];
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
	if (out_program)
		*out_program = NULL;
	wafer_status status = wafer__check_not_null(
		"wafer_program_create", client, "client", sources, "sources",
		out_program, "out_program");
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
	struct wafer_program *p = calloc(1, sizeof *p);
	if (!p)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "wafer_program_create: out of host memory");
	p->client = client;
	p->device = device;
	p->format = source.format;
	snprintf(p->name, sizeof p->name, "%s",
		 source.name ? source.name
			     : wafer_program_format_name(source.format));

	wafer__error_clear();
	status = server->program_load(device->device, &source, options,
				      &p->loaded);
	if (status == WAFER_OK && !p->loaded)
		status = wafer__fail(WAFER_ERROR_INTERNAL,
				     "program_load returned no program");
	if (status != WAFER_OK) {
		/* A build log stays as the compiler wrote it: the context
		 * goes in front. */
		wafer__fail_context(status,
				    "wafer_program_create(%s, %s) on %s:%u",
				    p->name,
				    wafer_program_format_name(source.format),
				    device->backend, device->index);
		free(p);
		return status;
	}
	struct wafer__program_table *table = wafer__client_programs(client);
	pthread_mutex_lock(&table->lock);
	p->next = table->programs;
	table->programs = p;
	pthread_mutex_unlock(&table->lock);
	wafer__log_debug("core", "program %s (%s) loaded on %s:%u", p->name,
			 wafer_program_format_name(p->format), device->backend,
			 device->index);
	*out_program = p;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Kernels
 *===----------------------------------------------------------------------===*/

struct find_ref {
	const struct wafer_program *program;
	const char *name;
	uint32_t binding_count;
	size_t params_size;
	struct wafer__program_ref *found;
};

static bool match_ref(struct wafer__program_ref *r, void *data)
{
	struct find_ref *f = data;
	const struct wafer_kernel *k =
		atomic_load_explicit(&r->kernel, memory_order_relaxed);
	if (r->program != f->program || !k ||
	    k->binding_count != f->binding_count ||
	    k->params_size != f->params_size || strcmp(k->op, f->name) != 0)
		return true;
	f->found = r;
	return false;
}

WAFER_API wafer_status wafer_program_kernel(wafer_program *program,
					    const char *name,
					    uint32_t binding_count,
					    size_t params_size,
					    const wafer_kernel_ref **out_kernel)
{
	if (out_kernel)
		*out_kernel = NULL;
	wafer_status status = wafer__check_not_null(
		"wafer_program_kernel", program, "program", name, "name",
		out_kernel, "out_kernel");
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
	struct wafer__program_table *table =
		wafer__client_programs(program->client);
	struct wafer_runtime_device *device = program->device;

	pthread_mutex_lock(&table->lock);
	if (!program->loaded) {
		status = wafer__fail(WAFER_ERROR_INVALID_HANDLE,
				     "wafer_program_kernel(%s): program '%s' "
				     "was released",
				     name, program->name);
		goto out;
	}
	struct find_ref find = {program, name, binding_count, params_size,
				NULL};
	for_each_ref(table, match_ref, &find);
	if (find.found) {
		*out_kernel = (const wafer_kernel_ref *)(void *)find.found;
		goto out;
	}
	const struct wafer_kernel *kernel = NULL;
	wafer__error_clear();
	status = device->plugin->server->program_kernel(
		device->device, program->loaded, name, binding_count,
		params_size, &kernel);
	if (status == WAFER_OK && !kernel)
		status = wafer__fail(WAFER_ERROR_INTERNAL,
				     "program_kernel returned no kernel");
	if (status != WAFER_OK) {
		status = wafer__fail_context(
			status, "wafer_program_kernel(%s) of program '%s' on "
				"%s:%u",
			name, program->name, device->backend, device->index);
		goto out;
	}
	struct wafer__program_ref *r = new_ref(table);
	if (!r) {
		status = wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				     "wafer_program_kernel: out of host memory");
		goto out;
	}
	r->program = program;
	atomic_store_explicit(&r->kernel, kernel, memory_order_release);
	*out_kernel = (const wafer_kernel_ref *)(void *)r;
out:
	pthread_mutex_unlock(&table->lock);
	return status;
}

/*===----------------------------------------------------------------------===
 * Release
 *===----------------------------------------------------------------------===*/

static bool retire_ref(struct wafer__program_ref *r, void *data)
{
	if (r->program == data)
		atomic_store_explicit(&r->kernel, NULL, memory_order_release);
	return true;
}

WAFER_API wafer_status wafer_program_release(wafer_program *program)
{
	if (!program)
		return WAFER_OK;
	struct wafer__program_table *table =
		wafer__client_programs(program->client);

	pthread_mutex_lock(&table->lock);
	void *loaded = program->loaded;
	program->loaded = NULL;
	if (loaded)
		for_each_ref(table, retire_ref, program);
	pthread_mutex_unlock(&table->lock);
	if (!loaded)
		return wafer__fail(WAFER_ERROR_INVALID_HANDLE,
				   "wafer_program_release: program '%s' was "
				   "released already",
				   program->name);
	/* Launches of its kernels issued before this run first: the
	 * plugin's program goes in queue order. */
	return wafer__client_release_program(program->client, loaded);
}
