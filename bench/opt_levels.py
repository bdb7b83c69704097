"""The optimisation levels on the GPT-style demo model (examples/demo.py): per level,
the tasks a run launches, its simulated time, the device memory its plan needs, the
host time of the first run (trace + compile + run) and the largest difference from O0.

    python bench/opt_levels.py [--device a2|tiny] [--batch N] [--seq N] [--layers N]
"""

import argparse
import os
import sys
import time

import numpy as np

import pypto as p

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from demo import Config, PyptoOps, gpt_forward, make_weights  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="a2")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    args = ap.parse_args()
    cfg = Config()
    rng = np.random.default_rng(0)
    weights = make_weights(cfg, args.layers, args.seq, rng)
    tokens = rng.integers(0, cfg.vocab, size=(args.batch, args.seq)).astype(np.int32)
    ops = PyptoOps()
    print(f"GPT-style decoder, {args.layers} layers, batch {args.batch} x seq {args.seq}, float16, on {args.device}")
    print(f"{'level':>5} {'tasks':>6} {'sim ms':>9} {'peak MiB':>9} {'workspace MiB':>14} {'no reuse MiB':>13} {'first run ms':>13} {'max |diff| vs O0':>17}")
    base = None
    for level in (0, 1, 2, 3):
        model = p.compile(lambda t: gpt_forward(ops, cfg, weights, t, args.seq), p.CompileConfig(opt_level=level, chip=args.device))
        t0 = time.perf_counter()
        out = model.run(tokens).numpy().astype(np.float32)
        first = time.perf_counter() - t0
        base = out if base is None else base
        m = model.info()["memory"]
        mib = 1 << 20
        print(f"{'O%d' % level:>5} {model.stats()['tasks']:>6} {model.last_time_ms:>9.4f} {m['peak_bytes'] / mib:>9.2f} "
              f"{m['workspace_bytes'] / mib:>14.2f} {m['workspace_no_reuse_bytes'] / mib:>13.2f} {first * 1e3:>13.0f} "
              f"{np.abs(out - base).max():>17.3g}")


if __name__ == "__main__":
    main()
