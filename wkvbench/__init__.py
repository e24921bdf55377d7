"""wkvbench: verification and benchmarking for RWKV-family linear-attention kernels.

The importable package is ``wkvbench``. Its sub-packages ``wkvbench.kernels`` and
``wkvbench.references`` live in the repository's top-level ``kernels/`` and ``references/``
folders. Installed, setuptools maps them under ``wkvbench/``; run from a source checkout, the
path extension below finds them in the repository root. They are never importable as the bare
top-level names ``kernels`` / ``references``, so the PyPI distribution ``kernels`` (Hugging Face's,
which transformers probes for) is neither shadowed by nor shadows this project.
"""

from __future__ import annotations

import os as _os

__version__ = "0.1.0"

_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(_os.path.dirname(__file__), "kernels")) and _os.path.isfile(
    _os.path.join(_root, "kernels", "base.py")
):
    __path__.append(_root)  # type: ignore[name-defined]  # source checkout: kernels/, references/ at the root
