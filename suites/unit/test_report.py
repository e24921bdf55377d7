"""The HTML report (``python -m wkvbench report``): well-formed, complete, self-contained, deterministic,
with plots, rendered by headless Chromium into a page that is not blank.

Inputs: the synthetic fixture under ``suites/data/report/results`` (a verify/1 file, a partial
stream, a bench/1 file, a drift profile, asv results of two machines) and the committed results
under ``reports/`` (thousands of rows from the CPU and H200 runs).
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import zlib
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from wkvbench.report import ReportInputError, build, reproduce
from wkvbench.report.asv import history
from wkvbench.report.browser import dump_dom, find_chromium, png_stats, read_png, screenshot
from wkvbench.report.sources import load

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "suites" / "data" / "report" / "results"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Tree(HTMLParser):
    """Checks that every element is closed in order; collects table rows (cell texts) and chart data."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.rows: list[tuple[str, list[str]]] = []  # (class of the enclosing table, cell texts)
        self.tables: list[str] = []
        self.svgs = 0
        self.marks = 0  # polylines with points, circles, rects: the data of the charts
        self._cells: list[str] | None = None
        self._has_td = False
        self._text: list[str] = []
        self.titles: list[str] = []
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.tables.append(a.get("class") or "")
        if tag == "tr":
            self._cells, self._has_td = [], False
        if tag == "td":
            self._has_td = True
        if tag in ("td", "th"):
            self._text = []
        if tag == "svg":
            self.svgs += 1
        if (tag == "polyline" and a.get("points")) or tag in ("circle", "rect"):
            self.marks += 1
        if tag == "title" and "svg" in self.stack:
            self._in_title, self._text = True, []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if (tag == "polyline" and a.get("points")) or tag in ("circle", "rect"):
            self.marks += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            top = self.stack[-1] if self.stack else None
            self.errors.append(f"</{tag}> at {self.getpos()} closes <{top}>")
            return
        self.stack.pop()
        if tag in ("td", "th") and self._cells is not None:
            self._cells.append("".join(self._text).strip())
        if tag == "tr" and self._cells is not None:
            if self._has_td:  # data rows only, not headers
                self.rows.append((self.tables[-1] if self.tables else "", self._cells))
            self._cells = None
        if tag == "title" and self._in_title:
            self.titles.append("".join(self._text))
            self._in_title = False

    def handle_data(self, data: str) -> None:
        self._text.append(data)


def _parse(text: str) -> _Tree:
    t = _Tree()
    t.feed(text)
    t.close()
    return t


@pytest.fixture(scope="module")
def fixture_page(tmp_path_factory) -> tuple[Path, str, _Tree]:
    out = tmp_path_factory.mktemp("report") / "index.html"
    build(FIXTURE, out)
    text = out.read_text()
    return out, text, _parse(text)


@pytest.fixture(scope="module")
def committed_page(tmp_path_factory) -> tuple[Path, str, _Tree]:
    out = tmp_path_factory.mktemp("committed") / "index.html"
    build(REPO / "reports", out)
    text = out.read_text()
    return out, text, _parse(text)


def test_the_tag_checker_catches_unbalanced_html():
    assert _parse("<div><p>x</div>").errors
    assert _parse("<div><span>x</span>").stack == ["div"]
    assert not _parse("<div><br><svg><circle r='1'/></svg></div>").errors


@pytest.mark.parametrize("page", ["fixture_page", "committed_page"])
def test_html_parses_with_balanced_tags(page, request):
    _, text, tree = request.getfixturevalue(page)
    assert text.startswith("<!DOCTYPE html>")
    assert not tree.errors, tree.errors[:5]
    assert tree.stack == [], f"unclosed: {tree.stack}"


def _verify_rows(root: Path) -> list[tuple[str, str, str]]:
    src = load(root)
    return [(str(r["variant"]), str(r["case"]), str(r["status"])) for run in src.verify for r in run.rows]


@pytest.mark.parametrize(("page", "root"), [("fixture_page", FIXTURE), ("committed_page", REPO / "reports")])
def test_every_verify_row_appears(page, root, request):
    _, _, tree = request.getfixturevalue(page)
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


def test_every_bench_row_appears(fixture_page):
    _, _, tree = fixture_page
    shown = {(c[0], c[1], c[2], c[3]) for cls, c in tree.rows if cls == "perf" and len(c) >= 4}
    doc = json.loads((FIXTURE / "bench" / "bench-fixture.json").read_text())
    for r in doc["rows"]:
        assert (r["variant"], r["shape"], r["dtype"], r["status"]) in shown, r
    ok = [c for cls, c in fixture_page[2].rows if cls == "perf" and len(c) == 12 and c[3] == "OK"]
    r0 = next(r for r in doc["rows"]
              if r["status"] == "OK" and r["shape"] == ok[0][1] and r["variant"] == ok[0][0])
    assert ok[0][4] == f"{r0['median_ms']:.4g}" and ok[0][9] == f"{r0['pct_of_floor']:.3g}"


