/* wafer — SPDX-License-Identifier: MIT
 *
 * abi.c: the plugin-ABI suite, written once against <wafer/plugin.h> and
 * run on every plugin. It dlopens the plugin a description file names
 * (t/abi/README and wafer-plugin(7), TESTING, give its form), queries it
 * with a fake host services table that records set_error and log text,
 * and drives every entry as the core would: the descriptor, init,
 * devices, the kernel table, storage, stream-ordered allocation,
 * virtual memory, launches and their errors, timers, queues on several
 * threads, programs, interop, peer copies and collectives.
 *
 * An optional group the plugin leaves NULL is a skip that says so; one
 * the description lists as unsupported is a skip with the description's
 * reason. What only one plugin has (its options, its names, its clock,
 * failures its stand-in driver injects) is tested in that plugin's own
 * test, t/<plugin>/plugin.c.
 *
 *   abi FILE      the description FILE (also $WAFER_ABI_DESCRIPTION) */
#include "build-config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>

#include "t/allocator_may_fail.h"
#include "t/abi/describe.h"
#include "t/tap.h"
#include "t/standins/fake_host.h"

static const struct wafer_plugin *plugin;
static const struct wafer_storage_ops *st;
static const struct wafer_server_ops *sv;
/* The plugin's tables as this suite's header has them: what the plugin
 * gave, zeros past its struct_size (a plugin built for an older minor
 * has shorter tables), as the loader reads them. */
static struct wafer_plugin plugin_full;
static struct wafer_storage_ops st_full;
static struct wafer_server_ops sv_full;
/* The minor whose rules judge the plugin: the one it targets, or this
 * suite's when the plugin's is newer (the core uses what it knows). */
static uint32_t judged_minor;
static struct abi_description desc;
/* Device 0's alloc_alignment and vm_granularity (test_devices). */
static size_t alignment = 16, granularity;

/* A skip of |n| points, TAP style, with the reason. */
static void skip(int n, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
static void skip(int n, const char *format, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, format);
	vsnprintf(why, sizeof why, format, ap);
	va_end(ap);
	for (int i = 0; i < n; i++)
		printf("ok %d # SKIP %s\n", ++tap_run, why);
}

/* 1 when optional group |name| should run; otherwise one skip saying
 * why (or a failure, when the description promises the group and the
 * plugin leaves it out). |since|: the minor that added the group (a
 * plugin targeting an older one is not asked for it); |offered|: whether
 * the plugin sets its entries. */
static int group(unsigned since, const char *name, int offered,
		 const char *entries)
{
	const char *why = abi_unsupported(&desc, name);

	if (judged_minor < since) {
		skip(1, "%s: the plugin targets ABI 1.%u (%s came in ABI 1.%u)",
		     name, judged_minor, name, since);
		return 0;
	}
	if (why) {
		skip(1, "%s: %s", name, why);
		return 0;
	}
	if (abi_offers(&desc, name))
		return ok(offered, "%s: %s offers it, as %s says (%s)", name,
			  plugin->name, desc.path, entries);
	if (!offered) {
		skip(1, "%s: %s leaves %s NULL", name, plugin->name, entries);
		return 0;
	}
	return 1;
}

/* 1 when the checks |name| should run: the description promises them
 * (offers NAME) and does not list them unsupported; else one skip. They
 * hold a plugin to more than the ABI asks of every plugin. */
static int promised(const char *name, const char *what)
{
	const char *why = abi_unsupported(&desc, name);

	if (why)
		skip(1, "%s: %s", name, why);
	else if (!abi_offers(&desc, name))
		skip(1, "%s: %s (%s does not offer %s)", name, what, desc.path,
		     name);
	return !why && abi_offers(&desc, name);
}

static wafer_status init_with(const struct wafer_plugin_option *extra,
			      size_t n_extra, void **out_state)
{
	struct wafer_plugin_option all[ABI_MAX_OPTIONS + 4];
	size_t n = 0;

	for (size_t i = 0; i < desc.option_count; i++)
		all[n++] = option(desc.options[i].key, desc.options[i].value,
				  desc.path);
	for (size_t i = 0; i < n_extra && n < sizeof all / sizeof all[0]; i++)
		all[n++] = extra[i];
	return host_init(plugin, all, n, out_state);
}

static const struct wafer_kernel *find_kernel(void *device, const char *op,
					      wafer_dtype dtype)
{
	return host_find_kernel(plugin, device, op, dtype);
}

static wafer_resource alloc_or_die(void *device, size_t size)
{
	wafer_resource r = 0;

	if (st->alloc(device, size, &r) != WAFER_OK || !r)
		bail_out("alloc(%zu): %s", size, last_error);
	return r;
}

static wafer_status launch(void *device, void *queue,
			   const struct wafer_kernel *k,
			   const struct wafer_binding *b, uint32_t nb,
			   const void *params, size_t params_size,
			   uint64_t count)
{
	return host_launch(plugin, device, queue, k, b, nb, params,
			   params_size, count);
}

/* fill |count| f32 elements of |r| with |value| on |queue|. */
static wafer_status fill(void *device, void *queue, wafer_resource r,
			 uint64_t count, double value)
{
	const struct wafer_kernel *k =
		find_kernel(device, WAFER_KERNEL_FILL, WAFER_DTYPE_F32);
	struct wafer_fill_params p = {.count = count, .value = value};
	struct wafer_binding b = binding(r, 0, count * sizeof(float));

	if (!k)
		return WAFER_ERROR_NOT_FOUND;
	return launch(device, queue, k, &b, 1, &p, sizeof p, count);
}

static int all_equal(const float *x, size_t n, float value)
{
	for (size_t i = 0; i < n; i++)
		if (x[i] != value)
			return 0;
	return 1;
}

/*===----------------------------------------------------------------------===
 * The descriptor and init
 *===----------------------------------------------------------------------===*/

/* Entries of a group set all or none, as plugin.h asks. */
#define ALL_OR_NONE2(a, b) (!(a) == !(b))
#define ALL_OR_NONE4(a, b, c, d)                                               \
	(ALL_OR_NONE2(a, b) && ALL_OR_NONE2(b, c) && ALL_OR_NONE2(c, d))

