"""The in-tree CUDA sources compile with nvcc (no GPU needed), so a syntax error never lands.

Runs wherever nvcc is found (the CPU CI machine has nvcc 13.0) and skips with the reason where it
is not. It builds ``wkvkernels/wkv4/cuda/wkv4.cu`` with exactly the flags of the runtime build
(``wkvbench_cuda.nvcc_flags()``) through the same cache code (``wkvkernels/_nvcc.py``), into a
temporary cache folder; about 5-10 s on two cores. Loading the library and calling its launchers
with invalid sizes needs no device either (they return before any CUDA call).
"""

from __future__ import annotations

import pytest

from wkvkernels import _nvcc
from wkvkernels.wkv4 import wkvbench_cuda as w4

NVCC = _nvcc.find_nvcc()
pytestmark = pytest.mark.skipif(NVCC is None, reason=_nvcc.NVCC_MISSING)

CUDA_ERROR_INVALID_VALUE = 1


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("WKVBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("nvcc-cache")))
    mp.delenv("WKVBENCH_CUDA_ARCHS", raising=False)
    try:
        yield w4.build()
    finally:
        mp.undo()


def test_wkv4_builds_into_the_cache_layout(built):
    assert built.name == "libwkv4.so"
    assert built.parent.parent.name == "wkv4_cuda"
    assert (built.parent / "build.json").is_file()


def test_second_build_is_a_cache_hit(built, monkeypatch):
    monkeypatch.setenv("WKVBENCH_CACHE_DIR", str(built.parent.parent.parent))

    def no_compile(*args, **kwargs):
        raise AssertionError("recompiled although the cache holds the library")

    monkeypatch.setattr(_nvcc, "compile_shared", no_compile)
    assert w4.build() == built


def test_library_loads_and_checks_arguments_without_a_device(built):
    lib = w4.load(built)  # declares every launcher's signature and checks the ABI version
    assert lib.wkvbench_wkv4_abi_version() == w4.ABI_VERSION
    for suffix in ("f32", "bf16"):
        fwd = getattr(lib, f"wkvbench_wkv4_forward_{suffix}")
        bwd = getattr(lib, f"wkvbench_wkv4_backward_{suffix}")
        assert fwd(-1, 4, 4, *[None] * 12) == CUDA_ERROR_INVALID_VALUE  # negative size
        assert fwd(0, 4, 4, *[None] * 12) == 0  # nothing to do: no launch
        assert bwd(1, 4, 0, *[None] * 20) == 0
        assert bwd(1, 4, 4, *[None] * 20) == CUDA_ERROR_INVALID_VALUE  # required pointers missing
    assert lib.wkvbench_wkv4_error_string(CUDA_ERROR_INVALID_VALUE) == b"invalid argument"


def test_flags_target_hopper_and_ampere_without_fast_math():
    flags = w4.nvcc_flags(nvcc=NVCC)
    assert "-gencode=arch=compute_90,code=sm_90" in flags
    assert "-gencode=arch=compute_80,code=sm_80" in flags
    assert "--use_fast_math" not in flags and "-use_fast_math" not in flags


def test_compile_error_reports_nvcc_output(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(int* x) { x[0] = undeclared_name; }\n")
    with pytest.raises(_nvcc.NvccError, match="undeclared_name"):
        _nvcc.compile_shared(bad, tmp_path / "bad.so", ["-shared", "-Xcompiler", "-fPIC"], NVCC)


def test_missing_nvcc_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(_nvcc, "find_nvcc", lambda: None)
    with pytest.raises(_nvcc.NvccError, match="set CUDA_HOME"):
        _nvcc.build_cached("x", tmp_path / "x.cu", [])


def test_the_crash_isolation_plugin_kernel_compiles(tmp_path, monkeypatch):
    """The out-of-bounds kernel of the GPU crash-isolation test builds here, so its GPU run can only
    fail for the reason it exists (an illegal address), never for a build mistake."""
    from pathlib import Path

    monkeypatch.setenv("WKVBENCH_CACHE_DIR", str(tmp_path))
    src = Path(__file__).resolve().parents[1] / "plugins" / "cuda_oob.cu"
    lib = _nvcc.build_cached("oob_test", src, w4.nvcc_flags(None, NVCC), NVCC)
    assert lib.is_file() and lib.name == "liboob_test.so"
