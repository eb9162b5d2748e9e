#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# mpi.sh: the cpu plugin's collectives across processes, under mpirun with
# 4 ranks (oversubscribed: CI has 2 cores). One TAP stream out of:
#   - t/cpu/comm_mpi, the program initialising MPI: its points (rank 0's,
#     each passing only when every rank passed), renumbered here;
#   - t/cpu/comm_mpi --wafer-init: the plugin initialises and finalises MPI;
#   - examples/allreduce: a program with its own MPI;
#   - examples/mlp --data-parallel: 4 ranks, each a quarter of the batch,
#     gradients all-reduced, reach the loss of one process; and
#     --data-parallel=1, its in-process mode (wafer_comm_open_group) with
#     the one rank MPI gives a process started without mpirun;
#   - with [cpu] devices = N above 1, in-process communicators (no MPI):
#     examples/mlp --data-parallel=2 and =4, t/api/comm and
#     t/api/comm_split (2 x 2 sub-communicators).
# Skipped only when wafer was configured without MPI (configure's reason).
set -u

if [ -z "${T_BUILDDIR:-}" ]; then
	echo "Bail out! T_BUILDDIR is not set (run through make check)"
	exit 1
fi
if [ "${WAFER_HAVE_MPI:-no}" != yes ]; then
	echo "1..0 # SKIP wafer was configured without MPI: ${WAFER_MPI_WHY:-unknown}"
	exit 0
fi
top=$T_BUILDDIR/..
ranks=4

# CI runs as root, which mpirun refuses unless told twice. In a container
# without ptrace rights Open MPI's shared-memory transport cannot use
# single-copy (CMA) and fails every large message: plain copies instead.
if [ "$(id -u)" = 0 ]; then
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_btl_vader_single_copy_mechanism
# Under AddressSanitizer, no leak check: Open MPI leaks by design at
# MPI_Finalize, from components it has unloaded by then (their frames read
# "<unknown module>", so no suppression can name them). Memory errors are
# still caught; t/cpu/plugin checks the plugin's own paths for leaks.
case ${SANITIZER_FLAGS:-} in
*address*)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	export ASAN_OPTIONS
	;;
esac
mpirun() {
	"${MPIRUN:-mpirun}" -np "$ranks" --oversubscribe "$@"
}
# The cpu plugin's own test: it runs on cpu whatever backend the suite is
# on (a suite run on cuda or opencl may leave cpu out of [core] backend).
WAFER_BACKEND=cpu
export WAFER_BACKEND

n=0
failed=0
point() { # point PASS NAME
	n=$((n + 1))
	if [ "$1" = 1 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}
# Shows a command's output as TAP comments.
comment() { sed 's/^/# /'; }

# 0. The split: cpu.so must load where Open MPI is absent, so only the
# module needs libmpi; and the module exports its table, nothing else.
cpu=$top/plugins/cpu/.libs/cpu.so
module=$top/plugins/cpu/.libs/cpu-mpi.so
needed() { LC_ALL=C objdump -p "$1" 2>/dev/null | awk '$1 == "NEEDED" { print $2 }'; }
point $([ -n "$(needed "$cpu")" ] && ! needed "$cpu" | grep -q '^libmpi' && echo 1 || echo 0) \
	"cpu.so does not need libmpi ($(needed "$cpu" | tr '\n' ' '))"
point $(needed "$module" | grep -q '^libmpi' && echo 1 || echo 0) \
	"cpu-mpi.so needs libmpi"
exported=$(nm -D --defined-only "$module" 2>/dev/null | awk '{ print $3 }')
point $([ "$exported" = cpu_mpi_query ] && echo 1 || echo 0) \
	"cpu-mpi.so exports only cpu_mpi_query (got: $(echo $exported))"

out=$(mktemp)
trap 'rm -f "$out"' EXIT

# 1. t/cpu/comm_mpi: its points, renumbered into this stream; everything
# else it or mpirun says as comments.
mpirun "$top/t/cpu/comm_mpi" >"$out" 2>&1
status=$?
while IFS= read -r line; do
	case $line in
	"ok "[0-9]*)
		point 1 "t/cpu/comm_mpi: ${line#* - }"
		;;
	"not ok "[0-9]*)
		point 0 "t/cpu/comm_mpi: ${line#* - }"
		;;
	"1.."*) ;; # its plan: this stream counts for itself
	"#"*) echo "$line" ;;
	*) echo "# $line" ;;
	esac
done <"$out"
point $([ $status = 0 ] && echo 1 || echo 0) \
	"mpirun -np $ranks t/cpu/comm_mpi exits 0 (got $status)"

# 2. The plugin brings MPI up and down itself.
mpirun "$top/t/cpu/comm_mpi" --wafer-init >"$out" 2>&1
status=$?
comment <"$out"
point $([ $status = 0 ] && echo 1 || echo 0) \
	"mpirun -np $ranks t/cpu/comm_mpi --wafer-init: the plugin initialises MPI, all-reduces, finalises it (exit $status)"

# 3. examples/allreduce: the program's own MPI, a sum over the ranks.
if [ -x "$top/examples/allreduce" ]; then
	mpirun "$top/uninstalled" "$top/examples/allreduce" >"$out" 2>&1
	status=$?
	comment <"$out"
	point $([ $status = 0 ] && grep -q ': right$' "$out" && echo 1 || echo 0) \
		"mpirun -np $ranks examples/allreduce: the sum on every rank (exit $status)"
fi

