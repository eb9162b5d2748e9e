#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# nccl-check.sh: the cuda plugin's peer copies and collectives on NVIDIA
# GPUs with the real NCCL, in one run. Run it from an unpacked
# `make dist` tarball (no autotools needed), on one GPU or several:
#
#   tar xf wafer-X.Y.Z.tar.xz && cd wafer-X.Y.Z
#   OUT=/some/dir sh dev/nccl-check.sh
#
# NCCL is NCCL_LIBRARY when set (a libnccl.so.2), else the one of the
# nvidia-nccl Python wheel (nvidia/nccl/lib/ under site-packages, found
# through python3), else libnccl.so.2 as ldconfig knows it, else the
# toolkit's lib64. Its directory goes on LD_LIBRARY_PATH, the plugin is
# told its path ([cuda] nccl = PATH in $OUT/nccl.conf, WAFER_CONFIG) and
# so is the benchmark's raw side (WAFER_BENCH_NCCL). The wheel's include/
# gives nccl.h when the toolkit has none (configure --with-nccl-include).
# The tree is configured and built unless it already was with nccl.h.
#
# NCCL_CHECK_MIB: the benchmark's largest size (default 1024: 4 KiB .. 1 GiB).
#
# Stages (each with a time limit; logs in $OUT, default ./nccl-check-out):
#   wafer-info                    the devices and their caps (peer copy,
#                                 collectives)
#   cuda_comm --real              the plugin through its ABI: peer copies
#                                 (two queues of one GPU, and two GPUs when
#                                 there are two), every collective, dtype
#                                 and op against a host reference (one
#                                 rank; two ranks on two GPUs), send and
#                                 recv between two GPUs, the caller's
#                                 ncclComm_t, NCCL off or missing
#   t/api/peer, t/api/comm (cuda)         through the core, on the three channels:
#                                 peer copies between two clients of one
#                                 GPU (or of two GPUs), a one-rank
#                                 communicator, open_group over two GPUs
#                                 with every collective and send/recv
#   t/api/comm_split, comm_group  sub-communicators 2 x 2 (four GPUs:
#                                 ncclCommSplit), grouped all-reduces
#                                 (ncclGroupStart/End)
#   wafer-launch                  one process a GPU (tools/wafer-launch,
#                                 no mpirun): an all-reduce across 2 and 4
#                                 processes; the kill test (a rank exits,
#                                 the launcher stops the others); the
#                                 [comm] timeout test (the others abort
#                                 the communicator themselves)
#   mlp --data-parallel=N         examples/mlp trained on one GPU, then
#                                 data parallel on 2 and 4 GPUs (as many
#                                 as there are): final loss beside one
#                                 rank's (they should agree to ~1e-3)
#   bench allreduce               wafer_comm_all_reduce beside
#                                 ncclAllReduce on the same buffers and
#                                 streams, 4 KiB .. 1 GiB (raw timed as
#                                 nccl-tests does: many in-place calls
#                                 between two events), with each side's
#                                 host time per call; the bucketed
#                                 sequence (50 all-reduces of 1-25 MiB);
#                                 one rank a GPU, and one rank alone when
#                                 there are more; peer copies of 256 MiB
# summary.log ends with the figures: busbw and vs_raw (NCCL's time /
# wafer's: the target is >= 0.95) at each size, call_us beside
# raw_call_us (target: at most 2x), the bucketed sequence's vs_raw
# (target >= 0.95), and the peer copies.
set -u

top=$(pwd)
OUT=${OUT:-$top/nccl-check-out}
mkdir -p "$OUT" || exit 1
jobs=${NCCL_CHECK_JOBS:-16}
summary=$OUT/summary.log
: > "$summary"
# say, stamp, stage (dev/stage.sh): each stage's limit is cut to what is
# left of the budget, 5 s kept back, and one with less than 15 s skipped.
. "$(dirname "$0")/stage.sh"
stage_reserve=5 stage_least=15 stage_width=30
began=$(stamp)
budget=${NCCL_CHECK_BUDGET:-570}

