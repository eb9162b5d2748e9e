# wafer — SPDX-License-Identifier: MIT
#
# tap.sh: the TAP helpers the shell tests source. `tap_tmpdir NAME` makes
# $tmp, where a test keeps a command's output. `check NAME COMMAND...` runs COMMAND and
# prints one numbered TAP line; on failure it sets failed=1 and shows, as
# TAP comments, the files named in $tap_show (space-separated) that exist.
# A test ends with `exit $failed`.

n=0
failed=0
tap_show=
check() { # check NAME COMMAND...: one TAP line
	name=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name"
		failed=1
		for shown in $tap_show; do
			[ -f "$shown" ] && sed 's/^/# /' "$shown"
		done
	fi
	return 0
}

# tap_tmpdir NAME: makes $tmp, a fresh folder removed when the test exits.
tap_tmpdir() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
	trap 'rm -rf "$tmp"' EXIT
}
