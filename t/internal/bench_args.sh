#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# bench_args.sh: wafer-bench refuses counts that are not whole numbers
# from 1 to a billion, at once and naming the argument. `dispatch -1` and
# `alloc 18446744073709551616` once looped for ever (strtoull wrapped
# them), and `dispatch 0 0` printed inf and nan. Each run is bounded by
# timeout(1), so a regression fails instead of hanging the suite.
set -u

# shellcheck source=t/tap.sh
. "${T_SRCDIR:?is not set (run through make check)}/tap.sh"
tap_tool wafer-bench

refused() { # refused WHAT ARGS...: exit status 2 naming WHAT, quickly
	what=$1
	shift
	n=$((n + 1))
	timeout 20 "$tool" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 2 ] && grep -q "$what '.*' is not a whole number" "$tmp/err"; then
		echo "ok $n - wafer-bench $* is refused"
	else
		echo "not ok $n - wafer-bench $* is refused (exit $rc)"
		sed 's/^/# /' "$tmp/out" "$tmp/err" | head -5
	fi
}

refused launches dispatch -1
refused pairs alloc 18446744073709551616
refused launches dispatch 0 0
refused "round trips" dispatch 10 0
refused launches dispatch 12abc
refused launches dispatch ""
refused pairs alloc +5
refused MiB bandwidth 0
echo "1..$n"
