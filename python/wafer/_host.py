# wafer — SPDX-License-Identifier: MIT
"""What Tensor does through numpy on the host, called from the extension.

The standard catalogue has no comparison or gather-by-index kernels, and a
wafer view has no negative strides; so comparisons, indexing with arrays
or negative steps, item assignment and repr read the tensor back, let
numpy do exactly what it does for an ndarray, and upload the result (a
new tensor: these copy, where numpy's basic slicing would give a view).
"""
import operator

import numpy as np

_COMPARE = (operator.lt, operator.le, operator.eq, operator.ne, operator.gt,
            operator.ge)  # Python's Py_LT .. Py_GE order


def _host(x):
    from ._wafer import Tensor
    return x.numpy() if isinstance(x, Tensor) else x


def _upload(t, arr, dtype=None):
    """arr (numpy) as a new tensor on t's client, in dtype (t's if None;
    bfloat16 goes up as float32 and is cast on the device)."""
    arr = np.asarray(arr, order="C")  # (ascontiguousarray makes 0-d 1-d)
    if arr.size == 0:
        raise IndexError("empty result: wafer has no empty tensors")
    out = t.client.asarray(arr)
    want = dtype or t.dtype
    return out if out.dtype == want else out.astype(want)


def compare(a, b, op):
    """a <op> b element-wise, as numpy broadcasts it: a uint8 tensor of 0
    and 1 (wafer has no bool type), or NotImplemented for an operand
    numpy cannot compare."""
    from ._wafer import Tensor
    if not isinstance(b, (Tensor, int, float, np.ndarray, np.generic, list,
                          tuple)):
        return NotImplemented
    r = _COMPARE[op](_host(a), _host(b))
    return _upload(a, np.asarray(r, dtype=np.uint8), "uint8")


def getitem(t, key):
    """t[key] for what a wafer view cannot express (negative steps,
    integer and boolean arrays): numpy's result, as a new tensor."""
    key = tuple(_host(k) for k in key) if isinstance(key, tuple) \
        else _host(key)
    return _upload(t, np.asarray(t.numpy()[key]))


def setitem(t, key, value):
    """t[key] = value with numpy's rules (broadcasting, every kind of
    index): the bytes t spans are read, assigned through a numpy view
    with t's strides, and written back in one upload."""
    if t.dtype == "bfloat16":
        from ._wafer import NotSupportedError
        raise NotSupportedError(
            "item assignment into a bfloat16 tensor: numpy has no "
            "bfloat16 (assign into t.astype('float32') and cast back)")
    if any(s == 0 and n > 1 for s, n in zip(t.element_strides, t.shape)):
        raise ValueError("assignment destination is read-only (a "
                         "broadcast view repeats its elements)")
    raw, first = t._read_span()
    span = raw.view(np.dtype(t.dtype))
    view = np.lib.stride_tricks.as_strided(
        span[t.offset - first:], shape=t.shape,
        strides=[s * span.itemsize for s in t.element_strides])
    key = tuple(_host(k) for k in key) if isinstance(key, tuple) \
        else _host(key)
    view[key] = _host(value)
    t._write_span(first, raw)


def tensor_repr(t):
    """wafer.Tensor([...], dtype=..., device=...), numpy's layout and
    abbreviation of the values."""
    prefix = "wafer.Tensor("
    body = np.array2string(t.numpy(), separator=", ", prefix=prefix)
    return "%s%s, dtype=%s, device=%r)" % (prefix, body, t.dtype, t.device)
