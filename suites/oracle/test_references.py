"""The float64 oracle tested against itself: independent formulations (≤ 1e-12 relative),
invariants (state carrying, linearity) and closed-form tiny cases."""

from __future__ import annotations

import numpy as np
import pytest

from wkvkernels.cases import Case, Shape
from wkvkernels.ops import default_state
from wkvoracle import ALTERNATES, FAST, ORACLES, kkt_inverse, recurrent_gdn, recurrent_gdn_wy, wkv7_form_kda
from wkvoracle.gdn_wy import substitution_gdn_wy
from wkvoracle.inputs import chunk_local_cumsum, generate

TOL = 1e-12


def rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def _inputs(op: str, domain: str, T: int = 37, h0: bool = True, N: int = 16, seed: int = 0) -> dict:
    shape = Shape(2, T, 1, 24, h0=h0) if op == "wkv4" else Shape(2, T, 2, N, h0=h0)
    x = {k: (v.astype(np.float64) if isinstance(v, np.ndarray) else v)
         for k, v in generate(Case(op, domain, shape, "fp32", seed)).items()}
    return {**default_state(op, x), **x}


STATE_OPS = ("wkv4", "wkv6", "wkv7", "gla", "gdn", "kda")
DOMAINS = ("model", "stress", "uniform")


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("op", STATE_OPS)
def test_independent_formulation_agrees(op, domain):
    x = _inputs(op, domain)
    a, b = ORACLES[op](**x), ALTERNATES[op](**x)
    for name in a:
        assert rel(b[name], a[name]) <= TOL, (name, rel(b[name], a[name]))


@pytest.mark.parametrize("chunk", [1, 5, 16, 64])
@pytest.mark.parametrize("op", ("wkv6", "gla"))
def test_chunked_form_any_chunk_length(op, chunk):
    x = _inputs(op, "model")
    a, b = ORACLES[op](**x), ALTERNATES[op](**x, chunk=chunk)
    assert rel(b["y"], a["y"]) <= TOL and rel(b["state"], a["state"]) <= TOL


def _state_names(op):
    return ("aa", "bb", "pp") if op == "wkv4" else ("state",)


def _split(x: dict, t1: int) -> tuple[dict, dict]:
    first, second = {}, {}
    for k, v in x.items():
        if isinstance(v, np.ndarray) and v.ndim >= 3 and k not in ("state",):
            first[k], second[k] = v[:, :t1], v[:, t1:]
        else:
            first[k] = second[k] = v
    return first, second


@pytest.mark.parametrize("t1", [1, 17, 36])
@pytest.mark.parametrize("op", STATE_OPS)
def test_carried_state_equals_one_run(op, t1):
    x = _inputs(op, "model")
    whole = ORACLES[op](**x)
    first, second = _split(x, t1)
    a = ORACLES[op](**first)
    second.update({n: a[n] for n in _state_names(op)})
    b = ORACLES[op](**second)
    assert rel(np.concatenate([a["y"], b["y"]], axis=1), whole["y"]) <= TOL
    for n in _state_names(op):
        assert rel(b[n], whole[n]) <= TOL


@pytest.mark.parametrize("op", ("wkv6", "wkv7", "gla", "gdn", "kda", "wkv4"))
def test_linear_in_values_and_state(op):
    """Every output is linear in (v, initial state) jointly (for wkv4: in (v, aa) at fixed bb, pp)."""
    x1, x2 = _inputs(op, "model", seed=1), _inputs(op, "model", seed=2)
    lin = ("v", "aa") if op == "wkv4" else ("v", "state")
    mix = dict(x1)
    for n in lin:
        mix[n] = 0.7 * x1[n] - 1.3 * x2[n]
    y1 = ORACLES[op](**x1)
    y2 = ORACLES[op](**{**x1, **{n: x2[n] for n in lin}})
    ym = ORACLES[op](**mix)
    for n in ("y", *(("aa",) if op == "wkv4" else ("state",))):
        assert rel(ym[n], 0.7 * y1[n] - 1.3 * y2[n]) <= TOL


