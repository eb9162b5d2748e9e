#!/usr/bin/env python3
# wafer — SPDX-License-Identifier: MIT
"""torch-train.py: PyTorch training on its own allocator and on wafer's.

Runs on the GPU machine (Python 3.12, PyTorch 2.11, torchvision,
transformers; no network): trains, on random data with fixed seeds,

  resnet18  torchvision ResNet-18, batch 64, 3x224x224, 30 steps, SGD
  gpt2      GPT-2 small from transformers' GPT2Config() (random init, no
            download), batch 8, sequence lengths random in 64..512,
            30 steps, AdamW
  mlp       3-layer MLP (1024 -> 4096 -> 4096 -> 1000), batch sizes random
            in 16..2048, 200 steps (a step takes about a millisecond), SGD
  mlp2s     the same MLP with each batch made on a side stream (as a data
            loader's copy overlaps compute), the default stream waiting
            for it and the batch's tensors record_stream'ed there: memory
            of two streams, one pool on wafer (one client, a queue per
            stream), a pool per stream on PyTorch's allocator

each under three allocators, every run in a process of its own (this
script again, with --child):

  default     PyTorch's caching allocator
  expandable  the same with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  wafer       libwafer-torch.so through torch.cuda.memory.
              CUDAPluggableAllocator, installed before any CUDA use

and prints per run: the peak device memory reserved by the allocator
(torch.cuda.max_memory_reserved for PyTorch's; for wafer's its own peak
from wafer_torch_stats, since max_memory_reserved does not work for a
pluggable allocator), the peak of live bytes, the device memory in use by
cuMemGetInfo (torch.cuda.mem_get_info, sampled after every step, minus
what was in use before the first allocation: a cross-check that includes
what bypasses the allocator), steps/s after the warm-up steps (with
torch.cuda.synchronize around the timed steps), the final loss (same
within fp tolerance across the three: the data, shapes and seeds are),
and storage calls (cudaMalloc/cuMemMap and frees: PyTorch's
num_device_alloc/num_device_free; wafer's storage_* counters). Then a
markdown table model x allocator and the targets: wafer's peak
reserved <= the better of PyTorch's two, wafer's step time <= 1.03x
PyTorch default's.

  python3 dev/torch-train.py /path/to/libwafer-torch.so OUT.md
      [--models resnet18,gpt2,mlp] [--allocators default,expandable,wafer]
      [--steps N] [--mlp-steps N] [--warmup N] [--repeat N]

OUT.md gets the table and the per-run lines, OUT.md.json the raw
figures. With --repeat N every (model, allocator) runs N times,
interleaved, and the table shows the median steps/s (the memory figures
are the same in every run). wafer's configuration comes from the usual
chain (WAFER_CONFIG, WAFER_MEMORY=pool|stream, ...), passed through.
"""

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

MODELS = ("resnet18", "gpt2", "mlp", "mlp2s")
ALLOCATORS = ("default", "expandable", "wafer")
MiB = 1024 * 1024


class WaferTorchStats(ctypes.Structure):
    """struct wafer_torch_stats of torch/wafer_torch.h."""
    _fields_ = [("struct_size", ctypes.c_size_t)] + [
        (name, ctypes.c_uint64) for name in (
            "clients", "allocs", "frees", "zero_allocs", "failed_allocs",
            "bytes_live", "peak_live", "bytes_in_use", "peak_in_use",
            "bytes_reserved", "peak_reserved", "storage_allocs",
            "storage_frees", "storage_maps", "storage_unmaps", "reuse_hits")
    ]


# --------------------------------------------------------------------------
# The child: one model under one allocator.
# --------------------------------------------------------------------------

_keep = []


