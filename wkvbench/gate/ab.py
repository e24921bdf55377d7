"""Interleaved A/B: baseline and candidate builds benchmarked alternately on one machine in one job.

Rounds run A,B then B,A then A,B ... so that slow drift of the machine (clocks, temperature, other
tenants) hits both sides equally; the samples of every round are pooled per row. A row the gate
finds slower is a *suspect*: with ``confirm`` a second interleaved pass over the suspect variants
only (their names go into the ``{variants}`` placeholder as ``--variant NAME`` arguments) must find
it slower again, on its own fresh samples, before the gate fails; otherwise it is UNCONFIRMED.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

from .core import FAIL_, UNCONFIRMED, GateReport, Settings, compare_samples, gate
from .inputs import GateInputError, NoiseTable, Side, load_side

Runner = Callable[[str], subprocess.CompletedProcess]


def _shell(cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, shell=True, capture_output=True, text=True)


def order(rounds: int) -> list[str]:
    """A,B,B,A,A,B,...: the sides in the order they run, ``rounds`` runs of each."""
    return [x for i in range(rounds) for x in (("A", "B") if i % 2 == 0 else ("B", "A"))]


def render(template: str, output: Path, variants: list[str]) -> str:
    if "{output}" not in template:
        raise GateInputError(f"command template lacks the {{output}} placeholder: {template!r}")
    args = " ".join(f"--variant {shlex.quote(v)}" for v in variants)
    return template.replace("{output}", shlex.quote(str(output))).replace("{variants}", args)


def run_pass(
    base_cmd: str,
    cand_cmd: str,
    rounds: int,
    workdir: Path,
    tag: str,
    variants: list[str] | None = None,
    runner: Runner = _shell,
    log: Callable[[str], None] = print,
) -> tuple[list[Path], list[Path]]:
    """Run the interleaved rounds; returns the bench files of A (baseline) and B (candidate)."""
    if rounds < 1:
        raise GateInputError(f"--rounds must be >= 1 (got {rounds})")
    workdir.mkdir(parents=True, exist_ok=True)
    files: dict[str, list[Path]] = {"A": [], "B": []}
    for i, side in enumerate(order(rounds)):
        out = workdir / f"{tag}-{side}-{len(files[side]):02d}.json"
        out.unlink(missing_ok=True)
        cmd = render(base_cmd if side == "A" else cand_cmd, out, variants or [])
        log(f"[{i + 1}/{2 * rounds}] {'baseline' if side == 'A' else 'candidate'}: {cmd}")
        p = runner(cmd)
        if not out.is_file():
            tail = (p.stderr or p.stdout or "")[-2000:]
            raise GateInputError(
                f"{'baseline' if side == 'A' else 'candidate'} command exited {p.returncode} "
                f"without writing {out}:\n{tail}"
            )
        if p.returncode != 0:
            log(f"  (exit {p.returncode}; its results file is used, failures in it are judged by the gate)")
        files[side].append(out)
    return files["A"], files["B"]


def interleaved(
    base_cmd: str,
    cand_cmd: str,
    rounds: int,
    workdir: Path,
    settings: Settings,
    confirm: bool = False,
    confirm_rounds: int | None = None,
    noise: NoiseTable | None = None,
    verify_base: list[Path] | None = None,
    verify_cand: list[Path] | None = None,
    runner: Runner = _shell,
    log: Callable[[str], None] = print,
) -> GateReport:
    a, b = run_pass(base_cmd, cand_cmd, rounds, workdir, "ab", runner=runner, log=log)
    base: Side = load_side([*(verify_base or []), *a])
    cand: Side = load_side([*(verify_cand or []), *b])
    rep = gate(base, cand, settings, noise)
    suspects = [
        d
        for d in rep.decisions
        if d.category == "performance" and d.verdict == FAIL_ and "baseline_ms" in d.numbers
    ]
    if not confirm or not suspects:
        return rep
    names = sorted({d.variant for d in suspects})
    log(f"{len(suspects)} suspect row(s) in {', '.join(names)}: confirming with a second interleaved pass")
    a2, b2 = run_pass(base_cmd, cand_cmd, confirm_rounds or rounds, workdir, "confirm", names, runner, log)
    base2, cand2 = load_side(a2), load_side(b2)
    for d in suspects:
        key = (d.variant, d.case)
        rb, rc = base2.bench.get(key), cand2.bench.get(key)
        if not rb or not rc or rb["status"] != "OK" or rc["status"] != "OK":
            d.note += " | confirmation run has no timed row for it: kept as FAIL"
            continue
        row_noise = noise.lookup(cand.identity, *key) if noise else None
        verdict, nums, note = compare_samples(rb["samples_ms"], rc["samples_ms"], row_noise, settings)
        d.numbers["confirm"] = nums
        if verdict == FAIL_:
            d.note += f" | confirmed: {note}"
        else:
            d.verdict = UNCONFIRMED
            d.note += f" | not confirmed by the re-run ({verdict}: {note})"
    return rep
