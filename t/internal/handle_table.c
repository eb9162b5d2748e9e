/* wafer — SPDX-License-Identifier: MIT
 *
 * handle_table.c: handles are never issued twice in a process. Once, a
 * slot's generation wrapped after 2^24 reuses and a stale handle then
 * named (and released) the new owner's buffer, and a client opened after
 * 65,535 others took an old client's tag and accepted its handles (a
 * closed one's, and an open one's). The
 * table is driven directly, with a slot's generation set near the end
 * instead of 16 M real cycles. */
#include "build-config.h"

#include <inttypes.h>
#include <stdatomic.h>

#include "lib/handle_table.h"
#include "t/tap.h"

#define LAST_GENERATION ((1u << WAFER_HANDLE_GENERATION_BITS) - 1u)

static wafer_handle take(struct wafer__handle_table *t,
			 struct wafer__handle_slot **slot)
{
	wafer_handle h = {0};
	if (wafer__handle_table_alloc(t, 64, slot, &h) != WAFER_OK)
		diag("alloc: %s", wafer_last_error());
	return h;
}

/* Drops the only reference and recycles the slot, as the server does once
 * the memory is released. */
static void give_back(struct wafer__handle_table *t, wafer_handle h)
{
	struct wafer__handle_slot *last = NULL;
	if (wafer__handle_table_unref(t, h, NULL, &last) == WAFER_OK && last)
		wafer__handle_table_recycle(t, last);
}

static uint32_t slot_index(wafer_handle h)
{
	return (uint32_t)(h.bits & ((1u << WAFER_HANDLE_SLOT_BITS) - 1));
}

static void test_generation_end(void)
{
	struct wafer__handle_table t;
	struct wafer__handle_slot *slot, *other;

	wafer__handle_table_init(&t, 0);
	wafer_handle first = take(&t, &slot);
	give_back(&t, first);
	/* Fast-forward the free slot to two generations before the end. */
	atomic_store(&slot->state, WAFER_HANDLE_STATE(LAST_GENERATION - 1, 0));
	wafer_handle late = take(&t, &other);
	ok(other == slot, "the free slot is reused");
	give_back(&t, late);
	wafer_handle last = take(&t, &other);
	ok(other == slot, "and reused for the last generation");
	bool donated = true;
	wafer_handle donated_to = {0};
	is_status(wafer__handle_table_donate(&t, last, "neg", &other,
					     &donated_to, &donated),
		  WAFER_OK, "donating at the last generation");
	ok(!donated && donated_to.bits == 0,
	   "is refused (the operation copies): no generation is left");
	give_back(&t, last);
	wafer_handle next = take(&t, &other);
	ok(other != slot && slot_index(next) != slot_index(last),
	   "a slot past its last generation is retired, not reused");
	struct wafer__handle_slot *found;
	is_status(wafer__handle_table_lookup(&t, first, "read", &found),
		  WAFER_ERROR_INVALID_HANDLE, "the first handle stays dead");
	is_status(wafer__handle_table_lookup(&t, late, "read", &found),
		  WAFER_ERROR_INVALID_HANDLE, "the late one too");
	is_status(wafer__handle_table_lookup(&t, last, "read", &found),
		  WAFER_ERROR_INVALID_HANDLE, "and the last one");
	is_status(wafer__handle_table_lookup(&t, next, "read", &found),
		  WAFER_OK, "the new handle is live");
	give_back(&t, next);
	wafer__handle_table_fini(&t);
}

static void test_never_issued(void)
{
	struct wafer__handle_table t;
	struct wafer__handle_slot *slot, *found;

	wafer__handle_table_init(&t, 0);
	wafer_handle h = take(&t, &slot);
	wafer_handle unused = {h.bits + 5}; /* slot 6: never used */
	is_status(wafer__handle_table_lookup(&t, unused, "read", &found),
		  WAFER_ERROR_INVALID_HANDLE, "a never-used slot's handle");
	like(wafer_last_error(), "was never issued", "is called never issued");
	wafer_handle ahead = {h.bits + (UINT64_C(3) << WAFER_HANDLE_SLOT_BITS)};
	is_status(wafer__handle_table_lookup(&t, ahead, "read", &found),
		  WAFER_ERROR_INVALID_HANDLE,
		  "a live slot's handle of a later generation");
	like(wafer_last_error(), "was never issued", "is called never issued");
	give_back(&t, h);
	is_status(wafer__handle_table_lookup(&t, h, "read", &found),
		  WAFER_ERROR_INVALID_HANDLE, "a released handle");
	like(wafer_last_error(), "was released", "is called released");
	wafer__handle_table_fini(&t);
}

/* 65,535 tables later the tag comes round again: the old client's handle
 * must not name the new client's slot. */
static void test_tag_reuse(void)
{
	struct wafer__handle_table t, old;
	struct wafer__handle_slot *slot, *found;

	wafer__handle_table_init(&old, 0);
	wafer_handle stale = take(&old, &slot);
	give_back(&old, stale);
	wafer_handle stale2 = take(&old, &slot); /* generation + 1 */
	give_back(&old, stale2);
	uint16_t tag = old.tag;
	wafer__handle_table_fini(&old);

	uint32_t opened = 0;
	for (;;) {
		wafer__handle_table_init(&t, 0);
		opened++;
		if (t.tag == tag || opened > 70000)
			break;
		wafer__handle_table_fini(&t);
	}
	is_int(t.tag, tag, "the tag came round after %u opens", opened);
	wafer_handle fresh = take(&t, &slot);
	ok(fresh.bits != stale.bits && fresh.bits != stale2.bits,
	   "the new client's first handle is not an old one (0x%016" PRIx64
	   ")", fresh.bits);
	is_status(wafer__handle_table_lookup(&t, stale, "read", &found),
		  WAFER_ERROR_INVALID_HANDLE, "the old client's handle is refused");
	is_status(wafer__handle_table_lookup(&t, stale2, "release", &found),
		  WAFER_ERROR_INVALID_HANDLE, "both of them");
	give_back(&t, fresh);
	wafer__handle_table_fini(&t);
}

/* A client that stays open while 65,535 others open and close keeps its
 * tag to itself: no later client accepts its handle. */
static void test_live_tag_kept(void)
{
	struct wafer__handle_table t, old;
	struct wafer__handle_slot *slot, *found;

	wafer__handle_table_init(&old, 0);
	wafer_handle mine = take(&old, &slot);
	uint32_t shared = 0, accepted = 0;
	for (uint32_t i = 0; i < 70000; i++) {
		if (wafer__handle_table_init(&t, 0) != WAFER_OK)
			break;
		if (t.tag == old.tag) {
			shared++;
			if (wafer__handle_table_lookup(&t, mine, "release",
						       &found) == WAFER_OK)
				accepted++;
		}
		wafer__handle_table_fini(&t);
	}
	is_int(shared, 0, "no client opened meanwhile got the open one's tag");
	is_int(accepted, 0, "none of them accepts its handle");
	is_status(wafer__handle_table_lookup(&old, mine, "read", &found),
		  WAFER_OK, "the open client still owns its handle");
	give_back(&old, mine);
	wafer__handle_table_fini(&old);
}

int main(void)
{
	test_generation_end();
	test_never_issued();
	test_tag_reuse();
	test_live_tag_kept();
	done_testing();
	return exit_status();
}
