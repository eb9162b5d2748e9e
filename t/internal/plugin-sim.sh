#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# plugin-sim.sh: builds examples/plugin-sim the way a vendor would, out of
# tree with its own Makefile against this build (a wafer.pc pointing at
# the source headers, as t/internal/plugin-skeleton.sh makes), then runs
# on it what wafer-conformance runs with its description (sim.backend):
# the plugin-ABI suite, and t/api/programs, which must run its program
# tests on sim's own format (sim-c, named by the plugin), not skip them.
set -u

if [ -z "${T_BUILDDIR:-}" ] || [ -z "${T_SRCDIR:-}" ]; then
	echo "Bail out! T_BUILDDIR is not set (run through make check)"
	exit 1
fi
# shellcheck source=t/tap.sh
. "$T_SRCDIR/tap.sh"
top_srcdir=$(cd "$T_SRCDIR/.." && pwd)
top_builddir=$(cd "$T_BUILDDIR/.." && pwd)
for tool in "${CC:-cc}" "${PKG_CONFIG:-pkg-config}" "${MAKE_PROGRAM:-make}"; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "1..0 # SKIP $tool not found on this machine (needed to build the sim example as a vendor would)"
		exit 0
	}
done
tap_tmpdir wafer-sim
unset MAKEFLAGS MFLAGS MAKELEVEL
unset WAFER_BACKEND WAFER_CONFIG WAFER_CHANNEL WAFER_MEMORY WAFER_LOG

mkdir -p "$tmp/pkgconfig"
sed -e "s|^includedir=.*|includedir=$top_srcdir/include|" \
    -e "s|^libdir=.*|libdir=$top_builddir/.libs|" \
    "$top_builddir/wafer.pc" >"$tmp/pkgconfig/wafer.pc"
cp -R "$top_srcdir/examples/plugin-sim" "$tmp/sim"
chmod -R u+w "$tmp/sim"   # distcheck's source tree is read-only
rm -f "$tmp/sim/sim.so"
build() {
	PKG_CONFIG_PATH=$tmp/pkgconfig "${MAKE_PROGRAM:-make}" -s -C "$tmp/sim" \
		CC="${CC:-cc}" CFLAGS="-O2 -Werror ${SANITIZER_FLAGS:-}" \
		>"$tmp/build.log" 2>&1
}
tap_show="$tmp/build.log"
check "make builds sim.so (-Werror)" build
[ -f "$tmp/sim/sim.so" ] || { echo "1..$n"; exit 1; }

# passes FILE: the TAP in FILE has points and none failed.
passes() { grep -q '^ok' "$1" && ! grep -q '^not ok' "$1"; }
has() { grep -q "$2" "$1"; }

# The plugin-ABI suite, with sim's description.
WAFER_PLUGIN_PATH=$tmp/sim${WAFER_PLUGIN_PATH:+:$WAFER_PLUGIN_PATH}
export WAFER_PLUGIN_PATH
"$T_BUILDDIR/abi/abi" "$tmp/sim/sim.backend" >"$tmp/abi.out" 2>&1
tap_show="$tmp/abi.out"
check "the plugin-ABI suite passes sim" passes "$tmp/abi.out"
for want in '^ok [0-9]* - program_load of .*/kernels.c' \
	'^ok [0-9]* -   ... y = 2x + y for all' \
	'^ok [0-9]* -   ... every vendor format program_formats lists is named' \
	'^ok [0-9]* - copy_peer from device 1 to device 0'; do
	check "abi: $want" has "$tmp/abi.out" "$want"
done

# t/api/programs on sim, its sim-c source from the description.
WAFER_BACKEND=sim WAFER_ABI_DESCRIPTION=$tmp/sim/sim.backend \
	"$T_BUILDDIR/api/programs" >"$tmp/programs.out" 2>&1
tap_show="$tmp/programs.out"
check "t/api/programs passes on sim" passes "$tmp/programs.out"
for want in '^# sim-c: taken' '^ok [0-9]* - sim: sim-c program on mpsc' \
	'^ok [0-9]* - second process: runs' '^ok [0-9]* -   ... compiling nothing' \
	'^ok [0-9]* - a compile error: WAFER_ERROR_BUILD'; do
	check "programs: $want" has "$tmp/programs.out" "$want"
done
echo "1..$n"
exit $failed
