#!/usr/bin/env python3
# wafer — SPDX-License-Identifier: MIT
"""Records the allocation trace of a model's training on a GPU.

    python3 dev/record-trace.py MODEL OUT.trace.gz [--steps N]

MODEL is one of vit_b16 (torchvision's ViT-B/16, 224x224 images, batch
32), bert (BERT-base masked LM, batch 32, sequence length random 64-512
per step) or llama (a LLaMA-style decoder: 12 layers, 1024 wide, batch 8,
sequence 1024, bfloat16 autocast); each trains with AdamW from random
weights on random data (no download). PyTorch's memory history
(torch.cuda.memory._record_memory_history) records every allocation and
free of the caching allocator; the trace keeps one line an event, in the
format of wafer-replay(1):

    a <id> <bytes>     an allocation of <bytes> (as the framework asked)
    f <id>             allocation <id> became reusable (free_completed)

and prints the events and the peak live bytes. Needs the GPU machine's
PyTorch (and transformers for bert and llama); nothing is downloaded.
"""
import argparse
import gzip
import os
import random
import sys

MODELS = ("vit_b16", "bert", "llama")


def build(model, torch, rng):
    """A function that runs one training step."""
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(1234)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    autocast = False
    if model == "vit_b16":
        import torchvision
        net = torchvision.models.vit_b_16(weights=None).to(dev)
        loss_fn = torch.nn.CrossEntropyLoss()

        def loss():
            x = torch.randn(32, 3, 224, 224, device=dev, generator=gen)
            y = torch.randint(0, 1000, (32,), device=dev, generator=gen)
            return loss_fn(net(x), y)
    elif model == "bert":
        from transformers import BertConfig, BertForMaskedLM
        config = BertConfig()  # BERT-base: 12 layers, 768 wide
        net = BertForMaskedLM(config).to(dev)

        def loss():
            n = rng.randint(64, 512)
            ids = torch.randint(0, config.vocab_size, (32, n), device=dev,
                                generator=gen)
            return net(input_ids=ids, labels=ids).loss
    elif model == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM
        config = LlamaConfig(hidden_size=1024, intermediate_size=2816,
                             num_hidden_layers=12, num_attention_heads=16,
                             num_key_value_heads=16, vocab_size=32000,
                             max_position_embeddings=2048, use_cache=False)
        net = LlamaForCausalLM(config).to(dev)
        autocast = True

        def loss():
            ids = torch.randint(0, config.vocab_size, (8, 1024), device=dev,
                                generator=gen)
            return net(input_ids=ids, labels=ids).loss
    else:
        raise SystemExit(f"unknown model {model} (have {', '.join(MODELS)})")
    net.train()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            value = loss()
        value.backward()
        opt.step()
    return step


def convert(entries, out, header):
    """Writes the trace of |entries| (the snapshot's device trace) to
    |out|; returns (events, peak live bytes)."""
    ids, sizes = {}, {}
    next_id = events = live = peak = 0
    with gzip.open(out, "wt") as f:
        for line in header:
            f.write(f"# {line}\n")
        for e in entries:
            action, addr = e["action"], e["addr"]
            if action == "alloc":
                size = e.get("requested_size", e["size"])
                ids[addr] = next_id
                sizes[next_id] = size
                f.write(f"a {next_id} {size}\n")
                next_id += 1
                events += 1
                live += size
                peak = max(peak, live)
            elif action == "free_completed" and addr in ids:
                i = ids.pop(addr)
                live -= sizes.pop(i)
                f.write(f"f {i}\n")
                events += 1
    return events, peak


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", choices=MODELS)
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=20)
    args = p.parse_args()
    import torch
    torch.cuda.init()
    # From before the model is built: its weights are in the trace too.
    torch.cuda.memory._record_memory_history(
        enabled="all", context=None, stacks="python", max_entries=10_000_000)
    step = build(args.model, torch, random.Random(42))
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    device = torch.cuda.current_device()
    header = [f"{args.model}: {args.steps} training steps, recorded with "
              f"PyTorch {torch.__version__} memory history on "
              f"{torch.cuda.get_device_name(device)} (dev/record-trace.py)"]
    events, peak = convert(snapshot["device_traces"][device], args.out, header)
    print(f"record model={args.model} steps={args.steps} events={events} "
          f"peak_live={peak} out={args.out}")
    return 0 if events else 1


if __name__ == "__main__":
    sys.exit(main())
