"""A verification's availability probes, one process per package (wkvbench/run/probes.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# every registered variant's availability in a fresh interpreter: one after another in this process
# ("sequential"), in 16 threads of this process as verify once probed them ("threads"), or by run/probes.py
ANSWERS = r"""
import json, sys
from wkvkernels.base import availability, variants

names = [v.name for v in variants()]
how = sys.argv[1]
if how == "sequential":
    got = {n: availability(n) for n in names}
elif how == "threads":
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        got = dict(zip(names, pool.map(availability, names)))
else:
    from wkvbench.run.isolate import WorkerConfig
    from wkvbench.run.probes import probe
    objs = {v.name: v for v in variants()}
    cfg = WorkerConfig(entry_points=False, jobs=2)
    got = {n: f.result() for n, f in probe(names, objs, cfg).items()}
    cfg.close_idle()
packages = ("fla", "rwkv_ops", "rwkv7_hf", "sglang")
print(json.dumps({"answers": {n: [a.ok, a.reason, a.error] for n, a in got.items()},
                  "imported": sorted(m for m in packages if m in sys.modules)}))
"""


def _answers(how: str) -> dict:
    path = os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))
    p = subprocess.run([sys.executable, "-c", ANSWERS, how], capture_output=True, text=True, cwd=REPO,
                       env={**os.environ, "PYTHONPATH": path}, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_the_probe_processes_answer_as_one_thread_would_and_the_parent_imports_no_package():
    """Probed side by side in threads of one interpreter, Python's imports saw packages half initialized: on
    this CPU every variant of FLA read "partially initialized module 'torch'", and on the H200 runs of
    2bf9428 three available variants became SKIPs with false reasons (run/probes.py). One process per
    package, each probing in one thread, answers as a single thread does; the parent imports none."""
    seq, procs = _answers("sequential"), _answers("processes")
    assert procs["answers"] == seq["answers"]
    assert procs["imported"] == []  # the packages were imported in the probe processes only
    assert seq["imported"]  # ... where one thread's probes import them (this test would otherwise be empty)


PLUGIN = '''
import os

from wkvbench.run.plugins import register_function
from wkvkernels.base import Availability
from wkvoracle import recurrent_gla

dies = register_function("gla.probetest.a_dies", "gla", lambda inputs, dtype: recurrent_gla(**inputs))
register_function("gla.probetest.b_after", "gla", lambda inputs, dtype: recurrent_gla(**inputs))


def available():
    if "WKVBENCH_RESULT_FD" in os.environ:  # in its package's probe process: it dies there
        os._exit(7)
    return Availability.yes()


dies.available = available
'''


def test_a_probe_process_that_dies_makes_its_variants_errors_never_skips(tmp_path):
    """Both variants are one package's, probed in name order: the process dies on the first, and neither
    gets an answer. Their rows are ERRORs that say so."""
    plugin = tmp_path / "probe_dies.py"
    plugin.write_text(PLUGIN)
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "wkvbench", "verify", "--no-entry-points",
                        "--plugin", str(plugin), "--variant", "gla.probetest.*", "--dtype", "fp32",
                        "--domain", "model", "--output", str(out)],
                       capture_output=True, text=True, cwd=REPO, timeout=600)
    doc = json.loads(out.read_text())
    rows = doc["results"]
    assert {r["variant"] for r in rows} == {"gla.probetest.a_dies", "gla.probetest.b_after"}, p.stderr[-2000:]
    for r in rows:
        assert r["status"] == "ERROR", r
        assert "availability probe process exited with code 7" in r["reason"], r["reason"]
    assert p.returncode != 0
