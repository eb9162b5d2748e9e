/* wafer — SPDX-License-Identifier: MIT
 *
 * plugin-skeleton-dlopen.c: plays the core's part for the plugin built
 * from examples/plugin-skeleton, without libwafer: dlopen it the way the
 * loader does, query it, check the descriptor against plugin.h's rules,
 * and drive every required entry once (init with options, a device, a
 * queue, storage, fill and add). Built and run by t/internal/plugin-skeleton.sh,
 * which reads its output as TAP lines without numbers; it prints no plan.
 *
 *   plugin-skeleton-dlopen /path/to/skeleton.so */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>

static int failed;
static char error_text[1024];

static int check(int pass, const char *what)
{
	printf("%sok - %s\n", pass ? "" : "not ", what);
	if (!pass) {
		failed = 1;
		if (error_text[0])
			printf("# plugin error text: %s\n", error_text);
	}
	fflush(stdout);
	return pass;
}

/* Host services, as the core offers them: per-call error text, a log. */
static void host_set_error(const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	vsnprintf(error_text, sizeof error_text, format, ap);
	va_end(ap);
}

static void host_log(const struct wafer_host_services *host,
		     wafer_log_level level, const char *format, ...)
{
	va_list ap;
	(void)host;
	printf("# plugin log (%d): ", (int)level);
	va_start(ap, format);
	vprintf(format, ap);
	va_end(ap);
	printf("\n");
}

static const struct wafer_host_services host = {
	.struct_size = sizeof(struct wafer_host_services),
	.abi_major = WAFER_PLUGIN_ABI_MAJOR,
	.abi_minor = WAFER_PLUGIN_ABI_MINOR,
	.set_error = host_set_error,
	.log = host_log,
	.host_data = NULL,
};

static const struct wafer_kernel *find_kernel(const struct wafer_kernel *k,
					      size_t count, const char *op)
{
	for (size_t i = 0; i < count; i++)
		if (strcmp(k[i].op, op) == 0 && k[i].dtype == WAFER_DTYPE_F32)
			return &k[i];
	return NULL;
}

static wafer_status launch(const struct wafer_plugin *p, void *device,
			   void *queue, const struct wafer_kernel *kernel,
			   const struct wafer_binding *bindings,
			   const void *params, uint64_t count)
{
	struct wafer_launch l = {
		.struct_size = sizeof l,
		.kernel = kernel,
		.bindings = bindings,
		.binding_count = kernel->binding_count,
		.params = params,
		.params_size = kernel->params_size,
		.global = {count, 1, 1},
	};
	return p->server->launch(device, queue, &l);
}

/* Init with one option and expect |want|. */
static wafer_status init_with(const struct wafer_plugin *p, const char *key,
			      const char *value, void **out_state)
{
	struct wafer_plugin_option option = {
		.struct_size = sizeof option,
		.key = key,
		.value = value,
		.origin = "test.conf:3",
	};
	struct wafer_plugin_init_args args = {
		.struct_size = sizeof args,
		.options = &option,
		.option_count = 1,
		.host = &host,
	};
	error_text[0] = '\0';
	return p->init(&args, out_state);
}

