"""Every command and the public API on both protocols (issue 20): each on one small shipped
scenario of predicate-poll and one of ack-drain, asserting the verdict it reports, not only
that it ran. Until issue 20, simulate, census and check_scenario built the predicate-poll
protocol on any configuration and crashed on every ack-drain scenario."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli_helpers import run
from prefetch_check import VERIFIED, VIOLATED, check, compare
from prefetch_check.scenario import load_scenario
from prefetch_check.testing import assert_as_expected, assert_verified, assert_violated, check_scenario

SCENARIOS = Path(__file__).parent.parent / "scenarios"

# protocol -> (a shipped scenario of it: one rank, buggy violates no_early_acceptance, fixed
# verifies all; a mutant of its catalogue that the scenario kills, and by which property)
SHIPPED = {
    "predicate-poll": ("seed-race.toml", "count_before_write", "data_integrity"),
    "ack-drain": ("ack-race.toml", "result_frees_inserted_pages", "host_memory"),
}
RACE = "no_early_acceptance"


@pytest.fixture(params=sorted(SHIPPED))
def shipped(request):
    """(protocol, scenario path, mutant, the property that kills it)."""
    name, mutant, killer = SHIPPED[request.param]
    path = SCENARIOS / name
    assert load_scenario(path).protocol in (request.param, None if request.param == "predicate-poll" else request.param)
    return request.param, str(path), mutant, killer


def test_run(shipped, capsys, tmp_path):
    protocol, path, _, _ = shipped
    code, _, err = run(capsys, "run", path, "--json", tmp_path / "r.json", "-q")
    assert code == 0, err  # every expectation of the scenario holds
    runs = json.loads((tmp_path / "r.json").read_text())["runs"]
    verdicts = {r["predicate"]: {p["name"]: p["verdict"] for p in r["properties"]} for r in runs}
    assert {r["parameters"]["protocol"] for r in runs} == {protocol}
    assert verdicts["buggy"][RACE] == VIOLATED
    assert set(verdicts["fixed"].values()) == {VERIFIED}


def test_trace_then_replay(shipped, capsys):
    _, path, _, _ = shipped
    code, out, err = run(capsys, "trace", path, "--property", RACE, "--format", "json", "-q")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["property"]["name"] == RACE and doc["property"]["verdict"] == VIOLATED
    steps = doc["schedule"].split()
    assert steps[-1].startswith("S0.")  # the scheduler's accepting check is the decisive step
    code, out, err = run(capsys, "replay", path, doc["schedule"])
    assert code == 0, err
    assert f"replayed all {len(steps)} steps" in out
    assert f"-> {RACE} violated" in out


def test_trace_of_a_verified_property_has_no_counterexample(shipped, capsys):
    _, path, _, _ = shipped
    code, out, _ = run(capsys, "trace", path, "--predicate", "fixed", "--property", RACE, "-q")
    assert code == 1
    assert f"{RACE} is {VERIFIED}" in out


def test_simulate(shipped, capsys):
    _, path, _, _ = shipped
    code, out, err = run(capsys, "simulate", path, "--seed", "1", "--schedules", "200", "--no-trace")
    assert code == 1, err  # a violation found, shrunk and replayed
    assert re.search(rf"{RACE}\s+VIOLATED in schedule #\d+", out), out
    assert "replay it: prefetch-check replay" in out
    code, out, err = run(capsys, "simulate", path, "--predicate", "fixed", "--seed", "1", "--schedules", "50")
    assert code == 0, err
    assert re.search(rf"{RACE}\s+NO VIOLATION FOUND", out), out


def test_simulate_at_more_ranks(shipped, capsys):
    _, path, _, _ = shipped
    code, out, err = run(capsys, "simulate", path, "--ranks", "4", "--seed", "1", "--schedules", "50", "--no-trace")
    assert code == 1, err
    assert "at ranks=4" in out and re.search(rf"{RACE}\s+VIOLATED", out), out


def test_census(shipped, capsys):
    _, path, _, _ = shipped
    code, out, err = run(capsys, "census", path)
    assert code == 0, err
    race = re.search(rf"{RACE}\s+([0-9.]+)\s+exact", out)
    integrity = re.search(r"data_integrity\s+([0-9.]+)\s+exact", out)
    assert race and integrity, out
    assert 0 < float(race.group(1)) < 1  # some schedules hit the race, not all
    assert float(integrity.group(1)) == 0


def test_mutants(shipped, capsys):
    _, path, mutant, killer = shipped
    code, out, err = run(capsys, "mutants", path, "--mutant", mutant, "--no-traces", "-q")
    assert code == 0, err
    assert re.search(rf"{mutant}\s+killed\s+{Path(path).stem}\s+{killer}", out), out


def test_check_and_compare(shipped):
    protocol, path, _, _ = shipped
    case = load_scenario(path).cases[0]
    assert_violated(check(case.config, "buggy", protocol=protocol), RACE)
    both = compare(case.config, ["buggy", "fixed"], protocol=protocol)
    assert both["buggy"].results[RACE].verdict == VIOLATED
    assert_verified(both["fixed"])


def test_check_scenario_and_the_assertions(shipped):
    _, path, _, _ = shipped
    buggy = check_scenario(path, predicate="buggy")
    trace = assert_violated(buggy, RACE)
    assert trace.schedule == check_scenario(path, predicate="buggy").trace(RACE).schedule
    assert_as_expected(buggy)
    fixed = check_scenario(path, predicate="fixed")
    assert_verified(fixed)
    assert_as_expected(fixed)
    with pytest.raises(AssertionError, match=RACE):  # a failure is an assertion failure, never a crash
        assert_verified(buggy)
    with pytest.raises(AssertionError, match=RACE):
        assert_violated(fixed, RACE)


# a variant (here a catalogue mutant) by --protocol, as run and trace take it (issue 20, item 3)
VARIANTS = {
    "predicate-poll": "prefetch_check.model.protocols.poll.mutants:CountBeforeWrite",
    "ack-drain": "prefetch_check.model.protocols.ack_drain.mutants:ResultFreesInsertedPages",
}


def test_simulate_and_census_take_protocol(shipped, capsys):
    protocol, path, _, killer = shipped
    variant = VARIANTS[protocol]
    code, out, err = run(capsys, "census", path, "--predicate", "fixed", "--protocol", variant)
    assert code == 0, err
    assert float(re.search(rf"{killer}\s+([0-9.]+)\s+exact", out).group(1)) > 0, out  # the plain protocol: 0
    code, out, err = run(capsys, "simulate", path, "--predicate", "fixed", "--protocol", variant,
                         "--seed", "1", "--schedules", "200", "--no-trace")
    assert code == 1 and re.search(rf"{killer}\s+VIOLATED", out), out
    assert f"--protocol {variant} --predicate fixed" in out  # the replay command line keeps the variant
    other = "ack-drain" if protocol == "predicate-poll" else "predicate-poll"
    code, _, err = run(capsys, "census", path, "--protocol", other)
    assert code == 2 and f"a scenario of the {protocol} protocol" in err, err
