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
# would refuse (it writes them to FAKEZE_VIOLATIONS). With arguments,
# the same for those backend-neutral tests instead, one after the other
# (levelzero_programs.sh); with --regular first, on queues of regular
# command lists (`immediate = no`) rather than immediate ones.
set -u
config=
if [ "${1:-}" = --regular ]; then
	config=regular
	shift
fi
[ $# -eq 0 ] && set -- ops
if [ -z "${T_BUILDDIR:-}" ]; then
	echo "1..0 # SKIP T_BUILDDIR is not set (run through make check)"
	exit 0
fi
name=$(echo "$*" | tr ' ' _)${config:+_$config}
violations="$T_BUILDDIR/levelzero_$name.violations"
rm -f "$violations"
ZE_ENABLE_ALT_DRIVERS="$T_BUILDDIR/levelzero/.libs/fakeze.so"
WAFER_BACKEND=levelzero
FAKEZE_VIOLATIONS="$violations"
export ZE_ENABLE_ALT_DRIVERS WAFER_BACKEND FAKEZE_VIOLATIONS
unset FAKEZE_DEVICES FAKEZE_NO_IMMEDIATE FAKEZE_NO_VM FAKEZE_BUILD_FAIL \
	FAKEZE_ORDER FAKEZE_MEMORY FAKEZE_MAX_GROUPS
if [ -n "$config" ]; then
	WAFER_CONFIG="$T_BUILDDIR/levelzero_$name.conf"
	printf '[levelzero]\nimmediate = no\n' >"$WAFER_CONFIG"
	export WAFER_CONFIG
fi

# Each test's own plan goes; its points are numbered on from the last
# test's, and the plan after the extra point replaces them.
n=0
status=0
for test in "$@"; do
	out=$("$T_BUILDDIR/api/$test")
	s=$?
	[ $s -ne 0 ] && status=$s
	printf '%s\n' "$out" | grep -v '^1\.\.[0-9]*' |
		awk -v n="$n" '/^(not )?ok [0-9]+/ {
			sub(/ok [0-9]+/, "ok " (++n))
		} { print }'
	n=$((n + $(printf '%s\n' "$out" | grep -c '^\(not \)\{0,1\}ok ')))
done
n=$((n + 1))
if [ -s "$violations" ]; then
	sed 's/^/# violation: /' "$violations" | head -n 20
	echo "not ok $n - the test driver saw no call a real driver would refuse"
else
	echo "ok $n - the test driver saw no call a real driver would refuse"
fi
echo "1..$n"
rm -f "$violations" ${config:+"$WAFER_CONFIG"}
exit $status
