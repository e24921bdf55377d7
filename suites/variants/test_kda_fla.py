"""kda's FLA adapters beyond what the verify matrix checks: ``chunk_kda`` is refused wherever fla-core
could hand the call to FlashKDA instead of its Triton kernel (``wkvkernels/_fla_env.flash_kda_dispatch``)."""

from __future__ import annotations

import importlib.util

import pytest

from wkvkernels import _fla_env as env
from wkvkernels import get


@pytest.fixture
def flash_kda_present(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(env.importlib.util, "find_spec",
                        lambda name, *a: object() if name == "flash_kda" else real(name, *a))
    monkeypatch.delenv("FLA_FLASH_KDA", raising=False)
    monkeypatch.delenv("FLA_DISABLE_BACKEND_DISPATCH", raising=False)


@pytest.mark.parametrize("name", ["kda.fla.chunk", "kda.fla.chunk.interp"])
def test_chunk_kda_is_refused_while_flash_kda_could_take_the_call(flash_kda_present, name):
    av = get(name).available()
    assert not av and "flash_kda installed" in av.reason and "FLA_FLASH_KDA=0" in av.reason


@pytest.mark.parametrize("var", ["FLA_FLASH_KDA=0", "FLA_DISABLE_BACKEND_DISPATCH=1"])
def test_switching_flash_kda_off_lifts_the_refusal(flash_kda_present, monkeypatch, var):
    key, value = var.split("=")
    monkeypatch.setenv(key, value)
    assert env.flash_kda_dispatch() is None


def test_without_flash_kda_nothing_is_refused(monkeypatch):
    if importlib.util.find_spec("flash_kda") is not None:
        pytest.skip("flash_kda is installed here")
    monkeypatch.delenv("FLA_FLASH_KDA", raising=False)
    assert env.flash_kda_dispatch() is None
    # fused_recurrent_kda has no FlashKDA backend: never refused for it
    assert "flash_kda" not in (get("kda.fla.fused_recurrent").available().reason or "")