def install_wafer(so_path):
    """wafer's allocator, before anything touches CUDA; its statistics."""
    import torch
    alloc = torch.cuda.memory.CUDAPluggableAllocator(
        so_path, "wafer_torch_alloc", "wafer_torch_free")
    torch.cuda.memory.change_current_allocator(alloc)
    _keep.append(alloc)
    # The same path: dlopen hands back the library PyTorch loaded.
    lib = ctypes.CDLL(so_path)
    lib.wafer_torch_stats.argtypes = [ctypes.c_int,
                                      ctypes.POINTER(WaferTorchStats)]
    lib.wafer_torch_stats.restype = ctypes.c_int

    def stats():
        s = WaferTorchStats()
        s.struct_size = ctypes.sizeof(s)
        if lib.wafer_torch_stats(-1, ctypes.byref(s)) != 0:
            raise RuntimeError("wafer_torch_stats failed (see stderr)")
        return {name: getattr(s, name) for name, _ in s._fields_[1:]}
    return stats


def build(model, torch, rng):
    """(module, optimizer, step function returning the loss tensor)."""
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(1234)
    if model == "resnet18":
        import torchvision
        net = torchvision.models.resnet18(weights=None, num_classes=1000)
        net = net.to(dev)
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()

        def batch():
            x = torch.randn(64, 3, 224, 224, device=dev, generator=gen)
            y = torch.randint(0, 1000, (64,), device=dev, generator=gen)
            return lambda: loss_fn(net(x), y)
    elif model == "gpt2":
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from transformers import GPT2Config, GPT2LMHeadModel
        config = GPT2Config()  # GPT-2 small: 12 layers, 768 wide, 124M
        config.use_cache = False
        net = GPT2LMHeadModel(config).to(dev)
        opt = torch.optim.AdamW(net.parameters(), lr=1e-4)

        def batch():
            n = rng.randint(64, 512)
            ids = torch.randint(0, config.vocab_size, (8, n), device=dev,
                                generator=gen)
            return lambda: net(input_ids=ids, labels=ids).loss
    elif model in ("mlp", "mlp2s"):
        net = torch.nn.Sequential(
            torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
            torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
            torch.nn.Linear(4096, 1000)).to(dev)
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()

        side = torch.cuda.Stream() if model == "mlp2s" else None

        def batch():
            b = rng.randint(16, 2048)
            if side is None:
                x = torch.randn(b, 1024, device=dev, generator=gen)
                y = torch.randint(0, 1000, (b,), device=dev, generator=gen)
                return lambda: loss_fn(net(x), y)
            with torch.cuda.stream(side):
                x = torch.randn(b, 1024, device=dev, generator=gen)
                y = torch.randint(0, 1000, (b,), device=dev, generator=gen)
            main = torch.cuda.current_stream()
            main.wait_stream(side)
            x.record_stream(main)
            y.record_stream(main)
            return lambda: loss_fn(net(x), y)
    else:
        raise SystemExit(f"unknown model {model}")
    net.train()

    def step():
        forward = batch()
        opt.zero_grad(set_to_none=True)
        loss = forward()
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def child(args):
    import random
    wafer_stats = None
    if args.allocator == "wafer":
        wafer_stats = install_wafer(args.so)
    import torch
    torch.manual_seed(0)
    rng = random.Random(42)
    # cuDNN's benchmark mode asks the allocator for its largest free block
    # (cacheInfo), which a pluggable allocator cannot answer: PyTorch's
    # default, heuristics, in every run alike.
    torch.backends.cudnn.benchmark = False
    torch.cuda.init()
    free0, total = torch.cuda.mem_get_info()
    base_used = total - free0

    step = build(args.model, torch, rng)
    steps = args.mlp_steps if args.model.startswith("mlp") else args.steps
    warmup = min(args.warmup, steps - 1)
    peak_used = 0
    loss = None
    for _ in range(warmup):
        loss = step()
        free, _ = torch.cuda.mem_get_info()
        peak_used = max(peak_used, total - free)
    torch.cuda.synchronize()
    began = time.perf_counter()
    for _ in range(steps - warmup):
        loss = step()
        free, _ = torch.cuda.mem_get_info()
        peak_used = max(peak_used, total - free)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - began

    result = {
        "model": args.model, "allocator": args.allocator,
        "steps": steps, "timed_steps": steps - warmup,
        "steps_per_s": (steps - warmup) / elapsed,
        "final_loss": float(loss.item()),
        "memgetinfo_used_peak": peak_used - base_used,
        "memgetinfo_base": base_used,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
    }
    if wafer_stats:
        s = wafer_stats()
        result.update(peak_reserved=s["peak_reserved"],
                      peak_live=s["peak_live"],
                      storage_calls=s["storage_allocs"] + s["storage_frees"]
                      + s["storage_maps"] + s["storage_unmaps"],
                      wafer=s)
        if s["allocs"] == 0:
            raise SystemExit("wafer's allocator was never called")
    else:
        st = torch.cuda.memory_stats()
        calls = None
        if "num_device_alloc" in st:
            calls = st["num_device_alloc"] + st.get("num_device_free", 0)
        result.update(peak_reserved=torch.cuda.max_memory_reserved(),
                      peak_live=torch.cuda.max_memory_allocated(),
                      storage_calls=calls,
                      segments=st.get("segment.all.allocated"))
    with open(args.json, "w") as f:
        json.dump(result, f)
    return 0


