"""The selection options every command that picks variants shares (``verify``, ``list``, ``drift``,
``bench``, ``properties``): operators, variant globs, dtypes, exclusions, devices, plug-ins; and where
results go without ``--output``."""

from __future__ import annotations

import argparse
from pathlib import Path

from wkvkernels.ops import DTYPES, OPS

from ..judge.commands import default_results_dir

REPO = Path(__file__).resolve().parents[2]


def selection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--op", action="append", default=[], choices=sorted(OPS), help="operator (repeatable)")
    p.add_argument("--variant", action="append", default=[], metavar="GLOB",
                   help="variant name glob, e.g. 'wkv7.*' or '*.ggml.*' (repeatable)")
    p.add_argument("--dtype", action="append", default=[], choices=DTYPES, help="dtype (repeatable)")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="leave out variants matching this glob (repeatable)")
    p.add_argument("--device", action="append", default=[], choices=("cpu", "cuda", "metal"),
                   help="only variants that run on this device (repeatable)")
    p.add_argument("--plugin", action="append", default=[], metavar="PATH",
                   help="Python file that registers extra variants (repeatable)")
    p.add_argument("--no-entry-points", action="store_true",
                   help="do not load installed 'wkvbench.variants' entry points")


def results_dir() -> Path:
    """Where results go when no --output is given: WKVBENCH_RESULTS_DIR, else the checkout's
    reports/results when run inside it, else ./wkvbench-results (never the installed package's folder:
    ``judge.commands.default_results_dir``)."""
    return default_results_dir()
