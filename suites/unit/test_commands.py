"""The printed commands (``wkvbench/judge/commands.py``): nox only in the checkout, the program as it
was started elsewhere, ``--plugin`` for a plug-in's variants; and where results go without ``--output``.
The installed end-to-end run is ``suites/tools/test_installed_commands.py``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from wkvbench.judge import commands
from wkvbench.judge.check import CheckResult
from wkvkernels.cases import Case

REPO = Path(__file__).resolve().parents[2]
CID = "gla/model/B1-T1-H1-N64/fp32/s0"


@pytest.fixture
def plugin_variant(tmp_path, monkeypatch):
    path = tmp_path / "mine.py"
    path.write_text("# a plug-in file\n")
    monkeypatch.setitem(commands.PLUGIN_FILES, "gla.mine.k", path.resolve())
    return path


def test_in_the_checkout_the_nox_form_stays_and_carries_the_plugin(monkeypatch, plugin_variant):
    monkeypatch.chdir(REPO)
    cmd = CheckResult("gla.mine.k", Case.parse(CID), "FAIL").reproduce
    assert cmd == f"nox -s verify -- --variant gla.mine.k --case {CID} --plugin {plugin_variant.resolve()}"
    assert CheckResult("gla.torch.recurrent", Case.parse(CID), "FAIL").reproduce == \
        f"nox -s verify -- --variant gla.torch.recurrent --case {CID}"


def test_outside_the_checkout_the_program_as_started_the_plugin_relative(monkeypatch, tmp_path,
                                                                          plugin_variant):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "venv" / "bin" / "wkvbench")])  # the console script ...
    monkeypatch.setattr(commands.shutil, "which", lambda name: None)  # ... of a virtualenv not activated
    cmd = commands.verify_command("gla.mine.k", CID, backward=True)
    script = tmp_path / "venv" / "bin" / "wkvbench"
    assert cmd == f"{script} verify --variant gla.mine.k --case {CID} --backward --plugin mine.py"
    monkeypatch.setattr(commands.shutil, "which", lambda name: sys.argv[0] if name == "wkvbench" else None)
    assert commands.replay_command(tmp_path / "out" / "x.npz", "gla.mine.k") == \
        "wkvbench replay out/x.npz --plugin mine.py"
    sub = tmp_path / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)  # the plug-in is not under the working directory: its absolute path
    assert commands.verify_command("gla.mine.k", CID).endswith(f"--plugin {plugin_variant.resolve()}")


def test_python_m_names_the_interpreter_where_python_on_path_is_another(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["/somewhere/wkvbench/__main__.py"])
    monkeypatch.setattr(commands.shutil, "which", lambda name: sys.executable if name == "python" else None)
    assert commands.command("verify", "--op", "gla") == "python -m wkvbench verify --op gla"
    monkeypatch.setattr(commands.shutil, "which", lambda name: "/usr/bin/python3")
    want = f"{sys.executable} -m wkvbench verify --variant 'a b'"
    assert commands.command("verify", "--variant", "a b") == want


def test_mutants_carry_their_option(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert commands.verify_command("gla.mutant.noscale", CID).endswith(" --mutants")


def test_a_loaded_plugin_file_is_noted_for_its_variants(tmp_path, monkeypatch):
    from wkvbench.run.plugins import load_file
    from wkvkernels.base import unregister

    path = tmp_path / "noted.py"
    path.write_text("from wkvbench.run.plugins import register_function\n"
                    "register_function('gla.noted.k', 'gla', lambda x, d: x)\n")
    monkeypatch.chdir(tmp_path)
    try:
        load_file(path)
        assert commands.PLUGIN_FILES["gla.noted.k"] == path.resolve()
        assert commands.verify_command("gla.noted.k", CID).endswith("--plugin noted.py")
    finally:
        unregister("gla.noted.k")
        commands.PLUGIN_FILES.pop("gla.noted.k", None)


def test_results_go_to_the_working_directory_outside_the_checkout(monkeypatch, tmp_path):
    monkeypatch.delenv("WKVBENCH_RESULTS_DIR", raising=False)
    monkeypatch.chdir(REPO)
    assert commands.default_results_dir() == REPO / "reports" / "results"  # the checkout keeps its default
    monkeypatch.chdir(tmp_path)
    assert commands.default_results_dir() == tmp_path / "wkvbench-results"
    # installed: the package's folder is site-packages (no noxfile), which is no checkout: the working
    # directory's folder, wherever that is
    site = tmp_path / "site-packages"
    (site / "wkvbench").mkdir(parents=True)
    monkeypatch.setattr(commands, "ROOT", site)
    monkeypatch.chdir(site)
    assert commands.default_results_dir() == site / "wkvbench-results"
    assert not commands.in_checkout() and commands.default_reports_dir() == site / "wkvbench-results"
    monkeypatch.setenv("WKVBENCH_RESULTS_DIR", str(tmp_path / "named"))
    assert commands.default_results_dir() == tmp_path / "named"
