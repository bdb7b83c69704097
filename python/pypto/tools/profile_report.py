"""The HTML report of a profiled run: tables and two inline SVG plots (a roofline of
the tasks against the chip's peaks, and GM memory over time). Self-contained: no
script, no network."""

from __future__ import annotations

import html
import math

__all__ = ["report_html", "report_body", "roofline_svg", "memory_svg"]

_W, _H, _PAD = 560, 320, 56
_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:2px 8px;font-size:13px}
td.n{text-align:right;font-variant-numeric:tabular-nums}
th{background:#f0f0f0}
.launch{color:#8a5a00}.compute{color:#a00}.memory{color:#005fa3}
svg text{font-size:11px;font-family:system-ui,sans-serif}
"""


def _esc(x) -> str:
    return html.escape(str(x))


def _log_axis(lo: float, hi: float):
    lo, hi = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if hi <= lo:
        hi = lo + 1
    return lo, hi


def roofline_svg(result) -> str:
    """Each task as a point (FLOPs per GM byte, achieved FLOP/s) under the chip's roof:
    min(peak FLOP/s, intensity * peak GM bandwidth), for the cube and the vector peak."""
    chip = result.chip
    bw = chip["gm_bytes_per_s"]
    peaks = [("cube", chip["cube_flops_per_s"]), ("vector", chip["vector_flops_per_s"])]
    pts = [(t.intensity, t.flops_per_s, t) for t in result.tasks if t.hbm_bytes > 0 and t.flops > 0]
    xs = [p[0] for p in pts] + [peaks[0][1] / bw, peaks[1][1] / bw]
    ys = [p[1] for p in pts] + [peaks[0][1]]
    xlo, xhi = _log_axis(min(xs) / 4, max(xs) * 4)
    ylo, yhi = _log_axis(min(ys) / 4, max(ys) * 2)

    def px(x):
        return _PAD + (math.log10(x) - xlo) / (xhi - xlo) * (_W - 2 * _PAD)

    def py(y):
        return _H - _PAD - (math.log10(y) - ylo) / (yhi - ylo) * (_H - 2 * _PAD)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" role="img" aria-label="roofline">',
           f'<rect x="{_PAD}" y="{_PAD}" width="{_W - 2 * _PAD}" height="{_H - 2 * _PAD}" fill="none" stroke="#999"/>']  # fmt: skip
    for e in range(xlo, xhi + 1):
        out.append(f'<text x="{px(10**e):.1f}" y="{_H - _PAD + 14}" text-anchor="middle">1e{e}</text>')
    for e in range(ylo, yhi + 1):
        out.append(f'<text x="{_PAD - 4}" y="{py(10**e) + 4:.1f}" text-anchor="end">1e{e}</text>')
    out.append(f'<text x="{_W / 2}" y="{_H - 12}" text-anchor="middle">FLOPs per distinct GM byte</text>')
    out.append(f'<text x="14" y="{_H / 2}" transform="rotate(-90 14 {_H / 2})" text-anchor="middle">FLOP/s</text>')
    for (name, peak), colour in zip(peaks, ("#a00", "#c60")):
        ridge = peak / bw
        x0, x1 = 10**xlo, 10**xhi
        pts_line = []
        for x in (x0, ridge, x1):
            y = min(peak, x * bw)
            y = max(y, 10**ylo)
            pts_line.append(f"{px(x):.1f},{py(min(y, 10**yhi)):.1f}")
        out.append(f'<polyline points="{" ".join(pts_line)}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        out.append(f'<text x="{px(x1) - 4:.1f}" y="{py(min(peak, 10**yhi)) - 4:.1f}" text-anchor="end" fill="{colour}">{name} peak {peak / 1e12:.1f} TFLOP/s</text>')
    for x, y, t in pts:
        out.append(f'<circle cx="{px(x):.1f}" cy="{py(max(y, 10**ylo)):.1f}" r="4" fill="#005fa3" fill-opacity="0.7">'
                   f"<title>{_esc(t.name)} {_esc(t.op)}: {x:.2f} FLOP/B, {y / 1e9:.2f} GFLOP/s</title></circle>")  # fmt: skip
    out.append("</svg>")
    return "".join(out)


def memory_svg(result) -> str:
    """GM bytes of live allocations over the run's time (a step line)."""
    tl = result.memory_timeline
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" role="img" aria-label="memory over time">',
           f'<rect x="{_PAD}" y="{_PAD}" width="{_W - 2 * _PAD}" height="{_H - 2 * _PAD}" fill="none" stroke="#999"/>']  # fmt: skip
    if tl:
        t_end = max(result.total_time, 1e-12)
        top = max(b for _, b in tl) or 1

        def px(t):
            return _PAD + t / t_end * (_W - 2 * _PAD)

        def py(b):
            return _H - _PAD - b / top * (_H - 2 * _PAD)

        pts = []
        for i, (t, b) in enumerate(tl):
            if i:
                pts.append(f"{px(t):.1f},{py(tl[i - 1][1]):.1f}")
            pts.append(f"{px(t):.1f},{py(b):.1f}")
        out.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="#005fa3" stroke-width="1.5"/>')
        out.append(f'<text x="{_PAD - 4}" y="{py(top) + 4:.1f}" text-anchor="end">{top / 1e6:.3g} MB</text>')
        out.append(f'<text x="{_PAD - 4}" y="{py(0) + 4:.1f}" text-anchor="end">0</text>')
        out.append(f'<text x="{px(t_end):.1f}" y="{_H - _PAD + 14}" text-anchor="end">{t_end * 1e3:.3g} us</text>')
    out.append(f'<text x="{_W / 2}" y="{_H - 12}" text-anchor="middle">time</text>')
    out.append("</svg>")
    return "".join(out)


def _table(head, rows) -> str:
    h = "".join(f"<th>{_esc(c)}</th>" for c in head)
    body = []
    for r in rows:
        cells = []
        for c in r:
            if isinstance(c, tuple):  # (text, css class)
                cells.append(f'<td class="{c[1]}">{_esc(c[0])}</td>')
            elif isinstance(c, (int, float)):
                cells.append(f'<td class="n">{c:.6g}</td>' if isinstance(c, float) else f'<td class="n">{c}</td>')
            else:
                cells.append(f"<td>{_esc(c)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{h}</tr>{''.join(body)}</table>"


def report_body(result) -> str:
    """The report without the page around it (for notebooks)."""
    parts = [f"<h2>Profile of {_esc(result.name)} on {_esc(result.chip['name'])}</h2>",
             f"<p>{result.total_time * 1e3:.3f} us simulated, {len(result.tasks)} task(s), peak {result.peak_memory:.4f} MB live"]  # fmt: skip
    if result.cache_hit_rate is not None:
        parts.append(f", L2 hit rate {result.cache_hit_rate:.1%}")
    parts.append("</p><h3>Ops by total time</h3>")
    parts.append(_table(("op", "count", "total ms", "mean ms", "share", "location"),
                        [(r["op"], r["count"], r["total_ms"], r["mean_ms"], f"{r['share']:.1%}", r["location"]) for r in result.op_stats()]))  # fmt: skip
    parts.append("<h3>Bottlenecks</h3>")
    parts.append(_table(("task", "op", "class", "reason"),
                        [(b["task"], b["op"], (b["kind"], b["kind"]), b["reason"]) for b in result.bottlenecks()]))  # fmt: skip
    parts.append("<h3>Tasks</h3>")
    pipes = sorted({p for t in result.tasks for p in t.pipe_busy})
    parts.append(_table(("task", "core", "blocks", "time us", "GM bytes", "GB/s", "GFLOP/s", *[f"{p} busy" for p in pipes]),
                        [(t.name, t.core, t.blocks, t.time_ms * 1e3, t.gm_bytes, t.bandwidth / 1e9, t.flops_per_s / 1e9,
                          *[f"{t.pipe_busy.get(p, 0):.0%}" for p in pipes]) for t in result.tasks]))  # fmt: skip
    parts.append("<h3>Roofline</h3>" + roofline_svg(result))
    if "memory" in result.config.profile_metrics:
        parts.append("<h3>GM memory over time</h3>" + memory_svg(result))
        leaks = result.leaks()
        parts.append("<p>Leak check: " + ("no allocation is left alive at the end." if not leaks else
                     _esc("; ".join(f"t{x['tensor']} {x['type']}: {x['reason']}" for x in leaks))) + "</p>")  # fmt: skip
    return "".join(parts)


def report_html(result) -> str:
    """A whole self-contained HTML page."""
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Profile of {_esc(result.name)}</title>"
            f"<style>{_STYLE}</style></head><body>{report_body(result)}</body></html>\n")  # fmt: skip