static void test_descriptor(wafer_plugin_query_fn query)
{
	const char *name;
	int name_ok;

	if (!ok(query != NULL, "the plugin exports %s",
		WAFER_PLUGIN_QUERY_SYMBOL))
		bail_out("no %s", WAFER_PLUGIN_QUERY_SYMBOL);
	plugin = query(WAFER_PLUGIN_ABI_MAJOR, &fake_host);
	if (!ok(plugin != NULL, "query returns a descriptor"))
		bail_out("query: %s", last_error);
	ok(plugin->struct_size >= offsetof(struct wafer_plugin, server) +
					  sizeof plugin->server,
	   "descriptor struct_size %zu holds every entry", plugin->struct_size);
	is_int(plugin->abi_major, WAFER_PLUGIN_ABI_MAJOR, "abi_major");
	judged_minor = plugin->abi_minor < WAFER_PLUGIN_ABI_MINOR
			       ? plugin->abi_minor
			       : WAFER_PLUGIN_ABI_MINOR;
	/* A newer minor only appends (plugin.h): the core loads it with a
	 * warning and uses what it knows, so the suite judges it so. */
	if (plugin->abi_minor > WAFER_PLUGIN_ABI_MINOR)
		ok(1, "abi_minor %u is newer than this suite's 1.%u: judged by "
		      "ABI 1.%u's rules (the core loads it with a warning)",
		   plugin->abi_minor, (unsigned)WAFER_PLUGIN_ABI_MINOR,
		   (unsigned)WAFER_PLUGIN_ABI_MINOR);
	else
		ok(1, "abi_minor %u: judged by ABI 1.%u's rules",
		   plugin->abi_minor, plugin->abi_minor);
	memcpy(&plugin_full, plugin,
	       plugin->struct_size < sizeof plugin_full ? plugin->struct_size
							 : sizeof plugin_full);
	plugin = &plugin_full;
	name = plugin->name ? plugin->name : "";
	name_ok = *name != '\0';
	for (const char *c = name; *c; c++)
		name_ok &= (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
			   *c == '_';
	ok(name_ok, "name '%s' is [a-z0-9_]+", name);
	if (!strchr(desc.plugin, '/'))
		is_str(name, desc.plugin, "name is the backend's");
	if (desc.version)
		is_str(plugin->version, desc.version, "version");
	ok(plugin->version && *plugin->version, "version: %s",
	   plugin->version ? plugin->version : "(null)");
	ok(plugin->description && *plugin->description, "description: %s",
	   plugin->description ? plugin->description : "(null)");
	ok(plugin->init && plugin->shutdown && plugin->device_count &&
		   plugin->device_info && plugin->device_open &&
		   plugin->device_close && plugin->device_kernels,
	   "every required lifetime and device entry is set");
	ok(query(WAFER_PLUGIN_ABI_MAJOR + 1, &fake_host) != NULL,
	   "a core of another major still gets a descriptor (it reports the "
	   "mismatch)");

	st = plugin->storage;
	sv = plugin->server;
	if (st) {
		memcpy(&st_full, st, st->struct_size < sizeof st_full
					     ? st->struct_size
					     : sizeof st_full);
		st = &st_full;
	}
	if (sv) {
		memcpy(&sv_full, sv, sv->struct_size < sizeof sv_full
					     ? sv->struct_size
					     : sizeof sv_full);
		sv = &sv_full;
	}
	if (!ok(st && st->struct_size >= offsetof(struct wafer_storage_ops,
						  copy) + sizeof st->copy &&
			st->alloc && st->free && st->copy_in &&
			st->copy_out && st->copy,
		"storage table: struct_size and required entries"))
		bail_out("no storage table");
	ok(!st->host_alloc && !st->host_free,
	   "host_alloc/host_free are retired in ABI 1.1: NULL");
	if (!ok(sv && sv->struct_size >= offsetof(struct wafer_server_ops,
						  sync) + sizeof sv->sync &&
			sv->queue_create && sv->queue_destroy && sv->launch &&
			sv->sync,
		"server table: struct_size and required entries"))
		bail_out("no server table");
	if (plugin->abi_minor == WAFER_PLUGIN_ABI_MINOR)
		ok(plugin->struct_size == sizeof *plugin &&
			   st->struct_size == sizeof *st &&
			   sv->struct_size == sizeof *sv,
		   "built for this minor: every table's struct_size is this "
		   "header's");
	else if (plugin->abi_minor > WAFER_PLUGIN_ABI_MINOR)
		ok(plugin->struct_size >= sizeof *plugin &&
			   st->struct_size >= sizeof *st &&
			   sv->struct_size >= sizeof *sv,
		   "built for a newer minor: every table holds this header's "
		   "entries");
	else
		skip(1, "the plugin targets ABI 1.%u: tables as that minor "
			"knew them",
		     plugin->abi_minor);
	ok(ALL_OR_NONE2(st->alloc_async, st->free_async),
	   "stream-ordered allocation: both entries or none");
	ok(ALL_OR_NONE4(st->vm_reserve, st->vm_release, st->vm_map,
			st->vm_unmap),
	   "virtual memory: all four entries or none");
	ok(ALL_OR_NONE2(st->native, st->import) &&
		   ALL_OR_NONE2(st->import, st->forget) &&
		   ALL_OR_NONE2(st->forget, sv->queue_native) &&
		   ALL_OR_NONE2(sv->queue_native, sv->queue_wrap),
	   "interop: all five entries or none");
	ok(ALL_OR_NONE2(sv->timer_begin, sv->timer_end),
	   "timers: both entries or none");
	ok(ALL_OR_NONE4(sv->program_formats, sv->program_load,
			sv->program_kernel, sv->program_release),
	   "programs: all four entries or none");
	ok(ALL_OR_NONE4(sv->comm_id, sv->comm_open, sv->comm_close,
			sv->comm_run),
	   "collectives: all four entries or none");
	if (judged_minor >= 5)
		ok(ALL_OR_NONE4(sv->event_create, sv->event_destroy,
				sv->event_record, sv->queue_wait_event) &&
			   ALL_OR_NONE4(sv->queue_wait_event, sv->event_sync,
					sv->event_query, sv->event_elapsed) &&
			   ALL_OR_NONE2(sv->event_elapsed, sv->queue_callback),
		   "events: all eight entries or none");
	else
		skip(1, "events: the plugin targets ABI 1.%u (events came in "
			"ABI 1.5)", judged_minor);
	if (judged_minor >= 6)
		ok(ALL_OR_NONE4(sv->graph_begin, sv->graph_end,
				sv->graph_launch, sv->graph_destroy),
		   "graphs: all four entries or none");
	else
		skip(1, "graphs: the plugin targets ABI 1.%u (graphs came in "
			"ABI 1.6)", judged_minor);
	if (judged_minor >= 7)
		ok(ALL_OR_NONE2(sv->comm_group_begin, sv->comm_group_end),
		   "grouped collectives: both entries or none");
	else
		skip(1, "grouped collectives: the plugin targets ABI 1.%u "
			"(they came in ABI 1.7)", judged_minor);
}

static void test_init(void)
{
	struct wafer_plugin_option opt =
		option("no_such_option_x", "blue", "/etc/wafer/conf.d/x.conf:2");
	void *state = (void *)1, *again = NULL;

	/* The core never passes init bad arguments, so the ABI does not ask
	 * every plugin to check them. */
	if (promised("strict", "arguments the core never passes")) {
		status_is(plugin->init(NULL, &state),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "init without arguments is rejected");
		ok(state == NULL, "  ... and sets *out_state to NULL");
		state = (void *)1;
		struct wafer_plugin_init_args args = {
			.struct_size = sizeof args, .option_count = 2,
			.host = &fake_host};
		status_is(plugin->init(&args, &state),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "init with an option count but no options is "
			  "rejected");
		ok(state == NULL, "  ... and sets *out_state to NULL");
	}
	/* wafer-plugin(7): log and ignore an unknown key. */
	log_count = 0;
	last_log[0] = '\0';
	state = NULL;
	status_is(init_with(&opt, 1, &state), WAFER_OK,
		  "an unknown option does not fail init");
	ok(log_count >= 1 && strstr(log_text, "no_such_option_x") &&
		   strstr(log_text, "/etc/wafer/conf.d/x.conf:2"),
	   "  ... it is logged with its origin: %s", last_log);
	status_is(init_with(NULL, 0, &again), WAFER_OK,
		  "a second instance at the same time");
	if (again)
		plugin->shutdown(again);
	if (state)
		plugin->shutdown(state);
}

/*===----------------------------------------------------------------------===
 * Devices and the kernel table
 *===----------------------------------------------------------------------===*/

static void test_devices(void *state, uint32_t count)
{
	struct wafer_device_info info, old;
	void *device = (void *)1;

	for (uint32_t i = 0; i < count; i++) {
		int pow2;

		memset(&info, 0, sizeof info);
		info.struct_size = sizeof info;
		status_is(plugin->device_info(state, i, &info), WAFER_OK,
			  "device_info(%u)", i);
		pow2 = info.alloc_alignment >= 16 &&
		       (info.alloc_alignment & (info.alloc_alignment - 1)) == 0;
		ok(info.name[0] && memchr(info.name, 0, sizeof info.name),
		   "  ... name: %s", info.name);
		ok(info.memory_bytes > 0, "  ... memory_bytes %llu MiB",
		   (unsigned long long)(info.memory_bytes >> 20));
		ok(pow2, "  ... alloc_alignment %zu: a power of two >= 16",
		   info.alloc_alignment);
		ok(!st->vm_reserve == !info.vm_granularity &&
			   (!info.vm_granularity ||
			    info.vm_granularity % info.alloc_alignment == 0),
		   "  ... vm_granularity %zu: set exactly when virtual memory "
		   "is offered, a multiple of the alignment",
		   info.vm_granularity);
		is_int((long long)info.struct_size, sizeof info,
		       "  ... struct_size left as the caller set it");
		if (i == 0) {
			alignment = info.alloc_alignment;
			granularity = info.vm_granularity;
		}
	}

	/* Every core so far sends the whole struct: filling a shorter one
	 * is more than the ABI asks. */
	if (promised("strict", "a shorter struct than any core sends")) {
		/* An older core knows only the fields up to the name. */
		memset(&old, 0xab, sizeof old);
		old.struct_size =
			offsetof(struct wafer_device_info, memory_bytes);
		status_is(plugin->device_info(state, 0, &old), WAFER_OK,
			  "device_info into a shorter struct (an older core)");
		plugin->device_info(state, 0, &info);
		ok(strcmp(old.name, info.name) == 0 &&
			   old.memory_bytes == UINT64_C(0xabababababababab) &&
			   old.compute_units == 0xabababab,
		   "  ... fills what fits and writes nothing past struct_size");
		/* One that ends inside the name gets what fits of it. */
		memset(&old, 0x7e, sizeof old);
		old.struct_size = offsetof(struct wafer_device_info, name) + 8;
		plugin->device_info(state, 0, &old);
		ok((unsigned char)old.name[8] == 0x7e && old.memory_bytes ==
			   UINT64_C(0x7e7e7e7e7e7e7e7e),
		   "  ... also when struct_size ends inside the name");
	}
	last_error[0] = '\0';
	status_is(plugin->device_info(state, count, &info),
		  WAFER_ERROR_NOT_FOUND, "device_info(%u), past the last device",
		  count);
	ok(last_error[0] != '\0', "  ... says so: %s", last_error);
	status_is(plugin->device_open(state, count, &device),
		  WAFER_ERROR_NOT_FOUND, "device_open(%u)", count);
	ok(device == NULL, "  ... sets *out_device to NULL");
	for (uint32_t i = 0; i < count; i++) {
		device = NULL;
		ok(plugin->device_open(state, i, &device) == WAFER_OK && device,
		   "device_open(%u)", i);
		if (device)
			plugin->device_close(device);
	}
}

#define EW sizeof(struct wafer_elementwise_params)
#define SC sizeof(struct wafer_scalar_params)
#define ST sizeof(struct wafer_binary_strided_params)
#define RW sizeof(struct wafer_rows_params)
/* The standard catalogue of plugin.h: bindings and parameter size. */
static const struct {
	const char *op;
	uint32_t bindings;
	size_t params_size;
} catalogue[] = {
	{WAFER_KERNEL_NOOP, 0, 0},
	{WAFER_KERNEL_FILL, 1, sizeof(struct wafer_fill_params)},
	{WAFER_KERNEL_COPY, 2, EW},
	{WAFER_KERNEL_RELU, 2, EW},
	{WAFER_KERNEL_ADD, 3, EW},
	{WAFER_KERNEL_MUL, 3, EW},
	{WAFER_KERNEL_NEG, 2, EW},
	{WAFER_KERNEL_ABS, 2, EW},
	{WAFER_KERNEL_EXP, 2, EW},
	{WAFER_KERNEL_LOG, 2, EW},
	{WAFER_KERNEL_SQRT, 2, EW},
	{WAFER_KERNEL_GELU, 2, EW},
	{WAFER_KERNEL_SIGMOID, 2, EW},
	{WAFER_KERNEL_TANH, 2, EW},
	{WAFER_KERNEL_SUB, 3, EW},
	{WAFER_KERNEL_DIV, 3, EW},
	{WAFER_KERNEL_MAX, 3, EW},
	{WAFER_KERNEL_MIN, 3, EW},
	{WAFER_KERNEL_ADD_SCALAR, 2, SC},
	{WAFER_KERNEL_SUB_SCALAR, 2, SC},
	{WAFER_KERNEL_MUL_SCALAR, 2, SC},
	{WAFER_KERNEL_DIV_SCALAR, 2, SC},
	{WAFER_KERNEL_MAX_SCALAR, 2, SC},
	{WAFER_KERNEL_MIN_SCALAR, 2, SC},
	{WAFER_KERNEL_ADD_STRIDED, 3, ST},
	{WAFER_KERNEL_SUB_STRIDED, 3, ST},
	{WAFER_KERNEL_MUL_STRIDED, 3, ST},
	{WAFER_KERNEL_DIV_STRIDED, 3, ST},
	{WAFER_KERNEL_MAX_STRIDED, 3, ST},
	{WAFER_KERNEL_MIN_STRIDED, 3, ST},
	{WAFER_KERNEL_COPY_STRIDED, 2, sizeof(struct wafer_strided_copy_params)},
	{WAFER_KERNEL_CAST, 2, sizeof(struct wafer_cast_params)},
	{WAFER_KERNEL_REDUCE_SUM, 2, RW},
	{WAFER_KERNEL_REDUCE_MAX, 2, RW},
	{WAFER_KERNEL_REDUCE_MEAN, 2, RW},
	{WAFER_KERNEL_SOFTMAX, 2, RW},
	{WAFER_KERNEL_MATMUL, 3, sizeof(struct wafer_matmul_params)},
};
#undef EW
#undef SC
#undef ST
#undef RW
#define CATALOGUE_SIZE (sizeof catalogue / sizeof catalogue[0])

static void test_kernel_table(void *device)
{
	const struct wafer_kernel *table, *again;
	size_t count = 0, count2 = 0, bad_form = 0, bad_shape = 0, dups = 0;
	char where[256] = "";

	status_is(plugin->device_kernels(device, &table, &count), WAFER_OK,
		  "device_kernels");
	ok(count > 0 && table[0].struct_size >= offsetof(struct wafer_kernel,
							  impl) +
							 sizeof table[0].impl,
	   "  ... %zu entries, each of a whole struct_size", count);
	plugin->device_kernels(device, &again, &count2);
	ok(again == table && count2 == count,
	   "  ... the same table on a second call");
	for (size_t i = 0; i < count; i++) {
		const struct wafer_kernel *k =
			(const void *)((const char *)table +
				       i * table[0].struct_size);
		if (!k->op || !*k->op || !k->variant || !*k->variant ||
		    !k->impl || k->dtype == WAFER_DTYPE_NONE) {
			bad_form++;
			snprintf(where, sizeof where, "entry %zu", i);
			continue;
		}
		for (size_t c = 0; c < CATALOGUE_SIZE; c++)
			if (strcmp(k->op, catalogue[c].op) == 0 &&
			    (k->binding_count != catalogue[c].bindings ||
			     k->params_size != catalogue[c].params_size)) {
				bad_shape++;
				snprintf(where, sizeof where,
					 "%s/%s: %u bindings, %zu-byte params",
					 k->op, k->variant, k->binding_count,
					 k->params_size);
			}
		for (size_t j = 0; j < i; j++) {
			const struct wafer_kernel *o =
				(const void *)((const char *)table +
					       j * table[0].struct_size);
			if (o->op && strcmp(o->op, k->op) == 0 &&
			    o->dtype == k->dtype &&
			    strcmp(o->variant, k->variant) == 0)
				dups++;
		}
	}
	ok(bad_form == 0, "every entry has an op, a variant, a dtype and an "
			  "impl %s", where);
	ok(bad_shape == 0, "catalogue entries take plugin.h's bindings and "
			   "parameter block %s", where);
	ok(dups == 0, "variant names are unique per (op, dtype)");
	if (!promised("catalogue", "the whole catalogue in f32"))
		return;
	for (size_t c = 0; c < CATALOGUE_SIZE; c++) {
		const struct wafer_kernel *k =
			find_kernel(device, catalogue[c].op, WAFER_DTYPE_F32);
		ok(k != NULL, "  ... %s (f32)", catalogue[c].op);
	}
}

/*===----------------------------------------------------------------------===
 * Storage
 *===----------------------------------------------------------------------===*/

/* Copies on one queue run in issue order; copy_in's source may be
 * reused as soon as the call returns. */
static void test_copy_order(void *device, void *queue)
{
	const size_t n = (1 << 20) + 3;
	unsigned char *a = malloc(n), *b = malloc(n), *got = malloc(n);
	wafer_resource ra = alloc_or_die(device, n), rb = alloc_or_die(device, n);
	int reused = 1;

	if (!a || !b || !got)
		bail_out("out of memory");
	for (size_t i = 0; i < n; i++) {
		a[i] = (unsigned char)(i * 7 + 1);
		b[i] = (unsigned char)(i * 5 + 3);
	}
	st->copy_in(device, queue, ra, 0, a, n);
	memset(a, 0x5a, n);
	st->copy_out(device, queue, ra, 0, got, n);
	status_is(sv->sync(device, queue), WAFER_OK,
		  "copy_in of 1 MiB + 3, its source overwritten at once");
	for (size_t i = 0; i < n; i++)
		reused &= got[i] == (unsigned char)(i * 7 + 1);
	ok(reused, "  ... the bytes as they were at the call came back");
	st->copy_in(device, queue, rb, 0, b, n);
	st->copy_out(device, queue, ra, 0, got, n);
	st->copy_out(device, queue, rb, 0, got, n);
	status_is(sv->sync(device, queue), WAFER_OK,
		  "two downloads into one buffer");
	ok(memcmp(got, b, n) == 0, "  ... the later one wins");
	st->free(device, ra);
	st->free(device, rb);
	free(a);
	free(b);
	free(got);
}

static void test_storage(void *device, void *queue)
{
	static const size_t sizes[] = {1, 3, 64, 100, 4096, 1 << 20};
	unsigned char in[256], out[256];
	wafer_resource r[6] = {0}, a = 1, b;
	int aligned = 1, round_trip = 1;

	for (size_t i = 0; i < 6; i++) {
		size_t n = sizes[i] < sizeof in ? sizes[i] : sizeof in;

		if (st->alloc(device, sizes[i], &r[i]) != WAFER_OK || !r[i]) {
			aligned = 0;
			continue;
		}
		for (size_t j = 0; j < n; j++)
			in[j] = (unsigned char)(j * 7 + i);
		memset(out, 0, sizeof out);
		st->copy_in(device, queue, r[i], sizes[i] - n, in, n);
		st->copy_out(device, queue, r[i], sizes[i] - n, out, n);
		sv->sync(device, queue);
		round_trip &= memcmp(in, out, n) == 0;
	}
	ok(aligned, "alloc of 1 B .. 1 MiB: each a nonzero resource");
	ok(round_trip, "copy_in then copy_out at an offset round-trips");
	for (size_t i = 0; i < 6; i++)
		if (r[i])
			st->free(device, r[i]);

	test_copy_order(device, queue);
	a = alloc_or_die(device, 256);
	b = alloc_or_die(device, 256);
	for (size_t j = 0; j < 256; j++)
		in[j] = (unsigned char)j;
	st->copy_in(device, queue, a, 0, in, 256);
	status_is(st->copy(device, queue, b, 64, a, 0, 100), WAFER_OK,
		  "copy between resources");
	st->copy_out(device, queue, b, 64, out, 100);
	sv->sync(device, queue);
	ok(memcmp(out, in, 100) == 0, "  ... with offsets lands right");
	status_is(st->copy(device, queue, a, 10, a, 0, 200), WAFER_OK,
		  "copy between overlapping slices of one resource, upwards");
	st->copy_out(device, queue, a, 10, out, 200);
	sv->sync(device, queue);
	ok(memcmp(out, in, 200) == 0, "  ... behaves like memmove");
	st->copy_in(device, queue, a, 0, in, 256);
	status_is(st->copy(device, queue, a, 0, a, 50, 200), WAFER_OK,
		  "  ... and downwards");
	st->copy_out(device, queue, a, 0, out, 200);
	sv->sync(device, queue);
	ok(memcmp(out, in + 50, 200) == 0, "  ... behaves like memmove");
	status_is(sv->sync(device, queue), WAFER_OK, "sync after copies");
	st->free(device, a);
	st->free(device, b);

	a = 1;
	if (promised("strict", "arguments the core never passes")) {
		status_is(st->alloc(device, 0, &a),
			  WAFER_ERROR_INVALID_ARGUMENT, "alloc(0) is rejected");
		ok(a == 0, "  ... and sets the resource to 0");
	}
	a = 1;
	last_error[0] = '\0';
	status_is(st->alloc(device, (size_t)1 << 62, &a),
		  WAFER_ERROR_OUT_OF_MEMORY, "alloc(4 EiB) is out of memory");
	ok(a == 0 && strstr(last_error, "4611686018427387904"),
	   "  ... with resource 0 and a detail naming the size: %s",
	   last_error);
}

static void test_async(void *device, void *queue)
{
	float in[1024], out[1024];
	wafer_resource r = 0;

	if (!group(0, "async", st->alloc_async != NULL, "alloc_async/free_async"))
		return;
	for (int i = 0; i < 1024; i++)
		in[i] = (float)i - 7.5f;
	status_is(st->alloc_async(device, queue, sizeof in, &r), WAFER_OK,
		  "alloc_async on the queue");
	ok(r != 0, "  ... a nonzero resource");
	st->copy_in(device, queue, r, 0, in, sizeof in);
	status_is(fill(device, queue, r, 512, 2.0), WAFER_OK,
		  "  ... a launch uses it in queue order");
	st->copy_out(device, queue, r, 0, out, sizeof out);
	status_is(st->free_async(device, queue, r), WAFER_OK,
		  "free_async after the work that uses it");
	status_is(sv->sync(device, queue), WAFER_OK, "  ... sync");
	ok(all_equal(out, 512, 2.0f) &&
		   memcmp(out + 512, in + 512, 512 * sizeof(float)) == 0,
	   "  ... the copies and the launch ran in order");
	r = 1;
	if (promised("strict", "arguments the core never passes"))
		status_is(st->alloc_async(device, queue, 0, &r),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "alloc_async of 0 bytes");
}

/* storage.figure: a figure the plugin keeps, or NOT_SUPPORTED. */
static void test_figure(void *device)
{
	uint64_t value = 7;
	wafer_status s;

	if (!group(2, "figure", st->figure != NULL, "figure"))
		return;
	s = st->figure(device, WAFER_STORAGE_FIGURE_WHOLE_UNMAPS, &value);
	ok((s == WAFER_OK && value <= 1) || s == WAFER_ERROR_NOT_SUPPORTED,
	   "WHOLE_UNMAPS: 0 or 1, or not kept (%d, %llu)", (int)s,
	   (unsigned long long)value);
	s = st->figure(device, WAFER_STORAGE_FIGURE_ASYNC_RESERVED_HIGH,
		       &value);
	ok(s == WAFER_OK || s == WAFER_ERROR_NOT_SUPPORTED,
	   "ASYNC_RESERVED_HIGH: kept or not (%d)", (int)s);
	status_is(st->figure(device, 0x7fff, &value),
		  WAFER_ERROR_NOT_SUPPORTED, "a figure no minor defines");
}

static void test_vm(void *device, void *queue)
{
	uint64_t whole = 0;
	size_t page = granularity;
	float *data, *back;
	size_t n;
	wafer_resource range = 0, other = 1;
	struct wafer_binding bind;

	if (!group(0, "vm", st->vm_reserve != NULL, "vm_reserve/map/unmap/release"))
		return;
	if (st->figure)
		st->figure(device, WAFER_STORAGE_FIGURE_WHOLE_UNMAPS, &whole);
	n = 2 * page / sizeof(float);
	data = calloc(n, sizeof(float));
	back = calloc(n, sizeof(float));
	if (!data || !back)
		bail_out("out of memory");
	for (size_t i = 0; i < n; i++)
		data[i] = (float)(i % 1000) - 500.0f;

	status_is(st->vm_reserve(device, 3 * page + 1, &other),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "vm_reserve of a size that is not a multiple of vm_granularity");
	status_is(st->vm_reserve(device, 4 * page, &range), WAFER_OK,
		  "vm_reserve 4 pages");
	ok(range != 0, "  ... a nonzero range");
	status_is(st->vm_map(device, range, page, 2 * page), WAFER_OK,
		  "vm_map pages 1-2");
	status_is(st->vm_map(device, range, page / 2, page),
		  WAFER_ERROR_INVALID_ARGUMENT, "vm_map at an unaligned offset");
	status_is(st->vm_map(device, range, 3 * page, 2 * page),
		  WAFER_ERROR_INVALID_ARGUMENT, "vm_map past the range's end");
	status_is(st->vm_map(device, range + page, 0, page),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "vm_map on an address that is not a range");

	st->copy_in(device, queue, range, page, data, 2 * page);
	st->copy_out(device, queue, range, page, back, 2 * page);
	sv->sync(device, queue);
	ok(memcmp(data, back, 2 * page) == 0,
	   "mapped pages hold what was written");
	bind = binding(range, page, 2 * page);
	status_is(launch(device, queue,
			 find_kernel(device, WAFER_KERNEL_FILL, WAFER_DTYPE_F32),
			 &bind, 1,
			 &(struct wafer_fill_params){.count = n, .value = 7.0},
			 sizeof(struct wafer_fill_params), n),
		  WAFER_OK, "a kernel binds a slice of a range");
	st->copy_out(device, queue, range, page, back, 2 * page);
	sv->sync(device, queue);
	ok(all_equal(back, n, 7.0f), "  ... and writes it");

	if (whole == 1) {
		skip(2, "vm_unmap takes whole vm_map calls only "
			"(WAFER_STORAGE_FIGURE_WHOLE_UNMAPS)");
	} else {
		status_is(st->vm_unmap(device, range, 2 * page, page), WAFER_OK,
			  "vm_unmap page 2, part of what one vm_map mapped");
		st->copy_out(device, queue, range, page, back, page);
		sv->sync(device, queue);
		ok(all_equal(back, n / 2, 7.0f),
		   "  ... page 1 keeps its bytes");
		st->vm_map(device, range, 2 * page, page);
	}
	status_is(st->vm_unmap(device, range, page, 2 * page), WAFER_OK,
		  "vm_unmap pages 1-2");
	status_is(st->vm_unmap(device, range, 0, 5 * page),
		  WAFER_ERROR_INVALID_ARGUMENT, "vm_unmap past the end");
	status_is(st->vm_map(device, range, page, 2 * page), WAFER_OK,
		  "vm_map them again");
	st->vm_release(device, range);

	status_is(st->vm_reserve(device, (size_t)1 << 62, &other),
		  WAFER_ERROR_OUT_OF_MEMORY,
		  "vm_reserve of 4 EiB of address space fails");
	ok(other == 0, "  ... with range 0: %s", last_error);
	free(data);
	free(back);
}

/* vm_map_pieces: one call maps what vm_map calls of one piece each would,
 * and each piece goes back on its own, whatever vm_unmap otherwise
 * takes. */
static void test_vm_pieces(void *device, void *queue)
{
	size_t page = granularity;
	size_t n = 3 * page / sizeof(float);
	float *data = calloc(n, sizeof(float)), *back = calloc(n, sizeof(float));
	wafer_resource range = 0;

	if (!group(7, "vm_map_pieces", st->vm_map_pieces != NULL,
		   "vm_map_pieces") ||
	    !st->vm_reserve) {
		free(data);
		free(back);
		return;
	}
	if (!data || !back)
		bail_out("out of memory");
	for (size_t i = 0; i < n; i++)
		data[i] = (float)(i % 997);
	if (st->vm_reserve(device, 4 * page, &range) != WAFER_OK)
		bail_out("vm_reserve: %s", last_error);
	status_is(st->vm_map_pieces(device, range, 0, 3 * page, page / 2),
		  WAFER_ERROR_INVALID_ARGUMENT,
		  "vm_map_pieces with a piece that is not a multiple of "
		  "vm_granularity");
	status_is(st->vm_map_pieces(device, range, 0, 3 * page, page),
		  WAFER_OK, "vm_map_pieces of pages 0-2, a page a piece");
	st->copy_in(device, queue, range, 0, data, 3 * page);
	st->copy_out(device, queue, range, 0, back, 3 * page);
	sv->sync(device, queue);
	ok(memcmp(data, back, 3 * page) == 0,
	   "  ... they hold what was written");
	status_is(st->vm_unmap(device, range, page, page), WAFER_OK,
		  "  ... vm_unmap of the middle piece alone");
	memset(back, 0, 3 * page);
	st->copy_out(device, queue, range, 0, back, page);
	st->copy_out(device, queue, range, 2 * page,
		     (char *)back + 2 * page, page);
	sv->sync(device, queue);
	ok(memcmp(data, back, page) == 0 &&
		   memcmp((char *)data + 2 * page, (char *)back + 2 * page,
			  page) == 0,
	   "  ... the pieces on either side keep their bytes");
	status_is(st->vm_unmap(device, range, 0, page), WAFER_OK,
		  "  ... vm_unmap of the first piece");
	status_is(st->vm_unmap(device, range, 2 * page, page), WAFER_OK,
		  "  ... and of the last");
	status_is(st->vm_map_pieces(device, range, page, 3 * page, 2 * page),
		  WAFER_OK,
		  "vm_map_pieces of pages 1-3 in pieces of two (the last one "
		  "shorter)");
	status_is(st->vm_unmap(device, range, 3 * page, page), WAFER_OK,
		  "  ... vm_unmap of the short last piece");
	status_is(st->vm_unmap(device, range, page, 2 * page), WAFER_OK,
		  "  ... and of the first");
	status_is(st->vm_map(device, range, 0, 4 * page), WAFER_OK,
		  "  ... nothing left mapped: vm_map of the whole range");
	st->vm_release(device, range);
	free(data);
	free(back);
}

/*===----------------------------------------------------------------------===
 * Launches
 *===----------------------------------------------------------------------===*/

static void test_launches(void *device, void *queue)
{
	enum { N = 4099 };
	const struct wafer_kernel *add =
		find_kernel(device, WAFER_KERNEL_ADD, WAFER_DTYPE_F32);
	const struct wafer_kernel *noop =
		find_kernel(device, WAFER_KERNEL_NOOP, WAFER_DTYPE_F32);
	size_t off = alignment, bytes = N * sizeof(float) + off;
	float a[N], b[N], c[N];
	wafer_resource r[3];
	int exact = 1;

	if (!group(0, "launch", find_kernel(device, WAFER_KERNEL_FILL,
					 WAFER_DTYPE_F32) && add,
		   "fill or add (f32)"))
		return;
	for (int i = 0; i < 3; i++)
		r[i] = alloc_or_die(device, bytes);
	for (int i = 0; i < N; i++) {
		a[i] = (float)(i % 301) / 8.0f - 17.0f;
		b[i] = (float)(i % 17) * 0.75f;
	}
	st->copy_in(device, queue, r[1], off, a, sizeof a);
	st->copy_in(device, queue, r[2], off, b, sizeof b);
	struct wafer_binding bb[3] = {binding(r[0], off, sizeof c),
				      binding(r[1], off, sizeof a),
				      binding(r[2], off, sizeof b)};
	struct wafer_elementwise_params ep = {.count = N};
	status_is(launch(device, queue, add, bb, 3, &ep, sizeof ep, N),
		  WAFER_OK, "add of %d f32 at a binding offset of %zu", N, off);
	st->copy_out(device, queue, r[0], off, c, sizeof c);
	status_is(sv->sync(device, queue), WAFER_OK, "  ... sync");
	for (int i = 0; i < N; i++)
		exact &= c[i] == a[i] + b[i];
	ok(exact, "  ... every element is a + b, exactly");

	struct wafer_kernel copied = *add;
	status_is(launch(device, queue, &copied, bb, 3, &ep, sizeof ep, N),
		  WAFER_OK, "a copy of a table entry is recognised");
	ep.count = 0;
	st->copy_in(device, queue, r[0], off, b, sizeof b);
	status_is(launch(device, queue, add, bb, 3, &ep, sizeof ep, 0),
		  WAFER_OK, "a count of 0 is not malformed");
	st->copy_out(device, queue, r[0], off, c, sizeof c);
	sv->sync(device, queue);
	ok(memcmp(c, b, sizeof b) == 0, "  ... and writes nothing");

	status_is(fill(device, queue, r[0], N, -3.25), WAFER_OK, "fill");
	st->copy_out(device, queue, r[0], 0, c, sizeof c);
	sv->sync(device, queue);
	ok(all_equal(c, N, -3.25f), "  ... sets every element");
	if (noop)
		status_is(launch(device, queue, noop, NULL, 0, NULL, 0, 1),
			  WAFER_OK, "noop");
	else
		skip(1, "no noop kernel");
	status_is(sv->sync(device, queue), WAFER_OK, "sync after the launches");
	for (int i = 0; i < 3; i++)
		st->free(device, r[i]);
}

/* Elementwise bindings may alias exactly (plugin.h): each case runs on
 * x = a (and y = b), its bindings drawn from x and y. */
static void test_aliasing(void *device, void *queue)
{
	static const struct {
		const char *op, *what;
		uint32_t nb;
		char bind[4]; /* 'x' or 'y' per binding */
	} cases[] = {
		{WAFER_KERNEL_COPY, "copy with out == in leaves the data", 2,
		 "xx"},
		{WAFER_KERNEL_RELU, "relu in place (out == in)", 2, "xx"},
		{WAFER_KERNEL_ADD, "add with out == a", 3, "xxy"},
		{WAFER_KERNEL_ADD, "add with out == b", 3, "xyx"},
		{WAFER_KERNEL_MUL, "mul with out == a == b (a square)", 3,
		 "xxx"},
	};
	const size_t n = 100003, bytes = n * sizeof(float);
	float *a = malloc(bytes), *b = malloc(bytes), *got = malloc(bytes);
	wafer_resource rx, ry;

	if (!a || !b || !got)
		bail_out("out of memory");
	rx = alloc_or_die(device, bytes);
	ry = alloc_or_die(device, bytes);
	host_values(a, n, 5);
	host_values(b, n, 6);
	st->copy_in(device, queue, ry, 0, b, bytes);
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		const struct wafer_kernel *k =
			find_kernel(device, cases[c].op, WAFER_DTYPE_F32);
		struct wafer_binding bb[3];
		struct wafer_elementwise_params p = {.count = n};
		int right = 1;

		if (!k) {
			skip(1, "no %s kernel", cases[c].op);
			continue;
		}
		for (uint32_t i = 0; i < cases[c].nb; i++)
			bb[i] = binding(cases[c].bind[i] == 'x' ? rx : ry, 0,
					bytes);
		st->copy_in(device, queue, rx, 0, a, bytes);
		launch(device, queue, k, bb, cases[c].nb, &p, sizeof p, n);
		st->copy_out(device, queue, rx, 0, got, bytes);
		sv->sync(device, queue);
		for (size_t i = 0; right && i < n; i++) {
			float y = cases[c].bind[1] == 'y' ||
						  cases[c].bind[2] == 'y'
					  ? b[i]
					  : a[i];
			float want = c == 0   ? a[i]
				     : c == 1 ? (a[i] > 0.0f ? a[i] : 0.0f)
				     : c == 4 ? a[i] * a[i]
					      : a[i] + y;
			right = memcmp(&got[i], &want, sizeof want) == 0;
		}
		ok(right, "%s", cases[c].what);
	}
	status_is(sv->sync(device, queue), WAFER_OK,
		  "sync after the aliased launches");
	st->free(device, rx);
	st->free(device, ry);
	free(a);
	free(b);
	free(got);
}

