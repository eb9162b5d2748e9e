/* wafer — SPDX-License-Identifier: MIT
 *
 * The structs of <wafer/plugin.h>, as a library's ABI: plugins are built
 * against them, but libwafer exports no function that takes them, so its
 * own ABI baseline (abi/libwafer.abi) does not see them. One exported
 * function per struct makes abidw record each one (members, offsets,
 * sizes) in abi/plugin.abi, and `make abi-check` compares them like
 * libwafer's. A struct new in plugin.h gets its line here (a new
 * function: an addition, which passes). */
#include <wafer/plugin.h>

/* Each body returns its own line number: identical bodies would be
 * folded into one function by the optimiser (gcc's -fipa-icf), leaving
 * one struct described. */
#define USES(s)                                  \
	WAFER_PLUGIN_EXPORT int abi_##s(struct s *p); \
	int abi_##s(struct s *p) { (void)p; return __LINE__; }

USES(wafer_cache_part)
USES(wafer_host_services)
USES(wafer_plugin_option)
USES(wafer_plugin_init_args)
USES(wafer_device_info)
USES(wafer_storage_ops)
USES(wafer_kernel)
USES(wafer_binding)
USES(wafer_launch)
USES(wafer_server_ops)
USES(wafer_plugin)
USES(wafer_vendor_name)
USES(wafer_fill_params)
USES(wafer_elementwise_params)
USES(wafer_scalar_params)
USES(wafer_binary_strided_params)
USES(wafer_strided_copy_params)
USES(wafer_cast_params)
USES(wafer_rows_params)
USES(wafer_matmul_params)
