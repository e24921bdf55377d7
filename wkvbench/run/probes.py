"""A verification's availability probes, in processes of their own: one per package, its variants one after
another, the packages side by side.

An isolated verification asks each variant's availability before its units start (a unit of an unavailable
variant is skipped without a worker). A probe imports the variant's package, and some build a CUDA extension
(rwkv-ops, ChatRWKV, ours: about a minute each on a fresh box), so they ran side by side, in threads of the
parent. Python's imports are not safe there: two threads importing one package, or one importing a module
while another asks ``importlib.util.find_spec`` about its namespace, can see it half initialized. On the
one-GPU H200 runs of 2bf9428 (2026-11-29) that turned three available variants into SKIPs, each with a
false reason, none of them in the run before: the fresh run's ``gdn.rwkv_ops.triton_chunk`` ("No module named
'rwkv_ops.gdn_chunk.triton.utils'", 127 rows), the warm run's ``wkv7.rwkv7hf.recurrent.cuda`` ("No module
named 'rwkv7_hf.configuration_rwkv7'", 99 rows) and ``gdn.flashinfer.decode_bf16state`` ("cuda-python
(cuda-bindings) not installed", 126 rows). On this CPU, sixteen threads probing every variant of a fresh
interpreter gave 58-59 of 130 answers other than one thread's in each of six tries (FLA's variants read
"partially initialized module 'torch'"), and each of the six interpreters died of a segmentation fault at
its exit. And ``nox -s verify`` itself, on the 2-core CPU machine, read mlx-lm's two variants as SKIPs, 60
rows, "mlx-lm failed to import: ImportError: cannot import name 'AutoTokenizer' from 'transformers'": at
2bf9428 it gave 997 PASS and 79 XFAIL, with one process per package 1037 and 99 (a fresh clone, 2026-11-29).

So each package's variants are probed in one worker process (``_worker``'s probe job), in the order the
verification starts their units. It starts as the variants' workers do, forked from the run's fork server
where there is one, else a fresh interpreter, in the parent's environment: the answers are the ones the parent
would have had. They come back as they are made and are kept as the parent's own (``availability.remember``):
the parent imports none of the packages. A probe process that dies or hangs turns the variants it had not
answered into failed checks (their rows ERROR, with the process's exit and last stderr line), never into
SKIPs. A variant its probe process does not have (a plug-in that fails to load in a worker) is probed in the
parent, one at a time; its unit's worker then fails to start and says why.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

from wkvkernels.base import Availability, KernelVariant, availability

from .isolate import WorkerConfig, _describe_exit, _tail, _Worker, headline

# the longest a probe process may go without an answer: a probe may build CUDA extensions (a minute each)
PROBE_TIMEOUT_S = 1800.0
_IN_PROCESS = threading.Lock()  # the rare probe made in this process (a variant the probe process lacks)


def probe(names: list[str], objs: dict[str, KernelVariant], cfg: WorkerConfig,
          on_done=None) -> dict[str, Future]:
    """A future per name, resolved with its availability as its package's probe process answers (at once
    where this process knows it already). ``on_done(name)`` is called as each is known."""
    futures: dict[str, Future] = {}
    groups: dict[str, list[str]] = {}
    for name in names:
        fut = futures[name] = Future()
        if on_done is not None:
            fut.add_done_callback(lambda _f, n=name: on_done(n))
        if (known := availability.known(name)) is not None:
            fut.set_result(known)
        else:
            groups.setdefault(objs[name].source or "?", []).append(name)
    for source, group in groups.items():
        threading.Thread(target=_probe_package, args=(source, group, futures, cfg), daemon=True,
                         name=f"wkvbench-probe-{source}").start()
    return futures


def _probe_package(source: str, names: list[str], futures: dict[str, Future], cfg: WorkerConfig) -> None:
    left = list(names)
    why = "the run was stopped before it answered"
    w = None
    try:
        if cfg.cancel.is_set():
            return
        w = _Worker(f"probe-{source}", cfg, cfg.logs())
        with cfg.lock:
            cfg.active.add(w)
        w.send_probe(names, cfg)
        t0, timed_out = time.perf_counter(), False
        for msg in w.messages(max(cfg.timeout, PROBE_TIMEOUT_S)):
            if msg is None:
                timed_out = True
                w.kill()
                break
            if "done" in msg:
                break
            if "probed" in msg and msg["probed"] in left:
                name = msg["probed"]
                left.remove(name)
                if "unregistered" in msg:  # a plug-in loaded in the parent only: probed here, one at a time
                    with _IN_PROCESS:
                        futures[name].set_result(availability(name))  # its unit's worker then says why
                    continue
                answer = Availability(bool(msg["ok"]), msg.get("reason"), bool(msg.get("error")))
                futures[name].set_result(availability.remember(name, answer))
        code = w.close()
        tail = _tail(w.log)
        w.log.unlink(missing_ok=True)
        if left:
            how = (f"gave no answer in {time.perf_counter() - t0:.0f} s and was killed" if timed_out
                   else _describe_exit(code))
            why = f"its package's availability probe process {how}: {headline(tail)}"
    except Exception as exc:  # noqa: BLE001 - never lost: the variants' rows say it
        why = f"its package's availability probe could not run: {type(exc).__name__}: {exc}"
    finally:
        if w is not None:
            with cfg.lock:
                cfg.active.discard(w)
        for name in left:
            futures[name].set_result(availability.remember(name, Availability.failed(why)))
