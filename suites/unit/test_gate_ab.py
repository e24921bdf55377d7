"""Interleaved A/B mode with a fake bench command (``suites/data/gate/fake_bench.py``): the order of
the rounds, pooling, confirmation of suspects by a filtered re-run, and command errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from wkvbench.gate.ab import interleaved, order, render
from wkvbench.gate.core import FAIL_, UNCONFIRMED, Settings
from wkvbench.gate.inputs import GateInputError

REPO = Path(__file__).resolve().parents[2]
FAKE = (
    f"{sys.executable} {REPO / 'suites' / 'data' / 'gate' / 'fake_bench.py'} --output {{output}} {{variants}}"
)
CHUNK = "wkv7.fla.chunk"


def _ab(tmp_path: Path, cand_extra: str = "", *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "wkvbench",
            "gate",
            "ab",
            "--baseline-cmd",
            FAKE,
            "--candidate-cmd",
            FAKE + cand_extra,
            "--rounds",
            "2",
            "--workdir",
            str(tmp_path / "w"),
            "--markdown",
            str(tmp_path / "pr.md"),
            "--json",
            str(tmp_path / "g.json"),
            *extra,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_rounds_alternate_abba():
    assert order(3) == ["A", "B", "B", "A", "A", "B"]
    assert (
        render("x --output {output} {variants}", Path("/t/o.json"), ["a.b", "c*"])
        == "x --output /t/o.json --variant a.b --variant 'c*'"
    )
    with pytest.raises(GateInputError, match="placeholder"):
        render("bench --output out.json", Path("o"), [])


def test_a_vs_a_passes_and_samples_are_pooled(tmp_path):
    p = _ab(tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    names = sorted(f.name for f in (tmp_path / "w").iterdir())
    assert names == ["ab-A-00.json", "ab-A-01.json", "ab-B-00.json", "ab-B-01.json"]
    doc = json.loads((tmp_path / "g.json").read_text())
    perf = [d for d in doc["decisions"] if d["category"] == "performance"]
    assert len(perf) == 6 and all(d["numbers"]["n_baseline"] == 60 for d in perf)  # 2 rounds x 30 pooled
    assert "PASS" in (tmp_path / "pr.md").read_text()


def test_a_real_slowdown_is_confirmed_by_a_filtered_rerun(tmp_path):
    p = _ab(tmp_path, f" --slow {CHUNK}:1.10", "--confirm")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "confirming with a second interleaved pass" in p.stdout
    confirm = sorted((tmp_path / "w").glob("confirm-*.json"))
    assert len(confirm) == 4
    assert {r["variant"] for r in json.loads(confirm[0].read_text())["rows"]} == {CHUNK}  # only the suspects
    doc = json.loads((tmp_path / "g.json").read_text())
    bad = [d for d in doc["decisions"] if d["verdict"] == FAIL_]
    assert bad and all(d["variant"] == CHUNK and "confirmed:" in d["note"] for d in bad)
    assert all(d["numbers"]["confirm"]["change"] > 0.05 for d in bad)


def test_a_fluke_that_does_not_reproduce_is_not_a_failure(tmp_path):
    p = _ab(tmp_path, f" --slow-unfiltered {CHUNK}:1.10", "--confirm")
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads((tmp_path / "g.json").read_text())
    flukes = [d for d in doc["decisions"] if d["verdict"] == UNCONFIRMED]
    assert flukes and all(d["variant"] == CHUNK and "not confirmed" in d["note"] for d in flukes)
    # without --confirm the same fluke fails the gate
    assert _ab(tmp_path, f" --slow-unfiltered {CHUNK}:1.10").returncode == 1


def test_a_command_that_writes_nothing_is_bad_input(tmp_path):
    with pytest.raises(GateInputError, match="exited 3 without writing"):
        interleaved(FAKE, "exit 3 # {output}", 1, tmp_path, Settings(), log=lambda s: None)
    p = _ab(tmp_path, " --no-such-flag")
    assert p.returncode == 2 and "without writing" in p.stdout and "Traceback" not in p.stdout
