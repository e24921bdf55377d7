"""Each GPU model's autotune choices, recorded with its results, and a fresh run seeded from them.

A Triton kernel declared with ``@triton.autotune`` compiles and times every configuration the first
time it meets an autotune key (on the H100, 2026-11-27, the warm-ups that do this at the benchmark
shapes were 8,830 of a fresh run's worker-seconds: issue 47). Which configuration wins is a property of
the GPU model and the software, not of the box: a second box of the same model finds the same winners,
up to near ties. So ``wkvbench gpu`` records every choice its processes make, per kernel and autotune
key, into ``autotune.json`` beside ``bench.json``, and a later run on the same machine identity (the
committed set in a fresh clone) is *seeded* from that file: an autotuner meeting a recorded key takes
the recorded configuration without compiling and timing the others. Everything else is unchanged: the
configuration still compiles and runs, every bench row still records the configuration it ran
(``autotune`` on the row), verification still pins and sweeps every configuration
(``wkvbench.run.autotune``), and a key no record holds is autotuned as before, then recorded.
``wkvbench gpu --autotune tune`` ignores the seeds.

A seed applies only to the package release that made it: each record names the distribution and
version of the kernel's top-level module, as installed where it ran (rwkv-fla's ``fla`` is not
fla-core's), and a process seeds a kernel only from records of the release it imports.

How: ``install`` (the ``bench`` and ``stability`` commands call it when ``WKVBENCH_AUTOTUNE_RECORD`` or
``WKVBENCH_AUTOTUNE_SEEDS`` is set, as ``wkvbench gpu`` sets them) wraps ``Autotuner.run`` so that each
autotuner's ``cache`` (Triton's own key -> configuration dict) is a :class:`SeededCache`: a lookup of a
key that is missing but recorded inserts the recorded configuration (when the kernel still declares
it), and every configuration Triton stores is appended to this process's record file with where it came
from: ``tuned`` (benchmarked here), ``disk`` (Triton's on-disk autotune cache, ``TRITON_CACHE_AUTOTUNING``:
an earlier process benchmarked it) or ``seeded``. Triton computes the keys itself, so the records hold
exactly its keys. ``merge`` joins the process files into one ``autotune.json``.

Within a run the bench is seeded from the run's own warm-ups too (``seed_file``: ``wkvbench gpu`` writes
the union of its seeds and its processes' records before each bench phase). Triton's on-disk caches were
meant to carry the warm-ups' work to the bench, and on the first whole one-GPU H200 run (2026-11-28,
``reports/gpu/h200-2026-11-28-fresh-run/``) they did not: its bench process benchmarked 1,920 choices again,
up to 34 s a row, keys its warm-ups had tuned minutes before. (The cause, found later: importing sglang moved
that process's Triton cache folder, ``wkvkernels/_caches.py``.) A choice the run has already made is never
benchmarked twice, whatever Triton's cache folders and keys do.

Why not FLA's own config cache (``FLA_CACHE_MODE``, ``fla/ops/utils/cache.py``): it serves only the
kernels FLA declares with its ``fla_cache_autotune`` (or all of them once ``triton.autotune`` is replaced
before FLA is imported), reads one file per kernel name from one folder, and cannot tell rwkv-fla's
kernels (same names, another package) from fla-core's; the suite runs rwkv-ops', the serving forks'
and rwkv-fla's Triton kernels too.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

from ..results.schemas import AUTOTUNE as SCHEMA
from .autotune import kernel_name

ENV_RECORD = "WKVBENCH_AUTOTUNE_RECORD"  # a folder: each process appends to autotune-<pid>.jsonl there
ENV_SEEDS = "WKVBENCH_AUTOTUNE_SEEDS"  # an autotune.json whose choices seed this process's autotuners
TUNED, DISK, SEEDED = "tuned", "disk", "seeded"  # benchmarked here; from Triton's on-disk cache; from the seeds
CARRIED = "carried"  # in a run's record: a choice of its seeds that none of its processes met (``merge``)
RANK = {SEEDED: 0, DISK: 1, TUNED: 2}  # several processes made one choice: the record says the most direct

_ORIGINAL = None
_ORIGINAL_DISK = None  # Autotuner.check_disk_cache as Triton defines it (None where it has none)
_SEEDS: dict[tuple[str, str, str], str] = {}  # (package, kernel, key) -> configuration, as Triton prints it
_RECORD: Path | None = None
SEEN: dict[str, int] = {TUNED: 0, DISK: 0, SEEDED: 0}  # choices this process made, by where they came from


def key_text(key) -> str:
    """Triton's autotune key (a tuple of argument values and dtype names) as the text records use."""
    return json.dumps(list(key) if isinstance(key, tuple) else key, default=str, separators=(",", ":"))