def test_linear_gdn_wy():
    x = {k: (v.astype(np.float64) if isinstance(v, np.ndarray) else v)
         for k, v in generate(Case("gdn_wy", "model", Shape(1, 37, 2, 16, C=16), "fp32")).items()}
    v2 = np.random.default_rng(3).standard_normal(x["v"].shape)
    a, b = recurrent_gdn_wy(**x), recurrent_gdn_wy(**{**x, "v": v2})
    m = recurrent_gdn_wy(**{**x, "v": 2 * x["v"] - v2})
    assert rel(m["u"], 2 * a["u"] - b["u"]) <= TOL and rel(m["w"], a["w"]) <= TOL


# ---- kda: the generalized delta rule, and gdn as its special case ---------------------------------

@pytest.mark.parametrize("h0", [True, False])
@pytest.mark.parametrize("domain", (*DOMAINS, "lwneg", "beta1", "safegate"))
def test_kda_through_the_generalized_delta_rule(domain, h0):
    """KDA is RWKV-7's recurrence with lw = g, a = -β (e^g ⊙ k), b = k, value β v, receptance scale·q."""
    x = _inputs("kda", domain, h0=h0)
    if not h0:
        x.pop("state")
    a, b = ORACLES["kda"](**x), wkv7_form_kda(**x)
    for name in a:
        assert rel(b[name], a[name]) <= TOL, (name, rel(b[name], a[name]))


@pytest.mark.parametrize("domain", DOMAINS)
def test_gdn_is_kda_with_the_gate_broadcast_over_keys(domain):
    """Every formulation of kda (recurrence, transition form, fast chunked form) fed gdn's gate on every
    key gives gdn's recurrence."""
    x = _inputs("gdn", domain)
    wide = {**x, "g": np.repeat(x["g"][..., None], x["k"].shape[-1], axis=-1)}
    want = ORACLES["gdn"](**x)
    for form in (ORACLES["kda"], ALTERNATES["kda"], FAST["kda"]):
        got = form(**wide)
        for name in want:
            assert rel(got[name], want[name]) <= TOL, (form.__name__, name)


def test_kda_decays_each_key_column_by_its_own_gate():
    """β = 0: no write, the state's column j is scaled by e^{g[j]} and nothing else."""
    rng = np.random.default_rng(5)
    S0 = rng.standard_normal((1, 1, 3, 4))
    g = -rng.uniform(0, 3, (1, 1, 1, 4))
    q, k, v = (rng.standard_normal((1, 1, 1, n)) for n in (4, 4, 3))
    out = ORACLES["kda"](q=q, k=k, v=v, g=g, beta=np.zeros((1, 1, 1)), scale=0.5, state=S0)
    assert np.allclose(out["state"][0, 0], S0[0, 0] * np.exp(g[0, 0, 0])[None, :], rtol=1e-14)
    assert np.allclose(out["y"][0, 0, 0], 0.5 * out["state"][0, 0] @ q[0, 0, 0], rtol=1e-14)


# ---- closed-form tiny cases -------------------------------------------------------------------

def test_wkv4_first_token_is_its_value_and_second_a_weighted_mean():
    rng = np.random.default_rng(0)
    k, v = rng.standard_normal((1, 2, 3)), rng.standard_normal((1, 2, 3))
    W, u = -np.exp(rng.standard_normal(3)), rng.standard_normal(3)
    out = ORACLES["wkv4"](k=k, v=v, w4=W, u=u)
    assert np.allclose(out["y"][0, 0], v[0, 0], rtol=0, atol=1e-15)
    e0, e1 = np.exp(k[0, 0]), np.exp(u + k[0, 1])
    assert np.allclose(out["y"][0, 1], (e0 * v[0, 0] + e1 * v[0, 1]) / (e0 + e1), rtol=1e-14)
    # the state after two tokens: a e^p = e^W e^{k0} v0 + e^{k1} v1
    ae = out["aa"] * np.exp(out["pp"])
    assert np.allclose(ae, np.exp(W + k[0, 0]) * v[0, 0] + np.exp(k[0, 1]) * v[0, 1], rtol=1e-13)


