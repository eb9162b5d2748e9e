#!/bin/bash
# wafer — SPDX-License-Identifier: MIT
#
# dev/package-check.sh TARBALL OUTDIR: the Debian packages of a release
# tarball, checked (./quickstart check's packaging stage; README,
# "Packaging"). In OUTDIR:
#   1. builds the binary packages from TARBALL and this tree's debian/
#      (DEB_BUILD_OPTIONS=nocheck: distcheck ran the suite; the profile
#      pkg.wafer.nocuda when there is no CUDA toolkit);
#   2. lintian on them: an error fails, warnings are README.source's;
#   3. make abi-check in the package's build tree (abidiff against abi/);
#   4. puts the packages where they run: unpacked with dpkg -x into
#      OUTDIR/root (nothing on the machine changes), or, with
#      WAFER_CI_INSTALL_DEBS=1 as root (CI's throwaway machine), installed
#      with apt-get and purged at the end;
#   5. wafer-conformance --backend cpu from the installed files, its logs
#      in OUTDIR/conformance/t/*/*.log ("PASS: t/NAME N - ...");
#   6. the shipped examples built with pkg-config against them (hello
#      run), the plugin skeleton and the sim example plugin with their
#      Makefiles, and the skeleton again for ABI 1.1
#      (-DWAFER_PLUGIN_ABI_MINOR=1) and declaring ABI 1.99;
#   7. wafer-conformance on each of those out-of-tree builds (exit 0):
#      the skeleton; sim with its description (programs in its own
#      format, named, and peer copy, which must run, not skip); the 1.1
#      skeleton, judged by 1.1's rules; the 1.99 one, accepted with the
#      loader's warning and judged by the core's minor.
# Each step appends "NAME PASS|FAIL" to OUTDIR/points; exits 1 when one
# failed. Logs: OUTDIR/*.log.
set -u
[ $# -eq 2 ] || { echo "usage: dev/package-check.sh TARBALL OUTDIR" >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
tarball=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
[ -f "$tarball" ] || { echo "package-check: $tarball: no such file" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2
failed=0
point() {
	echo "$1 $2" >>"$out/points"
	printf '    %-28s %s\n' "$1" "$2"
	[ "$2" = PASS ] || failed=1
}

version=$(basename "$tarball" .tar.xz)
version=${version#wafer-}
src=$out/wafer-$version
tar -C "$out" -xf "$tarball" && cp -a "$top/debian" "$src/" || {
	point build FAIL
	exit 1
}

# 1. Build.
profile=
[ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ] || profile=-Ppkg.wafer.nocuda
if (cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc 2>/dev/null || echo 2)" \
	dpkg-buildpackage -us -uc -b $profile) >"$out/build.log" 2>&1; then
	point dpkg-buildpackage PASS
else
	point dpkg-buildpackage FAIL
	tail -30 "$out/build.log"
	exit 1
fi
# "rm: cannot remove 'core'" and its like: configure in the source tree
# must be quiet (no folder of the tree is named core).
if grep -q "^rm: cannot remove" "$out/build.log"; then
	point quiet-configure FAIL
	grep "^rm: cannot remove" "$out/build.log" | sort | uniq -c
else
	point quiet-configure PASS
fi
debs=$(ls "$out"/*.deb | grep -v -- '-dbgsym_')

# 2. lintian.
changes=$(ls "$out"/wafer_*.changes | head -1)
if lintian --fail-on error --info "$changes" >"$out/lintian.log" 2>&1; then
	point lintian PASS
else
	point lintian FAIL
fi
grep -E '^[EWI]: ' "$out/lintian.log" | cut -d' ' -f1 | sort | uniq -c |
	sed 's/^ */      lintian /'
grep -E '^E: ' "$out/lintian.log" | head -20

# 3. The ABI, against abi/ of the tarball (the tree's baselines).
if make -C "$src" abi-check >"$out/abi-check.log" 2>&1; then
	point abi-check PASS
else
	point abi-check FAIL
	tail -30 "$out/abi-check.log"
fi
grep '^ABI check' "$out/abi-check.log" | sed 's/^/      /'

# 4. Installed files.
if [ "${WAFER_CI_INSTALL_DEBS:-0}" = 1 ] && [ "$(id -u)" = 0 ]; then
	root=
	# shellcheck disable=SC2086
	if DEBIAN_FRONTEND=noninteractive apt-get install -y -q $debs >"$out/install.log" 2>&1; then
		point apt-get-install PASS
	else
		point apt-get-install FAIL
		tail -20 "$out/install.log"
		exit 1
	fi
	runner=/usr/bin/wafer-conformance
else
	root=$out/root
	mkdir -p "$root"
	ok=PASS
	for d in $debs; do
		dpkg -x "$d" "$root" || ok=FAIL
	done
	point dpkg-x $ok
	runner=$root/usr/bin/wafer-conformance
fi

# 5. The conformance suite from the installed files, on cpu.
"$runner" --backend cpu --log-dir "$out/conformance" >"$out/conformance.tap" 2>&1
rc=$?
tail -1 "$out/conformance.tap" | sed 's/^/      /'
[ $rc -eq 0 ] || grep -E '^not ok' "$out/conformance.tap"
[ -n "$(ls "$out"/conformance/t/*/*.log 2>/dev/null)" ] || point wafer-conformance FAIL

# 6. The examples libwafer-dev ships, built with pkg-config against the
# installed files (hello also run), and the plugin skeleton with its own
# Makefile.
mkdir -p "$out/example"
ex=$root/usr/share/doc/wafer/examples
if [ -n "$root" ]; then
	multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
	pkgconfig="env PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root/usr/lib/$multiarch/pkgconfig pkg-config"
	run_env="LD_LIBRARY_PATH=$root/usr/lib/$multiarch WAFER_PLUGIN_PATH=$root/usr/lib/$multiarch/wafer/plugins WAFER_SYSCONFDIR=$root/etc/wafer"
else
	pkgconfig=pkg-config
	run_env=
fi
flags=$($pkgconfig --cflags --libs wafer)
ok=PASS
for name in hello mlp custom-kernel; do
	# shellcheck disable=SC2086
	gcc -o "$out/example/$name" "$ex/$name.c" $flags -lm >>"$out/example.log" 2>&1 || ok=FAIL
done
# shellcheck disable=SC2086
env $run_env WAFER_BACKEND=cpu "$out/example/hello" >>"$out/example.log" 2>&1 || ok=FAIL
point examples-pkg-config $ok
shown=$ok
cp -r "$ex/plugin-skeleton" "$out/example/skeleton" &&
	make -C "$out/example/skeleton" PKG_CONFIG="$pkgconfig" >>"$out/example.log" 2>&1 &&
	[ -f "$out/example/skeleton/skeleton.so" ] && ok=PASS || ok=FAIL
point plugin-skeleton $ok
[ "$shown$ok" = PASSPASS ] || tail -10 "$out/example.log"
skeleton_ok=$ok
# The fuller example: programs in a format of its own, its name, peer
# copy.
cp -r "$ex/plugin-sim" "$out/example/sim" &&
	make -C "$out/example/sim" PKG_CONFIG="$pkgconfig" >>"$out/example.log" 2>&1 &&
	[ -f "$out/example/sim/sim.so" ] && sim_ok=PASS || sim_ok=FAIL
point plugin-sim $sim_ok
# The skeleton for ABI 1.1, through the header's own switch (no old
# headers kept anywhere), and declaring a minor newer than the core's.
cp -r "$ex/plugin-skeleton" "$out/example/skeleton-1.1" &&
	make -C "$out/example/skeleton-1.1" PKG_CONFIG="$pkgconfig" \
		CPPFLAGS=-DWAFER_PLUGIN_ABI_MINOR=1 >>"$out/example.log" 2>&1 &&
	[ -f "$out/example/skeleton-1.1/skeleton.so" ] && old_ok=PASS || old_ok=FAIL
point plugin-skeleton-1.1 $old_ok
cp -r "$ex/plugin-skeleton" "$out/example/skeleton-1.99" &&
	sed -i 's/\.abi_minor = WAFER_PLUGIN_ABI_MINOR,/.abi_minor = 99,/' \
		"$out/example/skeleton-1.99/skeleton.c" &&
	grep -q '\.abi_minor = 99,' "$out/example/skeleton-1.99/skeleton.c" &&
	make -C "$out/example/skeleton-1.99" PKG_CONFIG="$pkgconfig" >>"$out/example.log" 2>&1 &&
	[ -f "$out/example/skeleton-1.99/skeleton.so" ] && new_ok=PASS || new_ok=FAIL
point plugin-skeleton-1.99 $new_ok
ok=$skeleton_ok

# 7. Plugins written outside the tree from the installed files alone
# pass the installed wafer-conformance: exit 0, with what they do not
# offer skipped (wafer-plugin(7), TESTING). conformance NAME DIR
# [ARGS...]: the run on the plugin built in DIR, its output in
# OUTDIR/conformance-NAME.tap; then each "grep" PATTERN that must be in
# it, given as --expect PATTERN.
conformance() {
	local name=$1 dir=$2 backend expect=() args=()
	shift 2
	backend=${name%%-*}
	while [ $# -gt 0 ]; do
		case $1 in
		--expect) expect+=("$2"); shift ;;
		*) args+=("$1") ;;
		esac
		shift
	done
	if [ "$ok" = PASS ]; then
		"$runner" --backend "$backend" --plugin-path "$dir" "${args[@]}" \
			--log-dir "$out/conformance-$name" >"$out/conformance-$name.tap" 2>&1 &&
			ok=PASS || ok=FAIL
		tail -1 "$out/conformance-$name.tap" | sed 's/^/      /'
		[ $ok = PASS ] || grep -E '^not ok|^    not ok' "$out/conformance-$name.tap" | head -20
		for pattern in "${expect[@]}"; do
			grep -q -e "$pattern" "$out/conformance-$name.tap" || {
				echo "      conformance-$name.tap lacks: $pattern"
				ok=FAIL
			}
		done
	fi
	point "wafer-conformance-$name" $ok
}
conformance skeleton "$out/example/skeleton"
ok=$sim_ok
conformance sim "$out/example/sim" --abi "$out/example/sim/sim.backend" \
	--expect '^# sim: names: *sim-c (program format 0x10001)' \
	--expect '^    ok [0-9]* - program_load of .*kernels.c' \
	--expect '^    # .*sim-c: taken' \
	--expect '^    ok [0-9]* - sim: sim-c program on mpsc' \
	--expect '^    ok [0-9]* - copy_peer from device 1 to device 0' \
	--expect '^ok [0-9]* - t/api/programs: [1-9][0-9]* passed'
ok=$old_ok
conformance skeleton-1.1 "$out/example/skeleton-1.1" \
	--expect '^# skeleton targets ABI 1.1: judged by ABI 1.1.s rules' \
	--expect 'SKIP programs: the plugin targets ABI 1.1 (programs came in ABI 1.2)' \
	--expect 'SKIP graphs: the plugin targets ABI 1.1 (graphs came in ABI 1.6)'
ok=$new_ok
conformance skeleton-1.99 "$out/example/skeleton-1.99" \
	--expect '^# skeleton: warning: built for ABI 1.99, newer than this core' \
	--expect '^# skeleton targets ABI 1.99, newer than this core.s 1.[0-9]*: judged by ABI 1.[0-9]*.s rules' \
	--expect 'abi_minor 99 is newer than this suite.s 1.[0-9]*: judged by ABI 1.[0-9]*.s rules'

if [ -z "$root" ]; then
	# shellcheck disable=SC2046
	DEBIAN_FRONTEND=noninteractive apt-get purge -y -q \
		$(for d in $debs; do dpkg-deb -f "$d" Package; done) >>"$out/install.log" 2>&1 ||
		point apt-get-purge FAIL
fi
[ $rc -eq 0 ] && [ $failed -eq 0 ]
