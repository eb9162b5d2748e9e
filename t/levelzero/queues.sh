#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# queues.sh: t/api/queues (several queues of a client, events, host
# callbacks), t/api/graphs (native graphs) and t/api/trace (device spans
# from events) on the Level Zero test driver, as t/levelzero/ops.sh runs
# t/api/ops: the plugin's events group orders its queues on the device,
# and the test driver runs a queue's work only once the events it waits
# on are signalled, so a missing wait reads stale bytes. Queues of
# immediate command lists; t/levelzero/queues_regular.sh: regular ones.
if [ -z "${T_SRCDIR:-}" ]; then
	echo "1..0 # SKIP T_SRCDIR is not set (run through make check)"
	exit 0
fi
exec sh "$T_SRCDIR/levelzero/ops.sh" queues graphs trace
