#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# levelzero_programs.sh: t/api/programs — the caller's own kernels, here the
# SPIR-V of t/user_kernels/kernels.cl, on every channel, with its errors
# and a second process that compiles nothing — on the levelzero plugin
# and the test driver, which emulates the test's kernels by name
# (t/standins/levelzero/program.c); plus the point that the driver saw no call a
# real driver would refuse. levelzero_ops.sh runs it.
if [ -z "${T_SRCDIR:-}" ]; then
	echo "1..0 # SKIP T_SRCDIR is not set (run through make check)"
	exit 0
fi
exec sh "$T_SRCDIR/levelzero/ops.sh" programs
