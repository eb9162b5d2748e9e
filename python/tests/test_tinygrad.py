# wafer — SPDX-License-Identifier: MIT
#
# tinygrad on wafer, judged by tinygrad's own tests: test/test_tiny.py
# from tinygrad's source distribution, fetched from the package index at
# test time (never kept in this tree) and run unmodified with DEV=WAFER
# on the suite's device; and a small training run (wafer.tinygrad_mlp)
# reaching the same loss on WAFER as on tinygrad's own CPU device.
#
# The version is the one python/pyproject.toml pins. The files come from
# WAFER_TINYGRAD_DIST, a directory holding tinygrad's sdist (and wheel)
# for a machine without network, else from PyPI through pip. Skips,
# saying why, where neither is reachable or the device builds no program
# in a format tinygrad renders.
import json
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET

import pytest

import wafer

HERE = pathlib.Path(__file__).resolve().parent
PIN = re.search(r'"tinygrad==([0-9.]+)"',
                (HERE.parent / "pyproject.toml").read_text()).group(1)

# Skips of test_tiny.py that are tinygrad's own choice, not a lack of
# wafer's: its image dtypes exist on its own OpenCL device only.
TINYGRAD_SKIPS = ("image only supported on CL",)

# Two devices sum in other orders: float32 losses agree to this.
LOSS_RTOL = 1e-4


def pip(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "pip", *args,
                           "--disable-pip-version-check"],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def tinygrad_dist(tmp_path_factory):
    """(site, test_tiny): a directory to put first on PYTHONPATH (empty
    when the interpreter already has the pinned tinygrad) and
    test_tiny.py extracted from the sdist."""
    work = tmp_path_factory.mktemp("tinygrad")
    local = os.environ.get("WAFER_TINYGRAD_DIST")
    dist = pathlib.Path(local) if local else work / "dist"
    if not local:
        # the sdist (pip builds its metadata in an isolated environment
        # with a recent setuptools) and the wheel, which installs without
        # building
        for kind in (["--no-binary", ":all:"], ["--only-binary", ":all:"]):
            try:
                r = pip("download", f"tinygrad=={PIN}", "--no-deps", *kind,
                        "-d", str(dist))
            except (OSError, subprocess.TimeoutExpired) as e:
                pytest.skip(f"pip download tinygrad=={PIN} did not finish: "
                            f"{e}")
            if r.returncode:
                err = [ln for ln in r.stderr.splitlines() if "ERROR" in ln]
                pytest.skip(f"tinygrad {PIN} is not reachable on PyPI: "
                            + (err or r.stderr.strip().splitlines()
                               or ["pip says nothing"])[-1])
    sdists = sorted(dist.glob(f"tinygrad-{PIN}.tar.gz"))
    wheels = sorted(dist.glob(f"tinygrad-{PIN}-*.whl"))
    if not sdists or not wheels:
        pytest.skip(f"{dist} lacks tinygrad {PIN}'s sdist or wheel")
    with tarfile.open(sdists[0]) as tar:
        member = next((m for m in tar.getmembers()
                       if m.name.endswith("/test/test_tiny.py")), None)
        if member is None:
            pytest.fail(f"{sdists[0].name} has no test/test_tiny.py")
        test_tiny = work / "test_tiny.py"
        test_tiny.write_bytes(tar.extractfile(member).read())

    site = work / "site"
    try:
        import tinygrad  # noqa: F401
        from importlib.metadata import version
        have = version("tinygrad")
    except ImportError:
        have = None
    if have != PIN:
        r = pip("install", "--no-deps", "--no-index", "--target", str(site),
                str(wheels[0]))
        if r.returncode:
            pytest.fail(f"pip install {wheels[0].name} failed:\n"
                        + r.stderr[-3000:])
        sys.path.insert(0, str(site))
        for name in [m for m in sys.modules if m.split(".")[0] == "tinygrad"]:
            del sys.modules[name]
    return site, test_tiny


