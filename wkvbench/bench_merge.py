"""``python -m wkvbench.bench_merge --output F.json SHARD.json ...``: join bench shard files (one
machine identity) into one ``wkvbench.bench/1`` file (see ``wkvbench.bench.merge``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .bench import merge


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wkvbench.bench_merge", description=__doc__.splitlines()[0])
    ap.add_argument("--output", type=Path)
    ap.add_argument("--slug", action="store_true", help="print this machine's asv machine name and exit")
    ap.add_argument("--markdown", action="store_true", help="print the shards' OK rows as a Markdown table")
    ap.add_argument("shards", nargs="*", type=Path)
    args = ap.parse_args(argv)
    if args.slug:
        from .bench import machine_slug
        from .provenance import provenance

        print(machine_slug(provenance()))
        return 0
    if args.markdown:
        import json

        from .bench import markdown_table

        print(markdown_table([r for p in args.shards for r in json.loads(p.read_text())["rows"]]))
        return 0
    if args.output is None or not args.shards:
        ap.error("--output and at least one shard are needed")
    try:
        doc = merge([p for p in args.shards if p.exists()], args.output)
    except (ValueError, KeyError) as exc:
        print(f"bench_merge: {exc}", file=sys.stderr)
        return 1
    print(f"bench_merge: {len(doc['rows'])} rows -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
