#!/usr/bin/env python3
# wafer — SPDX-License-Identifier: MIT
"""torch-graph.py: PyTorch's own CUDA graphs with wafer's allocator
installed (libwafer-torch.so through torch.cuda.memory.
CUDAPluggableAllocator). Run on a GPU machine from a built tree:

    python3 dev/torch-graph.py torch/.libs/libwafer-torch.so

It says, in order:
  - which hooks PyTorch's pluggable allocator lets a library set for the
    private memory pool a graph capture allocates from (the C++ class has
    begin/end_allocate_to_pool and release_pool setters; what Python and
    the C ABI reach is what a library loaded by path can use);
  - whether torch.cuda.graph captures a small MLP training step with the
    allocator installed, and, if it does, whether 20 replays give the
    losses of 20 eager steps from the same start;
  - the same for torch.compile(mode="reduce-overhead") where it runs.
Each check prints one line "graph-check NAME: ok|FAILED|unsupported ...",
with PyTorch's own exception text where it refused.
"""
import ctypes
import sys
import traceback


def line(name, verdict, detail=""):
    print(f"graph-check {name}: {verdict}{' - ' + detail if detail else ''}",
          flush=True)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    so = sys.argv[1]
    import torch
    line("torch", "ok", f"PyTorch {torch.__version__}, CUDA "
         f"{torch.version.cuda}")
    alloc = torch.cuda.memory.CUDAPluggableAllocator(
        so, "wafer_torch_alloc", "wafer_torch_free")
    # The private-pool and record_stream hooks (wafer-torch(7)).
    lib = ctypes.CDLL(so)

    def hook(name):
        return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
    a = alloc._allocator
    a.set_begin_allocate_to_pool(hook("wafer_torch_begin_allocate_to_pool"))
    a.set_end_allocate_to_pool_fn(hook("wafer_torch_end_allocate_to_pool"))
    a.set_release_pool(hook("wafer_torch_release_pool"))
    a.set_record_stream_fn(hook("wafer_torch_record_stream"))
    torch.cuda.memory.change_current_allocator(alloc)
    hooks = [n for n in dir(alloc._allocator)
             if "pool" in n.lower() or "graph" in n.lower()]
    cpp = [n for n in dir(torch._C) if "Pool" in n or "pool" in n]
    line("pool-hooks", "ok" if hooks else "unsupported",
         f"Python-visible pool hooks on the pluggable allocator: {hooks} "
         f"(wafer's set); torch._C pool calls: {sorted(cpp)[:12]}")

    dev = torch.device("cuda")
    torch.manual_seed(0)

    def make():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(256, 512),
                                    torch.nn.ReLU(),
                                    torch.nn.Linear(512, 10)).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        return model, opt

    x = torch.randn(64, 256, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    lossf = torch.nn.CrossEntropyLoss()

    # Eager reference.
    model, opt = make()
    eager = []
    for _ in range(24):
        opt.zero_grad(set_to_none=False)
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()
        eager.append(loss.item())

    # torch.cuda.graph of the whole step (warm-up on a side stream, as
    # PyTorch's documentation does).
    model, opt = make()
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                opt.zero_grad(set_to_none=False)
                loss = lossf(model(x), y)
                loss.backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        # The gradients are made inside the capture (from the graph's
        # pool), so each replay assigns rather than accumulates them.
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(g):
            static_loss = lossf(model(x), y)
            static_loss.backward()
            opt.step()
        replayed = []
        for _ in range(20):
            g.replay()
            replayed.append(static_loss.item())
        # A capture runs nothing: after 3 warm-up steps the replays are
        # steps 3..22.
        diff = max(abs(a - b) for a, b in zip(replayed, eager[3:]))
        line("cuda-graph", "ok" if diff < 1e-4 else "FAILED",
             f"20 replays, max loss difference vs eager {diff:.2e}")
        # Memory the capture freed is the graph's: tensors made and
        # written outside it must not change a replay, nor be changed.
        junk = [torch.full((1 << 18,), 7.0, device=dev) for _ in range(64)]
        g.replay()
        kept = all(bool((t == 7.0).all()) for t in junk)
        after = static_loss.item()
        line("private-pool", "ok" if kept and abs(after - eager[23]) < 1e-4
             else "FAILED",
             f"64 tensors made after capture unchanged by a replay: {kept}; "
             f"the replay's loss {after:.6f} vs eager {eager[23]:.6f}")
    except Exception as e:  # PyTorch's refusal, reported as it is
        line("cuda-graph", "unsupported",
             f"{type(e).__name__}: {str(e).splitlines()[0]}")
        traceback.print_exc(limit=3)

    try:
        model, _ = make()
        f = torch.compile(model, mode="reduce-overhead")
        for _ in range(3):
            out = f(x)
        ref = model(x)
        diff = (out - ref).abs().max().item()
        line("reduce-overhead", "ok" if diff < 1e-4 else "FAILED",
             f"max difference vs eager {diff:.2e}")
    except Exception as e:
        line("reduce-overhead", "unsupported",
             f"{type(e).__name__}: {str(e).splitlines()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
