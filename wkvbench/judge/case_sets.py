"""The named case sets shared by pytest, ``nox -s verify`` and the benchmarks: ``default`` (sized for a
2-core CPU), ``gpu`` and ``edge``. A case itself (``Case``, ``Shape``, the value domains) is a canonical
type of the adapter contract: ``wkvkernels/cases.py``.
"""

from __future__ import annotations

from wkvkernels import config
from wkvkernels.cases import BOUNDARY_DOMAINS, CONST_DOMAINS, DOMAINS, EDGE_OP_DOMAINS, OP_DOMAINS, Case, Shape
from wkvkernels.ops import DTYPES, OPS

# Shapes of the default CPU set. N=64 everywhere that ggml's CPU wkv7 must run (its SIMD path needs
# N to be a multiple of GGML_F32_STEP: 64 with AVX-512). T=37 is not a multiple of any chunk;
# T=1 is a single decode step; the stress set adds a long sequence.
_DEFAULT_SHAPES = (Shape(2, 37, 2, 64, h0=True), Shape(1, 1, 2, 64, h0=True), Shape(2, 64, 1, 64))
_STRESS_SHAPES = (Shape(1, 256, 1, 64, h0=True),)
_WKV4_SHAPES = (Shape(2, 37, 1, 128, h0=True), Shape(1, 1, 1, 64, h0=True), Shape(2, 64, 1, 96))
_GDN_WY_SHAPES = (Shape(2, 37, 2, 64, C=16), Shape(1, 64, 2, 32, C=64), Shape(1, 1, 1, 64, C=16))
# The ``const`` domain (wkv6, gpu set only): B = 1 so that RWKV-5's B = 1-only kernel runs it as
# well; T = 37 is no multiple of a chunk, T = 64 is. Not in the default set: there the fp32 CPU
# recurrences (wkv6.torch.recurrent, fla.naive_recurrent, rwkv_ops.native) exceed the
# (wkv6, fp32, state) ceiling of 13x floor: 24.3x (rel 6.15e-7) at wkv6/const/B1-T64-H2-N64/fp32/s0,
# seeds 0-5, CPU 2026-11-23. They round exp(lw) in fp32 themselves, the same rounding at every
# token, so it adds up coherently over T; ggml.cpu, whose adapter feeds the oracle the rounded
# decay, stays at 5.2x. bf16 and fp16 pass. So the gpu set has ``const`` in bf16 and fp16 only,
# until the fp32 state ceiling is calibrated with a constant decay (a case id names any of them).
_CONST_SHAPES = (Shape(1, 37, 2, 64, h0=True), Shape(1, 64, 2, 64))


# The GPU set adds head size 128 (where kernels support it) and, for wkv4, a wider problem.
_GPU_SHAPES = (Shape(2, 37, 2, 128, h0=True), Shape(1, 1, 2, 128, h0=True))
_GPU_WKV4_SHAPES = (Shape(2, 300, 1, 256, h0=True),)
_GPU_GDN_WY_SHAPES = (Shape(2, 100, 2, 128, C=64),)

# Production conventions (wkvkernels/cases.py Shape, docs/conventions.md) of the delta rules, in the default
# and gpu sets: grouped value heads in prefill (T = 37), decode steps (T = 1, 2, 4) from a state pool with a
# padding row, raw gates and q/k normalised in the kernel, the same without a pool, and packed sequences.
_CONVENTION_SHAPES = (
    Shape(2, 37, 1, 64, h0=True, HV=2),
    Shape(3, 1, 2, 64, HV=4, P=6, pad=1, raw=True, qkn=True),
    Shape(2, 2, 1, 64, HV=2, P=3),
    Shape(3, 4, 1, 64, HV=2, P=5, pad=1, raw=True, qkn=True),
    Shape(3, 4, 1, 64, h0=True, HV=2, raw=True, qkn=True),
    Shape(3, 50, 1, 64, h0=True, HV=2, varlen=True, raw=True, qkn=True),
)
_GPU_CONVENTION_SHAPES = (Shape(4, 1, 2, 128, HV=4, P=9, pad=1, raw=True, qkn=True),
                          Shape(3, 200, 2, 128, h0=True, HV=4, varlen=True, raw=True, qkn=True))
CONVENTION_SET_OPS = ("gdn", "kda")  # the operators whose default and gpu sets include them
# KDA's safe raw gate (``-safe``: g = lower_bound * sigmoid(exp(A_log)(a + dt_bias)), the gate FlashKDA
# computes), gpu set only: the convention's kernels need K = V = 128 and no grouped value heads, packed
# sequences with initial states and a plain batch.
_GPU_SAFE_SHAPES = (Shape(3, 200, 2, 128, h0=True, varlen=True, raw=True, safe=True, qkn=True),
                    Shape(2, 37, 2, 128, h0=True, raw=True, safe=True, qkn=True))

