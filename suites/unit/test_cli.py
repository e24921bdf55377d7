"""``python -m wkvbench``: exit codes, JSON results with provenance, reproduce commands, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wkvbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_verify_writes_results_with_provenance(tmp_path):
    out = tmp_path / "r.json"
    p = _run("verify", "--variant", "gla.torch.*", "--dtype", "fp32", "--domain", "model",
             "--output", str(out), "--no-entry-points")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "passed, 0 failed" in p.stdout
    doc = json.loads(out.read_text())
    assert doc["counts"]["PASS"] == 3 and doc["counts"]["FAIL"] == 0
    prov = doc["provenance"]
    for key in ("timestamp", "machine", "versions", "git", "gpu"):
        assert key in prov
    assert prov["versions"]["numpy"]
    r = doc["results"][0]
    assert r["errors"]["y"]["floor_x"] > 0 and r["case"].startswith("gla/model/")
    assert not out.with_suffix(".partial.jsonl").exists()


def test_a_failing_plugin_exits_nonzero_with_a_reproduce_command(tmp_path):
    plugin = tmp_path / "bad.py"
    plugin.write_text(
        "from wkvbench.run.plugins import register_function\n"
        "from wkvoracle import recurrent_gla\n"
        "def f(inputs, dtype):\n"
        "    out = recurrent_gla(**inputs)\n"
        "    return {'y': out['y'] * 1.01, 'state': out['state']}\n"
        "register_function('gla.mylab.bad', 'gla', f)\n"
    )
    out = tmp_path / "r.json"
    p = _run("verify", "--plugin", str(plugin), "--variant", "gla.mylab.*", "--domain", "model",
             "--output", str(out))
    assert p.returncode == 1
    assert "reproduce: nox -s verify -- --variant gla.mylab.bad --case gla/model/" in p.stdout
    assert "shrunk to gla/model/B1-T1-H1-N64" in p.stdout and "python -m wkvbench replay" in p.stdout
    assert "SKIP" in p.stdout or "skipped" in p.stdout  # bf16/fp16 are not declared: skipped with reason
    doc = json.loads(out.read_text())
    assert doc["skips_by_reason"]
    assert all(r["reproduce"] for r in doc["results"] if r["status"] == "FAIL")


def test_exact_case_reproduces(tmp_path):
    cid = "wkv4/stress/B1-T1-H1-N64-h0/bf16/s0"
    p = _run("verify", "--variant", "wkv4.torch.recurrent", "--case", cid, "--output", str(tmp_path / "r.json"))
    assert p.returncode == 0
    assert json.loads((tmp_path / "r.json").read_text())["results"][0]["case"] == cid


def test_bad_input_gives_a_message_not_a_traceback():
    p = _run("verify", "--case", "wkv7/model/B2-T64/bf16/s0")
    assert p.returncode == 2 and "bad shape" in p.stdout and "Traceback" not in p.stderr
    p = _run("verify", "--variant", "nothing.matches.this")
    assert p.returncode == 2 and "no registered variant" in p.stdout


def test_list_and_case_commands():
    p = _run("list")
    assert p.returncode == 0 and "wkv7.torch.recurrent" in p.stdout
    p = _run("case", "gdn/uniform/B1-T4-H1-N16/fp32/s0")
    assert p.returncode == 0 and "oracle.y" in p.stdout


def test_verify_backward_checks_gradients(tmp_path):
    out = tmp_path / "g.json"
    p = _run("verify", "--backward", "--variant", "gla.torch.*", "--dtype", "fp32", "--domain", "model",
             "--output", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(out.read_text())
    assert doc["selection"]["backward"] and doc["counts"]["PASS"] == 3
    r = doc["results"][0]
    assert r["kind"] == "backward" and {"grad_q", "grad_k", "grad_v", "grad_lw", "grad_state"} <= set(r["errors"])


def test_ci_runs_exactly_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    line = next(ln for ln in readme.splitlines() if ln.endswith("nox -s tests") and ln.startswith("python3"))
    assert line in ci.splitlines()


def test_verify_mutants_reports_the_kill_rate(tmp_path):
    out = tmp_path / "m.json"
    p = _run("verify", "--mutants", "--op", "wkv4", "--output", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "kill rate 2/2" in p.stdout
    assert json.loads(out.read_text())["mutants"] == {"killed": 2, "total": 2, "survivors": []}


BAD_INPUT = [
    # (arguments, plug-in source or None, the message that must appear)
    (["verify", "--case", "wkv7/model/B2-T64/bf16/s0"], None, "bad shape"),
    (["verify", "--case", "wkv7/model/B1-T0-H1-N8/fp32/s0"], None, "every dimension must be >= 1"),
    (["verify", "--case", "wkv9/model/B1-T1-H1-N8/fp32/s0"], None, "unknown operator"),
    (["verify", "--case", "wkv7/model/B1-T1-H1-N8/int8/s0"], None, "unknown dtype"),
    (["verify", "--seed", "-1", "--variant", "gla.torch.*"], None, "seed must be >= 0"),
    (["verify", "--variant", "nothing.matches.this"], None, "no registered variant"),
    (["verify", "--plugin", "/nonexistent/p.py"], None, "plug-in file not found"),
    (["verify", "--plugin", "PLUGIN"], "def broken(:\n", "failed to import: SyntaxError"),
    (["verify", "--plugin", "PLUGIN"], "import numpy\nundefined_name()\n", "failed to import: NameError"),
    (["verify", "--plugin", "PLUGIN"],
     "from wkvbench.run.plugins import register_function\nregister_function('wkv9.x.y', 'wkv9', print)\n",
     "unknown operator 'wkv9'"),
    (["verify", "--plugin", "PLUGIN"],
     "from wkvbench.run.plugins import register_function\n"
     "register_function('wkv7.torch.recurrent', 'wkv7', print)\n",
     "already registered"),
    (["drift", "--op", "wkv7", "--variant", "wkv7.torch.*", "--T", "0"], None, "every dimension must be >= 1"),
    (["replay", "/nonexistent/x.npz"], None, "No such file"),
]


@pytest.mark.parametrize(("args", "plugin", "needle"), BAD_INPUT, ids=[n for _, _, n in BAD_INPUT])
def test_bad_input_is_rejected_with_a_clear_message(args, plugin, needle, tmp_path):
    if plugin is not None:
        path = tmp_path / "plugin.py"
        path.write_text(plugin)
        args = [str(path) if a == "PLUGIN" else a for a in args]
    p = _run(*args, "--no-entry-points") if args[0] != "replay" else _run(*args)
    assert p.returncode == 2, p.stdout + p.stderr
    assert needle in " ".join(p.stdout.split()), p.stdout  # rich wraps long lines
    assert "Traceback" not in p.stdout + p.stderr
