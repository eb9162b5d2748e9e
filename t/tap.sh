# wafer — SPDX-License-Identifier: MIT
#
# tap.sh: the TAP helpers the shell tests source. `tap_tmpdir NAME` makes
# $tmp, where a test keeps a command's output. `check NAME COMMAND...`
# runs COMMAND and prints one numbered TAP line, `point NAME STATUS` the
# same for a status the test already has; on failure they set failed=1
# and show, as TAP comments, the files named in $tap_show
# (space-separated) that exist. A test ends with `exit $failed`. A test
# sources it as
#   . "${T_SRCDIR:?is not set (run through make check)}/tap.sh"
# and, to test a built tool, calls `tap_tool NAME`.

n=0
failed=0
tap_show=
check() { # check NAME COMMAND...: one TAP line
	name=$1
	shift
	"$@"
	point "$name" $?
}

# point NAME STATUS: one TAP line for a status already had; 0 passes.
point() {
	n=$((n + 1))
	if [ "$2" -eq 0 ]; then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1"
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

# tap_tool NAME: for a test of the built tools/NAME: bails out unless
# make check (or wafer-conformance) set T_BUILDDIR, the build tree's t/;
# sets $tool to the tool and makes $tmp (tap_tmpdir NAME).
tap_tool() {
	if [ -z "${T_BUILDDIR:-}" ]; then
		echo "Bail out! T_BUILDDIR not set (run through make check)"
		exit 1
	fi
	tool=$T_BUILDDIR/../tools/$1
	tap_tmpdir "$1"
}
