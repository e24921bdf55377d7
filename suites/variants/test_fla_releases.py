"""What lets one FLA adapter span FLA's releases (wkvkernels/_fla_env.py, docs/history.md): the layout
keyword, the bare ``fla`` import of releases whose ``__init__`` needs transformers, the missing
``torch.cpu.device``; none needs a second FLA installed."""

from __future__ import annotations

import sys

import pytest

from wkvkernels import _fla_env as env


def test_head_first_is_passed_only_where_its_default_is_not_time_first():
    def old(q, k, head_first: bool = True): ...
    def mid(q, k, head_first: bool = False): ...
    def new(q, k): ...

    assert env.time_first(old) == {"head_first": False}
    assert env.time_first(mid) == {} and env.time_first(new) == {}


@pytest.fixture
def fake_fla(tmp_path, monkeypatch):
    """A package ``fla`` whose ``__init__`` imports a missing ``transformers`` and whose ``fla.ops`` does not,
    as flash-linear-attention < 0.3.2 without its model-side dependencies."""
    root = tmp_path / "fla"
    (root / "ops").mkdir(parents=True)
    (root / "__init__.py").write_text("import transformers_not_here_either\nfrom fla import ops\n")
    (root / "ops" / "__init__.py").write_text("KERNELS = 'imported'\n")
    saved = {k: v for k, v in sys.modules.items() if k == "fla" or k.startswith("fla.")}
    for k in saved:
        del sys.modules[k]
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(env, "_MODEL_SIDE", ("transformers_not_here_either",))
    yield root
    for k in [k for k in sys.modules if k == "fla" or k.startswith("fla.")]:
        del sys.modules[k]
    sys.modules.update(saved)


def test_fla_ops_imports_without_the_model_side_dependencies(fake_fla):
    ops = env.import_ops()
    assert ops.KERNELS == "imported"
    assert sys.modules["fla"].__path__ == [str(fake_fla)]  # the same files, its __init__ not run


def test_any_other_import_failure_is_raised(fake_fla):
    (fake_fla / "ops" / "__init__.py").write_text("import a_kernel_dependency_missing\n")
    with pytest.raises(ModuleNotFoundError, match="a_kernel_dependency_missing"):
        env.import_ops()


def test_a_cpu_device_context_is_supplied_only_where_torch_lacks_one(monkeypatch):
    torch = pytest.importorskip("torch")
    if hasattr(torch.cpu, "device") and torch.cpu.device is not env._CpuDeviceContext:
        env._compat_torch()
        assert torch.cpu.device is not env._CpuDeviceContext  # torch's own is left alone
        return
    monkeypatch.delattr(torch.cpu, "device", raising=False)
    env._compat_torch()
    with torch.cpu.device(0) as ctx:
        assert ctx.index == 0


def test_module_level_aliases_of_triton_builtins_get_jitted_stand_ins(monkeypatch):
    tl = pytest.importorskip("triton.language")
    import types

    from wkvkernels import _fla_interp_alias as alias

    mod = types.ModuleType("fla.ops._alias_probe")
    mod.exp, mod.exp2, mod.gather, mod.where = tl.exp, tl.math.exp2, tl.gather, tl.where
    monkeypatch.setitem(sys.modules, "fla.ops._alias_probe", mod)
    done = env.patch_interpreted_aliases("fla.ops._alias_probe")
    assert {f"fla.ops._alias_probe.{n}" for n in ("exp", "exp2", "gather")} <= set(done)
    assert mod.exp is alias.exp and mod.exp2 is alias.exp2 and mod.gather is alias.gather
    assert mod.where is tl.where  # no stand-in: left alone
