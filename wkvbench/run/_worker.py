"""The worker process of the isolated verify runner (``python -m wkvbench.run._worker``; see ``isolate.py``).

It reads JSON jobs from stdin, one per line: the variant, its case ids, the kind of check, the plug-in
files and registry options to reproduce the parent's registry, and baseline errors already measured
by the parent's other workers. For each it writes, on the file descriptor named by
``WKVBENCH_RESULT_FD`` (never stdout, which kernels may print to), one JSON line per message:

* ``{"ready": true}`` once the registry is loaded (at once for the jobs after the first);
* ``{"result": CheckResult.as_dict(), "baseline": {...}}`` per case, in the order given;
* ``{"alive": r}`` after each round of a configuration sweep (kind ``*-configs``, ``autotune.sweep``);
* ``{"done": true, "cpu_s": s}`` after the job's last case (``s``: the worker's CPU seconds so far);
  the worker then waits for the next job (the parent gives it only jobs of the same variant) and
  exits at the end of its input.

Autotuned Triton kernels run one pinned configuration here (``wkvbench.run.autotune``).

A CUDA error (illegal address, device-side assert, ...) leaves the CUDA context unusable: that case
is reported as CRASH and the worker exits with ``CUDA_EXIT`` so the parent starts a fresh one for
the remaining cases.
"""

from __future__ import annotations

import json
import os
import sys

from wkvkernels import config

from .isolate import CUDA_EXIT, CUDA_FATAL


def _send(fd: int, msg: dict) -> None:
    data = (json.dumps(msg) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def _load_registry(job: dict) -> list[str]:
    """Register what the parent registered; returns the plug-in import errors (another variant's
    broken plug-in must not take this variant down)."""
    import wkvkernels  # noqa: F401  (registers the built-in variants)

    from .plugins import load_entry_points, load_file

    errors = []
    for path in job.get("plugins", []):
        try:
            load_file(path)
        except ImportError as exc:
            errors.append(str(exc))
            print(f"wkvbench worker: {exc}", file=sys.stderr, flush=True)
    if job.get("entry_points", True):
        load_entry_points(lambda msg: None)  # the parent loaded them first and printed the warnings
    if job.get("mutants"):
        from ..checks.mutants import register_mutants

        register_mutants()
    if job.get("fib"):  # flashinfer-bench workloads as cases, its reference and solutions as variants
        from .fibench import FibSource

        FibSource.from_dict(job["fib"]).install()
    return errors


def main() -> int:
    from .cudawait import apply_env

    apply_env()  # WKVBENCH_CUDA_WAIT (``wkvbench gpu`` sets block), before any CUDA context exists
    fd = config.result_fd()
    variant = None
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        if "probe" in job:  # the availability of the job's variants, then exit (run/probes.py)
            _probe(fd, job)
            return 0
        if variant is None:
            variant = _start(job)
            if variant is None:
                return 1
        print(f"wkvbench worker: {job['variant']} {job['kind']}, {len(job['cases'])} cases", file=sys.stderr,
              flush=True)
        _run_job(fd, variant, job)
    return 0


def _probe(fd: int, job: dict) -> None:
    """``availability`` of each variant the job names, one after another in this one thread, each answer sent
    as it comes (``{"probed": name, "ok", "reason", "error"}``), then ``done``."""
    errors = _load_registry(job)
    from wkvkernels.base import availability, get

    _send(fd, {"ready": True})
    for name in job["probe"]:
        try:
            get(name)
        except KeyError:  # registered in the parent only (a plug-in that fails here): the parent asks itself
            _send(fd, {"probed": name, "unregistered": "; ".join(errors) or "no plug-in registered it"})
            continue
        av = availability(name)
        _send(fd, {"probed": name, "ok": bool(av), "reason": av.reason, "error": bool(av.error)})
    _send(fd, {"done": True, "cpu_s": _cpu_s()})


def _start(job: dict):
    """The job's variant from the registry the parent described (None, with the reason on stderr, when it
    is not there); pinned autotuning from here on."""
    errors = _load_registry(job)
    from wkvkernels.base import get

    try:
        variant = get(job["variant"])
    except KeyError:
        why = "; ".join(errors) or "no plug-in registered it"
        print(f"wkvbench worker: variant {job['variant']} is not registered in the worker: {why}",
              file=sys.stderr, flush=True)
        return None
    from . import autotune

    autotune.install()  # verification pins one configuration per autotuned Triton kernel
    from . import compiles

    compiles.install_from_env()  # a wkvbench gpu run's processes share their Triton compilations
    return variant


def _run_job(fd: int, variant, job: dict) -> None:
    from wkvkernels.cases import Case

    from ..judge.check import CRASH, ERROR, Checker, baseline_keys
    from .verify import _check

    if job["variant"] != variant.name:  # the parent reuses a worker for its own variant only
        raise SystemExit(f"wkvbench worker: a job for {job['variant']} sent to the worker of {variant.name}")
    checker = Checker(job.get("oracle_dir"))
    checker._baseline.update({k: v for k, v in job.get("baselines", {}).items()})
    _send(fd, {"ready": True})
    kind = job["kind"]
    for cid in job["cases"]:
        case = Case.parse(cid)
        # a configuration sweep sends a heartbeat after each round
        res = _check(checker, variant, case, kind, alive=lambda r: _send(fd, {"alive": r}))
        fatal = res.status == ERROR and variant.device == "cuda" and CUDA_FATAL.search(res.reason)
        if fatal:
            res.status = CRASH
            res.reason = f"CUDA error, the worker's CUDA context is unusable: {res.reason}"
        if kind == "backward" and variant.baseline and res.status != "SKIP":
            # what check_backward caches when another variant needs the baseline's gradient errors
            checker._baseline.setdefault("grad:" + case.id, {k: e.rel for k, e in res.errors.items()}
                                         if res.status == "PASS" else None)
        base = {k: checker._baseline[k] for k in baseline_keys(case) if k in checker._baseline}
        _send(fd, {"result": res.as_dict(), "baseline": base})
        if fatal:
            sys.stderr.flush()
            os._exit(CUDA_EXIT)  # no atexit/CUDA teardown: the context is broken
    _release()
    from ..judge import shared_baselines
    from . import compiles

    _send(fd, {"done": True, "cpu_s": _cpu_s(), "compiles": compiles.counters(),
               "shared": shared_baselines.counters()})


def _cpu_s() -> float:
    """CPU seconds of this worker so far, its finished child processes (ptxas, nvcc) included."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return round(own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime, 3)


def _release() -> None:
    """What a waiting worker gives back: the job's tensors, and the GPU memory torch's allocator keeps
    (sixteen waiting workers that kept theirs filled the H100's 80 GB, and the next cases failed with
    CUDA out of memory, 2026-11-24)."""
    import gc

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--fork-server"]:  # the run's fork server (forkserver.py): forks return here as workers
        from .forkserver import end_worker, run_command
        from .forkserver import main as serve

        if req := serve(int(sys.argv[2])):  # a forked worker: main() at the depth a fresh worker runs it
            code: object = 1
            try:
                code = run_command(req["argv"]) if "argv" in req else main()
            except SystemExit as exc:
                code = exc.code
            except BaseException:  # noqa: BLE001 - printed as a fresh interpreter would
                import traceback

                traceback.print_exc()
            finally:
                end_worker(code)
        sys.exit(0)
    sys.exit(main())
