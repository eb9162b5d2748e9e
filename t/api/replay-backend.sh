#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# wafer-replay --storage BACKEND: a trace replayed against the default
# backend's real storage (WAFER_BACKEND, as for the rest of the suite),
# for every strategy; the replay frees everything it allocated.
set -u
if [ -z "${T_BUILDDIR:-}" ] || [ -z "${T_SRCDIR:-}" ]; then
	echo "Bail out! T_BUILDDIR/T_SRCDIR not set (run through make check)"
	exit 1
fi
tool=$T_BUILDDIR/../tools/wafer-replay
trace=$T_SRCDIR/replay-small.trace
backend=${WAFER_BACKEND:-cpu}
backend=${backend%%,*}
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $*"; }

for strategy in pool exact direct chunked buckets stream; do
	out=$("$tool" --strategy "$strategy" --storage "$backend" "$trace" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && echo "$out" | grep -q "^strategy=$strategy events=[0-9]* peak_live=[0-9]* peak_reserved=[0-9]* ratio="; then
		ok "$strategy on $backend: replays, gives everything back"
	else
		not_ok "$strategy on $backend (rc $rc)"
		echo "$out" | sed 's/^/# /'
	fi
done

out=$("$tool" --storage no_such_backend "$trace" 2>&1)
if [ $? -ne 0 ] && echo "$out" | grep -q "no_such_backend"; then
	ok "an unknown backend is an error naming it"
else
	not_ok "an unknown backend is an error naming it"
	echo "$out" | sed 's/^/# /'
fi
echo "1..$n"
