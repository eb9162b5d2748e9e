#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# launch.sh: wafer-launch(1) on this machine, with t/internal/launch_rank
# as the program, on the test plugin t/plugins/collective.c (its
# communicator ids are not all zeros, so the hand-off shows; it is
# built with the tests, with or without MPI):
#   - -n 2 and -n 4: every rank 0..N-1 runs once with WAFER_SIZE N, and
#     all got rank 0's communicator id (wafer_comm_launched, through the
#     launcher's file); exit 0; the job's directory is gone after;
#   - the kill test: with --die-at 1, rank 1 exits 3 after 0.3 s while
#     the others wait for ever: wafer-launch exits 3 within 10 s, saying
#     which rank failed, and none of the other ranks is left running;
#     with --ignore-term too, the others ignore SIGTERM and are killed
#     after the grace time;
#   - errors: no -n, -n 0, no program, --grace nan (exit 2); a program that cannot
#     run (exit 127); launch_rank without the launcher names WAFER_RANK,
#     with a rank that is no plain number names it, and with an id file
#     that holds no id (a sign among the hex digits, cut short) says so.
set -u

if [ -z "${T_BUILDDIR:-}" ] || [ -z "${T_SRCDIR:-}" ]; then
	echo "Bail out! T_BUILDDIR is not set (run through make check)"
	exit 1
fi
top=$T_BUILDDIR/..
launch=$top/tools/wafer-launch
rank=$T_BUILDDIR/internal/launch_rank
# shellcheck source=t/tap.sh
. "$T_SRCDIR/tap.sh"
tap_tmpdir launch
TMPDIR=$tmp
export TMPDIR
printf '[core]\nbackend = collective\n' > "$tmp/collective.conf"
WAFER_CONFIG=$tmp/collective.conf
WAFER_PLUGIN_PATH=$T_BUILDDIR/plugins/.libs${WAFER_PLUGIN_PATH:+:$WAFER_PLUGIN_PATH}
export WAFER_CONFIG WAFER_PLUGIN_PATH
unset WAFER_BACKEND WAFER_RANK WAFER_SIZE WAFER_COMM_ID_FILE

# ranks_right N: N lines "rank r of N", r = 0..N-1 each once.
ranks_right() {
	[ "$(grep -c "^rank [0-9]* of $1 pid" "$tmp/out")" = "$1" ] &&
		[ "$(sed -n "s/^rank \([0-9]*\) of $1 pid.*/\1/p" "$tmp/out" |
			sort -n | tr '\n' ' ')" = "$(seq 0 $(($1 - 1)) | tr '\n' ' ')" ]
}
# ids_agree N: N ids, all the same, not all zeros.
ids_agree() {
	ids=$(sed -n 's/^rank [0-9]* id //p' "$tmp/out" | sort -u)
	[ "$(sed -n 's/^rank [0-9]* id //p' "$tmp/out" | wc -l)" = "$1" ] &&
		[ "$(printf '%s\n' "$ids" | wc -l)" = 1 ] &&
		printf '%s\n' "$ids" | grep -q '[1-9a-f]'
}
# none_alive: no pid the ranks printed is running.
none_alive() {
	for pid in $(sed -n 's/^rank [0-9]* of [0-9]* pid //p' "$tmp/out"); do
		if kill -0 "$pid" 2>/dev/null; then
			echo "# pid $pid still running"
			return 1
		fi
	done
	return 0
}
tap_show="$tmp/out $tmp/err"

for size in 2 4; do
	"$launch" -n $size "$rank" >"$tmp/out" 2>"$tmp/err"
	status=$?
	check "-n $size: exits 0 (got $status)" [ $status = 0 ]
	check "-n $size: ranks 0..$((size - 1)) of $size, each once" ranks_right $size
	check "-n $size: every rank got rank 0's communicator id" ids_agree $size
	check "-n $size: the job's directory is gone" \
		[ -z "$(ls "$tmp" | grep '^wafer-launch\.')" ]
done

