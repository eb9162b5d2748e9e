# wafer — SPDX-License-Identifier: MIT
#
# Every operation against numpy: random shapes, broadcasts, strided and
# transposed views, each dtype the device computes in, tolerances by
# dtype (conftest.py).
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import wafer
from conftest import (INTEGER_DTYPES, assert_close, compute_dtypes,
                      draw_view, host_array, random_array, upload)

shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=6)
shapes1 = hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6)
seeds = st.integers(0, 2**32 - 1)

# name: (numpy reference, input range)
UNARY = {
    "negative": (np.negative, (-3, 3)),
    "abs": (np.abs, (-3, 3)),
    "exp": (np.exp, (-3, 3)),
    "log": (np.log, (0.1, 5)),
    "sqrt": (np.sqrt, (0.0, 5)),
    "relu": (lambda x: np.maximum(x, 0), (-3, 3)),
    "gelu": (lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) *
                                              (x + 0.044715 * x**3))),
             (-3, 3)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-5, 5)),
    "tanh": (np.tanh, (-3, 3)),
}

BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


def dtype_strategy(client, kernel):
    return st.sampled_from(compute_dtypes(client, kernel))


def divisor(rng, shape, dtype):
    """Values away from 0: sign * [0.5, 2) (integers: 1 to 3, signed
    but for uint8)."""
    if dtype in INTEGER_DTYPES:
        a = rng.integers(1, 4, size=shape)
        return (a if dtype == "uint8" else
                a * rng.choice([-1, 1], size=shape)).astype(dtype)
    a = rng.uniform(0.5, 2, size=shape) * rng.choice([-1, 1], size=shape)
    return host_array(a, dtype)


def reference(f, dtype, *args):
    """numpy's f on the inputs: in float64 for floating dtypes (the
    tolerance covers the dtype's rounding), in the dtype itself for
    integers (numpy wraps them as wafer does)."""
    if dtype in INTEGER_DTYPES:
        return f(*args)
    return f(*(np.asarray(a).astype(np.float64) for a in args))


@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data(), shape=shapes, seed=seeds)
def test_unary(client, name, data, shape, seed):
    ref, (lo, hi) = UNARY[name]
    dtype = data.draw(dtype_strategy(client, "exp" if name != "negative"
                                     else "neg"), label="dtype")
    a = random_array(np.random.default_rng(seed), shape, dtype, lo, hi)
    got = getattr(wafer, name)(upload(client, a, dtype))
    assert str(got.dtype) == dtype
    assert_close(got, reference(ref, dtype, a), dtype)


@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data(), shape=shapes1, seed=seeds)
def test_unary_view(client, name, data, shape, seed):
    ref, (lo, hi) = UNARY[name]
    a = random_array(np.random.default_rng(seed), shape, "float32", lo, hi)
    na, wa = draw_view(data, a, client.asarray(a))
    assert_close(getattr(wafer, name)(wa), ref(na.astype(np.float64)),
                 "float32")


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data(),
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4,
                                                max_side=5),
       seed=seeds)
def test_binary_broadcast(client, name, data, shapes, seed):
    dtype = data.draw(dtype_strategy(client, "add_strided"), label="dtype")
    rng = np.random.default_rng(seed)
    sa, sb = shapes.input_shapes
    a = random_array(rng, sa, dtype)
    b = divisor(rng, sb, dtype) if name == "divide" else \
        random_array(rng, sb, dtype)
    got = getattr(wafer, name)(upload(client, a, dtype), upload(client, b, dtype))
    assert got.shape == shapes.result_shape
    assert_close(got, reference(BINARY[name], dtype, a, b), dtype)


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data(), shape=shapes1, seed=seeds)
def test_binary_views(client, name, data, shape, seed):
    """Both operands strided/transposed views of the same shape."""
    rng = np.random.default_rng(seed)
    a = random_array(rng, shape, "float32")
    b = divisor(rng, shape, "float32")
    na, wa = draw_view(data, a, client.asarray(a))
    # b: a view of b's own with na's shape (through the same permutation
    # of a bigger array when that fits, else dense).
    nb = divisor(rng, na.shape, "float32")
    wb = client.asarray(nb).T.copy().T  # a transposed view of dense data
    assert_close(getattr(wafer, name)(wa, wb),
                 BINARY[name](na.astype(np.float64), nb.astype(np.float64)),
                 "float32")


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data(), shape=shapes, seed=seeds,
       scalar=st.floats(0.5, 4) | st.integers(1, 5),
       first=st.booleans())
