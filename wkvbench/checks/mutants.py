"""The mutant panel: deliberately wrong variants, one per bug class seen in real kernels.

Each mutant computes its operator exactly (float64, through the oracle or a one-line change of its
recurrence) except for one planted bug, and rounds its outputs like a kernel of the case dtype
would. They are registered only on request (``register_mutants``; ``nox -s verify -- --mutants``)
and go through the normal verification path; a mutant is *killed* when at least one case of the
set fails. The panel's kill rate is what the suite's tolerances and case set are worth.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from wkvkernels.base import KernelVariant, register, unregister, variants
from wkvkernels.ops import DTYPES, default_state, op_spec, round_inputs, round_to
from wkvkernels.cases import CONVENTIONS
from wkvoracle import ORACLES
from wkvoracle.conventions import solve

CHUNK = 16


class Mutant(KernelVariant):
    source = "wkvbench-mutants"
    backend = "numpy"
    algorithm = "mutant"
    dtypes = frozenset(DTYPES)

    def __init__(self, op: str, bug: str, fn: Callable[[dict], dict], doc: str,
                 conventions: frozenset[str] = frozenset()) -> None:
        self.name, self.operator, self.fn, self.doc = f"{op}.mutant.{bug}", op, fn, doc  # type: ignore[misc]
        self.conventions = conventions  # type: ignore[misc]

    def prepare(self, inputs: dict, case: Any) -> tuple[dict, str]:
        eff = round_inputs(self.operator, inputs, case.dtype)
        if case.shape.qkn:
            eff["qkn"] = True  # read by the convention mutants (their solve normalises q and k)
        return {**default_state(self.operator, eff), **eff}, case.dtype

    def run(self, native: tuple[dict, str]) -> dict:
        x, dtype = native
        out = self.fn(x)
        spec = op_spec(self.operator)
        return {n: round_to(v, dtype if n in spec.low_outputs else "fp32") for n, v in out.items()}

    def returned_dtypes(self, out: dict, case: Any) -> dict[str, str | None]:
        """Rounded to the declared dtypes by construction (float64 arrays holding those values): a
        mutant's bug is the planted one, never its output dtype."""
        return self.output_dtypes(case)

    def to_canonical(self, out: dict) -> dict:
        return out


# ---- the bugs, each a function of the (rounded, float64) canonical inputs -------------------------

def _oracle(op):
    return lambda x: ORACLES[op](**x)


def _wrong_decay_encoding(op):  # the log decay read as the raw w of exp(-exp(w))
    return lambda x: ORACLES[op](**{**x, "lw": -np.exp(x["lw"])})


def _state_transposed(op):
    def f(x):
        out = ORACLES[op](**{**x, "state": np.swapaxes(x["state"], -1, -2)})
        return {**out, "state": np.swapaxes(out["state"], -1, -2)}
    return f


def _initial_state_ignored(op):
    return lambda x: ORACLES[op](**{**x, "state": np.zeros_like(x["state"])})


def _final_state_not_written(op):
    return lambda x: {**ORACLES[op](**x), "state": np.zeros_like(x["state"])}


def _off_by_one(op):  # every output one token late
    def f(x):
        out = ORACLES[op](**x)
        y = np.zeros_like(out["y"])
        y[:, 1:] = out["y"][:, :-1]
        return {**out, "y": y}
    return f


def _last_partial_chunk_dropped(op):
    def f(x):
        T = x["k"].shape[1]
        full = T - T % CHUNK
        if full == T or full == 0:
            return ORACLES[op](**x)
        head = ORACLES[op](**{k: (v[:, :full] if isinstance(v, np.ndarray) and v.ndim >= 3 and k != "state" else v)
                              for k, v in x.items()})
        y = np.zeros(x["v"].shape)
        y[:, :full] = head["y"]
        return {**head, "y": y}
    return f


def _shared_batch_state(op):  # no batch stride: sequence b starts from sequence b-1's final state
    def f(x):
        B = x["k"].shape[0]
        ys, S = [], x["state"][:1]
        for b in range(B):
            one = {k: (v[b : b + 1] if isinstance(v, np.ndarray) and v.ndim >= 3 and k != "state" else v)
                   for k, v in x.items()}
            out = ORACLES[op](**{**one, "state": S})
            ys.append(out["y"])
            S = out["state"]
        return {"y": np.concatenate(ys), "state": np.repeat(S, B, axis=0)}
    return f


def _default_scale(op):  # an RWKV kernel left at the attention default scale K^-0.5
    def f(x):
        out = ORACLES[op](**x)
        return {**out, "y": out["y"] * x["k"].shape[-1] ** -0.5}
    return f


