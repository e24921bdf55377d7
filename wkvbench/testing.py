"""wkvbench in a kernel repository's own test suite: an assertion and an opt-in pytest plug-in.

::

    from wkvbench.testing import assert_matches_oracle

    def test_my_gdn():
        assert_matches_oracle(my_gdn, op="gdn", dtype="bf16")   # every default bf16 GDN case

``assert_matches_oracle`` registers the function as a plug-in variant would be (``register_function``,
the same ``FunctionVariant``), judges it with the suite's own judge (``Checker.check``: the float64
oracle on the inputs as the kernel sees them, the tolerance table, the in-tree baseline where torch is
installed) and raises ``AssertionError`` naming, for every case that is not a PASS, its verdict, each
tensor's error as a multiple of its rounding floor and the limit, and the case id, which reproduces the
inputs bit for bit. Nothing is judged twice: this module only selects cases and words the message.

The pytest plug-in parametrises a test over a case set, one test per case (its id the case id)::

    pytest_plugins = ["wkvbench.testing"]          # or: pytest -p wkvbench.testing

    @pytest.mark.wkvbench(op="gdn", dtypes=("fp32", "bf16"))
    def test_my_gdn(wkvbench_case):
        assert_matches_oracle(my_gdn, cases=wkvbench_case)

It is opt-in, on purpose: a ``pytest11`` entry point would load wkvbench into every pytest run of every
environment it is installed in (FLA's own suite, for one), for tests that never asked for it.
docs/testing.md has the whole story.
"""

from __future__ import annotations

import importlib.util
import re
import unittest
from collections.abc import Callable, Iterable
from typing import Any

from wkvkernels.base import KernelVariant, Unsupported, get, register, unregister
from wkvkernels.cases import Case
from wkvkernels.ops import DTYPES

from . import __version__
from ._api import checker
from .judge.case_sets import CASE_SETS, default_cases
from .judge.check import BAD, PASS, SKIP, XFAIL, CheckResult
from .run.plugins import register_function

__all__ = ["assert_matches_oracle", "oracle_cases"]


def oracle_cases(op: str, dtypes: str | Iterable[str] = ("fp32",), case_set: str = "default",
                 domains: Iterable[str] | None = None, seed: int | None = None,
                 conventions: bool = False) -> list[Case]:
    """The cases of ``case_set`` (``default``, ``edge``, ``gpu``) for operator ``op`` in ``dtypes``,
    optionally only the value ``domains`` named: what ``wkvbench verify --op OP --set SET`` checks.
    The cases in production conventions (grouped value heads, state pools, packed sequences, raw gates;
    docs/conventions.md) only with ``conventions=True``: a plain function takes the canonical problem.
    ``ids=str`` gives ``pytest.mark.parametrize`` the case ids as test ids."""
    dtypes = (dtypes,) if isinstance(dtypes, str) else tuple(dtypes)
    bad = [d for d in dtypes if d not in DTYPES]
    if bad or not dtypes:
        raise ValueError(f"unknown dtype(s) {bad or '(none given)'}; known: {', '.join(DTYPES)}")
    if case_set not in CASE_SETS:
        raise ValueError(f"unknown case set {case_set!r}; known: {', '.join(CASE_SETS)}")
    cases = default_cases((op,), dtypes, seed, case_set)
    if domains is not None:
        domains = (domains,) if isinstance(domains, str) else tuple(domains)
        cases = [c for c in cases if c.domain in domains]
    return cases if conventions else [c for c in cases if not c.shape.conventions]


def _as_cases(cases: Any) -> list[Case]:
    if isinstance(cases, (Case, str)):
        cases = [cases]
    return [Case.parse(c) if isinstance(c, str) else c for c in cases]


def _temporary_name(op: str, fn: Callable) -> str:
    stem = re.sub(r"\W+", "_", getattr(fn, "__qualname__", None) or type(fn).__name__).strip("_") or "fn"
    name, n = f"{op}.testing.{stem}", 2
    while True:
        try:
            get(name)
        except KeyError:
            return name
        name, n = f"{op}.testing.{stem}_{n}", n + 1


def _supported(v: KernelVariant, case: Case) -> str | None:
    """Why ``v`` refuses ``case`` (its ``supports``), or None."""
    try:
        av = v.supports(case)
    except Unsupported as exc:
        return str(exc)
    return None if av else (av.reason or "not supported")


