/* wafer — SPDX-License-Identifier: MIT
 *
 * scope.h: a client's open scopes (wafer_scope_begin, wafer.h). A scope
 * is a list of the references its thread created on the client while it
 * was open; its end drops those still alive. Nothing in the memory
 * manager changes: the dropped buffers go back to the strategy's cache
 * like any release, so the next scope reuses them.
 *
 * Ownership, exactly: a scope holds one reference per entry — the one a
 * creation returned (wafer_empty, wafer_create, a tensor, an operation's
 * output, whether new, reused or donated). At the end it drops one
 * reference of each entry whose handle is still the same generation and
 * alive. Everything else is the caller's counting: a wafer_retain adds a
 * reference the scope never drops (the handle survives), a wafer_release
 * or a donation gives one up (the handle, if that was its last, is gone
 * and its entry skipped). Counting, not tracking which reference is
 * whose, keeps wafer_retain and wafer_release as cheap as without scopes.
 *
 * Threads. Scopes belong to the thread that began them: a thread's new
 * handles enter its own innermost scope on the client and no other
 * thread's. A thread is known by an id of its own, never reused (not by
 * pthread_t, which a later thread may get): a scope whose thread exited
 * captures no one's handles, stays open until the client closes, and the
 * exit is reported with a warning. All open scopes of a client (of every thread) sit on one
 * list, newest first, under |lock|; |open| counts them so that a client
 * with none (the usual case) pays one relaxed load per creation.
 *
 * Lock order: the scope lock is taken alone (never while the channel or
 * the handle table's lock is held, nor the other way round). */
#ifndef WAFER_CORE_SCOPE_H
#define WAFER_CORE_SCOPE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <wafer/wafer.h>

struct wafer__scope_record;
struct wafer__handle_table;

struct wafer__scopes {
	pthread_mutex_t lock;
	_Atomic uint32_t open;
	/* The client's: entries are checked against it. */
	struct wafer__handle_table *handles;
	/* Open scopes of every thread, newest first (linked by ->outer). */
	struct wafer__scope_record *newest;
	/* Ended records kept with their entry arrays, so that a scope per
	 * iteration allocates nothing on the host after the first. */
	struct wafer__scope_record *spare;
	uint32_t spare_count;
};

wafer_status wafer__scopes_init(struct wafer__scopes *scopes,
				struct wafer__handle_table *handles);
/* Frees every record; returns how many scopes were still open (their
 * handles are the client's to free, as every live handle at close). */
size_t wafer__scopes_fini(struct wafer__scopes *scopes);

static inline int wafer__scopes_any(struct wafer__scopes *scopes)
{
	return atomic_load_explicit(&scopes->open, memory_order_relaxed) != 0;
}

/* Enters |handle|, a reference just created by the calling thread, in
 * the thread's innermost open scope on the client; WAFER_OK and nothing
 * done when the thread has none. WAFER_ERROR_OUT_OF_MEMORY (host) when
 * the entry could not be stored: the caller then releases the handle and
 * fails, so that no handle escapes its scope. */
wafer_status wafer__scopes_enter(struct wafer__scopes *scopes,
				 wafer_handle handle);

/* Makes sure the next wafer__scopes_enter of the calling thread cannot
 * fail: for an operation about to take a donated input's buffer over
 * (which cannot be undone), called before it does. */
wafer_status wafer__scopes_room(struct wafer__scopes *scopes);

#endif
