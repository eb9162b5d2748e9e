#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# cuda.sh: the cuda plugin through the core (TAP). Without a driver it
# loads and reports zero devices with the reason, which wafer-info shows,
# and the next backend is the default. On the stand-in driver
# (t/standins/fakecuda.c) it is accepted, and the backend-neutral suite — t/api/client,
# t/api/channels, t/api/stress, t/api/ops, t/api/ops_dtypes, t/api/donation, t/api/memory_oom, t/api/interop,
# t/api/queues, t/api/graphs, t/api/program_images, t/api/trace, t/api/host, and
# t/api/peer and t/api/comm with the stand-in NCCL (t/standins/fakenccl.c) — passes on it
# with
# WAFER_BACKEND=cuda, also with every stream step slowed down and with
# each memory strategy; examples/mlp --data-parallel=N (N ranks in one
# process, a stand-in GPU each) reaches the loss of one GPU. The
# stand-in emulates each kernel by its name over the grid and block it
# was launched with, refuses a block the kernel
# is not written for and a kernel it cannot emulate, and checks stream
# order for stream-ordered memory and each stream's context; so this
# checks the plugin's host side (which function, which arguments, which
# grid and block, staging, streams). It also reports, as initcheck does
# on a GPU, a copy or kernel reading device memory nothing wrote: a run
# with such a line ("fakecuda: uninitialised read") fails. The kernels'
# device code runs on a GPU only (dev/gpu-check.sh). A sub-test's skipped
# points are reported as skipped, never as passes.
set -u

if [ -z "${T_BUILDDIR:-}" ]; then
	echo "1..0 # SKIP T_BUILDDIR is not set (run through make check)"
	exit 0
fi
top=$T_BUILDDIR/..
if [ ! -e "$top/plugins/cuda/.libs/cuda.so" ]; then
	echo "1..0 # SKIP the cuda plugin was not built"
	exit 0
fi
info=$top/tools/wafer-info
fake=$T_BUILDDIR/standins/.libs/fakecuda.so
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wafer-cuda.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset WAFER_BACKEND WAFER_LOG WAFER_CHANNEL WAFER_MEMORY
unset FAKECUDA_DELAY_US FAKECUDA_INIT FAKECUDA_VERSION FAKECUDA_DEVICES

n=0
failed=0
pass() {
	n=$((n + 1))
	echo "ok $n - $1"
}
# skip NAME REASON: a point not tested here, reported as TAP's skip.
skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}
fail() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	[ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/# /'
}
# contains NAME TEXT NEEDLE
contains() {
	case $2 in
	*"$3"*) pass "$1" ;;
	*) fail "$1" "wanted: $3
in: $2" ;;
	esac
}

# The stand-in NCCL (t/standins/fakenccl.c), when nccl.h was found to build it.
nccl=$T_BUILDDIR/standins/.libs/fakenccl.so

# conf FILE DRIVER: a configuration preferring cuda, then cpu (with the
# stand-in NCCL beside the stand-in driver).
conf() {
	{
		echo "[core]"
		echo "backend = cuda, cpu"
		echo "[cuda]"
		[ -n "$2" ] && echo "driver_library = $2"
		[ -n "$2" ] && [ -e "$nccl" ] && echo "nccl = $nccl"
		echo "cublas = no"
	} > "$1"
}

echo "1..69"

#--- no driver ---------------------------------------------------------------
conf "$tmp/missing.conf" /nonexistent/libcuda.so.1
out=$(WAFER_CONFIG=$tmp/missing.conf "$info" 2>&1)
contains "no driver: wafer-info gives the reason" "$out" \
	"cuda: no devices: /nonexistent/libcuda.so.1 not found: /nonexistent/libcuda.so.1: cannot open shared object file"
contains "no driver: the plugin still loaded (path shown)" "$out" \
	"plugins/cuda/.libs/cuda.so"
contains "no driver: cpu is the default device" "$out" "Default device: cpu:0"
if WAFER_CONFIG=$tmp/missing.conf "$info" -q --backend cuda >/dev/null 2>&1; then
	fail "no driver: wafer-info -q --backend cuda exits 1"
