"""The HTML report (``python -m wkvbench report``): well-formed, complete, self-contained, deterministic,
with plots (in a browser: test_report_browser.py; the GPU runs section: test_report_runs.py).

Inputs: the synthetic fixture under ``suites/data/report/results`` (a verify/1 file, a partial
stream, a bench/1 file, a drift profile, asv results of two machines) and the committed results
under ``reports/`` (thousands of rows from the CPU and H200 runs).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from suites.unit.report_pages import (
    FIXTURE,
    REPO,
    _chart_data,
    _parse,
    detail_pages,
    joined,
    landing_page,
    section,
)
from wkvbench.report import DETAILS, DETAILS_DIR, PLOTLY, ReportInputError, build, reproduce
from wkvbench.report.asv import history
from wkvbench.report.charts import plotly_js
from wkvbench.report.current import verify_groups
from wkvbench.results.committed import VerifyRun, load


def test_the_tag_checker_catches_unbalanced_html():
    assert _parse("<div><p>x</div>").errors
    assert _parse("<div><span>x</span>").stack == ["div"]
    assert not _parse("<div><br><svg><circle r='1'/></svg></div>").errors


@pytest.mark.parametrize("page", ["fixture_page", "committed_page"])
def test_html_parses_with_balanced_tags(page, request):
    details, _, _ = request.getfixturevalue(page)
    pages = detail_pages(details)
    assert len(pages) >= 3  # details.html, a machine's performance, its rows
    for name, (text, tree) in pages.items():
        assert text.startswith("<!DOCTYPE html>"), name
        assert not tree.errors, (name, tree.errors[:5])
        assert tree.stack == [], f"{name} unclosed: {tree.stack}"


@pytest.mark.parametrize("page", ["fixture_page", "committed_page"])
def test_every_section_is_rendered(page, request):
    """details.html: correctness, error plots, the index of the machines' pages, GPU runs, history, provenance;
    a machine's page: its performance; a machine and operator's page: its rows. Each has the filters."""
    details, text, tree = request.getfixturevalue(page)
    for sec in ("correctness", "errors", "machines", "runs", "history", "provenance", "filters"):
        assert sec in tree.ids, sec
    assert "performance" not in tree.ids and "rows" not in tree.ids  # loaded on demand, from their own pages
    assert "matrix" in tree.tables and "machines" in tree.tables
    pages = detail_pages(details)
    perf = [t for n, (_, t) in pages.items() if "performance" in t.ids]
    rows = [t for n, (_, t) in pages.items() if "rows" in t.ids]
    assert perf and rows and len(perf) + len(rows) + 1 == len(pages)
    assert all("filters" in t.ids and "perf" in t.tables for t in perf if t.rows)
    assert all("filters" in t.ids and "f-text" in t.ids and "rows" in t.tables for t in rows)
    every, _ = joined(details)
    assert "No verify results" not in text and "No <code>wkvbench.bench/1</code> results" not in every
    assert "No drift profiles" not in text


def _verify_rows(root: Path) -> list[tuple[str, str, str]]:
    """(variant, case, verdict) of every committed row: the status, with a declared state precision beside
    it ("PASS (bf16 state, declared)"), as every table shows the contract a row was judged under."""
    from wkvbench.judge.check import verdict_label

    src = load(root)
    return [(str(r["variant"]), str(r["case"]), verdict_label(str(r["status"]), r.get("state_precision")))
            for run in src.verify for r in run.rows]


@pytest.mark.parametrize(("page", "root"), [("fixture_page", FIXTURE), ("committed_page", REPO / "reports")])
def test_every_verify_row_appears(page, root, request):
    """Every row of every verify file is on the rows page of its machine and operator, once."""
    details, _, _ = request.getfixturevalue(page)
    _, tree = joined(details)
    shown = sorted((c[1], c[2], c[0]) for cls, c in tree.rows if cls == "rows" and len(c) == 7)
    expected = sorted(_verify_rows(root))
    assert len(expected) > 0
    assert shown == expected


def test_the_committed_results_are_all_in_the_report(committed_page):
    """Every committed verify file (CPU seeds, mutants, H200, partial streams) is read: nothing is dropped."""
    _, text, _ = committed_page
    for f in ["reports/cpu/verify-cpu-seed0.json.gz", "reports/cpu/verify-cpu-seed5.json.gz",
              "reports/gpu/h200-2026-11-22/verify-gpu.json.gz", "reports/cpu/mutants-2026-11-22.json.gz",
              "reports/gpu/h200-2026-11-22/run1-verify-gpu.partial.jsonl",
              "reports/cpu/drift-wkv7-T16384.json"]:
        assert f in text, f
    assert "NVIDIA H200" in text and "42/42 mutants killed" in text
    assert "580.159.04" in text  # the driver, in the provenance block


def _earlier_split(perf: str) -> tuple[str, str, str]:
    """A performance section cut at its earlier bench runs: those a machine's page lists, or those a page of
    earlier bench runs shows (its details open); (before, the tag, from there on)."""
    m = re.search(r'<details class="earlier" id="earlier-bench"[^>]*>', perf)
    return (perf[:m.start()], m.group(0), perf[m.end():]) if m else (perf, "", "")


def test_every_bench_row_appears(fixture_page):
    _, tree = joined(fixture_page[0])
    shown = {(c[0], c[1], c[2], c[3]) for cls, c in tree.rows if cls == "perf" and len(c) >= 4}
    doc = json.loads((FIXTURE / "bench" / "bench-fixture.json").read_text())
    for r in doc["rows"]:
        assert (r["variant"], r["shape"], r["dtype"], r["status"]) in shown, r
    # the current file's rows, on the machine's page (its pages of earlier bench runs come first by name)
    machine = detail_pages(fixture_page[0])[f"{DETAILS_DIR}/nvidia-h200.html"][1]
    ok = [c for cls, c in machine.rows if cls == "perf" and len(c) == 12 and c[3] == "OK"]
    r0 = next(r for r in doc["rows"]
              if r["status"] == "OK" and r["shape"] == ok[0][1] and r["variant"] == ok[0][0])
    assert ok[0][4] == f"{r0['median_ms']:.4g}" and ok[0][9] == f"{r0['pct_of_floor']:.3g}"


def test_matrix_cells_carry_status_colour_numbers_and_skip_reasons(fixture_page):
    _, text, _ = fixture_page
    fail = re.search(r'<td class="fail" data-d="fp32" title="([^"]*)"><b>FAIL 1/1</b><br>y 3.5e\+04x</td>',
                     text)
    assert fail, "the wkv7.fla.chunk fp32 failure cell"
    assert "rel 0.00087 = 3.5e+04x floor" in fail.group(1)
    assert '<td class="xfail"' in text and '<td class="pass"' in text
    assert "dtype bf16 not supported (supports fp32)" in text  # the skip reason, in the cell
    assert "1 skipped: dtype bf16 not supported (supports fp32)" in text  # and on hover


def test_charts_are_plotly_figures_with_data(fixture_page):
    """Every details page's charts are plotly figures with points and a facet key per point; the asv
    history is drawn on history.html (one line per implementation, a chart per GPU), not on details.html."""
    details, _, _ = fixture_page
    titles, n = [], 0
    for name, (text, tree) in detail_pages(details).items():
        data = _chart_data(text)
        charts = {c["id"]: c for c in data["charts"]}
        assert sorted(charts) == sorted(tree.charts), name  # one container per figure
        for c in charts.values():  # every trace has points, and a facet key per point
            assert c["data"] and all(len(k) == len(t.get("x") or t.get("y"))
                                     for t, k in zip(c["data"], c["keys"], strict=True)), c["id"]
            assert sum(len(k) for k in c["keys"]) > 0
            n += sum(len(k) for k in c["keys"])
        titles += [c["layout"]["title"]["text"] for c in charts.values()]
    assert len(titles) >= 6 and n >= 20
    for title in ("wkv7: worst error of y vs dtype", "error vs token position", "prefill, bf16: time vs T",
                  "prefill: % of the roofline ("):
        assert any(t.startswith(title) for t in titles), (title, titles)
    assert not any("bench_wkv" in t for t in titles)  # the history is history.html's
    hist = _chart_data((details.parent / "history.html").read_text())["charts"]
    by_gpu = {c["layout"]["title"]["text"]: {t["name"] for t in c["data"]} for c in hist}
    assert "wkv7.fla.chunk" in by_gpu["wkv7 · - · NVIDIA H100: T=4096"]
    assert "wkv7.fla.chunk" in by_gpu["wkv7 · - · NVIDIA H200: T=4096"]
    assert any("2026-11-18 aaaaaaaa11" in s for c in hist for t in c["data"] for s in t["text"])


def test_plotly_js_is_shipped_once_as_a_file_and_nothing_is_fetched(fixture_page, committed_page):
    """plotly.js is one file of the site (``plotly.min.js``, from the installed plotly package), loaded by
    the details page by a relative address; the landing page loads no library; neither page names any
    other address (no CDN, no fonts)."""
    js = plotly_js()
    assert js.startswith("/**") and "plotly.js v" in js[:200] and len(js) > 1_000_000
    for details, _text, tree in (fixture_page, committed_page):
        assert (details.parent / PLOTLY).read_text() == js
        assert len(tree.charts) > 1  # several charts, one library
        pages = detail_pages(details)
        for name, (t, tr) in pages.items():
            assert "plotly.js v" not in t  # not inlined
            (src,) = [s.get("src") for s in tr.scripts if s.get("src")]
            assert (details.parent / name).parent.joinpath(str(src)).resolve() == (details.parent / PLOTLY).resolve()
        _, landing, ltree = landing_page(details)
        assert not any(s.get("src") for s in ltree.scripts) and "plotly" not in landing.lower()
        for page in (*(t for t, _ in pages.values()), landing):
            assert "<link" not in page and "@import" not in page
            external = set(re.findall(r'https?://[^"\'<> ]+', page)) - {"http://www.w3.org/2000/svg"}
            assert not external, external


def test_filter_controls_offer_every_machine_operator_and_dtype(fixture_page):
    details, text, tree = fixture_page
    opts = tree.options
    assert set(opts) >= {"f-machine", "f-op", "f-dtype"}
    assert opts["f-machine"][0] == "" and "NVIDIA H200" in opts["f-machine"]
    assert "machine not recorded" in opts["f-machine"]  # drift
    assert opts["f-op"] == ["", "wkv6", "wkv7", "gla"]  # in the operators' order
    assert opts["f-dtype"] == ["", "fp32", "bf16"]
    for name, (t, tr) in detail_pages(details).items():
        o = tr.options
        for m, op, d in _chart_data(t)["facets"]:  # every point's facets are values the controls offer
            assert m in o["f-machine"] and op in o["f-op"] and d in o["f-dtype"], name
    text, _ = joined(details)
    # the tables carry the attributes the filter script reads
    assert re.search(r'<tr class="ok" data-o="wkv7" data-d="bf16"', text)
    assert '<div class="group" data-m="NVIDIA H200">' in text and '<th data-d="fp32">fp32</th>' in text
    assert '<details class="rowsfile" data-rows-m="NVIDIA H200">' in text


def test_the_rows_of_earlier_runs_are_cut_into_pages_of_at_most_so_many_rows():
    """The H200's gdn page of earlier runs weighed 3.3 MB (13,189 rows) once a third whole run superseded the
    second (2026-11-29): the superseded files' rows go on pages of at most ``EARLIER_ROWS`` rows, in file
    order, a file never cut (one larger than that alone on its page)."""
    from wkvbench.report import earlier_parts

    views = [{"name": n, "rows": [0] * k} for n, k in (("a", 4), ("b", 3), ("c", 9), ("d", 1), ("e", 2))]
    parts = earlier_parts(views, budget=6)
    assert [[v["name"] for v in p] for p in parts] == [["a"], ["b"], ["c"], ["d", "e"]]
    assert earlier_parts([], budget=6) == []
    assert [[v["name"] for v in p] for p in earlier_parts(views, budget=100)] == [["a", "b", "c", "d", "e"]]


def test_a_machines_earlier_bench_runs_are_on_pages_of_their_own(fixture_page):
    """Shown in full on the machine's page, the H200's superseded bench files weighed 3.39 MB once a fifth
    whole run superseded the fourth (2026-11-29): the machine's page lists them, each with a link to the page
    of earlier bench runs that shows it (at most ``EARLIER_BENCH_ROWS`` rows a page), which links back."""
    from wkvbench.report import EARLIER_BENCH_ROWS

    pages = detail_pages(fixture_page[0])
    machine, _ = pages[f"{DETAILS_DIR}/nvidia-h200.html"]
    _, _, listed = _earlier_split(section(machine, "performance"))
    assert '<a href="nvidia-h200-bench-earlier.html">results/bench/bench-fixture-older.json</a>' in listed
    assert "<table" not in listed  # a list, not the file's tables
    page, tree = pages[f"{DETAILS_DIR}/nvidia-h200-bench-earlier.html"]
    now, _, shown = _earlier_split(section(page, "performance"))
    assert '<a href="nvidia-h200.html">the machine\'s page</a>' in now
    assert "bench-fixture-older.json" not in now
    assert "<h3>results/bench/bench-fixture-older.json" in shown and "shape set" in shown
    assert "<h3>results/bench/bench-fixture.json" not in shown  # the current file stays on the machine's page
    assert EARLIER_BENCH_ROWS >= 903  # a whole run's bench file, 903 rows, fits on a page with others


def test_superseded_runs_are_not_marked_current(fixture_page):
    """The fixture's older verify and bench files (same machine, same case set / shape sets) are folded
    under "earlier runs" with a superseded badge; the current matrix and charts hold the newer run only."""
    details, text, tree = fixture_page
    correctness = text[text.index('<section id="correctness"'):text.index('<section id="errors"')]
    current, earlier = correctness.split('<details class="earlier" id="earlier-runs">')
    assert "wkv7.old.kernel" not in current and "wkv7.old.kernel" in earlier
    assert "superseded by results/gpu/verify-fixture.json" in earlier and "badge current" not in earlier
    assert current.count("badge current") == 1 and "badge superseded" not in current
    assert "cut-short.partial.jsonl" in earlier and "incomplete" in earlier  # a partial stream: never current
    h200, _ = detail_pages(details)[f"{DETAILS_DIR}/nvidia-h200.html"]
    perf = section(h200, "performance")
    now, _, before = _earlier_split(perf)
    assert "bench-fixture.json" in now and "bench-fixture-older.json" not in now
    assert "bench-fixture-older.json" in before
    assert "superseded by <code>results/bench/bench-fixture.json" in before
    for t, _ in detail_pages(details).values():
        data = _chart_data(t)  # no chart point comes from a superseded run
        assert not any("old.kernel" in json.dumps(c) for c in data["charts"])
        # the older file's fla.chunk timing (9.99 ms) has a newer result: neither a chart point nor a table shows it
        assert not any(9.99 in t["y"] for c in data["charts"] for t in c["data"] if "y" in t)
    assert "9.99" not in now
    first = tree.h3[0]  # the first group of the correctness section
    assert first.startswith("NVIDIA H200 · case set gpu") and first.endswith("current")


def test_the_newest_committed_run_of_each_machine_comes_first(committed_page):
    """The committed H100 runs of 2026-11-22/23 (the ggml CRASH run among them) are superseded by the
    2026-11-25 run of the same machine and case set; the bench files likewise by the newest full bench
    (the machine's results set, a fresh run; the earlier warm-cache run of that day is superseded), and the
    H200 run of 2026-11-22 by the results set of a box of two H200s (2026-11-26)."""
    details, text, tree = committed_page
    # newer runs of other machines (the MLX CPU runs of 2026-11-25) come before the H100's groups
    h100 = [h for h in tree.h3 if h.startswith("NVIDIA H100 80GB HBM3")]
    # the newest H100 groups are the serving kernels' runs of 2026-11-27 (reports/gpu/h100-2026-11-27-serving:
    # six files of other variants, two of them explicit cases, "case set default"), then the production-
    # conventions runs of the same day (kda on the edge set, gdn/kda/gdn_wy on the gpu set); each covers less
    # than the machine's results set (a fresh run, 2026-11-26) and the boundary domains' edge run (2026-11-25),
    # so those stay current beside them
    # The nox -s gpu run of the serving packages with their bench (reports/gpu/h100-2026-11-27-serving-bench,
    # gpu set, every dtype) is the newest: it supersedes the two earlier nox -s gpu runs of the same variants
    # (reports/gpu/h100-2026-11-27-nox-gpu*) and the serving run's files it covers. Newer still (2026-11-28):
    # rwkv-fla's and vLLM's own-environment run (reports/gpu/h100-2026-11-28-own-envs, gpu set), other variants;
    # newest, vLLM's KDA in its own nox -s gpu run (reports/gpu/h100-2026-11-28-vllm-kda, gpu set). The first
    # nox -s gpu run of the serving packages (h100-2026-11-27-nox-gpu) stays current beside serving-bench: it
    # judged gdn_wy.vllm.recompute_w_u and kda.vllm.chunk, which serving-bench names only as SKIP (its vLLM
    # import failed)
    sets = ["gpu", "gpu", "gpu", "gpu", "default", "default", "edge", "gpu", "gpu", "edge", "edge"]
    for h, case_set in zip(h100, sets, strict=False):
        assert h.startswith(f"NVIDIA H100 80GB HBM3 · case set {case_set} ·") and h.endswith("current"), h
    edge = [h for h in h100 if h.startswith("NVIDIA H100 80GB HBM3 · case set edge · devices cuda")]
    assert edge and edge[0].endswith("current")
    gpu_set = [h for h in h100 if h.startswith("NVIDIA H100 80GB HBM3 · case set gpu")]
    assert gpu_set and gpu_set[0].endswith("current")
    correctness = text[text.index('<section id="correctness"'):text.index('<section id="errors"')]
    current, earlier = correctness.split('<details class="earlier" id="earlier-runs">')
    assert "reports/gpu/h100-2026-11-22/verify-ggml.json" in earlier
    assert "reports/gpu/h100-2026-11-22/verify-ggml.json" not in current
    # the H200 run of 2026-11-22 is superseded by the results set of the box of two H200s (2026-11-26)
    assert "reports/gpu/h200-2026-11-22/verify-gpu.json.gz" in earlier
    # the machine's results set (a box of four H200s, 7e78b87) is superseded by the whole command on one H200
    # (2026-11-29, d1b13ec), which covers its variants, dtypes and passes, and that run by the same
    # command's next fresh runs (54046a0, h200-2026-11-29-fresh-and-warm; af3a1e2,
    # h200-2026-11-29-forked-beside; c6a6724, h200-2026-11-29-threaded-bench; 32de7a4 on a box of four H200s
    # with its stability check, h200x4-2026-11-29-stability). FlashKDA's run of 2026-11-28 stayed current
    # beside the first, whose vLLM folder lacked FlashKDA's extension (its rows there SKIP); the second ran it
    assert "NVIDIA-H200-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0/verify.json.gz" in earlier
    assert "reports/gpu/h200-2026-11-29-whole-fresh/verify.json.gz" in earlier
    assert "reports/gpu/h200-2026-11-29-fresh-and-warm/verify.json.gz" in earlier
    assert "reports/gpu/h200-2026-11-29-forked-beside/verify.json.gz" in earlier
    assert "reports/gpu/h200-2026-11-29-threaded-bench/verify.json.gz" in earlier
    assert "reports/gpu/h200x4-2026-11-29-stability/verify.json.gz" in current
    assert "reports/gpu/h200-2026-11-28-flashqla-flashkda/verify-flashkda.json.gz" in earlier
    now, before = "", ""
    for t, tr in detail_pages(details).values():
        if "performance" in tr.ids:
            cur, _, old = _earlier_split(section(t, "performance"))
            now, before = now + cur, before + old
    # the full sets of 2026-11-25 (ggml's rows in them) supersede the older ggml-only run of 2026-11-24
    # one current bench per machine, its newest full one: each machine's results set (the H100's
    # warm-cache run came before it; on the H200s, the results set of c51e5a4 came after the warm-cache
    # run)
    # (on the H200, the whole command on one H200 of 2026-11-29 has since superseded it, and its next fresh
    # runs that one, each the one before; earlier bench runs are listed there, shown on pages of their own)
    assert now.count("triton3.6.0/bench.json.gz") == 1
    # the one-GPU run of 2bf9428 (h200-2026-11-29-shared-baselines) timed every row of the four H200s' run but
    # gdn.rwkv_ops.triton_chunk's 9, which its probe race left SKIP: both are current, each for its own rows
    assert "reports/gpu/h200-2026-11-29-shared-baselines/bench.json.gz" in now
    assert "reports/gpu/h200x4-2026-11-29-stability/bench.json.gz" in now
    assert "reports/gpu/h200-2026-11-29-threaded-bench/bench.json.gz" in before
    assert "reports/gpu/h200-2026-11-29-forked-beside/bench.json.gz" in before
    assert "reports/gpu/h200-2026-11-29-fresh-and-warm/bench.json.gz" in before
    assert "reports/gpu/h200-2026-11-29-whole-fresh/bench.json.gz" in before
    # the one-variant runs of FLA's autotune order (H200, 2026-11-26 morning) came before the H200 results
    # set of c51e5a4 (that afternoon), whose shape sets hold theirs: all four are earlier
    order = "reports/gpu/h200-2026-11-26-fla-autotune-order/"
    # and a newer run of two shape sets on an H100 (the oracle's check of 2026-11-27) covers less than the
    # machine's results set: both stay current
    # the models set of 2026-11-27: FLA's (conventions) and the serving kernels' files of the same set. Rows
    # are chosen per implementation, not per file: rwkv-fla's file (3 variants of its own environment) and
    # the file of FLA's RWKV-7 chunk alone, timed just before it, share none, so both stay current (issue 46;
    # under the old rule, which counted variants, the first hid the second)
    # and the serving kernels' bench inside nox -s gpu (2026-11-27): implementations no other file has; its
    # first attempt's two ERROR rows stay current too (FlashInfer's multi-token decode at T = 4096: the newer
    # file's rows there are SKIP, which keeps an older result)
    # rwkv-fla's and vLLM's bench inside nox -s gpu (2026-11-28) times rwkv-fla's models-set rows again, every
    # one of them: its file of 2026-11-27 is superseded, and the new one is current; vLLM's KDA bench inside
    # nox -s gpu (2026-11-28) is current too. The profiled bench of that day is in a diagnostics/ folder, which
    # the report does not read: its timings ran under cProfile
    # and FlashKDA's and FlashQLA's benches on an H200 (2026-11-28): implementations no other file has, current
    # (FlashKDA's: the whole runs of 2026-11-29 name its rows only as SKIP; it takes bf16, K = V = 128)
    assert now.count("badge current") == 12
    assert "reports/gpu/h200-2026-11-28-flashqla-flashkda/bench-flashkda.json.gz" in now
    # FlashQLA's bench of that day is superseded by the whole command on one H200 (2026-11-29), which timed its row
    assert "reports/gpu/h200-2026-11-28-flashqla-flashkda/bench-flashqla.json.gz" in before
    assert "reports/gpu/h100-2026-11-28-vllm-kda/bench.json.gz" in now
    assert "h100-2026-11-28-at-size-profile" not in now + before
    assert "reports/gpu/h100-2026-11-28-own-envs/bench.json.gz" in now
    assert "reports/gpu/h100-2026-11-27-serving-bench/bench.json.gz" in now
    assert "reports/gpu/h100-2026-11-27-serving-bench/bench-first-attempt.json" in now
    assert "reports/gpu/h100-2026-11-27-serving/bench-models-wkv7.json" in now
    assert "reports/gpu/h100-2026-11-27-serving/bench-models-rwkvfla.json" in before
    assert "reports/gpu/h100-2026-11-27-oracle-at-size/bench.json" in now
    assert "reports/gpu/h100-2026-11-27-conventions/bench-models.json" in now
    for f in ("long-first.json", "head128-first.json", "head128-after-long.json", "head128-after-its-gate.json"):
        assert order + f in before and order + f not in now
    assert "h100-2026-11-25-warm-caches/bench.json.gz" in before
    assert "h200x2-2026-11-26-warm-caches/bench.json.gz" in before
    assert "NVIDIA-H200-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0/bench.json.gz" in before
    assert "reports/gpu/h100-2026-11-24-ggml/bench.json" not in now
    assert "reports/gpu/h100-2026-11-24-ggml/bench.json" in before
    assert "reports/gpu/h100-2026-11-23/bench-bf16.json.gz" in before


def _doc(gpu: str, when: str | None, case_set: str = "gpu", kinds: tuple[str, ...] = ("forward",),
         seed: int = 0) -> VerifyRun:
    prov = {"gpu": {"name": gpu}, **({"timestamp": when} if when else {})}
    doc = {"schema": "wkvbench.verify/1", "provenance": prov,
           "selection": {"case_set": case_set, "seed": seed}}
    rows = [{"variant": "wkv7.x.y", "case": "wkv7/model/B1-T1-H1-N64/fp32/s0", "status": "PASS", "kind": k}
            for k in kinds]
    return VerifyRun(f"{gpu}-{when}-{case_set}-{'+'.join(kinds)}-{seed}.json", doc, rows)


def test_supersession_rules():
    old = _doc("H100", "2026-11-20T00:00:00+00:00")
    new = _doc("H100", "2026-11-21T00:00:00+00:00", kinds=("forward", "backward"))
    other_gpu = _doc("H200", "2026-11-19T00:00:00+00:00")
    other_set = _doc("H100", "2026-11-19T00:00:00+00:00", case_set="edge")
    back_only_newer = _doc("H100", "2026-11-22T00:00:00+00:00", kinds=("backward",))
    undated = _doc("H100", None)
    partial = VerifyRun("p.partial.jsonl", {}, new.rows, partial=True)
    groups = verify_groups([old, new, other_gpu, other_set, back_only_newer, undated, partial])
    state = {g.runs[0].path: g for g in groups}
    # covered by a newer run of the same machine and case set
    assert state[old.path].superseded_by == new.path and not state[old.path].current
    assert state[undated.path].superseded_by is not None  # no date: older than any dated run
    # the newest run does not cover forward, so the run before it stays current
    assert state[new.path].current and state[back_only_newer.path].current
    assert state[other_gpu.path].current and state[other_set.path].current
    assert not state[partial.path].current and state[partial.path].superseded_by is None
    order = [g.runs[0].path for g in groups]
    assert order[:4] == [back_only_newer.path, new.path, other_set.path, other_gpu.path]  # newest first
    # seeds of one selection are one group, current together
    seeds = verify_groups([_doc("CPU", f"2026-11-20T00:0{i}:00+00:00", seed=i) for i in range(3)])
    assert len(seeds) == 1 and seeds[0].current and len(seeds[0].runs) == 3


def test_a_newer_run_where_a_variant_reads_skip_alone_does_not_supersede_its_results():
    """A run judged a variant that a newer run of the machine only names as SKIP (its package not installed
    there): the newer run covers less, so both stay current. A variant no newer run names at all (renamed or
    retired) does not keep the older run current."""
    old = _doc("H200", "2026-11-28T00:00:00+00:00")
    old.rows.append({"variant": "kda.p.k", "case": "kda/model/B1-T1-H1-N128/bf16/s0", "status": "FAIL",
                     "kind": "forward"})
    new = _doc("H200", "2026-11-29T00:00:00+00:00")
    new.rows.append({"variant": "kda.p.k", "case": "kda/model/B1-T1-H1-N128/bf16/s0", "status": "SKIP",
                     "kind": "forward"})
    state = {g.runs[0].path: g for g in verify_groups([old, new])}
    assert state[old.path].current and state[new.path].current
    del new.rows[-1]  # kda.p.k gone from every newer run: retired, the newer run covers what is left
    state = {g.runs[0].path: g for g in verify_groups([old, new])}
    assert state[old.path].superseded_by == new.path


def test_names_are_escaped(tmp_path):
    """A variant, reason or path with markup is shown as text everywhere: in the tables, the titles, the
    filter options and the chart data (jinja2 autoescape; the JSON escapes < and >)."""
    evil = "wkv7.<script>alert(1)</script>.x"
    doc = json.loads((FIXTURE / "gpu" / "verify-fixture.json").read_text())
    for r in doc["results"]:
        r["variant"] = evil
        r["reason"] = '<img src=x onerror="alert(2)">'
    doc["provenance"]["gpu"]["name"] = 'GPU "<b>bold</b>"'
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "v.json").write_text(json.dumps(doc))
    out = tmp_path / "html" / "index.html"
    build(tmp_path, out)
    pages = detail_pages(out.parent / DETAILS)
    for name, (t, tr) in pages.items():
        assert "<script>alert(1)" not in t and "<img src=x" not in t and "<b>bold</b>" not in t, name
        assert len(tr.scripts) == 3 and t.count("<script") == 3  # the data, plotly.js, the filters: no other
        assert not tr.errors and tr.stack == []
    text, _ = joined(out.parent / DETAILS)
    assert "wkv7.&lt;script&gt;alert(1)&lt;/script&gt;.x" in text  # shown, escaped
    assert "&lt;img src=x onerror=&#34;alert(2)&#34;&gt;" in text
    assert any(n.startswith(f"{DETAILS_DIR}/gpu-lt-b-bold-lt-b") or "bold" in n for n in pages), list(pages)
    text = pages[DETAILS][0]
    tree = pages[DETAILS][1]
    landing = (out.parent / "index.html").read_text()
    assert "<script>alert(1)" not in landing and "<img src=x" not in landing and "<b>bold</b>" not in landing
    assert not tree.errors and tree.stack == []
    names = [t["name"] for c in _chart_data(text)["charts"] for t in c["data"]]
    assert "wkv7.&lt;script&gt;alert(1)&lt;/script&gt;.x" in names  # plotly shows entities as text
    assert 'GPU "&lt;b&gt;bold&lt;/b&gt;"' in _chart_data(text)["facets"][0][0] or any(
        '&lt;b&gt;' not in f[0] and "<b>" in f[0] for f in _chart_data(text)["facets"])


def test_provenance_and_reproduce_command():
    doc = json.loads((FIXTURE / "gpu" / "verify-fixture.json").read_text())
    cmd = reproduce(doc, "results/gpu/verify-fixture.json")
    assert cmd == ("git checkout 0123456789abcdef0123456789abcdef01234567 && "
                   "WKVBENCH_SEED=0 python -m wkvbench "
                   "verify --set gpu --output results/gpu/verify-fixture.json")
    assert reproduce({}, "x.json") == "not recorded"


def test_unknown_schema_is_refused_with_file_and_schema(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps({"schema": "wkvbench.verify/2", "results": []}))
    with pytest.raises(ReportInputError, match=r"r\.json: schema 'wkvbench\.verify/2'"):
        load(tmp_path)
    p = subprocess.run([sys.executable, "-m", "wkvbench", "report", "--results", str(tmp_path), "--output",
                        str(tmp_path / "o.html")], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "schema 'wkvbench.verify/2'" in p.stdout and "Traceback" not in p.stderr


def test_bad_inputs_end_in_a_named_message(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ReportInputError, match="bad.json: not readable as JSON"):
        load(tmp_path)
    (tmp_path / "bad.json").unlink()
    (tmp_path / "x.partial.jsonl").write_text(
        '{"variant": "a"}\n{"variant": "b", "case": "c", "status": "PASS"}\n')
    with pytest.raises(ReportInputError,
                       match=r"x\.partial\.jsonl: row 0 of 'results' is not a wkvbench\.verify/1 row"):
        load(tmp_path)
    with pytest.raises(ReportInputError, match="does not exist"):
        load(tmp_path / "missing")


def test_other_json_is_listed_as_not_read_and_partials_beside_results_are_superseded(tmp_path):
    shutil.copy(FIXTURE / "gpu" / "verify-fixture.json", tmp_path / "v.json")
    (tmp_path / "v.partial.jsonl").write_text("")
    (tmp_path / "notes.json").write_text(json.dumps({"hello": 1}))
    src = load(tmp_path)
    assert len(src.verify) == 1 and not src.verify[0].partial
    why = dict((Path(p).name, w) for p, w in src.not_read)
    assert why == {"notes.json": "not a wkvbench results file",
                   "v.partial.jsonl": "superseded by the finished v.json"}
    out = tmp_path / "html" / "index.html"
    build(tmp_path, out)
    details = (out.parent / DETAILS).read_text()
    assert "Files not read" in details and "notes.json" in details


def test_asv_history_one_series_per_machine():
    hist = history(FIXTURE / "asv" / "results")
    names = [h.benchmark for h in hist]
    assert len(hist) == 5 and "bench_wkv.time_oracle" in names
    name = "bench_wkv.TimeWkv7.time_forward(variant='wkv7.fla.chunk', T=4096)"
    h = next(h for h in hist if h.benchmark == name)
    assert sorted(h.machines) == ["h100-box (NVIDIA H100)", "h200-box (NVIDIA H200)"]
    pts = h.machines["h200-box (NVIDIA H200)"]
    assert [p.commit[:8] for p in pts] == ["aaaaaaaa", "bbbbbbbb", "cccccccc"]
    # itertools order of the flat result list: (chunk, 1024), (chunk, 4096), (fused, 1024), (fused, 4096)
    assert pts[0].value == pytest.approx(3e-4 * 1.2)


def test_asv_own_site_is_never_linked(tmp_path):
    """asv's own site loads jQuery, flot and bootstrap from CDNs (error.html offline): no page links it, even
    where one was built beside the results; history.html draws the asv results instead. The old argument
    is accepted with a DeprecationWarning."""
    shutil.copytree(FIXTURE, tmp_path / "results")
    site = tmp_path / "results" / "asv" / "html"
    site.mkdir()
    (site / "index.html").write_text("<html></html>")
    out = tmp_path / "results" / "html" / "index.html"
    s = build(tmp_path / "results", out)
    assert s.asv_site is None
    assert '<a href="history.html">' in out.read_text()
    for page in out.parent.rglob("*.html"):
        assert "asv/html" not in page.read_text(), page
    with pytest.warns(DeprecationWarning, match="no longer links asv"):
        build(tmp_path / "results", out, site)


def test_local_output_folders_are_not_part_of_the_report(tmp_path):
    """reports/results/ (verify's default output, git-ignored) stays out of the committed report."""
    for sub in ("results", "out", "gpu"):
        (tmp_path / sub).mkdir()
        shutil.copy(FIXTURE / "gpu" / "verify-fixture.json", tmp_path / sub / "v.json")
    assert [r.path for r in load(tmp_path).verify] == [f"{tmp_path.name}/gpu/v.json"]
    assert len(load(tmp_path / "results").verify) == 1  # a report of local runs: point --results there


def test_a_crashed_or_hung_case_colours_its_cell_as_a_failure():
    """CRASH and TIMEOUT rows (a worker that died or hung) are failures in the matrix, never a SKIP
    cell (the 2026-11-22 ggml CUDA run of 10 CRASH rows first read as SKIP), and named as themselves, never
    as FAIL."""
    from wkvbench.report.matrix import cell

    for status in ("CRASH", "TIMEOUT"):
        c = cell([{"variant": "gla.ggml.cuda", "case": "c", "status": status, "reason": "signal 6"}])
        assert c.cls == "fail" and c.head == f"{status} 1/1" and status in c.tip


def test_a_run_of_a_few_variants_supersedes_no_run_of_every_variant():
    from types import SimpleNamespace

    from wkvbench.report.current import bench_files

    prov = {"gpu": {"name": "NVIDIA H100 80GB HBM3", "driver": "580", "cuda": "13.0"},
            "versions": {"torch": "2.11.0", "triton": "3.6.0"}}

    def run(path, when, variants):
        rows = [{"variant": v, "shape_set": "decode", "dtype": "fp32"} for v in variants]
        return SimpleNamespace(path=path, rows=rows, doc={"provenance": {**prov, "timestamp": when}})

    full = run("full.json", "2026-11-24T10:00:00+00:00", ["a.x", "b.x", "c.ggml.cuda"])
    few = run("ggml.json", "2026-11-24T11:00:00+00:00", ["c.ggml.cuda"])
    gone = run("old.json", "2026-11-23T10:00:00+00:00", ["z.removed"])
    files = {f.run.path: f for f in bench_files([full, few, gone])}
    assert files["full.json"].current and files["ggml.json"].current
    # rows are chosen per implementation and shape: the only timing of a variant stays current, dated
    assert files["old.json"].current
