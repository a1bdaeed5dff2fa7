"""The checker builder (prefetch_check.checker): one value from a case to check, simulate and
census, and the API's check() is its shorthand (same verdicts, counts and traces)."""

from __future__ import annotations

import pytest

from prefetch_check import Checker, Limits, check
from prefetch_check.explorer.census import TooLarge
from prefetch_check.explorer.random_walk import RandomWalk
from prefetch_check.model.protocols.ack_drain.config import uniform_ack_config
from prefetch_check.model.protocols.poll.config import uniform_config


def test_setters_return_new_values_and_check_is_the_api_shorthand():
    config = uniform_config(ranks=2, pages=2)
    base = Checker.of(config, "buggy")
    limited = base.limits(Limits(max_states=5))
    assert base.search_limits is None and limited.search_limits == Limits(max_states=5)  # frozen: base unchanged
    built, shorthand = base.check(), check(config, "buggy")
    assert built.violated == shorthand.violated == ["no_early_acceptance", "wait_complete_delivers"]
    assert built.stats.states == shorthand.stats.states
    assert [len(built.results[p].trace) for p in built.violated] == [len(shorthand.results[p].trace) for p in built.violated]
    assert set(limited.check().results[p].verdict for p in ("tp_agreement", "host_memory")) == {"BOUNDED"}
    plain = base.reductions(False).check()
    assert plain.violated == built.violated and plain.stats.states > built.stats.states


def test_the_builder_keeps_the_protocol_for_simulate_and_census():
    """An ack-drain configuration simulated and censused through one value: the protocol travels
    with it (issue 20's defect 1 was a command rebuilding predicate-poll on an ack-drain configuration)."""
    checker = Checker.of(uniform_ack_config(ranks=1, pages=2), "buggy", protocol="ack-drain")
    sim = checker.simulate(RandomWalk(), seed=0, schedules=200, depth=200)
    assert "no_early_acceptance" in sim.violations
    census = checker.census()
    assert 0 < census.estimates["no_early_acceptance"].probability < 1
    sampled = checker.census(exact=False, seed=0, runs=300, depth=200)
    assert sampled.method != census.method and sampled.runs == 300
    with pytest.raises(TooLarge):
        checker.census(max_states=3)
