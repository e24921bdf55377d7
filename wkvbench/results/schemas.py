"""The name and version of every results file the suite writes or reads, in one place, and the one
way they are written (``atomic_write``) and read (``read_text``).

A file carries its schema in ``"schema"``; a reader refuses a file whose schema it does not know
(docs/results-format.md describes each)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

VERIFY = "wkvbench.verify/1"  # verify: every result with its errors, provenance, skips by reason
BENCH = "wkvbench.bench/1"  # bench: device times, roofline, how each row was timed
PROPERTIES = "wkvbench.properties/1"  # properties: state passing, invariances, determinism
RUN = "wkvbench.run/1"  # a `nox -s gpu` run: phases, time breakdown, CPU seconds, load
STABILITY = "wkvbench.stability/1"  # the timing engine against triton's do_bench
GATE = "wkvbench.gate/1"  # a regression gate verdict
NOISE = "wkvbench.gate-noise/1"  # the run-to-run noise the gate measured on one machine
SANITIZE = "wkvbench.sanitize/1"  # compute-sanitizer runs of the CUDA variants
FIB = "wkvbench.fib/1"  # wkvbench fib: flashinfer-bench workloads, our verdict and its 1e-2 rule side by side
AUTOTUNE = "wkvbench.autotune/1"  # a `nox -s gpu` run's autotune choices per kernel and key (run/tuned.py)
ORACLE_RATE = "wkvbench.oracle-rate/1"  # the fast float64 oracle's speed against NumPy's matmul rate
ASV = "asv/2"  # asv's result files (api version 2), read by the gate and the report


def atomic_write(path: Path, text: str) -> None:
    """``text`` into ``path`` through a temporary file renamed over it (``os.replace``): a reader, or a
    run killed mid-write, sees the old file or the new one, never a torn one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def read_text(path: Path) -> str:
    """The text of a results file; ``*.gz`` is decompressed. The large results committed to the
    repository (a GPU box's verify.json, the CPU edge runs, mutants) are kept gzip-compressed
    (``verify.json.gz``): every reader of committed results goes through here."""
    path = Path(path)
    if path.name.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return f.read()
    return path.read_text()


def is_results_name(name: str) -> bool:
    """A name a results file can have: ``*.json``, or ``*.json.gz`` for a compressed one."""
    return name.endswith(".json") or name.endswith(".json.gz")


def partial_rows(path: Path) -> list[dict]:
    """The rows of a results stream (``F.partial.jsonl``, one JSON object a line), the last line left
    out where a killed run cut it mid-write; any other line that is not JSON raises ``ValueError``."""
    lines = Path(path).read_text().splitlines()
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if n == len(lines):
                break
            raise ValueError(f"{path}:{n}: not a JSON results row") from None
    return rows


def append_partial(path: Path):
    """``path`` opened to append rows; a last line a killed run cut mid-write is cut off first, so the
    next row starts a line of its own (and the stream keeps no torn line between rows)."""
    path = Path(path)
    if path.is_file():
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            with path.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)
    return path.open("a")