#--- the machine, the toolkit, NCCL ----------------------------------------------
say "wafer nccl-check: $(basename "$top") on $(hostname), $(date -u '+%Y-%m-%d %H:%M UTC')"
gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 |
		sed 's/^/gpu: /' | tee -a "$summary"
	gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
	[ "$gpus" -gt 1 ] && nvidia-smi topo -m 2>&1 | sed 's/^/topo: /' >> "$summary"
fi
find_toolkit

# The wheel's directory: nvidia.nccl may be a namespace package (no
# __file__), so its __path__.
wheel_dir() {
	for py in python3 /usr/bin/python3; do
		command -v "$py" >/dev/null 2>&1 || continue
		"$py" -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null && return
	done
}
nccl_lib=${NCCL_LIBRARY:-}
nccl_inc=
wheel=$(wheel_dir)
if [ -z "$nccl_lib" ] && [ -n "$wheel" ] && [ -e "$wheel/lib/libnccl.so.2" ]; then
	nccl_lib=$wheel/lib/libnccl.so.2
fi
if [ -z "$nccl_lib" ] && command -v ldconfig >/dev/null 2>&1; then
	nccl_lib=$(ldconfig -p 2>/dev/null | sed -n 's/.*libnccl\.so\.2 .*=> //p' | head -1)
fi
[ -z "$nccl_lib" ] && [ -e "$cuda_home/lib64/libnccl.so.2" ] && nccl_lib=$cuda_home/lib64/libnccl.so.2
if [ -z "$nccl_lib" ] || [ ! -e "$nccl_lib" ]; then
	say "no libnccl.so.2 (set NCCL_LIBRARY, or pip install nvidia-nccl-cu12): the collectives cannot run"
	exit 1
fi
nccl_lib=$(cd "$(dirname "$nccl_lib")" && pwd)/$(basename "$nccl_lib")
say "nccl: $nccl_lib${wheel:+ (wheel: $wheel)}"
if [ ! -e "$cuda_home/include/nccl.h" ]; then
	for d in "${wheel:-/nonexistent}/include" "$(dirname "$(dirname "$nccl_lib")")/include"; do
		[ -e "$d/nccl.h" ] && { nccl_inc=$d; break; }
	done
	[ -n "$nccl_inc" ] && say "nccl.h: $nccl_inc (the toolkit has none)"
fi
export LD_LIBRARY_PATH="$(dirname "$nccl_lib"):$cuda_home/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}

#--- build ---------------------------------------------------------------------
build=$OUT/build.log
: > "$build"
if [ -f Makefile ] && grep -q 'define WAFER_HAVE_NCCL_H 1' build-config.h 2>/dev/null; then
	say "build: reusing the configured tree (nccl.h found there)"
else
	stage configure "$build" 300 ./configure --enable-cuda --with-cuda="$cuda_home" \
		${nccl_inc:+--with-nccl-include="$nccl_inc"} || { tail -30 "$build"; exit 1; }
	grep -q 'define WAFER_HAVE_NCCL_H 1' build-config.h ||
		say "configure found no nccl.h: the plugin has no collectives"
fi
stage "make -j$jobs" "$build" 400 make -j"$jobs" || { tail -40 "$build"; exit 1; }
stage "make check programs" "$build" 300 make -j"$jobs" check TESTS= ||
	{ tail -40 "$build"; exit 1; }

# The environment the test suite gives its programs (t/local.mk), and
# the plugin told where NCCL is.
export WAFER_PLUGIN_PATH="$top/plugins/cuda/.libs:$top/plugins/cpu/.libs"
export WAFER_SYSCONFDIR="$top/etc"
export XDG_CONFIG_HOME="$top/t/xdg-config" XDG_CACHE_HOME="$top/t/xdg-cache"
export T_BUILDDIR="$top/t" T_SRCDIR="$top/t"
unset WAFER_MEMORY WAFER_CHANNEL WAFER_LOG
printf '[core]\nbackend = cuda, cpu\n[cuda]\nnccl = %s\n' "$nccl_lib" > "$OUT/nccl.conf"
export WAFER_CONFIG="$OUT/nccl.conf"
export CUDA_COMM_NCCL="$nccl_lib" WAFER_BENCH_NCCL="$nccl_lib"
run=$top/uninstalled

