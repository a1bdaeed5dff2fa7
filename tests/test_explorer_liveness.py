"""Progress under weak fairness, on tiny generic models (no protocol): which cycles count as fair,
what a lasso looks like, and that a pending deadlock is a violation too."""

from __future__ import annotations

from prefetch_check.explorer.check import check
from prefetch_check.explorer.interface import eventually
from prefetch_check.explorer.replay import replay
from prefetch_check.explorer.result import VERIFIED, VIOLATED


class Toy:
    """A model given as a table: state -> [(actor, next state)]; an action is (actor, next state)."""

    def __init__(self, table: dict, pending):
        self.table, self.pending = table, pending

    def initial_states(self):
        return [0]

    def successors(self, state):
        return [((actor, nxt), nxt) for actor, nxt in self.table.get(state, [])]

    def properties(self):
        return [eventually("done", lambda s: None if not self.pending(s) else f"state {s} pending")]

    def actor(self, action):
        return action[0]

    def action_id(self, action):
        return f"{action[0]}>{action[1]}"

    def action_kind(self, action):
        return action[0]

    def action_kinds(self):
        return sorted({a for steps in self.table.values() for a, _ in steps})

    def describe(self, state, action, next_state):
        return f"{action[0]}: {state} -> {next_state}"


def test_a_cycle_that_starves_a_continuously_enabled_actor_is_unfair():
    # "spin" loops 0 <-> 1 forever, "finish" is enabled in both states and leads to done (2)
    model = Toy({0: [("spin", 1), ("finish", 2)], 1: [("spin", 0), ("finish", 2)], 2: [("idle", 2)]}, lambda s: s != 2)
    assert check(model).verdict("done") == VERIFIED


def test_a_cycle_where_the_starved_actor_is_sometimes_disabled_is_fair():
    # "finish" is enabled only in state 1: weak fairness does not force it
    model = Toy({0: [("spin", 1)], 1: [("spin", 0), ("finish", 2)], 2: [("idle", 2)]}, lambda s: s != 2)
    result = check(model)
    assert result.verdict("done") == VIOLATED
    trace = result.trace("done")
    assert trace.cycle_start is not None
    cycle_states = [s.state for s in trace.steps[trace.cycle_start :]]
    assert 0 in cycle_states  # the cycle passes the state where "finish" is disabled
    assert replay(model, trace.schedule).final_state == trace.final_state


def test_a_self_loop_of_the_only_actor_is_a_violation():
    model = Toy({0: [("spin", 1)], 1: [("spin", 1)]}, lambda s: True)
    trace = check(model).trace("done")
    assert trace.schedule == "spin>1 | spin>1"


def test_a_pending_deadlock_is_a_violation_without_a_cycle():
    model = Toy({0: [("step", 1)]}, lambda s: True)
    result = check(model)
    assert result.verdict("done") == VIOLATED
    assert result.trace("done").cycle_start is None and "deadlock" in result.results["done"].reason


def test_a_deadlock_after_the_work_is_done_is_not_a_progress_violation():
    model = Toy({0: [("step", 1)]}, lambda s: s == 0)
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
    trace = check(Toy(table, lambda s: True)).trace("done")
    assert trace.schedule == "a>1 | a>1"