else
	pass "no driver: wafer-info -q --backend cuda exits 1"
fi

# The plain name, searched as the dynamic linker does.
conf "$tmp/default.conf" ""
out=$(WAFER_CONFIG=$tmp/default.conf "$info" 2>&1)
case $out in
*"cuda: accepted"*)
	skip "default driver: a reason is given" \
		"libcuda.so.1 is installed and works here" ;;
*)
	if command -v ldconfig >/dev/null 2>&1 &&
		ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
		contains "default driver: a reason is given" "$out" \
			"cuda: no devices: "
	else
		contains "default driver: libcuda.so.1 not found" "$out" \
			"cuda: no devices: libcuda.so.1 not found: libcuda.so.1: cannot open shared object file"
	fi ;;
esac

#--- the stand-in driver -----------------------------------------------------
conf "$tmp/fake.conf" "$fake"
out=$(WAFER_CONFIG=$tmp/fake.conf "$info" 2>&1)
contains "stand-in driver: cuda accepted" "$out" "cuda: accepted, 1 device"
contains "stand-in driver: cuda:0 is the default device" "$out" \
	"Default device: cuda:0 (Fake GPU 0 (compute 9.0, 132 SMs))"
# pinned-host is not among them: host_alloc is retired in ABI 1.1.
contains "stand-in driver: capabilities" "$out" \
	"capabilities: stream-ordered-alloc virtual-memory device-timers"

# What the stand-in says of a read of device memory nothing wrote.
uninit='^fakecuda: uninitialised read'

# suite NAME [VAR=value...]: a backend-neutral test on cuda. Its skipped
# points are counted apart from its passes; one that skipped everything
# is a skip here, with its reason.
suite() {
	name=$1
	shift
	# The points' names leave out the scratch directory's random name.
	args=$(printf '%s' "$*" | sed "s|$tmp/||g")
	if out=$(env WAFER_CONFIG="$tmp/fake.conf" WAFER_BACKEND=cuda "$@" \
		"$T_BUILDDIR/api/$name" 2>&1); then
		skipped=$(printf '%s\n' "$out" | grep -c '^ok .*# *SKIP')
		passed=$(printf '%s\n' "$out" | grep '^ok' |
			grep -vc '# *SKIP')
		if printf '%s\n' "$out" | grep -q '^not ok'; then
			fail "t/api/$name on cuda (stand-in)${args:+ $args}" \
				"$(printf '%s\n' "$out" | grep -A3 '^not ok' | head -20)"
		elif printf '%s\n' "$out" | grep -q "$uninit"; then
			fail "t/api/$name on cuda (stand-in)${args:+ $args}: reads of unwritten device memory" \
				"$(printf '%s\n' "$out" | grep "$uninit" | head -20)"
		elif [ "$passed" -eq 0 ]; then
			why=$(printf '%s\n' "$out" | sed -n 's/^1\.\.0 *# *SKIP *//p')
			skip "t/api/$name on cuda (stand-in)${args:+ $args}" \
				"${why:-no point passed ($skipped skipped)}"
		else
			pass "t/api/$name on cuda (stand-in)${args:+ $args} ($passed passed, $skipped skipped)"
		fi
	else
		fail "t/api/$name on cuda (stand-in)${args:+ $args}" \
			"$(printf '%s\n' "$out" | grep -v '^ok' | tail -20)"
	fi
}
suite client
suite channels
suite stress WAFER_STRESS_OPS=300
suite ops
suite ops_dtypes
suite donation
# The caller's own kernels: CUDA C through the real NVRTC, PTX (the
# stand-in emulates the test's kernels by name: t/standins/fakecuda_program.c).
suite programs
suite programs FAKECUDA_DELAY_US=20
suite program_images
suite ops FAKECUDA_DELAY_US=10
suite client FAKECUDA_DELAY_US=20
# Several queues of one client: with every stream step slowed down, a
# missing cross-queue wait shows as wrong bytes.
suite queues
suite queues FAKECUDA_DELAY_US=20
# Graphs: runs of launches become CUDA graphs (stream capture, replayed
# by cuGraphLaunch), slowed down too.
suite graphs
suite graphs FAKECUDA_DELAY_US=20
# The timeline trace: device spans from the stand-in's events, placed
# inside the trace also when every stream step is slowed down.
suite trace
suite trace FAKECUDA_DELAY_US=20
# Registered host memory: copies from it read it only when they run.
suite host
suite host FAKECUDA_DELAY_US=20
# Peer copies and collectives (through the stand-in NCCL, whose ranks
# meet in this process): two devices (copies device to device, an
# open_group of cuda:0 and cuda:1), one (two ranks on one GPU refused as
# NCCL refuses them), slowed down; without NCCL, collectives are refused
# and nothing else changes.
suite peer FAKECUDA_DEVICES=2
suite peer FAKECUDA_DEVICES=2 FAKECUDA_DELAY_US=20
suite comm FAKECUDA_DEVICES=2
suite comm FAKECUDA_DEVICES=2 FAKECUDA_DELAY_US=20
if [ -e "$nccl" ]; then
	suite comm
	# Sub-communicators, 2 x 2 on four stand-in GPUs (ncclCommSplit).
	suite comm_split FAKECUDA_DEVICES=4
	suite comm_split FAKECUDA_DEVICES=4 FAKECUDA_DELAY_US=20
	# Grouped collectives: the stand-in NCCL counts the calls it got
	# between ncclGroupStart and ncclGroupEnd.
	suite comm_group FAKECUDA_DEVICES=2 T_FAKENCCL="$nccl"
	suite comm_group FAKECUDA_DEVICES=2 FAKECUDA_DELAY_US=20 T_FAKENCCL="$nccl"
