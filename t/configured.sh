#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# configured.sh: the test programs that a configure conditional builds
# only with a backend's toolkit or an optional library (t/local.mk:
# `if WAFER_OPENCL` ..., `if WAFER_DLPACK`, `if WAFER_MPI`). One
# point per program: built, when configure found the toolkit; skipped,
# with configure's reason, when it did not. So a machine without a
# toolkit shows in the skip count what it did not test, instead of the
# tests vanishing from the suite.
#
# WAFER_HAVE_<NAME> and WAFER_<NAME>_WHY come from configure through
# t/local.mk's test environment.
set -u

if [ -z "${T_BUILDDIR:-}" ]; then
	echo "Bail out! T_BUILDDIR is not set (run through make check)"
	exit 1
fi

# backend-conditional test programs: "BACKENDS PROGRAM", BACKENDS joined
# by '+' when the program needs all of them.
tests="cuda t/cuda/plugin
opencl t/opencl/plugin
opencl t/opencl/cache
levelzero t/levelzero/plugin
levelzero t/levelzero/client
levelzero t/levelzero/model
levelzero+opencl t/levelzero/kernels_cl
dlpack t/api/dlpack
dlpack t/api/dlpack_versioned
mpi t/cpu/comm_mpi"

have() {
	case $1 in
	cuda) echo "${WAFER_HAVE_CUDA:-no}" ;;
	opencl) echo "${WAFER_HAVE_OPENCL:-no}" ;;
	levelzero) echo "${WAFER_HAVE_LEVELZERO:-no}" ;;
	dlpack) echo "${WAFER_HAVE_DLPACK:-no}" ;;
	mpi) echo "${WAFER_HAVE_MPI:-no}" ;;
	esac
}
why() {
	case $1 in
	cuda) echo "${WAFER_CUDA_WHY:-unknown}" ;;
	opencl) echo "${WAFER_OPENCL_WHY:-unknown}" ;;
	levelzero) echo "${WAFER_LEVELZERO_WHY:-unknown}" ;;
	dlpack) echo "${WAFER_DLPACK_WHY:-unknown}" ;;
	mpi) echo "${WAFER_MPI_WHY:-unknown}" ;;
	esac
}

echo "1..$(printf '%s\n' "$tests" | wc -l)"
n=0
failed=0
printf '%s\n' "$tests" | {
	while read -r backends program; do
		n=$((n + 1))
		missing=
		for b in $(echo "$backends" | tr + ' '); do
			[ "$(have "$b")" = yes ] || missing="$missing${missing:+; }$b: $(why "$b")"
		done
		if [ -n "$missing" ]; then
			echo "ok $n - $program # SKIP not built here ($missing)"
		elif [ -x "$T_BUILDDIR/../$program" ]; then
			echo "ok $n - $program is built (configure found $backends)"
		else
			echo "not ok $n - $program is built (configure found $backends)"
			echo "# $T_BUILDDIR/../$program is missing: is it in check_PROGRAMS?"
			failed=$((failed + 1))
		fi
	done
	[ "$failed" -eq 0 ]
}
