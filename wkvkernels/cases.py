"""Cases: (operator, domain, shape, dtype, seed) and the readable ids that reproduce them exactly.
The named case sets built from them (``default``, ``gpu``, ``edge``) are the suite's:
``wkvbench/judge/case_sets.py``.

A case id reads ``wkv7/model/B2-T64-H2-N64-h0/bf16/s0``: operator, value domain, shape (``h0`` when
an initial state is given; ``C16`` the chunk length of ``gdn_wy``), dtype, seed. ``Case.parse(id)``
gives the case back and ``wkvoracle.inputs.generate(case)`` its inputs, bit for bit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from wkvkernels.ops import DTYPES, OPS

DOMAINS: tuple[str, ...] = ("model", "stress", "uniform")
# The edge set's value domains (model-domain inputs with one quantity at its limit,
# wkvoracle/inputs.py): decays -> 1 (lw -> 0), log decays very negative (decays -> 0), and
# beta (gdn) / the in-context learning rate (wkv7's b = kk * iclr) exactly 0 or 1.
EDGE_DOMAINS: tuple[str, ...] = ("lw0", "lwneg", "beta0", "beta1")
# Boundary domains of the edge set: inputs at the ends of a kernel package's documented input range, each
# range cited in wkvoracle/inputs.py (BOUNDARY_RANGES) and docs/verification.md. ``ggmlend``: every
# input at an end of ggml's test-backend-ops range; ``hmix``: decays at the strong end of a documented
# range in the even heads and at the weak end in the odd heads of the same chunk; ``safegate`` (wkv7, kda):
# the same with FLA's safe_gate lower end lw = -5 (kda: its gate g).
BOUNDARY_DOMAINS: tuple[str, ...] = ("ggmlend", "hmix", "safegate")
# Operator-specific domains of the GPU set. ``const``: the model domain with each
# sequence's decay constant over time (``lw[:, t] = lw[:, 0]``, still varying per head and key), what
# RWKV-5's kernels take (one decay per head and key for the whole sequence, spec §3.1); every other
# wkv6 variant must pass it too.
OP_DOMAINS: dict[str, tuple[str, ...]] = {"wkv6": ("const",)}
CONST_DOMAINS: tuple[str, ...] = ("const",)
ALL_DOMAINS: tuple[str, ...] = DOMAINS + CONST_DOMAINS + EDGE_DOMAINS + BOUNDARY_DOMAINS
# Cases of an outside case source: a flashinfer-bench workload (wkvbench/run/fibench.py) is the domain
# ``fib-<definition>-<workload uuid prefix>``. Such an id parses anywhere (a results file reads without the
# workloads); its inputs come from the source registered for it (``wkvoracle.inputs.CASE_SOURCES``): the
# model domain's draws, with the tensors the workload gives in their place.
SOURCE_DOMAIN = re.compile(r"fib-[A-Za-z0-9_.]+-[A-Za-z0-9]{1,32}")


def is_source_domain(domain: str) -> bool:
    """Whether ``domain`` names a case of an outside case source (``SOURCE_DOMAIN``)."""
    return SOURCE_DOMAIN.fullmatch(domain) is not None

# The edge domains that apply to each operator: the decays at their limits and (gdn, gdn_wy, wkv7, kda)
# beta / iclr at 0 and 1 (the edge set, wkvbench/judge/case_sets.py).
# The boundary domains apply to the operators whose documented ranges they come from (wkv4 has no ggml op
# and one decay per channel, no heads; gdn_wy's inputs are a WY factorization, not a gate).
EDGE_OP_DOMAINS: dict[str, tuple[str, ...]] = {
    "wkv4": ("lw0", "lwneg"), "wkv6": ("lw0", "lwneg", "ggmlend", "hmix"), "gla": ("lw0", "lwneg", "ggmlend", "hmix"),
    "wkv7": ("lw0", "lwneg", "beta0", "beta1", "ggmlend", "hmix", "safegate"),
    "gdn": ("lw0", "lwneg", "beta0", "beta1", "ggmlend", "hmix"),
    "gdn_wy": ("beta0", "beta1"),
    "kda": ("lw0", "lwneg", "beta0", "beta1", "safegate"),
}


# The production conventions (docs/conventions.md) a case may ask of a kernel, and what each means; the
# operators each applies to (``CONVENTION_OPS``). A variant lists the ones it takes (``KernelVariant.
# conventions``) and refuses a case asking for another, with the reason.
CONVENTIONS: dict[str, str] = {
    "gva": "grouped value heads (HV a multiple of H)",
    "pool": "state pool indexed per sequence (index -1: padding)",
    "varlen": "packed sequences (cu_seqlens)",
    "raw": "raw gating inputs (A_log, a, dt_bias, b)",
    "safe": "safe raw gate (lower_bound * sigmoid(exp(A_log) (a + dt_bias)))",
    "qkn": "in-kernel q/k normalisation",
}
# A pooled adapter may watch the slot just before and just after the pool it passes (a kernel that takes
# the padding index -1 for a slot reads and writes the one before): it fills them with this value and
# returns them as ``state_pool_guard``; the judge fails a case whose guards changed.
POOL_GUARD = -3.25
CONVENTION_OPS: dict[str, frozenset[str]] = {
    "gdn": frozenset(CONVENTIONS) - {"safe"}, "kda": frozenset(CONVENTIONS), "gdn_wy": frozenset({"gva"}),
}


@dataclass(frozen=True, order=True)
class Shape:
    """A case's dimensions and, for the delta rules (``CONVENTION_OPS``), the production conventions its
    inputs come in (docs/conventions.md). Every convention field defaults to off, so an id without them
    reads as before.

    * ``HV``: value heads, a multiple of the key heads ``H`` (grouped value heads: value head ``hv`` reads
      key head ``hv // (HV / H)``); 0 means ``HV = H``. Written ``-HV<n>`` after ``H``.
    * ``P``: a state pool of ``P`` slots ``[P, HV, V, K]``; row ``b`` of the batch reads and writes slot
      ``state_indices[b]`` (distinct, drawn from the case's seed). ``pad``: that many rows are padding,
      index -1, whose outputs are not judged and whose call may write no slot. ``-P<n>``, ``-pad<n>``.
    * ``varlen``: ``B`` sequences of different lengths packed into one row of ``T`` tokens in all, with
      ``cu_seqlens`` (lengths drawn from the seed, each at least 1). ``-varlen``.
    * ``raw``: the gates come raw, ``A_log, a, dt_bias, b``; the kernel computes
      ``g = -exp(A_log) softplus(a + dt_bias)`` and ``beta = sigmoid(b)``. ``-raw``.
    * ``safe`` (kda, with ``raw``): the raw gate in FLA's safe form, ``g = lower_bound * sigmoid(exp(A_log)
      (a + dt_bias))`` with ``lower_bound = -5`` (``wkvoracle.conventions.SAFE_LOWER_BOUND``), as FlashKDA
      computes it. ``-safe``.
    * ``qkn``: q and k come unnormalised; the kernel L2-normalises them (``x / sqrt(sum x^2 + 1e-6)``).
      ``-qkn``.
    """

    B: int
    T: int
    H: int
    N: int
    h0: bool = False  # an initial state is given
    C: int = 0  # chunk length (gdn_wy only)
    HV: int = 0  # value heads (0: as many as H)
    P: int = 0  # state pool slots (0: one state per sequence, no pool)
    pad: int = 0  # padding rows (state index -1) of a pooled batch
    varlen: bool = False  # B sequences of different lengths packed into T tokens (cu_seqlens)
    raw: bool = False  # raw gating inputs (A_log, a, dt_bias, b)
    qkn: bool = False  # q and k unnormalised: normalised in the kernel
    safe: bool = False  # the raw gate in its safe form (kda, with raw)

    @property
    def value_heads(self) -> int:
        return self.HV or self.H

    @property
    def in_conventions(self) -> bool:
        """Whether the shape departs from the canonical form: any convention, or a value-head count of its
        own (``-HV``, even one equal to ``H``: its id, and so its inputs, differ from the canonical one's)."""
        return bool(self.HV) or bool(self.conventions)

    @property
    def conventions(self) -> frozenset[str]:
        """The production conventions this shape asks of a kernel (names of ``CONVENTIONS``)."""
        return frozenset(name for name, on in (("gva", self.value_heads != self.H), ("pool", self.P > 0),
                                               ("varlen", self.varlen), ("raw", self.raw),
                                               ("safe", self.safe), ("qkn", self.qkn)) if on)

    def __str__(self) -> str:
        s = f"B{self.B}-T{self.T}-H{self.H}"
        if self.HV:
            s += f"-HV{self.HV}"
        s += f"-N{self.N}"
        if self.C:
            s += f"-C{self.C}"
        if self.P:
            s += f"-P{self.P}"
        if self.pad:
            s += f"-pad{self.pad}"
        s += "".join(f"-{flag}" for flag in ("varlen", "raw", "safe", "qkn") if getattr(self, flag))
        return s + ("-h0" if self.h0 else "")

    @classmethod
    def parse(cls, text: str) -> Shape:
        m = re.fullmatch(r"B(\d+)-T(\d+)-H(\d+)(?:-HV(\d+))?-N(\d+)(?:-C(\d+))?(?:-P(\d+))?(?:-pad(\d+))?"
                         r"(-varlen)?(-raw)?(-safe)?(-qkn)?(-h0)?", text)
        if not m:
            raise ValueError(f"bad shape {text!r}; expected e.g. B2-T64-H2-N64[-C16][-h0], with the conventions "
                             "B8-T1-H2-HV4-N128-P32-pad1-varlen-raw-safe-qkn-h0 in that order")
        B, T, H, HV, N, C, P, pad, varlen, raw, safe, qkn, h0 = m.groups()
        return cls(int(B), int(T), int(H), int(N), bool(h0), int(C or 0), int(HV or 0), int(P or 0),
                   int(pad or 0), bool(varlen), bool(raw), bool(qkn), bool(safe))


@dataclass(frozen=True, order=True)
class Case:
    op: str
    domain: str
    shape: Shape
    dtype: str
    seed: int = 0

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown operator {self.op!r}; known: {', '.join(OPS)}")
        if self.domain not in ALL_DOMAINS and not is_source_domain(self.domain):
            raise ValueError(f"unknown domain {self.domain!r}; known: {', '.join(ALL_DOMAINS)}, and "
                             "fib-<definition>-<workload> (a flashinfer-bench workload)")
        if self.domain in EDGE_DOMAINS + BOUNDARY_DOMAINS and self.domain not in EDGE_OP_DOMAINS[self.op]:
            raise ValueError(f"domain {self.domain!r} does not apply to {self.op} "
                             f"(its edge domains: {', '.join(EDGE_OP_DOMAINS[self.op]) or 'none'})")
        if self.domain in CONST_DOMAINS and self.domain not in OP_DOMAINS.get(self.op, ()):
            has = ", ".join(o for o, d in OP_DOMAINS.items() if self.domain in d)
            raise ValueError(f"domain {self.domain!r} does not apply to {self.op} (operators with it: {has})")
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}; known: {', '.join(DTYPES)}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        s = self.shape
        if min(s.B, s.T, s.H, s.N) < 1:
            raise ValueError(f"every dimension must be >= 1, got {s}")
        if self.op == "gdn_wy" and s.C < 1:
            raise ValueError("gdn_wy needs a chunk length C (shape ...-C16)")
        self._check_conventions()

    def _check_conventions(self) -> None:
        s = self.shape
        asked = s.conventions
        allowed = CONVENTION_OPS.get(self.op, frozenset())
        if asked - allowed:
            raise ValueError(f"{self.op} takes no {', '.join(sorted(asked - allowed))} convention "
                             f"(its conventions: {', '.join(sorted(allowed)) or 'none'})")
        if s.HV and (s.HV < s.H or s.HV % s.H):
            raise ValueError(f"value heads HV{s.HV} must be a multiple of the key heads H{s.H}")
        if s.pad and not s.P:
            raise ValueError("padding rows (-pad) need a state pool (-P)")
        if s.P:
            if s.h0:
                raise ValueError("a pooled case's initial states are its pool slots: drop -h0")
            if s.pad >= s.B:
                raise ValueError(f"-pad{s.pad} leaves no real row of B{s.B}")
            if s.P < s.B - s.pad:
                raise ValueError(f"a pool of {s.P} slots cannot hold {s.B - s.pad} sequences")
        if s.safe and not s.raw:
            raise ValueError("-safe is a form of the raw gate: it needs -raw")
        if s.raw and self.domain not in DOMAINS and not is_source_domain(self.domain):
            raise ValueError(f"raw gates are drawn in the domains {', '.join(DOMAINS)} only, not {self.domain!r}")
        if s.varlen and s.T < s.B:
            raise ValueError(f"-varlen packs B{s.B} sequences of at least one token into T{s.T} tokens: T < B")

    @property
    def id(self) -> str:
        return f"{self.op}/{self.domain}/{self.shape}/{self.dtype}/s{self.seed}"

    def __str__(self) -> str:
        return self.id

    @classmethod
    def parse(cls, text: str) -> Case:
        parts = text.strip().split("/")
        if len(parts) != 5 or not parts[4].startswith("s"):
            raise ValueError(f"bad case id {text!r}; expected op/domain/shape/dtype/sSEED")
        op, domain, shape, dtype, seed = parts
        return cls(op, domain, Shape.parse(shape), dtype, int(seed[1:]))

    def with_dtype(self, dtype: str) -> Case:
        return replace(self, dtype=dtype)

    @property
    def input_key(self) -> tuple:
        """Cases that differ only in dtype share their canonical inputs."""
        return (self.op, self.domain, self.shape, self.seed)
