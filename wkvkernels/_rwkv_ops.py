"""Shared loader for the ``rwkv-ops`` adapters: environment, import, and which implementation runs.

``import rwkv_ops`` picks every implementation once, at import time, from the environment:

* ``KERAS_BACKEND`` (or, when that is unset, ``KERNEL_BACKEND``) selects the Keras backend. Despite
  the package README ("KERNEL_BACKEND has priority"), ``rwkv_ops/__init__.py`` 0.11.3 reads
  ``KERAS_BACKEND`` first and only falls back to ``KERNEL_BACKEND``.
* ``KERNEL_TYPE`` (``cuda`` by default, ``triton``, ``native``) selects the kernel family. Every
  factory (``get_generalized_delta_rule``, ``get_rwkv6_kernel``, ``get_gated_delta_net_*``)
  **silently** returns the native Keras implementation when the backend or hardware cannot run the
  requested one, and with ``KERNEL_TYPE=native`` on a CUDA/XPU machine the torch backend still
  picks Triton unless ``RWKV_OPS_KERAS_NATIVE=1`` (spec §6, §8 item 9).

So :func:`load` sets ``KERAS_BACKEND=torch``, ``KERNEL_TYPE=native`` and
``RWKV_OPS_KERAS_NATIVE=1`` only where the user has not set them (only on the first import), and
:func:`resolve` then checks the module of the callable that ``rwkv_ops`` actually exposes, so a
variant named ``native`` never times a CUDA or Triton kernel by accident. Nothing is imported
until :func:`load` is called.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from . import _caches
from ._caches import env_override
from .base import Availability, KernelVariant
from .releases import Releases

# rwkv_ops 0.8.x exports generalized_delta_rule only; rwkv6_op and gated_delta_net_* from 0.9.0 on
SINCE_0_9 = Releases(since="0.9.0", why="rwkv6_op and gated_delta_net_* are first exported in 0.9.0")

PIP = 'pip install "rwkv-ops==0.11.3" "keras>=3.6" torch'
SOURCE = "rwkv-ops"
BACKEND = "keras-torch"

# the environment the native keras-torch variants need; each is set only where the user has not
NATIVE_ENV: dict[str, str] = {"KERAS_BACKEND": "torch", "KERNEL_TYPE": "native", "RWKV_OPS_KERAS_NATIVE": "1"}

# top-level rwkv_ops attribute -> module of its native Keras implementation
NATIVE_MODULES: dict[str, str] = {
    "generalized_delta_rule": "rwkv_ops.rwkv7_kernel.native_keras_op",
    "rwkv6_op": "rwkv_ops.rwkv6_kernel.native_keras_op",
    "gated_delta_net_chunk": "rwkv_ops.gdn_chunk.native_keras_op",
    "gated_delta_net_recurrent": "rwkv_ops.gdn_recurrent.native_keras_op",
}


def env_plan(environ: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """What to set before ``import rwkv_ops`` so that it loads native keras-torch, or why it can't.

    Returns ``(updates, conflict)``: ``updates`` holds only variables absent from ``environ``;
    ``conflict`` is the reason when a value the user set explicitly selects another Keras backend.
    A user's ``KERNEL_TYPE=cuda|triton`` or ``RWKV_OPS_KERAS_NATIVE=0`` is left alone: on a machine
    without a GPU it still resolves to native, and :func:`resolve` reports it where it does not.
    """
    keras_backend = environ.get("KERAS_BACKEND")
    kernel_backend = environ.get("KERNEL_BACKEND")
    if keras_backend is not None and keras_backend.lower() != "torch":
        return {}, (f"KERAS_BACKEND={keras_backend} is set in the environment; the keras-torch variants "
                    "need KERAS_BACKEND=torch (rwkv_ops reads it at import time)")
    if keras_backend is None and kernel_backend is not None and kernel_backend.lower() != "torch":
        return {}, (f"KERNEL_BACKEND={kernel_backend} is set in the environment (and KERAS_BACKEND is not); "
                    "the keras-torch variants need torch (rwkv_ops reads it at import time)")
    return {k: v for k, v in NATIVE_ENV.items() if k not in environ}, None


def _env_summary() -> str:
    keys = ("KERAS_BACKEND", "KERNEL_BACKEND", "KERNEL_TYPE", "RWKV_OPS_KERAS_NATIVE")
    return ", ".join(f"{k}={os.environ.get(k, '<unset>')}" for k in keys)


@functools.cache
def load() -> tuple[Any, Availability]:
    """``(rwkv_ops module or None, Availability)``: import ``rwkv_ops`` once, :func:`env_plan` applied."""
    for mod, what in (("torch", "torch"), ("keras", "keras 3"), ("rwkv_ops", "rwkv-ops")):
        if importlib.util.find_spec(mod) is None:
            return None, Availability.no(f"{what} not installed ({PIP})")
    if "rwkv_ops" not in sys.modules:  # its import-time choices are already made otherwise
        updates, conflict = env_plan(os.environ)
        if conflict:
            return None, Availability.no(conflict)
        os.environ.update(updates)
    try:
        with _caches.kept_caches("rwkv_ops"):
            import keras
            import rwkv_ops
    except Exception as exc:  # any import failure (a broken keras or torch) becomes the reason
        return None, Availability.no(f"import rwkv_ops failed: {type(exc).__name__}: {exc}")
    if keras.config.backend() != "torch":
        return None, Availability.no(
            f"keras was loaded with the {keras.config.backend()!r} backend before rwkv_ops "
            "(keras fixes its backend at first import); set KERAS_BACKEND=torch")
    return rwkv_ops, Availability.yes()


def implementation(fn: Callable) -> str:
    """Dotted ``module.qualname`` of a callable, looking through ``functools.partial``."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"


