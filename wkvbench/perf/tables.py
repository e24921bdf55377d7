"""The bench rows as tables: a rich table for the terminal (``bench_table``) and a Markdown one for a
README or a pull-request comment (``markdown_table``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..judge.check import contract_note
from ..results.model import SYNC_MODES
from .bench import SHAPE_SETS

if TYPE_CHECKING:
    from .roofline import Ceilings


def _ms(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1e3:.1f} us" if x < 1 else f"{x:.3f} ms"


def bench_table(rows: list[dict], ceilings: Ceilings | None):
    """One rich table: median (IQR), n, GB/s, TFLOP/s, % of roofline; reasons for the rest."""
    from rich.table import Table

    title = "wkvbench bench: device time (median, IQR) vs the roofline"
    if rows and all(r.get("mode") in SYNC_MODES for r in rows if r["status"] == "OK"):
        title = "wkvbench bench: time per call around the framework's synchronization (median, IQR)"
    if ceilings:
        title += (f"  [copy {ceilings.copy_gbps / 1e3:.2f} TB/s, bf16 {ceilings.matmul_bf16_tflops:.0f} / "
                  f"fp32 {ceilings.matmul_fp32_tflops:.0f} TFLOP/s]")
    t = Table(title=title)
    for col, just in (("set", "left"), ("variant", "left"), ("dtype", "left"), ("shape", "left"),
                      ("median", "right"), ("IQR", "right"), ("n", "right"), ("GB/s", "right"),
                      ("TFLOP/s", "right"), ("% of roofline", "right"), ("note", "left")):
        t.add_column(col, justify=just, overflow="fold")
    order = {s: i for i, s in enumerate(SHAPE_SETS)}
    for r in sorted(rows, key=lambda r: (order.get(r["shape_set"], 99), r["op"], r.get("median_ms") or 1e99)):
        if r["status"] == "OK":
            note = ("[yellow]throttled[/yellow] " if r.get("throttled") else "") + (
                f"{r['outliers']} outliers" if r.get("outliers") else "") + (
                f" host time around {r['mode']} (no device events)" if r.get("mode") in SYNC_MODES else "")
            if contract := contract_note((r.get("verify") or {}).get("state_precision")):
                note += f"verified ({contract}) "
            if size := r.get("at_size"):  # judged at this very shape (wkvbench.perf.at_size)
                worst = max((size.get("floor_x") or {}).values(), default=None)
                colour = "green" if size["status"] in ("PASS", "XFAIL") else "red"
                note += (f" [{colour}]at size {size['status']}[/{colour}]"
                         + (f" {worst:.3g}x floor" if worst is not None else ""))
            t.add_row(r["shape_set"], r["variant"], r["dtype"], r["shape"], _ms(r["median_ms"]), _ms(r["iqr_ms"]),
                      str(r["n"]), f"{r['gbps']:.0f}", f"{r['tflops']:.2f}",
                      f"{r['pct_of_floor']:.1f}" if r.get("pct_of_floor") is not None else "-", note)
        else:
            colour = {"SKIP": "yellow", "UNVERIFIED": "magenta"}.get(r["status"], "red")
            t.add_row(r["shape_set"], r["variant"], r["dtype"], r["shape"], f"[{colour}]{r['status']}[/{colour}]",
                      "", "", "", "", "", r.get("reason", "")[:160])
    return t


def markdown_table(rows: list[dict], sets: tuple[str, ...] | None = None) -> str:
    """README/PR-comment table of the OK rows: median (IQR), n, GB/s, TFLOP/s, % of roofline, x roofline time."""
    order = {s: i for i, s in enumerate(SHAPE_SETS)}
    lines = ["| set | shape | variant | dtype | median | IQR | n | GB/s | TFLOP/s | % of roofline | x roofline time |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    ok = [r for r in rows if r["status"] == "OK" and (not sets or r["shape_set"] in sets)]
    for r in sorted(ok, key=lambda r: (order.get(r["shape_set"], 99), r["op"], r["median_ms"])):
        lines.append(f"| {r['shape_set']} | {r['op']} {r['shape']} | {r['variant']} | {r['dtype']} | "
                     f"{_ms(r['median_ms'])} | {_ms(r['iqr_ms'])} | {r['n']} | {r['gbps']:.0f} | {r['tflops']:.2f} | "
                     f"{r['pct_of_floor']:.1f} | {r['x_floor']:.1f} |")
    return "\n".join(lines)


def _verdict(e) -> str:
    if not e.timed:
        return ""
    worst = f" {e.worst_tensor} {e.worst_floor_x:.3g}x floor" if e.worst_floor_x is not None else ""
    return f"{e.verdict} {e.where}{worst}".strip() + (f" ({e.contract})" if e.contract else "")


def side_by_side_tables(rows: list[dict]) -> list:
    """One small rich table per operator, shape and dtype (``compare.side_by_side``): every implementation,
    fastest first, with its median (IQR), % of roofline, time over the fastest verified one, and
    its verdict (at its own shape where judged there); the rows not timed last, with their reason."""
    from rich.table import Table

    from ..results.compare import side_by_side

    tables = []
    for c in side_by_side(rows, tuple(SHAPE_SETS)):
        best = c.fastest
        title = (f"{c.op} {c.shape} {c.dtype}  [{c.shape_set}]"
                 + (f"  fastest verified: {best.variant}" if best else "  no verified implementation timed"))
        t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
        for col, just in (("#", "right"), ("implementation", "left"), ("median", "right"), ("IQR", "right"),
                          ("% of roofline", "right"), ("x fastest", "right"), ("verdict", "left")):
            t.add_column(col, justify=just, overflow="fold")
        for i, e in enumerate(c.entries, 1):
            if e.timed:
                colour = "green" if e.verified else "red"
                ratio = c.ratio(e)
                t.add_row(str(i), e.variant, _ms(e.median_ms), _ms(e.iqr_ms),
                          f"{e.pct_of_floor:.1f}" if e.pct_of_floor is not None else "-",
                          f"{ratio:.2f}" if ratio is not None else "-", f"[{colour}]{_verdict(e)}[/{colour}]")
            else:
                colour = {"SKIP": "yellow", "UNVERIFIED": "magenta"}.get(e.status, "red")
                t.add_row("", e.variant, f"[{colour}]{e.status}[/{colour}]", "", "", "", e.reason[:120])
        tables.append(t)
    return tables


def side_by_side_markdown(rows: list[dict]) -> str:
    """The side-by-side tables in Markdown (a README, a pull-request comment, a results README)."""
    from ..results.compare import side_by_side

    out = []
    for c in side_by_side(rows, tuple(SHAPE_SETS)):
        best = c.fastest
        out += [f"**{c.op} `{c.shape}` {c.dtype}** ({c.shape_set}"
                + (f"; fastest verified: `{best.variant}`)" if best else "; no verified implementation timed)"),
                "", "| # | implementation | median | IQR | % of roofline | x fastest | verdict |",
                "| ---: | --- | ---: | ---: | ---: | ---: | --- |"]
        for i, e in enumerate(c.entries, 1):
            if e.timed:
                ratio = c.ratio(e)
                out.append(f"| {i} | `{e.variant}` | {_ms(e.median_ms)} | {_ms(e.iqr_ms)} | "
                           f"{e.pct_of_floor:.1f} | {f'{ratio:.2f}' if ratio is not None else '-'} | {_verdict(e)} |"
                           if e.pct_of_floor is not None else
                           f"| {i} | `{e.variant}` | {_ms(e.median_ms)} | {_ms(e.iqr_ms)} | - | - | {_verdict(e)} |")
            else:
                out.append(f"|  | `{e.variant}` | {e.status} |  |  |  | {e.reason[:160]} |")
        out.append("")
    return "\n".join(out)