@functools.lru_cache(maxsize=None)
def package_of(module: str) -> str:
    """``"<distribution> <version>"`` of the installed package that provides the imported top-level module
    of ``module`` (found beside the module's folder, so a package in a folder of its own ahead on
    ``PYTHONPATH`` is told from another release of the same module name); ``"<top> ?"`` when none says."""
    from importlib import metadata

    top = module.split(".", 1)[0]
    mod = sys.modules.get(top)
    where = getattr(mod, "__file__", None)
    if where:
        site = str(Path(where).resolve().parent.parent)
        dists = list(metadata.distributions(path=[site]))
        for dist in dists:  # top_level.txt where the build wrote one, else the files the wheel installed
            if top in (dist.read_text("top_level.txt") or "").split():
                return f"{dist.metadata['Name']} {dist.version}"
        for dist in dists:
            if any(str(f).split("/", 1)[0] == top for f in dist.files or ()):
                return f"{dist.metadata['Name']} {dist.version}"
    return f"{top} ?"


class SeededCache(dict):
    """An autotuner's ``cache`` (key -> configuration) that fills a missing key from the seeds and records
    every configuration stored in it."""

    def __init__(self, tuner, entries=()) -> None:
        super().__init__(entries)
        self.tuner = tuner
        self.kernel = kernel_name(tuner)
        self.package = package_of(tuner.base_fn.__module__)

    def __contains__(self, key) -> bool:
        if dict.__contains__(self, key):
            return True
        want = _SEEDS.get((self.package, self.kernel, key_text(key)))
        cfg = next((c for c in self.tuner.configs if str(c) == want), None) if want else None
        if cfg is None:  # no record, or the kernel no longer declares that configuration
            return False
        dict.__setitem__(self, key, cfg)
        _note(self, key, cfg, SEEDED)
        return True

    def __setitem__(self, key, cfg) -> None:
        dict.__setitem__(self, key, cfg)
        _note(self, key, cfg, getattr(self.tuner, "_wkv_origin", None) or TUNED)


_NOTED: set[tuple[str, str, str, str, str]] = set()  # what this process has recorded already


def _note(cache: SeededCache, key, cfg, origin: str) -> None:
    """One line per choice and origin in a process: rwkv-ops 0.11.3 clears its ``gdn_chunk`` kernels' caches on
    every call (its workaround for bf16 NaNs), and the fresh H200 run's bench stored each of their keys about
    210 times, one line each."""
    entry = (cache.package, cache.kernel, key_text(key), str(cfg), origin)
    if entry in _NOTED:
        return
    _NOTED.add(entry)
    SEEN[origin] += 1
    if _RECORD is None:
        return
    record = dict(zip(("package", "kernel", "key", "config", "from"), entry))
    parts = getattr(cache.tuner, "_wkv_parts", None) if origin != SEEDED else None
    line = json.dumps({**record, "parts": parts} if parts else record)
    try:
        with open(_RECORD / f"autotune-{os.getpid()}.jsonl", "a") as f:
            f.write(line + "\n")
    except OSError:
        pass  # a record that cannot be written costs the next run a tuning, never this run


def _seeded_run(self, *args, **kwargs):
    if not isinstance(self.cache, SeededCache):
        self.cache = SeededCache(self, self.cache)
    return _ORIGINAL(self, *args, **kwargs)


def _disk_checked(self, tuning_key, configs, bench_fn):
    """``Autotuner.check_disk_cache``, telling the cache where what it stores comes from: Triton's file
    (a hit stores it here directly) or a benchmark (a miss runs ``bench_fn``, which stores it); and noting
    what the file's name is made of (``key_parts``), so that two processes' records show which part
    differed where one missed what the other had stored."""
    def bench():
        self._wkv_origin = TUNED
        return bench_fn()

    self._wkv_origin = DISK
    self._wkv_parts = key_parts(self)
    try:
        return _ORIGINAL_DISK(self, tuning_key, configs, bench)
    finally:
        self._wkv_origin = None


