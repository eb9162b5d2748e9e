/* wafer — SPDX-License-Identifier: MIT
 *
 * scope.c: wafer_scope_begin, wafer_scope_end, wafer_scope_keep (wafer.h)
 * and the list of a client's open scopes they keep (see scope.h). */
#include "build-config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/wafer.h>

#include "lib/client.h"
#include "lib/error.h"
#include "lib/handle_table.h"
#include "lib/log.h"
#include "lib/scope.h"

struct wafer__scope_record {
	uint64_t id;
	uint64_t owner; /* thread_id() of the thread that began it */
	struct wafer__scope_record *outer; /* the next older open scope */
	wafer_handle *refs;               /* in creation order */
	size_t count, capacity;
};

/* Ended records kept for reuse, per client. */
#define SPARE_RECORDS 4

/* Scope ids of the whole process: a scope of one client is never one of
 * another, and an ended scope's id is never open again. */
static _Atomic uint64_t next_id = 1;

/* Threads are told apart by an id of their own, never by pthread_t: a
 * thread that exits inside a scope leaves it open, and the next thread
 * that gets the same pthread_t must not have its handles join it. */
static _Atomic uint64_t next_thread = 1;
static _Thread_local uint64_t my_thread;
/* Scopes this thread began and has not ended (on every client); a
 * thread that exits with some is reported (exit_key's destructor). */
static _Thread_local uint32_t my_open;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void thread_exits(void *unused)
{
	(void)unused;
	if (my_open)
		wafer__log_warn("core",
				"a thread exited with %" PRIu32 " scope(s) "
				"open (wafer_scope_begin without "
			       "wafer_scope_end): their handles stay until "
			       "their client closes, and no other thread's "
			       "join them; end every scope in the thread "
			       "that began it",
			       my_open);
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, thread_exits);
}

static uint64_t thread_id(void)
{
	if (!my_thread)
		my_thread = atomic_fetch_add(&next_thread, 1);
	return my_thread;
}

wafer_status wafer__scopes_init(struct wafer__scopes *scopes,
				struct wafer__handle_table *handles)
{
	memset(scopes, 0, sizeof *scopes);
	atomic_init(&scopes->open, 0);
	scopes->handles = handles;
	if (pthread_mutex_init(&scopes->lock, NULL) != 0)
		return wafer__fail(WAFER_ERROR_INTERNAL,
				   "pthread_mutex_init failed");
	return WAFER_OK;
}

static void free_list(struct wafer__scope_record *record)
{
	while (record) {
		struct wafer__scope_record *outer = record->outer;
		free(record->refs);
		free(record);
		record = outer;
	}
}

size_t wafer__scopes_fini(struct wafer__scopes *scopes)
{
	size_t open = atomic_load(&scopes->open);
	free_list(scopes->newest);
	free_list(scopes->spare);
	pthread_mutex_destroy(&scopes->lock);
	return open;
}

/*===----------------------------------------------------------------------===
 * The list (callers hold the lock)
 *===----------------------------------------------------------------------===*/

/* The calling thread's innermost open scope at or below |from|, or NULL. */
static struct wafer__scope_record *own_from(struct wafer__scope_record *from,
					    uint64_t self)
{
	while (from && from->owner != self)
		from = from->outer;
	return from;
}

static struct wafer__scope_record *find(struct wafer__scopes *scopes,
					uint64_t id)
{
	struct wafer__scope_record *r = scopes->newest;
	while (r && r->id != id)
		r = r->outer;
	return r;
}

/* Room for |need| more entries in |record|: first drops the entries of
 * handles already gone (released or donated inside the scope), so a long
 * scope that releases as it goes stays small, then doubles. */
