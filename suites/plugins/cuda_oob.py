"""Test plug-in (GPU): ``gla.crash.cuda_oob`` launches a tiny CUDA kernel that writes 2**40 floats past
the end of its buffer (an illegal address) on the single-token case, and is exact elsewhere; the isolated
verify runner must report that case as CRASH naming the illegal memory access.

Built with nvcc through ``wkvkernels/_nvcc.py`` (cached like our RWKV-4 kernel), loaded with ctypes.
Unavailable (with the reason) where there is no CUDA device or no nvcc.
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path

from wkvbench.run.plugins import register_function
from wkvkernels import _nvcc
from wkvkernels.wkv4.wkvbench_cuda import nvcc_flags
from wkvoracle import recurrent_gla

SOURCE = Path(__file__).with_suffix(".cu")  # the kernel; build_cached takes a file


@functools.cache
def _lib() -> ctypes.CDLL:
    nvcc = _nvcc.find_nvcc()
    if nvcc is None:
        raise _nvcc.NvccError(_nvcc.NVCC_MISSING)
    lib = ctypes.CDLL(str(_nvcc.build_cached("oob_test", SOURCE, nvcc_flags(None, nvcc), nvcc)))
    lib.wkvbench_oob_launch.argtypes = [ctypes.c_void_p, ctypes.c_longlong]
    lib.wkvbench_oob_launch.restype = ctypes.c_int
    lib.wkvbench_oob_error_string.argtypes = [ctypes.c_int]
    lib.wkvbench_oob_error_string.restype = ctypes.c_char_p
    return lib


def unavailable(case) -> str | None:
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    if _nvcc.find_nvcc() is None:
        return _nvcc.NVCC_MISSING
    return None


def oob(inputs: dict, dtype: str) -> dict:
    if inputs["k"].shape[1] == 1:
        import torch

        buf = torch.zeros(32, device="cuda")
        code = _lib().wkvbench_oob_launch(buf.data_ptr(), 1 << 40)
        if code:
            what = _lib().wkvbench_oob_error_string(code).decode()
            raise RuntimeError(f"CUDA error: {what} (cudaError {code})")
        torch.cuda.synchronize()
    return recurrent_gla(**inputs)


register_function("gla.crash.cuda_oob", "gla", oob, device="cuda", check=unavailable)
