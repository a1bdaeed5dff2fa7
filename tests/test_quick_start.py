"""The README's quick start works as written on a fresh machine, including the system Python of
Debian and Ubuntu, which refuses `pip install` outside a virtual environment: each command makes
and uses .venv, `.ci/run` runs the README's test command verbatim, and the main command, run in
a fresh copy of the sources, checks every shipped scenario."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
SOURCES = ("pyproject.toml", "README.md", "prefetch_check", "model", "explorer", "scenarios")


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```console\n(.*?)```", section, re.S)]


def test_each_quick_start_command_makes_and_uses_a_virtual_environment():
    commands = quick_start_commands()
    assert len(commands) == 2
    for command in commands:
        assert "\n" not in command and command.startswith("python3 -m venv .venv && ")
        for part in command.split(" && ")[1:]:
            assert part.startswith(".venv/bin/"), part  # never the system's pip or python
    run, tests = commands
    assert run.endswith(".venv/bin/prefetch-check run")
    assert ".venv/bin/python -m pytest -q" in tests and "'.[test]'" in tests
    assert " -n auto" in tests  # both cores (pytest-xdist, in the test extras)


def test_ci_runs_the_readme_test_command():
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    commands = [line for line in lines if line and not line.startswith("#")]
    assert commands[-1] == quick_start_commands()[1]


def test_the_readme_run_command_works_in_a_fresh_copy(tmp_path):
    copy = tmp_path / "prefetch-check"
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            copy.mkdir(exist_ok=True)
            shutil.copy(source, copy / name)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["COLUMNS"] = "120"
    done = subprocess.run(["bash", "-c", quick_start_commands()[0]], cwd=copy, env=env, capture_output=True, text=True)
    if done.returncode != 0 and not (copy / ".venv" / "bin" / "pip").exists():
        pytest.skip(f"python3 -m venv cannot make a virtual environment here: {done.stderr.strip()[-300:]}")
    if done.returncode != 0 and not (copy / ".venv" / "bin" / "prefetch-check").exists():
        pytest.skip(f"the install needs the package registry: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    count = len(list((ROOT / "scenarios").glob("*.toml")))
    assert re.search(r"Expectations: \d+ hold, 0 fail\.", done.stdout)
    assert sum(1 for line in done.stdout.splitlines() if re.match(r" [a-z0-9-]+\s{2,}no_early_acceptance", line)) >= count
