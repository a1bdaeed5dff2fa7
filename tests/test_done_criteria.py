"""Issue 2, "Done when": the buggy predicate is caught with a shortest trace in which the
scheduler's check comes before the prefetch thread's publish; the fixed one is VERIFIED
on every property. Each configuration runs through the public API (with its reductions),
and each trace's length is compared with an independent breadth-first search of the
plain model.
"""

from __future__ import annotations

import pytest

from prefetch_check.explorer.result import VERIFIED, VIOLATED
from prefetch_check.model.interface import parse_action_id
from prefetch_check.model.protocols.poll.config import Config, RequestSpec, uniform_config
from prefetch_check import Limits, build_model, check

PRESENT = frozenset()


def two_requests_one_failing_on_rank_1() -> Config:
    """q0: 2 pages present everywhere; q1: its page fails to load on rank 1 only."""
    q0 = RequestSpec(pages=2, hits=(2, 2), failing=(PRESENT, PRESENT))
    q1 = RequestSpec(pages=1, hits=(1, 1), failing=(PRESENT, frozenset({0})))
    return Config(ranks=2, requests=(q0, q1))


CONFIGS = {
    # the seed race: R=1, one request, 2 pages all present, wait_complete
    "r1": uniform_config(ranks=1, requests=1, pages=2),
    "r2_q2": uniform_config(ranks=2, requests=2, pages=2),
    # timeout: the buggy traces must end before the clock fires. 2 ranks x 2 requests under
    # timeout is ~1.6 million plain states (minutes), so the timeout cases stay at one request.
    "timeout_r1": uniform_config(ranks=1, requests=1, pages=2, policy="timeout"),
    "timeout_r2": uniform_config(ranks=2, requests=1, pages=2, policy="timeout"),
    # A failing page exempts a request from "delivers" only once the IO thread actually hits it
    # (io_failed), so a buggy early acceptance must still violate delivers:
    # - one request whose page 1 fails on rank 1: the early acceptance happens before any load,
    #   and the IO thread of the fixed run does hit the failure (checked below);
    # - two requests where only q1 fails on rank 1: q0 is never excused, whatever the IO thread does.
    "failing_r2": uniform_config(ranks=2, requests=1, pages=2, failing={1: {1}}),
    "failing_r2_q2": two_requests_one_failing_on_rank_1(),
}

@pytest.fixture(scope="module")
def result():
    """check(config, predicate), run once per module: several tests read the same result."""
    done: dict = {}

    def run(name: str, predicate: str):
        if (name, predicate) not in done:
            done[name, predicate] = check(CONFIGS[name], predicate)
        return done[name, predicate]

    return run


def short_insert(config, trace):
    """(rank, request, index) of the first insert in the trace that hands fewer tokens to the tree
    than the ranks agreed on (the buggy early acceptance shows up there)."""
    for i, step in enumerate(trace.steps):
        action = parse_action_id(step.action_id)
        if action.thread == "S" and action.step == "insert":
            got = step.state[action.rank].ops[action.q].inserted
            if got < config.agreed_hit_pages(action.q) * config.page_size:
                return action.rank, action.q, i
    raise AssertionError(f"no short insert in {trace.schedule}")


def accepting_check(trace, prop, config):
    """(rank, request, index) of the scheduler check that accepted too early."""
    ids = trace.schedule.split()
    if prop == "no_early_acceptance":  # a step property: the violating step is the check itself
        last = parse_action_id(ids[-1])
        assert (last.thread, last.step) == ("S", "check")
        return last.rank, last.q, len(ids) - 1
    rank, q, at = short_insert(config, trace)
    return rank, q, max(i for i in range(at) if ids[i] == f"S{rank}.check.q{q}")


PROPS = ("no_early_acceptance", "wait_complete_delivers")


@pytest.mark.parametrize("name", CONFIGS)
def test_buggy_violates_early_acceptance_and_delivers(result, name):
    r = result(name, "buggy")
    assert r.verdict("no_early_acceptance") == VIOLATED
    assert r.verdict("wait_complete_delivers") == VIOLATED


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("prop", PROPS)
def test_buggy_trace_checks_before_publish(result, name, prop):
    trace = result(name, "buggy").trace(prop)
    ids = trace.schedule.split()
    rank, q, check_at = accepting_check(trace, prop, CONFIGS[name])
    assert f"P{rank}.publish.q{q}" not in ids[:check_at], trace.schedule
    if prop == "wait_complete_delivers":  # judged once every thread is idle
        assert build_model(CONFIGS[name], "buggy").protocol.quiescent(trace.final_state)
    if CONFIGS[name].policy == "timeout":
        assert not any(i.startswith("C") for i in ids), "the clock fired: not the race the criterion asks for"


@pytest.fixture(scope="module")
def shortest_length(result, shortest_violation):
    """Length of the shortest violating schedule, by the independent search of tests/conftest.py."""
    done: dict = {}

    def length(name: str, prop: str) -> int:
        if (name, prop) not in done:
            model = build_model(CONFIGS[name], "buggy")
            prop_value = next(p for p in model.properties() if p.name == prop)
            done[name, prop] = shortest_violation(model, prop_value, len(result(name, "buggy").trace(prop)))
        return done[name, prop]

    return length


@pytest.mark.parametrize(
    "name, prop",
    [
        pytest.param(name, prop)
        for name in CONFIGS
        for prop in PROPS
    ],
)
def test_buggy_trace_is_shortest(result, shortest_length, name, prop):
    assert len(result(name, "buggy").trace(prop)) == shortest_length(name, prop)


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("prop", PROPS)
def test_the_plain_search_finds_the_shortest_trace(shortest_length, name, prop):
    """Without reductions the trace is shortest: a search bounded at that length already finds it."""
    bound = shortest_length(name, prop)
    r = check(CONFIGS[name], "buggy", Limits(max_depth=bound), reductions=False)
    assert r.verdict(prop) == VIOLATED and len(r.trace(prop)) == bound


@pytest.mark.parametrize("name", ["failing_r2", "failing_r2_q2"])
def test_buggy_delivers_trace_hits_no_failing_page(result, name):
    trace = result(name, "buggy").trace("wait_complete_delivers")
    _, q, _ = short_insert(CONFIGS[name], trace)
    assert not any(rank.ops[q].io_failed for rank in trace.final_state)


@pytest.mark.parametrize("name", CONFIGS)
def test_fixed_is_verified_on_every_property(result, name):
    r = result(name, "fixed")
    assert r.stats.complete
    assert {n: p.verdict for n, p in r.results.items()} == {n: VERIFIED for n in r.results}


@pytest.mark.parametrize("name", ["failing_r2", "failing_r2_q2"])
def test_fixed_runs_meet_the_failing_page(result, name):
    assert result(name, "fixed").stats.action_counts.get("I.load_failed", 0) > 0


def test_timeout_runs_let_the_clock_fire(result):
    for name in ("timeout_r1", "timeout_r2"):
        assert result(name, "fixed").stats.action_counts.get("C.timeout", 0) > 0
