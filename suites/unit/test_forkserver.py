"""Workers forked from one process that imported torch (and FLA, on a CPU) once (``wkvbench.run.forkserver``).

The crash-isolation tests of test_isolate.py (segfault, ``abort()``, ``sys.exit(3)``, a hang killed by
process group, a plug-in that fails to import in the worker) run with the default, forked workers on this
CPU-only machine; here: that they are forked, that their rows equal those of fresh interpreters bit for
bit, that the imports leave the workers' CPU seconds, and where the server declines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wkvbench.results.verify_file import row_key
from wkvbench.run import forkserver
from wkvbench.run.isolate import THREAD_VARS

REPO = Path(__file__).resolve().parents[2]
ONE = {v: "1" for v in THREAD_VARS}  # the same thread count in every run: bitwise comparable numbers


def _verify(out: Path, fork: str, *args: str) -> dict:
    p = subprocess.run([sys.executable, "-m", "wkvbench", "verify", "--no-entry-points", *args, "--output", str(out)],
                       cwd=REPO, capture_output=True, text=True, timeout=600,
                       env={**os.environ, **ONE, "WKVBENCH_FORK": fork})
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(out.read_text())


def test_forked_workers_give_the_rows_of_fresh_ones_and_leave_the_imports_to_the_server(tmp_path):
    """The same rows, numbers and limits (the baseline's bound included) from forked and fresh workers; a
    forked worker's first unit no longer pays for importing torch and FLA (unit_cpu_s: the server did)."""
    args = ("--variant", "gla.torch.recurrent", "--variant", "gla.fla.naive_recurrent", "--dtype", "fp32",
            "--dtype", "bf16", "--domain", "model", "--jobs", "2")
    forked, fresh = _verify(tmp_path / "f.json", "1", *args), _verify(tmp_path / "s.json", "0", *args)
    rows = {row_key(r["variant"], r["case"], r["kind"]): r for r in forked["results"]}
    want = {row_key(r["variant"], r["case"], r["kind"]): r for r in fresh["results"]}
    assert rows.keys() == want.keys() and len(rows) == 12
    for k, r in want.items():
        for f in ("status", "reason", "errors", "limits", "baseline_rel"):
            assert rows[k][f] == r[f], (k, f)
    assert any(r["baseline_rel"] for r in rows.values())  # FLA's rows were judged against the baseline
    unit = "gla.fla.naive_recurrent|forward|bf16"  # the first unit of FLA's worker (bf16 sorts first)
    assert fresh["unit_cpu_s"][unit] > 1.0  # a fresh interpreter imports torch and FLA: seconds of CPU
    assert forked["unit_cpu_s"][unit] < fresh["unit_cpu_s"][unit] - 1.0


def test_the_workers_are_forks_of_the_server_and_none_outlives_the_run(monkeypatch):
    from wkvbench.run import isolate
    from wkvbench.run.verify import Selection, run

    monkeypatch.delenv("WKVBENCH_FORK", raising=False)
    kinds, real = [], isolate._Worker.__init__

    def recording(self, *a, **kw):
        real(self, *a, **kw)
        kinds.append((type(self.proc).__name__, os.getpgid(self.proc.pid) == self.proc.pid))

    monkeypatch.setattr(isolate._Worker, "__init__", recording)
    sel = Selection(ops=("gla",), variant_globs=("gla.torch.recurrent", "gla.fla.naive_recurrent"),
                    case_ids=("gla/model/B1-T1-H2-N64-h0/fp32/s0", "gla/model/B1-T1-H2-N64-h0/bf16/s0"))
    cfg = isolate.WorkerConfig(entry_points=False, jobs=2)
    report = run(sel, isolate=cfg)
    assert [r.status for r in report.results] == ["PASS"] * 4
    # forked, each the leader of its own process group (the parent kills a worker by its group)
    assert kinds and all(k == ("ForkedProc", True) for k in kinds), kinds
    assert cfg.forks is None and not cfg.active and not cfg.idle  # the server closed with the run


def test_fresh_interpreters_where_forking_is_not_wanted(monkeypatch):
    monkeypatch.delenv("WKVBENCH_FORK", raising=False)
    # on GPUs too: each worker names its own before it loads the driver (the server may still decline)
    assert forkserver.enabled() is sys.platform.startswith("linux")
    monkeypatch.setenv("WKVBENCH_FORK", "0")
    assert forkserver.enabled() is False
    monkeypatch.setenv("WKVBENCH_FORK", "yes")
    with pytest.raises(ValueError, match="WKVBENCH_FORK must be 0 or 1"):
        forkserver.enabled()


def _gpu_build(monkeypatch):
    """torch as a GPU build says it is (``torch.version.cuda``), the real module otherwise."""
    import torch

    monkeypatch.setattr(torch.version, "cuda", "13.0")
    return torch


def test_with_a_gpu_build_the_server_preloads_what_imports_without_the_driver(monkeypatch):
    """FLA asks for the device's name as it is imported (``fla.utils.hardware``), which loads the CUDA driver,
    and a fork of a process that initialised CUDA cannot use it: with a GPU build of torch the server preloads
    torch, Triton and dynamo, not FLA, and forks where its process has not loaded the driver."""
    _gpu_build(monkeypatch)
    seen = []
    real = __import__("importlib").import_module

    def recording(name, package=None):
        seen.append(name)
        return real(name, package)

    monkeypatch.setattr("importlib.import_module", recording)
    monkeypatch.setattr(forkserver, "_unsafe", lambda test_fork=True: None)
    assert forkserver._preload() is None
    assert seen[:2] == ["numpy", "torch"] and set(forkserver.GPU_PRELOAD) <= set(seen), seen
    assert not any(n == "fla" or n.startswith("fla.") for n in seen), seen


def test_a_server_declines_where_cuda_was_initialised_a_thread_runs_or_a_fork_cannot_use_it(tmp_path):
    """In a process of its own (pytest's may run threads of its own). Importing torch 2.11's CUDA build maps
    the driver's library without initialising CUDA (H200, 2026-11-29), so the server asks torch whether CUDA
    was initialised, and a test fork makes a CUDA context: here, with a CPU build, it cannot, and the server
    declines with the fork's reason in its log."""
    script = tmp_path / "check.py"
    script.write_text("""
import json, threading, torch
from wkvbench.run import forkserver
torch.version.cuda = "13.0"  # a GPU build, as far as the server can tell
out = {"no_gpu": forkserver._preload()}  # its test fork cannot use CUDA on this machine
forkserver._fork_uses_cuda = lambda: None  # as on a GPU box
out["clean"] = forkserver._unsafe()
torch.cuda.is_initialized = lambda: True
out["initialised"] = forkserver._unsafe()
torch.cuda.is_initialized = lambda: False
threading.Thread(target=threading.Event().wait, name="a-pool", daemon=True).start()
out["thread"] = forkserver._unsafe()
print(json.dumps(out))
""")
    p = subprocess.run([sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert "a fork of the server could not use CUDA" in out["no_gpu"], out
    assert "fork server: a fork could not use CUDA" in p.stderr, p.stderr  # the fork's own reason
    assert out["clean"] is None, out
    assert "CUDA was initialised" in out["initialised"], out
    assert "1 Python threads" in out["thread"] and "a-pool" in out["thread"], out


def test_a_declining_server_leaves_fresh_workers(tmp_path, monkeypatch):
    """A server that declines (here: a GPU build of torch that starts a thread as it is imported, faked by a
    ``torch`` module first on the path) says why and exits; the run's workers are then fresh interpreters."""
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text(
        "import threading, types\n__version__ = '2.13.0+cu130'\n"
        "version = types.SimpleNamespace(cuda='13.0', hip=None)\n"
        "threading.Thread(target=threading.Event().wait, name='fake-pool', daemon=True).start()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), str(REPO)])}
    server = forkserver.ForkServer(env, tmp_path / "server.log", timeout=120)
    assert not server.ready and "fake-pool" in server.why, server.why
    assert "after importing torch" in server.why, server.why
    assert server.proc.returncode == 0
