#!/usr/bin/env python3
"""PTO-AS export of the corpus (bench/pto_corpus.py): per program, how many kernels,
how many ptoas assembled (both forms), how long exporting and assembling took, and the
flags of our manual form against those ptoas inserts into the auto form.

    python bench/pto_export.py --json              # a JSON list, one object per program
    python bench/pto_export.py                     # a table
    python bench/pto_export.py --case gemm         # the programs matching a regular expression
    python bench/pto_export.py --size test         # the corpus test's sizes (bench: bench/kernels.py's)

Programs are compiled (traced with placeholders: nothing is simulated) for the a2 preset
and exported with ``assemble=True`` through pypto.tools.ptoas (ptoas 0.1.1: ``pip install
'pypto[ptoas]'``; without it the ptoas columns are null).

Keys: case; kernels (tasks exported; 0 when the export refuses a construct the 0.1.1
dialect lacks, named in refused); assembled (kernels ptoas accepted in both forms);
rejected (kernels ptoas rejected, each for a known 0.1.1 defect: docs/pto-as.md, or
ran past --ptoas-timeout: listed in rejections);
pto_lines (lines of PTO-AS, both forms); export_ms (the export, both forms and the
manifest); ptoas_ms (ptoas on every file); flags_ours (set_flags of our manual forms);
flags_ptoas (set_flags ptoas inserted into the auto forms it assembled).
"""

import argparse
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pto_corpus  # noqa: E402

import pypto as p  # noqa: E402
from pypto.tools import ptoas as tp  # noqa: E402


def measure(case, assemble: bool, timeout: float) -> dict:
    ex, _, _ = pto_corpus.compiled(case, run=False)
    row = {"case": case.name, "kernels": 0, "assembled": None, "rejected": None, "pto_lines": 0, "export_ms": None,
           "ptoas_ms": None, "flags_ours": 0, "flags_ptoas": None}  # fmt: skip
    with tempfile.TemporaryDirectory() as d:
        start = time.perf_counter()
        try:
            report = tp.export(ex._current("").handle, d, False)
        except p.CompileError as e:
            row["refused"] = e.message.splitlines()[0]
            return row
        row["export_ms"] = (time.perf_counter() - start) * 1e3
        row["kernels"] = len(report)
        row["pto_lines"] = sum(sum(k["lines"].values()) for k in report)
        row["flags_ours"] = sum(k["flags_ours"] for k in report)
        if not assemble:
            return row
        row.update(assembled=0, rejected=0, ptoas_ms=0.0, flags_ptoas=0)
        for k in report:
            ok = 0
            for form, name in sorted(k["files"].items()):
                path = os.path.join(d, name)
                try:
                    r = tp.assemble(path, os.path.splitext(path)[0] + ".cpp", form == "auto", kernel=k["task"], timeout=timeout)
                except tp.PtoasError as e:
                    why = "ran past the time limit" if "ran past" in e.message else (tp.known_defect(e.message) or ("unknown",))[0]
                    row.setdefault("rejections", []).append(f"{k['task']} ({form}): {why}")
                    continue
                ok += 1
                row["ptoas_ms"] += r["ms"]
                if form == "auto":
                    row["flags_ptoas"] += r["flags"]
            row["assembled"] += ok == 2
            row["rejected"] += ok < 2
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print a JSON list")
    ap.add_argument("--case", default="", help="only the programs matching this regular expression")
    ap.add_argument("--size", default="bench", choices=["bench", "test"])
    ap.add_argument("--ptoas-timeout", type=float, default=600, help="seconds ptoas may take per file (it is slow on huge kernels)")
    args = ap.parse_args()
    p.set_device("a2")
    try:
        tp.runnable()
        assemble = True
    except tp.PtoasError as e:
        print(f"ptoas is not available ({e.message}): the ptoas columns are null", file=sys.stderr)
        assemble = False
    cases = pto_corpus.bench_cases(args.size) + [pto_corpus.demo_case()] + pto_corpus.op_family_cases() + [
        pto_corpus.dynamic_case(), pto_corpus.moe_case()] + pto_corpus.block_kernel_cases()
    rows = [measure(c, assemble, args.ptoas_timeout) for c in cases if re.search(args.case, c.name)]
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return
    print(f"{'case':<40} {'kernels':>7} {'asm':>4} {'rej':>4} {'lines':>8} {'export ms':>10} {'ptoas ms':>10} {'flags ours':>10} {'ptoas':>6}")
    for r in rows:
        if r["kernels"] == 0:
            print(f"{r['case']:<40} not exported: {r.get('refused', '')}")
            continue
        fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
        print(f"{r['case']:<40} {r['kernels']:>7} {fmt(r['assembled'], 'd'):>4} {fmt(r['rejected'], 'd'):>4} {r['pto_lines']:>8} "
              f"{r['export_ms']:>10.1f} {fmt(r['ptoas_ms'], '.0f'):>10} {r['flags_ours']:>10} {fmt(r['flags_ptoas'], 'd'):>6}")


if __name__ == "__main__":
    main()