def check_native(entry: str, fn: Callable) -> Availability:
    """Yes when ``fn`` (what ``rwkv_ops.<entry>`` resolved to) is the native Keras implementation."""
    impl = implementation(fn)
    if impl.rsplit(".", 1)[0] == NATIVE_MODULES[entry]:
        return Availability.yes()
    return Availability.no(
        f"rwkv_ops.{entry} resolved to {impl}, not the native Keras op in {NATIVE_MODULES[entry]} "
        f"(rwkv_ops chose it at import from {_env_summary()}); unset KERNEL_TYPE or set "
        "KERNEL_TYPE=native RWKV_OPS_KERAS_NATIVE=1 before rwkv_ops is first imported")


@functools.cache
def resolve(entry: str) -> tuple[Callable | None, Availability]:
    """``(rwkv_ops.<entry>, Availability)``: the top-level callable users import, confirmed native."""
    mod, ok = load()
    if not ok:
        return None, ok
    fn = getattr(mod, entry, None)
    if fn is None:
        version = getattr(mod, "__version__", "?")
        return None, Availability.no(f"rwkv_ops {version} has no attribute {entry!r}")
    ok = check_native(entry, fn)
    return (fn if ok else None), ok


def cpu_scope():
    """Keras' device scope for CPU: the torch backend moves inputs to its default device (CUDA when
    present), so a CPU variant pins it the way users do (``with keras.device("cpu")``)."""
    import keras

    return keras.device("cpu")


def unit_rows(x, eps: float = 1e-6):
    """``x / sqrt(sum(x^2) + eps)`` over the last axis, in float64: the L2 normalization that
    rwkv-ops' GDN applies to q and k inside every implementation (``x * rsqrt(sum x^2 + 1e-6)``)."""
    import numpy as np

    x = np.asarray(x, np.float64)
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)


