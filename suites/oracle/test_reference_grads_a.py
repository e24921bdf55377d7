"""The float64 gradient oracle (issue 5), part a: ``backward_wkv6``, ``backward_gla``, ``backward_wkv4``.

Each backward returns the gradient of ``L = <dy, y> + <dstate, S_T>`` (for wkv4 the final state is
``(aa, bb, pp)``) with respect to every canonical input and the initial state. Checked three ways:

* central finite differences of the forward oracle in float64 on tiny cases of every value domain,
  with and without an initial state and a final-state gradient, for every input (≤ 1e-6 relative);
* torch autograd (float64) through a plain torch transcription of each recurrence written here, on
  medium cases (T = 37, N = 16; ≤ 1e-10 relative);
* edge cases: T = 1, decays at 1 and at 0, huge and tiny magnitudes (all finite, FD still agrees),
  and the wkv4 running-max tie rule.
"""

from __future__ import annotations

import numpy as np
import pytest

from wkvkernels.cases import Case, Shape
from wkvoracle.gla import backward_gla, recurrent_gla
from wkvoracle.inputs import generate
from wkvoracle.wkv4 import backward_wkv4, recurrent_wkv4
from wkvoracle.wkv6 import backward_wkv6, recurrent_wkv6

torch = pytest.importorskip("torch")

FORWARD = {"wkv6": recurrent_wkv6, "gla": recurrent_gla, "wkv4": recurrent_wkv4}
BACKWARD = {"wkv6": backward_wkv6, "gla": backward_gla, "wkv4": backward_wkv4}
STATE = {"wkv6": ("state",), "gla": ("state",), "wkv4": ("aa", "bb", "pp")}
DOMAINS = ("model", "stress", "uniform")
FD_TOL, AUTOGRAD_TOL = 1e-6, 1e-10


