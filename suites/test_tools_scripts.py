"""Every shell script under tools/ parses (``bash -n``): they run on GPU boxes, where a syntax error
would cost a whole device session."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parent.parent / "tools").glob("*.sh"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_script_parses(script):
    p = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_gpu_full_collect_copies_what_exists(tmp_path):
    """The collect step of tools/gpu_full.sh copies the finished run's files and nothing else."""
    run, out = tmp_path / "run", tmp_path / "out"
    (run / "parts").mkdir(parents=True)
    out.mkdir()
    (run / "done").write_text("")
    (run / "run.log").write_text("log\n")
    (run / "verify-gpu-all.json").write_text("{}")
    script = next(p for p in SCRIPTS if p.name == "gpu_full.sh")
    p = subprocess.run(["bash", str(script), "--collect", str(run), str(out)], capture_output=True, text=True,
                       env={"WKVBENCH_COLLECT_WAIT": "0", "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in out.iterdir()) == ["run.log", "verify-gpu-all.json"]


def test_gpu_full_snapshot_packs_the_parts_so_far(tmp_path):
    """--snapshot packs RESULTS_DIR/parts and run.log into OUT/snapN.tar.gz, a new N each call."""
    import tarfile
    run, out = tmp_path / "run", tmp_path / "out"
    (run / "parts").mkdir(parents=True)
    out.mkdir()
    (run / "parts" / "verify-x.json").write_text("{}")
    (run / "run.log").write_text("[1s] x rc=0\n")
    script = next(p for p in SCRIPTS if p.name == "gpu_full.sh")
    for _ in range(2):
        p = subprocess.run(["bash", str(script), "--snapshot", str(run), str(out)], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin"})
        assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in out.iterdir()) == ["snap1.tar.gz", "snap2.tar.gz"]
    with tarfile.open(out / "snap2.tar.gz") as t:
        assert {"parts/verify-x.json", "run.log"} <= set(t.getnames())
