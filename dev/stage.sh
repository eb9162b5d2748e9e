# wafer — SPDX-License-Identifier: MIT
#
# stage.sh: the stages of the dev/*-check.sh scripts, sourced by them
# from their own directory (. "$(dirname "$0")/stage.sh"). Each stage is
# one command under a time limit, its output appended to a log and its
# verdict and time to the summary, so one hang does not eat the machine
# and the whole run stays inside a budget.
#
# The script sets, before its first stage:
#   summary        the summary file (say appends to it)
#   began, budget  when the run began (stamp) and its seconds in all
#   stage_reserve  seconds kept back at the end of the budget (default 10)
#   stage_least    a stage that would get less is skipped (default 20)
#   stage_width    the width of the name column in the summary (default 28)

# say TEXT...: a line to the terminal and the summary.
say() { printf '%s\n' "$*" | tee -a "$summary"; }
stamp() { date +%s; }

# find_toolkit: sets nvcc and cuda_home from PATH or /usr/local/cuda and
# says which toolkit; exits 1, saying why, when there is none.
find_toolkit() {
	nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null | head -1)
	if [ -z "$nvcc" ]; then
		say "no nvcc on PATH or in /usr/local/cuda: cannot build the cuda plugin"
		exit 1
	fi
	cuda_home=$(dirname "$(dirname "$nvcc")")
	say "toolkit: $cuda_home ($("$nvcc" --version | tail -1))"
}

# stage NAME LOG LIMIT COMMAND...: runs COMMAND with its output appended
# to LOG, under LIMIT seconds cut to what is left of the budget, and
# notes the verdict and time; returns COMMAND's exit (124 when it timed
# out, 125 when skipped for want of time). With stage_expect=N set, an
# exit N is the verdict "ok (exit N, as expected)" and 0 a failure.
stage() {
	st_name=$1 st_log=$2 st_limit=$3
	shift 3
	st_left=$((began + budget - $(stamp) - ${stage_reserve:-10}))
	if [ "$st_left" -lt "${stage_least:-20}" ]; then
		say "$(printf '%-*s %s' "${stage_width:-28}" "$st_name" "SKIPPED (out of time)")"
		return 125
	fi
	[ "$st_limit" -gt "$st_left" ] && st_limit=$st_left
	st_t0=$(stamp)
	printf '\n===== %s: %s\n' "$st_name" "$*" >> "$st_log"
	timeout "$st_limit" "$@" >> "$st_log" 2>&1
	st_rc=$?
	st_want=${stage_expect:-0}
	st_verdict=ok
	[ "$st_want" -ne 0 ] && st_verdict="ok (exit $st_want, as expected)"
	[ $st_rc -eq 124 ] && st_verdict="TIMED OUT after ${st_limit}s"
	[ $st_rc -ne "$st_want" ] && [ $st_rc -ne 124 ] && st_verdict="FAILED (exit $st_rc)"
	say "$(printf '%-*s %-22s %4ss' "${stage_width:-28}" "$st_name" "$st_verdict" $(($(stamp) - st_t0)))"
	return $st_rc
}
