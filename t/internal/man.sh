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

# The plugin reports shown as examples are of the tree's own plugins (and
# the skeleton), built for the ABI of include/wafer/plugin.h: a new minor
# updates them.
minor=$(sed -n 's/^#define WAFER_PLUGIN_ABI_MINOR_LATEST \([0-9]*\).*/\1/p' "$T_SRCDIR/../include/wafer/plugin.h")
for page in wafer-info.1 wafer-plugin.7; do
	n=$((n + 1))
	stale=$(grep -n '^      ABI:     ' "$T_SRCDIR/../man/$page" | grep -v "ABI:     1\.$minor\$")
	if [ -z "$stale" ]; then
		echo "ok $n - $page: the plugin reports it shows say ABI 1.$minor"
	else
		echo "not ok $n - $page: the plugin reports it shows say ABI 1.$minor"
		echo "$stale" | sed 's/^/# /'
	fi
done
echo "1..$n"
