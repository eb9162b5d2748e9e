/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * plugin_util.h: header-only helpers for plugin authors. Plugins never link
 * libwafer, so everything here is `static inline` and needs nothing but the
 * C standard library and wafer/plugin.h (no compiler built-ins: overflow
 * is checked in plain C99). What is here is what every plugin
 * would otherwise write again: element sizes, stepping ABI arrays, checking
 * the host services table, filling device_info for a core of any minor
 * version, how far a catalogue parameter block reaches into its bindings,
 * a queue's deferred failure (found after launch returned, reported by
 * the next sync), the driver-free checks of an interop import, and a
 * program's kernels and cached binary.
 *
 * Division of work with the core (plugin.h): the core checks kernel
 * identity, binding count, parameter-block size, binding alignment and
 * that every binding lies inside its handle, once, before launch. A plugin
 * does not check those again; it only checks what the core cannot know:
 * how far the parameter block reaches (wafer_plugin_check_* below) and
 * malformed blocks (a rank of 0, an unknown dtype). The launch checks the
 * core makes are also here, as wafer_plugin_debug_check_launch(), for a
 * plugin built with -DWAFER_PLUGIN_DEBUG (configure --enable-debug does
 * that for the plugins of this tree): WAFER_PLUGIN_DEBUG_CHECK_LAUNCH then
 * runs it, and is WAFER_OK otherwise.
 *
 * Names: wafer_plugin_<area>_<verb>. Every helper that can fail returns a
 * wafer_status and, where it says so, sets the detail through
 * host->set_error, prefixed with the plugin's name. */
#ifndef WAFER_PLUGIN_UTIL_H
#define WAFER_PLUGIN_UTIL_H

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===
 * Element types and ABI arrays
 *===----------------------------------------------------------------------===*/

/* a * b and a + b in *out; nonzero (and *out unspecified) when the
 * result does not fit 64 bits. */
static inline int wafer_plugin_mul_overflow(uint64_t a, uint64_t b,
					    uint64_t *out)
{
	*out = a * b;
	return b != 0 && a > UINT64_MAX / b;
}

static inline int wafer_plugin_add_overflow(uint64_t a, uint64_t b,
					    uint64_t *out)
{
	*out = a + b;
	return *out < a;
}


/* Bytes per element of |dtype|: 1 for u8, 2 for f16 and bf16, 4 for f32
 * and i32, 8 for f64 and i64; 0 for WAFER_DTYPE_NONE and for any value
 * this header does not know (a dtype from a later minor version, or
 * garbage from a parameter block), so a caller can reject it. Whether a
 * plugin's kernels support the dtype is the plugin's own question. */
static inline size_t wafer_plugin_dtype_size(uint32_t dtype)
{
	switch (dtype) {
	case WAFER_DTYPE_U8:
		return 1;
	case WAFER_DTYPE_F16:
	case WAFER_DTYPE_BF16:
		return 2;
	case WAFER_DTYPE_F32:
	case WAFER_DTYPE_I32:
		return 4;
	case WAFER_DTYPE_F64:
	case WAFER_DTYPE_I64:
		return 8;
	default:
		return 0;
	}
}

/* The name of |dtype| as NumPy spells it ("float32", "float16",
 * "bfloat16", "int32", "uint8", "float64", "int64"), for messages; "none"
 * for WAFER_DTYPE_NONE and "unknown" for a value this header does not
 * know. The one list of dtype names: the core's messages use it too. */
static inline const char *wafer_plugin_dtype_name(uint32_t dtype)
{
	switch (dtype) {
	case WAFER_DTYPE_NONE:
		return "none";
	case WAFER_DTYPE_F32:
		return "float32";
	case WAFER_DTYPE_F16:
		return "float16";
	case WAFER_DTYPE_BF16:
		return "bfloat16";
	case WAFER_DTYPE_I32:
		return "int32";
	case WAFER_DTYPE_U8:
		return "uint8";
	case WAFER_DTYPE_F64:
		return "float64";
	case WAFER_DTYPE_I64:
		return "int64";
	default:
		return "unknown";
	}
}

/* A double (a fill value, a scalar operand, a cast's source) as an
 * integer by the catalogue's cast rule: truncated toward zero, saturated
 * at the type's limits, NaN as 0. */
static inline int32_t wafer_plugin_double_to_i32(double v)
{
	if (v != v)
		return 0;
	if (v >= 2147483647.0)
		return INT32_MAX;
	if (v <= -2147483648.0)
		return INT32_MIN;
	return (int32_t)v;
}

static inline int64_t wafer_plugin_double_to_i64(double v)
{
	if (v != v)
		return 0;
	if (v >= 9223372036854775808.0)
		return INT64_MAX;
	if (v < -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)v;
}

/* The catalogue's cast converts into f32, f16, bf16 and i32 (plugin.h):
 * the index of |dtype| among those four, in that order (0..3), or -1 for
 * any other dtype. Plugins index their per-target kernels by it. */
#define WAFER_PLUGIN_CAST_SLOTS 4
static inline int wafer_plugin_cast_slot(uint32_t dtype)
{
	switch (dtype) {
	case WAFER_DTYPE_F32:
		return 0;
	case WAFER_DTYPE_F16:
		return 1;
	case WAFER_DTYPE_BF16:
		return 2;
	case WAFER_DTYPE_I32:
		return 3;
	default:
		return -1;
	}
}

/* Element |i| of an array of ABI structs (options, bindings, kernel
 * tables). The other side built the array with its own sizeof, which it
 * wrote into each element's struct_size: this steps by the first
 * element's struct_size, not by the plugin's sizeof, so an array from a
 * core built against a later minor version (longer structs) is read right.
 * |array| must hold at least one element. */
static inline const void *wafer_plugin_array_at(const void *array, size_t i)
{
	size_t stride;

	memcpy(&stride, array, sizeof stride); /* struct_size comes first */
	return (const char *)array + i * stride;
}

/*===----------------------------------------------------------------------===
 * Lifetime: host services, init arguments, device info
 *===----------------------------------------------------------------------===*/

/* Nonzero when |host| offers what every plugin calls: set_error and log,
 * inside its struct_size. Without set_error there is no one to tell, so a
 * plugin rejects an unusable table with WAFER_ERROR_INVALID_ARGUMENT and
 * no detail. */
static inline int
wafer_plugin_host_usable(const struct wafer_host_services *host)
{
	return host &&
	       WAFER_STRUCT_HAS(host, struct wafer_host_services, log) &&
	       host->set_error && host->log;
}

/* The checks at the top of every init: |args| is there and holds |host|,
 * the host table is usable, and a nonzero option_count comes with an
 * options array. Returns WAFER_OK or WAFER_ERROR_INVALID_ARGUMENT (with
 * "<plugin>: N options at NULL" through set_error where the host can say
 * it). */