def raw_decay(lw):
    """``w_raw = log(-lw)`` as float32: rwkv-ops' RWKV-6/7 decay argument (the op forms ``exp(-exp(w))``)."""
    import numpy as np

    with np.errstate(divide="ignore"):
        return np.log(-np.asarray(lw, np.float64)).astype(np.float32)


def effective_lw(lw, dtype: str):
    """The log decay the kernel really applies when ``w_raw`` is passed in ``dtype``:
    ``-exp(round(log(-lw), dtype))`` in float64 (the native op upcasts ``w_raw`` to fp32 exactly)."""
    import numpy as np

    from wkvkernels.ops import round_to

    return -np.exp(round_to(raw_decay(lw), dtype))


# --- GPU implementations (device "cuda") ------------------------------------------------------------
#
# The GPU variants never use the top-level ``rwkv_ops.<entry>`` callables (chosen once, at import,
# native for the CPU variants above): they call the factories (``get_generalized_delta_rule``,
# ``get_rwkv6_kernel``, ``get_gated_delta_net_*``) with an explicit ``KERNEL_TYPE`` per variant, so
# native and GPU variants coexist in one process. The factories fall back to native *silently*
# (spec §8 item 9), and the fallback conditions differ per factory (rwkv-ops 0.11.3, read from
# ``rwkv_ops/*/__init__.py`` and ``rwkv_ops/utils.py``):
#
# * ``get_generalized_delta_rule(KERNEL_TYPE='cuda'|'triton')``: the CUDA / Triton kernel whenever
#   keras runs on torch and ``torch.cuda.is_available()``; environment variables play no part.
#   For ``'triton'`` the *second* callable of the pair (the inference op) is the native op.
# * ``get_rwkv6_kernel(KERNEL_TYPE='cuda')``: the CUDA kernel under the same conditions.
# * ``get_gated_delta_net_chunk`` / ``get_gated_delta_net_recurrent[_inference]``: Triton is chosen
#   through ``utils._use_triton``, which is False for any ``KERNEL_TYPE`` other than ``'native'``
#   and whenever ``RWKV_OPS_KERAS_NATIVE`` is set to a true value. So ``KERNEL_TYPE='triton'``
#   (which their docstrings advertise) silently yields the native op on torch, and the Triton
#   kernels are reached only with ``KERNEL_TYPE='native'`` *and* ``RWKV_OPS_KERAS_NATIVE`` unset,
#   which :func:`load` sets for the CPU variants. :data:`TRITON_ENV` overrides it around the call.
#
# :func:`gpu_callable` therefore checks the module of what the factory returned, and the wrappers
# it returns also fall back to native (or raise) when handed CPU tensors, so the adapters move
# every tensor to CUDA in ``prepare``.

# the environment under which the GDN factories return their Triton kernels on torch (see above)
TRITON_ENV: tuple[tuple[str, str], ...] = (("RWKV_OPS_KERAS_NATIVE", "0"),)

NO_CUDA = "no CUDA device (torch.cuda.is_available() is False)"


