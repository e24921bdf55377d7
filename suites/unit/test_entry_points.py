"""A failing ``wkvbench.variants`` entry point of an installed package is reported (the package, the
entry point, the error, how to skip it) and skipped: the other variants still load and run, and
``list`` works. The packages are real distributions on ``sys.path`` (a ``.dist-info`` folder with its
``entry_points.txt``), found by ``importlib.metadata`` as an installed one is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

GOOD = """\
import numpy as np
from wkvbench.run.plugins import register_function
from wkvoracle import recurrent_gla

def register():
    def f(inputs, dtype):
        out = recurrent_gla(**inputs)
        return {"y": out["y"].astype(np.float32), "state": out["state"].astype(np.float32)}
    register_function("gla.goodpkg.ref", "gla", f)
"""


def _dist(site: Path, name: str, entry: str, module: str, source: str) -> None:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[wkvbench.variants]\n{entry} = {module}:register\n")
    (site / f"{module}.py").write_text(source)


@pytest.fixture
def site(tmp_path):
    site = tmp_path / "site"
    _dist(site, "goodpkg", "good", "goodpkg_plugin", GOOD)
    _dist(site, "brokenpkg", "broken", "brokenpkg_plugin", "import no_such_module_anywhere\n")
    # half-registers, then raises: what it registered is taken back
    _dist(site, "halfpkg", "half", "halfpkg_plugin",
          GOOD.replace("goodpkg", "halfpkg").replace("register_function(\"gla.halfpkg.ref\", \"gla\", f)",
                                                      "register_function(\"gla.halfpkg.ref\", \"gla\", f)\n"
                                                      "    raise RuntimeError('half way')"))
    return site


def test_a_failing_entry_point_is_warned_about_and_skipped(site, monkeypatch):
    from wkvbench.run.plugins import load_entry_points
    from wkvkernels.base import unregister, variants

    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("WKVBENCH_SKIP_ENTRY_POINTS", raising=False)
    warnings: list[str] = []
    try:
        loaded = load_entry_points(warnings.append)
        names = {v.name for v in variants("gla")}
        assert "good" in loaded and "broken" not in loaded and "half" not in loaded
        assert "gla.goodpkg.ref" in names and "gla.halfpkg.ref" not in names
        broken = next(w for w in warnings if "broken" in w)
        for words in ("entry point broken = brokenpkg_plugin:register", "brokenpkg 1.0",
                      "ModuleNotFoundError", "no_such_module_anywhere",
                      "WKVBENCH_SKIP_ENTRY_POINTS=brokenpkg:broken", "--no-entry-points"):
            assert words in broken, broken
        assert any("RuntimeError: half way" in w and "halfpkg 1.0" in w for w in warnings), warnings

        warnings.clear()
        unregister("gla.goodpkg.ref")
        monkeypatch.setenv("WKVBENCH_SKIP_ENTRY_POINTS", "brokenpkg:broken, halfpkg")
        assert load_entry_points(warnings.append) == ["good"] and warnings == []
    finally:
        unregister("gla.goodpkg.ref")
        unregister("gla.halfpkg.ref")


def _cli(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{site}"}
    env.pop("WKVBENCH_SKIP_ENTRY_POINTS", None)
    return subprocess.run([sys.executable, "-m", "wkvbench", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_list_and_verify_run_beside_a_broken_package(site, tmp_path):
    p = _cli(site, "list", "--names", "--op", "gla", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "gla.goodpkg.ref" in p.stdout and "gla.torch.recurrent" in p.stdout
    assert "brokenpkg" in p.stdout and "WKVBENCH_SKIP_ENTRY_POINTS" in p.stdout
    assert "Traceback" not in p.stderr
    out = tmp_path / "r.json"
    p = _cli(site, "verify", "--variant", "gla.goodpkg.*", "--dtype", "fp32", "--domain", "model", "--output",
             str(out), cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["counts"]["PASS"] == 3 and {r["variant"] for r in doc["results"]} == {"gla.goodpkg.ref"}