def test_matrix_cells_carry_status_colour_numbers_and_skip_reasons(fixture_page):
    _, text, _ = fixture_page
    fail = re.search(r'<td class="fail" title="([^"]*)"><b>FAIL 1/1</b><br>y 3.5e\+04x</td>', text)
    assert fail, "the wkv7.fla.chunk fp32 failure cell"
    assert "rel 0.00087 = 3.5e+04x floor" in fail.group(1)
    assert '<td class="xfail"' in text and '<td class="pass"' in text
    assert "dtype bf16 not supported (supports fp32)" in text  # the skip reason, in the cell
    assert "1 skipped: dtype bf16 not supported (supports fp32)" in text  # and on hover


def test_plots_are_present_with_data(fixture_page):
    _, text, tree = fixture_page
    assert tree.svgs >= 10 and tree.marks >= 50
    for title in ("wkv7: worst error of y vs dtype", "error vs token position", "prefill, bf16: time vs T",
                  "prefill: % of the roofline floor",
                  "bench_wkv.TimeWkv7.time_forward(variant=&#x27;wkv7.fla.chunk&#x27;, T=1024)"):
        assert title in text, title
    # history: one line per machine/GPU, points dated and tagged with their commit
    assert "h100-box (NVIDIA H100)" in text and "h200-box (NVIDIA H200)" in text
    assert any("2026-11-18 aaaaaaaa11" in t for t in tree.titles)


def test_report_is_self_contained(fixture_page):
    _, text, _ = fixture_page
    assert "<link" not in text and " src=" not in text and "@import" not in text and "url(" not in text
    external = set(re.findall(r'https?://[^"\'<> ]+', text)) - {"http://www.w3.org/2000/svg"}
    assert not external


def test_output_is_deterministic(tmp_path):
    a, b = tmp_path / "a" / "index.html", tmp_path / "b" / "index.html"
    build(FIXTURE, a)
    build(FIXTURE, b)
    assert a.read_bytes() == b.read_bytes()


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
    with pytest.raises(ReportInputError, match=r"x\.partial\.jsonl:1: not a verify results row"):
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
    assert "Files not read" in out.read_text() and "notes.json" in out.read_text()


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


def test_asv_site_is_linked_when_built(tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "results")
    site = tmp_path / "results" / "asv" / "html"
    site.mkdir()
    (site / "index.html").write_text("<html></html>")
    out = tmp_path / "results" / "html" / "index.html"
    s = build(tmp_path / "results", out)
    assert s.asv_site == site / "index.html"
    assert '<a href="../asv/html/index.html">' in out.read_text()


def _png(img: np.ndarray, filters: list[int]) -> bytes:
    """A minimal PNG encoder using the given filter type per row (to test the decoder on all five)."""
    h, w, c = img.shape
    bpp, raw = c, bytearray()
    prev = np.zeros(w * c, dtype=np.int64)
    for y in range(h):
        cur = img[y].reshape(-1).astype(np.int64)
        left = np.concatenate([np.zeros(bpp, np.int64), cur[:-bpp]])
        ul = np.concatenate([np.zeros(bpp, np.int64), prev[:-bpp]])
        f = filters[y % len(filters)]
        if f == 0:
            line = cur
        elif f == 1:
            line = cur - left
        elif f == 2:
            line = cur - prev
        elif f == 3:
            line = cur - (left + prev) // 2
        else:
            p = left + prev - ul
            pa, pb, pc = abs(p - left), abs(p - prev), abs(p - ul)
            pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, ul))
            line = cur - pred
        raw += bytes([f]) + bytes((line % 256).astype(np.uint8))
        prev = cur

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    hdr = struct.pack(">IIBBBBB", w, h, 8, 2 if c == 3 else 6, 0, 0, 0)
    body = chunk(b"IHDR", hdr) + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + body


@pytest.mark.parametrize("channels", [3, 4])
def test_png_reader_undoes_every_filter(tmp_path, channels):
    img = np.random.default_rng(channels).integers(0, 256, size=(10, 7, channels), dtype=np.uint8)
    p = tmp_path / "x.png"
    p.write_bytes(_png(img, [0, 1, 2, 3, 4]))
    assert np.array_equal(read_png(p), img)
    st = png_stats(p)
    assert (st.width, st.height) == (7, 10) and st.colours > 60 and st.non_white == 1.0


CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium not installed (a system dependency, not installed by nox: apt-get install chromium)")


@needs_chromium
def test_blank_and_drawn_pages_are_told_apart(tmp_path):
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body style='background:#fff'></body></html>")
    st = png_stats(screenshot(blank, tmp_path / "blank.png", 200, 150))
    assert st.colours == 1 and st.non_white == 0.0
    box = tmp_path / "box.html"
    box.write_text("<!DOCTYPE html><html><body style='margin:0;background:#fff'>"
                   "<div style='width:100px;height:30px;background:#ff0000'></div></body></html>")
    img = read_png(screenshot(box, tmp_path / "box.png", 200, 150))
    assert int(np.all(img[:, :, :3] == [255, 0, 0], axis=2).sum()) == 100 * 30


