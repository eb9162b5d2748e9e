/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels.h: the Level Zero plugin's kernel table, and how a launch
 * becomes a dispatch of one SPIR-V kernel: which entry point of the
 * embedded module, the value of each of its arguments, and the group size
 * and group counts. lz_prepare computes all of that from the launch alone,
 * without a Level Zero call; server.c then sets the arguments and appends
 * the launch. Keeping the two apart lets the tests read a dispatch back
 * from the test driver and compare it with what plugin.h asks for. */
#ifndef WAFER_PLUGINS_LEVELZERO_KERNELS_H
#define WAFER_PLUGINS_LEVELZERO_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/plugin.h>

struct lz_limits;

/* The SPIR-V module built from kernels.cl (kernels-spirv.c, generated). */
extern const unsigned char lz_spirv_module[];
extern const size_t lz_spirv_module_size;

/* Every entry point of the module, in one list: the enum below indexes
 * lz_spirv_kernels[] and each queue's cache of kernel objects. */
#define LZ_SPIRV_KERNELS(X)                                                    \
	X(noop) X(fill_f32) X(fill_i32) X(copy_b32) X(copy_b16)               \
	X(neg_f32) X(abs_f32) X(exp_f32) X(log_f32) X(sqrt_f32)               \
	X(relu_f32) X(gelu_f32) X(sigmoid_f32) X(tanh_f32)                    \
	X(add_f32) X(sub_f32) X(mul_f32) X(div_f32) X(max_f32) X(min_f32)     \
	X(add_scalar_f32) X(sub_scalar_f32) X(mul_scalar_f32)                 \
	X(div_scalar_f32) X(max_scalar_f32) X(min_scalar_f32)                 \
	X(add_strided_f32) X(sub_strided_f32) X(mul_strided_f32)              \
	X(div_strided_f32) X(max_strided_f32) X(min_strided_f32)              \
	X(copy_strided_b32) X(copy_strided_b16)                               \
	X(cast_f32_f16) X(cast_f32_bf16) X(cast_f32_i32)                      \
	X(cast_f16_f32) X(cast_f16_bf16) X(cast_f16_i32)                      \
	X(cast_bf16_f32) X(cast_bf16_f16) X(cast_bf16_i32)                    \
	X(cast_i32_f32) X(cast_i32_f16) X(cast_i32_bf16)                      \
	X(reduce_sum_f32) X(reduce_max_f32) X(reduce_mean_f32)                \
	X(softmax_f32) X(matmul_f32)

enum lz_spirv_kernel {
#define LZ_ENUM(name) LZ_K_##name,
	LZ_SPIRV_KERNELS(LZ_ENUM)
#undef LZ_ENUM
	LZ_SPIRV_KERNEL_COUNT
};

extern const char *const lz_spirv_kernels[LZ_SPIRV_KERNEL_COUNT];

/* The most arguments any kernel takes, and the largest by-value one
 * (struct wafer_binary_strided_params, 216 bytes). */
#define LZ_MAX_ARGS 5
#define LZ_MAX_BINDINGS 3
#define LZ_BLOCK_BYTES 256

/* Work-group shapes the kernels in kernels.cl are written for. */
#define LZ_GROUP_1D 256 /* default for elementwise kernels */
#define LZ_ROW_GROUP 256 /* reqd_work_group_size of the row kernels */
#define LZ_TILE 16       /* matmul: TILE x TILE work-items */

struct lz_arg {
	size_t size;
	const void *value;
};

/* One dispatch. The argument values point into the struct itself, so it
 * is filled in place and never copied. */
struct lz_dispatch {
	enum lz_spirv_kernel kernel;
	uint32_t arg_count;
	struct lz_arg args[LZ_MAX_ARGS];
	uint32_t group_size[3];
	/* All zero when there is nothing to do (a count of 0 elements):
	 * server.c then appends nothing. */
	uint32_t group_count[3];
	/* Backing store of the arguments. */
	void *ptrs[LZ_MAX_BINDINGS];
	uint64_t words[4];
	_Alignas(8) unsigned char block[LZ_BLOCK_BYTES];
};

/* The table device_kernels returns: static, the same for every device. */
const struct wafer_kernel *lz_kernel_table(size_t *out_count);

/* Fills |d| for a launch of |entry| (the core checked it is ours) with the
 * bindings resolved to device addresses |ptrs| (offset applied) of
 * |sizes| bytes, and the launch's parameter block (params_size already
 * checked against the entry). |local| is the launch's work-group hint.
 * Returns WAFER_ERROR_OUT_OF_RANGE when the parameters reach past a
 * binding, WAFER_ERROR_INVALID_ARGUMENT for parameters the operation does
 * not allow, WAFER_ERROR_NOT_SUPPORTED when the shape does not fit the
 * device's limits — each after host->set_error. */
wafer_status lz_prepare(const struct wafer_host_services *host,
			const struct wafer_kernel *entry,
			void *const ptrs[], const size_t sizes[],
			const void *params, const uint32_t local[3],
			const struct lz_limits *limits, struct lz_dispatch *d);

#endif
