# wafer — SPDX-License-Identifier: MIT
"""A small training run with tinygrad on one device: a two-layer MLP (tinygrad.nn.Linear)
classifying synthetic data (a fixed random teacher's labels), trained
with Adam under TinyJit. Prints one JSON line: the device, the loss
after each logged step, steps per second (after a warm-up) and the peak
of tinygrad's bytes in use on the device (plus wafer's own peak where
the device is WAFER).

  python -m wafer.tinygrad_mlp --device WAFER --steps 60
  python -m wafer.tinygrad_mlp --device CPU --steps 60
  python -m wafer.tinygrad_mlp --device WAFER --profile prof.out

--profile PATH profiles the timed steps (after the warm-up, which
compiles) with cProfile and writes its statistics to PATH (pstats);
--trace PATH, on WAFER, writes wafer's trace of them to PATH
(wafer-trace report PATH).

The data and the initial weights are drawn by numpy from --seed, so two
devices start from the same numbers and should reach the same loss up
to float32 rounding (the kernels may sum in another order).
"""
import argparse
import contextlib
import json
import time

import numpy as np


def run(device, steps=60, batch=128, features=32, hidden=64, classes=8,
        seed=0, warmup=5, profile=None, trace=None):
    import wafer.tinygrad  # noqa: F401 (registers WAFER)
    from tinygrad import Context, Device, Tensor, TinyJit, dtypes, nn
    from tinygrad.helpers import GlobalCounters
    from tinygrad.nn.optim import Adam

    rng = np.random.default_rng(seed)
    x_np = rng.standard_normal((batch * 4, features)).astype(np.float32)
    teacher = rng.standard_normal((features, classes)).astype(np.float32)
    y_np = (x_np @ teacher).argmax(axis=1).astype(np.int32)
    w1 = rng.standard_normal((features, hidden)).astype(np.float32)
    w2 = rng.standard_normal((hidden, classes)).astype(np.float32)

    dev = Device.canonicalize(device)
    # tinygrad's nn layers, their weights drawn by numpy (same on every
    # device; float32 also under NumPy 2, where a float64 scalar promotes).
    l1, l2 = nn.Linear(features, hidden), nn.Linear(hidden, classes)
    l1.weight = Tensor((w1.T / np.sqrt(features)).astype(np.float32), device=dev)
    l1.bias = Tensor(np.zeros(hidden, np.float32), device=dev)
    l2.weight = Tensor((w2.T / np.sqrt(hidden)).astype(np.float32), device=dev)
    l2.bias = Tensor(np.zeros(classes, np.float32), device=dev)
    batches = [(Tensor(x_np[i * batch:(i + 1) * batch], device=dev).realize(),
                Tensor(y_np[i * batch:(i + 1) * batch], device=dev,
                       dtype=dtypes.int32).realize()) for i in range(4)]
    opt = Adam(nn.state.get_parameters([l1, l2]), lr=1e-2)

    @TinyJit
    def step(xb, yb):
        with Context(TRAINING=1):
            loss = l2(l1(xb).relu()).sparse_categorical_crossentropy(yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss.realize()

    profiler, timed = None, contextlib.ExitStack()
    if profile:
        import cProfile
        profiler = cProfile.Profile()
    losses, peak, start = [], 0, None
    for s in range(steps):
        if s == warmup:
            Device[dev].synchronize()
            if trace and dev.startswith("WAFER"):
                import wafer
                timed.enter_context(wafer.trace(
                    trace, runtime=Device[dev].client.runtime))
            start = time.perf_counter()
            if profiler:
                profiler.enable()
        loss = step(*batches[s % 4])  # tensors: the JIT's inputs
        peak = max(peak, GlobalCounters.mem_used_per_device[dev])
        if s % 10 == 0 or s == steps - 1:
            losses.append((s, float(loss.item())))
    Device[dev].synchronize()
    elapsed = time.perf_counter() - start
    if profiler:
        profiler.disable()
        profiler.dump_stats(profile)
    timed.close()
    out = {"device": dev, "losses": losses,
           "final_loss": losses[-1][1],
           "steps_per_s": (steps - warmup) / elapsed,
           "peak_bytes_tinygrad": peak}
    if dev.startswith("WAFER"):
        wdev = Device[dev]
        out["wafer_device"] = wdev.client.selector
        out["peak_bytes_wafer"] = wdev.client.memory_usage()["peak_in_use"]
        # the wafer graphs TinyJit's batches replay as (wafer.tinygrad's
        # WaferGraph): their kernel launches, and how many of those the
        # device replays natively
        from tinygrad.engine.realize import graph_cache
        infos = [g.info() for runner in list(graph_cache.values())
                 for g in getattr(runner, "graphs", {}).values()]
        out["wafer_graphs"] = {
            "graphs": len(infos),
            "launches": sum(i["launches"] for i in infos),
            "native_launches": sum(i["native_launches"] for i in infos)}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="WAFER")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", metavar="PATH",
                    help="cProfile the timed steps into PATH")
    ap.add_argument("--trace", metavar="PATH",
                    help="wafer's trace of the timed steps (WAFER only)")
    a = ap.parse_args(argv)
    print(json.dumps(run(a.device, a.steps, a.batch, hidden=a.hidden,
                         seed=a.seed, profile=a.profile, trace=a.trace)))


if __name__ == "__main__":
    main()
