"""The console read at a glance (``wkvbench.run.show.print_report``): one line per variant family, skips and
known failures folded by reason, the failures and then the summary last, at most 80 lines, nothing wider
than the console but the commands; ERROR, CRASH and TIMEOUT shown as themselves (never as FAIL), in every
table, the summary and the exit status. Synthetic results: the full CPU matrix is not run here."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from wkvbench.judge.check import (
    CRASH,
    ERROR,
    FAIL,
    PASS,
    SKIP,
    TIMEOUT,
    XFAIL,
    XPASS,
    CheckResult,
    exit_status,
    group_status,
)
from wkvbench.judge.metrics import TensorError
from wkvbench.report.matrix import cell
from wkvbench.run.show import print_report, summary_table
from wkvbench.run.verify import Report
from wkvkernels.cases import Case

REPO = Path(__file__).resolve().parents[2]
WIDTH = 100
CMD_PREFIXES = ("  reproduce: ", "  shrunk to ", "results: ")  # printed whole, so they can be copied


def _err(rel: float, floor: float = 1e-3) -> TensorError:
    return TensorError(rel, rel, floor, 0.0, 1.0, 1.0, 0, (), "bf16")


def _row(variant: str, i: int, status: str, reason: str = "", dtype: str = "bf16") -> CheckResult:
    case = Case.parse(f"{variant.split('.')[0]}/model/B1-T{8 + i}-H1-N16/{dtype}/s0")
    r = CheckResult(variant, case, status, reason, seconds=0.01)
    if status in (PASS, FAIL, XFAIL, XPASS):
        r.errors = {"y": _err(2e-3 if status != FAIL else 5e-1), "state": _err(1e-3)}
        r.limits = {"y": 1e-2, "state": 1e-2}
    if status == CRASH:
        r.stderr_tail = "\n".join(f"worker line {k}" for k in range(20)) + "\nFatal Python error: Segmentation fault"
    return r


def _synthetic(bad: bool = True, fails: bool = True) -> Report:
    """30 families of passing variants, 600 skips for 12 reasons, 60 known failures of 3 listed reasons
    (each with its own numbers), and: 25 FAILs, 40 ERRORs of one kernel that raised, 3 CRASH, 2 TIMEOUT."""
    rows = []
    for f in range(30):
        for v in range(3):
            name = f"gdn.src{f:02d}.algo{v}"
            rows += [_row(name, i, PASS) for i in range(4)]
            rows += [_row(name, i, SKIP, f"{'package' if f % 2 else 'CUDA'} {f % 12} not installed here, "
                          + "a long explanation of why " * 8) for i in range(4, 11)]
    for f in range(4):
        rows += [_row(f"kda.xf{f}.chunk", i, XFAIL, f"known: upstream issue {f % 3} in the state pool | "
                      f"state: rel {0.1 + i / 100:.3g} (1e3x floor) > limit 1e-2") for i in range(15)]
    if bad:
        if fails:
            rows += [_row("wkv7.mylab.wrong", i, FAIL, f"y: rel 0.5 (500x floor) > limit 0.01 #{i}") for i in range(25)]
        rows += [_row("gla.mylab.raises", i, ERROR, "RuntimeError: CUDA kernel launch failed " * 4) for i in range(40)]
        rows += [_row("gla.mylab.segv", i, CRASH, "worker died: signal 11 (SIGSEGV)") for i in range(3)]
        rows += [_row("gla.mylab.hang", i, TIMEOUT, "no result after 30 s") for i in range(2)]
    return Report(results=rows, seconds=12.5)


def _render(report: Report, width: int = WIDTH, **kw) -> list[str]:
    buf = io.StringIO()
    con = Console(file=buf, width=width, force_terminal=False, color_system=None)
    print_report(report, con, results=Path("/tmp/r.json"), **kw)
    return buf.getvalue().splitlines()


def test_the_default_report_fits_80_lines_failures_then_the_summary_last():
    rep = _synthetic()
    lines = _render(rep)
    assert len(lines) <= 80, "\n".join(lines)
    last = lines[-1]
    assert last.startswith("FAIL: 360 passed, 25 failed, 40 errors, 3 crashed, 2 timed out, 630 skipped, "
                           "60 xfailed in 12.5s"), last
    # one line per family that judged something, the 30 of them, before everything else
    assert sum(1 for ln in lines if ln.startswith("gdn.src")) == 30
    # skips folded: a count per reason, at most 8 lines of reasons; known failures by their listed reason
    i_skip = next(i for i, ln in enumerate(lines) if ln.startswith("skipped 630"))
    i_known = next(i for i, ln in enumerate(lines) if ln.startswith("known failures (XFAIL) 60, 3 distinct"))
    i_fail = next(i for i, ln in enumerate(lines) if ln.startswith("failures (70):"))
    assert i_skip < i_known < i_fail
    assert any("for 5 other reasons (--details lists them)" in ln for ln in lines[i_skip:i_known])
    assert any(ln.split()[:1] == ["30"] and "upstream issue 0" in ln for ln in lines[i_known:i_fail])
    # the failures are the last screen: each shown one with its tensor, floor multiple and command
    tail = lines[i_fail:]
    assert len(tail) <= 40
    assert any(ln.startswith("FAIL wkv7.mylab.wrong ") and "y 5e+02x floor (limit 10x)" in ln for ln in tail)
    for variant, status in (("wkv7.mylab.wrong", FAIL), ("gla.mylab.raises", ERROR), ("gla.mylab.segv", CRASH),
                            ("gla.mylab.hang", TIMEOUT)):
        i = next(i for i, ln in enumerate(tail) if ln.startswith(f"{status} {variant} "))
        assert tail[i + 1].startswith(f"  reproduce: nox -s verify -- --variant {variant} --case ") or \
            "reproduce:" in tail[i + 1], tail[i + 1]
    assert any("more failures (--details lists them" in ln for ln in tail)
    assert "  stderr tail:" in tail and "    Fatal Python error: Segmentation fault" in tail
    # nothing wider than the console but the commands
    wide = [ln for ln in lines if len(ln) > WIDTH and not ln.startswith(CMD_PREFIXES)]
    assert not wide, wide


def test_error_crash_and_timeout_are_never_shown_as_fail():
    rep = _synthetic(fails=False)
    for lines in (_render(rep), _render(rep, details=True)):
        text = "\n".join(lines)
        assert "FAIL" not in text.replace("XFAIL", ""), text  # no FAIL anywhere: none failed
        assert lines[-1].startswith("ERROR: 360 passed, 0 failed, 40 errors, 3 crashed, 2 timed out"), lines[-1]
    table = "\n".join(_render(rep))
    assert any(ln.startswith("gla.mylab") for ln in table.splitlines())
    # the full table names each status with its count
    buf = io.StringIO()
    Console(file=buf, width=200, force_terminal=False).print(summary_table(rep))
    assert "ERROR 40/40" in buf.getvalue() and "CRASH 3/3" in buf.getvalue() and "TIMEOUT 2/2" in buf.getvalue()
    # the HTML report's matrix cell too
    rows = [r.as_dict() for r in rep.results if r.variant == "gla.mylab.raises" and r.case.id.startswith("gla")]
    assert cell(rows).head == "ERROR 40/40" and cell(rows).cls == "fail"
    assert group_status({FAIL: 1, ERROR: 2, PASS: 3, SKIP: 9}) == ("FAIL", "FAIL 1/6, ERROR 2/6")


def test_exit_status_tells_a_wrong_result_from_a_kernel_that_could_not_be_judged():
    assert exit_status({PASS: 5, SKIP: 3, XFAIL: 2}) == 0
    assert exit_status({PASS: 5, FAIL: 1, ERROR: 3}) == 1  # a wrong result outranks
    assert exit_status({PASS: 5, XPASS: 1}) == 1
    for s in (ERROR, CRASH, TIMEOUT):
        assert exit_status({PASS: 5, s: 1}) == 3
    assert exit_status(_synthetic(fails=False).counts()) == 3


def test_a_clean_run_says_pass_and_lists_no_failures():
    lines = _render(_synthetic(bad=False))
    assert lines[-1].startswith("PASS: 360 passed, 0 failed, 630 skipped, 60 xfailed in 12.5s")
    assert not any(ln.startswith("failures") for ln in lines)


def test_details_keeps_the_full_table():
    lines = _render(_synthetic(), width=250, details=True)
    text = "\n".join(lines)
    assert "worst rel error per tensor" in text and "skips by reason" in text
    assert sum(1 for ln in lines if ln.startswith("ERROR gla.mylab.raises")) == 40  # every failure
    assert lines[-1].startswith("FAIL: ")


def test_a_kernel_that_raises_exits_3_and_reads_error_in_a_narrow_pipe(tmp_path):
    plugin = tmp_path / "raises.py"
    plugin.write_text(
        "from wkvbench.run.plugins import register_function\n"
        "def f(inputs, dtype):\n"
        "    raise RuntimeError('this kernel raises on purpose')\n"
        "register_function('gla.mylab.raises', 'gla', f)\n"
    )
    env = {**os.environ, "COLUMNS": "80"}
    env.pop("FORCE_COLOR", None)
    p = subprocess.run([sys.executable, "-m", "wkvbench", "verify", "--plugin", str(plugin), "--variant",
                        "gla.mylab.*", "--dtype", "fp32", "--domain", "model", "--output", str(tmp_path / "r.json"),
                        "--no-entry-points"], cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 3, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert lines[-1].startswith("ERROR: 0 passed, 0 failed, 3 errors") and len(lines[-1]) <= 80, p.stdout
    assert "FAIL" not in p.stdout, p.stdout
    assert any(ln.startswith("ERROR gla.mylab.raises gla/model/") and "RuntimeError: this" in ln for ln in lines)
    wide = [ln for ln in lines if len(ln) > 80 and not ln.startswith(CMD_PREFIXES)]
    assert not wide, wide
