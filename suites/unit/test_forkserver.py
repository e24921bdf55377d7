"""Workers forked from one process that imported torch and FLA once (``wkvbench.run.forkserver``, CPU only).

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
import types
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
    assert forkserver.enabled(gpus=0) is sys.platform.startswith("linux")
    assert forkserver.enabled(gpus=2) is False  # workers spread over GPUs: CUDA in every one
    monkeypatch.setenv("WKVBENCH_FORK", "0")
    assert forkserver.enabled(gpus=0) is False
    monkeypatch.setenv("WKVBENCH_FORK", "yes")
    with pytest.raises(ValueError, match="WKVBENCH_FORK must be 0 or 1"):
        forkserver.enabled(gpus=0)


def test_the_server_declines_a_gpu_build_of_torch(monkeypatch):
    fake = types.ModuleType("torch")
    fake.__version__ = "2.13.0+cu130"
    fake.version = types.SimpleNamespace(cuda="13.0", hip=None)
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert "GPU build" in forkserver._preload()


def test_a_declining_server_leaves_fresh_workers(tmp_path, monkeypatch):
    """A server that declines (here: a GPU build of torch, faked by a ``torch`` module first on the path)
    says why and exits; the run's workers are then fresh interpreters and its rows the same."""
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text(
        "import types\n__version__ = '2.13.0+cu130'\nversion = types.SimpleNamespace(cuda='13.0', hip=None)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), str(REPO)])}
    server = forkserver.ForkServer(env, tmp_path / "server.log", timeout=120)
    assert not server.ready and "GPU build" in server.why
    assert server.proc.returncode == 0
