"""Judging a case in production conventions (``wkvkernels.cases.Shape``; docs/conventions.md).

The oracle's side is ``wkvoracle.conventions.solve``: the canonical recurrence run per sequence on the
inputs as the conventions define them. This module puts a kernel's outputs and the oracle's side by
side on what is judged:

* ``y`` of the real sequences only: a pool's padding rows (state index -1) are not judged, whatever
  the kernel left there (vLLM and FlashInfer leave them unwritten);
* ``state``: the final state of every real sequence. A pooled kernel returns its pool
  (``state_pool``, canonical ``[P, HV, V, K]``), and each real sequence's final state is read from the
  slot its index names;
* the pool slots the call must not touch (those no real row names, the padding rows' -1 included)
  must come back bit-identical to the pool the kernel was given, or the case FAILs naming them.
"""

from __future__ import annotations

import numpy as np

from wkvkernels.cases import POOL_GUARD
from wkvoracle.conventions import real_rows, seq_slices


def _real_y(inputs: dict, y: np.ndarray) -> np.ndarray:
    if "state_indices" not in inputs:  # no padding: every row and token is judged
        return np.asarray(y)
    rows = real_rows(inputs)
    if "cu_seqlens" not in inputs:
        return np.asarray(y)[rows]
    seqs = seq_slices(inputs)
    return np.concatenate([np.asarray(y)[0:1, seqs[n][1]] for n in rows], axis=1)


def untouched_slots(inputs: dict) -> np.ndarray:
    """The pool slots no real sequence names: a call must leave them as they came."""
    idx = np.asarray(inputs["state_indices"])
    used = set(idx[idx >= 0].tolist())
    return np.array([s for s in range(len(inputs["state_pool"])) if s not in used], np.int64)


def judged(case, inputs: dict, out: dict, ref: dict) -> tuple[dict, dict, list[str]]:
    """``(out, ref, problems)``: the kernel's canonical outputs and the oracle's reduced to what a case
    in production conventions judges (module docstring), and the problems found on the way (a missing
    pool, a slot that must not change and did). A case without conventions comes back unchanged."""
    if not case.shape.in_conventions:
        return out, ref, []
    problems: list[str] = []
    out, ref = dict(out), dict(ref)
    if "state_indices" not in inputs:  # no pool: every sequence is real, nothing more to read
        return out, ref, problems
    rows = real_rows(inputs)  # a pool: the real rows' final states are read from their slots
    ref["state"] = np.asarray(ref["state"])[rows]
    ref.pop("state_pool", None)
    guard = out.pop("state_pool_guard", None)
    if guard is not None and not np.all(np.asarray(guard) == POOL_GUARD):
        problems.append("state_pool: written outside the pool (the slot just before or after it changed: an "
                        "index -1 taken for a slot reads and writes the one before slot 0)")
    pool = out.pop("state_pool", None)
    given = np.asarray(inputs["state_pool"], np.float32).astype(np.float64)
    if pool is None:
        problems.append(f"missing output 'state_pool' (a pooled case; got {sorted(out)})")
        out.pop("state", None)
    elif np.shape(pool) != given.shape:
        problems.append(f"state_pool: shape {list(np.shape(pool))}, the pool given is {list(given.shape)}")
        out.pop("state", None)
    else:
        pool = np.asarray(pool, np.float64)
        out["state"] = pool[np.asarray(inputs["state_indices"])[rows]]
        changed = [int(s) for s in untouched_slots(inputs) if not np.array_equal(pool[s], given[s])]
        if changed:
            worst = max(float(np.max(np.abs(pool[s] - given[s]))) for s in changed)
            problems.append(f"state_pool: slots {changed} changed, which no real sequence names (padding "
                            f"index -1 or unused; must come back bit-identical; max |change| {worst:.3g})")
    for side in (out, ref):
        if "y" in side:
            side["y"] = _real_y(inputs, side["y"])
    return out, ref, problems
