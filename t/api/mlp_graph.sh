#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# mlp_graph.sh: examples/mlp --graph on the default device (WAFER_BACKEND
# picks another): a training step captured once and replayed for the
# steps that report nothing (wafer_graph(3)) trains to the same losses,
# bit for bit, as the same training issued eagerly, and the loss falls.
set -u

if [ -z "${T_BUILDDIR:-}" ]; then
	echo "Bail out! T_BUILDDIR is not set (run through make check)"
	exit 1
fi
top=$T_BUILDDIR/..
echo "1..3"
out=$("$top/uninstalled" "$top/examples/mlp" --graph --steps=200 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
	echo "ok 1 - examples/mlp --graph exits 0"
else
	echo "not ok 1 - examples/mlp --graph exits 0 (status $rc)"
	printf '%s\n' "$out" | sed 's/^/# /' | tail -20
fi
case $out in
*"same losses as eager"*)
	echo "ok 2 - replayed steps reach the same losses as eager ones" ;;
*)
	echo "not ok 2 - replayed steps reach the same losses as eager ones"
	printf '%s\n' "$out" | sed 's/^/# /' | tail -5 ;;
esac
first=$(printf '%s\n' "$out" | sed -n 's/^step *0  loss \([0-9.]*\).*/\1/p')
last=$(printf '%s\n' "$out" | sed -n 's/^final loss \([0-9.]*\)$/\1/p')
if [ -n "$first" ] && [ -n "$last" ] &&
	awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }'; then
	echo "ok 3 - the loss falls ($first to $last)"
else
	echo "not ok 3 - the loss falls (${first:-?} to ${last:-?})"
fi
