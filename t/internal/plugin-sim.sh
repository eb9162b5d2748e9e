#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# plugin-sim.sh: builds examples/plugin-sim the way a vendor would, out of
# tree with its own Makefile against this build (a wafer.pc pointing at
# the source headers, as t/internal/plugin-skeleton.sh makes), then runs
# on it what wafer-conformance runs with its description (sim.backend):
# the plugin-ABI suite, and t/api/programs, which must run its program
# tests on sim's own format (sim-c, named by the plugin), not skip them.
#
# Output is TAP without test numbers; the plan comes last.

n=0
pass() { n=$((n + 1)); echo "ok $n - $*"; }
fail() { n=$((n + 1)); echo "not ok $n - $*"; failed=1; }
diag() { echo "$*" | sed 's/^/# /'; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
bail_out() { echo "Bail out! $*"; exit 1; }
failed=0

[ -n "${T_SRCDIR:-}" ] && [ -n "${T_BUILDDIR:-}" ] ||
	bail_out "T_SRCDIR/T_BUILDDIR not set (run through make check)"
top_srcdir=$(cd "$T_SRCDIR/.." && pwd)
top_builddir=$(cd "$T_BUILDDIR/.." && pwd)
CC=${CC:-cc}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
MAKE_PROGRAM=${MAKE_PROGRAM:-make}
for tool in "$CC" "$PKG_CONFIG" "$MAKE_PROGRAM"; do
	command -v "$tool" >/dev/null 2>&1 ||
		skip_all "$tool not found on this machine (needed to build the sim example as a vendor would)"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wafer-sim.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
unset MAKEFLAGS MFLAGS MAKELEVEL
unset WAFER_BACKEND WAFER_CONFIG WAFER_CHANNEL WAFER_MEMORY WAFER_LOG

mkdir -p "$tmp/pkgconfig"
sed -e "s|^includedir=.*|includedir=$top_srcdir/include|" \
    -e "s|^libdir=.*|libdir=$top_builddir/.libs|" \
    "$top_builddir/wafer.pc" >"$tmp/pkgconfig/wafer.pc"
cp -R "$top_srcdir/examples/plugin-sim" "$tmp/sim"
chmod -R u+w "$tmp/sim"   # distcheck's source tree is read-only
rm -f "$tmp/sim/sim.so"
if PKG_CONFIG_PATH=$tmp/pkgconfig "$MAKE_PROGRAM" -C "$tmp/sim" CC="$CC" \
	CFLAGS="-O2 -Werror ${SANITIZER_FLAGS:-}" >"$tmp/build.log" 2>&1; then
	pass "make builds sim.so (-Werror)"
else
	fail "make builds sim.so (-Werror)"
	diag "$(cat "$tmp/build.log")"
	echo "1..$n"
	exit 1
fi

# The plugin-ABI suite, with sim's description.
WAFER_PLUGIN_PATH=$tmp/sim${WAFER_PLUGIN_PATH:+:$WAFER_PLUGIN_PATH}
export WAFER_PLUGIN_PATH
"$T_BUILDDIR/abi/abi" "$tmp/sim/sim.backend" >"$tmp/abi.out" 2>&1
status=$?
if [ $status -eq 0 ] && ! grep -q '^not ok' "$tmp/abi.out"; then
	pass "the plugin-ABI suite passes sim ($(grep -c '^ok' "$tmp/abi.out") points)"
else
	fail "the plugin-ABI suite passes sim (status $status)"
	diag "$(grep -A3 '^not ok' "$tmp/abi.out")"
fi
for want in 'ok [0-9]* - program_load of .*/kernels.c' \
	'ok [0-9]* -   ... y = 2x + y for all' \
	'ok [0-9]* -   ... every vendor format program_formats lists is named' \
	'ok [0-9]* - copy_peer from device 1 to device 0'; do
	if grep -q "^$want" "$tmp/abi.out"; then
		pass "abi: $want"
	else
		fail "abi: $want"
	fi
done

# t/api/programs on sim, its sim-c source from the description.
WAFER_BACKEND=sim WAFER_ABI_DESCRIPTION=$tmp/sim/sim.backend \
	"$T_BUILDDIR/api/programs" >"$tmp/programs.out" 2>&1
status=$?
if [ $status -eq 0 ] && ! grep -q '^not ok' "$tmp/programs.out"; then
	pass "t/api/programs passes on sim ($(grep -c '^ok' "$tmp/programs.out") points)"
else
	fail "t/api/programs passes on sim (status $status)"
	diag "$(grep -A3 '^not ok' "$tmp/programs.out")"
fi
for want in '# sim-c: taken' 'ok [0-9]* - sim: sim-c program on mpsc' \
	'ok [0-9]* - second process: runs' 'ok [0-9]* -   ... compiling nothing' \
	'ok [0-9]* - a compile error: WAFER_ERROR_BUILD'; do
	if grep -q "^$want" "$tmp/programs.out"; then
		pass "programs: $want"
	else
		fail "programs: $want"
	fi
done
echo "1..$n"
[ $failed -eq 0 ]
