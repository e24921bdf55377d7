"""MLX helpers shared by the MLX adapters (``wkvkernels/*/mlx_*.py``) and the Metal kernel of our own.

MLX (``mlx``, Apple) runs the same graph on an Apple GPU (Metal) or on the CPU. On Linux the
``mlx[cpu]`` wheel (the ``mlx-cpu`` distribution) has the CPU back-end only: ``mx.metal.is_available()``
is False, ``mx.fast.metal_kernel`` builds a kernel object but raises "No Metal back-end" when called,
and a GPU stream cannot be made ("Cannot get gpu stream without gpu backend"). So every variant here
has a ``device``: ``"cpu"`` variants run the plain-MLX paths (verified here like any third-party
implementation), ``"metal"`` variants need an Apple GPU and say so with the exact reason elsewhere.

Arrays are lazy in MLX. ``prepare`` builds and evaluates the inputs on the variant's device (nothing
of it is timed); ``run`` builds the call's graph and starts it with ``mx.async_eval`` (it returns
without waiting, like a CUDA launch); ``to_canonical`` waits (``np.array`` evaluates) and converts.
A timer waits with ``mx.synchronize()`` (``sync``): MLX's own synchronization, the only device clock
MLX offers; a Metal time taken so is labelled as such (docs/metal.md).
"""

from __future__ import annotations

import importlib.util
import platform
from functools import cache
from typing import Any, ClassVar

import numpy as np

from wkvkernels.base import Availability, KernelVariant
from wkvkernels.ops import round_inputs, round_to

MLX_VERSION = "0.32.4"  # mlx[cpu] on Linux (the mlx-cpu wheel), mlx on macOS
MLX_LM_VERSION = "0.32.2"
MX_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
ALL_DTYPES = frozenset(MX_DTYPES)


@cache
def mlx_unavailable() -> str | None:
    """None when ``mlx.core`` imports, else why."""
    if importlib.util.find_spec("mlx") is None:
        return (f'mlx not installed (pip install "mlx[cpu]=={MLX_VERSION}" on Linux, '
                f'mlx=={MLX_VERSION} on macOS)')
    try:
        import mlx.core  # noqa: F401
    except Exception as exc:  # a broken wheel: the reason is the import error
        return f"mlx failed to import: {type(exc).__name__}: {exc}"
    return None


@cache
def mlx_lm_unavailable() -> str | None:
    if reason := mlx_unavailable():
        return reason
    if importlib.util.find_spec("mlx_lm") is None:
        return f"mlx-lm not installed (pip install mlx-lm=={MLX_LM_VERSION})"
    try:
        import mlx_lm.models.gated_delta  # noqa: F401
        import mlx_lm.models.rwkv7  # noqa: F401
    except Exception as exc:
        return f"mlx-lm failed to import: {type(exc).__name__}: {exc}"
    return None


@cache
def metal_unavailable() -> str | None:
    """None when MLX has its Metal back-end and an Apple GPU, else the exact reason."""
    if reason := mlx_unavailable():
        return reason
    import mlx.core as mx

    if not mx.metal.is_available():
        return (f"No Metal back-end: mx.metal.is_available() is False (mlx {mx.__version__} on "
                f"{platform.system()} {platform.machine()}; Metal needs an Apple-silicon Mac)")
    return None


@cache
def fast_gdn_unavailable() -> str | None:
    if reason := mlx_unavailable():
        return reason
    import mlx.core as mx

    if not hasattr(mx.fast, "gated_delta_update"):
        return f"mlx {mx.__version__} has no mx.fast.gated_delta_update (mlx >= 0.32.3)"
    return None


def to_mx(x: Any, dtype: str) -> Any:
    """A float32 NumPy array as an MLX array of ``dtype`` (rounded by MLX: to nearest, ties to even)."""
    import mlx.core as mx

    return mx.array(np.ascontiguousarray(x, dtype=np.float32)).astype(getattr(mx, MX_DTYPES[dtype]))


def to_numpy(x: Any) -> np.ndarray:
    """An MLX array as float64 NumPy (waits for it)."""
    import mlx.core as mx

    return np.array(x.astype(mx.float32)).astype(np.float64)


