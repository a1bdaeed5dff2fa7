"""prefetch_check.testing and the result's own face: what a user's failing test prints.

A failure message names the property, its verdict and reason and the schedule; for a
scenario it gives a `prefetch-check replay` line that really replays. A bare
`assert result.all_verified` prints a one-line repr. `prefetch_check.render(result, prop)` draws the trace
without the model, trace and property being passed again.
"""

from __future__ import annotations

import json
import pickle
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from prefetch_check import VIOLATED, Limits, build_model, check, uniform_config
from prefetch_check.cli import main
from prefetch_check.explorer.view import render
from prefetch_check.testing import (
    ScenarioResult, assert_as_expected, assert_verified, assert_violated, check_scenario,
)

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "scenarios" / "seed-race.toml"
TP = ROOT / "scenarios" / "tp-production.toml"
RACE = uniform_config(ranks=1, requests=1, pages=2)


@pytest.fixture(scope="module")
def buggy():
    return check(RACE, "buggy")


def test_repr_is_one_short_line_with_every_verdict(buggy):
    text = repr(buggy)
    assert "\n" not in text and len(text) < 300
    assert text.startswith("CheckResult('buggy', VIOLATED: no_early_acceptance, wait_complete_delivers; VERIFIED: ")
    for name, pr in buggy.results.items():
        assert name in text
    assert f"{buggy.stats.states:,} states" in text
    assert "Rank(" not in text and "Op(" not in text  # no state dumps
    prop = repr(buggy.results["no_early_acceptance"])
    assert buggy.trace("no_early_acceptance").schedule in prop and "Rank(" not in prop
    cut = check(RACE, "buggy", limits=Limits(max_states=10))
    assert "BOUNDED: " in repr(cut) and "cut: state limit of 10 reached" in repr(cut)


def test_assert_verified_message_has_verdicts_reasons_and_schedules(buggy):
    assert_verified(check(RACE, "fixed"))  # holds: no exception
    with pytest.raises(AssertionError) as failure:
        assert_verified(buggy)
    message = str(failure.value)
    for name in buggy.violated:
        pr = buggy.results[name]
        assert f"{name} VIOLATED: {pr.reason}" in message
        assert pr.trace.schedule in message
        assert f"prefetch_check.render(result, {name!r})" in message
    assert "tp_agreement" not in message  # only what failed
    assert f"2 of 7 properties not verified ({buggy.stats.states} states, exhaustive)" in message


def test_not_applicable_passes_only_when_not_named():
    result = check(uniform_config(ranks=1, requests=1, pages=2, policy="best_effort"), "fixed")
    assert result.results["wait_complete_delivers"].verdict == "NOT APPLICABLE"
    assert_verified(result)
    assert_verified(result, "tp_agreement", "progress")
    with pytest.raises(AssertionError, match="wait_complete_delivers NOT APPLICABLE"):
        assert_verified(result, "wait_complete_delivers")
    with pytest.raises(ValueError, match="no property 'progess'"):
        assert_verified(result, "progess")


def test_assert_violated_returns_the_trace_or_says_what_came_instead(buggy):
    assert assert_violated(buggy, "no_early_acceptance") is buggy.trace("no_early_acceptance")
    with pytest.raises(AssertionError) as failure:
        assert_violated(check(RACE, "fixed"), "no_early_acceptance")
    assert "expected no_early_acceptance VIOLATED" in str(failure.value)
    assert "no_early_acceptance VERIFIED" in str(failure.value)


def test_a_scenario_failure_gives_a_replay_command_that_replays(capsys):
    result = check_scenario(TP, case=1, predicate="buggy")
    assert isinstance(result, ScenarioResult) and result.case == 1 and result.verdict("no_early_acceptance") == VIOLATED
    with pytest.raises(AssertionError) as failure:
        assert_verified(result)
    message = str(failure.value)
    replay = next(line.split("replay:", 1)[1].strip() for line in message.splitlines() if "replay:" in line)
    words = shlex.split(replay)
    assert words[:2] == ["prefetch-check", "replay"] and "--case" in words
    capsys.readouterr()
    assert main(words[1:]) == 0
    out = capsys.readouterr().out
    assert f"replayed all {len(result.trace('no_early_acceptance'))} steps" in out
    assert "no_early_acceptance violated" in out
    see = next(line.split("see it:", 1)[1].strip() for line in message.splitlines() if "see it:" in line)
    assert shlex.split(see)[:2] == ["prefetch-check", "trace"] and "--property" in see


def test_check_scenario_needs_a_case_for_a_matrix_and_knows_its_limits():
    with pytest.raises(Exception, match="--case 1"):
        check_scenario(TP, predicate="fixed")
    with pytest.raises(TypeError, match="max_sates"):
        check_scenario(SEED, max_sates=10)
    assert check_scenario(SEED, predicate="buggy", max_states=10).stats.complete is False


def test_assert_as_expected_reads_the_scenarios_expect():
    assert_as_expected(check_scenario(SEED, predicate="buggy"))
    assert_as_expected(check_scenario(SEED, predicate="fixed"))
    with pytest.raises(AssertionError) as failure:
        assert_as_expected(check_scenario(SEED, predicate="buggy", max_states=10))
    message = str(failure.value)
    assert "expectation(s) of [expect.buggy] do not hold" in message
    assert "wait_complete_delivers expected VIOLATED, got BOUNDED" in message
    assert "expected because: " in message


def test_render_draws_from_the_result_alone(buggy):
    console = Console(width=160, record=True, color_system=None)
    render(buggy, console=console)  # the first violated property
    text = console.export_text()
    trace = buggy.trace("no_early_acceptance")
    assert "no_early_acceptance" in text and trace.schedule in " ".join(text.split())
    for step in trace.steps:
        assert step.action_id in text
    page = render(buggy, "wait_complete_delivers", "html")
    assert page.startswith("<!DOCTYPE html>") and buggy.trace("wait_complete_delivers").schedule in page
    doc = json.loads(render(buggy, "no_early_acceptance", "json"))
    assert doc["schedule"] == trace.schedule
    with pytest.raises(ValueError, match="tp_agreement is VERIFIED"):
        render(buggy, "tp_agreement")
    with pytest.raises(ValueError, match="no property is violated"):
        render(check(RACE, "fixed"))
    with pytest.raises(ValueError, match="format must be one of"):
        render(buggy, format="pdf")


def test_a_result_from_another_process_has_no_model_and_says_how_to_give_one(buggy):
    again = pickle.loads(pickle.dumps(buggy))
    assert again == buggy and again.model is None and buggy.model is not None
    with pytest.raises(ValueError, match="pass model="):
        render(again, "no_early_acceptance", "markdown")
    text = render(again, "no_early_acceptance", "markdown", model=build_model(RACE, "buggy"))
    assert "S0.check.q0" in text


def test_pytest_shows_the_message_at_the_users_line(tmp_path):
    test = tmp_path / "test_user.py"
    test.write_text(
        "from prefetch_check import check, uniform_config\n"
        "from prefetch_check.testing import assert_verified\n\n"
        "def test_fix():\n"
        "    result = check(uniform_config(ranks=1, requests=1, pages=2), 'buggy')\n"
        "    assert_verified(result)  # the user's line\n",
        encoding="utf-8",
    )
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "assert_verified(result)  # the user's line" in run.stdout
    assert "no_early_acceptance VIOLATED: rank 0 accepted request 0" in run.stdout
    assert "schedule (4 steps): S0.issue.q0 S0.drain_arrive S0.drain S0.check.q0" in run.stdout
    assert "def assert_verified" not in run.stdout  # the helper's own frame is hidden
