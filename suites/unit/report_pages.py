"""The report pages the report tests read: the page built from the fixture results and the page built
from the committed results (built once per test session), and a tag tree of a page."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from wkvbench.report import DETAILS, build

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "suites" / "data" / "report" / "results"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Tree(HTMLParser):
    """Checks that every element is closed in order; collects table rows (cell texts), the attributes of
    every element with an id, the chart containers and the script elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.rows: list[tuple[str, list[str]]] = []  # (class of the enclosing table, cell texts)
        self.tables: list[str] = []
        self.ids: dict[str, dict[str, str | None]] = {}
        self.charts: list[str] = []  # ids of div.chart
        self.scripts: list[dict[str, str | None]] = []
        self.options: dict[str, list[str]] = {}  # select id -> option values
        self.h3: list[str] = []
        self._select: str | None = None
        self._cells: list[str] | None = None
        self._has_td = False
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if "id" in a:
            self.ids[str(a["id"])] = a
        if tag == "table":
            self.tables.append(a.get("class") or "")
        if tag == "tr":
            self._cells, self._has_td = [], False
        if tag == "td":
            self._has_td = True
        if tag in ("td", "th", "h3"):
            self._text = []
        if tag == "div" and "chart" in (a.get("class") or "").split():
            self.charts.append(str(a.get("id")))
        if tag == "script":
            self.scripts.append(a)
        if tag == "select":
            self._select = str(a.get("id"))
            self.options[self._select] = []
        if tag == "option" and self._select:
            self.options[self._select].append(str(a.get("value")))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            top = self.stack[-1] if self.stack else None
            self.errors.append(f"</{tag}> at {self.getpos()} closes <{top}>")
            return
        self.stack.pop()
        if tag == "select":
            self._select = None
        if tag == "h3":
            self.h3.append("".join(self._text).strip())
        if tag in ("td", "th") and self._cells is not None:
            self._cells.append("".join(self._text).strip())
        if tag == "tr" and self._cells is not None:
            if self._has_td:  # data rows only, not headers
                self.rows.append((self.tables[-1] if self.tables else "", self._cells))
            self._cells = None

    def handle_data(self, data: str) -> None:
        self._text.append(data)


def _parse(text: str) -> _Tree:
    t = _Tree()
    t.feed(text)
    t.close()
    return t


def _chart_data(text: str) -> dict:
    start = text.index('<script type="application/json" id="chart-data">')
    body = text[text.index(">", start) + 1: text.index("</script>", start)]
    return json.loads(body)


def build_page(results: Path, out: Path) -> tuple[Path, str, _Tree]:
    """The details page (``details.html``) of the site built into ``out``'s folder; the landing page is
    ``landing_page``'s."""
    build(results, out)
    details = out.parent / DETAILS
    text = details.read_text()
    return details, text, _parse(text)


def landing_page(details: Path) -> tuple[Path, str, _Tree]:
    """The landing page (``index.html``) of the site whose details page is ``details``."""
    page = details.parent / "index.html"
    text = page.read_text()
    return page, text, _parse(text)


def detail_pages(details: Path) -> dict[str, tuple[str, _Tree]]:
    """``details.html`` and every page of ``details/`` (a machine's performance, a machine and operator's
    rows), by path relative to the site: (text, tag tree)."""
    from wkvbench.report import DETAILS_DIR

    paths = [details, *sorted((details.parent / DETAILS_DIR).glob("*.html"))]
    return {p.relative_to(details.parent).as_posix(): ((t := p.read_text()), _parse(t)) for p in paths}


def joined(details: Path) -> tuple[str, _Tree]:
    """Every details page as one text and one tree (rows, charts, ids, headings, tables of all of them)."""
    pages = detail_pages(details)
    tree = _Tree()
    for _, t in pages.values():
        tree.errors += t.errors
        tree.rows += t.rows
        tree.tables += t.tables
        tree.ids.update(t.ids)
        tree.charts += t.charts
        tree.scripts += t.scripts
        tree.h3 += t.h3
        for k, v in t.options.items():
            have = tree.options.setdefault(k, [])
            have += [x for x in v if x not in have]
    return "\n".join(t for t, _ in pages.values()), tree


def section(text: str, sid: str) -> str:
    """The text of ``<section id="sid">`` of one page (to its ``</section>``)."""
    start = text.index(f'<section id="{sid}"')
    return text[start:text.index("</section>", start)]
