"""The commands the suite prints for a user to run again: reproduce a failure (``verify --variant V
--case ID``), replay a shrunk one (``replay FILE.npz``), re-time a bench row. One function builds them
all (``command``), so every printed line runs as printed, from the directory it was printed in:

* **the program.** ``nox -s <session> --`` only where the working directory is this repository's
  checkout (its ``noxfile.py`` beside the package: nox reads the noxfile of the working directory).
  Anywhere else the program as it was started: the ``wkvbench`` console script, or ``python -m
  wkvbench`` (the interpreter's own path where ``python`` on PATH is another one, as in a virtualenv
  that is not activated).
* **the plug-ins.** A variant registered by a plug-in file (``--plugin``) gets ``--plugin PATH``: the
  path relative to the working directory where the file is under it, else absolute. Variants of an
  installed entry point need nothing: they load again by themselves.
* **the mutant panel.** ``--mutants`` for its deliberately wrong variants.

It also says where results go without ``--output`` (``default_results_dir``): the checkout's
``reports/results`` inside the checkout, ``./wkvbench-results`` in the working directory anywhere else
(never the installed package's folder, which is site-packages after ``pip install``), and
``WKVBENCH_RESULTS_DIR`` over both.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

from wkvkernels import config

ROOT = Path(__file__).resolve().parents[2]  # the checkout, where the package runs from one
RESULTS_FOLDER = "wkvbench-results"  # outside the checkout: results under the working directory

# variant name -> the plug-in file that registered it (``wkvbench.run.plugins.load_file`` notes it)
PLUGIN_FILES: dict[str, Path] = {}
# case domain of an outside case source -> the options that load it again (``--fib-definition D
# --fib-workloads W ...``, noted by ``wkvbench.run.fibench``): its rows' commands carry them
CASE_OPTIONS: dict[str, list[str]] = {}


def note_plugin(names: Iterable[str], path: str | Path) -> None:
    """Record that the plug-in file ``path`` registered the variants ``names``."""
    for name in names:
        PLUGIN_FILES[name] = Path(path).resolve()


def is_checkout(root: Path | None = None) -> bool:
    """Whether ``root`` (default: the folder the package is imported from) is this repository's checkout."""
    root = ROOT if root is None else root
    return (root / "noxfile.py").is_file() and (root / "wkvbench" / "__init__.py").is_file()


def in_checkout(cwd: Path | None = None) -> bool:
    """Whether the working directory is inside the checkout the package runs from (False for an
    installed package: its folder is site-packages, which has no noxfile)."""
    cwd = (cwd or Path.cwd()).resolve()
    return is_checkout() and (cwd == ROOT or ROOT in cwd.parents)


def default_results_dir() -> Path:
    """Where results go without ``--output``: ``$WKVBENCH_RESULTS_DIR``, else the checkout's
    ``reports/results`` when the working directory is in the checkout, else ``./wkvbench-results``."""
    if (named := config.results_dir()) is not None:
        return named
    return ROOT / "reports" / "results" if in_checkout() else Path.cwd() / RESULTS_FOLDER


def default_reports_dir() -> Path:
    """The folder ``report`` reads by default, and the root of release-history results: the checkout's
    ``reports/`` in the checkout, the results folder anywhere else."""
    return ROOT / "reports" if in_checkout() else default_results_dir()


def _same_file(found: str | None, path: str) -> bool:
    # no symlinks resolved: a virtualenv's bin/python links to the system interpreter, but is not it
    return found is not None and os.path.abspath(found) == os.path.abspath(path)


def program() -> str:
    """How to start wkvbench from here, as this process was started: ``wkvbench`` (the console
    script) or ``python -m wkvbench``, by full path where the name on PATH is another program."""
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if Path(argv0).name == "wkvbench":  # the console script pip installed
        if _same_file(shutil.which("wkvbench"), argv0):
            return "wkvbench"
        return shlex.quote(os.path.abspath(argv0))
    for name in ("python", "python3"):
        if _same_file(shutil.which(name), sys.executable):
            return f"{name} -m wkvbench"
    return f"{shlex.quote(sys.executable)} -m wkvbench"


def shown_path(path: str | Path, cwd: Path | None = None) -> str:
    """``path`` as a command line names it from ``cwd``: relative where it is under it, else absolute."""
    cwd = (cwd or Path.cwd()).resolve()
    p = Path(path).resolve()
    try:
        return str(p.relative_to(cwd))
    except ValueError:
        return str(p)


def variant_options(variants: Iterable[str]) -> list[str]:
    """``--plugin PATH`` for each variant's plug-in file (each file once), ``--mutants`` for mutants."""
    out: list[str] = []
    for name in variants:
        if (path := PLUGIN_FILES.get(name)) is not None and shlex.quote(shown_path(path)) not in out:
            out += ["--plugin", shlex.quote(shown_path(path))]
        if ".mutant." in name and "--mutants" not in out:
            out.append("--mutants")
    return out


def command(sub: str, *args: str, variants: Iterable[str] = ()) -> str:
    """The command line that runs ``wkvbench <sub> <args>`` from the working directory, with the
    options that load ``variants`` (``variant_options``). ``args`` are quoted here. In the checkout,
    ``verify`` and ``bench`` go through their nox sessions (which install what they need)."""
    words = [shlex.quote(a) for a in args] + variant_options(variants)
    if sub in ("verify", "bench") and is_checkout() and Path.cwd().resolve() == ROOT:
        return " ".join([f"nox -s {sub} --", *words])
    return " ".join([program(), sub, *words])


def verify_command(variant: str, case_id: str, *, backward: bool = False, configs: bool = False) -> str:
    """The command that re-runs one (variant, case) row."""
    extra = (["--backward"] if backward else []) + (["--configs"] if configs else [])
    source = CASE_OPTIONS.get(case_id.split("/")[1] if case_id.count("/") == 4 else "", [])
    return command("verify", "--variant", variant, "--case", case_id, *extra, *source, variants=[variant])


def replay_command(npz: str | Path, variant: str) -> str:
    """The command that replays a shrunk failure saved at ``npz``."""
    return command("replay", shown_path(npz), variants=[variant])


__all__ = ["CASE_OPTIONS", "PLUGIN_FILES", "RESULTS_FOLDER", "command", "default_reports_dir", "default_results_dir",
           "in_checkout", "is_checkout", "note_plugin", "program", "replay_command", "shown_path",
           "variant_options", "verify_command"]
