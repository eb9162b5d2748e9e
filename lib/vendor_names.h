/* wafer — SPDX-License-Identifier: MIT
 *
 * vendor_names.h: what the core shows for a value of a vendor range
 * (types.h: program formats, native kinds), the one place that names
 * them. Plugins name their values through the descriptor's vendor_names
 * (plugin.h, ABI 1.7); the loader registers what it accepts here, for
 * the life of the process. */
#ifndef WAFER_LIB_VENDOR_NAMES_H
#define WAFER_LIB_VENDOR_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* The name of an enum |value| of kind |what| (WAFER_VENDOR_PROGRAM_FORMAT
 * or _NATIVE_KIND) that the caller's switch did not know: the name a
 * loaded plugin gave it, else "vendor-0x10001" inside the vendor range
 * [first, last] (types.h), else "unknown". A registered name lives as
 * long as the process; an unnamed one is kept in the calling thread's
 * ring of 8, so it lives until the thread's eighth next such name. */
const char *wafer__vendor_value_name(uint32_t what, int value, int first,
				     int last);

/* Registers |name| for |value| of kind |what|. 0 when it is registered
 * (or was, with the same name); -1 with why not in |why| (a value
 * outside the vendor range, a malformed name or one of the core's own,
 * the value named otherwise already, the table full). */
int wafer__vendor_name_register(uint32_t what, uint32_t value,
				const char *name, char *why, size_t why_size);

/* "program format" or "native kind", for messages. */
const char *wafer__vendor_what(uint32_t what);

#endif
