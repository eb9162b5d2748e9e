/* wafer — SPDX-License-Identifier: MIT
 *
 * plugin-skeleton-client.c: the skeleton plugin through the whole core —
 * runtime, client, every channel, memory manager — with the client API
 * alone, as an application would use it. Built against the build tree's
 * libwafer and run by t/internal/plugin-skeleton.sh, which reads its output as TAP
 * lines without numbers; it prints no plan.
 *
 *   plugin-skeleton-client /dir/holding/skeleton.so */
#include <stdio.h>
#include <string.h>

#include <wafer/plugin.h> /* the catalogue's names and parameter blocks */
#include <wafer/wafer.h>

enum { N = 1000 };

static int failed;

static int check(int pass, const char *what, const char *channel)
{
	printf("%sok - %s%s%s\n", pass ? "" : "not ", channel ? channel : "",
	       channel ? ": " : "", what);
	if (!pass) {
		failed = 1;
		printf("# wafer_last_error: %s\n", wafer_last_error());
	}
	return pass;
}

static wafer_status run(wafer_client *c, const char *kernel,
			wafer_buffer_binding *bindings, size_t binding_count,
			const void *params, size_t params_size)
{
	wafer_execute_args args = {
		.struct_size = sizeof args,
		.kernel = kernel,
		.dtype = WAFER_DTYPE_F32,
		.bindings = bindings,
		.binding_count = binding_count,
		.params = params,
		.params_size = params_size,
		.global = {N, 1, 1},
	};
	return wafer_execute(c, &args);
}

/* fill, upload, add, read back, and a kernel the skeleton lacks. */
static void exercise(wafer_runtime *rt, const char *channel)
{
	wafer_client_options co = {.struct_size = sizeof co, .channel = channel};
	wafer_client *c;
	if (!check(wafer_client_open(rt, "skeleton", &co, &c) == WAFER_OK,
		   "client_open(\"skeleton\")", channel))
		return;

	static float host_b[N], result[N];
	for (int i = 0; i < N; i++)
		host_b[i] = (float)i;
	wafer_handle a, b, out;
	int made = wafer_empty(c, sizeof result, &a) == WAFER_OK &&
		   wafer_create(c, host_b, sizeof host_b, &b) == WAFER_OK &&
		   wafer_empty(c, sizeof result, &out) == WAFER_OK;
	if (check(made, "empty, create, empty", channel)) {
		struct wafer_fill_params fp = {.count = N, .value = 0.25};
		struct wafer_elementwise_params ep = {.count = N};
		wafer_buffer_binding one[1] = {{a, 0, 0}};
		wafer_buffer_binding three[3] = {{out, 0, 0}, {a, 0, 0},
						 {b, 0, 0}};
		check(run(c, WAFER_KERNEL_FILL, one, 1, &fp, sizeof fp) ==
				      WAFER_OK &&
			      run(c, WAFER_KERNEL_ADD, three, 3, &ep,
				  sizeof ep) == WAFER_OK,
		      "execute fill and add", channel);
		check(wafer_read(c, out, 0, result, sizeof result) == WAFER_OK,
		      "read", channel);
		int wrong = 0;
		for (int i = 0; i < N; i++)
			wrong += result[i] != 0.25f + (float)i;
		check(wrong == 0, "out = fill(0.25) + b", channel);

		wafer_buffer_binding two[2] = {{out, 0, 0}, {a, 0, 0}};
		check(run(c, WAFER_KERNEL_NEG, two, 2, &ep, sizeof ep) ==
				      WAFER_ERROR_NOT_SUPPORTED &&
			      strstr(wafer_last_error(), "skeleton"),
		      "neg is not supported, and the text names the plugin",
		      channel);

		wafer_memory_usage u = {.struct_size = sizeof u};
		check(wafer_memory_usage_get(c, &u) == WAFER_OK &&
			      u.handles_live == 3 &&
			      u.bytes_in_use == 3 * sizeof result,
		      "memory usage counts three live handles", channel);
		wafer_release(c, a);
		wafer_release(c, b);
		wafer_release(c, out);
	}
	check(wafer_client_close(c) == WAFER_OK, "client_close", channel);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s PLUGIN_DIR\n", argv[0]);
		return 2;
	}
	/* Everything through options, as a program that carries its whole
	 * configuration would: no file is read. */
	wafer_option options[] = {
		{"core", "backend", "skeleton"},
		{"core", "plugin_path", argv[1]},
		{"skeleton", "memory", "67108864"},
	};
	wafer_runtime_options ro = {
		.struct_size = sizeof ro,
		.options = options,
		.option_count = sizeof options / sizeof options[0],
		.flags = WAFER_RUNTIME_NO_CONFIG_FILES,
	};
	wafer_runtime *rt;
	if (!check(wafer_runtime_open(&ro, &rt) == WAFER_OK, "runtime_open",
		   NULL))
		return 1;

	wafer_plugin_report p = {.struct_size = sizeof p};
	check(wafer_runtime_plugin_count(rt) == 1 &&
		      wafer_runtime_plugin(rt, 0, &p) == WAFER_OK &&
		      p.accepted && p.device_count == 1 &&
		      strcmp(p.name, "skeleton") == 0,
	      "the runtime accepted the skeleton with one device", NULL);
	if (!p.accepted)
		printf("# reason: %s\n", p.reason ? p.reason : "(none)");

	wafer_device_desc d = {.struct_size = sizeof d};
	check(wafer_runtime_device(rt, 0, &d) == WAFER_OK &&
		      strcmp(d.backend, "skeleton") == 0 &&
		      d.memory_bytes == 67108864 &&
		      (d.capabilities & WAFER_CAP_HOST_MEMORY) &&
		      !(d.capabilities & (WAFER_CAP_VIRTUAL_MEMORY |
					  WAFER_CAP_STREAM_ORDERED_ALLOC |
					  WAFER_CAP_DEVICE_TIMERS |
					  WAFER_CAP_PINNED_HOST)),
	      "device: [skeleton] memory applied, host memory, no optional "
	      "features",
	      NULL);

	const char *channels[] = {"direct", "mutex", "mpsc", "auto"};
	for (size_t i = 0; i < sizeof channels / sizeof channels[0]; i++)
		exercise(rt, channels[i]);

	wafer_runtime_close(rt);
	return failed;
}
