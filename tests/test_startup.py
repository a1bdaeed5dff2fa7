"""Start-up (issue 23): a command imports what it uses.

What each entry point leaves in sys.modules, checked in a fresh interpreter: `--version` and
`--help` load no command module, no search and no third-party library; `run` of a scenario
loads neither networkx (the graph exports) nor the source reader (predicates read with ast);
the public API still answers every name it lists. How long start-up takes is the bench's
`startup` row, not a timed test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import json, sys
sys.argv = ['prefetch-check'] + json.loads(sys.argv[1])
from prefetch_check.cli import main
try:
    status = main()
except SystemExit as exc:
    status = exc.code
sys.stdout.flush()
print('\\n@@' + json.dumps({'status': status, 'modules': sorted(sys.modules)}))
"""


def modules_after(argv: list[str]) -> tuple[int, set[str], str]:
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    text, _, tail = out.stdout.rpartition("\n@@")
    data = json.loads(tail)
    return data["status"], set(data["modules"]), text


HEAVY = ("networkx", "rich", "prefetch_check.explorer.bfs", "prefetch_check.scenario", "prefetch_check.api",
         "importlib.metadata", "prefetch_check.model.source.predicate")


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_version_and_help_import_no_command(argv):
    status, modules, text = modules_after(argv)
    assert status == 0
    assert not [m for m in modules if m.startswith("prefetch_check.commands.")]
    assert not [m for m in modules if m.split(".")[0] == "networkx" or m in HEAVY]
    if argv == ["--version"]:
        import prefetch_check

        assert text.strip() == f"prefetch-check {prefetch_check.__version__}"
    else:
        assert "run" in text and "sglang" in text  # every command is listed with its help line


def test_run_imports_its_command_alone_and_no_graph_library():
    status, modules, text = modules_after(["run", "scenarios/seed-race.toml", "-q"])
    assert status == 0, text
    assert "VIOLATED" in text and "VERIFIED" in text
    commands = {m for m in modules if m.startswith("prefetch_check.commands.")}
    assert "prefetch_check.commands.run" in commands
    assert not commands & {"prefetch_check.commands.sglang", "prefetch_check.commands.bench",
                           "prefetch_check.commands.simulate", "prefetch_check.commands.mutants"}
    assert "networkx" not in modules
    assert "prefetch_check.model.source.predicate" not in modules
    assert "prefetch_check.explorer.report.junit" not in modules


def test_a_command_options_still_checked():
    status, modules, _ = modules_after(["run", "--no-such-flag"])
    assert status == 2


def test_public_api_names_resolve_lazily():
    code = ("import sys, prefetch_check as p; assert 'networkx' not in sys.modules; "
            "from prefetch_check import check, compare, render, uniform_config, VERIFIED, Limits, CheckResult; "
            "names = [n for n in p.__all__ if getattr(p, n) is None]; assert not names, names; "
            "assert set(p.__all__) <= set(dir(p)); "
            "r = check(uniform_config(ranks=1, requests=1, pages=1, policy='wait_complete'), 'fixed'); "
            "assert r.all_verified; print(p.__version__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    with pytest.raises(AttributeError):
        import prefetch_check

        prefetch_check.no_such_name  # noqa: B018


def test_view_package_render_is_the_function_even_after_its_module():
    code = ("import sys, importlib; m = importlib.import_module('prefetch_check.explorer.view.render'); "
            "from prefetch_check.explorer.view import render; assert callable(render) and render is m.render;  assert 'networkx' not in sys.modules; "
            "from prefetch_check.explorer.view import write_dot; assert 'networkx' in sys.modules")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr


def test_version_matches_the_installed_metadata():
    from importlib.metadata import version

    import prefetch_check

    assert prefetch_check._version() == version("prefetch-check")
