# wafer — SPDX-License-Identifier: MIT
#
# Programs: the caller's own kernels from sources in several formats
# (the device takes the first it accepts), launched on tensors. The
# kernel is named and laid out as t/user_kernels' saxpy, which the CUDA
# stand-in driver (t/standins/fakecuda.c) emulates by name.
import re
import struct

import numpy as np
import pytest

import wafer

HOST_C = r"""
#include <stdint.h>
#include <string.h>
#include <wafer/host_kernel.h>

struct saxpy_params { uint64_t n; float a; uint32_t reserved; };

WAFER_HOST_KERNEL(wafer_test_saxpy)
{
	struct saxpy_params p;
	memcpy(&p, args->params, sizeof p);
	float *y = args->bindings[0];
	const float *x = args->bindings[1];
	for (uint64_t i = args->begin; i < args->end && i < p.n; i++)
		y[i] = p.a * x[i] + y[i];
}
"""

OPENCL_C = r"""
struct saxpy_params { ulong n; float a; uint reserved; };

__kernel void wafer_test_saxpy(__global float *y, __global const float *x,
		       struct saxpy_params p)
{
	size_t i = get_global_id(0);
	if (i < p.n)
		y[i] = p.a * x[i] + y[i];
}
"""

CUDA_C = r"""
struct saxpy_params { unsigned long long n; float a; unsigned reserved; };

extern "C" __global__ void wafer_test_saxpy(float *y, const float *x,
				    struct saxpy_params p)
{
	unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x
			       + threadIdx.x;
	if (i < p.n)
		y[i] = p.a * x[i] + y[i];
}
"""

SOURCES = {"cuda": CUDA_C, "opencl": OPENCL_C, "host-c": HOST_C}


@pytest.fixture
def program(client):
    if "programs" not in client.device.features:
        pytest.skip(f"{client.selector} loads no programs")
    return client.program(SOURCES)


def test_saxpy(client, program):
    n = 1000
    saxpy = program.kernel("wafer_test_saxpy", bindings=2, params_size=16)
    assert "wafer_test_saxpy" in repr(saxpy)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    wx, wy = client.asarray(x), client.asarray(y)
    saxpy(wy, wx, params=struct.pack("<QfI", n, 2.5, 0), grid=(n,))
    # (a device may fuse the multiply-add: one rounding less)
    np.testing.assert_allclose(wy.numpy(), 2.5 * x + y, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(wx.numpy(), x)  # read only


def test_kernel_on_slice(client, program):
    """A dense slice binds from its offset, which must keep the device's
    alignment: asked of the device (the error for a 4-byte offset names
    it), since it differs (NVIDIA's OpenCL wants 512 bytes, others 256 or
    less)."""
    saxpy = program.kernel("wafer_test_saxpy", 2, 16)
    probe = client.asarray(np.zeros(8, np.float32))
    with pytest.raises(wafer.InvalidArgumentError,
                       match=r"device alignment (\d+)") as refused:
        saxpy(probe[1:], probe[:7], params=struct.pack("<QfI", 7, 1.0, 0),
              grid=7)
    alignment = int(re.search(r"device alignment (\d+)",
                              str(refused.value)).group(1))
    off = alignment // 4  # elements of f32
    n = off + 64
    y = client.asarray(np.zeros(n, np.float32))
    x = client.asarray(np.arange(n, dtype=np.float32))
    saxpy(y[off:], x[:64], params=struct.pack("<QfI", 64, 1.0, 0), grid=64)
    np.testing.assert_array_equal(y.numpy(), [0] * off + list(range(64)))
    with pytest.raises(wafer.InvalidArgumentError, match="align"):
        saxpy(y[5:], x[:n - 5], params=struct.pack("<QfI", 5, 1.0, 0),
              grid=5)


def test_kernel_errors(client, program):
    saxpy = program.kernel("wafer_test_saxpy", 2, 16)
    x = client.asarray(np.ones((4, 4), np.float32))
    params = struct.pack("<QfI", 16, 1.0, 0)
    with pytest.raises(TypeError, match="2 tensors"):
        saxpy(x, params=params, grid=16)
    with pytest.raises(ValueError, match="16 bytes"):
        saxpy(x, x, params=b"1234", grid=16)
    with pytest.raises(ValueError, match="strided"):
        saxpy(x.T, x, params=params, grid=16)
    with pytest.raises(wafer.NotFoundError):
        program.kernel("no_such_kernel", 2, 16)


def test_build_error_carries_log(client):
    if "programs" not in client.device.features:
        pytest.skip(f"{client.selector} loads no programs")
    broken = {"cuda": "this is not C", "opencl": "this is not C",
              "host-c": "this is not C"}
    with pytest.raises(wafer.BuildError) as e:
        client.program(broken)
    assert "error" in str(e.value).lower()


def test_no_accepted_format(client):
    if "programs" not in client.device.features:
        pytest.skip(f"{client.selector} loads no programs")
    with pytest.raises(wafer.NotSupportedError):
        client.program({"ptx": ".version 7.0"} if client.device.backend != "cuda"
                       else {"host-c": HOST_C})
    with pytest.raises(ValueError, match="unknown source format"):
        client.program({"fortran": "x"})
