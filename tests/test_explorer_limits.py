"""The bounded verdict: a search cut by a limit says BOUNDED with the figures it reached,
never VERIFIED; a violation found before the cut is still VIOLATED."""

from __future__ import annotations

from prefetch_check.explorer.graph import GraphRecorder

from prefetch_check.explorer.options import SearchOptions

import pytest

from prefetch_check.explorer.bfs import CHECK_EVERY
from prefetch_check.explorer.check import check
from prefetch_check.explorer.interface import always, eventually
from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.result import BOUNDED, NOT_APPLICABLE, VERIFIED, VIOLATED
from prefetch_check.model.protocols.poll.config import uniform_config
from models import readable


class Grid:
    """A generic toy model: two counters that each of two actors bumps modulo n (n*n states, all reachable)."""

    def __init__(self, n: int):
        self.n = n

    def initial_states(self):
        return [(0, 0)]

    def successors(self, state):
        a, b = state
        return [("a", ((a + 1) % self.n, b)), ("b", (a, (b + 1) % self.n))]

    def properties(self):
        return [
            always("in_range", lambda s: None if max(s) < self.n else "out of range"),
            eventually("leaves_origin", lambda s: "at the origin" if s == (0, 0) else None),
        ]

    def actor(self, action):
        return action

    def action_id(self, action):
        return action

    def action_kind(self, action):
        return action

    def action_kinds(self):
        return ("a", "b")

    def describe(self, state, action, next_state):
        return f"{action}: {state} -> {next_state}"


def fixed_r1():
    return readable(uniform_config(pages=2), "fixed")


def applicable(result):
    return {n: r for n, r in result.results.items() if r.verdict != NOT_APPLICABLE}


def test_the_unlimited_search_verifies():
    result = check(fixed_r1())
    assert result.stats.complete and result.stats.stop_reason is None
    assert all(r.verdict == VERIFIED for r in applicable(result).values())


def test_a_state_limit_gives_bounded_with_the_figures():
    full = check(fixed_r1()).stats.states
    result = check(fixed_r1(), SearchOptions(Limits(max_states=10)))
    assert full > 10
    assert result.stats.states == 10 and not result.stats.complete
    assert result.stats.stop_reason == "state limit of 10 reached"
    for r in applicable(result).values():
        assert r.verdict == BOUNDED
        assert "state limit of 10" in r.reason and "10 states" in r.reason and f"depth {result.stats.max_depth}" in r.reason


def test_a_depth_limit_gives_bounded_until_it_covers_the_whole_graph():
    depth = check(fixed_r1()).stats.max_depth
    cut = check(fixed_r1(), SearchOptions(Limits(max_depth=5)))
    assert cut.stats.max_depth == 5 and "depth limit of 5" in cut.stats.stop_reason
    assert {r.verdict for r in applicable(cut).values()} == {BOUNDED}
    # the deepest states must be expanded too (they might lead somewhere new)
    at_depth = check(fixed_r1(), SearchOptions(Limits(max_depth=depth)))
    assert {r.verdict for r in applicable(at_depth).values()} == {BOUNDED}
    beyond = check(fixed_r1(), SearchOptions(Limits(max_depth=depth + 1)))
    assert beyond.stats.complete and beyond.all_verified
    assert beyond.stats.states == check(fixed_r1()).stats.states


def test_a_time_limit_gives_bounded():
    model = Grid(2 * int(CHECK_EVERY**0.5) + 2)  # more states than one limit-checking interval
    result = check(model, SearchOptions(Limits(time_limit=0)))
    assert not result.stats.complete and "time limit" in result.stats.stop_reason
    assert result.stats.states < model.n**2
    assert {r.verdict for r in result.results.values()} == {BOUNDED}


def test_a_generous_time_limit_changes_nothing():
    model = Grid(8)
    result = check(model, SearchOptions(Limits(time_limit=3600)))
    assert result.stats.complete and result.stats.states == 64 and result.all_verified


def test_a_memory_limit_gives_bounded():
    model = Grid(2 * int(CHECK_EVERY**0.5) + 2)
    result = check(model, SearchOptions(Limits(max_memory_mb=1)))
    assert not result.stats.complete and "memory limit of 1 MB" in result.stats.stop_reason
    assert {r.verdict for r in result.results.values()} == {BOUNDED}


