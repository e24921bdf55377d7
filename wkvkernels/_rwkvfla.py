"""Shared pieces of the rwkv-fla adapters (PyPI ``rwkv-fla``, module ``rwkvfla``).

rwkv-fla is TorchRWKV's fork of FLA: ``rwkvfla`` is FLA's tree with every ``fla`` renamed (its 2025-08
snapshot, ``__version__ = '0.7'``), and the wheel *also* ships that snapshot as a top-level ``fla``,
which overwrites fla-core's files where both are installed. So it runs in its own environment
(``nox -s "history(rwkv-fla==0.7.202508221413)"``, docs/history.md), where ``import fla`` is rwkv-fla's:
FLA's own variants refuse to run there (``_fla_env.foreign_fla``), and rwkv-fla's are named
``*.rwkvfla.*`` with ``source = "rwkv-fla"``, so nothing it computes is attributed to FLA.

The kernels are called exactly as FLA's adapters call fla-core's (``wkvkernels/_fla.py``: ``[B, T, H, N]``
activations, the state ``[N, H, K, V]`` transposed to our ``[B, H, V, K]``, fp32 state), from
``rwkvfla.ops``; the environment (the Triton interpreter for the ``.interp`` twins, autotuning without a
GPU, the ``exp = tl.exp`` aliases of ``rwkvfla/ops/utils/op.py``) is FLA's machinery with ``root="rwkvfla"``
(``wkvkernels/_fla_env.py``). ``rwkvfla/utils.py`` is the 2025-08 one: device from triton's active driver
(``cpu`` without one), ``custom_device_ctx = torch.cpu.device`` there (supplied by ``_compat_torch`` where
torch lacks it), no backend dispatch (no ``fla.backends``).
"""

from __future__ import annotations

from typing import ClassVar

from wkvkernels._fla import FlaTriton
from wkvkernels.releases import Releases, dist_versions

RELEASE = "0.7.202508221413"  # the one release read; its versions are dated (0.7.YYYYMMDDhhmm)


class RwkvFlaTriton(FlaTriton):
    """An rwkv-fla Triton entry point: ``rwkvfla.<entry>``; like ``FlaTriton`` otherwise."""

    source: ClassVar[str] = "rwkv-fla"
    root: ClassVar[str] = "rwkvfla"
    releases = Releases(since=RELEASE, why=f"the release whose kernels were read ({RELEASE}, 2025-08-22)")

    def versions(self) -> dict[str, str]:
        return dist_versions("rwkv-fla", "triton", "torch")
