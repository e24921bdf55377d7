"""Crash isolation for ``verify``: each variant runs in its own worker process.

``run_variant`` starts ``python -m wkvbench.run._worker`` (a fresh interpreter: no fork, so a parent that
touched CUDA or torch threads is never copied) for one variant and all of its cases, and yields one
``CheckResult`` per case as the worker streams them back. On a CPU-only Linux machine the worker is instead
a fork of the run's fork server (``wkvbench.run.forkserver``), a process that only imported torch, FLA and
the registry, never the parent: the same worker code, without paying those imports again (about 110 of
the 295 worker CPU seconds of ``nox -s verify`` on the 2-core CPU machine, 2026-11-28). The worker pays
its start-up (imports, plug-ins, JIT builds) once per variant, not per case: a worker that finished its
cases waits, and the variant's next unit (another kind or dtype) is given to it rather than to a new
process (on a 16-core H100 box the start-ups of 210 workers, one per unit, were 1,700 of the
verification's 3,700 worker seconds, 2026-11-24). A worker only ever runs one variant.

* The worker dies (signal, ``abort()``, segfault, ``sys.exit``, a CUDA error that ends it): the case
  in flight is reported as ``CRASH`` with the signal or exit code and the last ``TAIL_LINES`` lines
  of the worker's stderr; a fresh worker takes the variant's remaining cases.
* No result within ``timeout`` seconds (per case; start-up gets its own ``timeout``): the worker's
  process group is killed and the case is reported as ``TIMEOUT``, then likewise a fresh worker.
* The worker dies before it is ready (a plug-in that fails to import in it, ...): every remaining
  case of the variant is ``CRASH`` with the start-up error; nothing is retried.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from wkvkernels import config
from wkvkernels.cases import Case

from ..judge.check import CRASH, TIMEOUT, CheckResult

TAIL_LINES = 20
# a worker whose CUDA context is broken reports its case as CRASH and exits with CUDA_EXIT (the
# parent starts a fresh worker for the rest); CUDA_FATAL tells such an error from others
CUDA_FATAL = re.compile(r"CUDA error|illegal memory access|illegal address|device-side assert|"
                        r"cudaError|CUDA_ERROR|unspecified launch failure|misaligned address", re.I)
CUDA_EXIT = 70
END_WAIT = 10.0  # seconds the waiting workers get to exit at the end of a run before they are killed
DEFAULT_TIMEOUT = 300.0  # seconds per case; WKVBENCH_TIMEOUT or --timeout override it


WORKER_RAM = 2 << 30  # bytes a worker may take (torch, triton and a CUDA context: about 1-1.5 GiB seen)


def _ram_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def default_jobs() -> int:
    """Workers at a time: ``WKVBENCH_JOBS``, else one per core, at most one per ``WORKER_RAM`` of memory
    (a 16-core GPU box: 16; the 2-core CI machine: 2). GPU memory is no limit here: the verification
    cases take a few MiB each, a CUDA context about 0.5 GiB."""
    n = config.jobs()
    if n is None:
        ram = _ram_bytes()
        return max(1, min(os.cpu_count() or 1, ram // WORKER_RAM if ram else 2))
    return n


def default_timeout() -> float:
    value = config.timeout()
    return DEFAULT_TIMEOUT if value is None else value


@dataclass
class WorkerConfig:
    """How a worker rebuilds the parent's registry, and what it checks."""

    plugins: list[str] = field(default_factory=list)
    entry_points: bool = True
    mutants: bool = False
    fib: dict | None = None  # flashinfer-bench case source (``fibench.FibSource.as_dict``) the workers load
    backward: bool = False  # the kind run_variant checks when it is given none
    timeout: float = DEFAULT_TIMEOUT
    jobs: int = field(default_factory=lambda: default_jobs())  # workers at a time
    gpus: int = 0  # GPUs to spread the workers over (CUDA_VISIBLE_DEVICES); 0: leave it as it is
    baselines: dict = field(default_factory=dict)  # case id (or "grad:" + id) -> baseline rel errors
    oracle_dir: str | None = None  # shared oracle results of this run (see Checker)
    cancel: threading.Event = field(default_factory=threading.Event, repr=False)  # set: start no more workers
    active: set = field(default_factory=set, repr=False)  # the live workers (killed on cancel)
    idle: dict = field(default_factory=dict, repr=False)  # (variant, GPU) -> workers waiting for a job
    ending: list = field(default_factory=list, repr=False)  # workers told to end, not yet reaped
    log_dir: Path | None = field(default=None, repr=False)  # the workers' stderr files
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    cpu: dict = field(default_factory=dict)  # "variant|kind|dtype" -> CPU seconds of the workers on it
    workers: dict = field(default_factory=dict)  # "variant|kind|dtype" -> workers started for it
    compiles: dict = field(default_factory=dict)  # "variant|kind|dtype" -> its Triton compile calls
    # "variant|kind|dtype" -> the baselines its workers found shared, waited for, measured
    # (judge/shared_baselines.py)
    shared: dict = field(default_factory=dict)
    waited: dict = field(default_factory=dict)  # "variant|kind|dtype" -> seconds it waited for its probe
    probed: dict = field(default_factory=dict)  # variant -> when its probe ended, seconds after probing began
    forks: object = field(default=None, repr=False)  # the fork server (forkserver.ForkServer), False: none

    def logs(self) -> Path:
        with self.lock:
            return self._log_dir()

    def _log_dir(self) -> Path:  # with the lock held
        if self.log_dir is None:
            self.log_dir = Path(tempfile.mkdtemp(prefix="wkvbench-workers-"))
        return self.log_dir

    def fork_server(self):
        """The run's fork server (``wkvbench.run.forkserver``), started with the first worker; None where
        workers start as fresh interpreters (``WKVBENCH_FORK=0``, or the server declined)."""
        from . import forkserver

        with self.lock:
            if self.forks is None:
                self.forks = False
                if forkserver.enabled() and not self.cancel.is_set():
                    fd, name = tempfile.mkstemp(prefix="forkserver-", suffix=".log", dir=self._log_dir())
                    os.close(fd)
                    log = Path(name)
                    env = {**os.environ, **worker_env(self.jobs, 0, 0), "PYTHONFAULTHANDLER": "1"}
                    server = forkserver.ForkServer(env, log, self.timeout)
                    self.forks = server if server.ready else False
                    if not server.ready:  # said once, in the run's output: why every worker starts fresh
                        print(f"verify: workers start as fresh interpreters: {server.why}", file=sys.stderr,
                              flush=True)
            return self.forks or None

    def take(self, key: tuple[str, str]) -> _Worker | None:
        """A waiting worker of this variant and GPU that is still alive (None: start one)."""
        with self.lock:
            pool = self.idle.get(key, [])
            while pool:
                w = pool.pop()
                if w.proc.poll() is None:
                    self.active.add(w)
                    return w
                w.close()
        return None

    def give_back(self, key: tuple[str, str], w: _Worker) -> None:
        """``w`` finished its job: it waits for its variant's next unit. At most ``jobs`` workers wait;
        beyond that the one that waited longest ends."""
        with self.lock:
            self.active.discard(w)
            if self.cancel.is_set():
                w.kill()
                return
            w.since = time.monotonic()
            self.idle.setdefault(key, []).append(w)
            waiting = sorted((x for pool in self.idle.values() for x in pool), key=lambda x: x.since)
            for old in waiting[: max(0, len(waiting) - self.jobs)]:
                self._end(old)

    def retire(self, variant: str) -> None:
        """The variant has no unit left: its waiting workers end now (not at the end of the run)."""
        with self.lock:
            for key in [k for k in self.idle if k[0] == variant]:
                for w in list(self.idle[key]):
                    self._end(w)

    def _end(self, w: _Worker) -> None:  # with the lock held
        for pool in self.idle.values():
            if w in pool:
                pool.remove(w)
        w.end()
        self.ending.append(w)

    def close_idle(self) -> None:
        """End the waiting workers (end of input: they exit, side by side), reap every ended one (killed
        after ``END_WAIT`` seconds) and remove their stderr files."""
        with self.lock:
            for w in [w for pool in self.idle.values() for w in pool]:
                self._end(w)
            self.idle.clear()
            ending, self.ending = self.ending, []
            log_dir, self.log_dir = self.log_dir, None
            forks, self.forks = self.forks, None
        deadline = time.monotonic() + END_WAIT
        for w in ending:
            w.close(wait=max(0.1, deadline - time.monotonic()))
        if forks:  # after the workers: it reaped them and sent their exit codes
            forks.close()
        if log_dir is not None:
            for p in log_dir.iterdir():
                p.unlink(missing_ok=True)
            log_dir.rmdir()

    def add_baselines(self, found: dict) -> None:
        with self.lock:
            self.baselines.update(found)

    def baselines_now(self) -> dict:
        with self.lock:
            return dict(self.baselines)

    def stop(self) -> None:
        """Cancel the run: no new worker starts, every live one is killed (Ctrl-C, an error)."""
        self.cancel.set()
        with self.lock:
            for w in [*self.active, *(w for pool in self.idle.values() for w in pool)]:
                w.kill()


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "unknown signal"
        return f"killed by signal {-code} ({name})"
    return f"exited with code {code}"


