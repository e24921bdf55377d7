"""How a process's host threads wait for its GPU: spin (CUDA's default with few contexts) or sleep.

CUDA's default scheduling (``CU_CTX_SCHED_AUTO``) spins a core at 100 % inside every synchronizing
call (``torch.cuda.synchronize``, a device-to-host copy, an event wait) whenever the process has
fewer contexts than the machine has cores, which is always. A ``wkvbench gpu`` run keeps one process
per core for verification and one per core for compilations and autotuning, all sharing one GPU:
each one that waits for its turn on the GPU then burns a core that a Triton compilation or the
oracle needed. ``WKVBENCH_CUDA_WAIT=block`` makes those waits sleep on an OS primitive instead
(``CU_CTX_SCHED_BLOCKING_SYNC`` on the primary context of every visible device, set through the
driver API before anything creates that context). Device time is unaffected; a wait returns a few
microseconds later than a spinning one, which is why the timed bench keeps CUDA's default.
"""

from __future__ import annotations

import ctypes

from wkvkernels import config

ENV = "WKVBENCH_CUDA_WAIT"
SCHED = {"spin": 0x01, "yield": 0x02, "block": 0x04}  # CU_CTX_SCHED_SPIN / _YIELD / _BLOCKING_SYNC
SCHED_MASK = 0x07


def _driver() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


def set_wait(mode: str) -> str:
    """Ask for ``mode`` ("spin", "yield" or "block") on every visible device's primary context; returns
    what was done, or why nothing was (no driver, no device, a context already active)."""
    if mode not in SCHED:
        raise ValueError(f"{ENV}={mode!r}: expected one of {', '.join(SCHED)}")
    cu = _driver()
    if cu is None:
        return "no CUDA driver (libcuda.so.1): nothing to set"
    if cu.cuInit(0) != 0:
        return "cuInit failed: no usable CUDA device"
    n = ctypes.c_int(0)
    if cu.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value == 0:
        return "no CUDA device visible"
    done = []
    for i in range(n.value):
        dev = ctypes.c_int(0)
        if cu.cuDeviceGet(ctypes.byref(dev), i) != 0:
            continue
        flags, active = ctypes.c_uint(0), ctypes.c_int(0)
        cu.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active))
        rc = cu.cuDevicePrimaryCtxSetFlags(dev, (flags.value & ~SCHED_MASK) | SCHED[mode])
        done.append(f"device {i}: {'ok' if rc == 0 else f'CUresult {rc}'}")
    return f"{mode}: " + ", ".join(done)


def current_wait(device: int = 0) -> str | None:
    """The scheduling mode of ``device``'s primary context (None without a driver or device)."""
    cu = _driver()
    if cu is None or cu.cuInit(0) != 0:
        return None
    dev, flags, active = ctypes.c_int(0), ctypes.c_uint(0), ctypes.c_int(0)
    if cu.cuDeviceGet(ctypes.byref(dev), device) != 0:
        return None
    if cu.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active)) != 0:
        return None
    names = {v: k for k, v in SCHED.items()}
    return names.get(flags.value & SCHED_MASK, "auto")


def apply_env() -> str | None:
    """``WKVBENCH_CUDA_WAIT`` (spin, yield, block) for this process, if set; call before CUDA is used."""
    mode = config.cuda_wait()
    return set_wait(mode) if mode else None
