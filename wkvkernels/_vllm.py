"""vLLM's fork of FLA (``vllm/third_party/flash_linear_attention/ops``, vllm 0.33.0): its environment and
the base of its adapters (``wkvkernels/<op>/vllm_triton.py``).

vLLM pins its own torch (``Requires-Dist: torch==2.14.0`` in 0.33.0), so it is never in the main test
environment: its releases run in their own virtualenv (``nox -s "history(vllm==0.33.0)"``, docs/vllm.md),
CPU torch + triton + vllm without its dependencies + the few modules its import needs.

What ``import vllm.third_party.flash_linear_attention.ops`` pulls in (read in the 0.33.0 wheel, and run):

* ``vllm/__init__`` -> ``vllm.env_override`` (``packaging``), ``vllm.envs``, ``vllm.logger``;
* ``vllm.triton_utils`` -> ``vllm.triton_utils.importing`` -> ``vllm.platforms.current_platform``, which
  resolves the platform: with an NVIDIA GPU (its bundled ``vllm.third_party.pynvml`` sees one)
  ``vllm.platforms.cuda``, whose first lines ``import vllm._C_stable_libtorch`` (the compiled extension:
  libtorch's stable C ABI, libcudart.so.13); on a CPU-only machine ``UnspecifiedPlatform``, no extension;
* ``vllm.utils.*`` (``regex``, ``psutil``, ``urllib3``), ``vllm.model_executor.custom_op`` (``zmq``),
  ``layernorm_guard`` (``einops``).

**Triton on a machine without a GPU.** ``vllm.triton_utils.importing`` counts triton's active drivers and,
unless exactly one is active, sets ``HAS_TRITON = False`` and hands the fork a *placeholder* triton whose
``jit``/``autotune``/``heuristics`` return the Python function undecorated: the kernels would then not be
Triton kernels at all. The same module lets 0 drivers pass when ``CUDA_VISIBLE_DEVICES`` is set and empty
(its "distributed environment" case). So, only when the kernels are to be interpreted and no driver is
active, the fork is imported with ``CUDA_VISIBLE_DEVICES=""`` (restored afterwards). Its autotuners and its
``op.py`` aliases of ``tl.exp``/``tl.log``/... get the same interpreter treatment as FLA's
(``_fla_env``: first config untimed, interpreted stand-ins).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from typing import Any, ClassVar

from wkvkernels import _caches, _fla_env
from wkvkernels._fla import FlaTriton
from wkvkernels._torch import torch_available
from wkvkernels.base import Availability, KernelVariant
from wkvkernels.releases import Releases

FORK = "vllm.third_party.flash_linear_attention.ops"
# the fork's content as read in vllm 0.33.0 (the one release read; earlier ones not read)
RELEASES = Releases(since="0.33.0", why="vllm 0.33.0 is the one release whose FLA fork was read")
HOW = "vllm runs in its own environment: nox -s \"history(vllm==0.33.0)\" (docs/vllm.md)"


def _torch_pin() -> str | None:
    """The torch requirement vllm's metadata declares (``torch==2.14.0`` in 0.33.0), or None."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        reqs = requires("vllm") or []
    except PackageNotFoundError:
        return None
    return next((r.split(";")[0].strip() for r in reqs if r.replace(" ", "").startswith("torch==")), None)


def _no_driver() -> bool:
    from triton.runtime import driver

    try:
        driver.active  # noqa: B018
    except RuntimeError:
        return True
    return False


def import_fork():
    """``import vllm.third_party.flash_linear_attention.ops`` (see the module docstring for the
    ``CUDA_VISIBLE_DEVICES`` of a driverless interpreter run)."""
    if _fla_env._interpreter_on() and "vllm.triton_utils.importing" not in importlib.sys.modules and _no_driver():
        with _caches.env_override({"CUDA_VISIBLE_DEVICES": ""}):
            _caches.import_module("vllm.triton_utils")
    return _caches.import_module(FORK)  # vllm sets TRITON_CACHE_AUTOTUNING at import


@functools.cache
def vllm_reason() -> str | None:
    """None when the fork imports with a real triton, else why not."""
    if (reason := torch_available()) is not None:
        return reason
    if importlib.util.find_spec("vllm") is None:
        return f"vllm not installed: {HOW}"
    try:
        import_fork()
    except Exception as exc:  # noqa: BLE001 - any import failure is a reason, never a crash
        import torch

        pin = _torch_pin()
        mismatch = (f"; vllm pins {pin}, this environment has torch {torch.__version__}"
                    if pin and pin.split("==")[1] != torch.__version__.split("+")[0] else "")
        return f"import {FORK} failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}{mismatch}"
    from vllm.triton_utils import HAS_TRITON

    if not HAS_TRITON:
        return ("vllm.triton_utils found no single active Triton driver (HAS_TRITON False): the fork's kernels "
                "are undecorated Python functions")
    return None


def fn(module: str, name: str):
    """``<FORK>.<module>.<name>``, imported on first use."""
    import_fork()
    return getattr(_caches.import_module(f"{FORK}.{module}"), name)


def kernels_interpreted() -> bool:
    import_fork()
    return _fla_env.first_jit_interpreted(FORK)


