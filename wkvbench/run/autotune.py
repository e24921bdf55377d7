"""Triton autotuning during verification: one pinned configuration, and every configuration checked once.

A Triton kernel declared with ``@triton.autotune`` compiles and times *every* configuration the first
time it meets a new autotune key (a new head size, dtype, initial state or not, ...). On the H100 that
cost FLA's chunked kernels 30-90 s per new key and was three quarters of a full GPU verification,
and it buys nothing a verification needs: which configuration is fastest.

So verification pins the configuration (``install()``, the default of ``verify`` and ``properties``):
an autotuned kernel runs its first configuration that the GPU can run (in the kernel's own order,
after its own pruning) without benchmarking anything. Configurations that do not fit the GPU
(``OutOfResources``, a ptxas or compile-time assertion failure: what Triton's autotuner itself scores
as unusable) are passed over and recorded.

Pinning alone would check one configuration where the benchmark runs another (the one autotuning picks).
``sweep`` closes that gap and checks more than autotuning ever did: it re-runs one case once per
configuration index ("round" r: every autotuned kernel runs its configuration r modulo its count), each
round judged against the oracle like any case, so every configuration of every kernel the variant
calls is checked once. ``WKVBENCH_AUTOTUNE_ROUND=r`` replays round r of a failing sweep.

Benchmarks never install this: they time the kernel as its users run it, autotuned. They record
which configuration each autotuned kernel ran instead (``recording``, a bench row's ``autotune``): an
autotuner's choice depends on more than the row (FLA keeps it on disk, keyed without the shape:
FINDINGS.md), and a row's time can halve or double with it.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field

from wkvkernels import config

MAX_ROUNDS = 256  # a kernel with more configurations than this is swept over its first MAX_ROUNDS


@dataclass
class KernelConfigs:
    """What the pinned runs saw of one autotuned kernel."""

    count: int = 0  # configurations after the kernel's own pruning (the largest count seen)
    ran: dict[int, str] = field(default_factory=dict)  # index -> the configuration, as Triton prints it
    unusable: dict[int, str] = field(default_factory=dict)  # index -> why the GPU could not run it


@dataclass
class State:
    round: int = 0
    kernels: dict[str, KernelConfigs] = field(default_factory=dict)
    last: dict[str, int] = field(default_factory=dict)  # kernel -> index run by the latest call


STATE = State()
_ORIGINAL = None


def round_from_env() -> int:
    return config.autotune_round()


def installed() -> bool:
    return _ORIGINAL is not None


def install() -> bool:
    """Pin every Triton autotuner of this process (idempotent). False when Triton is not importable."""
    global _ORIGINAL
    if _ORIGINAL is not None:
        return True
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return False
    STATE.round = round_from_env()
    _ORIGINAL = Autotuner.run
    Autotuner.run = _pinned_run
    return True


def uninstall() -> None:
    global _ORIGINAL
    if _ORIGINAL is None:
        return
    from triton.runtime.autotuner import Autotuner

    Autotuner.run = _ORIGINAL
    _ORIGINAL = None


@functools.cache
def _unusable_errors() -> tuple[type[BaseException], ...]:
    from triton.runtime.errors import OutOfResources

    errors: list[type[BaseException]] = [OutOfResources]
    try:
        from triton.runtime.errors import PTXASError
        errors.append(PTXASError)
    except ImportError:
        pass
    try:
        from triton.compiler.errors import CompileTimeAssertionFailure
        errors.append(CompileTimeAssertionFailure)
    except ImportError:
        pass
    return tuple(errors)


def kernel_name(tuner) -> str:
    fn = tuner.base_fn
    return f"{fn.__module__}.{fn.__qualname__}"


def _pinned_run(self, *args, **kwargs):
    """``Autotuner.run`` with the configuration of this round instead of a benchmark of them all."""
    if len(self.configs) <= 1:
        return _ORIGINAL(self, *args, **kwargs)
    self.nargs = dict(zip(self.arg_names, args, strict=False))
    configs = self.prune_configs(kwargs)
    name = kernel_name(self)
    seen = STATE.kernels.setdefault(name, KernelConfigs())
    seen.count = max(seen.count, len(configs))
    errors = _unusable_errors()
    start = STATE.round % len(configs)
    for step in range(len(configs)):
        i = (start + step) % len(configs)
        if i in seen.unusable:
            continue
        cfg = configs[i]
        current = {**kwargs, **cfg.all_kwargs()}
        try:
            if cfg.pre_hook is not None:
                cfg.pre_hook({**self.nargs, **current})
            ret = self.fn.run(*args, **current)
        except errors as exc:
            seen.unusable[i] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
            continue
        self.best_config = cfg
        seen.ran.setdefault(i, str(cfg))
        STATE.last[name] = i
        self.nargs = None
        return ret
    self.nargs = None
    raise RuntimeError(f"no configuration of the autotuned kernel {name} runs on this GPU: "
                       + "; ".join(f"#{i}: {why}" for i, why in sorted(seen.unusable.items())[:3]))


def rounds_needed() -> int:
    """Rounds that run every configuration of every kernel seen so far at least once."""
    return min(MAX_ROUNDS, max((k.count for k in STATE.kernels.values()), default=0))


def describe() -> str:
    """One line: the kernels seen, their configuration counts, and what could not run."""
    parts = []
    for name, k in sorted(STATE.kernels.items()):
        short = name.rsplit(".", 1)[-1]
        bad = f", {len(k.unusable)} unusable on this GPU" if k.unusable else ""
        more = f" (first {MAX_ROUNDS} checked)" if k.count > MAX_ROUNDS else ""
        parts.append(f"{short} {len(k.ran)}/{k.count}{more}{bad}")
    return "; ".join(parts)


def sweep(checker, variant, case, kind: str, alive=None):
    """Check ``case`` once per configuration round: round 0 is the pinned run, rounds 1..n-1 run every
    other configuration of every autotuned kernel the call reaches (``kind``: "forward" or "backward").
    One ``CheckResult`` of kind ``<kind>-configs``: PASS when every round passed (the worst error of
    all rounds), FAIL naming the first failing round's configurations, SKIP when there is nothing to
    sweep. ``alive(round)`` is called after each round (the isolated runner's heartbeat)."""
    from wkvkernels.base import availability

    from ..judge.check import ERROR, PASS, SKIP, CheckResult, check_backward

    label = f"{kind}-configs"
    av = availability(variant.name)
    if not av:
        return CheckResult(variant.name, case, ERROR if av.error else SKIP, av.reason or "unavailable", kind=label)
    install()

    def run():
        return check_backward(checker, variant, case) if kind == "backward" else checker.check(variant, case)

    STATE.round, STATE.kernels, STATE.last = 0, {}, {}
    first = run()
    if first.status != PASS:
        return CheckResult(variant.name, case, SKIP if first.status in (SKIP,) else first.status,
                           first.reason if first.status == SKIP else
                           f"the pinned configurations gave {first.status}: {first.reason}",
                           errors=first.errors, limits=first.limits, kind=label, seconds=first.seconds)
    if not STATE.kernels:
        return CheckResult(variant.name, case, SKIP, "calls no autotuned Triton kernel with more than one "
                           "configuration", kind=label, seconds=first.seconds)
    worst, seconds, failed = dict(first.errors), first.seconds, []
    r = 1
    while r < rounds_needed():
        STATE.round = r
        res = run()
        seconds += res.seconds
        if res.status != PASS:
            failed.append((r, res, {k: STATE.kernels[k].ran.get(i, f"#{i}") for k, i in STATE.last.items()
                                    if STATE.kernels[k].count > 1}))
        for t, e in res.errors.items():
            if t not in worst or not e.rel <= worst[t].rel:
                worst[t] = e
        if alive is not None:
            alive(r)
        r += 1
    n = r
    STATE.round = 0
    if failed:
        r, res, cfgs = failed[0]
        which = "; ".join(f"{k.rsplit('.', 1)[-1]}: {c}" for k, c in sorted(cfgs.items()))
        return CheckResult(variant.name, case, res.status,
                           f"{len(failed)} of {n} configuration rounds failed; first, round {r} "
                           f"(WKVBENCH_AUTOTUNE_ROUND={r} replays it) with {which}: {res.reason}",
                           errors=res.errors, limits=res.limits, kind=label, seconds=seconds)
    return CheckResult(variant.name, case, PASS, f"{n} configuration rounds passed; configurations "
                       f"checked per kernel: {describe()}", errors=worst, limits=first.limits,
                       kind=label, seconds=seconds)


@contextlib.contextmanager
def pinned(on: bool = True) -> Iterator[None]:
    """Autotuning pinned (``install``) for the block, and not after it unless it was pinned before;
    ``on=False`` leaves things as they are."""
    here = on and not installed() and install()
    try:
        yield
    finally:
        if here:
            uninstall()


@contextlib.contextmanager
def recording() -> Iterator[dict[str, str]]:
    """Which configuration each autotuned Triton kernel ran in the calls made inside: kernel name ->
    the configuration as Triton prints it (several, joined by `` | ``, where one call ran a kernel under
    several autotune keys). Filled as the calls run; empty where Triton is not importable or nothing
    autotuned ran. Wraps ``Autotuner.run`` (the pinned one too) for the duration only, and only reads."""
    picks: dict[str, str] = {}
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        yield picks
        return
    inner = Autotuner.run

    def run(self, *args, **kwargs):
        out = inner(self, *args, **kwargs)
        cfg = getattr(self, "best_config", None)
        if cfg is not None:
            name, text = kernel_name(self).rsplit(".", 1)[-1], str(cfg)
            if text not in picks.get(name, "").split(" | "):
                picks[name] = f"{picks[name]} | {text}" if name in picks else text
        return out

    Autotuner.run = run
    try:
        yield picks
    finally:
        Autotuner.run = inner


__all__ = ["MAX_ROUNDS", "STATE", "describe", "install", "installed", "kernel_name", "pinned", "recording",
           "round_from_env", "rounds_needed", "sweep", "uninstall"]
