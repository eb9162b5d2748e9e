# wafer — SPDX-License-Identifier: MIT
#
# Runtime and client: devices, plugins, configuration and autotune
# settings, memory statistics.
import os
import subprocess
import sys
import textwrap

import numpy as np

import wafer


def test_devices(rt, client):
    devs = rt.devices()
    assert devs, "the suite runs where a device is"
    d = client.device
    assert d in devs
    assert d.selector == f"{d.backend}:{d.index}" == client.selector
    assert isinstance(d.features, frozenset)
    if d.capabilities & (1 << 2):
        assert "f64" in d.features


def test_plugins(rt, client):
    plugins = rt.plugins()
    accepted = [p for p in plugins if p["accepted"]]
    assert client.device.backend in [p["name"] for p in accepted]
    for p in plugins:
        assert p["accepted"] or p["reason"]


def test_options_and_autotune_settings(tmp_path):
    rt = wafer.Runtime({"memory.strategy": "pool",
                        ("core", "channel"): "mutex"},
                       autotune="off", autotune_cache_dir=str(tmp_path))
    assert rt.config("memory", "strategy") == ("pool", "options")
    assert rt.config("core", "channel")[0] == "mutex"
    assert rt.config("autotune", "mode") == ("off", "options")
    assert rt.config("autotune", "cache_dir")[0] == str(tmp_path)
    assert rt.config("nosuch", "key") is None
    c = rt.client("default")
    x = c.asarray(np.ones((8, 8), np.float32))
    np.testing.assert_array_equal((x @ x).numpy(), np.full((8, 8), 8))
    stats = rt.autotune_stats()
    assert set(stats) == {"keys_tuned", "benchmark_runs", "cache_hits",
                          "disk_hits", "disqualified", "default_runs"}
    assert stats["keys_tuned"] == 0  # mode off measures nothing


def test_memory_usage(client):
    client.sync()
    before = client.memory_usage()
    x = client.asarray(np.ones(1 << 16, np.float32))
    client.sync()
    during = client.memory_usage()
    assert during["bytes_in_use"] >= before["bytes_in_use"] + (1 << 18)
    assert during["handles_live"] == before["handles_live"] + 1
    assert during["peak_in_use"] >= during["bytes_in_use"]
    del x
    client.sync()
    after = client.memory_usage()
    assert after["handles_live"] == before["handles_live"]
    client.memory_trim()
    assert client.memory_usage()["bytes_reserved"] <= after["bytes_reserved"]


def test_client_options(rt):
    c = rt.client("default", channel="mpsc", memory="buckets")
    x = c.asarray(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal((x + x).numpy(), [0, 2, 4, 6])
    c.sync()


def test_two_clients(rt, client):
    other = rt.client(client.selector)
    a = client.asarray(np.ones(3, np.float32))
    b = other.asarray(np.ones(3, np.float32))
    try:
        a + b
    except ValueError as e:
        assert "different clients" in str(e)
    else:
        raise AssertionError("operands of two clients were combined")
    np.testing.assert_array_equal(client.asarray(b).numpy(), np.ones(3))


def test_readme_example():
    """The README's "From Python" example runs as written."""
    readme = os.environ.get("WAFER_README") or os.path.join(
        os.path.dirname(__file__), "..", "..", "README.md")
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("## From Python"):]
    code = section[section.index("```python") + len("```python"):]
    code = code[:code.index("```")]
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip(), "the example prints its result"
