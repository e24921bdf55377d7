"""``python -m wkvbench gate ...``: compare results files, measure noise, or run interleaved A/B.

    gate --baseline B.json [...] --candidate C.json [...]    # exit 0 pass, 1 regression, 2 bad input,
    gate noise --runs a.json b.json [...] --output N.json    # 3 not comparable (identity differs)
    gate ab --baseline-cmd "... {output}" --candidate-cmd "... {output}" --rounds 3 --confirm

A results argument is a verify/1 or bench/1 JSON file, an asv result file, or ``asv:COMMIT``
(looked up under ``--asv-results``, default ``.asv/results``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ..gate.core import (
    ACCURACY_FACTOR,
    ALPHA,
    EXIT_BAD_INPUT,
    EXIT_NOT_COMPARABLE,
    EXIT_PASS,
    FLOOR,
    GateReport,
    K,
    Settings,
    gate,
)
from ..gate.inputs import GateInputError, NoiseTable, NotComparable, load_side
from ..gate.noise import measure_noise


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--accuracy-factor",
        type=float,
        default=ACCURACY_FACTOR,
        help=f"fail when an error grew by more than this factor (default {ACCURACY_FACTOR:g})",
    )
    p.add_argument(
        "--alpha",
        type=float,
        default=ALPHA,
        help=f"significance of the one-sided Mann-Whitney test (default {ALPHA:g})",
    )
    p.add_argument("--k", type=float, default=K, help=f"threshold = max(floor, K x noise) (default {K:g})")
    p.add_argument(
        "--floor", type=float, default=FLOOR, help=f"smallest slowdown threshold (default {FLOOR:g})"
    )
    p.add_argument("--noise", type=Path, default=None, help="noise file written by 'gate noise'")
    p.add_argument("--strict", action="store_true", help="rows that cannot be judged (too few samples) fail")
    p.add_argument("--markdown", type=Path, default=None, help="write a Markdown summary (a PR comment)")
    p.add_argument("--json", type=Path, default=None, help="write every decision as JSON")


def _parsers() -> dict[str, argparse.ArgumentParser]:
    cmp_ = argparse.ArgumentParser(
        prog="wkvbench gate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    cmp_.add_argument("--baseline", nargs="+", required=True, metavar="RESULTS")
    cmp_.add_argument("--candidate", nargs="+", required=True, metavar="RESULTS")
    cmp_.add_argument(
        "--asv-results",
        type=Path,
        default=Path(".asv/results"),
        help="asv results folder for asv:COMMIT arguments",
    )
    _options(cmp_)
    noise = argparse.ArgumentParser(
        prog="wkvbench gate noise",
        description="same-vs-same noise per row from repeated bench runs of one build",
    )
    noise.add_argument("--runs", nargs="+", required=True, type=Path, metavar="BENCH.json")
    noise.add_argument("--output", type=Path, required=True)
    ab = argparse.ArgumentParser(
        prog="wkvbench gate ab", description="interleaved A/B: baseline and candidate benchmarked alternately"
    )
    ab.add_argument("--baseline-cmd", required=True, help="shell command writing bench/1 JSON to {output}")
    ab.add_argument("--candidate-cmd", required=True, help="same for the candidate; {variants} takes filters")
    ab.add_argument(
        "--rounds", type=int, default=3, help="runs of each side, interleaved A,B,B,A,... (default 3)"
    )
    ab.add_argument("--confirm", action="store_true", help="re-run suspect rows before failing")
    ab.add_argument("--confirm-rounds", type=int, default=None, help="rounds of the confirmation pass")
    ab.add_argument(
        "--workdir",
        type=Path,
        default=Path("reports/results/gate-ab"),
        help="where the per-round results files go",
    )
    ab.add_argument(
        "--verify-baseline", nargs="*", type=Path, default=[], help="verify/1 files of the baseline"
    )
    ab.add_argument(
        "--verify-candidate", nargs="*", type=Path, default=[], help="verify/1 files of the candidate"
    )
    _options(ab)
    return {"compare": cmp_, "noise": noise, "ab": ab}


def _resolve(args: list[str], asv_dir: Path) -> list[Path]:
    from ..results.asv_results import find_commit

    out: list[Path] = []
    for a in args:
        out += find_commit(asv_dir, a[4:]) if a.startswith("asv:") else [Path(a)]
    return out


def _settings(a: argparse.Namespace) -> Settings:
    return Settings(accuracy_factor=a.accuracy_factor, alpha=a.alpha, k=a.k, floor=a.floor, strict=a.strict)


def _emit(rep: GateReport, a: argparse.Namespace, console: Console) -> int:
    from ..gate.render import markdown, print_gate

    print_gate(rep, console)
    if a.markdown:
        a.markdown.parent.mkdir(parents=True, exist_ok=True)
        a.markdown.write_text(markdown(rep))
        console.print(f"markdown: {a.markdown}")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(rep.as_dict(), indent=1))
        console.print(f"json: {a.json}")
    return rep.exit_code


def _not_comparable(exc: NotComparable, a: argparse.Namespace, console: Console) -> int:
    console.print(
        f"[red]not comparable:[/red] {escape(str(exc))}\nresults from different GPUs or software stacks are "
        "never compared; rerun both sides on one machine (e.g. gate ab)"
    )
    md = getattr(a, "markdown", None)
    if md:
        md.parent.mkdir(parents=True, exist_ok=True)
        rows = "\n".join(f"| {f} | `{x}` | `{y}` |" for f, x, y in exc.diffs)
        md.write_text(
            "## ⚠️ wkvbench regression gate: NOT COMPARABLE\n\nBaseline and candidate ran on different "
            "identities and were not compared.\n\n| field | baseline | candidate |\n| --- | --- | --- |\n"
            f"{rows}\n"
        )
    return EXIT_NOT_COMPARABLE


def main(argv: list[str]) -> int:
    console = Console(width=None if sys.stdout.isatty() else 200)
    mode = argv[0] if argv and argv[0] in ("noise", "ab") else "compare"
    a = _parsers()[mode].parse_args(argv[1:] if mode != "compare" else argv)
    try:
        if mode == "noise":
            doc = measure_noise(a.runs)
            a.output.parent.mkdir(parents=True, exist_ok=True)
            a.output.write_text(json.dumps(doc, indent=1))
            for r in doc["rows"]:
                console.print(
                    f"{r['variant']} {r['case']}: {r['runs']} runs, noise {100 * r['noise']:.2f}% "
                    f"(max pair {100 * r['max']:.2f}%)"
                )
            console.print(f"{len(doc['rows'])} rows -> {a.output}")
            return EXIT_PASS
        settings = _settings(a)
        noise = NoiseTable.load(a.noise) if a.noise else None
        if mode == "ab":
            from ..gate.ab import interleaved

            rep = interleaved(
                a.baseline_cmd,
                a.candidate_cmd,
                a.rounds,
                a.workdir,
                settings,
                a.confirm,
                a.confirm_rounds,
                noise,
                a.verify_baseline,
                a.verify_candidate,
                log=lambda s: console.print(s, markup=False, highlight=False),
            )
        else:
            rep = gate(
                load_side(_resolve(a.baseline, a.asv_results)),
                load_side(_resolve(a.candidate, a.asv_results)),
                settings,
                noise,
            )
        return _emit(rep, a, console)
    except NotComparable as exc:
        return _not_comparable(exc, a, console)
    except (GateInputError, FileNotFoundError, ValueError, KeyError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        return EXIT_BAD_INPUT
