"""Every timed row judged at its own shape against the float64 oracle, in the same run as its timing.

A row's gate case (``bench.gate_case``) is small; bugs that appear only at size (32-bit index
overflow, grid limits, chunk counts, long-sequence drift) would stay invisible there. So the row's
first call, on freshly prepared inputs of the benchmark shape (``bench.bench_inputs``) and before its
timed calls, is judged, its outputs against ``wkvoracle.FAST`` (the chunked float64
oracle, checked against the recurrences to 1e-12) with the tolerance table's ceilings. The
baseline's factor is not applied at size: running ``<op>.torch.recurrent`` there would cost more than
the benchmark. Known failures are matched on the row's case id, as in ``verify``.

The expensive parts run in a pool of worker processes, niced, so the timed process keeps its core:
the oracle of upcoming rows (prefetched a few rows ahead, one per case and input conversion: variants
whose ``effective_inputs`` is the contract's default share it), and the comparison. The timed
process only copies the first call's outputs back (float32 where exact: ``wkvkernels._torch.exact_float32``)
and hands them to a thread of its own, which writes them to the file the judge reads
(:func:`write_out`). A row reaches the results when its verdict has (``Bench`` streams it then), so a
stopped run re-measures the rows whose verdicts had not come back.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections import Counter
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from multiprocessing import get_context

import numpy as np

from wkvkernels.base import KernelVariant, get
from wkvkernels.cases import Case

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
BYTES_PER_ELEMENT = 8 * 16  # float64 inputs, their conversions, the oracle's work arrays and outputs


def converts(v: KernelVariant) -> bool:
    """Whether ``v`` has an ``effective_inputs`` of its own (not the contract's rounding to the dtype)."""
    return type(v).effective_inputs is not KernelVariant.effective_inputs


def oracle_key(v: KernelVariant, case: Case) -> str:
    """Rows share an oracle result when they see the same inputs: same case, and either the contract's
    own ``effective_inputs`` (the case's inputs rounded to its dtype) or the same variant."""
    return case.id + (f"|{v.name}" if converts(v) else "")


def job_bytes(case: Case) -> int:
    s = case.shape
    return BYTES_PER_ELEMENT * s.B * s.T * max(s.H, 1) * s.N


def pool_size(cases: list[Case], cores: int | None = None, mem_bytes: int | None = None,
              shards: int = 1) -> int:
    """Workers: all cores but two (the timed process and the host's own work), at most as many as
    half the available memory holds jobs of the largest shape, at least one; with ``shards`` bench
    processes on one box (one per GPU), each takes its share of the cores and the memory."""
    cores = (cores or os.cpu_count() or 2) // max(1, shards)
    mem_bytes = (mem_bytes or _available_memory()) // max(1, shards)
    biggest = max((job_bytes(c) for c in cases), default=1)
    return max(1, min(cores - 2, int(0.5 * mem_bytes // biggest)))


def _available_memory() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


# The judges' niceness: below the timed process's (0), above ggml's CUDA build (19, wkvbench/gpu/ggml.py),
# which a fresh run leaves building beside the bench. At 19 both shared the cores evenly: on the fresh H200
# run of 10fa6ba the build (756 s there) ran about 180 s into the bench, and the bench's last verdicts at
# size took 40.3 s after its rows (2.4 s on af3a1e2's run, whose build ended sooner). The build is wanted
# only after the benches (ggml-verify), the verdicts as the rows end.
JUDGE_NICE = 10


def _niced() -> None:
    try:
        os.nice(JUDGE_NICE)
    except OSError:
        pass


def _oracle_job(variant: str | None, case_id: str, path: str, threads: int) -> str:
    """The oracle of ``case_id`` at size, on the inputs as ``variant`` converts them (None: rounded to the
    case dtype, as the contract does), stored at ``path``."""
    from functools import partial

    from wkvkernels.ops import default_state, round_inputs
    from wkvoracle import FAST
    from wkvoracle.conventions import solve

    from .shapes import bench_inputs

    case = Case.parse(case_id)
    x = bench_inputs(case)
    eff = get(variant).effective_inputs(x, case.dtype) if variant else round_inputs(case.op, x, case.dtype)
    # in production conventions, the fast oracle per sequence, and what the judge needs of the inputs
    ref = solve(partial(FAST[case.op], workers=threads), {**default_state(case.op, eff), **eff},
                qkn=case.shape.qkn)
    ref.update({INPUT + n: np.asarray(x[n]) for n in CONVENTION_KEEP if n in x})
    save_arrays(path, ref)
    return path


INPUT = "input:"  # the inputs an oracle file carries for the judge of a case in production conventions
CONVENTION_KEEP = ("state_pool", "state_indices", "cu_seqlens")


def _judge_job(variant: str, case_id: str, out_path: str, ref_path: str,
               declared: dict[str, str] | None = None, state_precision: str = "fp32") -> dict:
    """``declared``, ``state_precision``: the variant's contract (its output dtypes' floors, its state)."""
    from ..judge.check import apply_limits, compare_outputs

    case = Case.parse(case_id)
    out = load_arrays(out_path)
    os.unlink(out_path)
    ref = load_arrays(ref_path)
    inputs = {n[len(INPUT):]: ref.pop(n) for n in list(ref) if n.startswith(INPUT)}
    res = apply_limits(compare_outputs(variant, case, out, ref, declared, None, state_precision, inputs), None)
    return verdict(res.status, res.reason, {k: e.rel for k, e in res.errors.items()},
                   {k: e.floor_x for k, e in res.errors.items()})


def verdict(status: str, reason: str = "", rel: dict | None = None, floor_x: dict | None = None) -> dict:
    return {"status": status, "reason": reason, "rel": rel or {}, "floor_x": floor_x or {},
            "oracle": "wkvoracle.FAST"}


def save_arrays(path: str, arrays: dict[str, np.ndarray]) -> None:
    """``arrays`` into one file as consecutive ``.npy`` records, their names first (:func:`load_arrays`).
    Not ``np.savez``: its zip computes a CRC over every byte, in the timed process. On an H100 box
    (16 cores, 2026-11-27, medians of 5) the prefill shape's output (67M elements as float32) took
    0.296 s in ``np.savez`` and 0.074 s here, the decode shape's state (34M) 0.215 s and 0.035 s; the
    judge's load 0.165 s and 0.069 s (``reports/gpu/h100-2026-11-27-at-size-handover/``)."""
    with open(path, "wb") as f:
        np.save(f, np.array(list(arrays), dtype=str))
        for x in arrays.values():
            np.save(f, x)


def load_arrays(path: str) -> dict[str, np.ndarray]:
    """What :func:`save_arrays` wrote."""
    with open(path, "rb") as f:
        return {str(n): np.load(f) for n in np.load(f)}


def compact(out: dict) -> dict:
    """Outputs to hand over: float32 where that is exact (a kernel's outputs are at most fp32), C-contiguous.
    ``np.save`` writes any other layout through a buffered iterator: FLA's final states, handed back as a
    transposed view (its K-last layout), took 0.78-1.08 s a decode row in the hand-over where sglang's, the same
    size and contiguous, took 0.04 s (H200, 2026-11-29, ``reports/gpu/h200-2026-11-29-at-size-first-call/``)."""
    packed = {}
    for k, x in out.items():
        x = np.asarray(x)
        x32 = _exact_float32(x) if x.dtype == np.float64 else None
        x = x if x32 is None else x32
        packed[k] = x if x.flags.c_contiguous else np.ascontiguousarray(x)
    return packed


def _exact_float32(x: np.ndarray, block: int = 1 << 20) -> np.ndarray | None:
    """``x`` as float32 if that loses nothing (NaN for NaN), else None; a block at a time, so a 67M-element
    output converts in one pass without full-size temporaries (0.4 s instead of 2.9 s on the 2-core
    machine; this runs in the timed process, once per row). Each block is compared by one ``!=`` (NaNs
    counted apart only where it finds a difference), not ``np.array_equal(..., equal_nan=True)``, which
    masks and copies: on the H100 box (2026-11-27, 3 runs) the prefill output took 0.17-0.20 s against
    0.24-0.31 s, the decode state 0.09 s against 0.12-0.13 s
    (``reports/gpu/h100-2026-11-27-at-size-handover/``)."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.shape, np.float32)
    differs = np.empty(min(block, flat.size), bool)
    for i in range(0, flat.size, block):
        a = flat[i:i + block]
        b = out[i:i + block]
        b[...] = a
        d = np.not_equal(b, a, out=differs[:len(a)])  # True at NaN (NaN stays NaN, nothing else becomes it)
        if d.any() and np.count_nonzero(d) != np.count_nonzero(np.isnan(a)):
            return None
    return out.reshape(x.shape)


def write_out(path: str, out: dict) -> float:
    """A row's outputs, made compact (:func:`compact`), into the file its judge reads; the seconds it took.
    This runs in a thread of the timed process while the row is timed: in the timed process's own path the
    hand-over took 19.3 of the 275 row seconds of the warm whole H200 run of 2026-11-29 (af3a1e2). NumPy's
    conversions and the file's writes release the GIL."""
    t0 = time.perf_counter()
    save_arrays(path, compact(out))
    return round(time.perf_counter() - t0, 3)


class SizeJudge:
    """The pool that judges rows at size, fed in plan order (see the module docstring)."""

    def __init__(self, plan: list[tuple[KernelVariant, Case]], workers: int | None = None,
                 ahead: int | None = None, shards: int = 1) -> None:
        self.workers = workers or pool_size([c for _, c in plan], shards=shards)
        self.threads = max(1, ((os.cpu_count() or 2) // max(1, shards) - 1) // self.workers)
        self.ahead = ahead or 2 * self.workers
        self.plan = [(v, c, oracle_key(v, c)) for v, c in plan]
        self.position = {(v.name, c.id): i for i, (v, c, _) in enumerate(self.plan)}
        self.uses = Counter(k for *_, k in self.plan)  # rows still to judge per oracle result
        self.tmp = tempfile.mkdtemp(prefix="wkvbench-at-size-")
        # one BLAS thread per worker (the oracle runs ``threads`` of its own): with the libraries' default
        # of a thread per core, 7 workers on a 16-core box ran about 200 threads beside the timed process.
        # Workers start as jobs arrive and read the variables at start, so they stay set until close().
        self._saved_env = {k: os.environ.get(k) for k in THREAD_VARS}
        os.environ.update(dict.fromkeys(THREAD_VARS, "1"))
        self.pool = ProcessPoolExecutor(self.workers, mp_context=get_context("spawn"), initializer=_niced)
        self.oracles: dict[str, Future] = {}
        self.pending: list[tuple[dict, Future | None, str]] = []  # (row, judge job, oracle key)
        self.writer = ThreadPoolExecutor(1, thread_name_prefix="wkvbench-at-size-out")  # write_out
        self.writes: dict[int, Future] = {}  # id(row) -> its outputs' write, until its judge job is given
        self.next = 0  # plan index up to which oracles are asked for
        self.broken = ""

    def _path(self, key: str, kind: str) -> str:
        import hashlib

        return os.path.join(self.tmp, f"{kind}-{hashlib.sha1(key.encode()).hexdigest()[:16]}.npys")

    def prefetch(self, v: KernelVariant, case: Case) -> None:
        """Ask for the oracles of the rows up to ``ahead`` past the row of ``v`` on ``case`` (none for a
        row outside the plan). Oracle results wait on disk until their rows are judged: the window
        bounds them (about 0.5 GB each at B8-T4096-H32-N64)."""
        at = self.position.get((v.name, case.id))
        if at is None:
            return
        while self.next < min(len(self.plan), at + self.ahead):
            v, case, key = self.plan[self.next]
            self.next += 1
            if key not in self.oracles and not self.broken:
                self.oracles[key] = self._oracle(v, case, key)

    def _oracle(self, v: KernelVariant, case: Case, key: str) -> Future | None:
        return self._submit(_oracle_job, v.name if converts(v) else None, case.id, self._path(key, "oracle"),
                            self.threads)

    def _submit(self, fn, *args) -> Future | None:
        try:
            return self.pool.submit(fn, *args)
        except Exception as exc:  # noqa: BLE001 - a broken pool (a worker killed) stops judging at size
            self.broken = f"{type(exc).__name__}: {exc}"
            return None

    def submit(self, row: dict, v: KernelVariant, case: Case, out: dict) -> None:
        """Judge ``out`` (canonical outputs of ``v`` at the row's shape) once the oracle is in."""
        key = oracle_key(v, case)
        if key not in self.oracles and not self.broken:
            self.oracles[key] = self._oracle(v, case, key)
        out_path = self._path(f"{key}|{v.name}|{id(row)}", "out")
        self.writes[id(row)] = self.writer.submit(write_out, out_path, out)
        from ..judge.check import declared_dtypes

        row["_at_size"] = (v.name, case.id, out_path, declared_dtypes(v, case),
                           getattr(v, "state_precision", "fp32"))
        self.pending.append((row, None, key))

    def skip(self, row: dict, v: KernelVariant, case: Case, status: str, reason: str) -> None:
        """A row judged without the pool (its extra call raised, say)."""
        self._release(oracle_key(v, case))
        row["at_size"] = verdict(status, reason)

    def forget(self, v: KernelVariant, case: Case) -> None:
        """A planned row that ended untimed (UNVERIFIED, SKIP, ERROR): its share of the oracle is let go."""
        if (v.name, case.id) in self.position:
            self._release(oracle_key(v, case))

    def _release(self, key: str) -> None:
        self.uses[key] -= 1
        if self.uses[key] <= 0:
            fut = self.oracles.pop(key, None)
            if fut is not None and not fut.cancel() and fut.done() and not fut.exception():
                with contextlib.suppress(OSError):
                    os.unlink(fut.result())

    def collect(self, wait: bool = False) -> list[dict]:
        """The rows whose verdicts are in (all of them with ``wait``), in the order they were given."""
        done: list[dict] = []
        still = []
        for row, job, key in self.pending:
            if job is None:  # waiting for its oracle
                ofut = self.oracles.get(key)
                if self.broken or ofut is None:
                    row["at_size"] = verdict("ERROR", f"not judged at size: the worker pool broke "
                                                      f"({self.broken})")
                elif (ofut.done() or wait) and self._written(row, wait) and "at_size" not in row:
                    try:
                        ref_path = ofut.result()
                    except Exception as exc:  # noqa: BLE001 - the oracle itself failed: say so on the row
                        row["at_size"] = verdict("ERROR", f"the oracle at size raised "
                                                          f"{type(exc).__name__}: {exc}")
                    else:
                        name, case_id, out_path, declared, precision = row["_at_size"]
                        job = self._submit(_judge_job, name, case_id, out_path, ref_path, declared, precision)
                        if job is None:
                            row["at_size"] = verdict("ERROR", f"not judged at size: the worker pool broke "
                                                              f"({self.broken})")
                if "at_size" not in row:
                    still.append((row, job, key))
                    continue
            elif job.done() or wait:
                try:
                    row["at_size"] = job.result()
                except Exception as exc:  # noqa: BLE001 - a judge job's crash is the row's ERROR, never lost
                    row["at_size"] = verdict("ERROR", f"judging at size raised {type(exc).__name__}: {exc}")
            else:
                still.append((row, job, key))
                continue
            row.pop("_at_size", None)
            self._release(key)
            done.append(row)
        self.pending = still
        if wait and self.pending:
            done += self.collect(wait=True)
        return done

    def _written(self, row: dict, wait: bool) -> bool:
        """Whether ``row``'s outputs are in their file (waiting for that with ``wait``); a write that raised
        is the row's ERROR at size. The write's seconds join the row's ``at_size_s`` as ``write``, outside the
        timed process's path (``phase_s.at_size`` leaves them out)."""
        w = self.writes.get(id(row))
        if w is None:
            return True
        if not (w.done() or wait):
            return False
        del self.writes[id(row)]
        try:
            row.setdefault("at_size_s", {})["write"] = w.result()
        except Exception as exc:  # noqa: BLE001 - e.g. a full disk: the row's ERROR at size, with why
            row["at_size"] = verdict("ERROR", f"writing its outputs for the judge raised "
                                              f"{type(exc).__name__}: {exc}")
        return True

    def wait(self, timeout: float = 1.0) -> None:
        """Until one pending row's write, oracle or judge job has ended, or ``timeout`` seconds."""
        from concurrent.futures import FIRST_COMPLETED
        from concurrent.futures import wait as wait_futures

        futs = [f for _, job, key in self.pending if (f := job if job is not None else self.oracles.get(key))]
        futs += [w for w in self.writes.values() if not w.done()]
        if futs:
            wait_futures(futs, timeout=timeout, return_when=FIRST_COMPLETED)

    def close(self) -> None:
        self.writer.shutdown(wait=False, cancel_futures=True)
        self.pool.shutdown(wait=False, cancel_futures=True)
        shutil.rmtree(self.tmp, ignore_errors=True)
        for k, val in self._saved_env.items():
            if val is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = val

