"""FINDINGS.md and ``KNOWN_FAILURES`` name the same keys, and every finding has the same fields.

FINDINGS.md has one ``### `` section per finding, each with the fields ``**What:**``,
``**Reproduce:**`` (at least one command in backticks), ``**KNOWN_FAILURES:**`` (its keys as code,
``("variant glob", "case glob")``, or ``none: <why>``) and ``**Upstream:**``. Every key of
``wkvbench.judge.tolerances.KNOWN_FAILURES`` (entries of value ``None`` included) and of its ``MARGINAL``
(known failures at their limit) is named under exactly one finding, and every key named there exists.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FINDINGS = REPO / "FINDINGS.md"
FIELDS = ("What", "Reproduce", "KNOWN_FAILURES", "Upstream")

_HEADING = re.compile(r"^(#{1,3}) +(.*\S)\s*$", re.M)
_FIELD = re.compile(r"^\*\*(" + "|".join(FIELDS) + r"):\*\*", re.M)
_CODE = re.compile(r"`([^`\n]+)`")

Key = tuple[str, str]


@dataclass
class Finding:
    title: str
    fields: dict[str, str] = field(default_factory=dict)
    repeated: list[str] = field(default_factory=list)  # fields given more than once
    keys: list[Key] = field(default_factory=list)  # keys named in its KNOWN_FAILURES field, in order
    bad_keys: list[str] = field(default_factory=list)  # code spans that look like keys but are not


def _key(span: str) -> Key | None | str:
    """A key tuple from a code span, None if the span is not meant as a key, the span if it is malformed."""
    if not span.lstrip().startswith("("):
        return None
    try:
        value = ast.literal_eval(span)
    except (ValueError, SyntaxError):
        return span
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(s, str) for s in value):
        return value
    return span


def parse(text: str) -> list[Finding]:
    """The ``### `` sections of ``text``, each up to the next heading of level 1 to 3."""
    heads = list(_HEADING.finditer(text))
    findings = []
    for i, h in enumerate(heads):
        if h.group(1) != "###":
            continue
        body = text[h.end():heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        f = Finding(h.group(2))
        marks = list(_FIELD.finditer(body))
        for j, m in enumerate(marks):
            name = m.group(1)
            value = body[m.end():marks[j + 1].start() if j + 1 < len(marks) else len(body)].strip()
            if name in f.fields:
                f.repeated.append(name)
                f.fields[name] += "\n" + value
            else:
                f.fields[name] = value
        for span in _CODE.findall(f.fields.get("KNOWN_FAILURES", "")):
            k = _key(span)
            if isinstance(k, tuple):
                f.keys.append(k)
            elif isinstance(k, str):
                f.bad_keys.append(k)
        findings.append(f)
    return findings


@dataclass
class Report:
    findings: list[Finding]
    missing: list[Key]  # in KNOWN_FAILURES, named under no finding
    unknown: list[tuple[str, Key]]  # (finding, key) named but not in KNOWN_FAILURES
    repeated: list[tuple[Key, list[str]]]  # named more than once: the findings naming it
    field_problems: list[str]


def check(text: str, known: dict[Key, str | None]) -> Report:
    findings = parse(text)
    named: dict[Key, list[str]] = {}
    for f in findings:
        for k in f.keys:
            named.setdefault(k, []).append(f.title)
    problems = []
    titles = Counter(f.title for f in findings)
    problems += [f"two findings are titled {t!r}" for t, n in titles.items() if n > 1]
    for f in findings:
        where = f"### {f.title}"
        absent = [n for n in FIELDS if n not in f.fields]
        if absent:
            problems.append(f"{where}: no {', '.join(f'**{n}:**' for n in absent)} field")
        if f.repeated:
            problems.append(f"{where}: {', '.join(f'**{n}:**' for n in f.repeated)} given more than once")
        empty = [n for n in FIELDS if n in f.fields and not f.fields[n]]
        if empty:
            problems.append(f"{where}: empty {', '.join(f'**{n}:**' for n in empty)}")
        if "Reproduce" in f.fields and not any(s.strip() for s in _CODE.findall(f.fields["Reproduce"])):
            problems.append(f"{where}: **Reproduce:** has no command in backticks")
        kf = f.fields.get("KNOWN_FAILURES", "")
        if f.bad_keys:
            problems.append(f"{where}: **KNOWN_FAILURES:** code spans that are not (variant glob, case glob) "
                            f"string pairs: {f.bad_keys}")
        if "KNOWN_FAILURES" in f.fields and kf:
            says_none = kf.lower().startswith("none")
            if not f.keys and not says_none:
                problems.append(f"{where}: **KNOWN_FAILURES:** names no key and does not say 'none: <why>'")
            if f.keys and says_none:
                problems.append(f"{where}: **KNOWN_FAILURES:** says 'none' but names keys")
    return Report(
        findings=findings,
        missing=[k for k in known if k not in named],
        unknown=[(t, k) for k, ts in named.items() if k not in known for t in ts],
        repeated=[(k, ts) for k, ts in named.items() if len(ts) > 1],
        field_problems=problems,
    )


def _as_code(k: Key) -> str:
    return f'`("{k[0]}", "{k[1]}")`'


def missing_message(report: Report, known: dict[Key, str | None]) -> str:
    lines = [f"{len(report.missing)} KNOWN_FAILURES key(s) are named in no FINDINGS.md finding. Add each, "
             "as written here, to the **KNOWN_FAILURES:** field of its finding (or to a new `### ` finding "
             "with **What:**, **Reproduce:**, **KNOWN_FAILURES:**, **Upstream:**); the reason from "
             "tolerances.py follows each:"]
    for k in report.missing:
        why = known[k] if known[k] is not None else "None: an exception to a broader key"
        lines.append(f"  - {_as_code(k)}    # {why}")
    return "\n".join(lines)


# --- the real files ------------------------------------------------------------------------------------


def _real() -> tuple[Report, dict[Key, str | None]]:
    from wkvbench.judge.tolerances import KNOWN_FAILURES, MARGINAL

    known = {**KNOWN_FAILURES, **MARGINAL}
    return check(FINDINGS.read_text(), known), known


def test_every_known_failure_key_is_named_in_findings():
    report, known = _real()
    missing = report.missing
    assert not missing, missing_message(report, known)


def test_every_key_named_in_findings_is_a_known_failure_key():
    report, _ = _real()
    unknown = report.unknown
    assert not unknown, ("keys named in FINDINGS.md but absent from KNOWN_FAILURES in wkvbench/judge/"
                         "tolerances.py (fix the spelling, or drop them from the finding):\n"
                         + "\n".join(f"  - {_as_code(k)} under ### {t}" for t, k in unknown))


def test_every_key_is_named_under_exactly_one_finding():
    report, _ = _real()
    repeated = report.repeated
    assert not repeated, "keys named more than once in FINDINGS.md:\n" + "\n".join(
        f"  - {_as_code(k)} under {ts}" for k, ts in report.repeated)


def test_every_finding_has_the_four_fields_and_a_reproduce_command():
    report, _ = _real()
    assert len(report.findings) >= 20, f"only {len(report.findings)} `### ` findings parsed from FINDINGS.md"
    problems = report.field_problems
    assert not problems, "FINDINGS.md:\n" + "\n".join(f"  - {p}" for p in report.field_problems)


def test_readme_links_to_findings():
    assert "](FINDINGS.md)" in (REPO / "README.md").read_text()


# --- the checker on planted texts ----------------------------------------------------------------------

PLANTED_KEYS: dict[Key, str | None] = {
    ("a.fla.chunk", "*/fp32/*"): "TF32 dots",
    ("b.mlx.ops", "b/lw0/*/bf16/*"): "state in the input dtype",
    ("b.mlx.ops", "b/lw0/B1-T1-*"): None,
}

GOOD = """# Findings

Intro.

## FLA

### A uses TF32

**What:** y 8.7e-4 relative.

**Reproduce:** `nox -s verify -- --variant a.fla.chunk --dtype fp32` (GPU).

**KNOWN_FAILURES:** `("a.fla.chunk", "*/fp32/*")`

**Upstream:** none filed.

### B keeps its state in bf16

**What:** state 0.0122 relative.

**Reproduce:** `python -m wkvbench verify --variant b.mlx.ops`

**KNOWN_FAILURES:**
- `("b.mlx.ops", "b/lw0/*/bf16/*")`
- exception (`None`): `("b.mlx.ops", "b/lw0/B1-T1-*")`

**Upstream:** [x/y#1](https://example.invalid/1)

### C is a build problem

**What:** import fails.

**Reproduce:** `python -c "import c"`

**KNOWN_FAILURES:** none: patched before the build.

**Upstream:** none filed.

## Corrections

Not a finding: `("z.not", "a key")` here is not counted.
"""


def test_planted_good_text_passes():
    r = check(GOOD, PLANTED_KEYS)
    assert [f.title for f in r.findings] == ["A uses TF32", "B keeps its state in bf16",
                                             "C is a build problem"]
    assert r.findings[1].keys == [("b.mlx.ops", "b/lw0/*/bf16/*"), ("b.mlx.ops", "b/lw0/B1-T1-*")]
    assert (r.missing, r.unknown, r.repeated, r.field_problems) == ([], [], [], [])


def test_planted_missing_key_is_named_exactly():
    text = GOOD.replace('- exception (`None`): `("b.mlx.ops", "b/lw0/B1-T1-*")`\n', "")
    r = check(text, PLANTED_KEYS)
    assert r.missing == [("b.mlx.ops", "b/lw0/B1-T1-*")]
    msg = missing_message(r, PLANTED_KEYS)
    assert '`("b.mlx.ops", "b/lw0/B1-T1-*")`' in msg and "None: an exception" in msg
    assert '"*/fp32/*"' not in msg  # only the missing key is listed
    more = {**PLANTED_KEYS, ("d.ggml.cpu", "d/*"): "new upstream bug"}
    r = check(GOOD, more)
    assert r.missing == [("d.ggml.cpu", "d/*")]
    assert '`("d.ggml.cpu", "d/*")`    # new upstream bug' in missing_message(r, more)


def test_planted_unknown_and_repeated_keys():
    key = '`("a.fla.chunk", "*/fp32/*")`'
    text = GOOD.replace(key, key + ', `("a.fla.chunk", "*/fp16/*")`')
    assert check(text, PLANTED_KEYS).unknown == [("A uses TF32", ("a.fla.chunk", "*/fp16/*"))]
    text = GOOD.replace("**KNOWN_FAILURES:** none: patched before the build.",
                        '**KNOWN_FAILURES:** `("a.fla.chunk", "*/fp32/*")`')
    assert check(text, PLANTED_KEYS).repeated == [
        (("a.fla.chunk", "*/fp32/*"), ["A uses TF32", "C is a build problem"])]


def test_planted_field_problems():
    no_upstream = GOOD.replace("**Upstream:** none filed.\n\n### B", "### B")
    assert check(no_upstream, PLANTED_KEYS).field_problems == ["### A uses TF32: no **Upstream:** field"]
    no_command = GOOD.replace('**Reproduce:** `python -c "import c"`', "**Reproduce:** see above")
    assert check(no_command, PLANTED_KEYS).field_problems == [
        "### C is a build problem: **Reproduce:** has no command in backticks"]
    empty = GOOD.replace('**Reproduce:** `python -c "import c"`', "**Reproduce:**")
    assert check(empty, PLANTED_KEYS).field_problems[0] == "### C is a build problem: empty **Reproduce:**"
    silent = GOOD.replace("**KNOWN_FAILURES:** none: patched before the build.", "**KNOWN_FAILURES:** n/a")
    assert check(silent, PLANTED_KEYS).field_problems == [
        "### C is a build problem: **KNOWN_FAILURES:** names no key and does not say 'none: <why>'"]
    malformed = GOOD.replace('`("a.fla.chunk", "*/fp32/*")`', '`("a.fla.chunk", */fp32/*)`')
    r = check(malformed, PLANTED_KEYS)
    assert r.missing == [("a.fla.chunk", "*/fp32/*")]
    assert "not (variant glob, case glob)" in r.field_problems[0]


def test_no_known_failure_is_shadowed_by_an_earlier_one():
    """The first matching entry decides (``known_failure``), so an entry whose globs an earlier entry's
    globs already cover can never match: a dead entry would read as a listed finding that is not one."""
    import fnmatch

    from wkvbench.judge.known_failures import KNOWN_FAILURES

    keys = list(KNOWN_FAILURES)
    dead = [(k, e) for i, k in enumerate(keys) for e in keys[:i]
            if fnmatch.fnmatchcase(k[0], e[0]) and fnmatch.fnmatchcase(k[1], e[1])]
    assert not dead, "entries never reached (key, the earlier entry that covers it): " + "; ".join(map(str, dead))
