"""The processes a ``wkvbench gpu`` run starts, and how busy the box is while they run.

``Procs`` starts each process in its own session with its log file, reaps it with ``os.wait4`` (so
the CPU seconds it and its waited-for children used are known), and kills all of them when the run
stops. ``Load`` samples the box (CPU busy share from ``/proc/stat``, GPU utilization and memory from
``nvidia-smi``) for the run's time line: whether a phase waited on the CPU, on the GPU, or on neither.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path


def say(msg: str) -> None:
    print(f"[wkvbench gpu {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def py(*args: str) -> list[str]:
    return [sys.executable, "-m", "wkvbench", *args]


def untimed_env() -> dict[str, str]:
    """The environment of the processes that share the GPU and are not timed (verification, warm-ups,
    properties): their waits for the GPU sleep instead of spinning a core (``wkvbench.run.cudawait``), so
    the cores go to compilations and the oracle. The timed bench keeps CUDA's default."""
    from wkvkernels import config

    from .cudawait import ENV

    return {ENV: config.cuda_wait() or "block"}


def complete(path: Path) -> bool:
    try:
        return bool(json.loads(path.read_text()).get("complete"))
    except (OSError, ValueError):
        return False


def cache_bytecode(environ=os.environ) -> str | None:
    """Let the run's processes cache the bytecode of the modules they import. The GPU boxes' image sets
    ``PYTHONDONTWRITEBYTECODE=1`` and its torch has no ``__pycache__``, so every process compiled its imports
    again: on the H100 (2026-11-28) 2,375 modules, 8.1 s of one bench process's 26 s (cProfile,
    ``reports/gpu/h100-2026-11-28-at-size-profile/``), and ``import torch, sympy`` took 6.2-9.2 s each time
    against 2.2 s once cached. The run's hundreds of verification, warm-up and bench processes paid it each.
    Their bytecode goes under ``PYTHONPYCACHEPREFIX`` (default ``~/.cache/wkvbench/pycache``), never beside the
    packages' sources, and a warm run reuses it. Returns what it changed, None when nothing needed to."""
    if not environ.get("PYTHONDONTWRITEBYTECODE"):
        return None
    prefix = environ.get("PYTHONPYCACHEPREFIX") or str(
        Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wkvbench" / "pycache")
    environ["PYTHONPYCACHEPREFIX"] = prefix
    del environ["PYTHONDONTWRITEBYTECODE"]
    return f"PYTHONDONTWRITEBYTECODE was set: the run's processes cache their bytecode under {prefix}"


class Procs:
    """Subprocesses started by the run, each with its log file; all killed when the run stops."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.live: list = []  # subprocess.Popen, or forkserver.ForkedProc
        self.forks: dict[str, object] = {}  # PYTHONPATH -> its fork server (forkserver.ForkServer) or False
        self.lock = threading.Lock()

    def start(self, name: str, cmd: list[str], env: dict | None = None, fork: bool = False):
        """``cmd`` started with ``env`` over the run's environment, its output into ``logs/<name>.log``. With
        ``fork``, a ``wkvbench`` command is a fork of a server that imported torch once (``fork_server``)
        where one is ready for its environment's ``PYTHONPATH``: a side task spent 12.5 CPU seconds
        importing torch, Triton and FLA and making a CUDA context before it compiled anything (H200,
        2026-11-29)."""
        self.logs.mkdir(parents=True, exist_ok=True)
        full = {**os.environ, **(env or {})}
        server = self.fork_server(full) if fork and cmd[:3] == py() else None
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - closed when the process is reaped
        log.write(f"$ {shlex.join(cmd)}\n".encode())
        log.flush()
        p = server.run(self.logs / f"{name}.log", full, cmd[3:]) if server is not None else None
        if p is not None:  # the fork appends to the log itself
            log.close()
        else:
            p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=full, start_new_session=True)
            p.log = log  # type: ignore[attr-defined]
            p.cpu_s = 0.0  # type: ignore[attr-defined]
        self.live.append(p)
        return p

    def fork_server(self, env: dict[str, str]):
        """The ready fork server (``wkvbench.run.forkserver``) of ``env``'s ``PYTHONPATH`` (an own folder's
        packages first: their own torch, their own ``fla``), started on first use with ``env`` less any GPU
        choice (each fork names its own); None where it declined (said once) or ``WKVBENCH_FORK=0``."""
        from . import forkserver

        key = env.get("PYTHONPATH", "")
        with self.lock:
            if key not in self.forks:
                self.forks[key] = False
                if forkserver.enabled():
                    n = len(self.forks)
                    own = {k: v for k, v in env.items() if k != "CUDA_VISIBLE_DEVICES"}
                    server = forkserver.ForkServer(own, self.logs / f"forkserver-{n}.log", timeout=300.0)
                    self.forks[key] = server if server.ready else False
                    say(f"side tasks{f' of {key.split(os.pathsep)[0]}' if key else ''}: "
                        + ("forked from a process that imported torch once" if server.ready
                           else f"fresh processes: {server.why}"))
            return self.forks[key] or None

    def close_forks(self) -> float:
        """The fork servers closed; their own CPU seconds (their imports), which no fork's hold."""
        cpu = 0.0
        with self.lock:
            for server in self.forks.values():
                if server:
                    server.close()
                    cpu += server.cpu_s
            self.forks.clear()
        return cpu

    def poll(self, p: subprocess.Popen, block: bool = False) -> int | None:
        """The exit code of ``p`` once it ended (None while it runs); its CPU seconds (user + system,
        with its waited-for children) into ``p.cpu_s``."""
        if p.returncode is not None:
            return p.returncode
        if not isinstance(p, subprocess.Popen):  # a fork of a fork server: it reaped it (and its CPU seconds)
            rc = p.wait() if block else p.poll()
            if rc is not None and p in self.live:
                self.live.remove(p)
            return rc
        try:
            pid, status, ru = os.wait4(p.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere: Popen knows the code
            return p.wait() if block else p.poll()
        if pid == 0:
            return None
        p.returncode = os.waitstatus_to_exitcode(status)
        p.cpu_s = ru.ru_utime + ru.ru_stime  # type: ignore[attr-defined]
        p.log.close()  # type: ignore[attr-defined]
        if p in self.live:
            self.live.remove(p)
        return p.returncode

    def wait(self, p: subprocess.Popen) -> int:
        rc = self.poll(p, block=True)
        assert rc is not None
        return rc

    def kill_all(self) -> None:
        for p in list(self.live):
            try:
                os.killpg(p.pid, signal.SIGKILL)  # a fork is the leader of its own group too
            except (ProcessLookupError, PermissionError):
                pass
        self.close_forks()


def tail(path: Path, n: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


class Load:
    """Samples of how busy the box is: ``[seconds since t0, CPU busy % since the last sample, GPU busy %,
    GPU GiB used]`` (None where a reading is not available)."""

    def __init__(self, t0: float | None = None) -> None:
        self.t0 = time.time() if t0 is None else t0
        self._cpu = _cpu_times()

    def sample(self) -> list[float | None]:
        now = _cpu_times()
        busy = None
        if now and self._cpu:
            d_total, d_idle = now[0] - self._cpu[0], now[1] - self._cpu[1]
            busy = round(100.0 * (1 - d_idle / d_total), 1) if d_total > 0 else None
        self._cpu = now
        gpu, mem = _gpu_busy()
        return [round(time.time() - self.t0, 1), busy, gpu, mem]


def _cpu_times() -> tuple[int, int] | None:
    """(total, idle + iowait) jiffies of all CPUs, from /proc/stat (Linux)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(fields[:8]), fields[3] + fields[4]


def _gpu_busy() -> tuple[float | None, float | None]:
    """(utilization %, memory used GiB) of the GPUs (their mean and sum), from nvidia-smi."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu,memory.used",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10).stdout
        rows = [[float(x) for x in line.split(",")] for line in out.strip().splitlines()]
    except (OSError, subprocess.SubprocessError, ValueError):
        return None, None
    if not rows:
        return None, None
    return round(sum(r[0] for r in rows) / len(rows), 1), round(sum(r[1] for r in rows) / 1024, 1)


def ggml_ready() -> bool:
    """ggml-python imports here, with CUDA when ``CMAKE_ARGS`` asks for it (torch imported first, as
    the adapters do)."""
    want_cuda = "-dggml_cuda=on" in os.environ.get("CMAKE_ARGS", "").lower()
    p = subprocess.run([sys.executable, "-c", "import torch, ggml; print(int(bool(getattr(ggml, 'GGML_USE_CUDA', 0))))"],
                       capture_output=True, text=True)
    return p.returncode == 0 and (not want_cuda or p.stdout.strip().endswith("1"))
