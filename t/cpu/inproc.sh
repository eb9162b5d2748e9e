#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# inproc.sh: the cpu plugin's in-process communicators. With `[cpu]
# devices = N` above 1 a communicator's ranks are clients of one process
# on cpu:0 .. cpu:N-1 (wafer_comm_open_group) and the in-process engine
# carries their collectives (plugins/cpu/comm_inproc.c):
#   - examples/mlp --data-parallel=2 and =4 train, each rank on its slice
#     of the batch with the gradients all-reduced, to the loss of one
#     process (within 1% at 200 steps: the sums are added in another order, a difference the training amplifies later, where it crosses a plateau);
#   - t/api/comm, the backend-neutral collectives test, on cpu with
#     devices = 4;
#   - with devices = 1, --data-parallel=2 fails saying how to get two.
# Skipped where the cpu plugin has no comm entries (built without MPI:
# the entries come with cpu-mpi.so).
set -u

if [ -z "${T_BUILDDIR:-}" ]; then
	echo "Bail out! T_BUILDDIR is not set (run through make check)"
	exit 1
fi
if [ "${WAFER_HAVE_MPI:-no}" != yes ]; then
	echo "1..0 # SKIP the cpu plugin has comm entries only with cpu-mpi.so (configured without MPI: ${WAFER_MPI_WHY:-unknown})"
	exit 0
fi
top=$T_BUILDDIR/..
mlp=$top/examples/mlp
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wafer-inproc.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset WAFER_LOG
WAFER_BACKEND=cpu
export WAFER_BACKEND

n=0
failed=0
point() { # point PASS NAME
	n=$((n + 1))
	if [ "$1" = 1 ]; then
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
	fi
}
comment() { sed 's/^/# /'; }
final_loss() { sed -n 's/^final loss \([0-9.]*\)$/\1/p' "$@"; }
devices() { printf '[cpu]\ndevices = %s\n' "$1" > "$tmp/devices-$1.conf"; echo "$tmp/devices-$1.conf"; }

"$top/uninstalled" "$mlp" --steps=200 > "$tmp/out" 2>&1
status=$?
comment < "$tmp/out"
want=$(final_loss "$tmp/out")
point $([ $status = 0 ] && [ -n "$want" ] && echo 1 || echo 0) \
	"examples/mlp, one rank: trains (final loss $want)"

for ranks in 2 4; do
	WAFER_CONFIG=$(devices $ranks) "$top/uninstalled" "$mlp" \
		--data-parallel=$ranks --steps=200 > "$tmp/out" 2>&1
	status=$?
	comment < "$tmp/out"
	got=$(final_loss "$tmp/out")
	close=$(awk -v a="$got" -v b="$want" 'BEGIN {
		d = a - b; if (d < 0) d = -d
		print (a != "" && b != "" && d <= 0.01 * b) ? 1 : 0 }')
	point $([ $status = 0 ] && [ "$close" = 1 ] &&
		grep -q "^data parallel: $ranks ranks in this process on cpu:0..$((ranks - 1))" "$tmp/out" &&
		echo 1 || echo 0) \
		"examples/mlp --data-parallel=$ranks on cpu, devices = $ranks: the loss of one rank, within 1% ($got vs $want)"
done

WAFER_CONFIG=$(devices 4) "$top/uninstalled" "$T_BUILDDIR/api/comm" > "$tmp/out" 2>&1
status=$?
bad=$(grep -c '^not ok' "$tmp/out")
passed=$(grep -c '^ok' "$tmp/out")
grep '^not ok' -A3 "$tmp/out" | comment
point $([ $status = 0 ] && [ "$bad" = 0 ] && echo 1 || echo 0) \
	"t/api/comm on cpu with devices = 4 ($passed passed, $bad failed)"

WAFER_CONFIG=$(devices 1) "$top/uninstalled" "$mlp" --data-parallel=2 \
	--steps=5 > "$tmp/out" 2>&1
status=$?
comment < "$tmp/out"
point $([ $status != 0 ] && grep -q 'devices = 2' "$tmp/out" && echo 1 || echo 0) \
	"examples/mlp --data-parallel=2 with one cpu device fails, naming [cpu] devices = 2"

echo "1..$n"
[ $failed = 0 ]
