"""The chart pages (``charts.html``, ``history.html``; ``wkvbench/report/chartpages.py``, issue 46 items 2
and 4): time and % of the roofline against tokens per implementation, the worst error in rounding-floor
multiples per implementation, and the asv history drawn by the report itself, every chart full width with
its legend below the plot, nothing loaded from the network."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from suites.unit.report_pages import REPO, _chart_data, _parse, landing_page
from wkvbench.report import CHARTS, HISTORY, PLOTLY, RELEASES
from wkvbench.report.asv import history
from wkvbench.report.chartpages import MAX_TRACES, config, tokens
from wkvbench.report.current import verify_groups
from wkvbench.results.committed import load

H100 = "NVIDIA H100 80GB HBM3"


def _page(details: Path, name: str):
    text = (details.parent / name).read_text()
    return text, _parse(text), _chart_data(text)


def _by_title(data: dict) -> dict[str, dict]:
    return {c["layout"]["title"]["text"]: c for c in data["charts"]}


def test_tokens_of_a_shape():
    assert tokens("B8-T4096-H32-N64") == 32768
    assert tokens("B256-T1-H32-N64-h0") == 256
    assert tokens("T100-H2") == 100
    assert tokens("B2-H4-N64") is None


def test_every_chart_is_full_width_with_a_legend_below_it(committed_page):
    details, _, _ = committed_page
    for name, least in ((CHARTS, 100), (HISTORY, 100), (RELEASES, 5)):
        text, tree, data = _page(details, name)
        assert not tree.errors, tree.errors[:3]
        assert tree.charts == [c["id"] for c in data["charts"]] and len(tree.charts) >= least, name
        assert [s.get("src") for s in tree.scripts if s.get("src")] == [PLOTLY]  # the site's one copy
        assert not re.search(r"https?://", text.replace("http://www.w3.org", "")), name  # no CDN, no address
        assert ".chart{" in text and "width:100%" in text
        for c in data["charts"]:
            lay = c["layout"]
            assert "width" not in lay and lay["autosize"] is True, c["id"]
            assert lay["legend"]["orientation"] == "h" and lay["showlegend"] is True
            assert 1 <= len(c["data"]) <= MAX_TRACES, (c["id"], len(c["data"]))


def test_time_and_roofline_against_tokens_per_implementation(committed_page):
    """The H100's WKV-7 bf16 charts: one line per implementation and configuration (heads, head size: the
    shape without B and T), so that along a line only the tokens vary; log axes. FLA's chunk kernel at
    B8-T4096-H32-N64 is one point, the newest measurement of that shape, its hover naming the prefill set's
    3.766 ms (the landing page's answer) where another set timed the same shape."""
    details, _, _ = committed_page
    _, _, data = _page(details, CHARTS)
    charts = _by_title(data)
    head = f"wkv7 · {H100} · bf16: median device time against tokens"
    parts = [c for t, c in charts.items() if t.startswith(head)]
    assert len(parts) >= 2  # more than 16 lines: split, a configuration never over two charts
    lines = [d for c in parts for d in c["data"]]
    for c in parts:
        assert c["layout"]["xaxis"]["type"] == "log" and c["layout"]["yaxis"]["type"] == "log"
    names = [d["name"] for d in lines]
    assert len(names) == len(set(names)) >= 10 and "wkv7.fla.chunk (H32-N64)" in names
    cfgs = [{d["name"].rsplit(" (", 1)[1] for d in c["data"]} for c in parts]
    assert sum(len(x) for x in cfgs) == len(set().union(*cfgs))  # no configuration on two charts
    for d in [*lines, *(d for t, c in charts.items() if "% of the roofline" in t for d in c["data"])]:
        cfg = d["name"].rsplit(" (", 1)[1].rstrip(")")
        shapes = [s.split(" ")[1] for s in d["text"] if s]
        assert shapes and all(config(s) == cfg for s in shapes), (d["name"], shapes)  # one (H, N) per line
        xs = [x for x in d["x"] if x is not None]
        assert len(xs) == len(set(xs)) and xs == sorted(xs), d["name"]  # one point per x, x rising
    chunk = next(d for d in lines if d["name"] == "wkv7.fla.chunk (H32-N64)")
    (s,) = [s for x, s in zip(chunk["x"], chunk["text"], strict=True) if x == 32768]
    assert "B8-T4096-H32-N64" in s and ("prefill: 3.766 ms" in s or s.startswith("prefill B8-T4096-H32-N64 (32768 "
                                                                              "tokens): median 3.766 ms"))
    rparts = [c for t, c in charts.items() if t.startswith(f"wkv7 · {H100} · bf16: % of the roofline")]
    ys = [y for c in rparts for d in c["data"] for y in d["y"] if y is not None]
    for c in rparts:
        ya = c["layout"]["yaxis"]
        lo, hi = ya["range"]
        assert ya["type"] == "log" and 10**lo <= min(ys) and max(ys) <= 10**hi and 10**hi < 5 * max(ys)  # not 0-100
    assert any("% of the roofline" in s for c in rparts for d in c["data"] for s in d["text"])
    data = {"charts": [c for t, c in charts.items()]}
    for c in data["charts"]:  # one word, one meaning: no chart speaks of the roofline and a floor at once
        words = " ".join(
            [
                c["layout"]["title"]["text"],
                json.dumps(c["layout"].get("xaxis", {})),
                json.dumps(c["layout"].get("yaxis", {})),
            ]
        )
        assert not ("roofline" in words and "floor" in words), c["layout"]["title"]["text"]


def test_worst_error_in_rounding_floor_multiples(committed_page):
    """Each bar is the largest floor multiple of any tensor over the run's rows of that implementation and
    dtype, recomputed here from the rows."""
    details, _, _ = committed_page
    _, _, data = _page(details, CHARTS)
    src = load(REPO / "reports")
    g = next(
        g
        for g in verify_groups(src.verify)
        if g.current
        and not g.mutants
        and g.machine == H100
        and any(str(r.get("variant", "")).startswith("wkv7.fla.chunk") for r in g.rows)
    )
    c = _by_title(data)[f"wkv7 · {g.title}: worst error per implementation, x its rounding floor"]
    assert c["layout"]["xaxis"]["type"] == "log" and "rounding floor" in c["layout"]["xaxis"]["title"]["text"]
    bars = {
        (d["name"], v): (x, s) for d in c["data"] for v, x, s in zip(d["y"], d["x"], d["text"], strict=True)
    }
    want = {}
    for r in g.rows:
        for e in (r.get("errors") or {}).values():
            if r.get("op") == "wkv7" and isinstance(e, dict) and isinstance(e.get("floor_x"), (int, float)):
                k = (r["dtype"], r["variant"])
                want[k] = max(want.get(k, 0.0), float(e["floor_x"]))
    assert want and set(want) == set(bars)
    for k, x in want.items():
        assert bars[k][0] == pytest.approx(x), k
        assert "x its rounding floor" in bars[k][1]


def test_the_history_is_drawn_by_the_report(committed_page):
    """history.html: every asv point of the committed results, one chart per shape set, operator, dtype and
    GPU, one line per implementation (a kernel release's environment a line of its own), times in ms."""
    details, _, _ = committed_page
    _, _, data = _page(details, HISTORY)
    hist = history(REPO / "reports" / "asv" / "results")
    assert sum(len(p) for h in hist for p in h.machines.values()) == sum(
        len(d["x"]) for c in data["charts"] for d in c["data"]
    )
    for c in data["charts"]:
        assert (
            c["layout"]["xaxis"]["type"] == "date"
            and c["layout"]["yaxis"]["title"]["text"] == "median time (ms)"
        )
        names = [d["name"] for d in c["data"]]
        assert len(names) == len(set(names))
        assert all(s.endswith(" ms") for d in c["data"] for s in d["text"])
    titles = [c["layout"]["title"]["text"] for c in data["charts"]]
    assert len(titles) == len(set(titles))
    assert any(t.startswith(f"wkv7 · bf16 · {H100}: shape_set=prefill") for t in titles)


def test_the_landing_page_links_the_chart_pages(committed_page):
    details, _, _ = committed_page
    _, text, _ = landing_page(details)
    for href in (CHARTS, HISTORY, RELEASES):
        assert f'href="{href}"' in text
        assert (details.parent / href).is_file()


def test_the_releases_page_has_verdict_and_time_per_release(committed_page):
    """releases.html: per package and machine a table whose columns are the releases (verdict and worst
    rounding-floor multiple per variant), and for the releases timed on the H100 a table of medians."""
    from wkvbench.report.releases import release_tables, release_timings

    details, _, _ = committed_page
    _, tree, data = _page(details, RELEASES)
    src = load(REPO / "reports")
    tables, timings = release_tables(None, src.releases), release_timings(None, src.release_bench)
    assert tables and timings
    assert tree.h3 == [f"{t.package} · {t.machine}" for t in [*tables, *timings]]
    cells = [c for _, c in tree.rows]
    for t in [*tables, *timings]:
        for row in t.rows:
            assert [str(c).strip() for c in row] in cells
    assert any("PASS" in c and "x" in c for row in cells for c in row[1:])  # verdict and floor multiple
    assert any(c.endswith("(graph)") or "us (" in c for row in cells for c in row[1:])  # a median per release
    titles = [c["layout"]["title"]["text"] for c in data["charts"]]
    assert all(any(t.package in x for x in titles) for t in timings)  # a time-per-release chart per package


def _browser_missing() -> str | None:
    from wkvbench.report.browser import unavailable

    return unavailable()


@pytest.mark.parametrize("name", [CHARTS, HISTORY, RELEASES])
def test_the_chart_pages_in_chromium(committed_page, name):
    """In chromium with every network request refused: scrolled to its end, every chart of the page is drawn
    by the site's plotly.min.js, as wide as the page's column, its legend no wider than its plot."""
    why = _browser_missing()
    if why:
        pytest.skip(why)
    from wkvbench.report.browser import open_page

    details, _, _ = committed_page
    out = REPO / "reports" / "out"
    out.mkdir(parents=True, exist_ok=True)
    requests: list[str] = []
    with open_page(details.parent / name, 1600, 1000) as tab:
        tab.route(
            "**/*",
            lambda route: (
                (requests.append(route.request.url), route.abort())
                if not route.request.url.startswith("file:")
                else route.continue_()
            ),
        )
        tab.reload(wait_until="load")
        n = int(tab.get_attribute("body", "data-charts"))
        tab.evaluate("""async () => { for (const el of document.querySelectorAll('div.chart')) {
            el.scrollIntoView(); await new Promise(r => setTimeout(r, 20)); } }""")
        tab.wait_for_function(f"document.body.dataset.drawn === '{n}'", timeout=60000)
        sizes = tab.evaluate("""() => Array.from(document.querySelectorAll('div.chart')).map(el => [
            el._fullLayout.width, el.clientWidth, document.body.clientWidth,
            el.querySelector('g.legend') ? el.querySelector('g.legend').getBBox().width : -1,
            el.querySelectorAll('g.trace, g.points path').length])""")
        assert len(sizes) == n >= 5
        for w, cw, body, legend, marks in sizes:
            assert abs(w - cw) <= 2 and cw >= 0.9 * body, (w, cw, body)
            assert 0 < legend <= w and marks > 0
        tab.evaluate("document.querySelectorAll('div.chart')[0].scrollIntoView()")
        tab.screenshot(path=str(out / f"report-{name.removesuffix('.html')}.png"))
    assert requests == []


@pytest.mark.parametrize("kw", [
    {},
    {"x_type": "log", "y_type": "linear"},
    {"categories": ["B1-T1", "B8-T4096", "x<y"]},
])
def test_line_charts_written_directly_are_what_plotly_validates(kw):
    """``Charts.line`` writes plotly's JSON form itself (plotly's validation was 13 of the 32 s of a report's
    build); ``line_validated`` builds the same through ``graph_objects``. The two agree on every property,
    for traces with NaN and None, escapes, dashed reference lines, numbers and categories on x, and enough
    traces to grow the chart."""
    from wkvbench.report.charts import Charts, Trace

    def traces():
        out = [Trace("fla <chunk> & co", [1, 2, 4], [0.5, float("nan"), 2.0], ["a&b", "<i>", "c"], [0, 1, 2]),
               Trace("floor", ["B1-T1", "B8-T4096"], [1.0, None], ["f", "g"], [3, 3], dashed=True)]
        out += [Trace(f"t{i}", [i], [float(i + 1)], [str(i)], [i]) for i in range(20)]
        return out

    from plotly.io.json import to_json_plotly

    direct = Charts().line("Time <ms> & more", traces(), "tokens", "ms", **kw)
    checked = Charts().line_validated("Time <ms> & more", traces(), "tokens", "ms", **kw)
    as_written = lambda fig: json.loads(to_json_plotly(fig))  # noqa: E731 - as the page gets it (NaN: null)
    assert as_written(direct.figure) == as_written(checked.figure)
    assert direct.keys == checked.keys and direct.id == checked.id == "chart-0"
    assert direct.figure["layout"]["height"] == 90 + 16 * 22


@pytest.mark.parametrize("ref", [None, 100.0])
def test_bar_charts_written_directly_are_what_plotly_validates(ref):
    """``Charts.bars`` against ``bars_validated`` (``graph_objects``), with a reference line and without, and
    labels that need escaping: their category order lists them as the bars carry them."""
    from plotly.io.json import to_json_plotly

    from wkvbench.report.charts import Charts, Trace

    def trace():
        return Trace("% of floor <x>", ["fla.chunk", "a<b", "c&d"], [12.5, float("nan"), 80.0],
                     ["12.5 %", "-", "80 %"], [0, 1, 2])

    direct = Charts().bars("Roofline <bf16>", trace(), "% of the floor", ref=ref)
    checked = Charts().bars_validated("Roofline <bf16>", trace(), "% of the floor", ref=ref)
    as_written = lambda fig: json.loads(to_json_plotly(fig))  # noqa: E731
    assert as_written(direct.figure) == as_written(checked.figure)
    layout = direct.figure["layout"]
    labels = direct.figure["data"][0]["y"]
    assert layout["yaxis"]["categoryarray"] == ["c&amp;d", "a&lt;b", "fla.chunk"] == labels[::-1]
    assert ("shapes" in layout) == (ref is not None) and layout["height"] == 220
