"""Pinned autotuning (``wkvbench.run.autotune``): what verification runs instead of Triton's benchmark of
every configuration, and the sweep that checks every configuration once. On CPU, with Triton's own
``Autotuner`` around a recorded stand-in for a compiled kernel (no GPU, no compiler)."""

from __future__ import annotations

import pytest

triton = pytest.importorskip("triton")

from triton.runtime.autotuner import Autotuner  # noqa: E402
from triton.runtime.errors import OutOfResources  # noqa: E402

from wkvbench.judge.check import FAIL, PASS, SKIP, CheckResult  # noqa: E402
from wkvbench.run import autotune  # noqa: E402
from wkvkernels.cases import Case  # noqa: E402


def _body(x, n, BLOCK):  # the "kernel sources" Triton's autotuner names
    pass


def _other_body(x, n, BLOCK):
    pass


class _Kernel:
    """What ``Autotuner`` wraps: a ``run`` that records the meta-parameters it was given."""

    def __init__(self, too_big=(), fn=_body):
        self.fn, self.arg_names, self.calls, self.too_big = fn, ["x", "n", "BLOCK"], [], set(too_big)

    def run(self, *args, **kwargs):
        if kwargs["BLOCK"] in self.too_big:
            raise OutOfResources(1 << 20, 1 << 16, "shared memory")
        self.calls.append(kwargs["BLOCK"])


def _tuner(kernel, blocks=(16, 32, 64)):
    def no_bench(*a, **k):
        raise AssertionError("a pinned autotuner must not benchmark")

    configs = [triton.Config({"BLOCK": b}) for b in blocks]
    return Autotuner(kernel, kernel.arg_names, configs, ["n"], None, None, do_bench=no_bench)


@pytest.fixture
def pinned():
    autotune.STATE.round, autotune.STATE.kernels, autotune.STATE.last = 0, {}, {}
    assert autotune.install()
    yield autotune.STATE
    autotune.uninstall()
    autotune.STATE.round = 0


def test_pinned_runs_the_first_configuration_without_benchmarking(pinned):
    k = _Kernel()
    t = _tuner(k)
    t.run(None, 7)
    t.run(None, 9)  # a new autotune key: Triton would benchmark all three again
    assert k.calls == [16, 16]
    seen = pinned.kernels[autotune.kernel_name(t)]
    assert seen.count == 3 and list(seen.ran) == [0] and not seen.unusable


def test_a_configuration_the_gpu_cannot_run_is_passed_over_and_recorded(pinned):
    k = _Kernel(too_big={16})
    t = _tuner(k)
    t.run(None, 7)
    assert k.calls == [32]
    seen = pinned.kernels[autotune.kernel_name(t)]
    assert list(seen.unusable) == [0] and "OutOfResources" in seen.unusable[0]
    k.too_big = {16, 32, 64}
    seen.unusable.clear()
    with pytest.raises(RuntimeError, match="no configuration of the autotuned kernel"):
        t.run(None, 7)


def test_round_r_runs_configuration_r_modulo_the_count(pinned):
    k = _Kernel()
    t = _tuner(k)
    for r in range(5):
        pinned.round = r
        t.run(None, 7)
    assert k.calls == [16, 32, 64, 16, 32]
    assert autotune.rounds_needed() == 3


def test_uninstall_restores_tritons_own_run(pinned):
    autotune.uninstall()
    k = _Kernel()
    with pytest.raises(AssertionError, match="must not benchmark"):
        _tuner(k).run(None, 7)  # Triton's own run benchmarks: here, the stand-in that refuses
    assert autotune.install()


def test_the_round_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("WKVBENCH_AUTOTUNE_ROUND", "4")
    assert autotune.round_from_env() == 4
    monkeypatch.setenv("WKVBENCH_AUTOTUNE_ROUND", "x")
    with pytest.raises(ValueError, match="WKVBENCH_AUTOTUNE_ROUND"):
        autotune.round_from_env()


class _Checker:
    """Runs the two autotuned kernels of a fake variant; configuration ``bad`` of the second one gives a
    wrong answer."""

    def __init__(self, bad=None):
        self.k1, self.k2 = _Kernel(), _Kernel(fn=_other_body)
        self.t1, self.t2 = _tuner(self.k1, (16, 32)), _tuner(self.k2, (8, 16, 32, 64))
        self.bad = bad

    def check(self, variant, case):
        self.t1.run(None, 1)
        self.t2.run(None, 1)
        wrong = self.k2.calls[-1] == self.bad
        return CheckResult(variant.name, case, FAIL if wrong else PASS, "y: rel 0.5 > 0.01" if wrong else "")


CASE = Case.parse("wkv7/model/B2-T37-H2-N64-h0/fp32/s0")


def test_sweep_checks_every_configuration_of_every_kernel_once(pinned):
    from wkvkernels.base import get

    ch = _Checker()
    res = autotune.sweep(ch, get("wkv7.torch.recurrent"), CASE, "forward")
    assert res.status == PASS and res.kind == "forward-configs"
    assert sorted(set(ch.k1.calls)) == [16, 32] and sorted(set(ch.k2.calls)) == [8, 16, 32, 64]
    assert len(ch.k2.calls) == 4  # the pinned round and three more: as many as the longest list
    assert "4 configuration rounds passed" in res.reason and "2/2" in res.reason and "4/4" in res.reason
    assert pinned.round == 0  # pinned again afterwards