def _one_token(shape=(1, 1, 1, 4), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for _ in range(6)]


def test_wkv6_one_token_from_zero_state():
    r, k, v, lw, _, _ = _one_token()
    u = np.random.default_rng(1).standard_normal((1, 4))
    out = ORACLES["wkv6"](r=r, k=k, v=v, lw=-np.abs(lw), u=u)
    assert np.allclose(out["y"][0, 0, 0], np.sum(r * u * k) * v[0, 0, 0], rtol=1e-14)
    assert np.allclose(out["state"][0, 0], np.outer(v[0, 0, 0], k[0, 0, 0]), rtol=1e-14)


def test_wkv6_decay_applies_per_key_after_reading():
    """Two tokens, the second reads S_1 = v_0 k_0ᵀ (undecayed) + bonus; the final state is decayed."""
    r, k, v, lw, _, _ = _one_token((1, 2, 1, 3))
    lw, u = -np.abs(lw), np.zeros((1, 3))
    out = ORACLES["wkv6"](r=r, k=k, v=v, lw=lw, u=u)
    S1 = np.outer(v[0, 0, 0], k[0, 0, 0])
    assert np.allclose(out["y"][0, 1, 0], S1 @ r[0, 1, 0], rtol=1e-14)
    S2 = S1 * np.exp(lw[0, 1, 0])[None, :] + np.outer(v[0, 1, 0], k[0, 1, 0])
    assert np.allclose(out["state"][0, 0], S2, rtol=1e-14)


def test_wkv7_one_token_and_the_old_state_feeds_sa():
    r, k, v, a, b, lw = _one_token((1, 1, 1, 4))
    lw = -np.abs(lw)
    S0 = np.random.default_rng(2).standard_normal((1, 1, 4, 4))
    out = ORACLES["wkv7"](r=r, k=k, v=v, a=a, b=b, lw=lw, state=S0)
    S = S0[0, 0] @ (np.diag(np.exp(lw[0, 0, 0])) + np.outer(a[0, 0, 0], b[0, 0, 0])) + np.outer(v[0, 0, 0], k[0, 0, 0])
    assert np.allclose(out["state"][0, 0], S, rtol=1e-14)
    assert np.allclose(out["y"][0, 0, 0], S @ r[0, 0, 0], rtol=1e-14)


def test_gla_reads_the_new_state_with_scale():
    q, k, v, lw, _, _ = _one_token()
    out = ORACLES["gla"](q=q, k=k, v=v, lw=-np.abs(lw), scale=0.5)
    assert np.allclose(out["y"][0, 0, 0], 0.5 * np.dot(q[0, 0, 0], k[0, 0, 0]) * v[0, 0, 0], rtol=1e-14)


def test_gdn_delta_rule_overwrites_the_key_slot():
    """β = 1, g = 0, unit k: after one step S k = v exactly, whatever the old state held."""
    rng = np.random.default_rng(4)
    k = rng.standard_normal((1, 1, 1, 8))
    k /= np.linalg.norm(k)
    v, q = rng.standard_normal((1, 1, 1, 8)), rng.standard_normal((1, 1, 1, 8))
    S0 = rng.standard_normal((1, 1, 8, 8))
    out = recurrent_gdn(q=q, k=k, v=v, g=np.zeros((1, 1, 1)), beta=np.ones((1, 1, 1)), scale=1.0, state=S0)
    assert np.allclose(out["state"][0, 0] @ k[0, 0, 0], v[0, 0, 0], rtol=1e-13)


