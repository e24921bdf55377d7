"""``python -m wkvbench properties``: the properties of ``wkvbench/checks/properties.py`` over a selection of
variants, one small case each, with a table on the console and a JSON file of every result.

Cases (one seed, model domain unless ``--domain``): state passing split at (1, 20), (16, 32) and 36 of
``B2-T37-H2-N{N}-h0`` (wkv4: ``B2-T37-H1-N128-h0``), batch invariance and determinism on the same
case, packing invariance of ``B{len(PACK_LENGTHS)}-T63-H2-N{N}-h0`` (sequence lengths
``PACK_LENGTHS``, ``PACK_SLACK`` slack rows). Chosen per variant (``choose_case``): a variant whose
``supports()`` refuses T = 37 or one of its pieces (rwkv-ops' training and chunk kernels need
T % 16 == 0) gets ``T = 48`` split at (16, 32) and 32, every piece a multiple of 16; a variant that
raises ``Unsupported`` on the domain's values (RWKV-5: a decay constant over time) gets the
operator's own domain (``OP_DOMAINS``: wkv6 ``const``); with neither, the properties SKIP with the
variant's own reason. A variant's dtype is the first of ``--dtype`` it supports. Chunked kernels
run last; the JSON is rewritten after every result, so a run cut short keeps what it measured.
Exit status 1 when any property FAILs or ERRORs, 0 otherwise (XFAIL = a listed known failure).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.table import Table

from wkvkernels.base import KernelVariant, availability, refusal
from wkvkernels.cases import DOMAINS, OP_DOMAINS, Case, Shape
from wkvkernels.ops import op_spec

from ..checks.packing import PACK_LENGTHS, PACK_SLACK, packing_invariance
from ..checks.properties import PropertyResult, batch_invariance, determinism, log, state_passing
from ..judge.check import ERROR, FAIL, Checker, raised
from ..results.schemas import PROPERTIES as SCHEMA
from .args import selection_args

PROPERTIES = ("state_passing", "batch_invariance", "packing", "determinism")
SPLITS = ((1, 20), (16, 32), (36,))
# Fallback for kernels that need T % 16 == 0 (rwkv-ops' training and chunk kernels): every piece of
# every split is a multiple of 16 as well.
SPLITS_16 = ((16, 32), (32,))
LENGTHS = ((37, SPLITS), (48, SPLITS_16))  # (T, splits), tried in order


def add_parser(sub) -> None:
    """Register the ``properties`` subcommand (with the selection options of ``args``)."""

    p = sub.add_parser("properties", help="state passing, batch/packing invariance, determinism per variant")
    selection_args(p)
    p.add_argument("--property", action="append", default=[], choices=PROPERTIES,
                   help="(repeatable; default all)")
    p.add_argument("--domain", default="model", choices=DOMAINS)
    p.add_argument("--N", type=int, default=64,
                   help="head size of the cases (default 64; wkv4 uses 128 channels)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-backward", action="store_true", help="packing: skip the gradient part")
    p.add_argument("--output", type=Path, default=None,
                   help="JSON path (default reports/results/properties-*.json)")


def _dtype(v: KernelVariant, wanted: list[str]) -> str:
    for dt in wanted or ["fp32", "bf16", "fp16"]:
        if dt in v.dtypes:
            return dt
    return (wanted or sorted(v.dtypes))[0]  # unsupported: the property reports the SKIP


def _shape(op: str, T: int, N: int) -> Shape:
    return Shape(2, T, 1, 128, h0=True) if op_spec(op).per_channel else Shape(2, T, 2, N, h0=True)


def _runs(case: Case, splits: tuple[int, ...]) -> list[Case]:
    """Every case the properties run for ``case``: itself, its B = 1 slice, each split's pieces."""
    out = [case, replace(case, shape=replace(case.shape, B=1))]
    for s in splits:
        out += [replace(case, shape=replace(case.shape, T=b - a, h0=case.shape.h0 or i > 0))
                for i, (a, b) in enumerate(zip((0, *s), (*s, case.shape.T), strict=True))]
    return out


def _supported(v: KernelVariant, case: Case, splits: tuple[int, ...]) -> bool:
    return bool(availability(v.name)) and all(refusal(v, c) is None for c in _runs(case, splits))


def choose_case(v: KernelVariant, domain: str, N: int, dtype: str, seed: int,
                checker: Checker | None = None) -> tuple[Case, tuple[tuple[int, ...], ...]]:
    """The case and splits of ``v``'s properties: the first of ``LENGTHS`` that ``v.supports()`` for
    the case, its B = 1 slice and every piece, in ``domain`` or, when ``v`` raises ``Unsupported`` on
    that domain's values, in the operator's own domains (``OP_DOMAINS``). With none, ``B2-T37`` in
    ``domain``: the properties SKIP with the variant's own reason."""
    op, checker = v.operator, checker or Checker()
    domains = (domain, *(x for x in OP_DOMAINS.get(op, ()) if x != domain))
    first: tuple[Case, tuple] | None = None
    for d in domains:
        for T, splits in LENGTHS:
            case = Case(op, d, _shape(op, T, N), dtype, seed)
            first = first or (case, splits)
            if _supported(v, case, splits):
                if d == domains[-1] or refusal(v, case, checker.inputs(case)) is None:
                    return case, splits
                break  # refused for its values, not its length: the next domain
    return first


