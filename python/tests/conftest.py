# wafer — SPDX-License-Identifier: MIT
#
# Fixtures of the wafer package's tests: one runtime and one client for
# the session, on the device WAFER_BACKEND selects (the suite's backend:
# "default" is the first device of the backend list, which WAFER_BACKEND
# sets), and the dtypes that device computes in, asked of the device
# itself (has_kernel) rather than assumed.
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import wafer

settings.register_profile(
    "wafer",
    max_examples=int(os.environ.get("WAFER_HYPOTHESIS_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow,
                           HealthCheck.function_scoped_fixture],
    derandomize=os.environ.get("WAFER_HYPOTHESIS_SEED") is None,
    database=None,
)
settings.load_profile("wafer")

ALL_DTYPES = ["float32", "float16", "bfloat16", "float64", "int32", "int64",
              "uint8"]

# Tolerances of a result against numpy's on the same inputs, by dtype:
# (rtol, atol). float16 carries 11 significant bits; the kernels may
# compute in another order (sums, dot products) than numpy.
TOLERANCE = {
    "float32": (2e-5, 2e-6),
    "float16": (2e-2, 2e-2),
    "bfloat16": (3e-2, 3e-2),  # 8 significant bits
    "float64": (1e-12, 1e-13),
    # Integers compute exactly (wrapping as numpy's do).
    "int32": (0, 0),
    "int64": (0, 0),
    "uint8": (0, 0),
}

INTEGER_DTYPES = ("int32", "int64", "uint8")


@pytest.fixture(scope="session")
def rt():
    return wafer.Runtime()


@pytest.fixture(scope="session")
def client(rt):
    return rt.client(os.environ.get("WAFER_PYTEST_DEVICE", "default"))


def compute_dtypes(client, kernel="add"):
    """The dtypes the device has kernel |kernel| for."""
    return [d for d in ALL_DTYPES if client.has_kernel(kernel, d)]


@pytest.fixture(scope="session")
def dtypes(client):
    d = compute_dtypes(client)
    assert "float32" in d, "every backend computes in float32"
    return d


def assert_close(got, want, dtype, scale=1.0):
    """got (a Tensor or array) against numpy's want, in dtype's
    tolerance (scaled for accumulating operations)."""
    if isinstance(got, wafer.Tensor):
        assert got.shape == tuple(np.shape(want)), (got.shape, np.shape(want))
        got = got.numpy()
    rtol, atol = TOLERANCE[dtype]
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64),
                               np.asarray(want, dtype=np.float64),
                               rtol=rtol * scale, atol=atol * scale)


def to_bfloat16(a):
    """float32 values rounded to the nearest bfloat16 (ties to even), as
    float32: what a bfloat16 tensor holds, in a type numpy has."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    u = u.astype(np.uint64)
    lsb = (u >> np.uint64(16)) & np.uint64(1)
    u = (u + np.uint64(0x7FFF) + lsb) & np.uint64(0xFFFF0000)
    return u.astype(np.uint32).view(np.float32).reshape(np.shape(a))


def host_array(a, dtype):
    """a in dtype, or for bfloat16 (which numpy has not) in float32 with
    bfloat16's values."""
    if dtype == "bfloat16":
        return to_bfloat16(np.asarray(a, dtype=np.float32))
    return np.asarray(a, dtype=dtype)


def upload(client, a, dtype):
    """A tensor of dtype holding host_array(a, dtype)'s values."""
    return client.asarray(a, dtype=dtype)


def random_array(rng, shape, dtype, low=-2.0, high=2.0):
    """Uniform in [low, high); for integer dtypes the integers there
    (from 0 for uint8)."""
    if dtype in INTEGER_DTYPES:
        low = max(low, 0) if dtype == "uint8" else low
        return rng.integers(int(np.floor(low)), int(np.ceil(high)) + 1,
                            size=shape).astype(dtype)
    return host_array(rng.uniform(low, high, size=shape), dtype)


def draw_view(data, arr, t):
    """The same random view of numpy array |arr| and tensor |t| (which
    holds arr's values): a permutation of the dimensions, then per
    dimension a start and a step (wafer's views have no negative
    strides). Returns (numpy view, tensor view)."""
    from hypothesis import strategies as st
    perm = data.draw(st.permutations(range(arr.ndim)), label="perm")
    a, v = arr.transpose(perm), t.transpose(perm)
    index = []
    for n in a.shape:
        start = data.draw(st.integers(0, n - 1), label="start")
        step = data.draw(st.integers(1, 3), label="step")
        index.append(slice(start, None, step))
    index = tuple(index)
    return a[index], v[index]
