#!/usr/bin/env -S uv run --script
# /// script
# dependencies = ["nox>=2024.10.9"]
# ///
"""wkvbench sessions.

    nox -s verify   # the verification matrix on whatever hardware is present (CPU by default)
    nox -s tests    # the project's own tests, less the heavy ones (CI runs both)
    nox -s tests-slow   # the heavy ones (marker slow: end-to-end runs, fresh virtualenvs, the browser)
    nox -s gpu      # the whole GPU evidence of a box: verify (all dtypes, backward, properties), bench, asv, report
    nox -s bench    # GPU benchmarks (device time, roofline, asv history) and CPU timings
    nox -s report   # the static HTML report from the committed results (reports/html/index.html)
    nox -s site     # the same, as the static site GitHub Pages publishes (site/; docs/report.md)
    nox -s gate -- --baseline B.json --candidate C.json   # the CI regression gate (README)
    nox -s history  # verify each listed release of the kernel packages, one virtualenv each (docs/history.md)
    nox -s candidate -- fla "fla-core @ git+https://...@SHA"   # a build gated against its last release
    nox -l          # list sessions

Every session installs what it needs into its own virtualenv from PyPI. Third-party kernel
packages come from their real distributions (ggml-python builds ggml's CPU backend from source:
about 2 minutes on 2 cores). torch is pinned to 2.13.0 where no torch is preinstalled; set
``WKVBENCH_TORCH`` to another requirement (e.g. ``torch==2.11.0``) or to ``system`` to reuse the
interpreter's torch through ``--system-site-packages`` (GPU boxes with a CUDA build of torch).
Arguments after ``--`` go to the underlying command.
"""

from __future__ import annotations

import os

import nox

nox.needs_version = ">=2024.3.2"
nox.options.default_venv_backend = "virtualenv"
nox.options.sessions = ["tests"]
nox.options.reuse_venv = "yes"

PYPROJECT = nox.project.load_toml("pyproject.toml")
# the groups, and "package": the package's own dependencies (numpy, rich)
GROUPS: dict[str, list[str]] = {**PYPROJECT["dependency-groups"],
                                "package": PYPROJECT["project"]["dependencies"]}
TORCH = os.environ.get("WKVBENCH_TORCH", "torch==2.13.0")


WHEELHOUSE = os.environ.get("WKVBENCH_WHEELHOUSE")  # offline: install only from this folder


GGML = "ggml-python==0.0.45"
BUILD_BACKEND = ("scikit-build-core>=0.9", "pathspec")  # ggml-python's, for builds without isolation


def _offline() -> list[str]:
    return ["--no-index", "--find-links", WHEELHOUSE] if WHEELHOUSE else []


# per virtualenv (its record's path): how many of its installs this nox process has come to, and whether one
# of them ran (from then on every later one runs too)
_INSTALLS: dict[str, dict] = {}


def _install(session: nox.Session, *args: str, env: dict | None = None) -> None:
    """``session.install(*args)``, skipped where this virtualenv's installs, up to and including this one, are
    the ones it ran to their end last time, in the same order: the same arguments and environment, and
    offline the same wheelhouse (its files' names and sizes). A warm ``nox -s gpu`` ran about ten such pip
    commands, each resolving what was installed already (2-3 s apiece on the CPU machine, 2026-11-29). The
    record is the sequence, not a set: once one install runs, every later one runs too, since the one that ran
    may have changed what they had installed (another ``WKVBENCH_TORCH``, then the first one again, say). A
    virtualenv made anew has no record, and installs everything."""
    import hashlib
    import json

    house = sorted((f.name, f.stat().st_size) for f in os.scandir(WHEELHOUSE)) if WHEELHOUSE else []
    key = hashlib.sha256(json.dumps([args, env or {}, house]).encode()).hexdigest()
    venv = getattr(session.virtualenv, "location", None)
    if not venv:
        session.install(*args, **({"env": env} if env else {}))
        return
    record = os.path.join(venv, ".wkvbench-installs")
    done = (_read(record) or "").split()
    at = _INSTALLS.setdefault(record, {"n": 0, "ran": False})
    i, at["n"] = at["n"], at["n"] + 1
    if not at["ran"] and done[i:i + 1] == [key]:
        what = " ".join(a for a in args if not a.startswith("-") and a != WHEELHOUSE)
        session.log(f"already installed in this virtualenv: {what[:200]}")
        return
    at["ran"] = True
    _write_record(record, done[:i])  # a failed install leaves none of its own or what came after recorded
    session.install(*args, **({"env": env} if env else {}))
    # nox -R (--no-install) skips the install in a reused virtualenv: nothing ran, nothing to record
    skipped = (getattr(getattr(getattr(session, "_runner", None), "global_config", None), "no_install", False)
               and getattr(session.virtualenv, "_reused", False))
    if not skipped:
        _write_record(record, [*done[:i], key])