def test_sweep_names_the_failing_round_and_its_configurations(pinned):
    from wkvkernels.base import get

    res = autotune.sweep(_Checker(bad=32), get("wkv7.torch.recurrent"), CASE, "forward")
    assert res.status == FAIL
    assert "round 2" in res.reason and "WKVBENCH_AUTOTUNE_ROUND=2" in res.reason and "BLOCK: 32" in res.reason
    assert res.reproduce.endswith("--configs")


def test_sweep_without_autotuned_kernels_is_a_skip_with_its_reason(pinned):
    from wkvbench.judge.check import Checker
    from wkvkernels.base import get

    res = autotune.sweep(Checker(), get("wkv7.torch.recurrent"), CASE, "forward")
    assert res.status == SKIP and "no autotuned Triton kernel" in res.reason


def test_verify_adds_one_configs_row_per_triton_variant_and_kind():
    from wkvbench.run.verify import Selection, _jobs

    sel = Selection(ops=("wkv7",), case_set="gpu", with_backward=True, configs=True)
    jobs = _jobs(sel)
    sweeps = [(v.name, c.id, k) for v, c, k in jobs if k.endswith("-configs")]
    triton_fwd = {v.name for v, c, k in jobs if k == "forward" and v.backend.startswith("triton")}
    assert {n for n, _, k in sweeps if k == "forward-configs"} == triton_fwd and triton_fwd
    assert all("/bf16/" in cid and "/model/" in cid for _, cid, _ in sweeps)
    assert not [j for j in _jobs(Selection(ops=("wkv7",), case_set="gpu")) if j[2].endswith("-configs")]


def test_verify_sweeps_a_real_fla_kernel_under_the_triton_interpreter(tmp_path):
    """End to end with FLA's own autotuned kernel, on CPU: ``fused_recurrent_rwkv7`` under the Triton
    interpreter, in an isolated worker. Its sweep row names the kernel and checks each of its
    configurations once (36 for fla-core 0.6.0), each judged against the oracle."""
    import json
    import os
    import re
    import subprocess
    import sys

    pytest.importorskip("fla")
    out = tmp_path / "v.json"
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    args = ["--variant", "wkv7.fla.fused_recurrent.interp", "--case", "wkv7/model/B2-T37-H2-N64-h0/fp32/s0",
            "--configs", "--output", str(out)]
    subprocess.run([sys.executable, "-m", "wkvbench", "verify", *args],
                   env=env, check=True, capture_output=True, timeout=600)
    rows = {r["kind"]: r for r in json.loads(out.read_text())["results"]}
    assert rows["forward"]["status"] == "PASS", rows["forward"]["reason"]
    sweep = rows["forward-configs"]
    assert sweep["status"] == "PASS", sweep["reason"]
    m = re.search(r"fused_recurrent_\w+_fwd_kernel (\d+)/(\d+)", sweep["reason"])
    assert m and m.group(1) == m.group(2) and int(m.group(2)) > 1, sweep["reason"]
    assert sweep["errors"]["y"]["rel"] < 1e-5


def _timed_tuner(kernel, ms_by_block, key=("n",)):
    """An autotuner that benchmarks as Triton does, with a stand-in clock: BLOCK -> ms at autotune key n."""

    def bench(kernel_call, quantiles=None, **_):
        kernel_call()
        t = ms_by_block(kernel.calls[-1], kernel.last_n)
        return [t, t, t] if quantiles else t

    configs = [triton.Config({"BLOCK": b}) for b in (16, 32, 64)]
    return Autotuner(kernel, kernel.arg_names, configs, list(key), None, None, do_bench=bench)


class _KeyedKernel(_Kernel):
    def run(self, *args, **kwargs):
        self.last_n = args[1]
        super().run(*args, **kwargs)


def test_recording_names_the_configuration_each_autotuned_kernel_ran():
    """A bench row records what autotuning chose (``autotune``): the fastest configuration of the stand-in
    clock, per kernel, and both where one call met two autotune keys that chose differently."""
    k = _KeyedKernel()
    t = _timed_tuner(k, lambda block, n: {16: 3.0, 32: 1.0, 64: 2.0}[block] if n < 100 else 64.0 / block)
    before = Autotuner.run
    with autotune.recording() as picks:
        t.run(None, 7)
    assert Autotuner.run is before  # only for the duration
    assert list(picks) == ["_body"] and picks["_body"].startswith("BLOCK: 32")
    with autotune.recording() as picks:
        t.run(None, 7)  # cached key: the same choice, recorded again
        t.run(None, 1000)  # a second key, where BLOCK 64 is the fastest
    assert picks["_body"].split(" | ")[0].startswith("BLOCK: 32")
    assert picks["_body"].split(" | ")[1].startswith("BLOCK: 64")
    t.run(None, 7)  # outside: nothing recorded
    assert len(picks["_body"].split(" | ")) == 2


def test_recording_sees_the_pinned_configuration_too(pinned):
    k = _Kernel(too_big={16})
    t = _tuner(k)
    with autotune.recording() as picks:
        t.run(None, 7)
    assert picks["_body"].startswith("BLOCK: 32")  # 16 does not fit: the pin passes over it
    assert autotune.installed()  # the pin outlives the recording


def test_a_bench_row_takes_the_picks_of_one_more_untimed_call():
    from wkvbench.perf.bench import autotune_picks

    k = _KeyedKernel()
    t = _timed_tuner(k, lambda block, n: {16: 3.0, 32: 1.0, 64: 2.0}[block])
    synced = []
    picks = autotune_picks(lambda: t.run(None, 7), lambda: synced.append(True))
    assert picks["_body"].startswith("BLOCK: 32") and synced == [True]
    assert autotune_picks(lambda: None) == {}  # nothing autotuned: the row records nothing
