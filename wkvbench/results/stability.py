"""The stability check's targets and why a row misses them (``python -m wkvbench stability``, which
writes the rows; the report, which shows them): a row of ``wkvbench.stability/1`` holds the engine's
round medians and their ``spread``, and triton's ``do_bench``'s (``reference_spread``) with the ``ratio``
of the two medians."""

from __future__ import annotations

import collections

SPREAD_MAX = 0.01
RATIO_MAX = 0.02

# Why a row is not within the targets, the first that applies, in this order. A host loop's time is the
# host's Python loop, not the GPU's: rwkv7-hf's token-by-token recurrence at decode read 5.9 ms in one round
# of a check, 51-61 ms in its next four and 176 ms in a bench, on H200s
# (reports/gpu/h200x4-2026-11-29-stability/). A reference whose own rounds spread more than SPREAD_MAX
# measures nothing the engine can be held to: do_bench on FlashInfer's chunked GDN at B8-T4096-H16-N128 read
# 0.202-0.222 ms over its rounds (bf16 and fp16, two checks) where the engine read 0.196-0.200.
MISSES = {
    "error": "the check failed on the row",
    "host loop": "a host loop: its time is the host's Python loop, which no GPU timer holds steady",
    "engine spread": f"the engine's rounds spread more than {SPREAD_MAX:.0%}",
    "reference spread": f"do_bench's own rounds spread more than {SPREAD_MAX:.0%}: no steady reference",
    "off the reference": f"the engine more than {RATIO_MAX:.0%} off a steady reference",
}


def miss(row: dict, bench_row: dict | None = None) -> str | None:
    """Why ``row`` (a stability row) is not within the targets (a key of ``MISSES``), None where it is.
    ``bench_row``: its bench row, which tells a host loop for rows checked before they recorded it."""
    if row.get("ok"):
        return None
    if "error" in row:
        return "error"
    if row.get("host_loop") or ((bench_row or {}).get("launch") or {}).get("host_loop"):
        return "host loop"
    if (row.get("spread") or 0.0) > SPREAD_MAX:
        return "engine spread"
    if (row.get("reference_spread") or 0.0) > SPREAD_MAX:
        return "reference spread"
    return "off the reference"


def misses_text(rows: list[dict], bench_rows: list[dict] | None = None) -> str:
    """The rows not within the targets, counted by why (``miss``): "" where none is."""
    by = {key(b): b for b in bench_rows or []}
    n = collections.Counter(m for r in rows if (m := miss(r, by.get(key(r)))) is not None)
    return ", ".join(f"{n[k]} {k}" for k in MISSES if n[k])


def key(row: dict) -> tuple:
    """A row's (variant, shape set, dtype): a bench file's timed rows by it are one each."""
    return row.get("variant"), row.get("shape_set"), row.get("dtype")
