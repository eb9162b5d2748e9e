/* wafer — SPDX-License-Identifier: MIT
 *
 * raw_fatbin.S: tools/bench/raw_kernels.cu, compiled by nvcc, embedded in
 * wafer-bench (see plugins/cuda/fatbins.S). */
	.section .rodata.bench_raw_fatbin, "a", %progbits
	.balign 64
	.globl bench_raw_fatbin
	.hidden bench_raw_fatbin
	.type bench_raw_fatbin, %object
bench_raw_fatbin:
	.incbin "tools/bench/raw_kernels.fatbin"
	.byte 0
	.size bench_raw_fatbin, . - bench_raw_fatbin

	.section .note.GNU-stack, "", %progbits