def test_gdn_wy_identity_A():
    x = {k: np.asarray(v, np.float64) for k, v in generate(Case("gdn_wy", "model", Shape(1, 20, 2, 8, C=8), "fp32")).items()}
    A = np.zeros_like(x["A"], dtype=np.float64)
    for t in range(20):
        A[:, t, :, t % 8] = 1.0
    out = recurrent_gdn_wy(x["k"], x["v"], x["beta"], A, x["gc"])
    assert np.allclose(out["u"], x["beta"][..., None] * x["v"], rtol=1e-14)
    assert np.allclose(out["w"], (x["beta"] * np.exp(x["gc"]))[..., None] * x["k"], rtol=1e-13)


# ---- gdn_wy: explicit inverse vs forward substitution, and the WY pipeline reproduces gdn -----

@pytest.mark.parametrize("BT,T", [(16, 37), (8, 8), (64, 50)])
def test_gdn_wy_inverse_equals_forward_substitution(BT, T):
    rng = np.random.default_rng(BT + T)
    k = rng.standard_normal((2, T, 2, 16))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v, beta = rng.standard_normal((2, T, 2, 16)), 1 / (1 + np.exp(-rng.standard_normal((2, T, 2))))
    gc = chunk_local_cumsum(np.log(1 / (1 + np.exp(-rng.standard_normal((2, T, 2))))) / 16, BT)
    a = recurrent_gdn_wy(k, v, beta, kkt_inverse(k, beta, gc, BT), gc)
    b = substitution_gdn_wy(k, v, beta, gc, BT)
    assert rel(a["w"], b["w"]) <= TOL and rel(a["u"], b["u"]) <= TOL


@pytest.mark.parametrize("BT", [4, 16])
def test_wy_pipeline_reproduces_gated_delta_net(BT):
    """Chunked GDN built on the WY stage (spec §5.2 steps 1-5, natural log) equals the recurrence."""
    x = _inputs("gdn", "model", T=37)
    q, k, v, g, beta, scale, S0 = (x[n] for n in ("q", "k", "v", "g", "beta", "scale", "state"))
    gc = chunk_local_cumsum(g, BT)
    wy = recurrent_gdn_wy(k, v, beta, kkt_inverse(k, beta, gc, BT), gc)
    h = np.swapaxes(S0, -1, -2).copy()  # FLA orientation [K, V]
    y = np.empty(v.shape)
    for s in range(0, 37, BT):
        sl = slice(s, min(s + BT, 37))
        v_new = wy["u"][:, sl] - np.einsum("bthk,bhkv->bthv", wy["w"][:, sl], h)
        g_c = gc[:, sl]
        n = g_c.shape[1]
        causal = np.tril(np.ones((n, n), dtype=bool))
        dec = np.where(causal[None, :, :, None], np.exp(np.where(causal[None, :, :, None], g_c[:, :, None] - g_c[:, None, :], 0)), 0)
        qk = np.einsum("bthk,bshk->btsh", q[:, sl], k[:, sl]) * dec
        y[:, sl] = scale * (np.exp(g_c)[..., None] * np.einsum("bthk,bhkv->bthv", q[:, sl], h)
                            + np.einsum("btsh,bshv->bthv", qk, v_new))
        G = g_c[:, -1]
        h = np.exp(G)[..., None, None] * h + np.einsum(
            "bshk,bshv->bhkv", k[:, sl], np.exp(G[:, None] - g_c)[..., None] * v_new)
    ref = recurrent_gdn(q, k, v, g, beta, scale, S0)
    assert rel(y, ref["y"]) <= TOL and rel(np.swapaxes(h, -1, -2), ref["state"]) <= TOL


def test_wkv4_stress_is_finite():
    x = _inputs("wkv4", "stress", T=200)
    out = ORACLES["wkv4"](**x)
    assert all(np.isfinite(v).all() for v in out.values())


def test_references_do_not_import_torch():
    import subprocess
    import sys

    code = "import sys, wkvoracle, wkvoracle.inputs; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
