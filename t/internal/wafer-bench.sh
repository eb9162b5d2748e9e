#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# wafer-bench.sh: the tool's face. No arguments is a usage error (status
# 2, the usage on stderr); compare says on stderr what it runs and how
# long is left, while stdout keeps only the result lines.
set -u
# shellcheck source=t/tap.sh
. "${T_SRCDIR:?is not set (run through make check)}/tap.sh"
tap_tool wafer-bench
echo "1..5"

"$tool" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ] && grep -q '^usage: wafer-bench' "$tmp/err" && [ ! -s "$tmp/out" ]; then
	echo "ok 1 - no arguments: status 2, the usage on stderr"
else
	echo "not ok 1 - no arguments: status 2, the usage on stderr (status $rc)"
fi

"$tool" compare --mib=1 --sizes=16,32 cpu >"$tmp/out" 2>"$tmp/err"
rc=$?
sed 's/^/# stderr: /' "$tmp/err"
if [ $rc -eq 0 ] && grep -q '^compare device=cpu ' "$tmp/out" &&
	! grep -qv '^compare ' "$tmp/out"; then
	echo "ok 2 - compare: stdout has only the result lines"
else
	echo "not ok 2 - compare: stdout has only the result lines (status $rc)"
	sed 's/^/# stdout: /' "$tmp/out"
fi
if grep -q '^wafer-bench compare: bandwidth on cpu$' "$tmp/err" &&
	grep -q '^wafer-bench compare: matmul n=32 on cpu ([0-9]* s so far, about [0-9]* s left)$' "$tmp/err"; then
	echo "ok 3 - compare: each step on stderr, with the time so far and an estimate of what is left"
else
	echo "not ok 3 - compare: each step on stderr, with the time so far and an estimate of what is left"
fi
if grep -q '^wafer-bench compare: done in [0-9]* s$' "$tmp/err"; then
	echo "ok 4 - compare: the total time at the end"
else
	echo "not ok 4 - compare: the total time at the end"
fi

# queues on cpu (small): the events line of each channel, with the best
# and the median of its rounds, and the dispatch line.
WAFER_BACKEND=cpu "$tool" queues 1 2 >"$tmp/out" 2>"$tmp/err"
rc=$?
sed 's/^/# stderr: /' "$tmp/err"
n=0
for channel in direct mutex mpsc; do
	grep -Eq "^events channel=$channel ns_per_pair=[0-9.]+ median_ns=[0-9.]+ core_ns_per_command=[0-9.]+$" "$tmp/out" && n=$((n + 1))
done
if [ $rc -eq 0 ] && [ $n -eq 3 ] &&
	grep -Eq '^dispatch_queue default_ns=[0-9.]+ second_queue_ns=[0-9.]+ vs_default=[0-9.]+ median_round_vs_default=[0-9.]+$' "$tmp/out"; then
	echo "ok 5 - queues: an events line for each channel and the dispatch line"
else
	echo "not ok 5 - queues: an events line for each channel and the dispatch line (status $rc, $n of 3 events lines)"
	sed 's/^/# stdout: /' "$tmp/out"
fi
