"""run/compiles.py: processes that meet one Triton kernel at once compile it once; the others wait and hit.

Triton's ``compile`` is replaced here by a stand-in that behaves as it does where it matters: it looks its
key up in an on-disk cache, compiles (sleeps) on a miss, writes the cache, and tells the compilation listener
whether it hit. No GPU is needed; the lock, the accounting and the wrapping are ours and run as on the box.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from pathlib import Path

import pytest

pytest.importorskip("triton")

from wkvbench.run import compiles  # noqa: E402

COMPILE_S = 0.4


class FakeSource:
    """What ``compiles._key`` reads of Triton's ``ASTSource``."""

    def __init__(self, name: str, constexpr: int) -> None:
        self.fn, self.name, self.constexpr = object(), name, constexpr

    def hash(self) -> str:
        return f"{self.name}-{self.constexpr}"


def _fake_compile(cache: Path):
    from triton import knobs

    def compile(src, target=None, options=None, _env_vars=None):  # noqa: A001
        f = cache / f"{src.hash()}-{json.dumps(options, sort_keys=True)}"
        hit = f.exists()
        if not hit:
            time.sleep(COMPILE_S)  # the compilation
            tmp = f.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text("kernel")
            tmp.rename(f)
        if knobs.compilation.listener is not None:
            knobs.compilation.listener(src=src, metadata={}, metadata_group={}, times=None, cache_hit=hit)
        return f.read_text()

    return compile


def _process(folder: str, cache: str, locked: bool, start: float, keys: list[int]) -> None:
    from triton.compiler import compiler as cc

    cc.compile = _fake_compile(Path(cache))
    if locked:
        assert compiles.install(folder)
        assert compiles.install(folder)  # a second install is a no-op
    while time.time() < start:  # the processes ask at the same moment
        time.sleep(0.001)
    for k in keys:
        src = FakeSource("chunk_fwd_kernel", k)
        out = cc.compile(src, target="cuda:90", options={"num_warps": 4})
        assert out == "kernel"
        if not locked:
            compiles._log(Path(folder), {"k": str(k), "n": src.name, "w": 0.0, "s": COMPILE_S, "hit": False})
    if locked:  # what a verify worker reports with each unit (unit_compiles)
        c = compiles.counters()
        assert c["calls"] == len(keys) and c["compiled_s"] >= COMPILE_S * 0.9 * c["compiled"]
        assert c["hit_s"] < COMPILE_S and c["waited_s"] >= 0


def _run(tmp_path: Path, locked: bool, keys_per_process: list[list[int]]) -> dict:
    folder, cache = tmp_path / "compiles", tmp_path / "cache"
    folder.mkdir()
    cache.mkdir()
    ctx = mp.get_context("fork")
    start = time.time() + 0.5
    ps = [ctx.Process(target=_process, args=(str(folder), str(cache), locked, start, keys))
          for keys in keys_per_process]
    for p in ps:
        p.start()
    for p in ps:
        p.join(30)
        assert p.exitcode == 0
    return compiles.summary(folder)


def test_one_process_compiles_a_kernel_the_others_wait_and_hit(tmp_path):
    s = _run(tmp_path, True, [[1, 2], [1, 2], [1, 3]])
    assert s["processes"] == 3
    assert s["compiled"] == 3  # keys 1, 2, 3 once each
    assert s["again"] == 0 and s["again_s"] == 0
    assert s["hits"] == 3 and s["saved"] >= 2  # key 1 twice; key 2 once where the second asked meanwhile
    assert s["saved_s"] >= 2 * COMPILE_S * 0.9
    assert s["waited_s"] > 0
    assert s["unknown"] == 0
    assert s["hit_s"] < s["compiled_s"]
    assert s["kernels"] == {"chunk_fwd_kernel": [3, s["compiled_s"]]}  # by name: its three specialisations


def test_without_the_lock_the_same_kernel_compiles_in_every_process(tmp_path):
    """The control: the stand-in is racy as Triton's cache is, so the lock above made the difference."""
    s = _run(tmp_path, False, [[1], [1], [1]])
    assert s["compiled"] == 3 and s["again"] == 2


def test_distinct_options_do_not_wait_for_each_other(tmp_path):
    folder = tmp_path / "compiles"
    keys = {compiles._key(FakeSource("k", 1), "cuda:90", {"num_warps": w}) for w in (4, 8)}
    keys.add(compiles._key(FakeSource("k", 2), "cuda:90", {"num_warps": 4}))
    assert len(keys) == 3
    assert compiles._key("an IR file's path", "cuda:90", {}) is None
    assert not folder.exists()


def test_summary_reads_cut_lines_and_an_empty_folder(tmp_path):
    assert compiles.summary(tmp_path)["processes"] == 0
    (tmp_path / "compiles-1.jsonl").write_text('{"k":"a","n":"x","w":0.0,"s":2.0,"hit":false}\n{"k":"a"')
    (tmp_path / "compiles-2.jsonl").write_text('{"k":"a","n":"x","w":0.0,"s":1.5,"hit":false}\n'
                                              '{"k":"b","n":"y","w":0.1,"s":0.0}\n')
    s = compiles.summary(tmp_path)
    assert (s["compiled"], s["again"], s["again_s"], s["unknown"]) == (2, 1, 1.5, 1)


def test_install_from_env_needs_the_variable():
    assert compiles.install_from_env({}) is False


def test_run_json_keeps_the_summary(tmp_path):
    from wkvbench.results.runfile import State

    st = State(tmp_path / "run.json")
    st.compiles = {"processes": 2, "compiled": 3, "compiled_s": 4.0, "hits": 5, "saved": 1, "saved_s": 2.0,
                   "waited_s": 1.0, "again": 0, "again_s": 0.0, "unknown": 0}
    st.save()
    assert State.load(tmp_path / "run.json").compiles == st.compiles
