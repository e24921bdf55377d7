"""``python -m wkvbench gpu``'s command line: its options, and the run they describe (``gpu.GpuRun``)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from ..gpu.run import DTYPES_ALL, GpuRun, Options


def add_parser(sub) -> None:
    p = sub.add_parser("gpu", help="the whole GPU evidence of this box: verify (all dtypes, backward, "
                                   "properties), bench, asv, report; one results set, resumable")
    p.add_argument("--output", type=Path, default=None,
                   help="results folder (default reports/gpu/<machine>/); running again resumes it")
    p.add_argument("--fresh", action="store_true", help="start over: delete what --output holds first")
    p.add_argument("--dtype", action="append", default=[], choices=DTYPES_ALL, help="(repeatable; default all)")
    p.add_argument("--set", dest="sets", action="append", default=[],
                   help="bench shape sets (default 'standard': all of them)")
    p.add_argument("--variant", action="append", default=[], metavar="GLOB")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB")
    p.add_argument("--jobs", type=int, default=0, help="verify workers (default: one per core)")
    p.add_argument("--side-jobs", type=int, default=0, help="properties/warm-up processes (default: one per core)")
    p.add_argument("--gpus", type=int, default=0, help="GPUs to use (default: all that torch sees)")
    p.add_argument("--ggml-src", type=Path, default=None,
                   help="patched ggml-python source to build with CUDA in the background (nox -s gpu sets it)")
    p.add_argument("--ggml-pip", default="", help="extra pip arguments for that build (offline: --no-index ...)")
    p.add_argument("--own-env", action="append", default=[], metavar="PACKAGE=DIR",
                   help="a kernel package that clashes with this environment (rwkv-fla, vllm), installed in DIR "
                        "(pip --target): its variants run with DIR first on PYTHONPATH (nox -s gpu sets it)")
    p.add_argument("--only", default="", help="comma-separated phases to run (verify,side,bench,asv,report)")
    p.add_argument("--time-cap", type=float, default=1.0, help="seconds of sampling per bench row at most")
    p.add_argument("--timeout", type=float, default=900.0, help="per-case limit of a verify worker (s)")
    p.add_argument("--autotune", choices=("seeded", "tune"), default="seeded",
                   help="seeded (default): Triton autotuners take the choices an earlier run on this machine identity "
                        "recorded (the results set's autotune.json, else reports/gpu/<machine>/autotune.json, or "
                        "--autotune-seeds) and tune only keys it lacks; "
                        "tune: benchmark every configuration, as on a box with no record")
    p.add_argument("--autotune-seeds", type=Path, default=None, metavar="FILE",
                   help="an autotune.json to seed from instead of the results set's own")
    p.add_argument("--stability", type=int, default=0, metavar="N",
                   help="after the bench, time every row N more times against triton's do_bench "
                        "(stability.json; 5 for the stability table; default: not run)")


def main(args: argparse.Namespace) -> int:
    import shutil

    from ..perf.bench import machine_slug
    from ..results.provenance import provenance

    prov = provenance()
    machine_set = Path("reports") / "gpu" / machine_slug(prov)  # this machine identity's results set
    out = args.output or machine_set
    stale = _other_commit(out / "run.json", prov["git"]["commit"])
    if stale and not args.fresh:
        print(f"wkvbench gpu: {out} holds the results of commit {stale}, not of this one "
              f"({prov['git']['commit'] or 'unknown'}): starting a new results set there", flush=True)
    seeds, seeds_from = _autotune_seeds(args, out, machine_set)  # read before a fresh start removes the set
    if (args.fresh or stale) and out.exists():
        shutil.rmtree(out)
    phases = tuple(x for x in args.only.split(",") if x) or Options(out).phases
    own_envs = tuple(_own_env(x) for x in args.own_env)
    from wkvkernels import config

    t0 = config.t0()
    opt = Options(out=out, dtypes=tuple(args.dtype) or DTYPES_ALL, sets=tuple(args.sets) or ("standard",),
                  variants=tuple(args.variant), exclude=tuple(args.exclude), jobs=args.jobs,
                  side_jobs=args.side_jobs, gpus=args.gpus, ggml_src=args.ggml_src,
                  ggml_pip=tuple(shlex.split(args.ggml_pip)), phases=phases, time_cap_s=args.time_cap,
                  timeout_s=args.timeout, stability=args.stability, t0=t0, own_envs=own_envs,
                  autotune=args.autotune, autotune_seeds=seeds_from)
    run = GpuRun(opt)
    if seeds is not None and not (run.work / run.SEEDS).is_file():  # a resumed run keeps its first seeds
        (run.work / run.SEEDS).write_text(seeds)
    return run.run()


def _autotune_seeds(args: argparse.Namespace, out: Path,
                    machine_set: Path | None = None) -> tuple[str | None, str]:
    """The text of the autotune record that seeds the run, and where it came from: ``--autotune-seeds``, else
    the results set's own ``autotune.json`` (an earlier run's on this machine identity), else that of this
    machine identity's results set ``machine_set`` (``reports/gpu/<machine>/``, where ``--output`` names
    another folder); none with ``--autotune tune``. A file that is not an autotune record is an error before
    anything runs.

    Without the last, ``-- --fresh --output <new folder>`` on a warm H200 (2026-11-29) ran unseeded: its
    bench autotuned 39 keys again that the warm-ups, seeded, had never written to Triton's cache, and the
    first calls of its first 37 timed rows took 180 s instead of 1.7 s
    (``reports/gpu/h200-2026-11-29-whole-fresh/``)."""
    import json

    from ..run.tuned import choices, read_record

    if args.autotune != "seeded":
        return None, ""
    path = args.autotune_seeds or out / "autotune.json"
    if args.autotune_seeds is None and not path.is_file() and machine_set is not None:
        path = machine_set / "autotune.json"
    if not path.is_file():
        if args.autotune_seeds is not None:
            raise SystemExit(f"wkvbench gpu: --autotune-seeds {path}: no such file")
        return None, ""
    try:
        doc = read_record(path)
        choices(doc)
    except (ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"wkvbench gpu: {path} cannot seed the autotuners: {exc}") from None
    return json.dumps(doc), str(path)


def _own_env(text: str) -> tuple[str, str]:
    """``PACKAGE=DIR`` of ``--own-env``: a kernel package of wkvkernels.releases.PACKAGES and an existing folder."""
    from wkvkernels.releases import PACKAGES

    pkg, sep, folder = text.partition("=")
    if not sep or pkg not in PACKAGES:
        raise SystemExit(f"wkvbench gpu: --own-env {text!r}: expected PACKAGE=DIR, PACKAGE one of {', '.join(PACKAGES)}")
    if not Path(folder).is_dir():
        raise SystemExit(f"wkvbench gpu: --own-env {text!r}: {folder} is not a folder")
    return pkg, str(Path(folder).resolve())


def _other_commit(run_json: Path, commit: str | None) -> str | None:
    """The commit of the results set at ``run_json`` when it is not ``commit`` (a set committed to the
    repository by an earlier commit, found in a new clone): that set is not resumed but replaced. None
    when there is nothing there, or it is this commit's (a stopped run, resumed)."""
    import json

    try:
        theirs = json.loads(run_json.read_text())["provenance"]["git"]["commit"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return theirs if theirs and theirs != commit else None
