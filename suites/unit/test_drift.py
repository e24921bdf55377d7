"""Error against position: the profile and its chart."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from suites.helpers import Tampered
from wkvbench.checks.drift import profile, svg
from wkvkernels import get, register, unregister


def test_profile_of_an_honest_kernel_is_flat_and_the_chart_parses():
    p = profile(get("wkv7.torch.recurrent"), "wkv7", T=512, dtype="fp32", blocks=16)
    assert len(p.rel) == 16 and p.positions[1] == 32 and not p.skipped
    assert max(p.rel) < 1e-6 and 0.3 < p.growth < 3
    ET.fromstring(svg([p], "test"))


def test_a_drifting_kernel_shows_growth():
    def drift(out):  # error that grows linearly with position
        T = out["y"].shape[1]
        out["y"] *= (1 + 1e-6 * np.arange(T) / T * 100)[None, :, None, None]

    v = register(Tampered("wkv7.test.drift", drift))
    try:
        p = profile(v, "wkv7", T=512, dtype="fp32", blocks=16)
    finally:
        unregister(v.name)
    assert not p.skipped and len(p.rel) == 16
    assert p.growth > 5, p.rel


def test_an_unsupported_dtype_is_a_skip_with_reason():
    p = profile(get("wkv7.ggml.cpu"), "wkv7", T=64, dtype="bf16")
    assert p.skipped and "bf16" in p.skipped and not p.rel
