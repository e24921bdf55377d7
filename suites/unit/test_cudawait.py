"""``WKVBENCH_CUDA_WAIT``: how the untimed processes of a GPU run wait for the GPU (wkvbench.run.cudawait).
Its effect on a real context is checked on a GPU box (suites/gpu/test_gpu_cudawait.py)."""

from __future__ import annotations

import pytest

from wkvbench.run import cudawait
from wkvbench.run.procs import untimed_env


def test_unknown_mode_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(cudawait.ENV, "sleepy")
    with pytest.raises(ValueError, match="WKVBENCH_CUDA_WAIT='sleepy': expected one of spin, yield, block"):
        cudawait.apply_env()


def test_unset_does_nothing(monkeypatch):
    monkeypatch.delenv(cudawait.ENV, raising=False)
    assert cudawait.apply_env() is None


def test_without_a_driver_it_says_so(monkeypatch):
    monkeypatch.setattr(cudawait, "_driver", lambda: None)
    monkeypatch.setenv(cudawait.ENV, "block")
    assert cudawait.apply_env() == "no CUDA driver (libcuda.so.1): nothing to set"
    assert cudawait.current_wait() is None


def test_untimed_processes_sleep_unless_told_otherwise(monkeypatch):
    monkeypatch.delenv(cudawait.ENV, raising=False)
    assert untimed_env() == {cudawait.ENV: "block"}
    monkeypatch.setenv(cudawait.ENV, "spin")
    assert untimed_env() == {cudawait.ENV: "spin"}


def test_the_gpu_run_gives_it_to_verify_and_side_tasks_not_to_the_bench():
    """The timed bench keeps CUDA's default wait; verification, ggml's verification and the side tasks
    (warm-ups, properties) are started with ``untimed_env``."""
    import inspect

    from wkvbench.gpu import ggml, side
    from wkvbench.gpu import run as gpu

    src = inspect.getsource(gpu.GpuRun)
    assert 'self.procs.start("verify", cmd, untimed_env())' in src
    assert ('run.procs.start("verify-ggml", run._verify_cmd(part, variants=names), untimed_env())'
            in inspect.getsource(ggml.verify_start))
    assert "untimed_env()" in inspect.getsource(side.run_side)
    assert "untimed_env" not in inspect.getsource(gpu.GpuRun._bench)