else
	skip "t/api/comm on cuda (stand-in)" "no stand-in NCCL (nccl.h not found)"
fi

# examples/mlp --data-parallel=N: N ranks in this process, one per device,
# an open_group communicator through the stand-in NCCL. As t/cpu/mpi.sh
# checks the MPI mode: one rank reaches one device's loss exactly, two
# within 5% (the gradients are sums of two partial sums there).
final_loss() { printf '%s\n' "$1" | sed -n 's/^final loss \([0-9.]*\)$/\1/p'; }
# mlp [VAR=value...] [ARG]: examples/mlp on the stand-in (values without
# spaces); its output in $mlp_out, its exit status in $mlp_status.
mlp() {
	vars=
	while [ $# -gt 0 ]; do
		case $1 in
		-*) break ;;
		*=*) vars="$vars $1"; shift ;;
		*) break ;;
		esac
	done
	# shellcheck disable=SC2086 # $vars: VAR=value words
	# 200 steps: the stand-in runs every kernel on the host.
	mlp_out=$(env WAFER_CONFIG="$tmp/fake.conf" WAFER_BACKEND=cuda $vars \
		"$top/examples/mlp" --steps=200 "$@" 2>&1)
	mlp_status=$?
	if printf '%s\n' "$mlp_out" | grep -q "$uninit"; then
		mlp_status=99
		mlp_out="$mlp_out
(reads of unwritten device memory)"
	fi
}
mlp
want=$(final_loss "$mlp_out")
if [ "$mlp_status" = 0 ] && [ -n "$want" ]; then
	pass "examples/mlp on cuda (stand-in): trains (final loss $want)"
else
	fail "examples/mlp on cuda (stand-in): trains (exit $mlp_status)" \
		"$(printf '%s\n' "$mlp_out" | tail -20)"
fi
# --graph: the replayed steps are CUDA graphs on the stand-in.
mlp --graph
got=$(final_loss "$mlp_out")
case $mlp_status:$mlp_out in
0:*"same losses as eager"*)
	pass "examples/mlp --graph on cuda (stand-in): the losses of eager steps ($got)" ;;
*)
	fail "examples/mlp --graph on cuda (stand-in): the losses of eager steps (exit $mlp_status)" \
		"$(printf '%s\n' "$mlp_out" | tail -20)" ;;