def _tail(path: Path, lines: int = TAIL_LINES) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode(errors="replace")
    except OSError as exc:
        return f"(stderr unreadable: {exc})"
    return "\n".join(text.splitlines()[-lines:])


def headline(tail: str) -> str:
    """The most telling line of a dead worker's stderr: faulthandler's "Fatal Python error" line,
    else the last line that is not faulthandler's list of extension modules."""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    fatal = [ln for ln in lines if ln.startswith("Fatal Python error")]
    if fatal:
        return fatal[-1]
    rest = [ln for ln in lines if not ln.startswith("Extension modules:") and not ln.startswith("numpy.")]
    return rest[-1] if rest else "(no stderr)"


class _Worker:
    """One worker process of one variant, with its result pipe and its stderr file; it takes jobs (a
    kind and cases of its variant) one after the other."""

    def __init__(self, variant: str, cfg: WorkerConfig, log_dir: Path, slot: int = 0) -> None:
        read_fd, write_fd = os.pipe()
        self.variant = variant
        self.log = Path(tempfile.mkstemp(prefix=f"worker-{variant}-", suffix=".log", dir=log_dir)[1])
        server = cfg.fork_server()
        self.proc = None
        if server is not None:  # forked from the process that imported torch and FLA (forkserver.py)
            job_r, job_w = os.pipe()
            try:
                self.proc = server.spawn(self.log, worker_env(cfg.jobs, slot, cfg.gpus), job_r, write_fd)
            finally:
                os.close(job_r)
            if self.proc is None:
                os.close(job_w)
            else:
                self.proc.stdin = open(job_w, "wb")  # noqa: SIM115 - closed by end()
        if self.proc is None:
            env = {**os.environ, **worker_env(cfg.jobs, slot, cfg.gpus),
                   "WKVBENCH_RESULT_FD": str(write_fd), "PYTHONFAULTHANDLER": "1"}
            with self.log.open("wb") as err:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "wkvbench.run._worker"], stdin=subprocess.PIPE, stdout=err,
                    stderr=err, pass_fds=(write_fd,), env=env, cwd=os.getcwd(), start_new_session=True)
        os.close(write_fd)
        self.fd = read_fd
        self.buf = b""
        self.jobs = 0
        self.cpu_s = 0.0  # the CPU seconds it reported at the end of its previous job
        self.compiles: dict = {}  # its compile counts at the end of its previous job (run/compiles.py)
        self.shared: dict = {}  # its shared-baseline counts then (judge/shared_baselines.py)
        self.since = time.monotonic()  # when it began to wait for a job

    def send(self, cases: list[Case], cfg: WorkerConfig, kind: str) -> None:
        self._write({"cases": [c.id for c in cases], "kind": kind, "baselines": cfg.baselines_now(),
                     "oracle_dir": cfg.oracle_dir}, cfg)

    def send_probe(self, names: list[str], cfg: WorkerConfig) -> None:
        """A probe job: the availability of each of ``names``, one after another (``run/probes.py``)."""
        self._write({"probe": names}, cfg)

    def _write(self, job: dict, cfg: WorkerConfig) -> None:
        """One job, with the registry the worker reproduces (the plug-ins and options of the parent's)."""
        job = {"variant": self.variant, "plugins": cfg.plugins, "entry_points": cfg.entry_points,
               "mutants": cfg.mutants, "fib": cfg.fib, **job}
        assert self.proc.stdin is not None
        self.jobs += 1
        try:
            self.proc.stdin.write(json.dumps(job).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # died: reported by the reader

    def messages(self, timeout: float) -> Iterator[dict | None]:
        """Messages as they come; ``None`` once when nothing arrived within ``timeout``; ends at EOF."""
        while True:
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                yield json.loads(line)
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                yield None
                continue
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return
            self.buf += chunk

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the worker and anything it started
        except (ProcessLookupError, PermissionError):
            pass

    def end(self) -> None:
        """End of input: a waiting worker exits."""
        try:
            if self.proc.stdin is not None and not self.proc.stdin.closed:
                self.proc.stdin.close()
        except BrokenPipeError:
            pass

    def close(self, wait: float = 30.0) -> int:
        """End of input, then its exit code (killed after ``wait`` seconds)."""
        self.end()
        os.close(self.fd)
        try:
            code = self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.wait()
        return code


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def one_thread() -> dict[str, str]:
    """BLAS and OpenMP at one thread a process, for a verification that shares the machine with others
    (``wkvbench gpu``'s own folders beside the main verification): its workers keep it (``worker_env``)
    instead of taking cores / jobs threads each, which assumes the machine is theirs alone."""
    return {var: "1" for var in THREAD_VARS}


def worker_env(jobs: int, slot: int, gpus: int) -> dict[str, str]:
    """What a worker's environment adds for its share of the machine: BLAS/OpenMP threads, cores over
    workers (unless the caller set them: ``jobs`` NumPy oracles with a thread per core each once
    loaded a 16-core box to 70), and with ``gpus`` > 0 the one GPU it sees, round robin by ``slot``."""
    env = {}
    threads = str(max(1, (os.cpu_count() or 1) // max(1, jobs)))
    for var in THREAD_VARS if jobs > 1 else ():  # one worker: the libraries' own defaults, as in-process
        if var not in os.environ:
            env[var] = threads
    if gpus > 0:
        env["CUDA_VISIBLE_DEVICES"] = gpu_of(slot, gpus)
    return env


def gpu_of(slot: int, gpus: int) -> str:
    """The ``CUDA_VISIBLE_DEVICES`` value of worker ``slot`` spread round robin over ``gpus`` GPUs, in the
    box's own numbering when the caller already narrowed it (``CUDA_VISIBLE_DEVICES=4,6``)."""
    visible = [x for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if x.strip()]
    return visible[slot % gpus] if len(visible) >= gpus else str(slot % gpus)


def run_variant(variant: str, cases: list[Case], cfg: WorkerConfig,
                kind: str | None = None, slot: int = 0) -> Iterator[CheckResult]:
    """Every case of ``variant``, each checked (``kind``: "forward" or "backward"; default from
    ``cfg.backward``) in a worker process; yields results in case order. ``slot`` picks the worker's GPU
    when ``cfg.gpus`` is set.

    Baseline errors the workers report are added to ``cfg.baselines`` for the next variants.
    """
    kind = kind or ("backward" if cfg.backward else "forward")
    key = (variant, gpu_of(slot, cfg.gpus) if cfg.gpus > 0 else "")
    for res in _run_variant(variant, cases, cfg, kind, slot, key):
        if cfg.gpus > 1:
            res.gpu = key[1]  # which GPU of the box (provenance's gpu.devices)
        yield res


def _run_variant(variant: str, cases: list[Case], cfg: WorkerConfig, kind: str, slot: int,
                 key: tuple[str, str]) -> Iterator[CheckResult]:
    todo = list(cases)
    while todo and not cfg.cancel.is_set():
        w = cfg.take(key)
        unit = f"{variant}|{kind}|{cases[0].dtype}" if cases else variant
        if w is None:
            w = _Worker(variant, cfg, cfg.logs(), slot)
            with cfg.lock:
                cfg.active.add(w)
                cfg.workers[unit] = cfg.workers.get(unit, 0) + 1
        w.send(todo, cfg, kind)
        t_case, ready, timed_out, self_reported, finished = time.perf_counter(), False, False, False, False
        for msg in w.messages(cfg.timeout):
            if msg is None:
                timed_out = True
                w.kill()
                break
            if "ready" in msg:
                ready, t_case = True, time.perf_counter()
                continue
            if "alive" in msg:  # a round of a configuration sweep: the case is still making progress
                continue
            if "done" in msg:
                finished = True
                if "cpu_s" in msg:  # the worker's CPU since its previous job (its start, for the first)
                    with cfg.lock:
                        cfg.cpu[unit] = round(cfg.cpu.get(unit, 0.0) + msg["cpu_s"] - w.cpu_s, 2)
                    w.cpu_s = msg["cpu_s"]
                # its Triton compile calls and shared baselines since its previous job (its counts add up)
                for name, counted in (("compiles", cfg.compiles), ("shared", cfg.shared)):
                    now = msg.get(name) or {}
                    before = getattr(w, name)
                    if any(x != before.get(k, 0) for k, x in now.items()):
                        with cfg.lock:
                            got = counted.setdefault(unit, {})
                            for k, x in now.items():
                                got[k] = round(got.get(k, 0) + x - before.get(k, 0), 3)
                    setattr(w, name, now)
                break
            cfg.add_baselines(msg.get("baseline") or {})
            res = CheckResult.from_dict(msg["result"])
            self_reported = res.status == CRASH
            if self_reported:
                res.stderr_tail = _tail(w.log)
            todo.pop(0)
            t_case = time.perf_counter()
            yield res
        if finished:  # every case done: the worker waits for the variant's next unit
            cfg.give_back(key, w)
            break
        code = w.close()
        tail = _tail(w.log)
        w.log.unlink(missing_ok=True)
        with cfg.lock:
            cfg.active.discard(w)
        if not todo or cfg.cancel.is_set():
            break
        if code == CUDA_EXIT and not timed_out and self_reported:
            continue  # it reported its CUDA error as CRASH itself: a fresh worker takes the rest
        case = todo.pop(0)
        last = headline(tail)
        if timed_out:
            what = "starting the worker" if not ready else "this case"
            res = CheckResult(variant, case, TIMEOUT,
                              f"no result after {cfg.timeout:g} s ({what}); worker killed; "
                              f"last stderr: {last}",
                              seconds=time.perf_counter() - t_case, kind=kind, stderr_tail=tail)
        elif not ready and w.jobs == 1:
            res = CheckResult(variant, case, CRASH, f"worker failed to start: {_describe_exit(code)}: {last}",
                              kind=kind, stderr_tail=tail)
            yield res
            for c in todo:  # the same start-up would fail again: report, do not retry
                yield CheckResult(variant, c, CRASH, res.reason, kind=kind, stderr_tail=tail)
            break
        else:
            res = CheckResult(variant, case, CRASH,
                              f"worker {_describe_exit(code)} while running this case: {last}",
                              seconds=time.perf_counter() - t_case, kind=kind, stderr_tail=tail)
        yield res


__all__ = ["DEFAULT_TIMEOUT", "TAIL_LINES", "WorkerConfig", "default_jobs", "default_timeout", "gpu_of",
           "run_variant", "worker_env"]