# --------------------------------------------------------------------------
# The parent: every run in its own process, then the table.
# --------------------------------------------------------------------------

def run_one(args, model, allocator, tmp):
    out = os.path.join(tmp, f"{model}-{allocator}.json")
    env = dict(os.environ)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if allocator == "expandable":
        env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    cmd = [sys.executable, os.path.abspath(__file__), "--child",
           "--model", model, "--allocator", allocator, "--so", args.so,
           "--json", out, "--steps", str(args.steps),
           "--mlp-steps", str(args.mlp_steps), "--warmup", str(args.warmup)]
    began = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=args.timeout)
    if p.returncode != 0 or not os.path.exists(out):
        tail = (p.stdout + p.stderr).strip().splitlines()[-15:]
        print(f"{model} {allocator}: FAILED (exit {p.returncode})\n  " +
              "\n  ".join(tail), flush=True)
        return {"model": model, "allocator": allocator, "failed": True,
                "detail": "\n".join(tail)}
    with open(out) as f:
        r = json.load(f)
    os.unlink(out)
    r["wall_s"] = time.time() - began
    if p.stderr.strip():
        r["stderr_tail"] = p.stderr.strip().splitlines()[-5:]
    return r


def mib(x):
    return "n/a" if x is None else f"{x / MiB:,.1f}"


def line(r):
    if r.get("failed"):
        return f"{r['model']:9} {r['allocator']:10} FAILED"
    return (f"{r['model']:9} {r['allocator']:10} "
            f"peak_reserved={mib(r['peak_reserved'])} MiB "
            f"peak_live={mib(r['peak_live'])} MiB "
            f"memgetinfo_used={mib(r['memgetinfo_used_peak'])} MiB "
            f"steps/s={r['steps_per_s']:.2f} loss={r['final_loss']:.6f} "
            f"storage_calls={r['storage_calls']}")