def linear_decay(lw: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """``(d, lw_eff)``: the linear decay ``exp_f32(lw)`` rounded to ``dtype``, as MLX models build it
    (mlx-lm ``rwkv7.py``: ``mx.exp(...)`` in float32, then ``.astype(receptance.dtype)``; the GDN gate
    of ``compute_g`` stays float32), and the log decay that really applies, for the oracle. Where the
    decay underflowed to 0 the kernel forgets the state entirely: the oracle gets ``UNDERFLOWED``, a log
    decay whose exp is 0 in float64 (fp16 underflows below 3e-8, where the state it no longer carries
    can still outweigh a small update: gdn/stress/B1-T256-H1-N64-h0/fp16/s3, the decay 6.8e-9 against a
    beta of 1e-4, read 6.4e-5 relative, 2.6e3x the fp32 floor, while the kernel had applied 0)."""
    lw = np.asarray(lw, np.float64)
    d32 = np.exp(lw).astype(np.float32)
    d = round_to(d32, dtype)
    with np.errstate(divide="ignore"):
        eff = np.where(d > 0, np.log(d), np.minimum(lw, UNDERFLOWED))
    return d.astype(np.float32), eff


UNDERFLOWED = -1e4  # a log decay applied as 0: exp(-1e4) is 0 in float64


def sync() -> None:
    """Wait for every MLX stream (``mx.synchronize``): the clock of a Metal timing."""
    import mlx.core as mx

    mx.synchronize()


class MlxVariant(KernelVariant):
    """An MLX function on ``device``: ``"cpu"`` (``mx.cpu`` stream) or ``"metal"`` (``mx.gpu``).

    Subclasses set ``needs`` (the probes that must pass) and implement ``convert`` (canonical NumPy
    -> the function's MLX arguments) and ``call`` (-> the function's outputs, a tuple of arrays), and
    ``unpack`` (those outputs -> canonical float64 NumPy).
    """

    source: ClassVar[str] = "mlx-lm"
    backend: ClassVar[str] = "mlx"
    algorithm: ClassVar[str] = "recurrent"
    device: ClassVar[str] = "cpu"
    dtypes: ClassVar[frozenset[str]] = ALL_DTYPES
    needs_lm: ClassVar[bool] = True
    needs_fast_gdn: ClassVar[bool] = False
    lanes: ClassVar[int] = 0  # Metal kernels: the head size must be a multiple of this (a SIMD-group)

    def available(self) -> Availability:
        probes = [mlx_unavailable]
        if self.needs_lm:
            probes.append(mlx_lm_unavailable)
        if self.needs_fast_gdn:
            probes.append(fast_gdn_unavailable)
        if self.device == "metal":
            probes.append(metal_unavailable)
        for probe in probes:
            if reason := probe():
                return Availability.no(reason)
        return Availability.yes()

    def supports(self, case: Any) -> Availability:
        base = super().supports(case)
        if base and self.lanes and case.shape.N % self.lanes:
            return Availability.no(f"the Metal kernel spreads the head size over a {self.lanes}-lane "
                                   f"SIMD-group: N % {self.lanes} == 0 needed, got N={case.shape.N}")
        return base

    def stream(self) -> Any:
        import mlx.core as mx

        return mx.gpu if self.device == "metal" else mx.cpu

    def convert(self, inputs: dict, dtype: str) -> dict:
        raise NotImplementedError

    def call(self, n: dict) -> tuple:
        raise NotImplementedError

    def unpack(self, out: tuple) -> dict:
        raise NotImplementedError

    def prepare(self, inputs: dict, case: Any) -> dict:
        import mlx.core as mx

        with mx.stream(self.stream()):
            native = self.convert(inputs, case.dtype)
            mx.eval([x for x in native.values() if isinstance(x, mx.array)])
        return native

    def run(self, native: dict) -> tuple:
        import mlx.core as mx

        with mx.stream(self.stream()):
            out = tuple(self.call(native))
            mx.async_eval(*out)
        return out

    def to_canonical(self, out: tuple) -> dict:
        return self.unpack(out)


def scaled_q(inputs: dict) -> np.ndarray:
    """``q * scale`` in float32, the q an MLX GDN call is given (then rounded to the case dtype)."""
    return (np.asarray(inputs["q"], np.float64) * float(inputs["scale"])).astype(np.float32)


def gdn_effective(inputs: dict, dtype: str) -> dict:
    """What an MLX GDN call sees: q carries the scale (mlx-lm folds ``Dk**-0.5`` into q in
    ``normalize_qk``; neither function has a scale argument), rounded to ``dtype``; the gate is linear,
    ``exp_f32(g)`` in float32; the state float32."""
    out = round_inputs("gdn", inputs, dtype)
    out["q"] = round_to(scaled_q(inputs), dtype)
    out["scale"] = 1.0
    out["g"] = linear_decay(inputs["g"], "fp32")[1]
    return out


def gdn_args(inputs: dict, dtype: str) -> dict:
    """The MLX arguments of a GDN call (``gdn_effective`` says what they hold): q, k ``[B,T,H,K]``,
    v ``[B,T,H,V]`` and beta ``[B,T,H]`` in ``dtype``; g ``[B,T,H]`` linear float32; state
    ``[B,H,V,K]`` float32 (the canonical orientation; zeros when the case has none)."""
    import mlx.core as mx

    B, _, H, K = inputs["k"].shape
    V = inputs["v"].shape[-1]
    s = inputs.get("state")
    return {"q": to_mx(scaled_q(inputs), dtype), "k": to_mx(inputs["k"], dtype),
            "v": to_mx(inputs["v"], dtype),
            "g": mx.array(linear_decay(inputs["g"], "fp32")[0]), "beta": to_mx(inputs["beta"], dtype),
            "state": mx.zeros((B, H, V, K), dtype=mx.float32) if s is None else to_mx(s, "fp32")}
