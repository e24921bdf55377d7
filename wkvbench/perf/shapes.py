"""The benchmark shapes: the named shape sets, the small gate case that stands for a shape, and the
canonical inputs of a shape (shared by ``bench``, its judging at size, ``stability`` and asv)."""

from __future__ import annotations

from dataclasses import replace

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


# ---- the ``models`` set: shapes of released models' published configurations ------------------------
# One named set per row, each for one operator (``set_shape`` gives None for the others), all expanded by
# ``--set models``. Each row names the configuration it comes from (``MODEL_SOURCES``). The delta rules'
# rows come in the serving engines' conventions (docs/conventions.md): raw gates, q/k normalised in the
# kernel, grouped value heads; decode from a state pool larger than the batch (1.5 B slots, every eighth
# row padding, as CUDA-graph batches pad), T = 2 and 4 decode (multi-token prediction), and packed
# prefill of 8192 and 32768 tokens; KDA's also in the safe raw gate (FlashKDA's), 8192 tokens.
MODEL_CONFIGS: dict[str, tuple[str, str, int, int, int, str]] = {
    # name: (operator, key heads, value heads, head size, source)
    "qwen3-next": ("gdn", 16, 32, 128, "Qwen/Qwen3-Next-80B-A3B-Instruct config.json: linear_num_key_heads 16, "
                   "linear_num_value_heads 32, linear_key_head_dim = linear_value_head_dim = 128"),
    "qwen3-next-tp2": ("gdn", 8, 16, 128, "Qwen3-Next-80B-A3B's GDN (16/32 heads) on one of 2 tensor-parallel ranks"),
    "qwen3-next-tp4": ("gdn", 4, 8, 128, "Qwen3-Next-80B-A3B's GDN (16/32 heads) on one of 4 tensor-parallel ranks"),
    "qwen3-next-tp8": ("gdn", 2, 4, 128, "Qwen3-Next-80B-A3B's GDN (16/32 heads) on one of 8 tensor-parallel ranks"),
    "kimi-linear": ("kda", 32, 32, 128, "moonshotai/Kimi-Linear-48B-A3B-Instruct config.json: linear_attn_config "
                    "num_heads 32, head_dim 128 (one head count: no grouped value heads)"),
    "rwkv7-1.5b": ("wkv7", 32, 32, 64, "RWKV-7 World 1.5B (BlinkDL/rwkv-7-world): n_embd 2048, head size 64"),
    "rwkv7-2.9b": ("wkv7", 40, 40, 64, "RWKV-7 World 2.9B (BlinkDL/rwkv-7-world): n_embd 2560, head size 64"),
}
DECODE_BATCHES = (1, 8, 64, 256)
PREFILL_TOKENS = (8192, 32768)


def _model_rows() -> dict[str, tuple[str, Shape]]:
    """``{set name: (operator, shape)}`` of the models set, in its order."""
    rows: dict[str, tuple[str, Shape]] = {}
    for name, (op, H, HV, N, _) in MODEL_CONFIGS.items():
        delta = op in ("gdn", "kda")
        gva = HV if HV != H else 0
        whole = not name.endswith(("-tp2", "-tp4", "-tp8"))
        for B in DECODE_BATCHES if whole else (64,):
            if delta:
                rows[f"{name}.decode-b{B}"] = (op, Shape(B, 1, H, N, HV=gva, P=B + (B + 1) // 2 + 1, pad=B // 8,
                                                         raw=True, qkn=True))
            else:
                rows[f"{name}.decode-b{B}"] = (op, Shape(B, 1, H, N, h0=True))
        if delta:
            for T in (2, 4) if whole else ():
                rows[f"{name}.mtp{T}-b64"] = (op, Shape(64, T, H, N, HV=gva, P=97, pad=8, raw=True, qkn=True))
            for tokens in PREFILL_TOKENS if whole else PREFILL_TOKENS[:1]:
                rows[f"{name}.prefill-{tokens // 1024}k"] = (op, Shape(8, tokens, H, N, h0=True, HV=gva, varlen=True,
                                                                       raw=True, qkn=True))
            if op == "kda":  # the safe raw gate FlashKDA computes (docs/conventions.md)
                rows[f"{name}.prefill-8k-safe"] = (op, Shape(8, 8192, H, N, h0=True, varlen=True, raw=True,
                                                              safe=True, qkn=True))
        else:
            for tokens in PREFILL_TOKENS:
                rows[f"{name}.prefill-{tokens // 1024}k"] = (op, Shape(tokens // 4096, 4096, H, N))
    return rows


MODEL_ROWS = _model_rows()
MODEL_SETS = tuple(MODEL_ROWS)
SHAPE_SETS.update({name: {op: shape} for name, (op, shape) in MODEL_ROWS.items()})


def model_source(set_name: str) -> str | None:
    """The published configuration a models-set row comes from (None for the standard sets)."""
    if set_name not in MODEL_ROWS:
        return None
    return MODEL_CONFIGS[set_name.rsplit(".", 1)[0]][4]


def expand_sets(names) -> tuple[str, ...]:
    """Set names as given on a command line: ``standard`` and ``models`` stand for their sets."""
    groups = {"standard": STANDARD_SETS, "models": MODEL_SETS}
    return tuple(x for s in names for x in groups.get(s, (s,)))


def set_shape(set_name: str, op: str) -> Shape | None:
    try:
        shapes = SHAPE_SETS[set_name]
    except KeyError:
        raise ValueError(f"unknown shape set {set_name!r}; known: {', '.join(SHAPE_SETS)}") from None
    return shapes.get(op, shapes.get("*") if op != "wkv4" else None)


def gate_case(op: str, shape: Shape, dtype: str) -> Case:
    """The small verification case standing for a benchmark shape (same N, h0 and T divisibility; in
    production conventions, the same conventions on three rows, one key head and at most two value
    heads per key head, a pool two slots larger than the rows)."""
    T = shape.T if shape.T <= 128 else 128 if shape.T % 128 == 0 else min(shape.T, 100)
    if shape.in_conventions:
        B = min(shape.B, 3)
        G = shape.value_heads // shape.H
        small = replace(shape, B=B, T=T, H=1, HV=min(G, 2) if G > 1 else 0, P=B + 2 if shape.P else 0,
                        pad=min(shape.pad, B - 1))
        return Case(op, "model", small, dtype, 0)
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
    if s.in_conventions:  # tied rows, pools and packed sequences: generated whole, at size
        return generate(Case(case.op, "model", s, case.dtype, case.seed))
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
