"""Shared by the deliberately crashing plug-ins: the exact answer except on the single-token case."""

from __future__ import annotations

import sys

import numpy as np

from wkvoracle import recurrent_gla


def exact_unless_single_token(inputs: dict, misbehave, marker: str) -> dict:
    """``recurrent_gla`` of ``inputs`` as an fp32 kernel returns it (the variant passes: the contract's output
    dtype is fp32), but call ``misbehave()`` when T = 1."""
    if inputs["k"].shape[1] == 1:
        print(f"{marker}: misbehaving on purpose now", file=sys.stderr, flush=True)
        misbehave()
    return {name: x.astype(np.float32) for name, x in recurrent_gla(**inputs).items()}