def _write_record(record: str, keys: list[str]) -> None:
    if os.path.isdir(os.path.dirname(record)):
        with open(record, "w") as f:
            f.write("".join(k + "\n" for k in keys))


def _see_host_packages(session: nox.Session) -> None:
    """``WKVBENCH_TORCH=system``: the session's virtualenv sees the packages of the interpreter running
    nox (its CUDA build of torch, triton, ...). ``--system-site-packages`` alone is not enough where that
    interpreter is itself a virtualenv (a GPU box's ``python3`` can be one): it exposes the base
    interpreter's site-packages, not the virtualenv's. So its site-packages are added by a ``.pth`` file,
    after the session's own (what the session installs comes first; pip leaves the host's alone)."""
    import site

    dirs = [d for d in (*site.getsitepackages(), site.getusersitepackages()) if os.path.isdir(d)]
    purelib = session.run_install("python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                                  silent=True).strip().splitlines()[-1]
    with open(os.path.join(purelib, "_wkvbench_host_site.pth"), "w") as f:
        f.write("\n".join(dirs) + "\n")


def _bytecode_env(session: nox.Session) -> dict[str, str]:
    """The environment in which a session's processes write the bytecode of the modules they import, into
    its own virtualenv (``<venv>/pycache``: nothing beside the checkout's or the packages' sources), where
    ``PYTHONDONTWRITEBYTECODE`` was set (the 2-core CPU machine's image sets it; empty is unset for Python)."""
    return {"PYTHONDONTWRITEBYTECODE": "",
            "PYTHONPYCACHEPREFIX": os.path.join(session.virtualenv.location, "pycache")}


def _install_runtime(session: nox.Session, *groups: str, ggml: bool = True, lazy_bytecode: bool = False) -> None:
    """torch first (so nothing pulls a different build), then the named groups.

    With ``WKVBENCH_WHEELHOUSE`` set (a folder made by ``nox -s wheelhouse``), nothing is fetched:
    every package comes from that folder, on top of the interpreter's own torch/triton. ``ggml=False``
    leaves ggml-python out (``gpu`` builds it itself, in the background).

    ``lazy_bytecode`` (``nox -s verify``, ``nox -s gpu``): torch pinned in the same pip command as the groups
    (one resolution, the same torch), and ``pip --no-compile``: pip compiles every module it installs (torch,
    triton, transformers, keras: 27 of the 51 s of this install on the 2-core CPU machine, 2026-11-28), where
    the session imports a fraction of them; its processes write the bytecode of what they import instead
    (``_bytecode_env``, which the caller passes to its own commands too).
    """
    first: list[str] = []
    if TORCH == "system":
        _see_host_packages(session)
    elif lazy_bytecode:
        first = [TORCH]
    else:
        _install(session, *_offline(), TORCH)
    reqs = [r for g in groups for r in GROUPS[g] if ggml or not r.startswith("ggml-python")]
    jobs = {"CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
    if ggml and "-dggml_cuda=on" in os.environ.get("CMAKE_ARGS", "").lower():
        # ggml-python 0.0.45's CUDA build needs one binding patched before it imports (FINDINGS.md)
        reqs = [r for r in reqs if not r.startswith("ggml-python")]
        _install(session, *_offline(), *BUILD_BACKEND)
        _install(session, *_offline(), "--no-build-isolation", "--no-deps", _ggml_source(session), env=jobs)
    # ggml-python compiles ggml's CPU backend from its sdist
    _install(session, *_offline(), *(["--no-compile"] if lazy_bytecode else []), *first, *reqs, env=jobs)
    session.run("python", "-c", "import sys, numpy, torch; print(sys.version.split()[0], 'numpy', numpy.__version__, 'torch', torch.__version__)",
                env=_bytecode_env(session) if lazy_bytecode else None)


def _ggml_source(session: nox.Session) -> str:
    """ggml-python's source, unpacked and patched by ``tools/patch_ggml_python.py`` (its CUDA build)."""
    import glob
    import shutil
    import tarfile

    tmp = session.create_tmp()
    version = GGML.split("==")[1]
    found = glob.glob(os.path.join(WHEELHOUSE or "", f"ggml_python-{version}.tar.gz")) if WHEELHOUSE else []
    if found:  # offline: the wheelhouse holds it (pip download would prepare its metadata in an isolated env)
        sdist = os.path.join(tmp, os.path.basename(found[0]))
        shutil.copyfile(found[0], sdist)
    else:
        session.run_install("python", "-m", "pip", "download", "--no-deps", "--no-binary=ggml-python",
                            "--no-build-isolation", GGML, "-d", tmp, silent=True)
        sdist = glob.glob(os.path.join(tmp, f"ggml_python-{version}.tar.gz"))[0]
    src = sdist[: -len(".tar.gz")]
    if not os.path.isdir(src):
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
    session.run_install("python", "tools/patch_ggml_python.py", src)
    return src


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _install_only(session: nox.Session) -> bool:
    """``nox --install-only`` (e.g. a box prepared before it goes offline): ``session.run`` runs nothing
    and returns None, so a session stops after its installs instead of reading output that never came."""
    return session.run("python", "-c", "", silent=True) is None


def _venv_params() -> dict:
    return {"venv_params": ["--system-site-packages"]} if TORCH == "system" else {}


def _pytest(session: nox.Session, marker: str) -> None:
    """pytest on the tests ``-m marker`` selects, spread over the cores by pytest-xdist, one file per
    worker process at a time (``--dist loadfile``: a module's fixtures are built once; docs/testing.md)."""
    _install_runtime(session, "test", "cpu-kernels", "clash")
    workers = str(min(os.cpu_count() or 1, 8))
    session.run("python", "-m", "pytest", "-n", workers, "--dist", "loadfile", "-m", marker, *session.posargs,
                env={"PYTHONHASHSEED": "0"})


@nox.session(**_venv_params())
def tests(session: nox.Session) -> None:
    """The project's own tests, less the heavy ones (``nox -s tests-slow``): oracle self-checks, the judge,
    the registry, every CPU variant vs the oracle. CI runs both sessions (.ci/run)."""
    _pytest(session, "not slow")


@nox.session(name="tests-slow", **_venv_params())
def tests_slow(session: nox.Session) -> None:
    """The heavy tests (marker ``slow``, suites/conftest.py ``SLOW``): end-to-end runs of the commands, a
    fresh virtualenv, the offline install, the browser, killed and resumed runs."""
    _pytest(session, "slow")


@nox.session(**_venv_params())
def verify(session: nox.Session) -> None:
    """The verification matrix: every available variant x operator x dtype x domain vs the float64 oracle.

    Filters: ``nox -s verify -- --op wkv7 --variant '*.ggml.*' --dtype bf16 --plugin my.py``.
    Writes ``reports/results/verify-<timestamp>.json``; exits non-zero on any failure.
    """
    gpu = ("gpu-kernels",) if TORCH == "system" or WHEELHOUSE else ()
    # the package's own dependencies and the kernel packages, not the test tools (pytest, playwright, scipy,
    # asv, plotly, ...), which verify never imports (issue 47: a fresh `nox -s verify` on 2 cores)
    # pip --no-compile, and the run's processes write the bytecode of what they import (_bytecode_env: the
    # 2-core machine's image sets PYTHONDONTWRITEBYTECODE=1; with it, every worker compiled torch and FLA
    # from source, doubling their start-up CPU)
    _install_runtime(session, "package", "cpu-kernels", *gpu, lazy_bytecode=True)
    # without a GPU, FLA's Triton kernels run as their `.interp` twins (docs/verification.md): the mode is
    # process-global and must be set before Python starts; on a GPU box the CUDA variants run instead
    env = {} if _has_cuda(session) or "TRITON_INTERPRET" in os.environ else {"TRITON_INTERPRET": "1"}
    session.run("python", "-m", "wkvbench", "verify", *session.posargs, env={**_bytecode_env(session), **env})


@nox.session(default=False, **_venv_params())
def bench(session: nox.Session) -> None:
    """GPU benchmarks: device time of every CUDA variant on the standard shape sets, asv history, CPU timings.

    ``nox -s bench -- [wkvbench bench arguments]`` (default ``--set standard``). One worker process per
    visible GPU (``CUDA_VISIBLE_DEVICES=i ... --shard i/n``; never two timed runs on one GPU), shards
    merged into ``reports/bench/<machine>/bench-<stamp>.json``; the same samples recorded in asv's history
    (``reports/asv/results/<machine>``, ``python -m wkvbench.perf.asv_record``); pytest-benchmark times the
    CPU side (oracle, ggml CPU, torch CPU) into ``reports/bench/cpu-<stamp>.json``. On an Apple-silicon Mac
    the Metal variants are timed instead (``--device metal``, by MLX's and ggml's own synchronization,
    labelled so: docs/metal.md) into ``reports/bench/metal-<stamp>.json``. On a box without either GPU only
    the CPU part runs. The whole GPU evidence (verification too) is ``nox -s gpu``.
    """
    import datetime

    gpu = ("gpu-kernels",) if TORCH == "system" or WHEELHOUSE else ()
    _install_runtime(session, "test", "cpu-kernels", "bench", *gpu)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    if _install_only(session):
        return
    ngpu = int(session.run("python", "-c", "import torch; print(torch.cuda.device_count())", silent=True).split()[-1])
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "suites/perf/test_cpu_timings.py",
                "--benchmark-only", f"--benchmark-json=reports/bench/cpu-{stamp}.json")
    if ngpu == 0:
        metal = session.run("python", "-c", "import mlx.core as mx; print(int(mx.metal.is_available()))",
                            silent=True, success_codes=[0, 1]) or ""
        if metal.strip().endswith("1"):  # an Apple-silicon Mac: the Metal variants, timed by MLX's / ggml's sync
            out = f"reports/bench/metal-{stamp}.json"
            session.run("python", "-m", "wkvbench", "bench", "--device", "metal",
                        *(session.posargs or ["--set", "standard", "--dtype", "fp32", "--dtype", "bf16",
                                              "--dtype", "fp16"]), "--output", out)
            session.run("python", "-m", "wkvbench.perf.asv_record", out)
            return
        session.log("no CUDA device and no Metal: GPU benchmarks skipped (the CPU timings above ran)")
        return
    slug = session.run("python", "-m", "wkvbench.perf.bench_merge", "--slug",
                       silent=True).strip().splitlines()[-1]
    args = session.posargs or ["--set", "standard"]
    outdir = f"reports/bench/{slug}"
    os.makedirs(outdir, exist_ok=True)
    # one worker per GPU (CUDA_VISIBLE_DEVICES=i, --shard i/n), shards merged
    # (wkvbench.perf.bench_merge.run_on_gpus); exit 1 when a worker failed, after merging the rows it wrote
    session.run("python", "-m", "wkvbench.perf.bench_merge", "--gpus", str(ngpu), "--output",
                f"{outdir}/bench-{stamp}.json", "--", *args)
    # the same samples into asv's history (reports/asv/results/<machine>), through asv's results API
    session.run("python", "-m", "wkvbench.perf.asv_record", f"{outdir}/bench-{stamp}.json")


@nox.session(default=False, **_venv_params())
def gpu(session: nox.Session) -> None:
    """The whole GPU evidence of this box in one command: ``python -m wkvbench gpu`` (docs/gpu.md).

    Verification of every variant on the gpu set in every dtype, forward and backward, with the
    properties; the standard bench sets in every dtype with the roofline; the asv record and the HTML
    report. One results set in ``reports/gpu/<machine>/`` (verify.json, bench.json, run.json); running
    it again resumes a run that was stopped. ggml-python is built with CUDA in the background while the
    rest runs (``CMAKE_ARGS``; default: CUDA for this GPU's architecture). Online: ``WKVBENCH_TORCH=system
    nox -s gpu``; offline: add ``WKVBENCH_WHEELHOUSE=<folder of nox -s wheelhouse>``. Arguments after
    ``--`` go to ``wkvbench gpu`` (``--dtype``, ``--variant``, ``--fresh``, ``--only``, ...).
    """
    import time

    t0 = os.environ.get("WKVBENCH_T0") or str(time.time())
    _install_runtime(session, "gpu-kernels", "report", "bench", ggml=False, lazy_bytecode=True)
    _install(session, *_offline(), *BUILD_BACKEND, "typing_extensions")
    env = {"WKVBENCH_T0": t0, "TRITON_CACHE_AUTOTUNING": "1"}
    src = _ggml_source(session)  # downloaded (or taken from the wheelhouse) and patched: an install step
    own = _install_serving(session)
    if _install_only(session):
        return
    if "CMAKE_ARGS" not in os.environ:
        arch = session.run("python", "-c", "import torch; c = torch.cuda.get_device_capability() "
                           "if torch.cuda.is_available() else None; print(f'{c[0]}{c[1]}' if c else '')",
                           silent=True).strip().splitlines()[-1:]
        if arch and arch[0]:
            # this GPU's code alone ("-real": its SASS without the PTX that other GPUs would compile from):
            # the fatbin step of each object went from 4.5-6.7 s to 1.1 s, about 100 of ggml's 1,460 CUDA
            # compile-seconds, profiled with nvcc --time on the CPU machine (2026-11-28); the SASS is the same
            env["CMAKE_ARGS"] = f"-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES={arch[0]}-real -DGGML_CUDA_FA=OFF"
    session.run("python", "-m", "wkvbench", "gpu", "--ggml-src", src,
                f"--ggml-pip={' '.join(_offline())}", *own, *session.posargs, env=env)


def _serving() -> list[tuple[str, dict]]:
    """The kernel packages ``nox -s gpu`` runs beside the main groups (pyproject's ``gpu-env``)."""
    return [(pkg, spec) for pkg, spec in HISTORY.items() if spec.get("gpu-env")]


def _install_serving(session: nox.Session) -> list[str]:
    """The serving engines' and the other new kernel packages (pyproject's ``gpu-env``), each its last listed
    release without its declared dependencies (their torch pins and serving stacks), with the ``gpu-needs``
    that their kernels' imports reach: ``main`` ones into this environment, ``own`` ones into a folder each
    (``pip --target``; ``gpu-no-deps`` without their dependencies, the needs with theirs), returned as
    ``--own-env PKG=DIR`` arguments of ``wkvbench gpu``. A package pip cannot install (not in an offline
    wheelhouse, say) is left out with a warning: its variants read as SKIP with the reason "not installed"."""
    args: list[str] = []
    for pkg, spec in _serving():
        req, needs = spec["releases"][-1], spec.get("gpu-needs", [])
        try:
            if spec["gpu-env"] == "own":
                folder = os.path.join(session.create_tmp(), "own-env", pkg)
                # what the folder holds, written once it is complete: a second run reuses it (pip --target
                # --upgrade had installed rwkv-fla's and FlashQLA's folders again on every run)
                mark, what = os.path.join(folder, ".wkvbench-installed"), "\n".join(
                    [req, *spec.get("gpu-no-deps", []), "needs:", *needs, *_offline()]) + "\n"
                if _read(mark) != what:
                    # --no-compile: the run's processes write the bytecode of the modules they import
                    session.run_install("python", "-m", "pip", "install", "-q", *_offline(), "--no-deps",
                                        "--upgrade", "--no-compile", "--target", folder, req,
                                        *spec.get("gpu-no-deps", []), silent=True)
                    if needs:  # with their dependencies (openai's httpx2, jiter, ...): all the folder gets
                        session.run_install("python", "-m", "pip", "install", "-q", *_offline(), "--upgrade",
                                            "--no-compile", "--target", folder, *needs, silent=True)
                    if os.path.isdir(folder):
                        with open(mark, "w") as f:
                            f.write(what)
                args += ["--own-env", f"{pkg}={folder}"]
            else:
                if needs:
                    _install(session, *_offline(), *needs)
                _install(session, *_offline(), "--no-deps", req, *spec.get("gpu-no-deps", []))
        except nox.command.CommandFailed:
            session.warn(f"{req} could not be installed: its variants read as SKIP (not installed)")
    return args


@nox.session(default=False)
def wheelhouse(session: nox.Session) -> None:
    """Every package a GPU box needs, in one flat folder, for a box without network.

    ``nox -s wheelhouse -- [--dest wheelhouse] [--python-version 3.12] [--platform TAG ...] [--cpu]``.
    Binary wheels for the target Python and platform (default: CPython 3.12, manylinux x86_64), with
    their dependencies resolved: nox (its own dependencies included), the kernel packages, asv, the
    build backend of ggml-python (scikit-build-core), and ggml-python's source (built on the box, with
    CUDA). torch and triton are not included: the box's CUDA build is used (``WKVBENCH_TORCH=system``).
    ``--cpu`` adds torch 2.13.0 and the CPU kernel packages (triton) for a machine without a GPU, e.g.
    CI's own check of this path (``--here``: for this interpreter and platform), and leaves out the serving
    engines' packages (pyproject's ``gpu-env``), which only ``nox -s gpu`` installs.

    On the box: ``python3 -m pip install --no-index --find-links wheelhouse nox`` and then
    ``WKVBENCH_WHEELHOUSE=$PWD/wheelhouse WKVBENCH_TORCH=system python3 -m nox -s gpu`` (docs/gpu.md).
    """
    import argparse

    ap = argparse.ArgumentParser(prog="nox -s wheelhouse --")
    ap.add_argument("--dest", default="wheelhouse")
    ap.add_argument("--python-version", default="3.12")
    ap.add_argument("--platform", action="append", default=[])
    ap.add_argument("--here", action="store_true", help="for this interpreter and platform")
    ap.add_argument("--cpu", action="store_true", help="add torch 2.13.0 and the CPU kernel packages")
    a = ap.parse_args(session.posargs)
    if a.here:
        target: list[str] = []
    else:
        plats = a.platform or [f"manylinux_2_{n}_x86_64" for n in (17, 27, 28, 34)] + ["manylinux2014_x86_64"]
        target = ["--only-binary=:all:", "--python-version", a.python_version, "--implementation", "cp",
                  *(x for p in plats for x in ("--platform", p))]
    reqs = [*GROUPS["gpu-kernels"], *GROUPS["bench"], *GROUPS["report"], *GROUPS["wheelhouse"]]
    if a.cpu:
        reqs += [TORCH, *(r for r in GROUPS["cpu-kernels"] if not r.startswith("ggml-python")), *GROUPS["test"]]
    reqs = list(dict.fromkeys(reqs))
    session.run("python", "-m", "pip", "download", "-d", a.dest, *target, *reqs)
    if not a.cpu:  # the packages nox -s gpu adds (pyproject's gpu-env; vLLM's wheel alone is 336 MB): each
        # without its declared dependencies, then what its kernels need (with theirs); torch and triton: the box's
        session.run("python", "-m", "pip", "download", "-d", a.dest, *target, "--no-deps",
                    *(spec["releases"][-1] for _, spec in _serving()),
                    *(n for _, spec in _serving() for n in spec.get("gpu-no-deps", [])))
        # resolved per package: an own folder's pins (FlashQLA's apache-tvm-ffi < 0.1.13) constrain no other
        for _, spec in _serving():
            if spec.get("gpu-needs"):
                session.run("python", "-m", "pip", "download", "-d", a.dest, *target, *spec["gpu-needs"])
    # ggml-python as its source: built on the box (with CUDA there), by pip without build isolation
    # (--no-binary names ggml-python alone: ":all:" would also build its build requirements, cmake included,
    # from source to prepare its metadata)
    session.run("python", "-m", "pip", "download", "-d", a.dest, "--no-deps", "--no-binary=ggml-python", GGML)


@nox.session(default=False)
def lint(session: nox.Session) -> None:
    """ruff over the whole tree."""
    session.install("ruff")
    session.run("ruff", "check", ".", *session.posargs)


@nox.session(default=False)
def report(session: nox.Session) -> None:
    """The static HTML report (``reports/html/index.html``) from the committed results under ``reports/``.

    Reads every ``wkvbench.verify/1`` and ``wkvbench.bench/1`` file, drift profiles and asv results
    (``reports/asv/results``, the ``results_dir`` of asv.conf.json), which ``history.html`` draws offline
    (asv's own ``asv publish`` site loads its scripts from CDNs: neither built nor linked; docs/report.md).
    Arguments go to
    ``python -m wkvbench report``, e.g. ``nox -s report -- --results reports --output /tmp/r.html``;
    without arguments, where the system's chromium is installed (a system dependency: nothing here installs
    a browser), it also adds playwright (from the ``test`` group) and saves ``reports/html/screenshot.png``.
    """
    _report(session, list(session.posargs))


def _report(session: nox.Session, args: list[str]) -> None:
    session.install(*_offline(), *GROUPS["report"])
    import shutil

    if not args and any(shutil.which(b) for b in ("chromium", "chromium-browser")):
        try:  # a wheelhouse (nox -s wheelhouse without --cpu) has no playwright: then no screenshot
            session.install(*_offline(), *(r for r in GROUPS["test"] if r.startswith("playwright")))
            args = ["--screenshot", os.path.join("reports", "html", "screenshot.png")]
        except nox.command.CommandFailed:
            session.warn("playwright could not be installed: the report is built without its screenshot")
    session.run("python", "-m", "wkvbench", "report", *args)


@nox.session(default=False)
def site(session: nox.Session) -> None:
    """The published report as one static folder (``nox -s site -- DIR``, default ``site/``): what the
    GitHub Pages workflow (.github/workflows/report.yml) publishes, and the same anywhere else. Installs the
    ``report`` group and runs ``python -m wkvbench report --site DIR``: ``DIR/html/`` (every page, the
    per-machine details and ``plotly.min.js``: nothing is fetched from a CDN) and ``DIR/index.html``, which
    opens the landing page. ``suites/unit/test_report_site.py`` runs that command and checks the folder."""
    dest = session.posargs[0] if session.posargs else "site"
    session.install(*_offline(), *GROUPS["report"])
    session.run("python", "-m", "wkvbench", "report", "--site", dest)
    session.log(f"site: {dest}/ (open {dest}/index.html)")


@nox.session(default=False)
def gate(session: nox.Session) -> None:
    """The CI regression gate: baseline vs candidate results (verify/1, bench/1, asv files).

    ``nox -s gate -- --baseline B.json [...] --candidate C.json [...] [--noise N.json] [--markdown PR.md]``;
    ``nox -s gate -- noise --runs a.json b.json c.json --output N.json``;
    ``nox -s gate -- ab --baseline-cmd "..." --candidate-cmd "..." --rounds 3 --confirm``.
    Exit 0 pass, 1 regression, 2 bad input, 3 not comparable. Installs the package (numpy, rich) and
    the ``gate`` group (SciPy).
    """
    offline = ["--no-index", "--find-links", WHEELHOUSE] if WHEELHOUSE else []
    session.install(*offline, ".", *GROUPS["gate"])
    session.run("python", "-m", "wkvbench", "gate", *session.posargs)


# ---- release history (docs/history.md) ---------------------------------------------------------------

HISTORY: dict[str, dict] = PYPROJECT["tool"]["wkvbench"]["history"]
# the case selection of one release: the default set's model domain, seed 0, fp32 and bf16, forward only
# (minutes per release on 2 cores); arguments after -- replace it
HISTORY_SELECTION = ["--set", "default", "--domain", "model", "--seed", "0",
                     "--dtype", "fp32", "--dtype", "bf16"]
_RELEASES = [(pkg, req) for pkg, spec in HISTORY.items() for req in spec["releases"]]


def _release_env(session: nox.Session, package: str, requirement: str) -> None:
    """torch, the package's toolchain, wkvbench's numpy and rich, then the package (``no-deps``: alone)."""
    spec = HISTORY[package]
    if TORCH == "system":
        _see_host_packages(session)
    else:
        session.install(*_offline(), TORCH)
    session.install(*_offline(), *spec.get("toolchain", []), "rich>=13",
                    env={"CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)})
    dists = {"fla": ["fla-core", "flash-linear-attention"]}.get(package, [package])
    # one release at a time (an install step: `nox -R` reuses the environment as it is)
    session.run_install("python", "-m", "pip", "uninstall", "-q", "-y", *dists, silent=True)
    deps = ["--no-deps"] if spec.get("no-deps") else []
    if spec.get("gpu-no-deps"):  # nvidia-cutlass-dsl's .pth, without the CUDA 12 libraries it requires
        session.install(*_offline(), "--no-deps", *spec["gpu-no-deps"])
    session.install(*_offline(), *deps, requirement,
                    env={"CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)})


def _verify_release(session: nox.Session, package: str, requirement: str, output: str | None = None) -> str:
    """``wkvbench verify --release PACKAGE`` in this session's environment; the results file (gzip)."""
    import gzip
    import shutil

    env = {"WKVBENCH_RELEASE_REQUIREMENT": requirement}
    if package == "fla" or HISTORY[package].get("interpret"):
        env["TRITON_INTERPRET"] = "1"  # the .interp twins: FLA's (rwkv-fla's) Triton kernels on a CPU
        ngpu = session.run("python", "-c", "import torch; print(torch.cuda.device_count())", silent=True)
        if ngpu.strip().splitlines()[-1] != "0":
            env.pop("TRITON_INTERPRET")  # a GPU box: the CUDA variants instead
    args = list(session.posargs) or HISTORY_SELECTION
    out = output or session.run("python", "-c", "from wkvbench.results.provenance import provenance, "
                                f"release_block, release_path; print(release_path('reports/history', "
                                f"{{**provenance(), 'release': release_block({package!r})}}))",
                                silent=True, env=env).strip().splitlines()[-1]
    session.run("python", "-m", "wkvbench", "verify", "--release", package, *args, "--output", out, env=env,
                success_codes=[0, 1, 3])  # FAIL/ERROR rows are the history's content, not a failed session
    with open(out, "rb") as src, gzip.open(out + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(out)
    session.log(f"results: {out}.gz")
    return out + ".gz"


@nox.session(default=False, **_venv_params())
@nox.parametrize(["package", "requirement"], _RELEASES, ids=[r for _, r in _RELEASES])
def history(session: nox.Session, package: str, requirement: str) -> None:
    """One release of a kernel package verified in its own virtualenv (docs/history.md).

    ``nox -s history`` runs every release listed in pyproject's ``[tool.wkvbench.history]``;
    ``nox -s "history(fla-core==0.5.2)"`` one; ``nox -s history -k fla`` one package. Results:
    ``reports/history/<machine>/<package>/<version>.json.gz`` (``cpu`` without a GPU). CUDA-only
    packages (``gpu = true``: rwkv) are skipped, with that reason, on a machine without a GPU.
    """
    if HISTORY[package].get("gpu") and not _has_cuda(session):
        session.skip(f"{package} is CUDA-only (ChatRWKV's kernels): its releases run on a GPU box")
    _release_env(session, package, requirement)
    if _install_only(session):
        return
    out = _verify_release(session, package, requirement)
    # a GPU box: the release's CUDA variants timed too, beside its verify file; WKVBENCH_HISTORY_BENCH=0
    # verifies only (several releases verified side by side, their timings taken one at a time afterwards)
    if _has_cuda(session) and os.environ.get("WKVBENCH_HISTORY_BENCH", "1") != "0":
        bench = out.replace(".json.gz", "-bench.json")
        session.run("python", "-m", "wkvbench", "bench", "--variant", HISTORY[package]["variants"],
                    "--set", "quick", "--dtype", "bf16", "--output", bench,
                    env={"WKVBENCH_RELEASE_REQUIREMENT": requirement}, success_codes=[0, 1])
        # asv's environment matrix: the release's timings as a series of their own (docs/history.md)
        session.run("python", "-m", "wkvbench.perf.asv_record", bench, success_codes=[0, 2])


def _has_cuda(session: nox.Session) -> bool:
    import shutil

    return shutil.which("nvidia-smi") is not None


@nox.session(default=False, **_venv_params())
def candidate(session: nox.Session) -> None:
    """A build of a kernel package (a git checkout, a local path, a wheel) verified like a release and
    gated against the package's last listed release on this machine (docs/history.md)::

        nox -s candidate -- fla "fla-core @ git+https://github.com/fla-org/flash-linear-attention@SHA"
        nox -s candidate -- fla ./flash-linear-attention      # a local checkout
        nox -s candidate -- fla ./flash-linear-attention --against fla-core==0.5.2   # another baseline

    The last release is verified first, in the same session on this machine (so both sides share one
    identity; it rewrites ``reports/history/<machine>/<package>/<last>.json.gz``), then the candidate
    (``reports/results/candidate-<package>-<stamp>.json.gz``), then ``wkvbench gate --baseline <last>
    --candidate <candidate>``: exit 1 on a regression (a FAIL/ERROR, or an error grown more than 2x).
    """
    if len(session.posargs) < 2 or session.posargs[0] not in HISTORY:
        session.error(f"usage: nox -s candidate -- PACKAGE REQUIREMENT (PACKAGE one of {', '.join(HISTORY)})")
    package, requirement, *rest = session.posargs
    last = HISTORY[package]["releases"][-1]
    if "--against" in rest:  # another release as the baseline, e.g. the one a branch started from
        i = rest.index("--against")
        last, rest = rest[i + 1], rest[:i] + rest[i + 2:]
    session.posargs[:] = rest  # the selection, if given
    _release_env(session, package, last)
    if _install_only(session):
        return
    base = _verify_release(session, package, last)
    _release_env(session, package, requirement)
    stamp = __import__("datetime").datetime.now().strftime("%Y%m%d-%H%M%S")
    cand = _verify_release(session, package, requirement,
                           output=f"reports/results/candidate-{package}-{stamp}.json")
    session.run("python", "-m", "wkvbench", "gate", "--baseline", base, "--candidate", cand,
                "--markdown", cand.replace(".json.gz", ".md"))


if __name__ == "__main__":
    nox.main()
