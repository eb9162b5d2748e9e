/* wafer — SPDX-License-Identifier: MIT
 *
 * hello.c: the client API end to end. Opens the default device, uploads
 * two vectors, computes relu(a + b) * a with three kernels, reads the
 * result back and checks it against the same computation on the host.
 *
 *   cc hello.c $(pkg-config --cflags --libs wafer) -o hello && ./hello
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <wafer/plugin.h> /* the standard kernel catalogue's parameters */
#include <wafer/wafer.h>

#define N 1000

static int check(wafer_status status, const char *what)
{
	if (status != WAFER_OK) {
		fprintf(stderr, "hello: %s: %s: %s\n", what,
			wafer_status_string(status), wafer_last_error());
		exit(1);
	}
	return 0;
}

/* Runs an elementwise f32 kernel: out = op(a[, b]). */
static void elementwise(wafer_client *client, const char *op, wafer_handle out,
			wafer_handle a, const wafer_handle *b)
{
	wafer_buffer_binding bindings[3] = {{out, 0, 0}, {a, 0, 0}};
	struct wafer_elementwise_params params = {.count = N};
	if (b)
		bindings[2] = (wafer_buffer_binding){*b, 0, 0};
	wafer_execute_args args = {
		.struct_size = sizeof args,
		.kernel = op,
		.dtype = WAFER_DTYPE_F32,
		.bindings = bindings,
		.binding_count = b ? 3 : 2,
		.params = &params,
		.params_size = sizeof params,
		.global = {N, 1, 1},
	};
	check(wafer_execute(client, &args), op);
}

int main(void)
{
	static float a[N], b[N], result[N];
	wafer_runtime *runtime;
	wafer_client *client;
	wafer_device_desc device = {.struct_size = sizeof device};
	wafer_memory_usage usage = {.struct_size = sizeof usage};
	wafer_handle ha, hb, hsum;

	for (int i = 0; i < N; i++) {
		a[i] = (float)(i % 17) - 8.0f;
		b[i] = (float)(i % 5) * 0.5f - 1.0f;
	}

	check(wafer_runtime_open(NULL, &runtime), "runtime_open");
	check(wafer_client_open(runtime, "default", NULL, &client), "client_open");
	check(wafer_client_device(client, &device), "client_device");
	printf("device: %s:%u %s\n", device.backend, device.index, device.name);

	check(wafer_create(client, a, sizeof a, &ha), "create a");
	check(wafer_create(client, b, sizeof b, &hb), "create b");
	check(wafer_empty(client, sizeof result, &hsum), "empty");
	elementwise(client, WAFER_KERNEL_ADD, hsum, ha, &hb);  /* sum = a + b */
	elementwise(client, WAFER_KERNEL_RELU, hsum, hsum, NULL); /* in place */
	elementwise(client, WAFER_KERNEL_MUL, hsum, hsum, &ha); /* sum *= a */
	check(wafer_read(client, hsum, 0, result, sizeof result), "read");

	int wrong = 0;
	for (int i = 0; i < N; i++) {
		float want = fmaxf(a[i] + b[i], 0.0f) * a[i];
		if (result[i] != want)
			wrong++;
	}
	check(wafer_memory_usage_get(client, &usage), "memory_usage");
	printf("relu(a + b) * a over %d floats: %s (%d wrong); "
	       "result[9..12] = %g %g %g %g\n",
	       N, wrong ? "WRONG" : "correct", wrong, result[9], result[10],
	       result[11], result[12]);
	printf("memory: %llu bytes in use in %llu handles, %llu reserved, "
	       "%llu storage allocations\n",
	       (unsigned long long)usage.bytes_in_use,
	       (unsigned long long)usage.handles_live,
	       (unsigned long long)usage.bytes_reserved,
	       (unsigned long long)usage.storage_allocs);

	check(wafer_release(client, ha), "release a");
	check(wafer_release(client, hb), "release b");
	check(wafer_release(client, hsum), "release sum");
	check(wafer_client_close(client), "client_close");
	wafer_runtime_close(runtime);
	return wrong ? 1 : 0;
}
