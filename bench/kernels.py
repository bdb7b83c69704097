#!/usr/bin/env python3
"""The compiler's kernels against the simulated chip's roofline.

Compiles each benchmark case (fp16 GEMMs 4096^3 and 6144^3, matmul + bias + relu,
softmax and layer norm over 8192x4096, attention [1, 32, 4096, 128] causal and not,
a GPT-2-small-sized decoder stack over 1024 tokens, and conv2d + bias + relu at batch 8:
the 3x3 and the expanding 1x1 of a ResNet-50 stage at 28x28 and a UNet block's 3x3 at
64x64, that 1x1 with a residual add before its relu, and two chains of them: a UNet block
and a ResNet-50 bottleneck with its residual add) for the a2 preset, runs it on
the simulator with the timing model only (times never depend on values), and prints
its simulated time beside the chip's roofline for it, through the Go helper
cmd/pto-kernels (built with the repository's Go toolchain).

    python bench/kernels.py --json          # a JSON list, one object per case
    python bench/kernels.py                 # a table
    python bench/kernels.py --case softmax  # the cases matching a regular expression
    python bench/kernels.py --demo-only     # only the demo's rows (--demo-seq etc. size it)
    python bench/kernels.py --case gpt2 --each-feature --disable fuse-projections
                                            # a pass off (the demo's rows keep every pass)
    go run ./cmd/pto-kernels -case gpt2 -tasks 10
                                            # where the time goes: each kernel kind's share
                                            # and the first 10 tasks one by one

Every case runs with the default configuration, the runtime's scheduling features on
("runtime": "on": concurrent tasks, overlapped launches, L2 prefetch, balanced blocks,
early starts; see docs/device.md, "Dispatcher"). The GPT-2-small forward (the decoder
stack, 12 layers, seq 1024, batch 1) and the demo's model (examples/demo.py, run in
this process through pypto) are also measured with the plain runtime ("off"). The
demo's rows give its simulated tokens per second (batch x seq over the simulated time
of one forward) and whether its logits have the same bytes both ways.

Keys: case, sim_ms, roofline_ms (the largest of the cube time at peak, one fp32 pass
of the vector ops at peak, and the compulsory GM bytes at full HBM bandwidth),
roofline_frac (roofline_ms / sim_ms), cube_busy, gm_bytes (the run's traffic with HBM:
lines the L2 missed or prefetched, stores written through, intermediates written back;
the run's tasks share the L2, docs/device.md "The L2 of a run"), footprint_bytes (the
sum of each task's distinct GM bytes: what tasks that each start with a cold L2 would
move), compulsory_gm_bytes (inputs once, outputs once), compile_ms (a cold compile), plus
cached_compile_ms for the GPT case (a compile that finds the program in the
session's cache), tasks, bound (what sets the roofline) and instrs_per_core (static
machine instructions of the largest program a core runs: the code its instruction
cache must hold), runtime (on / off; with --each-feature also a row per feature alone,
named by its CompileConfig field). Convolution rows add conv_kernel_cube_busy and
conv_kernel_gm_bytes (the convolution's kernel alone, without the layout conversions
around it: its HBM traffic, to be read against compulsory_gm_bytes) and
gemm_same_mkn_cube_busy (a GEMM of the convolution's m = N*OH*OW, k = C*KH*KW,
n = O on the same chip), printed in a table of their own. The chains of convolutions
(a UNet block, a ResNet-50 bottleneck) add chain_floor_gm_bytes: the compulsory bytes
plus each activation passed between their kernels written once and read once (and the
bottleneck's input read once more, as the residual its last convolution's kernel adds).
A convolution's weight and bias are weights (lower.Options.Weights, what a compiled
model's captured tensors are): the program converts them in its first run and the rows
are the runs after it; first_run_sim_ms and first_run_gm_bytes are the first run's.
"""
import argparse
import importlib.util
import json
import os
import sys

from gocmd import ROOT, run_json


def ratio_table(rows, key, title, columns):
    """Prints the rows that have key as a table of title and the named columns (each a
    function of the row, printed with three decimals)."""
    rows = [r for r in rows if key in r]
    if not rows:
        return
    print(f"\n{title:<40} " + " ".join(f"{name:>17}" for name in columns))
    for r in rows:
        print(f"{r['case']:<40} " + " ".join(f"{f(r):>17.3f}" for f in columns.values()))