def triton_reason(device: str) -> str | None:
    """None when the fork's Triton kernels can run on ``device`` ("cuda", or "cpu" = interpreter)."""
    return _fla_env.fork_triton_reason(device, vllm_reason(), kernels_interpreted, FORK, "the fork's modules")


class VllmTriton(FlaTriton):
    """A Triton entry point of vLLM's FLA fork. FLA's argument mapping (``tensors``, ``convention_kwargs``)
    and output handling are reused; availability, the package and the function are the fork's."""

    source: ClassVar[str] = "vllm"
    releases: ClassVar[Releases | None] = RELEASES
    supports_backward: ClassVar[bool] = False  # the fork is forward only (its Functions have no backward)
    pooled: ClassVar[bool] = False  # pooled cases only (ssm_state_indices): no smoke run on a plain case

    def available(self) -> Availability:
        reason = triton_reason(self.device) or self._module_reason()
        if reason is None and self.device == "cpu" and not self.pooled:
            reason = self._smoke()
        return Availability.no(reason) if reason else Availability.yes()

    def _module_reason(self) -> str | None:
        """Why the fork's module of this entry point does not import, or None. ``ops/kda.py`` reaches
        ``vllm.model_executor.custom_op`` and through it vLLM's config, ``cbor2`` and transformers' tokenizers:
        a module vLLM's environment lacks is a reason (its dependency), not an ERROR of the kernel (H100,
        2026-11-27: "No module named 'cbor2'" on every case of kda.vllm.chunk before this check)."""
        module = f"{FORK}.{self.entry[0]}"
        try:
            _caches.import_module(module)
        except Exception as exc:  # noqa: BLE001 - any import failure is a reason, never a crash
            return f"import {module} failed: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        return None

    def supports(self, case: Any) -> Availability:
        if (limit := self.kernel_limits(case)) is not None:
            return limit
        if self.pooled and not case.shape.P:
            return Availability.no("vLLM calls it with a state pool (ssm_state_indices) only: without one it reads "
                                   "sequence n's initial state at h0[bos] and writes a state per token")
        return KernelVariant.supports(self, case)

    def prepare(self, inputs: dict, case: Any) -> Any:
        kw = self.tensors(inputs, case.dtype)
        kw.update(scale=float(inputs["scale"]), **self.fixed)
        kw.update(self.convention_kwargs(inputs, case))
        return fn(*self.entry), kw


class VllmPooled(VllmTriton):
    """An entry point vLLM calls with a state pool: ``initial_state`` is the pool ``[slots, HV, V, K]``
    (value-first, as ours), ``ssm_state_indices`` ``[N, T]`` names each token's slot and
    ``inplace_final_state=True`` writes the state back there. Pooled cases only.

    The fork skips a row whose index is ``<= 0`` (its source: "Skip if state index is invalid
    (NULL_BLOCK_ID=0)"; ``vllm/v1/attention/backends/utils.py``: ``NULL_BLOCK_ID = 0``, ``PAD_SLOT_ID =
    -1``): slot 0 of a vLLM pool is the reserved null block, never a sequence's. So our ``P`` slots go in
    as slots 1..P of a buffer of ``P + 2``, our indices shifted by one, the padding rows' -1 passed as it
    is; buffer slot 0 (vLLM's null block, the slot before ours) and slot ``P + 1`` (the one after) hold
    ``POOL_GUARD`` and come back as ``state_pool_guard``. The indices are ``[N, T]`` (every token of a
    sequence names its slot): the kernel reads token ``t``'s at ``indices[n * stride + t]``."""

    pooled = True

    def pool_kwargs(self, inputs: dict, case: Any) -> tuple[dict, Any]:
        import numpy as np
        import torch

        from wkvkernels._torch import guarded_pool

        # [P, HV, V, K]: the fork's layout too
        buf, _ = guarded_pool(np.asarray(inputs["state_pool"], np.float32), "fp32", self.device)
        idx = np.asarray(inputs["state_indices"], np.int64)
        idx = np.where(idx >= 0, idx + 1, idx)  # slot 0 is vLLM's null block; -1 (padding) as given
        steps = int(np.max(np.diff(inputs["cu_seqlens"]))) if "cu_seqlens" in inputs else case.shape.T
        kw = dict(initial_state=buf, inplace_final_state=True,
                  ssm_state_indices=torch.as_tensor(np.repeat(idx[:, None], steps, axis=1), dtype=torch.int32,
                                                    device=self.device))
        return kw, buf

    def run(self, native: Any) -> Any:
        f, kw, buf = native
        o, _ = f(**kw)
        return o, buf

    def torch_outputs(self, out: Any) -> dict:
        from wkvkernels._torch import pool_outputs

        return pool_outputs(*out)

    def returned_dtypes(self, out: Any, case: Any) -> dict:
        from wkvkernels.base import dtype_name

        return {"y": dtype_name(out[0])}  # the state lives in the caller's pool (fp32), not returned


def register_with_interp(cls):
    """As FLA's (``wkvkernels._fla.register_with_interp``): the cuda variant and its ``.interp`` twin."""
    from wkvkernels._fla import register_with_interp as reg

    return reg(cls)
