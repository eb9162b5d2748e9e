#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# levelzero_ops.sh: t/api/ops, the backend-neutral check of every operation
# of ops.h against host references, on the levelzero plugin and the test
# driver (t/standins/levelzero/driver.c). The driver runs the kernels by emulating
# kernels.cl, out of order between barriers and only when the host
# synchronises, so the values t/api/ops reads back are what the plugin's host
# code — its arguments, launch shapes, barriers and syncs — makes of them.
# One more test point at the end: the driver saw no call a real driver
# would refuse (it writes them to FAKEZE_VIOLATIONS). With an argument,
# the same for that backend-neutral test instead (levelzero_programs.sh).
set -u
test=${1:-ops}
if [ -z "${T_BUILDDIR:-}" ]; then
	echo "1..0 # SKIP T_BUILDDIR is not set (run through make check)"
	exit 0
fi
violations="$T_BUILDDIR/levelzero_$test.violations"
rm -f "$violations"
ZE_ENABLE_ALT_DRIVERS="$T_BUILDDIR/levelzero/.libs/fakeze.so"
WAFER_BACKEND=levelzero
FAKEZE_VIOLATIONS="$violations"
export ZE_ENABLE_ALT_DRIVERS WAFER_BACKEND FAKEZE_VIOLATIONS
unset FAKEZE_DEVICES FAKEZE_NO_IMMEDIATE FAKEZE_NO_VM FAKEZE_BUILD_FAIL \
	FAKEZE_ORDER FAKEZE_MEMORY FAKEZE_MAX_GROUPS

out=$("$T_BUILDDIR/api/$test")
status=$?
# t/api/ops's own plan goes; the plan after the extra point replaces it.
printf '%s\n' "$out" | grep -v '^1\.\.[0-9]*'
n=$(printf '%s\n' "$out" | grep -c '^\(not \)\{0,1\}ok ')
n=$((n + 1))
if [ -s "$violations" ]; then
	sed 's/^/# violation: /' "$violations" | head -n 20
	echo "not ok $n - the test driver saw no call a real driver would refuse"
else
	echo "ok $n - the test driver saw no call a real driver would refuse"
fi
echo "1..$n"
rm -f "$violations"
exit $status
