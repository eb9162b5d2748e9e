#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# queues_regular.sh: what t/levelzero/queues.sh runs, on queues of
# regular command lists (`immediate = no`): each hands its list to its
# command queue at every event it records or host callback it queues,
# and replays a graph after it on the same command queue.
if [ -z "${T_SRCDIR:-}" ]; then
	echo "1..0 # SKIP T_SRCDIR is not set (run through make check)"
	exit 0
fi
exec sh "$T_SRCDIR/levelzero/ops.sh" --regular queues graphs trace