@needs_chromium
def test_headless_chromium_renders_the_report(committed_page):
    """The report built from the committed results, rendered: not blank, tables and plots in the DOM.
    The screenshot is kept as an artifact under reports/out/ (git-ignored)."""
    page, _, _ = committed_page
    png = screenshot(page, REPO / "reports" / "out" / "report-screenshot.png", 1400, 2000)
    st = png_stats(png)
    assert (st.width, st.height) == (1400, 2000)
    assert st.colours >= 50 and st.non_white >= 0.05, st  # text, coloured cells: not a blank page
    dom = dump_dom(page)
    tree = _parse(dom)
    assert "matrix" in tree.tables and "rows" in tree.tables
    assert tree.svgs >= 10 and tree.marks >= 100
    assert 'id="filter"' in dom and "display: block" in dom  # the optional filter box: the script ran


def test_local_output_folders_are_not_part_of_the_report(tmp_path):
    """reports/results/ (verify's default output, git-ignored) stays out of the committed report."""
    for sub in ("results", "out", "gpu"):
        (tmp_path / sub).mkdir()
        shutil.copy(FIXTURE / "gpu" / "verify-fixture.json", tmp_path / sub / "v.json")
    assert [r.path for r in load(tmp_path).verify] == [f"{tmp_path.name}/gpu/v.json"]
    assert len(load(tmp_path / "results").verify) == 1  # a report of local runs: point --results there


def test_a_crashed_or_hung_case_colours_its_cell_as_a_failure():
    """CRASH and TIMEOUT rows (a worker that died or hung) are failures in the matrix, never a SKIP
    cell (the 2026-11-22 ggml CUDA run of 10 CRASH rows first read as SKIP)."""
    from wkvbench.report.matrix import cell

    for status in ("CRASH", "TIMEOUT"):
        cls, body, tip = cell([{"variant": "gla.ggml.cuda", "case": "c", "status": status, "reason": "signal 6"}])
        assert cls == "fail" and "FAIL 1/1" in body and status in tip


def test_the_report_shows_where_a_gpu_runs_time_went_and_its_stability(tmp_path):
    """A ``nox -s gpu`` results set (run.json, stability.json) becomes the "GPU runs" section: each
    phase with its seconds, the worker seconds per variant, and the stability rows with their verdicts."""
    import json

    from wkvbench.report.runs import runs_section
    from wkvbench.report.sources import load

    d = tmp_path / "gpu" / "box"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({
        "schema": "wkvbench.run/1", "complete": True, "install_s": 28.0, "wall_s": 1153.3,
        "provenance": {"gpu": {"name": "NVIDIA H100"}, "git": {"commit": "957fbcfd3aa1"}},
        "phases": {"verify": {"status": "done", "seconds": 887.0, "detail": "2106 PASS"},
                   "bench": {"status": "done", "seconds": 222.0, "detail": "225 OK"}},
        "variant_seconds": {"gla.fla.chunk": {"forward": 93.0, "warm": 2090.0}},
        "cpu_s": {"verify": 5000.0, "side": 9000.4}, "cores": 16,
        "load": [[30.0, 99.5, 40.0, 20.1], [60.0, 70.0, 100.0, 30.0], [90.0, None, None, None]]}))
    (d / "stability.json").write_text(json.dumps({
        "schema": "wkvbench.stability/1", "repeats": 5, "spread_max": 0.01, "ratio_max": 0.02, "rows": [
            {"shape_set": "decode", "variant": "v1", "dtype": "bf16", "mode": "graph", "engine_median_ms": 0.1118,
             "spread": 0.0049, "ratio": 0.994, "ok": True},
            {"shape_set": "decode", "variant": "v2", "dtype": "bf16", "mode": "graph", "engine_median_ms": 0.0069,
             "spread": 2.92, "ratio": 5.28, "ok": False}]}))
    src = load(tmp_path)
    assert not src.not_read  # both files are read, not listed under "Files not read"
    html = runs_section(src.runs, src.stability)
    assert "wall 1153 s after 28 s of installation; complete" in html
    assert "<td>verify</td><td>done</td><td>887</td><td>2106 PASS</td>" in html
    assert "<td>gla.fla.chunk</td><td>93</td><td>2090</td><td>2183</td>" in html
    assert "CPU seconds of the processes: verify 5000, side 9000 (16 cores)" in html
    assert "CPU busy while verifying: mean 85 %, 1/2 samples at 90 % or more" in html
    assert "GPU busy while verifying: mean 70 %, 1/2 samples" in html
    assert "1/2 rows within the targets" in html and "111.8 us" in html and "<td>NO</td>" in html
    assert "No <code>nox -s gpu</code> run" in runs_section([], src.stability)
