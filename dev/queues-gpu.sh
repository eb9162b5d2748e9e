#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# queues-gpu.sh: what only a GPU machine shows about queues: PyTorch's
# allocator with one client per device and a queue per stream, and the
# queue benchmarks on cuda and on cpu (a worker thread per queue, on the
# machine's cores). Run from a build tree made as dev/gpu-check.sh makes
# it (./configure --enable-cuda; make; make check TESTS=):
#
#   OUT=/some/dir sh dev/queues-gpu.sh
#
# Results in $OUT (default ./queues-gpu-out):
#   torch_alloc.log  t/cuda/torch_alloc on the stand-in, 20 runs (one
#                    client per device, a queue per stream; every run
#                    must end "1..N" with no "not ok")
#   train.md         dev/torch-train.py: resnet18, gpt2, mlp and mlp2s
#                    (two streams, one pool) under PyTorch's allocators
#                    and wafer's, with the targets (peak reserved <= the
#                    better of PyTorch's two; step time <= 1.03x default)
#   bench.log        wafer-bench queues at 16 and 64 MiB on cuda (gain of
#                    two queues over one; beside raw CUDA streams) and on
#                    cpu (gain > 1 now that cpu queues overlap)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$PWD/queues-gpu-out}
mkdir -p "$OUT"
run=$top/uninstalled
[ -x "$run" ] || run=./uninstalled

echo "== t/cuda/torch_alloc x20 (stand-in)" | tee "$OUT/torch_alloc.log"
fails=0
i=0
while [ $i -lt 20 ]; do
	i=$((i + 1))
	if ! make -s check TESTS=t/cuda/torch_alloc >/dev/null 2>&1 ||
		grep -q '^not ok' t/cuda/torch_alloc.log; then
		fails=$((fails + 1))
		cat t/cuda/torch_alloc.log >>"$OUT/torch_alloc.log"
	fi
done
echo "torch_alloc: $fails of 20 runs failed" | tee -a "$OUT/torch_alloc.log"

echo "== dev/torch-train.py" | tee "$OUT/train.log"
so=$(ls torch/.libs/libwafer-torch.so 2>/dev/null)
if [ -n "$so" ] && python3 -c 'import torch' 2>/dev/null; then
	timeout 420 python3 "$top/dev/torch-train.py" "$so" "$OUT/train.md" \
		>>"$OUT/train.log" 2>&1
	grep -i -E 'target|mlp2s' "$OUT/train.md" | tee -a "$OUT/train.log"
else
	echo "no libwafer-torch.so or no PyTorch: skipped" | tee -a "$OUT/train.log"
fi

echo "== wafer-bench queues" | tee "$OUT/bench.log"
for backend in cuda cpu; do
	for mib in 16 64; do
		WAFER_BACKEND=$backend timeout 120 "$run" tools/wafer-bench \
			queues $mib 2>&1 | sed "s/^/$backend: /" |
			tee -a "$OUT/bench.log"
	done
done
