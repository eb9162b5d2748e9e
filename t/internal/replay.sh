#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# replay.sh: runs the built wafer-replay on t/replay-small.trace, whose
# figures are worked out by hand below, plain and gzip-compressed; then on
# malformed traces (each must fail naming the line); then --svg.
#
# The trace: a 1 1000, a 2 3000, f 1, a 3 500, f 2, f 3. Peak live is
# 4000 (events 1-2). Storage alignment 256, granularity 2 MiB. Events 4-6
# are the second half.
#   direct   one alloc per handle, freed at release: 3 allocs + 3 frees,
#            reserved = live, 3 calls in the second half (a 3, f 2, f 3)
#   exact    chunks 1024, 3072, 512 (none freed): 4608 = 1.152
#   buckets  1024, 4096, 512: 5632 = 1.408
#   chunked  500 is under 0.8 of the free 1024 chunk: 1024+3072+512
#   pool     one small vm segment, one 2 MiB page: 2 calls, 524.288;
#            with 64K pages: 65536 = 16.384; without vm: one 2 MiB chunk
set -u

# shellcheck source=t/tap.sh
. "${T_SRCDIR:?is not set (run through make check)}/tap.sh"
tap_tool wafer-replay
trace=$T_SRCDIR/replay-small.trace
unset WAFER_LOG

tap_show="$tmp/out $tmp/err"
has() { # has TEXT: the last output holds TEXT (a fixed string)
	grep -F -e "$1" "$tmp/out" "$tmp/err" > /dev/null
}
# replays ARGS...: runs the tool, succeeding when it exits 0 within 20 s
replays() {
	timeout 20 "$tool" "$@" > "$tmp/out" 2> "$tmp/err"
}
# refuses ARGS...: runs the tool, succeeding when it exits non-zero
refuses() {
	! "$tool" "$@" > "$tmp/out" 2> "$tmp/err"
}
# line_is TEXT: stdout is exactly TEXT up to ns_per_event
line_is() {
	sed 's/ ns_per_event=[0-9.]*$//' "$tmp/out" > "$tmp/line"
	printf '%s\n' "$1" | cmp -s - "$tmp/line"
}

echo "1..66"

expect() { # expect "ARGS" "LINE"
	args=$1
	# shellcheck disable=SC2086 # ARGS are words on purpose
	check "replay $args" replays $args "$trace"
	check "  line: $2" line_is "$2"
}
expect "--strategy direct" \
	"strategy=direct events=6 peak_live=4000 peak_reserved=4000 ratio=1.000 storage_ops=6 steady_ops=3 calls=alloc:3,free:3 failures=0 retries=0"
expect "--strategy exact" \
	"strategy=exact events=6 peak_live=4000 peak_reserved=4608 ratio=1.152 storage_ops=3 steady_ops=1 calls=alloc:3 failures=0 retries=0"
expect "--strategy buckets" \
	"strategy=buckets events=6 peak_live=4000 peak_reserved=5632 ratio=1.408 storage_ops=3 steady_ops=1 calls=alloc:3 failures=0 retries=0"
expect "--strategy chunked" \
	"strategy=chunked events=6 peak_live=4000 peak_reserved=4608 ratio=1.152 storage_ops=3 steady_ops=1 calls=alloc:3 failures=0 retries=0"
expect "--strategy stream" \
	"strategy=stream events=6 peak_live=4000 peak_reserved=4000 ratio=1.000 storage_ops=6 steady_ops=3 calls=alloc_async:3,free_async:3 failures=0 retries=0"
expect "--strategy pool --storage null" \
	"strategy=pool events=6 peak_live=4000 peak_reserved=2097152 ratio=524.288 storage_ops=2 steady_ops=0 calls=vm_reserve:1,vm_map:1 pages=map:1,unmap:0 phys=map:1,unmap:0 failures=0 retries=0"
expect "--granularity 64K" \
	"strategy=pool events=6 peak_live=4000 peak_reserved=65536 ratio=16.384 storage_ops=2 steady_ops=0 calls=vm_reserve:1,vm_map:1 pages=map:1,unmap:0 phys=map:1,unmap:0 failures=0 retries=0"
expect "--strategy pool --no-vm" \
	"strategy=pool events=6 peak_live=4000 peak_reserved=2097152 ratio=524.288 storage_ops=1 steady_ops=0 calls=alloc:1 failures=0 retries=0"

# --whole-maps: each vm_map is one physical allocation and an unmap must
# cover whole ones; the pool then unmaps whole units (memory.pool.unmap =
# whole, which --whole-maps implies). The trace: a 24 MiB block (12
# pages; units of a quarter of its span: 6 of 2 pages), a 2 MiB one (1),
# the first freed, a 4 MiB block in its hole (pages 0-1, mapped), a
# 30 MiB one past the second (15 pages: 7 units of 2, one of 1). With
# overhead 0 the hole's idle pages 2-11 go first: 5 whole units, in one
# call. The units of one block are one vm_map_pieces call (3 calls for
# 15 physical allocations). Without --whole-maps the pool maps each run in one call (3) and
# unmaps pages 2-11 of the first: 28 and 10 pages, a physical allocation
# each.
printf 'a 1 25165824\na 2 2097152\nf 1\na 3 4194304\na 4 31457280\nf 2\nf 3\nf 4\n' \
	> "$tmp/units.trace"
