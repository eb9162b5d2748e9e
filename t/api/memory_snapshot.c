/* wafer — SPDX-License-Identifier: MIT
 *
 * t/api/memory_snapshot: wafer_memory_snapshot on the default device, on each
 * channel. Every live handle is named by exactly one live block of its
 * size; a released one by none; each block and page run follows its
 * segment, blocks in address order; the visitor runs on the caller's
 * thread and may call the client (a queueing channel would deadlock
 * otherwise). A client with nothing in it, on every strategy, shows no
 * block (its empty list was once handed to qsort as NULL, which UBSan
 * reports). Backend-neutral (WAFER_BACKEND). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/wafer.h>

#include "t/tap.h"

#define HANDLES 5

struct seen {
	wafer_client *client;
	wafer_handle handles[HANDLES];
	size_t sizes[HANDLES];
	int named[HANDLES];      /* live blocks naming each handle */
	int size_right[HANDLES]; /* of those, with its size asked */
	int segments, blocks, live_blocks, pages;
	int out_of_order;        /* an item before its segment, or a block
				  * before the previous one's offset */
	int wrong_struct_size;
	int nested_ok;           /* client calls from the visitor */
	int64_t segment;         /* the current segment */
	uint64_t last_offset;
};

static void visit(const wafer_memory_item *item, void *user)
{
	struct seen *s = user;
	if (item->struct_size != sizeof *item)
		s->wrong_struct_size++;
	if (item->kind == WAFER_MEMORY_ITEM_SEGMENT) {
		s->segments++;
		s->out_of_order += (int64_t)item->segment != s->segment + 1;
		s->segment = item->segment;
		s->last_offset = 0;
		wafer_memory_usage u = {.struct_size = sizeof u};
		s->nested_ok += wafer_memory_usage_get(s->client, &u) == WAFER_OK;
		return;
	}
	s->out_of_order += (int64_t)item->segment != s->segment;
	if (item->kind == WAFER_MEMORY_ITEM_PAGES) {
		s->pages++;
		return;
	}
	s->blocks++;
	s->out_of_order += item->offset < s->last_offset;
	s->last_offset = item->offset;
	if (!item->live)
		return;
	s->live_blocks++;
	for (int i = 0; i < HANDLES; i++)
		if (s->handles[i].bits && item->handle.bits == s->handles[i].bits) {
			s->named[i]++;
			s->size_right[i] += item->requested == s->sizes[i];
		}
}

/* A client on the default device, of |channel| and |strategy| (NULL:
 * the configured one), with |s| ready to see its snapshot; NULL after a
 * failing point. */
static wafer_client *open_seen(wafer_runtime *rt, const char *channel,
			       const char *strategy, struct seen *s)
{
	wafer_client_options options = {.struct_size = sizeof options,
					.channel = channel,
					.memory = strategy};
	wafer_client *c = NULL;

	if (wafer_client_open(rt, "default", &options, &c) != WAFER_OK) {
		ok(0, "%s: client_open: %s", channel ? channel : strategy,
		   wafer_last_error());
		return NULL;
	}
	memset(s, 0, sizeof *s);
	s->client = c;
	s->segment = -1;
	return c;
}

static void test_channel(wafer_runtime *rt, const char *channel)
{
	struct seen s;
	wafer_client *c = open_seen(rt, channel, NULL, &s);

	if (!c)
		return;
	static const size_t sizes[HANDLES] = {1000, 3000, 64, 3 << 20, 777};
	for (int i = 0; i < HANDLES; i++) {
		s.sizes[i] = sizes[i];
		if (wafer_empty(c, sizes[i], &s.handles[i]) != WAFER_OK)
			bail_out("empty: %s", wafer_last_error());
	}
	/* The second goes: its block is free or reused, never named. */
	wafer_release(c, s.handles[1]);

	is_status(wafer_memory_snapshot(c, visit, &s), WAFER_OK,
		  "%s: snapshot", channel);
	for (int i = 0; i < HANDLES; i++) {
		if (i == 1)
			continue;
		is_int(s.named[i], 1, "%s: handle %d (%zu bytes) named by one "
		       "live block", channel, i, sizes[i]);
		is_int(s.size_right[i], 1, "%s:   with its size", channel);
	}
	is_int(s.named[1], 0, "%s: the released handle by none", channel);
	is_int(s.live_blocks, HANDLES - 1, "%s: one live block per live handle",
	       channel);
	ok(s.segments >= 1, "%s: %d segment(s), %d page run(s), %d block(s)",
	   channel, s.segments, s.pages, s.blocks);
	is_int(s.out_of_order, 0, "%s: items by segment, blocks by offset",
	       channel);
	is_int(s.wrong_struct_size, 0, "%s: struct_size is the library's",
	       channel);
	is_int(s.nested_ok, s.segments,
	       "%s: the visitor may call the client", channel);

	for (int i = 0; i < HANDLES; i++)
		if (i != 1)
			wafer_release(c, s.handles[i]);
	is_status(wafer_memory_snapshot(c, NULL, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "%s: NULL visit", channel);
	like(wafer_last_error(), "wafer_memory_snapshot: visit is NULL",
	     "%s:   named", channel);
	wafer_client_close(c);
}

static void test_empty(wafer_runtime *rt, const char *strategy)
{
	struct seen s;
	wafer_client *c = open_seen(rt, NULL, strategy, &s);

	if (!c)
		return;
	is_status(wafer_memory_snapshot(c, visit, &s), WAFER_OK,
		  "%s: snapshot of an empty client", strategy);
	is_int(s.live_blocks, 0, "%s:   no live block", strategy);
	wafer_client_close(c);
}

int main(void)
{
	wafer_runtime *rt = NULL;
	if (wafer_runtime_open(NULL, &rt) != WAFER_OK)
		bail_out("runtime_open: %s", wafer_last_error());
	test_channel(rt, "direct");
	test_channel(rt, "mutex");
	test_channel(rt, "mpsc");
	static const char *const strategies[] = {
		"direct", "stream", "pool", "buckets", "chunked", "exact",
	};
	for (size_t i = 0; i < sizeof strategies / sizeof *strategies; i++)
		test_empty(rt, strategies[i]);
	is_status(wafer_memory_snapshot(NULL, visit, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "NULL client");
	wafer_runtime_close(rt);
	done_testing();
	return exit_status();
}
