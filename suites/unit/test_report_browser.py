"""The report in a browser: the PNG reader (Pillow), headless chromium driven by Playwright rendering
the page offline, and the filters narrowing its tables and charts (``wkvbench.report.browser``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from suites.unit.report_pages import REPO
from wkvbench.report.browser import open_page, png_stats, read_png, screenshot, unavailable


def _pillow_png(path: Path, img: np.ndarray, mode: str) -> None:
    from PIL import Image

    kind = "L" if mode == "L" else ("RGBA" if img.shape[2] == 4 else "RGB")
    im = Image.fromarray(img[:, :, 0] if mode == "L" else img, kind)
    if mode == "P":
        im = im.convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    im.save(path, "PNG")


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "P", "L"])
def test_png_reader_decodes_what_pillow_writes(tmp_path, mode):
    rng = np.random.default_rng(len(mode))
    img = rng.integers(0, 256, size=(10, 7, 4 if mode == "RGBA" else 3), dtype=np.uint8)
    if mode in ("P", "L"):
        img = np.repeat(img[:, :, :1] // 16 * 16, 3, axis=2)  # at most 16 levels: exact in a palette
    p = tmp_path / "x.png"
    _pillow_png(p, img, mode)
    got = read_png(p)
    assert got.dtype == np.uint8 and got.shape == img.shape
    assert np.array_equal(got, img)
    st = png_stats(p)
    assert (st.width, st.height) == (7, 10)
    assert st.colours == len({tuple(px) for px in img[:, :, :3].reshape(-1, 3)})


def test_a_file_that_is_not_a_png_is_refused(tmp_path):
    p = tmp_path / "x.png"
    p.write_bytes(b"not an image")
    with pytest.raises(ValueError, match="not a PNG"):
        read_png(p)


BROWSER = unavailable()
needs_browser = pytest.mark.skipif(BROWSER is not None, reason=f"browser test not run: {BROWSER}")


@needs_browser
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


def _visible(tab, selector: str) -> int:
    return tab.eval_on_selector_all(selector, "els => els.filter(e => e.offsetParent !== null).length")


@needs_browser
def test_headless_chromium_renders_the_report_offline(committed_page):
    """The report built from the committed results, in chromium with every network request refused: not
    blank, every chart drawn by the inlined plotly.js. The screenshot is kept under reports/out/."""
    page, text, tree = committed_page
    png = screenshot(page, REPO / "reports" / "out" / "report-screenshot.png", 1400, 2000)
    st = png_stats(png)
    assert (st.width, st.height) == (1400, 2000)
    assert st.colours >= 50 and st.non_white >= 0.05, st  # text, coloured cells: not a blank page
    requests: list[str] = []
    with open_page(page) as tab:
        tab.route("**/*", lambda route: (requests.append(route.request.url), route.abort())
                  if not route.request.url.startswith("file:") else route.continue_())
        tab.reload(wait_until="load")
        tab.wait_for_selector("body[data-ready]", state="attached")
        n = len(tree.charts)
        assert tab.get_attribute("body", "data-ready") == f"{n} charts drawn"
        assert tab.locator("div.chart.js-plotly-plot").count() == n
        assert tab.locator("div.chart svg.main-svg").count() >= n
        assert tab.locator("div.chart .scatterlayer .trace, div.chart .barlayer .trace").count() >= n
        assert tab.is_visible("#filters") and tab.is_visible("#f-dtype")
    assert requests == []


@needs_browser
def test_the_filters_narrow_tables_and_charts(fixture_page):
    """details.html: the dtype filter narrows the matrix and the charts (the emptied category leaves the dtype
    axis); a machine's page: its bench table and charts; a rows page: its rows, and the text filter."""
    from wkvbench.report import DETAILS_DIR

    page, text, tree = fixture_page
    with open_page(page) as tab:
        charts = len(tree.charts)
        assert f"{charts} of {charts} charts match" in tab.inner_text("#filter-note")
        assert tab.locator("#f-text").count() == 0  # no rows on this page: no text filter
        tab.select_option("#f-dtype", "bf16")
        assert _visible(tab, 'table.matrix td[data-d="fp32"]') == 0
        assert _visible(tab, 'table.matrix td[data-d="bf16"]') > 0
        shown = _visible(tab, "div.chart")
        assert 0 < shown < charts
        cats = tab.evaluate("""() => Array.from(document.querySelectorAll('div.chart.js-plotly-plot'))
            .filter(e => e.offsetParent !== null && e.layout.xaxis.categoryarray)
            .map(e => e.layout.xaxis.categoryarray)""")
        assert cats and all(c == ["bf16"] for c in cats)  # the emptied fp32 category left the dtype axis
        tab.click("#f-reset")
        assert _visible(tab, "div.chart") == charts
        tab.click(f'a[href="{DETAILS_DIR}/nvidia-h200.html"]')  # the machine's page, loaded when asked for
        tab.wait_for_selector("body[data-ready]", state="attached")
        assert tab.locator("table.perf").count() > 0 and _visible(tab, "div.chart") > 0
    with open_page(page.parent / DETAILS_DIR / "nvidia-h200-gla.html") as tab:
        all_rows = tab.eval_on_selector_all("details.rowsfile tbody tr", "els => els.length")
        tab.eval_on_selector_all("details.rowsfile", "els => els.forEach(d => d.open = true)")
        assert all_rows > 1 and _visible(tab, "details.rowsfile tbody tr") == all_rows
        tab.fill("#f-text", "not supported")
        assert _visible(tab, "details.rowsfile tbody tr") == 1
        tab.fill("#f-text", "")
        tab.select_option("#f-dtype", "fp32")
        cases = tab.eval_on_selector_all(
            "details.rowsfile tbody tr",
            "els => els.filter(e => e.offsetParent !== null).map(e => e.cells[2].textContent)")
        assert cases and all(c.split("/")[3] == "fp32" for c in cases) and len(cases) < all_rows


@needs_browser
def test_a_machine_page_filters_its_bench_tables(committed_page):
    """The H100's performance page (committed results): the dtype filter leaves only that dtype's bench rows."""
    from wkvbench.report import DETAILS_DIR

    page, _, _ = committed_page
    with open_page(page.parent / DETAILS_DIR / "nvidia-h100-80gb-hbm3.html") as tab:
        tab.eval_on_selector_all("details.perfrows", "els => els.forEach(d => d.open = true)")
        every = _visible(tab, "table.perf tbody tr")
        tab.select_option("#f-dtype", "fp32")
        shown = tab.eval_on_selector_all("table.perf tbody tr",
                                         "els => els.filter(e => e.offsetParent !== null).map(e => e.dataset.d)")
        assert shown and set(shown) == {"fp32"} and len(shown) < every