def _jobs(v: KernelVariant, args: argparse.Namespace, checker: Checker):
    """``(property, case, run)`` per property result of ``v``; ``run(checker)`` gives the result."""
    dt, N, op = _dtype(v, args.dtype), args.N, v.operator
    case, splits = choose_case(v, args.domain, N, dt, args.seed, checker)
    props = args.property or PROPERTIES
    if "state_passing" in props:
        for s in splits:
            yield "state_passing", case, lambda ch, s=s: state_passing(v, case, s, ch)
    if "batch_invariance" in props:
        yield "batch_invariance", case, lambda ch: batch_invariance(v, case, ch)
    if "packing" in props:
        pcase = Case(op, case.domain, Shape(len(PACK_LENGTHS), 63, 2, N, h0=True), dt, args.seed)
        yield "packing_invariance", pcase, lambda ch: packing_invariance(
            v, pcase, PACK_LENGTHS, PACK_SLACK, ch, backward=not args.no_backward)
    if "determinism" in props:
        yield "determinism", case, lambda ch: determinism(v, case, ch)


def run_properties(args: argparse.Namespace, console: Console, variants: list[KernelVariant],
                   out: Path) -> int:
    from ..results.provenance import provenance
    from ..run import autotune

    autotune.install()  # one pinned configuration per autotuned Triton kernel, as in verify
    from ..run import compiles

    compiles.install_from_env()  # wkvbench gpu's processes share their Triton compilations (run/compiles.py)
    checker = Checker()
    results: list[dict] = []
    head = {"schema": SCHEMA, "provenance": provenance(),
            "selection": {"variants": [v.name for v in variants],
                          "properties": list(args.property or PROPERTIES), "domain": args.domain,
                          "N": args.N, "seed": args.seed, "dtypes": list(args.dtype),
                          "backward": not args.no_backward}}
    # chunked (autotuned) kernels last: a time-boxed GPU run keeps every other result
    variants = sorted(variants, key=lambda v: ("chunk" in v.algorithm, v.name))
    table = Table("variant", "property", "case", "status", "bitwise", "max rel diff", "reason / details")
    progress = logging.StreamHandler(sys.stderr)  # one line per property and per long step, with the time
    progress.setFormatter(logging.Formatter("[properties %(asctime)s] %(message)s", "%H:%M:%S"))
    log.addHandler(progress)
    log.setLevel(logging.INFO)
    try:
        for v in variants:
            if v.operator != "gdn_wy":
                _run_variant(v, args, checker, head, results, table, out)
    finally:
        log.removeHandler(progress)
    out.write_text(json.dumps({**head, "complete": True, "results": results}, indent=1, default=str))
    console.print(table)
    bad = [r for r in results if r["status"] in (FAIL, ERROR)]
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    console.print(f"{len(results)} results: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    console.print(f"results: {out}")
    return 1 if bad else 0


def _run_variant(v: KernelVariant, args: argparse.Namespace, checker: Checker, head: dict,
                 results: list[dict], table: Table, out: Path) -> None:
    """Every property job of ``v``: a row each in ``results`` and ``table``, the JSON rewritten after each."""
    for prop, case, job in _jobs(v, args, checker):
        log.info("%s %s %s ...", v.name, prop, case.id)
        t0 = time.perf_counter()
        try:
            r: PropertyResult | None = job(checker)
            row = r.as_dict()
        except Exception as exc:  # noqa: BLE001 - one crashing kernel must not end the run
            row = {"property": prop, "variant": v.name, "case": case.id, "status": ERROR, "reason": raised(exc),
                   "bitwise": None, "max_rel_diff": None, "details": {}}
        row["seconds"] = round(time.perf_counter() - t0, 3)
        log.info("%s %s %s: %s in %.1f s", v.name, prop, case.id, row["status"], row["seconds"])
        results.append(row)
        out.write_text(json.dumps({**head, "results": results}, indent=1, default=str))
        extra = row["details"].get("slack_outputs", "")
        table.add_row(v.name, row["property"], row["case"], row["status"], str(row["bitwise"]),
                      f"{row['max_rel_diff']:.3g}" if isinstance(row["max_rel_diff"], float) else "",
                      (row["reason"] or (f"slack outputs: {extra}" if extra else ""))[:160])
