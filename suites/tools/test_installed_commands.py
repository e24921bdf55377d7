"""Every command a run prints runs as printed, from the user's own directory, with wkvbench installed
from its wheel into a fresh virtualenv (no checkout, no nox, no torch): the reproduce command of each
failure and the replay command of each shrunk case (``wkvbench/judge/commands.py``).

The wheel is built from a copy of the packages with setuptools' backend (what ``pip install .`` runs);
``pip install <wheel>`` pulls numpy and rich from PyPI (reachable in CI; pip's cache makes a second run
fast). A failing plug-in in a temporary directory is verified twice, started as the console script and
as ``python -m wkvbench`` from an interpreter that is not the ``python`` on PATH; each printed command is
then run through the shell from that directory and must reproduce the failure. Results and shrunk cases
must land in ``./wkvbench-results``, nothing in site-packages.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

BAD_PLUGIN = """\
import numpy as np
from wkvbench.run.plugins import register_function
from wkvoracle import recurrent_gla

def bad(inputs, dtype):
    out = recurrent_gla(**inputs)
    return {"y": (out["y"] * 1.01).astype(np.float32), "state": out["state"].astype(np.float32)}

register_function("gla.mylab.bad", "gla", bad, dtypes=("fp32",))
"""


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh virtualenv with wkvbench installed from its wheel."""
    tmp = tmp_path_factory.mktemp("installed")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for top in ("wkvbench", "wkvkernels", "wkvoracle"):
        shutil.copytree(REPO / top, src / top, ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp / "dist"
    dist.mkdir()
    code = f"from setuptools import build_meta; print(build_meta.build_wheel({str(dist)!r}))"
    p = subprocess.run([sys.executable, "-c", code], cwd=src, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    wheel = dist / p.stdout.strip().splitlines()[-1]
    env_dir = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=120)
    pip = [str(env_dir / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    p = subprocess.run([*pip, str(wheel)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return env_dir


def _env(venv: Path, activated: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WKVBENCH_") and k != "PYTHONPATH"}
    if activated:  # as `source venv/bin/activate` leaves it
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(venv)
    return env


def _printed_commands(work: Path, stdout: str) -> list[str]:
    """The reproduce and replay commands of the run's results file, each required on a line of stdout."""
    [results] = (work / "wkvbench-results").glob("verify-*.json")
    doc = json.loads(results.read_text())
    cmds = []
    for r in doc["results"]:
        if r["status"] != "FAIL":
            continue
        cmds.append(r["reproduce"])
        if r.get("shrunk") and r["shrunk"].get("reproduce"):
            cmds.append(r["shrunk"]["reproduce"])
    lines = stdout.splitlines()
    for c in cmds:
        assert any(line.rstrip().endswith(c) for line in lines), f"not printed on one line: {c}\n{stdout}"
    return cmds


@pytest.mark.parametrize("started", ["console-script", "python-m"])
def test_every_printed_command_runs_as_printed_outside_the_checkout(venv, tmp_path, started):
    work = tmp_path / "mykernel"
    work.mkdir()
    (work / "bad.py").write_text(BAD_PLUGIN)
    activated = started == "console-script"
    env = _env(venv, activated)
    prog = ["wkvbench"] if activated else [str(venv / "bin" / "python"), "-m", "wkvbench"]
    args = ["verify", "--plugin", "bad.py", "--variant", "gla.mylab.*", "--domain", "model", "--jobs", "1"]
    p = subprocess.run([*prog, *args], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stdout[-4000:] + p.stderr[-4000:]
    cmds = _printed_commands(work, p.stdout)
    reproduce = [c for c in cmds if " verify " in c]
    replay = [c for c in cmds if " replay " in c]
    assert reproduce and replay, cmds
    for c in cmds:
        assert "nox" not in c and "--plugin bad.py" in c, c
        want = "wkvbench " if activated else f"{venv / 'bin' / 'python'} -m wkvbench "
        assert c.startswith(want), c
    assert (work / "wkvbench-results" / "shrunk").is_dir()
    site = next((venv / "lib").glob("python*/site-packages"))
    assert not (site / "reports").exists(), "results in site-packages"
    ours = [f for f in site.rglob("*") if f.name.startswith("verify-") or "mylab" in f.name]
    assert ours == [], f"results in site-packages: {ours}"
    assert "the baseline bound was not applied" in p.stdout  # no torch here: the summary says so

    for c in reproduce[:1] + replay[:1]:  # one of each kind: every reproduce line has the same form
        q = subprocess.run(c, shell=True, cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert q.returncode == 1, f"{c}\n{q.stdout[-3000:]}{q.stderr[-3000:]}"
        assert "FAIL" in q.stdout and "gla.mylab.bad" in q.stdout, q.stdout[-3000:]
        assert "no registered variant" not in q.stdout and "Traceback" not in q.stderr
