"""Error against position over long sequences: does a kernel drift as T grows?

``profile(variant, op, T, ...)`` runs one long case (B = 1) and reports, per block of positions,
the relative RMS error of ``y`` against the float64 oracle (in units of the rounding floor too)
and the RMS of the exact output, so growth of the error (or of the state) shows where it starts.
``svg(...)`` draws the profiles of several variants on one log-scale chart, written without any
plotting library. ``python -m wkvbench drift`` drives both.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import numpy as np

from wkvkernels.base import KernelVariant, availability
from wkvkernels.cases import Case, Shape
from wkvkernels.ops import default_state, round_to

from ..judge.check import Checker
from ..judge.metrics import UNIT_ROUNDOFF


@dataclass
class Profile:
    variant: str
    case: Case
    block: int
    positions: list[int] = field(default_factory=list)  # first position of each block
    rel: list[float] = field(default_factory=list)  # relative RMS error of y in the block
    floor_x: list[float] = field(default_factory=list)
    ref_rms: list[float] = field(default_factory=list)
    skipped: str = ""

    def as_dict(self) -> dict:
        return {"variant": self.variant, "case": self.case.id, "block": self.block, "positions": self.positions,
                "rel": self.rel, "floor_x": self.floor_x, "ref_rms": self.ref_rms, "skipped": self.skipped}

    @property
    def growth(self) -> float:
        """Error of the last quarter over the first quarter (1 = no drift; NaN when nothing ran)."""
        if not self.rel:
            return float("nan")
        q = max(1, len(self.rel) // 4)
        a, b = np.mean(self.rel[:q]), np.mean(self.rel[-q:])
        return float(b / a) if a > 0 else float("inf")


def profile(variant: KernelVariant, op: str, T: int, dtype: str = "fp32", domain: str = "model",
            N: int = 64, blocks: int = 64, seed: int = 0, checker: Checker | None = None) -> Profile:
    checker = checker or Checker()
    case = Case(op, domain, Shape(1, T, 1, N, h0=True), dtype, seed)
    block = max(1, T // blocks)
    prof = Profile(variant.name, case, block)
    av = availability(variant.name)
    av = variant.supports(case) if av else av
    if not av:
        prof.skipped = av.reason or ""
        return prof
    inputs = checker.inputs(case)
    eff = variant.effective_inputs(inputs, dtype)
    ref = checker.oracle(op, {**default_state(op, eff), **eff})["y"]
    out = variant.to_canonical(variant.run(variant.prepare(dict(inputs), case)))["y"]
    for s in range(0, T, block):
        r, o = ref[:, s : s + block], out[:, s : s + block]
        norm = float(np.linalg.norm(r))
        rel = float(np.linalg.norm(o - r) / norm) if norm > 0 else 0.0
        fl = float(np.linalg.norm(round_to(r, dtype) - r) / norm) if norm > 0 else 0.0
        prof.positions.append(s)
        prof.rel.append(rel)
        prof.floor_x.append(rel / max(fl, UNIT_ROUNDOFF[dtype] * 1e-2))
        prof.ref_rms.append(norm / math.sqrt(r.size))
    return prof


_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def svg(profiles: list[Profile], title: str, width: int = 900, height: int = 420) -> str:
    """A log-scale line chart of relative error against position, one line per variant."""
    ps = [p for p in profiles if p.rel]
    vals = [v for p in ps for v in p.rel if v > 0]
    lo, hi = (math.floor(math.log10(min(vals))), math.ceil(math.log10(max(vals)))) if vals else (-8, 0)
    hi = max(hi, lo + 1)
    T = max((p.case.shape.T for p in ps), default=1)
    L, R, Tm, B = 70, 220, 40, 50
    def x(pos):
        return L + (width - L - R) * pos / T

    def y(v):
        return Tm + (height - Tm - B) * (hi - math.log10(max(v, 10.0 ** lo))) / (hi - lo)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<text x="{L}" y="20" font-size="14">{html.escape(title)}</text>',
           f'<line x1="{L}" y1="{height - B}" x2="{width - R}" y2="{height - B}" stroke="black"/>',
           f'<line x1="{L}" y1="{Tm}" x2="{L}" y2="{height - B}" stroke="black"/>',
           f'<text x="{(L + width - R) / 2}" y="{height - 12}" text-anchor="middle">position t (T = {T})</text>',
           f'<text x="14" y="{(Tm + height - B) / 2}" transform="rotate(-90 14 {(Tm + height - B) / 2})" '
           'text-anchor="middle">relative RMS error of y per block</text>']
    for e in range(lo, hi + 1):
        out.append(f'<line x1="{L - 4}" y1="{y(10.0**e):.1f}" x2="{width - R}" y2="{y(10.0**e):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 6}" y="{y(10.0**e) + 4:.1f}" text-anchor="end">1e{e}</text>')
    for i in range(5):
        pos = T * i // 4
        out.append(f'<text x="{x(pos):.1f}" y="{height - B + 16}" text-anchor="middle">{pos}</text>')
    for i, p in enumerate(ps):
        c = _COLORS[i % len(_COLORS)]
        pts = " ".join(f"{x(s + p.block / 2):.1f},{y(v):.1f}" for s, v in zip(p.positions, p.rel))
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5" points="{pts}"/>')
        out.append(f'<text x="{width - R + 8}" y="{Tm + 16 * i + 10}" fill="{c}">'
                   f'{html.escape(p.variant)} ({p.case.dtype}) x{p.growth:.2g}</text>')
    out.append("</svg>")
    return "\n".join(out)
