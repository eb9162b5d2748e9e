# wafer — SPDX-License-Identifier: MIT
#
# wafer.trace: the timeline trace as a context manager (wafer_trace_begin(3)).
import json

import numpy as np
import pytest

import wafer


def test_trace_writes_the_step(rt, client, tmp_path):
    path = tmp_path / "step.json"
    x = client.asarray(np.arange(64, dtype=np.float32))
    with wafer.trace(path, runtime=rt):
        y = wafer.relu(x * 2 - 10)
        y.numpy()
    doc = json.loads(path.read_text())
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    kernels = {e["name"] for e in spans if e["args"].get("command") == "execute"}
    assert "relu" in kernels
    assert doc["otherData"]["commands"] >= 3
    assert any(e["ph"] == "C" and e["name"] == "memory"
               for e in doc["traceEvents"])


def test_trace_one_at_a_time(rt, tmp_path):
    with wafer.trace(tmp_path / "a.json", runtime=rt):
        with pytest.raises(wafer.Error):
            rt.trace_begin(tmp_path / "b.json")
    with pytest.raises(wafer.NotFoundError):
        rt.trace_end()


def test_trace_written_when_the_block_raises(rt, tmp_path):
    path = tmp_path / "raised.json"
    with pytest.raises(ZeroDivisionError):
        with wafer.trace(path, runtime=rt):
            1 / 0
    assert "traceEvents" in json.loads(path.read_text())