#--- the plugin ------------------------------------------------------------------
plugin=$OUT/plugin.log
: > "$plugin"
stage wafer-info "$plugin" 60 "$run" tools/wafer-info
grep -E "^  cuda:[0-9]|capabilities:" "$plugin" | head -4 | sed 's/^ */  /' | tee -a "$summary"
stage "cuda_comm --real" "$plugin" 180 ./libtool --mode=execute t/cuda/comm --real
say "  cuda_comm: $(grep -c '^ok' "$plugin") ok ($(grep -c '# SKIP' "$plugin") skipped), $(grep -c '^not ok' "$plugin") not ok"
grep -E '^not ok' "$plugin" | head -10 | sed 's/^/  /' | tee -a "$summary"

#--- through the core ----------------------------------------------------------
check=$OUT/check.log
: > "$check"
rm -f t/api/peer.log t/api/comm.log t/api/peer.trs t/api/comm.trs \
	t/api/comm_split.log t/api/comm_split.trs t/api/comm_group.log \
	t/api/comm_group.trs
# One at a time, each with its own limit: on one GPU, t/api/comm's open_group
# puts two ranks on it, which NCCL refuses ("Duplicate GPU detected"),
# though its guide warns such a clique "may lead to hangs". comm_split
# needs four GPUs (2 x 2: ncclCommSplit into rows and columns), and skips
# with fewer; comm_group two (ncclGroupStart/End around three all-reduces).
for t in api/peer api/comm api/comm_split api/comm_group; do
	stage "t/$t (cuda)" "$check" 150 make check TESTS="t/$t" WAFER_BACKEND=cuda
	[ -f "t/$t.log" ] || continue
	cat "t/$t.log" >> "$check"
	say "  t/$t: $(grep -c '^ok' "t/$t.log") ok ($(grep -c '# SKIP' "t/$t.log") skipped), $(grep -c '^not ok' "t/$t.log") not ok"
	grep -E '^not ok' "t/$t.log" | head -10 | sed 's/^/  /' | tee -a "$summary"
done

#--- several processes: wafer-launch ------------------------------------------------
# One process a GPU, started by tools/wafer-launch (no mpirun here), the
# communicator id through the launcher's file (wafer_comm_launched), NCCL
# across the processes: t/internal/launch_rank --allreduce on 2 and 4
# GPUs (as many as there are). Then the kill test: rank 1 exits 3 once
# the communicator is open, the others wait in an all-reduce for it;
# wafer-launch must stop them (SIGTERM) and exit 3 within seconds. Then
# the same with the others ignoring SIGTERM and a launcher grace of 60 s:
# their own [comm] timeout (3 s) must abort the communicator
# (ncclCommAbort) and fail the all-reduce, naming the communicator, rank
# and collective, and they exit 1 by themselves, before any SIGKILL.
launch=$OUT/launch.log
: > "$launch"
printf '[core]\nbackend = cuda, cpu\n[cuda]\nnccl = %s\n[comm]\ntimeout = 3\n' \
	"$nccl_lib" > "$OUT/nccl-timeout.conf"
