#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# python-gpu.sh: the Python package on the GPU machine, against a built
# wafer tree (from the make dist tarball):
#
#   dev/python-gpu.sh [BUILD_DIR]        (default: ./build)
#
# 1. builds python/ against BUILD_DIR's wafer-uninstalled.pc: pip into a
#    venv (--system-site-packages, so torch, cupy and numpy are seen) when
#    pip and setuptools are there, else the compiler directly (no network
#    is needed either way);
# 2. runs the pytest suite on cuda (WAFER_BACKEND=cuda) when pytest and
#    hypothesis are importable;
# 3. dev/python-gpu.py: DLPack with PyTorch and CuPy, by pointer;
# 4. python -m wafer.bench on cuda:0 (beside PyTorch) and on cpu (beside
#    numpy).
# PYTHON picks the interpreter (default python3). Exit status 1 when a
# step failed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd) || exit 1
py=${PYTHON:-python3}
work=$build/python-gpu
rm -rf "$work"
mkdir -p "$work" || exit 1
cp -R "$top/python" "$work/src"
export PKG_CONFIG_PATH="$build${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pkg-config --exists wafer || { echo "pkg-config does not find wafer in $build"; exit 1; }
status=0
step() { printf '\n==> %s\n' "$*"; }

step "building the package with $py"
# The venv sees the interpreter's own site-packages only: where numpy,
# torch and cupy live elsewhere (a venv of their own, PYTHONPATH), it
# cannot import them, and the compiler path below is taken instead.
if "$py" -m venv --system-site-packages "$work/venv" &&
	"$work/venv/bin/python" -c 'import numpy' 2>/dev/null &&
	"$work/venv/bin/python" -m pip install --no-build-isolation --no-index \
		--no-deps "$work/src" >"$work/pip.log" 2>&1; then
	run="$work/venv/bin/python"
	echo "pip: installed into $work/venv"
else
	echo "pip could not build it (see $work/pip.log); the compiler directly:"
	ext=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
	inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
	dl=
	# src/dlpack.c is DLPack's only when libwafer has it.
	printf '#include <wafer/dlpack.h>\nint main(void){return wafer_tensor_to_dlpack(0,0,0)==WAFER_OK;}\n' >"$work/t.c"
	# shellcheck disable=SC2046 # pkg-config's flags are words
	${CC:-cc} "$work/t.c" -o "$work/t" $(pkg-config --cflags --libs wafer) 2>/dev/null && dl=-DWP_HAVE_DLPACK=1
	libdir=$(pkg-config --libs-only-L wafer | sed 's/^-L//; s/ .*//')
	# shellcheck disable=SC2046,SC2086 # pkg-config's flags are words
	${CC:-cc} -shared -fPIC -O2 -std=c11 $dl -I"$inc" "$work"/src/src/*.c \
		$(pkg-config --cflags --libs wafer) -Wl,-rpath,"$libdir" \
		-o "$work/src/wafer/_wafer$ext" || exit 1
	run=$py
	export PYTHONPATH="$work/src${PYTHONPATH:+:$PYTHONPATH}"
fi
"$build/uninstalled" "$run" -c 'import wafer; print("wafer", wafer.library_version(), [d.selector for d in wafer.Runtime().devices()])' || exit 1

step "pytest on cuda"
if "$run" -c 'import pytest, hypothesis' 2>/dev/null; then
	(cd "$work" && WAFER_BACKEND=cuda WAFER_README="$top/README.md" \
		"$build/uninstalled" "$run" -m pytest -p no:cacheprovider -q -rs \
		"$top/python/tests") || status=1
else
	echo "skip: pytest or hypothesis is not importable by $run"
fi

step "DLPack with PyTorch and CuPy"
"$build/uninstalled" "$run" "$top/dev/python-gpu.py" --device cuda:0 || status=1

step "python -m wafer.bench (cuda:0, beside PyTorch)"
"$build/uninstalled" "$run" -m wafer.bench --device cuda:0 --mib 256 || status=1
step "python -m wafer.bench (cpu, beside numpy)"
"$build/uninstalled" "$run" -m wafer.bench --device cpu || status=1
exit $status