static inline wafer_status
wafer_plugin_init_check(const struct wafer_plugin_init_args *args,
			const char *plugin)
{
	if (!args ||
	    !WAFER_STRUCT_HAS(args, struct wafer_plugin_init_args, host) ||
	    !wafer_plugin_host_usable(args->host))
		return WAFER_ERROR_INVALID_ARGUMENT;
	if (args->option_count && !args->options) {
		args->host->set_error("%s: %zu options at NULL", plugin,
				      args->option_count);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	return WAFER_OK;
}

/* init's opening: wafer_plugin_init_check, then a zeroed state of |size|
 * bytes. Returns it, or NULL with the failure in |*out_status| (and
 * "<plugin>: out of host memory" through set_error when calloc fails). */
static inline void *
wafer_plugin_init_state(const struct wafer_plugin_init_args *args,
			const char *plugin, size_t size,
			wafer_status *out_status)
{
	void *state;

	*out_status = wafer_plugin_init_check(args, plugin);
	if (*out_status != WAFER_OK)
		return NULL;
	state = calloc(1, size);
	if (!state) {
		args->host->set_error("%s: out of host memory", plugin);
		*out_status = WAFER_ERROR_OUT_OF_MEMORY;
	}
	return state;
}

/* Calls |apply| on each option of |args| in order, with |state|; stops at
 * the first failure and returns it (the plugin frees its state). */
static inline wafer_status
wafer_plugin_apply_options(const struct wafer_plugin_init_args *args,
			   wafer_status (*apply)(void *state,
						 const struct wafer_plugin_option
							 *option),
			   void *state)
{
	for (size_t i = 0; i < args->option_count; i++) {
		const struct wafer_plugin_option *option =
			(const struct wafer_plugin_option *)
				wafer_plugin_array_at(args->options, i);
		wafer_status status = apply(state, option);

		if (status != WAFER_OK)
			return status;
	}
	return WAFER_OK;
}

/* The check at the top of every option: |option| holds origin in its
 * struct_size and has a key. Sets |*out_origin| to the option's origin, or
 * "(unknown origin)" when it has none, for the plugin's messages. Returns
 * WAFER_OK or WAFER_ERROR_INVALID_ARGUMENT with "<plugin>: malformed
 * option (struct_size N)". */
static inline wafer_status
wafer_plugin_option_check(const struct wafer_host_services *host,
			  const char *plugin,
			  const struct wafer_plugin_option *option,
			  const char **out_origin)
{
	*out_origin = "(unknown origin)";
	if (!WAFER_STRUCT_HAS(option, struct wafer_plugin_option, origin) ||
	    !option->key) {
		host->set_error("%s: malformed option (struct_size %zu)",
				plugin, option->struct_size);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (option->origin)
		*out_origin = option->origin;
	return WAFER_OK;
}

/* A byte size in an option's value: digits, then optionally K, M, G or T
 * (2^10, 2^20, 2^30, 2^40; either case, "KiB" and "KB" spellings too).
 * Returns 0 with the size in |*out|, or -1 (|*out| untouched) for
 * anything else: a sign, white space, another suffix, a size past
 * UINT64_MAX. */
static inline int wafer_plugin_parse_size(const char *text, uint64_t *out)
{
	static const char units[] = "KMGT";
	const char *unit;
	unsigned long long n;
	unsigned shift = 0;
	char *end;

	if (!text || text[0] < '0' || text[0] > '9')
		return -1;
	errno = 0;
	n = strtoull(text, &end, 10);
	if (errno)
		return -1;
	if (*end) {
		unit = strchr(units, toupper((unsigned char)*end));
		if (!unit)
			return -1;
		shift = 10 * (unsigned)(unit - units + 1);
		end++;
		if (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0)
			end += strlen(end);
		if (*end)
			return -1;
	}
	if (shift && n > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)n << shift;
	return 0;
}

/* The check at the top of alloc and alloc_async: sets *out_resource to 0
 * and refuses a size of 0 with WAFER_ERROR_INVALID_ARGUMENT and
 * "<plugin>: cannot allocate 0 bytes". */
static inline wafer_status
wafer_plugin_alloc_check(const struct wafer_host_services *host,
			 const char *plugin, size_t size,
			 wafer_resource *out_resource)
{
	*out_resource = 0;
	if (size)
		return WAFER_OK;
	host->set_error("%s: cannot allocate 0 bytes", plugin);
	return WAFER_ERROR_INVALID_ARGUMENT;
}

/* calloc(1, |size|); on failure NULL, with |what| as the error
 * ("<plugin>: cannot allocate a queue"), for the caller to return
 * WAFER_ERROR_OUT_OF_MEMORY. */
static inline void *wafer_plugin_calloc(const struct wafer_host_services *host,
					size_t size, const char *what)
{
	void *p = calloc(1, size);

	if (!p)
		host->set_error("%s", what);
	return p;
}

/* Hands a device_info the plugin filled in full (|info|, with its own
 * sizeof) to the core's |out|: copies the part both know. out->struct_size
 * may be smaller (an older core) or larger (a newer one, whose extra
 * fields are left alone); it is kept. Returns WAFER_OK. */
static inline wafer_status
wafer_plugin_device_info_copy(struct wafer_device_info *out,
			      const struct wafer_device_info *info)
{
	size_t struct_size = out->struct_size;

	memcpy(out, info,
	       struct_size < sizeof *info ? struct_size : sizeof *info);
	out->struct_size = struct_size;
	return WAFER_OK;
}

/* device_info's and device_open's check of |index| against |count|
 * devices: WAFER_OK, or WAFER_ERROR_NOT_FOUND with "<plugin>: no device
 * N (there are C)" through set_error. */
static inline wafer_status
wafer_plugin_device_index_check(const struct wafer_host_services *host,
				const char *plugin, uint32_t index,
				uint32_t count)
{
	if (index < count)
		return WAFER_OK;
	host->set_error("%s: no device %" PRIu32 " (there %s %" PRIu32 ")",
			plugin, index, count == 1 ? "is" : "are", count);
	return WAFER_ERROR_NOT_FOUND;
}

/*===----------------------------------------------------------------------===
 * Virtual memory: the checks of vm_reserve, vm_map and vm_unmap
 *===----------------------------------------------------------------------===*/

/* vm_reserve's check of |size| against the device's page size |page|
 * (its vm_granularity): WAFER_OK, or WAFER_ERROR_INVALID_ARGUMENT through
 * set_error when it is 0 or not a multiple of |page|. */
static inline wafer_status
wafer_plugin_vm_reserve_check(const struct wafer_host_services *host,
			      const char *plugin, size_t size, size_t page)
{
	if (size != 0 && size % page == 0)
		return WAFER_OK;
	host->set_error("%s: vm_reserve: size %zu must be a nonzero multiple "
			"of the page size %zu",
			plugin, size, page);
	return WAFER_ERROR_INVALID_ARGUMENT;
}

/* vm_map's and vm_unmap's (|what|) check of [offset, offset + size) in
 * |range|, a reserved range of |range_size| bytes (0 when |range| is not
 * one: vm_reserve takes no empty range): WAFER_OK when it is a non-empty
 * run of whole pages of |page| bytes inside the range, else
 * WAFER_ERROR_INVALID_ARGUMENT through set_error. */
static inline wafer_status
wafer_plugin_vm_span_check(const struct wafer_host_services *host,
			   const char *plugin, const char *what,
			   wafer_resource range, size_t range_size,
			   size_t offset, size_t size, size_t page)
{
	if (range_size == 0) {
		host->set_error("%s: %s: 0x%" PRIx64 " is not a reserved range",
				plugin, what, range);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (size == 0 || offset % page || size % page) {
		host->set_error("%s: %s: offset %zu and size %zu must be "
				"multiples of the page size %zu (size > 0)",
				plugin, what, offset, size, page);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (size > range_size || offset > range_size - size) {
		host->set_error("%s: %s: [%zu, +%zu) lies outside the %zu-byte "
				"range",
				plugin, what, offset, size, range_size);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	return WAFER_OK;
}

/* Whether page |index| of a plugin's reserved range |ctx| is mapped. */
typedef int wafer_plugin_vm_page_mapped_fn(const void *ctx, size_t index);

/* wafer_plugin_vm_span_check, then the pages' state, for a plugin that
 * keeps one per page: vm_map (|mapped| 0) takes only unmapped pages,
 * vm_unmap (|mapped| 1) only mapped ones, and |page_mapped|(|ctx|, i)
 * says whether page i is (called only once the span passed). WAFER_OK,
 * or WAFER_ERROR_INVALID_ARGUMENT through set_error naming the first page
 * that is not: "<plugin>: <what>: page <i> (offset <bytes>) of range
 * 0x<range> is already mapped" or "... is not mapped". */
static inline wafer_status wafer_plugin_vm_pages_check(
	const struct wafer_host_services *host, const char *plugin,
	const char *what, wafer_resource range, size_t range_size,
	size_t offset, size_t size, size_t page, int mapped,
	wafer_plugin_vm_page_mapped_fn *page_mapped, const void *ctx)
{
	wafer_status status = wafer_plugin_vm_span_check(
		host, plugin, what, range, range_size, offset, size, page);

	for (size_t i = offset / page;
	     status == WAFER_OK && i < (offset + size) / page; i++) {
		if (!page_mapped(ctx, i) == !mapped)
			continue;
		host->set_error("%s: %s: page %zu (offset %zu) of range "
				"0x%" PRIx64 " is %s",
				plugin, what, i, i * page, range,
				mapped ? "not mapped" : "already mapped");
		status = WAFER_ERROR_INVALID_ARGUMENT;
	}
	return status;
}

/* native's check of |offset| in |range|, a reserved range of |range_size|
 * bytes whose pages are |page| bytes: a range answers only for a mapped
 * page (the address of an unmapped one is no memory). WAFER_OK, or
 * WAFER_ERROR_INVALID_ARGUMENT through set_error: "<plugin>: native:
 * offset <offset> of range 0x<range> (<bytes> bytes) is outside it" or
 * "... is not mapped". */
static inline wafer_status wafer_plugin_vm_native_check(
	const struct wafer_host_services *host, const char *plugin,
	wafer_resource range, size_t range_size, size_t offset, size_t page,
	wafer_plugin_vm_page_mapped_fn *page_mapped, const void *ctx)
{
	if (offset < range_size && page_mapped(ctx, offset / page))
		return WAFER_OK;
	host->set_error("%s: native: offset %zu of range 0x%" PRIx64
			" (%zu bytes) is %s",
			plugin, offset, range, range_size,
			offset >= range_size ? "outside it" : "not mapped");
	return WAFER_ERROR_INVALID_ARGUMENT;
}

/*===----------------------------------------------------------------------===
 * Catalogue parameter blocks: how far they reach into the bindings
 *===----------------------------------------------------------------------===*/

/* Where a reach check reports to, and what it checks against: the host
 * (for set_error), the plugin's and kernel's names for the text, and the
 * size in bytes of each binding of the launch, in binding order. */
struct wafer_plugin_reach {
	const struct wafer_host_services *host;
	const char *plugin; /* "cpu" */
	const char *kernel; /* the table entry's op, "add_strided" */
	const size_t *sizes;
	uint32_t binding_count;
};

/* Sets "<plugin>: launch <kernel>: <text>" and returns |status|. */
static inline wafer_status
wafer_plugin_reach_fail(const struct wafer_plugin_reach *r,
			wafer_status status, const char *format, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;
static inline wafer_status
wafer_plugin_reach_fail(const struct wafer_plugin_reach *r,
			wafer_status status, const char *format, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, format);
	vsnprintf(text, sizeof text, format, ap);
	va_end(ap);
	r->host->set_error("%s: launch %s: %s", r->plugin, r->kernel, text);
	return status;
}

/* Binding |binding| must hold |elements| elements of |element_size| bytes
 * (overflow-safe). WAFER_OK, or WAFER_ERROR_OUT_OF_RANGE with "binding B
 * holds N bytes, too few for E elements of S bytes". */
static inline wafer_status
wafer_plugin_check_holds(const struct wafer_plugin_reach *r, uint32_t binding,
			 uint64_t elements, size_t element_size)
{
	size_t size = binding < r->binding_count ? r->sizes[binding] : 0;

	if (element_size && elements <= size / element_size)
		return WAFER_OK;
	return wafer_plugin_reach_fail(
		r, WAFER_ERROR_OUT_OF_RANGE,
		"binding %" PRIu32 " holds %zu bytes, too few for %" PRIu64
		" elements of %zu bytes",
		binding, size, elements, element_size);
}

/* Every binding holds |count| elements of |element_size| bytes: the check
 * of fill and the contiguous elementwise and scalar kernels. */
static inline wafer_status
wafer_plugin_check_count(const struct wafer_plugin_reach *r, uint64_t count,
			 size_t element_size)
{
	for (uint32_t i = 0; i < r->binding_count; i++) {
		wafer_status status =
			wafer_plugin_check_holds(r, i, count, element_size);
		if (status != WAFER_OK)
			return status;
	}
	return WAFER_OK;
}

/* The shape of a strided block: rank 1..WAFER_KERNEL_MAX_RANK and every
 * shape[d] >= 1, with their product (the output's element count) in
 * |*out_count|. WAFER_ERROR_INVALID_ARGUMENT otherwise (0 in *out_count). */
static inline wafer_status
wafer_plugin_check_shape(const struct wafer_plugin_reach *r, uint32_t rank,
			 const uint64_t *shape, uint64_t *out_count)
{
	uint64_t count = 1;

	*out_count = 0;
	if (rank < 1 || rank > WAFER_KERNEL_MAX_RANK)
		return wafer_plugin_reach_fail(
			r, WAFER_ERROR_INVALID_ARGUMENT,
			"rank %" PRIu32 " is not 1..%d", rank,
			WAFER_KERNEL_MAX_RANK);
	for (uint32_t d = 0; d < rank; d++)
		if (!shape[d] ||
		    wafer_plugin_mul_overflow(count, shape[d], &count))
			return wafer_plugin_reach_fail(
				r, WAFER_ERROR_INVALID_ARGUMENT,
				"shape[%" PRIu32 "] = %" PRIu64
				" is 0 or overflows the element count",
				d, shape[d]);
	*out_count = count;
	return WAFER_OK;
}

/* Elements a strided view reaches: offset + sum_d (shape[d]-1) strides[d]
 * + 1, in |*out_reach|, for a shape already checked. Then binding
 * |binding| must hold that many. WAFER_ERROR_OUT_OF_RANGE when the sum
 * overflows ("binding B: the view's strides overflow") or the binding is
 * too small. */
static inline wafer_status
wafer_plugin_check_view(const struct wafer_plugin_reach *r, uint32_t binding,
			uint32_t rank, const uint64_t *shape,
			const uint64_t *strides, uint64_t offset,
			size_t element_size, uint64_t *out_reach)
{
	uint64_t last = offset, term;

	int overflow = 0;

	*out_reach = 0;
	for (uint32_t d = 0; d < rank && !overflow; d++)
		overflow = wafer_plugin_mul_overflow(shape[d] - 1, strides[d],
						  &term) ||
			   wafer_plugin_add_overflow(last, term, &last);
	if (overflow || last == UINT64_MAX)
		return wafer_plugin_reach_fail(
			r, WAFER_ERROR_OUT_OF_RANGE,
			"binding %" PRIu32 ": the view's strides overflow",
			binding);
	*out_reach = last + 1;
	return wafer_plugin_check_holds(r, binding, *out_reach, element_size);
}

/* A whole strided binary block (bindings {out, a, b}): its shape, out
 * holding the element count, a and b their views' reach. The count and
 * the reaches come back for the plugin's index-width choice (any may be
 * NULL). */
static inline wafer_status wafer_plugin_check_binary_strided(
	const struct wafer_plugin_reach *r,
	const struct wafer_binary_strided_params *p, size_t element_size,
	uint64_t *out_count, uint64_t *out_reach_a, uint64_t *out_reach_b)
{
	uint64_t count, ra = 0, rb = 0;
	wafer_status status = wafer_plugin_check_shape(r, p->rank, p->shape,
						       &count);

	if (status == WAFER_OK)
		status = wafer_plugin_check_holds(r, 0, count, element_size);
	if (status == WAFER_OK)
		status = wafer_plugin_check_view(r, 1, p->rank, p->shape,
						 p->a_strides, p->a_offset,
						 element_size, &ra);
	if (status == WAFER_OK)
		status = wafer_plugin_check_view(r, 2, p->rank, p->shape,
						 p->b_strides, p->b_offset,
						 element_size, &rb);
	if (out_count)
		*out_count = count;
	if (out_reach_a)
		*out_reach_a = ra;
	if (out_reach_b)
		*out_reach_b = rb;
	return status;
}

/* A whole copy_strided block (bindings {out, in}), as above. */
static inline wafer_status
wafer_plugin_check_copy_strided(const struct wafer_plugin_reach *r,
				const struct wafer_strided_copy_params *p,
				size_t element_size, uint64_t *out_count,
				uint64_t *out_reach)
{
	uint64_t count, reach = 0;
	wafer_status status = wafer_plugin_check_shape(r, p->rank, p->shape,
						       &count);

	if (status == WAFER_OK)
		status = wafer_plugin_check_holds(r, 0, count, element_size);
	if (status == WAFER_OK)
		status = wafer_plugin_check_view(r, 1, p->rank, p->shape,
						 p->strides, p->offset,
						 element_size, &reach);
	if (out_count)
		*out_count = count;
	if (out_reach)
		*out_reach = reach;
	return status;
}

/* A rows block (bindings {out, in}): rows, cols >= 1 and rows x cols
 * within 64 bits (else WAFER_ERROR_INVALID_ARGUMENT); in holds rows x
 * cols elements, out rows x cols when |full_output| (softmax) and rows
 * otherwise (the reductions). rows x cols in |*out_elements| (may be
 * NULL). */
static inline wafer_status
wafer_plugin_check_rows(const struct wafer_plugin_reach *r,
			const struct wafer_rows_params *p, size_t element_size,
			int full_output, uint64_t *out_elements)
{
	uint64_t all = 0;
	wafer_status status;

	if (out_elements)
		*out_elements = 0;
	if (!p->rows || !p->cols ||
	    wafer_plugin_mul_overflow(p->rows, p->cols, &all))
		return wafer_plugin_reach_fail(
			r, WAFER_ERROR_INVALID_ARGUMENT,
			"%" PRIu64 " rows of %" PRIu64
			" columns (both at least 1, their product within "
			"64 bits)",
			p->rows, p->cols);
	status = wafer_plugin_check_holds(r, 0, full_output ? all : p->rows,
					  element_size);
	if (status == WAFER_OK)
		status = wafer_plugin_check_holds(r, 1, all, element_size);
	if (out_elements)
		*out_elements = all;
	return status;
}

/* Elements |batch| matrices of |per| elements, |stride| apart, span; 0 on
 * overflow. A stride of 0 (a shared matrix) spans one. */
static inline uint64_t wafer_plugin_batch_span(uint64_t batch,
					       uint64_t stride, uint64_t per)
{
	uint64_t span;

	if (batch <= 1 || stride == 0)
		return per;
	if (wafer_plugin_mul_overflow(batch - 1, stride, &span) ||
	    wafer_plugin_add_overflow(span, per, &span))
		return 0;
	return span;
}

/* A matmul block (bindings {out, a, b}): m, n, k, batch >= 1, transposes
 * 0 or 1, m x k, k x n and m x n within 64 bits, batch_stride_c >= m x n
 * when batch > 1 (else WAFER_ERROR_INVALID_ARGUMENT); then each binding
 * holds its batch's span (WAFER_ERROR_OUT_OF_RANGE on overflow or a
 * binding too small). The spans of out, a, b in |out_reach| (may be
 * NULL). */
static inline wafer_status
wafer_plugin_check_matmul(const struct wafer_plugin_reach *r,
			  const struct wafer_matmul_params *p,
			  size_t element_size, uint64_t out_reach[3])
{
	uint64_t mk, kn, mn, need[3];

	if (out_reach)
		out_reach[0] = out_reach[1] = out_reach[2] = 0;
	if (!p->m || !p->n || !p->k || !p->batch || p->transpose_a > 1 ||
	    p->transpose_b > 1)
		return wafer_plugin_reach_fail(
			r, WAFER_ERROR_INVALID_ARGUMENT,
			"m %" PRIu64 ", n %" PRIu64 ", k %" PRIu64
			", batch %" PRIu64 " must be >= 1 and transposes 0 "
			"or 1",
			p->m, p->n, p->k, p->batch);
	if (wafer_plugin_mul_overflow(p->m, p->k, &mk) ||
	    wafer_plugin_mul_overflow(p->k, p->n, &kn) ||
	    wafer_plugin_mul_overflow(p->m, p->n, &mn))
		return wafer_plugin_reach_fail(
			r, WAFER_ERROR_INVALID_ARGUMENT,
			"%" PRIu64 "x%" PRIu64 "x%" PRIu64 " overflows", p->m,
			p->n, p->k);
	if (p->batch > 1 && p->batch_stride_c < mn)
		return wafer_plugin_reach_fail(
			r, WAFER_ERROR_INVALID_ARGUMENT,
			"batch_stride_c %" PRIu64
			" is less than m x n = %" PRIu64,
			p->batch_stride_c, mn);
	need[0] = wafer_plugin_batch_span(p->batch, p->batch_stride_c, mn);
	need[1] = wafer_plugin_batch_span(p->batch, p->batch_stride_a, mk);
	need[2] = wafer_plugin_batch_span(p->batch, p->batch_stride_b, kn);
	for (uint32_t i = 0; i < 3; i++) {
		wafer_status status;
		if (!need[i])
			return wafer_plugin_reach_fail(
				r, WAFER_ERROR_OUT_OF_RANGE,
				"binding %" PRIu32 ": batch strides overflow",
				i);
		status = wafer_plugin_check_holds(r, i, need[i], element_size);
		if (status != WAFER_OK)
			return status;
	}
	if (out_reach)
		memcpy(out_reach, need, sizeof need);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * A queue's deferred failure
 *===----------------------------------------------------------------------===*/

/* A failure found after launch (or a copy) returned — a kernel that failed
 * while running, a staged copy that did not complete — is kept on the
 * queue and returned by the next sync (plugin.h). The first one is kept
 * with its full text (later ones are usually its consequences; they are
 * counted). Zero-initialise it (calloc, = {0}); it is not locked: one
 * queue's calls never overlap. */
struct wafer_plugin_deferred {
	wafer_status status; /* WAFER_OK while nothing failed */
	char *detail;        /* heap; NULL if it could not be allocated */
	uint64_t later;      /* failures after the first */
};

/* Records a failure with a printf-style detail: the first one with its
 * text, any later one only counted. */
static inline void
wafer_plugin_deferred_vset(struct wafer_plugin_deferred *d,
			   wafer_status status, const char *format, va_list ap)
{
	va_list again;
	int n;

	if (d->status != WAFER_OK) {
		d->later++;
		return;
	}
	d->status = status == WAFER_OK ? WAFER_ERROR_INTERNAL : status;
	va_copy(again, ap);
	n = vsnprintf(NULL, 0, format, again);
	va_end(again);
	d->detail = n < 0 ? NULL : (char *)malloc((size_t)n + 1);
	if (d->detail)
		vsnprintf(d->detail, (size_t)n + 1, format, ap);
}

static inline void wafer_plugin_deferred_set(struct wafer_plugin_deferred *d,
					     wafer_status status,
					     const char *format, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;
static inline void wafer_plugin_deferred_set(struct wafer_plugin_deferred *d,
					     wafer_status status,
					     const char *format, ...)
{
	va_list ap;

	va_start(ap, format);
	wafer_plugin_deferred_vset(d, status, format, ap);
	va_end(ap);
}

/* Forgets the failure (frees its text). Also what queue_destroy calls. */
static inline void
wafer_plugin_deferred_clear(struct wafer_plugin_deferred *d)
{
	free(d->detail);
	d->detail = NULL;
	d->status = WAFER_OK;
	d->later = 0;
}

/* sync's part: returns the kept status (WAFER_OK if none) and, when it is
 * a failure, sets its text through host->set_error, with " (and N later
 * failures)" when there were more; then clears it. */
static inline wafer_status
wafer_plugin_deferred_report(struct wafer_plugin_deferred *d,
			     const struct wafer_host_services *host)
{
	wafer_status status = d->status;

	if (status == WAFER_OK)
		return WAFER_OK;
	if (d->later)
		host->set_error("%s (and %" PRIu64 " later failure%s)",
				d->detail ? d->detail : "(detail lost)",
				d->later, d->later == 1 ? "" : "s");
	else
		host->set_error("%s", d->detail ? d->detail : "(detail lost)");
	wafer_plugin_deferred_clear(d);
	return status;
}

/*===----------------------------------------------------------------------===
 * Interop: native handles (ABI 1.3)
 *===----------------------------------------------------------------------===*/

/* The checks at the top of storage.import that need nothing of the
 * driver: |buffer| is whole (its struct_size reaches device_ordinal), of
 * the plugin's |kind| (|kind_name| names it: "cuda-pointer"), its size is
 * not 0, and it names memory (a nonzero address for the pointer kinds, an
 * object for the others). Sets *out_resource to 0; on a failure
 * WAFER_ERROR_INVALID_ARGUMENT and "<plugin>: import: <why>". The plugin
 * then asks its driver whether the memory is its device's. */
static inline wafer_status
wafer_plugin_import_check(const struct wafer_host_services *host,
			  const char *plugin,
			  const struct wafer_native_buffer *buffer,
			  wafer_native_kind kind, const char *kind_name,
			  wafer_resource *out_resource)
{
	const size_t whole = offsetof(struct wafer_native_buffer,
				      device_ordinal) +
			     sizeof buffer->device_ordinal;
	const int pointer = kind != WAFER_NATIVE_OPENCL_MEM;

	*out_resource = 0;
	if (!buffer || buffer->struct_size < whole) {
		host->set_error("%s: import: the native buffer's struct_size "
				"%zu is less than %zu",
				plugin, buffer ? buffer->struct_size : 0,
				whole);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (buffer->kind != kind) {
		host->set_error("%s: import: native kind %d, not %s (%d)",
				plugin, (int)buffer->kind, kind_name,
				(int)kind);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (buffer->size == 0) {
		host->set_error("%s: import: a %s of 0 bytes", plugin,
				kind_name);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (pointer ? buffer->address == 0 : buffer->object == NULL) {
		host->set_error("%s: import: a %s with no %s", plugin,
				kind_name, pointer ? "address" : "object");
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (pointer ? buffer->address + buffer->size < buffer->address
		    : buffer->offset + buffer->size < buffer->offset) {
		host->set_error("%s: import: %zu bytes from %s %zu wrap "
				"around",
				plugin, buffer->size,
				pointer ? "address" : "offset",
				pointer ? (size_t)buffer->address
					: buffer->offset);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	return WAFER_OK;
}

/* The second check of storage.import: |buffer|'s device_ordinal is 0
 * (what a caller whose struct ends before it passes) or |ordinal|, the
 * one the plugin's storage.native reports for its device (0 where the
 * backend has no numbering: cpu, OpenCL). Else
 * WAFER_ERROR_INVALID_ARGUMENT and "<plugin>: import: device ordinal
 * <n>, not <ordinal>". */
static inline wafer_status
wafer_plugin_import_ordinal(const struct wafer_host_services *host,
			    const char *plugin,
			    const struct wafer_native_buffer *buffer,
			    int ordinal)
{
	if (buffer->device_ordinal != 0 && buffer->device_ordinal != ordinal) {
		host->set_error("%s: import: device ordinal %d, not %d (the "
				"device's own number, as wafer_handle_native "
				"reports it)",
				plugin, buffer->device_ordinal, ordinal);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	return WAFER_OK;
}

/* Both checks above, in their order: what a plugin's storage.import
 * asks before its driver is asked. */
static inline wafer_status
wafer_plugin_import_checks(const struct wafer_host_services *host,
			   const char *plugin,
			   const struct wafer_native_buffer *buffer,
			   wafer_native_kind kind, const char *kind_name,
			   int ordinal,
			   wafer_resource *out_resource)
{
	wafer_status status = wafer_plugin_import_check(
		host, plugin, buffer, kind, kind_name, out_resource);

	if (status == WAFER_OK)
		status = wafer_plugin_import_ordinal(host, plugin, buffer,
						     ordinal);
	return status;
}

/* storage.forget for a plugin whose import keeps no record: the resource
 * is the caller's memory itself, never the plugin's to free. */
static inline void wafer_plugin_forget_nothing(void *device,
					       wafer_resource resource)
{
	(void)device;
	(void)resource;
}

/* The interop entries from one prefix (all five, as the loader wants
 * them all or none): in the storage ops, WAFER_PLUGIN_INTEROP_STORAGE_OPS
 * fills acme_storage_native, acme_storage_import, acme_storage_forget;
 * in the server ops, WAFER_PLUGIN_INTEROP_SERVER_OPS fills
 * acme_server_queue_native and acme_server_queue_wrap. */
#define WAFER_PLUGIN_INTEROP_STORAGE_OPS(prefix)                               \
	.native = prefix##_storage_native,                                     \
	.import = prefix##_storage_import, .forget = prefix##_storage_forget

#define WAFER_PLUGIN_INTEROP_SERVER_OPS(prefix)                                \
	.queue_native = prefix##_server_queue_native,                          \
	.queue_wrap = prefix##_server_queue_wrap

/* The storage ops' interop entries of a plugin whose imported resource is
 * the caller's pointer itself: acme_storage_native and
 * acme_storage_import, and a forget with nothing to drop (the memory is
 * never the plugin's to free). */
#define WAFER_PLUGIN_POINTER_INTEROP_STORAGE_OPS(prefix)                       \
	.native = prefix##_storage_native,                                     \
	.import = prefix##_storage_import,                                     \
	.forget = wafer_plugin_forget_nothing

/*===----------------------------------------------------------------------===
 * Programs: the caller's own kernels
 *===----------------------------------------------------------------------===*/

/* Whether |kernel| is one program_kernel handed out (dtype
 * WAFER_DTYPE_NONE) rather than an entry of the plugin's catalogue, which
 * always has an element type (plugin.h). launch asks it first. */
static inline int
wafer_plugin_kernel_is_program(const struct wafer_kernel *kernel)
{
	return kernel->dtype == WAFER_DTYPE_NONE;
}

/* The head of a plugin's program kernel: the plugin's own struct begins
 * with it (its driver object, a lock of its arguments follow). entry is
 * what program_kernel returns: op = |name|, variant "default", dtype
 * NONE, the declared binding_count and params_size, impl = the plugin's
 * struct itself. */
struct wafer_plugin_program_kernel {
	struct wafer_kernel entry;
	const char *name; /* entry.op: a copy, kept after the plugin's struct */
	struct wafer_plugin_program_kernel *next;
};

/* A program's kernels, one per name and declared counts, with what the
 * messages name. Set the fields, first = NULL; it is not locked: hold the
 * program's lock around wafer_plugin_program_kernel_get (program_kernel
 * may be called from several threads at once). */
struct wafer_plugin_program_kernels {
	const struct wafer_host_services *host;
	const char *plugin;    /* "cuda" */
	const char *program;   /* the program's name */
	uint32_t max_bindings; /* the most a kernel may take; 0: any */
	struct wafer_plugin_program_kernel *first;
};

/* Fills the plugin's part of |kernel| (its struct, the head filled in):
 * looks the kernel up in the driver's program, checks it takes what the
 * calling convention passes. On failure it sets the detail and leaves
 * nothing to undo. */
typedef wafer_status wafer_plugin_program_kernel_make_fn(void *ctx,
							 void *kernel);
/* Undoes what make did (NULL: nothing to undo). */
typedef void wafer_plugin_program_kernel_destroy_fn(void *kernel);

/* program_kernel's lookup: the entry for |name| with |binding_count| and
 * |params_size| if |kernels| has it, else a new one of |size| bytes (the
 * plugin's struct, starting with the head) that |make| fills, added to
 * |kernels|. WAFER_ERROR_INVALID_ARGUMENT for more bindings than
 * max_bindings ("<plugin>: kernel K of P: N bindings, at most M"),
 * WAFER_ERROR_OUT_OF_MEMORY ("<plugin>: out of host memory"), or make's
 * failure. */
static inline wafer_status wafer_plugin_program_kernel_get(
	struct wafer_plugin_program_kernels *kernels, const char *name,
	uint32_t binding_count, size_t params_size, size_t size,
	wafer_plugin_program_kernel_make_fn *make, void *ctx,
	const struct wafer_kernel **out_kernel)
{
	const struct wafer_host_services *host = kernels->host;
	struct wafer_plugin_program_kernel *k;
	size_t length = strlen(name) + 1;
	wafer_status status;
	char *copy;

	*out_kernel = NULL;
	if (kernels->max_bindings && binding_count > kernels->max_bindings) {
		host->set_error("%s: kernel %s of %s: %" PRIu32
				" bindings, at most %" PRIu32,
				kernels->plugin, name, kernels->program,
				binding_count, kernels->max_bindings);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	for (k = kernels->first; k; k = k->next)
		if (strcmp(k->name, name) == 0 &&
		    k->entry.binding_count == binding_count &&
		    k->entry.params_size == params_size) {
			*out_kernel = &k->entry;
			return WAFER_OK;
		}
	k = (struct wafer_plugin_program_kernel *)calloc(1, size + length);
	if (!k) {
		host->set_error("%s: out of host memory", kernels->plugin);
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	copy = (char *)k + size;
	memcpy(copy, name, length);
	k->name = copy;
	k->entry.struct_size = sizeof k->entry;
	k->entry.op = copy;
	k->entry.variant = "default";
	k->entry.dtype = WAFER_DTYPE_NONE;
	k->entry.binding_count = binding_count;
	k->entry.params_size = params_size;
	k->entry.impl = k;
	status = make(ctx, k);
	if (status != WAFER_OK) {
		free(k);
		return status;
	}
	k->next = kernels->first;
	kernels->first = k;
	*out_kernel = &k->entry;
	return WAFER_OK;
}

/* program_release's part: |destroy| (may be NULL) and frees every kernel
 * of |kernels|. */
static inline void wafer_plugin_program_kernels_release(
	struct wafer_plugin_program_kernels *kernels,
	wafer_plugin_program_kernel_destroy_fn *destroy)
{
	while (kernels->first) {
		struct wafer_plugin_program_kernel *k = kernels->first;

		kernels->first = k->next;
		if (destroy)
			destroy(k);
		free(k);
	}
}

#if WAFER_PLUGIN_ABI_MINOR >= 2
/* Whether |host| offers the compiled-binary cache (ABI 1.2): cache_load,
 * cache_free and cache_store, inside its struct_size. */
static inline int
wafer_plugin_has_cache(const struct wafer_host_services *host)
{
	return WAFER_STRUCT_HAS(host, struct wafer_host_services,
				cache_store) &&
	       host->cache_load && host->cache_free && host->cache_store;
}

/* A part of a cache key: |size| bytes at |data|; or a string with its
 * NUL (so "ab" + "c" and "a" + "bc" are different keys). */
static inline struct wafer_cache_part wafer_plugin_cache_part(const void *data,
							      size_t size)
{
	struct wafer_cache_part part;

	part.struct_size = sizeof part;
	part.data = data;
	part.size = size;
	return part;
}

static inline struct wafer_cache_part
wafer_plugin_cache_text(const char *text)
{
	return wafer_plugin_cache_part(text, strlen(text) + 1);
}

/* program_load's use of the host's cache, so that a second process
 * compiles nothing: a program made from the cached binary of |key| when
 * there is one that loads, else compiled and its binary stored. */
struct wafer_plugin_cached_build {
	const struct wafer_host_services *host;
	/* For the log lines: the program's name, and what it is built
	 * for ("spirv on 'GPU 0'"). */
	const char *name;
	const char *target;
	/* Everything the binary depends on (plugin.h: cache_load). */
	const struct wafer_cache_part *key;
	size_t key_parts;
	/* Makes the program from a cached binary (its bytes valid during
	 * the call only). Anything but WAFER_OK: it is compiled again. */
	wafer_status (*load)(void *ctx, const void *binary, size_t size);
	/* Compiles the program (a failure is returned as it is, with its
	 * detail); on success the binary to store in |*out_binary|
	 * (malloc'd, freed here), or NULL when there is none to store. */
	wafer_status (*compile)(void *ctx, void **out_binary,
				size_t *out_size);
	void *ctx;
};

/* Runs |b|: load from the cache, else compile and store. Logs at debug
 * level "program: from cache <name> (<target>)" or "program: compiled
 * <name> (<target>)" (plugin.h asks for them), and at info level a cached
 * binary that did not load. Returns WAFER_OK or compile's failure. */
static inline wafer_status
wafer_plugin_cached_build(const struct wafer_plugin_cached_build *b)
{
	const struct wafer_host_services *host = b->host;
	int cache = wafer_plugin_has_cache(host);
	void *binary = NULL;
	size_t size = 0;
	wafer_status status;

	if (cache && host->cache_load(host, b->key, b->key_parts, &binary,
				      &size) == WAFER_OK) {
		status = b->load(b->ctx, binary, size);
		host->cache_free(binary);
		if (status == WAFER_OK) {
			host->log(host, WAFER_LOG_DEBUG,
				  "program: from cache %s (%s)", b->name,
				  b->target);
			return WAFER_OK;
		}
		host->log(host, WAFER_LOG_INFO,
			  "program: the cached binary of %s (%s) does not "
			  "load; compiling it again",
			  b->name, b->target);
	}
	binary = NULL;
	size = 0;
	status = b->compile(b->ctx, &binary, &size);
	if (status != WAFER_OK)
		return status;
	host->log(host, WAFER_LOG_DEBUG, "program: compiled %s (%s)", b->name,
		  b->target);
	/* A failure to store costs only the next process a compilation. */
	if (cache && binary && size)
		host->cache_store(host, b->key, b->key_parts, binary, size);
	free(binary);
	return WAFER_OK;
}

#endif /* WAFER_PLUGIN_ABI_MINOR >= 2: the host's cache */

/*===----------------------------------------------------------------------===
 * The descriptor and the ops tables, from a prefix
 *===----------------------------------------------------------------------===*/

/* Designated initializers for the entries every plugin must fill, from
 * functions named after one prefix; the optional entries (timers,
 * alloc_async/free_async, vm_*) stay explicit after them. The tables
 * come before the descriptor that points at them, and may be static, as
 * may the functions (t/internal/headers.sh compiles this example, with
 * the acme_ functions declared before it):
 *
 *   static const struct wafer_storage_ops acme_storage_ops = {
 *           WAFER_PLUGIN_STORAGE_OPS(acme),  // acme_storage_alloc ...
 *           .vm_reserve = acme_storage_vm_reserve,
 *   };
 *   static const struct wafer_server_ops acme_server_ops = {
 *           WAFER_PLUGIN_SERVER_OPS(acme),   // acme_server_queue_create ...
 *           WAFER_PLUGIN_PROGRAM_OPS(acme),  // acme_program_formats ...
 *           .timer_begin = acme_server_timer_begin,
 *   };
 *   static const struct wafer_plugin acme_plugin = {
 *           WAFER_PLUGIN_DESCRIPTOR(acme),   // acme_init ... acme_server_ops
 *           .name = "acme",
 *           .version = "1.0",
 *           .description = "acme accelerators",
 *   };
 *   WAFER_PLUGIN_QUERY_RETURNS(acme_plugin)
 *
 * struct_size and the ABI numbers are those of the headers the plugin is
 * built with. */
#define WAFER_PLUGIN_DESCRIPTOR(prefix)                                        \
	.struct_size = sizeof(struct wafer_plugin),                            \
	.abi_major = WAFER_PLUGIN_ABI_MAJOR,                                   \
	.abi_minor = WAFER_PLUGIN_ABI_MINOR, .init = prefix##_init,           \
	.shutdown = prefix##_shutdown, .device_count = prefix##_device_count, \
	.device_info = prefix##_device_info,                                   \
	.device_open = prefix##_device_open,                                   \
	.device_close = prefix##_device_close,                                 \
	.device_kernels = prefix##_device_kernels,                             \
	.storage = &prefix##_storage_ops, .server = &prefix##_server_ops

#define WAFER_PLUGIN_STORAGE_OPS(prefix)                                       \
	.struct_size = sizeof(struct wafer_storage_ops),                       \
	.alloc = prefix##_storage_alloc, .free = prefix##_storage_free,       \
	.copy_in = prefix##_storage_copy_in,                                   \
	.copy_out = prefix##_storage_copy_out, .copy = prefix##_storage_copy

#define WAFER_PLUGIN_SERVER_OPS(prefix)                                        \
	.struct_size = sizeof(struct wafer_server_ops),                        \
	.queue_create = prefix##_server_queue_create,                          \
	.queue_destroy = prefix##_server_queue_destroy,                        \
	.launch = prefix##_server_launch, .sync = prefix##_server_sync

/* The program entries (plugin.h, optional since ABI 1.2) from one
 * prefix: WAFER_PLUGIN_PROGRAM_ENTRIES(acme); in the plugin's header
 * declares acme_program_formats, acme_program_load, acme_program_kernel
 * and acme_program_release with external linkage, and
 * WAFER_PLUGIN_STATIC_PROGRAM_ENTRIES(acme); declares them static, for
 * a plugin that defines them static in the file of its server table.
 * WAFER_PLUGIN_PROGRAM_OPS(acme) fills them into its wafer_server_ops
 * after WAFER_PLUGIN_SERVER_OPS. */
#define WAFER_PLUGIN_PROGRAM_DECLARATIONS(storage, prefix)                    \
	storage wafer_status prefix##_program_formats(                         \
		void *device, const wafer_program_format **out_formats,       \
		size_t *out_count);                                            \
	storage wafer_status prefix##_program_load(                            \
		void *device, const struct wafer_program_source *source,      \
		const char *options, void **out_program);                      \
	storage wafer_status prefix##_program_kernel(                          \
		void *device, void *program, const char *name,                 \
		uint32_t binding_count, size_t params_size,                    \
		const struct wafer_kernel **out_kernel);                       \
	storage void prefix##_program_release(void *device, void *program)

#define WAFER_PLUGIN_PROGRAM_ENTRIES(prefix)                                   \
	WAFER_PLUGIN_PROGRAM_DECLARATIONS(extern, prefix)
#define WAFER_PLUGIN_STATIC_PROGRAM_ENTRIES(prefix)                            \
	WAFER_PLUGIN_PROGRAM_DECLARATIONS(static, prefix)

#define WAFER_PLUGIN_PROGRAM_OPS(prefix)                                       \
	.program_formats = prefix##_program_formats,                           \
	.program_load = prefix##_program_load,                                 \
	.program_kernel = prefix##_program_kernel,                             \
	.program_release = prefix##_program_release

/* Further optional groups from one prefix, for a plugin that names its
 * entries after them: in the storage ops, WAFER_PLUGIN_VM_OPS(acme) fills
 * acme_storage_vm_reserve, _vm_release, _vm_map and _vm_unmap;
 * in the server ops, WAFER_PLUGIN_TIMER_OPS(acme) fills
 * acme_server_timer_begin and _timer_end, WAFER_PLUGIN_EVENT_OPS(acme)
 * acme_event_create, _destroy, _record, _sync, _query, _elapsed,
 * acme_queue_wait_event and acme_queue_callback (ABI 1.5), and
 * WAFER_PLUGIN_GRAPH_OPS(acme) acme_graph_begin, _end, _launch and
 * _destroy (ABI 1.6). */
/* Their declarations with external linkage, for the plugin's header:
 * WAFER_PLUGIN_EVENT_ENTRIES(acme); and WAFER_PLUGIN_GRAPH_ENTRIES(acme); */
#define WAFER_PLUGIN_EVENT_ENTRIES(prefix)                                     \
	wafer_status prefix##_event_create(void *device, uint32_t flags,       \
					   void **out_event);                  \
	void prefix##_event_destroy(void *device, void *event);                \
	wafer_status prefix##_event_record(void *device, void *queue,          \
					   void *event);                       \
	wafer_status prefix##_queue_wait_event(void *device, void *queue,      \
					       void *event);                   \
	wafer_status prefix##_event_sync(void *device, void *event);           \
	wafer_status prefix##_event_query(void *device, void *event);          \
	wafer_status prefix##_event_elapsed(void *device, void *start,         \
					    void *end, uint64_t *out_ns);      \
	wafer_status prefix##_queue_callback(void *device, void *queue,        \
					     void (*fn)(void *arg), void *arg)

#define WAFER_PLUGIN_GRAPH_ENTRIES(prefix)                                     \
	wafer_status prefix##_graph_begin(void *device, void *queue);          \
	wafer_status prefix##_graph_end(void *device, void *queue,             \
					void **out_graph);                     \
	wafer_status prefix##_graph_launch(void *device, void *queue,          \
					   void *graph);                       \
	void prefix##_graph_destroy(void *device, void *graph)

#define WAFER_PLUGIN_VM_OPS(prefix)                                            \
	.vm_reserve = prefix##_storage_vm_reserve,                             \
	.vm_release = prefix##_storage_vm_release,                             \
	.vm_map = prefix##_storage_vm_map, .vm_unmap = prefix##_storage_vm_unmap

/* The registered host memory entries (ABI 1.7) in the storage ops:
 * acme_storage_host_register, _host_unregister, _copy_in_registered and
 * _copy_out_registered. */
#define WAFER_PLUGIN_HOST_REGISTER_OPS(prefix)                                 \
	.host_register = prefix##_storage_host_register,                       \
	.host_unregister = prefix##_storage_host_unregister,                   \
	.copy_in_registered = prefix##_storage_copy_in_registered,             \
	.copy_out_registered = prefix##_storage_copy_out_registered

#define WAFER_PLUGIN_TIMER_OPS(prefix)                                         \
	.timer_begin = prefix##_server_timer_begin,                            \
	.timer_end = prefix##_server_timer_end

#define WAFER_PLUGIN_EVENT_OPS(prefix)                                         \
	.event_create = prefix##_event_create,                                 \
	.event_destroy = prefix##_event_destroy,                               \
	.event_record = prefix##_event_record,                                 \
	.queue_wait_event = prefix##_queue_wait_event,                         \
	.event_sync = prefix##_event_sync, .event_query = prefix##_event_query, \
	.event_elapsed = prefix##_event_elapsed,                               \
	.queue_callback = prefix##_queue_callback

#define WAFER_PLUGIN_GRAPH_OPS(prefix)                                         \
	.graph_begin = prefix##_graph_begin, .graph_end = prefix##_graph_end,  \
	.graph_launch = prefix##_graph_launch,                                 \
	.graph_destroy = prefix##_graph_destroy

/* The collectives (ABI 1.4) in the server ops: acme_comm_id, _open,
 * _close and _run. comm_split and the group entries (ABI 1.7) are
 * written out after them where the plugin has them. */
#define WAFER_PLUGIN_COMM_OPS(prefix)                                          \
	.comm_id = prefix##_comm_id, .comm_open = prefix##_comm_open,          \
	.comm_close = prefix##_comm_close, .comm_run = prefix##_comm_run

/* The whole server table but the collectives, for a plugin that offers
 * every other group under one prefix: WAFER_PLUGIN_SERVER_OPS, then the
 * timer, interop, program, event and graph entries. */
#define WAFER_PLUGIN_SERVER_OPS_ALL(prefix)                                    \
	WAFER_PLUGIN_SERVER_OPS(prefix), WAFER_PLUGIN_TIMER_OPS(prefix),       \
		WAFER_PLUGIN_INTEROP_SERVER_OPS(prefix),                       \
		WAFER_PLUGIN_PROGRAM_OPS(prefix),                              \
		WAFER_PLUGIN_EVENT_OPS(prefix), WAFER_PLUGIN_GRAPH_OPS(prefix)

/* Defines the entry point returning |descriptor| whatever the core
 * speaks: on an ABI major mismatch the core reports both majors and
 * unloads the plugin. |host| is not kept; init receives it again, per
 * instance. */
#define WAFER_PLUGIN_QUERY_RETURNS(descriptor)                                 \
	const struct wafer_plugin *wafer_plugin_query(                         \
		uint32_t core_abi_major,                                       \
		const struct wafer_host_services *host)                        \
	{                                                                      \
		(void)core_abi_major;                                          \
		(void)host;                                                    \
		return &(descriptor);                                          \
	}

/*===----------------------------------------------------------------------===
 * Debug-only: the launch checks the core makes
 *===----------------------------------------------------------------------===*/

/* What the core checks before it calls launch (plugin.h): a launch struct
 * holding params_size, a kernel, binding_count and params_size equal to
 * the kernel's, bindings and params present when the kernel takes them,
 * each binding naming a resource with an offset that is a multiple of
 * |alignment|. WAFER_OK, or WAFER_ERROR_INVALID_ARGUMENT with the reason.
 * Kernel identity (that the kernel is from the plugin's table) is the
 * plugin's to add. A plugin calls it through
 * WAFER_PLUGIN_DEBUG_CHECK_LAUNCH, which is WAFER_OK unless the plugin is
 * built with -DWAFER_PLUGIN_DEBUG. */
static inline wafer_status
wafer_plugin_debug_check_launch(const struct wafer_host_services *host,
				const char *plugin,
				const struct wafer_launch *launch,
				size_t alignment)
{
	const struct wafer_kernel *k;

	if (!launch ||
	    !WAFER_STRUCT_HAS(launch, struct wafer_launch, params_size) ||
	    !launch->kernel) {
		host->set_error("%s: launch: no launch, or no kernel", plugin);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	k = launch->kernel;
	if (launch->binding_count != k->binding_count ||
	    (k->binding_count && !launch->bindings)) {
		host->set_error("%s: launch %s: takes %" PRIu32
				" bindings, got %" PRIu32,
				plugin, k->op, k->binding_count,
				launch->bindings ? launch->binding_count : 0);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (launch->params_size != k->params_size ||
	    (k->params_size && !launch->params)) {
		host->set_error("%s: launch %s: takes a %zu-byte parameter "
				"block, got %zu bytes",
				plugin, k->op, k->params_size,
				launch->params ? launch->params_size : 0);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	for (uint32_t i = 0; i < launch->binding_count; i++) {
		const struct wafer_binding *b = (const struct wafer_binding *)
			wafer_plugin_array_at(launch->bindings, i);
		if (!WAFER_STRUCT_HAS(b, struct wafer_binding, size) ||
		    !b->resource) {
			host->set_error("%s: launch %s: binding %" PRIu32
					" is malformed or names no resource",
					plugin, k->op, i);
			return WAFER_ERROR_INVALID_ARGUMENT;
		}
		if (alignment && b->offset % alignment) {
			host->set_error("%s: launch %s: binding %" PRIu32
					" offset %zu is not a multiple of %zu",
					plugin, k->op, i, b->offset,
					alignment);
			return WAFER_ERROR_INVALID_ARGUMENT;
		}
	}
	return WAFER_OK;
}

#ifdef WAFER_PLUGIN_DEBUG
#define WAFER_PLUGIN_DEBUG_CHECK_LAUNCH(host, plugin, launch, alignment)       \
	wafer_plugin_debug_check_launch((host), (plugin), (launch), (alignment))
#else
#define WAFER_PLUGIN_DEBUG_CHECK_LAUNCH(host, plugin, launch, alignment)       \
	((void)(host), (void)(plugin), (void)(launch), (void)(alignment),     \
	 WAFER_OK)
#endif

#ifdef __cplusplus
}
#endif

#endif /* WAFER_PLUGIN_UTIL_H */
