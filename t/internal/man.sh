#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# man.sh: every man page renders without a groff warning (a stray
# control character, an unknown macro or escape), as `man --warnings`
# would show a reader.
set -u
if [ -z "${T_SRCDIR:-}" ]; then
	echo "Bail out! T_SRCDIR is not set (run through make check)"
	exit 1
fi
if ! command -v groff >/dev/null 2>&1; then
	echo "1..0 # SKIP groff is not installed (Debian: groff-base)"
	exit 0
fi
n=0
for page in "$T_SRCDIR"/../man/*.[1-9]; do
	# A page that only sources another (.so) is rendered as that one.
	head -n 1 "$page" | grep -q '^\.so ' && continue
	n=$((n + 1))
	name=${page##*/}
	warnings=$(groff -man -ww -z -t "$page" 2>&1)
	if [ -z "$warnings" ]; then
		echo "ok $n - $name renders without warnings"
	else
		echo "not ok $n - $name renders without warnings"
		echo "$warnings" | sed 's/^/# /'
	fi
done
echo "1..$n"
