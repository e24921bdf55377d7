"""Implementations side by side (wkvbench/results/compare.py): per operator, shape and dtype, every
implementation fastest first with its time, % of the roofline floor and verdict; in the console's bench
tables and in the report."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from wkvbench.perf.tables import side_by_side_markdown, side_by_side_tables
from wkvbench.results.compare import side_by_side

MODELS = Path(__file__).resolve().parents[2] / "reports/gpu/h100-2026-11-27-conventions/bench-models.json"


def _row(variant, ms, status="OK", verdict="PASS", shape="B8-T4096-H32-N64", dtype="bf16", where="at_size",
         reason="", shape_set="prefill"):
    r = {"variant": variant, "op": variant.split(".")[0], "shape_set": shape_set, "shape": shape, "dtype": dtype,
         "status": status, "reason": reason}
    if status == "OK":
        r.update(median_ms=ms, iqr_ms=ms / 100, pct_of_floor=100 * 0.5 / ms)
        r[where] = {"status": verdict, "floor_x": {"y": 2.0, "state": 3.5}}
    return r


def test_fastest_first_and_the_fastest_verified_skips_a_fast_wrong_kernel():
    rows = [_row("wkv7.a.slow", 3.0), _row("wkv7.b.fast_wrong", 1.0, verdict="FAIL"), _row("wkv7.c.mid", 2.0),
            _row("wkv7.d.none", None, status="SKIP", reason="needs SM90"),
            _row("wkv7.a.slow", 9.0, dtype="fp32"), _row("wkv7.c.mid", 1.0, shape="B1-T1-H32-N64", shape_set="decode")]
    cs = side_by_side(rows, ("decode", "prefill"))
    assert [(c.shape_set, c.dtype) for c in cs] == [("decode", "bf16"), ("prefill", "bf16"), ("prefill", "fp32")]
    c = cs[1]
    assert [e.variant for e in c.entries] == ["wkv7.b.fast_wrong", "wkv7.c.mid", "wkv7.a.slow", "wkv7.d.none"]
    assert c.fastest.variant == "wkv7.c.mid"  # the FAIL row is faster but not verified
    assert c.ratio(c.entries[2]) == 1.5 and c.ratio(c.entries[0]) == 0.5 and c.ratio(c.entries[3]) is None
    assert c.entries[0].verdict == "FAIL" and c.entries[0].where == "at size"
    assert (c.entries[0].worst_tensor, c.entries[0].worst_floor_x) == ("state", 3.5)
    assert c.entries[3].reason == "needs SM90" and not c.entries[3].timed


def test_a_row_judged_only_on_its_gate_case_says_so():
    (c,) = side_by_side([_row("gdn.x.k", 1.0, where="verify")])
    assert (c.entries[0].verdict, c.entries[0].where) == ("PASS", "gate case")


def test_the_console_and_markdown_tables_of_a_committed_run():
    rows = json.loads(MODELS.read_text())["rows"]
    tables = side_by_side_tables(rows)
    assert len(tables) == len(side_by_side(rows))
    buf = io.StringIO()
    con = Console(file=buf, width=200, color_system=None)
    for t in tables:
        con.print(t)
    text = buf.getvalue()
    assert "gdn B8-T8192-H16-HV32-N128-varlen-raw-qkn-h0 bf16" in text and "fastest verified: gdn.fla.chunk" in text
    assert "PASS at size" in text and "takes no state pool" in text
    md = side_by_side_markdown(rows)
    assert "| 1 | `kda.fla.chunk` | 1.202 ms |" in md


def test_the_report_shows_them(tmp_path):
    from wkvbench.report.perf import side_by_side_views

    rows = [r for r in json.loads(MODELS.read_text())["rows"] if r["shape_set"] == "kimi-linear.prefill-8k"]
    (v,) = side_by_side_views(rows)
    assert v.title.startswith("kda B8-T8192-H32-N128-varlen-raw-qkn-h0 bf16 (moonshotai/Kimi-Linear-48B-A3B")
    assert "fastest verified kda.fla.chunk, 1.202 ms" in v.title
    assert v.table.rows[0][:3] == ("1", "kda.fla.chunk", "1.202")
