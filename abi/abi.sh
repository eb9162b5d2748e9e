#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# The ABI guard (README, "Packaging"): libabigail's abidw and abidiff
# (Debian: abigail-tools) over a shared object built with -g.
#
#   abi.sh dump LIB INCLUDEDIR >FILE    the ABI of LIB, as the baseline is
#   abi.sh check BASELINE LIB INCLUDEDIR
#       compares LIB with BASELINE; exits 0 when every change is one a
#       program or plugin built against the baseline survives: added
#       functions and variables, fields appended to a struct (past its
#       old size; the struct_size rule of wafer(7)), added enumerators
#       (abidiff counts them harmless). Anything else fails: a removed or
#       changed function, a member moved, retyped or removed, a struct
#       grown inside another one, a new SONAME.
#   abi.sh symbols LIB VERSION [OLD] >FILE
#       the Debian symbols file of LIB (debian/libwafer0.symbols)
# Types not declared under INCLUDEDIR are private and left out.
set -u
die() {
	echo "abi.sh: $*" >&2
	exit 2
}
command -v abidw >/dev/null 2>&1 && command -v abidiff >/dev/null 2>&1 ||
	die "abidw/abidiff not found (Debian: apt-get install abigail-tools)"

dump() {
	[ -f "$1" ] || die "$1: no such file"
	abidw --no-corpus-path --no-comp-dir-path --short-locs --no-architecture \
		--headers-dir "$2" --drop-private-types "$1" || die "abidw failed on $1"
}

case ${1:-} in
dump)
	[ $# -eq 3 ] || die "usage: abi.sh dump LIB INCLUDEDIR"
	dump "$2" "$3"
	;;
check)
	[ $# -eq 4 ] || die "usage: abi.sh check BASELINE LIB INCLUDEDIR"
	base=$2 lib=$3 inc=$4
	[ -f "$base" ] || die "$base: no baseline (abi.sh dump, or make abi-update)"
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/wafer-abi.XXXXXX") || exit 2
	trap 'rm -rf "$tmp"' 0
	dump "$lib" "$inc" >"$tmp/now.abi" || exit 2
	grep -q '<function-decl' "$tmp/now.abi" ||
		die "$lib: no function described (built without -g? the check needs debug info)"
	abidiff --leaf-changes-only "$base" "$tmp/now.abi" >"$tmp/report"
	rc=$?
	# abidiff's status bits: 1 error, 2 usage, 4 a change, 8 an
	# incompatible change.
	[ $((rc & 3)) -eq 0 ] || { cat "$tmp/report"; die "abidiff failed (status $rc)"; }
	# Every line of the report is either harmless or a reason to fail.
	awk -v incompatible=$((rc & 8)) '
		function bad(why) { reasons[++nbad] = why }
		/^Leaf changes summary|^Changed leaf types summary/ { next }
		/^Removed\/Changed\/Added (functions|variables) summary/ {
			if ($4 + 0 || $6 + 0) bad($0)
			next
		}
		/^[0-9]+ Added / { mode = "added"; next }
		# "Function symbols changes summary: 0 Removed, 4 Added ...":
		# symbols without debug info; only removals are a break.
		/^(Function|Variable) symbols changes summary: / {
			if ($5 + 0) bad($0)
			mode = "added"
			next
		}
		/^[0-9]+ (Removed|Changed|removed|changed) / { mode = "bad"; bad($0); next }
		/^ELF SONAME changed/ { mode = "bad"; bad($0); next }
		/^\x27.*\x27 changed:$/ { mode = "type"; old = ""; type = $0; next }
		/^[ \t]*$/ { next }
		mode == "added" && /^  \[A\] / { next }
		mode == "type" && /^  type size changed from [0-9]+ to [0-9]+ \(in bits\)$/ {
			old = $5 + 0
			if ($7 + 0 < old) bad(type " " $0)
			next
		}
		mode == "type" && /^  [0-9]+ data member insertions?:$/ { mode = "insert"; next }
		mode == "type" && /^  details were reported earlier$/ { next }
		mode == "insert" && /^    \x27.*\x27, at offset [0-9]+ \(in bits\)/ {
			off = $0; sub(/.*\x27, at offset /, "", off); off += 0
			if (old == "" || off < old) bad(type " " $0)
			next
		}
		{ bad((type != "" ? type " " : "") $0) }
		END {
			if (incompatible) bad("abidiff counts a change incompatible")
			for (i = 1; i <= nbad; i++) print "  " reasons[i]
			exit nbad > 0
		}' "$tmp/report" >"$tmp/reasons"
	verdict=$?
	if [ $verdict -ne 0 ]; then
		echo "ABI check FAILED: $lib against $base"
		cat "$tmp/report"
		echo "incompatible:"
		cat "$tmp/reasons"
		exit 1
	fi
	if [ $rc -eq 0 ]; then
		echo "ABI check: $lib is the baseline's ABI ($base)"
	else
		echo "ABI check: $lib extends $base compatibly:"
		sed 's/^/  /' "$tmp/report"
	fi
	;;
symbols)
	# abi.sh symbols LIB VERSION [OLD]: debian/libwafer0.symbols for LIB,
	# each symbol with its version node; a symbol OLD lists keeps the
	# version it came with, a new one gets VERSION (the release now).
	[ $# -ge 3 ] || die "usage: abi.sh symbols LIB VERSION [OLD]"
	lib=$2 version=$3 old=${4:-/dev/null}
	[ -f "$old" ] || old=/dev/null
	soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
	[ -n "$soname" ] || die "$lib: no SONAME"
	echo "$soname" | sed 's/^\(lib.*\)\.so\.\([0-9]*\)$/\1.so.\2 \1\2 #MINVER#/'
	echo "* Build-Depends-Package: libwafer-dev"
	nm -D --defined-only --with-symbol-versions "$lib" |
		awk '{ name = $3; sub(/@@/, "@", name); if (name !~ /@/) name = name "@" name; print name }' |
		LC_ALL=C sort | while read -r sym; do
			was=$(awk -v s="$sym" '$1 == s { print $2; exit }' "$old")
			echo " $sym ${was:-$version}"
		done
	;;
*)
	die "usage: abi.sh dump LIB INCLUDEDIR | check BASELINE LIB INCLUDEDIR | symbols LIB VERSION [OLD]"
	;;
esac
