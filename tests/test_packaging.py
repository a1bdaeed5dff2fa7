"""The package as users install it: the wheel holds every module of model/, explorer/ and prefetch_check/, the
shipped scenarios and the report schema; installed (not editable), `prefetch-check run` works
from an empty folder on the shipped scenarios; the version has one source (pyproject.toml)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import prefetch_check
from prefetch_check.cli import main

ROOT = Path(__file__).parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = PYPROJECT["project"]["version"]
SOURCES = ("pyproject.toml", "README.md", "prefetch_check", "model", "explorer", "scenarios")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built as `pip wheel` builds it, from a copy of the sources (the build leaves
    build/ and *.egg-info behind, not in the checkout)."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy(ROOT / name, src / name)
    # build isolation, as a user's `pip install .` does: the build backend comes from the registry
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "dist"), str(src)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot build the wheel here (no registry for the build backend?): {done.stderr.strip()[-300:]}")
    (built,) = (work / "dist").glob("prefetch_check-*.whl")
    return built


def test_the_wheel_holds_every_module_the_scenarios_and_the_report_schema(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, package in (("model", "prefetch_check/model"), ("explorer", "prefetch_check/explorer"),
                            ("prefetch_check", "prefetch_check")):
        for module in (ROOT / folder).rglob("*.py"):
            if "__pycache__" not in module.parts:
                assert f"{package}/{module.relative_to(ROOT / folder).as_posix()}" in names
    scenarios = sorted(p.name for p in (ROOT / "scenarios").glob("*.toml"))
    assert scenarios and all(f"prefetch_check/scenarios/{s}" in names for s in scenarios)
    assert "prefetch_check/explorer/report/report.schema.json" in names
    assert "prefetch_check/__main__.py" in names
    assert f"prefetch_check-{VERSION}.dist-info/METADATA" in names


def test_the_wheel_has_one_top_level_import_name(wheel):
    """Everything importable lives under prefetch_check: a user's own `model.py` or `explorer/`
    cannot shadow part of the checker."""
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"prefetch_check"}
    top_level = [n for n in names if n.endswith(".dist-info/top_level.txt")]
    if top_level:
        assert zipfile.ZipFile(wheel).read(top_level[0]).decode().split() == ["prefetch_check"]


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The wheel installed (not editable) into a folder of its own; its dependencies are this
    environment's."""
    target = tmp_path_factory.mktemp("installed")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return target


def run_installed(installed: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    """`python -m prefetch_check ARGV` from `cwd`, importing the installed copy, never the checkout."""
    env = {**os.environ, "PYTHONPATH": str(installed), "COLUMNS": "120"}
    return subprocess.run([sys.executable, "-m", "prefetch_check", *argv], cwd=cwd, env=env, capture_output=True, text=True)


def test_installed_run_checks_the_shipped_scenarios_from_an_empty_folder(installed, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    # one predicate: that the installed copy finds its shipped scenarios and checks them is what is
    # tried here (the whole default run, both predicates: tests/test_quick_start.py)
    done = run_installed(installed, empty, "run", "-q", "--predicate", "fixed")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    shipped = installed / "prefetch_check" / "scenarios"
    count = len(list((ROOT / "scenarios").glob("*.toml")))
    assert (f"no scenarios/ here: running the {count} scenarios shipped with prefetch-check {VERSION} ({shipped})"
            in done.stderr)
    assert "Expectations:" in done.stdout and ", 0 fail." in done.stdout
    assert "seed-race" in done.stdout and "tp-production" in done.stdout
    assert list(empty.iterdir()) == []


def test_installed_version_and_module_entry_point(installed, tmp_path):
    done = run_installed(installed, tmp_path, "--version")
    assert (done.returncode, done.stdout) == (0, f"prefetch-check {VERSION}\n")
    env = {**os.environ, "PYTHONPATH": str(installed)}
    probe = "import prefetch_check; print(prefetch_check.__version__, prefetch_check.__file__)"
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True).stdout
    assert out.split()[0] == VERSION and out.split()[1].startswith(str(installed))


def test_a_users_model_py_and_explorer_folder_do_not_shadow_the_package(installed, tmp_path):
    """Common in ML repositories: a `model.py` and an `explorer/` package in the working folder."""
    (tmp_path / "model.py").write_text("raise RuntimeError('the user model was imported')\n")
    (tmp_path / "explorer").mkdir()
    (tmp_path / "explorer" / "__init__.py").write_text("raise RuntimeError('the user explorer was imported')\n")
    probe = ("import prefetch_check\nfrom prefetch_check import check, uniform_config\n"
             "print(check(uniform_config(ranks=1, pages=2), 'fixed').all_verified)")
    for pythonpath in (str(installed), str(ROOT)):  # the installed wheel, and the source checkout
        env = {**os.environ, "PYTHONPATH": pythonpath}
        done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert (done.returncode, done.stdout.strip()) == (0, "True"), done.stderr[-1500:]
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                str(ROOT / "tests" / "test_model_config.py")], cwd=tmp_path, capture_output=True, text=True)
    assert collected.returncode == 0, collected.stdout[-1500:] + collected.stderr[-1500:]


def test_version_has_one_source(capsys):
    assert prefetch_check.__version__ == VERSION
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(["--version"]))
    assert exc.value.code == 0 and capsys.readouterr().out == f"prefetch-check {VERSION}\n"


def test_python_dash_m_is_the_same_command(tmp_path):
    done = subprocess.run([sys.executable, "-m", "prefetch_check", "run", "--help"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("usage: prefetch-check run")
    done = subprocess.run([sys.executable, "-m", "prefetch_check"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2 and "usage: prefetch-check" in done.stderr


def test_run_in_a_folder_with_scenarios_runs_those_and_says_nothing(tmp_path, capsys, monkeypatch):
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "mine.toml").write_text('name = "mine"\npages = 1\n[expect.fixed]\nverifies = "all"\n')
    monkeypatch.chdir(tmp_path)
    code = main(["run", "-q", "--predicate", "fixed"])
    out, err = capsys.readouterr()
    assert code == 0 and "mine" in out and "seed-race" not in out and "shipped" not in err
