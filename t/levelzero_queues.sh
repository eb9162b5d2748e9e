#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# levelzero_queues.sh: t/queues (several queues of a client, events, host
# callbacks) on the Level Zero test driver, as t/levelzero_ops.sh runs
# t/ops. The plugin has no events group, so this is the suite on a
# backend whose queues wafer orders on the host.
if [ -z "${T_SRCDIR:-}" ]; then
	echo "1..0 # SKIP T_SRCDIR is not set (run through make check)"
	exit 0
fi
exec sh "$T_SRCDIR/levelzero_ops.sh" queues
