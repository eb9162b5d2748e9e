/* wafer — SPDX-License-Identifier: MIT
 *
 * donation.c: `wafer-bench donation` — what buffer donation saves. A chain
 * of 10 operations over a 4 MiB f32 tensor ([1024, 1024]), run under each
 * way a caller can hold its intermediates, each on a fresh client so the
 * peak is the chain's own:
 *
 *   copy-keep     ALWAYS_COPY, every intermediate kept to the end
 *   copy-release  ALWAYS_COPY, each input released after its step
 *   reuse         REUSE_INPUT, each input released after its step
 *   donate        DONATE_INPUT
 *
 * and prints the peak of bytes in use divided by the input's bytes, with
 * the time per operation:
 *
 *   donation op=relu semantics=donate peak_ratio=1.00 us_per_op=X
 *
 * op=relu chains relu; op=add chains x + row, with a [1024] row broadcast
 * over the rows (its 4 KiB are in the peak, 0.001 of the ratio). Expected:
 * 11 for copy-keep, 2 for copy-release, 1 for reuse and donate. */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/ops.h>

#include "tools/bench/bench.h"

#define SIDE 1024
#define CHAIN 10

enum semantics { COPY_KEEP, COPY_RELEASE, REUSE, DONATE };

static const char *const semantics_names[] = {"copy-keep", "copy-release",
					      "reuse", "donate"};

/* One step of the chain on |in| under |s|. */
static wafer_tensor chain_step(wafer_client *client, int add,
			       const wafer_tensor *in, const wafer_tensor *row,
			       enum semantics s)
{
	wafer_copy_semantics sx = s == REUSE    ? WAFER_REUSE_INPUT
				  : s == DONATE ? WAFER_DONATE_INPUT
						: WAFER_ALWAYS_COPY;
	wafer_tensor out;

	if (add)
		bench_check(wafer_op_add(client, in, sx, row,
					 WAFER_ALWAYS_COPY, &out),
			    "add");
	else
		bench_check(wafer_op_relu(client, in, sx, &out), "relu");
	if (s == COPY_RELEASE || s == REUSE)
		bench_check(wafer_tensor_release(client, in), "release");
	return out;
}

static void run(wafer_runtime *runtime, int add, enum semantics s,
		const float *data, const float *row_data)
{
	wafer_client *client = bench_open_client(runtime, NULL, NULL);
	uint64_t shape[2] = {SIDE, SIDE};
	uint64_t row_shape = SIDE;
	wafer_tensor kept[CHAIN + 1], row = {0};

	bench_check(wafer_tensor_create(client, WAFER_DTYPE_F32, 2, shape, data,
					&kept[0]),
		    "create");
	if (add)
		bench_check(wafer_tensor_create(client, WAFER_DTYPE_F32, 1,
						&row_shape, row_data, &row),
			    "create row");
	bench_check(wafer_sync(client), "sync");

	uint64_t start = bench_now_ns();
	wafer_tensor t = kept[0];
	for (int i = 0; i < CHAIN; i++) {
		t = chain_step(client, add, &t, &row, s);
		kept[i + 1] = t;
	}
	bench_check(wafer_sync(client), "sync");
	double us = (double)(bench_now_ns() - start) / 1e3 / CHAIN;

	/* The chain's result, checked at one element. */
	float got, want = data[SIDE + 3];
	for (int i = 0; i < CHAIN; i++)
		want = add ? want + row_data[3] : (want > 0 ? want : 0);
	bench_check(wafer_read(client, t.handle, (SIDE + 3) * sizeof got, &got,
			       sizeof got),
		    "read");
	if (got != want) {
		fprintf(stderr, "wafer-bench: donation: wrong result %g, want "
				"%g\n",
			got, want);
		exit(1);
	}

	wafer_memory_usage usage = {.struct_size = sizeof usage};
	bench_check(wafer_memory_usage_get(client, &usage), "usage");
	printf("donation op=%s semantics=%s peak_ratio=%.2f us_per_op=%.1f\n",
	       add ? "add" : "relu", semantics_names[s],
	       (double)usage.peak_in_use / (double)(SIDE * SIDE * sizeof(float)),
	       us);
	fflush(stdout);

	if (s == COPY_KEEP)
		for (int i = 0; i < CHAIN; i++)
			bench_check(wafer_tensor_release(client, &kept[i]),
				    "release");
	bench_check(wafer_tensor_release(client, &t), "release");
	if (add)
		bench_check(wafer_tensor_release(client, &row), "release");
	bench_check(wafer_client_close(client), "client_close");
}

int bench_donation(int argc, char **argv)
{
	wafer_runtime *runtime;
	float *data = malloc((size_t)SIDE * SIDE * sizeof *data);
	float row[SIDE];

	(void)argc;
	(void)argv;
	for (size_t i = 0; i < (size_t)SIDE * SIDE; i++)
		data[i] = (float)((int)(i * 2654435761u % 2001) - 1000) / 8.0f;
	for (int i = 0; i < SIDE; i++)
		row[i] = (float)(i % 7) - 3.0f;
	bench_check(wafer_runtime_open(NULL, &runtime), "runtime_open");
	for (int add = 0; add <= 1; add++)
		for (int s = COPY_KEEP; s <= DONATE; s++)
			run(runtime, add, (enum semantics)s, data, row);
	wafer_runtime_close(runtime);
	free(data);
	return 0;
}
