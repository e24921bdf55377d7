"""The float64 NumPy oracle (spec §9). No torch import anywhere in this package.

``ORACLES[op](**inputs)`` runs the readable per-step recurrence that defines the operator;
``FAST[op](**inputs)`` computes the same in chunked matrix form (``wkvoracle/fast.py``), fast
enough to judge benchmark-sized shapes, and is tested against ``ORACLES`` to 1e-12 relative;
``ALTERNATES[op]`` is an independent formulation used only to test the oracle itself;
``BACKWARDS[op](**inputs, dy=..., dstate=...)`` (wkv4: ``daa, dbb, dpp``) is the hand-derived
reverse-time backward: gradients of ``<dy, y> + <dstate, S_T>`` for every input and the initial state.
"""

from __future__ import annotations

from .fast import FAST
from .gdn import backward_gdn, recurrent_gdn, transition_gdn
from .gdn_wy import kkt_inverse, recurrent_gdn_wy, substitution_gdn_wy
from .gla import backward_gla, chunked_gla, recurrent_gla
from .kda import backward_kda, recurrent_kda, transition_kda, wkv7_form_kda
from .wkv4 import backward_wkv4, closed_form_wkv4, recurrent_wkv4
from .wkv6 import backward_wkv6, chunked_wkv6, recurrent_wkv6
from .wkv7 import backward_wkv7, recurrent_wkv7, transition_wkv7

ORACLES = {
    "wkv4": recurrent_wkv4,
    "wkv6": recurrent_wkv6,
    "wkv7": recurrent_wkv7,
    "gla": recurrent_gla,
    "gdn": recurrent_gdn,
    "kda": recurrent_kda,
    "gdn_wy": recurrent_gdn_wy,
}

ALTERNATES = {
    "wkv4": closed_form_wkv4,
    "wkv6": chunked_wkv6,
    "wkv7": transition_wkv7,
    "gla": chunked_gla,
    "gdn": transition_gdn,
    "kda": transition_kda,
}

BACKWARDS = {
    "wkv4": backward_wkv4,
    "wkv6": backward_wkv6,
    "wkv7": backward_wkv7,
    "gla": backward_gla,
    "gdn": backward_gdn,
    "kda": backward_kda,
}

__all__ = [
    "BACKWARDS", "FAST", "backward_gdn", "backward_gla", "backward_kda", "backward_wkv4", "backward_wkv6",
    "backward_wkv7", "ALTERNATES", "ORACLES", "chunked_gla", "chunked_wkv6", "closed_form_wkv4",
    "kkt_inverse",
    "recurrent_gdn", "recurrent_gdn_wy", "recurrent_gla", "recurrent_kda", "recurrent_wkv4", "recurrent_wkv6",
    "recurrent_wkv7", "substitution_gdn_wy", "transition_gdn", "transition_kda", "transition_wkv7",
    "wkv7_form_kda",
]
