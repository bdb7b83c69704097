"""p.compare_profiles: per-op differences of two profiled runs."""

from __future__ import annotations

import html

__all__ = ["ProfileComparison"]


class ProfileComparison:
    """Rows per op label present in either run: {"op", "a_ms", "b_ms", "diff_ms"
    (b - a), "ratio" (b / a, None when a has none), "a_count", "b_count"}, ranked by the
    size of the difference; ``total`` compares the runs' times. ``str()`` is a table."""

    def __init__(self, a, b):
        self.a, self.b = a, b
        sa = {r["op"]: r for r in a.op_stats()}
        sb = {r["op"]: r for r in b.op_stats()}
        rows = []
        for op in dict.fromkeys([*sa, *sb]):
            ta = sa[op]["total_ms"] if op in sa else 0.0
            tb = sb[op]["total_ms"] if op in sb else 0.0
            rows.append({"op": op, "a_ms": ta, "b_ms": tb, "diff_ms": tb - ta, "ratio": tb / ta if ta else None,
                         "a_count": sa[op]["count"] if op in sa else 0, "b_count": sb[op]["count"] if op in sb else 0})  # fmt: skip
        self.rows = sorted(rows, key=lambda r: -abs(r["diff_ms"]))
        self.total = {"a_ms": a.total_time, "b_ms": b.total_time, "diff_ms": b.total_time - a.total_time,
                      "ratio": b.total_time / a.total_time if a.total_time else None}  # fmt: skip

    def __str__(self) -> str:
        w = max([len("op")] + [len(r["op"]) for r in self.rows])
        head = f"{'op':<{w}}  {'a ms':>10}  {'b ms':>10}  {'b - a ms':>10}  {'b / a':>7}  {'count a/b':>9}"
        lines = [head, "-" * len(head)]
        for r in [*self.rows, {"op": "total", **self.total, "a_count": len(self.a.tasks), "b_count": len(self.b.tasks)}]:
            ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
            lines.append(f"{r['op']:<{w}}  {r['a_ms']:>10.6f}  {r['b_ms']:>10.6f}  {r['diff_ms']:>+10.6f}  {ratio:>7}  {r['a_count']:>4}/{r['b_count']:<4}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(r['op'])}</td><td>{r['a_ms']:.6f}</td><td>{r['b_ms']:.6f}</td><td>{r['diff_ms']:+.6f}</td>"
            f"<td>{'-' if r['ratio'] is None else format(r['ratio'], '.3f')}</td></tr>"
            for r in self.rows
        )
        return f"<table><tr><th>op</th><th>a ms</th><th>b ms</th><th>b - a</th><th>b / a</th></tr>{rows}</table>"

    def __repr__(self) -> str:
        return str(self)