def _some_heads_unwritten(op):  # a launch grid one head short: the last head keeps zeros
    def f(x):
        out = ORACLES[op](**x)
        y = out["y"].copy()
        if op_spec(op).per_channel:
            y[..., -(y.shape[-1] // 4 or 1):] = 0
        else:
            y[:, :, -1] = 0
        return {**out, "y": y}
    return f


def _low_precision_state(op):  # the running state stored in fp16 between tokens
    def f(x):
        T = x["k"].shape[1]
        S = x["state"]
        ys = []
        for t in range(T):
            one = {k: (v[:, t : t + 1] if isinstance(v, np.ndarray) and v.ndim >= 3 and k != "state" else v)
                   for k, v in x.items()}
            out = ORACLES[op](**{**one, "state": S})
            S = round_to(out["state"], "fp16")
            ys.append(out["y"])
        return {"y": np.concatenate(ys, axis=1), "state": S}
    return f


def _wkv6_bonus_dropped(x):
    return ORACLES["wkv6"](**{**x, "u": np.zeros_like(x["u"])})


def _wkv6_bonus_on_new_state(x):  # y_t read from S_t (after the update) instead of S_{t-1}
    out = ORACLES["wkv6"](**x)
    S, y = x["state"].copy(), np.empty(x["v"].shape)
    for t in range(x["k"].shape[1]):
        S = S * np.exp(x["lw"][:, t])[:, :, None, :] + x["v"][:, t, :, :, None] * x["k"][:, t, :, None, :]
        bonus = np.einsum("bhj,hj,bhj->bh", x["r"][:, t], x["u"], x["k"][:, t])[..., None] * x["v"][:, t]
        y[:, t] = np.einsum("bhij,bhj->bhi", S, x["r"][:, t]) + bonus
    return {**out, "y": y}


def _wkv7_sa_after_decay(x):  # sa = (S diag(d)) a instead of S a
    S, y = x["state"].copy(), np.empty(x["v"].shape)
    for t in range(x["k"].shape[1]):
        S = S * np.exp(x["lw"][:, t])[:, :, None, :]
        sa = np.einsum("bhij,bhj->bhi", S, x["a"][:, t])
        S = S + sa[..., :, None] * x["b"][:, t, :, None, :] + x["v"][:, t, :, :, None] * x["k"][:, t, :, None, :]
        y[:, t] = np.einsum("bhij,bhj->bhi", S, x["r"][:, t])
    return {"y": y, "state": S}


def _kda_gate_per_head(x):  # one gate per head (gdn's), the per-key gate averaged over the keys
    return ORACLES["kda"](**{**x, "g": np.broadcast_to(x["g"].mean(axis=-1, keepdims=True), x["g"].shape)})


# ---- production conventions (docs/conventions.md): the oracle's solve with one convention read wrong ----

def _convention_bug(op, **bug):
    def f(x):
        x = dict(x)
        return solve(ORACLES[op], x, qkn=bool(x.pop("qkn", False)), **bug)
    return f


def _convention_panel(op: str) -> list[tuple[str, str, Callable, str, frozenset]]:
    every = frozenset(CONVENTIONS)
    return [
        (op, "value_heads_tiled", _convention_bug(op, head_map="tiled"),
         "value head hv reads key head hv % H (tiled), not hv // (HV / H)", every),
        (op, "pool_index_off_by_one", _convention_bug(op, index_shift=1),
         "each sequence reads and writes pool slot index + 1", every),
        (op, "padding_slot_written", _convention_bug(op, write_padding=True),
         "a padding row (index -1) writes its state to slot 0", every),
        (op, "gate_without_softplus", _convention_bug(op, softplus_fn=lambda z: z),
         "raw gate computed as -exp(A_log) (a + dt_bias), the softplus left out", every),
    ]


def _panel() -> list[tuple[str, str, Callable, str]]:
    """(operator, bug, function, description) for every mutant."""
    panel = []
    for op in ("wkv6", "wkv7", "gla"):
        panel.append((op, "wrong_decay_encoding", _wrong_decay_encoding(op), "log decay read as raw w"))
    for op in ("wkv6", "wkv7", "gla", "gdn", "kda"):
        panel += [
            (op, "state_transposed", _state_transposed(op), "[key,value] state taken for [value,key]"),
            (op, "initial_state_ignored", _initial_state_ignored(op), "initial state never read"),
            (op, "final_state_not_written", _final_state_not_written(op), "final state left at zero"),
            (op, "off_by_one", _off_by_one(op), "outputs one token late"),
            (op, "last_partial_chunk_dropped", _last_partial_chunk_dropped(op), "T % 16 tail skipped"),
            (op, "shared_batch_state", _shared_batch_state(op), "no batch stride in the state"),
            (op, "some_heads_unwritten", _some_heads_unwritten(op), "last head's output never written"),
            (op, "low_precision_state", _low_precision_state(op), "running state rounded to fp16"),
        ]
    for op in ("wkv6", "wkv7"):
        panel.append((op, "default_scale", _default_scale(op), "scale left at K^-0.5 (RWKV needs 1)"))
    panel += [
        ("wkv6", "bonus_dropped", _wkv6_bonus_dropped, "bonus u dropped"),
        ("wkv6", "bonus_on_new_state", _wkv6_bonus_on_new_state, "output read from the new state"),
        ("wkv7", "sa_after_decay", _wkv7_sa_after_decay, "sa = S·a computed after the decay"),
        ("kda", "gate_per_head", _kda_gate_per_head, "per-key gate replaced by its mean over the keys"),
        ("wkv4", "off_by_one", _off_by_one("wkv4"), "outputs one token late"),
        ("wkv4", "some_heads_unwritten", _some_heads_unwritten("wkv4"), "last quarter of channels never written"),
    ]
    return panel


def register_mutants() -> list[str]:
    """Register the whole panel (idempotent); returns the mutant names."""
    names = []
    existing = {v.name for v in variants()}
    for op, bug, fn, doc, *conv in [*_panel(), *_convention_panel("gdn"), *_convention_panel("kda")]:
        m = Mutant(op, bug, fn, doc, *conv)
        if m.name not in existing:
            register(m)
        names.append(m.name)
    return names


def unregister_mutants() -> None:
    for v in variants():
        if isinstance(v, Mutant):
            unregister(v.name)