def max_rel(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    diff = np.abs(got - want).max()
    return float(diff / max(np.abs(want).max(), np.abs(got).max(), 1e-300)) if diff else 0.0


def explicit_state(op: str, x: dict) -> dict:
    """``x`` with its initial state spelled out (the default zeros / ``pp = -1e38`` when absent)."""
    if op == "wkv4":
        B, _, C = x["k"].shape
        return {"aa": np.zeros((B, C)), "bb": np.zeros((B, C)), "pp": np.full((B, C), -1e38), **x}
    B, _, H, N = x["k"].shape
    return {"state": np.zeros((B, H, N, N)), **x}


def problem(op, domain, shape: Shape, final_grads: bool, seed: int = 0):
    """Inputs from the suite's generator (float64), random upstream gradients (never all ones)."""
    x = {n: (a.astype(np.float64) if isinstance(a, np.ndarray) else a)
         for n, a in generate(Case(op, domain, shape, "fp32", seed)).items()}
    rng = np.random.default_rng([seed, len(op), shape.T])
    dy = rng.standard_normal(FORWARD[op](**x)["y"].shape)
    up = {}
    if final_grads:
        out = FORWARD[op](**x)
        up = {n: rng.standard_normal(out[n].shape) for n in STATE[op]}
    return x, dy, up


def upstream_kwargs(op, up: dict) -> dict:
    return {("d" + n): g for n, g in up.items()} if op == "wkv4" else {"dstate": up.get("state")}


def loss(op, x, dy, up, absolute: bool = False) -> float:
    """``L``; with ``absolute``, the sum of the magnitudes of its terms (sets FD's rounding floor)."""
    out = FORWARD[op](**x)
    f = np.abs if absolute else (lambda a: a)
    return float(f(out["y"] * dy).sum() + sum(f(out[n] * g).sum() for n, g in up.items()))


def finite_differences(op, x, dy, up, rel_step: float = 1e-6) -> tuple[dict, dict]:
    """Central differences of ``loss``, one input element at a time (``scale``: a float), and the
    step used for every element."""
    grads, steps = {}, {}
    for name, val in x.items():
        arr = np.asarray(val, np.float64)
        g, hs = np.empty(arr.shape), np.empty(arr.shape)
        for ix in np.ndindex(arr.shape):
            hi, lo = arr.copy(), arr.copy()
            hi[ix] += rel_step * max(1.0, abs(arr[ix]))
            lo[ix] -= rel_step * max(1.0, abs(arr[ix]))
            hs[ix] = (hi[ix] - lo[ix]) / 2
            if arr.ndim == 0:
                hi, lo = float(hi), float(lo)
            g[ix] = (loss(op, {**x, name: hi}, dy, up) - loss(op, {**x, name: lo}, dy, up)) / (2 * hs[ix])
        grads[name], steps[name] = (float(g) if arr.ndim == 0 else g), hs
    return grads, steps


def check_against_fd(op, x, dy, up, tol=FD_TOL) -> dict:
    """Every gradient agrees with FD to ``tol`` relative to its largest entry, plus FD's own rounding
    floor ``4 eps Λ / h`` (``Λ``: the sum of |terms| of L). The floor only matters where a gradient
    is far below the loss's resolution, e.g. the initial state seen through decays of e^-12..e^-30
    (those entries are checked exactly against autograd below); it is reported, never hidden."""
    got = BACKWARD[op](**x, dy=dy, **upstream_kwargs(op, up))
    xe = explicit_state(op, x)
    fd, steps = finite_differences(op, xe, dy, up)
    floor_num = 4 * np.finfo(np.float64).eps * loss(op, xe, dy, up, absolute=True)
    assert set(got) == set(fd), (sorted(got), sorted(fd))
    errs = {}
    for name, want in fd.items():
        assert np.shape(got[name]) == np.shape(want), name
        assert np.isfinite(got[name]).all(), name
        diff = np.abs(np.asarray(got[name]) - want)
        bound = tol * np.abs(want).max() + floor_num / steps[name]
        assert (diff <= bound).all(), (name, max_rel(got[name], want), float((diff / bound).max()))
        errs[name] = max_rel(got[name], want)
    return errs


# ---- finite differences on tiny cases, every domain, every input incl. the initial state --------

FD_CASES = [  # (B, T, H, N, h0, final-state gradient)
    (1, 1, 1, 3, True, True),
    (2, 4, 2, 3, False, False),
    (2, 7, 1, 4, True, False),
    (1, 5, 2, 5, False, True),
    (2, 3, 1, 5, True, True),
]


@pytest.mark.parametrize("case", FD_CASES, ids=lambda c: "B{}-T{}-H{}-N{}{}{}".format(
    *c[:4], "-h0" if c[4] else "", "-dS" if c[5] else ""))
@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("op", ("wkv6", "gla", "wkv4"))
def test_backward_matches_finite_differences(op, domain, case):
    B, T, H, N, h0, final_grads = case
    x, dy, up = problem(op, domain, Shape(B, T, H, N, h0=h0), final_grads)
    check_against_fd(op, x, dy, up)


# ---- torch autograd through a plain torch transcription (independent derivation) ---------------

def torch_wkv6(r, k, v, lw, u, state):
    S, ys = state, []
    for t in range(r.shape[1]):
        rt, kt, vt = r[:, t], k[:, t], v[:, t]
        ys.append(torch.einsum("bhij,bhj->bhi", S, rt) + (rt * u * kt).sum(-1, keepdim=True) * vt)
        S = S * torch.exp(lw[:, t]).unsqueeze(-2) + vt.unsqueeze(-1) * kt.unsqueeze(-2)
    return torch.stack(ys, 1), (S,)


def torch_gla(q, k, v, lw, scale, state):
    S, ys = state, []
    for t in range(q.shape[1]):
        S = S * torch.exp(lw[:, t]).unsqueeze(-2) + v[:, t].unsqueeze(-1) * k[:, t].unsqueeze(-2)
        ys.append(scale * torch.einsum("bhij,bhj->bhi", S, q[:, t]))
    return torch.stack(ys, 1), (S,)


def torch_wkv4(k, v, w4, u, aa, bb, pp):
    a, b, p, ys = aa, bb, pp, []
    for t in range(k.shape[1]):
        kt, vt = k[:, t], v[:, t]
        q = torch.maximum(p, u + kt)
        e1, e2 = torch.exp(p - q), torch.exp(u + kt - q)
        ys.append((e1 * a + e2 * vt) / (e1 * b + e2))
        q = torch.maximum(p + w4, kt)
        e1, e2 = torch.exp(p + w4 - q), torch.exp(kt - q)
        a, b, p = e1 * a + e2 * vt, e1 * b + e2, q
    return torch.stack(ys, 1), (a, b, p)


TORCH = {"wkv6": torch_wkv6, "gla": torch_gla, "wkv4": torch_wkv4}


def autograd(op, x, dy, up) -> dict:
    x = explicit_state(op, x)
    names = list(x)
    leaves = {n: torch.tensor(np.asarray(x[n], np.float64), dtype=torch.float64, requires_grad=True)
              for n in names}
    y, final = TORCH[op](**leaves)
    L = (y * torch.from_numpy(dy)).sum()
    for n, s in zip(STATE[op], final, strict=True):
        if n in up:
            L = L + (s * torch.from_numpy(up[n])).sum()
    L.backward()
    return {n: (leaves[n].grad.item() if leaves[n].ndim == 0 else leaves[n].grad.numpy()) for n in names}


@pytest.mark.parametrize("final_grads", [False, True], ids=["dy", "dy+dS"])
@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("op", ("wkv6", "gla", "wkv4"))
def test_backward_matches_torch_autograd(op, domain, final_grads):
    shape = Shape(2, 37, 1, 24, h0=final_grads) if op == "wkv4" else Shape(2, 37, 2, 16, h0=final_grads)
    x, dy, up = problem(op, domain, shape, final_grads, seed=3)
    got = BACKWARD[op](**x, dy=dy, **upstream_kwargs(op, up))
    want = autograd(op, x, dy, up)
    assert set(got) == set(want)
    errs = {n: max_rel(got[n], want[n]) for n in want}
    assert max(errs.values()) <= AUTOGRAD_TOL, errs


# ---- edge cases ---------------------------------------------------------------------------------

def _edge_matrix_inputs(op, T, lw_values, seed=0):
    rng = np.random.default_rng(seed)
    B, H, N = 2, 1, 4
    shape = (B, T, H, N)
    x = {("r" if op == "wkv6" else "q"): rng.standard_normal(shape), "k": rng.standard_normal(shape),
         "v": rng.standard_normal(shape), "lw": rng.choice(lw_values, shape)}
    if op == "wkv6":
        x["u"] = rng.standard_normal((H, N))
    else:
        x["scale"] = 1.0
    x["state"] = rng.standard_normal((B, H, N, N))
    dy = rng.standard_normal(shape)
    return x, dy, {"state": rng.standard_normal((B, H, N, N))}


@pytest.mark.parametrize("T", [1, 6])
@pytest.mark.parametrize("op", ("wkv6", "gla"))
def test_decays_at_one_and_at_zero(op, T):
    """``lw`` in {0, -1e-12, -1e-7} (no decay) and {-50, -800} (gone; e^-800 underflows to 0)."""
    x, dy, up = _edge_matrix_inputs(op, T, np.array([0.0, -1e-12, -1e-7, -50.0, -800.0]))
    check_against_fd(op, x, dy, up)


@pytest.mark.parametrize("op", ("wkv6", "gla"))
def test_no_initial_state_and_no_final_gradient(op):
    """Absent state = zeros; absent dstate = zeros; the state gradient is still returned."""
    x, dy, up = _edge_matrix_inputs(op, 3, np.array([-0.1, -2.0]))
    del x["state"]
    a = BACKWARD[op](**x, dy=dy)
    b = BACKWARD[op](**x, state=np.zeros_like(up["state"]), dy=dy, dstate=np.zeros_like(up["state"]))
    assert set(a) == set(b) and a["state"].shape == up["state"].shape
    for n in a:
        assert np.array_equal(a[n], b[n]), n
    if op == "gla":
        assert isinstance(a["scale"], float)


def test_wkv4_extreme_magnitudes_are_finite_and_exact():
    """W at -1e-9 and -1e3, |k| and |u + k| up to ~60, initial p at ±80, tiny and large bb."""
    rng = np.random.default_rng(7)
    B, T, C = 2, 6, 6
    x = {"k": rng.choice([-55.0, -3.0, 0.5, 50.0], (B, T, C)) + 0.1 * rng.standard_normal((B, T, C)),
         "v": 10 * rng.standard_normal((B, T, C)),
         "w4": np.array([-1e-9, -1e3, -1e-9, -1e3, -0.5, -20.0]), "u": np.array([5, -5, 0.0, 9, -9, 1]),
         "aa": rng.standard_normal((B, C)), "bb": rng.choice([1e-3, 50.0], (B, C)),
         "pp": rng.choice([-80.0, 80.0, 0.0], (B, C))}
    dy = rng.standard_normal((B, T, C))
    up = {n: rng.standard_normal((B, C)) for n in STATE["wkv4"]}
    check_against_fd("wkv4", x, dy, up)


def test_wkv4_final_p_from_the_initial_state_and_from_tokens():
    """``dpp`` reaches ``pp_0`` (and ``T·W``) where the initial p stays the running max, and a
    token's ``k`` where that token set it; both branches are exercised here."""
    rng = np.random.default_rng(11)
    B, T, C = 1, 4, 6
    x = {"k": rng.uniform(-1, 1, (B, T, C)), "v": rng.standard_normal((B, T, C)),
         "w4": -np.full(C, 0.3), "u": rng.uniform(-1, 1, C), "aa": rng.standard_normal((B, C)),
         "bb": rng.uniform(0.5, 2, (B, C)), "pp": np.array([[9.0, 9.0, 9.0, -9.0, -9.0, -9.0]])}
    dy = rng.standard_normal((B, T, C))
    up = {"dpp": np.ones((B, C))}
    g = backward_wkv4(**x, dy=np.zeros_like(dy), **up)  # only dpp: dpp_T/dpp_0 is 1 or 0
    assert np.array_equal(g["pp"], np.array([[1.0, 1, 1, 0, 0, 0]]))
    # pp_T = max(pp_0 + T W, k_i + (T-1-i) W): its W-derivative is T, or T-1-i for the winning token
    cand = np.concatenate([x["pp"] + T * x["w4"], x["k"][0] + (T - 1 - np.arange(T))[:, None] * x["w4"]])
    n_w = np.concatenate([[T], T - 1 - np.arange(T)])[cand.argmax(axis=0)]
    assert np.array_equal(cand.argmax(axis=0) == 0, [True] * 3 + [False] * 3)
    assert np.allclose(g["w4"], n_w, rtol=0, atol=1e-15) and np.array_equal(g["aa"], np.zeros((B, C)))
    winner = np.arange(T)[:, None] + 1 == cand.argmax(axis=0)[None, :]
    assert np.allclose(g["k"][0], winner, rtol=0, atol=1e-15)
    check_against_fd("wkv4", x, dy, {"pp": up["dpp"], "aa": rng.standard_normal((B, C))})


def test_wkv4_tie_goes_to_the_new_token():
    """At ``k_t == p + W`` exactly the final ``(aa, bb, pp)`` has a kink; the oracle returns the
    gradient of the branch where ``k_t`` is the max (the limit from ``k_t > p + W``), and gradients
    of ``y`` alone do not depend on the tie rule at all."""
    rng = np.random.default_rng(5)
    B, T, C = 1, 2, 3
    k = rng.standard_normal((B, T, C))
    W, u = -np.exp(rng.standard_normal(C)), rng.standard_normal(C)
    k[:, 1] = k[:, 0] + W  # with the default state p_1 = k_0, so p_1 + W == k_1 bit for bit
    x = {"k": k, "v": rng.standard_normal((B, T, C)), "w4": W, "u": u}
    dy = rng.standard_normal((B, T, C))
    finals = {n: rng.standard_normal((B, C)) for n in ("daa", "dbb", "dpp")}
    at_tie = backward_wkv4(**x, dy=dy, **finals)
    eps = 1e-9
    from_k_side = backward_wkv4(**{**x, "k": k + np.array([0, eps])[None, :, None]}, dy=dy, **finals)
    from_p_side = backward_wkv4(**{**x, "k": k - np.array([0, eps])[None, :, None]}, dy=dy, **finals)
    for n in at_tie:
        assert np.isfinite(at_tie[n]).all()
        assert max_rel(at_tie[n], from_k_side[n]) < 1e-6, n
    assert max_rel(at_tie["k"], from_p_side["k"]) > 1e-3  # a genuine kink, not a smooth point
    # y alone: both sides agree with the tie point
    shift = np.array([0, eps])[None, :, None]
    only_y = [backward_wkv4(**{**x, "k": k + s * shift}, dy=dy) for s in (0, 1, -1)]
    for n in only_y[0]:
        assert max_rel(only_y[0][n], only_y[1][n]) < 1e-6 and max_rel(only_y[0][n], only_y[2][n]) < 1e-6, n


def test_wkv4_t1_default_state_gradients_are_exact_zeros():
    """With the default state (``pp = -1e38``) nothing reaches ``aa``, ``bb``, ``pp``."""
    rng = np.random.default_rng(2)
    x = {"k": rng.standard_normal((2, 1, 5)), "v": rng.standard_normal((2, 1, 5)),
         "w4": -np.exp(rng.standard_normal(5)), "u": rng.standard_normal(5)}
    dy = rng.standard_normal((2, 1, 5))
    up = {n: rng.standard_normal((2, 5)) for n in STATE["wkv4"]}
    g = backward_wkv4(**x, dy=dy, **upstream_kwargs("wkv4", up))
    for n in STATE["wkv4"]:
        assert np.array_equal(g[n], np.zeros((2, 5))), n
    check_against_fd("wkv4", x, dy, up)


def test_references_do_not_import_torch():
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2] / "wkvoracle"
    for name in ("wkv4.py", "wkv6.py", "gla.py"):
        assert "torch" not in (root / name).read_text(), name
