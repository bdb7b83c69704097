"""PyTorch interop costs: importing a GPT-2-small-shaped torch module (captured by
dynamo and compiled through the four levels at its first call), its simulated forward
time on the NPU beside torch's own CPU forward, and the zero-copy round trip of a 1 GiB
tensor (torch -> PyPTO -> torch, checked to share one buffer).

    python bench/torch_interop.py [--layers N] [--seq N] [--batch N] [--round-trip-mib N] [--json]

Host times are wall-clock seconds on this machine (noisy under load: the JSON records
the load average); the simulated time is the device model's, at the chip's clock.
"""

import argparse
import json
import os
import sys
import time

import torch

import pypto as p

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from torch_gpt2 import GPT  # noqa: E402


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def round_trip(mib: int, repeat: int = 20):
    """Best time of torch -> p.Tensor -> torch on a mib-MiB float32 tensor, and whether
    every trip returned the same memory."""
    t = torch.empty(mib << 18, dtype=torch.float32)  # 4-byte elements: mib * 2**18 of them
    times, shared = [], True
    for _ in range(repeat):
        t0 = time.perf_counter()
        back = p.from_torch(t).to_torch()
        times.append(time.perf_counter() - t0)
        shared &= back.data_ptr() == t.data_ptr()
        del back
    return min(times), sum(times) / len(times), shared


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=12, help="transformer blocks (GPT-2 small: 12)")
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--round-trip-mib", type=int, default=1024)
    ap.add_argument("--json", action="store_true", help="print JSON rows (case, seconds, note)")
    args = ap.parse_args()
    p.set_progress(False)  # the rows are the output

    rows = []
    shape = f"GPT-2 small shape (vocab 50257, 768 wide, 12 heads) with {args.layers} layers"
    torch.manual_seed(0)
    m = GPT(vocab_size=50257, block_size=1024, n_layer=args.layers, n_head=12, n_embd=768).eval()
    idx = torch.randint(0, 50257, (args.batch, args.seq))

    t0 = time.perf_counter()
    p.from_torch(torch.nn.Linear(2, 2))(torch.randn(1, 2))
    rows.append({"case": "first from_torch in a process", "seconds": time.perf_counter() - t0,
                 "note": "a Linear, called once: mostly importing dynamo and the interop modules"})  # fmt: skip
    model = p.from_torch(m)
    t0 = time.perf_counter()
    logits = model(idx)
    rows.append({"case": "first forward (capture + compile + run)", "seconds": time.perf_counter() - t0,
                 "note": f"{shape}, batch {args.batch} x seq {args.seq}: dynamo's capture and the support check, "
                         "p.compile through the four levels, then one simulated run"})  # fmt: skip
    t0 = time.perf_counter()
    model(idx)
    host = time.perf_counter() - t0
    sim = model.executor.last_time_ms / 1e3
    rows.append({"case": "simulated forward", "seconds": sim, "note": f"device model time of one forward on {p.get_device()}; host time of the simulation {host:.3f} s"})
    with torch.no_grad():
        t0 = time.perf_counter()
        want = m(idx)
        rows.append({"case": "torch CPU forward", "seconds": time.perf_counter() - t0, "note": "the same module in torch on this host's CPU, for scale"})
    err = float((logits - want).abs().max() / want.abs().max())
    agree = bool(torch.equal(logits[:, -1].argmax(-1), want[:, -1].argmax(-1)))
    rows.append({"case": "logits check", "seconds": 0.0, "note": f"max |diff| / max |torch| = {err:.2e}; next-token argmax agrees: {agree}"})
    best, mean, shared = round_trip(args.round_trip_mib)
    rows.append({"case": f"zero-copy round trip {args.round_trip_mib} MiB", "seconds": best,
                 "note": f"torch -> p.from_torch -> to_torch, best of 20; same buffer every time: {shared}; goal < 1 ms"})  # fmt: skip
    rows.append({"case": f"zero-copy round trip {args.round_trip_mib} MiB, mean", "seconds": mean,
                 "note": "mean of the same 20 trips: the first wrap of the buffer may force a Go collection, re-wrapping it forces none (docs/torch.md)"})  # fmt: skip
    for r in rows:
        r["note"] += f" (load {_load()})"
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'case':<34} {'seconds':>12}  note")
    for r in rows:
        print(f"{r['case']:<34} {r['seconds']:>12.6f}  {r['note']}")


if __name__ == "__main__":
    main()