esac
if [ -e "$nccl" ]; then
	mlp --data-parallel=1
	got=$(final_loss "$mlp_out")
	if [ "$mlp_status" = 0 ] && [ -n "$got" ] && [ "$got" = "$want" ]; then
		pass "examples/mlp --data-parallel=1 on cuda (stand-in NCCL): the same loss exactly ($got)"
	else
		fail "examples/mlp --data-parallel=1 on cuda (stand-in NCCL): the same loss exactly ($got vs $want, exit $mlp_status)" \
			"$(printf '%s\n' "$mlp_out" | tail -20)"
	fi
	mlp FAKECUDA_DEVICES=2 --data-parallel=2
	got=$(final_loss "$mlp_out")
	close=$(awk -v a="$got" -v b="$want" 'BEGIN {
		d = a - b; if (d < 0) d = -d
		print (a != "" && b != "" && d <= 0.05 * b) ? 1 : 0 }')
	case $mlp_out in
	*"data parallel: 2 ranks in this process on cuda:0..1"*) ranks=1 ;;
	*) ranks=0 ;;
	esac
	if [ "$mlp_status" = 0 ] && [ "$close" = 1 ] && [ "$ranks" = 1 ]; then
		pass "examples/mlp --data-parallel=2 on two stand-in GPUs: the loss of one, within 5% ($got vs $want)"
	else
		fail "examples/mlp --data-parallel=2 on two stand-in GPUs: the loss of one, within 5% ($got vs $want, exit $mlp_status)" \
			"$(printf '%s\n' "$mlp_out" | tail -20)"
	fi
else
	skip "examples/mlp --data-parallel=1 on cuda" "no stand-in NCCL (nccl.h not found)"
	skip "examples/mlp --data-parallel=2 on cuda" "no stand-in NCCL (nccl.h not found)"
fi
# Each memory strategy reaches other storage entries: plain, stream-ordered
# (stream), virtual memory (pool, the default).
for strategy in direct chunked buckets stream; do
	suite client WAFER_MEMORY=$strategy
done
suite channels FAKECUDA_DELAY_US=20
# [memory] limit and the out-of-memory handler: on mapped pages (VMM), on
# plain allocations, and a percentage of another memory size.
suite memory_oom
suite memory_oom FAKECUDA_NO_VMM=1
suite memory_oom FAKECUDA_MEMORY=3000000000
# Native pointers and streams out, the caller's in (the stand-in says
# whose memory a pointer is and which context a stream belongs to): on
# the pool's mapped pages, on stream-ordered memory, and slowed down.
suite interop
suite interop WAFER_MEMORY=stream
suite interop FAKECUDA_DELAY_US=20
# DLPack exchange (kDLCUDA), built only with DLPack's header: else the
# three points are skips with configure's reason.
for args in dlpack "dlpack FAKECUDA_DELAY_US=20" dlpack_versioned; do
	set -- $args
	if [ -x "$T_BUILDDIR/api/$1" ]; then
		suite "$@"
	else
		skip "t/api/$args on cuda (stand-in)" "not built here (${WAFER_DLPACK_WHY:-DLPack not configured})"
	fi
done
# Whole maps: each vm_map is one physical allocation ([cuda] vm_page =
# whole) and the pool unmaps whole units only; the stand-in refuses an
# unmap that cuts a mapping.
{ cat "$tmp/fake.conf"; echo "vm_page = whole"; echo "[memory.pool]"
  echo "unmap = whole"; } > "$tmp/units.conf"
suite client WAFER_CONFIG="$tmp/units.conf"
suite memory_oom WAFER_CONFIG="$tmp/units.conf"