CASE_SETS: tuple[str, ...] = ("default", "gpu", "edge")
_EDGE_SHAPES = (Shape(1, 1, 1, 64, h0=True), Shape(1, 15, 1, 64), Shape(1, 17, 1, 64, h0=True),
                Shape(1, 63, 1, 64, h0=True), Shape(1, 65, 1, 64), Shape(1, 17, 1, 128, h0=True))
_EDGE_GDN_WY_SHAPES = (Shape(1, 17, 1, 64, C=16), Shape(1, 65, 1, 64, C=64), Shape(1, 15, 1, 128, C=16))
# The boundary domains (ggmlend, hmix, safegate): two heads, so that hmix's strong and weak decays share
# every chunk; T = 1, one past FLA's 16-token DPLR chunk (17), exactly one 64-token chunk (GLA, RWKV-6,
# GDN chunk length) and one past it (65). N = 64: ggml's CPU wkv7 needs N a multiple of its SIMD step.
_EDGE_BOUNDARY_SHAPES = (Shape(1, 1, 2, 64, h0=True), Shape(1, 17, 2, 64, h0=True), Shape(1, 64, 2, 64),
                         Shape(1, 65, 2, 64, h0=True))


def _shapes(op: str, domain: str, case_set: str = "default") -> tuple[Shape, ...]:
    gpu = case_set == "gpu"
    if case_set == "edge":
        if domain in BOUNDARY_DOMAINS:
            return _EDGE_BOUNDARY_SHAPES
        return _EDGE_GDN_WY_SHAPES if op == "gdn_wy" else _EDGE_SHAPES
    if domain in CONST_DOMAINS:
        return _CONST_SHAPES
    if OPS[op].per_channel:  # wkv4: H=1 and N is the channel count C
        base = _WKV4_SHAPES + (_GPU_WKV4_SHAPES if gpu else ())
        return base + ((Shape(1, 512, 1, 64, h0=True),) if domain == "stress" else ())
    if op == "gdn_wy":  # with grouped value heads, the one convention of the WY stage
        return (_GDN_WY_SHAPES + (Shape(2, 37, 1, 64, C=16, HV=2),)
                + ((*_GPU_GDN_WY_SHAPES, Shape(2, 100, 2, 128, C=64, HV=4)) if gpu else ()))
    conv = (_CONVENTION_SHAPES + (_GPU_CONVENTION_SHAPES if gpu else ())) if op in CONVENTION_SET_OPS else ()
    conv += _GPU_SAFE_SHAPES if gpu and op == "kda" else ()
    return (_DEFAULT_SHAPES + (_GPU_SHAPES if gpu else ()) + (_STRESS_SHAPES if domain == "stress" else ())
            + conv)


def _domains(op: str, case_set: str) -> tuple[str, ...]:
    if case_set == "edge":
        return EDGE_OP_DOMAINS[op]
    return DOMAINS + (OP_DOMAINS.get(op, ()) if case_set == "gpu" else ())


def default_cases(ops: tuple[str, ...] | None = None, dtypes: tuple[str, ...] | None = None,
                  seed: int | None = None, case_set: str = "default") -> list[Case]:
    """A named verification set: every operator x domain x shape x dtype, one seed.

    ``default`` is sized for a 2-core CPU; ``gpu`` adds head size 128 shapes and the operator's own
    domains (``OP_DOMAINS``: wkv6's ``const``) on ``_CONST_SHAPES``. ``edge`` is T = 1 and
    one off the chunk lengths over the edge domains (``EDGE_OP_DOMAINS``) instead of the usual three,
    the boundary domains (documented input ranges at their ends) on two-head shapes.
    ``WKVBENCH_SEED`` changes the seed (default 0).
    """
    if case_set not in CASE_SETS:
        raise ValueError(f"unknown case set {case_set!r}; known: {', '.join(CASE_SETS)}")
    seed = config.seed() if seed is None else seed
    out = []
    for op in ops or tuple(OPS):
        for domain in _domains(op, case_set):
            for shape in _shapes(op, domain, case_set):
                for dtype in dtypes or DTYPES:
                    if domain in CONST_DOMAINS and dtype == "fp32":
                        continue  # uncalibrated: the fp32 recurrences reach 24.3x (see _CONST_SHAPES)
                    out.append(Case(op, domain, shape, dtype, seed))
    return out
