"""The replay check: schedules replay through the model, a tampered one says where it diverges,
and `check` refuses to report a counterexample that does not replay."""

from __future__ import annotations

import pytest

import prefetch_check.explorer.check as explorer_check
from prefetch_check.explorer.check import CounterexampleNotReplayable, check
from prefetch_check.explorer.interface import Property
from prefetch_check.explorer.replay import Divergence, replay
from prefetch_check.explorer.trace import parse_schedule
from prefetch_check.model.interface import Action
from prefetch_check.model.protocols.poll.config import uniform_config
from models import readable

BUGGY_R1 = "S0.issue.q0 S0.drain_arrive S0.drain S0.check.q0"


def buggy_r1():
    return readable(uniform_config(pages=2), "buggy")


def test_a_schedule_replays_to_the_states_of_the_search():
    model = buggy_r1()
    result = check(model)
    for name in result.violated:
        trace = result.trace(name)
        again = replay(model, trace.schedule)
        assert [s.state for s in again.steps] == [s.state for s in trace.steps]
        assert [s.action_id for s in again.steps] == trace.schedule.split()


def test_a_tampered_schedule_names_the_step_and_what_was_enabled():
    model = buggy_r1()
    tampered = "S0.issue.q0 S0.drain S0.drain_arrive S0.check.q0"  # drain before its collective
    with pytest.raises(Divergence) as info:
        replay(model, tampered)
    err = info.value
    assert err.step == 1 and err.wanted == "S0.drain"
    assert set(err.enabled) == {"S0.drain_arrive", "P0.take.q0"}
    assert len(err.trace_so_far) == 1 and err.trace_so_far.schedule == "S0.issue.q0"
    assert str(err).startswith("step 2: 'S0.drain' is not enabled; enabled: ")
    assert "S0.drain_arrive" in str(err)


def test_an_unknown_action_diverges_at_its_step():
    with pytest.raises(Divergence) as info:
        replay(buggy_r1(), "S0.issue.q0 X0.fly.q0")
    assert info.value.step == 1 and info.value.wanted == "X0.fly.q0"


def test_a_step_past_a_deadlock_says_nothing_is_enabled():
    model = readable(uniform_config(ranks=2, pages=1, alloc_may_fail=(True, False)))
    deadlock = check(model).trace("deadlock_freedom").schedule
    with pytest.raises(Divergence) as info:
        replay(model, deadlock + " S0.drain")
    assert info.value.enabled == [] and "nothing (deadlock)" in str(info.value)


def test_a_lasso_schedule_keeps_its_cycle_mark():
    model = readable(uniform_config(pages=2, failing={0: {1}}, shape="seed"))
    trace = check(model).trace("progress")
    ids, cycle = parse_schedule(trace.schedule)
    assert cycle == trace.cycle_start and "|" not in ids
    assert replay(model, trace.schedule).cycle_start == trace.cycle_start


def test_replay_from_a_given_state():
    model = buggy_r1()
    middle = replay(model, "S0.issue.q0 S0.drain_arrive").final_state
    rest = replay(model, "S0.drain S0.check.q0", initial=middle)
    assert rest.final_state == replay(model, BUGGY_R1).final_state


# ---- check() confirms every counterexample by replaying it ----


class Liar:
    """A model that tells the truth during the search and lies once `check` replays a counterexample."""

    def __init__(self, inner, lie):
        self.inner, self.lie, self.lying = inner, lie, False

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def successors(self, state):
        succ = self.inner.successors(state)
        return self.lie(state, succ) if self.lying else succ

    def properties(self):
        return self.inner.properties()


@pytest.fixture
def lies_on_replay(monkeypatch):
    """Make `check` switch the model to lying when it starts replaying."""
    real = explorer_check.replay

    def replay_and_lie(model, schedule, initial=None):
        model.lying = True
        return real(model, schedule, initial)

    monkeypatch.setattr(explorer_check, "replay", replay_and_lie)


def bump_release_queue(state, succ):
    """Same actions, but every next state differs (rank 0 has one more queued release)."""
    return [(a, (nxt[0]._replace(release_queue=nxt[0].release_queue + 1),) + nxt[1:]) for a, nxt in succ]


def test_check_rejects_a_counterexample_whose_states_differ_on_replay(lies_on_replay):
    with pytest.raises(CounterexampleNotReplayable, match="does not replay"):
        check(Liar(buggy_r1(), bump_release_queue))


def test_check_rejects_a_deadlock_that_has_a_successor_on_replay(lies_on_replay):
    inner = readable(uniform_config(ranks=2, pages=1, alloc_may_fail=(True, False)))
    stay = lambda state, succ: succ or [(Action(0, "S", "idle"), state)]
    with pytest.raises(CounterexampleNotReplayable):
        check(Liar(inner, stay))


def test_check_rejects_a_counterexample_whose_property_holds_on_replay(lies_on_replay):
    inner = buggy_r1()

    class ForgetfulLiar(Liar):
        def properties(self):
            def forgetful(p):
                return Property(p.name, p.kind, lambda *a, c=p.check: None if self.lying else c(*a), p.description, p.not_applicable)
            return [forgetful(p) if p.check else p for p in inner.properties()]

    with pytest.raises(CounterexampleNotReplayable):
        check(ForgetfulLiar(inner, lambda state, succ: succ))


def test_check_without_lies_passes_the_replay(lies_on_replay):
    result = check(Liar(buggy_r1(), lambda state, succ: succ))
    assert set(result.violated) == {"no_early_acceptance", "wait_complete_delivers"}


def test_check_rejects_a_counterexample_whose_action_vanishes_on_replay(lies_on_replay):
    no_check = lambda state, succ: [(a, n) for a, n in succ if a.step != "check"]
    with pytest.raises(CounterexampleNotReplayable):
        check(Liar(buggy_r1(), no_check))


# ---- generic models: counterexamples from the initial state, and from a second initial state ----


class Table:
    """A generic model given as a table: state -> [(action, next state)]; one property: never 'bad'."""

    def __init__(self, initial, table):
        self.initial, self.table = initial, table

    def initial_states(self):
        return list(self.initial)

    def successors(self, state):
        return list(self.table.get(state, []))

    def properties(self):
        return [Property("never_bad", "always", lambda s: "bad state" if s == "bad" else None)]

    def actor(self, action):
        return "only"

    def action_id(self, action):
        return action

    def action_kind(self, action):
        return action

    def action_kinds(self):
        return ("go",)

    def describe(self, state, action, next_state):
        return f"{state} -> {next_state}"


def test_a_violating_initial_state_gives_an_empty_replayable_trace():
    result = check(Table(["bad"], {"bad": [("go", "bad")]}))
    trace = result.trace("never_bad")
    assert result.verdict("never_bad") == "VIOLATED" and len(trace) == 0 and trace.schedule == ""


def test_a_counterexample_from_the_second_initial_state_is_reported():
    model = Table(["good", "start"], {"good": [("go", "good")], "start": [("go", "bad")], "bad": [("go", "bad")]})
    result = check(model)
    assert result.verdict("never_bad") == "VIOLATED"
    assert result.trace("never_bad").initial == "start"