def key_parts(tuner) -> dict[str, str] | None:
    """Short digests of what Triton's on-disk autotune key holds besides the tuning key and the configurations
    (``Autotuner.check_disk_cache``, triton 3.6): Triton's own build, the backend (ptxas version and GPU
    architecture), the kernel's source with its dependencies, and the environment variables Triton's caches
    depend on. None where they cannot be read (no GPU target: a CPU machine)."""
    import hashlib

    def short(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    try:
        from triton._C.libtriton import get_cache_invalidating_env_vars
        from triton.compiler.compiler import make_backend
        from triton.runtime.cache import triton_key
        from triton.runtime.driver import driver
        from triton.runtime.jit import JITFunction

        fn = tuner.fn
        while not isinstance(fn, JITFunction):
            fn = fn.fn
        return {"triton": short(triton_key()), "backend": make_backend(driver.active.get_current_target()).hash(),
                "source": short(fn.cache_key), "env": short(str(sorted(get_cache_invalidating_env_vars().items())))}
    except Exception:  # noqa: BLE001 - a diagnostic: never in the way of the call
        return None


def part_differences(folder: str | os.PathLike) -> dict[str, int]:
    """Per part of Triton's disk key (``key_parts``), how many choices the processes under ``folder`` recorded
    with more than one value of it: where the bench missed the warm-ups' files, the part that differed."""
    counts: dict[str, int] = {}
    for lines in _grouped(folder).values():
        parts: dict[str, set] = {}
        for r in lines:
            for part, value in (r.get("parts") or {}).items():
                parts.setdefault(part, set()).add(value)
        for part, values in parts.items():
            if len(values) > 1:
                counts[part] = counts.get(part, 0) + 1
    return dict(sorted(counts.items()))


def install(record: str | os.PathLike | None = None, seeds: str | os.PathLike | None = None) -> bool:
    """Record this process's autotune choices into the folder ``record`` and seed its autotuners from the
    file ``seeds`` (either may be None). False when Triton is not importable. Idempotent."""
    global _ORIGINAL, _ORIGINAL_DISK, _RECORD
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return False
    if record is not None:
        _RECORD = Path(record)
        _RECORD.mkdir(parents=True, exist_ok=True)
    if seeds is not None:
        _SEEDS.update(load_seeds(seeds))
    if _ORIGINAL is None:
        _ORIGINAL = Autotuner.run
        Autotuner.run = _seeded_run
        _ORIGINAL_DISK = getattr(Autotuner, "check_disk_cache", None)
        if _ORIGINAL_DISK is not None:
            Autotuner.check_disk_cache = _disk_checked
    return True


def install_from_env(environ: dict[str, str] | None = None) -> bool:
    """``install`` as ``WKVBENCH_AUTOTUNE_RECORD`` and ``WKVBENCH_AUTOTUNE_SEEDS`` say (read through
    ``wkvkernels.config``, or from ``environ``); False when neither is set."""
    from wkvkernels import config

    get = config.raw if environ is None else environ.get
    record, seeds = get(ENV_RECORD), get(ENV_SEEDS)
    if not record and not seeds:
        return False
    return install(record or None, seeds or None)


def summary() -> dict | None:
    """What a results file says of this process's autotuning: seeds loaded, choices seeded and tuned;
    None when ``install`` was not called."""
    if _ORIGINAL is None:
        return None
    return {"seeds": len(_SEEDS), **SEEN}


def uninstall() -> None:
    global _ORIGINAL, _ORIGINAL_DISK, _RECORD
    if _ORIGINAL is not None:
        from triton.runtime.autotuner import Autotuner

        Autotuner.run = _ORIGINAL
        _ORIGINAL = None
        if _ORIGINAL_DISK is not None:
            Autotuner.check_disk_cache = _ORIGINAL_DISK
            _ORIGINAL_DISK = None
    _RECORD = None
    _SEEDS.clear()
    _NOTED.clear()
    SEEN.update(dict.fromkeys(SEEN, 0))


def read_record(path: str | os.PathLike) -> dict:
    """An ``autotune.json`` as written by ``merge``; a file of another schema is a ``ValueError``."""
    doc = json.loads(Path(path).read_text())
    if doc.get("schema") != SCHEMA:
        raise ValueError(f"{path}: not an autotune record (schema {doc.get('schema')!r}, expected {SCHEMA})")
    return doc


def choices(doc: dict) -> dict[tuple[str, str, str], str]:
    """(package, kernel, key) -> configuration of a record (``KeyError``/``TypeError`` where it is malformed)."""
    return {(pkg, kernel, key): entry["config"] for pkg, kernels in doc["choices"].items()
            for kernel, keys in kernels.items() for key, entry in keys.items()}


def load_seeds(path: str | os.PathLike) -> dict[tuple[str, str, str], str]:
    """The choices of the record at ``path``: what seeds a process's autotuners."""
    return choices(read_record(path))


def digest(chosen: dict[tuple[str, str, str], str]) -> str:
    """A short digest of a record's choices (``load_seeds``; not of the file's bytes: a run's merged record
    that chose nothing new has the same one as the seeds it ran with)."""
    import hashlib

    text = json.dumps(sorted((list(k), v) for k, v in chosen.items()))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def _lines(folder: str | os.PathLike):
    """Every line of the process records under ``folder``, parsed; a line cut by a killed process is left out."""
    for f in sorted(Path(folder).glob("autotune-*.jsonl")):
        for line in f.read_text().splitlines():
            try:
                yield json.loads(line)
            except ValueError:
                continue


def _grouped(folder: str | os.PathLike) -> dict[tuple[str, str, str], list[dict]]:
    """The record lines under ``folder`` per choice (package, kernel, key), in the order of the files."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for r in _lines(folder):
        groups.setdefault((r["package"], r["kernel"], r["key"]), []).append(r)
    return groups


def gather(folder: str | os.PathLike) -> dict[str, dict[str, dict[str, dict]]]:
    """The process records under ``folder``: package -> kernel -> key -> ``{"config", "from"}``, sorted; where
    several processes made one choice, the most direct origin (tuned, then disk, then seeded). Where processes
    chose differently for one key (autotuners benchmarking beside each other on a busy box: 5 of 89 keys on
    the H200 of reports/gpu/h200-2026-11-28-bench-seeds/, and a kernel's rows 1.6x apart), the entry keeps one,
    which seeds the bench and later runs, and lists the others under ``"others"``: a reader sees that the
    configuration a row ran was not the only answer."""
    found: dict[str, dict[str, dict[str, dict]]] = {}
    for (pkg, kernel, key), lines in _grouped(folder).items():
        kept = max(lines, key=lambda r: RANK.get(r["from"], 0))  # the first of the most direct origin
        entry = {"config": kept["config"], "from": kept["from"]}
        others = sorted({r["config"] for r in lines} - {kept["config"]})
        if others:
            entry["others"] = others
        found.setdefault(pkg, {}).setdefault(kernel, {})[key] = entry
    return _sorted(found)


def _sorted(found: dict) -> dict:
    return {p: {k: dict(sorted(keys.items())) for k, keys in sorted(ks.items())} for p, ks in sorted(found.items())}


def _laid_over(base: str | os.PathLike | None, folder: str | os.PathLike, mark: dict | None = None) -> dict:
    """The choices of the record ``base`` (None, or no such file: none; read afresh), each with ``mark`` added,
    and every choice the process records under ``folder`` hold laid over them (a choice made in this run wins
    over an older one), sorted."""
    found: dict = {}
    if base is not None and Path(base).is_file():
        found = {pkg: {kernel: {key: {**e, **(mark or {})} for key, e in keys.items()}
                       for kernel, keys in kernels.items()} for pkg, kernels in read_record(base)["choices"].items()}
    for pkg, kernels in gather(folder).items():
        for kernel, keys in kernels.items():
            found.setdefault(pkg, {}).setdefault(kernel, {}).update(keys)
    return _sorted(found)


def chosen_differently(doc: dict) -> int:
    """How many keys of a record the run's processes chose differently for (entries with ``"others"``; a choice
    carried over from the seeds was not made by this run)."""
    return sum(1 for kernels in doc["choices"].values() for keys in kernels.values()
               for e in keys.values() if e.get("others") and not e.get(CARRIED))


def _document(found: dict, machine: str) -> dict:
    counts = dict.fromkeys((TUNED, DISK, SEEDED), 0)  # and CARRIED, counted apart, where there are some
    for ks in found.values():
        for keys in ks.values():
            for e in keys.values():
                origin = CARRIED if e.get(CARRIED) else e["from"]
                counts[origin] = counts.get(origin, 0) + 1
    return {"schema": SCHEMA, "machine": machine, "counts": counts, "choices": found}


def merge(folder: str | os.PathLike, out: str | os.PathLike, machine: str = "",
          base: str | os.PathLike | None = None) -> dict:
    """The process records under ``folder`` as one ``autotune.json`` at ``out`` (``gather``), with the counts
    per origin, over the record ``base`` (the run's seeds; None: none). A choice of ``base`` that no process
    of the run met is kept, marked ``"carried": true`` and counted under ``carried`` (not among the run's
    origins): the set's record is what seeds the next run on the machine, and a narrower run, or one whose
    bench failed, must not take it down to what it met. Two H200 runs of 2026-11-29 did: a run seeded with
    331 choices wrote the 177 its bench met, and a run whose processes recorded nothing (every warm-up and
    bench call raised) wrote none, so the next run's bench tuned every key again (its first calls of 76 rows
    took 662 s; reports/gpu/h200-2026-11-29-one-capture-a-set). Returns the document."""
    doc = _document(_laid_over(base, folder, mark={CARRIED: True}), machine)
    Path(out).write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def seed_file(out: str | os.PathLike, folder: str | os.PathLike, base: str | os.PathLike | None = None,
              machine: str = "") -> int:
    """The seeds of a run's bench: the record ``base`` (the run's own seeds; None: none) with every choice
    the run's processes have recorded under ``folder`` so far laid over it (a choice made in this run wins
    over an older one), written to ``out`` as a record. Returns how many choices it holds."""
    found = _laid_over(base, folder)
    doc = _document(found, machine)
    tmp = Path(out).with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(out)  # a process starting now reads the old file or the new one, never half of one
    return sum(doc["counts"].values())


def compare(a: dict, b: dict) -> dict[str, list]:
    """Two records' choices side by side: the keys both hold with the same configuration (``same``), with
    another (``differ``: package, kernel, key, a's, b's), and those only one holds (``only_a``, ``only_b``)."""
    fa, fb = choices(a), choices(b)
    return {"same": sorted(x for x in fa.keys() & fb.keys() if fa[x] == fb[x]),
            "differ": sorted((*x, fa[x], fb[x]) for x in fa.keys() & fb.keys() if fa[x] != fb[x]),
            "only_a": sorted(fa.keys() - fb.keys()), "only_b": sorted(fb.keys() - fa.keys())}


def main(argv: list[str] | None = None) -> int:
    """``wkvbench autotune A.json B.json``: two records side by side (two GPU models, two releases, two runs):
    per kernel, the keys that chose the same configuration, another one, or that one record alone holds,
    then every key that chose differently. Exit 0 when the shared keys agree, 1 when some differ, 2 on
    unreadable input."""
    import argparse

    from rich.table import Table

    from ..console import make_console

    ap = argparse.ArgumentParser(prog="wkvbench autotune", description=main.__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path, help="an autotune.json (a wkvbench gpu results set holds one)")
    ap.add_argument("b", type=Path, help="another")
    args = ap.parse_args(argv)
    con = make_console()
    docs = []
    for path in (args.a, args.b):
        try:
            docs.append(read_record(path))
            choices(docs[-1])  # readable before anything is printed
        except (OSError, ValueError, KeyError, TypeError) as exc:
            con.print(f"[red]error:[/red] {exc if str(path) in str(exc) else f'{path}: {exc}'}", highlight=False)
            return 2
    c = compare(*docs)
    t = Table(title=f"autotune choices: A {args.a} ({docs[0].get('machine') or '?'}) against B {args.b} "
                    f"({docs[1].get('machine') or '?'})")
    for col in ("package", "kernel", "same", "differ", "only A", "only B"):
        t.add_column(col, justify="left" if col in ("package", "kernel") else "right")
    per: dict[tuple[str, str], list[int]] = {}
    for i, what in enumerate(("same", "differ", "only_a", "only_b")):
        for entry in c[what]:
            per.setdefault((entry[0], entry[1].rsplit(".", 1)[-1]), [0, 0, 0, 0])[i] += 1
    for (pkg, kernel), n in sorted(per.items()):
        t.add_row(pkg, kernel, *(str(x) for x in n))
    con.print(t)
    for pkg, kernel, key, ca, cb in c["differ"]:
        con.print(f"{pkg} {kernel.rsplit('.', 1)[-1]} key {key}:\n  A {ca}\n  B {cb}", highlight=False)
    con.print(f"{len(c['same'])} keys agree, {len(c['differ'])} differ, {len(c['only_a'])} only in A, "
              f"{len(c['only_b'])} only in B", highlight=False)
    return 1 if c["differ"] else 0
