# wafer — SPDX-License-Identifier: MIT
"""wafer: a vendor-neutral compute runtime, from Python.

    import numpy as np, wafer
    rt = wafer.Runtime()
    c = rt.client("cpu")                  # or "cuda:0", "opencl"
    x = c.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    print(wafer.softmax(x * 2 + 1).numpy())

Tensors live on a client's device; operators (+ - * / @, unary -,
abs) and the functions here run wafer's standard operations (ops.h) on
them. t.numpy() copies back. Views (t.T, t[::2], t.reshape) share the
buffer. In-place operators and out= write into a tensor's own buffer
when nothing else names it (WAFER_REUSE_INPUT); wafer.donate(t) gives a
tensor up to the next operation (WAFER_DONATE_INPUT). Errors are
wafer.Error subclasses carrying wafer_last_error()'s text.
"""

from ._wafer import (  # noqa: F401
    Runtime, Client, Tensor, Program, Kernel, Device,
    Error, InvalidArgumentError, OutOfMemoryError, NotFoundError,
    NotSupportedError, ConfigError, PluginError, NoDeviceError, DeviceError,
    OutOfRangeError, InvalidHandleError, DonatedError, IOError,
    AbiMismatchError, InternalError, BuildError,
    donate, library_version,
    negative, abs, exp, log, sqrt, relu, gelu, sigmoid, tanh,
    add, subtract, multiply, divide, maximum, minimum,
    sum, max, mean, softmax, matmul, copy,
)

__version__ = "0.1.0"

# Element types, by the names numpy gives them (bfloat16 has no numpy
# type: its name stands for it wherever a dtype is taken).
float32 = "float32"
float16 = "float16"
bfloat16 = "bfloat16"
float64 = "float64"
int32 = "int32"
int64 = "int64"
uint8 = "uint8"


def broadcast_to(x, shape):
    """broadcast_to(x, shape) -> Tensor

    A view of x in shape, as numpy.broadcast_to (Tensor.broadcast_to):
    dimensions of size 1 and new leading ones repeat; no copy."""
    return x.broadcast_to(shape)


_default_runtime = None
_default_clients = {}


def from_dlpack(x, client=None):
    """from_dlpack(x, client=None) -> Tensor

    x's memory (numpy, PyTorch, CuPy, ... anything with __dlpack__) as a
    wafer tensor, without copying (Client.from_dlpack). Without a client,
    one of a runtime opened on first use, on x's device: host memory on
    "cpu", CUDA device N on "cuda:N", oneAPI on "levelzero:N"."""
    if client is None:
        global _default_runtime
        kind, index = x.__dlpack_device__()
        selector = {1: "cpu", 2: "cuda:%d" % index,
                    14: "levelzero:%d" % index}.get(int(kind))
        if selector is None:
            raise NotSupportedError(
                "from_dlpack: no wafer device takes DLPack device type %d"
                % kind)
        client = _default_clients.get(selector)
        if client is None:
            if _default_runtime is None:
                _default_runtime = Runtime()
            client = _default_runtime.client(selector)
            _default_clients[selector] = client
    return client.from_dlpack(x)


class trace:
    """with wafer.trace("step.json"): ...

    Records a timeline of every command the process's clients run inside
    the block (wafer_trace_begin(3)) and writes it to the file when the
    block ends, also when it raises: Chrome trace-event JSON, for
    ui.perfetto.dev or `wafer-trace report step.json`. runtime: the one
    to begin it on (any: the trace covers the clients of every runtime);
    by default the runtime wafer's own functions use."""

    def __init__(self, path, runtime=None):
        self.path = path
        self.runtime = runtime

    def __enter__(self):
        global _default_runtime
        if self.runtime is None:
            if _default_runtime is None:
                _default_runtime = Runtime()
            self.runtime = _default_runtime
        self.runtime.trace_begin(self.path)
        return self

    def __exit__(self, *exc):
        self.runtime.trace_end()
