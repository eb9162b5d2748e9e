#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# levelzero_intercept.sh: t/levelzero/plugin again, with the Level Zero
# loader's intercept layer on (ZE_ENABLE_LOADER_INTERCEPT=1), as it is on
# a machine with more than one Level Zero driver (an Intel GPU and an NPU).
# The loader then wraps every handle the driver returns in an object of
# its own and unwraps it on the way back; the plugin must work the same.
set -u
if [ -z "${T_BUILDDIR:-}" ]; then
	echo "1..0 # SKIP T_BUILDDIR is not set (run through make check)"
	exit 0
fi
ZE_ENABLE_LOADER_INTERCEPT=1
export ZE_ENABLE_LOADER_INTERCEPT
exec "$T_BUILDDIR/levelzero/plugin"
