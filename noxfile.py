#!/usr/bin/env -S uv run --script
# /// script
# dependencies = ["nox>=2024.10.9"]
# ///
"""wkvbench sessions.

    nox -s verify   # the verification matrix on whatever hardware is present (CPU by default)
    nox -s tests    # the project's own tests (what CI runs)
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


def _install_runtime(session: nox.Session, *groups: str) -> None:
    """torch first (so nothing pulls a different build), then numpy/rich and the named groups."""
    if TORCH != "system":
        session.install(TORCH)
    reqs = [r for g in groups for r in GROUPS[g]]
    # ggml-python compiles ggml; keep its build single-purpose and visible in the log
    session.install(*reqs, env={"CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)})
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
    _install_runtime(session, "test", "cpu-kernels")
    session.run("python", "-m", "wkvbench", "verify", *session.posargs)


@nox.session(default=False)
def lint(session: nox.Session) -> None:
    """ruff over the whole tree."""
    session.install("ruff")
    session.run("ruff", "check", ".", *session.posargs)


if __name__ == "__main__":
    nox.main()
