#!/bin/sh
# wafer — SPDX-License-Identifier: MIT
#
# tinygrad-gpu.sh DIST: tinygrad on wafer's cuda plugin, on an NVIDIA
# machine without network. DIST is a directory holding tinygrad's sdist
# and wheel of the version python/pyproject.toml pins (fetched elsewhere:
#   pip download tinygrad==0.14.0 --no-deps -d DIST
#   pip download tinygrad==0.14.0 --no-deps --no-binary :all: -d DIST).
# Run from the top of the source tree (a checkout: autoreconf runs where
# there is no configure):
#
#   OUT=/some/dir sh dev/tinygrad-gpu.sh DIST
#
# Builds wafer (build/, unless it is built), installs the Python package
# and tinygrad into a venv (--system-site-packages: the machine's numpy,
# pytest), then writes to $OUT (default ./tinygrad-gpu-out):
#
#   summary.log         the device and every figure below
#   test_tiny-wafer.log tinygrad's test/test_tiny.py, unmodified, with
#                       DEV=WAFER WAFER_BACKEND=cuda (pytest -rs)
#   test_tiny-cuda.log  the same on tinygrad's own CUDA device
#   suite.log           python/tests/test_tinygrad.py on cuda (test_tiny
#                       and the loss against tinygrad's CPU device, which
#                       skips where tinygrad's CPU device has no clang)
#   train-*.json        wafer.tinygrad_mlp on WAFER (wafer-on-cuda) and on
#                       tinygrad's CUDA: the small run (losses, which must
#                       agree) and a larger one (steps/s, peak bytes:
#                       tinygrad's count for both, wafer's peak_in_use)
#   profile-*.txt       where the large run's time goes, on each device:
#                       cProfile's top 20 functions by own time over the
#                       timed steps (summary.log repeats the top 8)
#   trace-wafer.txt     wafer-trace report of WAFER's timed steps: the
#                       commands (graph_launch: TinyJit's replays as
#                       wafer graphs), kernels, launch- or device-bound
set -u
dist=${1:?usage: OUT=dir sh dev/tinygrad-gpu.sh DIST}
dist=$(cd "$dist" && pwd) || exit 1
top=$(pwd)
OUT=${OUT:-$top/tinygrad-gpu-out}
mkdir -p "$OUT" || exit 1
summary=$OUT/summary.log
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

# wafer
if [ ! -e build/Makefile ]; then
	[ -x configure ] || autoreconf -fi >"$OUT/build.log" 2>&1
	mkdir -p build && (cd build && ../configure) >>"$OUT/build.log" 2>&1
fi
(cd build && make -j"${JOBS:-16}") >>"$OUT/build.log" 2>&1 ||
	{ say "build failed: see build.log"; tail -30 "$OUT/build.log"; exit 1; }

# the package and tinygrad, without network
venv=$top/build/tinygrad-venv
py=$venv/bin/python
# the first interpreter that builds the package offline: numpy, pytest
# and setuptools with bdist_wheel (setuptools >= 70.1, or wheel)
base=
for p in ${PYTHON:-python3 /usr/bin/python3 python3.12}; do
	command -v "$p" >/dev/null 2>&1 && "$p" -c 'import numpy, pytest, setuptools
