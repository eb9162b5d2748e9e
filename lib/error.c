/* wafer — SPDX-License-Identifier: MIT
 * error.c: the per-thread error detail and deferred failures (see
 * error.h). */
#include "build-config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/wafer.h>

#include "lib/error.h"
#include "lib/tls.h"

/* A thread's detail: in |inline_detail| while it fits, else in a heap
 * block that the thread keeps (and frees when it exits); |detail_now|
 * points at it, or is NULL for none. The mpsc runner clears the detail
 * before every command: a store to |detail_now| alone, in the
 * initial-exec model (lib/tls.h). */
static _Thread_local char inline_detail[WAFER_ERROR_DETAIL_MAX];
static _Thread_local char *heap_detail;
static WAFER__TLS_HOT const char *detail_now = NULL;

static pthread_key_t heap_key;
static pthread_once_t heap_key_once = PTHREAD_ONCE_INIT;
static int heap_key_ok;

static void heap_key_create(void)
{
	heap_key_ok = pthread_key_create(&heap_key, free) == 0;
}

static const char *current(void)
{
	return detail_now ? detail_now : "";
}

/* Formats into the thread's detail. The arguments may point into the
 * detail itself (a caller re-raising wafer__error_detail()): the text is
 * formatted elsewhere first, then moved in. */
wafer_status wafer__vfail(wafer_status status, const char *format, va_list ap)
{
	char small[WAFER_ERROR_DETAIL_MAX];
	va_list again;
	va_copy(again, ap);
	int n = vsnprintf(small, sizeof small, format, ap);
	if (n < 0) {
		va_end(again);
		inline_detail[0] = '\0';
		detail_now = inline_detail;
		return status;
	}
	if ((size_t)n < sizeof small) {
		va_end(again);
		memcpy(inline_detail, small, (size_t)n + 1);
		detail_now = inline_detail;
		return status;
	}
	size_t length = (size_t)n < WAFER_ERROR_DETAIL_LIMIT
				? (size_t)n
				: WAFER_ERROR_DETAIL_LIMIT - 1;
	char *text = malloc(length + 1);
	if (!text) {
		va_end(again);
		memcpy(inline_detail, small, sizeof small);
		detail_now = inline_detail;
		return status;
	}
	vsnprintf(text, length + 1, format, again);
	va_end(again);
	pthread_once(&heap_key_once, heap_key_create);
	free(heap_detail);
	heap_detail = text;
	if (heap_key_ok)
		pthread_setspecific(heap_key, heap_detail);
	detail_now = heap_detail;
	return status;
}

wafer_status wafer__fail(wafer_status status, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	wafer__vfail(status, format, ap);
	va_end(ap);
	return status;
}

wafer_status wafer__fail_context(wafer_status status, const char *format, ...)
{
	char prefix[WAFER_ERROR_DETAIL_MAX];
	va_list ap;

	va_start(ap, format);
	vsnprintf(prefix, sizeof prefix, format, ap);
	va_end(ap);
	const char *previous = current();
	if (previous[0])
		return wafer__fail(status, "%s: %s", prefix, previous);
	return wafer__fail(status, "%s", prefix);
}

void wafer__error_clear(void)
{
	detail_now = NULL;
}

const char *wafer__error_detail(void)
{
	return current();
}

WAFER_API const char *wafer_last_error(void)
{
	return current();
}

/*===----------------------------------------------------------------------===
 * Deferred failures
 *===----------------------------------------------------------------------===*/

static char *copy_detail(void)
{
	return strdup(current()); /* NULL: reported without its text */
}

void wafer__deferred_record(struct wafer__deferred *d, wafer_status status)
{
	if (status == WAFER_OK)
		return;
	if (d->status == WAFER_OK) {
		d->status = status;
		d->detail = copy_detail();
		return;
	}
	if (d->later++ == 0) {
		d->later_status = status;
		d->later_detail = copy_detail();
	}
}

void wafer__deferred_clear(struct wafer__deferred *d)
{
	free(d->detail);
	free(d->later_detail);
	*d = (struct wafer__deferred){0};
}

wafer_status wafer__deferred_take(struct wafer__deferred *d)
{
	wafer_status status = d->status;
	if (status == WAFER_OK)
		return WAFER_OK;
	const char *first = d->detail ? d->detail : wafer_status_string(status);
	if (d->later == 0)
		wafer__fail(status, "%s", first);
	else
		wafer__fail(status, "%s (and %" PRIu64 " later failure%s, the "
			   "first of them: %s: %s)",
			   first, d->later, d->later == 1 ? "" : "s",
			   wafer_status_string(d->later_status),
			   d->later_detail ? d->later_detail : "no detail");
	wafer__deferred_clear(d);
	return status;
}

wafer_status wafer__check_name(const char *fn, const char *what,
			       const char *name)
{
	if (strnlen(name, WAFER_NAME_MAX + 1) <= WAFER_NAME_MAX)
		return WAFER_OK;
	return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
			   "%s: %s is longer than %d bytes ('%.64s...')", fn,
			   what, WAFER_NAME_MAX, name);
}

wafer_status wafer__null_argument(const char *fn, const char *name)
{
	return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
			   name);
}

wafer_status wafer__check_out_struct(const char *fn, const char *owner_name,
				     const void *owner, const char *out_name,
				     void *out, size_t min, size_t full_size)
{
	size_t struct_size;

	if (!out)
		return wafer__null_argument(fn, out_name);
	memcpy(&struct_size, out, sizeof struct_size);
	if (struct_size < min)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: %s->struct_size is %zu, at least %zu "
				   "expected; set it to sizeof the struct (%zu)",
				   fn, out_name, struct_size, min, full_size);
	wafer__copy_out_struct(out, NULL, full_size);
	if (!owner)
		return wafer__null_argument(fn, owner_name);
	return WAFER_OK;
}

void wafer__copy_out_struct(void *out, const void *full, size_t full_size)
{
	size_t caller = *(const size_t *)out;
	size_t n = (caller < full_size ? caller : full_size) - sizeof(size_t);

	if (full)
		memcpy((char *)out + sizeof(size_t),
		       (const char *)full + sizeof(size_t), n);
	else
		memset((char *)out + sizeof(size_t), 0, n);
}
