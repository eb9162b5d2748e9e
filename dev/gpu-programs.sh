#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# gpu-programs.sh: programs, the caller's own kernels (wafer-program(7)),
# on an NVIDIA GPU — what the suite's stand-in drivers cannot show: CUDA C
# compiled by the real NVRTC for the GPU's architecture and PTX compiled by
# the driver, run on the device, and the same test program on NVIDIA's
# OpenCL. Run it from the top of a source tree or an unpacked `make dist`
# tarball on the GPU machine; it builds the tree first unless it is built
# (GPU_PROGRAMS_JOBS, default 16):
#
#   OUT=/some/dir sh dev/gpu-programs.sh
#
# Results go to $OUT (default ./gpu-programs-out):
#
#   summary.log   the device, each stage's verdict and time, the counts
#                 of each test and the dispatch figures (printed at the end)
#   programs.log  wafer-info; t/programs with WAFER_BACKEND=cuda (CUDA C
#                 and PTX on every channel, compile errors with NVRTC's log,
#                 a second process that compiles nothing), under
#                 compute-sanitizer memcheck when it is there; t/programs
#                 and t/opencl_plugin on NVIDIA's OpenCL platform
#   bench.log     wafer-bench dispatch on cuda: a program kernel by ref
#                 beside a catalogue kernel by ref (program_vs_ref)
#
# Every stage has a time limit; the whole run stays inside
# GPU_PROGRAMS_BUDGET seconds (540).
set -u

top=$(pwd)
OUT=${OUT:-$top/gpu-programs-out}
mkdir -p "$OUT" || exit 1
jobs=${GPU_PROGRAMS_JOBS:-16}
budget=${GPU_PROGRAMS_BUDGET:-540}
summary=$OUT/summary.log
log=$OUT/programs.log
bench=$OUT/bench.log
: > "$summary"
: > "$log"
: > "$bench"
began=$(date +%s)
failed=0

say() { printf '%s\n' "$*" | tee -a "$summary"; }

# stage NAME LOG LIMIT COMMAND...: COMMAND's output appended to LOG under
# a time limit (cut to what is left of the budget); the verdict noted.
stage() {
	name=$1 out=$2 limit=$3
	shift 3
	left=$((began + budget - $(date +%s) - 5))
	if [ "$left" -lt 15 ]; then
		say "$(printf '%-34s %s' "$name" "SKIPPED (out of time)")"
		return 125
	fi
	[ "$limit" -gt "$left" ] && limit=$left
	t0=$(date +%s)
	printf '\n===== %s: %s\n' "$name" "$*" >> "$out"
	timeout "$limit" "$@" >> "$out" 2>&1
	rc=$?
	verdict=ok
	[ $rc -eq 124 ] && verdict="TIMED OUT after ${limit}s"
	[ $rc -ne 0 ] && [ $rc -ne 124 ] && verdict="FAILED (exit $rc)"
	[ $rc -ne 0 ] && failed=$((failed + 1))
	say "$(printf '%-34s %-22s %4ss' "$name" "$verdict" $(($(date +%s) - t0)))"
	return $rc
}

# counts NAME: the TAP counts of the last stage's output in $log.
counts() {
	last=$(awk '/^===== /{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$log")
	say "  $1: $(printf '%s' "$last" | grep -c '^ok') ok ($(printf '%s' "$last" | grep -c '^ok.*# SKIP') skipped), $(printf '%s' "$last" | grep -c '^not ok') not ok"
	printf '%s' "$last" | grep -A3 '^not ok' | head -30 | sed 's/^/    /' | tee -a "$summary"
}

#--- the machine and the build -------------------------------------------------
say "wafer gpu-programs: $(basename "$top") on $(hostname), $(date -u '+%Y-%m-%d %H:%M UTC')"
command -v nvidia-smi >/dev/null 2>&1 &&
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 |
	sed 's/^/gpu: /' | tee -a "$summary"
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null | head -1)
if [ -z "$nvcc" ]; then
	say "no nvcc on PATH or in /usr/local/cuda: cannot build the cuda plugin"
	exit 1
