"""The wheel holds every package and every file they read, found rather than listed.

pyproject finds the packages (``[tool.setuptools.packages.find]``) and names the data files by pattern
(``package-data``). This builds the wheel from a copy of the checkout, with setuptools' own backend (what
``pip install .`` runs), after adding to the copy a new operator folder as a contributor would
(``wkvkernels/<op>/`` with an adapter and a CUDA source, and nothing else edited), and requires:

* every ``.py`` file and every kernel source under ``wkvbench/``, ``wkvkernels/``, ``wkvoracle/`` in the
  wheel, the new folder's included (a hand-typed package list fails here);
* nothing else of the checkout in it (suites, tools, reports);
* the unpacked wheel, away from the checkout, registers the same variants as the checkout and finds the
  in-tree CUDA source where its adapter looks for it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("wkvbench", "wkvkernels", "wkvoracle")
DATA = (".cu", ".cuh", ".cpp", ".h", ".metal", ".html", ".j2", ".css", ".js")

NEW_OP = {
    "wkvkernels/zz_newop/__init__.py": "from . import torch_recurrent  # noqa: F401\n",
    "wkvkernels/zz_newop/torch_recurrent.py": '"""A new operator\'s adapter (test_packaging)."""\n',
    "wkvkernels/zz_newop/cuda/zz_newop.cu": "// a new operator's kernel source (test_packaging)\n",
}


def _build(tmp: Path) -> tuple[Path, Path]:
    tree = tmp / "tree"
    shutil.copytree(REPO, tree, ignore=shutil.ignore_patterns(
        ".git", ".nox", ".ruff_cache", "reports", "build", "dist", "*.egg-info", "__pycache__", ".whl*"))
    for rel, text in NEW_OP.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    out = tmp / "dist"
    out.mkdir()
    code = f"from setuptools import build_meta; print(build_meta.build_wheel({str(out)!r}))"
    p = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return tree, out / p.stdout.strip().splitlines()[-1]


def _variants(cwd: Path, pythonpath: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    code = ("import json, wkvbench, wkvkernels, wkvoracle, wkvbench.cli\n"
            "from wkvkernels.wkv4 import wkvbench_cuda\n"
            "print(json.dumps({'variants': sorted(v.name for v in wkvkernels.variants()),\n"
            "  'files': [m.__file__ for m in (wkvbench, wkvkernels, wkvoracle)],\n"
            "  'source': str(wkvbench_cuda.SOURCE), 'source_exists': wkvbench_cuda.SOURCE.is_file()}))")
    p = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_the_wheel_holds_every_package_and_its_sources(tmp_path):
    tree, wheel = _build(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    want = {p.relative_to(tree).as_posix() for top in PACKAGES for p in (tree / top).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and (p.suffix == ".py" or p.suffix in DATA)}
    assert set(NEW_OP) <= want and "wkvkernels/wkv4/cuda/wkv4.cu" in want and len(want) > 100
    assert want - names == set(), f"left out of the wheel: {sorted(want - names)}"
    ours = {n for n in names if ".dist-info/" not in n}
    assert {n.split("/")[0] for n in ours} == set(PACKAGES), sorted(ours - want)[:20]
    assert ours - want == set(), f"in the wheel but not a package file: {sorted(ours - want)}"

    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    installed = _variants(elsewhere, unpacked)
    assert all(Path(f).is_relative_to(unpacked) for f in installed["files"]), installed["files"]
    assert installed["source_exists"] and Path(installed["source"]).is_relative_to(unpacked)
    checkout = _variants(REPO, REPO)
    assert installed["variants"] == checkout["variants"] and len(checkout["variants"]) > 40


def test_the_wheel_is_ready_for_pypi(tmp_path):
    """The metadata a PyPI page shows (readme, license, classifiers, keywords, extras), each extra
    installable by name, the extra of the CPU kernels pinned as the dependency group nox installs, and the
    plug-in examples inside the wheel, where `wkvbench example` reads them."""
    import tomllib
    from email.parser import Parser

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    extras, groups = project["project"]["optional-dependencies"], project["dependency-groups"]
    assert set(extras) >= {"torch", "bf16", "testing", "cpu-kernels"}
    assert extras["cpu-kernels"] == [*extras["torch"], *groups["cpu-kernels"]]
    _, wheel = _build(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"wkvbench/examples/numpy_wkv7.py", "wkvbench/examples/numpy_gdn.py", "wkvbench/testing.py"} <= names
    meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
    meta = Parser().parsestr(zipfile.ZipFile(wheel).read(meta_name).decode())
    assert meta["Name"] == "wkvbench" and meta["Requires-Python"] == ">=3.10"
    assert meta["Description-Content-Type"] == "text/markdown" and "pip install" in meta.get_payload()
    assert meta["License"] == "Apache-2.0" and "rwkv" in meta["Keywords"]
    classifiers = meta.get_all("Classifier")
    assert "License :: OSI Approved :: Apache Software License" in classifiers and "Framework :: Pytest" in classifiers
    assert set(meta.get_all("Provides-Extra")) == set(extras)
    assert 'torch>=2.4; extra == "torch"' in meta.get_all("Requires-Dist")
