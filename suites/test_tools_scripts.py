"""Every shell script under tools/ parses (``bash -n``): they run on GPU boxes, where a syntax error
would cost a whole device session."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parent.parent / "tools").glob("*.sh"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_script_parses(script):
    p = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_gpu_full_collect_copies_what_exists(tmp_path):
    """The collect step of tools/gpu_full.sh copies the finished run's files and nothing else."""
    run, out = tmp_path / "run", tmp_path / "out"
    (run / "parts").mkdir(parents=True)
    out.mkdir()
    (run / "done").write_text("")
    (run / "run.log").write_text("log\n")
    (run / "verify-gpu-all.json").write_text("{}")
    script = next(p for p in SCRIPTS if p.name == "gpu_full.sh")
    p = subprocess.run(["bash", str(script), "--collect", str(run), str(out)],
                           capture_output=True, text=True,
                       env={"WKVBENCH_COLLECT_WAIT": "0", "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in out.iterdir()) == ["run.log", "verify-gpu-all.json"]


def test_gpu_full_snapshot_packs_the_parts_so_far(tmp_path):
    """--snapshot packs RESULTS_DIR/parts and run.log into OUT/snapN.tar.gz, a new N each call."""
    import tarfile
    run, out = tmp_path / "run", tmp_path / "out"
    (run / "parts").mkdir(parents=True)
    out.mkdir()
    (run / "parts" / "verify-x.json").write_text("{}")
    (run / "run.log").write_text("[1s] x rc=0\n")
    script = next(p for p in SCRIPTS if p.name == "gpu_full.sh")
    for _ in range(2):
        p = subprocess.run(["bash", str(script), "--snapshot", str(run), str(out)],
                           capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin", "TRITON_CACHE_DIR": str(tmp_path / "no-cache")})
        assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in out.iterdir()) == ["snap1.tar.gz", "snap2.tar.gz"]
    with tarfile.open(out / "snap2.tar.gz") as t:
        assert {"parts/verify-x.json", "run.log"} <= set(t.getnames())


def test_gpu_full_wait_refuses_a_fresh_machine_and_snapshots_a_finished_run(tmp_path):
    """--wait exits 9 at once where no run exists (the machine went back between calls); on a
    finished run (RESULTS_DIR/done) it returns without waiting and leaves a snapshot."""
    run, out = tmp_path / "run", tmp_path / "out"
    out.mkdir()
    script = next(p for p in SCRIPTS if p.name == "gpu_full.sh")
    env = {"PATH": "/usr/bin:/bin", "TRITON_CACHE_DIR": str(tmp_path / "no-cache")}
    p = subprocess.run(["bash", str(script), "--wait", str(run), "500", str(out)],
                           capture_output=True, text=True,
                       env=env, timeout=30)
    assert p.returncode == 9 and "fresh machine" in p.stdout
    assert list(out.iterdir()) == []
    (run / "parts").mkdir(parents=True)
    (run / "run.log").write_text("[1s] x rc=0\n")
    (run / "done").touch()
    p = subprocess.run(["bash", str(script), "--wait", str(run), "500", str(out)],
                           capture_output=True, text=True,
                       env=env, timeout=30)
    assert p.returncode == 0, p.stderr
    assert [f.name for f in out.iterdir()] == ["snap1.tar.gz"]


def test_gpu_full_autotune_cache_round_trip(tmp_path):
    """--snapshot packs Triton's autotuning choices (*.autotune.json, nothing else) with the GPU model;
    --restore-autotune puts them back only on the same GPU model."""
    import tarfile
    script = next(p for p in SCRIPTS if p.name == "gpu_full.sh")
    run, out, wh = tmp_path / "run", tmp_path / "out", tmp_path / "wh"
    (run / "parts").mkdir(parents=True)
    (run / "run.log").write_text("")
    out.mkdir()
    cache = tmp_path / "cache"
    (cache / "abc").mkdir(parents=True)
    (cache / "abc" / "chunk_fwd.autotune.json").write_text('{"key": [1], "configs_timings": []}')
    (cache / "abc" / "chunk_fwd.cubin").write_bytes(b"\0" * 64)
    for i in range(2000):  # a real cache's size: `find | grep -q` under pipefail died of SIGPIPE here (run 5)
        (cache / f"k{i:04d}").mkdir()
        (cache / f"k{i:04d}" / "other.autotune.json").write_text("{}")
    env = {"PATH": "/usr/bin:/bin", "TRITON_CACHE_DIR": str(cache),
           "WKVBENCH_GPU_NAME": "NVIDIA H100 80GB HBM3"}
    p = subprocess.run(["bash", str(script), "--snapshot", str(run), str(out)],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    with tarfile.open(out / "triton-autotune.tar.gz") as t:
        names = sorted(t.getnames())
    assert names[:2] == ["./GPU", "./abc/chunk_fwd.autotune.json"] and len(names) == 2002
    assert not any(n.endswith(".cubin") for n in names)
    wh.mkdir()
    (out / "triton-autotune.tar.gz").rename(wh / "triton-autotune.tar.gz")
    for gpu, restored in (("NVIDIA H200", False), ("NVIDIA H100 80GB HBM3", True)):
        fresh = tmp_path / f"fresh-{restored}"
        p = subprocess.run(["bash", str(script), "--restore-autotune", str(wh)],
                           capture_output=True, text=True,
                           env={**env, "TRITON_CACHE_DIR": str(fresh), "WKVBENCH_GPU_NAME": gpu})
        assert p.returncode == 0, p.stderr
        assert (fresh / "abc" / "chunk_fwd.autotune.json").exists() == restored, p.stdout
        assert ("2001 choices" in p.stdout) == restored and ("not used" in p.stdout) != restored
    # a new checkout has no wheelhouse archive: the one committed for its GPU model is restored
    store = tmp_path / "store"
    store.mkdir()
    (wh / "triton-autotune.tar.gz").rename(store / "NVIDIA-H100-80GB-HBM3.tar.gz")
    fresh = tmp_path / "fresh-store"
    p = subprocess.run(["bash", str(script), "--restore-autotune", str(wh)], capture_output=True, text=True,
                       env={**env, "TRITON_CACHE_DIR": str(fresh), "WKVBENCH_AUTOTUNE_STORE": str(store)})
    assert p.returncode == 0, p.stderr
    assert (fresh / "abc" / "chunk_fwd.autotune.json").exists() and "2001 choices" in p.stdout, p.stdout
