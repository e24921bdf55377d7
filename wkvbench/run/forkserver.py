"""Verify workers forked from one process that imported torch and the kernel packages once.

A fresh worker (``python -m wkvbench.run._worker``) imports torch, the registry and its variant's package
before its first case: on the 2-core CPU machine about 1.7 s of CPU for torch alone and 4 s with FLA
(``import fla.ops`` pulls in torch's dynamo and inductor), in every one of the 50 workers of ``nox -s
verify``: about 110 of its 295 worker CPU seconds (2026-11-28, ``unit_cpu_s``, a unit's first dtype less
its others). Here those imports happen once, in a *fork server* (``python -m wkvbench.run._worker --fork-server``,
started by the parent of the run with the workers' environment), and each worker is a ``fork`` of it,
which runs ``_worker.main()`` exactly as a fresh worker would: its own process, its own session (the
parent kills its process group), its job pipe as stdin, its stderr file, its result descriptor. A worker
still runs one variant only, so a segfault, an ``abort()`` or a hang still ends that variant's worker alone.

Only where forking is safe: Linux, and a server that never touched the GPU. The server only imports, it
never runs an operation (no thread pool, no CUDA context, nothing to copy into a child half-made).
- With a CPU build of torch it preloads numpy, the registry (``wkvkernels``), the judge and the worker's
  modules, torch, and FLA (``fla.ops``, through ``wkvkernels._fla_env.fla_reason``) where it imports.
- With a GPU build it preloads what imports without the GPU: numpy, torch, Triton, torch's dynamo and
  inductor (which FLA's ops and the serving forks import), the registry, the judge and the worker's modules;
  not FLA, which asks for the device's name as it is imported. After preloading, a server that initialised
  CUDA (a child of a process that did cannot use it), runs a Python thread besides its own, or whose test
  fork cannot make a CUDA context, declines. Each worker makes its own CUDA context, as a
  fresh one does, on the GPU its environment names (its ``CUDA_VISIBLE_DEVICES`` is set before anything in
  it loads the driver). On the fresh one-GPU H200 run of 2026-11-29 every verify worker was a fresh
  interpreter, one for each of its 190 Triton units; a worker's imports and CUDA set-up cost about 6 CPU
  seconds (``gdn.fla.naive_chunk``'s first unit 6.35, its next two 0.35 and 0.33).
- Anywhere else, or with ``WKVBENCH_FORK=0``, the server says why it declines, and every worker starts
  fresh as before. Nothing else (keras, MLX, ggml, transformers, FLA on a GPU) is preloaded: the workers
  that use them import them.

Protocol (an ``AF_UNIX`` ``SOCK_SEQPACKET`` pair): the parent sends ``{"log": path, "env": {...}}`` with
two descriptors (the read end of the worker's job pipe, the write end of its result pipe); the server
forks, waits until the child has its own session, and answers ``{"pid": n}``. When a child ends the
server reaps it and sends ``{"exit": n, "code": c}`` (``c`` as ``Popen.returncode``: negative for a
signal). Its first message is ``{"ready": bool, "why": str}``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from wkvkernels import config

MAX_MSG = 1 << 16


def _send(sock: socket.socket, msg: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(msg).encode()
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.send(data)


# ---- the server process ----------------------------------------------------------------------------------

# A GPU build of torch: what imports without the driver, in this order (``_preload``)
GPU_PRELOAD = ("triton", "torch._dynamo")  # dynamo imports inductor


def _preload() -> str | None:
    """Import what every worker imports; None when forking from here is safe, else why not."""
    import importlib

    importlib.import_module("numpy")
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        torch = None
    gpu = torch is not None and (torch.version.cuda is not None or getattr(torch.version, "hip", None))
    if gpu and (why := _unsafe(test_fork=False)):  # its test fork once, after all the imports
        return f"after importing torch {torch.__version__}: {why}"
    for name in ("wkvkernels", "wkvbench.judge.check", "wkvbench.run._worker", "wkvbench.run.verify"):
        importlib.import_module(name)  # the registry (built-in variants), the judge, the worker
    if gpu:
        for name in GPU_PRELOAD:
            try:
                importlib.import_module(name)
            except ImportError:
                pass  # a worker that needs it says so itself
        return _unsafe()
    if torch is not None:
        from wkvkernels._fla_env import fla_reason

        fla_reason()  # imports fla.ops where it can (FLA's variants call it first thing)
    return None


def _unsafe(test_fork: bool = True) -> str | None:
    """Why a fork of this process could not be a worker that uses the GPU, None where it can: CUDA initialised
    here (a child of a process that initialised it cannot use it), a Python thread besides this one (a fork
    copies only the thread that forks, whatever locks the others held; the BLAS libraries' native pools
    re-make themselves in a child, as on the CPU path), or, with ``test_fork``, a fork that cannot make a CUDA
    context and run on it (``_fork_uses_cuda``). The driver's library in this process's memory says nothing:
    importing torch 2.11's CUDA build maps ``libcuda`` without initialising it (H200, 2026-11-29)."""
    import torch

    if threading.active_count() > 1:
        others = ", ".join(t.name for t in threading.enumerate() if t is not threading.main_thread())
        return (f"{threading.active_count() - 1} Python threads started while preloading ({others}): "
                "workers start as fresh processes")
    if torch.cuda.is_initialized():
        return "CUDA was initialised while preloading: workers start as fresh processes"
    return _fork_uses_cuda() if test_fork else None