static wafer_status make_room(struct wafer__scopes *scopes,
			      struct wafer__scope_record *record, size_t need)
{
	if (record->capacity - record->count >= need)
		return WAFER_OK;
	size_t kept = 0;
	for (size_t i = 0; i < record->count; i++)
		if (wafer__handle_table_alive(scopes->handles, record->refs[i]))
			record->refs[kept++] = record->refs[i];
	record->count = kept;
	/* Grow when more than half is still alive: the sweep above then
	 * runs once per doubling at most, not once per entry. */
	if (record->capacity - record->count >= need &&
	    record->count <= record->capacity / 2)
		return WAFER_OK;
	size_t capacity = record->capacity ? record->capacity * 2 : 64;
	while (capacity - record->count < need)
		capacity *= 2;
	wafer_handle *refs = realloc(record->refs, capacity * sizeof *refs);
	if (!refs)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "scope %" PRIu64 ": out of host memory for "
				   "%zu entries",
				   record->id, capacity);
	record->refs = refs;
	record->capacity = capacity;
	return WAFER_OK;
}

/* The open scope |scope| of the calling thread, or an error for call
 * |fn| saying why it is not one. */
static wafer_status own_scope(struct wafer__scopes *scopes, const char *fn,
			      wafer_scope scope,
			      struct wafer__scope_record **out)
{
	struct wafer__scope_record *record = find(scopes, scope.bits);

	*out = NULL;
	if (!record)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: scope %" PRIu64 " is not open on this "
				   "client (ended already, begun on another "
				  "client, or never begun)",
				  fn, scope.bits);
	if (record->owner != thread_id())
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: scope %" PRIu64 " belongs to another "
				   "thread (a scope is kept in and ended by the "
				  "thread that began it)",
				  fn, scope.bits);
	*out = record;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * For the client (scope.h)
 *===----------------------------------------------------------------------===*/

/* Makes room for one handle in the calling thread's newest scope, if it
 * has one, and records |handle| there when it is not NULL. */
static wafer_status room_for_one(struct wafer__scopes *scopes,
				 const wafer_handle *handle)
{
	if (!wafer__scopes_any(scopes))
		return WAFER_OK;
	wafer_status status = WAFER_OK;
	pthread_mutex_lock(&scopes->lock);
	struct wafer__scope_record *record =
		own_from(scopes->newest, thread_id());
	if (record) {
		status = make_room(scopes, record, 1);
		if (status == WAFER_OK && handle)
			record->refs[record->count++] = *handle;
	}
	pthread_mutex_unlock(&scopes->lock);
	return status;
}

wafer_status wafer__scopes_enter(struct wafer__scopes *scopes,
				 wafer_handle handle)
{
	return room_for_one(scopes, &handle);
}

wafer_status wafer__scopes_room(struct wafer__scopes *scopes)
{
	return room_for_one(scopes, NULL);
}

/*===----------------------------------------------------------------------===
 * The public calls
 *===----------------------------------------------------------------------===*/

WAFER_API wafer_status wafer_scope_begin(wafer_client *client,
					 wafer_scope *out_scope)
{
	if (out_scope)
		out_scope->bits = 0;
	if (!client || !out_scope)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_scope_begin: %s is NULL",
				   client ? "out_scope" : "client");
	struct wafer__scopes *scopes = wafer__client_scopes(client);

	pthread_mutex_lock(&scopes->lock);
	struct wafer__scope_record *record = scopes->spare;
	if (record) {
		scopes->spare = record->outer;
		scopes->spare_count--;
	}
	pthread_mutex_unlock(&scopes->lock);
	if (!record) {
		record = calloc(1, sizeof *record);
		if (!record)
			return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
					   "wafer_scope_begin: out of host "
					   "memory");
	}
	record->id = atomic_fetch_add(&next_id, 1);
	record->owner = thread_id();
	/* A non-NULL value, so that thread_exits runs when the thread
	 * exits. */
	pthread_once(&exit_key_once, make_exit_key);
	pthread_setspecific(exit_key, &my_open);
	my_open++;
	record->count = 0;

	pthread_mutex_lock(&scopes->lock);
	record->outer = scopes->newest;
	scopes->newest = record;
	atomic_fetch_add_explicit(&scopes->open, 1, memory_order_relaxed);
	pthread_mutex_unlock(&scopes->lock);
	out_scope->bits = record->id;
	return WAFER_OK;
}