static void test_bad_launches(void *device, void *queue)
{
	const struct wafer_kernel *fillk =
		find_kernel(device, WAFER_KERNEL_FILL, WAFER_DTYPE_F32);
	const struct wafer_kernel *add =
		find_kernel(device, WAFER_KERNEL_ADD, WAFER_DTYPE_F32);
	const struct wafer_kernel *rows =
		find_kernel(device, WAFER_KERNEL_REDUCE_SUM, WAFER_DTYPE_F32);
	struct wafer_fill_params fp = {.count = 17, .value = 1.0};
	float back[32] = {0};
	wafer_resource r;
	struct wafer_binding b;

	if (!group(0, "launch_errors", fillk && add, "fill or add (f32)"))
		return;
	r = alloc_or_die(device, 1024);
	b = binding(r, 0, 64);
	st->copy_in(device, queue, r, 0, back, sizeof back);
	last_error[0] = '\0';
	status_is(launch(device, queue, fillk, &b, 1, &fp, sizeof fp, 17),
		  WAFER_ERROR_OUT_OF_RANGE, "fill: a count larger than the binding");
	ok(strstr(last_error, "64") && strstr(last_error, "17"),
	   "  ... detail with the sizes: %s", last_error);
	st->copy_out(device, queue, r, 0, back, sizeof back);
	sv->sync(device, queue);
	ok(all_equal(back, 32, 0.0f), "  ... and nothing was written");

	struct wafer_binding bb[3] = {b, b, b};
	struct wafer_elementwise_params ep = {.count = UINT64_MAX / 2};
	status_is(launch(device, queue, add, bb, 3, &ep, sizeof ep, 1),
		  WAFER_ERROR_OUT_OF_RANGE,
		  "add: a count whose reach overflows");
	if (rows) {
		struct wafer_rows_params rp = {.rows = 0, .cols = 4};
		status_is(launch(device, queue, rows, bb, 2, &rp, sizeof rp, 1),
			  WAFER_ERROR_INVALID_ARGUMENT,
			  "reduce_sum: zero rows is malformed");
	} else {
		skip(1, "no reduce_sum kernel");
	}
	status_is(sv->sync(device, queue), WAFER_OK,
		  "rejected launches leave no error for sync");
	st->free(device, r);
}

