# wafer — SPDX-License-Identifier: MIT
#
# Views: t.T, transpose, indexing (ints, slices with steps, None, ...),
# reshape; each against the same view of numpy, and each sharing the
# buffer (no device work, one more reference) where wafer can express it.
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import wafer
from conftest import draw_view

shapes = hnp.array_shapes(min_dims=1, max_dims=5, min_side=1, max_side=5)


def arange(shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


@given(shape=shapes)
def test_T(client, shape):
    a = arange(shape)
    w = client.asarray(a)
    t = w.T
    assert t.shape == a.T.shape
    assert t.handle == w.handle and w.references == 2
    np.testing.assert_array_equal(t.numpy(), a.T)


@given(data=st.data(), shape=shapes)
def test_transpose_axes(client, data, shape):
    a = arange(shape)
    perm = data.draw(st.permutations(range(len(shape))))
    np.testing.assert_array_equal(
        client.asarray(a).transpose(*perm).numpy(), a.transpose(perm))
    np.testing.assert_array_equal(
        client.asarray(a).transpose(perm).numpy(), a.transpose(perm))


@given(data=st.data(), shape=shapes)
def test_views_compose(client, data, shape):
    """A view of a view of a view, then read back."""
    a = arange(shape)
    na, wa = draw_view(data, a, client.asarray(a))
    nb, wb = draw_view(data, na, wa)
    assert wb.shape == nb.shape
    np.testing.assert_array_equal(wb.numpy(), nb)


index_item = st.one_of(
    st.integers(-5, 4),
    st.builds(slice, st.none() | st.integers(-6, 6),
              st.none() | st.integers(-6, 6), st.none() | st.integers(1, 3)),
    st.none(),
    st.just(Ellipsis),
)


@given(shape=shapes, key=st.lists(index_item, max_size=5).map(tuple))
def test_getitem(client, shape, key):
    a = arange(shape)
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
    assert got.handle == w.handle
    np.testing.assert_array_equal(got.numpy(), want)


def test_getitem_refuses(client):
    w = client.asarray(arange((4, 3)))
    with pytest.raises(IndexError, match="too many"):
        w[0, 0, 0]
    with pytest.raises(IndexError, match="out of bounds"):
        w[4]
    with pytest.raises(IndexError):
        w["a"]


@given(data=st.data(), shape=shapes)
def test_reshape(client, data, shape):
    a = arange(shape)
    w = client.asarray(a)
    n = a.size
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    d = data.draw(st.sampled_from(divisors))
    r = w.reshape(d, -1)
    assert r.handle == w.handle  # dense: a view
    np.testing.assert_array_equal(r.numpy(), a.reshape(d, -1))
    np.testing.assert_array_equal(w.reshape((n,)).numpy(), a.reshape(n))
    # A transposed view is not dense: reshape copies, as numpy's does.
    if a.ndim >= 2 and a.shape[0] > 1 and a.shape[-1] > 1:
        t = w.T
        assert not t.is_contiguous
        r = t.reshape(-1)
        assert r.handle != w.handle
        np.testing.assert_array_equal(r.numpy(), a.T.reshape(-1))


def test_reshape_refuses(client):
    w = client.asarray(arange((4, 3)))
    with pytest.raises(ValueError):
        w.reshape(5, -1)
    with pytest.raises(ValueError):
        w.reshape(7)


def test_attributes(client):
    a = arange((2, 3, 4))
    w = client.asarray(a)
    assert (w.shape, w.ndim, w.size, w.itemsize, w.nbytes) == \
        (a.shape, 3, 24, 4, 96)
    assert w.element_strides == (12, 4, 1)
    assert w.T.element_strides == (1, 4, 12)
    v = w[1, :, 2:]
    assert v.offset == 12 + 2 and v.shape == (3, 2)
    assert len(w) == 2 and w.device == client.selector
    assert w.client is client
    assert repr(w).startswith("wafer.Tensor([[[ 0.,  1.,")
    assert repr(w).endswith(", dtype=float32, device=%r)" % w.device)
    assert client.asarray(np.float32(2.5)).item() == 2.5
    assert float(client.asarray(np.array([1.5], np.float32))) == 1.5
    assert w[0, 0].tolist() == [0, 1, 2, 3]


@given(data=st.data(),
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=1, max_dims=4,
                                                max_side=4))
def test_broadcast_to(client, data, shapes):
    """A stride-0 view, read back and used by operations as it is."""
    (shape,), target = shapes.input_shapes, shapes.result_shape
    a = arange(shape) if shape else np.float32(3)
    w = client.asarray(a)
    b = w.broadcast_to(target)
    want = np.broadcast_to(a, target)
    assert b.shape == target and b.handle == w.handle
    np.testing.assert_array_equal(b.numpy(), want)
    np.testing.assert_array_equal(wafer.broadcast_to(w, target).numpy(), want)
    np.testing.assert_allclose((b * 2 + b).numpy(), want * 3)
    if target:
        np.testing.assert_allclose(wafer.sum(b, axis=-1).numpy(),
                                   want.sum(axis=-1), rtol=1e-6)


def test_broadcast_to_refuses(client):
    w = client.asarray(arange((2, 3)))
    with pytest.raises(ValueError):
        w.broadcast_to((4, 3))
    with pytest.raises(ValueError):
        w.broadcast_to((3,))
