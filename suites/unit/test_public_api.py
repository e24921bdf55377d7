"""The public API (docs/api.md): what ``from wkvbench import ...`` gives, used as a plug-in author does,
by its public names only; ``import wkvbench`` stays light; the import paths of earlier layouts still
work, with a ``WkvbenchDeprecationWarning`` naming the replacement.

The names are frozen here on purpose: removing or renaming one is a decision, made by editing this list
and keeping the old name importable with a warning."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]

PUBLIC = [
    "BAD", "CASE_SETS", "CRASH", "Case", "CheckResult", "DTYPES", "ENTRY_POINT_GROUP", "ERROR", "FAIL",
    "InvalidInput", "KernelVariant", "OPS", "OpSpec", "PASS", "Availability", "Report", "SKIP", "STATUSES",
    "Selection", "Shape", "TIMEOUT", "TensorError", "Unsupported", "WkvbenchDeprecationWarning", "XFAIL", "XPASS",
    "__version__", "as_dtype", "check", "default_cases", "default_state", "generate_inputs", "get",
    "load_plugin", "op_spec", "register", "register_function", "round_inputs", "round_to", "unregister",
    "variants", "verify",
]


def _run(code: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd or REPO, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_the_public_names_are_all_there_and_resolve():
    import wkvbench

    assert sorted(wkvbench.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert getattr(wkvbench, name) is not None, name
    assert set(PUBLIC) <= set(dir(wkvbench))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        wkvbench.nope  # noqa: B018


def test_import_wkvbench_is_light():
    p = _run("import sys, wkvbench; print(sorted(m for m in ('numpy', 'torch', 'wkvkernels', 'wkvoracle', "
             "'rich', 'wkvbench.run') if m in sys.modules))")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_a_plugin_written_with_public_names_only():
    from wkvbench import (DTYPES, OPS, PASS, Availability, Case, KernelVariant, Report, Shape, as_dtype, check,
                          default_cases, generate_inputs, get, register, register_function, round_to, unregister,
                          verify)
    from wkvoracle import ORACLES  # the kernel under test here: the oracle itself (not an API name)

    assert {"gdn", "wkv7"} <= set(OPS) and "bf16" in DTYPES

    def exact(inputs, dtype):
        out = ORACLES["gla"](**{k: (round_to(v, dtype) if k in ("q", "k", "v") else v) for k, v in inputs.items()})
        return {"y": as_dtype(out["y"], dtype), "state": out["state"].astype(np.float32)}

    class Exact(KernelVariant):  # the adapter contract, from the top level
        name, operator, source, backend, algorithm = "gla.public.exact", "gla", "public", "numpy", "recurrent"
        dtypes = frozenset({"fp32", "fp16"})

        def available(self):
            return Availability.yes()

        def prepare(self, inputs, case):
            return dict(inputs), case.dtype

        def run(self, native):
            return exact(*native)

        def to_canonical(self, out):
            return {k: np.asarray(v, np.float64) for k, v in out.items()}

    case = Case("gla", "model", Shape(1, 6, 1, 16, h0=True), "fp16")
    assert set(generate_inputs(case)) >= {"q", "k", "v", "lw", "state"}
    register(Exact)
    register_function("gla.public.function", "gla", exact, dtypes=("fp32", "fp16"))
    try:
        for name in ("gla.public.exact", "gla.public.function"):
            res = check(name, case.id)
            assert res.status == PASS, res.reason
            assert res.errors["y"].floor_x < 3 and res.verdict == "PASS"
        report = verify(variant_globs=["gla.public.*"], case_ids=[case.id, case.with_dtype("fp32").id])
        assert isinstance(report, Report) and report.counts()[PASS] == 4 and not report.failed
        assert get("gla.public.exact").operator == "gla"
        assert any(c.op == "gla" for c in default_cases(("gla",)))
    finally:
        unregister("gla.public.exact")
        unregister("gla.public.function")


def test_public_names_are_the_internal_objects():  # one object, two paths: isinstance checks agree
    import wkvbench
    from wkvbench.run import plugins
    from wkvkernels import base

    assert wkvbench.register_function is plugins.register_function
    assert wkvbench.KernelVariant is base.KernelVariant and wkvbench.load_plugin is plugins.load_file


OLD = {  # an earlier module path -> a name it had, and where that name lives now
    "wkvbench.plugins": ("register_function", "wkvbench.run.plugins"),
    "wkvbench.ops": ("round_to", "wkvkernels.ops"),
    "wkvbench.cases": ("default_cases", "wkvbench.judge.case_sets"),
    "wkvbench.check": ("Checker", "wkvbench.judge.check"),
    "wkvbench.tolerances": ("KNOWN_FAILURES", "wkvbench.judge.tolerances"),
    "wkvbench.verify": ("Selection", "wkvbench.run.verify"),
}


@pytest.mark.parametrize("old", sorted(OLD))
def test_an_earlier_import_path_warns_and_works(old):
    name, home = OLD[old]
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to .*{home}") as rec:
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(home), name)
    assert rec[0].category.__name__ == "WkvbenchDeprecationWarning"
    with pytest.raises(AttributeError, match="moved to"):
        module.no_such_name  # noqa: B018


def test_the_case_module_forwards_to_both_homes():
    sys.modules.pop("wkvbench.cases", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from wkvbench.cases import Case, default_cases  # wkvkernels.cases, then wkvbench.judge.case_sets
    from wkvkernels.cases import Case as NewCase

    assert Case is NewCase and default_cases(("wkv7",))


def test_an_old_plugin_runs_and_its_author_sees_the_warning(tmp_path):
    """A plug-in of the earlier layout (``from wkvbench.plugins import register_function``) still loads
    through ``--plugin``, and the command names the new import (Python hides DeprecationWarnings
    outside ``__main__``; plug-in loading shows ours)."""
    src = (REPO / "wkvbench" / "examples" / "numpy_wkv7.py").read_text()
    old = src.replace("from wkvbench import register_function", "from wkvbench.plugins import register_function")
    assert old != src
    (tmp_path / "old_plugin.py").write_text(old)
    p = subprocess.run([sys.executable, "-m", "wkvbench", "list", "--plugin", "old_plugin.py", "--names",
                        "--no-entry-points", "--variant", "wkv7.example.*"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["wkv7.example.numpy"]
    assert "old_plugin.py:4: WkvbenchDeprecationWarning: wkvbench.plugins moved" in p.stderr
    assert "from wkvbench import register_function" in p.stderr


def test_a_name_that_never_existed_is_not_found():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("wkvbench.no_such_module")
