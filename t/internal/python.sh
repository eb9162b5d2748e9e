#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# python.sh: the Python package (python/, TAP). Builds the extension
# against this build tree — pip installs a copy of python/ into a virtual
# environment under the build directory (Debian's pip refuses the system
# Python: PEP 668), with the system's numpy, pytest and hypothesis
# visible (--system-site-packages), finding libwafer through the build's
# wafer-uninstalled.pc — then runs its pytest suite on the suite's
# backend (WAFER_BACKEND) and reports each pytest test as one TAP point,
# so the suite's closing count includes them; in the suite's default run
# also on the cuda plugin's stand-in driver where it is built. Skips,
# saying what is missing, where Python's headers, pip, setuptools,
# numpy, pytest or hypothesis are not installed, and under sanitizers
# (an uninstrumented python cannot load an instrumented libwafer).
#
# PYTHON picks the interpreter; by default the first of python3 and
# /usr/bin/python3 that has everything.
set -u

n=0
failed=0
point() { # STATUS NAME [DIAGNOSTICS]
	n=$((n + 1))
	echo "$1 $n - $2"
	[ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/# /'
	[ "$1" = ok ] || failed=$((failed + 1))
}
skip_all() { echo "1..0 # SKIP $*"; exit 0; }

if [ -z "${T_SRCDIR:-}" ] || [ -z "${T_BUILDDIR:-}" ]; then
	skip_all "T_SRCDIR and T_BUILDDIR are not set (run through make check)"
fi
top_srcdir=$(cd "$T_SRCDIR/.." && pwd)
top_builddir=$(cd "$T_BUILDDIR/.." && pwd)
[ -n "${SANITIZER_FLAGS:-}" ] &&
	skip_all "sanitizer build ($SANITIZER_FLAGS): python is not instrumented"
command -v pkg-config >/dev/null 2>&1 || skip_all "pkg-config not found"

# What the interpreter lacks, as Debian package names; "" when nothing.
lacks() {
	"$1" - <<'PY' 2>/dev/null || echo "a working $1"
import importlib.util, os, sysconfig
need = [("numpy", "python3-numpy"), ("pytest", "python3-pytest"),
        ("hypothesis", "python3-hypothesis"), ("pip", "python3-pip"),
        ("setuptools", "python3-setuptools"), ("wheel", "python3-wheel"),
        ("venv", "python3-venv")]
miss = [pkg for mod, pkg in need if importlib.util.find_spec(mod) is None]
if not os.path.exists(os.path.join(sysconfig.get_paths()["include"],
                                   "Python.h")):
    miss.insert(0, "python3-dev")
print(" ".join(miss))
PY
}
python=
why=
for p in ${PYTHON:-python3 /usr/bin/python3}; do
	command -v "$p" >/dev/null 2>&1 || continue
	m=$(lacks "$p")
	if [ -z "$m" ]; then
		python=$p
		break
	fi
	why="$why${why:+; }$p lacks $m"
done
[ -n "$python" ] || skip_all "no Python to build and test the package with (${why:-no python3})"

# see_base_modules BASE VENV_PYTHON: a venv made with
# --system-site-packages still does not see the user's site-packages
# (pip install --user) nor a base interpreter's extra path entries, where
# numpy, pytest and hypothesis may be (the GPU machine's Python): name the
# directories BASE finds them in to the venv in a .pth file.
see_base_modules() {
	sb_site=$("$2" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') &&
		"$1" - >"$sb_site/wafer-test-base.pth" <<'PY'
import importlib.util, os
for mod in ("numpy", "pytest", "hypothesis", "setuptools", "wheel"):
    spec = importlib.util.find_spec(mod)
    if spec and spec.origin:
        # .../site-packages/numpy/__init__.py -> .../site-packages
        print(os.path.dirname(os.path.dirname(spec.origin)))
PY
}

work=$T_BUILDDIR/python
venv=$work/venv
src=$work/src
tmp=$work/run
rm -rf "$src" "$tmp"
mkdir -p "$work" "$tmp" || exit 1

# The package is built from a copy: pip writes its build files next to
# the sources, and make distcheck's source tree is read-only.
log=$work/install.log
if { [ -x "$venv/bin/python" ] ||
	"$python" -m venv --system-site-packages --without-pip "$venv"; } >"$log" 2>&1 &&
	see_base_modules "$python" "$venv/bin/python" &&
	cp -R "$top_srcdir/python" "$src" && chmod -R u+w "$src" &&
	(cd "$work" && PKG_CONFIG_PATH="$top_builddir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" \
		"$venv/bin/python" -m pip install --no-build-isolation --no-index \
		--no-deps --force-reinstall --disable-pip-version-check "$src") >>"$log" 2>&1; then
	point ok "pip installs python/ into a venv against this build"
else
	point "not ok" "pip installs python/ into a venv against this build" \
		"$(tail -30 "$log")"
	echo "1..$n"
	exit 1
fi

# pytest_points LABEL [VAR=value...]: the pytest suite in that
# environment, reporting through a JUnit file turned into one TAP point
# per test, named "LABEL: file::test". It runs in a scratch directory so
# that nothing is written into the sources (no cache, no bytecode,
# hypothesis keeps no database).
pytest_points() {
	label=$1
	shift
	junit=$tmp/junit.xml
	rm -f "$junit"
	(cd "$tmp" && env PYTHONDONTWRITEBYTECODE=1 \
		WAFER_README="$top_srcdir/README.md" "$@" \
		"$venv/bin/python" -m pytest -p no:cacheprovider -q -rs \
		--junitxml="$junit" "$top_srcdir/python/tests") >"$tmp/pytest.log" 2>&1
	rc=$?
	if [ ! -s "$junit" ]; then
		point "not ok" "$label: pytest ran (exit $rc)" "$(tail -40 "$tmp/pytest.log")"
		return
	fi
	before=$failed
	# One line per test: STATUS<TAB>NAME<TAB>DETAIL (detail on one line).
	"$venv/bin/python" - "$junit" "$label" >"$tmp/results" <<'PY'
import sys
import xml.etree.ElementTree as ET
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    name = "%s: %s::%s" % (sys.argv[2],
                           case.get("classname", "").split(".")[-1],
                           case.get("name"))
    status, detail = "ok", ""
    for child in case:
        if child.tag in ("failure", "error"):
            status = "not ok"
            detail = (child.get("message") or child.text or "")
        elif child.tag == "skipped":
            status = "skip"
            detail = child.get("message") or "skipped"
    detail = " ".join(detail.split())[:300]
    print("%s\t%s\t%s" % (status, name.replace("\t", " "), detail))
PY
	while IFS="	" read -r status name detail; do
		case $status in
		ok) point ok "$name" ;;
		skip) n=$((n + 1)); echo "ok $n - $name # SKIP $detail" ;;
		*) point "not ok" "$name" "$detail" ;;
		esac
	done <"$tmp/results"
	if [ "$rc" -ne 0 ] && [ "$failed" -eq "$before" ]; then
		point "not ok" "$label: pytest exit status (exit $rc)" "$(tail -20 "$tmp/pytest.log")"
	fi
}

