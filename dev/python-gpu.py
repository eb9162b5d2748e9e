#!/usr/bin/env python3
# wafer — SPDX-License-Identifier: MIT
"""python-gpu.py: the wafer package on a GPU, with PyTorch and CuPy:
DLPack both ways, zero-copy checked by pointer, and the memory kept by
whoever still names it. Run by dev/python-gpu.sh (which builds the
package); by hand:

    ./build/uninstalled python3 dev/python-gpu.py [--device cuda:0]

One line per check: "ok", "FAIL" (exit status 1) or "skip" with why.
"""
import argparse
import gc
import sys

import numpy as np

import wafer

failed = 0


def check(name, cond, detail=""):
    global failed
    if cond:
        print("ok   %s" % name)
    else:
        failed += 1
        print("FAIL %s %s" % (name, detail))


def skip(name, why):
    print("skip %s: %s" % (name, why))


def address(t):
    return t.native_buffer()["address"] + t.offset * t.itemsize


def with_torch(client, dev):
    try:
        import torch
    except ImportError as e:
        return skip("torch", e)
    if not torch.cuda.is_available():
        return skip("torch", "torch has no CUDA device")
    tdev = torch.device(dev)
    x = torch.arange(12, dtype=torch.float32, device=tdev).reshape(3, 4)
    w = wafer.from_dlpack(x, client)
    check("torch -> wafer: same pointer", address(w) == x.data_ptr(),
          "%#x vs %#x" % (address(w), x.data_ptr()))
    check("torch -> wafer: values", np.array_equal(w.numpy(), x.cpu().numpy()))
    e = wafer.exp(w)
    check("wafer op on torch memory",
          np.allclose(e.numpy(), torch.exp(x).cpu().numpy(), rtol=1e-6))
    xt = x.t()
    wt = wafer.from_dlpack(xt, client)
    check("torch -> wafer: transposed view", wt.shape == (4, 3) and
          np.array_equal(wt.numpy(), xt.cpu().numpy()) and
          address(wt) == xt.data_ptr())
    # torch's work on its stream is ordered before wafer's.
    big = torch.full((1 << 22,), 3.0, device=tdev) * 2
    wb = wafer.from_dlpack(big, client)
    check("torch's pending work is seen",
          float(wafer.max(wb).item()) == 6.0)
    # wafer -> torch
    y = wafer.relu(client.asarray(np.arange(-4, 8, dtype=np.float32)
                                  .reshape(3, 4)))
    ty = torch.from_dlpack(y)
    check("wafer -> torch: same pointer", ty.data_ptr() == address(y),
          "%#x vs %#x" % (ty.data_ptr(), address(y)))
    check("wafer -> torch: values",
          np.array_equal(ty.cpu().numpy(), np.maximum(
              np.arange(-4, 8, dtype=np.float32).reshape(3, 4), 0)))
    tyt = torch.from_dlpack(y.T)
    check("wafer -> torch: transposed view", tuple(tyt.shape) == (4, 3) and
          tyt.data_ptr() == address(y.T) and
          np.array_equal(tyt.cpu().numpy(), y.numpy().T))
    del y
    gc.collect()
    check("torch keeps wafer's memory after the tensor goes",
          float(ty.sum().item()) == float(sum(range(8))))
    # round trip
    back = wafer.from_dlpack(torch.from_dlpack(e), client)
    check("wafer -> torch -> wafer: same memory", address(back) == address(e))
    del x, w, xt, wt
    gc.collect()
    client.sync()
    check("torch's deleter ran (no error)", True)


def with_cupy(client):
    try:
        import cupy as cp
    except ImportError as e:
        return skip("cupy", e)
    x = cp.arange(10, dtype=cp.float32)
    w = wafer.from_dlpack(x, client)
    check("cupy -> wafer: same pointer", address(w) == x.data.ptr)
    check("cupy -> wafer: values", np.array_equal(w.numpy(), cp.asnumpy(x)))
    y = wafer.sqrt(w)
    cy = cp.from_dlpack(y)
    check("wafer -> cupy: same pointer", cy.data.ptr == address(y))
    check("wafer -> cupy: values",
          np.allclose(cp.asnumpy(cy), np.sqrt(np.arange(10)), rtol=1e-6))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda:0")
    args = p.parse_args()
    rt = wafer.Runtime()
    client = rt.client(args.device)
    print("# wafer %s on %s (%s)" % (wafer.library_version(), client.selector,
                                     client.device.name))
    try:
        client.asarray(np.ones(1, np.float32)).__dlpack_device__()
    except wafer.NotSupportedError as e:
        skip("DLPack", e)
        return 0
    with_torch(client, "cuda:%d" % client.device.index)
    with_cupy(client)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
