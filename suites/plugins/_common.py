"""Shared by the deliberately crashing plug-ins: the exact answer except on the single-token case."""

from __future__ import annotations

import sys

from wkvoracle import recurrent_gla


def exact_unless_single_token(inputs: dict, misbehave, marker: str) -> dict:
    """``recurrent_gla`` of ``inputs`` (the variant passes), but call ``misbehave()`` when T = 1."""
    if inputs["k"].shape[1] == 1:
        print(f"{marker}: misbehaving on purpose now", file=sys.stderr, flush=True)
        misbehave()
    return recurrent_gla(**inputs)
