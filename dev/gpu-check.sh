#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# gpu-check.sh: everything about the cuda plugin that only a GPU can show,
# in one run on an NVIDIA machine (an H100 or H200 with the driver and the
# CUDA toolkit; no autotools needed). Run it from an unpacked `make dist`
# tarball:
#
#   tar xf wafer-X.Y.Z.tar.xz && cd wafer-X.Y.Z
#   OUT=/some/dir sh dev/gpu-check.sh [TRACE_DIR]
#
# TRACE_DIR holds the allocation traces (*.trace.gz) to replay on the
# device (default: $WAFER_TRACES, else ../traces, else none). Results go
# to $OUT (default ./gpu-check-out), eight files:
#
#   summary.log    the device, each stage's verdict and time, the headline
#                  figures (also printed at the end)
#   build.log      configure and make -j16
#   check.log      make check with WAFER_BACKEND=cuda: the whole suite
#                  (t/api/programs: CUDA C through NVRTC and PTX on the GPU),
#                  then again on NVIDIA's OpenCL; the logs of any test
#                  that failed
#   plugin.log     wafer-info, and t/cuda/plugin --real (the plugin through
#                  its ABI on the GPU: copies, staging, VM, every matmul
#                  variant and dtype against a host reference)
#   sanitizer.log  compute-sanitizer's memcheck, initcheck, synccheck and
#                  racecheck over t/cuda/plugin --real, memcheck and
#                  initcheck over the backend-neutral tests of operations
#                  and buffer ownership (t/api/ops, t/api/ops_dtypes,
#                  t/api/donation; memcheck
#                  also over t/api/interop) with the
#                  `direct` memory strategy; each with its verdict in
#                  summary.log; last, in the time left
#   bench.log      wafer-bench alloc, dispatch, bandwidth, sgemm (and
#                  matmul when the autotune bench is built), each figure
#                  beside its raw CUDA counterpart from the same run
#   replay.log     wafer-replay of the traces on the GPU's real storage with
#                  the pool and stream strategies (and the accounting-only
#                  storage, for the ratios)
#   torch.log      the same traces through PyTorch's caching allocator,
#                  default and expandable segments, when TORCH_REPLAY names
#                  the replay script (../shared/tools/torch_replay.py)
#
# Every stage has a time limit, so one hang does not eat the machine, and
# the whole run stays inside GPU_CHECK_BUDGET (540 s): about 5-8 minutes on
# an H100 with 16 cores.
set -u

top=$(pwd)
OUT=${OUT:-$top/gpu-check-out}
mkdir -p "$OUT" || exit 1
traces=${1:-${WAFER_TRACES:-}}
[ -z "$traces" ] && [ -d ../traces ] && traces=../traces
jobs=${GPU_CHECK_JOBS:-16}

summary=$OUT/summary.log
: > "$summary"
# say, stamp, stage (dev/stage.sh).
. "$(dirname "$0")/stage.sh"
began=$(stamp)

# The whole run stays inside GPU_CHECK_BUDGET seconds (default 540: the
# device tool allows 600 a command): each stage's limit is cut to what is
# left, and a stage that would get less than 20 s is skipped. Stages run
# in order of importance, the sanitizer last.
budget=${GPU_CHECK_BUDGET:-540}

# GPU_CHECK_ONLY: the parts to run after the build, from "plugin check
# opencl bench replay torch sanitizer" (default: all of them), e.g. to give the
# sanitizer a run of its own.
want() {
	case " ${GPU_CHECK_ONLY:-all} " in
	*" all "* | *" $1 "*) return 0 ;;
	esac
	return 1
}

plugin=$OUT/plugin.log check=$OUT/check.log bench=$OUT/bench.log
replay=$OUT/replay.log san=$OUT/sanitizer.log replayed=

#--- the machine ---------------------------------------------------------------
say "wafer gpu-check: $(basename "$top") on $(hostname), $(date -u '+%Y-%m-%d %H:%M UTC')"
if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm \
		--format=csv,noheader 2>&1 | sed 's/^/gpu: /' | tee -a "$summary"
