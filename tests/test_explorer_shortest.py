"""Shortest counterexamples: the explorer's traces are as short as any schedule that violates the property,
checked against an independent search (tests/conftest.py) and, for R=1, against every shorter schedule."""

from __future__ import annotations

from prefetch_check.explorer.options import SearchOptions

from collections import deque

import pytest

from prefetch_check.explorer.check import check
from prefetch_check.explorer.interface import DEADLOCK_FREE
from prefetch_check.model.protocols.poll.config import uniform_config
from models import compiled, readable
from prefetch_check import check as api_check


def all_schedules(model, length):
    """Every (states, actions) path of exactly `length` steps from the initial state."""
    paths = [([model.initial_states()[0]], [])]
    for _ in range(length):
        paths = [(states + [nxt], actions + [a]) for states, actions in paths for a, nxt in model.successors(states[-1])]
    return paths


def test_buggy_r1_trace_checks_before_publish_and_nothing_shorter_violates():
    model = readable(uniform_config(pages=2), "buggy")
    trace = check(model).trace("no_early_acceptance")
    assert trace.schedule == "S0.issue.q0 S0.drain_arrive S0.drain S0.check.q0"
    prop = next(p for p in model.properties() if p.name == "no_early_acceptance")
    for length in range(len(trace)):
        for states, actions in all_schedules(model, length):
            assert not any(prop.check(states[i], a, states[i + 1]) for i, a in enumerate(actions))
    assert any(
        prop.check(states[-2], actions[-1], states[-1]) for states, actions in all_schedules(model, len(trace))
    )


CASES = [
    (uniform_config(pages=2), "buggy"),
    (uniform_config(ranks=2, pages=2, failing={1: {1}}), "buggy"),
    (uniform_config(ranks=2, pages=1, alloc_may_fail=(True, False)), "fixed"),
    (uniform_config(requests=2, pages=1, policy="timeout"), "buggy"),
]


@pytest.mark.parametrize("config, predicate", CASES)
@pytest.mark.parametrize("reductions", [False, True])
def test_every_safety_counterexample_is_shortest(shortest_violation, config, predicate, reductions):
    model = readable(config, predicate)
    searched = compiled(config, predicate)  # rank symmetry lives on the compiled states
    result = check(searched, SearchOptions(canonical=searched.canonicalizer() if reductions else None))
    safety = [p for p in model.properties() if p.is_safety and p.name in result.violated]
    assert safety
    for p in safety:
        trace = result.trace(p.name)
        if p.kind == DEADLOCK_FREE:
            expected = deadlock_depth(model)
        else:
            expected = shortest_violation(model, p, len(trace))
        assert len(trace) == expected, p.name


def deadlock_depth(model):
    start = model.initial_states()[0]
    seen, todo = {start}, deque([(start, 0)])
    while todo:
        state, depth = todo.popleft()
        succ = model.successors(state)
        if not succ:
            return depth
        for _, nxt in succ:
            if nxt not in seen:
                seen.add(nxt)
                todo.append((nxt, depth + 1))
    return None


def test_the_api_trace_is_as_short_as_the_plain_search():
    config = uniform_config(ranks=2, pages=2, failing={1: {1}})
    plain = api_check(config, "buggy", reductions=False)
    reduced = api_check(config, "buggy")
    assert reduced.stats.states < plain.stats.states
    for name in ("no_early_acceptance", "wait_complete_delivers"):
        assert len(reduced.trace(name)) == len(plain.trace(name))


def api_forward_and_backward(monkeypatch, config):
    """The API's result, then again with every list of enabled steps reversed."""
    from prefetch_check.model.engine.compiled import CompiledModel as CompiledProtocol  # what the API searches

    forward = api_check(config, "buggy")
    real, real_reduced = CompiledProtocol.successors, CompiledProtocol.reduced_successors

    def reversed_reduced(self, state):
        chosen, enabled = real_reduced(self, state)  # enabled: a bitmask of actors, no order
        return chosen[::-1], enabled

    monkeypatch.setattr(CompiledProtocol, "successors", lambda self, state: real(self, state)[::-1])
    monkeypatch.setattr(CompiledProtocol, "reduced_successors", reversed_reduced)
    backward = api_check(config, "buggy")
    monkeypatch.undo()
    return forward, backward


def test_api_trace_lengths_do_not_depend_on_the_action_order(monkeypatch):
    forward, backward = api_forward_and_backward(monkeypatch, uniform_config(ranks=2, requests=2, pages=1))
    for name in ("no_early_acceptance", "wait_complete_delivers"):
        assert len(forward.trace(name)) == len(backward.trace(name)), name


def test_api_counts_do_not_depend_on_the_action_order(monkeypatch):
    forward, backward = api_forward_and_backward(monkeypatch, uniform_config(ranks=2, requests=2, pages=1))
    assert (forward.stats.states, forward.stats.transitions) == (backward.stats.states, backward.stats.transitions)


def test_a_cut_shortening_keeps_the_reduced_counterexample_and_says_so(monkeypatch):
    """With the reductions on, each counterexample is searched again for a shorter one; when that
    search is cut by its budget the reduced trace is kept (real, replayed) and the reason says so."""
    import prefetch_check.explorer.check as check_module
    from prefetch_check.explorer.replay import replay
    from prefetch_check import build_model, check, uniform_config

    config = uniform_config(ranks=2, requests=2, pages=2)
    monkeypatch.setattr(check_module, "shortest_budget", lambda ex: 1)
    cut = check(config, "buggy")
    monkeypatch.undo()
    full = check(config, "buggy")
    for name in ("no_early_acceptance", "wait_complete_delivers"):
        assert cut.results[name].reason.endswith(check_module.NOT_SHORTENED)
        assert not full.results[name].reason.endswith(check_module.NOT_SHORTENED)
        assert len(cut.trace(name)) >= len(full.trace(name))
        again = replay(build_model(config, "buggy"), cut.trace(name).schedule)
        assert again.final_state == cut.trace(name).final_state
    assert len(cut.trace("wait_complete_delivers")) > len(full.trace("wait_complete_delivers"))
    # the kept counterexample is 1-minimal: without any one of its steps it no longer fails
    from prefetch_check.explorer.replay import Divergence

    model = build_model(config, "buggy")
    delivers = next(p for p in model.properties() if p.name == "wait_complete_delivers")
    ids = cut.trace("wait_complete_delivers").schedule.split()
    for i in range(len(ids)):
        try:
            shorter = replay(model, ids[:i] + ids[i + 1 :])
        except Divergence:
            continue  # a later step is no longer enabled
        assert not any(delivers.check(s.state) for s in shorter.steps), f"step {i} could be left out"
