#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# trace_report.sh: the built wafer-trace on t/trace-small.json, whose
# figures are worked out by hand below; then `check` on malformed traces
# (each must fail naming what is wrong) and on a host-only one.
#
# The trace (times in microseconds): client 1 reserves handles 11 (4096
# bytes), 12 (1024) and 13 (512), runs matmul(11), add(11, 12),
# matmul(12) whose device spans are 20-50, 50-70 and 150-200; client 2
# runs two fills of 50 us on the host whose device spans are 5 us each,
# at 40 and 150. The step is 0-200.
#   kernels  matmul 2, 80 us (0.080 ms), mean 40, max 50, 40.0%;
#            add 1, 20 us, 10.0%; fill 2, 10 us, 5.0%; all 0.110 ms, 55.0%
#   queues   client 1 queue 0: host 33 us, device 100 us in a window of
#            180, idle 80 < 90: device-bound; client 2 queue 0: host 100
#            us, device 10 in 115, idle 105: launch-bound
#   memory   11 is first bound by matmul (4096), 12 by add (1024), 13 by
#            no kernel (512)
set -u

# shellcheck source=t/tap.sh
. "${T_SRCDIR:?is not set (run through make check)}/tap.sh"
tap_tool wafer-trace
trace=$T_SRCDIR/trace-small.json
tap_show="$tmp/out $tmp/err"

# has NAME REGEX: the last run's output has a line matching REGEX
has() {
	grep -Eq -- "$2" "$tmp/out"
	point "$1" $?
}

"$tool" report "$trace" >"$tmp/out" 2>"$tmp/err"
point "report: exits 0" $?
has "report: the step is 0.200 ms" '0\.200 ms from first to last span'
has "report: device times from events" '^device times: from timing events'
has "report: the error is counted" '^errors: 1 '
has "report: matmul 2, 0.080 ms, mean 40, max 50, 40%" \
	'^matmul +2 +0\.080 +40\.00 +50\.00 +40\.0%'
has "report: add 1, 0.020 ms, 10%" '^add +1 +0\.020 +20\.00 +20\.00 +10\.0%'
has "report: fill 2, 0.010 ms, 5%" '^fill +2 +0\.010 +5\.00 +5\.00 +5\.0%'
has "report: all kernels 0.110 ms, 55% of the step" \
	'^all kernels +0\.110 +\(55\.0% of the step\)'
first=$(grep -n '^matmul ' "$tmp/out" | head -1 | cut -d: -f1)
second=$(grep -n '^add ' "$tmp/out" | head -1 | cut -d: -f1)
[ -n "$first" ] && [ -n "$second" ] && [ "$first" -lt "$second" ]
point "report: kernels by total time" $?
has "report: client 1 is device-bound" \
	'^1 +0 +0\.033 +0\.100 +0\.080 +device-bound'
has "report: client 2 is launch-bound" \
	'^2 +0 +0\.100 +0\.010 +0\.105 +launch-bound'
has "report: matmul's buffers first" '^matmul +1 +4096$'
has "report: then add's" '^add +1 +1024$'
has "report: memory no kernel used" '^\(no kernel: copies only\) +512$'
"$tool" report --top 1 "$trace" >"$tmp/out" 2>"$tmp/err"
! grep -Eq '^add +1 +1024$' "$tmp/out"
point "report --top 1: one allocator" $?

"$tool" check "$trace" >"$tmp/out" 2>"$tmp/err"
point "check: the hand-made trace is well-formed" $?
has "check: says how many events" 'a well-formed trace of 19 events'

# bad NAME SED-EXPRESSION REGEX: check refuses the trace edited by
# SED-EXPRESSION, saying REGEX.
bad() {
	sed -e "$2" "$trace" >"$tmp/bad.json"
	"$tool" check "$tmp/bad.json" >"$tmp/out" 2>"$tmp/err"
	status=$?
	cp "$tmp/err" "$tmp/out"
	[ $status -eq 1 ] && grep -Eq -- "$3" "$tmp/err"
	point "check refuses $1" $?
}
bad "text that is not JSON" '$s/}}$/}/' 'not JSON: .* at byte'
bad "an event without ph" '3s/"ph":"X",//' 'event 1: "ph" is not one of'
bad "an unknown ph" '3s/"ph":"X"/"ph":"Q"/' 'event 1: "ph"'
bad "a span without dur" '4s/"dur":1,//' 'event 2: complete event without "dur"'
bad "a span that overlaps the one it starts in" \
	'6s/"dur":10/"dur":25/' 'overlaps the span it starts in'
bad "a span after the trace" '17s/"dur":50/"dur":60/' 'event 15 .* after the trace'
bad "a flow end without a start" '8s/"id":1/"id":7/' 'event 9: flow end without a start'
bad "a counter that is not a number" '12s/"in_use":5632/"in_use":"x"/' \
	"counter 'in_use' is not a number"
bad "a missing duration" 's/"duration_ns":200000,//' 'no otherData.duration_ns'

# Host spans only: the report says its times are the host's.
grep -v '"cat":"device"' "$trace" >"$tmp/host.json"
"$tool" report "$tmp/host.json" >"$tmp/out" 2>"$tmp/err"
point "report: a host-only trace" $?
has "report: says there are no device times" 'none in this file \(host spans only'
has "report: and counts the host spans" '^matmul +2 +0\.020 +10\.00 +10\.00'

# svg: the same trace as one picture: a box per span (14 in the file),
# the flow as a red line, the error as a red mark, memory as lines, and
# every name escaped (the file is XML).
"$tool" svg "$trace" >"$tmp/out" 2>"$tmp/err"
point "svg: exits 0" $?
[ "$(grep -c '<rect ' "$tmp/out")" -eq "$(grep -c '"ph":"X"' "$trace")" ]
point "svg: one box per span" $?
has "svg: an SVG document" '^<svg xmlns="http://www.w3.org/2000/svg"'
has "svg: the wait is an arrow" '<line [^>]*stroke="#c00"'
has "svg: the error is a red mark" 'fill="red"'
has "svg: memory is drawn" '<polyline '
has "svg: a box's title gives its args" '<title>matmul \(host\) 10\.000 us .*kernel=matmul'
tail -n 1 "$tmp/out" | grep -q '^</svg>$'
point "svg: the document is closed" $?
if command -v python3 >/dev/null 2>&1; then
	python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' \
		"$tmp/out" 2>"$tmp/err"
	point "svg: well-formed XML" $?
fi

"$tool" report >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ]
point "no file: a usage error" $?
"$tool" report "$tmp/missing.json" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "cannot read '$tmp/missing.json'" "$tmp/err"
point "a missing file is named" $?

echo "1..$n"
exit $failed
[ "$failed" -eq 0 ]