# 4. Data parallel training reaches the loss of one process: exactly
# when it is one process (a communicator of one), and within 5% on four,
# whose gradients are sums of four partial sums in MPI's order, not one
# sum: rounding differences the training amplifies where it crosses a
# plateau (0.6% at the end here, the first 60 steps equal to 1e-7).
final_loss() { sed -n 's/^final loss \([0-9.]*\)$/\1/p' "$@"; }
# within A B FRACTION: 1 when A and B are numbers and |A - B| <= FRACTION B.
within() {
	awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN {
		d = a - b; if (d < 0) d = -d
		print (a != "" && b != "" && d <= f * b) ? 1 : 0 }'
}
mlp=$top/examples/mlp
"$top/uninstalled" "$mlp" >"$out" 2>&1
status=$?
comment <"$out"
want=$(final_loss "$out")
point $([ $status = 0 ] && [ -n "$want" ] && echo 1 || echo 0) \
	"examples/mlp, one process: trains (final loss $want)"
"$top/uninstalled" "$mlp" --data-parallel >"$out" 2>&1
status=$?
comment <"$out"
alone=$(final_loss "$out")
point $([ $status = 0 ] && [ -n "$alone" ] && [ "$alone" = "$want" ] && echo 1 || echo 0) \
	"examples/mlp --data-parallel without mpirun (wafer starts MPI, one rank): the same loss exactly ($alone vs $want)"
"$top/uninstalled" "$mlp" --data-parallel=1 >"$out" 2>&1
status=$?
comment <"$out"
group=$(final_loss "$out")
point $([ $status = 0 ] && [ -n "$group" ] && [ "$group" = "$want" ] && echo 1 || echo 0) \
	"examples/mlp --data-parallel=1 (an open_group of one, in a thread): the same loss exactly ($group vs $want)"
mpirun "$top/uninstalled" "$mlp" --data-parallel >"$out" 2>&1
status=$?
comment <"$out"
got=$(final_loss "$out")
close=$(within "$got" "$want" 0.05)
point $([ $status = 0 ] && [ "$close" = 1 ] && echo 1 || echo 0) \
	"mpirun -np $ranks examples/mlp --data-parallel: the loss of one process, within 5% ($got vs $want)"

# 5. In-process communicators: with [cpu] devices = N above 1 the ranks
# are clients of this process on cpu:0 .. cpu:N-1 (wafer_comm_open_group)
# and the in-process engine carries them (plugins/cpu/comm_inproc.c), not
# MPI. examples/mlp --data-parallel=2 and =4 reach one rank's loss within
# 1% at 200 steps (the sums are added in another order, a difference the
# training amplifies later, where it crosses a plateau); t/api/comm runs
# on cpu with devices = 4; with one device, --data-parallel=2 fails
# naming the setting.
devices() { # devices N: a configuration file listing N cpu devices
	printf '[cpu]\ndevices = %s\n' "$1" > "$out.devices-$1"
	echo "$out.devices-$1"
}
"$top/uninstalled" "$mlp" --steps=200 >"$out" 2>&1
status=$?
comment <"$out"
short=$(final_loss "$out")
point $([ $status = 0 ] && [ -n "$short" ] && echo 1 || echo 0) \
	"examples/mlp --steps=200, one rank: trains (final loss $short)"
for group in 2 4; do
	WAFER_CONFIG=$(devices $group) "$top/uninstalled" "$mlp" \
		--data-parallel=$group --steps=200 >"$out" 2>&1
	status=$?
	comment <"$out"
	got=$(final_loss "$out")
	close=$(within "$got" "$short" 0.01)
	point $([ $status = 0 ] && [ "$close" = 1 ] &&
		grep -q "^data parallel: $group ranks in this process on cpu:0..$((group - 1))" "$out" &&
		echo 1 || echo 0) \
		"examples/mlp --data-parallel=$group, devices = $group (in-process): one rank's loss within 1% ($got vs $short)"
done
WAFER_CONFIG=$(devices 4) "$top/uninstalled" "$T_BUILDDIR/api/comm" >"$out" 2>&1
status=$?
bad=$(grep -c '^not ok' "$out")
passed=$(grep -c '^ok' "$out")
grep '^not ok' -A3 "$out" | comment
point $([ $status = 0 ] && [ "$bad" = 0 ] && echo 1 || echo 0) \
	"t/api/comm on cpu with devices = 4, in-process ($passed passed, $bad failed)"
WAFER_CONFIG=$(devices 4) "$top/uninstalled" "$T_BUILDDIR/api/comm_split" >"$out" 2>&1
status=$?
bad=$(grep -c '^not ok' "$out")
passed=$(grep -c '^ok' "$out")
grep '^not ok' -A3 "$out" | comment
point $([ $status = 0 ] && [ "$bad" = 0 ] && grep -q '^ok.*\[cpu mpsc\] 2 x 2: rows' "$out" && echo 1 || echo 0) \
	"t/api/comm_split on cpu with devices = 4, in-process: 2 x 2 ($passed passed, $bad failed)"
WAFER_CONFIG=$(devices 1) "$top/uninstalled" "$mlp" --data-parallel=2 \
	--steps=5 >"$out" 2>&1
status=$?
comment <"$out"
point $([ $status != 0 ] && grep -q 'devices = 2' "$out" && echo 1 || echo 0) \
	"examples/mlp --data-parallel=2 with one cpu device fails, naming [cpu] devices = 2"
rm -f "$out".devices-*

echo "1..$n"
[ $failed = 0 ]
