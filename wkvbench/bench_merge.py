"""``python -m wkvbench.bench_merge --output F.json SHARD.json ...``: join bench shard files (one
machine identity) into one ``wkvbench.bench/1`` file (see ``wkvbench.bench.merge``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .bench import merge


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wkvbench.bench_merge", description=__doc__.splitlines()[0])
    ap.add_argument("--output", type=Path, required=True)
    ap.add_argument("shards", nargs="+", type=Path)
    args = ap.parse_args(argv)
    try:
        doc = merge([p for p in args.shards if p.exists()], args.output)
    except (ValueError, KeyError) as exc:
        print(f"bench_merge: {exc}", file=sys.stderr)
        return 1
    print(f"bench_merge: {len(doc['rows'])} rows -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
