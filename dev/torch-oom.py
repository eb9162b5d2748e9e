#!/usr/bin/env python3
# wafer — SPDX-License-Identifier: MIT
#
# torch-oom.py: on a GPU machine with PyTorch, a failure inside wafer's
# allocator reaches Python as an exception naming the cause, and the
# allocator goes on working after it (wafer-torch(7), ERRORS):
#
#   python3 dev/torch-oom.py [path/to/libwafer-torch.so]
#
# (default: build/torch/.libs/libwafer-torch.so, which finds the build
# tree's plugins). Prints the exception and "torch-oom: PASS"; exits 1
# otherwise.
import sys

import torch

so = sys.argv[1] if len(sys.argv) > 1 else "build/torch/.libs/libwafer-torch.so"
alloc = torch.cuda.memory.CUDAPluggableAllocator(
    so, "wafer_torch_alloc", "wafer_torch_free")
torch.cuda.memory.change_current_allocator(alloc)

x = torch.ones(1 << 20, device="cuda")
total = torch.cuda.get_device_properties(0).total_memory
try:
    torch.empty(2 * total, dtype=torch.uint8, device="cuda")
except RuntimeError as e:  # torch.OutOfMemoryError is one too
    text = str(e)
    print(f"raised {type(e).__name__}: {text.splitlines()[0]}")
    if "wafer-torch:" not in text:
        print("torch-oom: FAIL (the exception does not carry wafer's reason)")
        sys.exit(1)
else:
    print("torch-oom: FAIL (no exception for twice the device's memory)")
    sys.exit(1)

y = x + 1
if y.sum().item() != 2 * (1 << 20):
    print("torch-oom: FAIL (the allocator does not work after the failure)")
    sys.exit(1)
print("torch-oom: PASS")
