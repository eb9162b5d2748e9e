# wafer — SPDX-License-Identifier: MIT
#
# DLPack both ways, zero-copy checked by pointer: wafer tensors into
# numpy (np.from_dlpack) and numpy arrays into wafer (from_dlpack), views
# included, the memory kept alive by whoever still names it. PyTorch and
# CuPy on a GPU: dev/dlpack-check.py and the commands in the report.
import sys

import numpy as np
import pytest

import wafer


def host_memory(client):
    return client.device.backend == "cpu"


@pytest.fixture
def cpu(client):
    if not host_memory(client):
        pytest.skip("numpy takes host memory; %s is not" % client.selector)
    try:
        client.asarray(np.ones(1, np.float32)).__dlpack_device__()
    except wafer.NotSupportedError as e:
        pytest.skip(str(e))
    return client


def address(t):
    nb = t.native_buffer()
    return nb["address"] + t.offset * t.itemsize


def test_export_dense(cpu):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = cpu.asarray(a)
    assert t.__dlpack_device__() == (1, 0)
    v = np.from_dlpack(t)
    assert v.ctypes.data == address(t), "numpy reads wafer's memory"
    np.testing.assert_array_equal(v, a)


def test_export_views(cpu):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = cpu.asarray(a)
    for view, ref in ((t.T, a.T), (t[1, ::2, 1:], a[1, ::2, 1:]),
                      (t[:, None, 1], a[:, None, 1]),
                      (t[0, 0].broadcast_to((3, 4)),
                       np.broadcast_to(a[0, 0], (3, 4)))):
        v = np.from_dlpack(view)
        assert v.ctypes.data == address(view)
        assert v.strides == tuple(s * 4 for s in view.element_strides) or \
            v.size == 1
        np.testing.assert_array_equal(v, ref)


def test_export_outlives_tensor_and_client(rt, cpu):
    c = rt.client(cpu.selector)
    t = c.asarray(np.arange(5, dtype=np.float32))
    refs = sys.getrefcount(c)
    v = np.from_dlpack(t)
    assert sys.getrefcount(c) == refs + 1, "the export keeps the client"
    del t, c
    np.testing.assert_array_equal(v, np.arange(5))
    del v  # the deleter runs: the client closes now


def test_export_waits_for_work(cpu):
    x = cpu.asarray(np.full(1 << 16, 2, np.float32))
    y = wafer.exp(x * 3)  # issued, maybe not yet run
    np.testing.assert_allclose(np.from_dlpack(y), np.exp(6.0), rtol=1e-6)


def test_unconsumed_capsule_releases(cpu):
    t = cpu.asarray(np.ones(4, np.float32))
    cap = t.__dlpack__()
    assert t.references == 2
    del cap
    assert t.references == 1


def test_import_dense_and_views(cpu):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    for arr in (x, x.T, x[1:, ::2]):
        t = cpu.from_dlpack(arr)
        assert t.shape == arr.shape
        assert address(t) == arr.ctypes.data, "wafer reads numpy's memory"
        np.testing.assert_array_equal(t.numpy(), arr)
        np.testing.assert_allclose(wafer.exp(t).numpy(), np.exp(arr),
                                   rtol=1e-6)


def test_import_keeps_producer_alive(cpu):
    x = np.arange(8, dtype=np.float32)
    base = sys.getrefcount(x)
    t = wafer.from_dlpack(x, cpu)
    assert sys.getrefcount(x) > base, "numpy's capsule holds the array"
    v = t[2:]
    del t
    assert sys.getrefcount(x) > base, "a view still names the memory"
    np.testing.assert_array_equal(v.numpy(), x[2:])
    del v
    cpu.sync()
    assert sys.getrefcount(x) == base, "the producer's deleter ran"


def test_round_trip_same_memory(cpu):
    x = np.arange(6, dtype=np.float32)
    back = np.from_dlpack(cpu.from_dlpack(x))
    assert back.ctypes.data == x.ctypes.data


def test_default_client(cpu):
    x = np.arange(3, dtype=np.float32)
    t = wafer.from_dlpack(x)
    assert t.device == "cpu:0"
    np.testing.assert_array_equal(t.numpy(), x)


def test_import_refuses(cpu):
    with pytest.raises(wafer.NotSupportedError):
        cpu.from_dlpack(np.ones(3, np.complex64))
    with pytest.raises(TypeError):
        cpu.from_dlpack(3)


def test_opencl_buffers_refused(client):
    if client.device.backend != "opencl":
        pytest.skip("an OpenCL device's refusal")
    t = client.asarray(np.ones(3, np.float32))
    with pytest.raises(wafer.NotSupportedError):
        t.__dlpack__()


def test_import_released_on_runner_thread(rt, cpu):
    """On the mpsc channel the last release runs on the runner thread,
    without the GIL, while this thread may wait for the runner (a read):
    the producer's deleters are queued for the GIL, never waited for, and
    have all run once sync() returns — more of them than the
    interpreter's own queue of pending calls holds."""
    c = rt.client(cpu.selector, channel="mpsc")
    x = np.arange(8, dtype=np.float32)
    base = sys.getrefcount(x)
    for _ in range(500):
        t = c.from_dlpack(x)
        y = wafer.exp(t)
        del t
        np.testing.assert_allclose(y.numpy(), np.exp(x), rtol=1e-6)
        del y
    c.sync()
    assert sys.getrefcount(x) == base


def test_exchange_leaks_nothing(cpu):
    """10,000 round trips each way leave the client's handles, the
    client's references and the numpy array's references as they were."""
    x = np.arange(16, dtype=np.float32)
    t = cpu.asarray(x)
    np.from_dlpack(cpu.from_dlpack(x))  # warm the caches
    cpu.sync()
    handles = cpu.memory_usage()["handles_live"]
    client_refs, x_refs = sys.getrefcount(cpu), sys.getrefcount(x)
    for _ in range(10_000):
        v = np.from_dlpack(t)
        u = cpu.from_dlpack(x)
        w = np.from_dlpack(u)  # numpy's memory, back through wafer
        del v, u, w
    cpu.sync()
    assert cpu.memory_usage()["handles_live"] == handles
    assert sys.getrefcount(cpu) == client_refs
    assert sys.getrefcount(x) == x_refs
