"""Our adapters and the PyPI distribution ``kernels`` coexist.

The adapters were once a top-level folder ``kernels/``: run from the repository root (``python -c``,
``python -m``, pytest's ``pythonpath = ["."]``), the root is on ``sys.path`` ahead of site-packages,
so that folder was found as top-level ``kernels``, the name of Hugging Face's distribution, which
transformers probes for (``find_spec`` + metadata, and as a last resort by importing it), and it took a
hand-over in its ``__init__`` to keep transformers' probe from crashing. The package is now
``wkvkernels``, and no name of ours is ``kernels``; this test keeps it that way.

Each check runs in fresh subprocesses, in the same environment, twice: with the repository root as
the working directory (our registry, fla and transformers imported, then ``import kernels``),
and as a control from an empty directory with no repository on the path. The answers must agree and
``wkvkernels.__file__`` must lie in the repository. Both situations are covered in every
environment: the real one (HF ``kernels`` installed or not), and the other one simulated: a stub
distribution named ``kernels`` on PYTHONPATH, or a view of site-packages without HF's package
(``python -S`` plus a folder of symlinks to every other entry).
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import importlib.util, json, sys
for d in SITEDIRS:  # only with -S: the environment's site dirs, one replaced by a view without HF's kernels
    import site; site.addsitedir(d)
res = {"cwd_on_path": sys.path[0] in ("", "."), "order": ORDER}
def wkvbench_registry():
    import wkvbench.cli, wkvkernels
    res["wkvkernels"] = wkvkernels.__file__
    res["variants"] = len(wkvkernels.variants())
def transformers_probe():
    import transformers
    from transformers.utils import import_utils as iu
    res["transformers"] = transformers.__version__
    res["is_kernels_available"] = iu.is_kernels_available()
    if hasattr(iu, "_is_package_available"):
        res["probe"] = list(iu._is_package_available("kernels", return_version=True))
for step in ORDER:
    if step == "wkvbench":
        wkvbench_registry()
    elif step == "fla":
        import fla; res["fla"] = fla.__version__
    elif step == "transformers":
        transformers_probe()
try:
    import kernels
    res["kernels"] = {"file": getattr(kernels, "__file__", None),
                      "path": [str(p) for p in getattr(kernels, "__path__", [])],
                      "version": getattr(kernels, "__version__", None)}
except ImportError as exc:
    res["kernels"] = {"error": repr(exc)}
print("RESULT " + json.dumps(res))
"""


def _hf_kernels_site() -> Path | None:
    """The site-packages folder holding an installed ``kernels`` distribution, or None."""
    try:
        dist = md.distribution("kernels")
    except md.PackageNotFoundError:
        return None
    return Path(dist.locate_file("")).resolve()


def _run(cwd: Path, order: list[str], env_extra: dict, sitedirs: list[str] | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    env.update(env_extra)
    code = PROBE.replace("SITEDIRS", repr(sitedirs or [])).replace("ORDER", repr(order))
    cmd = [sys.executable, *(["-S"] if sitedirs else []), "-c", code]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"probe failed in {cwd} (order {order}):\n{proc.stderr[-3000:]}"
    return json.loads(lines[-1][len("RESULT "):])


def _inside_repo(p: str | None) -> bool:
    """True for a file of this repository's own tree; an installed package (site-packages, e.g. of
    a nox virtualenv kept under the repository's .nox/) is not part of it."""
    if p is None:
        return False
    path = Path(p).resolve()
    return path.is_relative_to(ROOT) and "site-packages" not in path.parts


def _stub_site(tmp: Path) -> Path:
    """A folder with a minimal distribution named ``kernels`` (package + dist-info)."""
    d = tmp / "stub-site"
    (d / "kernels").mkdir(parents=True)
    (d / "kernels" / "__init__.py").write_text('__version__ = "0.0.1"\nSTUB = True\n')
    (d / "kernels-0.0.1.dist-info").mkdir()
    meta = "Metadata-Version: 2.1\nName: kernels\nVersion: 0.0.1\n"
    (d / "kernels-0.0.1.dist-info" / "METADATA").write_text(meta)
    return d


def _view_without(tmp: Path, hf_site: Path) -> list[str]:
    """Site dirs for ``python -S`` in which ``hf_site`` is replaced by symlinks to all but HF's kernels."""
    view = tmp / "site-without-kernels"
    view.mkdir()
    for entry in hf_site.iterdir():
        if entry.name == "kernels" or (entry.name.startswith("kernels-") and entry.suffix == ".dist-info"):
            continue
        (view / entry.name).symlink_to(entry)
    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    return [str(view) if Path(d).resolve() == hf_site else d for d in dirs if Path(d).is_dir()]


@pytest.mark.thirdparty
@pytest.mark.parametrize("hf_kernels", ["absent", "present"])
def test_kernels_folder_neither_shadows_nor_is_shadowed(hf_kernels, tmp_path, capsys):
    missing = [m for m in ("transformers", "fla") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (dependency group `clash` + fla-core)")
    hf_site = _hf_kernels_site()
    env_extra: dict = {}
    sitedirs = None
    if hf_kernels == "present" and hf_site is None:
        how = "simulated: stub distribution kernels 0.0.1 on PYTHONPATH"
        env_extra["PYTHONPATH"] = str(_stub_site(tmp_path))
    elif hf_kernels == "absent" and hf_site is not None:
        how = f"simulated: python -S with a view of {hf_site} without HF's kernels"
        sitedirs = _view_without(tmp_path, hf_site)
    else:
        how = "real: " + (f"HF kernels {md.version('kernels')} installed" if hf_site
                          else "HF kernels not installed")

    empty = tmp_path / "elsewhere"
    empty.mkdir()
    control = _run(empty, ["fla", "transformers"], env_extra, sitedirs)
    assert not control.get("wkvkernels") and not _inside_repo(control["kernels"].get("file"))
    runs = [_run(ROOT, order, env_extra, sitedirs)
            for order in (["wkvbench", "fla", "transformers"], ["transformers", "fla", "wkvbench"])]

    for res in runs:
        where = f"from the repo root, order {res['order']}"
        assert res["cwd_on_path"], "the probe must run with the repository root first on sys.path"
        assert _inside_repo(res["wkvkernels"]), f"{where}: {res['wkvkernels']}"
        assert res["variants"] > 0
        # transformers' probe answers as it does where our folder is not on the path at all
        assert res["is_kernels_available"] == control["is_kernels_available"], where
        assert res.get("probe") == control.get("probe"), where
        # and `import kernels` gives what it gives there: the distribution, or nothing of ours
        got = res["kernels"]
        assert not _inside_repo(got.get("file")) and not any(_inside_repo(p) for p in got.get("path", [])), \
            f"{where}: `import kernels` found our folder: {got}"
        if hf_kernels == "present":
            want = control["kernels"]
            assert (got["file"], got["version"]) == (want["file"], want["version"]), f"{where}: {got}"
        else:
            assert control["is_kernels_available"] is False
            assert got.get("file") is None and got.get("version") is None, f"{where}: {got}"

    proved = (f"coexistence with HF kernels {hf_kernels} ({how}): transformers {runs[0]['transformers']}, "
              f"fla {runs[0]['fla']}: (available, version) = {runs[0].get('probe')}, "
              f"is_kernels_available() = {runs[0]['is_kernels_available']} from the repo root and elsewhere; "
              f"import kernels -> "
              f"{runs[0]['kernels'].get('file')}")
    with capsys.disabled():
        print(f"\n  {proved}")