# wafer-replay on the device's real storage (--storage), the stand-in's.
replay() {
	if out=$(env WAFER_CONFIG="$tmp/fake.conf" "$top/tools/wafer-replay" \
		--strategy "$1" --storage "$2" "$T_SRCDIR/replay-small.trace" 2>&1); then
		case $out in
		*"fakecuda: uninitialised read"*)
			fail "wafer-replay --strategy $1 --storage $2: reads of unwritten device memory" \
				"$(printf '%s\n' "$out" | grep "$uninit" | head -20)"
			return ;;
		esac
		contains "wafer-replay --strategy $1 --storage $2" "$out" \
			"strategy=$1 events="
	else
		fail "wafer-replay --strategy $1 --storage $2" "$out"
	fi
}
replay pool cuda
replay stream cuda
# stream's ratio counts live and pending bytes; beside it the driver
# pool's own high-water mark (the stand-in's pool keeps live async bytes,
# rounded to 256: 1024 + 3072 at least, with both live).
case $out in
*" driver_reserved="*)
	high=${out#* driver_reserved=}
	high=${high%% *}
	if [ "$high" -ge 4096 ]; then
		pass "stream: driver_reserved=$high beside its ratio"
	else
		fail "stream: driver_reserved=$high below the 4096 bytes live" "$out"
	fi ;;
*)	fail "stream: driver_reserved= beside its ratio" "$out" ;;
esac
replay direct cuda

# [cuda] vm_page: each page of the pool is one physical allocation of
# that size. The address range is set, not the default 131072 pages (1 TiB
# here), which a sanitizer's shadow layout may not have room for.
{ cat "$tmp/fake.conf"; echo "vm_page = 8M"; } > "$tmp/page8.conf"
out=$(env WAFER_CONFIG="$tmp/page8.conf" "$top/tools/wafer-replay" \
	--strategy pool --option memory.pool.va_size=256M --storage cuda \
	"$T_SRCDIR/replay-small.trace" 2>&1)
contains "vm_page = 8M: one 8 MiB page mapped" "$out" \
	"peak_reserved=8388608 ratio=2097.152 storage_ops=2 steady_ops=0 calls=vm_reserve:1,vm_map:1 pages=map:1,unmap:0"

# [cuda] vm_page = whole: each vm_map call is one physical allocation of
# its size, and vm_unmap takes whole earlier calls only (the stand-in's
# cuMemUnmap refuses a part of a mapping, as CUDA does). The trace: a
# 24 MiB block (12 pages, mapped in units of 2: a quarter of its span),
# a 2 MiB one after it, the first freed, a 4 MiB block in its hole (pages
# 0-1), then a 30 MiB one past the second (15 pages: 7 units of 2 and one
# of 1). Each unit is a physical allocation of its own, but the units of
# one block are one vm_map_pieces call (3 calls in all, not 15). With
# overhead 0 the hole's idle pages 2-11 must go first: its 5 idle units,
# each a cuMemUnmap of one whole mapping (one vm_unmap call). The plugin says it
# takes whole unmaps only (WAFER_STORAGE_FIGURE_WHOLE_UNMAPS), so the
# pool's [memory.pool] unmap is whole by default there, and pages (which
# would cut a mapping) is refused when the strategy is made.
printf 'a 1 25165824\na 2 2097152\nf 1\na 3 4194304\na 4 31457280\nf 2\nf 3\nf 4\n' \
	> "$tmp/units.trace"
{ cat "$tmp/fake.conf"; echo "vm_page = whole"; } > "$tmp/whole.conf"
units() {
	env WAFER_CONFIG="$tmp/whole.conf" "$top/tools/wafer-replay" \
		--strategy pool --option memory.pool.va_size=256M \
		--option memory.pool.overhead=0 "$@" --storage cuda \
		"$tmp/units.trace" 2>&1
}
units_line="peak_reserved=37748736 ratio=1.000 storage_ops=5 steady_ops=2 calls=vm_reserve:1,vm_map:3,vm_unmap:1 pages=map:28,unmap:10 failures=0"
contains "vm_page = whole: the pool unmaps whole units by default" \
	"$(units)" "$units_line"
contains "vm_page = whole, unmap = whole: the same" \
	"$(units --option memory.pool.unmap=whole)" "$units_line"
contains "vm_page = whole, unmap = pages: refused when the pool is made, saying why" \
	"$(units --option memory.pool.unmap=pages)" \
	"[memory.pool] unmap: expected whole: the plugin's vm_unmap takes whole vm_map calls only, got 'pages'"