def demo_rows(device, batch, seq, layers):
    """The demo's model run with the runtime's features off and on: its simulated
    tokens per second each way."""
    spec = importlib.util.spec_from_file_location("demo", os.path.join(ROOT, "examples", "demo.py"))
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    import numpy as np

    import pypto as p

    p.set_device(device)
    cfg = demo.Config()
    rng = np.random.default_rng(0)
    weights = demo.make_weights(cfg, layers, seq, rng)
    tokens = rng.integers(0, cfg.vocab, size=(batch, seq)).astype(np.int32)
    rows, logits = [], []
    for on in (False, True):
        ops = demo.PyptoOps()
        model = p.compile(lambda t: demo.gpt_forward(ops, cfg, weights, t, seq), p.CompileConfig(runtime_features=on))
        logits.append(model.run(tokens).numpy())
        ms = model.last_time_ms
        rows.append({"case": f"demo_gpt_b{batch}_s{seq}_l{layers}", "runtime": "on" if on else "off", "sim_ms": ms,
                     "tokens_per_s": batch * seq / (ms / 1e3), "tasks": model.stats().get("tasks")})
    same = logits[0].tobytes() == logits[1].tobytes()
    for r in rows:
        r["values_identical"] = same
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print a JSON list")
    ap.add_argument("--chip", default="a2", help="chip preset (default a2)")
    ap.add_argument("--case", default="", help="only the cases matching this regular expression")
    ap.add_argument("--each-feature", action="store_true", help="also a GPT row per runtime feature alone")
    ap.add_argument("--disable", default="", help="compile without these optional passes (comma-separated, e.g. fuse-projections)")
    ap.add_argument("--demo-only", action="store_true", help="only the demo's rows")
    ap.add_argument("--no-demo", action="store_true", help="without the demo's rows")
    ap.add_argument("--demo-batch", type=int, default=2)
    ap.add_argument("--demo-seq", type=int, default=64)
    ap.add_argument("--demo-layers", type=int, default=2)
    args = ap.parse_args()
    extra = (["-case", args.case] if args.case else []) + (["-each-feature"] if args.each_feature else []) + (
        ["-disable", args.disable] if args.disable else [])
    rows = [] if args.demo_only else run_json("kernels.py", "pto-kernels", ["-json", "-chip", args.chip, *extra])
    demo = [] if args.no_demo else demo_rows(args.chip, args.demo_batch, args.demo_seq, args.demo_layers)
    if args.json:
        rows += demo
        json.dump(rows, sys.stdout, indent=2)
        print()
        return
    if rows:
        print(f"{'case':<40} {'runtime':>16} {'sim ms':>9} {'roof ms':>9} {'frac':>6} {'bound':>7} {'cube':>6} "
              f"{'GM/comp':>8} {'compile ms':>11} {'tasks':>6} {'instrs':>7}")
    for r in rows:
        ratio = r["gm_bytes"] / r["compulsory_gm_bytes"]
        print(f"{r['case']:<40} {r.get('runtime', 'on'):>16} {r['sim_ms']:>9.4f} {r['roofline_ms']:>9.4f} {r['roofline_frac']:>6.3f} "
              f"{r['bound']:>7} {r['cube_busy']:>6.3f} {ratio:>8.2f} {r['compile_ms']:>11.1f} {r['tasks']:>6} "
              f"{r['instrs_per_core']:>7}")
        if "cached_compile_ms" in r:
            print(f"{'':<40} cached compile {r['cached_compile_ms']:.4f} ms")
    comp = lambda r, key: r[key] / r["compulsory_gm_bytes"]
    ratio_table(rows, "gemm_same_mkn_cube_busy", "convolution", {
        "kernel cube": lambda r: r["conv_kernel_cube_busy"], "GEMM cube": lambda r: r["gemm_same_mkn_cube_busy"],
        "kernel GM/comp": lambda r: comp(r, "conv_kernel_gm_bytes"), "program GM/comp": lambda r: comp(r, "gm_bytes"),
        "1st run GM/comp": lambda r: comp(r, "first_run_gm_bytes") if "first_run_gm_bytes" in r else float("nan")})
    ratio_table(rows, "chain_floor_gm_bytes", "convolution chain", {
        "program GM/comp": lambda r: comp(r, "gm_bytes"), "chain floor/comp": lambda r: comp(r, "chain_floor_gm_bytes"),
        "program GM/floor": lambda r: r["gm_bytes"] / r["chain_floor_gm_bytes"]})
    if demo:
        print(f"\n{'demo case':<38} {'runtime':>7} {'sim ms':>9} {'tokens/s':>12} {'tasks':>6} {'same values':>12}")
        for r in demo:
            print(f"{r['case']:<38} {r['runtime']:>7} {r['sim_ms']:>9.4f} {r['tokens_per_s']:>12,.0f} {r['tasks']:>6} "
                  f"{str(r['values_identical']):>12}")


if __name__ == "__main__":
    main()