def test_binary_scalar(client, name, data, shape, seed, scalar, first):
    dtype = data.draw(dtype_strategy(client, "add_scalar"), label="dtype")
    a = divisor(np.random.default_rng(seed), shape, dtype)
    wa = upload(client, a, dtype)
    ref = BINARY[name]
    if dtype in INTEGER_DTYPES:
        # numpy's promotion: a Python float makes it float64, an int
        # keeps the dtype; division is in float64.
        f = BINARY[name]
        got = getattr(wafer, name)(scalar, wa) if first else \
            getattr(wafer, name)(wa, scalar)
        # (on a rank >= 1 array: numpy 1.x promotes rank-0 ones by value)
        a1 = np.atleast_1d(a)
        want = (f(scalar, a1) if first else f(a1, scalar)).reshape(a.shape)
        assert str(got.dtype) == str(want.dtype)
        assert_close(got, want, dtype)
        return
    # The scalar is converted to the tensor's dtype (no promotion).
    s = host_array(scalar, dtype).astype(np.float64)
    if first:
        got, want = getattr(wafer, name)(scalar, wa), ref(s, a.astype(np.float64))
    else:
        got, want = getattr(wafer, name)(wa, scalar), ref(a.astype(np.float64), s)
    assert_close(got, want, dtype)


OPERATORS = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "/": lambda x, y: x / y,
}


@pytest.mark.parametrize("op", sorted(OPERATORS))
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                max_side=4),
       seed=seeds, scalar=st.floats(0.5, 3))
def test_operators(client, op, shapes, seed, scalar):
    f = OPERATORS[op]
    rng = np.random.default_rng(seed)
    sa, sb = shapes.input_shapes
    a, b = divisor(rng, sa, "float32"), divisor(rng, sb, "float32")
    wa, wb = client.asarray(a), client.asarray(b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    s = float(np.float32(scalar))
    assert_close(f(wa, wb), f(a64, b64), "float32")
    assert_close(f(wa, scalar), f(a64, s), "float32")
    assert_close(f(scalar, wa), f(s, a64), "float32")
    # numpy arrays on either side are uploaded in the tensor's dtype.
    assert_close(f(wa, b), f(a64, b64), "float32")
    assert_close(f(b, wa), f(b64, a64), "float32")


@given(shape=shapes, seed=seeds)
def test_unary_operators(client, shape, seed):
    a = random_array(np.random.default_rng(seed), shape, "float32")
    w = client.asarray(a)
    assert_close(-w, -a, "float32")
    assert_close(abs(w), np.abs(a), "float32")
    assert (+w) is w


REDUCE = {"sum": np.sum, "max": np.max, "mean": np.mean}


@pytest.mark.parametrize("name", sorted(REDUCE))
@given(data=st.data(), shape=shapes1, seed=seeds, keepdims=st.booleans())
def test_reduce(client, name, data, shape, seed, keepdims):
    kernel = {"sum": "reduce_sum", "max": "reduce_max",
              "mean": "reduce_mean"}[name]
    dtype = data.draw(dtype_strategy(client, kernel), label="dtype")
    a = random_array(np.random.default_rng(seed), shape, dtype)
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1),
                     label="axis")
    w = upload(client, a, dtype)
    got = getattr(wafer, name)(w, axis=axis, keepdims=keepdims)
    want = REDUCE[name](a if dtype in INTEGER_DTYPES else
                        a.astype(np.float64), axis=axis, keepdims=keepdims)
    if dtype in INTEGER_DTYPES:  # numpy's result dtypes (no uint64 here)
        want_dtype = str(np.asarray(want).dtype)
        assert str(got.dtype) == ("int64" if want_dtype == "uint64"
                                  else want_dtype)
    n = a.size if axis is None else shape[axis]
    assert_close(got, want, dtype, scale=max(1.0, n / 8))


@pytest.mark.parametrize("name", sorted(REDUCE))
@given(data=st.data(), shape=shapes1, seed=seeds)
def test_reduce_view(client, name, data, shape, seed):
    a = random_array(np.random.default_rng(seed), shape, "float32")
    na, wa = draw_view(data, a, client.asarray(a))
    axis = data.draw(st.none() | st.integers(0, na.ndim - 1), label="axis")
    assert_close(getattr(wafer, name)(wa, axis),
                 REDUCE[name](na.astype(np.float64), axis=axis), "float32",
                 scale=4)


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@given(data=st.data(), shape=shapes1, seed=seeds)
def test_softmax(client, data, shape, seed):
    dtype = data.draw(dtype_strategy(client, "softmax"), label="dtype")
    a = random_array(np.random.default_rng(seed), shape, dtype, -5, 5)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    got = wafer.softmax(upload(client, a, dtype), axis=axis)
    assert_close(got, np_softmax(a.astype(np.float64), axis), dtype)


