"""Issue 20's done-when: a third protocol, defined only in the tests (tests/toy_protocol/: its folder)
and registered with one line, runs through run, trace, simulate, census, mutants and
check_scenario with no other file touched, each giving its verdict."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli_helpers import run
from prefetch_check.explorer.result import VERIFIED, VIOLATED
from prefetch_check.model.protocols import registry
from prefetch_check.testing import assert_as_expected, assert_verified, assert_violated, check_scenario

TOY = str(Path(__file__).parent / "toy_protocol" / "toy.toml")
RACE = "complete_on_accept"


@pytest.fixture(autouse=True)
def toy():
    from toy_protocol.descriptor import DESCRIPTOR

    registry.register(DESCRIPTOR)  # the one registration line
    yield DESCRIPTOR
    registry.unregister(DESCRIPTOR.name)


def test_run(capsys, tmp_path):
    code, _, err = run(capsys, "run", TOY, "--json", tmp_path / "r.json", "-q")
    assert code == 0, err  # every expectation holds
    runs = json.loads((tmp_path / "r.json").read_text())["runs"]
    verdicts = {r["predicate"]: {p["name"]: p["verdict"] for p in r["properties"]} for r in runs}
    assert {r["parameters"]["protocol"] for r in runs} == {"toy"}
    assert verdicts == {"buggy": {RACE: VIOLATED, "accepted": VERIFIED}, "fixed": {RACE: VERIFIED, "accepted": VERIFIED}}


def test_trace_then_replay(capsys):
    code, out, err = run(capsys, "trace", TOY, "--property", RACE, "--format", "json", "-q")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["property"]["verdict"] == VIOLATED and doc["schedule"] == "W0.write.q0 S0.accept.q0"
    code, out, err = run(capsys, "replay", TOY, doc["schedule"])
    assert code == 0 and f"-> {RACE} violated" in out, err


def test_simulate(capsys):
    code, out, err = run(capsys, "simulate", TOY, "--seed", "1", "--schedules", "50", "--no-trace")
    assert code == 1, err
    assert re.search(rf"{RACE}\s+VIOLATED in schedule #\d+ \(step \d+\); shrunk to 2 steps", out), out
    code, out, err = run(capsys, "simulate", TOY, "--predicate", "fixed", "--seed", "1", "--schedules", "20")
    assert code == 0 and re.search(rf"{RACE}\s+NO VIOLATION FOUND", out), out


def test_census(capsys):
    code, out, err = run(capsys, "census", TOY)
    assert code == 0, err
    # two ranks, each: write then accept (early, 1 of 2 pages) or write again: P(no rank early) = 1/2 * 1/2
    assert re.search(rf"{RACE}\s+0\.750000\s+exact", out), out


def test_mutants(capsys):
    code, out, err = run(capsys, "mutants", TOY, "--no-traces", "-q")
    assert code == 0, err
    assert re.search(rf"accept_after_first_page\s+killed\s+toy\s+{RACE}\s+2", out), out
    code, out, err = run(capsys, "mutants", "--catalogue", "toy", "--list")
    assert code == 0 and "accept_after_first_page" in out, err


def test_check_scenario():
    buggy = check_scenario(TOY, predicate="buggy")
    assert len(assert_violated(buggy, RACE)) == 2
    assert_as_expected(buggy)
    fixed = check_scenario(TOY, predicate="fixed")
    assert_verified(fixed)
    assert_as_expected(fixed)


def test_unregistered_it_is_unknown(toy, capsys):
    registry.unregister(toy.name)
    code, _, err = run(capsys, "run", TOY, "-q")
    assert code == 2 and "unknown protocol 'toy'" in err, err
    registry.register(toy)
