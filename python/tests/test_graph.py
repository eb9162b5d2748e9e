# wafer — SPDX-License-Identifier: MIT
#
# wafer.Graph (wafer_graph(3)): work recorded between
# Client.begin_capture() and Client.end_capture(), replayed by launch(),
# moved to other memory by rebind().
import json
import struct

import numpy as np
import pytest

import wafer


def record(client, x, y, z):
    """z = x * 2 + 1 through y, recorded, not run."""
    client.begin_capture()
    try:
        wafer.multiply(x, 2.0, out=y)
        wafer.add(y, 1.0, out=z)
    finally:
        graph = client.end_capture()
    return graph


def commands(path, name):
    doc = json.loads(path.read_text())
    # each command's host span (a device span may follow where timed)
    return sum(1 for e in doc["traceEvents"]
               if e["ph"] == "X" and e.get("cat") == "host"
               and e["args"].get("command") == name)


def test_capture_records_and_launch_replays(rt, client, tmp_path):
    x = client.asarray(np.arange(8, dtype=np.float32))
    y, z = client.zeros(8, "float32"), client.zeros(8, "float32")
    graph = record(client, x, y, z)
    # recorded, not run
    np.testing.assert_array_equal(z.numpy(), np.zeros(8))
    info = graph.info()
    assert info["steps"] == 2 and info["launches"] == 2, info
    assert info["handles"] == 3, info
    path = tmp_path / "replays.json"
    with wafer.trace(path, runtime=rt):
        for i in range(3):
            x[:] = np.arange(8, dtype=np.float32) * (i + 1)
            graph.launch()
            np.testing.assert_array_equal(
                z.numpy(), np.arange(8) * (i + 1) * 2 + 1)
    # each replay is one command, its kernels not issued again
    assert commands(path, "graph_launch") == 3
    assert commands(path, "execute") == 0


def test_rebind_moves_the_steps(client):
    x = client.asarray(np.ones(8, np.float32))
    y, z = client.zeros(8, "float32"), client.zeros(8, "float32")
    graph = record(client, x, y, z)
    x2 = client.asarray(np.full(8, 5, np.float32))
    z2 = client.zeros(8, "float32")
    graph.rebind(x, x2)
    graph.rebind(z.handle, z2)  # by the handle's bits as well
    graph.launch()
    np.testing.assert_array_equal(z2.numpy(), np.full(8, 11))
    np.testing.assert_array_equal(z.numpy(), np.zeros(8))
    # the graph now uses x2, not x
    with pytest.raises(wafer.InvalidArgumentError, match="does not use"):
        graph.rebind(x, x2)
    with pytest.raises(wafer.InvalidArgumentError, match="bytes"):
        graph.rebind(x2, client.zeros(4, "float32"))
    with pytest.raises(TypeError, match="Tensor"):
        graph.rebind("x", x2)


def test_graph_outlives_its_tensors(client):
    """The graph keeps the memory its steps use after the tensors go."""
    x = client.asarray(np.full(8, 3, np.float32))
    y, z = client.zeros(8, "float32"), client.zeros(8, "float32")
    graph = record(client, x, y, z)
    del x, y
    graph.launch()
    np.testing.assert_array_equal(z.numpy(), np.full(8, 7))
    assert graph.info()["held_bytes"] >= 2 * 8 * 4


def test_what_cannot_be_recorded_fails_and_capture_goes_on(client):
    x = client.asarray(np.ones(4, np.float32))
    out = client.zeros(4, "float32")
    client.begin_capture()
    try:
        with pytest.raises(wafer.InvalidArgumentError):
            client.begin_capture()  # nested
        with pytest.raises(wafer.Error, match="read"):
            x.numpy()
        wafer.add(x, x, out=out)
    finally:
        graph = client.end_capture()
    assert graph.info()["launches"] == 1
    graph.launch()
    np.testing.assert_array_equal(out.numpy(), np.full(4, 2))
    with pytest.raises(wafer.Error):
        client.end_capture()  # not capturing


def test_graphs_of_one_kernel_keep_their_own_arguments(client):
    """Two graphs launching the same program kernel with other bindings
    and parameters: each replay uses its own (a device's command buffer
    may read a kernel's arguments when it runs, not when recorded)."""
    if "programs" not in client.device.features:
        pytest.skip(f"{client.selector} loads no programs")
    from test_program import SOURCES
    saxpy = client.program(SOURCES).kernel("wafer_test_saxpy", 2, 16)

    def record_saxpy(y, x, a):
        client.begin_capture()
        try:
            for _ in range(2):  # a run of launches: a native graph
                saxpy(y, x, params=struct.pack("<QfI", 8, a, 0), grid=8)
        finally:
            graph = client.end_capture()
        return graph

    xa, ya = client.asarray(np.ones(8, np.float32)), client.zeros(8, "float32")
    xb = client.asarray(np.full(8, 5, np.float32))
    yb = client.zeros(8, "float32")
    ga, gb = record_saxpy(ya, xa, 2.0), record_saxpy(yb, xb, 3.0)
    ga.launch()
    gb.launch()
    ga.launch()
    np.testing.assert_array_equal(ya.numpy(), np.full(8, 8))
    np.testing.assert_array_equal(yb.numpy(), np.full(8, 30))
