"""Bad input at every public entry point: one row per bad input, each ending in a named ``ValueError``.

Entry points: ``validate_inputs`` itself, ``Checker.check(inputs=...)``, ``register_function`` and the
wrapper it builds, ``properties.state_passing``, ``shrink.replay`` and ``python -m wkvbench replay``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from wkvbench.checks.properties import state_passing
from wkvbench.checks.shrink import replay
from wkvbench.judge.check import ERROR, PASS, Checker
from wkvbench.judge.validate import InvalidInput, validate_inputs
from wkvbench.run.plugins import register_function
from wkvkernels import get, unregister
from wkvkernels.cases import Case
from wkvoracle.inputs import generate

REPO = Path(__file__).resolve().parents[2]
CASES = {
    "wkv4": Case.parse("wkv4/model/B2-T5-H1-N8-h0/fp32/s0"),
    "wkv6": Case.parse("wkv6/model/B2-T5-H2-N8-h0/fp32/s0"),
    "wkv7": Case.parse("wkv7/model/B2-T5-H2-N8-h0/fp32/s0"),
    "gla": Case.parse("gla/model/B2-T5-H2-N8-h0/fp32/s0"),
    "gdn": Case.parse("gdn/model/B2-T5-H2-N8-h0/fp32/s0"),
    "gdn_wy": Case.parse("gdn_wy/model/B2-T5-H2-N8-C4/fp32/s0"),
    "kda": Case.parse("kda/model/B2-T5-H2-N8-h0/fp32/s0"),
}


def good(op: str) -> dict:
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in generate(CASES[op]).items()}


def edit(op: str, fn: Callable[[dict], None]) -> dict:
    x = good(op)
    fn(x)
    return x


def _set(name: str, index: tuple, value: float) -> Callable[[dict], None]:
    def f(x: dict) -> None:
        x[name][index] = value
    return f


# (id, operator, inputs, words that must all appear in the message)
BAD = [
    ("missing input", "wkv7", edit("wkv7", lambda x: x.pop("lw")), ["missing", "lw"]),
    ("unknown name", "wkv7", edit("wkv7", lambda x: x.update(w=x["lw"])), ["unknown input", "'w'"]),
    ("partial wkv4 state", "wkv4", edit("wkv4", lambda x: x.pop("pp")), ["aa, bb, pp"]),
    ("not an array", "gla", edit("gla", lambda x: x.update(q=x["q"].tolist())), ["q", "NumPy array"]),
    ("int dtype", "wkv6", edit("wkv6", lambda x: x.update(k=x["k"].astype(np.int32))), ["k", "int32", "float"]),  # noqa: E501
    ("bool dtype", "gdn", edit("gdn", lambda x: x.update(beta=x["beta"] > 0.5)), ["beta", "bool", "float"]),
    ("complex dtype", "wkv7", edit("wkv7", lambda x: x.update(r=x["r"].astype(np.complex64))), ["r", "complex64"]),  # noqa: E501
    ("wrong rank", "wkv7", edit("wkv7", lambda x: x.update(r=x["r"][0])), ["r", "rank 3", "rank 4"]),
    ("wrong rank of a gate", "gdn", edit("gdn", lambda x: x.update(g=x["g"][..., None])), ["g", "rank 4"]),
    ("mismatched heads", "wkv7", edit("wkv7", lambda x: x.update(k=np.concatenate([x["k"]] * 2, axis=2))),
     ["mismatched heads H", "k has 4", "r has 2"]),
    ("mismatched head size", "gla", edit("gla", lambda x: x.update(lw=x["lw"][..., :4])),
     ["mismatched head size N", "lw has 4", "q has 8"]),
    ("mismatched batch", "gdn", edit("gdn", lambda x: x.update(state=x["state"][:1])), ["mismatched batch B"]),  # noqa: E501
    ("mismatched T", "wkv6", edit("wkv6", lambda x: x.update(lw=x["lw"][:, :3])), ["mismatched sequence length T"]),  # noqa: E501
    ("state orientation", "wkv7", edit("wkv7", lambda x: x.update(v=x["v"][..., :4])),
     ["mismatched value width V", "state"]),
    ("bonus heads", "wkv6", edit("wkv6", lambda x: x.update(u=x["u"][:1])), ["mismatched heads H", "u has 1"]),  # noqa: E501
    ("wkv4 channels", "wkv4", edit("wkv4", lambda x: x.update(w4=x["w4"][:3])), ["channels C", "w4 has 3"]),
    ("T = 0", "wkv7", edit("wkv7", lambda x: x.update({n: x[n][:, :0] for n in "rkvabl" if n in x} | {
        "lw": x["lw"][:, :0]})), ["sequence length T = 0"]),
    ("B = 0", "gla", edit("gla", lambda x: x.update({n: x[n][:0] for n in ("q", "k", "v", "lw", "state")})),
     ["batch B = 0"]),
    ("H = 0", "gdn", edit("gdn", lambda x: x.update(q=x["q"][:, :, :0])), ["heads H = 0"]),
    ("N = 0", "wkv6", edit("wkv6", lambda x: x.update(r=x["r"][..., :0])), ["head size N = 0"]),
    ("NaN activation", "wkv7", edit("wkv7", _set("v", (1, 2, 0, 3), np.nan)), ["v", "NaN", "[1, 2, 0, 3]", "finite"]),  # noqa: E501
    ("Inf state", "gla", edit("gla", _set("state", (0, 1, 2, 3), np.inf)), ["state", "Inf", "[0, 1, 2, 3]"]),
    ("-Inf decay", "wkv6", edit("wkv6", _set("lw", (0, 0, 0, 0), -np.inf)), ["lw", "Inf"]),
    ("NaN wkv4 pp", "wkv4", edit("wkv4", _set("pp", (0, 0), np.nan)), ["pp", "NaN"]),
    ("positive lw (wkv7)", "wkv7", edit("wkv7", _set("lw", (0, 1, 1, 2), 0.25)),
     ["lw out of range", "lw <= 0", "0.25", "[0, 1, 1, 2]"]),
    ("positive lw (wkv6)", "wkv6", edit("wkv6", _set("lw", (1, 0, 0, 0), 1e-3)), ["lw out of range"]),
    ("positive lw (gla)", "gla", edit("gla", _set("lw", (0, 0, 0, 0), 2.0)), ["lw out of range"]),
    ("positive gdn gate", "gdn", edit("gdn", _set("g", (0, 0, 1), 0.5)), ["g out of range", "g <= 0"]),
    ("positive kda gate", "kda", edit("kda", _set("g", (0, 0, 1, 3), 0.5)), ["g out of range", "g <= 0"]),
    ("kda gate per head only", "kda", edit("kda", lambda x: x.update(g=x["g"][..., 0])), ["g", "rank 3"]),
    ("beta > 1", "gdn", edit("gdn", _set("beta", (0, 0, 0), 1.5)), ["beta out of range", "[0, 1]", "1.5"]),
    ("beta < 0", "gdn_wy", edit("gdn_wy", _set("beta", (0, 0, 0), -0.1)), ["beta out of range"]),
    ("wkv4 w4 = 0", "wkv4", edit("wkv4", _set("w4", (3,), 0.0)), ["w4 out of range", "< 0", "[3]"]),
    ("wkv4 w4 > 0", "wkv4", edit("wkv4", _set("w4", (0,), 1.0)), ["w4 out of range"]),
    ("NaN scale", "gdn", edit("gdn", lambda x: x.update(scale=float("nan"))), ["scale", "finite"]),
    ("string scale", "gla", edit("gla", lambda x: x.update(scale="0.5")), ["scale", "finite number"]),
    ("unknown operator", "wkv9", good("wkv7"), ["unknown operator 'wkv9'"]),
    ("not a dict", "wkv7", [1, 2, 3], ["dict of arrays", "list"]),
]


@pytest.mark.parametrize(("op", "inputs", "words"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_validate_inputs_names_the_problem(op, inputs, words):
    with pytest.raises(InvalidInput) as ei:
        validate_inputs(op, inputs)
    assert isinstance(ei.value, ValueError)
    for w in words:
        assert w in str(ei.value), str(ei.value)


def test_every_generated_default_input_is_valid():
    for op in CASES:
        validate_inputs(op, good(op))  # raises if the validator were stricter than the generator
    validate_inputs("wkv4", edit("wkv4", _set("pp", (0, 0), -np.inf)))  # -inf: the empty wkv4 state


@pytest.mark.parametrize(("op", "inputs", "words"), [b[1:] for b in BAD if b[1] in CASES],
                         ids=[b[0] for b in BAD if b[1] in CASES])
def test_checker_check_rejects_bad_inputs(op, inputs, words):
    v = get(f"{op}.torch.recurrent")
    with pytest.raises(InvalidInput) as ei:
        Checker().check(v, CASES[op], inputs)
    assert words[0] in str(ei.value) and CASES[op].id in str(ei.value)


def test_checker_check_rejects_inputs_of_another_shape_than_the_case():
    other = generate(Case.parse("wkv7/model/B1-T3-H2-N8/fp32/s0"))
    with pytest.raises(InvalidInput, match=r"case says \[B, T, H\] = \[2, 5, 2\]"):
        Checker().check(get("wkv7.torch.recurrent"), CASES["wkv7"], other)
    assert Checker().check(get("wkv7.torch.recurrent"), CASES["wkv7"], good("wkv7")).status == PASS


@pytest.mark.parametrize(("args", "message"), [
    (("wkv9.a.b", "wkv9", lambda i, d: {}), "unknown operator 'wkv9'"),
    (("gla_x", "gla", lambda i, d: {}), "must read 'gla.<source>.<algorithm>'"),
    (("gla.a.b", "gla", 42), "fn must be callable"),
    (("gla.a.b", "gla", lambda i, d: {}, ("fp8",)), "unsupported dtype(s) ['fp8']"),
    (("gla.a.b", "gla", lambda i, d: {}, ()), "unsupported dtype(s) (none given)"),
])
def test_register_function_rejects_bad_arguments(args, message):
    with pytest.raises(InvalidInput) as ei:
        register_function(*args)
    assert message in str(ei.value)


def test_register_function_wrapper_validates_what_it_is_given():
    calls = []
    v = register_function("wkv7.validate.spy", "wkv7", lambda i, d: calls.append(1) or {})
    try:
        bad = edit("wkv7", _set("lw", (0, 0, 0, 0), 3.0))
        with pytest.raises(InvalidInput, match="inputs to plug-in wkv7.validate.spy: lw out of range"):
            v.prepare(bad, CASES["wkv7"])
        assert not calls  # the plug-in's function never saw the bad inputs
    finally:
        unregister("wkv7.validate.spy")


@pytest.mark.parametrize("splits", [(0,), (5,), (3, 2), (2, 2), (1.5,)])
def test_state_passing_rejects_bad_splits(splits):
    with pytest.raises(InvalidInput, match="strictly increasing integers inside"):
        state_passing(get("wkv7.torch.recurrent"), CASES["wkv7"], splits)


def _npz(path: Path, inputs: dict, case: Case) -> Path:
    meta = {"variant": "wkv7.torch.recurrent", "original_case": case.id, "case": case.id, "op": case.op,
            "dtype": case.dtype, "status": "FAIL", "reason": "", "scalars": {}}
    np.savez_compressed(path, meta=json.dumps(meta), **{f"in_{k}": v for k, v in inputs.items()})
    return path


def test_replay_rejects_a_tampered_file(tmp_path):
    path = _npz(tmp_path / "bad.npz", edit("wkv7", _set("r", (0, 0, 0, 0), np.nan)), CASES["wkv7"])
    with pytest.raises(InvalidInput, match="r has 1 non-finite"):
        replay(path)
    ok = _npz(tmp_path / "ok.npz", good("wkv7"), CASES["wkv7"])
    assert replay(ok).status == PASS


@pytest.mark.parametrize(("content", "needle"), [
    ("nan", "r has 1 non-finite value(s), first NaN at [0, 0, 0, 0]"),
    ("garbage", "is not a readable .npz file"),
    ("nometa", "holds no 'meta' entry"),
])
def test_cli_replay_of_a_bad_file_exits_2_with_the_message(tmp_path, content, needle):
    path = tmp_path / "x.npz"
    if content == "nan":
        _npz(path, edit("wkv7", _set("r", (0, 0, 0, 0), np.nan)), CASES["wkv7"])
    elif content == "garbage":
        path.write_bytes(b"not a zip file at all")
    else:
        np.savez(path, in_r=np.zeros(3))
    p = subprocess.run([sys.executable, "-m", "wkvbench", "replay", str(path)], cwd=REPO, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 2, p.stdout + p.stderr
    assert needle in " ".join(p.stdout.split()), p.stdout
    assert "Traceback" not in p.stdout + p.stderr


def test_a_plugin_fed_bad_inputs_by_its_own_adapter_is_an_error_not_a_crash():
    # ERROR with the validation message: Checker._measure reports what prepare() raised
    from wkvbench.run.plugins import FunctionVariant
    from wkvkernels.base import register

    class Broken(FunctionVariant):
        def prepare(self, inputs, case):
            return super().prepare({**inputs, "lw": -inputs["lw"]}, case)

    b = register(Broken("gla.validate.broken", "gla", lambda i, d: {}, ("fp32",)))
    try:
        res = Checker().check(b, CASES["gla"])
        assert res.status == ERROR and "lw out of range" in res.reason, res.reason
    finally:
        unregister("gla.validate.broken")