WAFER_API wafer_status wafer_scope_end(wafer_client *client,
				       wafer_scope scope)
{
	if (!client)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_scope_end: client is NULL");
	struct wafer__scopes *scopes = wafer__client_scopes(client);
	struct wafer__scope_record *record;

	pthread_mutex_lock(&scopes->lock);
	wafer_status status =
		own_scope(scopes, "wafer_scope_end", scope, &record);
	if (status == WAFER_OK) {
		struct wafer__scope_record *inner =
			own_from(scopes->newest, record->owner);
		if (inner != record)
			status = wafer__fail(
				WAFER_ERROR_INVALID_ARGUMENT,
				"wafer_scope_end: scope %" PRIu64
				" is not the innermost: scope %" PRIu64
				", begun inside it, is still open",
				scope.bits, inner->id);
	}
	if (status != WAFER_OK) {
		pthread_mutex_unlock(&scopes->lock);
		return status;
	}
	struct wafer__scope_record **link = &scopes->newest;
	while (*link != record)
		link = &(*link)->outer;
	*link = record->outer;
	atomic_fetch_sub_explicit(&scopes->open, 1, memory_order_relaxed);
	pthread_mutex_unlock(&scopes->lock);
	my_open--;

	/* Newest first, each as wafer_release: ordered after the work issued
	 * before, so a buffer goes back to the cache once its last kernel
	 * has run, and is there for the next scope's reservations (the end
	 * never trims). A handle already gone is skipped; one that goes
	 * between the check and the drop (another thread's release) only
	 * makes the drop fail, which is no error of the scope's. */
	struct wafer__handle_table *handles = wafer__client_handles(client);
	for (size_t i = record->count; i-- > 0;) {
		if (!wafer__handle_table_alive(handles, record->refs[i]))
			continue;
		wafer_status dropped =
			wafer__client_drop(client, record->refs[i], NULL);
		if (dropped != WAFER_OK && dropped != WAFER_ERROR_INVALID_HANDLE &&
		    dropped != WAFER_ERROR_DONATED && status == WAFER_OK)
			status = dropped;
	}
	record->count = 0;

	pthread_mutex_lock(&scopes->lock);
	if (scopes->spare_count < SPARE_RECORDS) {
		record->outer = scopes->spare;
		scopes->spare = record;
		scopes->spare_count++;
		record = NULL;
	}
	pthread_mutex_unlock(&scopes->lock);
	if (record) {
		free(record->refs);
		free(record);
	}
	return status;
}

WAFER_API wafer_status wafer_scope_keep(wafer_client *client,
					wafer_scope scope, wafer_handle handle)
{
	if (!client)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_scope_keep: client is NULL");
	struct wafer__handle_slot *slot;
	wafer_status status = wafer__handle_table_lookup(
		wafer__client_handles(client), handle, "scope_keep", &slot);
	if (status != WAFER_OK)
		return status;
	struct wafer__scopes *scopes = wafer__client_scopes(client);
	struct wafer__scope_record *record;

	pthread_mutex_lock(&scopes->lock);
	status = own_scope(scopes, "wafer_scope_keep", scope, &record);
	size_t i = record ? record->count : 0;
	while (i > 0 && record->refs[i - 1].bits != handle.bits)
		i--;
	if (status == WAFER_OK && i == 0)
		status = wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				     "wafer_scope_keep: scope %" PRIu64
				     " holds no reference of handle 0x%016" PRIx64
				     " (created before the scope began, in "
				    "another scope, or kept already)",
				    scope.bits, handle.bits);
	struct wafer__scope_record *outer =
		status == WAFER_OK ? own_from(record->outer, record->owner)
				   : NULL;
	if (outer)
		status = make_room(scopes, outer, 1);
	if (status == WAFER_OK) {
		/* Out of this scope, keeping the order of the rest. */
		memmove(&record->refs[i - 1], &record->refs[i],
			(record->count - i) * sizeof *record->refs);
		record->count--;
		if (outer)
			outer->refs[outer->count++] = handle;
	}
	pthread_mutex_unlock(&scopes->lock);
	return status;
}
