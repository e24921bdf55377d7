"""The roofline model: minimum bytes moved and FLOPs executed per operator and algorithm, and the
device ceilings they are divided by.

**Bytes (the memory floor).** Every canonical input read once and every output and final state
written once (spec §9 layouts): activations (``OpSpec.activations``) and the low outputs in the case
dtype, everything else (decays, gates, bonus, states) in float32; the initial state is read only when
the case gives one. Nothing a kernel re-reads or spills is counted: this is a floor, not a model of
any one kernel.

**FLOPs (the compute floor).** Counted per token and head for the form the variant executes
(multiply and add count one each; an exp counts one), kept with each operator in
``wkvkernels.ops.OPS`` (``step_flops``, ``chunk_flops``) as this table derives them:

========= ====================================================== =====================================
operator  step recurrence (``recurrent``, ``fused_recurrent``)   chunked form, chunk C (``chunk``)
========= ====================================================== =====================================
wkv4      12 per channel (two exps, six mul/add for a, b, p, y)  (same)
wkv6      6 N^2: decay S (N^2), k v^T (N^2), add (N^2), r.S 2N^2,  4 C N (intra-chunk r k^T and A v)
          bonus (N^2)                                            + 4 N^2 (inter-chunk r S, S update)
gla       5 N^2 (wkv6 without the bonus)                         4 C N + 4 N^2
wkv7      10 N^2: S a 2N^2, (S a) b^T 2N^2, v k^T 2N^2, decay     8 C N + 6 N^2 + C^2 (WY: A, w, u,
          N^2, adds N^2, r.S 2N^2                                intra-chunk, triangular solve)
gdn       8 N^2: decay N^2, S k 2N^2, delta outer 2N^2, add N^2,  8 C N + 6 N^2 + C^2
          q.S 2N^2 (minus lower-order terms)
gdn_wy    4 C N + C (w = A (beta k), u = A (beta v) per token)   (same)
kda       8 N^2 + N: gdn's, with N exps for the per-key decay   8 C N + 6 N^2 + C^2 + 4 N (the gate's
                                                                 cumsum and exp, q and k scaled by it)
========= ====================================================== =====================================

The compute floor divides by the matmul ceiling of the dtype (bf16 for bf16/fp16, plain fp32 for
fp32): optimistic for step recurrences, which cannot use tensor cores, so the floor stays a floor.
``floor = max(bytes / copy ceiling, flops / matmul ceiling)``.

**Ceilings** are measured on the machine (``measure_ceilings``, device time from CUDA events around
a batch of back-to-back calls, so launch gaps are amortized): device-to-device copy (bytes read
plus written), bf16 and fp32 (TF32 off) matmul at 8192^3. Cached per machine identity under
``~/.cache/wkvbench`` (``WKVBENCH_CACHE_DIR``).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from wkvkernels import config
from wkvkernels.ops import op_spec

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
CHUNK = 64  # chunk length of the chunked kernels (FLA, rwkv-ops)


def tensor_shapes(op: str, B: int, T: int, H: int, N: int, C: int = CHUNK) -> dict[str, tuple[int, ...]]:
    """Canonical shapes (spec §9) of every input and output of ``op`` (``state`` for both ends):
    ``OpSpec.shapes``."""
    return op_spec(op).tensor_shapes(B, T, H, N, C)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def min_bytes(op: str, dtype: str, B: int, T: int, H: int, N: int, h0: bool = False, C: int = CHUNK,
              state_bytes: int = 4) -> int:
    """Inputs read once + outputs and final state written once (the module docstring's rule); the state
    in ``state_bytes`` per element: fp32 (the spec's), or 2 for an implementation that declares its
    state in a half precision by design (``KernelVariant.state_precision``), which moves half of it."""
    spec = op_spec(op)
    low = DTYPE_BYTES[dtype]
    total = 0
    for name, shape in tensor_shapes(op, B, T, H, N, C).items():
        n = _numel(shape)
        if name in spec.state:
            total += state_bytes * n * (2 if h0 else 1)  # written, and read when given
        elif name in spec.activations or name in spec.low_outputs:
            total += low * n
        else:
            total += 4 * n
    return total


def case_bytes(case, state_precision: str = "fp32") -> int:
    """``min_bytes`` of a case, in production conventions too (docs/conventions.md): q and k over the key
    heads, everything else over the value heads; a packed row's tokens; raw gates in place of ``g`` and
    ``beta`` (the logits in the case dtype, ``A_log`` and ``dt_bias`` in float32); a pool's real rows
    read and written, the rest of the pool untouched. The state in ``state_precision`` (an implementation's
    declared one: a bf16-state kernel's floor counts 2 bytes an element; with 4 its kda decode read 167 %
    of the roofline on the H100, reports/gpu/h100-2026-11-27-serving-bench/)."""
    s = case.shape
    sb = DTYPE_BYTES[state_precision]
    if not s.in_conventions:
        return min_bytes(case.op, case.dtype, s.B, s.T, s.H, s.N, s.h0, state_bytes=sb)
    low, HV, N = DTYPE_BYTES[case.dtype], s.value_heads, s.N
    tokens = s.T if s.varlen else s.B * s.T
    gate_width = N if case.op == "kda" else 1  # kda's gate is per key
    total = low * tokens * N * (2 * s.H + 2 * HV)  # q, k; v, y
    if s.raw:
        total += low * tokens * HV * (gate_width + 1) + 4 * HV * (1 + gate_width)  # a, b; A_log, dt_bias
    else:
        total += 4 * tokens * HV * gate_width + low * tokens * HV  # g (fp32), beta (case dtype)
    state = sb * HV * N * N
    if s.P:
        total += 2 * state * (s.B - s.pad)
    else:
        total += state * s.B * (2 if s.h0 else 1)
    return total


def case_flops(case, algorithm: str, C: int = CHUNK) -> int:
    """``flops`` of a case; in production conventions over its tokens and value heads."""
    s = case.shape
    tokens = s.T if s.varlen else s.B * s.T
    return tokens * s.value_heads * op_spec(case.op).flops_per_token_head(algorithm == "chunk", s.N, C)


def flops(op: str, algorithm: str, B: int, T: int, H: int, N: int, C: int = CHUNK) -> int:
    """Executed FLOPs of the model in the module docstring (``OpSpec.step_flops``/``chunk_flops``)."""
    return B * T * H * op_spec(op).flops_per_token_head(algorithm == "chunk", N, C)


@dataclass
class Ceilings:
    copy_gbps: float
    matmul_bf16_tflops: float
    matmul_fp32_tflops: float
    measured_at: str
    device: str

    def floor_ms(self, nbytes: int, nflops: int, dtype: str) -> float:
        peak = self.matmul_fp32_tflops if dtype == "fp32" else self.matmul_bf16_tflops
        return max(nbytes / (self.copy_gbps * 1e9), nflops / (peak * 1e12)) * 1e3


def _cache_dir() -> Path:
    return config.cache_root()


def _batch_ms(fn, n: int) -> float:
    """Device time per call of ``n`` back-to-back calls, from two CUDA events around the batch."""
    import torch

    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / n


def measure_copy_gbps(nbytes: int = 2 << 30, reps: int = 5) -> float:
    """Device-to-device copy bandwidth, bytes read plus written per second (best of ``reps`` batches)."""
    import torch

    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    best = min(_batch_ms(lambda: dst.copy_(src), 20) for _ in range(reps))
    return 2 * nbytes / (best * 1e-3) / 1e9


def measure_matmul_tflops(dtype: str, n: int = 8192, reps: int = 3) -> float:
    import torch

    td = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype]
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        a = torch.randn(n, n, device="cuda", dtype=td)
        b = torch.randn(n, n, device="cuda", dtype=td)
        best = min(_batch_ms(lambda: a @ b, 10) for _ in range(reps))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    return 2 * n**3 / (best * 1e-3) / 1e12


def measure_ceilings(identity: str, refresh: bool = False) -> Ceilings:
    """The machine's ceilings, measured once per identity and cached."""
    path = _cache_dir() / f"ceilings-{''.join(c if c.isalnum() else '_' for c in identity)}.json"
    if path.exists() and not refresh:
        return Ceilings(**json.loads(path.read_text()))
    c = Ceilings(copy_gbps=measure_copy_gbps(), matmul_bf16_tflops=measure_matmul_tflops("bf16"),
                 matmul_fp32_tflops=measure_matmul_tflops("fp32"),
                 measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), device=identity)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(c), indent=1))
    return c
