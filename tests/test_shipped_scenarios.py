"""The CI proof of the fix: every shipped scenario's expectations hold (buggy caught, fixed verified).

Runs each file through the real command (`prefetch-check run FILE --json ...`), so a
failure names the scenario, predicate and property with the checker's reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefetch_check.model.protocols import load_protocol
from prefetch_check.cli import main
from prefetch_check.scenario import load_scenario
from prefetch_check.scenario.schema import ALL

SCENARIOS = sorted((Path(__file__).parent.parent / "scenarios").glob("*.toml"))


def test_scenarios_are_shipped():
    assert len(SCENARIOS) >= 12


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_expectations_hold(path, tmp_path, capsys):
    report = tmp_path / "report.json"
    code = main(["run", str(path), "--quiet", "--json", str(report)])
    # every action the scenario does not reach is declared (its `unreached` key), and none it declares fires
    assert "warning: actions" not in capsys.readouterr().err
    data = json.loads(report.read_text())
    failures = [
        f"{run['scenario']} / {run['predicate']} / {p['name']}: expected {p['expected']}, got {p['verdict']} {p['reason']}"
        for run in data["runs"] for p in run["properties"] if p["holds"] is False
    ]
    assert failures == [] and code == 0
    assert data["summary"]["expectations"] > 0


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_expectation_says_why_for_both_predicates(path):
    scenario = load_scenario(path)
    assert set(scenario.expect) == {"buggy", "fixed"}
    assert scenario.description
    judged_fully = 0
    for expect in scenario.expect.values():
        judged = [p for p, _ in expect.verdicts]
        if judged != list(load_protocol(scenario.protocol).property_names):
            # only a search the file deliberately bounds may leave properties unjudged (they
            # are reported BOUNDED), and then only the ones it does not find violated
            bounded = scenario.limits_for(expect.predicate)
            assert bounded.max_states or bounded.time_limit or bounded.max_depth, f"{path.name}: {judged}"
            assert all(v == "VIOLATED" for _, v in expect.verdicts), f"{path.name}: {expect.verdicts}"
        else:
            judged_fully += 1
    assert judged_fully >= 1  # the fix, at least, is judged on every property
    for expect in scenario.expect.values():
        reasons = dict(expect.why)
        for prop, _ in expect.verdicts:
            assert reasons.get(prop) or reasons.get(ALL), f"{path.name}: [expect.{expect.predicate}] {prop} has no why"