/*===----------------------------------------------------------------------===
 * Timers
 *===----------------------------------------------------------------------===*/

static void test_timers(void *device, void *queue)
{
	const size_t n = 1 << 20;
	void *timer = NULL, *outer = NULL;
	uint64_t ns = 1, outer_ns = 0;
	wafer_resource r;

	if (!group(0, "timers", sv->timer_begin != NULL, "timer_begin/timer_end"))
		return;
	r = alloc_or_die(device, n * sizeof(float));
	status_is(sv->timer_begin(device, queue, &timer), WAFER_OK,
		  "timer_begin");
	status_is(sv->timer_end(device, queue, timer, &ns), WAFER_OK,
		  "timer_end with nothing issued between");
	ok(ns < UINT64_C(1000000000), "  ... under a second (%llu ns)",
	   (unsigned long long)ns);

	sv->timer_begin(device, queue, &outer);
	status_is(sv->timer_begin(device, queue, &timer), WAFER_OK,
		  "a timer inside another");
	for (int i = 0; i < 10; i++)
		fill(device, queue, r, n, i);
	status_is(sv->timer_end(device, queue, timer, &ns), WAFER_OK,
		  "timer_end around ten fills of 1M floats");
	ok(ns > 0 && ns < UINT64_C(10000000000),
	   "  ... some device time, under 10 s (%llu ns)",
	   (unsigned long long)ns);
	fill(device, queue, r, n, 1);
	status_is(sv->timer_end(device, queue, outer, &outer_ns), WAFER_OK,
		  "the enclosing timer");
	ok(outer_ns > ns, "  ... spans one more fill (%llu ns)",
	   (unsigned long long)outer_ns);
	status_is(sv->sync(device, queue), WAFER_OK, "sync after timers");
	st->free(device, r);
}