check "--whole-maps" replays --whole-maps --option memory.pool.overhead=0 \
	"$tmp/units.trace"
check "  line: physical allocations are units" line_is \
	"strategy=pool events=8 peak_live=37748736 peak_reserved=37748736 ratio=1.000 storage_ops=5 steady_ops=2 calls=vm_reserve:1,vm_map:3,vm_unmap:1 pages=map:28,unmap:10 phys=map:15,unmap:5 failures=0 retries=0"
check "pages" replays --option memory.pool.overhead=0 "$tmp/units.trace"
check "  line: physical allocations are pages" line_is \
	"strategy=pool events=8 peak_live=37748736 peak_reserved=37748736 ratio=1.000 storage_ops=5 steady_ops=2 calls=vm_reserve:1,vm_map:3,vm_unmap:1 pages=map:28,unmap:10 phys=map:28,unmap:10 failures=0 retries=0"
check "--whole-maps with a pool unmapping pages fails" refuses --whole-maps \
	--option memory.pool.overhead=0 --option memory.pool.unmap=pages \
	"$tmp/units.trace"
check "  naming the cut" has \
	"broke the storage contract 1 times; first: vm_unmap [4194304, +20971520) of range 0x"
check "unmap = neither whole nor pages is refused" refuses \
	--option memory.pool.unmap=some "$tmp/units.trace"
check "  naming the key" has "unmap"

# The same trace compressed gives the same line.
gzip -c "$trace" > "$tmp/small.trace.gz"
check "gzip trace" replays --strategy direct "$tmp/small.trace.gz"
check "  same line" line_is \
	"strategy=direct events=6 peak_live=4000 peak_reserved=4000 ratio=1.000 storage_ops=6 steady_ops=3 calls=alloc:3,free:3 failures=0 retries=0"

# Malformed traces: an error naming file and line, no result line.
bad() { # bad NAME TEXT NEEDLE
	printf '%b' "$2" > "$tmp/bad.trace"
	check "$1 is refused" refuses "$tmp/bad.trace"
	check "  with '$3'" has "$3"
}
bad "missing size" "a 1 100\na 2\n" "bad.trace:2: malformed line"
bad "unknown event" "# c\na 1 100\nx 1\n" "bad.trace:3: malformed line: unknown event 'x'"
bad "size not a number" "a 1 12k\n" "bad.trace:1: malformed line"
bad "zero size" "a 1 0\n" "bad.trace:1: allocation of 0 bytes"
bad "free of an unknown id" "a 1 10\nf 2\n" "bad.trace:2: free of id 2"
bad "id allocated twice" "a 7 10\na 7 20\n" "bad.trace:2: id 7 allocated again; still live from line 1"
bad "a field after a named one" "a 1 10 t=5 x\n" "bad.trace:1: malformed line: 'x' after a named field"

# 300 live allocations of 1 TiB each once drove the tool past 600 MB of
# host memory (2 MiB per TiB, growing without bound); the null storage
# now fails past its 128 TiB of addresses, naming the line.
awk 'BEGIN { for (i = 1; i <= 300; i++) print "a " i " 1099511627776" }' \
	> "$tmp/huge.trace"
check "300 live TiB allocations are refused" refuses "$tmp/huge.trace"
check "  at the 129th, past the address space" has \
	"huge.trace:129: cannot reserve 1099511627776 bytes"
check "  saying why" has "past its address space"

# chunked looks for a free chunk among its free chunks only: 100,000 live
# allocations once took it 16 s (a walk over every chunk per reserve);
# now well under a second, so 20 s is a wide bound.
awk 'BEGIN { for (i = 1; i <= 100000; i++) print "a " i " " (i % 977 + 1) * 256 }' \
	> "$tmp/live.trace"
check "chunked: 100,000 live allocations in time" \
	replays --strategy chunked "$tmp/live.trace"
check "  all of them live at the end" has "events=100000 peak_live="

# Files that are no trace, refused at once (timeout(1) bounds each: a
# FIFO once blocked the open for ever, /dev/zero fed one endless line).
refuses_soon() { # refuses_soon ARGS...: exits non-zero within 20 s
	timeout 20 "$tool" "$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ $rc -ne 0 ] && [ $rc -ne 124 ]
}
mkfifo "$tmp/fifo"
check "a FIFO is refused" refuses_soon "$tmp/fifo"
check "  as not a regular file" has "not a regular file"
check "/dev/zero is refused" refuses_soon /dev/zero
check "  as not a regular file" has "not a regular file"
awk 'BEGIN { for (i = 0; i < 2000; i++) printf "a 1 10 "; print "" }' \
	> "$tmp/long.trace"
check "a line of 14,000 bytes is refused" refuses "$tmp/long.trace"
check "  as too long" has "long.trace: a line longer than 4096 bytes"

