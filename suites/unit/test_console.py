"""Console output: rich tables and a live bar on a terminal, plain text (no ANSI escapes, no redrawn bar)
in logs and pipes."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from rich.console import Console

from wkvbench.console import live, make_console, track

REPO = Path(__file__).resolve().parents[2]
SMALL = ["verify", "--op", "wkv4", "--variant", "wkv4.torch.*", "--dtype", "fp32", "--no-entry-points"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR", "WKVBENCH_PROGRESS",
                        "COLUMNS")}
    return {**env, **extra}


def test_verify_through_pipes_is_plain_text(tmp_path):
    p = subprocess.run([sys.executable, "-m", "wkvbench", *SMALL, "--output", str(tmp_path / "r.json")],
                       cwd=REPO, capture_output=True, text=True, timeout=600, env=_env(TERM="xterm-256color"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "\x1b[" not in p.stdout and "\x1b[" not in p.stderr
    assert "\r" not in p.stderr  # no redrawn progress bar
    assert "wkv4.torch " in p.stdout and p.stdout.splitlines()[-1].startswith("PASS: 10 passed, 0 failed")
    assert "─" in p.stdout  # the family table, as text
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("verify: ")]
    assert lines[-1].startswith("verify: 10/10 (100%)") and len(lines) <= 10


def test_verify_on_a_terminal_uses_rich(tmp_path):
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "wkvbench", *SMALL, "--output", str(tmp_path / "r.json")],
                            cwd=REPO, stdin=slave, stdout=slave, stderr=slave,
                            env=_env(TERM="xterm-256color", COLUMNS="150"))
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                b = os.read(master, 65536)
            except OSError:  # EIO once the child has closed the terminal
                return
            if not b:
                return
            chunks.append(b)

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    assert proc.wait(timeout=600) == 0
    t.join(timeout=30)
    os.close(master)
    out = b"".join(chunks).decode("utf-8", "replace")
    assert "\x1b[" in out  # colour / styles
    assert "─" in out and "wkv4.torch" in out  # a rich table
    assert "verify: 1/10 (10%)" not in out  # the plain-log stand-in is not used on a terminal


def test_plain_progress_prints_one_line_per_tenth():
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=False, width=100)
    assert not live(con)
    with track(con, "bench", 1000) as bar:
        for i in range(1000):
            bar.update(f"item {i}")
            bar.advance()
    lines = buf.getvalue().splitlines()
    assert len(lines) == 10 and lines[0].startswith("bench: 100/1000 (10%)")
    assert lines[-1].startswith("bench: 1000/1000 (100%)")


def test_make_console_is_plain_off_terminal(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    if sys.stdout.isatty():
        pytest.skip("stdout is a terminal here (pytest -s): the plain-text case needs captured output")
    con = make_console()  # pytest captures stdout: not a terminal
    assert con.width == 160 and not con.is_terminal and not live(con)
    monkeypatch.setenv("COLUMNS", "90")  # as on a terminal
    assert make_console().width == 90