/*===----------------------------------------------------------------------===
 * Queues on several threads
 *===----------------------------------------------------------------------===*/

#define CLIENTS 4
#define ROUNDS 25

struct client {
	void *device;
	pthread_barrier_t *start;
	int index;
	int failures;
	char error[256];
};

/* One client thread: its own queue and buffers, adds checked one by one,
 * big and small in turn, beside the other clients'. */
static void *client_main(void *arg)
{
	static const size_t sizes[2] = {100003, 1000};
	struct client *c = arg;
	const struct wafer_kernel *add =
		find_kernel(c->device, WAFER_KERNEL_ADD, WAFER_DTYPE_F32);
	float *a = malloc(sizes[0] * 4), *b = malloc(sizes[0] * 4),
	      *got = malloc(sizes[0] * 4);
	void *queue = NULL;

	if (!a || !b || !got ||
	    sv->queue_create(c->device, &queue) != WAFER_OK) {
		c->failures++;
		snprintf(c->error, sizeof c->error, "queue_create: %.200s",
			 last_error);
	}
	pthread_barrier_wait(c->start);
	for (int round = 0; queue && round < ROUNDS; round++) {
		size_t n = sizes[round % 2], bytes = n * sizeof(float);
		wafer_resource ra, ro;
		wafer_status s;

		if (st->alloc(c->device, bytes, &ra) != WAFER_OK) {
			c->failures++;
			break;
		}
		if (st->alloc(c->device, bytes, &ro) != WAFER_OK) {
			st->free(c->device, ra);
			c->failures++;
			break;
		}
		for (size_t i = 0; i < n; i++) {
			a[i] = (float)((i + (size_t)round) % 113) - 50.0f;
			b[i] = (float)c->index * 0.5f + (float)(i % 7);
		}
		st->copy_in(c->device, queue, ra, 0, a, bytes);
		st->copy_in(c->device, queue, ro, 0, b, bytes);
		struct wafer_binding x = binding(ra, 0, bytes),
				     o = binding(ro, 0, bytes);
		struct wafer_elementwise_params p = {.count = n};
		s = launch(c->device, queue, add,
			   (struct wafer_binding[]){o, x, o}, 3, &p, sizeof p,
			   n);
		st->copy_out(c->device, queue, ro, 0, got, bytes);
		if (s == WAFER_OK)
			s = sv->sync(c->device, queue);
		for (size_t i = 0; s == WAFER_OK && i < n; i++)
			if (got[i] != a[i] + b[i]) {
				c->failures++;
				snprintf(c->error, sizeof c->error,
					 "round %d [%zu]: %g != %g", round, i,
					 got[i], a[i] + b[i]);
				break;
			}
		if (s != WAFER_OK) {
			c->failures++;
			snprintf(c->error, sizeof c->error, "%.200s",
				 last_error);
		}
		st->free(c->device, ra);
		st->free(c->device, ro);
	}
	if (queue)
		sv->queue_destroy(c->device, queue);
	free(a);
	free(b);
	free(got);
	return NULL;
}