def _fork_uses_cuda() -> str | None:
    """A fork of this process makes a CUDA context, allocates and synchronizes (about a second, once a
    server): None where it did, else why not."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            import torch

            torch.zeros(1, device="cuda").add_(1)
            torch.cuda.synchronize()
            code = 0
        except BaseException as exc:  # noqa: BLE001 - said in the server's log, then the code says it
            print(f"fork server: a fork could not use CUDA: {type(exc).__name__}: {exc}", file=sys.stderr,
                  flush=True)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return None
    return f"a fork of the server could not use CUDA (exit code {code}; its log says why): fresh workers"


def serve(ctl: socket.socket) -> dict | None:
    """The server's loop; None when it ends (the parent closed its end), the request in a forked child, which
    then runs ``_worker.main()`` (or, for a request with ``argv``, the ``wkvbench`` command) from the module's
    top (the stack of a fresh worker: a crash's traceback in its stderr file is no deeper)."""
    try:
        why = _preload()
    except Exception as exc:  # noqa: BLE001 - the parent falls back to fresh workers
        why = f"preloading failed: {type(exc).__name__}: {exc}"
    _send(ctl, {"ready": why is None, "why": why or ""})
    if why is not None:
        return None
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    while True:
        try:
            ready, _, _ = select.select([ctl, wake_r], [], [])
        except InterruptedError:
            continue
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
            _reap(ctl)
        if ctl in ready:
            msg, fds, _, _ = socket.recv_fds(ctl, MAX_MSG, 2)
            if not msg:
                return None  # the parent closed its end (end of run, or it died): the workers end on EOF
            req = json.loads(msg)
            try:
                pid = _fork(req, fds, ctl, (wake_r, wake_w))
            finally:
                for fd in fds:
                    os.close(fd)
            if pid == 0:
                return req  # the worker
            _send(ctl, {"pid": pid})
        _reap(ctl)


def _reap(ctl: socket.socket) -> None:
    while True:
        try:
            pid, status, ru = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(ctl, {"exit": pid, "code": os.waitstatus_to_exitcode(status),
                    "cpu": round(ru.ru_utime + ru.ru_stime, 3)})


def _fork(req: dict, fds: list[int], ctl: socket.socket, close: tuple[int, ...]) -> int:
    """Fork a worker: 0 in the worker (set up as ``isolate._Worker`` starts a fresh one; a command, ``argv``
    in ``req``, with no descriptors, reads nothing), its pid here once it has its own session."""
    job_r, result_w = fds if fds else (None, None)
    sync_r, sync_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        os.close(sync_w)
        os.read(sync_r, 1)  # EOF once the child called setsid (or died)
        os.close(sync_r)
        return pid
    try:
        os.setsid()  # its own session and process group, as start_new_session=True
        os.close(sync_w)  # the server's read sees EOF: the group exists
        os.close(sync_r)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in (ctl.detach(), *close):  # detached: the socket object closes nothing when collected
            os.close(fd)
        log = os.open(req["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        if job_r is None:  # a command: nothing to read
            job_r = os.open(os.devnull, os.O_RDONLY)
        else:
            fds.remove(job_r)  # closed here: the caller closes the rest (none in the worker)
        os.dup2(job_r, 0)  # sys.stdin reads fd 0
        os.close(job_r)
        os.environ.update(req["env"])
        if result_w is not None:
            os.environ.update({"WKVBENCH_RESULT_FD": str(result_w)})
            fds.remove(result_w)  # the worker's result descriptor: kept open
        import faulthandler

        faulthandler.enable()  # a crash's "Fatal Python error" into the worker's stderr file
    except BaseException:  # noqa: BLE001 - a worker that cannot be set up ends; the parent sees it die
        import traceback

        traceback.print_exc()
        os._exit(1)
    return 0


def end_worker(code: object) -> None:
    """The forked worker's exit, as a fresh interpreter's: ``atexit`` handlers, buffers flushed, the code
    (``sys.exit`` semantics: None is 0, a message is printed and is 1)."""
    try:
        if not isinstance(code, (int, type(None))):
            print(code, file=sys.stderr)
            code = 1
        import atexit

        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code or 0)


def main(fd: int) -> dict | None:
    """The server on its end ``fd`` of the parent's socket pair; the request in a forked child (see
    ``serve``). Its entry point is the worker's own module (``python -m wkvbench.run._worker --fork-server
    FD``), which then runs ``_worker.main()`` in a forked worker, or ``run_command``: this module imports
    nothing of the worker's."""
    return serve(socket.socket(fileno=fd))


def run_command(argv: list[str]) -> object:
    """A forked child's ``wkvbench`` command (``python -m wkvbench *argv``, as ``ForkServer.run`` asked), run
    as ``-m`` runs it (``runpy``: ``wkvbench/__main__.py`` sets ``WKVBENCH_CUDA_WAIT`` up before anything
    makes a CUDA context): what ``sys.exit`` was given."""
    import runpy

    sys.argv = ["wkvbench", *argv]
    try:
        runpy.run_module("wkvbench", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return exc.code
    return 0


# ---- the parent's side -----------------------------------------------------------------------------------

def enabled() -> bool:
    """Whether the parent tries a fork server at all (the server may still decline). Workers spread over
    GPUs too: each names its own in its environment before it loads the driver."""
    return sys.platform.startswith("linux") and config.fork_workers()


class ForkServer:
    """The parent's handle on a fork server: ``spawn`` a worker; ``close`` at the end of the run."""

    def __init__(self, env: dict[str, str], log: Path, timeout: float) -> None:
        self.sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = log
        with log.open("wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "wkvbench.run._worker", "--fork-server",
                                          str(child.fileno())],
                                         stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                         pass_fds=(child.fileno(),), env=env, cwd=os.getcwd(),
                                         start_new_session=True)
        child.close()
        self.lock = threading.Lock()  # one request at a time
        self.cond = threading.Condition()
        self.cpu_s = 0.0  # the server's own CPU seconds, once closed
        self.codes: dict[int, int] = {}
        self.cpu: dict[int, float] = {}  # pid -> CPU seconds of an ended child (its own children included)
        self.replies: list[int] = []
        self.dead = False
        self.sock.settimeout(timeout)
        try:
            first = json.loads(self.sock.recv(MAX_MSG) or b"{}")
        except (OSError, ValueError):
            first = {}
        self.sock.settimeout(None)
        self.ready = bool(first.get("ready"))
        self.why = first.get("why") or "the fork server did not start"
        if not self.ready:
            self.close()
            return
        self.reader = threading.Thread(target=self._read, name="wkvbench-forkserver", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(MAX_MSG)
            except OSError:
                data = b""
            with self.cond:
                if not data:
                    self.dead = True
                    self.cond.notify_all()
                    return
                msg = json.loads(data)
                if "exit" in msg:
                    self.codes[msg["exit"]] = msg["code"]
                    self.cpu[msg["exit"]] = msg.get("cpu", 0.0)
                else:
                    self.replies.append(msg["pid"])
                self.cond.notify_all()

    def spawn(self, log: Path, env: dict[str, str], job_r: int, result_w: int) -> ForkedProc | None:
        """A worker forked with ``job_r`` as its stdin and ``result_w`` as its result descriptor (both left
        open here for the caller to close), or None when the server is gone."""
        return self._request({"log": str(log), "env": env}, [job_r, result_w])

    def run(self, log: Path, env: dict[str, str], argv: list[str]) -> ForkedProc | None:
        """``python -m wkvbench *argv`` as a fork (stdin empty, stdout and stderr appended to ``log``, ``env``
        over the server's environment), or None when the server is gone."""
        return self._request({"log": str(log), "env": env, "argv": list(argv)}, [])

    def _request(self, msg: dict, fds: list[int]) -> ForkedProc | None:
        with self.lock:
            if self.dead:
                return None
            try:
                _send(self.sock, msg, fds)
            except OSError:
                return None
            with self.cond:
                self.cond.wait_for(lambda: self.replies or self.dead)
                if not self.replies:
                    return None
                return ForkedProc(self, self.replies.pop(0))

    def returncode(self, pid: int, timeout: float | None) -> int | None:
        """The exit code of worker ``pid``, None while it runs after ``timeout`` seconds."""
        deadline = time.monotonic() + (30.0 if timeout is None else timeout)
        with self.cond:
            while pid not in self.codes and not self.dead:
                left = None if timeout is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self.cond.wait(left)
            if pid in self.codes:
                return self.codes[pid]
        while _alive(pid):  # the server died: init reaps its children, no exit code to read
            if time.monotonic() > deadline:
                return None if timeout is not None else 1
            time.sleep(0.05)
        return 1

    def close(self) -> None:
        try:  # the server exits on EOF; its children end at the end of their input
            self.sock.shutdown(socket.SHUT_RDWR)  # also wakes the reader thread
        except OSError:
            pass
        try:
            self.sock.close()
        finally:
            self.cpu_s = self._reap(timeout=10.0)

    def _reap(self, timeout: float) -> float:
        """Wait for the server's end (killed after ``timeout`` seconds); its CPU seconds, its preloading's
        (about 11 on an H200 box, 2026-11-29) and its test fork's, which no fork's own seconds hold. What
        ``wait4`` gives for the server holds the forks it reaped too, whose seconds it reported one by one
        (``cpu``) and the caller counted already: those are taken off. At 10fa6ba they were not, and the side
        tasks' CPU read 3,947 s where their forks' own was about 2,000 (the fresh H200 run of 2026-11-29)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                pid, status, ru = os.wait4(self.proc.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere
                self.proc.wait()
                return 0.0
            if pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                with self.cond:
                    forks = sum(self.cpu.values())
                return round(max(0.0, ru.ru_utime + ru.ru_stime - forks), 3)
            if time.monotonic() > deadline:
                self.proc.kill()
                deadline = float("inf")
            time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ForkedProc:
    """What ``isolate._Worker`` uses of a ``Popen``, for a forked worker: ``pid``, ``stdin``, ``poll``,
    ``wait``. Its exit code comes from the server, which reaped it."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server, self.pid, self.stdin = server, pid, None
        self.returncode: int | None = None
        self.cpu_s = 0.0  # its CPU seconds once it ended (as the server reaped it)

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.returncode(self.pid, 0)
            self._ended()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self.server.returncode(self.pid, timeout)
            self._ended()
        if self.returncode is None:
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0)
        return self.returncode

    def _ended(self) -> None:
        if self.returncode is not None:
            self.cpu_s = self.server.cpu.get(self.pid, 0.0)
