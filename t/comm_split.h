/* wafer — SPDX-License-Identifier: MIT
 *
 * comm_split.h: one rank's part of the 2 x 2 test of wafer_comm_split,
 * shared by the tests that hold four ranks as threads of one process
 * (t/api/comm_split) and as four processes (t/cpu/comm_mpi under
 * mpirun -np 4).
 *
 * World rank w of 4 sits at row w / 2, column w % 2. Rows split with
 * key = column (rank in the row = column); columns with key = -row, so
 * their ranks run against the world's (checks the key orders, not the
 * world rank). On each: an all-reduce of (w + 1) * (i + 1), whose sum is
 * the sum over the members, and a broadcast from the new rank 0 of its
 * world rank. Then a split where odd ranks give WAFER_COMM_SPLIT_NONE:
 * they get NULL, the even ones a communicator of two. */
#ifndef WAFER_T_COMM_SPLIT_H
#define WAFER_T_COMM_SPLIT_H

#include <stdio.h>

#include <wafer/comm.h>
#include <wafer/wafer.h>

#define T_SPLIT_N 19

/* All-reduces (w + 1) * (i + 1) over |comm| and checks each element is
 * |members_sum| * (i + 1); broadcasts w from rank 0 and checks it is
 * |root_world|. 0, or -1 with |why| filled. */
static inline int t_split_check(wafer_client *client, wafer_comm *comm,
				uint32_t w, float members_sum,
				uint32_t root_world, const char *name,
				char *why, size_t why_size)
{
	float host[T_SPLIT_N];
	/* i32 is not on every backend: the root's rank travels as f32. */
	float root = (float)w, got_root = -1;
	wafer_handle h = {0}, b = {0};
	wafer_status st;

	for (int i = 0; i < T_SPLIT_N; i++)
		host[i] = (float)((w + 1) * (i + 1));
	st = wafer_create(client, host, sizeof host, &h);
	if (st == WAFER_OK)
		st = wafer_create(client, &root, sizeof root, &b);
	if (st == WAFER_OK)
		st = wafer_comm_all_reduce(comm, h, h, T_SPLIT_N,
					   WAFER_DTYPE_F32, WAFER_REDUCE_SUM);
	if (st == WAFER_OK)
		st = wafer_comm_broadcast(comm, b, b, 1, WAFER_DTYPE_F32, 0);
	if (st == WAFER_OK)
		st = wafer_read(client, h, 0, host, sizeof host);
	if (st == WAFER_OK)
		st = wafer_read(client, b, 0, &got_root, sizeof got_root);
	wafer_release(client, h);
	wafer_release(client, b);
	if (st != WAFER_OK) {
		snprintf(why, why_size, "rank %u: %s: %s: %s", w, name,
			 wafer_status_string(st), wafer_last_error());
		return -1;
	}
	for (int i = 0; i < T_SPLIT_N; i++)
		if (host[i] != members_sum * (float)(i + 1)) {
			snprintf(why, why_size,
				 "rank %u: %s all_reduce [%d] is %g, want %g",
				 w, name, i, host[i],
				 members_sum * (float)(i + 1));
			return -1;
		}
	if (got_root != (float)root_world) {
		snprintf(why, why_size,
			 "rank %u: %s broadcast from rank 0 gave world rank %g, "
			 "want %u",
			 w, name, got_root, root_world);
		return -1;
	}
	return 0;
}

/* World rank |w| of the 4 ranks of |world|, on |client|. 0 when every
 * check passed, else -1 with |why| filled. Every rank must call it. */
static inline int t_split_2x2(wafer_client *client, wafer_comm *world,
			      char *why, size_t why_size)
{
	uint32_t w = wafer_comm_rank(world), row = w / 2, col = w % 2;
	wafer_comm *rows = NULL, *cols = NULL, *even = NULL;
	wafer_status st;
	int result = -1;

	st = wafer_comm_split(world, (int32_t)row, (int32_t)col, &rows);
	if (st == WAFER_OK)
		st = wafer_comm_split(world, (int32_t)col, -(int32_t)row,
				      &cols);
	if (st != WAFER_OK) {
		snprintf(why, why_size, "rank %u: split: %s: %s", w,
			 wafer_status_string(st), wafer_last_error());
		goto out;
	}
	if (!rows || !cols || wafer_comm_size(rows) != 2 ||
	    wafer_comm_size(cols) != 2 || wafer_comm_rank(rows) != col ||
	    wafer_comm_rank(cols) != 1 - row) {
		snprintf(why, why_size,
			 "rank %u: row rank %u of %u (want %u of 2), column "
			 "rank %u of %u (want %u of 2)",
			 w, wafer_comm_rank(rows), wafer_comm_size(rows), col,
			 wafer_comm_rank(cols), wafer_comm_size(cols),
			 1 - row);
		goto out;
	}
	/* Row r holds world ranks 2r and 2r + 1; column c holds c and
	 * c + 2, whose rank 0 is the one of row 1. */
	if (t_split_check(client, rows, w, (float)(2 * row + 1 + 2 * row + 2),
			  2 * row, "row", why, why_size) ||
	    t_split_check(client, cols, w, (float)(col + 1 + col + 3), 2 + col,
			  "column", why, why_size))
		goto out;
	st = wafer_comm_split(world, w % 2 ? WAFER_COMM_SPLIT_NONE : 0,
			      (int32_t)w, &even);
	if (st != WAFER_OK || (w % 2 ? even != NULL
				     : !even || wafer_comm_size(even) != 2 ||
						wafer_comm_rank(even) != w / 2)) {
		snprintf(why, why_size,
			 "rank %u: split with odd ranks out: %s (%s), %s",
			 w, wafer_status_string(st),
			 st == WAFER_OK ? "" : wafer_last_error(),
			 even ? "a communicator" : "none");
		goto out;
	}
	if (even && t_split_check(client, even, w, 1.0f + 3.0f, 0, "even",
				  why, why_size))
		goto out;
	result = 0;
out:
	wafer_comm_close(even);
	wafer_comm_close(cols);
	wafer_comm_close(rows);
	return result;
}

#endif
