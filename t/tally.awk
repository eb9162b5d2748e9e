# wafer — SPDX-License-Identifier: MIT
#
# tally.awk: what ./quickstart check's stages verified, counted honestly.
# Input: one line per test point per stage, tab-separated, as quickstart's
# record_stage writes them:
#
#   stage  label  backend  channel  result  test  number  class  reason
#
# result is PASS, FAIL, SKIP, XFAIL, XPASS or ERROR; number is the point's
# TAP number ("-" for a result of the whole file: a whole-file skip, a
# crash, a missing plan); class is "neutral" for a backend-neutral test
# (it runs on the backend WAFER_BACKEND names), the backend's name for a
# backend's own tests, "-" for the rest; reason is a skip's reason.
#
# A check is the identity of a point: test and number, and for a
# backend-neutral test also the backend and channel it ran on. So the
# same point of t/internal/config run in six stages is one check run six times,
# while a point of t/api/ops on cpu and on opencl is two checks. Sanitizer
# and valgrind stages run checks again under a closer watch: no new
# checks, but a failure there fails the check.
#
# Prints, per stage: its points, how many passed, failed and were
# skipped, how many ran on the stage's backend (backend-neutral tests and
# that backend's own tests), and how many repeat checks of earlier
# stages. Then the distinct checks, each with one verdict: failed when it
# failed (FAIL, XPASS, ERROR) in any stage; else passed when it passed
# (PASS, XFAIL) in at least one; else skipped (no stage ran it here). The
# last line is "N passed, N failed" over the distinct checks.
BEGIN {
	FS = "\t"
	nstages = 0
}

function is_fail(r) { return r == "FAIL" || r == "XPASS" || r == "ERROR" }
function is_pass(r) { return r == "PASS" || r == "XFAIL" }

{
	stage = $1
	if (!(stage in label)) {
		order[++nstages] = stage
		label[stage] = $2
		backend[stage] = $3
	}
	result = $5
	test = $6
	class = $8
	id = test SUBSEP $7
	if (class == "neutral")
		id = $3 SUBSEP $4 SUBSEP id
	points[stage]++
	if (is_fail(result))
		failed[stage]++
	else if (is_pass(result))
		passed[stage]++
	else
		skipped[stage]++
	if (class == "neutral" || (class == $3 && class != "-"))
		on_backend[stage]++
	if (id in first_stage) {
		if (first_stage[id] != stage)
			repeats[stage]++
	} else {
		first_stage[id] = stage
		ids[++nids] = id
	}
	if (is_fail(result))
		verdict_fail[id] = 1
	else if (is_pass(result))
		verdict_pass[id] = 1
	else if (!(id in why))
		why[id] = test ($7 == "-" ? "" : " " $7) ": " ($9 == "" ? "(no reason given)" : $9)
}

END {
	printf "\n%-44s %7s %7s %6s %7s %10s %7s\n", "stage", "points",
	       "passed", "failed", "skipped", "on backend", "repeat"
	for (i = 1; i <= nstages; i++) {
		s = order[i]
		printf "%-44s %7d %7d %6d %7d %10s %7d\n", label[s], points[s],
		       passed[s], failed[s], skipped[s],
		       backend[s] == "-" ? "-" : on_backend[s] + 0, repeats[s]
		runs += points[s]
	}
	for (i = 1; i <= nids; i++) {
		id = ids[i]
		if (id in verdict_fail)
			nfail++
		else if (id in verdict_pass)
			npass++
		else {
			nskip++
			skipped_why[nskip] = why[id]
		}
	}
	printf "\n%d points run in %d stages are %d distinct checks", runs,
	       nstages, nids
	printf " (see doc/testing.md, \"What the count means\").\n"
	if (nskip) {
		printf "\n%d checks were skipped in every stage that ran them", nskip
		printf " (what this machine did not test):\n"
		for (i = 1; i <= nskip && i <= 40; i++)
			printf "    %s\n", skipped_why[i]
		if (nskip > 40)
			printf "    ... and %d more (check-points.tsv)\n", nskip - 40
	}
	printf "%d passed, %d failed\n", npass, nfail
}