def assert_matches_oracle(fn: Callable[[dict, str], dict] | KernelVariant | str, op: str | None = None,
                          dtype: str | Iterable[str] = "fp32", cases: Case | str | Iterable[Case | str] | None = None,
                          *, case_set: str = "default", domains: Iterable[str] | None = None,
                          seed: int | None = None, name: str | None = None, **register_kwargs: Any) -> list[CheckResult]:
    """Judge ``fn`` against the float64 oracle and raise ``AssertionError`` unless every judged case passes.

    ``fn`` is a plug-in function ``fn(inputs, dtype) -> {"y": ..., "state": ...}`` (docs/adding-a-kernel.md:
    canonical float32 NumPy inputs in, canonical outputs in their contract dtypes out), a ``KernelVariant``
    instance or class (registered for the call where it is not), or the name of a registered variant. ``cases`` is a ``Case``, a case id, or a list of them;
    without it, ``oracle_cases(op, dtype, case_set, domains, seed)``, less the cases the variant refuses
    by its declaration (production conventions a plain function does not take, an initial state with
    ``supports_state=False``). ``register_kwargs`` go to ``register_function`` (``output_dtypes``,
    ``state_precision`` with ``state_precision_reason``, ``supports_state``, ``check``). ``op`` may be left
    out when ``cases`` or a variant says it.

    Returns the results (``CheckResult``: ``status``, ``errors[tensor].floor_x``, ``limits``). Raises
    ``AssertionError`` when a case is FAIL, ERROR or XPASS, or when nothing was judged; ``unittest.SkipTest``
    (a skip in pytest and unittest) when every requested case was refused, with the reasons.
    """
    __tracebackhide__ = True  # pytest shows the assertion's message, not this module's frames
    explicit = cases is not None
    case_list = _as_cases(cases) if explicit else []
    if explicit and not case_list:
        raise ValueError("assert_matches_oracle: cases is empty")
    if isinstance(fn, type) and issubclass(fn, KernelVariant):
        fn = fn()
    op = op or (case_list[0].op if case_list else None) or (fn.operator if isinstance(fn, KernelVariant) else None)
    if isinstance(fn, str):
        variant, temporary = get(fn), False
        op = op or variant.operator
    elif isinstance(fn, KernelVariant):  # registered for the call if it is not (the judge looks it up by name)
        try:
            get(fn.name)
            temporary = False
        except KeyError:
            register(fn)
            temporary = True
        variant = fn
    else:
        if op is None:
            raise ValueError("assert_matches_oracle: name the operator (op='gdn', ...) or give cases")
        dtypes = sorted({c.dtype for c in case_list}) if explicit else \
            ([dtype] if isinstance(dtype, str) else list(dtype))
        variant = register_function(name or _temporary_name(op, fn), op, fn, dtypes=dtypes, **register_kwargs)
        temporary = True
    try:
        if not explicit:
            case_list = oracle_cases(op, dtype, case_set, domains, seed)
        wrong_op = [c.id for c in case_list if c.op != variant.operator]
        if wrong_op:
            raise ValueError(f"assert_matches_oracle: {variant.name} is a {variant.operator} variant; "
                             f"cases of another operator: {', '.join(wrong_op[:3])}")
        refused = {}
        if not explicit:  # the set's cases the variant refuses by declaration: not asked for, not run
            refused = {c.id: r for c in case_list if (r := _supported(variant, c)) is not None}
            case_list = [c for c in case_list if c.id not in refused]
        results = [checker().check(variant, c) for c in case_list]
    finally:
        if temporary:
            unregister(variant.name)
    _judge(variant.name, results, refused)
    return results


def _judge(variant: str, results: list[CheckResult], refused: dict[str, str]) -> None:
    __tracebackhide__ = True
    bad = [r for r in results if r.status in BAD]
    judged = [r for r in results if r.status in (PASS, XFAIL)]
    skipped = [r for r in results if r.status == SKIP]
    if not bad and judged:
        return
    if not bad:  # nothing ran: a skip, never a pass
        reasons = sorted({r.reason for r in skipped} | set(refused.values()))
        raise unittest.SkipTest(f"wkvbench: {variant} ran no case ({len(skipped) + len(refused)} refused: "
                                f"{'; '.join(reasons) or 'no case selected'})")
    raise AssertionError(failure_message(variant, results))


def _errors_line(r: CheckResult) -> list[str]:
    out = []
    for tensor, e in r.errors.items():
        limit = r.limits.get(tensor)
        over = limit is not None and not e.rel <= limit
        out.append(f"    {tensor:<8} rel {e.rel:9.3g}  {e.floor_x:9.3g}x floor"
                   + (f"  limit {limit:.3g} ({limit / e.floor:.3g}x floor)" if limit is not None else "")
                   + ("  <- over" if over else ""))
    return out


def failure_message(variant: str, results: list[CheckResult]) -> str:
    """The AssertionError's text: one block per case that is not a PASS (verdict, case id, each tensor's
    relative error, floor multiple and limit, the reason), then the counts."""
    bad = [r for r in results if r.status in BAD]
    dtypes = ", ".join(sorted({r.case.dtype for r in results}))
    lines = [f"wkvbench: {variant} does not match the float64 oracle on {len(bad)} of {len(results)} "
             f"cases ({dtypes})"]
    for r in bad:
        lines.append(f"  {r.verdict} {r.case.id}")
        lines += _errors_line(r)
        if r.reason:
            lines.append(f"    why: {r.reason}")
        lines.append(f"    reproduce id: {r.case.id}")
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    lines.append("  " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: kv[0] != PASS)))
    lines.append("  a case id reproduces its inputs bit for bit: wkvbench.generate_inputs(wkvbench.Case.parse(ID)), "
                 "or `wkvbench case ID`")
    return "\n".join(lines)


# ---- the pytest plug-in (opt-in: pytest_plugins = ["wkvbench.testing"], or -p wkvbench.testing) ----

MARKER = ("wkvbench(op, dtypes=('fp32',), case_set='default', domains=None, seed=None, conventions=False): "
          "parametrize the "
          "test's `wkvbench_case` argument over wkvbench's cases of that operator (wkvbench.testing)")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", MARKER)


def pytest_report_header(config: Any) -> str:
    base = ("the in-tree baseline (torch) bounds the limits" if importlib.util.find_spec("torch") is not None
            else "torch is not installed: limits are the tolerance table's ceilings, without the in-tree baseline")
    return f"wkvbench {__version__}: kernels judged against the float64 oracle; {base}"


def pytest_generate_tests(metafunc: Any) -> None:
    if "wkvbench_case" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("wkvbench")
    if marker is None:
        raise ValueError(f"{metafunc.definition.nodeid} asks for wkvbench_case but has no "
                         "@pytest.mark.wkvbench(op=...) saying which cases")
    cases = oracle_cases(*marker.args, **marker.kwargs)
    metafunc.parametrize("wkvbench_case", cases, ids=[c.id for c in cases])
