"""A stand-in for ``python -m wkvbench bench`` in the gate's A/B tests: writes synthetic bench/1 JSON.

    python fake_bench.py --output F.json [--variant V ...] [--slow V:1.10] [--slow-unfiltered V:1.10]

``--slow`` makes a variant slower on every run; ``--slow-unfiltered`` only on runs without a
``--variant`` filter (a fluke that a confirmation pass, which filters, does not reproduce).
Every run draws fresh samples (seeded by the output path, so a test is reproducible).
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth import bench_doc  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--output", required=True, type=Path)
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--slow", action="append", default=[], metavar="VARIANT:FACTOR")
    ap.add_argument("--slow-unfiltered", action="append", default=[], metavar="VARIANT:FACTOR")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    slow = {v: float(f) for v, f in (s.rsplit(":", 1) for s in a.slow)}
    if not a.variant:
        slow.update({v: float(f) for v, f in (s.rsplit(":", 1) for s in a.slow_unfiltered)})
    rng = np.random.default_rng([a.seed, zlib.crc32(a.output.name.encode())])
    a.output.write_text(json.dumps(bench_doc(rng, slow=slow, only=a.variant or None)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
