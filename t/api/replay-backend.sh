#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# wafer-replay --storage BACKEND: a trace replayed against the default
# backend's real storage (WAFER_BACKEND, as for the rest of the suite),
# for every strategy; the replay frees everything it allocated.
set -u
# shellcheck source=t/tap.sh
. "${T_SRCDIR:?is not set (run through make check)}/tap.sh"
tap_tool wafer-replay
trace=$T_SRCDIR/replay-small.trace
backend=${WAFER_BACKEND:-cpu}
backend=${backend%%,*}
tap_show=$tmp/out

# replays STRATEGY: replays the trace on the backend's storage, and says
# so in one line.
replays() {
	"$tool" --strategy "$1" --storage "$backend" "$trace" >"$tmp/out" 2>&1 &&
		grep -q "^strategy=$1 events=[0-9]* peak_live=[0-9]* peak_reserved=[0-9]* ratio=" "$tmp/out"
}
for strategy in pool exact direct chunked buckets stream; do
	check "$strategy on $backend: replays, gives everything back" \
		replays "$strategy"
done

# refuses_backend: an unknown backend is an error naming it.
refuses_backend() {
	! "$tool" --storage no_such_backend "$trace" >"$tmp/out" 2>&1 &&
		grep -q "no_such_backend" "$tmp/out"
}
check "an unknown backend is an error naming it" refuses_backend
echo "1..$n"
exit $failed
