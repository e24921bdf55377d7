"""Adapters: one folder per operator, one module per implementation, registered as data.

Importing this package registers every built-in variant (third-party packages are imported
lazily inside each adapter, so a missing package only makes its variants unavailable).
"""

from __future__ import annotations

from . import gdn, gdn_wy, gla, kda, wkv4, wkv6, wkv7  # noqa: F401  (registration happens at import)
from .base import Availability, KernelVariant, Unsupported, availability, get, register, unregister, variants

__all__ = ["Availability", "KernelVariant", "Unsupported", "availability", "get", "register", "unregister",
           "variants"]
