"""The registry and the adapter contract: unique dotted names, declared dtypes, reasons, layout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import wkvbench
import wkvkernels as kernels
from wkvkernels.base import Availability, KernelVariant, register, unregister
from wkvkernels.cases import Case, Shape
from wkvkernels.ops import DTYPES, OPS


def test_packages_resolve_inside_this_repository_or_its_install():
    import wkvoracle as refs

    suite = Path(wkvbench.__file__).resolve().parent
    for mod, folder in ((kernels, "wkvkernels"), (refs, "wkvoracle")):
        p = Path(mod.__file__).resolve()
        assert p.parent.name == folder
        assert p.parent.parent == suite.parent  # beside wkvbench: the repository root, or site-packages


def test_every_operator_has_an_in_tree_baseline():
    for op in OPS:
        base = [v for v in kernels.variants(op) if v.baseline]
        assert [v.name for v in base] == [f"{op}.torch.recurrent"]


@pytest.mark.parametrize("variant", kernels.variants(), ids=lambda v: v.name)
def test_variant_declares_itself(variant):
    assert re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+){2,3}", variant.name), variant.name
    assert variant.name.startswith(variant.operator + ".")
    assert variant.operator in OPS
    assert variant.dtypes and variant.dtypes <= set(DTYPES)
    for attr in ("source", "backend", "algorithm", "device"):
        assert isinstance(getattr(variant, attr), str) and getattr(variant, attr)
    av = kernels.availability(variant.name)
    assert isinstance(av, Availability)
    assert av.ok or (av.reason and len(av.reason) > 5)


_UNDECLARED = [(v, d) for v in kernels.variants() for d in DTYPES if d not in v.dtypes]


@pytest.mark.parametrize(("variant", "dtype"), _UNDECLARED, ids=[f"{v.name}-{d}" for v, d in _UNDECLARED])
def test_supports_refuses_undeclared_dtypes_with_a_reason(variant, dtype):
    shape = Shape(1, 4, 1, 64, C=16 if variant.operator == "gdn_wy" else 0)
    av = variant.supports(Case(variant.operator, "model", shape, dtype))
    assert not av and dtype in av.reason


def test_availability_without_reason_is_rejected():
    with pytest.raises(ValueError):
        Availability(False)
    assert not Availability.no("x") and Availability.yes()


def test_lookup_errors_list_the_alternatives():
    with pytest.raises(KeyError, match="wkv7.torch.recurrent"):
        kernels.get("wkv7.nope")


class _Dummy(KernelVariant):
    name = "wkv7.test.dummy"
    operator = "wkv7"
    source = backend = algorithm = "test"

    def prepare(self, inputs, case):
        return None

    def run(self, native):
        return None

    def to_canonical(self, out):
        return {}


def test_register_rejects_duplicates_and_bad_names():
    register(_Dummy)
    try:
        with pytest.raises(ValueError, match="already registered"):
            register(_Dummy)
    finally:
        unregister(_Dummy.name)

    class Bad(_Dummy):
        name = "wkv6.test.dummy"

    with pytest.raises(ValueError, match="must start with"):
        register(Bad)


def test_a_raising_availability_probe_becomes_a_failed_check_with_its_reason():
    class Broken(_Dummy):
        name = "wkv7.test.broken"

        def available(self):
            raise RuntimeError("driver exploded")

    register(Broken)
    try:
        av = kernels.availability(Broken.name)
        assert not av and av.error and "driver exploded" in av.reason  # its rows: ERROR, not SKIP
    finally:
        unregister(Broken.name)
