"""The example GPU workflow (``.github/workflows/gpu-gate.yml``) parses, and every ``python -m
wkvbench`` command in it uses flags that the CLI really has."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML is in the 'test' dependency group; not installed here")

from wkvbench.cli import _parser  # noqa: E402
from wkvbench.cli.gate import _parsers  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".github" / "workflows" / "gpu-gate.yml"
# `bench` is written in another branch; until its parser is here, the flags it is specified with
# (issue 7: `python -m wkvbench bench --set NAME --variant GLOB --dtype D --output F.json`)
BENCH_FLAGS = {"--set", "--variant", "--dtype", "--output"}


def _flags(p) -> set[str]:
    return {s for a in p._actions for s in a.option_strings}


def _known_flags(words: list[str]) -> set[str]:
    sub = _parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    cmd = words[0]
    if cmd == "gate":
        mode = words[1] if len(words) > 1 and words[1] in ("ab", "noise") else "compare"
        return _flags(_parsers()[mode])
    if cmd == "bench" and "bench" not in sub:
        return BENCH_FLAGS
    return _flags(sub[cmd])


def _commands(script: str) -> list[list[str]]:
    """Each ``python -m wkvbench ...`` in a shell script (continuations joined) as words, including
    those inside quoted A/B command templates."""
    out: list[list[str]] = []
    for line in script.replace("\\\n", " ").splitlines():
        lex = shlex.shlex(line.replace('"${noise[@]}"', ""), posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        words = list(lex)
        for i in range(len(words) - 2):
            if words[i : i + 3] == ["python", "-m", "wkvbench"]:
                cmd = []
                for w in words[i + 3 :]:
                    if w in ("&&", "||", ";", ")", "|", "&"):
                        break
                    cmd.append(w)
                out.append(cmd)
        for w in words:  # a quoted template holds a command of its own
            if "python -m wkvbench" in w and w != line:
                out += _commands(w)
    return out


def test_workflow_parses_and_has_the_required_steps():
    doc = yaml.safe_load(WORKFLOW.read_text())
    job = doc["jobs"]["gate"]
    assert "self-hosted" in job["runs-on"] and "gpu" in job["runs-on"]
    steps = job["steps"]
    uses = [s.get("uses", "") for s in steps]
    refs = [
        s.get("with", {}).get("ref", "") for s in steps if s.get("uses", "").startswith("actions/checkout")
    ]
    assert any("base.sha" in r for r in refs) and any("head.sha" in r for r in refs)
    assert any(u.startswith("actions/upload-artifact") for u in uses)
    scripts = "\n".join(s.get("run", "") for s in steps)
    assert "gh pr comment" in scripts and '--body-file "$RESULTS/gate.md"' in scripts
    assert '--markdown "$RESULTS/gate.md"' in scripts  # the comment posts what the gate wrote
    assert (
        "gate ab" in scripts and "--confirm" in scripts and "{output}" in scripts and "{variants}" in scripts
    )
    assert steps[-1]["if"] == "steps.gate.outputs.rc != '0'"  # the job fails with the gate


def test_every_wkvbench_command_uses_real_flags():
    doc = yaml.safe_load(WORKFLOW.read_text())
    scripts = "\n".join(s.get("run", "") for s in doc["jobs"]["gate"]["steps"])
    cmds = _commands(scripts)
    assert {"verify", "gate", "bench"} <= {c[0] for c in cmds}
    assert any(c[:2] == ["gate", "ab"] for c in cmds)
    for words in cmds:
        used = {w.split("=")[0] for w in words if w.startswith("--")}
        unknown = used - _known_flags(words)
        assert not unknown, f"{' '.join(words[:2])}: unknown flags {sorted(unknown)}"
