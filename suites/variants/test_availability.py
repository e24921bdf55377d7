"""Availability answers "is the package or the device here", and never absorbs a kernel's own crash.

The Triton-interpreter twins of FLA's kernels (``<variant>.interp``) run their kernel once on a tiny
problem to find out whether the interpreter can execute it. Only the interpreter's own error
(``InterpreterError``) makes a twin unavailable; a kernel that raises on every call (say a
``TypeError`` from its Python wrapper, as in an FLA release whose ``fused_recurrent_rwkv7`` did) is
available, and each of its cases is an ERROR with the exception, not a SKIP "unavailable".
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from triton.runtime.errors import InterpreterError  # noqa: E402

from wkvbench.judge.check import ERROR, Checker  # noqa: E402
from wkvkernels import _fla_env as env  # noqa: E402
from wkvkernels import base  # noqa: E402
from wkvkernels._fla import FlaTriton, interpreter_limit  # noqa: E402
from wkvkernels.cases import Case, Shape  # noqa: E402


class _Raising(FlaTriton):
    """An interpreter twin whose kernel raises ``error`` on every call."""

    operator = "wkv7"
    algorithm = "fused_recurrent"
    device = "cpu"
    entry = ("ops.rwkv7", "fused_recurrent_rwkv7")
    error: Exception = TypeError("fused_recurrent_rwkv7() got an unexpected keyword argument 'scale'")

    def prepare(self, inputs, case):
        return None

    def run(self, native):
        raise self.error


class _Crashes(_Raising):
    name = "wkv7.test_crash.fused_recurrent.interp"


class _InterpreterCannot(_Raising):
    name = "wkv7.test_interp_limit.fused_recurrent.interp"
    error = InterpreterError("AttributeError(\"'int' object has no attribute 'to'\")")


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setattr(env, "triton_reason", lambda device, root="fla": None)  # as under TRITON_INTERPRET=1
    for cls in (_Crashes, _InterpreterCannot):
        monkeypatch.setitem(base._REGISTRY, cls.name, cls())
    base.availability.cache_clear()
    yield
    base.availability.cache_clear()


def test_a_kernel_that_raises_on_every_call_is_an_error_not_a_skip(registered):
    assert base.availability(_Crashes.name)  # the package and the interpreter are here
    case = Case("wkv7", "model", Shape(1, 8, 1, 16), "fp32", 0)
    r = Checker().check(base.get(_Crashes.name), case)
    assert r.status == ERROR and "TypeError" in r.reason and "unexpected keyword argument" in r.reason


def test_a_construct_the_interpreter_cannot_execute_makes_the_twin_unavailable(registered):
    av = base.availability(_InterpreterCannot.name)
    assert not av and av.reason.startswith("fails under the Triton interpreter")
    assert "InterpreterError" in av.reason and "has no attribute 'to'" in av.reason


def test_interpreter_limit_follows_the_cause_chain():
    try:
        try:
            raise InterpreterError("inner")
        except InterpreterError as inner:
            raise RuntimeError("wrapped by the package") from inner
    except RuntimeError as outer:
        assert interpreter_limit(outer)
    assert not interpreter_limit(TypeError("its own bug"))