@pytest.fixture(scope="session")
def tinygrad_env(tinygrad_dist, client):
    """The environment of a process running tinygrad on the suite's
    device; skips where the device builds no program tinygrad renders."""
    import wafer.tinygrad
    formats = wafer.tinygrad.program_formats(client)
    if not formats:
        pytest.skip(f"{client.selector} builds and runs no program in the "
                    "formats tinygrad renders (cuda-c, opencl-c, host-c)")
    site, _ = tinygrad_dist
    env = dict(os.environ, DEV="WAFER", PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(site)] + [p for p in sys.path if p])
    return env


def test_tinygrad_test_tiny(tinygrad_dist, tinygrad_env, tmp_path):
    """Every test of tinygrad's test_tiny.py passes on WAFER, or skips
    for a reason of tinygrad's own (TINYGRAD_SKIPS)."""
    _, test_tiny = tinygrad_dist
    junit = tmp_path / "junit.xml"
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "wafer.tinygrad",
                        "-p", "no:cacheprovider", "-q", "-rs",
                        f"--junitxml={junit}", str(test_tiny)],
                       cwd=tmp_path, env=tinygrad_env, capture_output=True,
                       text=True, timeout=1200)
    assert junit.exists(), r.stdout[-3000:] + r.stderr[-3000:]
    passed, bad = [], []
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name")
        verdict = "passed"
        for child in case:
            msg = " ".join((child.get("message") or "").split())[:200]
            if child.tag in ("failure", "error"):
                verdict = f"{child.tag}: {msg}"
            elif child.tag == "skipped":
                verdict = f"skipped: {msg}"
                if any(s in msg for s in TINYGRAD_SKIPS):
                    verdict = "tinygrad's skip"
        (passed if verdict in ("passed", "tinygrad's skip") else
         bad).append(f"{name}: {verdict}")
    assert passed, r.stdout[-3000:]
    assert not bad, "\n".join(bad) + "\n" + r.stdout[-4000:]
    assert r.returncode == 0, r.stdout[-3000:]


RENDERER_SCRIPT = r"""
import json
import wafer.tinygrad
from tinygrad import Device, dtypes
r = Device["WAFER"].renderer
print(json.dumps({"renderer": type(r).__name__, "arch": r.target.arch,
                  "dtypes": sorted(str(d) for d in r.supported_dtypes()),
                  "half": dtypes.half in r.supported_dtypes()}))
"""


