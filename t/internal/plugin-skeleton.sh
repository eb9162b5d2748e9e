#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# plugin-skeleton.sh: builds examples/plugin-skeleton the way a vendor
# would, out of tree, against this build: a wafer.pc made from the build
# tree's one (headers from the source tree, plugindir a temporary
# directory) so that `pkg-config --cflags wafer` and `--variable=plugindir`
# work unchanged, then the skeleton's own Makefile. It checks that only
# wafer_plugin_query is exported, drives the plugin through dlopen with a
# stand-in for the core (t/internal/plugin-skeleton-dlopen.c), then loads it through
# the real core: a client program on every channel
# (t/internal/plugin-skeleton-client.c, linked with `pkg-config --libs wafer`) and
# tools/wafer-info, both with --backend and with a conf.d drop-in.
#
# Output is TAP without test numbers; the plan comes last.

n=0
pass() { n=$((n + 1)); echo "ok $n - $*"; }
fail() { n=$((n + 1)); echo "not ok $n - $*"; failed=1; }
diag() { echo "$*" | sed 's/^/# /'; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
bail_out() { echo "Bail out! $*"; exit 1; }
failed=0

# Where the trees are: from make check's environment (t/local.mk), or
# guessed for a run by hand from the build directory.
if [ -n "$T_SRCDIR" ] && [ -n "$T_BUILDDIR" ]; then
	top_srcdir=$(cd "$T_SRCDIR/.." && pwd)
	top_builddir=$(cd "$T_BUILDDIR/.." && pwd)
else
	top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
	top_builddir=$(pwd)
fi
skeleton_src=$top_srcdir/examples/plugin-skeleton

CC=${CC:-cc}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
MAKE_PROGRAM=${MAKE_PROGRAM:-make}
# What a vendor's machine needs besides this tree; a machine without one
# of them genuinely cannot run this, so the test says which and skips.
for tool in "$CC" "$PKG_CONFIG" "$MAKE_PROGRAM" nm sed; do
	command -v "$tool" >/dev/null 2>&1 ||
		skip_all "$tool not found on this machine (needed to build the skeleton as a vendor would)"
done
# What this tree ships or configure makes: missing is a failure.
[ -f "$top_builddir/wafer.pc" ] || bail_out "no wafer.pc in $top_builddir (configure makes it)"
for f in skeleton.c skeleton.map Makefile; do
	[ -r "$skeleton_src/$f" ] || bail_out "cannot read $skeleton_src/$f (shipped in the tarball)"
done
for f in plugin-skeleton-dlopen.c plugin-skeleton-client.c; do
	[ -r "$top_srcdir/t/internal/$f" ] || bail_out "cannot read $top_srcdir/t/internal/$f (shipped in the tarball)"
done

# drive PREFIX WHAT PROGRAM ARG: runs a built driver, numbers its TAP
# lines (printed without numbers) into this test's sequence with PREFIX
# before each name, and fails unless WHAT exits with status 0.
drive() {
	"$3" "$4" >"$3.out" 2>&1
	status=$?
	while IFS= read -r line; do
		case $line in
		"ok - "*) pass "$1: ${line#ok - }" ;;
		"not ok - "*) fail "$1: ${line#not ok - }" ;;
		"#"*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done <"$3.out"
	[ "$status" -eq 0 ] || fail "$2 exits with status 0 (got $status)"
}

# says NAME FILE PATTERN...: one point: the command before exited with
# status 0 ($status) and FILE, its output, has a line matching each
# PATTERN; on failure, FILE is shown.
says() {
	name=$1 file=$2 right=$status
	shift 2
	for pattern in "$@"; do
		grep -q "$pattern" "$file" || right=1
	done
	if [ "$right" -eq 0 ]; then
		pass "$name"
	else
		fail "$name (exit $status)"
		diag "$(cat "$file")"
	fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wafer-skeleton.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

# The make running this test must not leak its flags (jobserver, -s)
# into the vendor's make.
unset MAKEFLAGS MFLAGS MAKELEVEL

#--- pkg-config, as a vendor uses it -----------------------------------------
mkdir -p "$tmp/pkgconfig" "$tmp/plugins"
sed -e "s|^includedir=.*|includedir=$top_srcdir/include|" \
    -e "s|^libdir=.*|libdir=$top_builddir/.libs|" \
    -e "s|^plugindir=.*|plugindir=$tmp/plugins|" \
    "$top_builddir/wafer.pc" >"$tmp/pkgconfig/wafer.pc"
PKG_CONFIG_PATH=$tmp/pkgconfig
export PKG_CONFIG_PATH
cflags=$("$PKG_CONFIG" --cflags wafer)
plugindir=$("$PKG_CONFIG" --variable=plugindir wafer)
case " $cflags " in
*" -I$top_srcdir/include "*) pass "pkg-config --cflags wafer points at the source headers" ;;
*) fail "pkg-config --cflags wafer points at the source headers"
   diag "got: $cflags" ;;
esac
if [ "$plugindir" = "$tmp/plugins" ]; then
	pass "pkg-config --variable=plugindir wafer"
