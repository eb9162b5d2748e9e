# wafer — SPDX-License-Identifier: MIT
#
# Donation and in-place semantics (wafer-donation(7)) from Python:
# in-place operators and out= reuse a tensor's own buffer when nothing
# else names it and copy when something does; wafer.donate(t) gives t up.
import numpy as np
import pytest

import wafer


def in_use(client):
    client.sync()
    return client.memory_usage()["bytes_in_use"]


@pytest.fixture
def x(client):
    return client.asarray(np.arange(1, 1025, dtype=np.float32) / 256)


@pytest.mark.parametrize("op,ref", [
    ("__iadd__", np.add), ("__isub__", np.subtract),
    ("__imul__", np.multiply), ("__itruediv__", np.divide)])
def test_inplace_reuses_buffer(client, x, op, ref):
    a = x.numpy()
    y = client.asarray(np.full(1024, 2, np.float32))
    h, before = x.handle, in_use(client)
    r = getattr(x, op)(y)
    assert r is x
    assert x.handle == h, "the sole owner's buffer is written in place"
    assert in_use(client) == before
    assert x.references == 1
    np.testing.assert_allclose(x.numpy(), ref(a, 2))
    x2 = x
    x += 1.5  # scalar operand, same buffer
    assert x is x2 and x.handle == h
    np.testing.assert_allclose(x.numpy(), ref(a, 2) + 1.5)


def test_inplace_with_view_alive_copies(client, x):
    a = x.numpy()
    v = x[::2]
    h = x.handle
    x += 1
    assert x.handle != h, "a view names the buffer: the result is new"
    np.testing.assert_array_equal(v.numpy(), a[::2])  # the view is untouched
    np.testing.assert_array_equal(x.numpy(), a + 1)
    assert v.references == 1 and x.references == 1


def test_inplace_broadcast_refused(client):
    x = client.asarray(np.ones((3,), np.float32))
    y = client.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="out"):
        x += y
    np.testing.assert_array_equal(x.numpy(), np.ones(3))


def test_out_same_tensor(client, x):
    a = x.numpy()
    h = x.handle
    r = wafer.exp(x, out=x)
    assert r is x and x.handle == h
    np.testing.assert_allclose(x.numpy(), np.exp(a), rtol=1e-6)
    wafer.softmax(x, out=x)
    assert x.handle == h


def test_out_other_tensor(client, x):
    a = x.numpy()
    o = client.zeros(1024)
    h = o.handle
    r = wafer.add(x, x, out=o)
    assert r is o and o.handle != h  # o now names the result
    np.testing.assert_array_equal(o.numpy(), a + a)
    np.testing.assert_array_equal(x.numpy(), a)
    with pytest.raises(ValueError, match="out"):
        wafer.sum(x, out=o)
    with pytest.raises(TypeError):
        wafer.exp(x, out=a)


def test_donate_takes_buffer(client, x):
    a = x.numpy()
    before = in_use(client)
    y = wafer.tanh(wafer.donate(x))
    assert x.donated
    assert in_use(client) == before, "the output took the donated buffer"
    np.testing.assert_allclose(y.numpy(), np.tanh(a), rtol=1e-6)
    for use in (lambda: x + 1, lambda: x.numpy(), lambda: x.T,
                lambda: wafer.exp(x), lambda: wafer.donate(x),
                lambda: x.references):
        with pytest.raises(wafer.DonatedError):
            use()
    assert "donated" in repr(x)


def test_donate_shared_still_gives_reference(client, x):
    a = x.numpy()
    v = x.T  # another reference to the buffer
    y = wafer.exp(wafer.donate(x))
    assert x.donated and not v.donated
    np.testing.assert_array_equal(v.numpy(), a)  # still valid for v
    assert v.references == 1
    np.testing.assert_allclose(y.numpy(), np.exp(a), rtol=1e-6)


def test_donate_in_binary_and_reduce(client, x):
    a = x.numpy()
    b = client.asarray(a)
    y = wafer.donate(x) * b
    assert x.donated and not b.donated
    np.testing.assert_allclose(y.numpy(), a * a)
    s = wafer.sum(wafer.donate(y))
    assert y.donated
    np.testing.assert_allclose(s.numpy(), np.sum(a.astype(np.float64) ** 2),
                               rtol=1e-5)


def test_failed_operation_keeps_donated_input(client):
    x = client.asarray(np.ones((2, 3), np.float32))
    y = client.asarray(np.ones((4,), np.float32))
    with pytest.raises(wafer.InvalidArgumentError):
        wafer.donate(x) + y  # shapes do not broadcast: nothing queued
    assert not x.donated
    np.testing.assert_array_equal(x.numpy(), np.ones((2, 3)))
