/* wafer — SPDX-License-Identifier: MIT
 *
 * tuned.c: the launches of the ops layer, on whole handles through the
 * client's one execute path (lib/client.h); those whose kernels come in
 * variants go through autotune (include/wafer/autotune.h): matmul,
 * reduce_sum and reduce_max. Their candidates are every variant the
 * device's plugin lists for the kernel (WAFER_TUNABLE_KERNEL_VARIANTS), in
 * the plugin's order, so mode off and a plugin with one variant both run
 * the plugin's default and a plugin adds candidates without the core
 * knowing their names.
 *
 * Keys: matmul by m, n, k and batch, anchored to powers of two, with the
 * transposes and shared (batch stride 0) operands as layout flags; the
 * reductions by rows and cols. The dtype is the kernel's. No check: a
 * plugin's variants answer for their own results (the cpu plugin's are
 * compared with each other in t/cpu/variants). */
#include "build-config.h"

#include <string.h>

#include <wafer/autotune.h>

#include "lib/client.h"
#include "lib/error.h"
#include "lib/ops/internal.h"

/* A launch: wafer__op_launch's arguments, the bindings already made (what
 * a tuned launch hands the tuner; bind points the execute arguments into
 * them). */
struct tuned_launch {
	const struct wafer_kernel *kernel;
	wafer_buffer_binding bindings[WAFER_OP_MAX_INPUTS + 1];
	size_t count;
	const void *params;
	size_t params_size;
	uint64_t global[3];
};

static wafer_status tuned_bind(const void *inputs, wafer_execute_args *args)
{
	const struct tuned_launch *l = inputs;

	args->kernel = l->kernel->op;
	args->dtype = l->kernel->dtype;
	args->bindings = l->bindings;
	args->binding_count = l->count;
	args->params = l->params;
	args->params_size = l->params_size;
	memcpy(args->global, l->global, sizeof args->global);
	return WAFER_OK;
}

/* Layout flags of the matmul key. */
#define KEY_TRANSPOSE_A (1u << 0)
#define KEY_TRANSPOSE_B (1u << 1)
#define KEY_SHARED_A (1u << 2) /* one A for the whole batch */
#define KEY_SHARED_B (1u << 3)

/* The start of every key: the kernel's dtype and |dim_count| dimensions;
 * the launch's parameters copied into |params| (|size| bytes). */
static void key_begin(const void *inputs, void *params, size_t size,
		      wafer_autotune_key *key, uint32_t dim_count)
{
	const struct tuned_launch *l = inputs;

	memcpy(params, l->params, size);
	key->dtypes[0] = l->kernel->dtype;
	key->dim_count = dim_count;
}

static wafer_status matmul_key(const void *inputs, wafer_autotune_key *key)
{
	struct wafer_matmul_params p;

	key_begin(inputs, &p, sizeof p, key, 4);
	key->dims[0] = p.m;
	key->dims[1] = p.n;
	key->dims[2] = p.k;
	key->dims[3] = p.batch;
	key->flags = (p.transpose_a ? KEY_TRANSPOSE_A : 0) |
		     (p.transpose_b ? KEY_TRANSPOSE_B : 0) |
		     (p.batch > 1 && !p.batch_stride_a ? KEY_SHARED_A : 0) |
		     (p.batch > 1 && !p.batch_stride_b ? KEY_SHARED_B : 0);
	return WAFER_OK;
}

static wafer_status rows_key(const void *inputs, wafer_autotune_key *key)
{
	struct wafer_rows_params p;

	key_begin(inputs, &p, sizeof p, key, 2);
	key->dims[0] = p.rows;
	key->dims[1] = p.cols;
	return WAFER_OK;
}

#define OPS_TUNABLE(name_, kernel_, key_)                                      \
	static const wafer_tunable name_ = {                                   \
		.struct_size = sizeof(wafer_tunable),                          \
		.name = (kernel_),                                             \
		.kernel = (kernel_),                                           \
		.flags = WAFER_TUNABLE_KERNEL_VARIANTS,                        \
		.bind = tuned_bind,                                            \
		.key = (key_),                                                 \
		.anchor_level = 1,                                             \
	}

OPS_TUNABLE(tune_matmul, WAFER_KERNEL_MATMUL, matmul_key);
OPS_TUNABLE(tune_reduce_sum, WAFER_KERNEL_REDUCE_SUM, rows_key);
OPS_TUNABLE(tune_reduce_max, WAFER_KERNEL_REDUCE_MAX, rows_key);

/* The tunable of |kernel| (a catalogue name), or NULL. */
static const wafer_tunable *tunable_of(const char *kernel)
{
	static const wafer_tunable *const tunables[] = {
		&tune_matmul, &tune_reduce_sum, &tune_reduce_max,
	};

	for (size_t i = 0; i < sizeof tunables / sizeof tunables[0]; i++)
		if (strcmp(tunables[i]->kernel, kernel) == 0)
			return tunables[i];
	return NULL;
}

wafer_status wafer__op_launch(wafer_client *client,
			      const struct wafer_kernel *kernel,
			      const wafer_handle *handles, size_t count,
			      const void *params, size_t params_size,
			      uint64_t g0, uint64_t g1, uint64_t g2)
{
	const wafer_tunable *tunable = tunable_of(kernel->op);
	struct tuned_launch l = {
		.kernel = kernel,
		.count = count,
		.params = params,
		.params_size = params_size,
		.global = {g0, g1, g2},
	};

	if (count > sizeof l.bindings / sizeof l.bindings[0])
		return wafer__fail(WAFER_ERROR_INTERNAL,
				   "%s: %zu bindings from the ops layer",
				   kernel->op, count);
	for (size_t i = 0; i < count; i++)
		l.bindings[i] = (wafer_buffer_binding){handles[i], 0, 0};
	if (!tunable)
		return wafer__client_launch(client, kernel, l.bindings, count,
					    params, params_size, l.global,
					    NULL);
	return wafer_execute_autotune(client, tunable, &l, NULL);
}
