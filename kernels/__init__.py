"""Adapters: one folder per operator, one module per implementation, registered as data.

Importing this package registers every built-in variant (third-party packages are imported
lazily inside each adapter, so a missing package only makes its variants unavailable).
"""

from __future__ import annotations

if __name__ == "kernels":  # imported as a bare top-level name: hand over to the real `kernels`
    # This folder is `wkvbench.kernels`. It is found as top-level `kernels` only because the repository
    # root is on sys.path (cwd, pytest's `pythonpath`), where it would shadow the PyPI distribution
    # `kernels` (Hugging Face's, which transformers probes for). So hand over to the real one when it is
    # installed, else stand in as an empty namespace package: what Python gives for a plain folder, and
    # what transformers reads as "not installed" (an ImportError here would propagate out of its probe).
    # The rest of this file then runs as `wkvbench.kernels` (imported properly) and is discarded.
    # suites/variants/test_coexist.py proves both cases.
    import importlib.machinery as _machinery
    import importlib.util as _util
    import os as _os
    import sys as _sys

    _root = _os.path.realpath(_os.path.join(_os.path.dirname(__file__), _os.pardir))
    _path = [p for p in _sys.path if _os.path.realpath(p or _os.curdir) != _root]
    _spec = _machinery.PathFinder.find_spec("kernels", _path)
    if _spec is not None and _spec.loader is not None:
        _sys.modules["kernels"] = _real = _util.module_from_spec(_spec)
        _spec.loader.exec_module(_real)
    else:
        _empty = _machinery.ModuleSpec("kernels", None, is_package=True)
        _sys.modules["kernels"] = _util.module_from_spec(_empty)
    __package__, __spec__ = "wkvbench.kernels", None

from . import gdn, gdn_wy, gla, wkv4, wkv6, wkv7  # noqa: F401  (registration happens at import)
from .base import Availability, KernelVariant, Unsupported, availability, get, register, unregister, variants

__all__ = ["Availability", "KernelVariant", "Unsupported", "availability", "get", "register", "unregister", "variants"]
