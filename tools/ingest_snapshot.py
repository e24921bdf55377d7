"""File the snapshots of one GPU run (``tools/gpu_full.sh --snapshot``/``--collect``) into ``reports/``
and bring the merged verification files up to date.

    python tools/ingest_snapshot.py --dest reports/gpu/h100-2026-11-23 --run run5 \\
        [--verify-merged verify-h100.json] [--backward-merged verify-backward-h100.json] \\
        [--wheelhouse .whl] SNAP.tar.gz [SNAP.tar.gz ...]

Snapshots are unpacked in the order given (a later one holds more of the same run). Then, under DEST:

* forward verify parts (``verify-*.json``/``.partial.jsonl`` other than backward, edge and drift)
  are merged into ``parts/verify-RUN.json``; backward parts go to ``parts/backward-RUN/`` and
  property files to ``parts/properties-RUN/``, each named ``RUN-<name>`` so that no two runs' parts
  share a name; a ``.partial.jsonl`` only where its ``.json`` is absent or empty;
* bench files (``bench-*.json``, resumable across runs) replace DEST's files of the same name when
  they hold at least as many rows; asv's ``asv-results/`` is copied into ``reports/asv/results``
  and the ``asv-run.json`` summary to ``asv-RUN.json``;
* ``run.log`` becomes ``RUN.log`` and the last snapshot ``RUN-parts.tar.gz``;
  ``triton-autotune.tar.gz`` goes into the wheelhouse for the next session and, committed, to
  ``reports/gpu/triton-autotune/<GPU model>.tar.gz`` (``tools/gpu_full.sh`` restores the one of its
  GPU model from there when the wheelhouse has none: a new checkout has no wheelhouse).

``--verify-merged``/``--backward-merged`` name merged files in DEST: their recorded parts (found by
name under ``reports/gpu``; of two files of one name, the one measured on the merged file's GPU
and software stack; still two is an error) and this run's parts are merged again, later runs
winning (``tools/merge_results.py --later-wins``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

import merge_results  # noqa: E402

from wkvbench.bench import file_slug  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def _nonempty(p: Path) -> bool:
    if p.name.endswith(".partial.jsonl"):
        return p.stat().st_size > 0
    try:
        doc = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return bool(doc.get("results") or doc.get("rows"))


def _verify_parts(parts: Path, prefix: str) -> list[Path]:
    """``prefix*.json`` with rows, and each ``.partial.jsonl`` whose ``.json`` has none."""
    out = [p for p in sorted(parts.glob(f"{prefix}*.json")) if _nonempty(p)]
    done = {p.name[: -len(".json")] for p in out}
    out += [p for p in sorted(parts.glob(f"{prefix}*.partial.jsonl"))
            if p.name[: -len(".partial.jsonl")] not in done and _nonempty(p)]
    return out


def _identity(p: Path) -> tuple | None:
    try:
        return merge_results._identity(json.loads(p.read_text()))
    except (OSError, json.JSONDecodeError, AttributeError):
        return None


def _find(name: str, roots: list[Path], identity: tuple | None = None) -> Path:
    """The one file of this name under ``roots``; of several, the one measured on ``identity``."""
    found = sorted({p.resolve() for r in roots for p in r.rglob(name)})
    if len(found) > 1 and identity is not None:
        found = [f for f in found if _identity(f) == identity]
    if len(found) != 1:
        raise SystemExit(f"ingest: part {name!r} of a merged file found {len(found)} times under "
                         f"{', '.join(map(str, roots))}: {[str(f) for f in found]}")
    return found[0]


def remerge(merged: Path, new_parts: list[Path], roots: list[Path]) -> dict:
    old = json.loads(merged.read_text())
    ident = merge_results._identity(old)
    earlier = [_find(p["file"], roots, ident) for p in old.get("parts", [])]
    doc = merge_results.merge(earlier + new_parts, later_wins=True)
    merged.write_text(json.dumps(doc, indent=1))
    return {"before": old.get("counts"), "after": doc["counts"], "rows": len(doc["results"])}


def autotune_gpu(tune: Path) -> str | None:
    """The GPU model an autotune archive of ``gpu_full.sh --snapshot`` was made on (its ``./GPU``)."""
    try:
        with tarfile.open(tune) as tf:
            m = next((m for m in tf.getmembers() if m.name.removeprefix("./") == "GPU"), None)
            f = tf.extractfile(m) if m else None
            return (f.read().decode().strip() or None) if f else None
    except (tarfile.TarError, OSError, UnicodeDecodeError):
        return None


def ingest(snaps: list[Path], dest: Path, run: str, verify_merged: str | None = None,
           backward_merged: str | None = None, wheelhouse: Path | None = None,
           asv_results: Path = REPO / "reports" / "asv" / "results", roots: list[Path] | None = None,
           autotune_store: Path = REPO / "reports" / "gpu" / "triton-autotune") -> dict:
    roots = roots or [REPO / "reports" / "gpu"]
    report: dict = {"run": run, "dest": str(dest)}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        for s in snaps:
            with tarfile.open(s) as tf:
                tf.extractall(t, filter="data")
        parts = t / "parts"
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "parts").mkdir(exist_ok=True)
        fwd = [p for p in _verify_parts(parts, "verify-")
               if not any(k in p.name for k in ("backward", "edge", "drift-"))]
        if fwd:
            doc = merge_results.merge(fwd)
            (dest / "parts" / f"verify-{run}.json").write_text(json.dumps(doc, indent=1))
            report["verify"] = doc["counts"]
        placed: dict[str, list[Path]] = {}
        for kind, prefix in (("backward", "verify-backward-"), ("properties", "properties-")):
            files = _verify_parts(parts, prefix) if kind == "backward" else \
                [p for p in sorted(parts.glob(f"{prefix}*.json")) if _nonempty(p)]
            if files:
                d = dest / "parts" / f"{kind}-{run}"
                d.mkdir(exist_ok=True)
                placed[kind] = [Path(shutil.copy2(f, d / f"{run}-{f.name}")) for f in files]
                report[kind] = len(files)
        for f in sorted(parts.glob("bench-*.json")):
            target = dest / f.name
            new_rows = len(json.loads(f.read_text()).get("rows", []))
            old_rows = len(json.loads(target.read_text()).get("rows", [])) if target.exists() else -1
            if new_rows >= old_rows:
                shutil.copy2(f, target)
                report.setdefault("bench", {})[f.name] = new_rows
        if (parts / "asv-results").is_dir():
            shutil.copytree(parts / "asv-results", asv_results, dirs_exist_ok=True)
            report["asv_results"] = str(asv_results)
        if (parts / "asv-run.json").exists():
            shutil.copy2(parts / "asv-run.json", dest / f"asv-{run}.json")
        if (t / "run.log").exists():
            shutil.copy2(t / "run.log", dest / f"{run}.log")
        shutil.copy2(snaps[-1], dest / f"{run}-parts.tar.gz")
        for s in snaps:  # --snapshot leaves it beside the snapshot
            tune = s.parent / "triton-autotune.tar.gz"
            if not tune.exists():
                continue
            if wheelhouse:
                wheelhouse.mkdir(parents=True, exist_ok=True)
                shutil.copy2(tune, wheelhouse / tune.name)
                report["autotune"] = str(wheelhouse / tune.name)
            if gpu := autotune_gpu(tune):
                autotune_store.mkdir(parents=True, exist_ok=True)
                kept = Path(shutil.copy2(tune, autotune_store / f"{file_slug(gpu)}.tar.gz"))
                report["autotune_committed"] = str(kept)
    if verify_merged and fwd:
        report["verify_merged"] = remerge(dest / verify_merged, [dest / "parts" / f"verify-{run}.json"],
                                          roots)
    if backward_merged and placed.get("backward"):
        report["backward_merged"] = remerge(dest / backward_merged, placed["backward"], roots)
    return report


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", type=Path, required=True)
    ap.add_argument("--run", required=True, help="name of this run, e.g. run5")
    ap.add_argument("--verify-merged", help="merged forward file in DEST to bring up to date")
    ap.add_argument("--backward-merged", help="merged backward file in DEST to bring up to date")
    ap.add_argument("--wheelhouse", type=Path, help="where triton-autotune.tar.gz goes (e.g. .whl)")
    ap.add_argument("snaps", nargs="+", type=Path)
    a = ap.parse_args(argv)
    missing = [str(s) for s in a.snaps if not s.exists()]
    if missing:
        print(f"ingest: no such snapshot: {', '.join(missing)}", file=sys.stderr)
        return 2
    report = ingest(a.snaps, a.dest, a.run, a.verify_merged, a.backward_merged, a.wheelhouse)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