int main(int argc, char **argv)
{
	enum { N = 100 };
	if (argc != 2) {
		fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
		return 2;
	}

	void *dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!check(dl != NULL, "dlopen(RTLD_NOW | RTLD_LOCAL)")) {
		printf("# %s\n", dlerror());
		return 1;
	}
	void *symbol = dlsym(dl, WAFER_PLUGIN_QUERY_SYMBOL);
	if (!check(symbol != NULL, "exports " WAFER_PLUGIN_QUERY_SYMBOL))
		return 1;
	wafer_plugin_query_fn query;
	memcpy(&query, &symbol, sizeof query);

	const struct wafer_plugin *p = query(WAFER_PLUGIN_ABI_MAJOR, &host);
	if (!check(p != NULL, "query returns a descriptor"))
		return 1;
	check(p->struct_size >= sizeof(struct wafer_plugin),
	      "descriptor struct_size covers ABI 1.0");
	check(p->abi_major == WAFER_PLUGIN_ABI_MAJOR &&
		      p->abi_minor == WAFER_PLUGIN_ABI_MINOR,
	      "descriptor declares the header's ABI version");
	check(p->name && strcmp(p->name, "skeleton") == 0, "name is skeleton");
	check(p->version && p->description, "version and description set");
	check(p->init && p->shutdown && p->device_count && p->device_info &&
		      p->device_open && p->device_close && p->device_kernels &&
		      p->storage && p->server,
	      "every required descriptor entry is set");
	check(p->storage->struct_size >= sizeof(struct wafer_storage_ops) &&
		      p->storage->alloc && p->storage->free &&
		      p->storage->copy_in && p->storage->copy_out &&
		      p->storage->copy,
	      "required storage entries are set");
	check(!p->storage->alloc_async && !p->storage->free_async &&
		      !p->storage->vm_reserve && !p->storage->vm_release &&
		      !p->storage->vm_map && !p->storage->vm_unmap &&
		      !p->storage->host_alloc && !p->storage->host_free,
	      "optional storage entries are NULL");
	check(p->server->struct_size >= sizeof(struct wafer_server_ops) &&
		      p->server->queue_create && p->server->queue_destroy &&
		      p->server->launch && p->server->sync &&
		      !p->server->timer_begin && !p->server->timer_end,
	      "server entries: required set, timers NULL");

	void *state = NULL;
	wafer_status s = init_with(p, "memory", "lots", &state);
	check(s == WAFER_ERROR_CONFIG && state == NULL,
	      "init rejects a malformed option with WAFER_ERROR_CONFIG");
	check(strstr(error_text, "test.conf:3") != NULL,
	      "the error text names the option's origin");

	s = init_with(p, "memory", "1048576", &state);
	if (!check(s == WAFER_OK && state, "init with [skeleton] memory"))
		return 1;
	uint32_t count = 0;
	check(p->device_count(state, &count) == WAFER_OK && count == 1,
	      "one device");
	struct wafer_device_info info;
	memset(&info, 0, sizeof info);
	info.struct_size = sizeof info;
	check(p->device_info(state, 0, &info) == WAFER_OK, "device_info");
	check(info.memory_bytes == 1048576, "memory option reaches device_info");
	check(info.alloc_alignment >= 16 &&
		      (info.alloc_alignment & (info.alloc_alignment - 1)) == 0,
	      "alignment is a power of two, at least 16");
	check(info.vm_granularity == 0, "no virtual memory granularity");
	check(memchr(info.name, '\0', sizeof info.name) && info.name[0],
	      "device name is a terminated string");
	check(p->device_info(state, 1, &info) != WAFER_OK && error_text[0],
	      "device_info(1) fails with an error text");

	void *device = NULL, *queue = NULL;
	check(p->device_open(state, 0, &device) == WAFER_OK && device,
	      "device_open");
	const struct wafer_kernel *kernels = NULL;
	size_t kernel_count = 0;
	check(p->device_kernels(device, &kernels, &kernel_count) == WAFER_OK,
	      "device_kernels");
	const struct wafer_kernel *fill =
		find_kernel(kernels, kernel_count, WAFER_KERNEL_FILL);
	const struct wafer_kernel *add =
		find_kernel(kernels, kernel_count, WAFER_KERNEL_ADD);
	check(fill && fill->binding_count == 1 &&
		      fill->params_size == sizeof(struct wafer_fill_params),
	      "fill/f32 in the table with the catalogue's shape");
	check(add && add->binding_count == 3 &&
		      add->params_size == sizeof(struct wafer_elementwise_params),
	      "add/f32 in the table with the catalogue's shape");
	if (!fill || !add)
		return 1;
	check(p->server->queue_create(device, &queue) == WAFER_OK && queue,
	      "queue_create");

	/* Two buffers: a filled with 1.5 by the kernel, b uploaded. */
	wafer_resource a = 0, b = 0;
	size_t bytes = N * sizeof(float);
	check(p->storage->alloc(device, bytes, &a) == WAFER_OK && a &&
		      a % info.alloc_alignment == 0,
	      "alloc returns an aligned resource");
	check(p->storage->alloc(device, bytes, &b) == WAFER_OK && b && b != a,
	      "a second alloc");
	float host_b[N], result[N];
	for (int i = 0; i < N; i++)
		host_b[i] = (float)i;
	check(p->storage->copy_in(device, queue, b, 0, host_b, bytes) ==
		      WAFER_OK,
	      "copy_in");

	struct wafer_binding ba = {sizeof ba, a, 0, bytes};
	struct wafer_binding bb = {sizeof bb, b, 0, bytes};
	struct wafer_fill_params fp = {.count = N, .value = 1.5};
	check(launch(p, device, queue, fill, &ba, &fp, N) == WAFER_OK,
	      "launch fill");
	/* In place: a = a + b, out aliasing the first input exactly. */
	struct wafer_binding three[3] = {ba, ba, bb};
	struct wafer_elementwise_params ep = {.count = N};
	check(launch(p, device, queue, add, three, &ep, N) == WAFER_OK,
	      "launch add in place");
	check(p->storage->copy_out(device, queue, a, 0, result, bytes) ==
		      WAFER_OK,
	      "copy_out");
	check(p->server->sync(device, queue) == WAFER_OK, "sync");
	int wrong = 0;
	for (int i = 0; i < N; i++)
		wrong += result[i] != 1.5f + (float)i;
	check(wrong == 0, "fill then add computed 1.5 + i");

	/* An offset slice and a device-to-device copy. */
	check(p->storage->copy(device, queue, b, 64, a, 0, 64) == WAFER_OK &&
		      p->storage->copy_out(device, queue, b, 64, result, 64) ==
			      WAFER_OK &&
		      p->server->sync(device, queue) == WAFER_OK &&
		      result[0] == 1.5f && result[15] == 16.5f,
	      "copy between resources at an offset");

	/* A count past the binding must be refused, not run. */
	struct wafer_binding small = {sizeof small, a, 0, 16};
	fp.count = N;
	error_text[0] = '\0';
	s = launch(p, device, queue, fill, &small, &fp, N);
	check(s == WAFER_ERROR_OUT_OF_RANGE && error_text[0],
	      "fill with a count past its binding: OUT_OF_RANGE with a text");

	p->storage->free(device, a);
	p->storage->free(device, b);
	p->server->queue_destroy(device, queue);
	p->device_close(device);
	p->shutdown(state);
	check(dlclose(dl) == 0, "dlclose");
	return failed;
}