try: import setuptools.command.bdist_wheel
except ImportError: import wheel' 2>/dev/null && { base=$p; break; }
done
[ -n "$base" ] || { say "no python3 with numpy, pytest, setuptools and wheel (set PYTHON)"; exit 1; }
{ [ -x $py ] || "$base" -m venv --system-site-packages "$venv"; } >"$OUT/install.log" 2>&1
# A venv sees the system's site-packages, not the user's (~/.local), where
# the machine may keep numpy and pytest: those directories go on
# PYTHONPATH, after the venv's own.
PYTHONPATH=$("$base" -c 'import os, numpy, pytest
print(":".join(sorted({os.path.dirname(os.path.dirname(m.__file__)) for m in (numpy, pytest)})))')${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH
PKG_CONFIG_PATH=$top/build $py -m pip install --no-build-isolation --no-deps \
	--no-index --force-reinstall ./python >>"$OUT/install.log" 2>&1 &&
	$py -m pip install --no-deps --no-index "$dist"/tinygrad-*.whl >>"$OUT/install.log" 2>&1 ||
	{ say "install failed: see install.log"; tail -30 "$OUT/install.log"; exit 1; }
work=$top/build/tinygrad-run
rm -rf "$work" && mkdir -p "$work" || exit 1
tar -xzf "$dist"/tinygrad-*.tar.gz -C "$work" --wildcards '*/test/test_tiny.py' &&
	cp "$work"/tinygrad-*/test/test_tiny.py "$work/test_tiny.py" || exit 1

# the build's plugins, found through build/uninstalled
py="$top/build/uninstalled $py"
export WAFER_BACKEND=${WAFER_BACKEND:-cuda}
say "device: $(build/uninstalled build/tools/wafer-info 2>/dev/null | grep -m1 "$WAFER_BACKEND:0" || echo '?')"
say "tinygrad: $($py -c 'from importlib.metadata import version; print(version("tinygrad"))')"

# tinygrad's test_tiny.py: on WAFER (wafer-on-cuda), then on tinygrad's CUDA
for dev in WAFER CUDA; do
	log=$OUT/test_tiny-$(echo $dev | tr A-Z a-z).log
	(cd "$work" && DEV=$dev timeout 600 $py -m pytest -p wafer.tinygrad \
		-p no:cacheprovider -q -rfEs test_tiny.py) >"$log" 2>&1
	say "test_tiny.py on $dev (exit $?): $(tail -1 "$log")"
	grep -E '^(FAILED|ERROR) ' "$log" | cut -c1-200 | sed 's/^/    /' | tee -a "$summary"
done
# the architecture WAFER renders CUDA C for (tinygrad's CUDA renderer
# reads its dtypes from it: "sm_90" on an H200, never empty) and the
# CUDA headers its programs include (half needs cuda_fp16.h)
say "WAFER renderer: $(cd "$work" && $py -c 'import wafer.tinygrad
from tinygrad import Device, dtypes
r = Device["WAFER"].renderer
print(type(r).__name__, "arch=%r" % r.target.arch, "options=%r" % r.build_options(),
      "half" if dtypes.half in r.supported_dtypes() else "no half")' 2>&1 | tail -1)"

# the suite's tinygrad tests on cuda
(cd "$work" && WAFER_TINYGRAD_DIST=$dist timeout 900 $py -m pytest \
	-p no:cacheprovider -q -rfEs "$top/python/tests/test_tinygrad.py" \
	"$top/python/tests/test_graph.py") >"$OUT/suite.log" 2>&1
say "python/tests/test_tinygrad.py and test_graph.py on cuda (exit $?): $(tail -1 "$OUT/suite.log")"
grep -E '^(FAILED|ERROR) ' "$OUT/suite.log" | cut -c1-200 | sed 's/^/    /' | tee -a "$summary"

# training: the small run (same loss?) and a larger one (speed, memory)
train() { # NAME DEVICE ARGS...
	name=$1 dev=$2
	shift 2
	(cd "$work" && timeout 600 $py -m wafer.tinygrad_mlp --device "$dev" "$@") \
		>"$OUT/train-$name.json" 2>"$OUT/train-$name.err"
	say "train $name: $(tail -1 "$OUT/train-$name.json" | $py -c '
import json, sys
try: r = json.loads(sys.stdin.read())
except ValueError: print("failed (see the .err file)"); sys.exit()
g = r.get("wafer_graphs")
print("final loss %.6f, %.1f steps/s, peak %d bytes (tinygrad), wafer peak %s%s"
      % (r["final_loss"], r["steps_per_s"], r["peak_bytes_tinygrad"],
         r.get("peak_bytes_wafer", "-"),
         ", wafer graphs %(graphs)d (%(launches)d launches, %(native_launches)d native)" % g
         if g else ""))')"
}
train small-wafer WAFER --steps 60
train small-cuda CUDA --steps 60
train large-wafer WAFER --steps 300 --batch 1024 --hidden 2048
train large-cuda CUDA --steps 300 --batch 1024 --hidden 2048
$py - "$OUT" <<'PY' | tee -a "$summary"
import json, sys
def load(n):
    try: return json.load(open(f"{sys.argv[1]}/train-{n}.json"))
    except (OSError, ValueError): return None
w, c = load("small-wafer"), load("small-cuda")
if w and c:
    worst = max(abs(a[1] - b[1]) / abs(b[1]) for a, b in zip(w["losses"], c["losses"]))
    print(f"small run: worst relative loss difference WAFER vs CUDA {worst:.2e} (want < 1e-4)")
w, c = load("large-wafer"), load("large-cuda")
if w and c:
    print(f"large run: WAFER/CUDA steps/s {w['steps_per_s'] / c['steps_per_s']:.2f}x (goal >= 0.9x)")
PY

# where the time goes: the large run's timed steps under cProfile on both
# devices, and wafer's trace of WAFER's (wafer-trace report)
for dev in WAFER CUDA; do
	name=$(echo $dev | tr A-Z a-z)
	trace=
	[ $dev = WAFER ] && trace=$OUT/trace-wafer.json
	(cd "$work" && timeout 600 $py -m wafer.tinygrad_mlp --device $dev \
		--steps 100 --batch 1024 --hidden 2048 \
		--profile "$OUT/profile-$name.pstats" ${trace:+--trace "$trace"}) \
		>"$OUT/profile-$name.json" 2>"$OUT/profile-$name.err"
	$py -c 'import pstats, sys
pstats.Stats(sys.argv[1]).sort_stats("tottime").print_stats(20)' \
		"$OUT/profile-$name.pstats" >"$OUT/profile-$name.txt" 2>&1
	say "profile $dev (top 8 by own time; profile-$name.txt has 20):"
	grep -A9 'ncalls' "$OUT/profile-$name.txt" | cut -c1-160 | sed 's/^/    /' | tee -a "$summary"
done
build/uninstalled build/tools/wafer-trace report --top 20 "$OUT/trace-wafer.json" \
	>"$OUT/trace-wafer.txt" 2>&1
say "wafer trace of WAFER's timed steps (trace-wafer.txt):"
sed -n '1,2p;/^all kernels/p;/^client/,/^$/p' "$OUT/trace-wafer.txt" | sed 's/^/    /' | tee -a "$summary"
$py - "$OUT/trace-wafer.json" <<'PY' | tee -a "$summary"
import collections, json, sys
try: doc = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e: print(f"    no trace: {e}"); sys.exit()
n = collections.Counter(e["args"].get("command") for e in doc["traceEvents"]
                        if e["ph"] == "X" and e.get("cat") == "host")
print("    commands (host spans): " + ", ".join(f"{k} {v}" for k, v in n.most_common()))
PY
