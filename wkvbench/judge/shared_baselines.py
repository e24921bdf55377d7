"""The in-tree baseline's errors, shared by every verification of one ``wkvbench gpu`` run.

A variant's error is bounded by ``factor`` times the baseline's on the same case (``check.Checker.baseline``,
``check_backward``'s ``grad:`` errors). Within one verification the baselines' units start first and the
parent hands their errors to every worker it starts next. The own folders' verifications (rwkv-fla,
FlashQLA, vLLM: ``--own-env``) are other processes with other parents, started beside the main one, and
measured each baseline again in each worker that needed it: ``<op>.torch.recurrent``'s backward is a
Python loop over the tokens, and on the warm one-GPU H200 run of c6a6724
(``reports/gpu/h200-2026-11-29-threaded-bench/diagnostics/warm/``) rwkv-fla's backward cases took 5-30 s
each (``wkv4/model/B2-T300-H1-N256-h0/bf16`` 29.5 s, ``wkv6/model/B2-T37-H2-N128-h0/bf16`` 15.8 s) where
FLA's same cases, which had received the errors, took 0.1-0.3 s. rwkv-fla's verification ran 137.2 s, the
longest of the run's verifications, and spent 500 CPU seconds.

So ``wkvbench gpu`` names a folder in ``WKVBENCH_BASELINES`` for all its processes, and there:

* every worker that measures a baseline's errors on a case's generated inputs writes them to a file named by
  the key (:meth:`SharedBaselines.put`; the first one written stays), None where the baseline did not pass;
* a worker about to measure a baseline first reads that file (:meth:`SharedBaselines.wait`), and where a
  verification has announced that its baseline unit will measure it (:meth:`SharedBaselines.expect`), it
  waits for that, at most :data:`WAIT_MAX_S` and only while the announcing process lives;
* a verification announces its baseline units' keys as it starts them (``run/verify.py``) and withdraws what
  is left of them as each unit ends (:meth:`SharedBaselines.settle`).

The folder is scoped by torch's version: an own folder with a torch of its own (vLLM's may have one) measures
its baselines itself. A worker's counts (:func:`counters`: found, waited seconds, measured) go to verify.json
as ``unit_baselines``. Errors are the same numbers whoever measures them: the same case, inputs, baseline and
GPU model; a verification without the variable (``nox -s verify``, a single ``wkvbench verify``) shares
nothing beyond its own parent's hand-over.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path

ENV = "WKVBENCH_BASELINES"  # a folder; wkvbench gpu sets it for every process it starts
WAIT_MAX_S = 120.0  # the longest a worker waits for an announced baseline before measuring it itself
POLL_S = 0.2

_counts = {"found": 0, "waited_s": 0.0, "measured": 0}
_lock = threading.Lock()


def counters() -> dict:
    """This process's shared-baseline counts so far: keys found in the folder, seconds waited for announced
    ones, baselines measured here and written to it."""
    with _lock:
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in _counts.items()}


def _count(key: str, by: float) -> None:
    with _lock:
        _counts[key] += by


def _torch_scope() -> str:
    try:
        from importlib import metadata

        return "torch-" + metadata.version("torch").replace("+", "_")
    except Exception:  # noqa: BLE001 - no torch distribution found: a scope of its own
        return "torch-none"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


class SharedBaselines:
    """The folder of one run's shared baseline errors (see the module docstring)."""

    def __init__(self, folder: str | os.PathLike, scope: str | None = None) -> None:
        self.dir = Path(folder) / (scope or _torch_scope())
        self.dir.mkdir(parents=True, exist_ok=True)

    @classmethod
    def from_env(cls, environ=None) -> SharedBaselines | None:
        folder = (os.environ if environ is None else environ).get(ENV)
        if not folder:
            return None
        try:
            return cls(folder)
        except OSError:  # an unwritable folder: nothing shared, nothing lost
            return None

    def _path(self, key: str, kind: str) -> Path:
        return self.dir / f"{hashlib.sha1(key.encode()).hexdigest()[:24]}.{kind}"

    def get(self, key: str) -> tuple[bool, dict | None]:
        """``(True, errors)`` where ``key``'s errors are in the folder (``errors`` None: the baseline did not
        pass there), else ``(False, None)``."""
        try:
            doc = json.loads(self._path(key, "json").read_text())
        except (OSError, ValueError):
            return False, None
        if doc.get("key") != key:  # a digest collision: not ours
            return False, None
        return True, doc.get("errors")

    def put(self, key: str, errors: dict | None) -> None:
        """Write ``key``'s errors unless they are there already (renamed into place: a reader sees the whole
        file or none). Never raises: a shared cache."""
        path = self._path(key, "json")
        if path.exists():
            return
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            tmp.write_text(json.dumps({"key": key, "errors": errors, "pid": os.getpid()}))
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)

    def expect(self, keys) -> None:
        """Announce that this process's baseline units will measure ``keys``."""
        me = str(os.getpid())
        for key in keys:
            try:
                self._path(key, "expected").write_text(me)
            except OSError:
                pass

    def settle(self, keys) -> None:
        """Withdraw the announcements of ``keys`` (a unit ended, whatever it measured)."""
        for key in keys:
            self._path(key, "expected").unlink(missing_ok=True)

    def _announced(self, key: str) -> bool:
        try:
            pid = int(self._path(key, "expected").read_text().strip() or 0)
        except (OSError, ValueError):
            return False
        return pid > 0 and _alive(pid)

    def wait(self, key: str, max_s: float = WAIT_MAX_S) -> tuple[bool, dict | None]:
        """:meth:`get`, waiting while ``key`` is announced by a live process, at most ``max_s`` seconds."""
        t0 = time.monotonic()
        found = self.get(key)
        while not found[0] and time.monotonic() - t0 < max_s and self._announced(key):
            time.sleep(POLL_S)
            found = self.get(key)
        if found[0]:
            _count("found", 1)
        _count("waited_s", time.monotonic() - t0)
        return found

    def measured(self, key: str, errors: dict | None) -> None:
        """A baseline measured in this process: written for the others, and counted."""
        _count("measured", 1)
        self.put(key, errors)


def baseline_unit_keys(unit: tuple[str, str, str], cases) -> list[str]:
    """The keys a baseline variant's unit ``(variant, kind, dtype)`` measures on ``cases``: a forward unit
    each case's errors (``Checker.check``), a backward unit each case's gradient errors
    (``check_backward``)."""
    kind = unit[1]
    if kind == "forward":
        return [c.id for c in cases]
    if kind == "backward":
        return ["grad:" + c.id for c in cases]
    return []
