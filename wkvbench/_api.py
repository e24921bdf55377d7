"""The programmatic entries of the public API: ``check`` (one variant on one case) and ``verify`` (a
selection of the matrix), both in this process and both through the judge that ``wkvbench verify`` uses
(``judge.check.Checker``, ``run.verify.run``): no second judging path.
"""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from wkvkernels.base import KernelVariant, get
from wkvkernels.cases import Case

from .judge.check import Checker, CheckResult
from .run.verify import Report, Selection, run

_CHECKER: Checker | None = None


def checker() -> Checker:
    """The process's shared ``Checker``: generated inputs, oracle results and baseline errors are
    computed once per case however many times a case is checked (a kernel repository's pytest run
    checks several kernels on the same cases)."""
    global _CHECKER
    if _CHECKER is None:
        _CHECKER = Checker()
    return _CHECKER


def check(variant: KernelVariant | str, case: Case | str, inputs: dict | None = None) -> CheckResult:
    """Judge ``variant`` (an instance, or a registered name) on ``case`` (a ``Case`` or a case id such as
    ``"gdn/model/B2-T37-H2-N64-h0/bf16/s0"``) against the float64 oracle: the result's ``status``,
    per-tensor ``errors`` (``rel``, ``floor_x``), ``limits`` and ``reason``. ``inputs`` replaces the
    generated inputs (validated first; bad ones raise ``InvalidInput``)."""
    v = get(variant) if isinstance(variant, str) else variant
    c = Case.parse(case) if isinstance(case, str) else case
    return checker().check(v, c, inputs)


def verify(selection: Selection | None = None, /, *, console: Console | None = None, **fields: Any) -> Report:
    """Run a selection of the verification matrix in this process and return its ``Report``
    (``results``, ``counts()``, ``failed``): ``verify(variant_globs=("gdn.mylab.*",), dtypes=("bf16",))``.
    Keyword arguments are ``Selection``'s fields; nothing is printed unless a ``console`` is given, and
    no file is written (the command ``wkvbench verify`` writes the results file)."""
    if selection is None:
        selection = Selection(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})
    elif fields:
        raise TypeError("verify(): give a Selection or its fields, not both")
    return run(selection, console or Console(file=io.StringIO(), width=100))
