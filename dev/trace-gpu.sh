#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# trace-gpu.sh: the timeline trace on an NVIDIA GPU, in one run: the MLP
# example's training step traced on cuda, checked and summarised by
# wafer-trace, the backend-neutral trace test on the GPU, and the cost of
# tracing off and on in wafer-bench dispatch. From a checkout or an
# unpacked `make dist` tarball (autotools are needed for a checkout):
#
#   OUT=/some/dir sh dev/trace-gpu.sh
#
# Results in $OUT (default ./trace-gpu-out):
#   summary.log   the device, each stage's verdict and time, the report
#   step.json     the trace of one training step (open it in
#                 ui.perfetto.dev: one process per client, lanes "queue 0
#                 (default) host" and "... device")
#   report.txt    wafer-trace report step.json: per kernel count and
#                 device time, launch-bound or not, memory by kernel
#   run.json, run-report.txt  the same for a whole short run
#                 (WAFER_TRACE=run.json, 20 steps twice)
#   check.log     t/api/trace with WAFER_BACKEND=cuda: expect all points
#                 ok, device spans on (device_timing "events")
#   bench.log     wafer-bench dispatch with tracing off, then on
#   build.log     configure and make
# What to look for: report.txt lists matmul, tanh, softmax ... with
# non-zero device times summing to less than the step, and summary.log
# says "device times: from timing events".
set -u

top=$(pwd)
OUT=${OUT:-$top/trace-gpu-out}
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
jobs=${TRACE_GPU_JOBS:-16}
summary=$OUT/summary.log
: > "$summary"
. "$(dirname "$0")/stage.sh"
began=$(stamp)
budget=${TRACE_GPU_BUDGET:-540}

say "wafer trace-gpu: $(basename "$top") on $(hostname), $(date -u '+%Y-%m-%d %H:%M UTC')"
command -v nvidia-smi >/dev/null 2>&1 &&
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 |
	sed 's/^/gpu: /' | tee -a "$summary"
find_toolkit
export LD_LIBRARY_PATH="$cuda_home/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

#--- build ---------------------------------------------------------------------
build=$OUT/build.log
: > "$build"
if [ ! -x configure ]; then
	stage autoreconf "$build" 200 autoreconf -fi || { tail -30 "$build"; exit 1; }
fi
mkdir -p build-gpu && cd build-gpu || exit 1
if [ ! -f Makefile ]; then
	stage configure "$build" 300 ../configure --enable-cuda --with-cuda="$cuda_home" ||
		{ tail -30 "$build"; exit 1; }
fi
stage "make -j$jobs" "$build" 400 make -j"$jobs" || { tail -40 "$build"; exit 1; }
stage "make t/api/trace" "$build" 120 make -j"$jobs" t/api/trace ||
	{ tail -40 "$build"; exit 1; }
run=$(pwd)/uninstalled
export WAFER_BACKEND=cuda

#--- the traces ----------------------------------------------------------------
stage "mlp --trace (one step)" "$OUT/mlp.log" 120 \
	"$run" examples/mlp --steps=200 --trace="$OUT/step.json"
stage "wafer-trace check step" "$OUT/mlp.log" 60 tools/wafer-trace check "$OUT/step.json"
tools/wafer-trace report "$OUT/step.json" >"$OUT/report.txt" 2>&1
say "$(cat "$OUT/report.txt")"
stage "mlp, WAFER_TRACE (whole run)" "$OUT/mlp.log" 120 \
	env WAFER_TRACE="$OUT/run.json" "$run" examples/mlp --steps=20
tools/wafer-trace report "$OUT/run.json" >"$OUT/run-report.txt" 2>&1
say "whole run: $(head -2 "$OUT/run-report.txt" | tr '\n' ' ')"

#--- the test and the cost -----------------------------------------------------
stage "t/api/trace on cuda" "$OUT/check.log" 120 make check TESTS=t/api/trace
cat t/api/trace.log >>"$OUT/check.log" 2>/dev/null
say "t/api/trace: $(grep -c '^ok' t/api/trace.log 2>/dev/null) ok, $(grep -c '^not ok' t/api/trace.log 2>/dev/null) not ok"
stage "dispatch, trace off" "$OUT/bench.log" 120 "$run" tools/wafer-bench dispatch
stage "dispatch, trace on" "$OUT/bench.log" 120 \
	env WAFER_TRACE="$OUT/bench.json" "$run" tools/wafer-bench dispatch
rm -f "$OUT/bench.json"
grep '^dispatch' "$OUT/bench.log" | tee -a "$summary"
say "done in $(($(stamp) - began)) s"
