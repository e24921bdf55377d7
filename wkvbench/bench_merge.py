"""``python -m wkvbench.bench_merge --output F.json SHARD.json ...``: join bench shard files (one
machine identity) into one ``wkvbench.bench/1`` file (see ``wkvbench.bench.merge``).

``python -m wkvbench.bench_merge --gpus N --output F.json -- [bench arguments]`` runs the bench on a
host with several GPUs: one worker process per GPU, all at once, worker ``i`` with
``CUDA_VISIBLE_DEVICES=i`` and ``--shard i/N`` (so no GPU ever holds two timed runs), then merges
their shards into F.json (``nox -s bench`` calls this)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from .bench import merge


def run_on_gpus(bench_args: list[str], ngpu: int, out: Path, worker: list[str] | None = None,
                log_dir: Path | None = None) -> tuple[dict | None, list[int]]:
    """One ``wkvbench bench`` worker per GPU (``CUDA_VISIBLE_DEVICES=i``, ``--shard i/ngpu``), started
    together; their shard files are merged into ``out`` and removed. Returns the merged document
    (None when no worker wrote a shard) and the GPU indices whose worker failed (exit status other
    than 0, or 1 = some rows not OK). ``worker`` replaces ``python -m wkvbench bench`` (tests); with
    ``log_dir`` each worker's output goes to ``bench-gpu<i>.log`` there."""
    if ngpu < 1:
        raise ValueError(f"run_on_gpus needs at least one GPU, got {ngpu}")
    cmd = worker or [sys.executable, "-m", "wkvbench", "bench"]
    shards = [out.with_name(f"{out.stem}.shard{i}.json") for i in range(ngpu)]
    logs = []
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        logs = [open(log_dir / f"bench-gpu{i}.log", "ab") for i in range(ngpu)]  # noqa: SIM115
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
    procs = [subprocess.Popen([*cmd, *bench_args, "--shard", f"{i}/{ngpu}", "--output", str(shards[i])],
                              env={**os.environ, "CUDA_VISIBLE_DEVICES": visible[i] if len(visible) == ngpu
                                   and visible[i] else str(i)},
                              stdout=logs[i] if logs else None, stderr=subprocess.STDOUT if logs else None)
             for i in range(ngpu)]
    failed = [i for i, p in enumerate(procs) if p.wait() not in (0, 1)]
    for f in logs:
        f.close()
    written = [sh for sh in shards if sh.exists()]
    doc = merge(written, out) if written else None
    for sh in written:
        sh.unlink()
    return doc, failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wkvbench.bench_merge", description=__doc__.splitlines()[0])
    ap.add_argument("--output", type=Path)
    ap.add_argument("--slug", action="store_true", help="print this machine's asv machine name and exit")
    ap.add_argument("--markdown", action="store_true", help="print the shards' OK rows as a Markdown table")
    ap.add_argument("--gpus", type=int, help="run the bench arguments after -- with one worker per GPU")
    ap.add_argument("shards", nargs="*", type=Path)
    argv = list(sys.argv[1:] if argv is None else argv)
    bench_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    if args.gpus is not None:
        if args.output is None:
            ap.error("--gpus needs --output")
        try:
            doc, failed = run_on_gpus(bench_args, args.gpus, args.output)
        except ValueError as exc:
            print(f"bench_merge: {exc}", file=sys.stderr)
            return 2
        merged = (f"{len(doc['rows'])} rows -> {args.output}" if doc
                  else "no worker wrote a shard, nothing merged")
        if failed:
            kept = " (their rows so far are merged)" if doc else ""
            merged += f"; workers for GPUs {failed} failed{kept}"
        print(f"bench_merge: {args.gpus} workers, {merged}")
        return 1 if failed or doc is None else 0
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
