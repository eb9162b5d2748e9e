# wafer — SPDX-License-Identifier: MIT
#
# Errors are exceptions of the wafer.Error hierarchy, one class per
# wafer_status, carrying wafer_last_error()'s text; help() finds
# docstrings.
import pydoc

import numpy as np
import pytest

import wafer

STATUSES = {
    "InvalidArgumentError": (1, ValueError),
    "OutOfMemoryError": (2, MemoryError),
    "NotFoundError": (3, LookupError),
    "NotSupportedError": (4, None),
    "ConfigError": (5, None),
    "PluginError": (6, None),
    "NoDeviceError": (7, None),
    "DeviceError": (8, None),
    "OutOfRangeError": (9, IndexError),
    "InvalidHandleError": (10, None),
    "DonatedError": (11, None),
    "IOError": (12, OSError),
    "AbiMismatchError": (13, None),
    "InternalError": (14, None),
    "BuildError": (15, None),
}


@pytest.mark.parametrize("name", sorted(STATUSES))
def test_hierarchy(name):
    status, builtin = STATUSES[name]
    cls = getattr(wafer, name)
    assert issubclass(cls, wafer.Error)
    assert cls.status == status
    assert cls.status_name.startswith("WAFER_ERROR_")
    if builtin:
        assert issubclass(cls, builtin)
    assert cls.__doc__


def test_shape_mismatch_names_operation_and_shapes(client):
    a = client.asarray(np.ones((2, 3), np.float32))
    b = client.asarray(np.ones((4,), np.float32))
    with pytest.raises(wafer.InvalidArgumentError) as e:
        a + b
    text = str(e.value)
    assert "add" in text and "[2, 3]" in text.replace(" x ", ", ") or \
        "2" in text and "4" in text, text
    assert e.value.status == 1


def test_unsupported_dtype(client):
    """A dtype the device keeps but does not compute in: the error names
    the kernel and the dtype by name."""
    missing = [d for d in ("float16", "bfloat16", "int32", "int64", "float64",
                           "uint8")
               if client.has_kernel("copy", d) and
               not client.has_kernel("add", d)]
    if not missing:
        pytest.skip("the device adds every dtype it keeps")
    a = client.asarray(np.ones(3, np.float32)).astype(missing[0])
    with pytest.raises(wafer.NotSupportedError,
                       match="'add' \\(%s\\)" % missing[0]):
        a + a


def test_no_device(rt):
    with pytest.raises(wafer.NoDeviceError, match="nosuchbackend"):
        rt.client("nosuchbackend")


def test_bad_config_option(client):
    rt = wafer.Runtime({"memory.strategy": "no-such-strategy"})
    with pytest.raises(wafer.ConfigError, match="no-such-strategy"):
        rt.client(client.selector)


def test_bad_values(client):
    with pytest.raises(ValueError, match="empty"):
        client.asarray(np.ones((0, 3), np.float32))
    with pytest.raises(TypeError, match="element type"):
        client.asarray(np.ones(3, np.complex64))
    with pytest.raises(ValueError, match="rank"):
        client.asarray(np.ones((1,) * 9, np.float32))
    with pytest.raises(ValueError):
        client.zeros((2, 0))
    with pytest.raises(TypeError):
        wafer.exp(np.ones(3))
    with pytest.raises(TypeError):
        client.asarray(np.ones(3, np.float32)) + "a"


def test_help_works():
    for obj in (wafer, wafer.Runtime, wafer.Client, wafer.Tensor,
                wafer.exp, wafer.sum, wafer.matmul, wafer.donate,
                wafer.Client.asarray, wafer.Tensor.reshape, wafer.Program):
        assert obj.__doc__, obj
        assert pydoc.render_doc(obj)
    assert "REUSE" in wafer.__doc__ or "reuse" in wafer.Tensor.__doc__.lower()