fi
cuda_home=$(dirname "$(dirname "$nvcc")")
# NVRTC and the sanitizer's libraries live beside the toolkit.
export LD_LIBRARY_PATH="$cuda_home/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ ! -x t/programs ] || [ ! -e plugins/cuda/.libs/cuda.so ]; then
	[ -x configure ] || stage autoreconf "$OUT/build.log" 120 autoreconf -fi ||
		exit 1
	stage configure "$OUT/build.log" 240 ./configure --enable-cuda \
		--with-cuda="$cuda_home" || { tail -30 "$OUT/build.log"; exit 1; }
	stage "make -j$jobs" "$OUT/build.log" 400 make -j"$jobs" ||
		{ tail -40 "$OUT/build.log"; exit 1; }
	stage "make check programs" "$OUT/build.log" 240 \
		make -j"$jobs" check TESTS= || { tail -40 "$OUT/build.log"; exit 1; }
fi
run=$top/uninstalled
# The sources beside a build in another directory.
src=$(sed -n 's/^abs_top_srcdir = //p' Makefile 2>/dev/null)
[ -n "$src" ] || src=$top

# The test suite's environment (t/local.mk), with a cache of its own so
# the first compilation is a real one.
export WAFER_PLUGIN_PATH="$top/plugins/cuda/.libs:$top/plugins/opencl/.libs:$top/plugins/cpu/.libs"
export WAFER_SYSCONFDIR="$top/etc"
export XDG_CONFIG_HOME="$top/t/xdg-config"
export XDG_CACHE_HOME="$OUT/xdg-cache"
export T_BUILDDIR="$top/t" T_SRCDIR="$src/t"
rm -rf "$XDG_CACHE_HOME"
unset WAFER_MEMORY WAFER_CHANNEL WAFER_LOG WAFER_CONFIG
# GPU_PROGRAMS_CONFIG (for trying the script without a GPU, on the tests'
# stand-in driver) becomes WAFER_CONFIG; otherwise none is read.
[ -n "${GPU_PROGRAMS_CONFIG:-}" ] && export WAFER_CONFIG="$GPU_PROGRAMS_CONFIG"

stage wafer-info "$log" 60 "$run" tools/wafer-info
grep -E "^ *(cuda|opencl):" "$log" | head -4 | sed 's/^/  /' | tee -a "$summary"

#--- cuda ----------------------------------------------------------------------
stage "t/programs (cuda)" "$log" 180 env WAFER_BACKEND=cuda t/programs
counts "t/programs on cuda"
sanitizer=$(command -v compute-sanitizer ||
	ls "$cuda_home"/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -n "$sanitizer" ]; then
	# The program kernels on the device with memcheck: an access past a
	# binding is an error (one allocation per handle with `direct`).
	stage "memcheck t/programs (cuda)" "$log" 240 env WAFER_BACKEND=cuda \
		WAFER_MEMORY=direct ./libtool --mode=execute "$sanitizer" \
		--tool memcheck --report-api-errors no --error-exitcode 86 \
		--print-limit 20 t/programs
	counts "t/programs on cuda under memcheck"
fi

#--- NVIDIA's OpenCL -------------------------------------------------------------
conf=$OUT/opencl-nvidia.conf
printf '[core]\nbackend = opencl\n[opencl]\nplatform = NVIDIA\n' > "$conf"
if WAFER_CONFIG=$conf "$run" tools/wafer-info -q --backend opencl >/dev/null 2>&1; then
	stage "t/programs (opencl, NVIDIA)" "$log" 180 \
		env WAFER_CONFIG="$conf" WAFER_BACKEND=opencl t/programs
	counts "t/programs on NVIDIA OpenCL"
	stage "t/opencl_plugin (NVIDIA)" "$log" 180 \
		env WAFER_CONFIG="$conf" t/opencl_plugin
	counts "t/opencl_plugin on NVIDIA OpenCL"
else
	say "no NVIDIA OpenCL platform (wafer-info --backend opencl with platform = NVIDIA): skipped"
fi

#--- the cost of a launch by ref -------------------------------------------------
stage "bench dispatch (cuda)" "$bench" 180 env WAFER_BACKEND=cuda \
	"$run" tools/wafer-bench dispatch 200000 20000
grep -E "program|by_ref|ref" "$bench" | head -12 | sed 's/^/  /' | tee -a "$summary"

say "done in $(($(date +%s) - began))s; $failed stage(s) failed"
[ "$failed" -eq 0 ]