# A machine with less address space than the pool's default range: the
# pool halves its reservation until one is granted (256 GiB refused, 128,
# 64 and 32 too, 16 GiB granted), then keeps that size.
out=$(env WAFER_CONFIG="$tmp/fake.conf" FAKECUDA_VA_MAX=$((16 << 30)) \
	"$top/tools/wafer-replay" --strategy pool --storage cuda \
	"$T_SRCDIR/replay-small.trace" 2>&1)
contains "pool: the address range halves until the driver grants one" \
	"$out" "peak_reserved=2097152 ratio=524.288 storage_ops=6 steady_ops=0 calls=vm_reserve:5,vm_map:1 pages=map:1,unmap:0"
out=$(env WAFER_CONFIG="$tmp/fake.conf" FAKECUDA_VA_MAX=1048576 \
	"$top/tools/wafer-replay" --strategy pool --storage cuda \
	"$T_SRCDIR/replay-small.trace" 2>&1)
case $out in
*"cannot reserve 1000 bytes"*"cuMemAddressReserve(2097152)"*"CUDA_ERROR_OUT_OF_MEMORY"*)
	pass "pool: no range of one page either: a clean OOM naming the last try" ;;
*)	fail "pool: no range of one page either: a clean OOM naming the last try" "$out" ;;
esac

# wafer-bench replay: the trace through pool on the device, beside the
# driver's own pool called directly (that side loads libcuda.so.1 itself:
# the stand-in under that name). The stand-in's pool caches nothing: its
# high-water mark is the trace's live bytes, rounded to 256 — 4096, or
# 4608 when the stream has not yet run a free that the third
# allocation follows.
mkdir "$tmp/lib" && ln -s "$fake" "$tmp/lib/libcuda.so.1"
out=$(env WAFER_CONFIG="$tmp/fake.conf" \
	LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	"$top/tools/wafer-bench" replay "$T_SRCDIR/replay-small.trace" cuda:0 2>&1)
contains "wafer-bench replay: pool on the device" "$out" \
	"replay trace=replay-small.trace events=6 strategy=pool ns_per_event="
case $out in
*" raw_reserved=4096 raw_ratio=1.024 vs_raw="* | \
*" raw_reserved=4608 raw_ratio=1.152 vs_raw="*)
	pass "wafer-bench replay: beside the driver's pool, its mark" ;;
*)	fail "wafer-bench replay: beside the driver's pool, its mark" "$out" ;;
esac

# wafer-bench allreduce on two stand-in devices: each size checked, and
# NCCL called directly (the stand-in, by WAFER_BENCH_NCCL) beside it on
# the same buffers, 1,000 steps at 4 KiB; the bucketed sequence (50
# buckets of 1..25 units of 32 KiB, 650 units in all); then peer copies
# from one device to the other.
if [ -e "$nccl" ]; then
	out=$(env WAFER_CONFIG="$tmp/fake.conf" WAFER_BACKEND=cuda \
		FAKECUDA_DEVICES=2 WAFER_BENCH_NCCL="$nccl" \
		LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		"$top/tools/wafer-bench" allreduce 1 2 2>&1)
	case $out in
	*"allreduce ranks=2 bytes=4096 dtype=f32 check=ok "*" steps=1000 call_us="*"raw=\"NCCL "*"raw_call_us="*"allreduce ranks=2 bytes=1048576 dtype=f32 check=ok "*"vs_raw="*"buckets ranks=2 calls=50 bytes=21299200 us="*" raw_us="*" vs_raw="*"peer_copy from=cuda:0 to=cuda:1 bytes=1048576 "*)
		pass "wafer-bench allreduce: two ranks, checked, beside raw NCCL (its steps and call cost); the bucketed sequence; peer copies" ;;
	*)	fail "wafer-bench allreduce: two ranks, checked, beside raw NCCL (its steps and call cost); the bucketed sequence; peer copies" "$out" ;;
	esac
else
	skip "wafer-bench allreduce" "no stand-in NCCL (nccl.h not found)"
fi

[ "$failed" -eq 0 ]
