"""The schedule census (explorer/census.py, absorption.py, confidence.py): exact values on a tiny
hand-built chain worked out by hand, symmetry lumping, and Monte Carlo intervals against exact values."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from prefetch_check.api import search_model
from prefetch_check.explorer.census import TooLarge, exact_census, sampled_census
from prefetch_check.explorer.confidence import all_miss, clean_bound, wilson
from prefetch_check.explorer.interface import always, always_step, deadlock_free, eventually
from prefetch_check.model.protocols.poll.config import uniform_config
from prefetch_check.sampling import sampling_model


class Chain:
    """From START, four equally likely steps: to BAD (a bad state), to LOOP, to DONE, and into
    a closed pair SPIN <-> SPUN that never ends and never fails. From LOOP two steps: back to
    START, or an `oops` step (a bad step) to DONE. BAD goes on to DONE. DONE has no step (a
    deadlock) unless `settled` says it is settled.

    By hand, with p = P(reach BAD), q = P(take oops), d = P(reach a deadlock):
      p = 1/4 + 1/4 * (p/2)             -> p = 2/7
      q = 1/4 * (1/2 + q/2)             -> q = 1/7
      d = 1/4 + 1/4 * (1/2 + d/2) + 1/4 -> d = 5/7   (the closed pair never deadlocks)
    """

    def __init__(self, settled_done: bool = False):
        if settled_done:
            self.settled = lambda s: s == "DONE"

    STEPS = {
        "START": [("to_bad", "BAD"), ("to_loop", "LOOP"), ("to_done", "DONE"), ("to_spin", "SPIN")],
        "LOOP": [("back", "START"), ("oops", "DONE")],
        "BAD": [("on", "DONE")],
        "SPIN": [("spin", "SPUN")],
        "SPUN": [("spun", "SPIN")],
        "DONE": [],
    }

    def initial_states(self):
        return ["START"]

    def successors(self, state):
        return list(self.STEPS[state])

    def properties(self):
        return [
            always("bad_state", lambda s: "BAD" if s == "BAD" else None),
            always_step("bad_step", lambda s, a, t: "oops" if a == "oops" else None),
            eventually("ends", lambda s: None if s == "DONE" else "not done"),
            deadlock_free("deadlock_freedom"),
        ]

    def actor(self, action):
        return action

    def action_id(self, action):
        return action


def test_exact_census_of_a_hand_built_chain():
    census = exact_census(Chain())
    got = {name: e.probability for name, e in census.estimates.items()}
    assert got == pytest.approx({"bad_state": 2 / 7, "bad_step": 1 / 7, "deadlock_freedom": 5 / 7}, abs=1e-12)
    assert all(e.exact and e.low == e.high == e.probability for e in census.estimates.values())
    assert "ends" in census.not_judged and "ends" not in census.estimates
    assert census.states == 6 and census.transitions == 9


def test_a_settled_state_is_no_deadlock():
    census = exact_census(Chain(settled_done=True))
    assert census.estimates["deadlock_freedom"].probability == 0.0
    assert census.estimates["bad_state"].probability == pytest.approx(2 / 7, abs=1e-12)


def test_the_exact_census_stops_at_its_state_limit():
    with pytest.raises(TooLarge):
        exact_census(Chain(), max_states=3)


def test_sampled_census_interval_contains_the_hand_computed_values():
    """The closed pair never settles: those runs end at the depth bound and are undecided, so
    they count as misses for the low end and as hits for the high end."""
    census = sampled_census(Chain(settled_done=True), seed=4, runs=4000, depth=50, confidence=0.999)
    exact = {"bad_state": 2 / 7, "bad_step": 1 / 7, "deadlock_freedom": 0.0}
    for name, value in exact.items():
        e = census.estimates[name]
        assert e.low <= value <= e.high, (name, e)
    assert 0 < census.cut < census.runs  # about 1/4 + 1/4 * 1/2 * 1/4 ... of the runs spin forever
    assert census.estimates["bad_state"].high > census.estimates["bad_state"].probability + 0.2


def test_symmetry_lumping_gives_the_same_probabilities_as_the_plain_chain():
    """Interchangeable ranks have alike futures: the chain of orbits is an exact lumping."""
    model = search_model(uniform_config(ranks=3, requests=1, pages=1), "buggy")
    plain = exact_census(model)
    lumped = exact_census(model, model.canonicalizer())
    assert lumped.states < plain.states
    for name, e in plain.estimates.items():
        assert lumped.estimates[name].probability == pytest.approx(e.probability, abs=1e-12)
    assert plain.estimates["no_early_acceptance"].probability > 0


def test_monte_carlo_interval_contains_the_exact_seed_race_probability_at_tp2():
    model = sampling_model(uniform_config(ranks=2, requests=1, pages=2), "buggy")
    exact = exact_census(model, model.canonicalizer())
    sampled = sampled_census(model, seed=0, runs=3000, depth=2000, confidence=0.99)
    assert sampled.cut == 0
    for name in ("no_early_acceptance", "wait_complete_delivers"):
        e, value = sampled.estimates[name], exact.estimates[name].probability
        assert 0 < value < 1
        assert e.low <= value <= e.high, (name, value, e)
    assert exact.estimates["no_early_acceptance"].probability == pytest.approx(0.473058128, abs=1e-9)


def test_the_seed_race_at_tp1_by_hand():
    """R=1, buggy. After S issues, S needs three steps (drain_arrive, drain, check) and P two
    (take, publish) before the IO thread can start, and both are enabled throughout: a fair
    coin per step. The check accepts early if S's three steps come before P's two: at least
    3 of the first 4 flips, (4 + 1) / 16."""
    model = sampling_model(uniform_config(ranks=1, requests=1, pages=2), "buggy")
    census = exact_census(model)
    assert Fraction(census.estimates["no_early_acceptance"].probability).limit_denominator(1000) == Fraction(5, 16)


def test_wilson_interval_known_values():
    low, high = wilson(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)  # the textbook value for 0/10 at 95%
    low, high = wilson(50, 100)
    assert low == pytest.approx(0.4038, abs=1e-4) and high == pytest.approx(0.5962, abs=1e-4)


def test_what_clean_runs_are_worth():
    assert all_miss(0.01, 100) == pytest.approx(0.99**100)
    assert clean_bound(300) == pytest.approx(1 - 0.05 ** (1 / 300))
    assert clean_bound(1000) == pytest.approx(3 / 1000, rel=0.01)  # the rule of three
    assert math.isclose(all_miss(clean_bound(50), 50), 0.05)