static void test_threads(void *device)
{
	pthread_t threads[CLIENTS];
	struct client clients[CLIENTS];
	pthread_barrier_t start;

	if (!group(0, "threads",
		   find_kernel(device, WAFER_KERNEL_ADD, WAFER_DTYPE_F32) != NULL,
		   "add (f32)"))
		return;
	pthread_barrier_init(&start, NULL, CLIENTS);
	for (int i = 0; i < CLIENTS; i++) {
		clients[i] = (struct client){
			.device = device, .start = &start, .index = i};
		pthread_create(&threads[i], NULL, client_main, &clients[i]);
	}
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(threads[i], NULL);
		if (!is_int(clients[i].failures, 0,
			    "client thread %d: %d adds on its own queue, all "
			    "correct",
			    i, ROUNDS))
			diag("%s", clients[i].error);
	}
	pthread_barrier_destroy(&start);
}

/*===----------------------------------------------------------------------===
 * Programs
 *===----------------------------------------------------------------------===*/

/* The suite's program kernels (t/user_kernels/) in every format it has:
 * under T_SRCDIR, or under T_BUILDDIR where the build makes them. */
static const struct {
	wafer_program_format format;
	const char *file;
	int built;
	int text;
} sources[] = {
	{WAFER_PROGRAM_HOST_C, "user_kernels/kernels.c", 0, 1},
	{WAFER_PROGRAM_HOST_SO, "user_kernels/.libs/kernels.so", 1, 0},
	{WAFER_PROGRAM_OPENCL_C, "user_kernels/kernels.cl", 0, 1},
	{WAFER_PROGRAM_SPIRV, "user_kernels/kernels.spv", 1, 0},
	{WAFER_PROGRAM_CUDA_C, "user_kernels/kernels.cu", 0, 1},
	{WAFER_PROGRAM_PTX, "user_kernels/kernels.ptx", 0, 1},
};

static char *read_file(const char *path, size_t *size)
{
	char *data = NULL;
	long n;
	FILE *f;

	f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)n)) &&
	    fread(data, 1, (size_t)n, f) == (size_t)n)
		*size = (size_t)n;
	else {
		free(data);
		data = NULL;
	}
	fclose(f);
	return data;
}

static char *read_source(int i, size_t *size)
{
	const char *dir = getenv(sources[i].built ? "T_BUILDDIR" : "T_SRCDIR");
	char path[4096];

	snprintf(path, sizeof path, "%s/%s", dir ? dir : "t", sources[i].file);
	return read_file(path, size);
}

struct saxpy_params {
	uint64_t n;
	float a;
	uint32_t reserved;
};

static void run_saxpy(void *device, void *queue,
		      const struct wafer_kernel *k)
{
	enum { N = 1000 };
	float x[N], y[N], got[N];
	wafer_resource ry = alloc_or_die(device, sizeof y),
		       rx = alloc_or_die(device, sizeof x);
	struct wafer_binding b[2] = {binding(ry, 0, sizeof y),
				     binding(rx, 0, sizeof x)};
	struct saxpy_params p = {.n = N, .a = 2.0f};
	int exact = 1;

	for (int i = 0; i < N; i++) {
		x[i] = (float)i;
		y[i] = (float)(i % 5);
	}
	st->copy_in(device, queue, ry, 0, y, sizeof y);
	st->copy_in(device, queue, rx, 0, x, sizeof x);
	status_is(launch(device, queue, k, b, 2, &p, sizeof p, N), WAFER_OK,
		  "  ... launches like a table entry");
	st->copy_out(device, queue, ry, 0, got, sizeof got);
	status_is(sv->sync(device, queue), WAFER_OK, "  ... sync");
	for (int i = 0; i < N; i++)
		exact &= got[i] == 2.0f * x[i] + y[i];
	ok(exact, "  ... y = 2x + y for all %d elements", N);
	st->free(device, ry);
	st->free(device, rx);
}

static void test_programs(void *device, void *queue)
{
	const wafer_program_format *formats = NULL;
	const struct wafer_kernel *k = (void *)1;
	size_t count = 0, size = 0;
	char *data = NULL;
	void *program = NULL;
	int known = 1, text = 1;
	const char *file = NULL;
	wafer_program_format format = WAFER_PROGRAM_NONE;

	if (!group(2, "programs", sv->program_formats != NULL,
		   "program_formats/load/kernel/release"))
		return;
	status_is(sv->program_formats(device, &formats, &count), WAFER_OK,
		  "program_formats");
	for (size_t i = 0; i < count; i++)
		known &= formats[i] != WAFER_PROGRAM_NONE;
	ok(formats && count > 0 && known, "  ... %zu formats, none NONE",
	   count);
	/* The first format the plugin lists that the suite has a source in
	 * (the description's source lines first: a vendor's own format):
	 * chosen by what the plugin says it takes, never by its name. */
	for (size_t i = 0; i < count && !data; i++) {
		if ((file = abi_source(&desc, formats[i])) &&
		    !(data = read_file(file, &size)))
			diag("%s: cannot read %s", desc.path, file);
		for (int s = 0;
		     !data && s < (int)(sizeof sources / sizeof sources[0]);
		     s++)
			if (sources[s].format == formats[i] &&
			    (data = read_source(s, &size))) {
				file = sources[s].file;
				text = sources[s].text;
			}
		if (data)
			format = formats[i];
	}
	if (!data) {
		skip(1, "programs: the suite has no source in a format %s "
			"lists (a vendor's own: a source line in %s)",
		     plugin->name, desc.path);
		return;
	}
	struct wafer_program_source src = {
		.struct_size = sizeof src,
		.format = format,
		.data = data,
		.size = size,
		.name = file,
	};
	status_is(sv->program_load(device, &src, NULL, &program), WAFER_OK,
		  "program_load of %s", file);
	if (!program) {
		free(data);
		return;
	}
	status_is(sv->program_kernel(device, program, "wafer_test_saxpy", 2,
				     sizeof(struct saxpy_params), &k),
		  WAFER_OK, "program_kernel wafer_test_saxpy");
	ok(k && strcmp(k->op, "wafer_test_saxpy") == 0 &&
		   strcmp(k->variant, "default") == 0 &&
		   k->dtype == WAFER_DTYPE_NONE && k->binding_count == 2 &&
		   k->params_size == sizeof(struct saxpy_params),
	   "  ... an entry named as asked, default, dtype none, the declared "
	   "bindings and block");
	if (k)
		run_saxpy(device, queue, k);
	last_error[0] = '\0';
	status_is(sv->program_kernel(device, program, "no_such_kernel", 1, 0,
				     &k),
		  WAFER_ERROR_NOT_FOUND, "program_kernel of an unknown name");
	ok(strstr(last_error, "no_such_kernel") != NULL,
	   "  ... names the kernel: %s", last_error);
	sv->program_release(device, program);

	/* A vendor's format is held to it too: garbage is a build error. */
	if (text) {
		static const char broken[] = "this is not a program {\n";
		void *bad = (void *)1;
		src.data = broken;
		src.size = sizeof broken - 1;
		last_error[0] = '\0';
		status_is(sv->program_load(device, &src, NULL, &bad),
			  WAFER_ERROR_BUILD, "program_load of a broken source");
		ok(last_error[0] != '\0', "  ... with the build log: %.200s",
		   last_error);
	} else {
		skip(2, "programs: %s is a binary format", file);
	}
	free(data);
}

/*===----------------------------------------------------------------------===
 * Vendor names
 *===----------------------------------------------------------------------===*/

static const struct wafer_vendor_name *vendor_name_at(size_t i)
{
	const struct wafer_vendor_name *names = plugin->vendor_names;
	return (const void *)((const char *)names + i * names->struct_size);
}

/* The name the plugin gives vendor value |value| of kind |what|, or
 * NULL. */
static const char *vendor_name_of(uint32_t what, uint32_t value)
{
	for (size_t i = 0; plugin->vendor_names &&
			   i < plugin->vendor_name_count;
	     i++)
		if (vendor_name_at(i)->what == what &&
		    vendor_name_at(i)->value == value)
			return vendor_name_at(i)->name;
	return NULL;
}

static int name_chars(const char *name)
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

/* ABI 1.7: every name in its vendor range, well formed, each value
 * named once; and every vendor format program_formats lists named. */
static void test_vendor_names(void *device)
{
	const wafer_program_format *formats = NULL;
	size_t count = 0, bad = 0, twice = 0, unnamed = 0;

	if (!group(7, "vendor_names", plugin->vendor_names != NULL,
		   "vendor_names/vendor_name_count"))
		return;
	ok(plugin->vendor_name_count > 0 &&
		   plugin->vendor_names->struct_size >=
			   offsetof(struct wafer_vendor_name, name) +
				   sizeof(const char *),
	   "vendor_names: %zu entries, struct_size %zu",
	   plugin->vendor_name_count, plugin->vendor_names->struct_size);
	for (size_t i = 0; i < plugin->vendor_name_count; i++) {
		const struct wafer_vendor_name *n = vendor_name_at(i);
		int in_range =
			n->what == WAFER_VENDOR_PROGRAM_FORMAT
				? n->value >= WAFER_PROGRAM_VENDOR &&
					  n->value <= WAFER_PROGRAM_VENDOR_LAST
			: n->what == WAFER_VENDOR_NATIVE_KIND
				? n->value >= WAFER_NATIVE_VENDOR &&
					  n->value <= WAFER_NATIVE_VENDOR_LAST
				: 0;
		if (!in_range || !name_chars(n->name)) {
			diag("vendor_names[%zu]: what %u value %#x name '%s'",
			     i, n->what, n->value, n->name ? n->name : "(null)");
			bad++;
		}
		for (size_t j = 0; j < i; j++)
			twice += vendor_name_at(j)->what == n->what &&
				 vendor_name_at(j)->value == n->value;
	}
	is_int((long)bad, 0,
	       "  ... each a vendor format or kind in its range, named 1 to "
	       "%d of [a-z0-9_.-]",
	       WAFER_VENDOR_NAME_MAX - 1);
	is_int((long)twice, 0, "  ... no value named twice");
	if (!sv->program_formats ||
	    sv->program_formats(device, &formats, &count) != WAFER_OK) {
		skip(1, "vendor_names: %s has no program formats",
		     plugin->name);
		return;
	}
	for (size_t i = 0; i < count; i++)
		if (formats[i] >= WAFER_PROGRAM_VENDOR &&
		    formats[i] <= WAFER_PROGRAM_VENDOR_LAST &&
		    !vendor_name_of(WAFER_VENDOR_PROGRAM_FORMAT, formats[i])) {
			diag("format %#x has no name", (unsigned)formats[i]);
			unnamed++;
		}
	is_int((long)unnamed, 0,
	       "  ... every vendor format program_formats lists is named");
}

