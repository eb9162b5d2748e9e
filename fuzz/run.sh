#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# fuzz/run.sh CORPUS_DIR SECONDS HARNESS...: runs each libFuzzer harness
# for SECONDS on its seeds (CORPUS_DIR/<name>/, read only) plus what
# earlier runs found (fuzz/found/<name>/ in the build tree, which grows),
# and prints one line per harness:
#   fuzz <name>: ok, <runs> runs, cov <edges>, ft <features>, corpus <n>
#   fuzz <name>: CRASH (see fuzz/<name>.log)
# Exits 1 when any harness crashed or could not run.
set -u
corpus=$1 seconds=$2
shift 2
failed=0
for harness in "$@"; do
	name=$(basename "$harness")
	found=fuzz/found/$name
	mkdir -p "$found"
	log=fuzz/$name.log
	# -rss_limit_mb: a leak or blow-up is a finding, not a machine
	# swapping; -artifact_prefix: crashes land beside the log.
	"./$harness" -max_total_time="$seconds" -print_final_stats=1 \
		-rss_limit_mb=2048 -timeout=10 \
		-artifact_prefix="fuzz/$name-" "$found" "$corpus/$name" \
		> "$log" 2>&1
	status=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	if [ $status -eq 0 ]; then
		echo "fuzz $name: ok, ${runs:-?} runs, cov ${cov:-?}, ft ${ft:-?}, corpus $(ls "$found" | wc -l)"
	else
		echo "fuzz $name: CRASH or error (exit $status; see $log)"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -5
		failed=1
	fi
done
exit $failed
