#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# public-symbols.sh [--map] -- CC [CPPFLAGS...] -- HEADER...
#   prints, sorted, one a line, the functions that the public HEADERs
#   declare WAFER_API, as CC's preprocessor reads them when it builds the
#   library (so conditional declarations, such as DLPack's 1.x calls, count
#   exactly when they are compiled). With --map it prints them as the
#   version script of libwafer.so.0 (node WAFER_0, everything else local).
#   libwafer.so.0 exports these names and no others (t/internal/exports.sh checks
#   it): an internal function never becomes ABI by its name.
set -u
die() {
	echo "public-symbols.sh: $*" >&2
	exit 2
}
map=no
[ "${1:-}" = --map ] && { map=yes; shift; }
[ "${1:-}" = -- ] || die "usage: public-symbols.sh [--map] -- CC [CPPFLAGS...] -- HEADER..."
shift
cc=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	cc="$cc '$1'"
	shift
done
[ $# -gt 1 ] || die "no header given"
shift
includes=
for h in "$@"; do
	[ -f "$h" ] || die "$h: no such header"
	includes="$includes#include \"$h\"
"
done
tmp=$(mktemp "${TMPDIR:-/tmp}/wafer-symbols.XXXXXX") || exit 2
trap 'rm -f "$tmp"' 0
printf '%s' "$includes" | eval "$cc -E -P -DWAFER_BUILDING_LIBRARY -x c -" >"$tmp" ||
	die "the preprocessor failed on the public headers"
# Declarations end at ';'. In one marked by WAFER_API (here, its
# expansion), the name is the identifier right before the first '('.
names=$(tr '\n' ' ' <"$tmp" | awk 'BEGIN { RS = ";" }
	index($0, "visibility(\"default\")") {
		s = $0
		sub(/.*visibility\("default"\)\)\)/, "", s)
		if (match(s, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
			name = substr(s, RSTART, RLENGTH)
			sub(/[ \t]*\($/, "", name)
			print name
		}
	}' | sort -u)
[ -n "$names" ] || die "no WAFER_API declaration found in: $*"
if [ $map = no ]; then
	echo "$names"
	exit 0
fi
echo "/* libwafer.so.0: the public API, made by public-symbols.sh from the headers. */"
echo "WAFER_0 {"
echo "	global:"
echo "$names" | sed 's/.*/		&;/'
echo "	local: *;"
echo "};"
