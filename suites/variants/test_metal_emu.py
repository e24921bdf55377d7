"""Our Metal kernel of ``gdn_wy`` run on the CPU through ``metal_emu.h`` (``gdn_wy.wkvbench.metal_emu``).

Pinned: the emulated kernel passes the suite's judge in every dtype, including chunks cut short by T
and several threadgroups; a copy of the source with one planted indexing bug fails it; the emulation's
``bfloat`` storage rounds as the suite's ``round_to`` does; it agrees with the PyTorch stage that
rounds at the same points. Skips with the reason where no C++20 compiler is found.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from wkvbench.judge.check import FAIL, PASS, Checker
from wkvkernels import _metal_emu as emu
from wkvkernels import get
from wkvkernels.base import register, unregister
from wkvkernels.cases import Case, Shape
from wkvkernels.gdn_wy.wkvbench_metal import KERNEL, GdnWyMetalEmu
from wkvkernels.ops import round_to

pytestmark = pytest.mark.skipif(emu.cxx_unavailable() is not None, reason=str(emu.cxx_unavailable()))

CHECKER = Checker()
# T = 37 with C = 16: three chunks and a short one (5 rows); B = 2, H = 2: 16 threadgroups
CASES = [Case("gdn_wy", dom, Shape(2, 37, 2, 64, C=16), dt, 0)
         for dom in ("model", "uniform") for dt in ("fp32", "bf16", "fp16")]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_emulated_kernel_passes(case):
    res = CHECKER.check(get("gdn_wy.wkvbench.metal_emu"), case)
    assert res.status == PASS, f"{res.reason}\n{res.details}"


@pytest.fixture
def mutant(tmp_path):
    """Builds a copy of the kernel with one planted change, registered for the judge while the test runs."""
    made: list[str] = []

    def make(old: str, new: str, name: str) -> GdnWyMetalEmu:
        v = register(_mutant(tmp_path, old, new, name))
        made.append(v.name)
        return v

    yield make
    for name in made:
        unregister(name)


def _mutant(tmp_path: Path, old: str, new: str, name: str) -> GdnWyMetalEmu:
    text = KERNEL.read_text()
    assert text.count(old) == 1, f"the planted bug's anchor {old!r} is not in {KERNEL.name} once"
    src = tmp_path / f"{name}.metal"
    src.write_text(text.replace(old, new))

    class Mutant(GdnWyMetalEmu):
        kernel = src
        lib_name = name

    Mutant.name = f"gdn_wy.test.{name}"
    return Mutant()


def test_planted_indexing_bug_fails(mutant):
    """The right-hand side read from row i of the chunk instead of row j: an indexing bug that keeps
    every access in bounds and every value finite, so only the comparison with the oracle sees it."""
    bad = mutant("x[((row0 + j) * H + h) * N + col]", "x[((row0 + i) * H + h) * N + col]",
                  "gdn_wy_rowbug")
    for case in CASES[:3]:
        res = CHECKER.check(bad, case)
        assert res.status == FAIL, f"{case.id}: the planted bug was not caught ({res.status} {res.reason})"


def test_planted_chunk_offset_bug_fails(mutant):
    """A's row taken from the chunk's start for every row (``row0`` without ``+ i``)."""
    bad = mutant("A + ((row0 + i) * H + h) * BT", "A + ((row0) * H + h) * BT", "gdn_wy_arowbug")
    res = CHECKER.check(bad, CASES[0])
    assert res.status == FAIL, res.reason


def test_bfloat_storage_rounds_like_the_suite():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(4096).astype(np.float32),
                        np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 0.0, np.inf], np.float32)])
    got = emu.from_storage(emu.to_storage(x, "bf16"), "bf16")
    np.testing.assert_array_equal(got, round_to(x, "bf16"))
    assert np.isnan(emu.from_storage(emu.to_storage(np.array([np.nan], np.float32), "bf16"), "bf16")).all()


def test_outputs_match_the_torch_stage():
    """The same rounding points as ``gdn_wy.torch.recurrent`` (rhs rounded to the dtype, fp32 sums):
    the two agree to float32 accumulation-order level in fp32 and to one ulp of the dtype otherwise."""
    torch_v = get("gdn_wy.torch.recurrent")
    if not torch_v.available():
        pytest.skip(torch_v.available().reason)
    emu_v = get("gdn_wy.wkvbench.metal_emu")
    from wkvoracle.inputs import generate

    for case in CASES[:3]:
        inputs = generate(case)
        a = emu_v.to_canonical(emu_v.run(emu_v.prepare(dict(inputs), case)))
        b = torch_v.to_canonical(torch_v.run(torch_v.prepare(dict(inputs), case)))
        for name in ("w", "u"):
            rel = np.abs(a[name] - b[name]).max() / np.abs(b[name]).max()
            assert rel < {"fp32": 1e-6, "bf16": 1e-2, "fp16": 2e-3}[case.dtype], (case.id, name, rel)
