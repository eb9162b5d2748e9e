# wafer — SPDX-License-Identifier: MIT
#
# Nothing leaks: 10,000 tensors made, viewed, combined and dropped leave
# the client's live handles and bytes in use where they were, and the
# Python references the extension takes (to the client, to dtype
# objects) are all given back.
import sys

import numpy as np

import wafer

N = 10_000


def usage(client):
    client.sync()
    u = client.memory_usage()
    return u["handles_live"], u["bytes_in_use"]


def churn(client, a, i):
    x = client.asarray(a)
    y = (x + i) * x.T  # a view and two results
    z = wafer.sum(y[:, ::2], axis=1)
    w = wafer.softmax(wafer.donate(z))
    x += w.reshape(4, 1)
    return (x.shape, x.dtype, y.element_strides, x.numpy().shape)


def test_tensors_come_back(client):
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    churn(client, a, 0)  # the first call fills the extension's caches
    base = usage(client)
    refs = sys.getrefcount(client)
    dtype_refs = sys.getrefcount(np.dtype("float32"))
    for i in range(N):
        churn(client, a, i)
    assert usage(client) == base
    assert sys.getrefcount(client) == refs
    # numpy itself may hold one more for a while (its caches); a
    # reference leaked per tensor would show as thousands.
    assert sys.getrefcount(np.dtype("float32")) - dtype_refs <= 2


def test_errors_leak_nothing(client):
    a = client.asarray(np.ones((2, 3), np.float32))
    b = client.asarray(np.ones((4,), np.float32))
    base = usage(client)
    refs = sys.getrefcount(client)
    for _ in range(N // 10):
        try:
            a + b
        except wafer.InvalidArgumentError:
            pass
        try:
            wafer.add(a, a, out=b)
        except ValueError:
            pass
        try:
            a[::-1]
        except IndexError:
            pass
    assert usage(client) == base
    assert sys.getrefcount(client) == refs


def test_numpy_copies_are_independent(client):
    """numpy() hands out host copies; dropping the tensor first is fine."""
    base = usage(client)
    arrays = [client.asarray(np.full(8, i, np.float32)).numpy()
              for i in range(1000)]
    assert usage(client) == base
    assert [int(x[0]) for x in arrays] == list(range(1000))
