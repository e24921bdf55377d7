"""ggml-python's CUDA build and the verification of its variants, for a ``wkvbench gpu`` run (``run``
is its ``GpuRun``): the build starts in the background at the lowest CPU priority, and ggml's
variants are verified beside the other variants when the build was there before the run, else after
the bench, their rows joined into the run's verify file."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import threading
import time

from ..run.procs import complete, ggml_ready, say, tail, untimed_env
from .side import run_side, side_tasks
from .verify_merge import join_verify, verify_detail


def start_build(run) -> subprocess.Popen | None:
    """ggml-python's CUDA build, in the background, at the lowest CPU priority, unless this
    environment already has the ggml it asks for (a second run). About 3 minutes of 16 cores: beside
    the verification, which keeps every core busy on its own, it lengthened the run by as much (H100,
    2026-11-24); niced, it takes the cores the verification leaves and the bench's idle ones (the bench
    times on one core), and its variants are verified and timed after the bench."""
    if run.opt.ggml_src is None or run.state.phase("ggml").status == "done":
        return None
    if not any(v.backend == "ggml" for v in run._selected()):  # e.g. --variant '*.flashinfer.*'
        say("ggml: no ggml variant selected, not built")
        return None
    ph = run.state.phase("ggml")
    if ggml_ready():
        ph.status, ph.detail = "done", "already installed"
        run.state.save()
        say("ggml: ggml-python with the backend CMAKE_ARGS asks for is installed already")
        return None
    ph.status, ph.started = "running", time.time()
    cmd = ["nice", "-n", "19", sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
           *run.opt.ggml_pip, str(run.opt.ggml_src)]
    say(f"ggml: building ggml-python in the background (CMAKE_ARGS={os.environ.get('CMAKE_ARGS')!r})")
    env = {"CMAKE_BUILD_PARALLEL_LEVEL": str(max(1, (os.cpu_count() or 2) - 1))}  # a core for the bench
    import shutil

    if shutil.which("nvcc") is None and os.path.exists("/usr/local/cuda/bin/nvcc"):  # CUDA's usual home
        env["PATH"] = "/usr/local/cuda/bin" + os.pathsep + os.environ.get("PATH", "")
    return run.procs.start("ggml-build", cmd, env)


def _last_write(path, default: float) -> float:
    try:
        return min(path.stat().st_mtime, default)
    except OSError:
        return default


def build_and_verify(run, build: subprocess.Popen | None) -> bool:
    if build is not None:
        ph = run.state.phase("ggml")
        t0 = time.time()
        running = run.procs.poll(build) is None
        rc = run.procs.wait(build)
        run.state.add_cpu("ggml", build.cpu_s)
        # the build's end: now if the run waited for it; else its log's last write (pip's last line), not
        # when the run came to look (after the bench and the stability check)
        end = time.time() if running else _last_write(run.procs.logs / "ggml-build.log", time.time())
        ph.seconds = end - (ph.started or t0)
        # the evidence's wall time: how long the build outlasted the bench (run.bench_ended), whether the
        # run waited here or the stability check filled that time
        if run.bench_ended is not None and end > run.bench_ended + 1.0:
            w = run.state.phase("ggml-wait")
            w.status, w.seconds = "done", end - run.bench_ended
            w.detail = "ggml's build outlasted the bench by this much"
        ph.status = "done" if rc == 0 else "failed"
        ph.detail = "" if rc == 0 else f"pip exited with {rc}: " + tail(run.procs.logs / "ggml-build.log", 3)
        run.state.save()
        say(f"ggml: build {ph.status} after {ph.seconds:.0f} s (waited {time.time() - t0:.0f} s for it)")

    if run.ggml_beside is not None:
        return True  # verified beside the others
    return run._phase("ggml-verify", lambda: verify_end(run, verify_start(run)))


def verify_start(run) -> tuple | None:
    """ggml's verify process, and its properties processes in a thread (None: no ggml variant)."""
    names = [v.name for v in run._selected() if v.backend == "ggml"]  # the selection's ggml variants
    if not names:
        return None
    part = run.work / "verify-ggml.json"
    p = run.procs.start("verify-ggml", run._verify_cmd(part, variants=names), untimed_env())
    tasks = side_tasks(run, ggml=True)
    counts: collections.Counter = collections.Counter()
    side = threading.Thread(target=run_side, args=(run, tasks, max(1, len(tasks)), threading.Event(), counts),
                            daemon=True)
    side.start()
    return p, side, part


def verify_end(run, started: tuple | None) -> tuple[bool, str]:
    """Wait for what ``verify_start`` started; its rows join the run's verify file."""
    if started is None:
        return True, "no ggml variant selected"
    p, side, part = started
    side.join()
    rc = run.procs.wait(p)
    run.state.add_cpu("verify", p.cpu_s)
    if rc not in (0, 1, 3) or not complete(part):  # 1/3: rows failed or raised (in the file)
        return False, f"verify exited with {rc}: " + tail(run.procs.logs / "verify-ggml.log", 3)
    run._variant_times(part)
    join_verify(run.verify, part)  # only ggml variants selected: theirs is the run's verify file
    beside = started is run.ggml_beside
    return True, verify_detail(run.verify) + (" (started beside verify; the seconds: what it added after it)"
                                               if beside else "")