rank_prog=$top/t/internal/launch_rank
# alive_after LOG: the pids launch_rank printed that still run.
alive_after() {
	for pid in $(sed -n 's/^rank [0-9]* of [0-9]* pid //p' "$1"); do
		kill -0 "$pid" 2>/dev/null && echo "$pid"
	done
}
for n in 2 4; do
	[ "$gpus" -ge "$n" ] || continue
	log=$OUT/launch-$n.log
	stage "wafer-launch -n $n (all-reduce)" "$log" 120 \
		"$run" tools/wafer-launch -n $n "$rank_prog" --allreduce
	cat "$log" >> "$launch"
	say "  wafer-launch -n $n: $(grep -c 'all_reduce right' "$log") of $n ranks all-reduced right"
	log=$OUT/launch-kill-$n.log
	t0=$(stamp)
	stage_expect=3
	stage "wafer-launch -n $n kill" "$log" 120 \
		"$run" tools/wafer-launch -n $n --grace 5 "$rank_prog" --allreduce --die-at 1
	stage_expect=
	took=$(($(stamp) - t0))
	cat "$log" >> "$launch"
	say "  kill test, $n ranks: $(grep -c 'exited with status 3: stopping' "$log") launcher stop line, ${took}s, still running: [$(alive_after "$log" | tr '\n' ' ')]"
	log=$OUT/launch-timeout-$n.log
	t0=$(stamp)
	WAFER_CONFIG=$OUT/nccl-timeout.conf
	stage_expect=3
	stage "wafer-launch -n $n timeout" "$log" 150 \
		"$run" tools/wafer-launch -n $n --grace 60 "$rank_prog" --allreduce --die-at 1 --ignore-term
	stage_expect=
	took=$(($(stamp) - t0))
	WAFER_CONFIG=$OUT/nccl.conf
	cat "$log" >> "$launch"
	say "  timeout test, $n ranks: $(grep -c '\[comm\] timeout' "$log") of $((n - 1)) ranks aborted by [comm] timeout, SIGKILL lines: $(grep -c SIGKILL "$log"), ${took}s, still running: [$(alive_after "$log" | tr '\n' ' ')]"
	grep -m1 'not finished after' "$log" | sed 's/^/    /' | tee -a "$summary"
done
[ "$gpus" -ge 2 ] || say "  one GPU: no wafer-launch runs (one process a GPU)"

#--- the data-parallel MLP -------------------------------------------------------
mlp=$OUT/mlp.log
: > "$mlp"
rm -f "$OUT"/mlp-[124].log
export WAFER_BACKEND=cuda
loss_of() { sed -n 's/^final loss //p' "$1" | tail -1; }
stage "mlp (one rank)" "$OUT/mlp-1.log" 120 "$run" examples/mlp
cat "$OUT/mlp-1.log" >> "$mlp"
one=$(loss_of "$OUT/mlp-1.log")
for n in 2 4; do
	[ "$gpus" -ge "$n" ] || continue
	stage "mlp --data-parallel=$n" "$OUT/mlp-$n.log" 180 "$run" examples/mlp --data-parallel=$n
	cat "$OUT/mlp-$n.log" >> "$mlp"
	say "  mlp --data-parallel=$n: final loss $(loss_of "$OUT/mlp-$n.log") (one rank: ${one:-none})"
done
[ "$gpus" -ge 2 ] || say "  one GPU: no data-parallel MLP (one rank's loss: ${one:-none})"
unset WAFER_BACKEND

#--- the benchmark ---------------------------------------------------------------
bench=$OUT/bench.log
: > "$bench"
export WAFER_BACKEND=cuda
mib=${NCCL_CHECK_MIB:-1024}
stage "bench allreduce (all GPUs)" "$bench" 240 "$run" tools/wafer-bench allreduce "$mib" 20
if [ "$gpus" -gt 1 ]; then
	stage "bench allreduce (one rank)" "$bench" 120 "$run" tools/wafer-bench allreduce "$mib" 20 1
fi
unset WAFER_BACKEND

say ""
say "figures (vs_raw = NCCL's time / wafer's, same buffers, same run):"
grep -E '^(allreduce|buckets|peer_copy) ' "$bench" | sed 's/ raw="[^"]*"//; s/^/  /' | tee -a "$summary"
grep -m1 -o 'raw="[^"]*"' "$bench" | sed 's/^/  /' | tee -a "$summary"
[ "$gpus" -lt 2 ] && say "  one GPU: no two-rank all-reduce, no peer copy between GPUs (the two-GPU kind runs them)"
say "total: $(($(stamp) - began))s; logs in $OUT"
