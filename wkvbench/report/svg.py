"""Inline SVG charts for the HTML report, written by hand (no plotting library, no fonts, no network).

Two shapes cover every picture in the report: ``line_chart`` (series of (x, y) points on linear or
log axes, or on categorical x positions) and ``bar_chart`` (one horizontal bar per label). Every
point and bar carries a ``<title>`` with its exact numbers, so a browser shows them on hover.
Output depends only on the inputs (fixed number formatting), so committed reports diff cleanly.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

COLORS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
    "#bcbd22",
    "#393b79",
    "#ad494a",
)


@dataclass
class Series:
    """One line: ``points`` are (x, y, hover text); points with a non-finite or (on log axes) non-positive
    coordinate are left out."""

    label: str
    points: list[tuple[float, float, str]] = field(default_factory=list)
    dashed: bool = False


def _esc(s: str) -> str:
    return html.escape(s, quote=True)


def _num(v: float) -> str:
    return f"{v:.3g}"


class _Axis:
    """Maps data values to pixels, linear or log10, with round tick values."""

    def __init__(self, values: Sequence[float], log: bool, lo_px: float, hi_px: float) -> None:
        self.log = log
        vals = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
        if log:
            lo = math.floor(math.log10(min(vals))) if vals else 0
            hi = math.ceil(math.log10(max(vals))) if vals else 1
            self.lo, self.hi = float(lo), float(max(hi, lo + 1))
        else:
            lo = min(vals) if vals else 0.0
            hi = max(vals) if vals else 1.0
            pad = (hi - lo) * 0.04 if hi > lo else max(abs(lo) * 0.05, 1.0)
            self.lo, self.hi = lo - pad, hi + pad
        self.lo_px, self.hi_px = lo_px, hi_px

    def ok(self, v: float) -> bool:
        return math.isfinite(v) and (v > 0 or not self.log)

    def __call__(self, v: float) -> float:
        t = (math.log10(v) if self.log else v) - self.lo
        return self.lo_px + (self.hi_px - self.lo_px) * t / (self.hi - self.lo)

    def ticks(self) -> list[tuple[float, str]]:
        if self.log:
            step = max(1, math.ceil((self.hi - self.lo) / 8))
            return [(10.0**e, f"1e{e}") for e in range(int(self.lo), int(self.hi) + 1, step)]
        raw = (self.hi - self.lo) / 5
        mag = 10 ** math.floor(math.log10(raw))
        step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
        first = math.ceil(self.lo / step) * step
        n = int((self.hi - first) / step + 1e-9) + 1
        return [(first + i * step, _num(first + i * step)) for i in range(n)]


def line_chart(
    title: str,
    series: Sequence[Series],
    *,
    x_label: str,
    y_label: str,
    x_log: bool = False,
    y_log: bool = True,
    categories: Sequence[str] | None = None,
    width: int = 640,
    height: int = 320,
    x_ticks: Sequence[tuple[float, str]] | None = None,
) -> str:
    """A line chart with markers; with ``categories`` the x values are indices into them; ``x_ticks``
    replaces the automatic x tick labels (e.g. dates)."""
    legend_w = 230
    left, right, top, bottom = 70, legend_w + 10, 34, 48
    xs = [p[0] for s in series for p in s.points]
    ys = [p[1] for s in series for p in s.points]
    if categories is not None:
        xa = _Axis([-0.5, len(categories) - 0.5], False, left, width - right)
        xa.lo, xa.hi = -0.5, len(categories) - 0.5
    else:
        xa = _Axis(xs, x_log, left, width - right)
    ya = _Axis(ys, y_log, height - bottom, top)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{_esc(title)}" font-family="sans-serif" '
        'font-size="11">',
        f'<text x="{left}" y="18" font-size="13" font-weight="bold">{_esc(title)}</text>',
    ]
    for v, lab in ya.ticks():
        py = ya(v)
        out.append(f'<line x1="{left}" y1="{py:.1f}" x2="{width - right}" y2="{py:.1f}" stroke="#e3e3e3"/>')
        out.append(f'<text x="{left - 5}" y="{py + 4:.1f}" text-anchor="end">{_esc(lab)}</text>')
    xticks = list(enumerate(categories)) if categories is not None else list(x_ticks or xa.ticks())
    for v, lab in xticks:
        px = xa(v)
        out.append(
            f'<line x1="{px:.1f}" y1="{height - bottom}" x2="{px:.1f}" y2="{height - bottom + 4}" '
            'stroke="black"/>'
        )
        out.append(
            f'<text x="{px:.1f}" y="{height - bottom + 16}" text-anchor="middle">{_esc(str(lab))}</text>'
        )
    out.append(
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" '
        'stroke="black"/>'
    )
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="black"/>')
    out.append(
        f'<text x="{(left + width - right) / 2:.0f}" y="{height - 8}" text-anchor="middle">'
        f"{_esc(x_label)}</text>"
    )
    mid = (top + height - bottom) / 2
    out.append(
        f'<text x="14" y="{mid:.0f}" transform="rotate(-90 14 {mid:.0f})" text-anchor="middle">'
        f"{_esc(y_label)}</text>"
    )
    for i, s in enumerate(series):
        c = COLORS[i % len(COLORS)]
        pts = [(xa(x), ya(y), tip) for x, y, tip in s.points if xa.ok(x) and ya.ok(y)]
        dash = ' stroke-dasharray="5 3"' if s.dashed else ""
        if len(pts) > 1:
            coords = " ".join(f"{px:.1f},{py:.1f}" for px, py, _ in pts)
            out.append(
                f'<polyline class="series" fill="none" stroke="{c}" stroke-width="1.6"{dash} '
                f'points="{coords}"/>'
            )
        if len(pts) <= 80:
            for px, py, tip in pts:
                out.append(
                    f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.6" fill="{c}"><title>'
                    f"{_esc(s.label)}: {_esc(tip)}</title></circle>"
                )
        ly = top + 14 * i + 8
        if ly < height - 10:
            out.append(
                f'<line x1="{width - legend_w}" y1="{ly - 4}" x2="{width - legend_w + 16}" y2="{ly - 4}" '
                f'stroke="{c}" stroke-width="2"{dash}/>'
            )
            out.append(f'<text x="{width - legend_w + 20}" y="{ly}">{_esc(s.label[:38])}</text>')
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(
    title: str,
    bars: Sequence[tuple[str, float, str]],
    *,
    x_label: str,
    width: int = 640,
    ref: float | None = None,
) -> str:
    """Horizontal bars (label, value, hover text), linear scale from 0; ``ref`` draws a dashed marker."""
    left, right, top, row = 250, 60, 34, 16
    height = top + row * max(1, len(bars)) + 40
    vmax = max([v for _, v, _ in bars if math.isfinite(v)] + [ref or 0.0, 1e-12])
    scale = (width - left - right) / vmax
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{_esc(title)}" font-family="sans-serif" '
        'font-size="11">',
        f'<text x="10" y="18" font-size="13" font-weight="bold">{_esc(title)}</text>',
    ]
    for i, (label, v, tip) in enumerate(bars):
        y = top + i * row
        w = v * scale if math.isfinite(v) and v > 0 else 0.0
        c = COLORS[0]
        out.append(f'<text x="{left - 6}" y="{y + 11}" text-anchor="end">{_esc(label[:40])}</text>')
        out.append(
            f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{row - 4}" fill="{c}">'
            f"<title>{_esc(label)}: {_esc(tip)}</title></rect>"
        )
        out.append(f'<text x="{left + w + 4:.1f}" y="{y + 11}">{_num(v)}</text>')
    base = top + row * max(1, len(bars))
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{base}" stroke="black"/>')
    if ref is not None:
        rx = left + ref * scale
        out.append(
            f'<line x1="{rx:.1f}" y1="{top}" x2="{rx:.1f}" y2="{base}" stroke="#555" stroke-dasharray="4 3"/>'
        )
        out.append(f'<text x="{rx:.1f}" y="{base + 14}" text-anchor="middle">{_num(ref)}</text>')
    out.append(
        f'<text x="{(left + width - right) / 2:.0f}" y="{base + 30}" text-anchor="middle">'
        f"{_esc(x_label)}</text>"
    )
    out.append("</svg>")
    return "\n".join(out)
