"""The published site (issue 46, item 5): the GitHub Pages workflow runs ``nox -s site -- _site``, which runs
``python -m wkvbench report --site DIR``; this test checks the workflow and the session name that command,
runs it on the committed results and checks the folder it writes: nothing from a CDN or any other address,
every internal link and anchor resolves, asv's own site nowhere, and no page above its size."""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag

import pytest
import yaml

from suites.unit.report_pages import REPO

LANDING_MAX = 2_000_000  # bytes: issue 46's landing page
PAGE_MAX = 3_000_000  # any other page (details load per machine and per operator)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        for k in ("href", "src"):
            if a.get(k) is not None:
                self.links.append(str(a[k]))
        if tag == "meta" and "url=" in (a.get("content") or ""):
            self.links.append(str(a["content"]).split("url=", 1)[1])


def _parse(path: Path) -> _Links:
    p = _Links()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def test_the_workflow_runs_the_documented_command():
    """report.yml builds with ``nox -s site -- _site`` and uploads that folder; the session runs
    ``python -m wkvbench report --site``, the command this file's other test runs."""
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "report.yml").read_text())
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads the key `on` as true
    assert on["push"]["branches"] == ["main"] and "reports/**" in on["push"]["paths"]
    assert wf["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    steps = wf["jobs"]["build"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    assert runs == ["python3 -m pip install nox && python3 -m nox -s site -- _site"]
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"] == "_site"
    assert wf["jobs"]["deploy"]["needs"] == "build"
    assert any(str(s.get("uses", "")).startswith("actions/deploy-pages@") for s in wf["jobs"]["deploy"]["steps"])
    nox = (REPO / "noxfile.py").read_text()
    body = nox[nox.index("def site(session"):nox.index("@nox.session", nox.index("def site(session"))]
    assert 'session.run("python", "-m", "wkvbench", "report", "--site", dest)' in body


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("site") / "_site"
    p = subprocess.run([sys.executable, "-m", "wkvbench", "report", "--site", str(dest)], cwd=REPO,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert f"site: {dest}/index.html" in "".join(p.stdout.split("\n"))  # the console wraps long lines
    return dest


def test_the_site_is_offline_and_every_link_resolves(site):
    pages = sorted(site.rglob("*.html"))
    names = {p.relative_to(site).as_posix() for p in pages}
    assert {"index.html", "html/index.html", "html/details.html", "html/charts.html", "html/history.html",
            "html/releases.html"} <= names
    assert (site / "html" / "plotly.min.js").stat().st_size > 1_000_000
    assert len([n for n in names if n.startswith("html/details/")]) >= 10  # per machine and operator
    parsed = {p: _parse(p) for p in pages}
    checked = 0
    for page, links in parsed.items():
        text = page.read_text(encoding="utf-8")
        # no address of any other host: no CDN script or style, no font, no asv site
        assert not re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text.replace("http://www.w3.org/", "")), page
        assert "asv/html" not in text and "<link" not in text and "@import" not in text, page
        for link in links.links:
            url, frag = urldefrag(link)
            assert not re.match(r"[a-z]+:", url), (page, link)  # relative: no scheme
            target = (page.parent / unquote(url)).resolve() if url else page.resolve()
            assert target.is_file() and site.resolve() in target.parents, (page, link)
            if frag and target.suffix == ".html":
                assert frag in parsed[target].ids if target in parsed else _parse(target).ids, (page, link)
            checked += 1
    assert checked > 200


def test_no_page_is_above_its_size(site):
    """The landing page at most 2 MB; every other page (details per machine and per operator) at most 3 MB
    (the one details page weighed 16 MB before); plotly.js once."""
    sizes = {p.relative_to(site).as_posix(): p.stat().st_size for p in site.rglob("*.html")}
    assert sizes["html/index.html"] <= LANDING_MAX
    big = {n: s for n, s in sizes.items() if s > PAGE_MAX}
    assert not big, big
    assert len(list(site.rglob("plotly*.js"))) == 1


def test_a_folder_that_is_not_a_site_is_refused(tmp_path):
    (tmp_path / "mine.txt").write_text("keep me")
    p = subprocess.run([sys.executable, "-m", "wkvbench", "report", "--results", str(REPO / "suites" / "data" /
                        "report" / "results"), "--site", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2 and "is not empty and not a site built before" in " ".join(p.stdout.split())
    assert (tmp_path / "mine.txt").read_text() == "keep me" and "Traceback" not in p.stderr
