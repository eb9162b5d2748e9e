#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# pool-vs-torch.sh: the pool on a GPU's real storage beside PyTorch's
# caching allocator, on the same allocation traces, in turns. Run on the
# GPU machine from a built tree (an unpacked `make dist`, configured
# with --enable-cuda):
#
#   sh dev/pool-vs-torch.sh TRACE_DIR TORCH_REPLAY [ROUNDS]
#
# TORCH_REPLAY is the script that replays one trace through PyTorch
# (the shared tools' torch_replay.py). Each of ROUNDS rounds (default 3)
# replays every trace with each pool setting of POOL_SETTINGS (default
# below; `default` is the configuration as shipped, the others
# [memory.pool] options, comma-separated) and with PyTorch's default
# allocator and its expandable segments. The time per event of one run
# drifts by up to 2x between runs on the same machine (the driver's
# VM calls), so every figure is the best of the rounds, taken in turns:
#
#   pool trace=T setting=S ratio=R us_per_event=X (rounds: a b c)
#   torch trace=T conf=C ratio=R us_per_event=X (rounds: a b c)
#
# and per trace and setting whether it meets both targets: ratio <= 1.03
# and less time per event than each of PyTorch's two:
#
#   verdict trace=T setting=S ratio_ok=yes|no faster_than_torch=yes|no
set -u

if [ $# -lt 2 ] || [ ! -d "$1" ] || [ ! -f "$2" ]; then
	echo "usage: $0 TRACE_DIR TORCH_REPLAY [ROUNDS]" >&2
	exit 2
fi
traces=$1 torch_replay=$2 rounds=${3:-3}
settings=${POOL_SETTINGS:-"default overhead=0.03 overhead=0.03,unit=8M"}
run=${WAFER_RUN:-./uninstalled}
raw=$(mktemp "${TMPDIR:-/tmp}/pool-vs-torch.XXXXXX") || exit 1
trap 'rm -f "$raw"' EXIT

for r in $(seq "$rounds"); do
	for trace in "$traces"/*.trace.gz; do
		t=$(basename "$trace" .trace.gz)
		for s in $settings; do
			opts=
			[ "$s" = default ] ||
				for kv in $(echo "$s" | tr , ' '); do
					opts="$opts --option memory.pool.$kv"
				done
			# shellcheck disable=SC2086
			line=$(WAFER_BACKEND=cuda timeout 120 $run tools/wafer-replay \
				--storage cuda $opts "$trace" 2>&1 | grep '^strategy=')
			echo "pool $t $s $line" >>"$raw"
		done
		for conf in default expandable_segments:True; do
			if [ "$conf" = default ]; then
				line=$(timeout 120 python3 "$torch_replay" "$trace" 2>&1)
			else
				line=$(PYTORCH_CUDA_ALLOC_CONF=$conf timeout 120 \
					python3 "$torch_replay" "$trace" 2>&1)
			fi
			echo "torch $t $conf $(echo "$line" | grep '^torch ')" >>"$raw"
		done
	done
done

# The best time of the rounds; the ratio is the same every round.
awk '
function field(name,   i) {
	for (i = 4; i <= NF; i++)
		if (index($i, name "=") == 1)
			return substr($i, length(name) + 2)
	return ""
}
{
	key = $1 " " $2 " " $3
	us = $1 == "pool" ? field("ns_per_event") / 1000 : field("us_per_event")
	if (us == "" || us == 0) { bad[key] = 1; next }
	if (!(key in best) || us < best[key]) best[key] = us
	ratio[key] = field("ratio")
	all[key] = all[key] sprintf(" %.2f", us)
	if (!(key in seen)) { order[++n] = key; seen[key] = 1 }
}
END {
	for (i = 1; i <= n; i++) {
		split(order[i], k, " ")
		printf "%s trace=%s %s=%s ratio=%s us_per_event=%.2f (rounds:%s)\n",
		       k[1], k[2], k[1] == "pool" ? "setting" : "conf", k[3],
		       ratio[order[i]], best[order[i]], all[order[i]]
		if (k[1] == "torch") {
			if (!(k[2] in fastest) || best[order[i]] < fastest[k[2]])
				fastest[k[2]] = best[order[i]]
		}
	}
	for (i = 1; i <= n; i++) {
		split(order[i], k, " ")
		if (k[1] != "pool") continue
		printf "verdict trace=%s setting=%s ratio_ok=%s faster_than_torch=%s\n",
		       k[2], k[3], ratio[order[i]] + 0 <= 1.03 ? "yes" : "no",
		       (k[2] in fastest) && best[order[i]] < fastest[k[2]] ? "yes" : "no"
	}
	for (key in bad) printf "failed: %s (no figure in some round)\n", key
}' "$raw"
