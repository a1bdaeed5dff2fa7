"""Progress under weak fairness, on tiny generic models (no protocol): which cycles count as fair,
what a lasso looks like, and that a pending deadlock is a violation too."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prefetch_check.explorer import fair_cycle
from prefetch_check.explorer.check import check
from prefetch_check.explorer.replay import replay
from prefetch_check.explorer.result import VERIFIED, VIOLATED
from prefetch_check.explorer.trace import parse_schedule
from strategies import SETTINGS
from table_model import TableModel


def test_a_cycle_that_starves_a_continuously_enabled_actor_is_unfair():
    # "spin" loops 0 <-> 1 forever, "finish" is enabled in both states and leads to done (2)
    model = TableModel({0: [("spin", 1), ("finish", 2)], 1: [("spin", 0), ("finish", 2)], 2: [("idle", 2)]}, lambda s: s != 2)
    assert check(model).verdict("done") == VERIFIED


def test_a_cycle_where_the_starved_actor_is_sometimes_disabled_is_fair():
    # "finish" is enabled only in state 1: weak fairness does not force it
    model = TableModel({0: [("spin", 1)], 1: [("spin", 0), ("finish", 2)], 2: [("idle", 2)]}, lambda s: s != 2)
    result = check(model)
    assert result.verdict("done") == VIOLATED
    trace = result.trace("done")
    assert trace.cycle_start is not None
    cycle_states = [s.state for s in trace.steps[trace.cycle_start :]]
    assert 0 in cycle_states  # the cycle passes the state where "finish" is disabled
    assert replay(model, trace.schedule).final_state == trace.final_state


def test_a_self_loop_of_the_only_actor_is_a_violation():
    model = TableModel({0: [("spin", 1)], 1: [("spin", 1)]}, lambda s: True)
    trace = check(model).trace("done")
    assert trace.schedule == "spin>1 | spin>1"


def test_a_pending_deadlock_is_a_violation_without_a_cycle():
    model = TableModel({0: [("step", 1)]}, lambda s: True)
    result = check(model)
    assert result.verdict("done") == VIOLATED
    assert result.trace("done").cycle_start is None and "deadlock" in result.results["done"].reason


def test_a_deadlock_after_the_work_is_done_is_not_a_progress_violation():
    model = TableModel({0: [("step", 1)]}, lambda s: s == 0)
    assert check(model).verdict("done") == VERIFIED


def test_the_lasso_with_the_shortest_prefix_is_reported():
    # two fair pending loops: one entered after 1 step, one after 3
    table = {
        0: [("a", 1), ("b", 10)],
        1: [("a", 1)],
        10: [("b", 11)],
        11: [("b", 12)],
        12: [("b", 12)],
    }
    trace = check(TableModel(table, lambda s: True)).trace("done")
    assert trace.schedule == "a>1 | a>1"


# ---- the reported cycle is the shortest: one round, never two ----

DONE = 99


def with_exits(ring: dict, exits=("a", "b")) -> dict:
    """A table from `ring` (state -> [(actor, next)]) where each actor of `exits` can also leave
    to DONE from every ring state (so it is enabled all along the ring and must step in it)."""
    table = {}
    for s, steps in ring.items():
        mine = {a for a, _ in steps}
        table[s] = [(a, DONE) for a in exits if a not in mine] + list(steps)
    table[DONE] = []
    return table


# an 8-step round 0 -> 1 -> ... -> 7 -> 0; "a" and "b" are enabled everywhere and each steps once
# in the round ("b" first, "a" late); "c" does the rest and is disabled in states 0 and 6
ROUND = with_exits({0: [("b", 1)], 1: [("c", 2)], 2: [("c", 3)], 3: [("c", 4)], 4: [("c", 5)],
                    5: [("c", 6)], 6: [("a", 7)], 7: [("c", 0)]})


def cycle_of(trace) -> list[str]:
    ids, start = parse_schedule(trace.schedule)
    return ids[start:]


def is_fair(table: dict, states: list, actions: list) -> bool:
    """Weak fairness of a cycle, judged on the table itself: every actor enabled in every state
    of the cycle takes a step in it."""
    enabled_all_along = set.intersection(*({a for a, _ in table.get(s, [])} for s in states))
    return enabled_all_along <= {a for a, _ in actions}


def assert_tight(table: dict, trace) -> None:
    """The cycle is fair, and no closed part of it is fair on its own (a shorter fair cycle)."""
    start = trace.cycle_start
    states = [trace.steps[start - 1].state if start else trace.initial] + [s.state for s in trace.steps[start:]]
    actions = [s.action for s in trace.steps[start:]]
    assert states[0] == states[-1] and is_fair(table, states[:-1], actions)
    for i in range(len(actions)):
        for j in range(i + 1, len(actions) + 1):
            if (i, j) != (0, len(actions)) and states[i] == states[j]:
                assert not is_fair(table, states[i:j], actions[i:j]), (i, j, trace.schedule)


@pytest.fixture(params=["exact", "greedy"])
def search(request, monkeypatch):
    """Both ways of building the cycle: the exact search, and the greedy one (past its budget)."""
    if request.param == "greedy":
        monkeypatch.setattr(fair_cycle, "CYCLE_SEARCH_BUDGET", 0)
    return request.param


def test_a_round_that_returns_to_its_start_is_reported_once(search):
    trace = check(TableModel(ROUND, lambda s: s != DONE)).trace("done")
    assert trace.cycle_start == 0
    assert cycle_of(trace) == ["b>1", "c>2", "c>3", "c>4", "c>5", "c>6", "a>7", "c>0"]  # 8 steps, not 16
    assert_tight(ROUND, trace)
    assert replay(TableModel(ROUND, lambda s: s != DONE), trace.schedule).final_state == 0


def test_a_fair_loop_that_bypasses_the_entry_is_reported_after_a_lead(search):
    # 0 -> 1 -> 2 -> 0 is a round of "x" only; "y" is enabled everywhere and steps only in the
    # side loop 1 -> 5 -> 1, which is fair on its own: the lasso is 0 -> 1, then (1 -> 5 -> 1)
    table = with_exits({0: [("x", 1)], 1: [("x", 2), ("y", 5)], 2: [("x", 0)], 5: [("x", 1)]}, exits=("x", "y"))
    trace = check(TableModel(table, lambda s: s != DONE)).trace("done")
    assert trace.schedule == "x>1 | y>5 x>1"
    assert_tight(table, trace)


def test_the_cycle_passes_a_disabling_state_instead_of_waiting_for_a_step(search):
    # "c" never steps in the loop 0 -> 1 -> 0 but is disabled in state 1: the 2-step loop is fair
    table = {0: [("a", 1), ("c", DONE)], 1: [("a", 0)], DONE: []}
    trace = check(TableModel(table, lambda s: s != DONE)).trace("done")
    assert trace.schedule == "| a>1 a>0"
    assert_tight(table, trace)


# state -> {next state: actor}: one step between two states at most (the trace of a lasso is
# rebuilt from its states, so two steps of different actors between the same two states would
# be told apart by the analysis but not by the trace)
TABLES = st.dictionaries(st.integers(0, 4), st.dictionaries(st.integers(0, 5), st.sampled_from("abc"), max_size=3),
                         min_size=1).map(lambda t: {s: [(a, n) for n, a in steps.items()] for s, steps in t.items()})


@settings(max_examples=150, **SETTINGS)
@given(TABLES)
def test_every_reported_cycle_is_fair_and_holds_no_shorter_fair_cycle(table):
    for budget in (fair_cycle.CYCLE_SEARCH_BUDGET, 0):
        with mock.patch.object(fair_cycle, "CYCLE_SEARCH_BUDGET", budget):
            result = check(TableModel(table, lambda s: s != 5))
        trace = result.trace("done")
        if trace is not None and trace.cycle_start is not None:
            assert_tight(table, trace)
