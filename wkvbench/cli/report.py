"""``python -m wkvbench report``: the static HTML report from the results under ``--results``
(``wkvbench/report/``); ``__init__.py`` parses and dispatches."""

from __future__ import annotations

import argparse

from rich.console import Console


def _report(args: argparse.Namespace, console: Console) -> int:
    from ..judge.commands import default_reports_dir
    from ..report import ReportInputError, build

    if args.results is None:  # the checkout's reports/, else the results folder of the working directory
        args.results = default_reports_dir()
    out = args.output or args.results / "html" / "index.html"
    try:
        s = build(args.results, out, args.asv_html)
    except ReportInputError as exc:
        console.print(f"[red]error:[/red] {exc}", markup=True, highlight=False)
        return 2
    console.print(f"report: {s.output} ({s.verify_files} verify files, {s.verify_rows} results; "
                  f"{s.bench_files} bench files, {s.bench_rows} rows; {s.drift_files} drift files; "
                  f"{s.asv_series} asv series; "
                  f"{s.charts} charts)" + (f"; asv site linked: {s.asv_site}" if s.asv_site else ""),
                  highlight=False)
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
