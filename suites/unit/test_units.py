"""How the isolated runner groups units into chains that share a worker (``wkvbench.run.units``)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from wkvbench.run import units
from wkvbench.run.units import chains, compiled_marker, mark_compiled, probe_order, start_order


def _v(name, backend, device="cuda", baseline=False):
    return SimpleNamespace(name=name, backend=backend, device=device, baseline=baseline,
                           algorithm=name.split(".", 2)[-1])


OBJS = {v.name: v for v in (_v("op.torch.recurrent", "torch", baseline=True), _v("op.rwkv.cuda", "cuda"),
                            _v("op.fla.chunk", "triton"), _v("op.fla.twin", "triton", device="cpu"),
                            _v("op.flashqla.chunk", "tilelang"),
                            _v("op.fla.fused.interp", "triton-interpret", device="cpu"))}


def _units(name):
    return [(name, k, d) for k in ("forward", "backward") for d in ("bf16", "fp32")]


def test_units_without_compilation_share_one_chain_and_baselines_and_cold_triton_units_do_not(
        tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    todo = [u for n in OBJS for u in _units(n)]
    got = chains(todo, OBJS)
    by_variant = {}
    for ch in got:
        assert len({u[0] for u in ch}) == 1  # a chain never mixes variants: it shares one worker
        by_variant.setdefault(ch[0][0], []).append(ch)
    assert [len(c) for c in by_variant["op.torch.recurrent"]] == [1, 1, 1, 1]  # the baseline: apart
    assert by_variant["op.rwkv.cuda"] == [_units("op.rwkv.cuda")]  # one process, units in order
    assert [len(c) for c in by_variant["op.fla.chunk"]] == [1, 1, 1, 1]  # compiles side by side
    assert by_variant["op.fla.twin"] == [_units("op.fla.twin")]  # the interpreter compiles nothing
    assert [len(c) for c in by_variant["op.flashqla.chunk"]] == [1, 1, 1, 1]  # TileLang: per shape, always apart
    assert sorted(u for ch in got for u in ch) == sorted(todo)  # every unit once
    assert [ch[0] for ch in got] == sorted((ch[0] for ch in got), key=todo.index)  # start order kept


def test_triton_units_an_earlier_run_compiled_join_one_chain(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    warm = _units("op.fla.chunk")[:3]
    mark_compiled(warm[0])  # no cache folder yet: nothing compiled to disk, no marker
    assert not compiled_marker(warm[0]).exists()
    (tmp_path / "triton").mkdir()
    for u in warm:
        mark_compiled(u)
    got = chains(_units("op.fla.chunk"), OBJS)
    assert got == [warm, [_units("op.fla.chunk")[3]]]  # the cold one still compiles on its own
    # the marker names the Triton and torch it was compiled with: another version is cold again
    monkeypatch.setattr(units, "_version", lambda dist: "0.0-other")
    assert all(len(c) == 1 for c in chains(_units("op.fla.chunk"), OBJS))


def test_the_markers_stay_in_the_folder_the_run_started_with(tmp_path, monkeypatch):
    """A verification passes the cache folder it found at its start (``cache``): a package imported by its
    probes that moves ``TRITON_CACHE_DIR`` (sglang does) then moves no marker, and the next run, which looks
    where the environment says, finds them (the warm verification of the H200 run at 10fa6ba)."""
    own = tmp_path / "triton"
    own.mkdir()
    monkeypatch.setenv("TRITON_CACHE_DIR", str(own))
    cache = units.triton_cache()
    warm = _units("op.fla.chunk")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "sglang" / "triton"))  # moved by an import, mid-run
    (tmp_path / "sglang" / "triton").mkdir(parents=True)
    for u in warm:
        mark_compiled(u, cache)
    assert chains(warm, OBJS, cache=cache) == [warm]
    assert all(len(c) == 1 for c in chains(warm, OBJS))  # where the moved variable points: none there
    monkeypatch.setenv("TRITON_CACHE_DIR", str(own))  # the next run
    assert chains(warm, OBJS) == [warm]


def test_tilelang_units_stay_apart_even_where_a_triton_marker_exists(tmp_path, monkeypatch):
    """TileLang keeps its own cache: a Triton marker says nothing about it, so its units never join."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    (tmp_path / "triton").mkdir()
    for u in _units("op.flashqla.chunk"):
        mark_compiled(u)
    assert [len(c) for c in chains(_units("op.flashqla.chunk"), OBJS)] == [1, 1, 1, 1]


def test_interpreter_twins_run_their_units_side_by_side_only_where_workers_are_forked(tmp_path, monkeypatch):
    """A fresh worker of a twin imports torch and FLA (4 s of CPU on the 2-core machine): one chain. Forked
    from the process that imported them, it starts in milliseconds: a chain per unit, run side by side."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    twin = _units("op.fla.fused.interp")
    assert chains(twin, OBJS) == [twin]
    assert chains(twin, OBJS, forked=True) == [[u] for u in twin]
    # nothing else changes with forked workers
    others = [u for n in OBJS if n != "op.fla.fused.interp" for u in _units(n)]
    assert chains(others, OBJS, forked=True) == chains(others, OBJS)


def test_the_markers_live_in_the_folder_triton_compiles_into(tmp_path, monkeypatch):
    """The compiled markers sit in Triton's own cache folder, found as Triton finds it: ``TRITON_CACHE_DIR``,
    else ``$TRITON_HOME/.triton/cache``, else the home folder's (``triton.knobs.cache``)."""
    import triton.knobs

    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    monkeypatch.setenv("TRITON_HOME", str(tmp_path / "home"))
    assert units.triton_cache() == tmp_path / "home" / ".triton" / "cache"
    assert units.triton_cache() == Path(triton.knobs.cache.dir)
    assert compiled_marker(("op.fla.chunk", "forward", "bf16")).parent.parent == units.triton_cache()
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "mine"))
    assert units.triton_cache() == tmp_path / "mine" == Path(triton.knobs.cache.dir)
    monkeypatch.delenv("TRITON_HOME")
    monkeypatch.delenv("TRITON_CACHE_DIR")
    assert units.triton_cache() == Path.home() / ".triton" / "cache" == Path(triton.knobs.cache.dir)


def test_variants_are_probed_in_the_order_their_units_start():
    """The parent probes availability side by side, and each unit waits for its own variant's probe: in name
    order the baselines' backward units, which start first, waited 15-24 s behind other packages' probes on
    the H200 runs of c6a6724. The probes follow the units' start order: the baseline first, then the
    costliest kinds, whatever the names."""
    objs = {**OBJS, "a.cheap.first_by_name": _v("a.cheap.first_by_name", "torch", device="cpu")}
    todo = [u for n in sorted(objs) for u in _units(n)]
    order = start_order(todo, objs)
    assert order[:2] == [("op.torch.recurrent", "backward", "bf16"),
                         ("op.torch.recurrent", "backward", "fp32")]
    probes = probe_order(order)
    assert sorted(probes) == sorted(objs) and len(probes) == len(objs)  # each variant once
    assert probes[0] == "op.torch.recurrent" and probes[-1] == "a.cheap.first_by_name"  # by start, not name
    assert probes.index("op.fla.chunk") < probes.index("op.rwkv.cuda")  # Triton chunks before CUDA extensions
