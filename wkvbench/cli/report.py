"""``python -m wkvbench report``: the static HTML report from the results under ``--results``
(``wkvbench/report/``); ``__init__.py`` parses and dispatches."""

from __future__ import annotations

import argparse

from rich.console import Console


def _report(args: argparse.Namespace, console: Console) -> int:
    from ..judge.commands import default_reports_dir
    from ..report import PLOTLY, ReportInputError, build
    from ..report.site import SiteError, prepare_site, write_site_index

    if args.results is None:  # the checkout's reports/, else the results folder of the working directory
        args.results = default_reports_dir()
    if args.asv_html is not None:
        console.print("note: --asv-html is ignored: asv's own site loads its scripts from CDNs and is no longer "
                      "linked; history.html draws the asv results offline", highlight=False)
    if args.site is not None and args.output is not None:
        console.print("[red]error:[/red] --site and --output exclude each other (--site writes DIR/html/index.html)",
                      markup=True, highlight=False)
        return 2
    out = args.output or (args.site / "html" / "index.html" if args.site else args.results / "html" / "index.html")
    try:
        if args.site is not None:
            prepare_site(args.site)
        s = build(args.results, out)
        if args.site is not None:
            write_site_index(args.site)
    except (ReportInputError, SiteError) as exc:
        console.print(f"[red]error:[/red] {exc}", markup=True, highlight=False)
        return 2
    largest = max(s.pages.items(), key=lambda kv: kv[1] if kv[0] != PLOTLY else -1)
    console.print(f"report: {s.output} ({s.verify_files} verify files, {s.verify_rows} results; "
                  f"{s.bench_files} bench files, {s.bench_rows} rows; {s.drift_files} drift files; "
                  f"{s.asv_series} asv series; {len(s.pages)} files, landing page {s.bytes / 1e6:.2f} MB, "
                  f"largest page {largest[0]} {largest[1] / 1e6:.2f} MB)"
                  + (f"; site: {args.site}/index.html" if args.site else ""), highlight=False)
    if args.screenshot:
        from ..report.browser import png_stats, screenshot

        try:
            png = screenshot(s.output, args.screenshot)
        except (FileNotFoundError, RuntimeError, OSError) as exc:  # no chromium, or it failed
            console.print(f"[red]error:[/red] screenshot: {exc}", highlight=False)
            return 2
        st = png_stats(png)
        console.print(f"screenshot: {png} ({st.width}x{st.height}, {st.colours} colours, "
                      f"{100 * st.non_white:.0f}% non-white)", highlight=False)
    return 0
