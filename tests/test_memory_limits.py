"""Memory: a limit (flag, [limits] key, or the machine-sized default) or running out of memory
ends the search as BOUNDED with the figures reached, never a traceback."""

from __future__ import annotations

from prefetch_check.explorer.options import SearchOptions

import json
import subprocess
import sys
import textwrap

import pytest

from cli_helpers import run
from prefetch_check.explorer.check import check
from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.result import BOUNDED, VERIFIED
from prefetch_check.scenario import load_scenario
from prefetch_check.scenario.runner import plan
from test_explorer_limits import Grid

# ranks=3, 2 requests of 2 pages under timeout: about 300,000 states, past the first limit check
MEDIUM = 'name = "medium"\nranks = 3\nrequests = 2\npages = 2\npolicy = "timeout"\n'


class RunsOutOfMemory(Grid):
    """The toy grid, whose expansion fails with MemoryError once `after` states were expanded."""

    def __init__(self, n: int, after: int):
        super().__init__(n)
        self.after, self.expanded = after, 0

    def successors(self, state):
        self.expanded += 1
        if self.expanded > self.after:
            raise MemoryError()
        return super().successors(state)


def test_a_memory_error_in_the_search_gives_bounded_with_the_figures():
    result = check(RunsOutOfMemory(40, after=300), SearchOptions(Limits()))
    assert not result.stats.complete
    assert "memory ran out (MemoryError)" in result.stats.stop_reason
    assert result.stats.states > 300
    assert {r.verdict for r in result.results.values()} == {BOUNDED}
    assert "states" in result.results["in_range"].reason


def test_a_memory_error_in_the_progress_analysis_gives_bounded(monkeypatch):
    import prefetch_check.explorer.check as check_module
    from prefetch_check import check as check_config, uniform_config

    def out_of_memory(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(check_module, "find_progress_violation", out_of_memory)
    result = check_config(uniform_config(ranks=1, requests=1, pages=2), "fixed")
    assert result.verdict("progress") == BOUNDED and "memory ran out" in result.results["progress"].reason
    assert result.verdict("no_early_acceptance") == VERIFIED


@pytest.mark.parametrize("how", ["flag", "scenario"])
def test_max_memory_from_the_flag_or_the_scenario_bounds_the_search(tmp_path, capsys, how):
    text = MEDIUM + ("\n[limits]\nmax_memory = 1\n" if how == "scenario" else "")
    (tmp_path / "m.toml").write_text(text)
    report = tmp_path / "r.json"
    argv = ["run", str(tmp_path / "m.toml"), "--predicate", "fixed", "-q", "--json", str(report)]
    code, out, err = run(capsys, *(argv + (["--max-memory", "1"] if how == "flag" else [])))
    assert code == 3, err  # a search the memory limit cut is not judged (issue 21), not a pass
    assert "BOUNDED" in out and "Traceback" not in err
    stats = json.loads(report.read_text())["runs"][0]["stats"]
    assert not stats["complete"] and "memory limit of 1 MB reached" in stats["stop_reason"]


@pytest.mark.parametrize("argv, words", [(["--max-memory", "0"], "--max-memory"), (["--max-memory", "x"], "--max-memory")])
def test_bad_max_memory_flags_are_usage_errors(tmp_path, capsys, argv, words):
    (tmp_path / "m.toml").write_text(MEDIUM)
    code, _, err = run(capsys, "run", str(tmp_path / "m.toml"), *argv)
    assert code == 2 and words in err


def test_the_default_is_a_share_of_the_machine_split_among_the_jobs(tmp_path):
    from prefetch_check.commands.common import limit_defaults
    from prefetch_check.explorer.limits import DEFAULT_MEMORY_SHARE, default_memory_mb, total_memory_mb

    total = total_memory_mb()
    if total is None:
        pytest.skip("the machine's memory is not known here")
    assert default_memory_mb() == int(total * DEFAULT_MEMORY_SHARE)
    assert default_memory_mb(4) == int(total * DEFAULT_MEMORY_SHARE / 4)
    (tmp_path / "m.toml").write_text(MEDIUM)
    scenario = load_scenario(tmp_path / "m.toml")
    (task,) = plan([scenario], ["fixed"], {}, defaults=limit_defaults(2))
    assert task.limits.max_memory_mb == default_memory_mb(2)
    # the scenario's key and the flag win over the default
    (tmp_path / "k.toml").write_text(MEDIUM + "[limits]\nmax_memory = 123\n")
    (task,) = plan([load_scenario(tmp_path / "k.toml")], ["fixed"], {}, defaults=limit_defaults(2))
    assert task.limits.max_memory_mb == 123
    (task,) = plan([load_scenario(tmp_path / "k.toml")], ["fixed"], {"max_memory_mb": 7}, defaults=limit_defaults(2))
    assert task.limits.max_memory_mb == 7


RUN_UNDER_A_CAP = textwrap.dedent("""
    import resource, sys
    from prefetch_check.cli import main
    import prefetch_check.api, prefetch_check.explorer.check, prefetch_check.explorer.liveness  # before the cap

    def address_space():
        for line in open("/proc/self/status"):
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024

    cap = address_space() + int(sys.argv[1]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    sys.exit(main(sys.argv[2:]))
    """)


def test_running_out_of_memory_under_an_address_space_cap_is_bounded(tmp_path):
    """A real MemoryError: the search runs under RLIMIT_AS with a memory limit too high to stop it first."""
    import resource

    if not hasattr(resource, "RLIMIT_AS") or not open("/proc/self/status").read().count("VmSize"):
        pytest.skip("needs RLIMIT_AS and /proc/self/status")
    (tmp_path / "big.toml").write_text('name = "big"\nranks = 8\nrequests = 2\npages = 2\npolicy = "timeout"\n')
    report = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-c", RUN_UNDER_A_CAP, "250", "run", str(tmp_path / "big.toml"), "--predicate", "fixed",
         "-q", "--max-memory", "1000000", "--json", str(report)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 3, done.stderr  # BOUNDED: not judged, never a pass
    assert "Traceback" not in done.stderr and "BOUNDED" in done.stdout
    run = json.loads(report.read_text())["runs"][0]
    assert "memory ran out (MemoryError)" in run["stats"]["stop_reason"]
    assert {p["verdict"] for p in run["properties"]} == {BOUNDED}


def test_the_python_api_applies_the_machine_memory_default(monkeypatch):
    """check() from Python gets the command line's memory default where its limits set none, and
    keeps a memory limit the caller gave."""
    import prefetch_check.explorer.limits as limits_module
    from prefetch_check import check as check_config, uniform_config

    config = uniform_config(ranks=3, requests=2, pages=2, policy="timeout")  # ~300,000 states
    monkeypatch.setattr(limits_module, "default_memory_mb", lambda searches=1: 1)
    cut = check_config(config, "fixed", Limits(time_limit=120))
    assert not cut.stats.complete and "memory" in cut.stats.stop_reason
    assert cut.verdict("tp_agreement") == BOUNDED
    given = check_config(uniform_config(ranks=1, requests=1, pages=2), "fixed", Limits(max_memory_mb=1 << 20))
    assert given.stats.complete and given.verdict("tp_agreement") == VERIFIED