start=$(date +%s)
"$launch" -n 4 --grace 2 "$rank" --die-at 1 >"$tmp/out" 2>"$tmp/err"
status=$?
took=$(($(date +%s) - start))
check "kill test: rank 1 exits 3, wafer-launch exits 3 (got $status)" [ $status = 3 ]
check "kill test: within 10 s (took $took s)" [ $took -le 10 ]
check "kill test: says which rank failed" \
	grep -q 'rank 1 (pid [0-9]*) exited with status 3: stopping the other 3 ranks' "$tmp/err"
check "kill test: the other ranks are stopped" none_alive

start=$(date +%s)
"$launch" -n 3 --grace 1 "$rank" --die-at 1 --ignore-term >"$tmp/out" 2>"$tmp/err"
status=$?
took=$(($(date +%s) - start))
check "ranks that ignore SIGTERM: exits 3 (got $status) within 10 s (took $took s)" \
	test $status = 3 -a $took -le 10
check "  ... SIGKILL after the grace time" grep -q 'SIGKILL' "$tmp/err"
check "  ... none left running" none_alive

"$launch" "$rank" >"$tmp/out" 2>"$tmp/err"
check "no -n: exit 2" [ $? = 2 ]
"$launch" -n 0 "$rank" >"$tmp/out" 2>"$tmp/err"
status=$?
check "-n 0: exit 2 (got $status)" [ $status = 2 ]
check "  ... saying why" grep -q 'want 1 to' "$tmp/err"
"$launch" -n 2 >"$tmp/out" 2>"$tmp/err"
check "no program: exit 2" [ $? = 2 ]
"$launch" -n 1 --grace nan true >"$tmp/out" 2>"$tmp/err"
status=$?
check "--grace nan: exit 2 (got $status)" [ $status = 2 ]
"$launch" -n 2 "$tmp/no-such-program" >"$tmp/out" 2>"$tmp/err"
status=$?
check "a program that cannot run: exit 127 (got $status)" [ $status = 127 ]
check "  ... saying why" grep -q 'cannot run' "$tmp/err"
"$rank" >"$tmp/out" 2>"$tmp/err"
status=$?
check "launch_rank alone: exit 4 (got $status)" [ $status = 4 ]
check "  ... naming WAFER_RANK" grep -q 'WAFER_RANK is not set' "$tmp/err"
# A rank that is not a plain decimal number (strtoul alone takes a sign
# and wraps this one round to 1). [comm] timeout short: a rank taken as 1
# would wait that long for an id that never comes.
printf '[core]\nbackend = collective\n[comm]\ntimeout = 2\n' >"$tmp/short.conf"
WAFER_CONFIG=$tmp/short.conf WAFER_RANK=-18446744073709551615 WAFER_SIZE=2 \
	WAFER_COMM_ID_FILE=$tmp/no-id "$rank" >"$tmp/out" 2>"$tmp/err"
status=$?
check "WAFER_RANK=-18446744073709551615: exit 4 (got $status)" [ $status = 4 ]
check "  ... naming it" grep -q "WAFER_RANK is '-18446744073709551615', not a number" "$tmp/err"
# A file whose id is not 256 hex digits: refused, not read as an id.
{
	printf 'wafer-comm-id 1 -1'
	for i in $(seq 127); do printf '0a'; done
	echo
} >"$tmp/bad-id"
WAFER_CONFIG=$tmp/short.conf WAFER_RANK=1 WAFER_SIZE=2 \
	WAFER_COMM_ID_FILE=$tmp/bad-id "$rank" >"$tmp/out" 2>"$tmp/err"
status=$?
check "an id file with a sign among its hex digits: exit 4 (got $status)" [ $status = 4 ]
check "  ... saying it holds no id" grep -q 'holds no communicator id' "$tmp/err"
printf 'wafer-comm-id 1 abc' >"$tmp/bad-id"
WAFER_CONFIG=$tmp/short.conf WAFER_RANK=1 WAFER_SIZE=2 \
	WAFER_COMM_ID_FILE=$tmp/bad-id "$rank" >"$tmp/out" 2>"$tmp/err"
status=$?
check "an id file cut short: exit 4 (got $status)" [ $status = 4 ]

echo "1..$n"
exit $failed