else
	fail "pkg-config --variable=plugindir wafer"
	diag "got: $plugindir"
fi

#--- build with the skeleton's own Makefile -----------------------------------
cp -R "$skeleton_src" "$tmp/skeleton"
chmod -R u+w "$tmp/skeleton"   # distcheck's source tree is read-only
rm -f "$tmp/skeleton/skeleton.so"
if "$MAKE_PROGRAM" -C "$tmp/skeleton" CC="$CC" \
	CFLAGS="-O2 -Werror ${SANITIZER_FLAGS:-}" >"$tmp/build.log" 2>&1; then
	pass "make builds skeleton.so (-Werror)"
else
	fail "make builds skeleton.so (-Werror)"
fi
diag "$(cat "$tmp/build.log")"
plugin=$tmp/skeleton/skeleton.so

#--- exports --------------------------------------------------------------------
if [ -f "$plugin" ]; then
	exports=$(nm -D --defined-only "$plugin" | awk 'NF >= 3 { print $3 }' | sort)
	if [ "$exports" = "wafer_plugin_query" ]; then
		pass "nm -D --defined-only lists only wafer_plugin_query"
	else
		fail "nm -D --defined-only lists only wafer_plugin_query"
		diag "exports: $exports"
	fi
else
	fail "nm -D --defined-only lists only wafer_plugin_query"
fi

#--- make install into plugindir -------------------------------------------------
if "$MAKE_PROGRAM" -C "$tmp/skeleton" install >>"$tmp/build.log" 2>&1 &&
   [ -f "$tmp/plugins/skeleton.so" ]; then
	pass "make install puts skeleton.so into plugindir"
else
	fail "make install puts skeleton.so into plugindir"
	diag "$(tail -5 "$tmp/build.log")"
fi

#--- dlopen: the core's side played by a small driver --------------------------
# In a sanitizer build everything loaded into one process must carry the
# same instrumentation, as it would for a vendor testing against it.
if "$CC" -std=c11 -Wall -Wextra -Werror $cflags ${SANITIZER_FLAGS:-} \
	-o "$tmp/dlopen-driver" "$top_srcdir/t/internal/plugin-skeleton-dlopen.c" \
	-ldl >"$tmp/driver.log" 2>&1; then
	pass "the dlopen driver builds"
	drive dlopen "the dlopen driver" "$tmp/dlopen-driver" \
		"$tmp/plugins/skeleton.so"
else
	fail "the dlopen driver builds"
	diag "$(cat "$tmp/driver.log")"
fi

# Settings a vendor may have exported for the suite must not steer the
# checks below; each names what it wants.
unset WAFER_BACKEND WAFER_CONFIG WAFER_CHANNEL WAFER_MEMORY WAFER_LOG

#--- through the core: a client program ---------------------------------------
libs=$("$PKG_CONFIG" --libs wafer)
if "$CC" -std=c11 -Wall -Wextra -Werror $cflags ${SANITIZER_FLAGS:-} \
	-o "$tmp/client" "$top_srcdir/t/internal/plugin-skeleton-client.c" \
	$libs -Wl,-rpath,"$top_builddir/.libs" >"$tmp/client.log" 2>&1; then
	pass "the client program builds with pkg-config --cflags --libs wafer"
	drive core "the client program" "$tmp/client" "$tmp/plugins"
else
	fail "the client program builds with pkg-config --cflags --libs wafer"
	diag "$(cat "$tmp/client.log")"
fi

#--- through the core: wafer-info -----------------------------------------------
wafer_info=$top_builddir/tools/wafer-info
if [ -x "$wafer_info" ]; then
	WAFER_PLUGIN_PATH=$tmp/plugins "$wafer_info" --backend skeleton \
		>"$tmp/info.out" 2>&1
	status=$?
	says "wafer-info --backend skeleton: accepted, 1 device, from plugindir" \
		"$tmp/info.out" "skeleton: accepted, 1 device" \
		"path: *$tmp/plugins/skeleton.so"

	# The packaging path: a conf.d drop-in names the backend and sets
	# the plugin's own option; the cpu plugin of this build stays the
	# fallback.
	mkdir -p "$tmp/etc/conf.d"
	cp "$top_srcdir/etc/wafer.conf" "$tmp/etc/wafer.conf"
	cat >"$tmp/etc/conf.d/skeleton.conf" <<-'EOF'
	# Installed by the (imaginary) wafer-skeleton package.
	[core]
	backend = skeleton, cpu

	[skeleton]
	memory = 2147483648
	EOF
	WAFER_SYSCONFDIR=$tmp/etc \
	WAFER_PLUGIN_PATH=$tmp/plugins:$top_builddir/plugins/cpu/.libs \
		"$wafer_info" >"$tmp/info2.out" 2>&1
	status=$?
	says "conf.d drop-in selects skeleton and passes [skeleton] memory" \
		"$tmp/info2.out" "Default device: skeleton:0" "memory: *2.0 GiB"
else
	fail "tools/wafer-info is built"
fi

echo "1..$n"
exit 0
