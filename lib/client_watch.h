/* wafer — SPDX-License-Identifier: MIT
 *
 * client_watch.h: a small record that outlives its client, for what a
 * client hands out that may come back after the client closed (a DLPack
 * deleter, lib/dlpack.c). Whoever keeps one holds a reference to it;
 * before calling into the client it enters (and gets the client, or NULL
 * once the client closed), and leaves after. wafer_client_close marks the
 * record closed and waits for those inside to leave, so a caller between
 * enter and leave never sees the client freed under it.
 *
 *   struct wafer__client_watch *w = wafer__client_watch(client); // +1 ref
 *   ...
 *   wafer_client *c = wafer__client_watch_enter(w);
 *   if (c)
 *           wafer_release(c, handle);
 *   wafer__client_watch_leave(w);
 *   wafer__client_watch_put(w);
 *
 * Never close the client between enter and leave on the same thread (it
 * would wait for itself). */
#ifndef WAFER_CORE_CLIENT_WATCH_H
#define WAFER_CORE_CLIENT_WATCH_H

#include <wafer/wafer.h>

struct wafer__client_watch;

/* The client's record, created on first use, with one more reference
 * for the caller; NULL when host memory ran out (error recorded). */
struct wafer__client_watch *wafer__client_watch(wafer_client *client);

/* The client while it is open, and counts the caller inside; NULL once
 * it closed. Every enter is followed by one leave, whatever it returned. */
wafer_client *wafer__client_watch_enter(struct wafer__client_watch *watch);
void wafer__client_watch_leave(struct wafer__client_watch *watch);

/* Drops a reference; the last frees the record. */
void wafer__client_watch_put(struct wafer__client_watch *watch);

/* For client.c. A new record for |client| holding one reference (the
 * client's), or NULL. */
struct wafer__client_watch *wafer__client_watch_create(wafer_client *client);
/* Adds a reference (wafer__client_watch does, for its caller). */
void wafer__client_watch_hold(struct wafer__client_watch *watch);
/* Marks |watch| closed, waits until no caller is inside, drops the
 * client's reference. NULL is a no-op. */
void wafer__client_watch_close(struct wafer__client_watch *watch);

#endif
