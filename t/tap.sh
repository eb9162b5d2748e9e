# wafer — SPDX-License-Identifier: MIT
#
# tap.sh: the TAP helper the shell tests share, sourced after their
# T_SRCDIR check:  . "$T_SRCDIR/tap.sh"
#
# check NAME COMMAND...: runs COMMAND and prints "ok N - NAME" or
# "not ok N - NAME". A failure sets failed=1 and shows, as TAP comments,
# the files named in check_show (set it after sourcing; empty: none).
# n counts the checks, for a closing "1..$n".
n=0
failed=0
check_show=
check() {
	name=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name"
		failed=1
		# shellcheck disable=SC2086 # a list of file names
		[ -z "$check_show" ] || sed 's/^/# /' $check_show
	fi
}
