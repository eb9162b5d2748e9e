#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# queues.sh: t/api/queues (several queues of a client, events, host
# callbacks) on the Level Zero test driver, as t/levelzero/ops.sh runs
# t/api/ops. The plugin has no events group, so this is the suite on a
# backend whose queues wafer orders on the host.
if [ -z "${T_SRCDIR:-}" ]; then
	echo "1..0 # SKIP T_SRCDIR is not set (run through make check)"
	exit 0
fi
exec sh "$T_SRCDIR/levelzero/ops.sh" queues
