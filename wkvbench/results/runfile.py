"""``run.json`` (schema ``wkvbench.run/1``): what a ``wkvbench gpu`` run has done, how long each phase
took, the per-variant worker seconds, the CPU seconds of its processes and how busy the box was.

Rewritten atomically after every change, so a stopped run knows where it was and resumes there.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .schemas import RUN, atomic_write

SCHEMA = RUN


@dataclass
class Phase:
    name: str
    status: str = "pending"  # running, done, failed
    seconds: float = 0.0
    started: float | None = None
    detail: str = ""
    parts: dict[str, float] = field(default_factory=dict)  # where its seconds went (a bench's ``process_s``)


@dataclass
class State:
    """``run.json``: what has run, how long it took, and the per-variant breakdown (rewritten atomically
    after every change, so a stopped run knows where it was)."""

    path: Path
    phases: dict[str, Phase] = field(default_factory=dict)
    variant_seconds: dict[str, dict[str, float]] = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)
    install_s: float | None = None
    runs: int = 0  # how many times the command ran on this folder (resumes + 1)
    cpu_s: dict[str, float] = field(default_factory=dict)  # CPU seconds of the processes, per phase
    timeline: list[list] = field(default_factory=list)  # [s since start, CPU busy %, GPU busy %, GPU GiB]
    autotune: dict = field(default_factory=dict)  # the autotune choices: seeds, tuned, seeded (run/tuned.py)
    compiles: dict = field(default_factory=dict)  # the processes' Triton compilations (run/compiles.py)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(cls, path: Path) -> State:
        st = cls(path)
        if path.is_file():
            doc = json.loads(path.read_text())
            if doc.get("schema") != SCHEMA:
                raise ValueError(f"{path}: schema {doc.get('schema')!r}, expected {SCHEMA!r}")
            st.phases = {k: Phase(k, **{f: v for f, v in p.items() if f != "started"}) for k, p in doc["phases"].items()}
            st.variant_seconds = doc.get("variant_seconds", {})
            st.started_at = doc.get("started_at", st.started_at)
            st.install_s = doc.get("install_s")
            st.runs = doc.get("runs", 0)
            st.cpu_s = doc.get("cpu_s", {})
            st.timeline = doc.get("load", [])
            st.autotune = doc.get("autotune", {})
            st.compiles = doc.get("compiles", {})
        return st

    def phase(self, name: str) -> Phase:
        return self.phases.setdefault(name, Phase(name))

    def add_variant(self, variant: str, what: str, seconds: float) -> None:
        with self.lock:
            d = self.variant_seconds.setdefault(variant, {})
            d[what] = round(d.get(what, 0.0) + seconds, 2)

    def add_cpu(self, phase: str, seconds: float) -> None:
        with self.lock:
            self.cpu_s[phase] = round(self.cpu_s.get(phase, 0.0) + seconds, 1)

    def save(self, complete: bool = False) -> None:
        with self.lock:
            doc = {"schema": SCHEMA, "complete": complete, "provenance": self.provenance, "options": self.options,
                   "started_at": self.started_at, "runs": self.runs, "install_s": self.install_s,
                   "wall_s": round(sum(p.seconds for p in self.phases.values() if serial(p.name))
                                   + (self.install_s or 0.0), 1),
                   "phases": {k: {"status": p.status, "seconds": round(p.seconds, 1), "detail": p.detail,
                                  **({"parts": p.parts} if p.parts else {})} for k, p in self.phases.items()},
                   "variant_seconds": dict(sorted(self.variant_seconds.items())),
                   "cpu_s": self.cpu_s, "cores": os.cpu_count(), "load": self.timeline,
                   **({"autotune": self.autotune} if self.autotune else {}),
                   **({"compiles": self.compiles} if self.compiles else {})}
            atomic_write(self.path, json.dumps(doc, indent=1))


# phases on the critical path, one after the other (the wall time is their sum plus the install);
# "side" and "ggml" run beside "verify" and are reported, not added; "envs" is the own folders' packages side
# by side (each "env-<pkg>" is reported, not added), "env-bench-<pkg>" one of their benches; "stability" (asked
# for with --stability; "stability-ggml" on ggml's rows) is a check of the timing engine after the evidence,
# reported apart; "ggml-wait": how long ggml's build outlasted the bench
SERIAL = ("verify", "envs", "bench", "ggml-wait", "ggml-verify", "ggml-bench", "asv", "report")
NOTE = {"side": " (beside verify)", "ggml": " (beside verify)", "stability": " (a check after the bench)",
        "stability-ggml": " (a check after ggml-bench)",
        "ggml-wait": " (the build outlasting the bench)"}


def serial(name: str) -> bool:
    """Whether phase ``name`` adds to the run's wall time (before 2026-11-28 the own folders' phases did not
    count: the fresh H200 run's ``wall_s`` left out their 453 s)."""
    return name in SERIAL or name.startswith("env-bench-")