/*===----------------------------------------------------------------------===
 * Interop
 *===----------------------------------------------------------------------===*/

static void test_interop(void *device, void *queue)
{
	unsigned char in[512], out[512];
	struct wafer_native_buffer nb;
	struct wafer_native_queue nq;
	wafer_resource r, imported = 0;
	void *wrapped = NULL;

	if (!group(3, "interop", st->native != NULL,
		   "native/import/forget/queue_native/queue_wrap"))
		return;
	r = alloc_or_die(device, 1024);
	memset(&nb, 0, sizeof nb);
	nb.struct_size = sizeof nb;
	status_is(st->native(device, r, alignment, &nb), WAFER_OK,
		  "native of a resource at an offset");
	ok(nb.kind != WAFER_NATIVE_NONE, "  ... fills the kind (%d)",
	   (int)nb.kind);
	nb.backend = plugin->name;
	nb.size = 512;
	status_is(st->import(device, &nb, &imported), WAFER_OK,
		  "import of what native returned");
	ok(imported != 0, "  ... a nonzero resource");
	for (int i = 0; i < 512; i++)
		in[i] = (unsigned char)(i * 13);
	/* Object kinds keep the offset in the handle, pointer kinds in the
	 * address (plugin.h, import). */
	st->copy_in(device, queue, imported,
		    nb.object ? nb.offset : 0, in, sizeof in);
	st->copy_out(device, queue, r, alignment, out, sizeof out);
	status_is(sv->sync(device, queue), WAFER_OK, "  ... sync");
	ok(memcmp(in, out, sizeof in) == 0,
	   "  ... bytes written through the import are the resource's");
	st->forget(device, imported);

	memset(&nq, 0, sizeof nq);
	nq.struct_size = sizeof nq;
	status_is(sv->queue_native(device, queue, &nq), WAFER_OK,
		  "queue_native");
	ok(nq.kind == nb.kind, "  ... of the kind of the device's buffers");
	if (abi_unsupported(&desc, "queue_wrap")) {
		skip(3, "queue_wrap: %s", abi_unsupported(&desc, "queue_wrap"));
	} else if (!nq.queue) {
		skip(3, "interop: %s's queues have no native queue to wrap",
		     plugin->name);
	} else if (status_is(sv->queue_wrap(device, nq.queue, &wrapped),
			     WAFER_OK, "queue_wrap of the native queue")) {
		st->copy_in(device, wrapped, r, 0, in, sizeof in);
		st->copy_out(device, wrapped, r, 0, out, sizeof out);
		status_is(sv->sync(device, wrapped), WAFER_OK,
			  "  ... copies run on it");
		ok(memcmp(in, out, sizeof in) == 0, "  ... in order");
		sv->queue_destroy(device, wrapped);
	}
	status_is(sv->sync(device, queue), WAFER_OK,
		  "destroying the wrapper leaves the native queue working");
	st->free(device, r);
}

/*===----------------------------------------------------------------------===
 * Native graphs (since ABI 1.6)
 *===----------------------------------------------------------------------===*/

static void test_graphs(void *device, void *queue)
{
	const size_t n = 1 << 16;
	void *rec = NULL, *g = NULL;
	float *got = malloc(n * sizeof(float));
	wafer_resource r;

	if (!group(6, "graphs", sv->graph_begin != NULL,
		   "graph_begin .. graph_destroy") || !got) {
		free(got);
		return;
	}
	r = alloc_or_die(device, n * sizeof(float));
	if (sv->queue_create(device, &rec) != WAFER_OK)
		bail_out("queue_create: %s", last_error);
	fill(device, queue, r, n, 1.0);
	sv->sync(device, queue);
	wafer_status began = sv->graph_begin(device, rec);
	if (began == WAFER_ERROR_NOT_SUPPORTED) {
		/* plugin.h: a device may lack what the group needs; the
		 * core then replays graphs itself. */
		skip(1, "graphs: this device cannot record: %s", last_error);
		sv->queue_destroy(device, rec);
		st->free(device, r);
		free(got);
		return;
	}
	status_is(began, WAFER_OK, "graph_begin");
	status_is(fill(device, rec, r, n, 4.0), WAFER_OK,
		  "  ... a launch while recording");
	status_is(fill(device, rec, r, n, 5.0), WAFER_OK,
		  "  ... and a second one");
	status_is(sv->graph_end(device, rec, &g), WAFER_OK, "graph_end");
	ok(g != NULL, "  ... gives a graph");
	st->copy_out(device, queue, r, 0, got, n * sizeof(float));
	sv->sync(device, queue);
	ok(all_equal(got, n, 1.0f), "  ... the recorded launches did not run");
	status_is(sv->graph_launch(device, queue, g), WAFER_OK,
		  "graph_launch");
	st->copy_out(device, queue, r, 0, got, n * sizeof(float));
	status_is(sv->sync(device, queue), WAFER_OK, "  ... sync");
	ok(all_equal(got, n, 5.0f), "  ... it ran both launches, in order");
	/* Again, on the recording queue, which is usable after graph_end. */
	fill(device, rec, r, n, 0.0);
	status_is(sv->graph_launch(device, rec, g), WAFER_OK,
		  "graph_launch again, on another queue");
	st->copy_out(device, rec, r, 0, got, n * sizeof(float));
	status_is(sv->sync(device, rec), WAFER_OK, "  ... sync");
	ok(all_equal(got, n, 5.0f), "  ... it ran again");
	/* Destroyed right after a launch: the launch still runs. */
	fill(device, queue, r, n, 0.0);
	sv->graph_launch(device, queue, g);
	sv->graph_destroy(device, g);
	st->copy_out(device, queue, r, 0, got, n * sizeof(float));
	status_is(sv->sync(device, queue), WAFER_OK,
		  "graph_destroy right after a launch, then sync");
	ok(all_equal(got, n, 5.0f), "  ... the launch ran");
	sv->queue_destroy(device, rec);
	st->free(device, r);
	free(got);
}

/*===----------------------------------------------------------------------===
 * Registered host memory (since ABI 1.7)
 *===----------------------------------------------------------------------===*/

/* Copies from and to a registered range give the bytes, in queue order
 * with the launches around them; a download is in place by sync;
 * unregistering after a sync, and registering the range again, work. */
