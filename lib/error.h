/* wafer — SPDX-License-Identifier: MIT
 *
 * error.h: the per-thread error detail behind wafer_last_error(). Every
 * failing path in the core returns through wafer__fail(), which records
 * what went wrong (with the file, line, handle or sizes involved) and
 * hands the status back, so a failure is one line:
 *
 *     return wafer__fail(WAFER_ERROR_OUT_OF_RANGE,
 *                       "read: offset %zu + size %zu past handle of %zu",
 *                       offset, size, handle_size);
 *
 * The detail is not cut to a fixed size: a long text (a compiler log a
 * plugin reports) is kept whole, up to WAFER_ERROR_DETAIL_LIMIT. */
#ifndef WAFER_CORE_ERROR_H
#define WAFER_CORE_ERROR_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <wafer/types.h>

/* A size for local buffers that hold a message of the core's own (a
 * plugin path, a config line); details longer than this go to the heap. */
#define WAFER_ERROR_DETAIL_MAX 1024
/* The longest detail kept; longer ones are cut. */
#define WAFER_ERROR_DETAIL_LIMIT ((size_t)1 << 20)

/* Records the formatted detail for the calling thread; returns |status|.
 * The arguments may include wafer__error_detail() itself. */
wafer_status wafer__fail(wafer_status status, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
wafer_status wafer__vfail(wafer_status status, const char *format, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Prepends "context: " to the calling thread's current detail (to add the
 * plugin path or config file to a lower layer's message); returns
 * |status|. */
wafer_status wafer__fail_context(wafer_status status, const char *format, ...)
	__attribute__((format(printf, 2, 3)));

/* Clears the calling thread's detail. */
void wafer__error_clear(void);

/* The calling thread's detail ("" when none); valid until the thread's
 * next wafer__fail. */
const char *wafer__error_detail(void);

/* Whether an errno from open or stat means "no such file" (ENOENT,
 * ENOTDIR), as opposed to a file that is there but cannot be used. */
static inline bool wafer__errno_absent(int err)
{
	return err == ENOENT || err == ENOTDIR;
}

/* The longest name a caller may pass (a kernel, a program source): a
 * detail echoes what it is given, and a name of a megabyte would be
 * echoed whole. */
#define WAFER_NAME_MAX 1024

/* WAFER_OK when |name| is at most WAFER_NAME_MAX bytes, else
 * WAFER_ERROR_INVALID_ARGUMENT with "<fn>: <what> is longer than ...
 * bytes ('<its first 64 bytes>...')". */
wafer_status wafer__check_name(const char *fn, const char *what,
			       const char *name);

/* WAFER_ERROR_INVALID_ARGUMENT with "<fn>: <name> is NULL". */
wafer_status wafer__null_argument(const char *fn, const char *name);

/* The first check of a public call taking three pointers: WAFER_OK when
 * none of |a|, |b|, |c| is NULL, else wafer__null_argument naming the
 * first that is (a call taking two pointers passes one of them twice).
 * Inline: the check adds no call to a command's path. */
static inline wafer_status wafer__check_not_null(const char *fn, const void *a,
						 const char *a_name,
						 const void *b,
						 const char *b_name,
						 const void *c,
						 const char *c_name)
{
	if (a && b && c)
		return WAFER_OK;
	return wafer__null_argument(fn, !a ? a_name : !b ? b_name : c_name);
}

/* The first check of a public call that gives back a pointer or a handle
 * in |*out|: clears it (outputs are NULL or 0 on failure, so no stale
 * handle is left), then wafer__check_not_null on |a|, |b| and |out|, each
 * named as the call's parameter is spelt (a call with one other pointer
 * passes it as both |a| and |b|). */
#define WAFER__CHECK_OUT_POINTER(fn, a, b, out)                                \
	((out) ? (void)(*(out) = (__typeof__(*(out))){0}) : (void)0,           \
	 wafer__check_not_null(fn, a, #a, b, #b, out, #out))

/* The first checks of a public call that fills the caller's struct |out|
 * (named |out_name|; |full_size|: the struct as this library knows it)
 * for |owner| (named |owner_name|), in this order: |out| is not NULL; its
 * struct_size (the first member) reaches |min| bytes (sizeof(size_t) where
 * struct_size itself is enough); then the caller's fields are cleared
 * (wafer.h: outputs are 0 on failure) and |owner| is not NULL. Else
 * WAFER_ERROR_INVALID_ARGUMENT naming |fn| and the argument at fault. */
wafer_status wafer__check_out_struct(const char *fn, const char *owner_name,
				     const void *owner, const char *out_name,
				     void *out, size_t min, size_t full_size);

/* wafer__check_out_struct for the usual case: |owner| and |out| are the
 * call's parameters, named in messages as they are spelt, and any
 * struct_size that holds struct_size itself is accepted. */
#define WAFER__CHECK_OUT_STRUCT(fn, owner, out)                                \
	wafer__check_out_struct(fn, #owner, owner, #out, out, sizeof(size_t), \
				sizeof *(out))

/* Copies |full| into the caller's struct |out|, only the fields that lie
 * inside the caller's struct_size (it may be built against an older
 * header); struct_size stays as the caller set it. |full| NULL zeroes
 * them. The caller checked struct_size >= sizeof(size_t). */
void wafer__copy_out_struct(void *out, const void *full, size_t full_size);

/* A failure found after the call that caused it returned (queued work
 * that failed, a sync the memory manager needed), kept until a call the
 * program waits on (sync, read) reports it: exactly once, never lost.
 * It keeps the first failure with its full text, and counts later ones
 * (keeping the text of the first of them). Zero-initialised: empty. Not
 * thread-safe: its owner (the bridge, lib/bridge.h) runs on one thread
 * at a time. */
struct wafer__deferred {
	wafer_status status; /* WAFER_OK: nothing held */
	char *detail;        /* heap copy; NULL if the copy failed */
	uint64_t later;      /* failures after the first */
	wafer_status later_status;
	char *later_detail;  /* the first later one's text */
};

static inline bool wafer__deferred_pending(const struct wafer__deferred *d)
{
	return d->status != WAFER_OK;
}

/* Keeps |status| (nothing for WAFER_OK) with the calling thread's
 * current detail. */
void wafer__deferred_record(struct wafer__deferred *d, wafer_status status);

/* WAFER_OK when nothing is held; else raises the held failure into the
 * calling thread's detail (wafer__fail: the first text whole, then "and N
 * later failure(s)" with the first later one's text), clears the record
 * and returns the first status. */
wafer_status wafer__deferred_take(struct wafer__deferred *d);

/* Drops whatever is held, unreported. */
void wafer__deferred_clear(struct wafer__deferred *d);

#endif
