"""Patch one stale binding in ggml-python 0.0.45 so that its CUDA build imports.

ggml-python binds every function its vendored ``ggml-cuda.h`` declares, looking each up in the
shared library at import time. ggml 0.15.3's header still declares
``ggml_backend_cuda_allreduce_tensor``, but ``ggml-cuda.cu`` no longer defines it (the all-reduce
moved behind ``ggml_backend_reg_get_proc_address("ggml_backend_comm_allreduce_tensor")``), so
``import ggml`` raises ``AttributeError: ggml_backend_cuda_allreduce_tensor`` in every CUDA build.
CPU builds are unaffected (the CUDA bindings are disabled there).

The patch makes that one binding conditional on the symbol being present, exactly as the CUDA
bindings already are on ``GGML_USE_CUDA``. Nothing else changes; ggml's kernels are untouched.

    python tools/patch_ggml_python.py SRC_DIR     # SRC_DIR: the unpacked sdist (holds ggml/ggml.py)

Exits 1 with a message if the file does not contain the expected binding exactly once.
"""

from __future__ import annotations

import sys
from pathlib import Path

SYMBOL = "ggml_backend_cuda_allreduce_tensor"
OLD = f'''    "{SYMBOL}",
    [
        ctypes.POINTER(ggml_backend_t_ctypes),
        ctypes.POINTER(ctypes.POINTER(ggml_tensor)),
        ctypes.c_size_t,
    ],
    ctypes.c_bool,
    enabled=GGML_USE_CUDA,
)'''
NEW = OLD.replace("enabled=GGML_USE_CUDA,", f'enabled=GGML_USE_CUDA and hasattr(lib, "{SYMBOL}"),')


def patch_text(text: str) -> str:
    """The patched source; raises ValueError unless the binding occurs exactly once, unpatched."""
    if text.count(NEW) == 1:
        return text  # already patched
    n = text.count(OLD)
    if n != 1:
        raise ValueError(f"expected the {SYMBOL} binding exactly once in ggml.py, found it {n} times "
                         "(a ggml-python version other than 0.0.45?)")
    return text.replace(OLD, NEW)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[0]) / "ggml" / "ggml.py"
    if not path.is_file():
        print(f"patch_ggml_python: {path} not found", file=sys.stderr)
        return 1
    try:
        path.write_text(patch_text(path.read_text()))
    except ValueError as exc:
        print(f"patch_ggml_python: {exc}", file=sys.stderr)
        return 1
    print(f"patch_ggml_python: {SYMBOL} binding made conditional in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