# On the suite's backend (WAFER_BACKEND, else the default device).
pytest_points python

# Where the cuda plugin and its stand-in driver (t/standins/fakecuda.c) are
# built, once more on it, as t/cuda/cuda.sh runs the client tests: the cuda
# plugin's host side and the mpsc channel through the package. (In the
# default run and in a cpu run, as t/cuda/cuda.sh's suites are; a run for
# another backend stays on it.)
fake=$T_BUILDDIR/standins/.libs/fakecuda.so
if [ "${WAFER_BACKEND:-cpu}" = cpu ] &&
	[ -e "$top_builddir/plugins/cuda/.libs/cuda.so" ] && [ -e "$fake" ]; then
	printf '[core]\nbackend = cuda, cpu\n[cuda]\ndriver_library = %s\ncublas = no\n' \
		"$fake" >"$tmp/fakecuda.conf"
	pytest_points "python (cuda stand-in)" WAFER_CONFIG="$tmp/fakecuda.conf" \
		WAFER_BACKEND=cuda
else
	n=$((n + 1))
	if [ "${WAFER_BACKEND:-cpu}" = cpu ]; then
		why="the cuda plugin or t/standins/fakecuda.so was not built"
	else
		why="a run for backend $WAFER_BACKEND stays on it"
	fi
	echo "ok $n - python (cuda stand-in) # SKIP $why"
fi
echo "1..$n"
[ "$failed" -eq 0 ]