@given(data=st.data(), shape=shapes1, seed=seeds)
def test_softmax_view(client, data, shape, seed):
    a = random_array(np.random.default_rng(seed), shape, "float32", -5, 5)
    na, wa = draw_view(data, a, client.asarray(a))
    assert_close(wafer.softmax(wa), np_softmax(na.astype(np.float64), -1),
                 "float32")


@given(data=st.data(), seed=seeds,
       batch=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2,
                                               max_side=3),
       m=st.integers(1, 7), k=st.integers(1, 9), n=st.integers(1, 7),
       ta=st.booleans(), tb=st.booleans())
def test_matmul(client, data, seed, batch, m, k, n, ta, tb):
    dtype = data.draw(dtype_strategy(client, "matmul"), label="dtype")
    rng = np.random.default_rng(seed)
    ba, bb = batch.input_shapes
    a = random_array(rng, ba + (m, k), dtype)
    b = random_array(rng, bb + (k, n), dtype)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    # Operands as given, or stored transposed and viewed back (.T-style
    # views) or passed with the transpose flags.
    wa = upload(client, np.swapaxes(a, -1, -2).copy(), dtype).transpose(
        *range(a.ndim - 2), a.ndim - 1, a.ndim - 2) if ta else \
        upload(client, a, dtype)
    wb = upload(client, np.swapaxes(b, -1, -2).copy(), dtype) if tb else \
        upload(client, b, dtype)
    got = wafer.matmul(wa, wb, transpose_b=tb)
    assert_close(got, want, dtype, scale=max(1.0, k / 2))
    if not tb:
        assert_close(wa @ wb, want, dtype, scale=max(1.0, k / 2))


@given(seed=seeds, k=st.integers(1, 9), n=st.integers(1, 5))
def test_matmul_vectors(client, seed, k, n):
    rng = np.random.default_rng(seed)
    v = random_array(rng, (k,), "float32")
    m = random_array(rng, (k, n), "float32")
    u = random_array(rng, (n,), "float32")
    wv, wm, wu = client.asarray(v), client.asarray(m), client.asarray(u)
    assert_close(wv @ wm, v.astype(np.float64) @ m, "float32", scale=k)
    assert_close(wm @ wu, m.astype(np.float64) @ u, "float32", scale=k)
    assert_close(wv @ wv, v.astype(np.float64) @ v, "float32", scale=k)


@given(data=st.data(), shape=shapes, seed=seeds)
def test_copy_and_cast(client, data, shape, seed):
    kinds = compute_dtypes(client, "cast")
    src = data.draw(st.sampled_from(kinds), label="from")
    dst = data.draw(st.sampled_from(kinds), label="to")
    rng = np.random.default_rng(seed)
    low = 0 if "uint8" in (src, dst) else -100
    a = np.asarray(rng.integers(low, 100, size=shape), dtype=np.float32)
    # bfloat16 travels as float32 on the host (numpy has no bfloat16).
    w = client.asarray(a, dtype=src)
    got = w.astype(dst)
    assert str(got.dtype) == dst
    np.testing.assert_array_equal(got.numpy(), a)  # small ints: exact
    np.testing.assert_array_equal(wafer.copy(w).numpy(), a)


@given(shape=shapes, value=st.floats(-100, 100).map(lambda v: float(np.float32(v))))
def test_fill(client, shape, value):
    np.testing.assert_array_equal(client.full(shape, value).numpy(),
                                  np.full(shape, value, np.float32))
    np.testing.assert_array_equal(client.zeros(shape).numpy(),
                                  np.zeros(shape, np.float32))
    np.testing.assert_array_equal(client.ones(shape).numpy(),
                                  np.ones(shape, np.float32))
    assert client.empty(shape).shape == shape


@given(data=st.data(), shape=shapes, seed=seeds)
def test_roundtrip(client, data, shape, seed):
    """asarray then numpy() gives the same bytes, for every dtype the
    device can copy."""
    dtype = data.draw(st.sampled_from(
        [d for d in compute_dtypes(client, "copy") if d != "bfloat16"]),
        label="dtype")
    a = np.asarray(np.random.default_rng(seed).integers(0, 100, size=shape),
                   dtype=dtype)
    w = client.asarray(a)
    assert w.shape == a.shape and w.dtype == a.dtype and w.size == a.size
    assert w.nbytes == a.nbytes and w.ndim == a.ndim
    np.testing.assert_array_equal(w.numpy(), a)
    np.testing.assert_array_equal(np.asarray(w), a)
    # A non-contiguous numpy array goes up dense.
    if a.ndim >= 2:
        np.testing.assert_array_equal(client.asarray(a.T).numpy(), a.T)
