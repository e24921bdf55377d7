"""The fast float64 oracle's speed at the prefill shape, against NumPy's own float64 matmul rate.

``python -m wkvbench.perf.oracle_rate [OP ...] [--output FILE] [--chunk C] [--set SET]`` measures, on
this machine:

- **NumPy's float64 matmul rate**: a 2048³ product, best of five, with NumPy's default threads (what
  "the machine's matmul rate" means), before and after the oracles; the goal uses the higher of the
  two (on a shared machine the rate moves by tens of percent within minutes, and the higher one is
  the stricter goal);
- **NumPy's float64 exp** (ns an element) and the SIMD extensions it dispatches on: the oracle's
  rate follows them, and they differ between machines of one size;
- **each operator's oracle** (``wkvoracle.FAST``, at its own default chunk length unless
  ``--chunk``) on the prefill benchmark shape's inputs (``bench_inputs``, bf16, seed 0:
  B8-T4096-H32-N64, wkv4 B8-T4096-C2048), its first call and a second one, in a child process
  configured as the at-size judge runs it (``wkvbench.perf.at_size``): one BLAS thread, the
  oracle's own threads over every core.

The rate of an oracle call is ``roofline.flops(op, "chunk", B, T, H, N, C=64)`` (the chunked form's
FLOP count, the same for every chunk length the oracle may use) over its time, and the goal is a
third of the matmul rate (the ``of goal`` column; an operator without a chunked matrix form in its
``OpSpec``, ``wkv4``, is elementwise and has no such goal). The JSON
keeps every figure with the machine's provenance; ``docs/verification.md`` quotes the committed one.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import time

from wkvkernels.ops import op_spec
from wkvoracle import FAST

from .at_size import THREAD_VARS

OPS = tuple(FAST)


def matmul_gflops(n: int = 2048, reps: int = 5) -> float:
    """NumPy's float64 ``n³`` matmul rate in this process (best of ``reps``), GFLOP/s."""
    import numpy as np

    a = np.random.default_rng(0).standard_normal((n, n))
    a @ a
    best = min(_seconds(lambda: a @ a) for _ in range(reps))
    return 2 * n**3 / best / 1e9


def exp_ns(n: int = 1 << 20, reps: int = 10) -> float:
    """NumPy's float64 ``exp`` in this process, ns an element (best of ``reps`` on ``n`` contiguous
    values in ``[-30, 0]``, the range of the oracle's decays): the other machine figure the oracle's
    rate follows. NumPy vectorizes it only where the CPU has AVX-512 (about 1 ns an element there,
    about 10 without)."""
    import numpy as np

    x = -30 * np.random.default_rng(0).random(n)
    out = np.empty_like(x)
    np.exp(x, out=out)
    return round(1e9 * min(_seconds(lambda: np.exp(x, out=out)) for _ in range(reps)) / n, 2)


def simd() -> list[str]:
    """The x86 SIMD extensions NumPy found on this CPU that its float64 kernels dispatch on."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # NumPy 1.x
        from numpy.core._multiarray_umath import __cpu_features__
    return [f for f in ("AVX2", "FMA3", "AVX512F", "AVX512_SKX") if __cpu_features__.get(f)]


def _seconds(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def measure_op(op: str, chunk: int | None = None, shape_set: str = "prefill") -> dict:
    """One operator's oracle at a benchmark shape (the prefill set's by default): the first and the
    second call, seconds and GFLOP/s."""
    from wkvkernels.cases import Case
    from wkvkernels.ops import default_state, round_inputs

    from .roofline import flops
    from .shapes import bench_inputs, set_shape

    shape = set_shape(shape_set, op)
    case = Case(op, "model", shape, "bf16", 0)
    x = round_inputs(op, bench_inputs(case), "bf16")
    x = {**default_state(op, x), **x}
    kw = {} if chunk is None else {"chunk": chunk}
    used = chunk if chunk is not None else inspect.signature(FAST[op]).parameters["chunk"].default
    first = _seconds(lambda: FAST[op](**x, **kw))
    second = _seconds(lambda: FAST[op](**x, **kw))
    nflops = flops(op, "chunk", shape.B, shape.T, shape.H, shape.N)
    return {"case": case.id, "chunk": used, "first_s": first, "second_s": second,
            "gflops": round(nflops / first / 1e9, 2), "gflops_second": round(nflops / second / 1e9, 2),
            "flops": nflops}


def _child(ops: list[str], chunk: int | None, shape_set: str) -> None:
    for op in ops:
        print(json.dumps({op: measure_op(op, chunk, shape_set)}), flush=True)


def run(ops=OPS, chunk: int | None = None, shape_set: str = "prefill") -> dict:
    """Measure the matmul rate here and every oracle in a child process (one BLAS thread)."""
    from ..results.provenance import provenance
    from ..results.schemas import ORACLE_RATE

    before = matmul_gflops()
    env = {**os.environ, **dict.fromkeys(THREAD_VARS, "1")}
    cmd = [sys.executable, "-m", "wkvbench.perf.oracle_rate", "--child", "--set", shape_set, *ops]
    if chunk is not None:
        cmd += ["--chunk", str(chunk)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        rows.update(json.loads(line))
    after = matmul_gflops()
    rate = max(before, after)
    for op, row in rows.items():
        matrix_form = op_spec(op).chunk_flops is not None
        row["of_goal"] = round(row["gflops"] / (rate / 3), 3) if matrix_form else None
    return {"schema": ORACLE_RATE, "shape_set": shape_set, "chunk": chunk, "matmul_gflops": round(rate, 1),
            "matmul_gflops_before_after": [round(before, 1), round(after, 1)],
            "goal_gflops": round(rate / 3, 1), "exp_ns": exp_ns(), "simd": simd(), "ops": rows,
            "provenance": provenance()}


def table(doc: dict) -> str:
    lines = [f"NumPy float64 matmul {doc['matmul_gflops']} GFLOP/s (before, after: "
             f"{', '.join(map(str, doc['matmul_gflops_before_after']))}); "
             f"goal a third: {doc['goal_gflops']} GFLOP/s",
             f"NumPy float64 exp {doc['exp_ns']} ns an element; SIMD: {', '.join(doc['simd']) or 'none'}",
             f"{'case':38s} {'chunk':>5s} {'first s':>8s} {'second s':>9s} {'GFLOP/s':>8s} {'of goal':>8s}"]
    for r in doc["ops"].values():
        goal = "-" if r["of_goal"] is None else f"{100 * r['of_goal']:.0f} %"
        lines.append(f"{r['case']:38s} {r['chunk']:5d} {r['first_s']:8.2f} {r['second_s']:9.2f} "
                     f"{r['gflops']:8.1f} {goal:>8s}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m wkvbench.perf.oracle_rate",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("ops", nargs="*", metavar="OP",
                   help=f"operators among {', '.join(OPS)} (default: all)")
    p.add_argument("--chunk", type=int, help="the oracle's chunk length (default: its own)")
    p.add_argument("--set", dest="shape_set", default="prefill",
                   help="benchmark shape set (default: prefill)")
    p.add_argument("--output", help="write the JSON here")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    unknown = sorted(set(a.ops) - set(OPS))
    if unknown:
        p.error(f"unknown operator {', '.join(unknown)}; known: {', '.join(OPS)}")
    ops = a.ops or list(OPS)
    if a.child:
        _child(ops, a.chunk, a.shape_set)
        return 0
    doc = run(ops, a.chunk, a.shape_set)
    print(table(doc))
    if a.output:
        from pathlib import Path

        from ..results.schemas import atomic_write

        atomic_write(Path(a.output), json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
