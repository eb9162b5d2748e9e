#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# dtypes-check.sh: float64, int32, int64 and uint8 on a real NVIDIA GPU, in
# a minute (the whole suite is dev/gpu-check.sh). Run from the source
# tree after a build in build/ (or name the build directory):
#
#   sh dev/dtypes-check.sh [BUILD_DIR]
#
# It prints, and expects:
#   - wafer-info's "computes in:" line for cuda:0, naming float64 int32
#     int64 uint8;
#   - t/api/ops_dtypes on cuda: every point "ok", none skipped (each
#     operation against a host reference, cast between every pair);
#   - t/cuda/plugin --real's matmul points for f64: each variant (tile64,
#     and cublas: dgemm) against a host product, 9 points a variant, all
#     ok;
#   - compute-sanitizer memcheck over t/api/ops_dtypes, 0 errors (when
#     compute-sanitizer is on the PATH or in /usr/local/cuda/bin).
# Exit status 0 when all of it holds.
set -u
build=${1:-build}
cd "$build" || exit 1
make -s t/api/ops_dtypes t/cuda/plugin >/dev/null || exit 1
export WAFER_BACKEND=cuda
rc=0

line=$(./uninstalled tools/wafer-info 2>&1 | grep 'computes in:' | head -1)
echo "wafer-info: $line"
for d in float64 int32 int64 uint8; do
	case $line in
	*" $d"*) ;;
	*) echo "FAIL: cuda does not compute in $d"; rc=1 ;;
	esac
done

out=$(./uninstalled t/api/ops_dtypes 2>&1)
plan=$(printf '%s\n' "$out" | grep -E '^1\.\.[0-9]+' | head -1)
bad=$(printf '%s\n' "$out" | grep -c '^not ok')
skipped=$(printf '%s\n' "$out" | grep -c '# SKIP')
echo "t/api/ops_dtypes on cuda: plan $plan, $bad failed, $skipped skipped"
printf '%s\n' "$out" | grep -A3 '^not ok' | head -40
[ "$bad" = 0 ] && [ -n "$plan" ] || rc=1
[ "$skipped" = 0 ] || { echo "FAIL: points skipped on cuda"; rc=1; }

# Every float64 matmul variant by name (tile64, and cublas: dgemm)
# through the plugin's ABI, against a host product.
mout=$(./libtool --mode=execute t/cuda/plugin --real 2>&1 | grep '^[a-z ]*ok.* - matmul f64 ')
nv=$(printf '%s\n' "$mout" | grep -c '^ok')
nb=$(printf '%s\n' "$mout" | grep -c '^not ok')
echo "t/cuda/plugin --real, matmul f64: $nv ok, $nb not ok (variants: $(printf '%s\n' "$mout" | awk '{print $6}' | sort -u | tr '\n' ' '))"
printf '%s\n' "$mout" | grep '^not ok' | head
{ [ "$nb" = 0 ] && [ "$nv" -gt 0 ]; } || rc=1

san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$san" ]; then
	sout=$(WAFER_MEMORY=direct ./libtool --mode=execute "$san" --tool memcheck \
		--report-api-errors no t/api/ops_dtypes 2>&1 | grep 'ERROR SUMMARY')
	echo "memcheck t/api/ops_dtypes: $sout"
	case $sout in *" 0 errors"*) ;; *) rc=1 ;; esac
else
	echo "compute-sanitizer not found: no memcheck"
fi
[ $rc = 0 ] && echo "dtypes-check: PASS" || echo "dtypes-check: FAIL"
exit $rc
