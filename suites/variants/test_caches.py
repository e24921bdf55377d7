"""An adapter's import of its package leaves the process's compile caches where they were
(wkvkernels/_caches.py). sglang 0.5.23 moves Triton's cache folder when it is imported; a bench process that
imported it compiled again, into sglang's folder, the kernels that the warm-ups had compiled into Triton's
(the whole one-GPU H200 run of c89d626, reports/gpu/h200-2026-11-28-fresh-run-seeded/). CI has no sglang
(it runs in its own virtualenv), so a package here does at import what sglang 0.5.23's
``sglang/srt/environ.py`` does (``redirect_third_party_caches``)."""

from __future__ import annotations

import importlib
import json
import os
import sys

import pytest

from wkvkernels import _caches

pytest.importorskip("torch")

# sglang 0.5.23's third_party_cache_defaults(), under a base of our own
REDIRECT = """
import os
base = os.path.join(os.path.expanduser("~"), ".cache", "sglang")
for key, sub in (("TRITON_CACHE_DIR", "triton"), ("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("CUDA_CACHE_PATH", "nv"),
                 ("TILELANG_CACHE_DIR", "tilelang"), ("FLASHINFER_WORKSPACE_BASE", "")):
    os.environ.setdefault(key, os.path.join(base, sub) if sub else base)
"""
FORK = ("kernels", "ops", "attention", "fla")


@pytest.fixture
def redirecting_sglang(tmp_path, monkeypatch):
    """A package ``sglang`` that redirects the caches at import, with the fork's modules the adapters import
    (``chunk``, ``fused_recurrent``, ``kda``) and one function; every cache variable unset."""
    root = tmp_path / "sglang"
    root.mkdir()
    (root / "__init__.py").write_text(REDIRECT)
    d = root
    for part in FORK:
        d = d / part
        d.mkdir()
        (d / "__init__.py").write_text("")
    for m in ("chunk", "fused_recurrent", "kda"):
        (d / f"{m}.py").write_text("def entry(*args):\n    return 'fork'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for key in _caches.CACHE_ENV:  # set first, so that the teardown puts back what was there (or nothing)
        monkeypatch.setenv(key, "")
        monkeypatch.delenv(key)
    monkeypatch.setattr(_caches, "UNDONE", {})
    from wkvkernels import _sglang

    _sglang.sglang_reason.cache_clear()
    yield _sglang
    _sglang.sglang_reason.cache_clear()
    for name in [m for m in sys.modules if m == "sglang" or m.startswith("sglang.")]:
        del sys.modules[name]


def test_the_stand_in_redirects_the_caches_as_sglang_does(redirecting_sglang):
    # the control: imported plainly, the package moves Triton's cache (else the tests below could not fail)
    importlib.import_module("sglang")

    assert os.environ["TRITON_CACHE_DIR"].endswith(os.path.join(".cache", "sglang", "triton"))


def test_the_adapters_import_leaves_the_caches_as_they_were(redirecting_sglang):
    assert redirecting_sglang.sglang_reason() is None
    assert "sglang" in sys.modules
    assert {k: os.environ.get(k) for k in _caches.CACHE_ENV} == dict.fromkeys(_caches.CACHE_ENV)
    undone = _caches.UNDONE["sglang.kernels.ops.attention.fla.chunk"]
    assert set(undone) == {"TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "CUDA_CACHE_PATH", "TILELANG_CACHE_DIR",
                           "FLASHINFER_WORKSPACE_BASE"}


def test_a_function_looked_up_first_is_imported_the_same_way(redirecting_sglang):
    assert redirecting_sglang.fn("chunk", "entry")() == "fork"
    assert os.environ.get("TRITON_CACHE_DIR") is None


def test_what_the_user_set_stays(redirecting_sglang, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "mine"))
    assert redirecting_sglang.sglang_reason() is None
    assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "mine")  # sglang sets only what is unset
    assert os.environ.get("CUDA_CACHE_PATH") is None


def test_a_value_changed_inside_is_put_back_and_noted(monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", "/a")
    monkeypatch.delenv("TRITON_CACHE_AUTOTUNING", raising=False)
    monkeypatch.setattr(_caches, "UNDONE", {})
    with pytest.raises(RuntimeError):  # put back on the way out of a failed import too
        with _caches.kept_caches("pkg"):
            os.environ["TRITON_CACHE_DIR"] = "/b"
            os.environ["TRITON_CACHE_AUTOTUNING"] = "1"  # vllm 0.33.0 sets this at import
            os.environ["UNRELATED"] = "kept"
            raise RuntimeError("import failed")
    assert os.environ["TRITON_CACHE_DIR"] == "/a" and "TRITON_CACHE_AUTOTUNING" not in os.environ
    assert os.environ.pop("UNRELATED") == "kept"  # only the cache variables are put back
    assert _caches.UNDONE == {"pkg": {"TRITON_CACHE_DIR": "/b", "TRITON_CACHE_AUTOTUNING": "1"}}


def test_a_bench_file_says_what_was_put_back(redirecting_sglang, tmp_path):
    from wkvbench.perf.bench import Bench, BenchSelection

    b = Bench(BenchSelection(devices=("cpu",), dtypes=("fp32",)), tmp_path / "b.json")
    assert "caches_put_back" not in b.document(False)  # no import changed one yet
    redirecting_sglang.sglang_reason()
    put_back = b.document(False)["caches_put_back"]
    assert list(put_back) == ["sglang.kernels.ops.attention.fla.chunk"]
    assert put_back["sglang.kernels.ops.attention.fla.chunk"]["TRITON_CACHE_DIR"].endswith("triton")
    json.dumps(put_back)  # the file is JSON


def test_torchs_own_default_folder_is_not_a_move(monkeypatch):
    """``import fla.ops`` makes Inductor write its default folder into TORCHINDUCTOR_CACHE_DIR: that stays, and is
    not recorded; sglang's folder there is put back."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "")
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    monkeypatch.setattr(_caches, "UNDONE", {})
    with _caches.kept_caches("torch"):
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.abspath(default_cache_dir())
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == os.path.abspath(default_cache_dir()) and _caches.UNDONE == {}
    del os.environ["TORCHINDUCTOR_CACHE_DIR"]
    with _caches.kept_caches("sglang"):
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.expanduser("~/.cache/sglang/inductor")
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ and list(_caches.UNDONE) == ["sglang"]


def test_imports_in_threads_leave_the_caches_as_they_were(monkeypatch):
    """A verification probes its variants in threads: one thread's import (sglang's) moves Triton's folder,
    another's block begins meanwhile and ends after it. The second must not take the moved value for the one
    to put back: at 10fa6ba that left a verification's parent in sglang's folder, where it wrote its markers
    of compiled units, and the next run's units each started a worker of their own."""
    import threading

    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    monkeypatch.setattr(_caches, "UNDONE", {})
    moved, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def sglang_like():
        with _caches.kept_caches("sglang"):
            os.environ.setdefault("TRITON_CACHE_DIR", "/sglang/triton")
            moved.set()
            second_in.wait(0.5)  # the other thread's block would begin here, were blocks side by side
        first_out.set()

    def other():
        moved.wait(5)
        second_in.set()
        with _caches.kept_caches("fla"):
            first_out.wait(5)  # ends after the first

    threads = [threading.Thread(target=sglang_like), threading.Thread(target=other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert "TRITON_CACHE_DIR" not in os.environ, os.environ.get("TRITON_CACHE_DIR")
    assert _caches.UNDONE == {"sglang": {"TRITON_CACHE_DIR": "/sglang/triton"}}
