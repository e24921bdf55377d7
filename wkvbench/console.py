"""One console policy for every command (``verify``, ``bench``, ``report``, ...).

On a terminal: rich colour, rich tables sized to the window, and a live progress bar. When the
output is not a terminal (CI logs, pipes, files): no ANSI escapes, 160 columns wide (``COLUMNS`` when
set), and the live bar is replaced by one plain line at every 10% of the work, so a log shows progress
without being flooded. ``FORCE_COLOR``/``NO_COLOR`` keep their usual meaning for colour; the live bar only
ever draws on a real terminal (or with ``WKVBENCH_PROGRESS=1``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from wkvkernels import config

PLAIN_WIDTH = 160


def make_console(stderr: bool = False) -> Console:
    """A console on stdout (or stderr) that is plain text when that stream is not a terminal."""
    stream = sys.stderr if stderr else sys.stdout
    tty = _isatty(stream)
    return Console(stderr=stderr, width=None if tty else plain_width(), soft_wrap=False)


def plain_width() -> int:
    """The width off a terminal: ``COLUMNS`` when set (as on a terminal), else ``PLAIN_WIDTH``."""
    try:
        cols = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return PLAIN_WIDTH
    return cols if cols >= 40 else PLAIN_WIDTH


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False


def live(console: Console) -> bool:
    """Whether a live (redrawn) progress bar may be drawn on this console."""
    if config.progress():
        return True
    return console.is_terminal and _isatty(console.file)


class _Plain:
    """The non-terminal stand-in for a progress bar: a line at each 10% step."""

    def __init__(self, console: Console, label: str, total: int) -> None:
        self.console, self.label, self.total = console, label, total
        self.done, self.next_pct, self.t0 = 0, 10, time.perf_counter()

    def update(self, description: str) -> None:
        self.description = description

    def advance(self, n: int = 1) -> None:
        self.done += n
        pct = 100 * self.done // max(1, self.total)
        if pct >= self.next_pct:
            self.next_pct = (pct // 10 + 1) * 10
            self.console.print(f"{self.label}: {self.done}/{self.total} ({pct}%) in "
                               f"{time.perf_counter() - self.t0:.0f}s", markup=False, highlight=False)


class _Live:
    def __init__(self, bar: Progress, total: int) -> None:
        self.bar, self.task = bar, bar.add_task("", total=total)

    def update(self, description: str) -> None:
        self.bar.update(self.task, description=description)

    def advance(self, n: int = 1) -> None:
        self.bar.advance(self.task, n)


@contextlib.contextmanager
def track(console: Console, label: str, total: int) -> Iterator[_Live | _Plain]:
    """``with track(console, "verify", n) as p: ... p.update(text); p.advance()``."""
    if not live(console):
        yield _Plain(console, label, total)
        return
    with Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=console, transient=True) as bar:
        yield _Live(bar, total)
