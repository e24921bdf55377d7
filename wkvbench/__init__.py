"""wkvbench: verification and benchmarking for RWKV-family linear-attention kernels.

Three top-level packages, layered (docs/layout.md; import-linter checks it, pyproject's
``[tool.importlinter]``):

* ``wkvoracle``: the float64 NumPy oracle; imports NumPy only;
* ``wkvkernels``: the adapter contract, the canonical types (operator specs, cases, rounding) and
  the built-in adapters; imports nothing of ``wkvbench``;
* ``wkvbench``: the suite (verification, properties, benchmarks, gate, report), built on both.
"""

from __future__ import annotations

__version__ = "0.1.0"