def test_tinygrad_renderer_knows_the_device(tinygrad_env):
    """The renderer WAFER picks answers tinygrad's questions about the
    device: its dtypes, which tinygrad's CUDA renderer computes from the
    architecture (int("sm_90"[3:])), so a CUDA device must name one."""
    r = subprocess.run([sys.executable, "-c", RENDERER_SCRIPT],
                       env=tinygrad_env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert "dtypes.float" in out["dtypes"], out
    if out["renderer"] == "WaferCUDARenderer":
        assert re.fullmatch(r"sm_[0-9]+", out["arch"]), out
        assert out["half"], out  # every GPU wafer's cuda plugin runs on


# What tinygrad's CUDA renderer writes at the top of a kernel on half.
HALF_CUDA = ('#include <cuda_fp16.h>\n'
             'extern "C" __global__ void wafer_half(half *x) '
             '{ x[0] = x[0] * (half)2.0f; }\n')


def test_tinygrad_cuda_half_kernels_build(client, tinygrad_dist):
    """WAFER's CUDA renderer keeps half (and bfloat16, fp8) only where
    its kernels build: they include CUDA's headers, which NVRTC does not
    find by itself, so the programs get the toolkit's include directory.
    Needs only a device that builds CUDA C (the stand-in driver does)."""
    try:
        client.program({"cuda": 'extern "C" __global__ void wafer_k('
                                'float *x) { x[0] = 1; }'})
    except (wafer.NotSupportedError, wafer.BuildError) as e:
        pytest.skip(f"{client.selector} builds no CUDA C: {e}")
    from tinygrad.dtype import dtypes
    from tinygrad.helpers import Target

    from wafer.tinygrad import WaferCUDARenderer
    r = WaferCUDARenderer(Target("WAFER", "", "sm_90"))
    if dtypes.half not in r.supported_dtypes():
        pytest.skip("no CUDA headers here (cuda_fp16.h): WAFER's CUDA "
                    "renderer leaves half out")
    client.program({"cuda": HALF_CUDA}, r.build_options())  # builds


# TinyJit on WAFER: a function of two kernels (one batch, one wafer
# graph), called on four pairs of inputs; the calls after the JIT's
# recording one (the second) must equal the function without the JIT, and each replay must be one graph launch with no kernel issued
# on its own, seen in wafer's trace. With one graph kept
# (WaferGraph.GRAPHS = 1) new inputs rebind it instead of recording.
JIT_SCRIPT = r"""
import json, sys
import numpy as np
import wafer, wafer.tinygrad
from tinygrad import Tensor, TinyJit

wafer.tinygrad.WaferGraph.GRAPHS = int(sys.argv[2])

def f(a, b):
    c = (a + b).relu().contiguous()
    return (c * a).sum(axis=1).realize()

jf = TinyJit(f)
rng = np.random.default_rng(0)
data = [(rng.standard_normal((16, 32)).astype(np.float32),
         rng.standard_normal((16, 32)).astype(np.float32)) for _ in range(4)]
pairs = [(Tensor(a, device="WAFER").realize(), Tensor(b, device="WAFER").realize())
         for a, b in data]
want = [f(a, b).numpy() for a, b in pairs]
jf(*pairs[0]).numpy(); jf(*pairs[1]).numpy()  # the JIT records
got = []
with wafer.trace(sys.argv[1], runtime=wafer.tinygrad._runtime):
    for i in range(8):
        got.append(jf(*pairs[i % 4]).numpy().tolist())
doc = json.load(open(sys.argv[1]))
# each command's host span (a device span may follow where it is timed)
spans = [e["args"].get("command") for e in doc["traceEvents"]
         if e["ph"] == "X" and e.get("cat") == "host"]
print(json.dumps({"same": all(np.array_equal(g, want[i % 4]) for i, g in enumerate(got)),
                  "commands": {c: spans.count(c) for c in set(spans)}}))
"""


@pytest.mark.parametrize("graphs", [8, 1])
def test_tinygrad_jit_replays_wafer_graphs(tinygrad_env, tmp_path, graphs):
    r = subprocess.run([sys.executable, "-c", JIT_SCRIPT,
                        str(tmp_path / "jit.json"), str(graphs)],
                       env=tinygrad_env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["same"], out
    commands = out["commands"]
    assert commands.get("graph_launch") == 8, commands
    assert commands.get("execute", 0) == 0, commands
    # The JIT's recording call (pair 1) made the first graph. With one
    # graph kept, each traced call is on another pair than the one
    # before: it rebinds the graph to that pair's two tensors; with
    # eight, each other pair gets its own, recorded once.
    if graphs == 1:
        assert commands.get("graph_begin", 0) == 0, commands
        assert commands.get("graph_rebind") == 2 * 8, commands
    else:
        assert commands.get("graph_begin") == 3, commands
        assert commands.get("graph_rebind", 0) == 0, commands


def train(device, env):
    r = subprocess.run([sys.executable, "-m", "wafer.tinygrad_mlp",
                        "--device", device, "--steps", "40"],
                       env=env, capture_output=True, text=True, timeout=900)
    if r.returncode:
        return None, r.stderr.strip().splitlines()[-1:] or ["no output"]
    return json.loads(r.stdout.strip().splitlines()[-1]), None


def test_tinygrad_training_matches_cpu(tinygrad_env):
    """An MLP trained with tinygrad's nn and Adam reaches the same loss,
    step by logged step, on WAFER as on tinygrad's own CPU device."""
    ours, err = train("WAFER", tinygrad_env)
    assert ours is not None, err
    ref, why = train("CPU", tinygrad_env)
    if ref is None:
        pytest.skip(f"tinygrad's own CPU device does not run here: {why}")
    assert [s for s, _ in ours["losses"]] == [s for s, _ in ref["losses"]]
    for (step, got), (_, want) in zip(ours["losses"], ref["losses"]):
        assert got == pytest.approx(want, rel=LOSS_RTOL), (step, ours, ref)
    # and it learned: the loss fell well below the first step's
    assert ours["final_loss"] < ours["losses"][0][1] / 4, ours
    assert ours["peak_bytes_wafer"] > 0, ours
    # TinyJit's steps replayed as wafer graphs
    assert ours["wafer_graphs"]["launches"] > 0, ours