static void test_host_memory(void *device, void *queue)
{
	const size_t n = 1 << 18;
	float *host = aligned_alloc(4096, n * sizeof(float));
	float *got = aligned_alloc(4096, n * sizeof(float));
	wafer_resource r;

	if (!group(7, "host_memory", st->host_register != NULL,
		   "host_register .. copy_out_registered") ||
	    !host || !got) {
		free(host);
		free(got);
		return;
	}
	r = alloc_or_die(device, n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		host[i] = 3.0f;
	status_is(st->host_register(device, host, n * sizeof(float)), WAFER_OK,
		  "host_register");
	status_is(st->host_register(device, got, n * sizeof(float)), WAFER_OK,
		  "  ... a second range");
	fill(device, queue, r, n, 1.0);
	status_is(st->copy_in_registered(device, queue, r, 0, host,
					 n * sizeof(float)),
		  WAFER_OK, "copy_in_registered after a launch");
	memset(got, 0, n * sizeof(float));
	status_is(st->copy_out_registered(device, queue, r, 0, got,
					  n * sizeof(float)),
		  WAFER_OK, "copy_out_registered");
	status_is(sv->sync(device, queue), WAFER_OK, "  ... sync");
	ok(all_equal(got, n, 3.0f),
	   "  ... the bytes, after the launch before it, in place by sync");
	/* A launch after the registered upload overwrites it. */
	status_is(st->copy_in_registered(device, queue, r, 16, host + 4,
					 64 * sizeof(float)),
		  WAFER_OK, "copy_in_registered at an offset");
	fill(device, queue, r, n, 2.0);
	status_is(st->copy_out_registered(device, queue, r, 0, got,
					  n * sizeof(float)),
		  WAFER_OK, "copy_out_registered after a launch");
	status_is(sv->sync(device, queue), WAFER_OK, "  ... sync");
	ok(all_equal(got, n, 2.0f), "  ... the launch ran after the upload");
	st->host_unregister(device, host);
	st->host_unregister(device, got);
	status_is(st->host_register(device, host, n * sizeof(float)), WAFER_OK,
		  "host_register again after host_unregister");
	st->host_unregister(device, host);
	st->free(device, r);
	free(host);
	free(got);
}

/*===----------------------------------------------------------------------===
 * Events and host callbacks (since ABI 1.5)
 *===----------------------------------------------------------------------===*/

static void count_call(void *arg)
{
	__atomic_add_fetch((int *)arg, 1, __ATOMIC_SEQ_CST);
}

static void test_events(void *device, void *queue)
{
	const size_t n = 1 << 20;
	void *other = NULL, *e = NULL, *start = NULL, *end = NULL;
	float *got = malloc(n * sizeof(float));
	uint64_t ns = 0;
	wafer_status s;
	int calls = 0;
	wafer_resource r;

	if (!group(5, "events", sv->event_create != NULL,
		   "event_create .. queue_callback") || !got) {
		free(got);
		return;
	}
	r = alloc_or_die(device, n * sizeof(float));
	status_is(sv->event_create(device, 0, &e), WAFER_OK, "event_create");
	status_is(sv->event_query(device, e), WAFER_OK,
		  "  ... never recorded, it counts as complete");
	status_is(sv->event_sync(device, e), WAFER_OK,
		  "  ... and event_sync returns at once");

	/* A second queue waits on the first's fill. */
	if (sv->queue_create(device, &other) != WAFER_OK)
		bail_out("queue_create: %s", last_error);
	fill(device, queue, r, n, 3.5);
	status_is(sv->event_record(device, queue, e), WAFER_OK,
		  "event_record after a fill of 1M floats");
	status_is(sv->queue_wait_event(device, other, e), WAFER_OK,
		  "queue_wait_event on another queue");
	st->copy_out(device, other, r, 0, got, n * sizeof(float));
	status_is(sv->sync(device, other), WAFER_OK, "  ... sync it");
	ok(all_equal(got, n, 3.5f),
	   "  ... its copy_out ran after the fill of the other queue");
	status_is(sv->event_sync(device, e), WAFER_OK, "event_sync");
	status_is(sv->event_query(device, e), WAFER_OK,
		  "  ... then event_query says finished");

	/* Timing events, where the device has timers. */
	sv->event_create(device, WAFER_PLUGIN_EVENT_TIMING, &start);
	sv->event_create(device, WAFER_PLUGIN_EVENT_TIMING, &end);
	sv->event_record(device, queue, start);
	fill(device, queue, r, n, 1.0);
	sv->event_record(device, queue, end);
	s = sv->event_elapsed(device, start, end, &ns);
	ok(s == WAFER_OK || s == WAFER_ERROR_NOT_SUPPORTED,
	   "event_elapsed around a fill: %llu ns (status %d)",
	   (unsigned long long)ns, (int)s);

	/* A host callback runs once what was issued before it finished. */
	fill(device, queue, r, n, 2.0);
	status_is(sv->queue_callback(device, queue, count_call, &calls),
		  WAFER_OK, "queue_callback");
	status_is(sv->sync(device, queue), WAFER_OK, "  ... sync");
	is_int(__atomic_load_n(&calls, __ATOMIC_SEQ_CST), 1,
	       "  ... it ran once by then");

	sv->event_destroy(device, start);
	sv->event_destroy(device, end);
	sv->event_destroy(device, e);
	sv->queue_destroy(device, other);
	st->free(device, r);
	free(got);
}

/*===----------------------------------------------------------------------===
 * Peer copies and collectives
 *===----------------------------------------------------------------------===*/

static void peer_copy(void *dst_dev, void *dst_q, void *src_dev, void *src_q,
		      const char *what)
{
	unsigned char in[300], out[300];
	wafer_resource src = alloc_or_die(src_dev, 1024),
		       dst = alloc_or_die(dst_dev, 1024);

	for (int i = 0; i < 300; i++)
		in[i] = (unsigned char)(i * 3 + 1);
	st->copy_in(src_dev, src_q, src, 7, in, sizeof in);
	status_is(st->copy_peer(dst_dev, dst_q, dst, 100, src_dev, src_q, src,
				7, sizeof in),
		  WAFER_OK, "copy_peer %s", what);
	st->copy_out(dst_dev, dst_q, dst, 100, out, sizeof out);
	status_is(sv->sync(dst_dev, dst_q), WAFER_OK, "  ... sync");
	ok(memcmp(in, out, sizeof in) == 0,
	   "  ... the bytes arrive at the offset, ordered after the source's "
	   "copy_in");
	st->free(src_dev, src);
	st->free(dst_dev, dst);
}

static void test_copy_peer(void *state, uint32_t count, void *device,
			   void *queue)
{
	void *other = NULL, *other_q = NULL;

	if (!group(4, "copy_peer", st->copy_peer != NULL, "copy_peer"))
		return;
	peer_copy(device, queue, device, queue, "within one device");
	if (count < 2) {
		skip(3, "copy_peer: one device only");
		return;
	}
	if (plugin->device_open(state, 1, &other) != WAFER_OK ||
	    sv->queue_create(other, &other_q) != WAFER_OK)
		bail_out("device 1: %s", last_error);
	peer_copy(device, queue, other, other_q, "from device 1 to device 0");
	sv->queue_destroy(other, other_q);
	plugin->device_close(other);
}

static void test_comm(void *device, void *queue)
{
	float in[4] = {1.5f, -2.0f, 0.0f, 8.0f}, out[4] = {0};
	wafer_comm_id id;
	void *comm = NULL;
	wafer_resource r;

	if (!group(4, "comm", sv->comm_id != NULL,
		   "comm_id/open/close/run"))
		return;
	memset(&id, 0xab, sizeof id);
	status_is(sv->comm_id(device, &id), WAFER_OK, "comm_id");
	struct wafer_comm_open_args args = {
		.struct_size = sizeof args, .rank = 0, .size = 1, .id = &id};
	status_is(sv->comm_open(device, &args, &comm), WAFER_OK,
		  "comm_open: rank 0 of 1");
	if (!comm)
		return;
	r = alloc_or_die(device, sizeof in);
	st->copy_in(device, queue, r, 0, in, sizeof in);
	struct wafer_collective c = {
		.struct_size = sizeof c,
		.kind = WAFER_COLLECTIVE_ALL_REDUCE,
		.op = WAFER_REDUCE_SUM,
		.dtype = WAFER_DTYPE_F32,
		.count = 4,
		.src = r,
		.dst = r,
	};
	status_is(sv->comm_run(device, queue, comm, &c), WAFER_OK,
		  "an in-place all-reduce over one rank");
	st->copy_out(device, queue, r, 0, out, sizeof out);
	status_is(sv->sync(device, queue), WAFER_OK, "  ... sync");
	ok(memcmp(in, out, sizeof in) == 0, "  ... leaves the values as they were");
	if (judged_minor >= 7 && sv->comm_split) {
		void *sub = NULL;
		uint32_t rank = 9, size = 9;

		status_is(sv->comm_split(device, comm, 3, 0, &sub, &rank,
					 &size),
			  WAFER_OK, "comm_split of one rank");
		ok(sub && rank == 0 && size == 1, "  ... rank 0 of 1");
		if (sub) {
			status_is(sv->comm_run(device, queue, sub, &c),
				  WAFER_OK, "  ... an all-reduce on it");
			status_is(sv->sync(device, queue), WAFER_OK,
				  "  ... sync");
			sv->comm_close(device, sub);
		}
		sub = (void *)&sub;
		status_is(sv->comm_split(device, comm, -1, 0, &sub, &rank,
					 &size),
			  WAFER_OK, "comm_split, colour -1");
		ok(sub == NULL, "  ... joins none");
	} else {
		skip(1, "comm_split: since ABI 1.7, optional");
	}
	if (judged_minor >= 7 && sv->comm_group_begin) {
		status_is(sv->comm_group_begin(device), WAFER_OK,
			  "comm_group_begin");
		status_is(sv->comm_run(device, queue, comm, &c), WAFER_OK,
			  "  ... an all-reduce in the group");
		status_is(sv->comm_group_end(device), WAFER_OK,
			  "  ... comm_group_end");
		status_is(sv->sync(device, queue), WAFER_OK, "  ... sync");
	} else {
		skip(1, "comm_group_begin/end: since ABI 1.7, optional");
	}
	sv->comm_close(device, comm);
	st->free(device, r);
}

int main(int argc, char **argv)
{
	const char *file = argc > 1 ? argv[1] : getenv("WAFER_ABI_DESCRIPTION");
	char path[4096];
	void *so, *state = NULL, *device = NULL, *queue = NULL;
	uint32_t count = 0;

	if (!file)
		bail_out("usage: abi DESCRIPTION (or $WAFER_ABI_DESCRIPTION)");
	if (abi_describe_read(file, &desc) != 0)
		bail_out("%s", desc.error);
	for (size_t i = 0; i < desc.env_count; i++)
		setenv(desc.env[i].key, desc.env[i].value, 1);
	if (abi_plugin_path(&desc, path, sizeof path) != 0)
		skip_all(desc.error);
	so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!so)
		bail_out("dlopen %s: %s", path, dlerror());
	printf("# %s: plugin %s\n", file, path);

	test_descriptor(
		(wafer_plugin_query_fn)dlsym(so, WAFER_PLUGIN_QUERY_SYMBOL));
	test_init();
	if (init_with(NULL, 0, &state) != WAFER_OK)
		bail_out("init with %s's options: %s", file, last_error);
	if (plugin->device_count(state, &count) != WAFER_OK || count == 0) {
		diag("no device: %s", last_error);
		plugin->shutdown(state);
		done_testing();
		return exit_status();
	}
	test_devices(state, count);
	if (plugin->device_open(state, 0, &device) != WAFER_OK ||
	    sv->queue_create(device, &queue) != WAFER_OK)
		bail_out("device 0: %s", last_error);
	test_kernel_table(device);
	test_storage(device, queue);
	test_async(device, queue);
	test_figure(device);
	test_vm(device, queue);
	test_vm_pieces(device, queue);
	test_launches(device, queue);
	test_aliasing(device, queue);
	test_bad_launches(device, queue);
	test_timers(device, queue);
	test_threads(device);
	test_programs(device, queue);
	test_vendor_names(device);
	test_interop(device, queue);
	test_events(device, queue);
	test_graphs(device, queue);
	test_host_memory(device, queue);
	test_copy_peer(state, count, device, queue);
	test_comm(device, queue);
	sv->queue_destroy(device, queue);
	plugin->device_close(device);
	plugin->shutdown(state);
	abi_describe_free(&desc);
	done_testing();
	return exit_status();
}
