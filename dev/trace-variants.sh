#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# trace-variants.sh: derives 8 variants from each allocation trace in a
# directory and replays every one with a memory strategy, to see how a
# strategy fares beyond the recorded runs. The README's "on 24 variants
# derived from these traces" figure is this script's last line on the
# three shared traces:
#
#   dev/trace-variants.sh [--strategy S] [--keep DIR] TRACE_DIR [WAFER_REPLAY]
#
# WAFER_REPLAY defaults to build/tools/wafer-replay run through
# build/uninstalled. The variants (deterministic: a fixed seed):
#
#   half      every size × 1/2              double   every size × 2
#   tiny      every size × 1/16 (small peaks, where single 2 MiB pages weigh)
#   loop3     the trace three times over (training goes on)
#   batches   three passes, each with its sizes × a random factor in
#             [0.5, 1.5] (a random batch size per pass)
#   jitter    every size × its own random factor in [0.9, 1.1]
#   twin      two copies interleaved event by event (two models at once)
#   prefix    the first half of the events (frees of later ids dropped)
#
# Each line: the variant, its events, and the replay's ratio (peak reserved
# ÷ peak live) and steady_ops (storage calls in the second half); a
# variant meets both targets when ratio ≤ 1.05 and steady_ops ≤ 1% of its
# events. Where the replay counts physical allocations (phys=, the null
# storage), the line adds them (made/given back) and a modeled time per
# event on a CUDA driver: 45 µs a physical allocation made, 19 µs one
# given back (an H200's, 2026-11-25), plus the replay's own ns_per_event.
# The last line counts the variants that meet both.
#
# Whole maps (`[cuda] vm_page = whole`, the pool's unmap = whole): pass
# WAFER_REPLAY="build/tools/wafer-replay --whole-maps".
set -u

strategy=pool
keep=
while [ $# -gt 0 ]; do
	case $1 in
	--strategy) strategy=$2; shift 2 ;;
	--keep) keep=$2; shift 2 ;;
	*) break ;;
	esac
done
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
	echo "usage: $0 [--strategy S] [--keep DIR] TRACE_DIR [WAFER_REPLAY]" >&2
	exit 2
fi
traces=$1
top=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ge 2 ]; then
	replay=$2
else
	replay="$top/build/uninstalled $top/build/tools/wafer-replay"
fi
work=${keep:-$(mktemp -d "${TMPDIR:-/tmp}/wafer-variants.XXXXXX")} || exit 1
mkdir -p "$work"
[ -z "$keep" ] && trap 'rm -rf "$work"' EXIT

# variant NAME < trace > variant: the awk program for each variant. Sizes
# stay at least 1 byte; ids are renumbered where a trace repeats.
variant() {
	awk -v kind="$1" -v seed=20261125 '
	BEGIN { srand(seed) }
	/^#/ { next }
	{ op[++n] = $1; id[n] = $2; size[n] = $3 }
	# Ids stay numbers: pass p of id i is i * 4 + p (twin: + 0 and + 1).
	function emit(o, i, s) {
		if (o == "a") { s = int(s); if (s < 1) s = 1; printf "a %.0f %.0f\n", i, s }
		else printf "f %.0f\n", i
	}
	function pass(p, factor,   k) {
		for (k = 1; k <= n; k++)
			emit(op[k], id[k] * 4 + p, size[k] * factor)
	}
	END {
		if (kind == "half") pass(0, 0.5)
		else if (kind == "double") pass(0, 2)
		else if (kind == "tiny") pass(0, 1 / 16)
		else if (kind == "loop3") { pass(0, 1); pass(1, 1); pass(2, 1) }
		else if (kind == "batches") for (p = 0; p < 3; p++) pass(p, 0.5 + rand())
		else if (kind == "jitter")
			for (k = 1; k <= n; k++)
				emit(op[k], id[k], size[k] * (0.9 + 0.2 * rand()))
		else if (kind == "twin")
			for (k = 1; k <= n; k++) {
				emit(op[k], id[k] * 4, size[k])
				emit(op[k], id[k] * 4 + 1, size[k])
			}
		else if (kind == "prefix") {
			for (k = 1; k <= int(n / 2); k++) {
				if (op[k] == "a") live[id[k]] = 1
				else if (!(id[k] in live)) continue
				emit(op[k], id[k], size[k])
			}
		}
	}'
}

total=0
met=0
for trace in "$traces"/*.trace.gz "$traces"/*.trace; do
	[ -f "$trace" ] || continue
	name=$(basename "$trace"); name=${name%.gz}; name=${name%.trace}
	for kind in half double tiny loop3 batches jitter twin prefix; do
		out=$work/$name-$kind.trace
		case $trace in
		*.gz) gzip -dc "$trace" ;;
		*) cat "$trace" ;;
		esac | variant "$kind" >"$out"
		# shellcheck disable=SC2086
		line=$($replay --strategy "$strategy" "$out" 2>&1 | grep '^strategy=' | tail -1)
		events=$(printf '%s\n' "$line" | sed -n 's/.* events=\([0-9]*\).*/\1/p')
		ratio=$(printf '%s\n' "$line" | sed -n 's/.* ratio=\([0-9.]*\).*/\1/p')
		steady=$(printf '%s\n' "$line" | sed -n 's/.* steady_ops=\([0-9]*\).*/\1/p')
		total=$((total + 1))
		if [ -z "$ratio" ]; then
			echo "$name-$kind: replay failed: $line"
			continue
		fi
		verdict=$(awk -v r="$ratio" -v s="$steady" -v e="$events" \
			'BEGIN { print (r <= 1.05 && s <= e / 100) ? "meets both" : "misses" }')
		[ "$verdict" = "meets both" ] && met=$((met + 1))
		phys=$(printf '%s\n' "$line" | sed -n 's/.* phys=map:\([0-9]*\),unmap:\([0-9]*\).*/\1 \2/p')
		model=
		if [ -n "$phys" ]; then
			ns=$(printf '%s\n' "$line" | sed -n 's/.* ns_per_event=\([0-9.]*\).*/\1/p')
			model=$(echo "$phys $events ${ns:-0}" | awk '{
				printf " phys=%d/%d model_us=%.2f", $1, $2,
					(45 * $1 + 19 * $2) / $3 + $4 / 1000 }')
		fi
		printf '%-32s events=%-7s ratio=%-6s steady_ops=%-6s %-10s%s\n' \
			"$name-$kind" "$events" "$ratio" "$steady" "$verdict" "$model"
	done
done
echo "strategy $strategy meets both targets on $met of $total variants"
