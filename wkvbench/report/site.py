"""The published site (``python -m wkvbench report --site DIR``, run by ``nox -s site`` and the GitHub
Pages workflow ``.github/workflows/report.yml``): ``DIR/html/`` holds every page of the report and
``plotly.min.js``, ``DIR/index.html`` opens the landing page. One command builds the same folder anywhere;
nothing in it is fetched from the network (``suites/unit/test_report_site.py`` checks every link)."""

from __future__ import annotations

import shutil
from pathlib import Path

INDEX = ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
         '<meta http-equiv="refresh" content="0; url=html/index.html"><title>wkvbench report</title></head>'
         '<body><a href="html/index.html">wkvbench report</a></body></html>\n')


class SiteError(ValueError):
    """A site folder that cannot be written (not empty and not a site built before)."""


def prepare_site(dest: Path) -> None:
    """Empty ``dest`` of an earlier site, so that no page of an earlier build stays; refuse a folder that
    holds anything else (a typo must not delete a folder of the user's)."""
    if not dest.exists():
        return
    if not dest.is_dir():
        raise SiteError(f"{dest} is not a folder")
    entries = {p.name for p in dest.iterdir()}
    if entries and not (entries <= {"index.html", "html"} and (dest / "html" / "index.html").is_file()):
        raise SiteError(f"{dest} is not empty and not a site built before (it holds {', '.join(sorted(entries)[:5])});"
                        " name an empty or new folder")
    for name in entries:
        p = dest / name
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def write_site_index(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "index.html").write_text(INDEX, encoding="utf-8")