def note(name: str) -> str:
    return " (beside the other folders)" if name.startswith("env-") and not name.startswith("env-bench-") \
        else NOTE.get(name, "")


def print_breakdown(st: State) -> None:
    from rich.table import Table

    from ..console import make_console

    con = make_console()
    t = Table(title="wkvbench gpu: where the time went (wall seconds)")
    t.add_column("phase")
    t.add_column("seconds", justify="right")
    t.add_column("status")
    t.add_column("detail", overflow="fold")
    if st.install_s is not None:
        t.add_row("install", f"{st.install_s:.0f}", "done", "nox: virtualenv and packages")
    for p in st.phases.values():
        parts = ("; process: " + ", ".join(f"{k} {v:.1f}" for k, v in p.parts.items())) if p.parts else ""
        t.add_row(p.name + note(p.name), f"{p.seconds:.0f}", p.status, p.detail + parts)
    con.print(t)
    top = sorted(st.variant_seconds.items(), key=lambda kv: -sum(kv[1].values()))[:12]
    v = Table(title="slowest variants (worker seconds, summed over processes run side by side)")
    for col in ("variant", "forward", "backward", "properties", "warm", "bench"):
        v.add_column(col, justify="left" if col == "variant" else "right")
    for name, d in top:
        v.add_row(name, *(f"{d.get(k, 0):.0f}" for k in ("forward", "backward", "properties", "warm", "bench")))
    con.print(v)
    if st.cpu_s:
        con.print("CPU seconds of the run's processes: " + ", ".join(f"{k} {v:.0f}" for k, v in st.cpu_s.items())
                  + f" ({os.cpu_count()} cores)", highlight=False)
    if st.autotune:
        a = st.autotune
        seeds = f"{a['seeds']} recorded ones ({a.get('file')})" if a.get("seeds") else "no record"
        disk = f", {a['disk']} from Triton's on-disk cache" if a.get("disk") else ""
        twice = (f"; {a['chosen_differently']} keys chosen differently by processes of this run (autotune.json "
                 "keeps one, which seeded the bench, and lists the \"others\")") if a.get("chosen_differently") else ""
        kept = (f", {a['carried']} more carried over from them into autotune.json (not met by this run)"
                if a.get("carried") else "")
        con.print(f"autotune choices: {a.get('tuned', 0)} tuned on this box{disk}, {a.get('seeded', 0)} taken from "
                  f"{seeds}{kept}{twice}", highlight=False)
    if st.compiles.get("processes"):
        c = st.compiles
        again = f"; {c['again']} compiled again ({c['again_s']:.0f} s)" if c.get("again") else ""
        con.print(f"Triton compilations: {c['compiled']} ({c['compiled_s']:.0f} s) in {c['processes']} "
                  f"processes; {c['saved']} more calls waited for another process's compilation and read it "
                  f"from the cache ({c['saved_s']:.0f} s not spent again, {c['waited_s']:.0f} s of waiting)"
                  f"{again}", highlight=False)
    doc = json.loads(st.path.read_text())
    con.print(f"wall time {doc['wall_s']:.0f} s (install and serial phases); results in {st.path.parent}")