def report(results, args):
    by = {}
    for r in results:
        by.setdefault((r["model"], r["allocator"]), []).append(r)

    def pick(model, allocator):
        """The first good run, with the median steps/s of all."""
        runs = [r for r in by.get((model, allocator), ())
                if not r.get("failed")]
        if not runs:
            return None
        r = dict(runs[0])
        r["steps_per_s"] = statistics.median(x["steps_per_s"] for x in runs)
        return r

    out = []
    good = [r for r in results if not r.get("failed")]
    if good:
        out.append(f"Device: {good[0]['device']}, PyTorch {good[0]['torch']}, "
                   f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
                   f"steps/s after {args.warmup} warm-up steps"
                   + (f", median of {args.repeat} runs" if args.repeat > 1
                      else "") + ".")
        out.append("")
    out.append("| model | allocator | peak reserved (MiB) | peak live (MiB) "
               "| cuMemGetInfo used (MiB) | steps/s | step time vs default "
               "| final loss | storage calls |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    verdicts = []
    for model in args.models:
        base = pick(model, "default")
        for allocator in args.allocators:
            r = pick(model, allocator)
            if r is None:
                out.append(f"| {model} | {allocator} | failed | | | | | | |")
                continue
            ratio = (base["steps_per_s"] / r["steps_per_s"]) if base else None
            out.append(
                f"| {model} | {allocator} | {mib(r['peak_reserved'])} "
                f"| {mib(r['peak_live'])} | {mib(r['memgetinfo_used_peak'])} "
                f"| {r['steps_per_s']:.2f} "
                f"| {'n/a' if ratio is None else f'{ratio:.3f}'} "
                f"| {r['final_loss']:.5f} "
                f"| {'n/a' if r['storage_calls'] is None else r['storage_calls']} |")
        w = pick(model, "wafer")
        torch_runs = [x for x in (base, pick(model, "expandable")) if x]
        if w and torch_runs:
            best = min(torch_runs, key=lambda x: x["peak_reserved"])
            ok = w["peak_reserved"] <= best["peak_reserved"]
            verdicts.append(
                f"- {model}: wafer peak reserved {mib(w['peak_reserved'])} MiB "
                f"vs the better of PyTorch's {mib(best['peak_reserved'])} MiB "
                f"({best['allocator']}): {'met' if ok else 'MISSED'}")
        if w and base:
            ratio = base["steps_per_s"] / w["steps_per_s"]
            verdicts.append(
                f"- {model}: wafer step time {ratio:.3f}x PyTorch default's "
                f"(target <= 1.03): {'met' if ratio <= 1.03 else 'MISSED'}")
            rel = abs(w["final_loss"] - base["final_loss"]) / max(
                abs(base["final_loss"]), 1e-12)
            verdicts.append(
                f"- {model}: final loss {w['final_loss']:.6f} vs "
                f"{base['final_loss']:.6f} (relative difference {rel:.2e})")
    out.append("")
    out.extend(verdicts)
    return "\n".join(out)


def parent(args):
    import tempfile
    results = []
    with tempfile.TemporaryDirectory(prefix="torch-train.") as tmp:
        for _ in range(args.repeat):
            for model in args.models:
                for allocator in args.allocators:
                    r = run_one(args, model, allocator, tmp)
                    results.append(r)
                    print(line(r), flush=True)
    table = report(results, args)
    print()
    print(table, flush=True)
    with open(args.output, "w") as f:
        f.write("\n".join(line(r) for r in results) + "\n\n" + table + "\n")
    with open(args.output + ".json", "w") as f:
        json.dump(results, f, indent=1)
    return 0 if all(not r.get("failed") for r in results) else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("so", nargs="?", help="libwafer-torch.so")
    p.add_argument("output", nargs="?", help="markdown report (and .json)")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--allocators", default=",".join(ALLOCATORS))
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--mlp-steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--timeout", type=int, default=300,
                   help="seconds a run may take")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--allocator", help=argparse.SUPPRESS)
    p.add_argument("--so", dest="so_child", help=argparse.SUPPRESS)
    p.add_argument("--json", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        args.so = args.so_child
        return child(args)
    if not args.so or not args.output:
        p.error("the .so path and the output path are required")
    args.so = os.path.realpath(args.so)
    if "wafer" in args.allocators and not os.path.exists(args.so):
        p.error(f"{args.so}: no such file")
    args.models = [m for m in args.models.split(",") if m]
    args.allocators = [a for a in args.allocators.split(",") if a]
    for m in args.models:
        if m not in MODELS:
            p.error(f"unknown model {m} (have {', '.join(MODELS)})")
    for a in args.allocators:
        if a not in ALLOCATORS:
            p.error(f"unknown allocator {a} (have {', '.join(ALLOCATORS)})")
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
