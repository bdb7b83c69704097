#!/usr/bin/env python3
"""How fast the compilation viewer opens a large program: GPT-2 small (12 layers,
hidden 768, 12 heads, MLP 3072; vocabulary 16384, see GPT2Small) over --seq tokens, compiled for the
a2 preset with the visualisation on, its page opened in headless Chromium.

    python bench/viz_load.py                # a table
    python bench/viz_load.py --json         # one JSON object
    python bench/viz_load.py --layers 2     # a smaller model

Reports the compile time with the visualisation, the page's size, the time from
opening the page to its first view laid out and drawn (open_ms), then for every graph
level the time to switch to it (grouped, as it opens) and to lay out and draw it with
every group open (expand_ms, of which expand_layout_ms in the page's layout), with the
numbers of visible items, of layouts run (one per open group) and the largest one.
Needs chromium and playwright (tests/browser_support.py says how to install them).
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "examples"), os.path.join(HERE, "..", "tests")]

import demo  # noqa: E402  (the decoder, written once against an ops namespace)
from browser_support import chromium_path, missing_reason  # noqa: E402

import pypto as p  # noqa: E402


class GPT2Small:
    # GPT-2 small but for the vocabulary: the device's gather addresses reach 2**24 elements,
    # so the embedding table is 16384 x 768 rather than 50257 x 768.
    vocab, hidden, heads, ffn = 16384, 768, 12, 3072


def compile_page(layers, seq, chip, out_dir):
    cfg = GPT2Small()
    weights = demo.make_weights(cfg, layers, seq, np.random.default_rng(0))
    ops = demo.PyptoOps()

    def gpt2(tokens):
        return demo.gpt_forward(ops, cfg, weights, tokens, seq)

    config = p.CompileConfig(enable_visualization=True, visualization_dir=out_dir, chip=chip)
    t = time.perf_counter()
    ex = p.compile(gpt2, config, inputs=[p.Tensor([1, seq], dtype=p.int32)])
    compile_s = time.perf_counter() - t
    view = ex.visualize()
    path = view.save(os.path.join(out_dir, "gpt2.html"))
    return path, compile_s, view


def _browser_cpu_s():
    """CPU seconds used so far by the Chromium processes this process started (through
    playwright's driver): a figure the load of a shared machine inflates less than the
    wall time."""
    tick = os.sysconf("SC_CLK_TCK")
    procs = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                head, rest = f.read().rsplit(")", 1)
            fields = rest.split()
            procs[int(pid)] = (int(fields[1]), head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / tick)
        except (OSError, IndexError, ValueError):
            continue
    mine, grew = {os.getpid()}, True
    while grew:
        grew = False
        for pid, (ppid, _, _) in procs.items():
            if ppid in mine and pid not in mine:
                mine.add(pid)
                grew = True
    return sum(cpu for pid, (_, comm, cpu) in procs.items() if pid in mine and "chrom" in comm)


def measure(path):
    from playwright.sync_api import sync_playwright

    rows = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        cpu = _browser_cpu_s()
        t = time.perf_counter()
        page.goto("file://" + os.path.abspath(path))
        page.wait_for_function("window.__pyptoViz && window.__pyptoViz.ready", timeout=120000)
        rows["open_ms"] = (time.perf_counter() - t) * 1e3
        rows["open_cpu_ms"] = (_browser_cpu_s() - cpu) * 1e3
        rows["in_page"] = page.evaluate("__pyptoViz.timings")  # parse, and parse to first view drawn
        levels = {}
        for level in ("input", "tensor", "tile", "block", "exec"):
            t = time.perf_counter()
            page.click(f"nav button[data-level={level}]")
            s = page.evaluate("({ms: __pyptoViz.drawMs, items: __pyptoViz.visibleNodes})")
            switch_ms = (time.perf_counter() - t) * 1e3
            t = time.perf_counter()
            page.click("#expand-all")
            full = page.evaluate("({ms: __pyptoViz.drawMs, layout_ms: __pyptoViz.layoutMs, items: __pyptoViz.visibleNodes, work: __pyptoViz.layoutStats})")
            expand_ms = (time.perf_counter() - t) * 1e3
            status = page.inner_text("#status")
            levels[level] = {"switch_ms": switch_ms, "grouped_items": s["items"], "expand_ms": expand_ms,
                             "expand_layout_ms": full["layout_ms"], "expand_draw_ms": full["ms"],
                             "all_items": full["items"], "layouts": full["work"]["dagreCalls"],
                             "largest_layout": full["work"]["maxDagreNodes"], "status": status}
            page.click("#collapse-all")
        rows["levels"] = levels
        rows["console_errors"] = errors
        browser.close()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--chip", default="a2")
    args = ap.parse_args()
    reason = missing_reason()
    if reason:
        sys.exit(f"viz_load.py: {reason}")
    keep = os.environ.get("VIZ_LOAD_KEEP")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = keep or tmp
        path, compile_s, view = compile_page(args.layers, args.seq, args.chip, tmp)
        row = {"layers": args.layers, "seq": args.seq, "chip": args.chip, "compile_s": compile_s,
               "page_bytes": os.path.getsize(path), "traced_nodes": len(view.data["input"]["nodes"]),
               "kernels": len(view.data["tile"]["ops"]), "tasks": len(view.data["exec"]["tasks"]),
               "load": os.getloadavg()[0], **measure(path)}
    if args.json:
        json.dump(row, sys.stdout, indent=2)
        print()
        return
    print(f"GPT-2 small, {args.layers} layers, {args.seq} tokens on {args.chip}: compile {compile_s:.1f} s with the "
          f"visualisation, page {row['page_bytes'] / 2**20:.1f} MiB, {row['traced_nodes']} traced nodes, "
          f"{row['kernels']} kernels, {row['tasks']} tasks (load {row['load']:.2f})")
    print(f"page open to first view drawn: {row['open_ms']:.0f} ms wall, {row['open_cpu_ms']:.0f} ms of the browser's CPU "
          f"(in the page: data parsed in "
          f"{row['in_page']['parseMs']:.0f} ms, first view drawn {row['in_page']['firstViewMs']:.0f} ms after the script started)")
    print(f"{'level':<8} {'switch ms':>10} {'items':>6} {'expand all ms':>14} {'layout ms':>10} {'items':>6} {'layouts':>8} {'largest':>8}")
    for level, r in row["levels"].items():
        print(f"{level:<8} {r['switch_ms']:>10.0f} {r['grouped_items']:>6} {r['expand_ms']:>14.0f} {r['expand_layout_ms']:>10.0f} "
              f"{r['all_items']:>6} {r['layouts']:>8} {r['largest_layout']:>8}")
    if row["console_errors"]:
        print("console errors:", row["console_errors"])


if __name__ == "__main__":
    main()
