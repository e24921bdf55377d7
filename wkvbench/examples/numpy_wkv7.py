"""wkvbench verify --plugin numpy_wkv7.py --variant 'wkv7.example.*'   (wkvbench example wkv7 > numpy_wkv7.py)"""
import numpy as np

from wkvbench import register_function


def numpy_wkv7(inputs: dict[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    """r k v a b lw as [B, T, H, N], optional state [B, H, V, K] -> y [B, T, H, N] and the state."""
    r, k, v, a, b = (inputs[n].astype(np.float32) for n in "rkvab")
    decay = np.exp(inputs["lw"].astype(np.float32))
    B, T, H, N = r.shape
    S = inputs.get("state", np.zeros((B, H, N, N), np.float32)).astype(np.float32)
    y = np.empty_like(v)
    for t in range(T):
        sa = np.einsum("bhij,bhj->bhi", S, a[:, t])
        S = S * decay[:, t, :, None, :] + sa[..., None] * b[:, t, :, None, :] + v[:, t, :, :, None] * k[:, t, :, None, :]
        y[:, t] = np.einsum("bhij,bhj->bhi", S, r[:, t])
    return {"y": y, "state": S}


register_function("wkv7.example.numpy", "wkv7", numpy_wkv7, dtypes=("fp32",))
