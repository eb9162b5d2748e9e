/* wafer — SPDX-License-Identifier: MIT
 *
 * value_names.h: the names the core shows for program formats and native
 * kinds (types.h), the one place that names them: the public
 * wafer_program_format_name and wafer_native_kind_name are defined
 * beside these. Plugins name their vendor values through the
 * descriptor's vendor_names (plugin.h, ABI 1.7); the loader registers
 * what it accepts here, for the life of the process. */
#ifndef WAFER_LIB_VALUE_NAMES_H
#define WAFER_LIB_VALUE_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* Registers |name| for |value| of kind |what|. 0 when it is registered
 * (or was, with the same name); -1 with why not in |why| (a value
 * outside the vendor range, a malformed name or one of the core's own,
 * the value named otherwise already, the table full). */
int wafer__vendor_name_register(uint32_t what, uint32_t value,
				const char *name, char *why, size_t why_size);

/* "program format" or "native kind", for messages. */
const char *wafer__vendor_what(uint32_t what);

#endif