# Named fields after an event (a recording's t=, wafer-memory(7)) are
# read past: the same events, the same line.
sed 's/^\([af] .*\)$/\1 t=12 note=x/' "$trace" > "$tmp/named.trace"
check "named fields are read past" replays --strategy direct "$tmp/named.trace"
check "  same line" line_is \
	"strategy=direct events=6 peak_live=4000 peak_reserved=4000 ratio=1.000 storage_ops=6 steady_ops=3 calls=alloc:3,free:3 failures=0 retries=0"

# --snapshot=2: after a 1 1000 and a 2 3000, pool's one small segment
# (a 256 GiB range of 2 MiB pages, the first mapped) holds both, named by
# the trace lines that allocated them, and the free rest.
check "--snapshot=2" replays --snapshot=2 "$trace"
check "  the segment" has "segment 0 small: 274877906944 bytes, 2097152 mapped, pages of 2097152"
check "  its page runs" has "  pages [2097152, 274877906944) unmapped"
check "  the first block, from line 3" has "  block [0, 1024) live: 1000 bytes, trace line 3"
check "  the second, from line 4" has "  block [1024, 4096) live: 3000 bytes, trace line 4"
check "  the free rest" has "  block [4096, 274877906944) free"
check "--snapshot=0 is refused" refuses --snapshot=0 "$trace"

check "unknown strategy is refused" refuses --strategy nosuch "$trace"
check "  listing the known ones" has "known: exact, direct, chunked, buckets, stream, pool"

# --svg: a picture with axes, labels and a legend.
check "--svg" replays --strategy pool --svg "$tmp/small.svg" "$trace"
check "  is an SVG with a legend and axis labels" grep -q \
	-e 'in use by live allocations' "$tmp/small.svg"

# The timeline as memory_viz draws one: the three allocations as bands
# stacked in allocation order (3000 bytes on the 1000 while both live,
# down to the axis once the 1000 is freed at event 2, the 500 on it),
# the reserved area, the in-use line, axes in units, a legend.
svg_timeline() {
	python3 - "$tmp/small.svg" > "$tmp/out" 2> "$tmp/err" <<'EOF'
import sys
import xml.etree.ElementTree as ET

ns = {"s": "http://www.w3.org/2000/svg"}
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
bands = root.findall(".//s:polygon[@class='band']", ns)
assert len(bands) == 3, f"{len(bands)} bands"
def band(nbytes):
    for b in bands:
        if f"({nbytes} bytes)" in b.find("s:title", ns).text:
            pts = [tuple(map(float, p.split(","))) for p in b.get("points").split()]
            return b.find("s:title", ns).text, pts
    raise AssertionError(f"no band of {nbytes} bytes")
t1, p1 = band(1000)
t2, p2 = band(3000)
t3, p3 = band(500)
assert "events 0 to 2" in t1 and "events 1 to 4" in t2 and "events 3 to 5" in t3, (t1, t2, t3)
# y grows downward: the 3000's lowest edge starts at the 1000's top,
# then drops to the 1000's bottom (the axis) when the 1000 is freed.
bottom1 = max(y for x, y in p1)
top1 = min(y for x, y in p1)
ys2 = sorted({y for x, y in p2})
assert any(abs(y - top1) < 0.2 for y in ys2), (ys2, top1)
assert abs(max(ys2) - bottom1) < 0.2, (ys2, bottom1)
# the 500 sits on the 3000's top after the drop (ys2: its tops at 4000
# and 3000 bytes, its bottoms at 1000 and 0), then on the axis
ys3 = {y for x, y in p3}
assert len(ys2) == 4 and any(abs(y - ys2[1]) < 0.2 for y in ys3), (ys3, ys2)
assert any(abs(y - bottom1) < 0.2 for y in ys3), (ys3, bottom1)
assert root.find(".//s:polygon[@class='reserved']", ns) is not None
assert root.find(".//s:polyline[@class='in-use']", ns) is not None
texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
assert any(t.endswith(" KiB") for t in texts), "no tick in KiB"
assert any("events" in t for t in texts) and any(t == "bytes" for t in texts)
assert root.find(".//s:g[@class='legend']", ns) is not None
print("ok")
EOF
}
if command -v python3 > /dev/null; then
	check "  parses as XML: three bands stacked in allocation order, reserved, in use, axes in units, a legend" svg_timeline
else
	n=$((n + 1))
	echo "ok $n - the SVG's XML # SKIP no python3"
fi
# Rendered to PNG (the picture at its size) where rsvg-convert is.
png_of() {
	rsvg-convert -o "$tmp/small.png" "$tmp/small.svg" > "$tmp/out" 2> "$tmp/err" &&
		[ "$(od -An -tx1 -N8 "$tmp/small.png" | tr -d ' \n')" = 89504e470d0a1a0a ] &&
		[ "$(od -An -tx1 -j16 -N8 "$tmp/small.png" | tr -d ' \n')" = 000003c00000021c ]
}
if command -v rsvg-convert > /dev/null; then
	check "  renders to a 960 x 540 PNG (rsvg-convert)" png_of
else
	n=$((n + 1))
	echo "ok $n - the SVG renders to PNG # SKIP no rsvg-convert (librsvg2-bin)"
fi

exit $failed
