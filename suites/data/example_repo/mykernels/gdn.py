"""Gated DeltaNet in NumPy: a correct recurrence and one with a planted bug."""
import numpy as np


def _gdn(inputs: dict, dtype: str, decay_late: bool) -> dict:
    from wkvbench import round_inputs

    x = round_inputs("gdn", inputs, dtype)  # the activations as a kernel of this dtype sees them
    q, k, v, g, beta = (np.asarray(x[n], np.float32) for n in ("q", "k", "v", "g", "beta"))
    B, T, H, N = q.shape
    S = np.asarray(x.get("state", np.zeros((B, H, v.shape[-1], N))), np.float32)
    y = np.empty(v.shape, np.float32)
    for t in range(T):
        decay = np.exp(g[:, t])[:, :, None, None]
        if not decay_late:
            S = S * decay
        pred = np.einsum("bhij,bhj->bhi", S, k[:, t])
        S = S + (beta[:, t, :, None] * (v[:, t] - pred))[..., None] * k[:, t, :, None, :]
        if decay_late:  # the bug: the decay applied after the update
            S = S * decay
        y[:, t] = np.float32(x["scale"]) * np.einsum("bhij,bhj->bhi", S, q[:, t])
    return {"y": y.astype(np.float16 if dtype == "fp16" else np.float32), "state": S}


def gdn_recurrent(inputs: dict, dtype: str) -> dict:
    return _gdn(inputs, dtype, decay_late=False)


def gdn_decay_late(inputs: dict, dtype: str) -> dict:
    return _gdn(inputs, dtype, decay_late=True)
