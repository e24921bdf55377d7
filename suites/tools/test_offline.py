"""The offline path, as a GPU box without network takes it, proven on this machine.

A wheelhouse made by ``nox -s wheelhouse`` for this interpreter and platform (``--here --cpu``: with
torch 2.13.0 and the CPU kernel packages, which a GPU box has of its own) is installed with
``--no-index`` into a fresh virtualenv: nox and its dependencies first, then ``nox -s verify`` builds
its own virtualenv from the folder alone and verifies the CPU variants of one operator. pip's own
configuration (this machine's extra indexes and find-links) is switched off for the offline steps, so
a package missing from the wheelhouse fails the test instead of being found elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _run(cmd: list[str], env: dict | None = None, cwd: Path | None = None, timeout: float = 1800):
    p = subprocess.run(cmd, env={**os.environ, **(env or {})}, cwd=cwd, capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


def _fresh_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    return path / "bin" / "python"


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    """``nox -s wheelhouse -- --here --cpu`` run by a nox installed (online) into a venv of its own."""
    root = tmp_path_factory.mktemp("offline")
    py = _fresh_venv(root / "maker")
    _run([str(py), "-m", "pip", "install", "-q", "nox"])
    dest = root / "wheelhouse"
    _run([str(py), "-m", "nox", "-f", str(REPO / "noxfile.py"), "--envdir", str(root / "nox-maker"),
          "-s", "wheelhouse", "--", "--here", "--cpu", "--dest", str(dest)], cwd=REPO)
    return dest


def test_nox_and_the_cpu_verify_install_from_the_wheelhouse_alone(wheelhouse, tmp_path):
    offline = {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse),
               "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    py = _fresh_venv(tmp_path / "box")
    _run([str(py), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheelhouse), "nox"], env=offline)
    tree = tmp_path / "repo"  # a copy of the checkout: the offline nox keeps its virtualenvs apart
    shutil.copytree(REPO, tree, ignore=shutil.ignore_patterns(".nox", ".git", ".whl*", "reports", ".devrun"))
    out = tmp_path / "verify.json"
    p = _run([str(py), "-m", "nox", "-s", "verify", "--", "--op", "wkv7", "--device", "cpu", "--dtype", "fp32",
              "--domain", "model", "--output", str(out)],
             env={**offline, "WKVBENCH_WHEELHOUSE": str(wheelhouse)}, cwd=tree)
    doc = json.loads(out.read_text())
    assert doc["complete"] and doc["counts"]["FAIL"] == 0 and doc["counts"]["ERROR"] == 0
    ran = {r["variant"] for r in doc["results"] if r["status"] == "PASS"}
    # the third-party CPU kernels came from the wheelhouse too: ggml (built from its sdist there), rwkv-ops, FLA
    assert {"wkv7.torch.recurrent", "wkv7.ggml.cpu", "wkv7.rwkv_ops.native", "wkv7.fla.naive_dplr_recurrent"} <= ran
    assert "--no-index" in p.stdout + p.stderr  # every install of the session went to the folder only
    assert sys.version.split()[0] == doc["provenance"]["machine"]["python"]
    # the same session again (a warm box): the virtualenv ran each of these installs to its end already, with
    # this wheelhouse, so no pip command runs (noxfile._install)
    again = _run([str(py), "-m", "nox", "-s", "verify", "--install-only"],
                 env={**offline, "WKVBENCH_WHEELHOUSE": str(wheelhouse)}, cwd=tree)
    log = again.stdout + again.stderr
    assert "already installed in this virtualenv" in log and "pip install" not in log, log[-3000:]
