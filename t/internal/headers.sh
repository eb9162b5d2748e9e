#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# Each public header compiles on its own, as C99 and as C++, with strict
# warnings: a program can include any one of them first.
set -u
if [ -z "${T_SRCDIR:-}" ]; then
	echo "Bail out! T_SRCDIR not set (run through make check)"
	exit 1
fi
include=$T_SRCDIR/../include
CC=${CC:-cc}
CXX=${CXX:-c++}
n=0
check() { # compiler-and-flags, header, label
	n=$((n + 1))
	# T_CPPFLAGS: configure's CPPFLAGS, where it found <dlpack/dlpack.h>
	# outside the default paths.
	# shellcheck disable=SC2086 # the flags are words
	if out=$($1 -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$include" ${T_CPPFLAGS:-} "$2" 2>&1); then
		echo "ok $n - $3"
	else
		echo "not ok $n - $3"
		echo "$out" | sed 's/^/# /'
	fi
}
for h in "$include"/wafer/*.h; do
	name=wafer/$(basename "$h")
	# <wafer/dlpack.h> needs DLPack's own header (configure's WAFER_DLPACK).
	if [ "$name" = wafer/dlpack.h ] && [ "${WAFER_HAVE_DLPACK:-no}" != yes ]; then
		n=$((n + 2))
		echo "ok $((n - 1)) # SKIP $name as C99: ${WAFER_DLPACK_WHY:-DLPack not configured}"
		echo "ok $n # SKIP $name as C++11: ${WAFER_DLPACK_WHY:-DLPack not configured}"
		continue
	fi
	check "$CC -std=c99 -x c" "$h" "$name alone as C99"
	if command -v "$CXX" >/dev/null 2>&1; then
		check "$CXX -std=c++11 -x c++" "$h" "$name alone as C++11"
	else
		# A C++ compiler is optional; say that the check did not run.
		n=$((n + 1))
		echo "ok $n # SKIP $name as C++11: no C++ compiler ($CXX) on this machine"
	fi
done
echo "1..$n"
