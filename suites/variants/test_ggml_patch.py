"""tools/patch_ggml_python.py: the one-binding fix that lets ggml-python 0.0.45's CUDA build import.

Checked against the installed ggml-python's own ``ggml.py`` (the same file the sdist holds)."""

from __future__ import annotations

import difflib
import importlib.util
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import patch_ggml_python as patch  # noqa: E402

SPEC = importlib.util.find_spec("ggml")
needs_ggml = pytest.mark.skipif(SPEC is None, reason="ggml-python not installed")


def _source() -> str:
    return (Path(SPEC.origin).parent / "ggml.py").read_text()


@needs_ggml
def test_patch_changes_exactly_the_stale_binding():
    before = _source()
    after = patch.patch_text(before)
    changed = [ln for ln in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
               if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert changed == ["-    enabled=GGML_USE_CUDA,",
                       '+    enabled=GGML_USE_CUDA and hasattr(lib, "ggml_backend_cuda_allreduce_tensor"),']
    compile(after, "ggml.py", "exec")  # still valid Python
    assert patch.patch_text(after) == after  # idempotent


@needs_ggml
def test_the_cpu_build_lacks_the_symbol_too():
    """The symbol is missing from the library itself (declared in ggml-cuda.h, never defined)."""
    import ggml

    assert not hasattr(ggml.lib, patch.SYMBOL)


def test_patch_refuses_unknown_sources(tmp_path):
    with pytest.raises(ValueError, match="exactly once"):
        patch.patch_text("import ctypes\n")
    assert patch.main([str(tmp_path)]) == 1  # no ggml/ggml.py there
