# wafer — SPDX-License-Identifier: MIT
#
# What a NumPy user's first lines do, against numpy: float64 and int64
# arrays compute, mixed dtypes promote as numpy's do, comparisons are
# element-wise, repr shows the values, rank-0 tensors convert with bool(),
# int() and float(), and indexing with negative steps and integer or
# boolean arrays, and item assignment, give numpy's results. Each dtype
# test runs on the dtypes the device keeps (has_kernel("add", ...)).
import operator

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import wafer
from conftest import INTEGER_DTYPES, compute_dtypes

shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5)
NUMPY_DTYPES = ["float32", "float64", "int32", "int64", "uint8"]


def kept(client):
    return [d for d in NUMPY_DTYPES if d in compute_dtypes(client)]


def values(data, shape, dtype):
    if dtype in INTEGER_DTYPES:
        return data.draw(hnp.arrays(dtype, shape,
                                    elements=st.integers(0, 20)))
    return data.draw(hnp.arrays(dtype, shape, elements=st.floats(
        -100, 100, width=np.dtype(dtype).itemsize * 8)))


def test_first_line(client):
    """The issue a NumPy user meets first: float64 and int64 arrays."""
    if "float64" not in compute_dtypes(client):
        pytest.skip("%s has no float64 kernels" % (client.selector,))
    x = client.asarray(np.arange(6.0))
    assert x.dtype == "float64"
    np.testing.assert_array_equal((x * 2 + 1).numpy(), np.arange(6.0) * 2 + 1)
    np.testing.assert_array_equal(x.astype("float32").numpy(),
                                  np.arange(6, dtype=np.float32))
    i = client.asarray(np.arange(6))
    assert i.dtype == "int64"
    np.testing.assert_array_equal((i + i).numpy(), np.arange(6) * 2)
    np.testing.assert_array_equal((i / 2).numpy(), np.arange(6) / 2)


@given(data=st.data(), shape=shapes)
def test_mixed_dtypes_promote(client, data, shape):
    d = kept(client)
    da = data.draw(st.sampled_from(d), label="a")
    db = data.draw(st.sampled_from(d), label="b")
    a, b = values(data, shape, da), values(data, shape, db)
    got = client.asarray(a) + client.asarray(b)
    want = a + b
    assert got.dtype == str(want.dtype)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


@given(data=st.data(), shape=shapes)
def test_astype_every_pair(client, data, shape):
    d = [x for x in kept(client)]
    src = data.draw(st.sampled_from(d), label="from")
    dst = data.draw(st.sampled_from(d), label="to")
    a = data.draw(hnp.arrays(src, shape, elements=st.integers(0, 100)))
    got = client.asarray(a).astype(dst)
    assert got.dtype == dst
    np.testing.assert_array_equal(got.numpy(), a.astype(dst))


COMPARE = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt,
           operator.ge]


@pytest.mark.parametrize("op", COMPARE, ids=lambda f: f.__name__)
@given(data=st.data(),
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                                max_side=4))
def test_compare_elementwise(client, op, data, shapes):
    dtype = data.draw(st.sampled_from(kept(client)), label="dtype")
    sa, sb = shapes.input_shapes
    a = data.draw(hnp.arrays(dtype, sa, elements=st.integers(0, 3)))
    b = data.draw(hnp.arrays(dtype, sb, elements=st.integers(0, 3)))
    wa, wb = client.asarray(a), client.asarray(b)
    for got, want in ((op(wa, wb), op(a, b)), (op(wa, 2), op(a, 2)),
                      (op(wa, b), op(a, b))):
        assert isinstance(got, wafer.Tensor)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got.numpy().astype(bool), want)
    assert (wa == None) is False  # noqa: E711 (not element-wise: None)


def test_repr_shows_values(client):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = client.asarray(a)
    assert repr(t) == ("wafer.Tensor([[0., 1., 2.],\n"
                       "              [3., 4., 5.]], "
                       "dtype=float32, device=%r)" % (t.device,))
    big = repr(client.asarray(np.arange(5000, dtype=np.float32)))
    assert "..." in big and len(big) < 400  # abbreviated, as numpy's


@given(value=st.floats(-1e3, 1e3) | st.just(0.0))
def test_rank0_conversions(client, value):
    t = client.asarray(np.array(value, dtype=np.float32))
    assert t.shape == ()
    assert bool(t) == bool(np.float32(value))
    assert float(t) == float(np.float32(value))
    assert int(t) == int(np.float32(value))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(client.asarray(np.zeros(2, np.float32)))


index_item = st.one_of(
    st.integers(-4, 3),
    st.builds(slice, st.none() | st.integers(-5, 5),
              st.none() | st.integers(-5, 5),
              st.sampled_from([None, 1, 2, -1, -2, -3])),
    st.none(),
    st.just(Ellipsis),
)


@given(data=st.data(), shape=shapes,
       key=st.lists(index_item, max_size=3).map(tuple))
def test_getitem_negative_steps(client, data, shape, key):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    w = client.asarray(a)
    try:
        want = a[key]
    except IndexError:
        with pytest.raises(IndexError):
            w[key]
        return
    if want.size == 0:
        with pytest.raises(IndexError, match="empty"):
            w[key]
        return
    got = w[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


@given(data=st.data(), shape=shapes)
def test_getitem_arrays(client, data, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    w = client.asarray(a)
    idx = data.draw(hnp.arrays(np.int64, data.draw(st.integers(1, 4)),
                               elements=st.integers(-shape[0], shape[0] - 1)))
    np.testing.assert_array_equal(w[idx].numpy(), a[idx])
    np.testing.assert_array_equal(w[list(idx)].numpy(), a[list(idx)])
    mask = data.draw(hnp.arrays(bool, shape))
    if mask.any():
        np.testing.assert_array_equal(w[mask].numpy(), a[mask])
    np.testing.assert_array_equal(w[client.asarray(idx)].numpy(), a[idx])


@given(data=st.data(), shape=shapes,
       key=st.lists(index_item, min_size=1, max_size=3).map(tuple))
def test_setitem(client, data, shape, key):
    dtype = data.draw(st.sampled_from(kept(client)), label="dtype")
    a = np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)
    w = client.asarray(a)
    try:
        a[key] = 7
    except IndexError:
        with pytest.raises(IndexError):
            w[key] = 7
        return
    w[key] = 7
    np.testing.assert_array_equal(w.numpy(), a)
    # An array value broadcast into the selection, and a view's writes
    # landing in the tensor it views.
    target = a[key]
    if np.ndim(target) >= 1 and np.size(target):
        v = np.arange(target.shape[-1]).astype(dtype)
        a[key] = v
        w[key] = client.asarray(v)
        np.testing.assert_array_equal(w.numpy(), a)
    view_a, view_w = a[::2], w[::2]
    view_a[0] = 3
    view_w[0] = 3
    np.testing.assert_array_equal(w.numpy(), a)


def test_setitem_refuses_broadcast_views(client):
    w = client.asarray(np.arange(3, dtype=np.float32)).broadcast_to((2, 3))
    with pytest.raises(ValueError, match="read-only"):
        w[0, 0] = 1
