"""The maintainers' scripts under tools/: each shell script parses (``bash -n``), and ``detach.sh`` starts a
command detached and collects it (exit code, log) from a later call, or says at once that nothing was
started (a fresh machine); ``vllm_files.py`` unpacks vLLM's wheel less what its FLA fork never loads."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
SCRIPTS = sorted(TOOLS.glob("*.sh"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_script_parses(script):
    p = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def _detach(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(TOOLS / "detach.sh"), *args], capture_output=True, text=True, timeout=60)


def test_detach_outlives_its_caller_and_reports_the_exit_code(tmp_path):
    d, go = tmp_path / "job", tmp_path / "go"
    t0 = time.perf_counter()
    # the job ends only when the test lets it (no race with a loaded machine's scheduler)
    started = _detach("start", str(d), "bash", "-c",
                      f"echo begun; while [ ! -f {go} ]; do sleep 0.1; done; echo finished; exit 4")
    assert started.returncode == 0 and time.perf_counter() - t0 < 2  # returns at once
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not ((d / "log").is_file() and "begun" in (d / "log").read_text()):
        time.sleep(0.1)
    early = _detach("wait", str(d), "0")
    assert early.returncode == 3 and "still running" in early.stdout and "begun" in early.stdout
    go.touch()
    done = _detach("wait", str(d), "30")
    assert done.returncode == 0, done.stdout
    assert "finished" in done.stdout and "ended with exit code 4" in done.stdout
    assert (d / "rc").read_text().strip() == "4"


def test_detach_wait_on_a_fresh_machine_says_so_at_once(tmp_path):
    p = _detach("wait", str(tmp_path / "never"), "500")
    assert p.returncode == 9 and "nothing started" in p.stdout


def test_detach_wait_collects_in_the_call_that_sees_the_job_end(tmp_path):
    d, out = tmp_path / "job", tmp_path / "collected"
    assert _detach("start", str(d), "bash", "-c", "echo result > " + str(tmp_path / "r")).returncode == 0
    p = _detach("wait", str(d), "30", "cp", str(tmp_path / "r"), str(out))
    assert p.returncode == 0 and "ended with exit code 0" in p.stdout, p.stdout
    assert out.read_text() == "result\n"
    # still running: nothing is collected yet
    go = tmp_path / "go"
    _detach("start", str(d), "bash", "-c", f"while [ ! -f {go} ]; do sleep 0.1; done")
    early = _detach("wait", str(d), "0", "touch", str(tmp_path / "too-early"))
    assert early.returncode == 3 and not (tmp_path / "too-early").exists()
    go.touch()


def test_vllm_files_leaves_out_the_extensions_the_fork_never_loads(tmp_path):
    import importlib.util
    import tarfile
    import zipfile

    spec = importlib.util.spec_from_file_location("vllm_files", TOOLS / "vllm_files.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    wheel = tmp_path / "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    kept = ["vllm/__init__.py", "vllm/_C_stable_libtorch.abi3.so", "vllm/cumem_allocator.abi3.so",
            "vllm/third_party/flash_linear_attention/ops/chunk.py", "vllm/vllm_flash_attn/__init__.py",
            "vllm-0.33.0.dist-info/METADATA"]
    left = ["vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so", "vllm/_moe_C_stable_libtorch.abi3.so", "vllm/vllm-rs",
            "vllm/third_party/deep_gemm/_C_extension.abi3.so", "vllm/third_party/fmha_sm100/cutlass/x.hpp",
            "vllm/_flashmla_C.abi3.so", "vllm/_flashkda_C.abi3.so"]
    with zipfile.ZipFile(wheel, "w") as z:
        for n in kept + left:
            z.writestr(n, "x")
    dest = tmp_path / "vf"
    assert mod.main([str(wheel), str(dest), "--tar", str(tmp_path / "vf.tar.gz")]) == 0
    got = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert got == sorted(kept)
    with tarfile.open(tmp_path / "vf.tar.gz") as t:
        assert "vf/vllm/_C_stable_libtorch.abi3.so" in t.getnames()
    other = tmp_path / "other.whl"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("pkg/__init__.py", "")
    assert mod.main([str(other), str(tmp_path / "o")]) == 2  # not a vLLM wheel: a clear refusal
