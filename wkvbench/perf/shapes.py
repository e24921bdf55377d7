"""The benchmark shapes: the named shape sets, the small gate case that stands for a shape, and the
canonical inputs of a shape (shared by ``bench``, its judging at size, ``stability`` and asv)."""

from __future__ import annotations

from wkvkernels.cases import Case, Shape
from wkvkernels.ops import op_spec

# Named shape sets shared by pytest, asv and `wkvbench bench`. wkv4 is per channel: H = 1, N = C.
SHAPE_SETS: dict[str, dict[str, Shape]] = {
    "quick": {"*": Shape(2, 256, 4, 64), "wkv4": Shape(2, 256, 1, 256)},
    "decode": {"*": Shape(256, 1, 32, 64, h0=True), "wkv4": Shape(256, 1, 1, 2048, h0=True)},
    "prefill": {"*": Shape(8, 4096, 32, 64), "wkv4": Shape(8, 4096, 1, 2048)},
    "long": {"*": Shape(1, 65536, 8, 64), "wkv4": Shape(1, 65536, 1, 512)},
    "head128": {"*": Shape(8, 4096, 16, 128)},
}
STANDARD_SETS = ("quick", "decode", "prefill", "long", "head128")


def set_shape(set_name: str, op: str) -> Shape | None:
    try:
        shapes = SHAPE_SETS[set_name]
    except KeyError:
        raise ValueError(f"unknown shape set {set_name!r}; known: {', '.join(SHAPE_SETS)}") from None
    return shapes.get(op, shapes.get("*") if op != "wkv4" else None)


def gate_case(op: str, shape: Shape, dtype: str) -> Case:
    """The small verification case standing for a benchmark shape (same N, h0 and T divisibility)."""
    T = shape.T if shape.T <= 128 else 128 if shape.T % 128 == 0 else min(shape.T, 100)
    per_channel = op_spec(op).per_channel  # wkv4: H = 1 and N the channel count
    H = 1 if per_channel else min(shape.H, 2)
    N = min(shape.N, 256) if per_channel else shape.N
    return Case(op, "model", Shape(1, T, H, N, h0=shape.h0), dtype, 0)


# prime: no power-of-two token offset (a chunk, a block, a wrapped index) maps a token onto its copy
TILE_T = 251


def bench_inputs(case: Case) -> dict:
    """Canonical inputs of a benchmark shape: the ``model`` generator's inputs for ``B`` sequences of
    ``min(T, TILE_T)`` tokens (same H and N), repeated along T. Every sequence of the batch differs,
    and the period along T is the prime ``TILE_T``, so a kernel that reads the wrong batch, chunk or
    block (an offset of a power of two tokens, e.g. a wrapped 32-bit index) reads other values: the
    rows are judged at this shape too (``wkvbench.perf.at_size``). A full-size float64 generation
    would take longer than the benchmark; the values stay in the model domain, so nothing overflows."""
    import numpy as np

    from wkvoracle.inputs import generate

    s = case.shape
    ts = min(s.T, TILE_T)
    tile = generate(Case(case.op, "model", Shape(s.B, ts, s.H, s.N, h0=s.h0, C=s.C), case.dtype, case.seed))
    out = {}
    for name, x in tile.items():
        if isinstance(x, np.ndarray) and x.ndim >= 2 and x.shape[:2] == (s.B, ts) and ts < s.T \
                and name not in ("state", "aa", "bb", "pp"):
            full = np.empty((s.B, s.T) + x.shape[2:], dtype=x.dtype)  # one pass: 3x faster than np.tile
            for t0 in range(0, s.T, ts):                                 # and a sliced copy of it
                n = min(ts, s.T - t0)
                full[:, t0:t0 + n] = x[:, :n]
            out[name] = full
        else:
            out[name] = x  # states, per-channel parameters, scalars; T <= TILE_T: as generated
    return out