def truncate(text: str, limit: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def cuda_reason(needs: str) -> str | None:
    """None when a GPU variant can run here, else the reason. ``needs``: ``"triton"`` (Triton JIT)
    or ``"nvcc"`` (rwkv-ops builds its CUDA ops with ``torch.utils.cpp_extension.load``)."""
    for mod, what in (("torch", "torch"), ("keras", "keras 3"), ("rwkv_ops", "rwkv-ops")):
        if importlib.util.find_spec(mod) is None:
            return f"{what} not installed ({PIP})"
    import torch

    if not torch.cuda.is_available():
        return NO_CUDA
    if needs == "triton":
        if importlib.util.find_spec("triton") is None:
            return "triton not installed (pip install triton)"
        if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
            return "TRITON_INTERPRET is set: rwkv-ops' Triton kernels would run in the interpreter"
    elif needs == "nvcc":
        from torch.utils import cpp_extension

        if cpp_extension.CUDA_HOME is None:
            return ("CUDA toolkit not found (torch.utils.cpp_extension.CUDA_HOME is None; set CUDA_HOME): "
                    "rwkv-ops compiles its CUDA ops at first use")
        if not cpp_extension.is_ninja_available():
            return "ninja not installed (pip install ninja): torch.utils.cpp_extension.load needs it"
    else:
        raise ValueError(f"needs must be 'triton' or 'nvcc', got {needs!r}")
    return None


def check_module(fn: Callable, expected: str, call: str) -> Availability:
    """Yes when ``fn`` (what ``call`` returned) is defined in module ``expected`` (not a fallback)."""
    inner = fn
    while isinstance(inner, functools.partial):
        inner = inner.func
    if getattr(inner, "__module__", None) == expected:
        return Availability.yes()
    impl = implementation(fn)
    return Availability.no(
        f"{call} returned {impl}, not the kernel in {expected} (rwkv-ops falls back to native silently; "
        "spec §8 item 9)")


def _call_text(factory: str, kwargs: tuple) -> str:
    return f"rwkv_ops.{factory}({', '.join(f'{k}={v!r}' for k, v in kwargs)})"


@functools.cache
def _factory_result(factory: str, kwargs: tuple[tuple[str, Any], ...],
                    env: tuple[tuple[str, str], ...]) -> tuple[Any, Availability]:
    """``rwkv_ops.<factory>(**kwargs)`` under ``env``, once per process (the CUDA factories compile)."""
    mod, ok = load()
    if not ok:
        return None, ok
    make = getattr(mod, factory, None)
    if make is None:
        return None, Availability.no(f"rwkv_ops {getattr(mod, '__version__', '?')} has no {factory!r}")
    try:
        with env_override(dict(env)):
            return make(**dict(kwargs)), Availability.yes()
    except Exception as exc:  # a failed nvcc build, an assertion on the head size, ...
        call = _call_text(factory, kwargs)
        return None, Availability.no(f"{call} raised {type(exc).__name__}: {truncate(exc)}")


def gpu_callable(factory: str, kwargs: tuple[tuple[str, Any], ...], expected: str, pick: int | None = None,
                 env: tuple[tuple[str, str], ...] = ()) -> tuple[Callable | None, Availability]:
    """``(callable, Availability)`` from ``rwkv_ops.<factory>(**kwargs)`` under ``env``, confirmed to
    live in module ``expected``; ``pick`` indexes a returned pair. The factory call is cached: the
    CUDA factories compile (``torch.utils.cpp_extension.load``: about a minute the first time, then
    from the on-disk extension cache), and a failed build becomes the reason."""
    out, ok = _factory_result(factory, kwargs, env)
    if not ok:
        return None, ok
    fn = out if pick is None else out[pick]
    ok = check_module(fn, expected, _call_text(factory, kwargs) + ("" if pick is None else f"[{pick}]"))
    return (fn if ok else None), ok


class NativeVariant(KernelVariant):
    """Base of the native keras-torch adapters: ``entry`` names the top-level ``rwkv_ops`` callable,
    confirmed native by :func:`resolve`; ``raw_decay`` marks RWKV-6/7, whose ``w = log(-lw)`` is
    passed in the case dtype (so the oracle sees ``-exp(round(log(-lw)))``)."""

    entry: str
    raw_decay: bool = False
    source = SOURCE
    backend = BACKEND
    device = "cpu"
    dtypes = frozenset({"fp32", "bf16", "fp16"})
    supports_state = True

    def available(self) -> Availability:
        return resolve(self.entry)[1]

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        out = super().effective_inputs(inputs, dtype)
        if self.raw_decay:
            out["lw"] = effective_lw(inputs["lw"], dtype)
        return out

    def function(self) -> Callable:
        """The confirmed-native callable (raises with the availability reason otherwise)."""
        fn, ok = resolve(self.entry)
        if not ok:
            raise RuntimeError(ok.reason)
        return fn