@pytest.mark.parametrize("limits", [Limits(max_states=20), Limits(max_depth=4)])
def test_a_violation_found_before_the_cut_is_still_violated(limits):
    model = readable(uniform_config(pages=2), "buggy")
    result = check(model, SearchOptions(limits))
    assert not result.stats.complete
    assert result.verdict("no_early_acceptance") == VIOLATED
    assert result.trace("no_early_acceptance").schedule == "S0.issue.q0 S0.drain_arrive S0.drain S0.check.q0"
    assert result.verdict("progress") == BOUNDED  # progress is judged on a finished graph only
    assert VERIFIED not in {r.verdict for r in result.results.values()}


def test_a_deadlock_found_before_the_cut_is_violated():
    model = readable(uniform_config(ranks=2, pages=1, alloc_may_fail=(True, False)))
    full = check(model)
    deadlock_len = len(full.trace("deadlock_freedom"))
    cut = check(model, SearchOptions(Limits(max_depth=deadlock_len + 1)))
    assert not cut.stats.complete and cut.stats.states < full.stats.states
    assert cut.verdict("deadlock_freedom") == VIOLATED
    assert cut.trace("deadlock_freedom").schedule == full.trace("deadlock_freedom").schedule
    assert cut.verdict("progress") == BOUNDED


def test_a_progress_lasso_is_not_reported_from_a_partial_graph():
    model = readable(uniform_config(pages=2, failing={0: {1}}, shape="seed"))
    assert check(model).verdict("progress") == VIOLATED
    assert check(model, SearchOptions(Limits(max_states=check(model).stats.states - 1))).verdict("progress") == BOUNDED


def test_limits_describe_themselves():
    assert Limits().describe() == "none"
    assert Limits(max_states=5, max_depth=3, time_limit=1.5, max_memory_mb=64).describe() == (
        "max_states=5, max_depth=3, time_limit=1.5s, max_memory=64MB"
    )


def test_the_time_limit_also_bounds_the_progress_analysis(monkeypatch):
    """A search that finishes in time but whose progress analysis does not gives BOUNDED progress."""
    import prefetch_check.explorer.check as check_module
    from prefetch_check.explorer.liveness import AnalysisTimeout
    from prefetch_check import Limits, check, uniform_config

    def too_slow(ex, pending, deadline, bit=0, beat=None):
        assert deadline is not None  # the remaining time is handed to the analysis
        raise AnalysisTimeout()

    monkeypatch.setattr(check_module, "find_progress_violation", too_slow)
    result = check(uniform_config(ranks=1, requests=1, pages=2), "fixed", Limits(time_limit=60))
    assert result.stats.complete
    assert result.verdict("progress") == "BOUNDED"
    assert "during the progress analysis" in result.results["progress"].reason
    assert result.verdict("no_early_acceptance") == "VERIFIED"


def test_a_passed_deadline_stops_the_progress_analysis():
    import time

    import pytest

    from prefetch_check.explorer.bfs import explore
    from prefetch_check.explorer.liveness import AnalysisTimeout, find_progress_violation
    from prefetch_check import build_model, uniform_config

    model = build_model(uniform_config(ranks=2, requests=2, pages=2), "fixed")  # 18,592 states: ticks
    ex = explore(model, graph=GraphRecorder(1))
    pending = next(p for p in model.properties() if p.name == "progress").check
    with pytest.raises(AnalysisTimeout):
        find_progress_violation(ex, pending, deadline=time.perf_counter() - 1)
    assert find_progress_violation(ex, pending, deadline=None) is None


def test_a_bounded_reason_counts_the_states_the_stats_count():
    # the reduced search walks through states without storing them (chain fusion): the reason
    # must count every state visited, as the stats do, not only the stored ones
    from prefetch_check import check as check_config

    result = check_config(uniform_config(ranks=3, requests=2, pages=2, policy="timeout"), "fixed", Limits(max_states=3000))
    stats = result.stats
    assert not stats.complete and stats.stored_states is not None and stats.stored_states < stats.states
    for r in result.results.values():
        assert r.verdict == BOUNDED
        assert f"; {stats.states:,} states, depth" in r.reason