fi
find_toolkit
sanitizer=$(command -v compute-sanitizer ||
	ls "$cuda_home"/bin/compute-sanitizer "$cuda_home"/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
# cuBLAS and the sanitizer's libraries live beside the toolkit.
export LD_LIBRARY_PATH="$cuda_home/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

#--- build ---------------------------------------------------------------------
build=$OUT/build.log
: > "$build"
stage configure "$build" 300 ./configure --enable-cuda --with-cuda="$cuda_home" ||
	{ tail -30 "$build"; exit 1; }
stage "make -j"$jobs"" "$build" 400 make -j"$jobs" || { tail -40 "$build"; exit 1; }
# The test programs too, without running them yet.
stage "make check programs" "$build" 300 make -j"$jobs" check TESTS= ||
	{ tail -40 "$build"; exit 1; }
# The built tools, against this tree's plugins.
run=$top/uninstalled

# The environment the test suite gives its programs (t/local.mk).
export WAFER_PLUGIN_PATH="$top/plugins/cuda/.libs:$top/plugins/opencl/.libs:$top/plugins/cpu/.libs"
export WAFER_SYSCONFDIR="$top/etc"
export XDG_CONFIG_HOME="$top/t/xdg-config" XDG_CACHE_HOME="$top/t/xdg-cache"
export T_BUILDDIR="$top/t" T_SRCDIR="$top/t"
unset WAFER_MEMORY WAFER_CHANNEL WAFER_LOG
# GPU_CHECK_CONFIG (for trying the script without a GPU, on the tests'
# stand-in driver) becomes WAFER_CONFIG; otherwise none is read.
if [ -n "${GPU_CHECK_CONFIG:-}" ]; then
	export WAFER_CONFIG="$GPU_CHECK_CONFIG"
else
	unset WAFER_CONFIG
fi

if want plugin; then
#--- the plugin on the GPU -------------------------------------------------------
plugin=$OUT/plugin.log
: > "$plugin"
stage wafer-info "$plugin" 60 "$run" tools/wafer-info
if ! grep -q "cuda: accepted" "$plugin"; then
	say "the cuda plugin found no device:"
	grep -i "cuda:" "$plugin" | head -3 | tee -a "$summary"
fi
stage "cuda_plugin --real" "$plugin" 180 ./libtool --mode=execute t/cuda/plugin --real
say "  cuda_plugin: $(grep -c '^ok' "$plugin") ok, $(grep -c '^not ok' "$plugin") not ok"
fi

if want check; then
#--- the whole suite on cuda ---------------------------------------------------
check=$OUT/check.log
: > "$check"
stage "make check (cuda)" "$check" 420 make -j"$jobs" check WAFER_BACKEND=cuda
grep -E '^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR)' "$check" | tail -7 | sed 's/^/  check /' | tee -a "$summary"
for log in t/*.log t/*/*.log; do
	[ -f "$log" ] || continue
	if grep -q -E '^(not ok|Bail out)' "$log" 2>/dev/null; then
		printf '\n===== failed: %s\n' "$log" >> "$check"
		cat "$log" >> "$check"
		say "  failing: $log ($(grep -c '^not ok' "$log") not ok)"
	fi
done
fi

if want opencl; then
#--- the whole suite on NVIDIA's OpenCL ------------------------------------------
# NVIDIA's OpenCL driver (libnvidia-opencl.so.1) named to the ICD loader
# directly, since the machine may register only other platforms; the
# results go to check.log after the cuda run's.
nv_ocl=$(ls /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 \
	/usr/local/nvidia/lib64/libnvidia-opencl.so.1 2>/dev/null | head -1)
if [ -n "$nv_ocl" ] && [ -e plugins/opencl/.libs/opencl.so ]; then
	nv_conf=$OUT/opencl-nvidia.conf
	printf '[core]\nbackend = opencl\n[opencl]\nplatform = NVIDIA\n' > "$nv_conf"
	rm -f t/*.log t/*.trs t/*/*.log t/*/*.trs
	export OCL_ICD_FILENAMES="$nv_ocl" WAFER_CONFIG="$nv_conf"
	stage "make check (NVIDIA OpenCL)" "$check" 420 \
		make -j"$jobs" check WAFER_BACKEND=opencl
	unset OCL_ICD_FILENAMES WAFER_CONFIG
	grep -E '^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR)' "$check" | tail -7 | sed 's/^/  opencl check /' | tee -a "$summary"
	for log in t/*.log t/*/*.log; do
		grep -q -E '^(not ok|Bail out)' "$log" 2>/dev/null || continue
		printf '\n===== failed on NVIDIA OpenCL: %s\n' "$log" >> "$check"
		cat "$log" >> "$check"
		say "  failing on NVIDIA OpenCL: $log"
	done
else
	say "no libnvidia-opencl.so.1 (or no opencl plugin): the suite on NVIDIA OpenCL not run"
fi
fi

if want bench; then
#--- benchmarks ----------------------------------------------------------------
bench=$OUT/bench.log
: > "$bench"
export WAFER_BACKEND=cuda
stage "bench alloc" "$bench" 180 "$run" tools/wafer-bench alloc 20000
stage "bench dispatch" "$bench" 180 "$run" tools/wafer-bench dispatch 200000 20000
stage "bench bandwidth" "$bench" 120 "$run" tools/wafer-bench bandwidth 256 20
stage "bench sgemm 4096" "$bench" 180 "$run" tools/wafer-bench sgemm 4096 10
if "$run" tools/wafer-bench --help 2>&1 | grep -q '^  matmul'; then
	stage "bench matmul (tuned)" "$bench" 240 \
		"$run" tools/wafer-bench matmul --sizes=1024,4096
fi
unset WAFER_BACKEND
fi

if want replay; then
#--- replay --------------------------------------------------------------------
replay=$OUT/replay.log
: > "$replay"
replayed=
if [ -n "$traces" ] && ls "$traces"/*.trace.gz >/dev/null 2>&1; then
	for trace in "$traces"/*.trace.gz; do
		tname=$(basename "$trace" .trace.gz)
		for strategy in pool stream; do
			stage "replay $tname $strategy" "$replay" 120 \
				"$run" tools/wafer-replay --strategy $strategy --storage cuda "$trace"
			replayed="$replayed
  replay $tname on cuda: $(grep '^strategy=' "$replay" | tail -1)"
			# The same on the accounting-only storage, for comparison.
			printf '===== %s %s on the null storage\n' "$tname" "$strategy" >> "$replay"
			"$run" tools/wafer-replay --strategy $strategy "$trace" >> "$replay" 2>&1
		done
	done
else
	say "no traces (pass TRACE_DIR, or set WAFER_TRACES): replay skipped"
fi
fi

if want torch; then
#--- PyTorch's allocator on the same traces --------------------------------------
# The figure wafer-replay's ratios are compared with: TORCH_REPLAY names a
# script that replays one trace through PyTorch's CUDA caching allocator
# (the shared tools' torch_replay.py), run once with the default settings
# and once with expandable segments.
torchlog=$OUT/torch.log
: > "$torchlog"
if [ -n "${TORCH_REPLAY:-}" ] && [ -n "$traces" ] && python3 -c 'import torch' 2>/dev/null; then
	for trace in "$traces"/*.trace.gz; do
		tname=$(basename "$trace" .trace.gz)
		stage "torch $tname default" "$torchlog" 120 python3 "$TORCH_REPLAY" "$trace"
		PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
			stage "torch $tname expandable" "$torchlog" 120 python3 "$TORCH_REPLAY" "$trace"
	done
	unset PYTORCH_CUDA_ALLOC_CONF
	grep '^torch ' "$torchlog" | sed 's/^/  /' | tee -a "$summary"
else
	say "no TORCH_REPLAY script, traces or PyTorch: PyTorch's side not measured"
fi
fi

if want sanitizer; then
#--- compute-sanitizer ---------------------------------------------------------
# All four tools, each to a verdict: memcheck (out-of-bounds and misaligned
# accesses, leaks), racecheck (shared-memory hazards), synccheck (barriers
# not every thread reaches) and initcheck (reads of device memory never
# written), over t/cuda/plugin --real (every kernel of the plugin);
# memcheck and initcheck
# also over the backend-neutral operations and ownership tests with the
# `direct` strategy (one allocation per handle, so an access past a handle
# is past an allocation). A tool that stops without a verdict ("failed to
# track", an internal error) is a failure, not a pass.
san=$OUT/sanitizer.log
: > "$san"
# sanitize TOOL NAME LIMIT COMMAND...: one tool over one program; the
# verdict is the program's exit, the tool's error count, and whether the
# tool finished its analysis.
sanitize() {
	sz_tool=$1 sz_name=$2 sz_limit=$3
	shift 3
	sz_mark=$(wc -l < "$san")
	# shellcheck disable=SC2086
	stage "$sz_tool $sz_name" "$san" "$sz_limit" \
		./libtool --mode=execute "$sanitizer" --tool "$sz_tool" \
		--error-exitcode 86 --print-limit 50 $sz_extra "$@"
	sz_rc=$?
	sz_tail=$(tail -n +"$((sz_mark + 1))" "$san")
	# "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: ... (N errors, M warnings)".
	sz_errors=$(printf '%s\n' "$sz_tail" | sed -n -e 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' \
		-e 's/.*RACECHECK SUMMARY: .*(\([0-9]*\) error.*/\1/p' | tail -1)
	if printf '%s\n' "$sz_tail" | grep -q -i -E 'failed to track|internal sanitizer error|Sanitizer.*(error|failed):'; then
		say "  $sz_tool $sz_name: INCONCLUSIVE: $(printf '%s\n' "$sz_tail" | grep -i -m1 -E 'failed to track|internal sanitizer error|Sanitizer.*(error|failed):')"
	elif [ -z "$sz_errors" ]; then
		say "  $sz_tool $sz_name: no verdict (no ERROR SUMMARY; exit $sz_rc)"
	else
		say "  $sz_tool $sz_name: $sz_errors errors (exit $sz_rc)"
	fi
}
if [ -n "$sanitizer" ]; then
	say "$("$sanitizer" --version | grep -i version | head -1)"
	for tool in memcheck initcheck synccheck racecheck; do
		sz_extra=${GPU_CHECK_SANITIZER_FLAGS:-}
		case $tool in
		memcheck) sz_extra="$sz_extra --leak-check full --report-api-errors no" ;;
		# racecheck looks for hazards on shared memory, which only
		# the kernels of matmul.cu and reduce.cu use; over every
		# kernel it needs more than this run's budget (over a minute
		# for the add kernels' large buffers alone).
		racecheck) sz_extra="$sz_extra --kernel-name kns=wafer_matmul --kernel-name kns=wafer_reduce --kernel-name kns=wafer_softmax" ;;
		esac
		sanitize $tool "cuda_plugin --real" 300 t/cuda/plugin --real
	done
	export WAFER_BACKEND=cuda WAFER_MEMORY=direct
	# t/api/programs: the caller's own kernels (CUDA C through NVRTC, PTX).
	# t/api/interop: native pointers imported again as handles, a client on
	# another's stream; memcheck only, as its refusals may be driver
	# errors on purpose (cuPointerGetAttribute of memory the driver does
	# not know), which memcheck is told not to report.
	for t in api/ops api/ops_dtypes api/donation api/programs api/interop; do
		[ -x "t/$t" ] || continue
		for tool in memcheck initcheck; do
			[ $t = programs ] && [ $tool = initcheck ] && continue
			[ $t = interop ] && [ $tool = initcheck ] && continue
			sz_extra=${GPU_CHECK_SANITIZER_FLAGS:-}
			[ $tool = memcheck ] && sz_extra="$sz_extra --leak-check full --report-api-errors no"
			sanitize $tool "t/$t (direct)" 240 "t/$t"
		done
	done
	unset WAFER_BACKEND WAFER_MEMORY
else
	say "compute-sanitizer not found: no sanitizer stage"
fi
fi

#--- headline figures ----------------------------------------------------------
say ""
say "headline figures (ratios are ours / raw CUDA, measured in the same run):"
grep -E '^alloc strategy=(pool|stream|buckets) size=4096 ' "$bench" | sed 's/^/  /' | tee -a "$summary"
grep -E '^dispatch channel=' "$bench" | sed 's/^/  /' | tee -a "$summary"
grep -E '^bandwidth ' "$bench" | sed 's/^/  /' | tee -a "$summary"
grep -E '^sgemm n=4096 (own_best|raw)' "$bench" | sed 's/^/  /' | tee -a "$summary"
grep -E '^matmul n=1024|m=4096' "$bench" | sed 's/^/  /' | tee -a "$summary"
[ -n "$replayed" ] && say "${replayed#?}"
say "total: $(($(stamp) - began))s; logs in $OUT"
