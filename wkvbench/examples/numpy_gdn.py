"""wkvbench verify --plugin numpy_gdn.py --variant 'gdn.example.*'   (wkvbench example gdn > numpy_gdn.py)"""
import numpy as np

from wkvbench import as_dtype, register_function, round_inputs


def numpy_gdn(inputs: dict[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    """Gated DeltaNet: q k v as [B, T, H, N], g (log decay) and beta as [B, T, H], scale, optional state
    [B, H, V, K] -> y [B, T, H, N] in the case dtype and the final state in fp32.

    As a kernel does: the activations rounded to the case dtype (``round_inputs``), the state and the
    arithmetic in fp32, y rounded once to the case dtype on the way out (``as_dtype``)."""
    x = round_inputs("gdn", inputs, dtype)
    q, k, v, g, beta = (np.asarray(x[n], np.float32) for n in ("q", "k", "v", "g", "beta"))
    scale = np.float32(x["scale"])
    B, T, H, N = q.shape
    S = np.asarray(x.get("state", np.zeros((B, H, v.shape[-1], N))), np.float32)
    y = np.empty(v.shape, np.float32)
    for t in range(T):
        S = S * np.exp(g[:, t])[:, :, None, None]                        # decay first
        pred = np.einsum("bhij,bhj->bhi", S, k[:, t])                    # then read the prediction
        S = S + (beta[:, t, :, None] * (v[:, t] - pred))[..., None] * k[:, t, :, None, :]
        y[:, t] = scale * np.einsum("bhij,bhj->bhi", S, q[:, t])
    return {"y": as_dtype(y, dtype), "state": S}


try:  # NumPy has no bfloat16: a bf16 y is an ml_dtypes array (pip install ml-dtypes)
    import ml_dtypes  # noqa: F401
    DTYPES = ("fp32", "bf16", "fp16")
except ImportError:
    DTYPES = ("fp32", "fp16")

register_function("gdn.example.numpy", "gdn", numpy_gdn, dtypes=DTYPES)
