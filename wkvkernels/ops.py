"""The canonical operator set (spec §9): tensor names, which follow the case dtype, and rounding.

Everything here is NumPy only. A canonical problem is a ``dict[str, np.ndarray | float]`` keyed by
the contract names of spec §9 (``r k v a b lw u w4 q g beta A gc``, ``scale``, and the initial
state ``state`` or ``aa bb pp``). An absent initial state means zeros (``pp = -1e38`` for wkv4).
Canonical arrays are float32 (the oracle promotes to float64); layouts are ``[B, T, H, N]`` for
per-token tensors and ``[B, H, N_value, N_key]`` for matrix states.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DTYPES: tuple[str, ...] = ("fp32", "bf16", "fp16")


@dataclass(frozen=True)
class OpSpec:
    """What one operator consumes and produces, by contract name.

    ``activations`` are the inputs that a kernel receives in the case dtype (bf16/fp16/fp32);
    every other input (decays, gates, bonus scalars, the initial state) is float32 by contract.
    ``low_outputs`` are returned in the case dtype; the remaining outputs (states) are float32.
    """

    name: str
    inputs: tuple[str, ...]
    activations: tuple[str, ...]
    state: tuple[str, ...]
    outputs: tuple[str, ...]
    low_outputs: tuple[str, ...]
    has_scale: bool = False
    section: str = ""
    # the canonical shape of each tensor (inputs, outputs, state) by kind, ``SHAPES`` below; the
    # roofline's byte floor reads them (wkvbench.perf.roofline)
    shapes: tuple[tuple[str, str], ...] = ()
    # FLOPs per token and head of the step recurrence and of the chunked form (chunk C), as the
    # coefficients of (N^2, C N, C^2, N, C); the roofline's compute floor (its docstring derives them)
    step_flops: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)
    chunk_flops: tuple[int, int, int, int, int] | None = None  # None: as the step recurrence
    # wkv4: per-channel tensors [B, T, C] without heads (a case's H is 1 and its N the channel count C)
    per_channel: bool = False
    # the initial state's tensors and the value of each when none is given (spec §9: zeros; wkv4's
    # running maximum pp starts at -1e38)
    state_fill: tuple[tuple[str, float], ...] = ()
    # inputs that exist only in production conventions (wkvkernels/cases.py, docs/conventions.md) and come
    # in the case dtype like the activations: the raw gate logits a and b of the delta rules (their A_log and
    # dt_bias are float32 parameters)
    raw_activations: tuple[str, ...] = ()

    def dims(self, inputs: dict) -> tuple[int, int, int, int]:
        """``(B, T, H, N)`` of a canonical problem, read from its ``k``."""
        k = inputs["k"].shape
        return (k[0], k[1], 1, k[2]) if self.per_channel else (k[0], k[1], k[2], k[3])

    def tensor_shapes(self, B: int, T: int, H: int, N: int, C: int) -> dict[str, tuple[int, ...]]:
        return {name: SHAPES[kind](B, T, H, N, C) for name, kind in self.shapes}

    def flops_per_token_head(self, chunked: bool, N: int, C: int) -> int:
        a = self.chunk_flops if chunked and self.chunk_flops is not None else self.step_flops
        return a[0] * N * N + a[1] * C * N + a[2] * C * C + a[3] * N + a[4] * C


# the shape kinds of ``OpSpec.shapes``: per token and head (bthn), per token and head scalars (bth),
# per head (hn), a matrix state (bhnn), wkv4's channels C = H N without heads (btc, bc, c), and the
# per-chunk WY matrix of gdn_wy (bthC)
SHAPES = {
    "bthn": lambda B, T, H, N, C: (B, T, H, N),
    "bth": lambda B, T, H, N, C: (B, T, H),
    "hn": lambda B, T, H, N, C: (H, N),
    "bhnn": lambda B, T, H, N, C: (B, H, N, N),
    "btc": lambda B, T, H, N, C: (B, T, H * N),
    "bc": lambda B, T, H, N, C: (B, H * N),
    "c": lambda B, T, H, N, C: (H * N,),
    "bthC": lambda B, T, H, N, C: (B, T, H, C),
}
_MATRIX = (("state", "bhnn"), ("y", "bthn"))
_ZERO_STATE = (("state", 0.0),)


OPS: dict[str, OpSpec] = {
    s.name: s
    for s in (
        OpSpec("wkv4", ("k", "v", "w4", "u"), ("k", "v"), ("aa", "bb", "pp"),
               ("y", "aa", "bb", "pp"), ("y",), section="§2", per_channel=True,
               state_fill=(("aa", 0.0), ("bb", 0.0), ("pp", -1e38)),
               shapes=(("k", "btc"), ("v", "btc"), ("w4", "c"), ("u", "c"), ("aa", "bc"), ("bb", "bc"),
                       ("pp", "bc"), ("y", "btc")),
               step_flops=(0, 0, 0, 12, 0)),
        OpSpec("wkv6", ("r", "k", "v", "lw", "u"), ("r", "k", "v", "u"), ("state",),
               ("y", "state"), ("y",), section="§3", state_fill=_ZERO_STATE,
               shapes=(("r", "bthn"), ("k", "bthn"), ("v", "bthn"), ("lw", "bthn"), ("u", "hn"), *_MATRIX),
               step_flops=(6, 0, 0, 0, 0), chunk_flops=(4, 4, 0, 0, 0)),
        OpSpec("wkv7", ("r", "k", "v", "a", "b", "lw"), ("r", "k", "v", "a", "b"), ("state",),
               ("y", "state"), ("y",), section="§4", state_fill=_ZERO_STATE,
               shapes=(*((n, "bthn") for n in ("r", "k", "v", "a", "b", "lw")), *_MATRIX),
               step_flops=(10, 0, 0, 0, 0), chunk_flops=(6, 8, 1, 0, 0)),
        OpSpec("gla", ("q", "k", "v", "lw"), ("q", "k", "v"), ("state",),
               ("y", "state"), ("y",), has_scale=True, section="§3.2", state_fill=_ZERO_STATE,
               shapes=(*((n, "bthn") for n in ("q", "k", "v", "lw")), *_MATRIX),
               step_flops=(5, 0, 0, 0, 0), chunk_flops=(4, 4, 0, 0, 0)),
        OpSpec("gdn", ("q", "k", "v", "g", "beta"), ("q", "k", "v", "beta"), ("state",),
               ("y", "state"), ("y",), has_scale=True, section="§5", state_fill=_ZERO_STATE,
               raw_activations=("a", "b"),
               shapes=(("q", "bthn"), ("k", "bthn"), ("v", "bthn"), ("g", "bth"), ("beta", "bth"), *_MATRIX),
               step_flops=(8, 0, 0, 0, 0), chunk_flops=(6, 8, 1, 0, 0)),
        OpSpec("gdn_wy", ("k", "v", "beta", "A", "gc"), ("k", "v", "beta", "A"), (),
               ("w", "u"), ("w", "u"), section="§5.2",
               shapes=(("k", "bthn"), ("v", "bthn"), ("beta", "bth"), ("A", "bthC"), ("gc", "bth"),
                       ("w", "bthn"), ("u", "bthn")),
               step_flops=(0, 4, 0, 0, 1)),
        # kda: gdn with one log gate per key (g "bthn"); the per-key decay adds, per token and head, N exps
        # (step), and the gate's cumulative sum, its exp and the q, k scalings by it (4 N, chunked)
        OpSpec("kda", ("q", "k", "v", "g", "beta"), ("q", "k", "v", "beta"), ("state",),
               ("y", "state"), ("y",), has_scale=True, section="§5.3", state_fill=_ZERO_STATE,
               raw_activations=("a", "b"),
               shapes=(("q", "bthn"), ("k", "bthn"), ("v", "bthn"), ("g", "bthn"), ("beta", "bth"), *_MATRIX),
               step_flops=(8, 0, 0, 1, 0), chunk_flops=(6, 8, 1, 4, 0)),
    )
}


def contract_dtypes(op: str, dtype: str, state_precision: str = "fp32") -> dict[str, str]:
    """The dtype each output of ``op`` comes back in by contract on a case of ``dtype``: the low outputs in
    the case dtype, the states in ``state_precision`` (the spec's fp32 unless a variant declares otherwise)."""
    spec = op_spec(op)
    return {n: dtype if n in spec.low_outputs else state_precision for n in spec.outputs}


def op_spec(name: str) -> OpSpec:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown operator {name!r}; known: {', '.join(sorted(OPS))}") from None


def _round_bf16(x: np.ndarray) -> np.ndarray:
    """Round to bfloat16 (round-to-nearest-even), returned as float32. NaN stays NaN.

    In place on one uint32 copy: the sum never wraps for a non-NaN (the largest, 0xFF7FFFFF + 0x8000,
    stays below 2**32; a finite value that rounds past the largest bfloat16 becomes inf, as on a device),
    and NaNs take their float32 value back afterwards. The six inputs of a B8-T4096-H32-N64 case round in
    about 2 s on one core of the 2-core machine, against 15 s with uint64 temporaries (2026-11-25)."""
    f = np.array(x, dtype=np.float32, copy=True, order="C")
    bits = f.view(np.uint32)
    nan = np.isnan(f)
    keep = f[nan] if nan.any() else None
    lsb = bits >> 16
    lsb &= 1
    bits += np.uint32(0x7FFF)
    bits += lsb
    bits &= np.uint32(0xFFFF0000)
    if keep is not None:
        f[nan] = keep
    return f


ROUND_BLOCK = 1 << 16  # elements rounded at a time: the temporaries stay in cache and are reused


def _rounded(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "fp32":
        return x.astype(np.float32)
    if dtype == "fp16":
        with np.errstate(over="ignore"):  # beyond 65504 rounds to inf, as the cast on a device does
            return x.astype(np.float16)
    if dtype == "bf16":
        return _round_bf16(x)
    return x


def round_to(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` rounded once to ``dtype`` and returned as float64 (the values a kernel of that dtype sees).

    Block by block into the one float64 result: whole-array temporaries of a benchmark-sized input
    (hundreds of MB each, in fresh pages) took several times longer than the rounding itself."""
    if dtype not in ("fp32", "fp16", "bf16", "fp64"):
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPES)}")
    x = np.asarray(x)
    out = np.empty(x.shape, np.float64)
    src, dst = np.ravel(x), out.reshape(-1)  # ravel copies only a non-contiguous x
    for s in range(0, src.size, ROUND_BLOCK):
        dst[s:s + ROUND_BLOCK] = _rounded(src[s:s + ROUND_BLOCK], dtype)
    return out


def round_inputs(op: str, inputs: dict, dtype: str) -> dict:
    """Canonical inputs as a kernel of ``dtype`` sees them, in float64.

    Activations are rounded to ``dtype``; every other array to float32; floats and integer arrays (the
    ``cu_seqlens`` and ``state_indices`` of production conventions) pass through.
    """
    spec = op_spec(op)
    low = spec.activations + spec.raw_activations
    out: dict = {}
    for name, value in inputs.items():
        if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
            out[name] = value
        elif isinstance(value, np.ndarray):
            out[name] = round_to(value, dtype if name in low else "fp32")
        else:
            out[name] = value
    return out


def default_state(op: str, inputs: dict) -> dict[str, np.ndarray]:
    """The initial state of spec §9 when none is given, for the shapes in ``inputs`` (float64)."""
    spec = op_spec(op)
    if "state_pool" in inputs:  # production conventions: the pool holds every initial state
        return {}
    shapes = spec.tensor_shapes(*spec.dims(inputs), 0)
    if "state" in shapes and not spec.per_channel:  # one state per sequence and value head: [N, HV, V, K]
        seqs = len(inputs["cu_seqlens"]) - 1 if "cu_seqlens" in inputs else inputs["v"].shape[0]
        shapes["state"] = (seqs, inputs["v"].shape[2], inputs["v"].shape[-1], inputs["k"].shape[-1])
    return {name: np.full(shapes[name], fill) for name, fill in spec.state_fill}
