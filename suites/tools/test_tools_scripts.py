"""The maintainers' shell scripts under tools/: each parses (``bash -n``), and ``detach.sh`` starts a
command detached and collects it (exit code, log) from a later call, or says at once that nothing was
started (a fresh machine)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
SCRIPTS = sorted(TOOLS.glob("*.sh"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_script_parses(script):
    p = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def _detach(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(TOOLS / "detach.sh"), *args], capture_output=True, text=True, timeout=60)


def test_detach_outlives_its_caller_and_reports_the_exit_code(tmp_path):
    d, go = tmp_path / "job", tmp_path / "go"
    t0 = time.perf_counter()
    # the job ends only when the test lets it (no race with a loaded machine's scheduler)
    started = _detach("start", str(d), "bash", "-c",
                      f"echo begun; while [ ! -f {go} ]; do sleep 0.1; done; echo finished; exit 4")
    assert started.returncode == 0 and time.perf_counter() - t0 < 2  # returns at once
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not ((d / "log").is_file() and "begun" in (d / "log").read_text()):
        time.sleep(0.1)
    early = _detach("wait", str(d), "0")
    assert early.returncode == 3 and "still running" in early.stdout and "begun" in early.stdout
    go.touch()
    done = _detach("wait", str(d), "30")
    assert done.returncode == 0, done.stdout
    assert "finished" in done.stdout and "ended with exit code 4" in done.stdout
    assert (d / "rc").read_text().strip() == "4"


def test_detach_wait_on_a_fresh_machine_says_so_at_once(tmp_path):
    p = _detach("wait", str(tmp_path / "never"), "500")
    assert p.returncode == 9 and "nothing started" in p.stdout


def test_detach_wait_collects_in_the_call_that_sees_the_job_end(tmp_path):
    d, out = tmp_path / "job", tmp_path / "collected"
    assert _detach("start", str(d), "bash", "-c", "echo result > " + str(tmp_path / "r")).returncode == 0
    p = _detach("wait", str(d), "30", "cp", str(tmp_path / "r"), str(out))
    assert p.returncode == 0 and "ended with exit code 0" in p.stdout, p.stdout
    assert out.read_text() == "result\n"
    # still running: nothing is collected yet
    go = tmp_path / "go"
    _detach("start", str(d), "bash", "-c", f"while [ ! -f {go} ]; do sleep 0.1; done")
    early = _detach("wait", str(d), "0", "touch", str(tmp_path / "too-early"))
    assert early.returncode == 3 and not (tmp_path / "too-early").exists()
    go.touch()


def test_box_script_names_its_usage_and_says_when_nothing_was_started(tmp_path):
    """tools/box.sh (the lent box's side of tools/stage.sh): a wrong verb prints its usage (exit 2); ``wait``
    on a box where nothing was started says so (exit 9) instead of packing nothing."""
    box = TOOLS / "box.sh"
    p = subprocess.run(["bash", str(box), "nope"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "usage: tools/box.sh unpack MD5" in p.stderr
    if Path("/tmp/repo").exists():
        pytest.skip("/tmp/repo exists on this machine: tools/box.sh wait would read it")
    p = subprocess.run(["bash", str(box), "wait", "1", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 9 and "nothing started" in p.stdout
