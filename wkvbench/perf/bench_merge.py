"""``python -m wkvbench.perf.bench_merge --output F.json SHARD.json ...``: join bench shard files (one
machine identity) into one ``wkvbench.bench/1`` file (``merge``).

``python -m wkvbench.perf.bench_merge --gpus N --output F.json -- [bench arguments]`` runs the bench on a
host with several GPUs: one worker process per GPU, all at once, worker ``i`` with
``CUDA_VISIBLE_DEVICES=i`` and ``--shard i/N`` (so no GPU ever holds two timed runs), then merges
their shards into F.json (``nox -s bench`` calls this)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from ..results.model import read
from ..results.schemas import BENCH
from ..run.isolate import gpu_of


def merge(paths: list[Path], out: Path) -> dict:
    """Join shard files of one bench run (same identity) into one."""
    docs = [read(p, BENCH).doc for p in paths]
    ids = {d["provenance"].get("identity") for d in docs}
    if len(ids) != 1:
        raise ValueError(f"shards come from different machines/stacks: {sorted(map(str, ids))}")
    doc = dict(docs[0])
    if len(docs) > 1:
        doc["provenance"] = with_devices(doc["provenance"], docs)
        for d in docs:  # each row names the GPU its worker saw (CUDA_VISIBLE_DEVICES), when it saw one
            gpu = ((d["provenance"].get("gpu") or {}).get("visible") or "").strip()
            for r in d["rows"]:
                if gpu and "," not in gpu:
                    r.setdefault("gpu", gpu)
    rows = {(r["variant"], r["shape_set"], r["dtype"]): r for d in docs for r in d["rows"]}  # a later file wins
    doc["rows"] = [rows[k] for k in sorted(rows)]
    doc["complete"] = all(d.get("complete") for d in docs)
    doc["settings"] = {**doc["settings"], "shard": None, "shards": len(docs)}
    spent = [d["process_s"] for d in docs if d.get("process_s")]
    if len(spent) > 1:  # the shards' workers ran side by side: each part as its slowest worker spent it
        doc["process_s"] = {k: max(s.get(k, 0.0) for s in spent) for k in spent[0]}
    out.write_text(json.dumps(doc, indent=1))
    return doc


def with_devices(prov: dict, docs: list[dict]) -> dict:
    """``prov`` with ``gpu.devices`` the union of the GPUs the shards' workers saw, one each."""
    gpu = dict(prov.get("gpu") or {})
    devices = {dev["index"]: dev for d in docs for dev in ((d["provenance"].get("gpu") or {}).get("devices") or [])}
    if devices:
        gpu["devices"] = [devices[k] for k in sorted(devices)]
        gpu["count"], gpu["visible"] = len(devices), ",".join(sorted(devices))
    return {**prov, "gpu": gpu}


APART = ("ggml",)  # backends timed in processes of their own (FINDINGS.md: ggml's CUDA init beside others)


def run_on_gpus(bench_args: list[str], ngpu: int, out: Path, worker: list[str] | None = None,
                log_dir: Path | None = None, apart: tuple[str, ...] = APART,
                env: dict[str, str] | None = None, log_name: str = "bench") -> tuple[dict | None, list[int]]:
    """One ``wkvbench bench`` worker per GPU (``CUDA_VISIBLE_DEVICES=i``, ``--shard i/ngpu``), started
    together; their shard files are merged into ``out`` and removed. Returns the merged document
    (None when no worker wrote a shard) and the GPU indices whose worker failed (exit status other
    than 0, or 1 = some rows not OK). On each GPU the variants of the ``apart`` backends are timed by
    a second process after the first (``--backend``/``--exclude-backend``): ggml-python's CUDA backend
    crashed a process that had run the other CUDA kernels first (H100, 2026-11-24). ``worker`` replaces
    ``python -m wkvbench bench`` (tests); with ``log_dir`` each GPU's output goes to
    ``<log_name>-gpu<i>.log``; ``env`` is added to the workers' environment (a package's own folder on
    ``PYTHONPATH``)."""
    if ngpu < 1:
        raise ValueError(f"run_on_gpus needs at least one GPU, got {ngpu}")
    cmd = worker or [sys.executable, "-m", "wkvbench", "bench"]
    passes = [[x for b in apart for x in ("--exclude-backend", b)]] + [["--backend", b] for b in apart]
    shards = [[out.with_name(f"{out.stem}.shard{i}{'-' + str(k) if k else ''}.json") for k in range(len(passes))]
              for i in range(ngpu)]
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
    failed: list[int] = []

    def gpu(i: int) -> None:
        env_i = {**os.environ, **(env or {}), "CUDA_VISIBLE_DEVICES": gpu_of(i, ngpu)}
        log = open(log_dir / f"{log_name}-gpu{i}.log", "ab") if log_dir is not None else None  # noqa: SIM115
        try:
            for extra, shard in zip(passes, shards[i], strict=True):  # one after the other on this GPU
                rc = subprocess.run([*cmd, *bench_args, *extra, "--shard", f"{i}/{ngpu}", "--output", str(shard)],
                                    env=env_i, stdout=log, stderr=subprocess.STDOUT if log else None).returncode
                if rc not in (0, 1) and i not in failed:
                    failed.append(i)
        finally:
            if log is not None:
                log.close()

    threads = [threading.Thread(target=gpu, args=(i,)) for i in range(ngpu)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    written = [sh for per in shards for sh in per if sh.exists()]
    doc = merge(written, out) if written else None
    for sh in written:
        sh.unlink()
    return doc, sorted(failed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wkvbench.perf.bench_merge",
                                 description=__doc__.splitlines()[0])
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
        from ..results.provenance import provenance
        from .bench import machine_slug

        print(machine_slug(provenance()))
        return 0
    if args.markdown:
        from .tables import markdown_table

        print(markdown_table([r for p in args.shards for r in read(p, BENCH).rows]))
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
