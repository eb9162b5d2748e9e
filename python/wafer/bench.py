# wafer — SPDX-License-Identifier: MIT
"""python -m wafer.bench: what a call costs from Python.

Per-operation time on 1-element tensors (the overhead: the work itself
is nothing), beside the same C calls timed in a C loop (so the binding's
own share shows), numpy on the host and, when importable, PyTorch on the
same kind of device; then bandwidth of a + b on large operands. Each
figure is the best of several rounds, the sides measured alternately, as
other load on the machine only ever adds time.

    python -m wafer.bench [--device SELECTOR] [--mib 64] [--rounds 7]
"""
import argparse
import sys
import timeit

import numpy as np

import wafer
from wafer import _wafer


def best(stmt, glb, number, rounds):
    """Seconds per run of stmt: the best of |rounds| rounds."""
    return min(timeit.repeat(stmt, globals=glb, number=number,
                             repeat=rounds)) / number


def torch_device(client):
    """(torch, device string) to compare with, or (None, why)."""
    try:
        import torch
    except ImportError:
        return None, "not importable"
    backend = client.device.backend
    if backend == "cuda":
        if not torch.cuda.is_available():
            return None, "torch has no CUDA here"
        return torch, "cuda:%d" % client.device.index
    if backend == "cpu":
        return torch, "cpu"
    return None, "no torch device for %s" % backend


def small_ops(client, rounds, number, torch, tdev):
    one = np.ones(1, np.float32)
    a, b = client.asarray(one), client.asarray(one)
    na, nb = one.copy(), one.copy()
    glb = {"a": a, "b": b, "na": na, "nb": nb, "np": np, "wafer": wafer,
           "c_loop": _wafer._c_loop, "n": number}
    if torch is not None:
        glb.update(ta=torch.ones(1, device=tdev), tb=torch.ones(1, device=tdev),
                   torch=torch)
    cases = [
        ("a + b", "a + b", "add", "na + nb", "ta + tb"),
        ("exp(a)", "wafer.exp(a)", "exp", "np.exp(na)", "torch.exp(ta)"),
        ("a + 1.0", "a + 1.0", "add_scalar", "na + 1.0", "ta + 1.0"),
    ]
    rows = []
    for label, w_stmt, c_kind, n_stmt, t_stmt in cases:
        w = c = n = t = float("inf")
        # Alternate the sides round by round.
        for _ in range(rounds):
            w = min(w, best(w_stmt, glb, number, 1))
            c = min(c, _wafer._c_loop(c_kind, a, b, number))
            n = min(n, best(n_stmt, glb, number, 1))
            if torch is not None:
                t = min(t, best(t_stmt, glb, number, 1))
        client.sync()
        rows.append((label, w, c, n, t if torch is not None else None))
    return rows


def bandwidth(client, mib, rounds, torch, tdev):
    count = mib * (1 << 20) // 4
    x = np.random.default_rng(0).standard_normal(count).astype(np.float32)
    a, b = client.asarray(x), client.asarray(x)
    na, nb, nout = x.copy(), x.copy(), np.empty_like(x)
    glb = {"a": a, "b": b, "na": na, "nb": nb, "nout": nout, "np": np,
           "client": client}
    moved = 3 * x.nbytes  # read a, read b, write the result
    w_stmt = "r = a + b; client.sync(); del r"
    best(w_stmt, glb, 1, 1)  # warm: the result's size is cached
    res = {"wafer": moved / best(w_stmt, glb, 3, rounds),
           "numpy a + b": moved / best("r = na + nb; del r", glb, 3, rounds),
           "numpy add(out=)": moved / best("np.add(na, nb, out=nout)", glb, 3,
                                           rounds)}
    if torch is not None:
        ta = torch.from_numpy(x).to(tdev)
        tb = ta.clone()
        sync = (torch.cuda.synchronize if tdev.startswith("cuda")
                else (lambda: None))
        glb.update(ta=ta, tb=tb, sync=sync)
        t_stmt = "r = ta + tb; sync(); del r"
        best(t_stmt, glb, 1, 1)
        res["torch"] = moved / best(t_stmt, glb, 3, rounds)
    return res


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m wafer.bench",
                                description=__doc__.splitlines()[0])
    p.add_argument("--device", default="default",
                   help="client selector (default: %(default)s)")
    p.add_argument("--mib", type=int, default=64,
                   help="operand size of the bandwidth test in MiB")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--number", type=int, default=20000,
                   help="calls per round of the small operations")
    args = p.parse_args(argv)

    rt = wafer.Runtime()
    client = rt.client(args.device)
    torch, tdev = torch_device(client)
    print("wafer %s on %s (%s); numpy %s; torch: %s" % (
        wafer.library_version(), client.selector, client.device.name,
        np.__version__,
        "%s on %s" % (torch.__version__, tdev) if torch else tdev))
    print()
    print("1-element operations, ns per call (best of %d rounds of %d):"
          % (args.rounds, args.number))
    head = "%-9s %8s %8s %8s %8s %7s" % ("op", "wafer", "C call", "binding",
                                       "numpy", "ratio")
    if torch:
        head += " %8s" % "torch"
    print(head)
    for label, w, c, n, t in small_ops(client, args.rounds, args.number,
                                       torch, tdev):
        line = "%-9s %8.0f %8.0f %8.0f %8.0f %6.2fx" % (
            label, w * 1e9, c * 1e9, (w - c) * 1e9, n * 1e9, w / n)
        if t is not None:
            line += " %8.0f" % (t * 1e9)
        print(line)
    print("(binding: wafer's Python call minus the same C calls in a C loop;"
          " ratio: wafer / numpy)")
    print()
    print("a + b on %d MiB float32 operands, GB/s (3 x size moved):"
          % args.mib)
    for name, bw in bandwidth(client, args.mib, max(3, args.rounds // 2),
                              torch, tdev).items():
        print("  %-16s %7.2f" % (name, bw / 1e9))
    return 0


if __name__ == "__main__":
    sys.exit(main())
