"""Chain fusion (explorer/bfs.py): the search walks through states with a single chosen step
without storing them. On tiny generic models: what a fused state still contributes (its
safety properties, its enabled actors and its pending status for progress), and on the
protocol: fused and unfused searches agree on every verdict and count."""

from __future__ import annotations

from prefetch_check.explorer.options import SearchOptions

from hypothesis import given, settings
from hypothesis import strategies as st

from prefetch_check.explorer.bfs import explore
from prefetch_check.explorer.check import check
from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.replay import replay
from prefetch_check.explorer.result import VERIFIED, VIOLATED
from models import compiled
from models import readable
from strategies import SETTINGS, configs
from table_model import TableModel


def fused_check(model):
    return check(model, SearchOptions(expand=model.expand, fuse=True))


def test_states_with_one_step_are_walked_through_not_stored():
    model = TableModel({0: [("a", 1), ("b", 2)], 1: [("a", 3)], 3: [("a", 4)], 2: [("b", 4)]})
    ex = explore(model, SearchOptions(expand=model.expand, fuse=True))
    assert ex.complete
    assert sorted(ex.states) == [0, 4]  # 1, 2 and 3 each have one step
    assert ex.fused == 3 and ex.visited == 5
    assert ex.transitions == 5  # every step once: 0>1, 0>2, 1>3, 3>4, 2>4
    assert ex.deadlocks == [1]  # state 4 (id 1) has no step


def test_a_state_disabling_an_actor_inside_a_fused_edge_keeps_the_cycle_fair():
    # "finish" is enabled in 0 only; the loop 0 -> 1 -> 0 passes 1, which is fused into a
    # self-loop of 0: the edge must remember that "finish" was disabled in 1
    model = TableModel({0: [("spin", 1), ("finish", 2)], 1: [("spin", 0)], 2: [("idle", 2)]}, pending=lambda s: s != 2)
    assert explore(model, SearchOptions(expand=model.expand, fuse=True)).fused >= 1
    result = fused_check(model)
    assert result.verdict("done") == VIOLATED
    trace = result.trace("done")
    cycle_states = [s.state for s in trace.steps[trace.cycle_start:]]
    assert 1 in cycle_states  # the fused state where "finish" is disabled is part of the cycle
    assert replay(model, trace.schedule).final_state == trace.final_state
    assert check(model).verdict("done") == VIOLATED  # the plain search agrees


def test_a_cycle_through_a_fused_state_that_is_not_pending_is_no_violation():
    # the loop 0 -> 1 -> 0 leaves the pending states in 1 (fused): progress is made on it
    model = TableModel({0: [("a", 1), ("b", 2)], 1: [("a", 0)], 2: [("c", 2)]}, pending=lambda s: s == 0)
    assert fused_check(model).verdict("done") == VERIFIED
    assert check(model).verdict("done") == VERIFIED


def test_a_fair_pending_cycle_of_single_steps_is_found():
    # 0 -> 1 -> 2 -> 1 -> ...: every state has one step, the cycle must close on a stored state
    model = TableModel({0: [("a", 1)], 1: [("a", 2)], 2: [("a", 1)]}, pending=lambda s: True)
    result = fused_check(model)
    assert result.verdict("done") == VIOLATED
    trace = result.trace("done")
    assert trace.schedule == "a>1 | a>2 a>1"
    assert replay(model, trace.schedule).final_state == trace.final_state


def test_a_state_property_violated_inside_a_chain_is_found_with_its_trace():
    model = TableModel({0: [("a", 1)], 1: [("a", 2)], 2: [("a", 3)], 3: [("a", 4)]}, bad_state=2)
    result = fused_check(model)
    assert result.verdict("safe") == VIOLATED
    assert result.trace("safe").schedule == "a>1 a>2"


def test_a_step_property_violated_inside_a_chain_is_found_with_its_trace():
    model = TableModel({0: [("a", 1)], 1: [("a", 2)], 2: [("a", 3)], 3: [("a", 4)]}, bad_step=(2, 3))
    result = fused_check(model)
    assert result.verdict("safe_step") == VIOLATED
    assert result.trace("safe_step").schedule == "a>1 a>2 a>3"


def summary(result):
    return (
        {name: (r.verdict, len(r.trace) if r.trace is not None else None) for name, r in result.results.items()},
        result.stats.states, result.stats.transitions, result.stats.action_counts, result.stats.complete,
    )


@settings(max_examples=40, **SETTINGS)
@given(configs(), st.sampled_from(["buggy", "fixed"]))
def test_fused_and_unfused_reduced_searches_agree(config, predicate):
    """Same verdicts, trace lengths, visited states, transitions and per-action counts."""
    results = []
    for fuse in (False, True):
        model = compiled(config, predicate)
        results.append(check(model, SearchOptions(Limits(max_states=100_000), canonical=model.canonicalizer(), expand=model.reduced_successors, fuse=fuse)))
    unfused, fused = results
    if not (unfused.stats.complete and fused.stats.complete):
        return  # a configuration over the budget says nothing here
    assert summary(fused) == summary(unfused)
    assert fused.stats.stored_states is None or fused.stats.stored_states < fused.stats.states
