/* wafer — SPDX-License-Identifier: MIT
 *
 * fatbins.S: the kernels nvcc compiled at build time (plugins/cuda/kernels/
 * *.cu -> *.fatbin: SASS for sm_80 and sm_90, PTX for compute_80 and
 * compute_90), embedded read-only in the plugin. kernels.c hands each to
 * cuModuleLoadData. The symbols are hidden: the plugin exports nothing but
 * wafer_plugin_query. The assembler finds the fatbins through -I of the
 * build directory. */

#define EMBED(name, file)                                                     \
	.section .rodata.wafer_##name, "a", %progbits;                        \
	.balign 64;                                                           \
	.globl cuda_fatbin_##name;                                            \
	.hidden cuda_fatbin_##name;                                           \
	.type cuda_fatbin_##name, %object;                                    \
cuda_fatbin_##name:                                                           \
	.incbin file;                                                         \
	.byte 0;                                                              \
	.size cuda_fatbin_##name, . - cuda_fatbin_##name

EMBED(elementwise, "plugins/cuda/kernels/elementwise.fatbin")
EMBED(strided, "plugins/cuda/kernels/strided.fatbin")
EMBED(reduce, "plugins/cuda/kernels/reduce.fatbin")
EMBED(matmul, "plugins/cuda/kernels/matmul.fatbin")
EMBED(typed, "plugins/cuda/kernels/typed.fatbin")

	.section .note.GNU-stack, "", %progbits
