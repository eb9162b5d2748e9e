#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# levelzero_dlpack.sh: t/api/dlpack (DLPack exchange, kDLOneAPI) on the Level
# Zero plugin over the test driver, as levelzero_ops.sh runs t/api/ops.
if [ -z "${T_SRCDIR:-}" ]; then
	echo "1..0 # SKIP T_SRCDIR is not set (run through make check)"
	exit 0
fi
exec sh "$T_SRCDIR/levelzero/ops.sh" dlpack
