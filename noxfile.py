#!/usr/bin/env -S uv run --script
# /// script
# dependencies = ["nox>=2024.10.9"]
# ///
"""wkvbench sessions.

    nox -s verify   # the verification matrix on whatever hardware is present (CPU by default)
    nox -s tests    # the project's own tests (what CI runs)
    nox -s gate -- --baseline B.json --candidate C.json   # the CI regression gate (README)
    nox -l          # list sessions

Every session installs what it needs into its own virtualenv from PyPI. Third-party kernel
packages come from their real distributions (ggml-python builds ggml's CPU backend from source:
about 2 minutes on 2 cores). torch is pinned to 2.13.0 where no torch is preinstalled; set
``WKVBENCH_TORCH`` to another requirement (e.g. ``torch==2.11.0``) or to ``system`` to reuse the
interpreter's torch through ``--system-site-packages`` (GPU boxes with a CUDA build of torch).
Arguments after ``--`` go to the underlying command.
"""

from __future__ import annotations

import os

import nox

nox.needs_version = ">=2024.3.2"
nox.options.default_venv_backend = "virtualenv"
nox.options.sessions = ["tests"]
nox.options.reuse_venv = "yes"

PYPROJECT = nox.project.load_toml("pyproject.toml")
GROUPS: dict[str, list[str]] = PYPROJECT["dependency-groups"]
TORCH = os.environ.get("WKVBENCH_TORCH", "torch==2.13.0")


WHEELHOUSE = os.environ.get("WKVBENCH_WHEELHOUSE")  # offline: install only from this folder


def _install_runtime(session: nox.Session, *groups: str) -> None:
    """torch first (so nothing pulls a different build), then numpy/rich and the named groups.

    With ``WKVBENCH_WHEELHOUSE`` set (a folder made by ``nox -s wheelhouse``), nothing is fetched:
    every package comes from that folder, on top of the interpreter's own torch/triton.
    """
    offline = ["--no-index", "--find-links", WHEELHOUSE] if WHEELHOUSE else []
    if TORCH != "system":
        session.install(*offline, TORCH)
    reqs = [r for g in groups for r in GROUPS[g]]
    # ggml-python compiles ggml (CMAKE_ARGS="-DGGML_CUDA=on ..." from the environment builds CUDA)
    session.install(*offline, *reqs, env={"CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)})
    session.run("python", "-c", "import sys, numpy, torch; print(sys.version.split()[0], 'numpy', numpy.__version__, 'torch', torch.__version__)")


def _venv_params() -> dict:
    return {"venv_params": ["--system-site-packages"]} if TORCH == "system" else {}


@nox.session(**_venv_params())
def tests(session: nox.Session) -> None:
    """The project's own tests: oracle self-checks, the judge, the registry, every CPU variant vs the oracle."""
    _install_runtime(session, "test", "cpu-kernels", "clash")
    session.run("python", "-m", "pytest", *session.posargs, env={"PYTHONHASHSEED": "0"})


@nox.session(**_venv_params())
def verify(session: nox.Session) -> None:
    """The verification matrix: every available variant x operator x dtype x domain vs the float64 oracle.

    Filters: ``nox -s verify -- --op wkv7 --variant '*.ggml.*' --dtype bf16 --plugin my.py``.
    Writes ``reports/results/verify-<timestamp>.json``; exits non-zero on any failure.
    """
    gpu = ("gpu-kernels",) if TORCH == "system" or WHEELHOUSE else ()
    _install_runtime(session, "test", "cpu-kernels", *gpu)
    session.run("python", "-m", "wkvbench", "verify", *session.posargs)


@nox.session(default=False)
def wheelhouse(session: nox.Session) -> None:
    """Download every package the GPU sessions need into a folder, for a GPU box without network.

    ``nox -s wheelhouse -- [--dest wheelhouse] [--python-version 3.12] [--platform manylinux_2_28_x86_64]``.
    On the box: ``WKVBENCH_WHEELHOUSE=$PWD/wheelhouse WKVBENCH_TORCH=system nox -s verify -- --set gpu``
    (nox itself from the folder: ``pip install --no-index --find-links wheelhouse nox``), or without
    nox, ``tools/gpu_verify.sh wheelhouse`` (README "Offline GPU boxes").
    """
    import argparse

    ap = argparse.ArgumentParser(prog="nox -s wheelhouse --")
    ap.add_argument("--dest", default="wheelhouse")
    ap.add_argument("--python-version", default="3.12")
    ap.add_argument("--platform", action="append", default=[])
    a = ap.parse_args(session.posargs)
    plats = a.platform or [f"manylinux_2_{n}_x86_64" for n in (17, 27, 28, 34)] + ["manylinux2014_x86_64"]
    common = ["python", "-m", "pip", "download", "--no-deps", "-d", a.dest]
    binary = ["--only-binary=:all:", "--python-version", a.python_version, "--implementation", "cp"]
    binary += [x for p in plats for x in ("--platform", p)]
    session.run(*common, *binary, *GROUPS["wheelhouse"])
    session.run(*common, "--no-binary=:all:", "ggml-python==0.0.45")  # built on the box, with CUDA
    for tool in ("nox", "virtualenv", "colorlog", "argcomplete", "dependency-groups", "distlib",
                 "filelock", "platformdirs", "packaging", "attrs"):
        session.run(*common, *binary, tool)


@nox.session(default=False)
def lint(session: nox.Session) -> None:
    """ruff over the whole tree."""
    session.install("ruff")
    session.run("ruff", "check", ".", *session.posargs)


@nox.session(default=False)
def gate(session: nox.Session) -> None:
    """The CI regression gate: baseline vs candidate results (verify/1, bench/1, asv files).

    ``nox -s gate -- --baseline B.json [...] --candidate C.json [...] [--noise N.json] [--markdown PR.md]``;
    ``nox -s gate -- noise --runs a.json b.json c.json --output N.json``;
    ``nox -s gate -- ab --baseline-cmd "..." --candidate-cmd "..." --rounds 3 --confirm``.
    Exit 0 pass, 1 regression, 2 bad input, 3 not comparable. Installs only the package (numpy, rich).
    """
    offline = ["--no-index", "--find-links", WHEELHOUSE] if WHEELHOUSE else []
    session.install(*offline, ".")
    session.run("python", "-m", "wkvbench", "gate", *session.posargs)


if __name__ == "__main__":
    nox.main()
